//! The gRPC endpoint in process, with a tonic client: the codes the 5.x clients rely on
//! (a missing client id, a heartbeat before the settings, a bad receipt handle, settings
//! without publishing or subscription), routes and assignments, receive, a changed
//! invisible time and its new handle, ack and forwarding to the dead-letter queue, and
//! the offset-based RPCs Apache's proxy does not serve (PullMessage, UpdateOffset,
//! GetOffset, QueryOffset). The official clients run in `tests/tests/grpc_python.rs`.

use std::time::Duration;

use tonic::transport::Channel;
use vostok_broker::grpc::proto::messaging_service_client::MessagingServiceClient;
use vostok_broker::grpc::proto::pull_message_response::Content;
use vostok_broker::grpc::proto::settings::PubSub;
use vostok_broker::grpc::proto::telemetry_command::Command;
use vostok_broker::grpc::proto::{
    AckMessageEntry, AckMessageRequest, Code, GetOffsetRequest, HeartbeatRequest, Message,
    MessageQueue, Publishing, PullMessageRequest, QueryAssignmentRequest, QueryOffsetPolicy,
    QueryOffsetRequest, QueryRouteRequest, Resource, SendMessageRequest, Settings,
    SystemProperties, TelemetryCommand, UpdateOffsetRequest,
};
use vostok_broker::{Broker, BrokerHandle};

mod common;

const T: Duration = Duration::from_secs(30);

