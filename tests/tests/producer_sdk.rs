//! The client SDK's producers against real broker processes (issue 5): every send
//! mode, batches, compression round trips through a consumer, hook order, retry on the
//! second broker when the first is killed, and transactions (commit, rollback,
//! check-back).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use vostok_client::hook::{
    CheckForbiddenContext, CheckForbiddenHook, SendMessageContext, SendMessageHook,
};
use vostok_client::{
    ClientError, CommonConsumerConfig, Compression, ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus, ConsumeFromWhere, ConsumerConfig, LocalTransactionState, Message,
    MessageExt, MessageListener, MessageQueue, Producer, ProducerConfig, PushConsumer, SendResult,
    SendStatus, TransactionListener, TransactionProducer,
};
use vostok_remoting::protocol::message::{property, sysflag};
use vostok_remoting::protocol::response_code;
use vostok_tests::client::TestClient;
use vostok_tests::sdk::{self, client, wait_until};
use vostok_tests::{Broker, BrokerOptions, Namesrv};

/// Upper bound of every wait.
const T: Duration = sdk::WAIT;

fn producer_config(namesrv: &str, group: &str, instance: &str) -> ProducerConfig {
    ProducerConfig {
        client: client(namesrv, instance),
        producer_group: group.into(),
        ..Default::default()
    }
}

async fn producer(namesrv: &str, group: &str) -> Producer {
    let p = Producer::new(producer_config(namesrv, group, group));
    p.start().await.unwrap();
    p
}

/// Creates the topic and waits until the name server routes it to `broker`.
async fn create_topic(admin: &TestClient, broker: &Broker, topic: &str, queues: i32) {
    let response = admin.create_topic(&broker.addr, topic, queues).await;
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{}",
        response.remark()
    );
    let name = broker.options.broker_name.clone();
    admin
        .wait_for_route(&broker.namesrv, topic, |r| {
            r.broker_datas.iter().any(|b| b.broker_name == name)
        })
        .await;
}

/// Every message of `queues` queues, by queue id, once `expected` have arrived.
async fn drain_all(
    admin: &TestClient,
    broker: &Broker,
    topic: &str,
    queues: i32,
    expected: usize,
) -> BTreeMap<i32, Vec<MessageExt>> {
    let deadline = Instant::now() + T;
    loop {
        let mut all = BTreeMap::new();
        for q in 0..queues {
            all.insert(q, admin.drain(&broker.addr, "inspector", topic, q, 0).await);
        }
        let n: usize = all.values().map(Vec::len).sum();
        if n >= expected {
            assert_eq!(n, expected, "more messages stored than sent");
            return all;
        }
        assert!(
            Instant::now() < deadline,
            "{n} of {expected} messages stored"
        );
    }
}

