//! The official Apache RocketMQ 5.x Node.js client (`rocketmq-client-nodejs`) against a
//! real broker's gRPC endpoint: normal, FIFO and delay sends, a simple consumer that
//! changes one message's invisible time and acks everything once; an orderly group's
//! simple consumer reading message groups spread over several queues. The scenarios
//! are `tests/node/grpc_client.js`; without node or the package each test says so and
//! passes without running.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;
use vostok_tests::client::TestClient;
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
    let r = python::run_node(
        &node,
        "grpc_client.js",
        &["send_receive", &endpoint, "NodeTopic"],
        T,
    );
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

/// Message groups of a FIFO topic land on different queues; the client asks for one
/// queue (its simple consumer keeps queue 0 of the route only), and the broker pops
/// every queue of itself, as Apache's proxy does, each in order.
#[test]
fn orderly_simple_consumer_gets_every_message_group_of_every_queue_in_order() {
    let Some(node) = python::node_client() else {
        return;
    };
    let broker = Broker::start(BrokerOptions::default().set("mappedFileSizeCommitLog", 64 << 20));
    let (topic, group) = ("NodeFifo", "GID_NodeFifo");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let admin = TestClient::default();
    runtime.block_on(async {
        let created = admin.create_topic(&broker.addr, topic, 4).await;
        assert_eq!(created.code, response_code::SUCCESS, "{}", created.remark());
        let config = serde_json::json!({ "groupName": group, "consumeMessageOrderly": true });
        let created = admin
            .call(
                &broker.addr,
                RemotingCommand::request(request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
                    .with_body(serde_json::to_vec(&config).unwrap()),
            )
            .await;
        assert_eq!(created.code, response_code::SUCCESS, "{}", created.remark());
    });
    // The broker puts a message group in a queue by a hash of its name: order-13 and
    // order-14 share queue 0, order-2 and order-1 have queues of their own (checked
    // below from what the queues hold).
    let groups = ["order-13", "order-14", "order-2", "order-1"];
    let endpoint = broker.grpc_addr.clone().expect("gRPC endpoint");
    let r = python::run_node(
        &node,
        "grpc_client.js",
        &["fifo", &endpoint, topic, group, &groups.join(","), "10"],
        T,
    );
    let stored: Vec<i64> = runtime.block_on(async {
        let mut stored = Vec::new();
        for q in 0..4 {
            stored.push(admin.max_offset(&broker.addr, topic, q).await);
        }
        stored
    });
    assert!(
        stored[0] > 0 && stored.iter().filter(|&&n| n > 0).count() >= 3,
        "the message groups spread over queue 0 and others: {stored:?}"
    );
    let mut by_group: BTreeMap<&str, Vec<(&str, i64)>> = BTreeMap::new();
    for m in r["got"].as_array().unwrap() {
        by_group
            .entry(m["group"].as_str().unwrap())
            .or_default()
            .push((m["body"].as_str().unwrap(), m["queue"].as_i64().unwrap()));
    }
    for g in groups {
        let got = by_group.get(g).cloned().unwrap_or_default();
        let queues: BTreeSet<i64> = got.iter().map(|(_, q)| *q).collect();
        assert!(queues.len() <= 1, "{g} stays in one queue: {queues:?}");
        let bodies: Vec<&str> = got.iter().map(|(b, _)| *b).collect();
        let want: Vec<String> = (0..10).map(|i| format!("{g}:{i}")).collect();
        assert_eq!(
            bodies, want,
            "{g} (queues {queues:?}) complete and in send order"
        );
    }
    assert_eq!(
        r["got"].as_array().unwrap().len(),
        r["sent"].as_array().unwrap().len(),
        "each once"
    );
}
