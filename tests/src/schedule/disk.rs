//! A broker's store on a file system of its own, a small tmpfs, so that one broker's
//! disk can be filled to the last byte without touching the machine's disk or the
//! other brokers'.

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

/// A tmpfs mounted on a temp directory; unmounted (lazily: a process may still hold
/// files) and removed on drop.
pub(super) struct Tmpfs {
    mount: PathBuf,
    filler: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmpfs {
    pub(super) fn mount(label: &str, mib: u64) -> Result<Tmpfs, String> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("vostok-schedule-{label}-"))
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let mount = dir.path().join("fs");
        std::fs::create_dir(&mount).map_err(|e| format!("{}: {e}", mount.display()))?;
        let output = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={mib}m"),
                "vostok-schedule",
            ])
            .arg(&mount)
            .output()
            .map_err(|e| format!("mount: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "mount -t tmpfs on {}: {}",
                mount.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(Tmpfs {
            filler: mount.join("filler"),
            mount,
            _dir: dir,
        })
    }

    /// Where the broker's store goes.
    pub(super) fn store(&self) -> PathBuf {
        self.mount.join("store")
    }

    /// Writes a filler file until the file system has no byte left; the bytes written.
    pub(super) fn fill(&self) -> Result<u64, String> {
        let mut file = std::fs::File::create(&self.filler)
            .map_err(|e| format!("{}: {e}", self.filler.display()))?;
        let chunk = vec![0u8; 1 << 20];
        let mut written = 0u64;
        loop {
            match file.write(&chunk) {
                Ok(0) => return Ok(written),
                Ok(n) => written += n as u64,
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => return Ok(written),
                Err(e) => return Err(format!("{}: {e}", self.filler.display())),
            }
        }
    }

    /// Removes the filler.
    pub(super) fn free(&self) -> Result<(), String> {
        match std::fs::remove_file(&self.filler) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(format!("{}: {e}", self.filler.display())),
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.mount).status();
    }
}
