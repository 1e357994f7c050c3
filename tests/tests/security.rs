//! ACL and TLS against real processes (docs/security.md): every row of the request
//! table allowed and refused, admin-only codes, unsigned and wrongly signed requests,
//! hot reload of plain_acl.yml, the name-server hijack attempt, ACL 2.0 managed over
//! the wire, and a signed SDK producer and consumer end to end over TLS.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use vostok_client::{
    AdminClient, ClientTls, ClientTlsOptions, CommonConsumerConfig, ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus, ConsumeFromWhere, ConsumerConfig, Message, MessageExt,
    MessageListener, Producer, ProducerConfig, PushConsumer, SessionCredentials,
};
use vostok_remoting::auth::AclClientHook;
use vostok_remoting::protocol::body::{
    AclInfo, ConsumeType, ConsumerData, HeartbeatData, MessageModel, PolicyEntryInfo, PolicyInfo,
    TopicConfig, UserInfo,
};
use vostok_remoting::protocol::filter::build_subscription;
use vostok_remoting::protocol::{request_code as code, response_code};
use vostok_remoting::{RemotingClient, RemotingCommand};
use vostok_tests::sdk::{client, eventually, wait_until};
use vostok_tests::{Broker, BrokerOptions, Namesrv};

const T: Duration = Duration::from_secs(10);

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

/// `$ROCKETMQ_HOME` with `conf/plain_acl.yml`.
fn home(acl: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("conf")).unwrap();
    std::fs::write(home.path().join("conf/plain_acl.yml"), acl).unwrap();
    home
}

fn signed_client(ak: &str, sk: &str) -> RemotingClient {
    let c = RemotingClient::new(vostok_remoting::ClientConfig::default(), None);
    c.register_rpc_hook(Arc::new(AclClientHook::new(SessionCredentials::new(
        ak, sk,
    ))));
    c
}

fn request(request_code: i32, fields: &[(&str, &str)]) -> RemotingCommand {
    let mut r = RemotingCommand::request(request_code);
    for (k, v) in fields {
        r.ext_fields.insert(k, v);
    }
    r
}

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

/// SEND_MESSAGE_V2 of one small message to queue 0 of `topic`.
fn send_v2(topic: &str) -> RemotingCommand {
    let header = vostok_remoting::protocol::header::SendMessageRequestHeaderV2 {
        a: "PG".into(),
        b: topic.into(),
        c: "TBW102".into(),
        d: 4,
        e: 0,
        f: 0,
        g: 1,
        h: 0,
        ..Default::default()
    };
    RemotingCommand::request_with_header(code::SEND_MESSAGE_V2, &header).with_body(&b"hello"[..])
}

async fn call(c: &RemotingClient, addr: &str, r: RemotingCommand) -> RemotingCommand {
    c.invoke_sync(addr, r, T).await.expect("the broker answers")
}

/// `(what, allowed request, refused request, what the refusal must name)`.
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
            "CONSUMER_SEND_MSG_BACK",
            request(
                code::CONSUMER_SEND_MSG_BACK,
                &[("group", "GroupOk"), ("offset", "0")],
            ),
            request(
                code::CONSUMER_SEND_MSG_BACK,
                &[("group", "GroupNo"), ("offset", "0")],
            ),
            "no SUB permission on group GroupNo",
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