fn text(m: &MessageExt) -> String {
    String::from_utf8_lossy(&m.body).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_send_mode_stores_each_message_once_where_the_result_says() {
    let broker = Broker::start(BrokerOptions::default());
    let admin = TestClient::default();
    let topic = "ModeTopic";
    create_topic(&admin, &broker, topic, 4).await;
    let producer = producer(&broker.namesrv, "mode-producer").await;
    // body → where the broker said it stored it.
    let mut results: Vec<(String, SendResult)> = Vec::new();

    let r = producer
        .send(
            Message::new(topic, "sync")
                .with_tags("TagA")
                .with_keys(["k1", "k2"])
                .with_property("color", "red"),
        )
        .await
        .unwrap();
    assert_eq!(r.send_status, SendStatus::SendOk);
    assert_eq!(r.message_queue.broker_name, "broker-a");
    results.push(("sync".into(), r));

    let mut futures = Vec::new();
    for i in 0..10 {
        let body = format!("async-{i}");
        futures.push((
            body.clone(),
            producer
                .send_async(Message::new(topic, body))
                .await
                .unwrap(),
        ));
    }
    for (body, f) in futures {
        results.push((body, f.await.unwrap()));
    }

    let (tx, rx) = tokio::sync::oneshot::channel();
    producer
        .send_with_callback(Message::new(topic, "callback"), move |r| {
            let _ = tx.send(r);
        })
        .await
        .unwrap();
    let r = tokio::time::timeout(T, rx).await.unwrap().unwrap().unwrap();
    results.push(("callback".into(), r));

    producer
        .send_oneway(Message::new(topic, "oneway"))
        .await
        .unwrap();

    let queues = producer.fetch_publish_message_queues(topic).await.unwrap();
    assert_eq!(queues.len(), 4);
    let third: MessageQueue = queues[3].clone();
    let r = producer
        .send_to_queue(Message::new(topic, "to-queue-3"), &third)
        .await
        .unwrap();
    assert_eq!(r.message_queue, third);
    results.push(("to-queue-3".into(), r));

    let mut order_queue = None;
    for step in ["created", "paid", "shipped"] {
        let r = producer
            .send_orderly(Message::new(topic, step), "order-42")
            .await
            .unwrap();
        assert_eq!(
            *order_queue.get_or_insert(r.message_queue.queue_id),
            r.message_queue.queue_id,
            "one key, one queue"
        );
        results.push((step.into(), r));
    }

    let second = |qs: &[MessageQueue], _: &Message, _: &str| (qs.len() > 1).then_some(1);
    let r = producer
        .send_with_selector(Message::new(topic, "selected"), &second, "")
        .await
        .unwrap();
    assert_eq!(r.message_queue.queue_id, 1);
    results.push(("selected".into(), r));

    let batch: Vec<Message> = (0..10)
        .map(|i| Message::new(topic, format!("batch-{i}")).with_tags("Batch"))
        .collect();
    let batch_result = producer.send_batch(batch).await.unwrap();
    let batch_ids: Vec<&str> = batch_result.msg_id.split(',').collect();
    assert_eq!(batch_ids.len(), 10, "one id per batched message");

    // 1 + 10 + 1 + 1 (oneway) + 1 + 3 + 1 + 10
    let stored = drain_all(&admin, &broker, topic, 4, 28).await;
    let at = |q: i32, offset: i64| -> &MessageExt {
        stored[&q]
            .iter()
            .find(|m| m.queue_offset == offset)
            .unwrap_or_else(|| panic!("nothing at queue {q} offset {offset}"))
    };
    for (body, r) in &results {
        let m = at(r.message_queue.queue_id, r.queue_offset);
        assert_eq!(&text(m), body);
        assert_eq!(m.msg_id(), r.msg_id, "UNIQ_KEY of {body}");
        assert_eq!(m.offset_msg_id(), r.offset_msg_id, "offset id of {body}");
    }
    let sync = at(
        results[0].1.message_queue.queue_id,
        results[0].1.queue_offset,
    );
    assert_eq!(sync.tags(), Some("TagA"));
    assert_eq!(sync.property(property::KEYS), Some("k1 k2"));
    assert_eq!(sync.property("color"), Some("red"));
    // The batch: consecutive offsets of one queue, each with its own id, in order.
    for (i, id) in batch_ids.iter().enumerate() {
        let m = at(
            batch_result.message_queue.queue_id,
            batch_result.queue_offset + i as i64,
        );
        assert_eq!(text(m), format!("batch-{i}"));
        assert_eq!(m.msg_id(), *id);
        assert_eq!(m.tags(), Some("Batch"));
    }
    let mut bodies: Vec<String> = stored.values().flatten().map(text).collect();
    bodies.sort();
    bodies.dedup();
    assert_eq!(bodies.len(), 28, "each message once");
    assert!(bodies.contains(&"oneway".to_owned()));
    producer.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_bodies_round_trip_through_a_consumer() {
    let broker = Broker::start(BrokerOptions::default());
    let admin = TestClient::default();
    let topic = "ZipTopic";
    create_topic(&admin, &broker, topic, 2).await;
    let big = |c: char| c.to_string().repeat(10_000);
    let mut expected = Vec::new();
    for (i, codec) in [Compression::Lz4, Compression::Zlib, Compression::Zstd]
        .into_iter()
        .enumerate()
    {
        let mut config = producer_config(&broker.namesrv, &format!("zip-{i}"), &format!("z{i}"));
        config.compress_type = codec;
        let p = Producer::new(config);
        p.start().await.unwrap();
        let body = big(['a', 'b', 'c'][i]);
        p.send(Message::new(topic, body.clone())).await.unwrap();
        expected.push(body);
        let small = format!("small-{i}");
        p.send(Message::new(topic, small.clone())).await.unwrap();
        expected.push(small);
        p.shutdown().await;
    }
    // On the broker the big bodies are stored compressed, each with its codec's bits.
    let stored = drain_all(&admin, &broker, topic, 2, 6).await;
    let mut compressed: Vec<i32> = stored
        .values()
        .flatten()
        .filter(|m| m.sys_flag & sysflag::COMPRESSED_FLAG != 0)
        .map(|m| {
            assert!(m.body.len() < 1000, "a compressed body is small");
            m.sys_flag
        })
        .collect();
    compressed.sort();
    compressed.dedup();
    assert_eq!(compressed.len(), 3, "three codecs: {compressed:?}");

    let seen: Arc<Mutex<Vec<MessageExt>>> = Arc::default();
    let consumer = PushConsumer::new(ConsumerConfig {
        common: CommonConsumerConfig {
            client: client(&broker.namesrv, "zip-consumer"),
            consumer_group: "zip-group".into(),
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            ..CommonConsumerConfig::push_defaults()
        },
        ..Default::default()
    });
    consumer.subscribe(topic, "*").unwrap();
    let s = seen.clone();
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            s.lock().unwrap().extend(msgs.iter().cloned());
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer.start().await.unwrap();
    wait_until("6 consumed", || seen.lock().unwrap().len() == 6).await;
    let got = seen.lock().unwrap().clone();
    let mut bodies: Vec<String> = got.iter().map(text).collect();
    bodies.sort();
    expected.sort();
    assert_eq!(bodies, expected, "decompressed by the consumer");
    assert!(got
        .iter()
        .all(|m| m.sys_flag & sysflag::COMPRESSED_FLAG == 0 && m.topic == topic));
    consumer.shutdown().await;
}

/// Records every hook call as `name:stage:body[:outcome]`.
struct Recorder {
    name: &'static str,
    log: Arc<Mutex<Vec<String>>>,
}

impl SendMessageHook for Recorder {
    fn hook_name(&self) -> &str {
        self.name
    }

    fn send_message_before(&self, ctx: &SendMessageContext<'_>) {
        assert!(ctx.send_result.is_none() && ctx.error.is_none());
        self.log.lock().unwrap().push(format!(
            "{}:before:{}",
            self.name,
            String::from_utf8_lossy(&ctx.message.body)
        ));
    }

    fn send_message_after(&self, ctx: &SendMessageContext<'_>) {
        let outcome = match (ctx.send_result, &ctx.error) {
            (Some(r), None) if r.send_status == SendStatus::SendOk => "ok".to_owned(),
            (Some(_), None) => "not-stored".to_owned(),
            (None, Some(_)) => "error".to_owned(),
            (None, None) => "no-result".to_owned(),
            (Some(_), Some(_)) => "both".to_owned(),
        };
        self.log.lock().unwrap().push(format!(
            "{}:after:{}:{outcome}",
            self.name,
            String::from_utf8_lossy(&ctx.message.body)
        ));
    }
}

struct Gate {
    log: Arc<Mutex<Vec<String>>>,
}

impl CheckForbiddenHook for Gate {
    fn hook_name(&self) -> &str {
        "gate"
    }

    fn check_forbidden(&self, ctx: &CheckForbiddenContext<'_>) -> Result<(), String> {
        let body = String::from_utf8_lossy(&ctx.message.body).into_owned();
        self.log.lock().unwrap().push(format!("gate:check:{body}"));
        if ctx.message.tags() == Some("Forbidden") {
            Err("forbidden tag".into())
        } else {
            Ok(())
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_are_called_in_order_around_every_send() {
    let broker = Broker::start(BrokerOptions::default());
    let admin = TestClient::default();
    // Not created beforehand: the first send goes through the TBW102 template route and
    // the broker creates the topic (4 queues, the producer's defaultTopicQueueNums).
    let topic = "HookTopic";
    let producer = producer(&broker.namesrv, "hook-producer").await;
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    producer.register_check_forbidden_hook(Arc::new(Gate { log: log.clone() }));
    for name in ["first", "second"] {
        producer.register_send_message_hook(Arc::new(Recorder {
            name,
            log: log.clone(),
        }));
    }
    let take = || std::mem::take(&mut *log.lock().unwrap());

    producer.send(Message::new(topic, "s")).await.unwrap();
    assert_eq!(
        take(),
        [
            "gate:check:s",
            "first:before:s",
            "second:before:s",
            "first:after:s:ok",
            "second:after:s:ok"
        ]
    );
    let f = producer.send_async(Message::new(topic, "a")).await.unwrap();
    f.await.unwrap();
    assert_eq!(
        take(),
        [
            "gate:check:a",
            "first:before:a",
            "second:before:a",
            "first:after:a:ok",
            "second:after:a:ok"
        ]
    );
    producer
        .send_oneway(Message::new(topic, "o"))
        .await
        .unwrap();
    assert_eq!(
        take(),
        [
            "gate:check:o",
            "first:before:o",
            "second:before:o",
            "first:after:o:no-result",
            "second:after:o:no-result"
        ]
    );
    let refused = producer
        .send(Message::new(topic, "f").with_tags("Forbidden"))
        .await;
    assert!(
        matches!(refused, Err(ClientError::Forbidden { ref hook, .. }) if hook == "gate"),
        "{refused:?}"
    );
    assert_eq!(take(), ["gate:check:f"], "no send hooks for a refused send");
    // Only the three allowed messages reached the broker.
    let stored = drain_all(&admin, &broker, topic, 4, 3).await;
    let mut bodies: Vec<String> = stored.values().flatten().map(text).collect();
    bodies.sort();
    assert_eq!(bodies, ["a", "o", "s"]);
    producer.shutdown().await;
}

/// Remembers the broker of every failed attempt.
#[derive(Default)]
struct FailedAttempts(Mutex<Vec<String>>);

impl SendMessageHook for FailedAttempts {
    fn hook_name(&self) -> &str {
        "failed-attempts"
    }

    fn send_message_before(&self, _: &SendMessageContext<'_>) {}

    fn send_message_after(&self, ctx: &SendMessageContext<'_>) {
        if ctx.error.is_some() {
            self.0.lock().unwrap().push(ctx.mq.broker_name.clone());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_retry_on_the_second_broker_when_the_first_is_killed() {
    let namesrv = Namesrv::start();
    let start = |name: &str| {
        Broker::start(BrokerOptions {
            namesrv: Some(namesrv.addr.clone()),
            broker_name: name.into(),
            ..Default::default()
        })
    };
    let mut broker_a = start("broker-a");
    let broker_b = start("broker-b");
    let admin = TestClient::default();
    let topic = "FailoverTopic";
    create_topic(&admin, &broker_a, topic, 2).await;
    create_topic(&admin, &broker_b, topic, 2).await;
    admin
        .wait_for_route(&namesrv.addr, topic, |r| r.broker_datas.len() == 2)
        .await;

    // A sync producer with fault avoidance (the default) and an async one without.
    let sync = Producer::new(producer_config(&namesrv.addr, "failover-sync", "fs"));
    let mut async_config = producer_config(&namesrv.addr, "failover-async", "fa");
    async_config.send_latency_fault_enable = false;
    let asynchronous = Producer::new(async_config);
    let failed_sync = Arc::new(FailedAttempts::default());
    let failed_async = Arc::new(FailedAttempts::default());
    sync.register_send_message_hook(failed_sync.clone());
    asynchronous.register_send_message_hook(failed_async.clone());
    for p in [&sync, &asynchronous] {
        p.start().await.unwrap();
        // Both brokers take messages while both live.
        let mut brokers = HashMap::new();
        for i in 0..8 {
            let r = p
                .send(Message::new(topic, format!("warm-{i}")))
                .await
                .unwrap();
            *brokers.entry(r.message_queue.broker_name).or_insert(0) += 1;
        }
        assert_eq!(
            brokers.len(),
            2,
            "round robin over both brokers: {brokers:?}"
        );
    }

    broker_a.kill9();
    // The producers still have broker-a in their cached route: a send that picks it
    // fails there and is retried on broker-b.
    let mut sent_after_kill = 0;
    for i in 0..16 {
        let r = sync
            .send(Message::new(topic, format!("sync-{i}")))
            .await
            .expect("sync send survives the dead broker");
        assert_eq!(r.message_queue.broker_name, "broker-b");
        let r = asynchronous
            .send_async(Message::new(topic, format!("async-{i}")))
            .await
            .unwrap()
            .await
            .expect("async send survives the dead broker");
        assert_eq!(r.message_queue.broker_name, "broker-b");
        sent_after_kill += 2;
        let tried_a = |f: &FailedAttempts| f.0.lock().unwrap().iter().any(|b| b == "broker-a");
        if tried_a(&failed_sync) && tried_a(&failed_async) {
            break;
        }
    }
    for (what, failed) in [("sync", &failed_sync), ("async", &failed_async)] {
        let failed = failed.0.lock().unwrap().clone();
        assert!(
            failed.iter().any(|b| b == "broker-a"),
            "a {what} attempt went to the dead broker first: {failed:?}"
        );
        assert!(
            failed.iter().all(|b| b == "broker-a"),
            "only the dead broker failed: {failed:?}"
        );
    }
    // Everything acknowledged after the kill is on broker-b, once.
    let stored = drain_all(&admin, &broker_b, topic, 2, 8 + sent_after_kill).await;
    let after: Vec<String> = stored
        .values()
        .flatten()
        .map(text)
        .filter(|b| !b.starts_with("warm-"))
        .collect();
    assert_eq!(after.len(), sent_after_kill);
    sync.shutdown().await;
    asynchronous.shutdown().await;
}

/// Decides each transaction by the body: `commit`, `rollback`, or `unknown-*` left to
/// the check-back, which answers by the rest of the body. Logs every call in order.
struct Ledger {
    log: Arc<Mutex<Vec<String>>>,
}

impl TransactionListener for Ledger {
    fn execute_local_transaction(&self, msg: &Message) -> LocalTransactionState {
        let body = String::from_utf8_lossy(&msg.body).into_owned();
        assert!(msg.transaction_id.is_some(), "transaction id set");
        self.log.lock().unwrap().push(format!("execute:{body}"));
        match body.as_str() {
            "commit" => LocalTransactionState::CommitMessage,
            "rollback" => LocalTransactionState::RollbackMessage,
            _ => LocalTransactionState::Unknown,
        }
    }

    fn check_local_transaction(&self, msg: &MessageExt) -> LocalTransactionState {
        let body = String::from_utf8_lossy(&msg.body).into_owned();
        assert_eq!(msg.topic, "TxTopic");
        self.log.lock().unwrap().push(format!("check:{body}"));
        match body.as_str() {
            "unknown-then-commit" => LocalTransactionState::CommitMessage,
            "unknown-then-rollback" => LocalTransactionState::RollbackMessage,
            _ => LocalTransactionState::Unknown,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_commit_roll_back_and_answer_check_backs() {
    let broker = Broker::start(
        BrokerOptions::default()
            .set("transactionTimeOut", 1000)
            .set("transactionCheckInterval", 1000),
    );
    let admin = TestClient::default();
    let topic = "TxTopic";
    create_topic(&admin, &broker, topic, 1).await;
    let log: Arc<Mutex<Vec<String>>> = Arc::default();

    // The consumer logs deliveries into the same ledger, so the order of check-backs
    // and deliveries is visible.
    let consumer = PushConsumer::new(ConsumerConfig {
        common: CommonConsumerConfig {
            client: client(&broker.namesrv, "tx-consumer"),
            consumer_group: "tx-group".into(),
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            ..CommonConsumerConfig::push_defaults()
        },
        ..Default::default()
    });
    consumer.subscribe(topic, "*").unwrap();
    let l = log.clone();
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            for m in msgs {
                l.lock().unwrap().push(format!("deliver:{}", text(m)));
            }
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer.start().await.unwrap();

    let producer = TransactionProducer::new(
        producer_config(&broker.namesrv, "tx-producer", "tx"),
        Arc::new(Ledger { log: log.clone() }),
    );
    producer.start().await.unwrap();
    let mut results = HashMap::new();
    for body in [
        "commit",
        "rollback",
        "unknown-then-commit",
        "unknown-then-rollback",
    ] {
        let r = producer
            .send_message_in_transaction(Message::new(topic, body))
            .await
            .unwrap();
        assert_eq!(r.send_result.send_status, SendStatus::SendOk);
        results.insert(body, r.local_transaction_state);
    }
    assert_eq!(results["commit"], LocalTransactionState::CommitMessage);
    assert_eq!(results["rollback"], LocalTransactionState::RollbackMessage);
    assert_eq!(
        results["unknown-then-commit"],
        LocalTransactionState::Unknown
    );

    let has = |entry: &str| log.lock().unwrap().iter().any(|e| e == entry);
    wait_until("both unknown transactions checked back", || {
        has("check:unknown-then-commit") && has("check:unknown-then-rollback")
    })
    .await;
    wait_until("the checked commit delivered", || {
        has("deliver:unknown-then-commit")
    })
    .await;
    // A plain message after the checks: once it is consumed, anything the rollbacks
    // could have let through would have been delivered before it (one queue).
    producer
        .producer()
        .send(Message::new(topic, "marker"))
        .await
        .unwrap();
    wait_until("the marker delivered", || has("deliver:marker")).await;

    let log = log.lock().unwrap().clone();
    let position = |entry: &str| {
        log.iter()
            .position(|e| e == entry)
            .unwrap_or_else(|| panic!("{entry} missing from {log:?}"))
    };
    let mut delivered: Vec<&str> = log
        .iter()
        .filter_map(|e| e.strip_prefix("deliver:"))
        .collect();
    delivered.sort();
    assert_eq!(
        delivered,
        ["commit", "marker", "unknown-then-commit"],
        "rolled back messages are never delivered: {log:?}"
    );
    assert!(
        position("check:unknown-then-commit") < position("deliver:unknown-then-commit"),
        "a half message is invisible until committed: {log:?}"
    );
    assert!(
        !log.iter()
            .any(|e| e == "check:commit" || e == "check:rollback"),
        "ended transactions are not checked: {log:?}"
    );
    consumer.shutdown().await;
    producer.shutdown().await;
}
