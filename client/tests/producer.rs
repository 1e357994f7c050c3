//! Producer behaviour against the in-process fake name server and brokers.
// Every guard on the fake broker state is dropped with drop() before the next await;
// the lint does not follow drop().
#![allow(clippy::await_holding_lock)]

mod common;

use std::sync::{Arc, Mutex};

use common::{wait_until, FakeCluster, T};
use futures_util::stream::{FuturesUnordered, StreamExt};
use vostok_client::hook::{
    CheckForbiddenContext, CheckForbiddenHook, SendMessageContext, SendMessageHook,
};
use vostok_client::{
    ClientError, Compression, LocalTransactionState, Message, MessageExt, Producer, ProducerConfig,
    SendStatus, TransactionListener, TransactionProducer,
};
use vostok_remoting::protocol::header::SendMessageRequestHeader;
use vostok_remoting::protocol::message::{property, sysflag};
use vostok_remoting::protocol::{request_code, response_code};

fn config(cluster: &FakeCluster, group: &str) -> ProducerConfig {
    ProducerConfig::new(group, &cluster.namesrv_addr)
}

async fn started(cluster: &FakeCluster, group: &str) -> Producer {
    let p = Producer::new(config(cluster, group));
    p.start().await.unwrap();
    p
}

#[tokio::test]
async fn sync_send_returns_the_stored_position_and_ids() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic("TopicTest", 4);
    cluster.namesrv_state.lock().unwrap().bare_keys = true;
    let producer = started(&cluster, "pg").await;
    let msg = Message::new("TopicTest", "hello")
        .with_tags("TagA")
        .with_keys(["k1", "k2"])
        .with_property("color", "red");
    let r = producer.send(msg).await.unwrap();
    assert_eq!(r.send_status, SendStatus::SendOk);
    assert_eq!(r.message_queue.topic, "TopicTest");
    assert_eq!(r.message_queue.broker_name, "broker-a");
    assert_eq!(r.queue_offset, 0);
    assert_eq!(r.msg_id.len(), 32, "UNIQ_KEY is 16 bytes in upper-case hex");
    assert!(r
        .msg_id
        .chars()
        .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase()));
    assert_eq!(r.offset_msg_id.len(), 32);
    assert_eq!(r.region_id.as_deref(), Some("DefaultRegion"));

    let stored = cluster.all_messages("TopicTest");
    assert_eq!(stored.len(), 1);
    let m = &stored[0];
    assert_eq!(&m.body[..], b"hello");
    assert_eq!(m.tags(), Some("TagA"));
    assert_eq!(m.property("KEYS"), Some("k1 k2"));
    assert_eq!(m.property("color"), Some("red"));
    assert_eq!(m.msg_id(), r.msg_id);
    assert_eq!(m.offset_msg_id(), r.offset_msg_id);

    // SEND_MESSAGE_V2 with one-letter keys, the broker name and the auto-create template.
    let broker = cluster.broker(0).state();
    let send = &broker.sends[0];
    assert_eq!(send.code, request_code::SEND_MESSAGE_V2);
    let h = SendMessageRequestHeader::decode(send.code, &send.ext_fields).unwrap();
    assert_eq!(h.producer_group, "pg");
    assert_eq!(h.default_topic, "TBW102");
    assert_eq!(h.default_topic_queue_nums, 4);
    assert_eq!(h.broker_name.as_deref(), Some("broker-a"));
    assert_eq!(h.batch, Some(false));
    // The producer heart-beats its group (and the inner producer group) as soon as it
    // knows the broker.
    drop(broker);
    wait_until("heartbeat", || {
        !cluster.broker(0).state().heartbeats.is_empty()
    })
    .await;
    let broker = cluster.broker(0).state();
    let groups: Vec<String> = broker
        .heartbeats
        .iter()
        .flat_map(|hb| hb.producer_data_set.iter().map(|p| p.group_name.clone()))
        .collect();
    assert!(groups.contains(&"pg".to_owned()));
    assert!(groups.contains(&"CLIENT_INNER_PRODUCER".to_owned()));
    drop(broker);
    producer.shutdown().await;
    wait_until("unregister", || {
        !cluster.broker(0).state().unregisters.is_empty()
    })
    .await;
    assert_eq!(
        cluster.broker(0).state().unregisters[0]
            .producer_group
            .as_deref(),
        Some("pg")
    );
    assert!(matches!(
        producer.send(Message::new("TopicTest", "x")).await,
        Err(ClientError::ShutDown(_))
    ));
    cluster.shutdown().await;
}