async fn start() -> (
    BrokerHandle,
    tempfile::TempDir,
    MessagingServiceClient<Channel>,
) {
    let dir = tempfile::tempdir().unwrap();
    let config = common::broker_config("grpc-test", dir.path().join("store"));
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

fn resource(name: &str) -> Option<Resource> {
    Some(Resource {
        resource_namespace: String::new(),
        name: name.into(),
    })
}

/// A request with the metadata every 5.x client sends.
fn req<T>(body: T) -> tonic::Request<T> {
    let mut r = tonic::Request::new(body);
    r.metadata_mut()
        .insert("x-mq-client-id", "rust-test@1".parse().unwrap());
    r.metadata_mut()
        .insert("x-mq-language", "RUST".parse().unwrap());
    r
}

fn code(status: &Option<vostok_broker::grpc::proto::Status>) -> Code {
    Code::try_from(status.as_ref().map_or(0, |s| s.code)).unwrap_or(Code::Unspecified)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_id_and_settings_come_first() {
    let (broker, _dir, mut client) = start().await;
    let route = QueryRouteRequest {
        topic: resource("T"),
        endpoints: None,
    };
    let r = client
        .query_route(tonic::Request::new(route))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&r.status), Code::ClientIdRequired);
    let r = client
        .heartbeat(req(HeartbeatRequest::default()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&r.status), Code::UnrecognizedClientType);
    // Settings without publishing or subscription end the stream INVALID_ARGUMENT.
    let outbound = futures_util::stream::iter([TelemetryCommand {
        status: None,
        command: Some(Command::Settings(Settings::default())),
    }]);
    let mut inbound = client.telemetry(req(outbound)).await.unwrap().into_inner();
    let e = inbound.message().await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_exchange_then_heartbeat() {
    let (broker, _dir, mut client) = start().await;
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let mut inbound = client
        .telemetry(req(futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|c| (c, rx))
        })))
        .await
        .unwrap()
        .into_inner();
    let settings = Settings {
        client_type: Some(1),
        pub_sub: Some(PubSub::Publishing(Publishing {
            topics: vec![resource("SettingsTopic").unwrap()],
            ..Default::default()
        })),
        ..Default::default()
    };
    tx.send(TelemetryCommand {
        status: None,
        command: Some(Command::Settings(settings)),
    })
    .await
    .unwrap();
    let answer = tokio::time::timeout(T, inbound.message())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(code(&answer.status), Code::Ok);
    let Some(Command::Settings(merged)) = answer.command else {
        panic!("settings expected: {answer:?}");
    };
    let Some(PubSub::Publishing(p)) = merged.pub_sub else {
        panic!("publishing expected");
    };
    assert_eq!(p.max_body_size, 4 * 1024 * 1024);
    assert_eq!(merged.backoff_policy.map(|b| b.max_attempts), Some(3));
    let r = client
        .heartbeat(req(HeartbeatRequest::default()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&r.status), Code::Ok);
    drop(tx);
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_name_this_endpoint_and_assignments_every_queue() {
    let (broker, _dir, mut client) = start().await;
    let port = broker.grpc_addr().unwrap().port();
    let r = client
        .query_route(req(QueryRouteRequest {
            topic: resource("RouteTopic"),
            endpoints: None,
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&r.status), Code::Ok);
    assert_eq!(r.message_queues.len(), 8, "auto-created from TBW102");
    for q in &r.message_queues {
        let endpoints = q.broker.as_ref().unwrap().endpoints.as_ref().unwrap();
        assert_eq!(endpoints.addresses[0].port, i32::from(port));
        assert_eq!(q.accept_message_types.len(), 4);
    }
    let r = client
        .query_assignment(req(QueryAssignmentRequest {
            topic: resource("RouteTopic"),
            group: resource("route-group"),
            endpoints: None,
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&r.status), Code::Ok);
    assert_eq!(r.assignments.len(), 1);
    assert_eq!(r.assignments[0].message_queue.as_ref().unwrap().id, -1);
    let r = client
        .query_route(req(QueryRouteRequest {
            topic: resource("bad topic!"),
            endpoints: None,
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&r.status), Code::IllegalTopic);
    broker.shutdown().await;
}

/// Receives from every queue of `topic` as `group` (30 s invisible, long polls of 1 s)
/// until `want` messages came or `T` passed: sends are dispatched asynchronously.
async fn receive_at_least(
    client: &mut MessagingServiceClient<Channel>,
    group: &str,
    topic: &str,
    want: usize,
) -> Vec<Message> {
    use vostok_broker::grpc::proto::receive_message_response::Content as Rc;
    use vostok_broker::grpc::proto::ReceiveMessageRequest;
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + T;
    while got.len() < want && tokio::time::Instant::now() < deadline {
        let receive = ReceiveMessageRequest {
            group: resource(group),
            message_queue: Some(MessageQueue {
                topic: resource(topic),
                id: -1,
                ..Default::default()
            }),
            filter_expression: None,
            batch_size: 32,
            invisible_duration: Some(prost_types::Duration {
                seconds: 30,
                nanos: 0,
            }),
            auto_renew: false,
            long_polling_timeout: Some(prost_types::Duration {
                seconds: 1,
                nanos: 0,
            }),
            attempt_id: None,
        };
        let mut stream = client
            .receive_message(req(receive))
            .await
            .unwrap()
            .into_inner();
        while let Some(item) = stream.message().await.unwrap() {
            if let Some(Rc::Message(m)) = item.content {
                got.push(m);
            }
        }
    }
    got
}

fn message(topic: &str, id: &str, body: &str) -> Message {
    Message {
        topic: resource(topic),
        user_properties: Default::default(),
        system_properties: Some(SystemProperties {
            message_id: id.into(),
            tag: Some("TagP".into()),
            // One group: one queue.
            message_group: Some("pull-group".into()),
            ..Default::default()
        }),
        body: body.as_bytes().to_vec().into(),
    }
}

/// A gRPC send counts in the memory account while it is processed, as a remoting
/// frame does, and leaves it when answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_send_counts_in_the_memory_account() {
    let (broker, _dir, mut client) = start().await;
    client
        .query_route(req(QueryRouteRequest {
            topic: resource("BigTopic"),
            endpoints: None,
        }))
        .await
        .unwrap();
    let memory = broker.broker().memory().clone();
    let before = memory.peak();
    let body = "b".repeat(3 << 20);
    let r = client
        .send_message(req(SendMessageRequest {
            messages: vec![message("BigTopic", "big-0", &body)],
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&r.status), Code::Ok, "{:?}", r.status);
    assert!(
        before < body.len() && memory.peak() >= body.len(),
        "peak {} B, {} B before a send of {} B",
        memory.peak(),
        before,
        body.len()
    );
    assert!(memory.reserved() < 1 << 20, "released: {memory:?}");
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_and_offsets_over_grpc() {
    let (broker, _dir, mut client) = start().await;
    // The topic exists before the group picks its queue.
    client
        .query_route(req(QueryRouteRequest {
            topic: resource("PullTopic"),
            endpoints: None,
        }))
        .await
        .unwrap();
    let r = client
        .send_message(req(SendMessageRequest {
            messages: vec![message("PullTopic", "id-0", "zero")],
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&r.status), Code::Ok, "{r:?}");
    assert_eq!(r.entries[0].message_id, "id-0");
    for (i, body) in ["one", "two"].iter().enumerate() {
        client
            .send_message(req(SendMessageRequest {
                messages: vec![message("PullTopic", &format!("id-{}", i + 1), body)],
            }))
            .await
            .unwrap();
    }
    // Find the group's queue: the one with three messages, once they are dispatched.
    let mut queue = None;
    let deadline = tokio::time::Instant::now() + T;
    while queue.is_none() && tokio::time::Instant::now() < deadline {
        for id in 0..8 {
            let r = client
                .query_offset(req(QueryOffsetRequest {
                    message_queue: Some(MessageQueue {
                        topic: resource("PullTopic"),
                        id,
                        ..Default::default()
                    }),
                    query_offset_policy: QueryOffsetPolicy::End as i32,
                    timestamp: None,
                }))
                .await
                .unwrap()
                .into_inner();
            if r.offset == 3 {
                queue = Some(id);
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let queue = queue.expect("one queue holds the group's three messages");
    let mq = Some(MessageQueue {
        topic: resource("PullTopic"),
        id: queue,
        ..Default::default()
    });
    let pull = PullMessageRequest {
        group: resource("pull-consumers"),
        message_queue: mq.clone(),
        offset: 1,
        batch_size: 32,
        filter_expression: None,
        long_polling_timeout: None,
    };
    let mut stream = client.pull_message(req(pull)).await.unwrap().into_inner();
    let mut bodies = Vec::new();
    let mut next = None;
    let mut first = None;
    while let Some(item) = stream.message().await.unwrap() {
        match item.content {
            Some(Content::Status(s)) => first = Some(s.code),
            Some(Content::Message(m)) => bodies.push(String::from_utf8(m.body.to_vec()).unwrap()),
            Some(Content::NextOffset(n)) => next = Some(n),
            None => {}
        }
    }
    assert_eq!(first, Some(Code::Ok as i32));
    assert_eq!(bodies, vec!["one", "two"]);
    assert_eq!(next, Some(3));
    let r = client
        .get_offset(req(GetOffsetRequest {
            group: resource("pull-consumers"),
            message_queue: mq.clone(),
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&r.status), Code::OffsetNotFound);
    let r = client
        .update_offset(req(UpdateOffsetRequest {
            group: resource("pull-consumers"),
            message_queue: mq.clone(),
            offset: 3,
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&r.status), Code::Ok);
    let r = client
        .get_offset(req(GetOffsetRequest {
            group: resource("pull-consumers"),
            message_queue: mq,
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!((code(&r.status), r.offset), (Code::Ok, 3));
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_receipt_handles_and_empty_sends_are_refused() {
    let (broker, _dir, mut client) = start().await;
    let r = client
        .ack_message(req(AckMessageRequest {
            group: resource("g"),
            topic: resource("T"),
            entries: vec![AckMessageEntry {
                message_id: "m".into(),
                receipt_handle: "not a handle".into(),
                lite_topic: None,
            }],
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&r.status), Code::InvalidReceiptHandle);
    assert_eq!(code(&r.entries[0].status), Code::InvalidReceiptHandle);
    let r = client
        .send_message(req(SendMessageRequest { messages: vec![] }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&r.status), Code::MessageCorrupted);
    let mut without_id = message("T", "", "x");
    without_id
        .system_properties
        .as_mut()
        .unwrap()
        .message_id
        .clear();
    let r = client
        .send_message(req(SendMessageRequest {
            messages: vec![without_id],
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&r.status), Code::IllegalMessageId);
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receive_change_ack_and_forward_to_the_dead_letter_queue() {
    use vostok_broker::grpc::proto::{
        ChangeInvisibleDurationRequest, ForwardMessageToDeadLetterQueueRequest,
    };
    let (broker, _dir, mut client) = start().await;
    for (id, body) in [("dlq-0", "to-dlq"), ("dlq-1", "to-ack")] {
        let mut m = message("DlqTopic", id, body);
        m.system_properties.as_mut().unwrap().message_group = None;
        let r = client
            .send_message(req(SendMessageRequest { messages: vec![m] }))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(code(&r.status), Code::Ok);
    }
    // Receive both (the sends are dispatched asynchronously: poll until they show).
    let got = receive_at_least(&mut client, "dlq-group", "DlqTopic", 2).await;
    assert_eq!(got.len(), 2, "both received");
    let handle = |m: &Message| {
        m.system_properties
            .as_ref()
            .and_then(|s| s.receipt_handle.clone())
            .expect("a receipt handle")
    };
    let (to_dlq, to_ack) = if got[0].body.as_ref() == b"to-dlq" {
        (&got[0], &got[1])
    } else {
        (&got[1], &got[0])
    };
    // A new invisible time gives a new handle, which the ack then uses.
    let changed = client
        .change_invisible_duration(req(ChangeInvisibleDurationRequest {
            group: resource("dlq-group"),
            topic: resource("DlqTopic"),
            receipt_handle: handle(to_ack),
            invisible_duration: Some(prost_types::Duration {
                seconds: 40,
                nanos: 0,
            }),
            message_id: "dlq-1".into(),
            lite_topic: None,
            suspend: None,
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&changed.status), Code::Ok);
    assert_ne!(changed.receipt_handle, handle(to_ack));
    let acked = client
        .ack_message(req(AckMessageRequest {
            group: resource("dlq-group"),
            topic: resource("DlqTopic"),
            entries: vec![AckMessageEntry {
                message_id: "dlq-1".into(),
                receipt_handle: changed.receipt_handle,
                lite_topic: None,
            }],
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&acked.status), Code::Ok);
    let forwarded = client
        .forward_message_to_dead_letter_queue(req(ForwardMessageToDeadLetterQueueRequest {
            group: resource("dlq-group"),
            topic: resource("DlqTopic"),
            receipt_handle: handle(to_dlq),
            message_id: "dlq-0".into(),
            delivery_attempt: 1,
            max_delivery_attempts: 16,
            lite_topic: None,
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&forwarded.status), Code::Ok, "{forwarded:?}");
    // The dead-letter queue holds it.
    let deadline = tokio::time::Instant::now() + T;
    loop {
        let r = client
            .query_offset(req(QueryOffsetRequest {
                message_queue: Some(MessageQueue {
                    topic: resource("%DLQ%dlq-group"),
                    id: 0,
                    ..Default::default()
                }),
                query_offset_policy: QueryOffsetPolicy::End as i32,
                timestamp: None,
            }))
            .await
            .unwrap()
            .into_inner();
        if r.offset == 1 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "nothing in the DLQ");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    broker.shutdown().await;
}

/// Bodies the SDK stored compressed (LZ4 chosen explicitly, zstd, and the zlib
/// default) reach a 5.x client plain, marked IDENTITY, their digest over the plain
/// bytes, as Apache's proxy hands them out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_bodies_are_received_plain() {
    use vostok_broker::grpc::proto::Encoding;
    use vostok_client::{Compression, Producer, ProducerConfig};
    let (broker, _dir, mut client) = start().await;
    let topic = "ZipGrpcTopic";
    let mut expected = Vec::new();
    for (i, codec) in [Compression::Lz4, Compression::Zstd, Compression::Zlib]
        .into_iter()
        .enumerate()
    {
        let producer = Producer::new(ProducerConfig {
            compress_type: codec,
            ..ProducerConfig::new(format!("zip-{i}"), &broker.namesrv_addr())
        });
        producer.start().await.unwrap();
        // Above the 4 KiB threshold, so stored compressed.
        let body: Vec<u8> = (0..10_000u32).map(|n| (n % 251) as u8 ^ i as u8).collect();
        producer
            .send(vostok_client::Message::new(topic, body.clone()))
            .await
            .unwrap();
        producer.shutdown().await;
        expected.push(body);
    }
    let got = receive_at_least(&mut client, "zip-group", topic, expected.len()).await;
    assert_eq!(got.len(), expected.len(), "every message received");
    let mut bodies = Vec::new();
    for m in &got {
        let sys = m.system_properties.as_ref().expect("system properties");
        assert_eq!(sys.body_encoding, Encoding::Identity as i32);
        let digest = sys.body_digest.as_ref().expect("a body digest");
        assert_eq!(
            digest.checksum,
            format!("{:08X}", crc32fast::hash(&m.body)),
            "the digest covers the bytes handed out"
        );
        bodies.push(m.body.to_vec());
    }
    bodies.sort();
    expected.sort();
    assert!(bodies == expected, "the plain bodies, byte for byte");
    broker.shutdown().await;
}
