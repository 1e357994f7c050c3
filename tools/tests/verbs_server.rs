//! The verbs whose requests Vostok serves for them: `updateBrokerConfig`,
//! `updateNamesrvConfig`, `resetOffsetByTime` (clients online: the broker resets and
//! tells them; nobody online: the tool commits), `skipAccumulatedMessage`,
//! `consumerStatus`, `statsAll`, `cleanExpiredCQ`, `deleteExpiredCommitLog`, against a
//! real broker.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{eventually, json, mqadmin, ok, start_broker};
use tokio::sync::mpsc;
use vostok_client::{
    ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, ConsumeFromWhere, ConsumerConfig,
    Message, MessageExt, MessageListener, Producer, ProducerConfig, PushConsumer,
};
use vostok_remoting::protocol::header::QueryConsumerOffsetRequestHeader;
use vostok_remoting::protocol::request_code;
use vostok_remoting::{ClientConfig, RemotingClient, RemotingCommand};

/// The offset `group` committed on queue `queue_id` of `topic`, or -1.
async fn committed(addr: &str, group: &str, topic: &str, queue_id: i32) -> i64 {
    let header = QueryConsumerOffsetRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id,
        set_zero_if_not_found: Some(false),
    };
    let r = RemotingClient::new(ClientConfig::default(), None)
        .invoke_sync(
            addr,
            RemotingCommand::request_with_header(request_code::QUERY_CONSUMER_OFFSET, &header),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    r.ext_fields
        .get("offset")
        .and_then(|o| o.parse().ok())
        .unwrap_or(-1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_offset_and_housekeeping_verbs() {
    let (broker, _dir) = start_broker("verbs-s", |_| {}).await;
    let ns_owned = broker.namesrv_addr();
    let ns = ns_owned.as_str();
    let addr = broker.addr().to_string();
    ok(
        ns,
        &[
            "updateTopic",
            "-t",
            "SrvTopic",
            "-b",
            &addr,
            "-r",
            "1",
            "-w",
            "1",
        ],
    )
    .await;
    let producer = Producer::new(ProducerConfig::new("SrvPG", ns));
    producer.start().await.unwrap();
    for i in 0..3 {
        producer
            .send(Message::new("SrvTopic", format!("m{i}")))
            .await
            .expect("sent");
    }

    // updateBrokerConfig: brokerPermission 4 makes the broker read-only at once.
    let text = ok(
        ns,
        &[
            "updateBrokerConfig",
            "-b",
            &addr,
            "-k",
            "brokerPermission",
            "-v",
            "4",
        ],
    )
    .await;
    assert_eq!(text, format!("update broker config success, {addr}\n"));
    let v = json(ns, &["getBrokerConfig", "-b", &addr]).await;
    assert_eq!(v[addr.as_str()]["brokerPermission"], "4");
    assert!(
        producer
            .send(Message::new("SrvTopic", "refused"))
            .await
            .is_err(),
        "a read-only broker refuses sends"
    );
    eventually("route without write permission", || async {
        let out = mqadmin(ns, &["topicRoute", "-t", "SrvTopic"]).await;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        (v["queueDatas"][0]["perm"] == 4).then_some(())
    })
    .await;
    let v = json(
        ns,
        &[
            "updateBrokerConfig",
            "-c",
            "DefaultCluster",
            "-k",
            "brokerPermission",
            "-v",
            "6",
        ],
    )
    .await;
    assert_eq!(v[0], addr.as_str());
    eventually("route writable again", || async {
        let out = mqadmin(ns, &["topicRoute", "-t", "SrvTopic"]).await;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        (v["queueDatas"][0]["perm"] == 6).then_some(())
    })
    .await;
    let out = mqadmin(
        ns,
        &[
            "updateBrokerConfig",
            "-b",
            &addr,
            "-k",
            "listenPort",
            "-v",
            "1",
        ],
    )
    .await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("INVALID_PARAMETER") && stderr.contains("read at start only"),
        "{stderr}"
    );

    // updateNamesrvConfig: a run-time key changes what getNamesrvConfig reports and
    // what the name server does.
    let text = ok(
        ns,
        &[
            "updateNamesrvConfig",
            "-k",
            "enableAllTopicList",
            "-v",
            "false",
        ],
    )
    .await;
    assert_eq!(
        text,
        format!("update name server config success![{ns}]\nenableAllTopicList : false\n")
    );
    let v = json(ns, &["getNamesrvConfig"]).await;
    assert_eq!(v[ns]["enableAllTopicList"], "false");
    assert!(!mqadmin(ns, &["topicList"]).await.status.success());
    json(
        ns,
        &[
            "updateNamesrvConfig",
            "-k",
            "enableAllTopicList",
            "-v",
            "true",
        ],
    )
    .await;
    ok(ns, &["topicList"]).await;
    // Read at start only, or a key of the controller a name server may run: its
    // run-time keys change through updateControllerConfig, not this request.
    for key in ["listenPort", "enableElectUncleanMaster"] {
        let out = mqadmin(ns, &["updateNamesrvConfig", "-k", key, "-v", "1"]).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains("read at start only"),
            "{key}: {stderr}"
        );
    }

    // skipAccumulatedMessage with nobody online: the tool commits the queue's end.
    let v = json(
        ns,
        &["skipAccumulatedMessage", "-g", "SrvIdle", "-t", "SrvTopic"],
    )
    .await;
    assert_eq!(v[0]["offset"], 3, "{v}");
    assert_eq!(v[0]["by"], "tool");
    assert_eq!(committed(&addr, "SrvIdle", "SrvTopic", 0).await, 3);
    let text = ok(
        ns,
        &[
            "resetOffsetByTime",
            "-g",
            "SrvIdle",
            "-t",
            "SrvTopic",
            "-s",
            "0",
        ],
    )
    .await;
    assert!(text.starts_with("start reset consumer offset by specified, group[SrvIdle], topic[SrvTopic], force[true]"), "{text}");
    let row: Vec<&str> = text.lines().nth(2).unwrap().split_whitespace().collect();
    assert_eq!(row, ["verbs-s", "0", "0"], "{text}");
    assert_eq!(committed(&addr, "SrvIdle", "SrvTopic", 0).await, 0);

    // resetOffsetByTime with a consumer online: the broker resets and tells it, and it
    // consumes the messages again.
    let mut config = ConsumerConfig::new("SrvCG", ns);
    config.common.consume_from_where = ConsumeFromWhere::ConsumeFromFirstOffset;
    let consumer = PushConsumer::new(config);
    consumer.subscribe("SrvTopic", "*").unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let tx = Arc::new(tx);
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            for m in msgs {
                let _ = tx.send(String::from_utf8_lossy(&m.body).into_owned());
            }
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer.start().await.unwrap();
    let mut first = Vec::new();
    while first.len() < 3 {
        first.push(
            tokio::time::timeout(common::DEADLINE, rx.recv())
                .await
                .expect("consumed")
                .unwrap(),
        );
    }
    eventually("offsets committed", || async {
        (committed(&addr, "SrvCG", "SrvTopic", 0).await == 3).then_some(())
    })
    .await;
    let v = json(
        ns,
        &[
            "resetOffsetByTime",
            "-g",
            "SrvCG",
            "-t",
            "SrvTopic",
            "-s",
            "0",
        ],
    )
    .await;
    assert_eq!(v[0]["by"], "broker", "{v}");
    assert_eq!(v[0]["offset"], 0, "{v}");
    let mut again = Vec::new();
    while again.len() < 3 {
        again.push(
            tokio::time::timeout(common::DEADLINE, rx.recv())
                .await
                .expect("consumed again after the reset")
                .unwrap(),
        );
    }
    again.sort();
    assert_eq!(again, ["m0", "m1", "m2"]);

    // consumerStatus: the client describes itself through the broker.
    let client_id = consumer.instance().unwrap().client_id().to_owned();
    let text = ok(ns, &["consumerStatus", "-g", "SrvCG"]).await;
    let row: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..2], ["1", client_id.as_str()], "{text}");
    assert!(
        text.contains("Same subscription in the same group of consumer"),
        "{text}"
    );
    assert!(text.contains("Rebalance OK"), "{text}");
    let text = ok(ns, &["consumerStatus", "-g", "SrvCG", "-i", &client_id]).await;
    assert!(text.starts_with("#Consumer Properties#\n"), "{text}");
    assert!(
        text.contains(&format!("{:<40}: SrvCG", "consumerGroup")),
        "{text}"
    );
    assert!(text.contains("Topic: SrvTopic"), "{text}");
    let offsets = text.split("#Consumer Offset#").nth(1).expect("offsets");
    let row: Vec<&str> = offsets
        .lines()
        .find(|l| l.starts_with("SrvTopic "))
        .expect("the topic's queue")
        .split_whitespace()
        .collect();
    assert_eq!(row, ["SrvTopic", "verbs-s", "0", "3"], "{text}");
    let v = json(ns, &["consumerStatus", "-g", "SrvCG"]).await;
    assert_eq!(
        v[client_id.as_str()]["properties"]["consumerGroup"],
        "SrvCG"
    );
    assert!(
        !mqadmin(ns, &["consumerStatus", "-g", "SrvCG", "-i", "nobody@1"])
            .await
            .status
            .success()
    );
    consumer.shutdown().await;

    // statsAll: both groups of the topic with their backlog; the rates Vostok does not
    // keep print as "-".
    let text = ok(ns, &["statsAll", "-t", "SrvTopic"]).await;
    assert!(text.starts_with("#Topic "), "{text}");
    let idle: Vec<&str> = text
        .lines()
        .find(|l| l.contains(" SrvIdle "))
        .expect("SrvIdle row")
        .split_whitespace()
        .collect();
    assert_eq!(
        idle,
        ["SrvTopic", "SrvIdle", "3", "-", "-", "-", "-"],
        "{text}"
    );
    let v = json(ns, &["statsAll", "-t", "SrvTopic", "-a"]).await;
    let groups: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["consumerGroup"].as_str().unwrap())
        .collect();
    assert_eq!(groups, ["SrvCG", "SrvIdle"], "{v}");
    assert!(v[1]["inTps"].is_null(), "{v}");

    // Store housekeeping answers success.
    assert_eq!(ok(ns, &["cleanExpiredCQ", "-b", &addr]).await, "success\n");
    assert_eq!(
        ok(ns, &["deleteExpiredCommitLog", "-c", "DefaultCluster"]).await,
        "success\n"
    );
    let v = json(ns, &["cleanExpiredCQ"]).await;
    assert_eq!(v[0]["ok"], true);

    producer.shutdown().await;
    broker.shutdown().await;
}
