//! Every `mqadmin` verb takes `--json` and prints one JSON document with it: each is
//! run against running servers (a plain broker with clients online, an ACL 2.0
//! broker, an ACL 1.0 broker, a controller) and its output parsed. The list below is
//! checked against the command line itself, so a verb added without an entry here
//! fails this test.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use clap::CommandFactory;
use common::{eventually, start_broker, DEADLINE};
use tokio::sync::mpsc;
use vostok_client::{
    ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, ConsumeFromWhere, ConsumerConfig,
    Message, MessageExt, MessageListener, Producer, ProducerConfig, PushConsumer,
};
use vostok_controller::{Controller, ControllerConfig};
use vostok_remoting::protocol::header::ConsumerSendMsgBackRequestHeader;
use vostok_remoting::protocol::message::id::decode_offset_msg_id;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;
use vostok_tests::client::TestClient;
use vostok_tools::admin::args::Cli;

/// Which server a verb is run against, with which credentials.
#[derive(Clone, Copy, Debug)]
enum On {
    Plain,
    Acl2,
    Acl1,
}

/// Runs `mqadmin ARGS --json` and parses its output.
async fn run(
    namesrv: &str,
    args: &[String],
    credentials: Option<(&str, &str)>,
) -> serde_json::Value {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_mqadmin"));
    command
        .args(args)
        .arg("--json")
        .arg("-n")
        .arg(namesrv)
        .env_remove("NAMESRV_ADDR")
        .kill_on_drop(true);
    if let Some((ak, sk)) = credentials {
        command.args(["--access-key", ak, "--secret-key", sk]);
    }
    let out = tokio::time::timeout(DEADLINE, command.output())
        .await
        .unwrap_or_else(|_| panic!("mqadmin {args:?} did not finish"))
        .expect("mqadmin runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "mqadmin {args:?} --json failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("mqadmin {args:?} --json printed no JSON ({e}):\n{stdout}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_verb_prints_json() {
    // The plain broker, with a producer and a consumer online and a dead letter.
    let (plain, dir) = start_broker("json-plain", |_| {}).await;
    let ns = plain.namesrv_addr();
    let addr = plain.addr().to_string();
    let producer = Producer::new(ProducerConfig::new("JsonPG", &ns));
    producer.start().await.unwrap();
    let mut sent = Vec::new();
    for i in 0..4 {
        let r = producer
            .send(
                Message::new("JsonTopic", format!("body {i}"))
                    .with_tags("TagJ")
                    .with_keys(["json-key"]),
            )
            .await
            .expect("sent");
        sent.push(r);
    }
    let removable = producer
        .send(Message::new("JsonRemove", "remove me"))
        .await
        .expect("sent");
    let mut config = ConsumerConfig::new("JsonCG", &ns);
    config.common.consume_from_where = ConsumeFromWhere::ConsumeFromFirstOffset;
    let consumer = PushConsumer::new(config);
    consumer.subscribe("JsonTopic", "*").unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let tx = Arc::new(tx);
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            for _ in msgs {
                let _ = tx.send(());
            }
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer.start().await.unwrap();
    tokio::time::timeout(DEADLINE, rx.recv())
        .await
        .expect("consumed");
    let dead = &sent[0];
    let (_, offset) = decode_offset_msg_id(&dead.offset_msg_id).unwrap();
    let back = ConsumerSendMsgBackRequestHeader {
        offset,
        group: "JsonDeadCG".into(),
        delay_level: -1,
        origin_msg_id: None,
        origin_topic: None,
        unit_mode: None,
        max_reconsume_times: None,
    };
    let r = TestClient::default()
        .call(
            &addr,
            RemotingCommand::request_with_header(request_code::CONSUMER_SEND_MSG_BACK, &back),
        )
        .await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    // The dead letter is known by its unique id once the DLQ holds it.
    let dlq_id = dead.msg_id.clone();
    eventually("the dead letter stored", || async {
        let v = run(
            &ns,
            &["printMsg", "-t", "%DLQ%JsonDeadCG"].map(String::from),
            None,
        )
        .await;
        (v.to_string().contains(&dlq_id)).then_some(())
    })
    .await;
    let client_id = eventually("the consumer's client id", || async {
        let v = run(
            &ns,
            &["consumerConnection", "-g", "JsonCG"].map(String::from),
            None,
        )
        .await;
        v["connectionSet"][0]["clientId"]
            .as_str()
            .map(str::to_owned)
    })
    .await;

    // ACL 2.0 and ACL 1.0 brokers, and a controller.
    let (acl2, _d2) = start_broker("json-acl2", |c| {
        for (k, v) in [
            ("authenticationEnabled", "true"),
            ("authorizationEnabled", "true"),
            (
                "initAuthenticationUser",
                r#"{"username":"root-user","password":"root-secret"}"#,
            ),
        ] {
            c.apply_property(k, v).unwrap();
        }
    })
    .await;
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("conf")).unwrap();
    std::fs::write(
        home.path().join("conf/plain_acl.yml"),
        "accounts:\n  - accessKey: RocketMQAdmin\n    secretKey: admin-secret\n    admin: true\n",
    )
    .unwrap();
    let home_arg = home.path().display().to_string();
    let (acl1, _d1) = start_broker("json-acl1", |c| {
        c.apply_property("aclEnable", "true").unwrap();
        c.apply_property("rocketmqHome", &home_arg).unwrap();
    })
    .await;
    let ctrl_dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let ctrl = listener.local_addr().unwrap().to_string();
    let mut config = ControllerConfig {
        store_path: ctrl_dir.path().to_owned(),
        raft_heartbeat_interval: Duration::from_millis(100),
        raft_election_timeout: Duration::from_millis(400),
        ..ControllerConfig::default()
    };
    config
        .apply_property("controllerDLegerPeers", &format!("n0-{ctrl}"))
        .unwrap();
    let controller = Controller::start(config, listener).await.unwrap();

    let a2 = acl2.addr().to_string();
    let a1 = acl1.addr().to_string();
    let export = dir.path().join("export").display().to_string();
    let now = vostok_remoting::support::time::now_millis().to_string();
    let msg_id = sent[1].msg_id.clone();
    let offset_id = sent[1].offset_msg_id.clone();
    let (q_name, q_id) = (
        sent[1].message_queue.broker_name.clone(),
        sent[1].message_queue.queue_id.to_string(),
    );
    let rm_queue = removable.message_queue.queue_id.to_string();
    let rm_offset = removable.queue_offset.to_string();
    use On::*;
    // (verb, server, arguments), in an order where what a verb needs exists.
    let verbs: Vec<(&str, On, Vec<&str>)> = vec![
        ("clusterList", Plain, vec![]),
        ("topicList", Plain, vec![]),
        ("topicRoute", Plain, vec!["-t", "JsonTopic"]),
        ("topicStatus", Plain, vec!["-t", "JsonTopic"]),
        ("topicClusterList", Plain, vec!["-t", "JsonTopic"]),
        (
            "updateTopic",
            Plain,
            vec!["-t", "JsonGone", "-b", &addr, "-r", "1", "-w", "1"],
        ),
        (
            "updateTopicPerm",
            Plain,
            vec!["-t", "JsonGone", "-b", &addr, "-p", "4"],
        ),
        (
            "deleteTopic",
            Plain,
            vec!["-t", "JsonGone", "-c", "DefaultCluster"],
        ),
        (
            "updateOrderConf",
            Plain,
            vec!["-t", "JsonTopic", "-m", "put", "-v", "json-plain:4"],
        ),
        ("brokerStatus", Plain, vec!["-b", &addr]),
        ("brokerConsumeStats", Plain, vec!["-b", &addr]),
        ("consumerProgress", Plain, vec!["-g", "JsonCG"]),
        ("consumerConnection", Plain, vec!["-g", "JsonCG"]),
        ("consumerStatus", Plain, vec!["-g", "JsonCG"]),
        (
            "getConsumerStatus",
            Plain,
            vec!["-g", "JsonCG", "-t", "JsonTopic", "-i", &client_id],
        ),
        ("getConsumerConfig", Plain, vec!["-g", "JsonCG"]),
        (
            "setConsumeMode",
            Plain,
            vec!["-b", &addr, "-t", "JsonTopic", "-g", "JsonCG", "-m", "PULL"],
        ),
        (
            "cloneGroupOffset",
            Plain,
            vec!["-s", "JsonCG", "-d", "JsonCloneCG", "-t", "JsonTopic"],
        ),
        (
            "producerConnection",
            Plain,
            vec!["-g", "JsonPG", "-t", "JsonTopic"],
        ),
        (
            "updateSubGroup",
            Plain,
            vec!["-b", &addr, "-g", "JsonSubGroup"],
        ),
        (
            "deleteSubGroup",
            Plain,
            vec!["-b", &addr, "-g", "JsonSubGroup"],
        ),
        (
            "queryMsgByKey",
            Plain,
            vec!["-t", "JsonTopic", "-k", "json-key"],
        ),
        ("queryMsgById", Plain, vec!["-i", &offset_id]),
        (
            "queryMsgByUniqueKey",
            Plain,
            vec!["-t", "JsonTopic", "-i", &msg_id],
        ),
        (
            "queryMsgByOffset",
            Plain,
            vec!["-t", "JsonTopic", "-b", &q_name, "-i", &q_id, "-o", "0"],
        ),
        ("queryMsgTraceById", Plain, vec!["-i", &msg_id]),
        ("decodeMessageId", Plain, vec!["-i", &msg_id]),
        (
            "queryCq",
            Plain,
            vec!["-t", "JsonTopic", "-q", &q_id, "-i", "0"],
        ),
        ("printMsg", Plain, vec!["-t", "JsonTopic"]),
        (
            "printMsgByQueue",
            Plain,
            vec!["-t", "JsonTopic", "-a", &q_name, "-i", &q_id],
        ),
        ("consumeMessage", Plain, vec!["-t", "JsonTopic", "-c", "1"]),
        (
            "messageStatus",
            Plain,
            vec!["-t", "JsonTopic", "-i", &msg_id],
        ),
        ("browseMessage", Plain, vec!["-t", "JsonTopic"]),
        (
            "removeMessage",
            Plain,
            vec!["-t", "JsonRemove", "-q", &rm_queue, "-o", &rm_offset],
        ),
        (
            "resendDlqMessage",
            Plain,
            vec!["-g", "JsonDeadCG", "-i", &dlq_id],
        ),
        ("connectedClients", Plain, vec![]),
        ("statsAll", Plain, vec!["-t", "JsonTopic"]),
        ("allocateMQ", Plain, vec!["-t", "JsonTopic", "-i", "a,b"]),
        ("sendMessage", Plain, vec!["-t", "JsonTopic", "-p", "hello"]),
        ("sendMsgStatus", Plain, vec!["-b", "json-plain", "-c", "1"]),
        (
            "checkMsgSendRT",
            Plain,
            vec!["-t", "JsonTopic", "-a", "2", "-s", "16"],
        ),
        ("clusterRT", Plain, vec!["-a", "1"]),
        (
            "resetOffsetByTime",
            Plain,
            vec!["-g", "JsonIdleCG", "-t", "JsonTopic", "-s", &now],
        ),
        (
            "skipAccumulatedMessage",
            Plain,
            vec!["-g", "JsonIdleCG", "-t", "JsonTopic"],
        ),
        ("getBrokerConfig", Plain, vec!["-b", &addr]),
        (
            "updateBrokerConfig",
            Plain,
            vec!["-b", &addr, "-k", "brokerPermission", "-v", "6"],
        ),
        ("getNamesrvConfig", Plain, vec![]),
        (
            "updateNamesrvConfig",
            Plain,
            vec!["-k", "enableAllTopicList", "-v", "true"],
        ),
        (
            "updateKvConfig",
            Plain,
            vec!["-s", "JSON_NS", "-k", "k", "-v", "v"],
        ),
        ("deleteKvConfig", Plain, vec!["-s", "JSON_NS", "-k", "k"]),
        ("wipeWritePerm", Plain, vec!["-b", "json-plain"]),
        ("addWritePerm", Plain, vec!["-b", "json-plain"]),
        ("cleanExpiredCQ", Plain, vec!["-b", &addr]),
        ("cleanUnusedTopic", Plain, vec!["-b", &addr]),
        ("deleteExpiredCommitLog", Plain, vec!["-b", &addr]),
        ("haStatus", Plain, vec!["-b", &addr]),
        ("getBrokerEpoch", Plain, vec!["-b", "json-plain"]),
        (
            "resetMasterFlushOffset",
            Plain,
            vec!["-b", &addr, "-o", "0"],
        ),
        (
            "exportMetadata",
            Plain,
            vec!["-c", "DefaultCluster", "-f", &export],
        ),
        (
            "exportConfigs",
            Plain,
            vec!["-c", "DefaultCluster", "-f", &export],
        ),
        (
            "exportMetrics",
            Plain,
            vec!["-c", "DefaultCluster", "-f", &export],
        ),
        ("getControllerMetaData", Plain, vec!["-a", &ctrl]),
        ("getSyncStateSet", Plain, vec!["-a", &ctrl]),
        ("getControllerConfig", Plain, vec!["-a", &ctrl]),
        (
            "updateControllerConfig",
            Plain,
            vec!["-a", &ctrl, "-k", "notifyBrokerRoleChanged", "-v", "true"],
        ),
        (
            "createUser",
            Acl2,
            vec!["-b", &a2, "-u", "jsonuser", "-p", "json-secret"],
        ),
        (
            "updateUser",
            Acl2,
            vec!["-b", &a2, "-u", "jsonuser", "-s", "enable"],
        ),
        ("getUser", Acl2, vec!["-b", &a2, "-u", "jsonuser"]),
        ("listUser", Acl2, vec!["-b", &a2]),
        (
            "createAcl",
            Acl2,
            vec![
                "-b",
                &a2,
                "-s",
                "User:jsonuser",
                "-r",
                "Topic:j",
                "-a",
                "Pub",
                "-d",
                "Allow",
            ],
        ),
        (
            "updateAcl",
            Acl2,
            vec![
                "-b",
                &a2,
                "-s",
                "User:jsonuser",
                "-r",
                "Topic:k",
                "-a",
                "Sub",
                "-d",
                "Allow",
            ],
        ),
        ("getAcl", Acl2, vec!["-b", &a2, "-s", "User:jsonuser"]),
        ("listAcl", Acl2, vec!["-b", &a2]),
        (
            "copyUser",
            Acl2,
            vec!["-f", &a2, "-t", &a2, "-u", "jsonuser"],
        ),
        (
            "copyAcl",
            Acl2,
            vec!["-f", &a2, "-t", &a2, "-s", "User:jsonuser"],
        ),
        ("deleteAcl", Acl2, vec!["-b", &a2, "-s", "User:jsonuser"]),
        ("deleteUser", Acl2, vec!["-b", &a2, "-u", "jsonuser"]),
        (
            "updateAclConfig",
            Acl1,
            vec!["-b", &a1, "-a", "jsonaccount", "-s", "json-secret"],
        ),
        (
            "updateGlobalWhiteAddr",
            Acl1,
            vec!["-b", &a1, "-g", "10.1.1.1"],
        ),
        ("clusterAclConfigVersion", Acl1, vec!["-b", &a1]),
        (
            "deleteAclConfig",
            Acl1,
            vec!["-b", &a1, "-a", "jsonaccount"],
        ),
    ];
    // electMaster and cleanBrokerMetadata change a broker group the controller must
    // know first: mqadmin_controller.rs runs them with --json on a registered group.
    let elsewhere = ["electMaster", "cleanBrokerMetadata"];

    let listed: BTreeSet<&str> = verbs.iter().map(|(v, _, _)| *v).chain(elsewhere).collect();
    let all: BTreeSet<String> = Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect();
    let missing: Vec<&String> = all
        .iter()
        .filter(|v| !listed.contains(v.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "verbs this test does not run with --json: {missing:?}"
    );
    let unknown: Vec<&&str> = listed.iter().filter(|v| !all.contains(**v)).collect();
    assert!(unknown.is_empty(), "not verbs: {unknown:?}");

    for (verb, on, args) in &verbs {
        let mut full = vec![verb.to_string()];
        full.extend(args.iter().map(|a| a.to_string()));
        let (ns, credentials) = match on {
            Plain => (plain.namesrv_addr(), None),
            Acl2 => (acl2.namesrv_addr(), Some(("root-user", "root-secret"))),
            Acl1 => (acl1.namesrv_addr(), Some(("RocketMQAdmin", "admin-secret"))),
        };
        let v = run(&ns, &full, credentials).await;
        assert!(!v.is_null(), "{verb} printed null");
    }

    consumer.shutdown().await;
    producer.shutdown().await;
    controller.shutdown().await;
    acl1.shutdown().await;
    acl2.shutdown().await;
    plain.shutdown().await;
}
