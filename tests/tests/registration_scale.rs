//! A broker stays registered with its name server whatever clients do and however many
//! topics it holds: a heartbeat flood creating groups is refused at its bounds, a topic
//! table whose registration would pass the 16 MiB frame is registered in parts, and
//! neither keeps a restarted broker off the name server.

use std::collections::BTreeMap;
use std::time::Duration;

use vostok_remoting::protocol::body::{
    ConsumeFromWhere, ConsumeType, ConsumerData, DataVersion, HeartbeatData, MessageModel,
    RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper,
};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;
use vostok_tests::client::TestClient;
use vostok_tests::{Broker, BrokerOptions, Namesrv};

/// How long the name server may take to show what the broker registered.
const WAIT: Duration = Duration::from_secs(60);

/// A heartbeat of consumer groups named `<padding>_<tag>_<round>_<i>`, each about
/// 240 characters long (the longest a retry topic allows is 248).
fn flood_heartbeat(tag: &str, round: usize, groups: usize) -> RemotingCommand {
    let padding = "G".repeat(225);
    let heartbeat = HeartbeatData {
        client_id: "flood".into(),
        consumer_data_set: (0..groups)
            .map(|i| ConsumerData {
                consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
                consume_type: ConsumeType::ConsumePassively,
                group_name: format!("{padding}_{tag}_{round}_{i}"),
                message_model: MessageModel::Clustering,
                subscription_data_set: Vec::new(),
                unit_mode: false,
            })
            .collect(),
        ..Default::default()
    };
    RemotingCommand::request(request_code::HEART_BEAT).with_body(heartbeat.encode())
}

fn registrations(info: &BTreeMap<String, String>) -> u64 {
    info.get("nameServerRegistrations")
        .and_then(|v| v.parse().ok())
        .expect("nameServerRegistrations in the runtime info")
}

