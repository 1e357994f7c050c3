//! Consumer behaviour against the in-process fake name server and brokers.

// Every guard on the fake broker state is dropped before the next await; the lint does
// not follow drop().
#![allow(clippy::await_holding_lock)]

mod common;

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{wait_until, FakeCluster};
use vostok_client::consumer::MessageListenerOrderly;
use vostok_client::{
    ClientConfig, CommonConsumerConfig, Compression, ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus, ConsumeFromWhere, ConsumeOrderlyContext, ConsumeOrderlyStatus,
    ConsumerConfig, LitePullConsumer, LitePullConsumerConfig, Message, MessageExt, MessageListener,
    MessageModel, MessageSelector, Producer, ProducerConfig, PushConsumer,
};
use vostok_remoting::protocol::header::{
    ConsumeMessageDirectlyResultRequestHeader, GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader, ResetOffsetRequestHeader,
};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;

type Seen = Arc<Mutex<Vec<MessageExt>>>;
/// Per key: (sequence number, reconsume times) in consumption order.
type KeyLog = Arc<Mutex<BTreeMap<String, Vec<(u32, i32)>>>>;

fn client(cluster: &FakeCluster, instance: &str) -> ClientConfig {
    ClientConfig {
        instance_name: instance.to_owned(),
        persist_consumer_offset_interval: Duration::from_millis(100),
        ..ClientConfig::with_namesrv(&cluster.namesrv_addr)
    }
}

async fn producer(cluster: &FakeCluster) -> Producer {
    let p = Producer::new(ProducerConfig {
        client: client(cluster, "producer"),
        producer_group: "pg".into(),
        ..Default::default()
    });
    p.start().await.unwrap();
    p
}

fn consumer_config(cluster: &FakeCluster, group: &str, instance: &str) -> ConsumerConfig {
    ConsumerConfig {
        common: CommonConsumerConfig {
            client: client(cluster, instance),
            consumer_group: group.into(),
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            ..CommonConsumerConfig::push_defaults()
        },
        ..Default::default()
    }
}

async fn recording_consumer(
    config: ConsumerConfig,
    topic: &str,
    selector: MessageSelector,
) -> (PushConsumer, Seen) {
    let seen: Seen = Arc::default();
    let consumer = PushConsumer::new(config);
    consumer.subscribe_with_selector(topic, selector).unwrap();
    let s = seen.clone();
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            s.lock().unwrap().extend(msgs.iter().cloned());
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer.start().await.unwrap();
    (consumer, seen)
}

