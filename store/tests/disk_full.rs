//! A disk that fills up: puts are refused with DISK_FULL (never a false success,
//! never an error forever), no acknowledged message is lost, nothing is deleted
//! forcibly by default, and puts are accepted again once there is room. Played with
//! a simulated free-space reading, and for real on a tiny tmpfs when this test runs
//! as root and may mount one.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use common::{message, settle, small_config};
use vostok_store::{DiskProbe, DiskSpace, MessageStore, PutMessageStatus, StoreConfig, StoreError};

const FILE: usize = 64 * 1024;
const BODY: usize = 3000;
const WAIT: Duration = Duration::from_secs(10);

fn roomy() -> DiskSpace {
    DiskSpace {
        total: 1 << 40,
        free: 1 << 39,
        available: 1 << 39,
    }
}

/// 79 % used, yet less room than one commitlog file: the hostile report's disk.
fn no_room_for_a_file() -> DiskSpace {
    DiskSpace {
        total: 200_000,
        free: 42_000,
        available: 42_000,
    }
}

fn body(i: usize) -> Vec<u8> {
    let mut b = format!("{i:08}").into_bytes();
    b.resize(BODY, b'.');
    b
}

/// Puts until the first refusal; returns the acknowledged (offset, index) pairs and
/// the refusal's status.
async fn put_until_refused(
    store: &MessageStore,
    from: usize,
    acked: &mut Vec<(i64, usize)>,
) -> PutMessageStatus {
    for i in from..from + 10_000 {
        let r = store
            .put_message(message("Full", 0, body(i), String::new()))
            .await;
        match (r.status, r.append) {
            (PutMessageStatus::PutOk, Some(a)) => acked.push((a.wrote_offset, i)),
            (status, append) => {
                assert!(append.is_none(), "a refused put wrote nothing");
                return status;
            }
        }
    }
    panic!("the disk never filled");
}

fn assert_all_present(store: &MessageStore, acked: &[(i64, usize)]) {
    for (offset, i) in acked {
        let m = store
            .look_message_by_offset(*offset)
            .unwrap_or_else(|| panic!("acknowledged message {i} at {offset} is gone"));
        assert_eq!(&m.body[..], &body(*i)[..]);
    }
}

#[tokio::test]
async fn no_room_for_the_next_file_refuses_puts_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let probe = DiskProbe::simulated(roomy());
    let store =
        MessageStore::open_with_probe(small_config(dir.path(), FILE), probe.clone()).unwrap();
    let mut acked = Vec::new();
    for i in 0..60 {
        let r = store
            .put_message(message("Full", 0, body(i), String::new()))
            .await;
        acked.push((r.append.expect("roomy disk").wrote_offset, i));
    }
    assert!(store.max_phy_offset() > 2 * FILE as i64);

    // The disk fills: the file created ahead is used up, then puts are refused.
    probe.set(no_room_for_a_file());
    let status = put_until_refused(&store, acked.len(), &mut acked).await;
    assert_eq!(status, PutMessageStatus::DiskFull);
    let end = store.max_phy_offset();
    for i in 0..20 {
        let r = store
            .put_message(message("Full", 0, body(i), String::new()))
            .await;
        assert_eq!(r.status, PutMessageStatus::DiskFull);
    }
    assert_eq!(store.max_phy_offset(), end, "refused puts wrote nothing");
    let info = store.runtime_info();
    assert_eq!(info["commitLogNoRoomForNextFile"], "true");
    assert_eq!(info["diskFull"], "false", "79 % is below the warning level");

    // Retention under that pressure deletes nothing unconsumed by default, and says
    // what deleting the oldest file would have dropped.
    settle(&store);
    let r = store.run_retention(SystemTime::now(), 0.79).unwrap();
    assert_eq!(r.commit_log_files_deleted, 0);
    let in_first_file = acked.iter().filter(|(o, _)| *o < FILE as i64).count();
    assert_eq!(r.unconsumed_refused, in_first_file as u64);
    assert_eq!(store.min_phy_offset(), 0);
    assert_all_present(&store, &acked);

    // Room again: the next file is created and puts are accepted.
    probe.set(roomy());
    assert!(store.wait_next_file_ready(WAIT), "next file never created");
    let r = store
        .put_message(message("Full", 0, body(acked.len()), String::new()))
        .await;
    assert_eq!(r.status, PutMessageStatus::PutOk);
    acked.push((r.append.unwrap().wrote_offset, acked.len()));
    assert_eq!(store.runtime_info()["commitLogNoRoomForNextFile"], "false");
    assert_all_present(&store, &acked);

    // Time retention still deletes expired files, consumed or not.
    let later = SystemTime::now() + Duration::from_secs(80 * 3600);
    store.delete_expired_files_now();
    let r = store.run_retention(later, 0.10).unwrap();
    assert!(r.commit_log_files_deleted > 0);
    assert!(store.min_phy_offset() > 0);

    // Nothing acknowledged is lost across a restart either.
    store.shutdown();
    drop(store);
    let store = reopen(small_config(dir.path(), FILE));
    let min = store.min_phy_offset();
    let kept: Vec<_> = acked.iter().copied().filter(|(o, _)| *o >= min).collect();
    assert!(!kept.is_empty());
    assert_all_present(&store, &kept);
}

