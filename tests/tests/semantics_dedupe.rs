//! Exactly-once publish within the duplication window (issue 20), against real broker
//! processes: a send whose answer is lost (the connection cut right after the request
//! is written, or the broker killed after the write and restarted) and then retried
//! with the same UNIQ_KEY lands once and gets the original answer; concurrent retries
//! store once; batches are deduplicated message by message; the SDK producer whose
//! answers are dropped by a proxy lands every message once (and, as a control, twice
//! without the window); the window is per topic and off by default.

use std::collections::BTreeMap;
use std::time::Duration;

use vostok_client::{Message, Producer, ProducerConfig};
use vostok_remoting::protocol::header::{
    CreateTopicRequestHeader, SendMessageRequestHeader, SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
};
use vostok_remoting::protocol::message::batch;
use vostok_remoting::protocol::message::property::{self, push_pair};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::{ClientConfig, RemotingClient, RemotingCommand};
use vostok_tests::client::TestClient;
use vostok_tests::proxy::AnswerDropper;
use vostok_tests::sdk::{client, eventually};
use vostok_tests::{Broker, BrokerOptions};

const TOPIC: &str = "DedupeTopic";

fn windowed() -> BrokerOptions {
    BrokerOptions::default().set("duplicationWindowSeconds", 60)
}

async fn create_topic(broker: &Broker, topic: &str, attributes: Option<&str>) {
    let header = CreateTopicRequestHeader {
        topic: topic.into(),
        default_topic: "TBW102".into(),
        read_queue_nums: 1,
        write_queue_nums: 1,
        perm: 6,
        topic_filter_type: "SINGLE_TAG".into(),
        topic_sys_flag: Some(0),
        order: Some(false),
        attributes: attributes.map(str::to_owned),
        force: None,
    };
    let admin = TestClient::default();
    let response = admin
        .call(
            &broker.addr,
            RemotingCommand::request_with_header(request_code::UPDATE_AND_CREATE_TOPIC, &header),
        )
        .await;
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{}",
        response.remark()
    );
    admin.wait_for_route(&broker.namesrv, topic, |_| true).await;
}

fn props(uniq_key: &str) -> String {
    let mut p = TestClient::properties(Some("TagA"), None);
    push_pair(&mut p, property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, uniq_key);
    p
}

/// SEND_MESSAGE_V2 of one message with `uniq_key` to queue 0.
fn send_request(topic: &str, uniq_key: &str, body: &str) -> RemotingCommand {
    let header = SendMessageRequestHeader {
        producer_group: "dedupe-producer".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 0,
        sys_flag: 0,
        born_timestamp: vostok_remoting::support::time::now_millis(),
        flag: 0,
        properties: Some(props(uniq_key)),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        batch: Some(false),
        max_reconsume_times: None,
        broker_name: None,
    };
    RemotingCommand::request_with_header(
        request_code::SEND_MESSAGE_V2,
        &SendMessageRequestHeaderV2::from(header),
    )
    .with_body(body.to_owned())
}

/// SEND_BATCH_MESSAGE of one message per key, the body naming the key.
fn batch_request(topic: &str, keys: &[&str]) -> RemotingCommand {
    let mut body = Vec::new();
    for key in keys {
        let mut p = String::new();
        push_pair(&mut p, property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, key);
        batch::encode_block(&mut body, 0, key.as_bytes(), &p);
    }
    let header = SendMessageRequestHeader {
        producer_group: "dedupe-producer".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 0,
        sys_flag: 0,
        born_timestamp: vostok_remoting::support::time::now_millis(),
        flag: 0,
        properties: Some(String::new()),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        batch: Some(true),
        max_reconsume_times: None,
        broker_name: None,
    };
    RemotingCommand::request_with_header(
        request_code::SEND_BATCH_MESSAGE,
        &SendMessageRequestHeaderV2::from(header),
    )
    .with_body(body)
}

async fn answered(
    client: &TestClient,
    addr: &str,
    request: RemotingCommand,
) -> SendMessageResponseHeader {
    let response = client.call(addr, request).await;
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{}",
        response.remark()
    );
    response.decode_header().expect("send response header")
}

