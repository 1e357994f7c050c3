//! SQL92 subscriptions against a real broker (issue 20): push consumers receive
//! exactly the messages their expression selects (numbers, strings, BETWEEN, IN,
//! IS NULL, NOT, TAGS, booleans), a lite pull consumer (expression in each pull) too,
//! and a bad expression or a broker without property filters is refused with
//! RocketMQ's codes and a remark that says where the expression fails.

use std::sync::{Arc, Mutex};

use vostok_client::{
    ClientError, CommonConsumerConfig, ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus,
    ConsumeFromWhere, ConsumerConfig, LitePullConsumer, LitePullConsumerConfig, Message,
    MessageExt, MessageListener, MessageSelector, Producer, ProducerConfig, PushConsumer,
};
use vostok_remoting::protocol::response_code;
use vostok_tests::client::TestClient;
use vostok_tests::sdk::{client, eventually, WAIT};
use vostok_tests::{Broker, BrokerOptions};

const TOPIC: &str = "SqlTopic";
const N: usize = 12;
const COLOURS: [&str; 3] = ["red", "green", "blue"];
const TAGS: [&str; 3] = ["TagA", "TagB", "TagC"];

fn sql_broker() -> Broker {
    Broker::start(BrokerOptions::default().set("enablePropertyFilter", true))
}

/// Message `i`: `a` = i, `s` a colour, a tag, `price` = 1.5 i on even messages only,
/// `vip` = true on every fourth.
fn message(i: usize) -> Message {
    let mut m = Message::new(TOPIC, format!("m{i:02}"))
        .with_tags(TAGS[i % 3])
        .with_property("a", i.to_string())
        .with_property("s", COLOURS[i % 3]);
    if i % 2 == 0 {
        m = m.with_property("price", (i as f64 * 1.5).to_string());
    }
    if i % 4 == 0 {
        m = m.with_property("vip", "true");
    }
    m
}

/// Each expression and the messages it selects, worked out by hand.
fn cases() -> Vec<(&'static str, Vec<usize>)> {
    let all = 0..N;
    vec![
        ("a > 7", all.clone().filter(|i| *i > 7).collect()),
        ("a BETWEEN 3 AND 5", vec![3, 4, 5]),
        ("s = 'red' AND a < 6", vec![0, 3]),
        (
            "s IN ('green', 'blue')",
            all.clone().filter(|i| i % 3 != 0).collect(),
        ),
        (
            "price IS NULL",
            all.clone().filter(|i| i % 2 == 1).collect(),
        ),
        ("NOT (a >= 2) OR TAGS = 'TagC'", vec![0, 1, 2, 5, 8, 11]),
        ("price > 7.5", vec![6, 8, 10]),
        ("vip = TRUE AND s <> 'green'", vec![0, 8]),
    ]
}

fn consumer_config(ns: &str, group: &str) -> ConsumerConfig {
    ConsumerConfig {
        common: CommonConsumerConfig {
            client: client(ns, group),
            consumer_group: group.into(),
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            ..CommonConsumerConfig::push_defaults()
        },
        ..Default::default()
    }
}

type Seen = Arc<Mutex<Vec<String>>>;

async fn start_consumer(
    ns: &str,
    group: &str,
    expression: &str,
) -> Result<(PushConsumer, Seen), ClientError> {
    let seen: Seen = Arc::default();
    let consumer = PushConsumer::new(consumer_config(ns, group));
    consumer.subscribe_with_selector(TOPIC, MessageSelector::by_sql(expression))?;
    let s = seen.clone();
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            s.lock().unwrap().extend(
                msgs.iter()
                    .map(|m| String::from_utf8_lossy(&m.body).into_owned()),
            );
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer.start().await?;
    Ok((consumer, seen))
}

async fn producer(ns: &str) -> Producer {
    let producer = Producer::new(ProducerConfig {
        client: client(ns, "sql-producer"),
        producer_group: "sql-producer".into(),
        ..Default::default()
    });
    producer.start().await.unwrap();
    producer
}