const NAMESRV_ACL: &str = r#"
accounts:
  - accessKey: broker-a-account
    secretKey: broker-a-secret
    admin: true
    brokerNames: [broker-a]
  - accessKey: broker-b-account
    secretKey: broker-b-secret
    admin: true
    brokerNames: [broker-b]
  - accessKey: app-account
    secretKey: app-secret
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_name_server_refuses_a_route_hijack() {
    let home = home(NAMESRV_ACL);
    let ns = Namesrv::start_with(&[
        ("aclEnable", "true"),
        ("rocketmqHome", &home.path().display().to_string()),
    ]);
    let broker = Broker::start(
        BrokerOptions {
            namesrv: Some(ns.addr.clone()),
            ..BrokerOptions::default()
        }
        .set("accessKey", "broker-a-account")
        .set("secretKey", "broker-a-secret"),
    );
    let open = vostok_tests::client::TestClient::default();
    open.wait_for_route(&ns.addr, "broker-a", |_| true).await;

    // Broker b's account, an application account and no account at all try to put
    // broker-a's route elsewhere.
    let register = |addr: &str| {
        let header = vostok_remoting::protocol::header::RegisterBrokerRequestHeader {
            broker_name: "broker-a".into(),
            broker_addr: addr.into(),
            cluster_name: "DefaultCluster".into(),
            ha_server_addr: String::new(),
            broker_id: 0,
            heartbeat_timeout_millis: None,
            enable_acting_master: None,
            compressed: Some(false),
            body_crc32: None,
        };
        let body = vostok_remoting::protocol::body::RegisterBrokerBody::default().encode();
        RemotingCommand::request_with_header(code::REGISTER_BROKER, &header).with_body(body)
    };
    for (who, c) in [
        (
            "broker-b-account",
            signed_client("broker-b-account", "broker-b-secret"),
        ),
        ("app-account", signed_client("app-account", "app-secret")),
        (
            "nobody",
            RemotingClient::new(vostok_remoting::ClientConfig::default(), None),
        ),
    ] {
        let r = call(&c, &ns.addr, register("6.6.6.6:10911")).await;
        assert_eq!(
            r.code,
            response_code::NO_PERMISSION,
            "{who}: {}",
            r.remark()
        );
        let r = call(
            &c,
            &ns.addr,
            request(
                code::UNREGISTER_BROKER,
                &[
                    ("brokerName", "broker-a"),
                    ("brokerAddr", &broker.addr),
                    ("clusterName", "DefaultCluster"),
                    ("brokerId", "0"),
                ],
            ),
        )
        .await;
        assert_eq!(
            r.code,
            response_code::NO_PERMISSION,
            "{who}: {}",
            r.remark()
        );
        if who == "broker-b-account" {
            // An admin account: topic deletion and KV writes are its to make.
            continue;
        }
        let r = call(
            &c,
            &ns.addr,
            request(code::DELETE_TOPIC_IN_NAMESRV, &[("topic", "broker-a")]),
        )
        .await;
        assert_eq!(
            r.code,
            response_code::NO_PERMISSION,
            "{who}: {}",
            r.remark()
        );
        let r = call(
            &c,
            &ns.addr,
            request(
                code::PUT_KV_CONFIG,
                &[("namespace", "N"), ("key", "k"), ("value", "v")],
            ),
        )
        .await;
        assert_eq!(
            r.code,
            response_code::NO_PERMISSION,
            "{who}: {}",
            r.remark()
        );
    }
    let r = call(
        &signed_client("broker-b-account", "broker-b-secret"),
        &ns.addr,
        register("6.6.6.6:10911"),
    )
    .await;
    assert!(
        r.remark().contains("may not act as broker \"broker-a\""),
        "{}",
        r.remark()
    );
    // Route queries stay open, and the route is still the real broker's.
    let route = open.route(&ns.addr, "broker-a").await.expect("route");
    let addrs: Vec<&str> = route
        .broker_datas
        .iter()
        .filter_map(|b| b.master_addr())
        .collect();
    assert_eq!(addrs, [broker.addr.as_str()]);
    // Broker b's account registers broker-b.
    let mut own = register("127.0.0.1:1");
    own.ext_fields.insert("brokerName", "broker-b");
    let r = call(
        &signed_client("broker-b-account", "broker-b-secret"),
        &ns.addr,
        own,
    )
    .await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
}

