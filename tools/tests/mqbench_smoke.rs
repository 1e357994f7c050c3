//! `mqbench` against a real broker: the broker runs in this process (standalone, its
//! embedded name server on an ephemeral port), `mqbench` as a child process. Checks the
//! JSON shape and the sequence accounting, never timings.

use std::path::Path;

use serde_json::Value;
use vostok_broker::{Broker, BrokerConfig, BrokerHandle};

async fn mqbench(args: &[&str], json: &Path) -> Value {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_mqbench"))
        .args(args)
        .arg("--json")
        .arg(json)
        .output()
        .await
        .expect("mqbench runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "mqbench {args:?} failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("summary"), "{stdout}");
    let text = std::fs::read_to_string(json).expect("--json file written");
    serde_json::from_str(&text).expect("valid JSON")
}

async fn standalone(dir: &Path, name: &str) -> BrokerHandle {
    let mut config = BrokerConfig::loopback(name, dir.join("store"));
    config.store.mapped_file_size_commit_log = 64 * 1024 * 1024;
    Broker::start(config).await.expect("broker starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_then_lite_pull_consume_against_a_real_broker() {
    let dir = tempfile::tempdir().unwrap();
    let broker = standalone(dir.path(), "bench-smoke").await;
    let namesrv = broker.namesrv_addr();

    let e2e_json = dir.path().join("e2e.json");
    let v = mqbench(
        &[
            "e2e",
            "-n",
            &namesrv,
            "-t",
            "SmokeTopic",
            "-s",
            "256",
            "-d",
            "2",
            "-w",
            "2",
            "--mode",
            "async",
            "--window",
            "64",
            "--rate",
            "2000",
            "-q",
        ],
        &e2e_json,
    )
    .await;
    let sent = v["sent"].as_u64().expect("sent");
    assert!(sent > 0, "{v}");
    assert_eq!(v["send_errors"], 0, "{v}");
    assert!(v["received"].as_u64().expect("received") > 0, "{v}");
    assert_eq!(v["lost"], 0, "{v}");
    assert_eq!(v["duplicates"], 0, "{v}");
    // The first send (the one that makes sure the topic exists) is this run's own: a
    // fresh topic hands it to the new group, and it is not counted as foreign.
    assert_eq!(v["foreign"], 0, "{v}");
    // The whole run's figures cover the same deliveries: `received` is its parts, and
    // holds every message sent in the window that `lost` does not count.
    let n = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k}: {v}"));
    assert_eq!(
        n("received"),
        n("acknowledged") - n("lost")
            + n("received_unacknowledged")
            + n("duplicates")
            + n("foreign"),
        "{v}"
    );
    assert!(n("received") + n("lost") >= sent, "{v}");
    assert!(n("received_in_window") <= n("received"), "{v}");
    for k in ["p50", "p99", "p999", "max"] {
        assert!(v["latency_ms"][k].is_number(), "latency_ms.{k}: {v}");
        assert!(
            v["e2e_latency_ms"][k].is_number(),
            "e2e_latency_ms.{k}: {v}"
        );
    }
    assert!(v["msgs_per_sec"].as_f64().unwrap() > 0.0);
    assert!(v["mb_per_sec"].as_f64().unwrap() > 0.0);
    // The broker listens in this process, so its /proc figures are ours.
    assert_eq!(v["broker"]["pid"], std::process::id(), "{v}");
    assert!(v["broker"]["peak_rss_anon_mib"].as_f64().unwrap() > 0.0);
    assert!(v["broker"]["store_bytes_written"].as_i64().unwrap() > 0);

    // The topic now holds a backlog: a new group reads 100 of it from the start.
    let consume_json = dir.path().join("consume.json");
    let v = mqbench(
        &[
            "consume",
            "-n",
            &namesrv,
            "-t",
            "SmokeTopic",
            "-c",
            "100",
            "-d",
            "20",
            "--lite-pull",
            "-q",
        ],
        &consume_json,
    )
    .await;
    assert!(
        v["received_in_window"].as_u64().expect("in window") >= 100,
        "{v}"
    );
    assert!(
        v["received"].as_u64() >= v["received_in_window"].as_u64(),
        "{v}"
    );
    assert_eq!(v["sent"], Value::Null);
    assert_eq!(v["settings"]["consumer"], "lite_pull");

    broker.shutdown().await;
}

/// `consume --pop --tag` hands the tag to the broker: the simple consumer receives the
/// matching quarter of a backlog and nothing else, as push and lite pull do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pop_consume_receives_only_the_tag_it_selects() {
    let dir = tempfile::tempdir().unwrap();
    let broker = standalone(dir.path(), "bench-pop-tag").await;
    let namesrv = broker.namesrv_addr();
    // One task: message i carries tag i % 4, so 50 of the 200 are tagged `a` (the
    // run's untagged first send makes 201).
    let produce_json = dir.path().join("produce.json");
    let v = mqbench(
        &[
            "produce",
            "-n",
            &namesrv,
            "-t",
            "PopTagTopic",
            "-s",
            "128",
            "-c",
            "200",
            "-w",
            "1",
            "--mode",
            "sync",
            "--tags",
            "a,b,c,d",
            "-q",
        ],
        &produce_json,
    )
    .await;
    assert_eq!(v["sent"], 200, "{v}");

    // The count is never reached: the run ends after its duration with what matched.
    let consume_json = dir.path().join("consume.json");
    let v = mqbench(
        &[
            "consume",
            "-n",
            &namesrv,
            "-t",
            "PopTagTopic",
            "-c",
            "1000",
            "-d",
            "3",
            "--pop",
            "--tag",
            "a",
            "-q",
        ],
        &consume_json,
    )
    .await;
    assert_eq!(v["settings"]["consumer"], "pop", "{v}");
    assert_eq!(v["received"], 50, "{v}");
    assert_eq!(v["from_broker_msgs"], 50, "{v}");

    broker.shutdown().await;
}
