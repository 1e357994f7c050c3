//! Sends messages in every producer mode: sync, async with a window, oneway, orderly by
//! key and batch. Usage: `cargo run -p vostok-client --example producer [namesrv] [topic]`
//! (defaults `127.0.0.1:9876`, `TopicTest`).

use futures_util::stream::{FuturesUnordered, StreamExt};
use vostok_client::{Message, Producer, ProducerConfig};

#[tokio::main]
async fn main() -> vostok_client::Result<()> {
    let mut args = std::env::args().skip(1);
    let namesrv = args.next().unwrap_or_else(|| "127.0.0.1:9876".into());
    let topic = args.next().unwrap_or_else(|| "TopicTest".into());
    let producer = Producer::new(ProducerConfig::new("example_producer", &namesrv));
    producer.start().await?;

    // Sync: wait for the broker's answer.
    let r = producer
        .send(
            Message::new(&topic, "sync hello")
                .with_tags("TagA")
                .with_keys(["order-1"]),
        )
        .await?;
    println!(
        "sync: {} {:?} {} offset {}",
        r.msg_id, r.send_status, r.message_queue, r.queue_offset
    );

    // Async: keep up to 64 sends in flight.
    let mut window = FuturesUnordered::new();
    for i in 0..100 {
        window.push(
            producer
                .send_async(Message::new(&topic, format!("async {i}")))
                .await?,
        );
        if window.len() >= 64 {
            window.next().await.transpose()?;
        }
    }
    while let Some(r) = window.next().await {
        r?;
    }
    println!("async: 100 sent");

    // Oneway: no answer, no retry.
    producer.send_oneway(Message::new(&topic, "oneway")).await?;

    // Orderly: one key, one queue, in order.
    for step in ["created", "paid", "shipped"] {
        let r = producer
            .send_orderly(Message::new(&topic, step).with_tags("Order"), "order-42")
            .await?;
        println!("orderly: {step} -> queue {}", r.message_queue.queue_id);
    }

    // Batch: one request, one record per message.
    let batch: Vec<Message> = (0..10)
        .map(|i| Message::new(&topic, format!("batch {i}")))
        .collect();
    let r = producer.send_batch(batch).await?;
    println!("batch: ids {}", r.msg_id);

    producer.shutdown().await;
    Ok(())
}
