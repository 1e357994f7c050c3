//! Security end to end against real processes (docs/security.md): the name-server
//! hijack attempt, ACL 2.0 users and policies managed over the wire, and a signed SDK
//! producer and consumer through an enforcing-TLS broker.

use std::sync::{Arc, Mutex};

use vostok_client::{
    AdminClient, ClientTls, ClientTlsOptions, CommonConsumerConfig, ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus, ConsumeFromWhere, ConsumerConfig, Message, MessageExt,
    MessageListener, Producer, ProducerConfig, PushConsumer, SessionCredentials,
};
use vostok_remoting::protocol::body::{
    AclInfo, PolicyEntryInfo, PolicyInfo, TopicConfig, UserInfo,
};
use vostok_remoting::protocol::{request_code as code, response_code};
use vostok_remoting::{RemotingClient, RemotingCommand};
use vostok_tests::acl::{call, home, request, send_v2, signed_client, T};
use vostok_tests::sdk::{client, eventually, wait_until};
use vostok_tests::{Broker, BrokerOptions, Namesrv};

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_sdk_producer_and_consumer_work_end_to_end_over_tls() {
    let home = home(ACL);
    let (ca, cert, key) = vostok_tests::pki::write_server_pki(home.path());
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
