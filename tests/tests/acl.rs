//! ACL 1.0 on a real broker (docs/security.md#plain-acl): every row of the request
//! table allowed and refused, admin-only codes, unsigned, wrongly signed and unknown-key
//! requests, a refused oneway request, and hot reload of plain_acl.yml.

use std::time::{Duration, Instant};

use vostok_client::ConsumeFromWhere;
use vostok_remoting::protocol::body::{ConsumeType, ConsumerData, HeartbeatData, MessageModel};
use vostok_remoting::protocol::filter::build_subscription;
use vostok_remoting::protocol::{request_code as code, response_code};
use vostok_remoting::{RemotingClient, RemotingCommand};
use vostok_tests::acl::{call, home, request, send_v2, signed_client, T};
use vostok_tests::{Broker, BrokerOptions};

const ACL: &str = r#"
accounts:
  - accessKey: producer1
    secretKey: producer-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - TopicP=PUB
      - TopicS=SUB
    groupPerms:
      - GroupOk=SUB
  - accessKey: admin-account
    secretKey: admin-secret
    admin: true
"#;

fn heartbeat(group: &str, topic: &str) -> RemotingCommand {
    let data = HeartbeatData {
        client_id: "127.0.0.1@acl-test".into(),
        consumer_data_set: vec![ConsumerData {
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            consume_type: ConsumeType::ConsumePassively,
            group_name: group.into(),
            message_model: MessageModel::Clustering,
            subscription_data_set: vec![build_subscription(topic, "*", 1)],
            unit_mode: false,
        }],
        ..Default::default()
    };
    RemotingCommand::request(code::HEART_BEAT).with_body(data.encode())
}

