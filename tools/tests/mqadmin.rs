//! `mqadmin` against a real broker: the broker runs in this process (standalone, its
//! embedded name server on an ephemeral port, its store in a temp dir), `mqadmin` as a
//! child process. Where the broker applies a change asynchronously (registering a new
//! topic with the name server, dispatching sent messages to the consume queues), the
//! test re-asks until the change shows, within a deadline.

use std::time::Duration;

use vostok_broker::{Broker, BrokerConfig};
use vostok_client::{Message, Producer, ProducerConfig};
use vostok_remoting::protocol::header::UpdateConsumerOffsetRequestHeader;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::{ClientConfig, RemotingClient, RemotingCommand};

mod common;

use common::{eventually, fails, mqadmin, ok, start_broker};

/// `(broker, queue, min, max)` rows of `topicStatus` output.
fn status_rows(text: &str) -> Vec<(String, i32, i64, i64)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            (
                c[0].to_owned(),
                c[1].parse().unwrap(),
                c[2].parse().unwrap(),
                c[3].parse().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_lifecycle_offsets_and_message_queries() {
    let (broker, _dir) = start_broker("admin-a", |_| {}).await;
    let ns_owned = broker.namesrv_addr();
    let ns = ns_owned.as_str();
    let broker_addr = broker.addr().to_string();
    let topic = "AdminTopic";

    // clusterList: the broker, its address and version.
    let text = ok(ns, &["clusterList"]).await;
    let row = text
        .lines()
        .find(|l| l.contains("admin-a"))
        .unwrap_or_else(|| panic!("broker missing from\n{text}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells[..4],
        ["DefaultCluster", "admin-a", "0", broker_addr.as_str()],
        "{text}"
    );
    assert!(cells[4].starts_with('V'), "version column: {text}");

    // updateTopic on the cluster's masters, then the route shows the asked queues.
    let text = ok(
        ns,
        &[
            "updateTopic",
            "-t",
            topic,
            "-c",
            "DefaultCluster",
            "-r",
            "3",
            "-w",
            "3",
        ],
    )
    .await;
    assert!(
        text.contains(&format!("create topic to {broker_addr} success.")),
        "{text}"
    );
    let route = eventually("route of the new topic", || async move {
        let out = mqadmin(ns, &["topicRoute", "-t", topic]).await;
        if !out.status.success() {
            return None;
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON route");
        (v["queueDatas"][0]["readQueueNums"] == 3).then_some(v)
    })
    .await;
    assert_eq!(route["queueDatas"][0]["writeQueueNums"], 3, "{route}");
    assert_eq!(route["queueDatas"][0]["perm"], 6, "{route}");
    assert_eq!(
        route["brokerDatas"][0]["brokerAddrs"]["0"],
        broker_addr.as_str()
    );

    // updateTopic on one broker by address changes the queue counts.
    ok(
        ns,
        &[
            "updateTopic",
            "-t",
            topic,
            "-b",
            &broker_addr,
            "-r",
            "4",
            "-w",
            "4",
        ],
    )
    .await;
    eventually("route with 4 queues", || async move {
        let out = mqadmin(ns, &["topicRoute", "-t", topic]).await;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        (v["queueDatas"][0]["writeQueueNums"] == 4).then_some(())
    })
    .await;

    // Attributes in Apache's form reach the topic's config.
    ok(
        ns,
        &[
            "updateTopic",
            "-t",
            topic,
            "-b",
            &broker_addr,
            "-r",
            "4",
            "-w",
            "4",
            "-a",
            "+duplication.window.seconds=60",
        ],
    )
    .await;
    let header = vostok_remoting::protocol::header::TopicRequestHeader {
        topic: topic.to_owned(),
    };
    let config = RemotingClient::new(ClientConfig::default(), None)
        .invoke_sync(
            &broker_addr,
            RemotingCommand::request_with_header(request_code::GET_TOPIC_CONFIG, &header),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    let config: serde_json::Value = serde_json::from_slice(&config.body).unwrap();
    assert_eq!(
        config["attributes"]["duplication.window.seconds"], "60",
        "{config}"
    );
    let bad = mqadmin(
        ns,
        &["updateTopic", "-t", topic, "-b", &broker_addr, "-a", "x=1"],
    )
    .await;
    assert!(!bad.status.success());

    let list = ok(ns, &["topicList"]).await;
    assert!(list.lines().any(|l| l == topic), "{list}");

    // brokerStatus: the runtime table, sorted, with the figures operators look for.
    let text = ok(ns, &["brokerStatus", "-b", &broker_addr]).await;
    let keys: Vec<&str> = text
        .lines()
        .map(|l| l.split(':').next().unwrap().trim_end())
        .collect();
    for key in [
        "brokerVersionDesc",
        "commitLogMaxOffset",
        "msgPutTotalTodayNow",
        "putTps",
    ] {
        assert!(keys.contains(&key), "{key} missing from\n{text}");
    }
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);

    // Send with keys through the SDK.
    let producer = Producer::new(ProducerConfig::new("admin_test_producer", ns));
    producer.start().await.expect("producer starts");
    let count = 10;
    let mut first = None;
    for i in 0..count {
        let message = Message::new(topic, format!("body-{i}"))
            .with_tags("TagA")
            .with_keys([format!("order-{i}")]);
        let result = producer.send(message).await.expect("send");
        first.get_or_insert(result);
    }
    producer.shutdown().await;
    let first = first.expect("a message was sent");

    // topicStatus: max offsets sum to the count once the broker has dispatched them.
    let rows = eventually("offsets of every sent message", || async move {
        let rows = status_rows(&ok(ns, &["topicStatus", "-t", topic]).await);
        (rows.iter().map(|r| r.3).sum::<i64>() == count).then_some(rows)
    })
    .await;
    assert_eq!(rows.len(), 4, "{rows:?}");
    assert!(
        rows.iter().all(|r| r.0 == "admin-a" && r.2 == 0),
        "{rows:?}"
    );

    // The index entry of the first message precedes the last one's queue entry.
    let text = ok(ns, &["queryMsgByKey", "-t", topic, "-k", "order-0"]).await;
    assert!(text.contains("Keys                [order-0]"), "{text}");
    assert!(
        text.contains(&format!("Topic               {topic}")),
        "{text}"
    );
    assert!(text.contains("Tags                [TagA]"), "{text}");
    assert!(text.contains("Body Length         6"), "{text}");
    assert!(
        text.contains(&format!("Message ID          {}", first.msg_id)),
        "{text}"
    );
    assert_eq!(text.matches("Topic ").count(), 1, "{text}");
    let err = fails(ns, &["queryMsgByKey", "-t", topic, "-k", "no-such-key"]).await;
    assert!(err.contains("no message with key no-such-key"), "{err}");

    // queryMsgById: by the offset id the broker returned.
    let text = ok(ns, &["queryMsgById", "-i", &first.offset_msg_id]).await;
    assert!(text.contains("Keys                [order-0]"), "{text}");
    assert!(
        text.contains(&format!(
            "Queue ID            {}",
            first.message_queue.queue_id
        )),
        "{text}"
    );
    // ... and by unique key with -t.
    let text = ok(ns, &["queryMsgById", "-i", &first.msg_id, "-t", topic]).await;
    assert!(text.contains("Keys                [order-0]"), "{text}");

    // consumerProgress: a group that committed 1 on queue 0; found through the broker's
    // consume stats (the group is not online), every other message still to consume.
    let client = RemotingClient::new(ClientConfig::default(), None);
    let commit = UpdateConsumerOffsetRequestHeader {
        consumer_group: "admin_test_group".into(),
        topic: topic.into(),
        queue_id: 0,
        commit_offset: 1,
    };
    let response = client
        .invoke_sync(
            &broker_addr,
            RemotingCommand::request_with_header(request_code::UPDATE_CONSUMER_OFFSET, &commit),
            Duration::from_secs(5),
        )
        .await
        .expect("offset commit");
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{}",
        response.remark()
    );
    client.shutdown().await;
    let text = ok(ns, &["consumerProgress", "-g", "admin_test_group"]).await;
    assert!(
        text.contains(&format!("Diff Total: {}", count - 1)),
        "{text}"
    );
    let queue0 = text
        .lines()
        .find(|l| l.starts_with(topic) && l.split_whitespace().nth(2) == Some("0"))
        .unwrap_or_else(|| panic!("queue 0 missing from\n{text}"));
    assert_eq!(queue0.split_whitespace().nth(4), Some("1"), "{text}");
    let err = fails(ns, &["consumerProgress", "-g", "admin_nobody"]).await;
    assert!(err.contains("pass -t TOPIC"), "{err}");
    let text = ok(ns, &["consumerProgress", "-g", "admin_nobody", "-t", topic]).await;
    assert!(text.contains(&format!("Diff Total: {count}")), "{text}");

    // deleteTopic: gone from the broker and from the name server's list.
    let text = ok(ns, &["deleteTopic", "-t", topic, "-c", "DefaultCluster"]).await;
    assert!(text.contains("from NameServer success."), "{text}");
    let list = ok(ns, &["topicList"]).await;
    assert!(!list.lines().any(|l| l == topic), "{list}");
    let err = fails(ns, &["topicRoute", "-t", topic]).await;
    assert!(err.contains("GET_ROUTEINFO_BY_TOPIC"), "{err}");
    assert!(err.contains("TOPIC_NOT_EXIST"), "{err}");

    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_exit_1_with_one_line_naming_what_failed() {
    let (broker, _dir) = start_broker("admin-b", |_| {}).await;
    let ns_owned = broker.namesrv_addr();
    let ns = ns_owned.as_str();

    let err = fails(ns, &["topicRoute", "-t", "NoSuchTopic"]).await;
    assert!(
        err.contains(&format!("GET_ROUTEINFO_BY_TOPIC to {ns}")),
        "{err}"
    );

    let err = fails(ns, &["updateTopic", "-t", "T", "-c", "NoSuchCluster"]).await;
    assert!(err.contains("cluster NoSuchCluster is unknown"), "{err}");

    let err = fails(
        ns,
        &["updateTopic", "-t", "bad topic", "-c", "DefaultCluster"],
    )
    .await;
    assert!(err.contains("illegal characters"), "{err}");

    let err = fails(ns, &["queryMsgById", "-i", "not-an-id"]).await;
    assert!(err.contains("not an offset message id"), "{err}");

    // A broker answer that is an error: the system topic cannot be deleted.
    let err = fails(ns, &["deleteTopic", "-t", "TBW102", "-c", "DefaultCluster"]).await;
    assert!(err.contains("DELETE_TOPIC_IN_BROKER"), "{err}");
    assert!(err.contains("NO_PERMISSION"), "{err}");

    // Nothing listens: a closed port found by binding and dropping a listener.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let err = fails(&closed, &["clusterList", "--timeout-ms", "500"]).await;
    assert!(
        err.contains(&format!("GET_BROKER_CLUSTER_INFO to {closed} failed")),
        "{err}"
    );
    let err = fails(ns, &["brokerStatus", "-b", &closed, "--timeout-ms", "500"]).await;
    assert!(err.contains("GET_BROKER_RUNTIME_INFO"), "{err}");

    broker.shutdown().await;
}

/// The ACL 2.0 verbs against a broker running ACL 2.0, signed as its first SUPER user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_2_verbs_manage_users_and_policies() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = BrokerConfig::loopback("acl-broker", dir.path().join("store"));
    config.store.mapped_file_size_commit_log = 16 * 1024 * 1024;
    for (k, v) in [
        ("authenticationEnabled", "true"),
        ("authorizationEnabled", "true"),
        (
            "initAuthenticationUser",
            r#"{"username":"root-user","password":"root-secret"}"#,
        ),
    ] {
        config.apply_property(k, v).unwrap();
    }
    let broker = Broker::start(config).await.expect("broker starts");
    let ns = broker.namesrv_addr();
    let addr = broker.addr().to_string();
    let signed = |args: &[&str]| {
        let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        all.extend(["--access-key", "root-user", "--secret-key", "root-secret"].map(String::from));
        all
    };
    let run = |args: Vec<String>| {
        let ns = ns.clone();
        async move {
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            ok(&ns, &refs).await
        }
    };
    run(signed(&[
        "createUser",
        "-b",
        &addr,
        "-u",
        "bob",
        "-p",
        "bob-secret",
    ]))
    .await;
    run(signed(&[
        "createAcl",
        "-b",
        &addr,
        "-s",
        "User:bob",
        "-r",
        "Topic:t1,Group:g1",
        "-a",
        "Pub,Sub",
        "-d",
        "Allow",
    ]))
    .await;
    let users = run(signed(&["listUser", "-b", &addr])).await;
    assert!(
        users.contains("bob") && users.contains("root-user"),
        "{users}"
    );
    assert!(
        !users.contains("bob-secret") && !users.contains("root-secret"),
        "{users}"
    );
    let acls = run(signed(&["listAcl", "-b", &addr, "-s", "User:bob"])).await;
    assert!(
        acls.contains("Topic:t1") && acls.contains("Group:g1") && acls.contains("Allow"),
        "{acls}"
    );
    run(signed(&[
        "updateUser",
        "-b",
        &addr,
        "-u",
        "bob",
        "-s",
        "disable",
    ]))
    .await;
    run(signed(&[
        "deleteAcl",
        "-b",
        &addr,
        "-s",
        "User:bob",
        "-r",
        "Group:g1",
    ]))
    .await;
    let acls = run(signed(&["listAcl", "-b", &addr])).await;
    assert!(
        acls.contains("Topic:t1") && !acls.contains("Group:g1"),
        "{acls}"
    );
    run(signed(&["deleteUser", "-b", &addr, "-u", "bob"])).await;
    let users = run(signed(&["listUser", "-b", &addr])).await;
    assert!(!users.contains("bob"), "{users}");
    // Without credentials every verb is refused, and says why.
    let e = fails(&ns, &["listUser", "-b", &addr]).await;
    assert!(
        e.contains("NO_PERMISSION") && e.contains("no AccessKey"),
        "{e}"
    );
    broker.shutdown().await;
}

/// clusterList with a master and its slave: roles, and the slave's lag (0 once it
/// holds everything the master has).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_list_shows_roles_and_the_slaves_lag() {
    let (master, _dir) = start_broker("admin-ha", |_| {}).await;
    let ns_owned = master.namesrv_addr();
    let ns = ns_owned.as_str();
    let slave_dir = tempfile::tempdir().expect("temp dir");
    let mut config = BrokerConfig {
        broker_name: "admin-ha".into(),
        broker_id: 1,
        broker_role: vostok_broker::BrokerRole::Slave,
        broker_ip1: "127.0.0.1".into(),
        broker_ip2: "127.0.0.1".into(),
        bind_address: "127.0.0.1".into(),
        listen_port: 0,
        fast_listen_enable: false,
        namesrv_addr: Some(ns.to_owned()),
        ..BrokerConfig::default()
    };
    config.store.store_path_root_dir = slave_dir.path().join("store");
    config.store.mapped_file_size_commit_log = 16 * 1024 * 1024;
    config.grpc.grpc_server_port = 0;
    let slave = Broker::start(config).await.expect("slave starts");
    let slave_addr = slave.addr().to_string();

    let producer = Producer::new(ProducerConfig::new("admin_ha_producer", ns));
    producer.start().await.expect("producer starts");
    for i in 0..20 {
        producer
            .send(Message::new("AdminHaTopic", format!("body-{i}")))
            .await
            .expect("send");
    }
    producer.shutdown().await;
    let master_max = master.broker().store().max_phy_offset();
    assert!(master_max > 0);

    let row = eventually("the slave caught up in clusterList", || async {
        let text = ok(ns, &["clusterList"]).await;
        let row = text.lines().find(|l| l.contains(&slave_addr))?.to_owned();
        let cells: Vec<String> = row.split_whitespace().map(str::to_owned).collect();
        (cells.len() == 10 && cells[8] == "0").then_some(cells)
    })
    .await;
    assert_eq!(row[1..3], ["admin-ha".to_owned(), "1".to_owned()]);
    assert_eq!(row[7], "SLAVE");
    assert_eq!(row[9], "0.000");
    assert!(slave.broker().store().max_phy_offset() >= master_max);
    let text = ok(ns, &["clusterList"]).await;
    let master_row = text
        .lines()
        .find(|l| l.contains(&master.addr().to_string()))
        .expect("master row");
    assert!(master_row.contains("ASYNC_MASTER"), "{text}");
    slave.shutdown().await;
    master.shutdown().await;
}

/// `topicList --namespace` and `statsAll --namespace` show that namespace only: its
/// topics and its groups' retry topics, nothing of another namespace or of none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_shows_only_its_own_topics() {
    let (broker, _dir) = start_broker("admin-ns", |_| {}).await;
    let ns_owned = broker.namesrv_addr();
    let ns = ns_owned.as_str();
    let broker_addr = broker.addr().to_string();
    for topic in ["ns1%orders", "%RETRY%ns1%g", "ns2%orders", "plain"] {
        ok(ns, &["updateTopic", "-t", topic, "-b", &broker_addr]).await;
    }
    eventually("every topic listed", || async move {
        let list = ok(ns, &["topicList"]).await;
        list.lines().any(|l| l == "plain").then_some(())
    })
    .await;
    let list = ok(ns, &["topicList", "--namespace", "ns1"]).await;
    let mut shown: Vec<&str> = list.lines().collect();
    shown.sort();
    assert_eq!(shown, ["%RETRY%ns1%g", "ns1%orders"], "{list}");
    let stats = ok(ns, &["statsAll", "--namespace", "ns2"]).await;
    assert!(stats.contains("ns2%orders"), "{stats}");
    assert!(
        !stats.contains("ns1%") && !stats.contains("plain"),
        "{stats}"
    );
    broker.shutdown().await;
}