fn bodies(seen: &Seen) -> Vec<String> {
    let mut v: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|m| String::from_utf8_lossy(&m.body).into_owned())
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn push_consumer_receives_and_decompresses_every_codec() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic("Push", 4);
    let (consumer, seen) = recording_consumer(
        consumer_config(&cluster, "cg", "c1"),
        "Push",
        MessageSelector::by_tag("*"),
    )
    .await;
    let big = |c: char| c.to_string().repeat(10_000);
    for (i, codec) in [Compression::Lz4, Compression::Zlib, Compression::Zstd]
        .into_iter()
        .enumerate()
    {
        let p = Producer::new(ProducerConfig {
            client: client(&cluster, &format!("p{i}")),
            producer_group: format!("pg{i}"),
            compress_type: codec,
            ..Default::default()
        });
        p.start().await.unwrap();
        p.send(Message::new("Push", big(['a', 'b', 'c'][i])))
            .await
            .unwrap();
        p.send(Message::new("Push", format!("small-{i}")))
            .await
            .unwrap();
        p.shutdown().await;
    }
    wait_until("6 messages", || seen.lock().unwrap().len() == 6).await;
    let got = bodies(&seen);
    assert!(got.contains(&big('a')) && got.contains(&big('b')) && got.contains(&big('c')));
    assert!(seen
        .lock()
        .unwrap()
        .iter()
        .all(|m| m.topic == "Push" && m.sys_flag & 1 == 0));
    // Offsets reach the broker.
    wait_until("offsets committed", || {
        (0..4)
            .map(|q| cluster.broker(0).offset("cg", "Push", q).unwrap_or(0))
            .sum::<i64>()
            == 6
    })
    .await;
    // The heartbeat carries the subscription and the retry topic.
    let subs: Vec<String> = cluster
        .broker(0)
        .state()
        .heartbeats
        .iter()
        .flat_map(|h| {
            h.consumer_data_set
                .iter()
                .flat_map(|c| c.subscription_data_set.iter().map(|s| s.topic.clone()))
        })
        .collect();
    assert!(subs.contains(&"Push".to_owned()) && subs.contains(&"%RETRY%cg".to_owned()));
    consumer.shutdown().await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn three_members_share_eight_queues_without_loss_or_duplicates() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic("Shared", 8);
    let producer = producer(&cluster).await;
    let mut members = Vec::new();
    for i in 0..3 {
        members.push(
            recording_consumer(
                consumer_config(&cluster, "cg", &format!("m{i}")),
                "Shared",
                MessageSelector::by_tag("*"),
            )
            .await,
        );
    }
    let assigned = |members: &[(PushConsumer, Seen)]| -> Vec<usize> {
        members
            .iter()
            .map(|(c, _)| {
                c.assigned_queues()
                    .iter()
                    .filter(|q| q.topic == "Shared")
                    .count()
            })
            .collect()
    };
    let disjoint = |members: &[(PushConsumer, Seen)]| {
        let mut all: Vec<_> = members
            .iter()
            .flat_map(|(c, _)| c.assigned_queues())
            .filter(|q| q.topic == "Shared")
            .collect();
        all.sort();
        all.dedup();
        all.len() == 8
    };
    // Counts alone can match mid-rebalance (a queue being released is still listed);
    // one owner per queue is the settled state.
    wait_until("8 queues split 3/3/2, disjoint and complete", || {
        let mut a = assigned(&members);
        a.sort();
        a == [2, 3, 3] && disjoint(&members)
    })
    .await;

    let total = |members: &[(PushConsumer, Seen)]| {
        members
            .iter()
            .map(|(_, s)| s.lock().unwrap().len())
            .sum::<usize>()
    };
    for i in 0..80 {
        producer
            .send(Message::new("Shared", format!("a{i:03}")))
            .await
            .unwrap();
    }
    wait_until("80 consumed", || total(&members) == 80).await;
    let committed = |n: i64| {
        (0..8)
            .map(|q| cluster.broker(0).offset("cg", "Shared", q).unwrap_or(0))
            .sum::<i64>()
            == n
    };
    wait_until("offsets committed", || committed(80)).await;

    // A member leaves: its queues move to the two others.
    let (leaving, leaving_seen) = members.remove(1);
    leaving.shutdown().await;
    wait_until("8 queues over 2 members", || {
        assigned(&members).iter().all(|n| *n == 4) && disjoint(&members)
    })
    .await;
    for i in 0..80 {
        producer
            .send(Message::new("Shared", format!("b{i:03}")))
            .await
            .unwrap();
    }
    wait_until("160 consumed", || {
        total(&members) + leaving_seen.lock().unwrap().len() == 160
    })
    .await;
    wait_until("offsets committed", || committed(160)).await;

    // A member joins: it takes queues from the others.
    members.push(
        recording_consumer(
            consumer_config(&cluster, "cg", "m3"),
            "Shared",
            MessageSelector::by_tag("*"),
        )
        .await,
    );
    wait_until("rebalanced to 3 members", || {
        let mut a = assigned(&members);
        a.sort();
        a == [2, 3, 3] && disjoint(&members)
    })
    .await;
    for i in 0..80 {
        producer
            .send(Message::new("Shared", format!("c{i:03}")))
            .await
            .unwrap();
    }
    wait_until("240 consumed", || {
        total(&members) + leaving_seen.lock().unwrap().len() == 240
    })
    .await;
    let mut every: Vec<String> = members
        .iter()
        .flat_map(|(_, s)| bodies(s))
        .chain(bodies(&leaving_seen))
        .collect();
    every.sort();
    let unique: HashSet<&String> = every.iter().collect();
    assert_eq!(unique.len(), 240, "nothing lost");
    assert_eq!(every.len(), 240, "nothing consumed twice");
    for (c, _) in &members {
        c.shutdown().await;
    }
    producer.shutdown().await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn groups_are_independent_and_broadcasting_reaches_everyone() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic("Fan", 2);
    let dir = tempfile::tempdir().unwrap();
    let producer = producer(&cluster).await;
    let (g1, s1) = recording_consumer(
        consumer_config(&cluster, "g1", "a"),
        "Fan",
        MessageSelector::by_tag("*"),
    )
    .await;
    let (g2, s2) = recording_consumer(
        consumer_config(&cluster, "g2", "b"),
        "Fan",
        MessageSelector::by_tag("*"),
    )
    .await;
    let broadcast = |instance: &str| {
        let mut c = consumer_config(&cluster, "bc", instance);
        c.common.message_model = MessageModel::Broadcasting;
        c.common.client.local_offset_store_dir = Some(dir.path().to_owned());
        c
    };
    let (b1, bs1) = recording_consumer(broadcast("x"), "Fan", MessageSelector::by_tag("*")).await;
    let (b2, bs2) = recording_consumer(broadcast("y"), "Fan", MessageSelector::by_tag("*")).await;
    for i in 0..20 {
        producer
            .send(Message::new("Fan", format!("{i:02}")))
            .await
            .unwrap();
    }
    for seen in [&s1, &s2, &bs1, &bs2] {
        wait_until("20 each", || seen.lock().unwrap().len() == 20).await;
    }
    assert_eq!(bodies(&s1), bodies(&bs2));
    // Broadcasting offsets live in a local file, not on the broker.
    let client_dir = b1.instance().unwrap().client_id().replace(':', "_");
    let file = dir.path().join(client_dir).join("bc").join("offsets.json");
    b1.shutdown().await;
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.matches("\"offset\": 10").count(), 2, "{text}");
    assert!(cluster.broker(0).offset("bc", "Fan", 0).is_none());
    // Restarted, the broadcasting member resumes from its file: nothing old again.
    let (b1, bs1b) = recording_consumer(broadcast("x"), "Fan", MessageSelector::by_tag("*")).await;
    producer.send(Message::new("Fan", "new")).await.unwrap();
    wait_until("only the new message", || bodies(&bs1b) == ["new"]).await;
    for c in [g1, g2, b1, b2] {
        c.shutdown().await;
    }
    producer.shutdown().await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn tag_and_routing_key_filters() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic("Tags", 1);
    let producer = producer(&cluster).await;
    let (c1, tags) = recording_consumer(
        consumer_config(&cluster, "tag-group", "t"),
        "Tags",
        MessageSelector::by_tag("TagA || TagB"),
    )
    .await;
    let (c2, keys) = recording_consumer(
        consumer_config(&cluster, "key-group", "k"),
        "Tags",
        MessageSelector::by_routing_key("order.*.paid"),
    )
    .await;
    let (c3, hashes) = recording_consumer(
        consumer_config(&cluster, "hash-group", "h"),
        "Tags",
        MessageSelector::by_routing_key("order.#"),
    )
    .await;
    for tag in [
        "TagA",
        "TagB",
        "TagC",
        "order.eu.paid",
        "order.eu.x.paid",
        "order",
        "orders.eu.paid",
    ] {
        producer
            .send(Message::new("Tags", tag).with_tags(tag))
            .await
            .unwrap();
    }
    wait_until("tags", || tags.lock().unwrap().len() == 2).await;
    wait_until("keys", || keys.lock().unwrap().len() == 1).await;
    wait_until("hashes", || hashes.lock().unwrap().len() == 3).await;
    // Let the pulls run past the end before checking nothing else arrived.
    wait_until("offsets past the end", || {
        ["tag-group", "key-group", "hash-group"]
            .iter()
            .all(|g| cluster.broker(0).offset(g, "Tags", 0) == Some(7))
    })
    .await;
    assert_eq!(bodies(&tags), ["TagA", "TagB"]);
    assert_eq!(bodies(&keys), ["order.eu.paid"]);
    assert_eq!(
        bodies(&hashes),
        ["order", "order.eu.paid", "order.eu.x.paid"]
    );
    for c in [c1, c2, c3] {
        c.shutdown().await;
    }
    producer.shutdown().await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn reconsume_later_goes_to_retry_then_dlq_and_falls_back_when_send_back_fails() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic("Fail", 1);
    let producer = producer(&cluster).await;
    let mut config = consumer_config(&cluster, "fg", "f");
    config.max_reconsume_times = 2;
    let attempts: Arc<Mutex<Vec<(String, i32, String)>>> = Arc::default();
    let consumer = PushConsumer::new(config);
    consumer.subscribe("Fail", "*").unwrap();
    let a = attempts.clone();
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            for m in msgs {
                a.lock().unwrap().push((
                    String::from_utf8_lossy(&m.body).into_owned(),
                    m.reconsume_times,
                    m.topic.clone(),
                ));
            }
            ConsumeConcurrentlyStatus::ReconsumeLater
        },
    ));
    consumer.start().await.unwrap();
    let sent = producer.send(Message::new("Fail", "poison")).await.unwrap();
    // First try + 2 retries, then the broker moves it to %DLQ%fg.
    wait_until("DLQ", || {
        cluster.broker(0).state().messages("%DLQ%fg").len() == 1
    })
    .await;
    let tries = attempts.lock().unwrap().clone();
    assert_eq!(tries.iter().map(|t| t.1).collect::<Vec<_>>(), [0, 1, 2]);
    assert!(
        tries.iter().all(|t| t.0 == "poison" && t.2 == "Fail"),
        "retries show the original topic: {tries:?}"
    );
    let dlq = &cluster.broker(0).state().messages("%DLQ%fg")[0];
    assert_eq!(dlq.msg_id(), sent.msg_id, "the id survives retries");
    assert_eq!(cluster.broker(0).state().send_backs.len(), 3);

    // The broker refuses CONSUMER_SEND_MSG_BACK: the client sends to %RETRY% itself.
    cluster.broker(0).state().reject_send_back = true;
    producer.send(Message::new("Fail", "second")).await.unwrap();
    wait_until("second in DLQ via plain sends", || {
        cluster.broker(0).state().messages("%DLQ%fg").len() == 2
    })
    .await;
    let st = cluster.broker(0).state();
    let dlq2 = st
        .messages("%DLQ%fg")
        .into_iter()
        .find(|m| &m.body[..] == b"second")
        .unwrap();
    assert_eq!(dlq2.property("RETRY_TOPIC"), Some("Fail"));
    assert!(dlq2.property("ORIGIN_MESSAGE_ID").is_some());
    drop(st);
    consumer.shutdown().await;
    producer.shutdown().await;
    cluster.shutdown().await;
}

