//! Brokers registering and clients asking for routes, over real sockets.

mod common;

use common::*;
use vostok_remoting::protocol::body::{KvTable, RegisterBrokerBody, TopicList};
use vostok_remoting::protocol::header::{
    AddWritePermOfBrokerResponseHeader, BrokerHeartbeatRequestHeader, BrokerPermRequestHeader,
    DeleteTopicFromNamesrvRequestHeader, GetTopicsByClusterRequestHeader, PutKvConfigRequestHeader,
    QueryDataVersionRequestHeader, QueryDataVersionResponseHeader, RegisterBrokerRequestHeader,
    UnRegisterBrokerRequestHeader, WipeWritePermOfBrokerResponseHeader,
};
use vostok_remoting::protocol::route::ClusterInfo;
use vostok_remoting::protocol::{json, request_code, response_code, topic::perm};
use vostok_remoting::RemotingCommand;

#[tokio::test]
async fn master_and_slave_share_a_route() {
    let ns = TestNamesrv::start().await;
    let (master_conn, slave_conn, client) = (client(), client(), client());
    let master = Broker::new(
        "DefaultCluster",
        "broker-a",
        0,
        "10.0.0.1:10911",
        &["TopicTest"],
    );
    let slave = Broker::new(
        "DefaultCluster",
        "broker-a",
        1,
        "10.0.0.2:10911",
        &["TopicTest"],
    );

    let answer = master.register(&master_conn, &ns.addr).await;
    assert_eq!(answer.master_addr, None, "a master has no master");
    let answer = slave.register(&slave_conn, &ns.addr).await;
    assert_eq!(answer.master_addr.as_deref(), Some("10.0.0.1:10911"));
    assert_eq!(answer.ha_server_addr.as_deref(), Some("10.0.0.1:10911-ha"));

    let response = call(&client, &ns.addr, route_request("TopicTest")).await;
    assert_eq!(response.code, response_code::SUCCESS);
    // Standard, compact JSON: quoted ids, no spaces (the Go client splits this text).
    assert_eq!(
        std::str::from_utf8(&response.body).unwrap(),
        r#"{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#
    );
    let route = route(&client, &ns.addr, "TopicTest").await.unwrap();
    assert_eq!(route.write_queues().len(), 4);
}

#[tokio::test]
async fn an_unknown_topic_is_topic_not_exist() {
    let ns = TestNamesrv::start().await;
    let err = route(&client(), &ns.addr, "NoSuchTopic").await.unwrap_err();
    assert_eq!(err.code, response_code::TOPIC_NOT_EXIST);
    assert_eq!(
        err.remark(),
        "No topic route info in name server for the topic: NoSuchTopic"
    );
}

