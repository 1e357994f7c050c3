//! The verbs that look into a broker and change its groups and topics, against a real
//! master (and its slave for replication): `brokerConsumeStats`, `getConsumerStatus`,
//! `queryCq`, `getConsumerConfig`, `setConsumeMode` (and the QUERY_ASSIGNMENT answer it
//! steers), `cloneGroupOffset`, `updateTopicPerm`, `topicClusterList`,
//! `updateOrderConf`, `cleanUnusedTopic`, `decodeMessageId`, `sendMsgStatus`,
//! `haStatus`, `resetMasterFlushOffset`, `getBrokerEpoch`, the export verbs and the
//! run-time keys of `updateBrokerConfig`, each in text and with `--json`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{eventually, fails, json, mqadmin, ok, start_broker};
use tokio::sync::mpsc;
use vostok_client::{
    ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, ConsumeFromWhere, ConsumerConfig,
    Message, MessageExt, MessageListener, Producer, ProducerConfig, PushConsumer,
};
use vostok_remoting::protocol::body::QueryAssignmentResponseBody;
use vostok_remoting::protocol::header::QueryConsumerOffsetRequestHeader;
use vostok_remoting::protocol::{json as wire_json, request_code};
use vostok_remoting::{ClientConfig, RemotingClient, RemotingCommand};

async fn ask(addr: &str, request: RemotingCommand) -> RemotingCommand {
    RemotingClient::new(ClientConfig::default(), None)
        .invoke_sync(addr, request, Duration::from_secs(5))
        .await
        .expect("answered")
}

/// The offset `group` committed on queue `queue_id` of `topic`, or -1.
async fn committed(addr: &str, group: &str, topic: &str, queue_id: i32) -> i64 {
    let header = QueryConsumerOffsetRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id,
        set_zero_if_not_found: Some(false),
    };
    let r = ask(
        addr,
        RemotingCommand::request_with_header(request_code::QUERY_CONSUMER_OFFSET, &header),
    )
    .await;
    r.ext_fields
        .get("offset")
        .and_then(|o| o.parse().ok())
        .unwrap_or(-1)
}