/// Opens a store that was just shut down. The other test here runs `mount`, and a
/// child between fork and exec holds a copy of every descriptor of this process, the
/// store lock's among them, so the lock can outlive `shutdown` by that moment.
fn reopen(config: StoreConfig) -> Arc<MessageStore> {
    let deadline = Instant::now() + WAIT;
    loop {
        match MessageStore::open(config.clone()) {
            Err(StoreError::Locked { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            opened => return opened.unwrap(),
        }
    }
}

/// A tmpfs mounted for one test, unmounted (lazily) on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (`mount` syntax, e.g. `1m`), or says why it cannot.
    fn mount(size: &str) -> Result<Tmpfs, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("not running as root".into());
        }
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mount -t tmpfs failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn resize(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(self.path())
            .status()
            .unwrap();
        assert!(status.success(), "remount failed");
    }

    fn used_ratio(&self) -> f64 {
        DiskProbe::statvfs().read(self.path()).unwrap().used_ratio()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.path()).status();
    }
}

#[tokio::test]
async fn a_real_tmpfs_fills_up_and_takes_puts_again_when_it_grows() {
    let fs = match Tmpfs::mount("1m") {
        Ok(fs) => fs,
        Err(why) => {
            eprintln!("SKIPPED a_real_tmpfs_fills_up_and_takes_puts_again_when_it_grows: {why}");
            return;
        }
    };
    let config = StoreConfig {
        message_index_enable: false,
        // The store's own retention runs on the real readings meanwhile.
        clean_resource_interval: Duration::from_millis(100),
        ..small_config(fs.path(), 256 * 1024)
    };
    let store = MessageStore::open(config).unwrap();
    let mut acked = Vec::new();
    let status = put_until_refused(&store, 0, &mut acked).await;
    assert_eq!(status, PutMessageStatus::DiskFull);
    assert!(acked.len() > 100, "only {} puts fit", acked.len());
    let r = store
        .run_retention(SystemTime::now(), fs.used_ratio())
        .unwrap();
    assert_eq!(r.commit_log_files_deleted, 0, "{r:?}");
    assert_eq!(store.min_phy_offset(), 0);
    assert_all_present(&store, &acked);

    fs.resize("4m");
    store
        .run_retention(SystemTime::now(), fs.used_ratio())
        .unwrap();
    assert!(store.wait_next_file_ready(WAIT), "next file never created");
    let r = store
        .put_message(message("Full", 0, body(acked.len()), String::new()))
        .await;
    assert_eq!(r.status, PutMessageStatus::PutOk);
    acked.push((r.append.unwrap().wrote_offset, acked.len()));
    assert_all_present(&store, &acked);
    store.shutdown();
}

/// Controller mode cuts a replica's commitlog to its new master's log. Where the file
/// system cannot zero a range in place (tmpfs), the cut punches a hole, which frees the
/// blocks the file had reserved at creation; the next writes into that range must
/// reserve them again, so that a disk filled meanwhile refuses them rather than a page
/// fault killing the broker with SIGBUS (as the randomized fault schedule saw).
#[tokio::test]
async fn a_cut_commitlog_on_a_full_disk_refuses_puts_instead_of_crashing() {
    let fs = match Tmpfs::mount("2m") {
        Ok(fs) => fs,
        Err(why) => {
            eprintln!(
                "SKIPPED a_cut_commitlog_on_a_full_disk_refuses_puts_instead_of_crashing: {why}"
            );
            return;
        }
    };
    let store_dir = fs.path().join("store");
    let config = StoreConfig {
        message_index_enable: false,
        ..small_config(&store_dir, 512 * 1024)
    };
    // Free space as the store reads it stays plentiful: only the file system's own
    // answer to a write can tell that the disk is full.
    let store = MessageStore::open_with_probe(config, DiskProbe::simulated(roomy())).unwrap();
    let mut acked = Vec::new();
    for i in 0..20 {
        let r = store
            .put_message(message("Full", 0, body(i), String::new()))
            .await;
        assert_eq!(r.status, PutMessageStatus::PutOk);
        acked.push((r.append.unwrap().wrote_offset, i));
    }
    settle(&store);
    let cut = acked[3].0;
    store.set_role(true, false);
    store.truncate_to(cut).unwrap();
    acked.truncate(3);

    // Fill the file system to the last byte.
    {
        use std::io::Write;
        let mut filler = std::fs::File::create(fs.path().join("filler")).unwrap();
        let chunk = vec![0u8; 4096];
        while filler.write_all(&chunk).is_ok() {}
    }

    // Promoted again, the store appends after the cut: into blocks it no longer has.
    store.set_role(false, false);
    let mut refused = None;
    for i in 3..200 {
        let r = store
            .put_message(message("Full", 0, body(i), String::new()))
            .await;
        match (r.status, r.append) {
            (PutMessageStatus::PutOk, Some(a)) => acked.push((a.wrote_offset, i)),
            (status, append) => {
                assert!(append.is_none(), "a refused put wrote nothing");
                refused = Some(status);
                break;
            }
        }
    }
    assert_eq!(refused, Some(PutMessageStatus::DiskFull));
    assert_all_present(&store, &acked);
    store.shutdown();
}