/// `(what, allowed request, refused request, what the refusal must name)`. The rows
/// that point at a stored message (send-back, END_TRANSACTION, VIEW_MESSAGE_BY_ID) are
/// in acl_stored_messages.rs.
fn rows() -> Vec<(&'static str, RemotingCommand, RemotingCommand, &'static str)> {
    let send = |c: i32, key: &str, topic: &str| {
        request(
            c,
            &[
                ("a", "PG"),
                ("producerGroup", "PG"),
                (key, topic),
                ("topic", topic),
                ("e", "0"),
                ("queueId", "0"),
            ],
        )
    };
    let pull = |topic: &str, group: &str| {
        request(
            code::PULL_MESSAGE,
            &[
                ("consumerGroup", group),
                ("topic", topic),
                ("queueId", "0"),
                ("queueOffset", "0"),
                ("maxMsgNums", "1"),
                ("sysFlag", "0"),
                ("commitOffset", "0"),
                ("suspendTimeoutMillis", "0"),
                ("subVersion", "0"),
            ],
        )
    };
    let offset = |group: &str, topic: &str| {
        request(
            code::UPDATE_CONSUMER_OFFSET,
            &[
                ("consumerGroup", group),
                ("topic", topic),
                ("queueId", "0"),
                ("commitOffset", "1"),
            ],
        )
    };
    vec![
        (
            "SEND_MESSAGE",
            send(code::SEND_MESSAGE, "topic", "TopicP"),
            send(code::SEND_MESSAGE, "topic", "TopicS"),
            "no PUB permission on topic TopicS",
        ),
        (
            "SEND_MESSAGE_V2",
            send(code::SEND_MESSAGE_V2, "b", "TopicP"),
            send(code::SEND_MESSAGE_V2, "b", "TopicS"),
            "no PUB permission on topic TopicS",
        ),
        (
            "SEND_BATCH_MESSAGE",
            send(code::SEND_BATCH_MESSAGE, "b", "TopicP"),
            send(code::SEND_BATCH_MESSAGE, "b", "Other"),
            "no PUB permission on topic Other",
        ),
        (
            "send to a retry topic",
            send(code::SEND_MESSAGE_V2, "b", "%RETRY%GroupOk"),
            send(code::SEND_MESSAGE_V2, "b", "%RETRY%GroupNo"),
            "no SUB permission on group GroupNo",
        ),
        (
            "RECALL_MESSAGE",
            request(code::RECALL_MESSAGE, &[("topic", "TopicP")]),
            request(code::RECALL_MESSAGE, &[("topic", "TopicS")]),
            "no PUB permission on topic TopicS",
        ),
        (
            "PULL_MESSAGE topic",
            pull("TopicS", "GroupOk"),
            pull("TopicP", "GroupOk"),
            "no SUB permission on topic TopicP",
        ),
        (
            "PULL_MESSAGE group",
            pull("TopicS", "GroupOk"),
            pull("TopicS", "GroupNo"),
            "no SUB permission on group GroupNo",
        ),
        (
            "QUERY_MESSAGE",
            request(
                code::QUERY_MESSAGE,
                &[
                    ("topic", "TopicS"),
                    ("key", "k"),
                    ("maxNum", "1"),
                    ("beginTimestamp", "0"),
                    ("endTimestamp", "1"),
                ],
            ),
            request(
                code::QUERY_MESSAGE,
                &[
                    ("topic", "TopicP"),
                    ("key", "k"),
                    ("maxNum", "1"),
                    ("beginTimestamp", "0"),
                    ("endTimestamp", "1"),
                ],
            ),
            "no SUB permission on topic TopicP",
        ),
        (
            "HEART_BEAT topic",
            heartbeat("GroupOk", "TopicS"),
            heartbeat("GroupOk", "TopicP"),
            "no SUB permission on topic TopicP",
        ),
        (
            "HEART_BEAT group",
            heartbeat("GroupOk", "TopicS"),
            heartbeat("GroupNo", "TopicS"),
            "no SUB permission on group GroupNo",
        ),
        (
            "UNREGISTER_CLIENT",
            request(
                code::UNREGISTER_CLIENT,
                &[("clientID", "c"), ("consumerGroup", "GroupOk")],
            ),
            request(
                code::UNREGISTER_CLIENT,
                &[("clientID", "c"), ("consumerGroup", "GroupNo")],
            ),
            "no SUB permission on group GroupNo",
        ),
        (
            "GET_CONSUMER_LIST_BY_GROUP",
            request(
                code::GET_CONSUMER_LIST_BY_GROUP,
                &[("consumerGroup", "GroupOk")],
            ),
            request(
                code::GET_CONSUMER_LIST_BY_GROUP,
                &[("consumerGroup", "GroupNo")],
            ),
            "no SUB permission on group GroupNo",
        ),
        (
            "UPDATE_CONSUMER_OFFSET group",
            offset("GroupOk", "TopicS"),
            offset("GroupNo", "TopicS"),
            "no SUB permission on group GroupNo",
        ),
        (
            "UPDATE_CONSUMER_OFFSET topic",
            offset("GroupOk", "TopicS"),
            offset("GroupOk", "TopicP"),
            "no SUB permission on topic TopicP",
        ),
    ]
}

