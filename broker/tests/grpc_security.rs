//! Security of the gRPC endpoint.
//!
//! ACL: the `authorization` metadata of the 5.x clients is checked against the same
//! plain_acl.yml accounts as remoting requests, for the same resources. No signature or
//! a wrong one: UNAUTHORIZED; a signed call lacking a permission: FORBIDDEN; what the
//! account may do goes through.
//!
//! TLS: with `tls.server.*` configured, the gRPC port uses that certificate, and
//! `enforcing` refuses plaintext there as on the remoting port.

use std::time::Duration;

use tonic::transport::Channel;
use vostok_broker::grpc::proto::messaging_service_client::MessagingServiceClient;
use vostok_broker::grpc::proto::{
    Code, Message, QueryRouteRequest, Resource, SendMessageRequest, SystemProperties,
};
use vostok_broker::{Broker, BrokerConfig, BrokerHandle};
use vostok_remoting::auth::grpc::sign;

const T: Duration = Duration::from_secs(30);
const DATE: &str = "20261201T120000Z";

const ACL: &str = "accounts:
  - accessKey: grpc-user
    secretKey: grpc-secret-1
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - Allowed=PUB|SUB
";

async fn start() -> (
    BrokerHandle,
    tempfile::TempDir,
    MessagingServiceClient<Channel>,
) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("conf")).unwrap();
    std::fs::write(dir.path().join("conf").join("plain_acl.yml"), ACL).unwrap();
    let mut config = BrokerConfig {
        broker_name: "grpc-acl".into(),
        broker_ip1: "127.0.0.1".into(),
        broker_ip2: "127.0.0.1".into(),
        listen_port: 0,
        fast_listen_enable: false,
        namesrv_addr: None,
        embedded_namesrv_port: 0,
        ..BrokerConfig::default()
    };
    config.apply_property("aclEnable", "true").unwrap();
    config
        .apply_property("rocketmqHome", &dir.path().display().to_string())
        .unwrap();
    config.grpc.grpc_server_port = 0;
    config.store.store_path_root_dir = dir.path().join("store");
    config.store.mapped_file_size_commit_log = 16 * 1024 * 1024;
    let broker = Broker::start(config).await.expect("broker starts");
    let addr = broker.grpc_addr().expect("gRPC enabled");
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_timeout(T)
        .connect()
        .await
        .expect("connects in the clear");
    (broker, dir, MessagingServiceClient::new(channel))
}

/// A request with the client's metadata, signed with `secret` when given.
fn req<B>(body: B, secret: Option<&str>) -> tonic::Request<B> {
    let mut r = tonic::Request::new(body);
    let m = r.metadata_mut();
    m.insert("x-mq-client-id", "acl-test@1".parse().unwrap());
    m.insert("x-mq-language", "RUST".parse().unwrap());
    m.insert("x-mq-date-time", DATE.parse().unwrap());
    if let Some(secret) = secret {
        m.insert(
            "authorization",
            sign("grpc-user", secret, DATE).parse().unwrap(),
        );
    }
    r
}

fn send_to(topic: &str) -> SendMessageRequest {
    SendMessageRequest {
        messages: vec![Message {
            topic: Some(Resource {
                resource_namespace: String::new(),
                name: topic.into(),
            }),
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
async fn grpc_calls_are_authenticated_and_authorized() {
    let (broker, _dir, mut client) = start().await;

    let unsigned = client
        .send_message(req(send_to("Allowed"), None))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&unsigned.status), Code::Unauthorized);

    let wrong = client
        .send_message(req(send_to("Allowed"), Some("not-the-secret")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&wrong.status), Code::Unauthorized);
    let remark = wrong.status.map(|s| s.message).unwrap_or_default();
    assert!(!remark.contains("grpc-secret-1"), "no secret in a remark");

    let forbidden = client
        .send_message(req(send_to("Elsewhere"), Some("grpc-secret-1")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&forbidden.status), Code::Forbidden);
    let remark = forbidden.status.map(|s| s.message).unwrap_or_default();
    assert!(
        remark.contains("grpc-user") && remark.contains("Elsewhere"),
        "names the account and the resource: {remark}"
    );

    let allowed = client
        .send_message(req(send_to("Allowed"), Some("grpc-secret-1")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&allowed.status), Code::Ok, "{:?}", allowed.status);

    // A route query needs only a valid signature.
    let route = QueryRouteRequest {
        topic: Some(Resource {
            resource_namespace: String::new(),
            name: "Allowed".into(),
        }),
        endpoints: None,
    };
    let r = client
        .query_route(req(route.clone(), None))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&r.status), Code::Unauthorized);
    let r = client
        .query_route(req(route, Some("grpc-secret-1")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&r.status), Code::Ok, "{:?}", r.status);
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enforcing_tls_refuses_plaintext_grpc() {
    let dir = tempfile::tempdir().unwrap();
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let cert = dir.path().join("server.pem");
    let key = dir.path().join("server.key");
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.key_pair.serialize_pem()).unwrap();
    let mut config = BrokerConfig {
        broker_name: "grpc-tls".into(),
        broker_ip1: "127.0.0.1".into(),
        broker_ip2: "127.0.0.1".into(),
        listen_port: 0,
        fast_listen_enable: false,
        namesrv_addr: None,
        embedded_namesrv_port: 0,
        ..BrokerConfig::default()
    };
    for (k, v) in [
        ("tls.server.mode", "enforcing".to_owned()),
        ("tls.server.certPath", cert.display().to_string()),
        ("tls.server.keyPath", key.display().to_string()),
        ("tls.enable", "true".to_owned()),
        ("tls.client.trustCertPath", cert.display().to_string()),
    ] {
        config.apply_property(k, &v).unwrap();
    }
    config.grpc.grpc_server_port = 0;
    config.store.store_path_root_dir = dir.path().join("store");
    config.store.mapped_file_size_commit_log = 16 * 1024 * 1024;
    let broker = Broker::start(config).await.expect("broker starts");
    let addr = broker.grpc_addr().expect("gRPC enabled");
    let plain = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_timeout(T)
        .connect()
        .await;
    let refused = match plain {
        Err(_) => true,
        Ok(channel) => MessagingServiceClient::new(channel)
            .query_route(req(QueryRouteRequest::default(), None))
            .await
            .is_err(),
    };
    assert!(
        refused,
        "plaintext gRPC must not be served in enforcing mode"
    );
    broker.shutdown().await;
}
