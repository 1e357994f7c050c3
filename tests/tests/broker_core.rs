//! Broker core against real processes, with a client built on the remoting layer only.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use vostok_remoting::protocol::message::property;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;
use vostok_tests::client::TestClient;
use vostok_tests::{Broker, BrokerOptions, Namesrv};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_messages_to_eight_queues_come_back_intact() {
    let broker = Broker::start(BrokerOptions::default());
    let client = TestClient::default();
    let topic = "CoreTopic";
    assert_eq!(
        client.create_topic(&broker.addr, topic, 8).await.code,
        response_code::SUCCESS
    );

    // Pipelined async sends: 10,000 messages, queue = i % 8, body and key carry i.
    let mut pending = Vec::new();
    for i in 0..10_000u32 {
        let props = TestClient::properties(
            Some(if i % 2 == 0 { "even" } else { "odd" }),
            Some(&format!("k{i}")),
        );
        let header = vostok_remoting::protocol::header::SendMessageRequestHeaderV2 {
            a: "pg".into(),
            b: topic.into(),
            c: "TBW102".into(),
            d: 8,
            e: (i % 8) as i32,
            f: 0,
            g: 1,
            h: 0,
            i: Some(props),
            ..Default::default()
        };
        let request = RemotingCommand::request_with_header(request_code::SEND_MESSAGE_V2, &header)
            .with_body(format!("message-{i}").into_bytes());
        pending.push(
            client
                .remoting
                .invoke_async(&broker.addr, request, Duration::from_secs(30))
                .await
                .unwrap(),
        );
    }
    let mut offsets_per_queue: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    for future in pending {
        let response = future.await.unwrap();
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{}",
            response.remark()
        );
        let header: vostok_remoting::protocol::header::SendMessageResponseHeader =
            response.decode_header().unwrap();
        offsets_per_queue
            .entry(header.queue_id)
            .or_default()
            .push(header.queue_offset);
    }
    for (queue, offsets) in &offsets_per_queue {
        let mut sorted = offsets.clone();
        sorted.sort();
        assert_eq!(
            sorted,
            (0..1250).collect::<Vec<i64>>(),
            "queue {queue} offsets are dense"
        );
    }

    let mut seen = HashSet::new();
    for queue in 0..8 {
        let messages = client.drain(&broker.addr, "cg", topic, queue, 0).await;
        assert_eq!(messages.len(), 1250, "queue {queue}");
        for (n, msg) in messages.iter().enumerate() {
            assert_eq!(msg.queue_offset, n as i64);
            assert_eq!(msg.queue_id, queue);
            let body = String::from_utf8(msg.body.to_vec()).unwrap();
            let i: u32 = body.strip_prefix("message-").unwrap().parse().unwrap();
            assert_eq!(i % 8, queue as u32);
            assert_eq!(msg.property(property::KEYS), Some(format!("k{i}").as_str()));
            assert_eq!(msg.tags(), Some(if i % 2 == 0 { "even" } else { "odd" }));
            assert_eq!(msg.property(property::CLUSTER), Some("DefaultCluster"));
            assert!(msg
                .property(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
                .is_some());
            assert_eq!(msg.store_host.to_string(), broker.addr);
            assert!(seen.insert(i), "message {i} twice");
        }
    }
    assert_eq!(seen.len(), 10_000);

    // Tag filtering on the broker.
    let pulled = client
        .pull(&broker.addr, "cg2", topic, 0, 0, 32, None, "odd")
        .await;
    assert!(pulled.messages.iter().all(|m| m.tags() == Some("odd")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_polling_answers_as_soon_as_a_message_arrives() {
    let broker = Broker::start(BrokerOptions::default());
    let client = std::sync::Arc::new(TestClient::default());
    let topic = "LongPollTopic";
    client.create_topic(&broker.addr, topic, 1).await;
    for round in 0..5 {
        let offset = client.max_offset(&broker.addr, topic, 0).await;
        let puller = {
            let client = client.clone();
            let addr = broker.addr.clone();
            tokio::spawn(async move {
                let pulled = client
                    .pull(
                        &addr,
                        "lp",
                        topic,
                        0,
                        offset,
                        32,
                        Some(Duration::from_secs(15)),
                        "*",
                    )
                    .await;
                (pulled, Instant::now())
            })
        };
        // Give the pull time to be held, then send.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !puller.is_finished(),
            "the pull is held while the queue is empty"
        );
        let sent_at = Instant::now();
        client
            .send(
                &broker.addr,
                topic,
                0,
                format!("wake-{round}"),
                TestClient::properties(None, None),
            )
            .await;
        let (pulled, answered_at) = tokio::time::timeout(Duration::from_secs(10), puller)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(pulled.code, response_code::SUCCESS);
        assert_eq!(
            &pulled.messages[0].body[..],
            format!("wake-{round}").as_bytes()
        );
        // Woken by the arrival: the pull asked to be held for 15 s, and the 10 s bound
        // above would have failed had it waited out its hold. How fast the wake-up is
        // belongs to the benchmarks, not to a test on a shared machine.
        assert!(answered_at >= sent_at);
    }
    // A held pull with nothing arriving answers PULL_NOT_FOUND after its suspend time.
    let offset = client.max_offset(&broker.addr, topic, 0).await;
    let started = Instant::now();
    let pulled = client
        .pull(
            &broker.addr,
            "lp",
            topic,
            0,
            offset,
            32,
            Some(Duration::from_millis(500)),
            "*",
        )
        .await;
    assert_eq!(pulled.code, response_code::PULL_NOT_FOUND);
    assert!(started.elapsed() >= Duration::from_millis(450));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_survive_a_restart() {
    let broker = Broker::start(BrokerOptions::default());
    let client = TestClient::default();
    client.create_topic(&broker.addr, "OffsetTopic", 4).await;
    for q in 0..4 {
        assert_eq!(
            client
                .update_offset(&broker.addr, "og", "OffsetTopic", q, 10 + q as i64)
                .await
                .code,
            response_code::SUCCESS
        );
    }
    assert_eq!(
        client
            .query_offset(&broker.addr, "og", "OffsetTopic", 2)
            .await,
        Some(12)
    );
    let broker = broker.restart(false);
    let client = TestClient::default();
    for q in 0..4 {
        assert_eq!(
            client
                .query_offset(&broker.addr, "og", "OffsetTopic", q)
                .await,
            Some(10 + q as i64)
        );
    }
    assert_eq!(
        client
            .query_offset(&broker.addr, "other", "OffsetTopic", 0)
            .await,
        None
    );
    let file =
        std::fs::read_to_string(broker.store_dir.join("config/consumerOffset.json")).unwrap();
    assert!(file.contains("OffsetTopic@og"), "RocketMQ's layout: {file}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_appear_in_routes_and_two_brokers_serve_one_topic() {
    let namesrv = Namesrv::start();
    let options = |name: &str| BrokerOptions {
        namesrv: Some(namesrv.addr.clone()),
        broker_name: name.to_owned(),
        ..Default::default()
    };
    let a = Broker::start(options("broker-a"));
    let b = Broker::start(options("broker-b"));
    let client = TestClient::default();

    // Explicitly created on both brokers.
    for broker in [&a, &b] {
        assert_eq!(
            client.create_topic(&broker.addr, "Shared", 4).await.code,
            response_code::SUCCESS
        );
    }
    let route = client
        .wait_for_route(&namesrv.addr, "Shared", |r| r.queue_datas.len() == 2)
        .await;
    let mut names: Vec<_> = route
        .broker_datas
        .iter()
        .map(|b| b.broker_name.clone())
        .collect();
    names.sort();
    assert_eq!(names, ["broker-a", "broker-b"]);
    assert!(route
        .broker_datas
        .iter()
        .all(|b| b.cluster == "DefaultCluster"));

    // Auto-created on first send.
    client
        .send(
            &a.addr,
            "AutoCreated",
            -1,
            "x",
            TestClient::properties(None, None),
        )
        .await;
    let route = client
        .wait_for_route(&namesrv.addr, "AutoCreated", |r| !r.queue_datas.is_empty())
        .await;
    assert_eq!(route.queue_datas[0].broker_name, "broker-a");
    assert_eq!(route.queue_datas[0].write_queue_nums, 8);

    // Both brokers serve "Shared".
    for broker in [&a, &b] {
        client
            .send(
                &broker.addr,
                "Shared",
                1,
                broker.addr.clone(),
                TestClient::properties(None, None),
            )
            .await;
        let got = client.drain(&broker.addr, "g", "Shared", 1, 0).await;
        assert_eq!(got.len(), 1);
        assert_eq!(&got[0].body[..], broker.addr.as_bytes());
    }
    // A broker that goes away leaves the route at once (its connection closed).
    let mut b = b;
    b.kill9();
    client
        .wait_for_route(&namesrv.addr, "Shared", |r| r.queue_datas.len() == 1)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_broker_registers_its_topics_read_only() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        BrokerOptions {
            namesrv: Some(namesrv.addr.clone()),
            ..Default::default()
        }
        .set("brokerPermission", 4),
    );
    let client = TestClient::default();
    assert_eq!(
        client.create_topic(&broker.addr, "Draining", 2).await.code,
        response_code::SUCCESS
    );
    let route = client
        .wait_for_route(&namesrv.addr, "Draining", |r| !r.queue_datas.is_empty())
        .await;
    assert_eq!(
        route.queue_datas[0].perm, 4,
        "a read-only broker's topics are routed read-only"
    );
    // The broker's own table keeps the topic's permission.
    let all = client
        .call(
            &broker.addr,
            RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG),
        )
        .await;
    let table: vostok_remoting::protocol::body::TopicConfigSerializeWrapper =
        vostok_remoting::protocol::json::from_slice("topics", &all.body).unwrap();
    assert_eq!(table.topic_config_table["Draining"].perm, 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_error_codes_and_harms_nothing() {
    let broker = Broker::start(BrokerOptions::default().set("maxMessageSize", 1024));
    let client = TestClient::default();
    client
        .send(
            &broker.addr,
            "Good",
            0,
            "kept",
            TestClient::properties(None, None),
        )
        .await;

    // Missing header field.
    let mut request = RemotingCommand::request(request_code::SEND_MESSAGE_V2);
    request.ext_fields.insert("a", "pg");
    let response = client.call(&broker.addr, request).await;
    assert_eq!(response.code, response_code::INVALID_PARAMETER);
    assert!(
        response.remark().contains("`b`"),
        "names the field: {}",
        response.remark()
    );

    // Malformed number.
    let mut request = RemotingCommand::request(request_code::GET_MAX_OFFSET);
    request.ext_fields.insert("topic", "Good");
    request.ext_fields.insert("queueId", "zero");
    let response = client.call(&broker.addr, request).await;
    assert_eq!(response.code, response_code::INVALID_PARAMETER);
    assert!(
        response.remark().contains("queueId"),
        "{}",
        response.remark()
    );

    // Illegal topic name, oversize body, oversize properties, forbidden system topic.
    let response = client
        .send_raw(&broker.addr, "bad topic!", 0, "x", String::new())
        .await;
    assert_eq!(response.code, response_code::INVALID_PARAMETER);
    let response = client
        .send_raw(&broker.addr, "Good", 0, vec![0u8; 2048], String::new())
        .await;
    assert_eq!(response.code, response_code::MESSAGE_ILLEGAL);
    let mut huge = String::new();
    property::push_pair(&mut huge, "big", &"v".repeat(40_000));
    let response = client.send_raw(&broker.addr, "Good", 0, "x", huge).await;
    assert_eq!(response.code, response_code::MESSAGE_ILLEGAL);
    let response = client
        .send_raw(&broker.addr, "SCHEDULE_TOPIC_XXXX", 0, "x", String::new())
        .await;
    assert_eq!(response.code, response_code::NO_PERMISSION);
    let response = client
        .send_raw(&broker.addr, "Good", 99, "x", String::new())
        .await;
    assert_ne!(
        response.code,
        response_code::SUCCESS,
        "queue id out of range"
    );

    // Bad bodies.
    let request = RemotingCommand::request(request_code::HEART_BEAT).with_body(&b"{not json"[..]);
    assert_eq!(
        client.call(&broker.addr, request).await.code,
        response_code::SYSTEM_ERROR
    );
    let request = RemotingCommand::request_with_header(
        request_code::SEND_BATCH_MESSAGE,
        &vostok_remoting::protocol::header::SendMessageRequestHeaderV2 {
            a: "pg".into(),
            b: "Good".into(),
            c: "TBW102".into(),
            d: 4,
            e: 0,
            m: Some(true),
            ..Default::default()
        },
    )
    .with_body(&[0u8, 0, 0, 99, 1, 2][..]);
    assert_eq!(
        client.call(&broker.addr, request).await.code,
        response_code::MESSAGE_ILLEGAL
    );

    // Nothing was disturbed.
    let got = client.drain(&broker.addr, "g", "Good", 0, 0).await;
    assert_eq!(got.len(), 1);
    assert_eq!(&got[0].body[..], b"kept");

    // A property string without its trailing separator, with an empty name and a
    // repeated key: stored normalised, and the UNIQ_KEY the broker added is the one it
    // answered, not glued onto the last value.
    let sent = client
        .send(
            &broker.addr,
            "Good",
            1,
            "odd properties",
            "k\u{1}first\u{2}\u{1}nameless\u{2}k\u{1}v".to_owned(),
        )
        .await;
    let got = client.drain(&broker.addr, "g", "Good", 1, 0).await;
    assert_eq!(got.len(), 1);
    let stored = &got[0];
    assert_eq!(stored.property("k"), Some("v"), "the later duplicate wins");
    assert_eq!(
        stored.properties.uniq_key(),
        sent.transaction_id.as_deref(),
        "the stored UNIQ_KEY is the one the client was told"
    );
    assert_eq!(
        stored.properties.as_str().matches('\u{1}').count(),
        stored.properties.len(),
        "every pair well formed: {:?}",
        stored.properties
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_of_a_sync_flush_broker_loses_no_acknowledged_message() {
    let broker = Broker::start(BrokerOptions::default().set("flushDiskType", "SYNC_FLUSH"));
    let client = std::sync::Arc::new(TestClient::default());
    client.create_topic(&broker.addr, "Durable", 4).await;

    // Several senders stream until the broker dies; every acknowledged id is recorded.
    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(i32, String)>::new()));
    let mut senders = Vec::new();
    for task in 0..4 {
        let client = client.clone();
        let acked = acked.clone();
        let addr = broker.addr.clone();
        senders.push(tokio::spawn(async move {
            for i in 0.. {
                let body = format!("t{task}-m{i}");
                let props = TestClient::properties(None, None);
                let header = vostok_remoting::protocol::header::SendMessageRequestHeaderV2 {
                    a: "pg".into(),
                    b: "Durable".into(),
                    c: "TBW102".into(),
                    d: 4,
                    e: task,
                    i: Some(props),
                    ..Default::default()
                };
                let request =
                    RemotingCommand::request_with_header(request_code::SEND_MESSAGE_V2, &header)
                        .with_body(body.clone().into_bytes());
                match client
                    .remoting
                    .invoke_sync(&addr, request, Duration::from_secs(5))
                    .await
                {
                    Ok(r) if r.code == response_code::SUCCESS => {
                        acked.lock().unwrap().push((task, body))
                    }
                    _ => break,
                }
            }
        }));
    }
    while acked.lock().unwrap().len() < 2000 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut broker = broker;
    broker.kill9();
    for s in senders {
        let _ = tokio::time::timeout(Duration::from_secs(10), s).await;
    }
    let acked = acked.lock().unwrap().clone();
    let broker = broker.restart(false);
    let client = TestClient::default();
    for task in 0..4 {
        let stored = client
            .drain(&broker.addr, "verify", "Durable", task, 0)
            .await;
        let bodies: Vec<String> = stored
            .iter()
            .map(|m| String::from_utf8(m.body.to_vec()).unwrap())
            .collect();
        let unique: HashSet<&String> = bodies.iter().collect();
        assert_eq!(unique.len(), bodies.len(), "queue {task} holds duplicates");
        for (t, body) in acked.iter().filter(|(t, _)| *t == task) {
            assert!(
                unique.contains(body),
                "acknowledged {body} of task {t} lost"
            );
        }
    }
}

fn runtime_info(body: &[u8]) -> std::collections::BTreeMap<String, String> {
    let table: vostok_remoting::protocol::body::KvTable = serde_json::from_slice(body).unwrap();
    table.table
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_pull_is_released_when_its_connection_closes() {
    let broker = Broker::start(BrokerOptions::default());
    let admin = TestClient::default();
    admin.create_topic(&broker.addr, "HeldTopic", 1).await;
    async fn held(admin: &TestClient, addr: &str) -> usize {
        let request = RemotingCommand::request(request_code::GET_BROKER_RUNTIME_INFO);
        let r = admin.call(addr, request).await;
        runtime_info(&r.body)["pullRequestsHeld"]
            .parse::<usize>()
            .unwrap()
    }
    {
        // A pull asking to be held "forever", from a client that then disconnects.
        let puller = std::sync::Arc::new(TestClient::default());
        let p = puller.clone();
        let addr = broker.addr.clone();
        let pull = tokio::spawn(async move {
            let _ = p
                .pull(
                    &addr,
                    "g",
                    "HeldTopic",
                    0,
                    0,
                    1,
                    Some(Duration::from_millis(i64::MAX as u64)),
                    "*",
                )
                .await;
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while held(&admin, &broker.addr).await != 1 {
            assert!(Instant::now() < deadline, "the pull was not held");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        pull.abort();
        puller.remoting.shutdown().await;
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while held(&admin, &broker.addr).await != 0 {
        assert!(
            Instant::now() < deadline,
            "a held pull outlived its connection"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn illegal_consumer_groups_are_refused() {
    let broker = Broker::start(BrokerOptions::default());
    let client = TestClient::default();
    client.create_topic(&broker.addr, "G", 1).await;
    let bad = "../bad group/".to_owned() + &"x".repeat(300);
    // A heartbeat for it registers nothing and creates no retry topic.
    assert_eq!(
        client
            .heartbeat_consumer(&broker.addr, &bad, "G", "*")
            .await
            .code,
        response_code::SUCCESS
    );
    let all = client
        .call(
            &broker.addr,
            RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG),
        )
        .await;
    assert!(!String::from_utf8_lossy(&all.body).contains("bad group"));
    let response = client.update_offset(&broker.addr, &bad, "G", 0, 1).await;
    assert_eq!(response.code, response_code::SUBSCRIPTION_GROUP_NOT_EXIST);
    let pulled = client
        .pull(&broker.addr, &bad, "G", 0, 0, 1, None, "*")
        .await;
    assert_eq!(pulled.code, response_code::SUBSCRIPTION_GROUP_NOT_EXIST);
}
