//! A transactional producer: the local transaction decides commit or rollback; the
//! broker's check-back is answered by the listener.
//! Usage: `cargo run -p vostok-client --example transaction [namesrv] [topic]`.

use std::sync::Arc;
use std::time::Duration;

use vostok_client::{
    LocalTransactionState, Message, MessageExt, ProducerConfig, TransactionListener,
    TransactionProducer,
};

struct Orders;

impl TransactionListener for Orders {
    fn execute_local_transaction(&self, msg: &Message) -> LocalTransactionState {
        match msg.tags() {
            Some("commit") => LocalTransactionState::CommitMessage,
            Some("rollback") => LocalTransactionState::RollbackMessage,
            _ => LocalTransactionState::Unknown,
        }
    }

    fn check_local_transaction(&self, msg: &MessageExt) -> LocalTransactionState {
        println!("broker checks {}", msg.msg_id());
        LocalTransactionState::CommitMessage
    }
}

#[tokio::main]
async fn main() -> vostok_client::Result<()> {
    let mut args = std::env::args().skip(1);
    let namesrv = args.next().unwrap_or_else(|| "127.0.0.1:9876".into());
    let topic = args.next().unwrap_or_else(|| "TopicTest".into());
    let producer = TransactionProducer::new(
        ProducerConfig::new("example_tx", &namesrv),
        Arc::new(Orders),
    );
    producer.start().await?;
    for tag in ["commit", "rollback", "unknown"] {
        let r = producer
            .send_message_in_transaction(Message::new(&topic, tag).with_tags(tag))
            .await?;
        println!(
            "{tag}: {} -> {:?}",
            r.send_result.msg_id, r.local_transaction_state
        );
    }
    // Stay up for the broker's check of the unknown one (first check after ~6 s).
    tokio::time::sleep(Duration::from_secs(70)).await;
    producer.shutdown().await;
    Ok(())
}