fn names(indexes: &[usize]) -> Vec<String> {
    indexes.iter().map(|i| format!("m{i:02}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_consumers_receive_exactly_what_their_expression_selects() {
    let broker = sql_broker();
    let ns = broker.namesrv.clone();
    broker.create_topic(TOPIC, 1).await;
    let mut consumers = Vec::new();
    for (k, (expression, expected)) in cases().into_iter().enumerate() {
        let group = format!("sql-group-{k}");
        let (consumer, seen) = start_consumer(&ns, &group, expression).await.unwrap();
        consumers.push((group, expression, expected, consumer, seen));
    }
    let producer = producer(&ns).await;
    for i in 0..N {
        producer.send(message(i)).await.unwrap();
    }
    // A group has seen everything it will ever see once its offset passes the end.
    let admin = TestClient::default();
    for (group, expression, expected, _, seen) in &consumers {
        eventually(&format!("{group} ({expression}) past the end"), || async {
            admin.query_offset(&broker.addr, group, TOPIC, 0).await == Some(N as i64)
        })
        .await;
        let mut got = seen.lock().unwrap().clone();
        got.sort();
        assert_eq!(got, names(expected), "{expression}");
    }
    for (_, _, _, consumer, _) in consumers {
        consumer.shutdown().await;
    }
    producer.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulls_carrying_the_expression_filter_and_bad_ones_are_refused() {
    let broker = sql_broker();
    let ns = broker.namesrv.clone();
    broker.create_topic(TOPIC, 1).await;
    let producer = producer(&ns).await;
    for i in 0..N {
        producer.send(message(i)).await.unwrap();
    }
    // A lite pull consumer sends its expression with every pull.
    let consumer = LitePullConsumer::new(LitePullConsumerConfig {
        common: CommonConsumerConfig {
            client: client(&ns, "lite-sql"),
            consumer_group: "lite-sql".into(),
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            ..CommonConsumerConfig::push_defaults()
        },
        ..Default::default()
    });
    consumer
        .subscribe_with_selector(
            TOPIC,
            MessageSelector::by_sql("a BETWEEN 2 AND 4 OR s = 'blue'"),
        )
        .unwrap();
    consumer.start().await.unwrap();
    let mut got = Vec::new();
    let deadline = std::time::Instant::now() + WAIT;
    while got.len() < 6 && std::time::Instant::now() < deadline {
        for m in consumer
            .poll(std::time::Duration::from_millis(500))
            .await
            .unwrap()
        {
            got.push(String::from_utf8_lossy(&m.body).into_owned());
        }
    }
    got.sort();
    assert_eq!(got, names(&[2, 3, 4, 5, 8, 11]));
    consumer.shutdown().await;

    // The same request by hand: a good expression filters, a bad one says where.
    let raw = TestClient::default();
    let pulled = raw
        .pull_by(
            &broker.addr,
            "raw-sql",
            TOPIC,
            (0, 0, 32),
            None,
            "SQL92",
            "TAGS = 'TagB'",
        )
        .await;
    assert_eq!(pulled.code, response_code::SUCCESS);
    let tags: Vec<_> = pulled
        .messages
        .iter()
        .map(|m| m.tags().unwrap_or("").to_owned())
        .collect();
    assert_eq!(tags, vec!["TagB"; 4]);
    let bad = raw
        .pull_by(
            &broker.addr,
            "raw-sql",
            TOPIC,
            (0, 0, 32),
            None,
            "SQL92",
            "a > 'x'",
        )
        .await;
    assert_eq!(bad.code, response_code::SUBSCRIPTION_PARSE_FAILED);
    producer.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_expression_fails_the_consumer_start_with_where_it_fails() {
    let broker = sql_broker();
    broker.create_topic(TOPIC, 1).await;
    let err = start_consumer(&broker.namesrv, "bad-sql", "a > 5 AND s IN (1)")
        .await
        .err()
        .expect("the broker refuses the expression");
    match err {
        ClientError::Broker { code, remark, .. } => {
            assert_eq!(code, response_code::SUBSCRIPTION_PARSE_FAILED);
            assert!(remark.contains("at byte 16"), "{remark}");
        }
        other => panic!("unexpected error {other}"),
    }

    // The lite pull consumer checks too.
    let lite = LitePullConsumer::new(LitePullConsumerConfig {
        common: CommonConsumerConfig {
            client: client(&broker.namesrv, "bad-lite"),
            consumer_group: "bad-lite".into(),
            ..CommonConsumerConfig::push_defaults()
        },
        ..Default::default()
    });
    lite.subscribe_with_selector(TOPIC, MessageSelector::by_sql("a = NULL"))
        .unwrap();
    match lite.start().await {
        Err(ClientError::Broker { code, remark, .. }) => {
            assert_eq!(code, response_code::SUBSCRIPTION_PARSE_FAILED);
            assert!(remark.contains("at byte 4"), "{remark}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }

    // Without enablePropertyFilter the broker refuses SQL92 altogether, as Apache does.
    let plain = Broker::start(BrokerOptions::default());
    plain.create_topic(TOPIC, 1).await;
    match start_consumer(&plain.namesrv, "sql-off", "a > 5")
        .await
        .err()
    {
        Some(ClientError::Broker { code, remark, .. }) => {
            assert_eq!(code, response_code::SYSTEM_ERROR);
            assert!(remark.contains("does not support"), "{remark}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}