const SUPER: (&str, &str) = ("root-user", "root-password");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_2_users_and_policies_are_managed_over_the_wire() {
    let broker = Broker::start(
        BrokerOptions::default()
            .set("authenticationEnabled", true)
            .set("authorizationEnabled", true)
            .set(
                "initAuthenticationUser",
                format!(r#"{{"username":"{}","password":"{}"}}"#, SUPER.0, SUPER.1),
            ),
    );
    let admin = AdminClient::new(&vostok_client::ClientConfig {
        credentials: Some(SessionCredentials::new(SUPER.0, SUPER.1)),
        ..client(&broker.namesrv, "acl2-admin")
    })
    .unwrap();
    let user = UserInfo {
        username: Some("alice".into()),
        password: Some("alice-password".into()),
        user_type: Some("Normal".into()),
        user_status: None,
    };
    admin.create_user(&broker.addr, &user).await.unwrap();
    let acl = AclInfo {
        subject: Some("User:alice".into()),
        policies: vec![PolicyInfo {
            policy_type: None,
            entries: vec![PolicyEntryInfo {
                resource: "Topic:orders*".into(),
                actions: vec!["Pub".into()],
                source_ips: vec!["127.0.0.0/8".into()],
                decision: "Allow".into(),
            }],
        }],
    };
    admin
        .create_acl(&broker.addr, "User:alice", &acl)
        .await
        .unwrap();
    let listed = admin.list_users(&broker.addr, None).await.unwrap();
    assert!(listed
        .iter()
        .any(|u| u.username.as_deref() == Some("alice") && u.password.is_none()));
    assert_eq!(
        admin
            .get_acl(&broker.addr, "User:alice")
            .await
            .unwrap()
            .unwrap()
            .policies[0]
            .entries
            .len(),
        1
    );

    let alice = signed_client("alice", "alice-password");
    let send = |topic: &str| send_v2(topic);
    assert_eq!(
        call(&alice, &broker.addr, send("orders-eu")).await.code,
        response_code::SUCCESS
    );
    let r = call(&alice, &broker.addr, send("payments")).await;
    assert_eq!(r.code, response_code::NO_PERMISSION);
    assert!(
        r.remark()
            .contains("User:alice has no policy allowing Pub on topic payments"),
        "{}",
        r.remark()
    );
    // A normal user cannot manage users.
    let r = call(&alice, &broker.addr, request(code::AUTH_LIST_USER, &[])).await;
    assert_eq!(r.code, response_code::NO_PERMISSION);

    admin
        .delete_acl(&broker.addr, "User:alice", None, Some("Topic:orders*"))
        .await
        .unwrap();
    assert_eq!(
        call(&alice, &broker.addr, send("orders-eu")).await.code,
        response_code::NO_PERMISSION
    );
    admin.delete_user(&broker.addr, "alice").await.unwrap();
    let r = call(&alice, &broker.addr, send("orders-eu")).await;
    assert!(
        r.remark().contains("User:alice is not found"),
        "{}",
        r.remark()
    );
    admin.shutdown().await;
}

/// A CA and a certificate for 127.0.0.1, as PEM files.
fn pki(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    params
        .subject_alt_names
        .push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
    let cert = params.signed_by(&key, &ca_cert, &ca_key).unwrap();
    let paths = (
        dir.join("ca.pem"),
        dir.join("server.pem"),
        dir.join("server.key"),
    );
    std::fs::write(&paths.0, ca_cert.pem()).unwrap();
    std::fs::write(&paths.1, cert.pem()).unwrap();
    std::fs::write(&paths.2, key.serialize_pem()).unwrap();
    paths
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_sdk_producer_and_consumer_work_end_to_end_over_tls() {
    let home = home(ACL);
    let (ca, cert, key) = pki(home.path());
    let broker = Broker::start(
        BrokerOptions::default()
            .set("aclEnable", true)
            .set("rocketmqHome", home.path().display())
            .set("tls.server.mode", "enforcing")
            .set("tls.server.certPath", cert.display())
            .set("tls.server.keyPath", key.display())
            .set("tls.enable", true)
            .set("tls.client.trustCertPath", ca.display()),
    );
    let tls = ClientTls::new(&ClientTlsOptions {
        trust_cert_path: Some(ca.clone()),
        ..ClientTlsOptions::default()
    })
    .unwrap();
    let secure = |instance: &str, ak: &str, sk: &str| {
        let mut c = client(&broker.namesrv, instance);
        c.credentials = Some(SessionCredentials::new(ak, sk));
        c.remoting.tls = Some(tls.clone());
        c
    };
    // A plain client cannot even connect to the name server or the broker.
    let plain = RemotingClient::new(vostok_remoting::ClientConfig::default(), None);
    assert!(plain
        .invoke_sync(&broker.addr, request(code::HEART_BEAT, &[]), T)
        .await
        .is_err());

    let admin = AdminClient::new(&secure("tls-admin", "admin-account", "admin-secret")).unwrap();
    admin
        .create_and_update_topic_config(&broker.addr, &TopicConfig::new("TopicE2E", 4))
        .await
        .unwrap();
    let e2e_acl = ACL.replace("TopicS=SUB", "TopicS=SUB\n      - TopicE2E=PUB|SUB");
    std::fs::write(home.path().join("conf/plain_acl.yml"), e2e_acl).unwrap();

    let producer = Producer::new(ProducerConfig {
        client: secure("tls-producer", "producer1", "producer-secret"),
        producer_group: "tls-producer".into(),
        ..Default::default()
    });
    producer.start().await.unwrap();
    // The reload of the account file is polled: the first sends may still be refused.
    eventually("the TopicE2E grant is in force", || async {
        producer
            .send(Message::new("TopicE2E", "first"))
            .await
            .is_ok()
    })
    .await;
    for i in 0..50 {
        producer
            .send(Message::new("TopicE2E", format!("m{i}")))
            .await
            .unwrap();
    }
    let seen: Arc<Mutex<Vec<MessageExt>>> = Arc::default();
    let consumer = PushConsumer::new(ConsumerConfig {
        common: CommonConsumerConfig {
            client: secure("tls-consumer", "producer1", "producer-secret"),
            consumer_group: "GroupOk".into(),
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            ..CommonConsumerConfig::push_defaults()
        },
        ..Default::default()
    });
    consumer.subscribe("TopicE2E", "*").unwrap();
    let s = seen.clone();
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            s.lock().unwrap().extend(msgs.iter().cloned());
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer.start().await.unwrap();
    wait_until("51 messages consumed over TLS", || {
        seen.lock().unwrap().len() >= 51
    })
    .await;
    consumer.shutdown().await;
    producer.shutdown().await;
    admin.shutdown().await;
}
