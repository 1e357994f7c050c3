//! The client SDK's consumers against real broker processes (issue 6): clustering
//! members sharing queues across a member leaving and joining, broadcasting,
//! independent groups, orderly consumption with retry in place, RECONSUME_LATER
//! through the retry topic to the DLQ, tag and routing-key filters, the lite pull
//! consumer's manual commit and seek, and resuming from the committed offset after a
//! restart.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use vostok_client::consumer::MessageListenerOrderly;
use vostok_client::{
    CommonConsumerConfig, ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, ConsumeFromWhere,
    ConsumeOrderlyContext, ConsumeOrderlyStatus, ConsumerConfig, LitePullConsumer,
    LitePullConsumerConfig, Message, MessageExt, MessageListener, MessageModel, MessageSelector,
    Producer, ProducerConfig, PushConsumer,
};
use vostok_remoting::protocol::{response_code, topic};
use vostok_tests::client::TestClient;
use vostok_tests::sdk::{self, client, eventually, wait_until};
use vostok_tests::{Broker, BrokerOptions};

/// Every delay level 1 s, so retries come quickly.
const FAST_LEVELS: &str = "1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s";
/// Upper bound of every wait.
const T: Duration = sdk::WAIT;

type Seen = Arc<Mutex<Vec<MessageExt>>>;

async fn producer(namesrv: &str) -> Producer {
    let p = Producer::new(ProducerConfig {
        client: client(namesrv, "producer"),
        producer_group: "sdk-producer".into(),
        ..Default::default()
    });
    p.start().await.unwrap();
    p
}

