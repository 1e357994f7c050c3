//! A user confined to a namespace over gRPC (docs/security.md#namespaces): the
//! resource's `resource_namespace`, or the call's `x-mq-namespace`, makes the broker's
//! name `ns%name`, and the guard refuses every name outside the user's namespace,
//! whatever its other ACL entries allow.

use std::time::Duration;

use tonic::transport::Channel;
use vostok_auth::v2::{AclInfo, AuthMetadata, PolicyEntryInfo, PolicyInfo, UserInfo};
use vostok_broker::grpc::proto::messaging_service_client::MessagingServiceClient;
use vostok_broker::grpc::proto::settings::PubSub;
use vostok_broker::grpc::proto::telemetry_command::Command;
use vostok_broker::grpc::proto::{
    ClientType, Code, HeartbeatRequest, Message, Publishing, QueryRouteRequest, Resource,
    SendMessageRequest, Settings, Subscription, SubscriptionEntry, SystemProperties,
    TelemetryCommand,
};
use vostok_broker::{Broker, BrokerHandle};
use vostok_remoting::auth::grpc::{date_time, sign};

mod common;

const T: Duration = Duration::from_secs(30);

/// alice: confined to `ns1`, and allowed Pub and Sub on every topic and group.
fn seed_users(dir: &std::path::Path) {
    let metadata = AuthMetadata::open(dir.to_path_buf()).unwrap();
    metadata
        .create_user(UserInfo {
            username: Some("alice".into()),
            password: Some("alice-password".into()),
            user_type: Some("Normal".into()),
            user_status: None,
        })
        .unwrap();
    let entry = |resource: &str| PolicyEntryInfo {
        resource: resource.into(),
        actions: vec!["Pub".into(), "Sub".into()],
        source_ips: vec![],
        decision: "Allow".into(),
    };
    let acl = AclInfo {
        subject: Some("User:alice".into()),
        policies: vec![PolicyInfo {
            policy_type: None,
            entries: vec![entry("Namespace:ns1"), entry("Topic:*"), entry("Group:*")],
        }],
    };
    metadata.upsert_acl("User:alice", acl).unwrap();
}

async fn start() -> (
    BrokerHandle,
    tempfile::TempDir,
    MessagingServiceClient<Channel>,
) {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    seed_users(&store.join("config").join("auth"));
    let mut config = common::broker_config("grpc-ns", store);
    config
        .apply_property("authenticationEnabled", "true")
        .unwrap();
    config
        .apply_property("authorizationEnabled", "true")
        .unwrap();
    let broker = Broker::start(config).await.expect("broker starts");
    let addr = broker.grpc_addr().expect("gRPC enabled");
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_timeout(T)
        .connect()
        .await
        .expect("connects");
    (broker, dir, MessagingServiceClient::new(channel))
}

/// A call signed by alice, with `x-mq-namespace: header_ns` when given.
fn as_alice<B>(body: B, header_ns: Option<&str>) -> tonic::Request<B> {
    let date = date_time(vostok_remoting::support::time::now_millis());
    let mut r = tonic::Request::new(body);
    let m = r.metadata_mut();
    m.insert("x-mq-client-id", "ns-test@1".parse().unwrap());
    m.insert("x-mq-language", "RUST".parse().unwrap());
    m.insert("x-mq-date-time", date.parse().unwrap());
    m.insert(
        "authorization",
        sign("alice", "alice-password", &date).parse().unwrap(),
    );
    if let Some(ns) = header_ns {
        m.insert("x-mq-namespace", ns.parse().unwrap());
    }
    r
}

fn resource(ns: &str, name: &str) -> Option<Resource> {
    Some(Resource {
        resource_namespace: ns.into(),
        name: name.into(),
    })
}

fn send_to(topic: Option<Resource>) -> SendMessageRequest {
    SendMessageRequest {
        messages: vec![Message {
            topic,
            system_properties: Some(SystemProperties {
                message_id: "0102030405060708090A0B0C0D0E0F10".into(),
                ..Default::default()
            }),
            body: bytes::Bytes::from_static(b"hello"),
            ..Default::default()
        }],
    }
}

