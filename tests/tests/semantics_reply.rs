//! Request/reply through a Vostok broker (issue 20): the SDK's `request()` gets the
//! reply a consumer sends back (SEND_REPLY_MESSAGE_V2 to `<cluster>_REPLY_TOPIC`,
//! pushed by the broker with PUSH_REPLY_MESSAGE_TO_CLIENT), concurrent requests each
//! get their own, a request nobody answers times out, and the push carries Apache's
//! `ReplyMessageRequestHeader` to any client (a hand-written one here).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use vostok_client::producer::request::create_reply_message;
use vostok_client::{
    ClientError, CommonConsumerConfig, ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus,
    ConsumerConfig, Message, MessageExt, MessageListener, Producer, ProducerConfig, PushConsumer,
};
use vostok_remoting::protocol::header::{
    ReplyMessageRequestHeader, SendMessageRequestHeader, SendMessageRequestHeaderV2,
};
use vostok_remoting::protocol::message::property::{self, push_pair};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::{BoxFuture, Channel, RemotingCommand, RequestProcessor};
use vostok_tests::client::TestClient;
use vostok_tests::sdk::{client, eventually};
use vostok_tests::{Broker, BrokerOptions};

const TOPIC: &str = "RequestTopic";
const REPLY_TOPIC: &str = "DefaultCluster_REPLY_TOPIC";

async fn producer(ns: &str, group: &str) -> Producer {
    let p = Producer::new(ProducerConfig {
        client: client(ns, group),
        producer_group: group.into(),
        ..Default::default()
    });
    p.start().await.unwrap();
    p
}

/// A consumer of the request topic that answers each request with `re: <body>`.
async fn replier(ns: &str) -> (PushConsumer, Producer) {
    let (tx, mut rx) = mpsc::unbounded_channel::<MessageExt>();
    let consumer = PushConsumer::new(ConsumerConfig {
        common: CommonConsumerConfig {
            client: client(ns, "replier"),
            consumer_group: "replier".into(),
            ..CommonConsumerConfig::push_defaults()
        },
        ..Default::default()
    });
    consumer.subscribe(TOPIC, "*").unwrap();
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            for m in msgs {
                let _ = tx.send(m.clone());
            }
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer.start().await.unwrap();
    let answering = producer(ns, "reply-producer").await;
    let sender = answering.clone();
    tokio::spawn(async move {
        while let Some(request) = rx.recv().await {
            let body = format!("re: {}", String::from_utf8_lossy(&request.body));
            let reply = create_reply_message(&request, body).expect("a request message");
            if let Err(e) = sender.send(reply).await {
                eprintln!("reply not sent: {e}");
            }
        }
    });
    (consumer, answering)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_gets_its_reply_through_the_broker() {
    let broker = Broker::start(BrokerOptions::default());
    let ns = broker.namesrv.clone();
    broker.create_topic(TOPIC, 2).await;
    let (consumer, answering) = replier(&ns).await;
    let requester = producer(&ns, "requester").await;
    let reply = requester
        .request(Message::new(TOPIC, "ping"), Duration::from_secs(20))
        .await
        .expect("a reply");
    assert_eq!(&reply.body[..], b"re: ping");
    assert_eq!(reply.topic, REPLY_TOPIC);
    assert_eq!(
        reply.property(property::MESSAGE_TYPE),
        Some(property::REPLY_MESSAGE_FLAG)
    );
    assert!(reply.property(property::PUSH_REPLY_TIME).is_some());
    // Concurrent requests each get their own reply.
    let mut calls = Vec::new();
    for i in 0..5 {
        let r = requester.clone();
        calls.push(tokio::spawn(async move {
            r.request(
                Message::new(TOPIC, format!("q{i}")),
                Duration::from_secs(20),
            )
            .await
        }));
    }
    for (i, call) in calls.into_iter().enumerate() {
        let reply = call.await.unwrap().expect("a reply");
        assert_eq!(String::from_utf8_lossy(&reply.body), format!("re: q{i}"));
    }
    // The replies were stored in the reply topic too (storeReplyMessageEnable).
    let admin = TestClient::default();
    eventually("six replies stored", || async {
        admin.max_offset(&broker.addr, REPLY_TOPIC, 0).await == 6
    })
    .await;
    for p in [requester, answering] {
        p.shutdown().await;
    }
    consumer.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_nobody_answers_times_out() {
    let broker = Broker::start(BrokerOptions::default());
    broker.create_topic(TOPIC, 2).await;
    let requester = producer(&broker.namesrv, "lonely").await;
    let outcome = requester
        .request(Message::new(TOPIC, "anyone?"), Duration::from_millis(1500))
        .await;
    assert!(
        matches!(outcome, Err(ClientError::Timeout { .. })),
        "{outcome:?}"
    );
    requester.shutdown().await;
}

/// Records every PUSH_REPLY_MESSAGE_TO_CLIENT it is sent.
#[derive(Default)]
struct Pushes(Mutex<Vec<RemotingCommand>>);

impl RequestProcessor for Pushes {
    fn process<'a>(
        &'a self,
        _channel: &'a Channel,
        request: RemotingCommand,
    ) -> BoxFuture<'a, Option<RemotingCommand>> {
        let ok = request.code == request_code::PUSH_REPLY_MESSAGE_TO_CLIENT;
        self.0.lock().unwrap().push(request);
        Box::pin(async move {
            Some(RemotingCommand::response(
                if ok {
                    response_code::SUCCESS
                } else {
                    response_code::REQUEST_CODE_NOT_SUPPORTED
                },
                None,
            ))
        })
    }
}

