//! A lite pull consumer: assign every queue of a topic, poll, commit by hand.
//! Usage: `cargo run -p vostok-client --example lite_pull [namesrv] [topic]`.

use std::time::Duration;

use vostok_client::{LitePullConsumer, LitePullConsumerConfig};

#[tokio::main]
async fn main() -> vostok_client::Result<()> {
    let mut args = std::env::args().skip(1);
    let namesrv = args.next().unwrap_or_else(|| "127.0.0.1:9876".into());
    let topic = args.next().unwrap_or_else(|| "TopicTest".into());
    let mut config = LitePullConsumerConfig::new("example_lite", &namesrv);
    config.auto_commit = false;
    let consumer = LitePullConsumer::new(config);
    consumer.start().await?;
    let queues = consumer.fetch_message_queues(&topic).await?;
    consumer.assign(&queues).await?;
    for _ in 0..10 {
        let msgs = consumer.poll(Duration::from_secs(3)).await?;
        for m in &msgs {
            println!(
                "{} #{}: {}",
                m.queue_id,
                m.queue_offset,
                String::from_utf8_lossy(&m.body)
            );
        }
        consumer.commit().await?;
    }
    consumer.shutdown().await;
    Ok(())
}
