//! The official Apache RocketMQ 5.x Node.js client (`rocketmq-client-nodejs`) against a
//! real broker's gRPC endpoint: normal, FIFO and delay sends, a simple consumer that
//! changes one message's invisible time and acks everything once. The scenario is
//! `tests/node/grpc_client.js`; without node or the package the test says so and passes
//! without running.

use std::collections::BTreeSet;
use std::time::Duration;

use vostok_tests::python;
use vostok_tests::{Broker, BrokerOptions};

const T: Duration = Duration::from_secs(120);

#[test]
fn node_producer_and_simple_consumer() {
    let Some(node) = python::node_client() else {
        return;
    };
    let broker = Broker::start(BrokerOptions::default().set("mappedFileSizeCommitLog", 64 << 20));
    let endpoint = broker.grpc_addr.clone().expect("gRPC endpoint");
    let r = python::run_node(&node, "grpc_client.js", &[&endpoint, "NodeTopic"], T);
    let got = r["got"].as_array().unwrap();
    let bodies: BTreeSet<&str> = got.iter().map(|m| m["body"].as_str().unwrap()).collect();
    let mut want: BTreeSet<String> = (0..5).map(|i| format!("node-{i}")).collect();
    want.insert("node-fifo".into());
    want.insert("node-delay".into());
    assert_eq!(bodies, want.iter().map(String::as_str).collect());
    assert_eq!(got.len(), 7, "each once: {r}");
    let ids: BTreeSet<&str> = got.iter().map(|m| m["id"].as_str().unwrap()).collect();
    let sent: BTreeSet<&str> = r["sent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(ids, sent);
    for m in got {
        assert_eq!(m["tag"], "TagN");
        match m["body"].as_str().unwrap() {
            "node-fifo" => assert_eq!(m["group"], "node-group-1"),
            "node-delay" => assert!(
                m["receivedAt"].as_i64().unwrap() + 1000 >= m["dueAt"].as_i64().unwrap(),
                "never early: {m}"
            ),
            body => {
                let i = &body["node-".len()..];
                assert_eq!(m["keys"], serde_json::json!([format!("key-{i}")]));
                assert_eq!(m["index"], i);
            }
        }
    }
    assert_eq!(r["changed"], true);
    assert_eq!(r["again"], 0, "all acked");
}
