//! A transactional producer: the local transaction decides commit or rollback; the
//! broker's check-back is answered by the listener.
//! Usage: `cargo run -p vostok-client --example transaction [namesrv] [topic]`.
//!
//! The third message's local transaction answers "unknown", so the broker keeps it as
//! a half message and later asks the producer about it (the check-back). The example
//! waits for that question, answers COMMIT, and ends.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use vostok_client::{
    LocalTransactionState, Message, MessageExt, ProducerConfig, TransactionListener,
    TransactionProducer,
};

/// Longest wait for the check-back: a broker with Apache's defaults asks within about
/// a minute.
const CHECK_BACK_WAIT: Duration = Duration::from_secs(90);

#[derive(Default)]
struct Orders {
    checked: Notify,
}

impl TransactionListener for Orders {
    fn execute_local_transaction(&self, msg: &Message) -> LocalTransactionState {
        match msg.tags() {
            Some("commit") => LocalTransactionState::CommitMessage,
            Some("rollback") => LocalTransactionState::RollbackMessage,
            _ => LocalTransactionState::Unknown,
        }
    }

    fn check_local_transaction(&self, msg: &MessageExt) -> LocalTransactionState {
        println!(
            "the broker checks back on {}: answering COMMIT",
            msg.msg_id()
        );
        self.checked.notify_one();
        LocalTransactionState::CommitMessage
    }
}

#[tokio::main]
async fn main() -> vostok_client::Result<()> {
    let mut args = std::env::args().skip(1);
    let namesrv = args.next().unwrap_or_else(|| "127.0.0.1:9876".into());
    let topic = args.next().unwrap_or_else(|| "TopicTest".into());
    let orders = Arc::new(Orders::default());
    let producer =
        TransactionProducer::new(ProducerConfig::new("example_tx", &namesrv), orders.clone());
    producer.start().await?;
    let mut unknown = String::new();
    for tag in ["commit", "rollback", "unknown"] {
        let r = producer
            .send_message_in_transaction(Message::new(&topic, tag).with_tags(tag))
            .await?;
        println!(
            "{tag}: {} -> {:?}",
            r.send_result.msg_id, r.local_transaction_state
        );
        unknown = r.send_result.msg_id;
    }
    println!(
        "waiting for the broker to check back on {unknown} (the unknown one): it asks about \
         half messages older than transactionTimeOut (6 s by default) once every \
         transactionCheckInterval (60 s by default), so up to about a minute; Ctrl-C to stop"
    );
    let started = Instant::now();
    let mut ticks = tokio::time::interval_at(
        tokio::time::Instant::now() + Duration::from_secs(15),
        Duration::from_secs(15),
    );
    loop {
        tokio::select! {
            _ = orders.checked.notified() => break,
            _ = ticks.tick() => {
                let waited = started.elapsed();
                if waited >= CHECK_BACK_WAIT {
                    println!(
                        "no check-back after {} s: is the broker's transactionCheckInterval longer?",
                        waited.as_secs()
                    );
                    break;
                }
                println!("still waiting for the check-back ({} s)", waited.as_secs());
            }
        }
    }
    // Shutting down waits for the answer (END_TRANSACTION) to go out.
    producer.shutdown().await;
    Ok(())
}