struct OrderRecorder {
    seen: KeyLog,
    failed_once: Mutex<bool>,
}

impl MessageListenerOrderly for OrderRecorder {
    fn consume_message(
        &self,
        msgs: &[MessageExt],
        _ctx: &mut ConsumeOrderlyContext,
    ) -> ConsumeOrderlyStatus {
        for m in msgs {
            let text = String::from_utf8_lossy(&m.body).into_owned();
            let (key, n) = text.split_once(':').unwrap();
            let n: u32 = n.parse().unwrap();
            if key == "k1" && n == 3 {
                let mut failed = self.failed_once.lock().unwrap();
                if !*failed {
                    *failed = true;
                    self.seen
                        .lock()
                        .unwrap()
                        .entry(key.into())
                        .or_default()
                        .push((n, m.reconsume_times));
                    return ConsumeOrderlyStatus::SuspendCurrentQueueAMoment;
                }
            }
            self.seen
                .lock()
                .unwrap()
                .entry(key.into())
                .or_default()
                .push((n, m.reconsume_times));
        }
        ConsumeOrderlyStatus::Success
    }
}

#[tokio::test]
async fn orderly_consumption_keeps_key_order_and_retries_in_place() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic("Ordered", 4);
    let producer = producer(&cluster).await;
    let mut config = consumer_config(&cluster, "og", "o");
    config.suspend_current_queue_time = Duration::from_millis(100);
    let consumer = PushConsumer::new(config);
    consumer.subscribe("Ordered", "*").unwrap();
    let seen: KeyLog = Arc::default();
    consumer.register_message_listener_orderly(OrderRecorder {
        seen: seen.clone(),
        failed_once: Mutex::new(false),
    });
    consumer.start().await.unwrap();
    wait_until("queues locked", || {
        let st = cluster.broker(0).state();
        st.locks
            .keys()
            .filter(|(_, mq)| mq.topic == "Ordered")
            .count()
            == 4
    })
    .await;
    for n in 0..10u32 {
        for key in ["k1", "k2", "k3"] {
            producer
                .send_orderly(Message::new("Ordered", format!("{key}:{n}")), key)
                .await
                .unwrap();
        }
    }
    wait_until("all consumed", || {
        seen.lock().unwrap().values().map(Vec::len).sum::<usize>() == 31
    })
    .await;
    let seen = seen.lock().unwrap().clone();
    for key in ["k2", "k3"] {
        assert_eq!(
            seen[key].iter().map(|x| x.0).collect::<Vec<_>>(),
            (0..10).collect::<Vec<_>>()
        );
    }
    let k1: Vec<(u32, i32)> = seen["k1"].clone();
    assert_eq!(
        k1[..5],
        [(0, 0), (1, 0), (2, 0), (3, 0), (3, 1)],
        "retried in place, before 4"
    );
    assert_eq!(
        k1[5..].iter().map(|x| x.0).collect::<Vec<_>>(),
        (4..10).collect::<Vec<_>>()
    );
    assert!(
        cluster.broker(0).state().send_backs.is_empty(),
        "orderly retries stay local"
    );
    consumer.shutdown().await;
    wait_until("locks released", || {
        let st = cluster.broker(0).state();
        eprintln!(
            "locks {:?} unlocks {}",
            st.locks,
            st.count(request_code::UNLOCK_BATCH_MQ)
        );
        st.locks.is_empty()
    })
    .await;
    producer.shutdown().await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn restart_resumes_from_the_committed_offset() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic("Resume", 2);
    let producer = producer(&cluster).await;
    let (c, seen) = recording_consumer(
        consumer_config(&cluster, "rg", "r"),
        "Resume",
        MessageSelector::by_tag("*"),
    )
    .await;
    for i in 0..10 {
        producer
            .send(Message::new("Resume", format!("first-{i}")))
            .await
            .unwrap();
    }
    wait_until("10", || seen.lock().unwrap().len() == 10).await;
    c.shutdown().await;
    assert_eq!(
        cluster.broker(0).offset("rg", "Resume", 0).unwrap()
            + cluster.broker(0).offset("rg", "Resume", 1).unwrap(),
        10
    );
    for i in 0..5 {
        producer
            .send(Message::new("Resume", format!("second-{i}")))
            .await
            .unwrap();
    }
    let (c, seen) = recording_consumer(
        consumer_config(&cluster, "rg", "r"),
        "Resume",
        MessageSelector::by_tag("*"),
    )
    .await;
    wait_until("5 new", || seen.lock().unwrap().len() == 5).await;
    assert!(bodies(&seen).iter().all(|b| b.starts_with("second-")));
    c.shutdown().await;
    producer.shutdown().await;
    cluster.shutdown().await;
}

