//! AMQP exchanges on Vostok (docs/amqp.md): a topic is the exchange, a consumer group
//! is a queue, and the group's subscription is its binding. This example declares the
//! queues of one exchange kind, publishes five messages with routing keys, prints what
//! each queue received and exits (status 1 when a queue got something else).
//!
//! Usage: `cargo run -p vostok-client --example amqp_exchange [namesrv] [topic|direct|fanout] [topic]`
//! (defaults `127.0.0.1:9876`, `topic`, `Orders`).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use vostok_client::consumer::BindingKey;
use vostok_client::{
    ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, ConsumeFromWhere, ConsumerConfig,
    Message, MessageExt, MessageListener, MessageSelector, Producer, ProducerConfig, PushConsumer,
};

/// The routing keys published, in order.
const KEYS: [&str; 5] = [
    "orders.created.eu",
    "orders.paid.eu",
    "orders.created.us",
    "orders.created.eu.late",
    "invoices.created.eu",
];

/// The queues (consumer groups) of each exchange kind and their binding keys; `None`
/// binds to everything (a fanout queue).
fn queues(kind: &str) -> Option<Vec<(&'static str, Option<&'static str>)>> {
    Some(match kind {
        "topic" => vec![
            ("eu-orders", Some("orders.*.eu")),
            ("all-orders", Some("orders.#")),
        ],
        "direct" => vec![
            ("paid-eu", Some("orders.paid.eu")),
            ("created-us", Some("orders.created.us")),
        ],
        "fanout" => vec![("audit", None), ("search", None)],
        _ => return None,
    })
}

type Received = Arc<Mutex<BTreeSet<String>>>;

#[tokio::main]
async fn main() -> vostok_client::Result<()> {
    let mut args = std::env::args().skip(1);
    let namesrv = args.next().unwrap_or_else(|| "127.0.0.1:9876".into());
    let kind = args.next().unwrap_or_else(|| "topic".into());
    let topic = args.next().unwrap_or_else(|| "Orders".into());
    let Some(queues) = queues(&kind) else {
        eprintln!("the exchange kind is topic, direct or fanout, not {kind:?}");
        std::process::exit(2);
    };
    // This run's messages only: a queue may hold messages of earlier runs.
    let run = format!("run-{}", std::process::id());

    // Declare each queue and bind it: a consumer group with its subscription.
    let mut consumers = Vec::new();
    for (group, binding) in &queues {
        let mut config = ConsumerConfig::new(*group, &namesrv);
        config.common.consume_from_where = ConsumeFromWhere::ConsumeFromFirstOffset;
        let consumer = PushConsumer::new(config);
        let selector = match binding {
            Some(key) => MessageSelector::by_routing_key(*key),
            None => MessageSelector::by_tag("*"),
        };
        consumer.subscribe_with_selector(&topic, selector)?;
        let received: Received = Arc::default();
        let (sink, prefix) = (received.clone(), format!("{run} "));
        consumer.register_message_listener(MessageListener::concurrently(
            move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
                for m in msgs {
                    let body = String::from_utf8_lossy(&m.body);
                    if let Some(key) = body.strip_prefix(&prefix) {
                        sink.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(key.to_owned());
                    }
                }
                ConsumeConcurrentlyStatus::ConsumeSuccess
            },
        ));
        consumer.start().await?;
        consumers.push((group, binding, consumer, received));
    }

    // Publish to the exchange with a routing key each.
    let producer = Producer::new(ProducerConfig::new("amqp_publisher", &namesrv));
    producer.start().await?;
    for key in KEYS {
        let message = Message::new(&topic, format!("{run} {key}")).with_routing_key(key)?;
        producer.send(message).await?;
    }
    println!("{kind} exchange {topic}: published {}", KEYS.join(", "));

    // Wait until every queue holds what its binding selects (30 s at most).
    let expected = |binding: &Option<&str>| -> BTreeSet<String> {
        let key = binding.map(|b| BindingKey::parse(b).expect("the bindings above are valid"));
        KEYS.iter()
            .filter(|k| key.as_ref().is_none_or(|b| b.matches(k)))
            .map(|k| (*k).to_owned())
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut ok = true;
    for (group, binding, _, received) in &consumers {
        let want = expected(binding);
        let got = loop {
            let got = received.lock().unwrap_or_else(|e| e.into_inner()).clone();
            if got == want || Instant::now() > deadline {
                break got;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let shown: Vec<&str> = got.iter().map(String::as_str).collect();
        println!(
            "queue {group} (bound with {}): {}",
            binding.unwrap_or("everything"),
            shown.join(", ")
        );
        ok &= got == want;
    }
    producer.shutdown().await;
    for (_, _, consumer, _) in consumers {
        consumer.shutdown().await;
    }
    if !ok {
        eprintln!("a queue did not receive what its binding selects");
        std::process::exit(1);
    }
    Ok(())
}