/// UNIQ_KEY → how many times it is stored in queue 0 of `topic`.
async fn stored(broker: &Broker, topic: &str) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    let client = TestClient::default();
    for m in client
        .drain(&broker.addr, "dedupe-reader", topic, 0, 0)
        .await
    {
        *counts
            .entry(
                m.property(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
                    .unwrap_or("")
                    .to_owned(),
            )
            .or_insert(0) += 1;
    }
    counts
}

fn key(i: usize) -> String {
    format!("7F000001{:024X}", 0xDEDE_0000 + i)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_a_cut_connection_lands_once() {
    let broker = Broker::start(windowed());
    create_topic(&broker, TOPIC, None).await;
    let retrier = TestClient::default();
    let mut answers = BTreeMap::new();
    for i in 0..5 {
        // The request is written and the connection closed at once: no answer comes.
        let lost = RemotingClient::new(ClientConfig::default(), None);
        lost.invoke_oneway(
            &broker.addr,
            send_request(TOPIC, &key(i), "once"),
            Duration::from_secs(5),
        )
        .await
        .expect("request written");
        lost.shutdown().await;
        // The producer's retry, as the C++ client makes it: the same message again.
        let answer = answered(&retrier, &broker.addr, send_request(TOPIC, &key(i), "once")).await;
        answers.insert(key(i), answer);
    }
    let counts = stored(&broker, TOPIC).await;
    assert_eq!(counts.len(), 5, "{counts:?}");
    assert!(counts.values().all(|n| *n == 1), "{counts:?}");
    // Each retry was answered with where the one copy is.
    let reader = TestClient::default();
    for m in reader
        .drain(&broker.addr, "dedupe-check", TOPIC, 0, 0)
        .await
    {
        let answer = &answers[m.property(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX).unwrap()];
        assert_eq!(answer.queue_offset, m.queue_offset);
        assert_eq!(answer.msg_id, m.offset_msg_id());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_the_broker_was_killed_gets_the_original_answer() {
    let broker = Broker::start(windowed());
    create_topic(&broker, TOPIC, None).await;
    let client = TestClient::default();
    // A single send and a batch written, their answers never read ...
    let lost = RemotingClient::new(ClientConfig::default(), None);
    let timeout = Duration::from_secs(5);
    lost.invoke_oneway(
        &broker.addr,
        send_request(TOPIC, &key(1), "single"),
        timeout,
    )
    .await
    .unwrap();
    lost.invoke_oneway(
        &broker.addr,
        batch_request(TOPIC, &[&key(2), &key(3)]),
        timeout,
    )
    .await
    .unwrap();
    let addr = broker.addr.clone();
    eventually("the broker to store the requests", || async {
        client.max_offset(&addr, TOPIC, 0).await == 3
    })
    .await;
    // ... and the broker killed before anything else.
    let broker = broker.restart(true);
    let client = TestClient::default();
    let single = answered(
        &client,
        &broker.addr,
        send_request(TOPIC, &key(1), "single"),
    )
    .await;
    assert_eq!(single.queue_offset, 0);
    // The batch retried with one new message: only the new one is stored.
    let batch = answered(
        &client,
        &broker.addr,
        batch_request(TOPIC, &[&key(3), &key(4)]),
    )
    .await;
    let ids: Vec<&str> = batch.msg_id.split(',').collect();
    assert_eq!(ids.len(), 2, "{}", batch.msg_id);
    assert_eq!(batch.queue_offset, 3, "the new message's place");
    let counts = stored(&broker, TOPIC).await;
    assert_eq!(counts.values().sum::<usize>(), 4, "{counts:?}");
    assert!(counts.values().all(|n| *n == 1), "{counts:?}");
    let reader = TestClient::default();
    let msgs = reader
        .drain(&broker.addr, "dedupe-check", TOPIC, 0, 0)
        .await;
    assert_eq!(single.msg_id, msgs[0].offset_msg_id());
    assert_eq!(ids[0], msgs[2].offset_msg_id(), "the original of key 3");
    assert_eq!(ids[1], msgs[3].offset_msg_id(), "key 4, stored now");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_retries_store_once() {
    let broker = Broker::start(windowed());
    create_topic(&broker, TOPIC, None).await;
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let addr = broker.addr.clone();
        tasks.push(tokio::spawn(async move {
            let client = TestClient::default();
            answered(&client, &addr, send_request(TOPIC, &key(7), "raced")).await
        }));
    }
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    assert!(answers
        .iter()
        .all(|a| a.msg_id == answers[0].msg_id && a.queue_offset == 0));
    assert_eq!(stored(&broker, TOPIC).await.get(&key(7)), Some(&1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_window_is_per_topic_and_off_by_default() {
    let broker = Broker::start(BrokerOptions::default());
    create_topic(&broker, "Plain", None).await;
    create_topic(&broker, "Windowed", Some("+duplication.window.seconds=60")).await;
    let client = TestClient::default();
    for topic in ["Plain", "Windowed"] {
        for _ in 0..2 {
            answered(&client, &broker.addr, send_request(topic, &key(1), "twice")).await;
        }
    }
    assert_eq!(
        stored(&broker, "Plain").await.get(&key(1)),
        Some(&2),
        "today's behaviour"
    );
    assert_eq!(stored(&broker, "Windowed").await.get(&key(1)), Some(&1));

    // A broker-wide window, switched off for one topic.
    let on = Broker::start(windowed());
    create_topic(&on, "Excluded", Some("+duplication.window.seconds=0")).await;
    for _ in 0..2 {
        answered(
            &client,
            &on.addr,
            send_request("Excluded", &key(1), "twice"),
        )
        .await;
    }
    assert_eq!(stored(&on, "Excluded").await.get(&key(1)), Some(&2));
}

/// Sends `n` messages through a proxy that loses every second send's answer; returns
/// how many copies of each message the broker stored.
async fn sdk_run(window_seconds: u32, n: usize) -> (Vec<usize>, usize) {
    let broker = Broker::start(
        BrokerOptions::default()
            .set("duplicationWindowSeconds", window_seconds)
            .set("bindAddress", "127.0.0.2"),
    );
    // Clients find the broker at 127.0.0.1:port, where the proxy listens.
    let registered: std::net::SocketAddr = broker.addr.parse().unwrap();
    let upstream = std::net::SocketAddr::new("127.0.0.2".parse().unwrap(), registered.port());
    let proxy = AnswerDropper::start(registered, upstream, 2).await;
    create_topic(&broker, TOPIC, None).await;
    let producer = Producer::new(ProducerConfig {
        client: client(&broker.namesrv, "dedupe-sdk"),
        producer_group: "dedupe-sdk".into(),
        retry_times_when_send_failed: 4,
        ..Default::default()
    });
    producer.start().await.unwrap();
    for i in 0..n {
        producer
            .send(Message::new(TOPIC, format!("m{i:02}")))
            .await
            .unwrap_or_else(|e| panic!("message {i} not sent: {e}"));
    }
    let cuts = proxy.cuts();
    producer.shutdown().await;
    let reader = TestClient::default();
    let mut copies = vec![0; n];
    for m in reader
        .drain(&upstream.to_string(), "dedupe-reader", TOPIC, 0, 0)
        .await
    {
        let i: usize = String::from_utf8_lossy(&m.body)[1..].parse().unwrap();
        copies[i] += 1;
    }
    (copies, cuts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_producer_through_lost_answers_lands_every_message_once() {
    let (copies, cuts) = sdk_run(60, 20).await;
    assert!(cuts >= 10, "{cuts} answers lost");
    assert_eq!(copies, vec![1; 20], "{cuts} answers lost");
    // The control: the same run without the window stores the retried messages twice.
    let (copies, cuts) = sdk_run(0, 20).await;
    assert!(cuts >= 10);
    assert!(copies.iter().all(|c| *c >= 1));
    assert!(copies.iter().any(|c| *c > 1), "{copies:?}");
}
