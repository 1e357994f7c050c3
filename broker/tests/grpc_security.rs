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
    Code, EndTransactionRequest, ForwardMessageToDeadLetterQueueRequest, Message, MessageType,
    QueryRouteRequest, Resource, SendMessageRequest, SystemProperties, TransactionResolution,
};
use vostok_broker::{Broker, BrokerHandle};
use vostok_remoting::auth::grpc::{date_time, sign};
use vostok_remoting::protocol::message::id::decode_offset_msg_id;

mod common;

const T: Duration = Duration::from_secs(30);

const ACL: &str = "accounts:
  - accessKey: grpc-user
    secretKey: grpc-secret-1
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - Allowed=PUB|SUB
  - accessKey: grpc-admin
    secretKey: grpc-admin-secret
    admin: true
";

/// `x-mq-date-time` now, in UTC as the Node.js client writes it.
fn now() -> String {
    date_time(vostok_remoting::support::time::now_millis())
}

async fn start() -> (
    BrokerHandle,
    tempfile::TempDir,
    MessagingServiceClient<Channel>,
) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("conf")).unwrap();
    std::fs::write(dir.path().join("conf").join("plain_acl.yml"), ACL).unwrap();
    let mut config = common::broker_config("grpc-acl", dir.path().join("store"));
    config.apply_property("aclEnable", "true").unwrap();
    config
        .apply_property("rocketmqHome", &dir.path().display().to_string())
        .unwrap();
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
    signed_by(body, "grpc-user", secret, &now())
}