#[tokio::test]
async fn unknown_topics_are_auto_created_and_bad_messages_refused() {
    let cluster = FakeCluster::start(1).await;
    let producer = started(&cluster, "pg").await;
    let r = producer.send(Message::new("NewTopic", "x")).await.unwrap();
    assert_eq!(r.message_queue.topic, "NewTopic");
    assert_eq!(cluster.broker(0).state().topics.get("NewTopic"), Some(&4));
    // Too large, empty, bad topic, reserved property: refused before any request.
    let before = cluster.broker(0).state().sends.len();
    let big = Message::new("NewTopic", vec![0u8; 4 * 1024 * 1024 + 1]);
    assert!(matches!(
        producer.send(big).await,
        Err(ClientError::MessageTooLarge { .. })
    ));
    assert!(matches!(
        producer.send(Message::new("NewTopic", "")).await,
        Err(ClientError::InvalidMessage(_))
    ));
    assert!(matches!(
        producer.send(Message::new("bad topic", "x")).await,
        Err(ClientError::InvalidMessage(_))
    ));
    let reserved = Message::new("NewTopic", "x").with_property("REAL_TOPIC", "y");
    assert!(matches!(
        producer.send(reserved).await,
        Err(ClientError::InvalidMessage(_))
    ));
    assert_eq!(cluster.broker(0).state().sends.len(), before);
    producer.shutdown().await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn no_route_without_brokers() {
    let cluster = FakeCluster::start(0).await;
    let producer = started(&cluster, "pg").await;
    let err = producer.send(Message::new("T", "x")).await.unwrap_err();
    assert!(
        matches!(err, ClientError::NoRoute { ref topic } if topic == "T"),
        "{err}"
    );
    producer.shutdown().await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn async_sends_with_a_window_and_callbacks() {
    let cluster = FakeCluster::start(2).await;
    cluster.create_topic("Async", 4);
    let mut cfg = config(&cluster, "pg");
    cfg.back_pressure_for_async_send_num = 64;
    let producer = Producer::new(cfg);
    producer.start().await.unwrap();
    let mut pending = FuturesUnordered::new();
    for i in 0..500 {
        pending.push(
            producer
                .send_async(Message::new("Async", format!("m{i}")))
                .await
                .unwrap(),
        );
        while pending.len() >= 64 {
            pending.next().await.unwrap().unwrap();
        }
    }
    while let Some(r) = pending.next().await {
        assert_eq!(r.unwrap().send_status, SendStatus::SendOk);
    }
    assert_eq!(cluster.all_messages("Async").len(), 500);
    // Round robin spreads the messages over both brokers.
    assert!(cluster.broker(0).state().messages("Async").len() > 100);
    assert!(cluster.broker(1).state().messages("Async").len() > 100);

    let (tx, rx) = tokio::sync::oneshot::channel();
    producer
        .send_with_callback(Message::new("Async", "cb"), move |r| {
            let _ = tx.send(r.map(|r| r.msg_id));
        })
        .await
        .unwrap();
    let id = tokio::time::timeout(T, rx).await.unwrap().unwrap().unwrap();
    assert!(cluster
        .all_messages("Async")
        .iter()
        .any(|m| m.msg_id() == id));
    producer.shutdown().await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn oneway_queue_and_orderly_sends() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic("Ord", 8);
    let producer = started(&cluster, "pg").await;
    producer
        .send_oneway(Message::new("Ord", "fire"))
        .await
        .unwrap();
    wait_until("oneway message stored", || {
        cluster.all_messages("Ord").len() == 1
    })
    .await;

    let queues = producer.fetch_publish_message_queues("Ord").await.unwrap();
    assert_eq!(queues.len(), 8);
    let r = producer
        .send_to_queue(Message::new("Ord", "q5"), &queues[5])
        .await
        .unwrap();
    assert_eq!(r.message_queue, queues[5]);
    assert!(producer
        .send_to_queue(Message::new("Other", "x"), &queues[5])
        .await
        .is_err());

    let mut per_key = std::collections::HashMap::new();
    for i in 0..40 {
        let key = format!("order-{}", i % 5);
        let r = producer
            .send_orderly(Message::new("Ord", format!("{i}")), &key)
            .await
            .unwrap();
        let q = per_key.entry(key).or_insert(r.message_queue.queue_id);
        assert_eq!(*q, r.message_queue.queue_id, "one key, one queue");
    }
    // A closure selector.
    let last = |qs: &[vostok_client::MessageQueue], _: &Message, _: &str| Some(qs.len() - 1);
    let r = producer
        .send_with_selector(Message::new("Ord", "x"), &last, "")
        .await
        .unwrap();
    assert_eq!(r.message_queue.queue_id, 7);
    producer.shutdown().await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn batch_is_one_request_with_one_record_per_message() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic("Batch", 1);
    let producer = started(&cluster, "pg").await;
    let msgs: Vec<Message> = (0..10)
        .map(|i| Message::new("Batch", format!("body-{i}")).with_tags(format!("T{i}")))
        .collect();
    let r = producer.send_batch(msgs).await.unwrap();
    let ids: Vec<&str> = r.msg_id.split(',').collect();
    assert_eq!(ids.len(), 10);
    let st = cluster.broker(0).state();
    assert_eq!(st.count(request_code::SEND_BATCH_MESSAGE), 1);
    let send = st.sends.last().unwrap();
    let h = SendMessageRequestHeader::decode(send.code, &send.ext_fields).unwrap();
    assert_eq!(h.batch, Some(true));
    assert_eq!(
        h.sys_flag & sysflag::COMPRESSED_FLAG,
        0,
        "batches are not compressed"
    );
    let stored = st.messages("Batch");
    drop(st);
    assert_eq!(stored.len(), 10);
    for (i, m) in stored.iter().enumerate() {
        assert_eq!(m.body, format!("body-{i}").into_bytes());
        assert_eq!(m.tags(), Some(format!("T{i}").as_str()));
        assert_eq!(m.queue_offset, i as i64);
        assert_eq!(m.msg_id(), ids[i]);
    }
    // Size is checked on the encoded batch, before sending.
    let big: Vec<Message> = (0..5)
        .map(|_| Message::new("Batch", vec![1u8; 1024 * 1024]))
        .collect();
    assert!(matches!(
        producer.send_batch(big).await,
        Err(ClientError::MessageTooLarge { .. })
    ));
    let mixed = vec![Message::new("Batch", "a"), Message::new("Other", "b")];
    assert!(matches!(
        producer.send_batch(mixed).await,
        Err(ClientError::InvalidMessage(_))
    ));
    let delayed = vec![Message::new("Batch", "a").with_delay_level(2)];
    assert!(producer.send_batch(delayed).await.is_err());
    assert_eq!(
        cluster
            .broker(0)
            .state()
            .count(request_code::SEND_BATCH_MESSAGE),
        1
    );
    producer.shutdown().await;
    cluster.shutdown().await;
}

/// By default large bodies are zlib streams flagged as Apache's 5.x producer flags them
/// (`0x301`), which every RocketMQ consumer can read; LZ4 is an explicit choice.
#[tokio::test]
async fn large_bodies_are_zlib_compressed_by_default_and_lz4_on_request() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic("Zip", 1);
    let producer = started(&cluster, "pg").await;
    let body: Vec<u8> = (0..10_000u32).map(|i| (i % 7) as u8).collect();
    producer
        .send(Message::new("Zip", body.clone()))
        .await
        .unwrap();
    producer
        .send(Message::new("Zip", vec![7u8; 4095]))
        .await
        .unwrap();
    producer.shutdown().await;
    let lz4 = Producer::new(ProducerConfig {
        compress_type: Compression::Lz4,
        ..config(&cluster, "pg-lz4")
    });
    lz4.start().await.unwrap();
    lz4.send(Message::new("Zip", body.clone())).await.unwrap();
    lz4.shutdown().await;

    let st = cluster.broker(0).state();
    let big = SendMessageRequestHeader::decode(st.sends[0].code, &st.sends[0].ext_fields).unwrap();
    assert_eq!(big.sys_flag & 0x701, 0x301, "COMPRESSED + ZLIB type bits");
    assert_eq!(st.sends[0].body[0], 0x78, "zlib stream header");
    assert!(st.sends[0].body.len() < body.len());
    let small =
        SendMessageRequestHeader::decode(st.sends[1].code, &st.sends[1].ext_fields).unwrap();
    assert_eq!(small.sys_flag, 0, "4095 bytes stay plain");
    let explicit =
        SendMessageRequestHeader::decode(st.sends[2].code, &st.sends[2].ext_fields).unwrap();
    assert_eq!(
        explicit.sys_flag & 0x701,
        0x101,
        "COMPRESSED + LZ4 type bits"
    );
    assert_eq!(
        &st.sends[2].body[..4],
        &[0x04, 0x22, 0x4D, 0x18],
        "LZ4 frame magic"
    );
    let stored = st.messages("Zip");
    for i in [0, 2] {
        assert_eq!(
            vostok_client::message::decompress(&stored[i].body, stored[i].sys_flag)
                .unwrap()
                .unwrap(),
            body
        );
    }
    drop(st);
    cluster.shutdown().await;
}

#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<String>>,
    forbid: bool,
}

