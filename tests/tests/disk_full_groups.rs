//! A full disk never costs a consumer group messages it has not consumed, even when the
//! group has not committed an offset yet: a group that subscribes to a topic counts as
//! at the start of its queues until it commits, so a space-driven (forced) deletion
//! that would drop its messages is refused and sends are refused instead.
//!
//! A real `mqbroker` with its store on a small tmpfs (mounting one needs root; without
//! it the test says so and skips), SYNC_FLUSH, 1 MiB commitlog files. Group `SlowG` is
//! created and its consumer heartbeats a subscription to the topic, then disconnects
//! without committing; group `FastG` commits the queue ends as sends continue. Once the
//! broker refuses sends, `SlowG` reads every acknowledged message from offset 0.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;
use vostok_tests::client::TestClient;
use vostok_tests::{Broker, BrokerOptions};

const TOPIC: &str = "DiskFullGroups";
const QUEUES: i32 = 2;
const SLOW: &str = "SlowG";
const FAST: &str = "FastG";
const TMPFS: &str = "24m";
const BODY: usize = 4096;
/// How long sends must stay refused before the disk counts as full.
const REFUSING: Duration = Duration::from_secs(2);
/// Sends beyond which the disk evidently never fills (messages were deleted instead):
/// three times what the tmpfs holds.
const MAX_SENDS: usize = 3 * 24 * 256;

/// A tmpfs mounted for one test, unmounted (lazily) on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Result<Tmpfs, String> {
        // SAFETY: geteuid(2) has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("mounting a tmpfs needs root".into());
        }
        let dir = tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?;
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
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.path()).status();
    }
}

fn body(i: usize) -> String {
    let mut b = format!("{i:08}");
    b.push_str(&".".repeat(BODY - b.len()));
    b
}

fn broker_on(store: PathBuf) -> Broker {
    Broker::start(
        BrokerOptions::default()
            .set("storePathRootDir", store.display())
            .set("flushDiskType", "SYNC_FLUSH")
            .set("mappedFileSizeCommitLog", 1 << 20)
            .set("mappedFileSizeConsumeQueue", 20 * 1024)
            .set("maxHashSlotNum", 1024)
            .set("maxIndexNum", 4096)
            .set("cleanResourceInterval", 100),
    )
}

/// Every message of `queue_id` pulled by `group` from offset 0 until the queue's end,
/// as (queue offset, body); stops at the first answer that is not a message list.
async fn read_from_zero(
    client: &TestClient,
    addr: &str,
    group: &str,
    queue_id: i32,
) -> (Vec<(i64, String)>, i32) {
    let mut offset = 0;
    let mut out = Vec::new();
    loop {
        let pulled = client
            .pull(addr, group, TOPIC, queue_id, offset, 32, None, "*")
            .await;
        if pulled.code != response_code::SUCCESS {
            return (out, pulled.code);
        }
        for m in &pulled.messages {
            out.push((
                m.queue_offset,
                String::from_utf8_lossy(&m.body).into_owned(),
            ));
        }
        offset = pulled.header.expect("pull header").next_begin_offset;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_that_never_committed_keeps_its_messages_when_the_disk_fills() {
    let fs = match Tmpfs::mount(TMPFS) {
        Ok(fs) => fs,
        Err(why) => {
            eprintln!(
                "SKIPPED a_group_that_never_committed_keeps_its_messages_when_the_disk_fills: {why}"
            );
            return;
        }
    };
    let broker = broker_on(fs.path().join("store"));
    let client = TestClient::new("disk-full-groups");
    let created = client.create_topic(&broker.addr, TOPIC, QUEUES).await;
    assert_eq!(created.code, response_code::SUCCESS, "{}", created.remark());
    let group = serde_json::json!({ "groupName": SLOW });
    let created = client
        .call(
            &broker.addr,
            RemotingCommand::request(request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
                .with_body(serde_json::to_vec(&group).expect("JSON")),
        )
        .await;
    assert_eq!(created.code, response_code::SUCCESS, "{}", created.remark());
    // SlowG's consumer heartbeats its subscription, then goes away without a commit:
    // the group still counts, as at the start of the queues.
    let slow = TestClient::new("slow-consumer");
    let hb = slow
        .heartbeat_consumer(&broker.addr, SLOW, TOPIC, "*")
        .await;
    assert_eq!(hb.code, response_code::SUCCESS, "{}", hb.remark());
    drop(slow);

    // Sends until the broker refuses them for a while; FastG keeps up.
    let mut acked: Vec<Vec<(i64, usize)>> = vec![Vec::new(); QUEUES as usize];
    let mut refused_since: Option<Instant> = None;
    let mut refusals = 0u64;
    let mut i = 0usize;
    while i < MAX_SENDS {
        let queue_id = (i % QUEUES as usize) as i32;
        let r = client
            .send_raw(
                &broker.addr,
                TOPIC,
                queue_id,
                body(i),
                TestClient::properties(None, None),
            )
            .await;
        if r.code == response_code::SUCCESS {
            let header: vostok_remoting::protocol::header::SendMessageResponseHeader =
                r.decode_header().expect("send header");
            acked[queue_id as usize].push((header.queue_offset, i));
            refused_since = None;
            i += 1;
        } else {
            refusals += 1;
            let since = *refused_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= REFUSING {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        if i % 64 == 0 {
            for q in 0..QUEUES {
                let end = client.max_offset(&broker.addr, TOPIC, q).await;
                client
                    .update_offset(&broker.addr, FAST, TOPIC, q, end)
                    .await;
            }
        }
    }
    let total: usize = acked.iter().map(Vec::len).sum();
    eprintln!("{total} sends acknowledged, {refusals} refused");

    client.wait_dispatched(&broker.addr).await;
    let slow = TestClient::new("slow-consumer-back");
    for q in 0..QUEUES {
        let (read, last_code) = read_from_zero(&slow, &broker.addr, SLOW, q).await;
        let expected = &acked[q as usize];
        assert_eq!(
            read.len(),
            expected.len(),
            "queue {q}: SlowG read {} of {} acknowledged messages from offset 0 (then code {last_code}); \
             broker log:\n{}",
            read.len(),
            expected.len(),
            broker.process.log()
        );
        for ((offset, body_read), (acked_offset, n)) in read.iter().zip(expected) {
            assert_eq!(offset, acked_offset, "queue {q}");
            assert_eq!(body_read, &body(*n), "queue {q} offset {offset}");
        }
    }
    assert!(
        i < MAX_SENDS,
        "the broker never refused a send: {total} acknowledged on a {TMPFS} disk"
    );
    assert!(
        broker
            .process
            .log()
            .contains("refused (set cleanFileForciblyEnable=true"),
        "the refused deletion is logged"
    );
}
