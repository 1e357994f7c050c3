//! The admin layer against a scripted server on 127.0.0.1 that plays name server and
//! broker: name-server failover, error codes as typed errors, and records decoded by
//! the codec pulls use.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use vostok_client::{AdminClient, ClientConfig, ClientError, MessageQueue};
use vostok_remoting::protocol::header::{
    GetRouteInfoRequestHeader, QueryMessageRequestHeader, TopicRequestHeader,
};
use vostok_remoting::protocol::message::{MessageExt, Properties};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::{
    BoxFuture, Channel, FrameLimits, RemotingCodec, RemotingCommand, RemotingServer,
    RequestProcessor, SerializeType, ServerConfig,
};

const CLUSTER: &str = r#"{"brokerAddrTable":{"b":{"brokerAddrs":{"0":"127.0.0.1:1"},"brokerName":"b","cluster":"C"}},"clusterAddrTable":{"C":["b"]}}"#;
const STATS: &str = r#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":7,"minOffset":2}}}"#;

fn record(key: &str, commit_log_offset: i64) -> Vec<u8> {
    let mut properties = Properties::new();
    properties.insert("KEYS", key);
    MessageExt {
        topic: "T".into(),
        flag: 0,
        properties,
        body: Bytes::from_static(b"hello"),
        queue_id: 0,
        store_size: 0,
        queue_offset: commit_log_offset,
        sys_flag: 0,
        born_timestamp: 1,
        born_host: "127.0.0.1:5000".parse().unwrap(),
        store_timestamp: 2,
        store_host: "127.0.0.1:10911".parse().unwrap(),
        commit_log_offset,
        body_crc: 0,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
    .encode()
}

/// Answers each admin request from a script.
struct Scripted;

impl RequestProcessor for Scripted {
    fn process<'a>(
        &'a self,
        _channel: &'a Channel,
        request: RemotingCommand,
    ) -> BoxFuture<'a, Option<RemotingCommand>> {
        Box::pin(async move {
            let ok = |body: Vec<u8>| RemotingCommand::success().with_body(body);
            let fail = |code, remark: &str| RemotingCommand::response(code, remark.to_owned());
            Some(match request.code {
                request_code::GET_BROKER_CLUSTER_INFO => ok(CLUSTER.into()),
                request_code::GET_ROUTEINFO_BY_TOPIC => {
                    let h: GetRouteInfoRequestHeader = request.decode_header().unwrap();
                    fail(response_code::TOPIC_NOT_EXIST, &h.topic)
                }
                request_code::GET_TOPIC_STATS_INFO => {
                    let h: TopicRequestHeader = request.decode_header().unwrap();
                    match h.topic.as_str() {
                        "T" => ok(STATS.into()),
                        _ => fail(response_code::REQUEST_CODE_NOT_SUPPORTED, "no stats"),
                    }
                }
                request_code::QUERY_MESSAGE => {
                    let h: QueryMessageRequestHeader = request.decode_header().unwrap();
                    if h.key == "none" {
                        fail(response_code::QUERY_NOT_FOUND, "")
                    } else {
                        // Two records, then a torn third one.
                        let mut body = record("k1", 0);
                        body.extend(record("k2", 100));
                        body.extend(&record("k3", 200)[..20]);
                        ok(body)
                    }
                }
                request_code::GET_CONSUMER_CONNECTION_LIST => {
                    fail(response_code::CONSUMER_NOT_ONLINE, "not online")
                }
                _ => vostok_remoting::processor::not_supported(&request),
            })
        })
    }
}

async fn server() -> RemotingServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    RemotingServer::start(
        listener,
        Arc::new(Scripted),
        ServerConfig::default(),
        Vec::new(),
    )
}

/// An address nothing listens on: a listener bound and dropped.
fn closed_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

fn admin(namesrv: &str) -> AdminClient {
    let config = ClientConfig {
        mq_client_api_timeout: Duration::from_secs(10),
        ..ClientConfig::with_namesrv(namesrv)
    };
    AdminClient::new(&config).unwrap()
}