#[tokio::test]
async fn two_clusters_and_the_listings() {
    let ns = TestNamesrv::start().await;
    let (a, b, client) = (client(), client(), client());
    Broker::new(
        "east",
        "broker-a",
        0,
        "10.0.1.1:10911",
        &["Orders", "OnlyEast"],
    )
    .register(&a, &ns.addr)
    .await;
    Broker::new(
        "west",
        "broker-b",
        0,
        "10.0.2.1:10911",
        &["Orders", "OnlyWest"],
    )
    .register(&b, &ns.addr)
    .await;

    let orders = route(&client, &ns.addr, "Orders").await.unwrap();
    let clusters: Vec<&str> = orders
        .broker_datas
        .iter()
        .map(|b| b.cluster.as_str())
        .collect();
    assert_eq!(clusters, ["east", "west"]);
    assert_eq!(orders.write_queues().len(), 8);

    let response = call(
        &client,
        &ns.addr,
        RemotingCommand::request(request_code::GET_BROKER_CLUSTER_INFO),
    )
    .await;
    let info = ClusterInfo::decode(&response.body).unwrap();
    assert_eq!(info.cluster_addr_table.len(), 2);
    assert!(info.cluster_addr_table["west"].contains("broker-b"));
    assert_eq!(
        info.broker_addr_table["broker-a"].master_addr(),
        Some("10.0.1.1:10911")
    );
    assert!(!response.body.contains(&b' '), "compact JSON");

    let list = |response: RemotingCommand| -> Vec<String> {
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{}",
            response.remark()
        );
        let list: TopicList = json::from_slice("TopicList", &response.body).unwrap();
        list.topic_list.into_iter().collect()
    };
    let all = call(
        &client,
        &ns.addr,
        RemotingCommand::request(request_code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
    )
    .await;
    assert_eq!(list(all), ["OnlyEast", "OnlyWest", "Orders"]);
    let east = call(
        &client,
        &ns.addr,
        RemotingCommand::request_with_header(
            request_code::GET_TOPICS_BY_CLUSTER,
            &GetTopicsByClusterRequestHeader {
                cluster: "east".into(),
            },
        ),
    )
    .await;
    assert_eq!(list(east), ["OnlyEast", "Orders"]);
    let system = call(
        &client,
        &ns.addr,
        RemotingCommand::request(request_code::GET_SYSTEM_TOPIC_LIST_FROM_NS),
    )
    .await;
    assert_eq!(list(system), ["broker-a", "broker-b", "east", "west"]);

    // Deleting a topic in one cluster leaves the other's queues.
    let delete = |cluster: Option<&str>| {
        RemotingCommand::request_with_header(
            request_code::DELETE_TOPIC_IN_NAMESRV,
            &DeleteTopicFromNamesrvRequestHeader {
                topic: "Orders".into(),
                cluster_name: cluster.map(str::to_owned),
            },
        )
    };
    assert_eq!(call(&client, &ns.addr, delete(Some("east"))).await.code, 0);
    let orders = route(&client, &ns.addr, "Orders").await.unwrap();
    assert_eq!(orders.queue_datas.len(), 1);
    assert_eq!(orders.queue_datas[0].broker_name, "broker-b");
    assert_eq!(call(&client, &ns.addr, delete(None)).await.code, 0);
    assert!(route(&client, &ns.addr, "Orders").await.is_err());
}

#[tokio::test]
async fn every_register_body_form_is_accepted() {
    let ns = TestNamesrv::start().await;
    let (conn, client) = (client(), client());
    let register = |topic: &str, id: i64, addr: &str, body: Vec<u8>, compressed: bool, crc: i32| {
        RemotingCommand::request_with_header(
            request_code::REGISTER_BROKER,
            &RegisterBrokerRequestHeader {
                broker_name: format!("b-{topic}"),
                broker_addr: addr.into(),
                cluster_name: "c".into(),
                ha_server_addr: "h:1".into(),
                broker_id: id,
                heartbeat_timeout_millis: None,
                enable_acting_master: None,
                compressed: Some(compressed),
                body_crc32: Some(crc),
            },
        )
        .with_body(body)
    };

    // 4.x: no stateVersion, no attributes, no mapping tables.
    let v4 = br#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":7,"timestamp":1700000000000},"topicConfigTable":{"V4":{"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"V4","topicSysFlag":0,"writeQueueNums":8}}}}"#;
    // 5.x, as docs/bodies.md#registerbrokerbody-and-topicconfig shows it.
    let v5 = br#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1700000000000},"topicConfigTable":{"V5":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"V5","topicSysFlag":0,"writeQueueNums":2}},"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}"#;
    for (topic, body) in [("V4", &v4[..]), ("V5", &v5[..])] {
        let response = call(
            &conn,
            &ns.addr,
            register(topic, 0, &format!("{topic}:1"), body.to_vec(), false, 0),
        )
        .await;
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{topic}: {}",
            response.remark()
        );
    }
    assert_eq!(
        route(&client, &ns.addr, "V4").await.unwrap().queue_datas[0].read_queue_nums,
        8
    );
    assert_eq!(
        route(&client, &ns.addr, "V5").await.unwrap().queue_datas[0].write_queue_nums,
        2
    );

    // The zlib form, with its crc32 checked.
    let mut zipped = Broker::new("c", "b-Z", 0, "Z:1", &["Z"]).body();
    zipped
        .topic_config_serialize_wrapper
        .topic_config_table
        .get_mut("Z")
        .unwrap()
        .read_queue_nums = 16;
    let packed = zipped.encode_compressed();
    let crc = (crc32fast_hash(&packed) & 0x7FFF_FFFF) as i32;
    let response = call(
        &conn,
        &ns.addr,
        register("Z", 0, "Z:1", packed.clone(), true, crc),
    )
    .await;
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{}",
        response.remark()
    );
    assert_eq!(
        route(&client, &ns.addr, "Z").await.unwrap().queue_datas[0].read_queue_nums,
        16
    );

    let response = call(
        &conn,
        &ns.addr,
        register("Z", 0, "Z:1", packed, true, crc ^ 1),
    )
    .await;
    assert_eq!(response.code, response_code::SYSTEM_ERROR);
    assert_eq!(response.remark(), "crc32 not match");

    // RocketMQ 5 brokers with compressedRegister send the zlib form with the header's
    // `compressed` false: told apart by its first byte (a JSON body starts with `{`).
    zipped.topic_config_serialize_wrapper.data_version.counter += 1;
    zipped
        .topic_config_serialize_wrapper
        .topic_config_table
        .get_mut("Z")
        .unwrap()
        .read_queue_nums = 12;
    let packed = zipped.encode_compressed();
    let crc = (crc32fast_hash(&packed) & 0x7FFF_FFFF) as i32;
    let response = call(&conn, &ns.addr, register("Z", 0, "Z:1", packed, false, crc)).await;
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{}",
        response.remark()
    );
    assert_eq!(
        route(&client, &ns.addr, "Z").await.unwrap().queue_datas[0].read_queue_nums,
        12
    );

    // No body at all (a broker with nothing to say) registers the broker only.
    let response = call(
        &conn,
        &ns.addr,
        register("E", 0, "E:1", Vec::new(), false, 0),
    )
    .await;
    assert_eq!(response.code, response_code::SUCCESS);
    assert!(ns.server.route_info().broker_data("b-E").is_some());
}

