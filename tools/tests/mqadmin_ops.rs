//! The operations verbs against a real broker (in this process; `mqadmin` a child
//! process): where is my message for a message consumed, filtered out, retried,
//! dead-lettered and removed; browse; remove; resend from the DLQ; the lag columns
//! of consumerProgress; connected clients. Then a restart: the removal holds.

use std::process::Output;
use std::time::Duration;

use tempfile::TempDir;
use vostok_broker::{Broker, BrokerConfig, BrokerHandle};
use vostok_remoting::protocol::header::{
    ConsumerSendMsgBackRequestHeader, SendMessageResponseHeader,
};
use vostok_remoting::protocol::message::property::{self, push_pair};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;
use vostok_tests::client::TestClient;

const DEADLINE: Duration = Duration::from_secs(20);

async fn start_broker(dir: &TempDir, listen_port: u16, ns_port: u16) -> BrokerHandle {
    let mut config = BrokerConfig {
        broker_name: "ops-a".into(),
        broker_ip1: "127.0.0.1".into(),
        broker_ip2: "127.0.0.1".into(),
        listen_port,
        fast_listen_enable: false,
        namesrv_addr: None,
        embedded_namesrv_port: ns_port,
        ..BrokerConfig::default()
    };
    config.grpc.grpc_server_enable = false;
    config.store.store_path_root_dir = dir.path().join("store");
    config.store.mapped_file_size_commit_log = 16 * 1024 * 1024;
    Broker::start(config).await.expect("broker starts")
}

