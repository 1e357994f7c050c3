//! What the verb tests share: a standalone broker in this process (its embedded name
//! server on an ephemeral port, its store in a temp dir) and `mqadmin` as a child
//! process.

#![allow(dead_code)] // Each test file uses a part of it.

use std::future::Future;
use std::process::Output;
use std::time::Duration;

use tempfile::TempDir;
use vostok_broker::{Broker, BrokerConfig, BrokerHandle};

/// Longest wait for one `mqadmin` run or one asynchronous broker change.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// A broker named `name`; `tune` adjusts its config before it starts.
pub async fn start_broker(
    name: &str,
    tune: impl FnOnce(&mut BrokerConfig),
) -> (BrokerHandle, TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = BrokerConfig::loopback(name, dir.path().join("store"));
    config.store.mapped_file_size_commit_log = 16 * 1024 * 1024;
    tune(&mut config);
    let broker = Broker::start(config).await.expect("broker starts");
    (broker, dir)
}

/// Runs `mqadmin -n NAMESRV ARGS...`, NAMESRV_ADDR unset.
pub async fn mqadmin(namesrv: &str, args: &[&str]) -> Output {
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_mqadmin"))
        .args(args)
        .arg("-n")
        .arg(namesrv)
        .env_remove("NAMESRV_ADDR")
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(DEADLINE, run)
        .await
        .unwrap_or_else(|_| panic!("mqadmin {args:?} did not finish within {DEADLINE:?}"))
        .expect("mqadmin runs")
}

/// Stdout of a run that must succeed.
pub async fn ok(namesrv: &str, args: &[&str]) -> String {
    let out = mqadmin(namesrv, args).await;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "mqadmin {args:?} failed ({})\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Stdout of a `--json` run that must succeed, parsed.
pub async fn json(namesrv: &str, args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.push("--json");
    let text = ok(namesrv, &all).await;
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?} --json: {e}\n{text}"))
}

/// Stderr of a run that must fail with exit code 1 and a one-line message.
pub async fn fails(namesrv: &str, args: &[&str]) -> String {
    let out = mqadmin(namesrv, args).await;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "mqadmin {args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr:?}");
    assert!(stderr.starts_with("mqadmin: "), "{stderr:?}");
    stderr
}

/// Re-runs `check` until it returns `Some`, or fails after [`DEADLINE`].
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {DEADLINE:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