/// Admin-only codes: Apache's list (5.x) and Vostok's administrative requests.
const ADMIN_ONLY: &[i32] = &[
    code::UPDATE_AND_CREATE_TOPIC,
    code::UPDATE_BROKER_CONFIG,
    code::DELETE_TOPIC_IN_BROKER,
    code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
    code::DELETE_SUBSCRIPTIONGROUP,
    code::UPDATE_AND_CREATE_STATIC_TOPIC,
    code::UPDATE_AND_CREATE_ACL_CONFIG,
    code::DELETE_ACL_CONFIG,
    code::GET_BROKER_CLUSTER_ACL_INFO,
    code::GET_BROKER_CONFIG,
    code::GET_ALL_TOPIC_CONFIG,
    code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
    code::GET_ALL_CONSUMER_OFFSET,
    code::INVOKE_BROKER_TO_RESET_OFFSET,
    code::CLEAN_EXPIRED_CONSUMEQUEUE,
    code::AUTH_CREATE_USER,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_row_of_the_request_table_is_allowed_and_refused() {
    let home = home(ACL);
    let broker = Broker::start(
        BrokerOptions {
            env: vec![("ROCKETMQ_HOME".into(), home.path().display().to_string())],
            ..BrokerOptions::default()
        }
        .set("aclEnable", true),
    );
    let user = signed_client("producer1", "producer-secret");
    for (what, allowed, refused, names) in rows() {
        let ok = call(&user, &broker.addr, allowed).await;
        assert_ne!(
            ok.code,
            response_code::NO_PERMISSION,
            "{what} allowed: {}",
            ok.remark()
        );
        let no = call(&user, &broker.addr, refused).await;
        assert_eq!(
            no.code,
            response_code::NO_PERMISSION,
            "{what} refused: {}",
            no.remark()
        );
        assert!(
            no.remark().contains("AccessKey producer1") && no.remark().contains(names),
            "{what}: {}",
            no.remark()
        );
    }
    let admin = signed_client("admin-account", "admin-secret");
    for &c in ADMIN_ONLY {
        let no = call(&user, &broker.addr, request(c, &[("topic", "TopicP")])).await;
        assert_eq!(
            no.code,
            response_code::NO_PERMISSION,
            "code {c}: {}",
            no.remark()
        );
        assert!(
            no.remark().contains("needs an admin account"),
            "{}",
            no.remark()
        );
        let ok = call(&admin, &broker.addr, request(c, &[("topic", "TopicP")])).await;
        assert_ne!(
            ok.code,
            response_code::NO_PERMISSION,
            "admin, code {c}: {}",
            ok.remark()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsigned_wrongly_signed_and_unknown_requests_are_refused_without_closing_the_connection() {
    let home = home(ACL);
    let broker = Broker::start(
        BrokerOptions::default()
            .set("aclEnable", true)
            .set("rocketmqHome", home.path().display()),
    );
    let send = || send_v2("TopicP");
    let plain = RemotingClient::new(vostok_remoting::ClientConfig::default(), None);
    let r = call(&plain, &broker.addr, send()).await;
    assert_eq!(r.code, response_code::NO_PERMISSION);
    assert!(r.remark().contains("no AccessKey"), "{}", r.remark());
    let wrong = signed_client("producer1", "not-the-secret");
    let r = call(&wrong, &broker.addr, send()).await;
    assert!(
        r.remark()
            .contains("signature check failed for AccessKey producer1"),
        "{}",
        r.remark()
    );
    let unknown = signed_client("nobody-at-all", "whatever1");
    let r = call(&unknown, &broker.addr, send()).await;
    assert!(
        r.remark().contains("unknown AccessKey nobody-at-all"),
        "{}",
        r.remark()
    );
    // A refused oneway request gets no answer, and the connection serves the next one.
    let user = signed_client("producer1", "producer-secret");
    user.invoke_oneway(
        &broker.addr,
        request(code::UPDATE_AND_CREATE_TOPIC, &[("topic", "X")]),
        T,
    )
    .await
    .unwrap();
    let r = call(&user, &broker.addr, send()).await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    // Secrets stay out of the log.
    let log = broker.process.log();
    assert!(!log.contains("producer-secret") && !log.contains("admin-secret"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_plain_acl_yml_is_in_force_within_seconds() {
    let home = home(ACL);
    let broker = Broker::start(
        BrokerOptions::default()
            .set("aclEnable", true)
            .set("rocketmqHome", home.path().display()),
    );
    let user = signed_client("producer1", "producer-secret");
    let send = || send_v2("TopicS");
    assert_eq!(
        call(&user, &broker.addr, send()).await.code,
        response_code::NO_PERMISSION
    );
    std::fs::write(
        home.path().join("conf/plain_acl.yml"),
        ACL.replace("TopicS=SUB", "TopicS=PUB|SUB"),
    )
    .unwrap();
    let changed = Instant::now();
    loop {
        let r = call(&user, &broker.addr, send()).await;
        if r.code == response_code::SUCCESS {
            break;
        }
        assert!(
            changed.elapsed() < Duration::from_secs(30),
            "reload not seen: {}",
            r.remark()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