async fn mqadmin(namesrv: &str, args: &[&str]) -> Output {
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

async fn ok(namesrv: &str, args: &[&str]) -> String {
    let out = mqadmin(namesrv, args).await;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "mqadmin {args:?} failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The state column of `group`'s row in messageStatus output.
fn state_of(text: &str, group: &str) -> String {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|c| c.first() == Some(&group) && c.len() >= 7)
        .map(|c| c[2].to_owned())
        .unwrap_or_else(|| panic!("no row for {group} in\n{text}"))
}

async fn send(
    c: &TestClient,
    addr: &str,
    topic: &str,
    tag: &str,
    key: &str,
) -> SendMessageResponseHeader {
    let mut props = TestClient::properties(Some(tag), Some(key));
    push_pair(
        &mut props,
        property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
        &format!("UNIQ-{key}"),
    );
    c.send(addr, topic, 0, format!("body of {key}"), props)
        .await
}

async fn send_back(c: &TestClient, addr: &str, group: &str, msg_id: &str, delay_level: i32) {
    let (_, offset) =
        vostok_remoting::protocol::message::id::decode_offset_msg_id(msg_id).expect("offset id");
    let header = ConsumerSendMsgBackRequestHeader {
        offset,
        group: group.into(),
        delay_level,
        origin_msg_id: None,
        origin_topic: None,
        unit_mode: None,
        max_reconsume_times: None,
    };
    let r = c
        .call(
            addr,
            RemotingCommand::request_with_header(request_code::CONSUMER_SEND_MSG_BACK, &header),
        )
        .await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn where_is_my_message_and_the_operations_verbs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let broker = start_broker(&dir, 0, 0).await;
    let ns = broker.namesrv_addr();
    let addr = broker.addr().to_string();
    let (topic, group) = ("OpsTopic", "OpsGroup");
    let c = TestClient::default();
    ok(
        &ns,
        &[
            "updateTopic",
            "-t",
            topic,
            "-c",
            "DefaultCluster",
            "-r",
            "1",
            "-w",
            "1",
        ],
    )
    .await;
    // The consumer subscribes tag a, and is online while the test runs.
    let hb = c.heartbeat_consumer(&addr, group, topic, "a").await;
    assert_eq!(hb.code, response_code::SUCCESS);
    let consumed = send(&c, &addr, topic, "a", "k-consumed").await;
    let _filtered = send(&c, &addr, topic, "b", "k-filtered").await;
    let retried = send(&c, &addr, topic, "a", "k-retried").await;
    let dead = send(&c, &addr, topic, "a", "k-dead").await;
    let _removed = send(&c, &addr, topic, "a", "k-removed").await;
    c.wait_dispatched(&addr).await;
    // Consumed up to (not including) k-removed; k-retried failed once, k-dead went
    // straight to the DLQ.
    c.update_offset(&addr, group, topic, 0, 4).await;
    send_back(&c, &addr, group, &retried.msg_id, 0).await;
    send_back(&c, &addr, group, &dead.msg_id, -1).await;
    c.wait_dispatched(&addr).await;

    let text = ok(&ns, &["messageStatus", "-t", topic, "-i", &consumed.msg_id]).await;
    assert_eq!(state_of(&text, group), "consumed", "{text}");
    assert!(text.contains("What the broker cannot know"), "{text}");
    let text = ok(&ns, &["messageStatus", "-t", topic, "-k", "k-filtered"]).await;
    assert_eq!(state_of(&text, group), "filtered", "{text}");
    let text = ok(&ns, &["messageStatus", "-t", topic, "-k", "k-retried"]).await;
    assert_eq!(state_of(&text, group), "retrying", "{text}");
    let text = ok(&ns, &["messageStatus", "-t", topic, "-i", "UNIQ-k-dead"]).await;
    assert_eq!(state_of(&text, group), "dead-lettered", "{text}");
    let text = ok(&ns, &["messageStatus", "-t", topic, "-k", "k-removed"]).await;
    assert_eq!(state_of(&text, group), "waiting", "{text}");
    // --json for scripts.
    let json = ok(
        &ns,
        &["messageStatus", "-t", topic, "-k", "k-dead", "--json"],
    )
    .await;
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let dlq_id = v[0]["messages"][0]["groups"][0]["dlqMsgId"]
        .as_str()
        .expect("dlqMsgId")
        .to_owned();
    assert!(!dlq_id.is_empty(), "{json}");

    // consumerProgress: one behind on the topic, with its age; the retry queue; the DLQ.
    let text = ok(&ns, &["consumerProgress", "-g", group, "-t", topic]).await;
    assert!(
        text.lines().next().is_some_and(|h| h.contains("#LagTime")),
        "{text}"
    );
    assert!(text.contains("Diff Total: 1"), "{text}");
    assert!(text.contains("DLQ: 1 messages"), "{text}");

    // browseMessage lists the one waiting message, without consuming it.
    let text = ok(&ns, &["browseMessage", "-t", topic, "-g", group]).await;
    assert!(
        text.contains("k-removed") && !text.contains("k-consumed"),
        "{text}"
    );
    assert_eq!(c.query_offset(&addr, group, topic, 0).await, Some(4));

    // removeMessage: gone for every group, said by messageStatus, lag 0.
    let text = ok(&ns, &["removeMessage", "-t", topic, "-q", "0", "-o", "4"]).await;
    assert!(text.starts_with("removed"), "{text}");
    let text = ok(&ns, &["messageStatus", "-t", topic, "-k", "k-removed"]).await;
    assert!(text.contains("REMOVED"), "{text}");
    assert_eq!(state_of(&text, group), "removed", "{text}");
    let text = ok(&ns, &["browseMessage", "-t", topic, "-g", group]).await;
    assert!(!text.contains("k-removed"), "{text}");
    let pulled = c
        .pull(&addr, "OtherGroup", topic, 0, 0, 32, None, "*")
        .await;
    assert_eq!(pulled.messages.len(), 4, "a new group skips it too");

    // resendDlqMessage: the dead message is back in its topic.
    let text = ok(&ns, &["resendDlqMessage", "-g", group, "-i", &dlq_id]).await;
    assert!(text.contains(&format!("in topic {topic}")), "{text}");
    c.wait_dispatched(&addr).await;
    let text = ok(&ns, &["browseMessage", "-t", topic, "-g", group]).await;
    assert!(text.contains("k-dead"), "{text}");

    // connectedClients: the consumer with its language.
    let text = ok(&ns, &["connectedClients"]).await;
    let row = text
        .lines()
        .find(|l| l.contains(group))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        row.contains("consumer") && row.contains("RUST") && row.contains("push"),
        "{text}"
    );

    // The removal survives a restart.
    let ports = (
        broker.addr().port(),
        ns.rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0),
    );
    broker.shutdown().await;
    let broker = start_broker(&dir, ports.0, ports.1).await;
    let addr = broker.addr().to_string();
    let pulled = c
        .pull(&addr, "ThirdGroup", topic, 0, 0, 32, None, "*")
        .await;
    let keys: Vec<&str> = pulled
        .messages
        .iter()
        .filter_map(|m| m.properties.get("KEYS"))
        .collect();
    assert!(!keys.contains(&"k-removed"), "{keys:?}");
    broker.shutdown().await;
}