fn consumer_config(namesrv: &str, group: &str, instance: &str) -> ConsumerConfig {
    ConsumerConfig {
        common: CommonConsumerConfig {
            client: client(namesrv, instance),
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

/// Sum of a group's committed offsets over `queues` queues of `topic`.
async fn committed(
    admin: &TestClient,
    broker: &Broker,
    group: &str,
    topic: &str,
    queues: i32,
) -> i64 {
    let mut sum = 0;
    for q in 0..queues {
        sum += admin
            .query_offset(&broker.addr, group, topic, q)
            .await
            .unwrap_or(0);
    }
    sum
}

async fn send_all(producer: &Producer, topic: &str, prefix: &str, n: usize) {
    for i in 0..n {
        producer
            .send(Message::new(topic, format!("{prefix}{i:03}")))
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_members_share_eight_queues_across_a_member_leaving_and_joining() {
    let broker = Broker::start(BrokerOptions::default());
    let ns = broker.namesrv.clone();
    let (group, topic) = ("share-group", "SharedTopic");
    broker.create_topic(topic, 8).await;
    let admin = TestClient::default();
    let producer = producer(&ns).await;
    // No periodic rebalance within the test: every move below follows the broker's
    // NOTIFY_CONSUMER_IDS_CHANGED when a member registers or unregisters.
    let member = |instance: &str| {
        let mut config = consumer_config(&ns, group, instance);
        config.common.client.rebalance_interval = Duration::from_secs(600);
        config
    };
    let mut members = Vec::new();
    for i in 0..3 {
        members.push(
            recording_consumer(
                member(&format!("m{i}")),
                topic,
                MessageSelector::by_tag("*"),
            )
            .await,
        );
    }
    let assigned = |members: &[(PushConsumer, Seen)]| -> Vec<usize> {
        let mut counts: Vec<usize> = members
            .iter()
            .map(|(c, _)| {
                c.assigned_queues()
                    .iter()
                    .filter(|q| q.topic == topic)
                    .count()
            })
            .collect();
        counts.sort();
        counts
    };
    let disjoint = |members: &[(PushConsumer, Seen)]| {
        let mut all: Vec<_> = members
            .iter()
            .flat_map(|(c, _)| c.assigned_queues())
            .filter(|q| q.topic == topic)
            .collect();
        all.sort();
        all.dedup();
        all.len() == 8
    };
    // Counts alone can match mid-rebalance (a queue being released still listed);
    // each queue with exactly one owner is the settled state.
    wait_until("8 queues split 2/3/3, one owner each", || {
        assigned(&members) == [2, 3, 3] && disjoint(&members)
    })
    .await;

    let total = |members: &[(PushConsumer, Seen)], gone: &[Seen]| {
        members
            .iter()
            .map(|(_, s)| s.lock().unwrap().len())
            .chain(gone.iter().map(|s| s.lock().unwrap().len()))
            .sum::<usize>()
    };
    send_all(&producer, topic, "a", 80).await;
    wait_until("80 consumed", || total(&members, &[]) == 80).await;
    eventually("80 committed", || async {
        committed(&admin, &broker, group, topic, 8).await == 80
    })
    .await;

    // A member leaves: its queues move to the two others, from its committed offsets.
    let (leaving, leaving_seen) = members.remove(1);
    leaving.shutdown().await;
    wait_until("8 queues over 2 members, one owner each", || {
        assigned(&members) == [4, 4] && disjoint(&members)
    })
    .await;
    let gone = [leaving_seen];
    send_all(&producer, topic, "b", 80).await;
    wait_until("160 consumed", || total(&members, &gone) == 160).await;
    eventually("160 committed", || async {
        committed(&admin, &broker, group, topic, 8).await == 160
    })
    .await;

    // A member joins: it takes queues from the others.
    members.push(recording_consumer(member("m3"), topic, MessageSelector::by_tag("*")).await);
    wait_until("rebalanced to 2/3/3", || {
        assigned(&members) == [2, 3, 3] && disjoint(&members)
    })
    .await;
    send_all(&producer, topic, "c", 80).await;
    wait_until("240 consumed", || total(&members, &gone) == 240).await;
    eventually("240 committed", || async {
        committed(&admin, &broker, group, topic, 8).await == 240
    })
    .await;
    let every: Vec<String> = members
        .iter()
        .flat_map(|(_, s)| bodies(s))
        .chain(bodies(&gone[0]))
        .collect();
    let unique: HashSet<&String> = every.iter().collect();
    assert_eq!(unique.len(), 240, "nothing lost");
    assert_eq!(every.len(), 240, "nothing consumed twice");
    assert!(
        !bodies(&members[2].1).is_empty(),
        "the member that joined consumes"
    );
    for (c, _) in &members {
        c.shutdown().await;
    }
    producer.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broadcasting_reaches_every_member_and_groups_are_independent() {
    let broker = Broker::start(BrokerOptions::default());
    let ns = broker.namesrv.clone();
    let topic = "FanTopic";
    broker.create_topic(topic, 2).await;
    let admin = TestClient::default();
    let dir = tempfile::tempdir().unwrap();
    let producer = producer(&ns).await;
    let (g1, s1) = recording_consumer(
        consumer_config(&ns, "group-one", "a"),
        topic,
        MessageSelector::by_tag("*"),
    )
    .await;
    let broadcast = |instance: &str| {
        let mut c = consumer_config(&ns, "bc-group", instance);
        c.common.message_model = MessageModel::Broadcasting;
        c.common.client.local_offset_store_dir = Some(dir.path().to_owned());
        c
    };
    let (b1, bs1) = recording_consumer(broadcast("x"), topic, MessageSelector::by_tag("*")).await;
    let (b2, bs2) = recording_consumer(broadcast("y"), topic, MessageSelector::by_tag("*")).await;
    wait_until("broadcasting members own every queue", || {
        b1.assigned_queues().len() == 2 && b2.assigned_queues().len() == 2
    })
    .await;
    send_all(&producer, topic, "m", 20).await;
    for seen in [&s1, &bs1, &bs2] {
        wait_until("20 each", || seen.lock().unwrap().len() == 20).await;
    }
    let all20: Vec<String> = (0..20).map(|i| format!("m{i:03}")).collect();
    assert_eq!(bodies(&bs1), all20);
    assert_eq!(bodies(&bs2), all20);
    assert_eq!(bodies(&s1), all20);

    // A second group, started later, still consumes everything on its own offsets.
    let (g2, s2) = recording_consumer(
        consumer_config(&ns, "group-two", "b"),
        topic,
        MessageSelector::by_tag("*"),
    )
    .await;
    wait_until("the second group gets all 20", || {
        s2.lock().unwrap().len() == 20
    })
    .await;
    assert_eq!(bodies(&s2), all20);
    for g in ["group-one", "group-two"] {
        eventually("both groups committed", || async {
            committed(&admin, &broker, g, topic, 2).await == 20
        })
        .await;
    }
    assert_eq!(
        s1.lock().unwrap().len(),
        20,
        "the first group saw nothing twice"
    );

    // Broadcasting offsets live in a local file, not on the broker.
    let client_dir = b1.instance().unwrap().client_id().replace(':', "_");
    let file = dir
        .path()
        .join(client_dir)
        .join("bc-group")
        .join("offsets.json");
    b1.shutdown().await;
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.matches("\"offset\": 10").count(), 2, "{text}");
    assert_eq!(
        admin.query_offset(&broker.addr, "bc-group", topic, 0).await,
        None
    );
    // Restarted, the broadcasting member resumes from its file: one new message per
    // queue, and nothing old. Its shutdown then waits for the listener calls and writes
    // the file: offsets 11 prove everything pulled before the new messages was consumed
    // (and would be in `bs1b`) or never pulled.
    let (b1, bs1b) = recording_consumer(broadcast("x"), topic, MessageSelector::by_tag("*")).await;
    for mq in producer.fetch_publish_message_queues(topic).await.unwrap() {
        producer
            .send_to_queue(Message::new(topic, format!("new-{}", mq.queue_id)), &mq)
            .await
            .unwrap();
    }
    wait_until("the new messages everywhere", || {
        bs1b.lock().unwrap().len() >= 2 && bs2.lock().unwrap().len() == 22
    })
    .await;
    b1.shutdown().await;
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.matches("\"offset\": 11").count(), 2, "{text}");
    assert_eq!(bodies(&bs1b), ["new-0", "new-1"]);
    for c in [g1, g2, b2] {
        c.shutdown().await;
    }
    producer.shutdown().await;
}

/// Per key: (sequence number, reconsume times) in consumption order.
type KeyLog = Arc<Mutex<BTreeMap<String, Vec<(u32, i32)>>>>;

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
            let (key, n) = text.split_once(':').expect("key:n");
            let n: u32 = n.parse().expect("sequence number");
            self.seen
                .lock()
                .unwrap()
                .entry(key.into())
                .or_default()
                .push((n, m.reconsume_times));
            if key == "k1" && n == 3 {
                let mut failed = self.failed_once.lock().unwrap();
                if !*failed {
                    *failed = true;
                    return ConsumeOrderlyStatus::SuspendCurrentQueueAMoment;
                }
            }
        }
        ConsumeOrderlyStatus::Success
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orderly_keeps_per_key_order_and_retries_a_failing_message_in_place() {
    let broker = Broker::start(BrokerOptions::default());
    let ns = broker.namesrv.clone();
    let (group, topic) = ("orderly-group", "OrderedTopic");
    broker.create_topic(topic, 4).await;
    let admin = TestClient::default();
    let producer = producer(&ns).await;
    let mut config = consumer_config(&ns, group, "o");
    config.suspend_current_queue_time = Duration::from_millis(200);
    let consumer = PushConsumer::new(config);
    consumer.subscribe(topic, "*").unwrap();
    let seen: KeyLog = Arc::default();
    consumer.register_message_listener_orderly(OrderRecorder {
        seen: seen.clone(),
        failed_once: Mutex::new(false),
    });
    consumer.start().await.unwrap();
    let mut queues: BTreeMap<&str, i32> = BTreeMap::new();
    for n in 0..10u32 {
        for key in ["k1", "k2", "k3"] {
            let r = producer
                .send_orderly(Message::new(topic, format!("{key}:{n}")), key)
                .await
                .unwrap();
            let q = *queues.entry(key).or_insert(r.message_queue.queue_id);
            assert_eq!(q, r.message_queue.queue_id, "one key, one queue");
        }
    }
    wait_until("31 listener deliveries", || {
        seen.lock().unwrap().values().map(Vec::len).sum::<usize>() == 31
    })
    .await;
    let seen = seen.lock().unwrap().clone();
    for key in ["k2", "k3"] {
        assert_eq!(
            seen[key],
            (0..10).map(|n| (n, 0)).collect::<Vec<_>>(),
            "{key} in order, once each"
        );
    }
    let k1 = &seen["k1"];
    assert_eq!(
        k1[..5],
        [(0, 0), (1, 0), (2, 0), (3, 0), (3, 1)],
        "suspended and retried in place, before 4"
    );
    assert_eq!(
        k1[5..],
        (4..10).map(|n| (n, 0)).collect::<Vec<_>>()[..],
        "the rest in order"
    );
    eventually("30 committed", || async {
        committed(&admin, &broker, group, topic, 4).await == 30
    })
    .await;
    // Orderly retries stay local: nothing went through the retry topic.
    let retry = topic::retry_topic(group);
    assert_eq!(admin.max_offset(&broker.addr, &retry, 0).await, 0);
    consumer.shutdown().await;
    producer.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconsume_later_goes_through_the_retry_topic_to_the_dlq() {
    let broker = Broker::start(BrokerOptions::default().set("messageDelayLevel", FAST_LEVELS));
    let ns = broker.namesrv.clone();
    let (group, topic) = ("failing-group", "FailTopic");
    broker.create_topic(topic, 1).await;
    let admin = TestClient::default();
    let producer = producer(&ns).await;
    let mut config = consumer_config(&ns, group, "f");
    config.max_reconsume_times = 2;
    // (body, reconsume times, topic as the listener sees it)
    let attempts: Arc<Mutex<Vec<(String, i32, String)>>> = Arc::default();
    let consumer = PushConsumer::new(config);
    consumer.subscribe(topic, "*").unwrap();
    let a = attempts.clone();
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            let mut status = ConsumeConcurrentlyStatus::ConsumeSuccess;
            for m in msgs {
                let body = String::from_utf8_lossy(&m.body).into_owned();
                if body == "poison" {
                    status = ConsumeConcurrentlyStatus::ReconsumeLater;
                }
                a.lock()
                    .unwrap()
                    .push((body, m.reconsume_times, m.topic.clone()));
            }
            status
        },
    ));
    consumer.start().await.unwrap();
    let sent = producer.send(Message::new(topic, "poison")).await.unwrap();
    producer.send(Message::new(topic, "fine")).await.unwrap();

    // First delivery + 2 retries through %RETRY%, then the broker dead-letters it.
    let dlq = topic::dlq_topic(group);
    eventually("the message in the DLQ", || async {
        let response = admin
            .call(
                &broker.addr,
                vostok_remoting::RemotingCommand::request_with_header(
                    vostok_remoting::protocol::request_code::GET_MAX_OFFSET,
                    &vostok_remoting::protocol::header::GetMaxOffsetRequestHeader {
                        topic: dlq.clone(),
                        queue_id: 0,
                        committed: None,
                    },
                ),
            )
            .await;
        response.code == response_code::SUCCESS
            && response
                .decode_header::<vostok_remoting::protocol::header::OffsetResponseHeader>()
                .map(|h| h.offset)
                .unwrap_or(0)
                == 1
    })
    .await;
    let tries = attempts.lock().unwrap().clone();
    let poison: Vec<&(String, i32, String)> = tries.iter().filter(|t| t.0 == "poison").collect();
    assert_eq!(
        poison.iter().map(|t| t.1).collect::<Vec<_>>(),
        [0, 1, 2],
        "delivered three times: {tries:?}"
    );
    assert!(
        poison.iter().all(|t| t.2 == topic),
        "retries show the original topic: {tries:?}"
    );
    assert_eq!(
        tries.iter().filter(|t| t.0 == "fine").count(),
        1,
        "a successful message is not retried"
    );
    let retry = topic::retry_topic(group);
    assert_eq!(
        admin.max_offset(&broker.addr, &retry, 0).await,
        2,
        "two retries went through the retry topic"
    );
    // The DLQ is created readable (perm 6, as Apache RocketMQ since 4.9), so an
    // operator's consumer can read the dead letter without changing the topic.
    let dead = admin.drain(&broker.addr, "inspector", &dlq, 0, 0).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(&dead[0].body[..], b"poison");
    assert_eq!(dead[0].msg_id(), sent.msg_id, "the id survives retries");
    eventually("offsets committed past both messages", || async {
        committed(&admin, &broker, group, topic, 1).await == 2
    })
    .await;
    consumer.shutdown().await;
    producer.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tag_and_routing_key_filters() {
    let broker = Broker::start(BrokerOptions::default());
    let ns = broker.namesrv.clone();
    let topic = "TagTopic";
    broker.create_topic(topic, 1).await;
    let admin = TestClient::default();
    let producer = producer(&ns).await;
    // Non-matching arrivals do not wake a parked pull (RocketMQ's long polling checks
    // the tag hash), so a tag-filtered group's offset passes them when its hold ends:
    // a short hold keeps that wait short.
    let filtered = |group: &str, instance: &str| {
        let mut config = consumer_config(&ns, group, instance);
        config.common.broker_suspend_max_time = Duration::from_secs(1);
        config
    };
    let (c1, tags) = recording_consumer(
        filtered("tag-group", "t"),
        topic,
        MessageSelector::by_tag("TagA || TagB"),
    )
    .await;
    let (c2, keys) = recording_consumer(
        filtered("key-group", "k"),
        topic,
        MessageSelector::by_routing_key("order.*.paid"),
    )
    .await;
    let (c3, hashes) = recording_consumer(
        filtered("hash-group", "h"),
        topic,
        MessageSelector::by_routing_key("order.#"),
    )
    .await;
    let (c4, literal) = recording_consumer(
        filtered("literal-group", "l"),
        topic,
        MessageSelector::by_routing_key("order.eu.paid"),
    )
    .await;
    let sent = [
        "TagA",
        "TagB",
        "TagC",
        "order.eu.paid",
        "order.eu.x.paid",
        "order",
        "orders.eu.paid",
    ];
    for tag in sent {
        producer
            .send(Message::new(topic, tag).with_tags(tag))
            .await
            .unwrap();
    }
    // Every group moves its offset past all 7 messages: by then everything it would
    // ever receive has been delivered.
    for g in ["tag-group", "key-group", "hash-group", "literal-group"] {
        eventually("offsets past the end", || async {
            committed(&admin, &broker, g, topic, 1).await == sent.len() as i64
        })
        .await;
    }
    assert_eq!(bodies(&tags), ["TagA", "TagB"]);
    assert_eq!(bodies(&keys), ["order.eu.paid"]);
    assert_eq!(
        bodies(&hashes),
        ["order", "order.eu.paid", "order.eu.x.paid"]
    );
    assert_eq!(bodies(&literal), ["order.eu.paid"]);
    for c in [c1, c2, c3, c4] {
        c.shutdown().await;
    }
    producer.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lite_pull_with_manual_commit_and_seek() {
    let broker = Broker::start(BrokerOptions::default());
    let ns = broker.namesrv.clone();
    let (group, topic) = ("lite-group", "LiteTopic");
    broker.create_topic(topic, 1).await;
    let admin = TestClient::default();
    let producer = producer(&ns).await;
    send_all(&producer, topic, "", 10).await;
    let config = LitePullConsumerConfig {
        common: CommonConsumerConfig {
            client: client(&ns, "lite"),
            consumer_group: group.into(),
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            ..CommonConsumerConfig::lite_pull_defaults()
        },
        auto_commit: false,
        ..Default::default()
    };
    let consumer = LitePullConsumer::new(config);
    consumer.start().await.unwrap();
    let queues = consumer.fetch_message_queues(topic).await.unwrap();
    assert_eq!(queues.len(), 1);
    consumer.assign(&queues).await.unwrap();
    let poll_at_least = |n: usize| {
        let consumer = consumer.clone();
        async move {
            let deadline = Instant::now() + T;
            let mut got = Vec::new();
            while got.len() < n {
                assert!(
                    Instant::now() < deadline,
                    "only {} of {n} polled",
                    got.len()
                );
                got.extend(consumer.poll(Duration::from_secs(1)).await.unwrap());
            }
            got
        }
    };
    let got = poll_at_least(10).await;
    assert_eq!(
        got.iter().map(|m| m.queue_offset).collect::<Vec<_>>(),
        (0..10).collect::<Vec<_>>()
    );
    // Before commit() the broker has at most the start offset the consumer read (the
    // offset store persists what it holds for assigned queues, as Java's does).
    assert_eq!(
        admin
            .query_offset(&broker.addr, group, topic, 0)
            .await
            .unwrap_or(0),
        0,
        "nothing consumed is committed before commit()"
    );
    consumer.commit().await.unwrap();
    assert_eq!(consumer.committed(&queues[0]).await.unwrap(), Some(10));
    assert_eq!(
        admin.query_offset(&broker.addr, group, topic, 0).await,
        Some(10)
    );

    // Seek back: the same messages again, from offset 4.
    consumer.seek(&queues[0], 4).await.unwrap();
    let again = poll_at_least(6).await;
    assert_eq!(
        again.iter().map(|m| m.queue_offset).collect::<Vec<_>>(),
        (4..10).collect::<Vec<_>>()
    );
    assert_eq!(&again[0].body[..], b"004");
    // Seek to the beginning, commit there: the broker's offset goes back too.
    consumer.seek_to_begin(&queues[0]).await.unwrap();
    let from_start = poll_at_least(10).await;
    assert_eq!(from_start[0].queue_offset, 0);
    consumer.seek(&queues[0], 3).await.unwrap();
    consumer.commit().await.unwrap();
    assert_eq!(
        admin.query_offset(&broker.addr, group, topic, 0).await,
        Some(3)
    );

    // Seek to the end: only what is sent afterwards.
    consumer.seek_to_end(&queues[0]).await.unwrap();
    producer
        .send(Message::new(topic, "after end"))
        .await
        .unwrap();
    let tail = poll_at_least(1).await;
    assert_eq!(tail.len(), 1);
    assert_eq!(&tail[0].body[..], b"after end");
    assert_eq!(tail[0].queue_offset, 10);

    // Pause: nothing is delivered until resume.
    consumer.pause(&queues);
    producer
        .send(Message::new(topic, "while paused"))
        .await
        .unwrap();
    assert!(consumer
        .poll(Duration::from_millis(500))
        .await
        .unwrap()
        .is_empty());
    consumer.resume(&queues);
    let after = poll_at_least(1).await;
    assert_eq!(&after[0].body[..], b"while paused");
    consumer.commit().await.unwrap();
    assert_eq!(
        admin.query_offset(&broker.addr, group, topic, 0).await,
        Some(12)
    );
    consumer.shutdown().await;
    producer.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_resumes_from_the_committed_offset() {
    let broker = Broker::start(BrokerOptions::default());
    let ns = broker.namesrv.clone();
    let (group, topic) = ("resume-group", "ResumeTopic");
    broker.create_topic(topic, 2).await;
    let admin = TestClient::default();
    let producer = producer(&ns).await;
    let (c, seen) = recording_consumer(
        consumer_config(&ns, group, "r"),
        topic,
        MessageSelector::by_tag("*"),
    )
    .await;
    send_all(&producer, topic, "first-", 10).await;
    wait_until("10 consumed", || seen.lock().unwrap().len() == 10).await;
    // Shutdown commits with an answered UPDATE_CONSUMER_OFFSET.
    c.shutdown().await;
    assert_eq!(committed(&admin, &broker, group, topic, 2).await, 10);
    send_all(&producer, topic, "second-", 5).await;

    // The broker restarts (clean shutdown writes consumerOffset.json) in between.
    producer.shutdown().await;
    let broker = broker.restart(false);
    assert_eq!(committed(&admin, &broker, group, topic, 2).await, 10);
    let (c, seen) = recording_consumer(
        consumer_config(&broker.namesrv, group, "r"),
        topic,
        MessageSelector::by_tag("*"),
    )
    .await;
    wait_until("5 new", || seen.lock().unwrap().len() >= 5).await;
    eventually("15 committed", || async {
        committed(&admin, &broker, group, topic, 2).await == 15
    })
    .await;
    let got = bodies(&seen);
    assert_eq!(
        got,
        (0..5).map(|i| format!("second-{i:03}")).collect::<Vec<_>>(),
        "resumed where the first run stopped"
    );
    c.shutdown().await;
}
