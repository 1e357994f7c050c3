//! AMQP-style routing keys against a real broker (docs/amqp.md): a push consumer and a
//! simple (POP) consumer bound with `orders.*.eu` receive exactly the matching
//! messages, and the broker sends them nothing else (its outbound message and byte
//! counters, and the bytes of raw pull and POP responses); invalid binding keys are
//! refused with SUBSCRIPTION_PARSE_FAILED by PULL, POP and CHECK_CLIENT_CONFIG, and by
//! the SDK before anything is sent; routing keys need no `enablePropertyFilter`; and
//! against a broker that refuses routing keys (a front answering as Apache RocketMQ
//! does) the push and simple consumers filter on the client and get the same messages.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use vostok_client::{
    ClientError, CommonConsumerConfig, ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus,
    ConsumeFromWhere, ConsumerConfig, Message, MessageExt, MessageListener, MessageSelector,
    Producer, ProducerConfig, PushConsumer, SimpleConsumer, SimpleConsumerConfig,
};
use vostok_remoting::protocol::header::{PopMessageRequestHeader, PullMessageRequestHeader};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;
use vostok_tests::client::TestClient;
use vostok_tests::sdk::{client, eventually, WAIT};
use vostok_tests::{http, Broker, BrokerOptions};

const TOPIC: &str = "Orders";
const BINDING: &str = "orders.*.eu";
/// Routing keys sent, round robin; the first two match `orders.*.eu`.
const KEYS: [&str; 8] = [
    "orders.created.eu",
    "orders.paid.eu",
    "orders.created.us",
    "orders.eu",
    "orders.created.eu.late",
    "invoices.created.eu",
    "orders.created",
    "orders",
];
const N: usize = 40;

fn matches(i: usize) -> bool {
    i % KEYS.len() < 2
}

/// Message `i`: odd ones carry the key in the `ROUTING_KEY` property under a tag that
/// would match, even ones in their tag only.
fn message(i: usize) -> Message {
    let key = KEYS[i % KEYS.len()];
    let m = Message::new(TOPIC, format!("m{i:02}"));
    if i % 2 == 1 {
        m.with_tags("orders.decoy.eu")
            .with_routing_key(key)
            .expect("a valid routing key")
    } else {
        m.with_tags(key)
    }
}

fn expected() -> Vec<String> {
    (0..N)
        .filter(|i| matches(*i))
        .map(|i| format!("m{i:02}"))
        .collect()
}

fn broker() -> Broker {
    // No `enablePropertyFilter`: routing keys do not need it.
    Broker::start(
        BrokerOptions::default()
            .set("metricsExporterType", "PROM")
            .set("metricsPromExporterPort", 0),
    )
}

async fn send_all(ns: &str) {
    let producer = Producer::new(ProducerConfig {
        client: client(ns, "producer"),
        producer_group: "routing-producer".into(),
        ..Default::default()
    });
    producer.start().await.unwrap();
    for i in 0..N {
        producer.send(message(i)).await.unwrap();
    }
    producer.shutdown().await;
}

/// The broker's outbound (messages, bytes) for `group` on the topic.
async fn sent_to(metrics: &str, group: &str) -> (f64, f64) {
    let answer = http::get(metrics, "/metrics").await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let scrape = prometheus_parse::Scrape::parse(answer.body.lines().map(|l| Ok(l.to_owned())))
        .expect("Prometheus text format");
    let value = |metric: &str| {
        scrape
            .samples
            .iter()
            .filter(|s| {
                s.metric == metric
                    && s.labels.get("topic") == Some(TOPIC)
                    && s.labels.get("consumer_group") == Some(group)
            })
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
                ref other => panic!("{metric}: {other:?}"),
            })
            .sum::<f64>()
    };
    (
        value("rocketmq_messages_out_total"),
        value("rocketmq_throughput_out_total"),
    )
}

/// Receives (and acks) until the expected messages are in, then a last round over both
/// queues, so that anything more the broker would hand out is counted too.
async fn receive_expected(simple: &SimpleConsumer) -> Vec<MessageExt> {
    let mut popped = Vec::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    while popped.len() < expected().len() && tokio::time::Instant::now() < deadline {
        let views = simple.receive(32, Duration::from_secs(60)).await.unwrap();
        for v in &views {
            simple.ack(v).await.unwrap();
        }
        popped.extend(views.into_iter().map(|v| v.into_message()));
    }
    for _ in 0..4 {
        let views = simple.receive(32, Duration::from_secs(60)).await.unwrap();
        popped.extend(views.into_iter().map(|v| v.into_message()));
    }
    popped
}

