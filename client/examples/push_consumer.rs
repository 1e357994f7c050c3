//! A clustering push consumer with a concurrent listener; `--orderly` uses an orderly
//! listener, `--broadcast` broadcasting. Ctrl-C stops it (offsets are committed).
//! Usage: `cargo run -p vostok-client --example push_consumer [namesrv] [topic] [--orderly|--broadcast]`.

use vostok_client::consumer::MessageListenerOrderly;
use vostok_client::{
    ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, ConsumeOrderlyContext,
    ConsumeOrderlyStatus, ConsumerConfig, MessageExt, MessageListener, MessageModel, PushConsumer,
};

struct PrintInOrder;

impl MessageListenerOrderly for PrintInOrder {
    fn consume_message(
        &self,
        msgs: &[MessageExt],
        ctx: &mut ConsumeOrderlyContext,
    ) -> ConsumeOrderlyStatus {
        for m in msgs {
            println!(
                "{} #{}: {}",
                ctx.message_queue,
                m.queue_offset,
                String::from_utf8_lossy(&m.body)
            );
        }
        ConsumeOrderlyStatus::Success
    }
}

#[tokio::main]
async fn main() -> vostok_client::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let positional: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let namesrv = positional.first().map_or("127.0.0.1:9876", |s| s.as_str());
    let topic = positional.get(1).map_or("TopicTest", |s| s.as_str());
    let mut config = ConsumerConfig::new("example_consumer", namesrv);
    if args.iter().any(|a| a == "--broadcast") {
        config.common.message_model = MessageModel::Broadcasting;
    }
    let consumer = PushConsumer::new(config);
    consumer.subscribe(topic, "*")?;
    if args.iter().any(|a| a == "--orderly") {
        consumer.register_message_listener(MessageListener::orderly(PrintInOrder));
    } else {
        consumer.register_message_listener(MessageListener::concurrently(
            |msgs: &[MessageExt], _ctx: &mut ConsumeConcurrentlyContext| {
                for m in msgs {
                    println!(
                        "{} [{}] {}",
                        m.msg_id(),
                        m.tags().unwrap_or(""),
                        String::from_utf8_lossy(&m.body)
                    );
                }
                ConsumeConcurrentlyStatus::ConsumeSuccess
            },
        ));
    }
    consumer.start().await?;
    let _ = tokio::signal::ctrl_c().await;
    consumer.shutdown().await;
    Ok(())
}
