//! The official Apache RocketMQ 5.x Python client (`rocketmq-python-client`) against a
//! real broker's gRPC endpoint (issue 18): sends of every message type, the simple
//! consumer's receive, ack, expiry and invisible-time change, the push consumer with a
//! retry, transactions with a check-back through the Telemetry stream, recall, and one
//! system for both protocols (a message sent over gRPC reaches a remoting consumer and
//! back; gRPC clients in the broker's connection listings). The scenarios are
//! `tests/python/grpc_client.py`; without the client installed each test says so and
//! passes without running.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use vostok_client::{
    CommonConsumerConfig, ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, ConsumeFromWhere,
    ConsumerConfig, Message, MessageExt, MessageListener, Producer, ProducerConfig, PushConsumer,
};
use vostok_remoting::protocol::header::{
    GetConsumerConnectionListRequestHeader, GetProducerConnectionListRequestHeader,
};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;
use vostok_tests::client::TestClient;
use vostok_tests::python::{self, Held, PyClient};
use vostok_tests::sdk::{client, wait_until};
use vostok_tests::{Broker, BrokerOptions};

/// Bound of one scenario.
const T: Duration = Duration::from_secs(150);

fn broker() -> Broker {
    Broker::start(
        BrokerOptions::default()
            .set("transactionCheckInterval", 1000)
            .set("transactionTimeOut", 1000)
            // Small commitlog files: these tests write little, in parallel.
            .set("mappedFileSizeCommitLog", 64 << 20),
    )
}

fn endpoint(broker: &Broker) -> String {
    broker
        .grpc_addr
        .clone()
        .expect("the broker prints its gRPC endpoint")
}

