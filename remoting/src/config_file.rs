//! Crash-safe JSON config files (`topics.json`, `consumerOffset.json`, `kvConfig.json`, ...),
//! kept as RocketMQ keeps them: the previous version survives as `<file>.bak`, and
//! loading falls back to it when the main file is missing or unreadable.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Writes `content` to `path` so that a crash at any moment leaves either the old or the
/// new file (plus the old one as `.bak`): write a temp file, fsync it, copy the current
/// file to `.bak`, rename the temp file over the original, fsync the directory.
pub fn persist(path: &Path, content: &[u8]) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let tmp = with_suffix(path, ".tmp");
    {
        let mut file = File::create(&tmp)?;
        file.write_all(content)?;
        file.sync_all()?;
    }
    if path.exists() {
        fs::copy(path, with_suffix(path, ".bak"))?;
    }
    fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        if let Ok(dir) = File::open(dir) {
            let _ = dir.sync_all();
        }
    }
    Ok(())
}

/// Reads `path`, or `<path>.bak` when `path` is missing or `parse` rejects it. `None` when
/// neither yields a value (a first start).
pub fn load<T>(path: &Path, mut parse: impl FnMut(&[u8]) -> Option<T>) -> Option<T> {
    for candidate in [path.to_path_buf(), with_suffix(path, ".bak")] {
        match fs::read(&candidate) {
            Ok(bytes) => match parse(&bytes) {
                Some(value) => return Some(value),
                None => {
                    tracing::warn!(file = %candidate.display(), "config file unreadable; trying its backup")
                }
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(file = %candidate.display(), error = %e, "cannot read config file")
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "vostok-config-file-{}-{}",
            std::process::id(),
            rand::random::<u64>()
        ));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn keeps_a_backup_and_falls_back_to_it() {
        let dir = temp_dir();
        let path = dir.join("config").join("topics.json");
        let parse = |b: &[u8]| serde_json::from_slice::<u32>(b).ok();
        assert_eq!(load(&path, parse), None);
        persist(&path, b"1").unwrap();
        persist(&path, b"2").unwrap();
        assert_eq!(load(&path, parse), Some(2));
        assert_eq!(fs::read(with_suffix(&path, ".bak")).unwrap(), b"1");
        fs::write(&path, b"{torn").unwrap();
        assert_eq!(load(&path, parse), Some(1), "falls back to .bak");
        fs::remove_file(&path).unwrap();
        assert_eq!(load(&path, parse), Some(1));
        fs::remove_dir_all(dir).unwrap();
    }
}