#[tokio::test]
async fn a_topic_table_registered_in_parts_is_routed_whole() {
    let ns = TestNamesrv::start().await;
    let (conn, client) = (client(), client());
    let names: Vec<String> = (0..30).map(|i| format!("Part{i:02}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let broker = Broker::new("c", "b", 0, "b:1", &names);
    let whole = broker.body().topic_config_serialize_wrapper;
    let send = |body: Vec<u8>| {
        RemotingCommand::request_with_header(request_code::REGISTER_BROKER, &broker.header())
            .with_body(body)
    };

    // RocketMQ's split registration: parts of 10 topics, each with the broker's version.
    for part in names.chunks(10) {
        let mut body = broker.body();
        body.topic_config_serialize_wrapper
            .topic_config_table
            .retain(|name, _| part.contains(&name.as_str()));
        let response = call(&conn, &ns.addr, send(body.encode())).await;
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{}",
            response.remark()
        );
    }
    for name in &names {
        assert!(
            route(&client, &ns.addr, name).await.is_ok(),
            "{name} routed"
        );
    }

    // Vostok's parts: each with a version of its own, so that a change in the last
    // part is read too.
    let mut changed = whole.clone();
    changed.data_version.counter += 1;
    changed.topic_config_table.get_mut("Part29").unwrap().perm = perm::READ;
    let parts = RegisterBrokerBody::encode_parts(&changed, 10, usize::MAX, false);
    assert_eq!(parts.len(), 3);
    for part in parts {
        let response = call(&conn, &ns.addr, send(part)).await;
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{}",
            response.remark()
        );
    }
    assert_eq!(
        route(&client, &ns.addr, "Part29")
            .await
            .unwrap()
            .queue_datas[0]
            .perm,
        perm::READ
    );
    assert_eq!(
        route(&client, &ns.addr, "Part00")
            .await
            .unwrap()
            .queue_datas[0]
            .perm,
        perm::READ | perm::WRITE
    );
}