fn bodies(received: &Value) -> Vec<String> {
    received
        .as_array()
        .expect("a list of messages")
        .iter()
        .map(|m| m["body"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn producer_and_simple_consumer_send_and_receive_normal_messages() {
    let Some(py) = python::interpreter(PyClient::V5) else {
        return;
    };
    let broker = broker();
    let r = python::run(
        &py,
        "grpc_client.py",
        &["send_receive", &endpoint(&broker), "GrpcNormal", "20"],
        T,
    );
    let received = r["received"].as_array().unwrap();
    let got: BTreeSet<String> = bodies(&r["received"]).into_iter().collect();
    let want: BTreeSet<String> = (0..20).map(|i| format!("normal-{i}")).collect();
    assert_eq!(got, want);
    assert_eq!(received.len(), 20, "each message once");
    for m in received {
        let i: usize = m["body"].as_str().unwrap()["normal-".len()..]
            .parse()
            .unwrap();
        assert_eq!(m["tag"], if i % 2 == 0 { "TagA" } else { "TagB" });
        assert_eq!(m["keys"], serde_json::json!([format!("key-{i}")]));
        assert_eq!(m["properties"]["index"], i.to_string());
        assert_eq!(
            m["message_id"], r["sent"][i],
            "the id the producer was given"
        );
        assert_eq!(m["attempt"], 1);
        assert_eq!(m["corrupted"], false, "body digest checked by the client");
    }
    assert_eq!(r["again"], 0, "acked messages do not come back");
}

#[test]
fn message_groups_keep_one_queue_in_send_order() {
    let Some(py) = python::interpreter(PyClient::V5) else {
        return;
    };
    let broker = broker();
    let r = python::run(
        &py,
        "grpc_client.py",
        &["fifo", &endpoint(&broker), "GrpcFifo", "3", "10"],
        T,
    );
    // Per group: (queue id, queue offset, body) from the receipt handles.
    let mut groups: BTreeMap<String, Vec<(i64, i64, String)>> = BTreeMap::new();
    for m in r["received"].as_array().unwrap() {
        let handle: Vec<&str> = m["handle"].as_str().unwrap().split(' ').collect();
        groups
            .entry(m["group"].as_str().unwrap().to_owned())
            .or_default()
            .push((
                handle[6].parse().unwrap(),
                handle[7].parse().unwrap(),
                m["body"].as_str().unwrap().to_owned(),
            ));
    }
    assert_eq!(groups.len(), 3);
    for (group, mut list) in groups {
        let queues: BTreeSet<i64> = list.iter().map(|(q, _, _)| *q).collect();
        assert_eq!(queues.len(), 1, "{group} stays in one queue");
        list.sort_by_key(|(_, offset, _)| *offset);
        let g = &group["group-".len()..];
        let order: Vec<String> = list.into_iter().map(|(_, _, b)| b).collect();
        let want: Vec<String> = (0..10).map(|i| format!("g{g}-{i}")).collect();
        assert_eq!(order, want, "{group} in send order");
    }
}

#[test]
fn an_orderly_group_gets_every_message_group_of_every_queue_in_order() {
    let Some(py) = python::interpreter(PyClient::V5) else {
        return;
    };
    let broker = broker();
    let (topic, group) = ("GrpcOrderly", "GID_GrpcOrderly");
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
    let r = python::run(
        &py,
        "grpc_client.py",
        &["fifo", &endpoint(&broker), topic, "5", "6"],
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
        stored.iter().filter(|&&n| n > 0).count() >= 3,
        "the message groups spread over several queues: {stored:?}"
    );
    // In the order received, per group: the send order.
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for m in r["received"].as_array().unwrap() {
        groups
            .entry(m["group"].as_str().unwrap().to_owned())
            .or_default()
            .push(m["body"].as_str().unwrap().to_owned());
    }
    assert_eq!(groups.len(), 5, "{groups:?}");
    for (group, bodies) in groups {
        let g = &group["group-".len()..];
        let want: Vec<String> = (0..6).map(|i| format!("g{g}-{i}")).collect();
        assert_eq!(bodies, want, "{group} complete and in send order");
    }
}

#[test]
fn delay_messages_wait_for_their_time_and_a_recalled_one_never_comes() {
    let Some(py) = python::interpreter(PyClient::V5) else {
        return;
    };
    let broker = broker();
    let r = python::run(
        &py,
        "grpc_client.py",
        &["delay", &endpoint(&broker), "GrpcDelay", "3"],
        T,
    );
    assert!(r["recall_handle"].as_str().is_some_and(|h| !h.is_empty()));
    assert_eq!(r["recalled_id"], r["recalled_expected"]);
    // The recalled message was due before the one that came: it would have come first.
    assert_eq!(bodies(&r["received"]), vec!["delayed".to_owned()]);
    assert_eq!(r["received"][0]["message_id"], r["delayed_id"]);
    let received_at = r["received_at"].as_f64().unwrap();
    let due_at = r["due_at"].as_f64().unwrap();
    // Never early (the delivery time has a precision of a second).
    assert!(
        received_at + 1.0 >= due_at,
        "received at {received_at}, due at {due_at}"
    );
}

#[test]
fn transactions_commit_roll_back_and_are_checked_back_over_telemetry() {
    let Some(py) = python::interpreter(PyClient::V5) else {
        return;
    };
    let broker = broker();
    let r = python::run(
        &py,
        "grpc_client.py",
        &["transaction", &endpoint(&broker), "GrpcTx"],
        T,
    );
    assert_eq!(r["checker_called"], true, "the broker asked the producer");
    assert!(
        r["checked"].as_array().unwrap().contains(&r["ids"][2]),
        "{r}"
    );
    for id in r["transaction_ids"].as_array().unwrap() {
        assert!(id.as_str().is_some_and(|t| !t.is_empty()));
    }
    let got: BTreeSet<String> = bodies(&r["received"]).into_iter().collect();
    let want: BTreeSet<String> = ["committed", "checked-back"].map(String::from).into();
    assert_eq!(got, want, "the rolled-back one never shows");
}

#[test]
fn simple_consumer_lets_a_message_expire_and_changes_another_s_invisible_time() {
    let Some(py) = python::interpreter(PyClient::V5) else {
        return;
    };
    let broker = broker();
    let r = python::run(
        &py,
        "grpc_client.py",
        &["invisible", &endpoint(&broker), "GrpcInvisible"],
        T,
    );
    assert_eq!(
        r["first"],
        serde_json::json!(["acked", "expires", "extended"])
    );
    assert_eq!(bodies(&r["back"]), vec!["expires".to_owned()], "{r}");
    assert_eq!(r["back"][0]["attempt"], 2);
    assert_eq!(r["handle_changed"], true);
    assert_eq!(
        r["after"], 0,
        "acked with the new handle, nothing comes back"
    );
}

#[test]
fn push_consumer_consumes_and_gets_a_failed_message_again() {
    let Some(py) = python::interpreter(PyClient::V5) else {
        return;
    };
    let broker = broker();
    let r = python::run(
        &py,
        "grpc_client.py",
        &["push", &endpoint(&broker), "GrpcPush", "10"],
        T,
    );
    assert_eq!(r["finished"], true, "{r}");
    let seen = r["seen"].as_array().unwrap();
    let got: BTreeSet<&str> = seen.iter().map(|s| s["body"].as_str().unwrap()).collect();
    assert_eq!(got.len(), 10);
    assert!(seen
        .iter()
        .any(|s| s["body"] == "push-0" && s["attempt"].as_i64() >= Some(2)));
}

fn consumer_config(namesrv: &str, group: &str) -> ConsumerConfig {
    ConsumerConfig {
        common: CommonConsumerConfig {
            client: client(namesrv, group),
            consumer_group: group.into(),
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            ..CommonConsumerConfig::push_defaults()
        },
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_system_for_both_protocols() {
    let Some(py) = python::interpreter(PyClient::V5) else {
        return;
    };
    let broker = broker();
    let ep = endpoint(&broker);
    // gRPC producer -> classic push consumer.
    let py2 = py.clone();
    let ep2 = ep.clone();
    let sent = tokio::task::spawn_blocking(move || {
        python::run(
            &py2,
            "grpc_client.py",
            &["produce", &ep2, "FromGrpc", "10", "grpc"],
            T,
        )
    })
    .await
    .unwrap();
    assert_eq!(sent["ids"].as_array().unwrap().len(), 10);
    let seen: Arc<Mutex<Vec<MessageExt>>> = Arc::default();
    let consumer = PushConsumer::new(consumer_config(&broker.namesrv, "remoting-reader"));
    consumer.subscribe("FromGrpc", "TagA").unwrap();
    let s = seen.clone();
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            s.lock().unwrap().extend(msgs.iter().cloned());
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer.start().await.unwrap();
    wait_until("the remoting consumer to read the gRPC messages", || {
        seen.lock().unwrap().len() >= 10
    })
    .await;
    let ids: BTreeSet<String> = seen.lock().unwrap().iter().map(|m| m.msg_id()).collect();
    let sent_ids: BTreeSet<String> = sent["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        ids, sent_ids,
        "the message id the gRPC producer got is the UNIQ_KEY"
    );
    consumer.shutdown().await;

    // Remoting producer -> gRPC simple consumer.
    let producer = Producer::new(ProducerConfig {
        client: client(&broker.namesrv, "remoting-writer"),
        producer_group: "remoting-writer".into(),
        ..Default::default()
    });
    producer.start().await.unwrap();
    for i in 0..10 {
        let msg = Message::new("FromRemoting", format!("remoting-{i}")).with_tags("TagR");
        producer.send(msg).await.unwrap();
    }
    producer.shutdown().await;
    let got = tokio::task::spawn_blocking(move || {
        python::run(
            &py,
            "grpc_client.py",
            &["consume", &ep, "FromRemoting", "grpc-reader", "10"],
            T,
        )
    })
    .await
    .unwrap();
    let got: BTreeSet<String> = bodies(&got["received"]).into_iter().collect();
    let want: BTreeSet<String> = (0..10).map(|i| format!("remoting-{i}")).collect();
    assert_eq!(got, want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_clients_show_in_the_connection_listings() {
    let Some(py) = python::interpreter(PyClient::V5) else {
        return;
    };
    let broker = broker();
    let ep = endpoint(&broker);
    let held = tokio::task::spawn_blocking(move || {
        Held::start(
            &py,
            "grpc_client.py",
            &["hold", &ep, "HeldTopic", "held-group"],
            T,
        )
    })
    .await
    .unwrap();
    let admin = TestClient::default();
    let consumers = RemotingCommand::request_with_header(
        request_code::GET_CONSUMER_CONNECTION_LIST,
        &GetConsumerConnectionListRequestHeader {
            consumer_group: "held-group".into(),
        },
    );
    let response = admin.call(&broker.addr, consumers).await;
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{}",
        response.remark()
    );
    let body: Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(
        body["connectionSet"].as_array().map(Vec::len),
        Some(1),
        "{body}"
    );
    assert_eq!(body["connectionSet"][0]["language"], "PYTHON");
    assert!(
        body["subscriptionTable"].get("HeldTopic").is_some(),
        "{body}"
    );
    let producers = RemotingCommand::request_with_header(
        request_code::GET_PRODUCER_CONNECTION_LIST,
        &GetProducerConnectionListRequestHeader {
            producer_group: "HeldTopic".into(),
        },
    );
    let response = admin.call(&broker.addr, producers).await;
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{}",
        response.remark()
    );
    let body: Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(
        body["connectionSet"].as_array().map(Vec::len),
        Some(1),
        "{body}"
    );
    assert_eq!(body["connectionSet"][0]["language"], "PYTHON");
    // NotifyClientTermination takes the client off the lists.
    let finished = tokio::task::spawn_blocking(move || held.finish(T))
        .await
        .unwrap();
    assert!(finished);
    let again = RemotingCommand::request_with_header(
        request_code::GET_CONSUMER_CONNECTION_LIST,
        &GetConsumerConnectionListRequestHeader {
            consumer_group: "held-group".into(),
        },
    );
    let response = admin.call(&broker.addr, again).await;
    assert_ne!(response.code, response_code::SUCCESS, "no consumer left");
}

#[test]
fn tls_and_plaintext_share_the_port() {
    let Some(py) = python::interpreter(PyClient::V5) else {
        return;
    };
    let broker = broker();
    let ep = endpoint(&broker);
    let r = python::run(&py, "grpc_client.py", &["tls", &ep, "GrpcTls"], T);
    assert_eq!(r["certificate"], true);
    assert_eq!(bodies(&r["received"]), vec!["over-tls".to_owned()]);
    assert_eq!(r["received"][0]["message_id"], r["sent"]);
    // The same port in the clear, right after.
    let r = python::run(
        &py,
        "grpc_client.py",
        &["produce", &ep, "GrpcTls", "1", "plain"],
        T,
    );
    assert_eq!(r["ids"].as_array().map(Vec::len), Some(1));
}