fn code(status: &Option<vostok_broker::grpc::proto::Status>) -> Code {
    Code::try_from(status.as_ref().map_or(0, |s| s.code)).unwrap_or(Code::Unspecified)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confined_user_reaches_only_its_namespace_over_grpc() {
    let (broker, _dir, mut client) = start().await;

    for (topic, header_ns) in [
        (resource("ns1", "orders"), None),
        (resource("", "orders"), Some("ns1")),
    ] {
        let r = client
            .send_message(as_alice(send_to(topic), header_ns))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(code(&r.status), Code::Ok, "{:?}", r.status);
    }
    for (topic, header_ns) in [
        (resource("ns2", "orders"), None),
        (resource("", "orders"), Some("ns2")),
        (resource("", "orders"), None),
    ] {
        let r = client
            .send_message(as_alice(send_to(topic.clone()), header_ns))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            code(&r.status),
            Code::Forbidden,
            "{topic:?}: {:?}",
            r.status
        );
        let remark = r.status.map(|s| s.message).unwrap_or_default();
        assert!(remark.contains("confined to namespace ns1"), "{remark}");
    }

    let route = |ns: &str| QueryRouteRequest {
        topic: resource(ns, "orders"),
        endpoints: None,
    };
    let r = client
        .query_route(as_alice(route("ns1"), None))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&r.status), Code::Ok, "{:?}", r.status);
    let r = client
        .query_route(as_alice(route("ns2"), None))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&r.status), Code::Forbidden, "{:?}", r.status);

    // A heartbeat names its group: alice's own passes the guard (this bare client has
    // sent no settings, which the broker asks for next), bob's does not.
    for ns in ["ns1", "ns2"] {
        let heartbeat = HeartbeatRequest {
            group: resource(ns, "g"),
            client_type: ClientType::PushConsumer as i32,
        };
        let r = client
            .heartbeat(as_alice(heartbeat, None))
            .await
            .unwrap()
            .into_inner();
        let forbidden = code(&r.status) == Code::Forbidden;
        assert_eq!(forbidden, ns == "ns2", "{ns}: {:?}", r.status);
    }
    broker.shutdown().await;
}

/// The settings a telemetry stream carries name only alice's namespace: a consumer
/// group or a subscription or a publishing topic of another ends the stream
/// PERMISSION_DENIED; her own are answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confined_user_sends_settings_of_its_namespace_only() {
    let (broker, _dir, mut client) = start().await;
    let subscription = |group_ns: &str, topic_ns: &str| Settings {
        client_type: Some(ClientType::PushConsumer as i32),
        pub_sub: Some(PubSub::Subscription(Subscription {
            group: resource(group_ns, "g"),
            subscriptions: vec![SubscriptionEntry {
                topic: resource(topic_ns, "orders"),
                expression: None,
            }],
            ..Default::default()
        })),
        ..Default::default()
    };
    let publishing = |ns: &str| Settings {
        client_type: Some(ClientType::Producer as i32),
        pub_sub: Some(PubSub::Publishing(Publishing {
            topics: vec![resource(ns, "orders").unwrap()],
            ..Default::default()
        })),
        ..Default::default()
    };
    for (settings, allowed) in [
        (subscription("ns1", "ns1"), true),
        (publishing("ns1"), true),
        (subscription("ns2", "ns1"), false),
        (subscription("ns1", "ns2"), false),
        (publishing("ns2"), false),
    ] {
        let what = format!("{:?}", settings.pub_sub);
        let outbound = futures_util::stream::iter([TelemetryCommand {
            status: None,
            command: Some(Command::Settings(settings)),
        }]);
        let mut inbound = client
            .telemetry(as_alice(outbound, None))
            .await
            .unwrap()
            .into_inner();
        let answer = tokio::time::timeout(T, inbound.message()).await.unwrap();
        match answer {
            Ok(Some(_)) => assert!(allowed, "{what}: answered"),
            Ok(None) => panic!("{what}: the stream ended without an answer"),
            Err(e) => {
                assert!(!allowed, "{what}: {e}");
                assert_eq!(e.code(), tonic::Code::PermissionDenied, "{what}: {e}");
                assert!(e.message().contains("confined to namespace ns1"), "{e}");
            }
        }
    }
    broker.shutdown().await;
}
