//! Route lookups against a name server holding 1,000 topics on 10 brokers, every
//! topic served by all 10 (the largest route: 10 queue datas, 10 broker datas).
//!
//! * `pickup`: `RouteInfoManager::pickup_topic_route_data` alone (read lock, copy).
//! * `pickup_encode`: plus the compact JSON body, i.e. the handler's whole work.
//! * `get_routeinfo_roundtrip`: GET_ROUTEINFO_BY_TOPIC from a client over loopback.

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tokio::net::TcpListener;
use vostok_namesrv::{NameServer, NamesrvConfig};
use vostok_remoting::protocol::body::{
    DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper,
};
use vostok_remoting::protocol::header::{GetRouteInfoRequestHeader, RegisterBrokerRequestHeader};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::{ClientConfig, RemotingClient, RemotingCommand};

const BROKERS: usize = 10;
const TOPICS: usize = 1_000;
const T: Duration = Duration::from_secs(10);

fn register_request(broker: usize, topics: &[String]) -> RemotingCommand {
    let body = RegisterBrokerBody {
        filter_server_list: Vec::new(),
        topic_config_serialize_wrapper: TopicConfigSerializeWrapper {
            data_version: DataVersion::new(1_700_000_000_000),
            topic_config_table: topics
                .iter()
                .map(|t| (t.clone(), TopicConfig::new(t.clone(), 8)))
                .collect(),
            ..Default::default()
        },
    };
    RemotingCommand::request_with_header(
        request_code::REGISTER_BROKER,
        &RegisterBrokerRequestHeader {
            broker_name: format!("broker-{broker}"),
            broker_addr: format!("10.0.0.{broker}:10911"),
            cluster_name: "DefaultCluster".into(),
            ha_server_addr: format!("10.0.0.{broker}:10912"),
            broker_id: 0,
            heartbeat_timeout_millis: None,
            enable_acting_master: Some(false),
            compressed: Some(false),
            body_crc32: Some(0),
        },
    )
    .with_body(body.encode())
}

fn route_request(topic: &str) -> RemotingCommand {
    RemotingCommand::request_with_header(
        request_code::GET_ROUTEINFO_BY_TOPIC,
        &GetRouteInfoRequestHeader {
            topic: topic.to_owned(),
            accept_standard_json_only: None,
        },
    )
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let topics: Vec<String> = (0..TOPICS).map(|i| format!("BenchTopic-{i}")).collect();
    let (namesrv, client, brokers, addr) = runtime.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let config = NamesrvConfig {
            kv_config_path: dir.path().join("kvConfig.json"),
            ..Default::default()
        };
        let namesrv = NameServer::start(config, listener).await.expect("start");
        let addr = namesrv.local_addr().to_string();
        // Each broker registers over its own connection, which must stay open.
        let mut brokers = Vec::new();
        for b in 0..BROKERS {
            let conn = RemotingClient::new(ClientConfig::default(), None);
            let response = conn
                .invoke_sync(&addr, register_request(b, &topics), T)
                .await
                .expect("register");
            assert_eq!(response.code, response_code::SUCCESS);
            brokers.push(conn);
        }
        let client = Arc::new(RemotingClient::new(ClientConfig::default(), None));
        client.channel(&addr).await.expect("connect");
        (namesrv, client, brokers, addr)
    });
    let routes = namesrv.route_info().clone();
    assert_eq!(routes.topic_count(), TOPICS);
    let sample = routes.pickup_topic_route_data(&topics[0]).expect("route");
    assert_eq!(sample.queue_datas.len(), BROKERS);

    let mut group = c.benchmark_group("route_lookup");
    group.throughput(Throughput::Elements(1));

    let mut i = 0usize;
    group.bench_function("pickup", |b| {
        b.iter(|| {
            i = (i + 1) % TOPICS;
            routes.pickup_topic_route_data(&topics[i]).expect("route")
        })
    });

    group.bench_function("pickup_encode", |b| {
        b.iter(|| {
            i = (i + 1) % TOPICS;
            routes
                .pickup_topic_route_data(&topics[i])
                .expect("route")
                .encode()
        })
    });

    group.bench_function("get_routeinfo_roundtrip", |b| {
        b.iter(|| {
            i = (i + 1) % TOPICS;
            let request = route_request(&topics[i]);
            let response = runtime
                .block_on(client.invoke_sync(&addr, request, T))
                .expect("route answer");
            assert_eq!(response.code, response_code::SUCCESS);
            response
        })
    });
    group.finish();

    runtime.block_on(async {
        client.shutdown().await;
        for broker in &brokers {
            broker.shutdown().await;
        }
        namesrv.shutdown().await;
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