fn reply_request(reply_to: &str) -> RemotingCommand {
    let mut props = String::new();
    push_pair(&mut props, property::CORRELATION_ID, "corr-1");
    push_pair(&mut props, property::MESSAGE_REPLY_TO_CLIENT, reply_to);
    push_pair(
        &mut props,
        property::MESSAGE_TYPE,
        property::REPLY_MESSAGE_FLAG,
    );
    let header = SendMessageRequestHeader {
        producer_group: "raw-replier".into(),
        topic: REPLY_TOPIC.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 0,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        flag: 0,
        properties: Some(props),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        batch: Some(false),
        max_reconsume_times: None,
        broker_name: None,
    };
    RemotingCommand::request_with_header(
        request_code::SEND_REPLY_MESSAGE_V2,
        &SendMessageRequestHeaderV2::from(header),
    )
    .with_body("pong")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_push_carries_apaches_reply_header() {
    let broker = Broker::start(BrokerOptions::default());
    let pushes = Arc::new(Pushes::default());
    let requester = TestClient::with_processor("raw-requester", Some(pushes.clone()));
    let heartbeat = requester
        .heartbeat_producer(&broker.addr, "raw-requesters")
        .await;
    assert_eq!(heartbeat.code, response_code::SUCCESS);
    let replier = TestClient::default();
    let answer = replier
        .call(&broker.addr, reply_request(&requester.client_id))
        .await;
    assert_eq!(answer.code, response_code::SUCCESS, "{}", answer.remark());
    eventually("the reply pushed", || async {
        !pushes.0.lock().unwrap().is_empty()
    })
    .await;
    let push = pushes.0.lock().unwrap()[0].clone();
    assert_eq!(&push.body[..], b"pong");
    let header: ReplyMessageRequestHeader = push.decode_header().expect("Apache's header");
    assert_eq!(header.topic, REPLY_TOPIC);
    assert_eq!(header.producer_group, "raw-replier");
    assert_eq!(header.born_timestamp, 1_700_000_000_000);
    assert_eq!(header.store_host, broker.addr);
    let props = header.properties.unwrap_or_default();
    assert_eq!(
        property::find(&props, property::CORRELATION_ID),
        Some("corr-1")
    );
    assert!(property::find(&props, property::PUSH_REPLY_TIME).is_some());

    // A reply for a client the broker does not know: SYSTEM_ERROR, as in Apache.
    let lost = replier
        .call(&broker.addr, reply_request("10.0.0.9@gone"))
        .await;
    assert_eq!(lost.code, response_code::SYSTEM_ERROR);
    assert!(lost.remark().contains("not found"), "{}", lost.remark());
}