/// CRC32 (IEEE), as `java.util.zip.CRC32` computes it; bitwise so that the test does
/// not share the implementation under test.
fn crc32fast_hash(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[tokio::test]
async fn ordered_topic_config_reaches_brokers_and_routes() {
    let ns = TestNamesrv::start_with(|c| c.order_message_enable = true).await;
    let (conn, client) = (client(), client());
    let put = RemotingCommand::request_with_header(
        request_code::PUT_KV_CONFIG,
        &PutKvConfigRequestHeader {
            namespace: "ORDER_TOPIC_CONFIG".into(),
            key: "Ordered".into(),
            value: "broker-a:4".into(),
        },
    );
    assert_eq!(
        call(&client, &ns.addr, put).await.code,
        response_code::SUCCESS
    );
    let broker = Broker::new("c", "broker-a", 0, "a:1", &["Ordered", "Plain"]);
    let response = call(&conn, &ns.addr, broker.register_request()).await;
    let table: KvTable = json::from_slice("KvTable", &response.body).unwrap();
    assert_eq!(table.table["Ordered"], "broker-a:4");
    let ordered = route(&client, &ns.addr, "Ordered").await.unwrap();
    assert_eq!(ordered.order_topic_conf.as_deref(), Some("broker-a:4"));
    assert_eq!(
        route(&client, &ns.addr, "Plain")
            .await
            .unwrap()
            .order_topic_conf,
        None
    );
}

#[tokio::test]
async fn unregister_heartbeat_and_data_version() {
    let ns = TestNamesrv::start().await;
    let (conn, client) = (client(), client());
    let broker = Broker::new("c", "b", 0, "b:1", &["T"]);
    broker.register(&conn, &ns.addr).await;

    // QUERY_DATA_VERSION: same version → unchanged, and the name server's version back.
    let query = |counter: i64| {
        let mut version = broker.version.clone();
        version.counter = counter;
        RemotingCommand::request_with_header(
            request_code::QUERY_DATA_VERSION,
            &QueryDataVersionRequestHeader {
                broker_name: "b".into(),
                broker_addr: "b:1".into(),
                cluster_name: "c".into(),
                broker_id: 0,
            },
        )
        .with_body(json::to_vec(&version))
    };
    let before = ns.server.route_info().live_brokers()[0].last_update;
    let response = call(&conn, &ns.addr, query(1)).await;
    let header: QueryDataVersionResponseHeader = response.decode_header().unwrap();
    assert!(!header.changed);
    assert_eq!(
        json::from_slice::<vostok_remoting::protocol::body::DataVersion>("dv", &response.body)
            .unwrap(),
        broker.version
    );
    let header: QueryDataVersionResponseHeader = call(&conn, &ns.addr, query(2))
        .await
        .decode_header()
        .unwrap();
    assert!(header.changed);

    // BROKER_HEARTBEAT refreshes the broker's clock.
    let heartbeat = RemotingCommand::request_with_header(
        request_code::BROKER_HEARTBEAT,
        &BrokerHeartbeatRequestHeader {
            cluster_name: "c".into(),
            broker_addr: "b:1".into(),
            broker_name: "b".into(),
            ..Default::default()
        },
    );
    assert_eq!(
        call(&conn, &ns.addr, heartbeat).await.code,
        response_code::SUCCESS
    );
    assert!(ns.server.route_info().live_brokers()[0].last_update > before);

    let unregister = RemotingCommand::request_with_header(
        request_code::UNREGISTER_BROKER,
        &UnRegisterBrokerRequestHeader {
            broker_name: "b".into(),
            broker_addr: "b:1".into(),
            cluster_name: "c".into(),
            broker_id: 0,
        },
    );
    assert_eq!(
        call(&conn, &ns.addr, unregister).await.code,
        response_code::SUCCESS
    );
    assert_eq!(
        route(&client, &ns.addr, "T").await.unwrap_err().code,
        response_code::TOPIC_NOT_EXIST
    );
}

#[tokio::test]
async fn write_permission_and_config_for_tools() {
    let ns = TestNamesrv::start().await;
    let (conn, client) = (client(), client());
    Broker::new("c", "b", 0, "b:1", &["T1", "T2"])
        .register(&conn, &ns.addr)
        .await;
    let perm_request = |code| {
        RemotingCommand::request_with_header(
            code,
            &BrokerPermRequestHeader {
                broker_name: "b".into(),
            },
        )
    };
    let wiped: WipeWritePermOfBrokerResponseHeader = call(
        &client,
        &ns.addr,
        perm_request(request_code::WIPE_WRITE_PERM_OF_BROKER),
    )
    .await
    .decode_header()
    .unwrap();
    assert_eq!(wiped.wipe_topic_count, 2);
    let t1 = route(&client, &ns.addr, "T1").await.unwrap();
    assert_eq!(t1.queue_datas[0].perm, perm::READ);
    assert!(t1.write_queues().is_empty());
    let added: AddWritePermOfBrokerResponseHeader = call(
        &client,
        &ns.addr,
        perm_request(request_code::ADD_WRITE_PERM_OF_BROKER),
    )
    .await
    .decode_header()
    .unwrap();
    assert_eq!(added.add_topic_count, 2);
    assert_eq!(
        route(&client, &ns.addr, "T1")
            .await
            .unwrap()
            .write_queues()
            .len(),
        4
    );

    let config = call(
        &client,
        &ns.addr,
        RemotingCommand::request(request_code::GET_NAMESRV_CONFIG),
    )
    .await;
    let text = String::from_utf8(config.body.to_vec()).unwrap();
    assert!(text.contains("listenPort=0\n"), "{text}");
    assert!(
        text.contains("scanNotActiveBrokerInterval=5000\n"),
        "{text}"
    );
}

#[tokio::test]
async fn switched_off_listings_and_the_startup_wait() {
    let ns = TestNamesrv::start_with(|c| {
        c.enable_all_topic_list = false;
        c.need_wait_for_service = true;
        c.wait_seconds_for_service = 3600;
    })
    .await;
    let client = client();
    let all = call(
        &client,
        &ns.addr,
        RemotingCommand::request(request_code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
    )
    .await;
    assert_eq!(
        (all.code, all.remark()),
        (response_code::SYSTEM_ERROR, "disable")
    );
    let early = route(&client, &ns.addr, "T").await.unwrap_err();
    assert_eq!(
        (early.code, early.remark()),
        (response_code::SYSTEM_ERROR, "name server not ready")
    );
}

#[tokio::test]
async fn malformed_requests_get_errors_and_the_server_keeps_serving() {
    let ns = TestNamesrv::start().await;
    let (conn, client) = (client(), client());
    let good = Broker::new("c", "b", 0, "b:1", &["T"]);

    // A missing mandatory header field is named.
    let mut request = good.register_request();
    request.ext_fields.remove("brokerName");
    let response = call(&conn, &ns.addr, request).await;
    assert_eq!(response.code, response_code::SYSTEM_ERROR);
    assert!(
        response.remark().contains("brokerName"),
        "{}",
        response.remark()
    );

    // A malformed number is named too.
    let mut request = good.register_request();
    request.ext_fields.insert("brokerId", "zero");
    let response = call(&conn, &ns.addr, request).await;
    assert!(
        response.remark().contains("brokerId"),
        "{}",
        response.remark()
    );

    // An empty broker address would poison every route.
    let mut request = good.register_request();
    request.ext_fields.insert("brokerAddr", "");
    let response = call(&conn, &ns.addr, request).await;
    assert_eq!(response.code, response_code::SYSTEM_ERROR);
    assert!(
        response.remark().contains("brokerAddr"),
        "{}",
        response.remark()
    );

    // Bodies: not JSON, JSON of the wrong shape, a zlib flag on plain JSON,
    // a truncated zlib stream.
    let compressed = good.body().encode_compressed();
    let bad_bodies: [(&[u8], bool); 5] = [
        (b"{\"filterServerList\":[", false),
        (b"\xff\xfe\x00garbage", false),
        (
            br#"{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"perm":"six"}}}}"#,
            false,
        ),
        (&good.body().encode(), true),
        (&compressed[..compressed.len() / 2], true),
    ];
    for (body, zipped) in bad_bodies {
        let mut request = good.register_request().with_body(body.to_vec());
        request.ext_fields.insert("compressed", zipped.to_string());
        let response = call(&conn, &ns.addr, request).await;
        assert_eq!(response.code, response_code::SYSTEM_ERROR);
        assert!(
            response.remark().contains("RegisterBrokerBody"),
            "{}",
            response.remark()
        );
    }
    assert!(
        ns.server.route_info().broker_data("b").is_none(),
        "nothing registered"
    );

    // Other requests without their headers.
    for code in [
        request_code::GET_ROUTEINFO_BY_TOPIC,
        request_code::UNREGISTER_BROKER,
        request_code::GET_KV_CONFIG,
        request_code::WIPE_WRITE_PERM_OF_BROKER,
        request_code::QUERY_DATA_VERSION,
    ] {
        let response = call(&client, &ns.addr, RemotingCommand::request(code)).await;
        assert_eq!(response.code, response_code::SYSTEM_ERROR, "code {code}");
        assert!(
            response.remark().contains("missing header field"),
            "{}",
            response.remark()
        );
    }
    let response = call(&client, &ns.addr, RemotingCommand::request(9999)).await;
    assert_eq!(response.code, response_code::REQUEST_CODE_NOT_SUPPORTED);

    // Garbage on a raw socket closes that connection only.
    {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut raw = tokio::net::TcpStream::connect(&ns.addr).await.unwrap();
        raw.write_all(&[0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0])
            .await
            .unwrap();
        let mut buf = [0u8; 16];
        let n = tokio::time::timeout(T, raw.read(&mut buf))
            .await
            .unwrap()
            .unwrap_or(0);
        assert_eq!(n, 0, "connection closed");
    }

    // Same connections, still served.
    good.register(&conn, &ns.addr).await;
    assert!(route(&client, &ns.addr, "T").await.is_ok());
}

#[tokio::test]
async fn binary_rocketmq_headers_are_understood() {
    let ns = TestNamesrv::start().await;
    let mut config = vostok_remoting::ClientConfig::default();
    config.connection.serialize_type = vostok_remoting::SerializeType::RocketMq;
    let conn = vostok_remoting::RemotingClient::new(config, None);
    Broker::new("c", "b", 0, "b:1", &["Binary"])
        .register(&conn, &ns.addr)
        .await;
    let route = route(&conn, &ns.addr, "Binary").await.unwrap();
    assert_eq!(route.queue_datas.len(), 1);
}

#[tokio::test]
async fn oneway_registration_is_applied_without_an_answer() {
    let ns = TestNamesrv::start().await;
    let conn = client();
    let broker = Broker::new("c", "b", 0, "b:1", &["Oneway"]);
    conn.invoke_oneway(&ns.addr, broker.register_request(), T)
        .await
        .unwrap();
    let routes = ns.server.route_info().clone();
    wait_until("the oneway registration is applied", || {
        let routes = routes.clone();
        async move { routes.pickup_topic_route_data("Oneway").is_some() }
    })
    .await;
    // The connection carries no stray response: the next call gets its own.
    assert!(route(&conn, &ns.addr, "Oneway").await.is_ok());
}

#[tokio::test]
async fn slave_registration_body_of_a_4x_broker_is_not_read() {
    let ns = TestNamesrv::start().await;
    let conn = client();
    let mut slave = Broker::new("c", "b", 1, "s:1", &["SlaveOnly"]);
    let mut header = slave.header();
    header.enable_acting_master = None;
    slave
        .topics
        .push(vostok_remoting::protocol::body::TopicConfig::new("Also", 1));
    let request = RemotingCommand::request_with_header(request_code::REGISTER_BROKER, &header)
        .with_body(RegisterBrokerBody::encode(&slave.body()));
    assert_eq!(
        call(&conn, &ns.addr, request).await.code,
        response_code::SUCCESS
    );
    assert!(route(&conn, &ns.addr, "SlaveOnly").await.is_err());
    assert!(ns.server.route_info().broker_data("b").is_some());
}