fn sorted_bodies(msgs: &[MessageExt]) -> Vec<String> {
    let mut v: Vec<String> = msgs
        .iter()
        .map(|m| String::from_utf8_lossy(&m.body).into_owned())
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_bound_with_a_routing_key_gets_only_matches_and_nothing_else_is_sent() {
    let broker = broker();
    let metrics = broker.metrics_addr.clone().expect("metrics address");
    let ns = broker.namesrv.clone();
    broker.create_topic(TOPIC, 2).await;
    send_all(&ns).await;
    let admin = TestClient::default();
    admin.wait_dispatched(&broker.addr).await;

    // A push consumer.
    let seen: Arc<Mutex<Vec<MessageExt>>> = Arc::default();
    let consumer = PushConsumer::new(ConsumerConfig {
        common: CommonConsumerConfig {
            client: client(&ns, "push"),
            consumer_group: "eu-orders".into(),
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            broker_suspend_max_time: Duration::from_secs(1),
            ..CommonConsumerConfig::push_defaults()
        },
        ..Default::default()
    });
    consumer
        .subscribe_with_selector(TOPIC, MessageSelector::by_routing_key(BINDING))
        .unwrap();
    let s = seen.clone();
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            s.lock().unwrap().extend(msgs.iter().cloned());
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer.start().await.unwrap();
    // Every queue's offset moves to its end: all it will ever get was delivered.
    eventually(
        "the group's offsets reach the end of both queues",
        || async {
            let mut done = true;
            for q in 0..2 {
                let end = admin.max_offset(&broker.addr, TOPIC, q).await;
                let at = admin
                    .query_offset(&broker.addr, "eu-orders", TOPIC, q)
                    .await
                    .unwrap_or(0);
                done &= at == end;
            }
            done
        },
    )
    .await;
    let got = seen.lock().unwrap().clone();
    assert_eq!(sorted_bodies(&got), expected());
    let bytes: usize = got.iter().map(|m| m.store_size as usize).sum();
    let (messages_out, bytes_out) = sent_to(&metrics, "eu-orders").await;
    assert_eq!(
        (messages_out, bytes_out),
        (got.len() as f64, bytes as f64),
        "the broker sent the matching messages and nothing else"
    );
    consumer.shutdown().await;

    // A simple consumer (POP) with the same binding.
    let simple = SimpleConsumer::new(SimpleConsumerConfig {
        client: client(&ns, "simple"),
        consumer_group: "eu-orders-pop".into(),
        await_duration: Duration::from_millis(200),
        consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
        ..Default::default()
    });
    simple
        .subscribe_with_selector(TOPIC, MessageSelector::by_routing_key(BINDING))
        .unwrap();
    simple.start().await.unwrap();
    let popped = receive_expected(&simple).await;
    assert_eq!(sorted_bodies(&popped), expected());
    simple.shutdown().await;
}

/// One raw PULL_MESSAGE of queue `q` carrying a subscription; (code, body bytes, messages).
async fn raw_pull(
    client: &TestClient,
    addr: &str,
    q: i32,
    expression_type: &str,
    expression: &str,
) -> (i32, usize, Vec<MessageExt>) {
    let header = PullMessageRequestHeader {
        consumer_group: "raw".into(),
        topic: TOPIC.into(),
        queue_id: q,
        queue_offset: 0,
        max_msg_nums: 32,
        sys_flag: vostok_remoting::protocol::header::PULL_FLAG_SUBSCRIPTION,
        commit_offset: 0,
        suspend_timeout_millis: 0,
        subscription: Some(expression.into()),
        sub_version: 0,
        expression_type: Some(expression_type.into()),
        max_msg_bytes: None,
        broker_name: None,
    };
    let response = client
        .call(
            addr,
            RemotingCommand::request_with_header(request_code::PULL_MESSAGE, &header),
        )
        .await;
    let msgs = MessageExt::decode_all(&response.body);
    (response.code, response.body.len(), msgs)
}

async fn raw_pop(
    client: &TestClient,
    addr: &str,
    exp_type: &str,
    exp: &str,
) -> (i32, Vec<MessageExt>) {
    let header = PopMessageRequestHeader {
        consumer_group: "raw-pop".into(),
        topic: TOPIC.into(),
        queue_id: -1,
        max_msg_nums: 32,
        invisible_time: 60_000,
        poll_time: 0,
        born_time: None,
        init_mode: Some(0),
        exp_type: Some(exp_type.into()),
        exp: Some(exp.into()),
        ..Default::default()
    };
    let response = client
        .call(
            addr,
            RemotingCommand::request_with_header(request_code::POP_MESSAGE, &header),
        )
        .await;
    (response.code, MessageExt::decode_all(&response.body))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_carry_only_matching_records_and_bad_binding_keys_are_refused() {
    let broker = broker();
    broker.create_topic(TOPIC, 2).await;
    send_all(&broker.namesrv).await;
    let raw = TestClient::default();
    raw.wait_dispatched(&broker.addr).await;

    // PULL: the response body is the matching records, byte for byte.
    let (mut routed, mut everything) = (Vec::new(), 0usize);
    for q in 0..2 {
        let (code, bytes, msgs) = raw_pull(&raw, &broker.addr, q, "ROUTING", BINDING).await;
        assert_eq!(code, response_code::SUCCESS);
        assert_eq!(
            bytes,
            msgs.iter().map(|m| m.store_size as usize).sum::<usize>()
        );
        routed.extend(msgs);
        let (_, all_bytes, _) = raw_pull(&raw, &broker.addr, q, "TAG", "*").await;
        everything += all_bytes;
    }
    assert_eq!(sorted_bodies(&routed), expected());
    let routed_bytes: usize = routed.iter().map(|m| m.store_size as usize).sum();
    assert!(
        routed_bytes * 3 < everything,
        "{routed_bytes} of {everything} bytes"
    );

    // POP.
    let (code, popped) = raw_pop(&raw, &broker.addr, "ROUTING", BINDING).await;
    assert_eq!(code, response_code::SUCCESS);
    assert_eq!(sorted_bodies(&popped), expected());

    // Refusals, each with the rule it breaks.
    for bad in ["orders.#.#", "orders.*.#", "orders.eu*", "orders..eu", ""] {
        let (code, _, _) = raw_pull(&raw, &broker.addr, 0, "ROUTING", bad).await;
        assert_eq!(
            code,
            response_code::SUBSCRIPTION_PARSE_FAILED,
            "pull {bad:?}"
        );
        if !bad.is_empty() {
            let (code, _) = raw_pop(&raw, &broker.addr, "ROUTING", bad).await;
            assert_eq!(
                code,
                response_code::SUBSCRIPTION_PARSE_FAILED,
                "pop {bad:?}"
            );
        }
        let body = serde_json::json!({
            "clientId": "raw",
            "group": "raw",
            "subscriptionData": {
                "classFilterMode": false, "codeSet": [], "expressionType": "ROUTING",
                "subString": bad, "subVersion": 1, "tagsSet": [], "topic": TOPIC,
            },
        });
        let check = raw
            .call(
                &broker.addr,
                RemotingCommand::request(request_code::CHECK_CLIENT_CONFIG)
                    .with_body(serde_json::to_vec(&body).unwrap()),
            )
            .await;
        assert_eq!(
            check.code,
            response_code::SUBSCRIPTION_PARSE_FAILED,
            "check {bad:?}"
        );
        assert!(check.remark().contains("binding key"), "{}", check.remark());
    }
    let body = serde_json::json!({
        "clientId": "raw",
        "group": "raw",
        "subscriptionData": {
            "classFilterMode": false, "codeSet": [], "expressionType": "ROUTING",
            "subString": BINDING, "subVersion": 1, "tagsSet": [], "topic": TOPIC,
        },
    });
    let check = raw
        .call(
            &broker.addr,
            RemotingCommand::request(request_code::CHECK_CLIENT_CONFIG)
                .with_body(serde_json::to_vec(&body).unwrap()),
        )
        .await;
    assert_eq!(check.code, response_code::SUCCESS, "{}", check.remark());

    // The SDK refuses an invalid key before sending anything.
    let consumer = PushConsumer::new(ConsumerConfig::default());
    assert!(matches!(
        consumer.subscribe_with_selector(TOPIC, MessageSelector::by_routing_key("a.#.*")),
        Err(ClientError::InvalidArgument(_))
    ));
    assert!(matches!(
        Message::new(TOPIC, "x").with_routing_key("orders.e-u"),
        Err(ClientError::InvalidArgument(_))
    ));
}

/// Answers like Apache RocketMQ to routing keys, in front of a Vostok broker: a
/// CHECK_CLIENT_CONFIG, PULL_MESSAGE or POP_MESSAGE naming the `ROUTING` type gets
/// SYSTEM_ERROR; everything else is forwarded. Counts the refusals.
async fn apache_like_front(
    listener: tokio::net::TcpListener,
    upstream: String,
    refused: Arc<std::sync::atomic::AtomicUsize>,
) {
    use futures_util::{SinkExt, StreamExt};
    use tokio_util::codec::{FramedRead, FramedWrite};
    use vostok_remoting::RemotingCodec;

    while let Ok((client, _)) = listener.accept().await {
        let Ok(server) = tokio::net::TcpStream::connect(&upstream).await else {
            continue;
        };
        let refused = refused.clone();
        tokio::spawn(async move {
            let (client_read, client_write) = client.into_split();
            let (server_read, server_write) = server.into_split();
            let (to_client, mut outbox) = tokio::sync::mpsc::channel::<RemotingCommand>(256);
            tokio::spawn(async move {
                let mut out = FramedWrite::new(client_write, RemotingCodec::default());
                while let Some(cmd) = outbox.recv().await {
                    if out.send(cmd).await.is_err() {
                        return;
                    }
                }
            });
            let answers = to_client.clone();
            tokio::spawn(async move {
                let mut from_server = FramedRead::new(server_read, RemotingCodec::default());
                while let Some(Ok(cmd)) = from_server.next().await {
                    if answers.send(cmd).await.is_err() {
                        return;
                    }
                }
            });
            let mut from_client = FramedRead::new(client_read, RemotingCodec::default());
            let mut to_server = FramedWrite::new(server_write, RemotingCodec::default());
            while let Some(Ok(cmd)) = from_client.next().await {
                let routing = match cmd.code {
                    request_code::CHECK_CLIENT_CONFIG => {
                        String::from_utf8_lossy(&cmd.body).contains("\"ROUTING\"")
                    }
                    request_code::PULL_MESSAGE => {
                        cmd.ext_fields.get("expressionType") == Some("ROUTING")
                    }
                    request_code::POP_MESSAGE => cmd.ext_fields.get("expType") == Some("ROUTING"),
                    _ => false,
                };
                if routing {
                    refused.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let mut answer = RemotingCommand::response(
                        response_code::SYSTEM_ERROR,
                        "The broker does not support consumer to filter message by ROUTING"
                            .to_owned(),
                    );
                    answer.opaque = cmd.opaque;
                    if to_client.send(answer).await.is_err() {
                        return;
                    }
                } else if to_server.send(cmd).await.is_err() {
                    return;
                }
            }
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn against_a_broker_without_routing_keys_consumers_filter_on_the_client() {
    // The broker listens on 127.0.0.1 and announces 127.0.0.2, where the front stands.
    let broker = Broker::start(
        BrokerOptions::default()
            .set("bindAddress", "127.0.0.1")
            .set("brokerIP1", "127.0.0.2")
            .set("metricsExporterType", "PROM")
            .set("metricsPromExporterPort", 0),
    );
    let metrics = broker.metrics_addr.clone().expect("metrics address");
    let port = broker.addr.rsplit(':').next().expect("a port").to_owned();
    assert!(broker.addr.starts_with("127.0.0.2:"), "{}", broker.addr);
    let front = tokio::net::TcpListener::bind(&broker.addr)
        .await
        .expect("127.0.0.2 is a loopback address");
    let refused = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    tokio::spawn(apache_like_front(
        front,
        format!("127.0.0.1:{port}"),
        refused.clone(),
    ));
    let ns = broker.namesrv.clone();
    broker.create_topic(TOPIC, 2).await;
    send_all(&ns).await;
    let admin = TestClient::default();
    admin.wait_dispatched(&broker.addr).await;

    let seen: Arc<Mutex<Vec<MessageExt>>> = Arc::default();
    let consumer = PushConsumer::new(ConsumerConfig {
        common: CommonConsumerConfig {
            client: client(&ns, "push"),
            consumer_group: "eu-orders".into(),
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            ..CommonConsumerConfig::push_defaults()
        },
        ..Default::default()
    });
    consumer
        .subscribe_with_selector(TOPIC, MessageSelector::by_routing_key(BINDING))
        .unwrap();
    let s = seen.clone();
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            s.lock().unwrap().extend(msgs.iter().cloned());
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer
        .start()
        .await
        .expect("a refused binding does not fail the start");
    eventually("every message was pulled", || async {
        sent_to(&metrics, "eu-orders").await.0 == N as f64
    })
    .await;
    eventually("the matching messages were consumed", || async {
        seen.lock().unwrap().len() >= expected().len()
    })
    .await;
    assert_eq!(sorted_bodies(&seen.lock().unwrap()), expected());
    assert!(refused.load(std::sync::atomic::Ordering::SeqCst) >= 1);
    consumer.shutdown().await;

    // The simple consumer: its first POP is refused, the next ones take everything and
    // ack what does not match.
    let simple = SimpleConsumer::new(SimpleConsumerConfig {
        client: client(&ns, "simple"),
        consumer_group: "eu-orders-pop".into(),
        await_duration: Duration::from_millis(200),
        consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
        ..Default::default()
    });
    simple
        .subscribe_with_selector(TOPIC, MessageSelector::by_routing_key(BINDING))
        .unwrap();
    simple.start().await.unwrap();
    let before = refused.load(std::sync::atomic::Ordering::SeqCst);
    let popped = receive_expected(&simple).await;
    assert_eq!(sorted_bodies(&popped), expected());
    assert_eq!(
        refused.load(std::sync::atomic::Ordering::SeqCst),
        before + 1,
        "one refusal, then client-side filtering"
    );
    simple.shutdown().await;
}
