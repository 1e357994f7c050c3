//! Reading the size and free space of the file system that holds the store.
//!
//! Retention decides from the used fraction, the allocation thread from the space
//! available: both read the file system (`statvfs`), never what an allocation that
//! failed left behind (see `allocate`). Tests replace the reading with a simulated
//! one ([`DiskProbe::simulated`]) so that a full disk can be played without filling
//! one.

use std::path::Path;
use std::sync::{Arc, Mutex};

use vostok_remoting::support::sync::MutexExt;

/// One reading of a file system's space, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskSpace {
    pub total: u64,
    /// Free blocks, including those reserved for the superuser.
    pub free: u64,
    /// Blocks an ordinary user may still take (`f_bavail`): what new files can use.
    pub available: u64,
}

impl DiskSpace {
    /// Used fraction, 0.0–1.0 (as `df` counts it, reserved blocks as free).
    pub fn used_ratio(&self) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        self.total.saturating_sub(self.free) as f64 / self.total as f64
    }
}

/// Where the store reads disk space: `statvfs`, or a reading set by hand.
#[derive(Debug, Clone, Default)]
pub struct DiskProbe {
    simulated: Option<Arc<Mutex<DiskSpace>>>,
}

impl DiskProbe {
    /// The real file system (`statvfs`); what [`crate::MessageStore::open`] uses.
    pub fn statvfs() -> Self {
        DiskProbe::default()
    }

    /// A disk that reports `space` until [`DiskProbe::set`] changes it (tests); files
    /// are still written to the real file system.
    pub fn simulated(space: DiskSpace) -> Self {
        DiskProbe {
            simulated: Some(Arc::new(Mutex::new(space))),
        }
    }

    /// Changes a simulated reading; no effect on the real file system's.
    pub fn set(&self, space: DiskSpace) {
        if let Some(s) = &self.simulated {
            *s.locked() = space;
        }
    }

    /// The space of the file system holding `path`; `None` if it cannot be read.
    pub fn read(&self, path: &Path) -> Option<DiskSpace> {
        match &self.simulated {
            Some(s) => Some(*s.locked()),
            None => statvfs(path),
        }
    }
}

fn statvfs(path: &Path) -> Option<DiskSpace> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs writes only the struct we own; `c` is a valid C string.
    let st = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut st) != 0 {
            return None;
        }
        st
    };
    let block = st.f_frsize as u64;
    Some(DiskSpace {
        total: (st.f_blocks as u64).saturating_mul(block),
        free: (st.f_bfree as u64).saturating_mul(block),
        available: (st.f_bavail as u64).saturating_mul(block),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_real_file_system_or_the_simulated_one() {
        let dir = tempfile::tempdir().unwrap();
        let real = DiskProbe::statvfs().read(dir.path()).unwrap();
        assert!(real.total > 0 && real.free <= real.total && real.available <= real.free);
        let space = DiskSpace {
            total: 1000,
            free: 250,
            available: 200,
        };
        let probe = DiskProbe::simulated(space);
        assert_eq!(probe.read(dir.path()), Some(space));
        assert!((space.used_ratio() - 0.75).abs() < 1e-9);
        probe.set(DiskSpace { free: 900, ..space });
        assert_eq!(probe.read(dir.path()).unwrap().free, 900);
    }
}
