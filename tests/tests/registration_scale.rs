//! A broker stays registered with its name server however many topics it holds: a
//! topic table whose registration would pass the 16 MiB frame is registered in parts.

use std::collections::BTreeMap;
use std::time::Duration;

use vostok_remoting::protocol::body::{
    DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper,
};
use vostok_remoting::protocol::request_code;
use vostok_remoting::RemotingCommand;
use vostok_tests::client::TestClient;
use vostok_tests::{Broker, BrokerOptions, Namesrv};

/// How long the name server may take to show what the broker registered.
const WAIT: Duration = Duration::from_secs(60);

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