/// A producer and a push consumer of one process share a client instance, and so its
/// connection to the broker. While that connection is quiet the consumer's long polls
/// use it too; while the producer's sends wait there for their answers, the long polls
/// take a second connection, so that the consumer does not wait behind them.
#[tokio::test]
async fn long_polls_leave_a_busy_connection() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic("Lanes", 2);
    let producer = Arc::new(Producer::new(ProducerConfig {
        client: client(&cluster, "shared"),
        producer_group: "pg".into(),
        ..Default::default()
    }));
    producer.start().await.unwrap();
    let (c, seen) = recording_consumer(
        consumer_config(&cluster, "lanes", "shared"),
        "Lanes",
        MessageSelector::by_tag("*"),
    )
    .await;
    producer.send(Message::new("Lanes", "quiet")).await.unwrap();
    wait_until("the first consumed", || seen.lock().unwrap().len() == 1).await;
    let peers_of = |codes: &[i32]| -> HashSet<std::net::SocketAddr> {
        let st = cluster.broker(0).state();
        st.request_peers
            .iter()
            .filter(|(code, _)| codes.contains(code))
            .map(|(_, peer)| *peer)
            .collect()
    };
    let shared = peers_of(&[request_code::SEND_MESSAGE, request_code::SEND_MESSAGE_V2]);
    assert_eq!(shared.len(), 1, "one instance, one connection: {shared:?}");
    assert_eq!(peers_of(&[request_code::PULL_MESSAGE]), shared);

    // 200 sends whose answers the broker holds: the pulls must get past them.
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    cluster.broker(0).state().hold_send_answers = Some(gate.clone());
    let sends: Vec<_> = (0..200)
        .map(|i| {
            let p = producer.clone();
            tokio::spawn(async move { p.send(Message::new("Lanes", format!("{i}"))).await })
        })
        .collect();
    wait_until("all 201 consumed while 200 answers are held", || {
        seen.lock().unwrap().len() == 201
    })
    .await;
    let polls = peers_of(&[request_code::PULL_MESSAGE]);
    assert_eq!(polls.len(), 2, "{polls:?}");
    assert_eq!(
        peers_of(&[
            request_code::SEND_MESSAGE,
            request_code::SEND_MESSAGE_V2,
            request_code::HEART_BEAT
        ]),
        shared
    );
    gate.close();
    for send in sends {
        send.await.unwrap().unwrap();
    }
    c.shutdown().await;
    producer.shutdown().await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn lite_pull_with_manual_commit_and_seek() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic("Lite", 1);
    let producer = producer(&cluster).await;
    for i in 0..10 {
        producer
            .send(Message::new("Lite", format!("{i}")))
            .await
            .unwrap();
    }
    let mut config = LitePullConsumerConfig {
        common: CommonConsumerConfig {
            client: client(&cluster, "lite"),
            consumer_group: "lg".into(),
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            ..CommonConsumerConfig::lite_pull_defaults()
        },
        ..Default::default()
    };
    config.auto_commit = false;
    let consumer = LitePullConsumer::new(config);
    consumer.start().await.unwrap();
    let queues = consumer.fetch_message_queues("Lite").await.unwrap();
    consumer.assign(&queues).await.unwrap();
    let mut got = Vec::new();
    while got.len() < 10 {
        got.extend(consumer.poll(Duration::from_secs(5)).await.unwrap());
    }
    assert_eq!(
        got.iter().map(|m| m.queue_offset).collect::<Vec<_>>(),
        (0..10).collect::<Vec<_>>()
    );
    assert!(
        consumer.committed(&queues[0]).await.unwrap().is_none(),
        "nothing committed yet"
    );
    consumer.commit().await.unwrap();
    assert_eq!(consumer.committed(&queues[0]).await.unwrap(), Some(10));
    assert_eq!(cluster.broker(0).offset("lg", "Lite", 0), Some(10));
    // Seek back: the same messages again.
    consumer.seek(&queues[0], 4).await.unwrap();
    let mut again = Vec::new();
    while again.len() < 6 {
        again.extend(consumer.poll(Duration::from_secs(5)).await.unwrap());
    }
    assert_eq!(again[0].queue_offset, 4);
    assert_eq!(&again[0].body[..], b"4");
    // Pause: nothing new is delivered until resume.
    consumer.pause(&queues);
    producer
        .send(Message::new("Lite", "while paused"))
        .await
        .unwrap();
    assert!(consumer
        .poll(Duration::from_millis(300))
        .await
        .unwrap()
        .is_empty());
    consumer.resume(&queues);
    let mut after = Vec::new();
    while after.is_empty() {
        after = consumer.poll(Duration::from_secs(5)).await.unwrap();
    }
    assert_eq!(&after[0].body[..], b"while paused");
    consumer.shutdown().await;
    producer.shutdown().await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn lite_pull_subscribe_auto_commits() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic("LiteSub", 2);
    let producer = producer(&cluster).await;
    let config = LitePullConsumerConfig {
        common: CommonConsumerConfig {
            client: client(&cluster, "lite2"),
            consumer_group: "lsg".into(),
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            ..CommonConsumerConfig::lite_pull_defaults()
        },
        auto_commit_interval: Duration::ZERO,
        ..Default::default()
    };
    let consumer = LitePullConsumer::new(config);
    consumer.subscribe("LiteSub", "*").unwrap();
    consumer.start().await.unwrap();
    for i in 0..6 {
        producer
            .send(Message::new("LiteSub", format!("{i}")))
            .await
            .unwrap();
    }
    let mut got = 0;
    while got < 6 {
        got += consumer.poll(Duration::from_secs(5)).await.unwrap().len();
    }
    consumer.shutdown().await;
    let committed: i64 = (0..2)
        .map(|q| cluster.broker(0).offset("lsg", "LiteSub", q).unwrap_or(0))
        .sum();
    assert_eq!(committed, 6);
    producer.shutdown().await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn consumers_answer_running_info_requests() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic("Info", 2);
    let (c, _) = recording_consumer(
        consumer_config(&cluster, "ig", "i"),
        "Info",
        MessageSelector::by_tag("*"),
    )
    .await;
    wait_until("assigned", || c.assigned_queues().len() >= 2).await;
    let channel = cluster.broker(0).state().consumers["ig"]
        .values()
        .next()
        .unwrap()
        .clone();
    let header = GetConsumerRunningInfoRequestHeader {
        consumer_group: "ig".into(),
        client_id: "x".into(),
        jstack_enable: None,
    };
    let request =
        RemotingCommand::request_with_header(request_code::GET_CONSUMER_RUNNING_INFO, &header);
    let response = channel.invoke(request, common::T).await.unwrap();
    assert_eq!(response.code, response_code::SUCCESS);
    let info: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(info["properties"]["PROP_CONSUME_TYPE"], "CONSUME_PASSIVELY");
    // Shared by both consumer kinds, and the push consumer's own.
    assert_eq!(info["properties"]["pullBatchSize"], "32");
    assert_eq!(info["properties"]["consumeThreadMax"], "20");
    assert_eq!(info["properties"]["suspended"], "false");
    assert!(info["mqTable"].as_object().unwrap().len() >= 2);
    let unknown = GetConsumerRunningInfoRequestHeader {
        consumer_group: "nope".into(),
        client_id: "x".into(),
        jstack_enable: None,
    };
    let response = channel
        .invoke(
            RemotingCommand::request_with_header(request_code::GET_CONSUMER_RUNNING_INFO, &unknown),
            common::T,
        )
        .await
        .unwrap();
    assert_eq!(response.code, response_code::SYSTEM_ERROR);
    c.shutdown().await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn push_consumers_consume_a_message_directly() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic("Direct", 1);
    let producer = producer(&cluster).await;
    let (c, seen) = recording_consumer(
        consumer_config(&cluster, "dg", "d"),
        "Direct",
        MessageSelector::by_tag("*"),
    )
    .await;
    producer
        .send(Message::new("Direct", "again"))
        .await
        .unwrap();
    wait_until("consumed once", || seen.lock().unwrap().len() == 1).await;
    let (channel, record) = {
        let state = cluster.broker(0).state();
        let channel = state.consumers["dg"].values().next().unwrap().clone();
        let record = state.queues[&("Direct".to_owned(), 0)][0].record.clone();
        (channel, record)
    };
    let header = ConsumeMessageDirectlyResultRequestHeader {
        consumer_group: "dg".into(),
        client_id: None,
        msg_id: None,
        broker_name: Some(cluster.broker(0).state().name.clone()),
        topic: Some("Direct".into()),
    };
    let request =
        RemotingCommand::request_with_header(request_code::CONSUME_MESSAGE_DIRECTLY, &header)
            .with_body(record);
    let response = channel.invoke(request, common::T).await.unwrap();
    assert_eq!(response.code, response_code::SUCCESS);
    let result: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(result["consumeResult"], "CR_SUCCESS");
    assert_eq!(result["order"], false);
    assert_eq!(bodies(&seen), vec!["again".to_owned(), "again".to_owned()]);
    c.shutdown().await;
    producer.shutdown().await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn consumers_report_their_offsets_and_follow_an_offset_reset() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic("Reset", 2);
    let producer = producer(&cluster).await;
    let (c, seen) = recording_consumer(
        consumer_config(&cluster, "xg", "x"),
        "Reset",
        MessageSelector::by_tag("*"),
    )
    .await;
    for i in 0..10 {
        producer
            .send(Message::new("Reset", format!("r{i}")))
            .await
            .unwrap();
    }
    wait_until("10 consumed", || seen.lock().unwrap().len() == 10).await;
    let broker_offsets = || {
        (0..2)
            .map(|q| cluster.broker(0).offset("xg", "Reset", q).unwrap_or(-1))
            .collect::<Vec<_>>()
    };
    wait_until("offsets committed", || {
        broker_offsets().iter().sum::<i64>() == 10
    })
    .await;
    let channel = cluster.broker(0).state().consumers["xg"]
        .values()
        .next()
        .unwrap()
        .clone();

    // GET_CONSUMER_STATUS_FROM_CLIENT: the client's offsets of the topic, in fastjson's
    // form (queue objects as keys).
    let header = GetConsumerStatusRequestHeader {
        topic: "Reset".into(),
        group: "xg".into(),
        client_addr: None,
    };
    let response = channel
        .invoke(
            RemotingCommand::request_with_header(
                request_code::GET_CONSUMER_STATUS_FROM_CLIENT,
                &header,
            ),
            common::T,
        )
        .await
        .unwrap();
    assert_eq!(response.code, response_code::SUCCESS);
    let offsets = broker_offsets();
    let expected = format!(
        "{{\"consumerTable\":{{}},\"messageQueueTable\":{{\
         {{\"brokerName\":\"broker-a\",\"queueId\":0,\"topic\":\"Reset\"}}:{},\
         {{\"brokerName\":\"broker-a\",\"queueId\":1,\"topic\":\"Reset\"}}:{}}}}}",
        offsets[0], offsets[1]
    );
    assert_eq!(String::from_utf8_lossy(&response.body), expected);
    let unknown = GetConsumerStatusRequestHeader {
        topic: "Reset".into(),
        group: "nope".into(),
        client_addr: None,
    };
    let response = channel
        .invoke(
            RemotingCommand::request_with_header(
                request_code::GET_CONSUMER_STATUS_FROM_CLIENT,
                &unknown,
            ),
            common::T,
        )
        .await
        .unwrap();
    assert_eq!(response.code, response_code::SUCCESS);
    assert_eq!(
        &response.body[..],
        b"{\"consumerTable\":{},\"messageQueueTable\":{}}"
    );

    // RESET_CONSUMER_CLIENT_OFFSET (oneway, as brokers send it): back to 0 on both
    // queues, so every message is consumed a second time and committed again.
    let header = ResetOffsetRequestHeader {
        topic: "Reset".into(),
        group: "xg".into(),
        timestamp: 0,
        is_force: Some(true),
    };
    let body = "{\"offsetTable\":{\
        {\"brokerName\":\"broker-a\",\"queueId\":0,\"topic\":\"Reset\"}:0,\
        {\"brokerName\":\"broker-a\",\"queueId\":1,\"topic\":\"Reset\"}:0}}";
    channel
        .invoke_oneway(
            RemotingCommand::request_with_header(
                request_code::RESET_CONSUMER_CLIENT_OFFSET,
                &header,
            )
            .with_body(body.as_bytes().to_vec()),
            common::T,
        )
        .await
        .unwrap();
    wait_until("every message again", || seen.lock().unwrap().len() == 20).await;
    let mut twice = bodies(&seen);
    twice.dedup();
    assert_eq!(twice.len(), 10, "each of the 10 messages consumed twice");
    assert!(bodies(&seen).chunks(2).all(|p| p[0] == p[1]));
    wait_until("offsets committed again", || {
        broker_offsets().iter().sum::<i64>() == 10
    })
    .await;
    // The consumer goes on with new messages after the reset.
    producer.send(Message::new("Reset", "after")).await.unwrap();
    wait_until("the new message", || seen.lock().unwrap().len() == 21).await;
    c.shutdown().await;
    producer.shutdown().await;
    cluster.shutdown().await;
}