/// A request signed by `access_key` with `secret` (when given) at `date`.
fn signed_by<B>(body: B, access_key: &str, secret: Option<&str>, date: &str) -> tonic::Request<B> {
    let mut r = tonic::Request::new(body);
    let m = r.metadata_mut();
    m.insert("x-mq-client-id", "acl-test@1".parse().unwrap());
    m.insert("x-mq-language", "RUST".parse().unwrap());
    m.insert("x-mq-date-time", date.parse().unwrap());
    if let Some(secret) = secret {
        m.insert(
            "authorization",
            sign(access_key, secret, date).parse().unwrap(),
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

/// The streaming RPCs are checked as the unary ones: the refusal is the stream's one
/// item, and nothing waits for messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receiving_and_pulling_are_authenticated_and_authorized() {
    use vostok_broker::grpc::proto::pull_message_response::Content as Pulled;
    use vostok_broker::grpc::proto::receive_message_response::Content as Received;
    use vostok_broker::grpc::proto::{MessageQueue, PullMessageRequest, ReceiveMessageRequest};

    let (broker, _dir, mut client) = start().await;
    let queue = |topic: &str| MessageQueue {
        topic: Some(Resource {
            resource_namespace: String::new(),
            name: topic.into(),
        }),
        ..Default::default()
    };
    let group = Some(Resource {
        resource_namespace: String::new(),
        name: "readers".into(),
    });
    let receive = |topic: &str| ReceiveMessageRequest {
        group: group.clone(),
        message_queue: Some(queue(topic)),
        batch_size: 1,
        invisible_duration: Some(prost_types::Duration {
            seconds: 30,
            nanos: 0,
        }),
        ..Default::default()
    };
    let pull = |topic: &str| PullMessageRequest {
        group: group.clone(),
        message_queue: Some(queue(topic)),
        batch_size: 1,
        ..Default::default()
    };
    for (topic, secret, expected) in [
        ("Allowed", None, Code::Unauthorized),
        ("Allowed", Some("not-the-secret"), Code::Unauthorized),
        ("Elsewhere", Some("grpc-secret-1"), Code::Forbidden),
    ] {
        let mut items = client
            .receive_message(req(receive(topic), secret))
            .await
            .unwrap()
            .into_inner();
        let first = items.message().await.unwrap().and_then(|i| i.content);
        match first {
            Some(Received::Status(s)) => assert_eq!(code(&Some(s)), expected, "receive {topic}"),
            other => panic!("receive {topic}: {other:?}"),
        }
        assert!(items.message().await.unwrap().is_none(), "one item only");

        let mut items = client
            .pull_message(req(pull(topic), secret))
            .await
            .unwrap()
            .into_inner();
        let first = items.message().await.unwrap().and_then(|i| i.content);
        match first {
            Some(Pulled::Status(s)) => assert_eq!(code(&Some(s)), expected, "pull {topic}"),
            other => panic!("pull {topic}: {other:?}"),
        }
        assert!(items.message().await.unwrap().is_none(), "one item only");
    }
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_date_far_from_the_clock_is_refused() {
    let (broker, _dir, mut client) = start().await;
    let route = || QueryRouteRequest {
        topic: Some(Resource {
            resource_namespace: String::new(),
            name: "Allowed".into(),
        }),
        endpoints: None,
    };
    let now_ms = vostok_remoting::support::time::now_millis();
    // Java, Python and Go write local time with a `Z`: eight hours ahead is Shanghai.
    for off_hours in [0, 8, -5] {
        let date = date_time(now_ms + off_hours * 3_600_000);
        let r = client
            .query_route(signed_by(
                route(),
                "grpc-user",
                Some("grpc-secret-1"),
                &date,
            ))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(code(&r.status), Code::Ok, "{off_hours} h: {:?}", r.status);
    }
    // Twenty hours ahead is no time zone, and a day old is a replay.
    for off_hours in [20, -24] {
        let date = date_time(now_ms + off_hours * 3_600_000);
        let r = client
            .query_route(signed_by(
                route(),
                "grpc-user",
                Some("grpc-secret-1"),
                &date,
            ))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(code(&r.status), Code::Unauthorized, "{off_hours} h");
        let remark = r.status.map(|s| s.message).unwrap_or_default();
        assert!(remark.contains("away from the server's clock"), "{remark}");
    }
    broker.shutdown().await;
}

/// EndTransaction and ForwardMessageToDeadLetterQueue point at a stored message: the
/// permission is checked on the topic it belongs to, not on the topic the call names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_on_a_stored_message_need_its_topic() {
    let (broker, _dir, mut client) = start().await;
    let elsewhere = Resource {
        resource_namespace: String::new(),
        name: "Elsewhere".into(),
    };
    let allowed = Resource {
        resource_namespace: String::new(),
        name: "Allowed".into(),
    };
    let mut half = send_to("Elsewhere");
    if let Some(p) = half.messages[0].system_properties.as_mut() {
        p.message_type = MessageType::Transaction as i32;
    }
    let sent = client
        .send_message(signed_by(
            half,
            "grpc-admin",
            Some("grpc-admin-secret"),
            &now(),
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&sent.status), Code::Ok, "{:?}", sent.status);
    let transaction_id = sent.entries[0].transaction_id.clone();
    let (_, commit_log_offset) = decode_offset_msg_id(&transaction_id).unwrap();

    let end = EndTransactionRequest {
        topic: Some(allowed.clone()),
        message_id: sent.entries[0].message_id.clone(),
        transaction_id: transaction_id.clone(),
        resolution: TransactionResolution::Rollback as i32,
        ..Default::default()
    };
    let r = client
        .end_transaction(req(end, Some("grpc-secret-1")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&r.status), Code::Forbidden, "{:?}", r.status);
    let remark = r.status.map(|s| s.message).unwrap_or_default();
    assert!(remark.contains("Elsewhere"), "{remark}");

    // A receipt handle made up to point at that message, to copy it into the
    // caller's dead-letter queue.
    let forward = ForwardMessageToDeadLetterQueueRequest {
        group: Some(Resource {
            resource_namespace: String::new(),
            name: "AnyGroup".into(),
        }),
        topic: Some(allowed),
        receipt_handle: format!("0 1700000000000 30000 0 0 grpc-acl 0 0 {commit_log_offset}"),
        message_id: sent.entries[0].message_id.clone(),
        delivery_attempt: 1,
        max_delivery_attempts: 16,
        ..Default::default()
    };
    let r = client
        .forward_message_to_dead_letter_queue(req(forward, Some("grpc-secret-1")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&r.status), Code::Forbidden, "{:?}", r.status);

    // The owner of the topic may end it.
    let end = EndTransactionRequest {
        topic: Some(elsewhere),
        message_id: sent.entries[0].message_id.clone(),
        transaction_id,
        resolution: TransactionResolution::Rollback as i32,
        ..Default::default()
    };
    let r = client
        .end_transaction(signed_by(
            end,
            "grpc-admin",
            Some("grpc-admin-secret"),
            &now(),
        ))
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
    let mut config = common::broker_config("grpc-tls", dir.path().join("store"));
    for (k, v) in [
        ("tls.server.mode", "enforcing".to_owned()),
        ("tls.server.certPath", cert.display().to_string()),
        ("tls.server.keyPath", key.display().to_string()),
        ("tls.enable", "true".to_owned()),
        ("tls.client.trustCertPath", cert.display().to_string()),
    ] {
        config.apply_property(k, &v).unwrap();
    }
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