/// QUERY_ASSIGNMENT as a broker-balanced Java consumer sends it.
async fn assignment(addr: &str, client_id: &str) -> QueryAssignmentResponseBody {
    let body = serde_json::json!({
        "topic": "InspectTopic",
        "consumerGroup": "InspectCG",
        "clientId": client_id,
        "strategyName": "AVG",
        "messageModel": "CLUSTERING",
    });
    let r = ask(
        addr,
        RemotingCommand::request(request_code::QUERY_ASSIGNMENT).with_body(body.to_string()),
    )
    .await;
    assert_eq!(r.code, 0, "{:?}", r.remark());
    wire_json::from_slice("QueryAssignmentResponseBody", &r.body).expect("assignment body")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspection_and_group_verbs() {
    let (broker, dir) = start_broker("inspect-a", |_| {}).await;
    let ns_owned = broker.namesrv_addr();
    let ns = ns_owned.as_str();
    let addr = broker.addr().to_string();
    ok(
        ns,
        &[
            "updateTopic",
            "-t",
            "InspectTopic",
            "-b",
            &addr,
            "-r",
            "2",
            "-w",
            "2",
        ],
    )
    .await;
    let producer = Producer::new(ProducerConfig::new("InspectPG", ns));
    producer.start().await.unwrap();
    let mut sent_id = String::new();
    for i in 0..6 {
        let tag = if i % 2 == 0 { "A" } else { "B" };
        let r = producer
            .send(Message::new("InspectTopic", format!("m{i}")).with_tags(tag))
            .await
            .expect("sent");
        sent_id = r.msg_id;
    }

    // A consumer of tag A: it commits its offsets and answers status requests.
    let mut config = ConsumerConfig::new("InspectCG", ns);
    config.common.consume_from_where = ConsumeFromWhere::ConsumeFromFirstOffset;
    config.common.client.persist_consumer_offset_interval = Duration::from_millis(100);
    let consumer = PushConsumer::new(config);
    consumer.subscribe("InspectTopic", "A").unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let tx = Arc::new(tx);
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            for m in msgs {
                let _ = tx.send(m.queue_offset);
            }
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer.start().await.unwrap();
    for _ in 0..3 {
        tokio::time::timeout(common::DEADLINE, rx.recv())
            .await
            .expect("tag A consumed in time");
    }
    eventually("offsets committed", || async {
        let q0 = committed(&addr, "InspectCG", "InspectTopic", 0).await;
        let q1 = committed(&addr, "InspectCG", "InspectTopic", 1).await;
        (q0 + q1 == 6).then_some(())
    })
    .await;

    // brokerConsumeStats: the group's queues, nothing behind.
    let text = ok(ns, &["brokerConsumeStats", "-b", &addr]).await;
    assert!(text.starts_with("#Topic"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("InspectTopic") && l.contains("InspectCG")),
        "{text}"
    );
    assert!(text.contains("Diff Total: 0"), "{text}");
    let v = json(ns, &["brokerConsumeStats", "-b", &addr]).await;
    assert_eq!(v["brokerAddr"], addr.as_str());
    let ours: Vec<&serde_json::Value> = v["queues"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["group"] == "InspectCG" && q["topic"] == "InspectTopic")
        .collect();
    assert_eq!(ours.len(), 2, "{v}");
    assert!(ours
        .iter()
        .all(|q| q["diff"] == 0 && q["lastTimestamp"].as_i64() > Some(0)));
    let ordered = json(ns, &["brokerConsumeStats", "-b", &addr, "-o", "true"]).await;
    assert!(
        ordered["queues"]
            .as_array()
            .unwrap()
            .iter()
            .all(|q| q["topic"] != "InspectTopic"),
        "not an ordered topic: {ordered}"
    );

    // getConsumerStatus: the online consumer's own offsets.
    let v = json(
        ns,
        &["getConsumerStatus", "-g", "InspectCG", "-t", "InspectTopic"],
    )
    .await;
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{v}");
    let client_id = rows[0]["clientId"].as_str().unwrap().to_owned();
    let text = ok(
        ns,
        &["getConsumerStatus", "-g", "InspectCG", "-t", "InspectTopic"],
    )
    .await;
    assert!(
        text.starts_with("get consumer status from client. group=InspectCG, topic=InspectTopic"),
        "{text}"
    );
    assert!(text.contains(&client_id), "{text}");

    // queryCq: every entry of each queue, and which match the group's tag.
    let (mut entries, mut matched) = (0, 0);
    for queue in ["0", "1"] {
        let args = [
            "queryCq",
            "-t",
            "InspectTopic",
            "-q",
            queue,
            "-i",
            "0",
            "-c",
            "10",
            "-g",
            "InspectCG",
        ];
        let v = json(ns, &args).await;
        let data = v["queueData"].as_array().unwrap();
        assert_eq!(
            data.len() as i64,
            v["maxQueueIndex"].as_i64().unwrap(),
            "{v}"
        );
        assert_eq!(v["subscriptionData"]["subString"], "A");
        entries += data.len();
        matched += data.iter().filter(|e| e["eval"] == true).count();
    }
    assert_eq!((entries, matched), (6, 3), "tag A matches half");
    let text = ok(
        ns,
        &[
            "queryCq",
            "-t",
            "InspectTopic",
            "-q",
            "1",
            "-i",
            "1",
            "-c",
            "1",
        ],
    )
    .await;
    assert!(text.contains("Queue data: \nmax: "), "{text}");
    assert!(
        text.contains("idx: 1\nConsumeQueueData{physicOffset="),
        "{text}"
    );
    let e = fails(ns, &["queryCq", "-t", "InspectTopic", "-q", "9", "-i", "0"]).await;
    assert!(e.contains("9@InspectTopic is not exist"), "{e}");

    // getConsumerConfig: the group's settings on the broker, in Java's field order.
    let text = ok(ns, &["getConsumerConfig", "-g", "InspectCG"]).await;
    assert!(
        text.starts_with("=============================DefaultCluster:inspect-a="),
        "{text}"
    );
    assert!(
        text.contains("groupName                               =  InspectCG"),
        "{text}"
    );
    let v = json(ns, &["getConsumerConfig", "-g", "InspectCG"]).await;
    assert_eq!(v[0]["subscriptionGroupConfig"]["retryMaxTimes"], 16, "{v}");
    fails(ns, &["getConsumerConfig", "-g", "NoSuchGroup"]).await;

    // setConsumeMode steers what QUERY_ASSIGNMENT answers the group's consumers.
    let before = assignment(&addr, &client_id).await;
    let queues = before.message_queue_assignments.clone().expect("assigned");
    assert_eq!(queues.len(), 2, "pull mode, one consumer: both queues");
    let text = ok(
        ns,
        &[
            "setConsumeMode",
            "-b",
            &addr,
            "-t",
            "InspectTopic",
            "-g",
            "InspectCG",
            "-m",
            "POP",
        ],
    )
    .await;
    assert!(
        text.contains("consume mode[POP] popShareQueueNum[0]"),
        "{text}"
    );
    let pop = assignment(&addr, &client_id)
        .await
        .message_queue_assignments
        .expect("assigned");
    assert_eq!(pop.len(), 1, "{pop:?}");
    assert_eq!(
        (pop[0].message_queue.queue_id, pop[0].mode.name()),
        (-1, "POP")
    );
    json(
        ns,
        &[
            "setConsumeMode",
            "-c",
            "DefaultCluster",
            "-t",
            "InspectTopic",
            "-g",
            "InspectCG",
            "-m",
            "PULL",
        ],
    )
    .await;
    assert_eq!(
        assignment(&addr, &client_id)
            .await
            .message_queue_assignments,
        before.message_queue_assignments
    );
    let e = fails(
        ns,
        &[
            "setConsumeMode",
            "-b",
            &addr,
            "-t",
            "NoSuchTopic",
            "-g",
            "InspectCG",
            "-m",
            "POP",
        ],
    )
    .await;
    assert!(e.contains("TOPIC_NOT_EXIST"), "{e}");

    // cloneGroupOffset: another group starts where this one is.
    let v = json(
        ns,
        &[
            "cloneGroupOffset",
            "-s",
            "InspectCG",
            "-d",
            "CloneCG",
            "-t",
            "InspectTopic",
        ],
    )
    .await;
    assert_eq!(v.as_array().unwrap().len(), 2, "{v}");
    for q in 0..2 {
        assert_eq!(
            committed(&addr, "CloneCG", "InspectTopic", q).await,
            committed(&addr, "InspectCG", "InspectTopic", q).await
        );
    }
    consumer.shutdown().await;

    // updateTopicPerm: read-only on this broker, routes follow; the same again is a
    // no-op; back to read-write on the cluster.
    let text = ok(
        ns,
        &[
            "updateTopicPerm",
            "-t",
            "InspectTopic",
            "-b",
            &addr,
            "-p",
            "4",
        ],
    )
    .await;
    assert_eq!(
        text,
        format!("update topic perm from 6 to 4 in {addr} success.\n")
    );
    eventually("route read-only", || async {
        let v = json(ns, &["topicRoute", "-t", "InspectTopic"]).await;
        (v["queueDatas"][0]["perm"] == 4 && v["queueDatas"][0]["readQueueNums"] == 2).then_some(())
    })
    .await;
    let text = ok(
        ns,
        &[
            "updateTopicPerm",
            "-t",
            "InspectTopic",
            "-b",
            &addr,
            "-p",
            "4",
        ],
    )
    .await;
    assert!(
        text.starts_with("new perm equals to the old one!"),
        "{text}"
    );
    let v = json(
        ns,
        &[
            "updateTopicPerm",
            "-t",
            "InspectTopic",
            "-c",
            "DefaultCluster",
            "-p",
            "6",
        ],
    )
    .await;
    assert_eq!(
        (v[0]["oldPerm"].as_i64(), v[0]["changed"].as_bool()),
        (Some(4), Some(true))
    );
    fails(
        ns,
        &[
            "updateTopicPerm",
            "-t",
            "InspectTopic",
            "-b",
            &addr,
            "-p",
            "99",
        ],
    )
    .await;

    // topicClusterList.
    assert_eq!(
        ok(ns, &["topicClusterList", "-t", "InspectTopic"]).await,
        "DefaultCluster\n"
    );
    assert_eq!(
        json(ns, &["topicClusterList", "-t", "InspectTopic"]).await,
        serde_json::json!(["DefaultCluster"])
    );

    // updateOrderConf: put, get, delete in the name server's KV store.
    let conf = "inspect-a:2";
    ok(
        ns,
        &[
            "updateOrderConf",
            "-t",
            "InspectTopic",
            "-m",
            "put",
            "-v",
            conf,
        ],
    )
    .await;
    let text = ok(ns, &["updateOrderConf", "-t", "InspectTopic", "-m", "get"]).await;
    assert_eq!(
        text,
        "get orderConf success. topic=[InspectTopic], orderConf=[inspect-a:2]\n"
    );
    let v = json(
        ns,
        &["updateOrderConf", "-t", "InspectTopic", "-m", "delete"],
    )
    .await;
    assert_eq!(v["orderConf"], serde_json::Value::Null);
    let v = json(ns, &["updateOrderConf", "-t", "InspectTopic", "-m", "get"]).await;
    assert_eq!(v["orderConf"], serde_json::Value::Null);
    fails(
        ns,
        &[
            "updateOrderConf",
            "-t",
            "InspectTopic",
            "-m",
            "put",
            "-v",
            "x",
        ],
    )
    .await;

    // cleanUnusedTopic: topics the broker still has keep their queues.
    assert_eq!(
        ok(ns, &["cleanUnusedTopic", "-b", &addr]).await,
        "success\n"
    );
    let v = json(ns, &["cleanUnusedTopic", "-c", "DefaultCluster"]).await;
    assert_eq!(v[0]["ok"], true, "{v}");
    assert_eq!(
        broker
            .broker()
            .store()
            .max_offset_in_queue("InspectTopic", 0)
            + broker
                .broker()
                .store()
                .max_offset_in_queue("InspectTopic", 1),
        6
    );

    // decodeMessageId: the producer is this process, on this host.
    let v = json(ns, &["decodeMessageId", "-i", &sent_id]).await;
    assert_eq!(v["pid"], std::process::id() as u16 as u64, "{v}");
    let now = vostok_remoting::support::time::now_millis();
    assert!(
        (v["timestamp"].as_i64().unwrap() - now).abs() < 60_000,
        "{v}"
    );
    let text = ok(ns, &["DecodeMessageId", "-i", &sent_id]).await;
    assert!(
        text.starts_with("ip=") && text.contains("\ndate="),
        "{text}"
    );
    fails(ns, &["decodeMessageId", "-i", "nothex"]).await;

    // sendMsgStatus: sends to the broker's own topic, each with its round trip.
    let text = ok(
        ns,
        &["sendMsgStatus", "-b", "inspect-a", "-c", "3", "-s", "64"],
    )
    .await;
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.lines()
            .all(|l| l.starts_with("rt=") && l.contains("sendStatus=SEND_OK")),
        "{text}"
    );
    let v = json(ns, &["sendMsgStatus", "-b", "inspect-a", "-c", "2"]).await;
    assert_eq!(v[1]["sendStatus"], "SEND_OK", "{v}");

    // The export verbs write Apache's files.
    let export_dir = dir.path().join("export");
    let dir_arg = export_dir.display().to_string();
    let text = ok(
        ns,
        &["exportMetadata", "-c", "DefaultCluster", "-f", &dir_arg],
    )
    .await;
    let file = export_dir.join("metadata.json");
    assert_eq!(text, format!("export {} success\n", file.display()));
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(meta["topicConfigTable"]["InspectTopic"]["readQueueNums"], 2);
    assert!(
        meta["topicConfigTable"].get("TBW102").is_none(),
        "no system topic"
    );
    assert!(meta["subscriptionGroupTable"]["InspectCG"].is_object());
    assert!(meta["subscriptionGroupTable"]
        .get("TOOLS_CONSUMER")
        .is_none());
    let v = json(ns, &["exportMetadata", "-b", &addr, "-t", "-f", &dir_arg]).await;
    let topics: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(v["file"].as_str().unwrap()).unwrap())
            .unwrap();
    assert!(
        topics["topicConfigTable"]["InspectTopic"].is_object(),
        "{topics}"
    );
    ok(
        ns,
        &["exportConfigs", "-c", "DefaultCluster", "-f", &dir_arg],
    )
    .await;
    let configs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(export_dir.join("configs.json")).unwrap())
            .unwrap();
    assert_eq!(configs["clusterScale"]["masterBrokerSize"], 1);
    assert_eq!(
        configs["brokerConfigs"]["inspect-a"]["brokerName"],
        "inspect-a"
    );
    json(
        ns,
        &["exportMetrics", "-c", "DefaultCluster", "-f", &dir_arg],
    )
    .await;
    let metrics: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(export_dir.join("metrics.json")).unwrap())
            .unwrap();
    let quota = &metrics["evaluateReport"]["inspect-a"]["runtimeQuota"];
    assert!(quota["topicSize"].as_u64() >= Some(1), "{metrics}");
    assert!(metrics["totalData"]["totalTps"]["totalNormalInTps"].is_number());

    // updateBrokerConfig changes every run-time key, and GET_BROKER_CONFIG shows it.
    for (key, value) in [
        ("autoCreateTopicEnable", "false"),
        ("transactionCheckMax", "3"),
        ("shortPollingTimeMills", "250"),
    ] {
        ok(
            ns,
            &["updateBrokerConfig", "-b", &addr, "-k", key, "-v", value],
        )
        .await;
        let v = json(ns, &["getBrokerConfig", "-b", &addr]).await;
        assert_eq!(v[addr.as_str()][key], value, "{key}");
    }
    let refused = producer.send(Message::new("NeverCreatedTopic", "x")).await;
    assert!(refused.is_err(), "auto-creation is off now");
    ok(
        ns,
        &[
            "updateBrokerConfig",
            "-b",
            &addr,
            "-k",
            "autoCreateTopicEnable",
            "-v",
            "true",
        ],
    )
    .await;
    producer
        .send(Message::new("NowCreatedTopic", "x"))
        .await
        .expect("auto-created again");
    // A write-only broker refuses pulls at once.
    ok(
        ns,
        &[
            "updateBrokerConfig",
            "-b",
            &addr,
            "-k",
            "brokerPermission",
            "-v",
            "2",
        ],
    )
    .await;
    let e = fails(ns, &["consumeMessage", "-t", "InspectTopic", "-c", "1"]).await;
    assert!(e.contains("NO_PERMISSION"), "{e}");
    ok(
        ns,
        &[
            "updateBrokerConfig",
            "-b",
            &addr,
            "-k",
            "brokerPermission",
            "-v",
            "6",
        ],
    )
    .await;

    producer.shutdown().await;
    broker.shutdown().await;
}

