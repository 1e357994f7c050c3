//! `mqadmin consumerConnection` lists a group's clients whatever protocol they speak:
//! a remoting push consumer of the SDK and a gRPC consumer (a session opened by a
//! Telemetry settings exchange, as the 5.x clients open theirs) in one group, against a
//! broker in this process.

use std::time::Duration;

use tempfile::TempDir;
use vostok_broker::grpc::proto::messaging_service_client::MessagingServiceClient;
use vostok_broker::grpc::proto::settings::PubSub;
use vostok_broker::grpc::proto::telemetry_command::Command;
use vostok_broker::grpc::proto::{
    FilterExpression, QueryRouteRequest, Resource, Settings, Subscription, SubscriptionEntry,
    TelemetryCommand,
};
use vostok_broker::{Broker, BrokerConfig, BrokerHandle};
use vostok_client::{
    CommonConsumerConfig, ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, ConsumerConfig,
    MessageExt, MessageListener, PushConsumer,
};

const DEADLINE: Duration = Duration::from_secs(20);

async fn start_broker() -> (BrokerHandle, TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = BrokerConfig::loopback("conn-test", dir.path().join("store"));
    config.store.mapped_file_size_commit_log = 16 * 1024 * 1024;
    (Broker::start(config).await.expect("broker starts"), dir)
}

fn resource(name: &str) -> Option<Resource> {
    Some(Resource {
        resource_namespace: String::new(),
        name: name.into(),
    })
}

async fn mqadmin(namesrv: &str, args: &[&str]) -> (bool, String) {
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_mqadmin"))
        .args(args)
        .arg("-n")
        .arg(namesrv)
        .env_remove("NAMESRV_ADDR")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(DEADLINE, run)
        .await
        .expect("mqadmin finishes")
        .expect("mqadmin runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remoting_and_grpc_consumers_are_listed_together() {
    let (broker, _dir) = start_broker().await;
    let namesrv = broker.namesrv_addr();
    let (ok, _) = mqadmin(&namesrv, &["consumerConnection", "-g", "mixed-group"]).await;
    assert!(!ok, "nobody online yet");

    // A gRPC consumer: its settings open a session in the group.
    let addr = broker.grpc_addr().expect("gRPC enabled");
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = MessagingServiceClient::new(channel);
    let settings = Settings {
        client_type: Some(3),
        pub_sub: Some(PubSub::Subscription(Subscription {
            group: resource("mixed-group"),
            subscriptions: vec![SubscriptionEntry {
                topic: resource("MixedTopic"),
                expression: Some(FilterExpression {
                    r#type: 1,
                    expression: "TagA".into(),
                }),
            }],
            ..Default::default()
        })),
        ..Default::default()
    };
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tx.send(TelemetryCommand {
        status: None,
        command: Some(Command::Settings(settings)),
    })
    .await
    .unwrap();
    let mut request = tonic::Request::new(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|c| (c, rx))
    }));
    request
        .metadata_mut()
        .insert("x-mq-client-id", "grpc-client@1".parse().unwrap());
    request
        .metadata_mut()
        .insert("x-mq-language", "PYTHON".parse().unwrap());
    let mut telemetry = grpc.telemetry(request).await.unwrap().into_inner();
    let answer = tokio::time::timeout(DEADLINE, telemetry.message())
        .await
        .expect("settings answered")
        .unwrap();
    assert!(answer.is_some());

    // The topic, created by a gRPC route lookup as a 5.x client's start does.
    let mut route = tonic::Request::new(QueryRouteRequest {
        topic: resource("MixedTopic"),
        endpoints: None,
    });
    route
        .metadata_mut()
        .insert("x-mq-client-id", "grpc-client@1".parse().unwrap());
    grpc.query_route(route).await.unwrap();

    // A remoting push consumer of the same group.
    let consumer = PushConsumer::new(ConsumerConfig {
        common: CommonConsumerConfig {
            client: vostok_client::ClientConfig {
                instance_name: "remoting-member".into(),
                // The topic appears after the consumer starts (the gRPC route below).
                poll_name_server_interval: Duration::from_millis(200),
                heartbeat_broker_interval: Duration::from_millis(200),
                ..vostok_client::ClientConfig::with_namesrv(&namesrv)
            },
            consumer_group: "mixed-group".into(),
            ..CommonConsumerConfig::push_defaults()
        },
        ..Default::default()
    });
    consumer.subscribe("MixedTopic", "TagA").unwrap();
    consumer.register_message_listener(MessageListener::concurrently(
        |_: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer.start().await.unwrap();

    let deadline = tokio::time::Instant::now() + DEADLINE;
    let out = loop {
        let (ok, out) = mqadmin(&namesrv, &["consumerConnection", "-g", "mixed-group"]).await;
        if ok && out.contains("PYTHON") && out.contains("RUST") {
            break out;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "both clients never listed:\n{out}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(out.contains("grpc-client@1"), "{out}");
    assert!(out.contains("MixedTopic"), "{out}");
    assert!(out.contains("TagA"), "{out}");
    let (ok, json) = mqadmin(
        &namesrv,
        &["consumerConnection", "-g", "mixed-group", "--json"],
    )
    .await;
    assert!(ok, "{json}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let languages: Vec<&str> = v["connectionSet"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["language"].as_str().unwrap())
        .collect();
    assert!(
        languages.contains(&"PYTHON") && languages.contains(&"RUST"),
        "{v}"
    );
    assert_eq!(v["subscriptionTable"]["MixedTopic"], "TagA", "{v}");
    consumer.shutdown().await;
    drop(tx);
    broker.shutdown().await;
}
