//! A full disk: the store on a small tmpfs that also holds a filler file; producers fill
//! it until the broker refuses sends, the filler is deleted, sends resume. Nothing
//! acknowledged is lost, the refusal is a clear code (not SEND_OK, not SYSTEM_ERROR
//! forever). Needs root (mount).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::ledger::Ledger;
use crate::load::{self, Producers};
use crate::process::{Broker, Namesrv};
use crate::raw::Raw;
use crate::{Env, Outcome};

const TOPIC: &str = "ChaosDiskFull";
const QUEUES: i32 = 2;
const TMPFS_MIB: u64 = 96;
const FILLER_MIB: u64 = 24;
const BODY: usize = 4096;

/// A tmpfs mounted for the scenario, unmounted on drop.
struct Tmpfs {
    path: PathBuf,
}

impl Tmpfs {
    fn mount(path: &Path, mib: u64) -> Result<Tmpfs, String> {
        std::fs::create_dir_all(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let status = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={mib}m"),
                "chaos",
                &path.display().to_string(),
            ])
            .status()
            .map_err(|e| format!("mount: {e}"))?;
        if !status.success() {
            return Err(format!(
                "mount -t tmpfs failed ({status}); the disk-full scenario needs root"
            ));
        }
        Ok(Tmpfs {
            path: path.to_path_buf(),
        })
    }

    /// Used and total bytes.
    fn usage(&self) -> (u64, u64) {
        let c =
            std::ffi::CString::new(self.path.display().to_string()).expect("no NUL in a temp path");
        // SAFETY: statvfs(3) with a valid path and an output struct.
        unsafe {
            let mut s: libc::statvfs = std::mem::zeroed();
            if libc::statvfs(c.as_ptr(), &mut s) != 0 {
                return (0, 0);
            }
            let total = s.f_blocks as u64 * s.f_frsize as u64;
            (total - s.f_bavail as u64 * s.f_frsize as u64, total)
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

fn percent((used, total): (u64, u64)) -> String {
    format!("{:.0} %", used as f64 * 100.0 / total.max(1) as f64)
}

/// Waits until no send was acknowledged for `quiet` while failures grow.
async fn wait_refusing(ledger: &Ledger, quiet: Duration, limit: Duration) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    let mut last = (ledger.acked(), Instant::now());
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let acked = ledger.acked();
        if acked != last.0 {
            last = (acked, Instant::now());
        } else if last.1.elapsed() >= quiet {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the broker still acknowledged sends after {limit:?} ({acked} so far)"
            ));
        }
    }
}

pub async fn run(env: &Env) -> Result<Outcome, String> {
    let dir = env.scratch("disk-full")?;
    let fs = Tmpfs::mount(&dir.path().join("tmpfs"), TMPFS_MIB)?;
    let filler = fs.path.join("filler");
    let status = Command::new("dd")
        .args([
            "if=/dev/zero",
            &format!("of={}", filler.display()),
            "bs=1M",
            &format!("count={FILLER_MIB}"),
        ])
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("dd: {e}"))?;
    if !status.success() {
        return Err("could not write the filler file".into());
    }
    let ns = Namesrv::start(&env.bins, dir.path())?;
    let broker = Broker::start(
        &env.bins,
        dir.path(),
        &ns.addr,
        &[
            ("brokerName", "chaos-disk".into()),
            (
                "storePathRootDir",
                fs.path.join("store").display().to_string(),
            ),
            ("flushDiskType", "SYNC_FLUSH".into()),
            ("mappedFileSizeCommitLog", env.commitlog_file.to_string()),
            ("mappedFileSizeConsumeQueue", (20 * 4096).to_string()),
            ("maxHashSlotNum", "1024".into()),
            ("maxIndexNum", "4096".into()),
        ],
    )?;
    let raw = Raw::default();
    raw.create_topic(&broker.addr, TOPIC, QUEUES).await?;
    raw.wait_route(&ns.addr, TOPIC, Duration::from_secs(30))
        .await?;
    let at_start = fs.usage();

    let ledger = Arc::new(Ledger::default());
    let producer = load::producer(&ns.addr, "chaos-disk-producer").await?;
    let prefix = format!("disk-{}", "x".repeat(BODY));
    let producers = Producers::start(
        producer.clone(),
        TOPIC,
        &prefix,
        2,
        Duration::ZERO,
        ledger.clone(),
    );

    let filling = Instant::now();
    wait_refusing(&ledger, Duration::from_secs(5), Duration::from_secs(300)).await?;
    let full_after = filling.elapsed();
    let acked_when_full = ledger.acked();
    let refusals = ledger.failures();
    let when_full = fs.usage();

    // Refusing for a while is fine; it must stay a clear refusal.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let still_refused = ledger.acked() == acked_when_full;
    std::fs::remove_file(&filler).map_err(|e| format!("remove the filler: {e}"))?;
    let freed = Instant::now();
    let resume_limit = Duration::from_secs(120);
    while ledger.acked() == acked_when_full && freed.elapsed() < resume_limit {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let resumed_after = freed.elapsed();
    let resumed = ledger.acked() > acked_when_full;
    tokio::time::sleep(Duration::from_secs(2)).await;
    producers.stop().await;
    producer.shutdown().await;
    let after = fs.usage();
    let stored = raw.read_topic(&broker.addr, TOPIC, QUEUES).await?;
    let verdict = ledger.verify(&stored);
    let failures = ledger.failures();
    let unclear: u64 = failures
        .iter()
        .filter(|(k, _)| k.as_str() == "SEND_OK" || k.as_str() == "SYSTEM_ERROR")
        .map(|(_, n)| n)
        .sum();
    drop(broker);
    Ok(Outcome {
        name: "disk full",
        checked: format!(
            "store on a {TMPFS_MIB} MiB tmpfs with a {FILLER_MIB} MiB filler, SYNC_FLUSH, {BODY} B bodies: sends refused with a clear code when full, resumed once the filler is deleted, nothing acknowledged lost"
        ),
        figures: vec![
            ("tmpfs used at start / when refusing / at the end".into(), format!("{} / {} / {}", percent(at_start), percent(when_full), percent(after))),
            ("acknowledged before refusal".into(), acked_when_full.to_string()),
            ("filled in".into(), format!("{:.0} s", full_after.as_secs_f64())),
            ("refusals when full".into(), format!("{refusals:?}")),
            ("still refusing 5 s later".into(), still_refused.to_string()),
            ("free space to first SEND_OK".into(), if resumed { format!("{} ms", resumed_after.as_millis()) } else { "never".into() }),
            ("verdict".into(), verdict.describe()),
            ("all failed sends".into(), format!("{failures:?}")),
        ],
        passed: verdict.ok() && resumed && unclear == 0 && !refusals.is_empty(),
    })
}