/// `haStatus` of a master and its slave, `resetMasterFlushOffset` on the slave, and
/// `getBrokerEpoch`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replication_verbs() {
    let (master, _dir) = start_broker("inspect-ha", |_| {}).await;
    let ns_owned = master.namesrv_addr();
    let ns = ns_owned.as_str();
    let master_addr = master.addr().to_string();
    let slave_dir = tempfile::tempdir().expect("temp dir");
    let mut config = vostok_broker::BrokerConfig {
        broker_name: "inspect-ha".into(),
        broker_id: 1,
        broker_role: vostok_broker::BrokerRole::Slave,
        broker_ip1: "127.0.0.1".into(),
        broker_ip2: "127.0.0.1".into(),
        bind_address: "127.0.0.1".into(),
        listen_port: 0,
        fast_listen_enable: false,
        namesrv_addr: Some(ns.to_owned()),
        ..vostok_broker::BrokerConfig::default()
    };
    config.store.store_path_root_dir = slave_dir.path().join("store");
    config.store.mapped_file_size_commit_log = 16 * 1024 * 1024;
    config.grpc.grpc_server_port = 0;
    let slave = vostok_broker::Broker::start(config)
        .await
        .expect("slave starts");
    let slave_addr = slave.addr().to_string();
    let producer = Producer::new(ProducerConfig::new("InspectHaPG", ns));
    producer.start().await.unwrap();
    for i in 0..5 {
        producer
            .send(Message::new("InspectHaTopic", format!("m{i}")))
            .await
            .expect("sent");
    }
    producer.shutdown().await;

    let text = eventually("the slave in sync", || async {
        let text = ok(ns, &["haStatus", "-c", "DefaultCluster"]).await;
        (text.contains("#SlaveNum\t1") && text.contains("#InSyncSlaveNum\t1")).then_some(text)
    })
    .await;
    assert!(
        text.starts_with(&format!("\n#MasterAddr\t{master_addr}\n")),
        "{text}"
    );
    assert!(text.contains("#SlaveAddr"), "{text}");
    let v = json(ns, &["haStatus", "-b", &master_addr]).await;
    assert_eq!(v[0]["master"], true);
    assert_eq!(v[0]["haConnectionInfo"][0]["inSync"], true, "{v}");
    assert!(v[0]["haConnectionInfo"][0]["transferFromWhere"].as_i64() >= Some(0));

    let text = ok(ns, &["haStatus", "-b", &slave_addr]).await;
    assert!(text.contains("#MasterFlushOffset\t0"), "{text}");
    let text = ok(
        ns,
        &["resetMasterFlushOffset", "-b", &slave_addr, "-o", "1234"],
    )
    .await;
    assert_eq!(text, "reset master flush offset to 1234 success\n");
    let v = json(ns, &["haStatus", "-b", &slave_addr]).await;
    assert_eq!(v[0]["master"], false);
    assert_eq!(
        v[0]["haClientRuntimeInfo"]["masterFlushOffset"], 1234,
        "{v}"
    );
    assert_eq!(v[0]["haClientRuntimeInfo"]["isActivated"], true, "{v}");

    // getBrokerEpoch asks every broker of the group (no epochs outside controller mode).
    let v = json(ns, &["getBrokerEpoch", "-b", "inspect-ha"]).await;
    let addrs: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["brokerAddr"].as_str().unwrap())
        .collect();
    assert!(addrs.contains(&master_addr.as_str()) && addrs.contains(&slave_addr.as_str()));
    let text = ok(ns, &["getBrokerEpoch", "-c", "DefaultCluster"]).await;
    assert!(text.contains("\n#brokerName\tinspect-ha\n"), "{text}");

    let out = mqadmin(ns, &["haStatus"]).await;
    assert!(!out.status.success(), "-b or -c is required");
    slave.shutdown().await;
    master.shutdown().await;
}