impl SendMessageHook for Recorder {
    fn hook_name(&self) -> &str {
        "recorder"
    }
    fn send_message_before(&self, ctx: &SendMessageContext<'_>) {
        assert!(ctx.message.uniq_key().is_some());
        self.events.lock().unwrap().push(format!(
            "before {} {}",
            ctx.producer_group, ctx.mq.broker_name
        ));
    }
    fn send_message_after(&self, ctx: &SendMessageContext<'_>) {
        let what = match (ctx.send_result, &ctx.error) {
            (Some(r), _) => format!("after ok {}", r.message_queue.queue_id),
            (None, Some(e)) => format!("after err {}", e.contains("injected")),
            _ => "after ?".into(),
        };
        self.events.lock().unwrap().push(what);
    }
}

impl CheckForbiddenHook for Recorder {
    fn hook_name(&self) -> &str {
        "forbid"
    }
    fn check_forbidden(&self, ctx: &CheckForbiddenContext<'_>) -> Result<(), String> {
        self.events
            .lock()
            .unwrap()
            .push(format!("check {}", ctx.message.topic));
        if self.forbid && ctx.message.tags() == Some("secret") {
            Err("secret tag".into())
        } else {
            Ok(())
        }
    }
}

#[tokio::test]
async fn hooks_run_in_order_per_attempt() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic("Hooked", 1);
    let producer = started(&cluster, "pg").await;
    let rec = Arc::new(Recorder {
        forbid: true,
        ..Default::default()
    });
    producer.register_check_forbidden_hook(rec.clone());
    producer.register_send_message_hook(rec.clone());
    producer.send(Message::new("Hooked", "x")).await.unwrap();
    assert_eq!(
        *rec.events.lock().unwrap(),
        ["check Hooked", "before pg broker-a", "after ok 0"]
    );

    rec.events.lock().unwrap().clear();
    // A retryable error on the only broker: each attempt runs the hooks again.
    cluster.broker(0).state().fail_sends = Some((response_code::SYSTEM_BUSY, 1));
    producer.send(Message::new("Hooked", "y")).await.unwrap();
    assert_eq!(
        *rec.events.lock().unwrap(),
        [
            "check Hooked",
            "before pg broker-a",
            "after err true",
            "check Hooked",
            "before pg broker-a",
            "after ok 0"
        ]
    );

    let sends = cluster.broker(0).state().sends.len();
    let err = producer
        .send(Message::new("Hooked", "z").with_tags("secret"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ClientError::Forbidden { ref hook, .. } if hook == "forbid"),
        "{err}"
    );
    assert_eq!(
        cluster.broker(0).state().sends.len(),
        sends,
        "a forbidden send makes no request"
    );
    producer.shutdown().await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn broker_errors_are_typed_and_retried_only_when_retryable() {
    let cluster = FakeCluster::start(2).await;
    cluster.create_topic("Retry", 2);
    let producer = started(&cluster, "pg").await;
    // broker-a is busy: each send that picks it is retried on broker-b, and after the
    // first failure fault avoidance keeps sends away from broker-a.
    cluster.broker(0).state().fail_sends = Some((response_code::SYSTEM_BUSY, 100));
    for i in 0..10 {
        let r = producer
            .send(Message::new("Retry", format!("{i}")))
            .await
            .unwrap();
        assert_eq!(r.message_queue.broker_name, "broker-b");
    }
    assert!(
        cluster.broker(0).state().sends.len() <= 1,
        "broker-a avoided after failing"
    );
    assert_eq!(cluster.broker(1).state().messages("Retry").len(), 10);
    cluster.broker(0).state().fail_sends = None;
    // MESSAGE_ILLEGAL is not retried and carries code and remark.
    for b in &cluster.brokers {
        b.state().fail_sends = Some((response_code::MESSAGE_ILLEGAL, 1));
    }
    let before: usize = cluster.brokers.iter().map(|b| b.state().sends.len()).sum();
    let err = producer.send(Message::new("Retry", "y")).await.unwrap_err();
    assert_eq!(err.response_code(), Some(response_code::MESSAGE_ILLEGAL));
    assert!(
        err.to_string().contains("MESSAGE_ILLEGAL") && err.to_string().contains("injected failure"),
        "{err}"
    );
    let after: usize = cluster.brokers.iter().map(|b| b.state().sends.len()).sum();
    assert_eq!(after, before + 1);
    producer.shutdown().await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn sends_move_to_the_second_broker_when_the_first_is_killed() {
    let cluster = FakeCluster::start(2).await;
    cluster.create_topic("Failover", 4);
    let producer = started(&cluster, "pg").await;
    for i in 0..10 {
        producer
            .send(Message::new("Failover", format!("{i}")))
            .await
            .unwrap();
    }
    cluster.broker(0).kill().await;
    for i in 0..20 {
        let r = producer
            .send(Message::new("Failover", format!("after {i}")))
            .await
            .unwrap();
        assert_eq!(r.message_queue.broker_name, "broker-b");
    }
    // Fault avoidance: after the first failure broker-a is skipped, not retried each time.
    let b_sends = cluster.broker(1).state().sends.len();
    assert!(b_sends >= 20);
    producer.shutdown().await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn callback_sends_retry_on_another_broker_and_report_a_lost_one() {
    let cluster = FakeCluster::start(2).await;
    cluster.create_topic("CallbackFailover", 4);
    let producer = started(&cluster, "pg").await;
    for i in 0..4 {
        producer
            .send(Message::new("CallbackFailover", format!("{i}")))
            .await
            .unwrap();
    }
    cluster.broker(0).kill().await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for i in 0..8 {
        let tx = tx.clone();
        producer
            .send_with_callback(
                Message::new("CallbackFailover", format!("after {i}")),
                move |r| {
                    let _ = tx.send(r);
                },
            )
            .await
            .unwrap();
    }
    for _ in 0..8 {
        let r = tokio::time::timeout(T, rx.recv()).await.unwrap().unwrap();
        assert_eq!(r.unwrap().message_queue.broker_name, "broker-b");
    }
    // With no broker left, the error reaches the caller or the callback, once.
    cluster.broker(1).kill().await;
    let sent = producer
        .send_with_callback(Message::new("CallbackFailover", "lost"), move |r| {
            let _ = tx.send(r);
        })
        .await;
    if sent.is_ok() {
        let r = tokio::time::timeout(T, rx.recv()).await.unwrap().unwrap();
        assert!(r.is_err(), "{r:?}");
    }
    assert!(tokio::time::timeout(T, rx.recv()).await.unwrap().is_none());
    producer.shutdown().await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn namespaces_isolate_topics() {
    let cluster = FakeCluster::start(1).await;
    let mut cfg = config(&cluster, "pg");
    cfg.client.namespace = "ns1".into();
    let producer = Producer::new(cfg);
    producer.start().await.unwrap();
    let r = producer.send(Message::new("Orders", "x")).await.unwrap();
    assert_eq!(r.message_queue.topic, "Orders");
    assert_eq!(cluster.all_messages("ns1%Orders").len(), 1);
    assert!(cluster.all_messages("Orders").is_empty());
    let st = cluster.broker(0).state();
    let h = SendMessageRequestHeader::decode(st.sends[0].code, &st.sends[0].ext_fields).unwrap();
    assert_eq!(h.producer_group, "ns1%pg");
    drop(st);
    producer.shutdown().await;
    cluster.shutdown().await;
}

struct TxListener {
    checked: Mutex<Vec<String>>,
}

impl TransactionListener for TxListener {
    fn execute_local_transaction(&self, msg: &Message) -> LocalTransactionState {
        assert!(msg.transaction_id.is_some());
        match msg.tags() {
            Some("commit") => LocalTransactionState::CommitMessage,
            Some("rollback") => LocalTransactionState::RollbackMessage,
            _ => LocalTransactionState::Unknown,
        }
    }
    fn check_local_transaction(&self, msg: &MessageExt) -> LocalTransactionState {
        self.checked.lock().unwrap().push(msg.topic.clone());
        LocalTransactionState::CommitMessage
    }
}

#[tokio::test]
async fn transactions_commit_rollback_and_check() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic("Tx", 1);
    let listener = Arc::new(TxListener {
        checked: Mutex::default(),
    });
    let producer = TransactionProducer::new(config(&cluster, "txg"), listener.clone());
    producer.start().await.unwrap();

    let r = producer
        .send_message_in_transaction(Message::new("Tx", "c").with_tags("commit"))
        .await
        .unwrap();
    assert_eq!(
        r.local_transaction_state,
        LocalTransactionState::CommitMessage
    );
    let r2 = producer
        .send_message_in_transaction(Message::new("Tx", "r").with_tags("rollback"))
        .await
        .unwrap();
    assert_eq!(
        r2.local_transaction_state,
        LocalTransactionState::RollbackMessage
    );
    let r3 = producer
        .send_message_in_transaction(Message::new("Tx", "u").with_tags("later"))
        .await
        .unwrap();
    assert_eq!(r3.local_transaction_state, LocalTransactionState::Unknown);
    wait_until("three END_TRANSACTION", || {
        cluster.broker(0).state().end_transactions.len() == 3
    })
    .await;
    {
        let st = cluster.broker(0).state();
        let kinds: Vec<i32> = st
            .end_transactions
            .iter()
            .map(|e| e.commit_or_rollback)
            .collect();
        assert_eq!(kinds, [8, 12, 0]);
        assert!(st
            .end_transactions
            .iter()
            .all(|e| e.producer_group == "txg" && e.from_transaction_check == Some(false)));
        assert_eq!(st.end_transactions[0].msg_id, r.send_result.msg_id);
        // The half record carries TRAN_MSG and PGROUP; only the commit reached the topic.
        let half = st.sends[0].clone();
        let h = SendMessageRequestHeader::decode(half.code, &half.ext_fields).unwrap();
        assert_eq!(
            h.sys_flag & sysflag::TRANSACTION_MASK,
            sysflag::TRANSACTION_PREPARED_TYPE
        );
        let props = vostok_remoting::protocol::message::Properties::decode(
            h.properties.as_deref().unwrap(),
        );
        assert_eq!(props.get(property::TRANSACTION_PREPARED), Some("true"));
        assert_eq!(props.get(property::PRODUCER_GROUP), Some("txg"));
        let stored = st.messages("Tx");
        assert_eq!(stored.len(), 1);
        assert_eq!(&stored[0].body[..], b"c");
        assert_eq!(st.half.len(), 1, "the unknown one is still half");
    }
    wait_until("producer channel registered", || {
        cluster.broker(0).state().producers.contains_key("txg")
    })
    .await;
    // The broker checks back; the listener commits; END_TRANSACTION fromTransactionCheck.
    assert_eq!(cluster.broker(0).check_transactions("txg").await, 1);
    wait_until("check answered", || {
        cluster.broker(0).state().end_transactions.len() == 4
    })
    .await;
    let st = cluster.broker(0).state();
    let last = st.end_transactions.last().unwrap();
    assert_eq!(last.from_transaction_check, Some(true));
    assert_eq!(last.commit_or_rollback, 8);
    assert_eq!(last.msg_id, r3.send_result.msg_id);
    assert_eq!(st.messages("Tx").len(), 2);
    drop(st);
    assert_eq!(*listener.checked.lock().unwrap(), ["Tx"]);
    producer.shutdown().await;
    cluster.shutdown().await;
}