/// Waits until the name server routes `topic` to the broker.
async fn wait_routed(client: &TestClient, namesrv: &str, topic: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if client
            .route(namesrv, topic)
            .await
            .is_some_and(|r| !r.queue_datas.is_empty())
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{topic} not routed by the name server in time: the broker is not registered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heartbeat_flood_cannot_take_the_broker_off_its_name_server() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(BrokerOptions {
        namesrv: Some(namesrv.addr.clone()),
        ..BrokerOptions::default()
    });
    let client = TestClient::default();

    // 600 heartbeats on one connection, each naming 64 new groups.
    let flood = TestClient::new("flood");
    let mut refused = None;
    for round in 0..600 {
        let answer = flood
            .call(&broker.addr, flood_heartbeat("f", round, 64))
            .await;
        if answer.code != response_code::SUCCESS && refused.is_none() {
            refused = Some((round, answer.code, answer.remark().to_owned()));
        }
    }

    // The broker registers what changes after the flood...
    client.create_topic(&broker.addr, "AfterFlood", 2).await;
    wait_routed(&client, &namesrv.addr, "AfterFlood").await;
    // ... and after a restart on the flood's files.
    let broker = broker.restart(false);
    assert!(registrations(&client.runtime_info(&broker.addr).await) >= 1);
    wait_routed(&client, &namesrv.addr, "AfterFlood").await;

    // The flood was refused once its connection had its share of new groups.
    let (round, code, remark) = refused.expect("the flood is refused at some point");
    assert_eq!(
        code,
        response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
        "{remark}"
    );
    assert!(
        remark.contains("maxAutoCreateGroupNumPerClient=1000"),
        "{remark}"
    );
    assert_eq!(
        round,
        1000 / 64,
        "refused from the heartbeat that passes 1,000 groups"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_and_topics_are_bounded_per_client_and_in_total() {
    let broker = Broker::start(
        BrokerOptions::default()
            .set("maxAutoCreateGroupNumPerClient", 100)
            .set("maxSubscriptionGroupNum", 150)
            .set("maxAutoCreateTopicNumPerClient", 3),
    );
    let create = |tag: &'static str, rounds: usize| {
        let addr = broker.addr.clone();
        async move {
            let client = TestClient::new(tag);
            let mut answers = Vec::new();
            for round in 0..rounds {
                let answer = client.call(&addr, flood_heartbeat(tag, round, 40)).await;
                answers.push((answer.code, answer.remark().to_owned()));
            }
            (client, answers)
        }
    };
    let refused = response_code::SUBSCRIPTION_GROUP_NOT_EXIST;

    // One connection creates 100 groups (40 + 40 + 20), then is refused.
    let (first, answers) = create("first", 4).await;
    let codes: Vec<i32> = answers.iter().map(|(c, _)| *c).collect();
    assert_eq!(codes, [0, 0, refused, refused], "{answers:?}");
    assert!(answers[2].1.contains("maxAutoCreateGroupNumPerClient=100"));
    assert!(answers[2].1.contains("19 more groups"), "{}", answers[2].1);

    // Another connection has a share of its own, until the broker holds 150 groups
    // (its 11 system groups count).
    let (_, answers) = create("second", 2).await;
    let codes: Vec<i32> = answers.iter().map(|(c, _)| *c).collect();
    assert_eq!(codes, [refused, refused], "{answers:?}");
    assert!(
        answers[0].1.contains("maxSubscriptionGroupNum=150"),
        "{}",
        answers[0].1
    );
    let groups = || async {
        let all = first
            .call(
                &broker.addr,
                RemotingCommand::request(request_code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG),
            )
            .await;
        let table: serde_json::Value = serde_json::from_slice(&all.body).unwrap();
        table["subscriptionGroupTable"].as_object().unwrap().len()
    };
    assert_eq!(groups().await, 150);

    // An operator may still create groups; the clients keep the groups they are in.
    let group = serde_json::json!({ "groupName": "OperatorGroup" });
    let created = first
        .call(
            &broker.addr,
            RemotingCommand::request(request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
                .with_body(serde_json::to_vec(&group).unwrap()),
        )
        .await;
    assert_eq!(created.code, response_code::SUCCESS, "{}", created.remark());
    assert_eq!(groups().await, 151);
    let answer = first
        .call(&broker.addr, flood_heartbeat("first", 0, 40))
        .await;
    assert_eq!(answer.code, response_code::SUCCESS, "{}", answer.remark());

    // Sends create 3 topics per connection.
    let sender = TestClient::new("sender");
    let mut codes = Vec::new();
    for i in 0..4 {
        let answer = sender
            .send_raw(
                &broker.addr,
                &format!("AutoTopic{i}"),
                0,
                "m",
                TestClient::properties(None, None),
            )
            .await;
        codes.push(answer.code);
        if answer.code != response_code::SUCCESS {
            assert!(
                answer.remark().contains("maxAutoCreateTopicNumPerClient=3"),
                "{}",
                answer.remark()
            );
        }
    }
    assert_eq!(codes, [0, 0, 0, response_code::TOPIC_NOT_EXIST]);
}

/// `topics.json` of `n` topics with names of 127 characters.
fn big_topic_table(n: usize) -> TopicConfigSerializeWrapper {
    TopicConfigSerializeWrapper {
        data_version: DataVersion {
            counter: 1,
            state_version: 0,
            timestamp: 1_700_000_000_000,
        },
        topic_config_table: (0..n)
            .map(|i| {
                let name = format!("Topic{i:06}_{}", "t".repeat(115));
                (name.clone(), TopicConfig::new(name, 4))
            })
            .collect(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_table_past_the_frame_limit_is_registered_and_stays_registered() {
    let table = big_topic_table(50_000);
    let body = RegisterBrokerBody {
        filter_server_list: Vec::new(),
        topic_config_serialize_wrapper: table.clone(),
    };
    let size = body.encode().len();
    assert!(
        size > 16 << 20,
        "the plain registration body has {size} bytes"
    );

    let namesrv = Namesrv::start();
    let options = BrokerOptions {
        namesrv: Some(namesrv.addr.clone()),
        ..BrokerOptions::default()
    }
    // The shortest period RocketMQ allows: a second round comes within 10 s.
    .set("registerNameServerPeriod", 10_000);
    let broker = Broker::start(options).restart_with(false, |store| {
        let config = store.join("config");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            config.join("topics.json"),
            serde_json::to_vec(&table).unwrap(),
        )
        .unwrap();
    });
    let client = TestClient::default();
    let first = table.topic_config_table.keys().next().unwrap();
    let last = table.topic_config_table.keys().next_back().unwrap();
    for topic in [first, last] {
        wait_routed(&client, &namesrv.addr, topic).await;
    }
    let registered = registrations(&client.runtime_info(&broker.addr).await);
    assert!(registered >= 1);

    // Still registered in the next periodic round.
    let deadline = tokio::time::Instant::now() + WAIT;
    while registrations(&client.runtime_info(&broker.addr).await) <= registered {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no second registration round"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let topics = client
        .call(
            &namesrv.addr,
            RemotingCommand::request(request_code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
        )
        .await;
    let list: serde_json::Value = serde_json::from_slice(&topics.body).unwrap();
    let listed = list["topicList"].as_array().unwrap();
    assert!(listed.len() >= 50_000, "{} topics listed", listed.len());
}