/// The SDK's requests carry binary (`ROCKETMQ`) headers by default, and it reads an
/// answer in JSON to them, as a server that always answers in its own default sends.
#[tokio::test]
async fn requests_carry_binary_headers_and_json_answers_are_read() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut length = [0u8; 4];
        socket.read_exact(&mut length).await.unwrap();
        let mut frame = vec![0u8; u32::from_be_bytes(length) as usize];
        socket.read_exact(&mut frame).await.unwrap();
        // The header word's top byte is the type; a binary header then starts with
        // code (2 bytes), language (1), version (2) and the opaque (4).
        let serialize_type = frame[0];
        let opaque = i32::from_be_bytes(frame[9..13].try_into().unwrap());
        let mut answer = RemotingCommand::success().with_body(CLUSTER);
        answer.opaque = opaque;
        answer.serialize_type = SerializeType::Json;
        let bytes = RemotingCodec::new(FrameLimits::default())
            .encode_to_bytes(&answer)
            .unwrap();
        socket.write_all(&bytes).await.unwrap();
        serialize_type
    });

    let info = admin(&addr).examine_broker_cluster_info().await.unwrap();
    assert_eq!(
        info.broker_addr_table["b"].master_addr(),
        Some("127.0.0.1:1")
    );
    assert_eq!(
        server.await.unwrap(),
        SerializeType::RocketMq.code(),
        "the request's header word names the binary type"
    );
}

#[tokio::test]
async fn name_servers_are_tried_in_order_until_one_answers() {
    let server = server().await;
    let live = server.local_addr().to_string();
    let closed = closed_addr();

    let client = admin(&format!("{closed};{live}"));
    let info = client.examine_broker_cluster_info().await.unwrap();
    assert_eq!(
        info.broker_addr_table["b"].master_addr(),
        Some("127.0.0.1:1")
    );
    // An answer, even an error code, is final: the route error names the live server.
    let err = client.examine_topic_route_info("Nope").await.unwrap_err();
    assert_eq!(err.response_code(), Some(response_code::TOPIC_NOT_EXIST));
    assert!(
        matches!(&err, ClientError::Broker { addr, .. } if *addr == live),
        "{err}"
    );
    client.shutdown().await;

    let client = admin(&closed);
    let err = client.examine_broker_cluster_info().await.unwrap_err();
    assert!(err.is_transport(), "{err}");
    assert!(
        matches!(&err, ClientError::Remoting { addr, .. } if *addr == closed),
        "{err}"
    );
    client.shutdown().await;
    server.shutdown().await;
}

#[tokio::test]
async fn records_decode_as_pulls_do_and_codes_stay_typed() {
    let server = server().await;
    let addr = server.local_addr().to_string();
    let admin = admin(&addr);

    let query = |key: &str| QueryMessageRequestHeader {
        topic: "T".into(),
        key: key.into(),
        max_num: 32,
        begin_timestamp: 0,
        end_timestamp: i64::MAX,
        unique_key_query: None,
    };
    // The torn record ends the list, as it ends a pull's.
    let found = admin.query_message(&addr, &query("k")).await.unwrap();
    let keys: Vec<_> = found.iter().map(|m| m.property("KEYS").unwrap()).collect();
    assert_eq!(keys, ["k1", "k2"]);
    assert_eq!(found[1].commit_log_offset, 100);
    assert!(admin
        .query_message(&addr, &query("none"))
        .await
        .unwrap()
        .is_empty());

    let stats = admin.examine_topic_stats(&addr, "T").await.unwrap();
    let offsets = stats.offset_table[&MessageQueue::new("T", "b", 0)];
    assert_eq!((offsets.min_offset, offsets.max_offset), (2, 7));
    let err = admin.examine_topic_stats(&addr, "U").await.unwrap_err();
    assert_eq!(
        err.response_code(),
        Some(response_code::REQUEST_CODE_NOT_SUPPORTED)
    );
    let err = admin
        .examine_consumer_connection_info(&addr, "g")
        .await
        .unwrap_err();
    assert_eq!(
        err.response_code(),
        Some(response_code::CONSUMER_NOT_ONLINE)
    );

    admin.shutdown().await;
    server.shutdown().await;
}
