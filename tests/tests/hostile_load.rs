//! Hostile-but-fair load against a real broker process: requests that try to make the
//! broker do unbounded work are bounded or refused, and do not disturb anyone else.

use std::time::Duration;

use vostok_remoting::protocol::body::{
    ConsumeFromWhere, ConsumeType, ConsumerData, HeartbeatData, MessageModel,
};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;
use vostok_tests::client::TestClient;
use vostok_tests::{Broker, BrokerOptions};

/// How long one flooding call may wait.
const T: Duration = Duration::from_secs(10);

fn heartbeat(client_id: &str, groups: impl IntoIterator<Item = String>) -> RemotingCommand {
    let heartbeat = HeartbeatData {
        client_id: client_id.into(),
        consumer_data_set: groups
            .into_iter()
            .map(|group| ConsumerData {
                consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
                consume_type: ConsumeType::ConsumePassively,
                group_name: group,
                message_model: MessageModel::Clustering,
                subscription_data_set: Vec::new(),
                unit_mode: false,
            })
            .collect(),
        ..Default::default()
    };
    RemotingCommand::request(request_code::HEART_BEAT).with_body(heartbeat.encode())
}

fn groups(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}_{i}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heartbeat_creating_many_groups_is_bounded_and_written_once() {
    let broker = Broker::start(BrokerOptions::default());
    let client = TestClient::default();

    // Far too many groups in one heartbeat: refused, nothing created.
    let response = client
        .call(&broker.addr, heartbeat("flood", groups("huge", 2_000)))
        .await;
    assert_eq!(response.code, response_code::INVALID_PARAMETER);
    assert!(response.remark().contains("2000"), "{}", response.remark());

    // 200 new groups: created 64 per heartbeat, the client's next heartbeats finish it.
    let wanted = groups("many", 200);
    let mut answers = Vec::new();
    for _ in 0..10 {
        let response = client
            .call(&broker.addr, heartbeat("flood", wanted.clone()))
            .await;
        answers.push(response.code);
        if response.code == response_code::SUCCESS {
            break;
        }
        assert_eq!(response.code, response_code::SYSTEM_BUSY);
        assert!(response.remark().contains("64"), "{}", response.remark());
    }
    assert_eq!(
        answers,
        [
            response_code::SYSTEM_BUSY,
            response_code::SYSTEM_BUSY,
            response_code::SYSTEM_BUSY,
            response_code::SUCCESS
        ],
        "64 + 64 + 64 + 8"
    );
    let all = client
        .call(
            &broker.addr,
            RemotingCommand::request(request_code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG),
        )
        .await;
    let table = String::from_utf8_lossy(&all.body).into_owned();
    assert!(wanted.iter().all(|g| table.contains(&format!("\"{g}\""))));
    assert!(!table.contains("huge_0"));

    // The config writer puts every group (and retry topic) on disk without being asked.
    let file = broker
        .store_dir
        .join("config")
        .join("subscriptionGroup.json");
    let topics = broker.store_dir.join("config").join("topics.json");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let groups = std::fs::read_to_string(&file).unwrap_or_default();
        let topics = std::fs::read_to_string(&topics).unwrap_or_default();
        if wanted.iter().all(|g| {
            groups.contains(&format!("\"{g}\"")) && topics.contains(&format!("%RETRY%{g}"))
        }) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "groups not written to {}",
            file.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heartbeat_flood_does_not_disturb_routes_or_sends() {
    let broker = Broker::start(BrokerOptions::default());
    let client = std::sync::Arc::new(TestClient::default());
    client.create_topic(&broker.addr, "Steady", 2).await;
    client
        .wait_for_route(&broker.namesrv, "Steady", |r| !r.queue_datas.is_empty())
        .await;

    // Four connections each flood heartbeats creating groups as fast as they can, until
    // each has its share (docs/limits.md#groups-and-topics).
    let flood: Vec<_> = (0..4)
        .map(|task| {
            let client = std::sync::Arc::new(TestClient::new(&format!("flood{task}")));
            let addr = broker.addr.clone();
            tokio::spawn(async move {
                for round in 0..20 {
                    let names = groups(&format!("f{task}r{round}"), 500);
                    let code = client.call(&addr, heartbeat("flood", names)).await.code;
                    assert!(
                        [
                            response_code::SUCCESS,
                            response_code::SYSTEM_BUSY,
                            response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
                            response_code::INVALID_PARAMETER,
                        ]
                        .contains(&code),
                        "unexpected answer {code}"
                    );
                }
            })
        })
        .collect();

    // Meanwhile routes keep answering and sends keep being stored.
    for i in 0..50 {
        let route = client.route(&broker.namesrv, "Steady").await;
        assert!(route.is_some(), "route lost during the flood (round {i})");
        client
            .send(
                &broker.addr,
                "Steady",
                i % 2,
                format!("m{i}"),
                TestClient::properties(None, None),
            )
            .await;
    }
    for task in flood {
        task.await.expect("flood task");
    }
    client.wait_dispatched(&broker.addr).await;
    let mut stored = 0;
    for q in 0..2 {
        stored += client.max_offset(&broker.addr, "Steady", q).await;
    }
    assert_eq!(stored, 50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_topic_stays_deleted_after_kill9() {
    let broker = Broker::start(BrokerOptions::default());
    let client = TestClient::default();
    client.create_topic(&broker.addr, "Doomed", 1).await;
    for i in 0..5 {
        client
            .send(
                &broker.addr,
                "Doomed",
                0,
                format!("old-{i}"),
                TestClient::properties(None, None),
            )
            .await;
    }
    let header = vostok_remoting::protocol::header::TopicRequestHeader {
        topic: "Doomed".into(),
    };
    let deleted = client
        .call(
            &broker.addr,
            RemotingCommand::request_with_header(request_code::DELETE_TOPIC_IN_BROKER, &header),
        )
        .await;
    assert_eq!(deleted.code, response_code::SUCCESS, "{}", deleted.remark());

    // Killed right after the answer: the deletion was durable before it.
    let broker = broker.restart(true);
    let config = client
        .call(
            &broker.addr,
            RemotingCommand::request_with_header(request_code::GET_TOPIC_CONFIG, &header),
        )
        .await;
    assert_eq!(
        config.code,
        response_code::TOPIC_NOT_EXIST,
        "the topic stays deleted"
    );

    // Re-created with the same name: it starts empty.
    client.create_topic(&broker.addr, "Doomed", 1).await;
    assert!(client
        .drain(&broker.addr, "reader", "Doomed", 0, 0)
        .await
        .is_empty());
    let sent = client
        .send(
            &broker.addr,
            "Doomed",
            0,
            "new",
            TestClient::properties(None, None),
        )
        .await;
    assert_eq!(sent.queue_offset, 0);
    let got = client.drain(&broker.addr, "reader", "Doomed", 0, 0).await;
    assert_eq!(got.len(), 1);
    assert_eq!(&got[0].body[..], b"new");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_and_route_queries_go_on_during_a_flood() {
    let namesrv = vostok_tests::Namesrv::start();
    let broker = Broker::start(BrokerOptions {
        namesrv: Some(namesrv.addr.clone()),
        ..BrokerOptions::default()
    });
    let client = std::sync::Arc::new(TestClient::default());
    client.create_topic(&broker.addr, "Steady", 2).await;
    client
        .wait_for_route(&namesrv.addr, "Steady", |r| !r.queue_datas.is_empty())
        .await;
    let registered = |info: &std::collections::BTreeMap<String, String>| -> u64 {
        info.get("nameServerRegistrations")
            .and_then(|v| v.parse().ok())
            .expect("nameServerRegistrations in the runtime info")
    };
    let before = registered(&client.runtime_info(&broker.addr).await);

    // Until told to stop: heartbeats creating 64 groups each (and their %RETRY%
    // topics, each a reason to register), and pipelined full topic-table reads.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let rounds = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut flood = Vec::new();
    for task in 0..3 {
        let (stop, rounds) = (stop.clone(), rounds.clone());
        let client = TestClient::new(&format!("flood{task}"));
        let addr = broker.addr.clone();
        flood.push(tokio::spawn(async move {
            let mut round = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let names = groups(&format!("f{task}r{round}"), 64);
                let request = heartbeat("flood", names);
                // A flooding call may time out on a loaded machine: it is tried again.
                let Ok(answer) = client.remoting.invoke_sync(&addr, request, T).await else {
                    continue;
                };
                // Past its share of new groups a connection is refused; it goes on.
                assert!(
                    answer.code == response_code::SUCCESS
                        || answer.code == response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
                    "{}: {}",
                    answer.code,
                    answer.remark()
                );
                round += 1;
                if task == 0 {
                    rounds.store(round, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }));
    }
    for _ in 0..16 {
        let stop = stop.clone();
        let client = client.clone();
        let addr = broker.addr.clone();
        flood.push(tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let all = RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG);
                if let Ok(answer) = client.remoting.invoke_sync(&addr, all, T).await {
                    assert_eq!(answer.code, response_code::SUCCESS, "{}", answer.remark());
                }
            }
        }));
    }

    // While it runs: the route stays, and the groups created in its fifth round reach
    // the name server (the broker registered them).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while rounds.load(std::sync::atomic::Ordering::Relaxed) < 5 {
        assert!(tokio::time::Instant::now() < deadline, "the flood is stuck");
        assert!(client.route(&namesrv.addr, "Steady").await.is_some());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    loop {
        assert!(
            client.route(&namesrv.addr, "Steady").await.is_some(),
            "route lost during the flood"
        );
        if client
            .route(&namesrv.addr, "%RETRY%f0r4_0")
            .await
            .is_some_and(|r| !r.queue_datas.is_empty())
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no registration reached the name server during the flood"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        flood.iter().all(|t| !t.is_finished()),
        "observed while the flood ran"
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for task in flood {
        task.await.expect("flood task");
    }
    let after = registered(&client.runtime_info(&broker.addr).await);
    assert!(after > before, "registrations {before} -> {after}");
}
