//! The SDK drivers: producer tasks sending synchronously (each body unique, so that a
//! stored copy can be traced to its send) and a push consumer recording what it gets.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinHandle;
use vostok_client::{
    ClientConfig, ClientError, CommonConsumerConfig, ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus, ConsumeFromWhere, ConsumerConfig, Message, MessageExt,
    MessageListener, Producer, ProducerConfig, PushConsumer, SendStatus,
};
use vostok_remoting::protocol::response_code;

use crate::ledger::Ledger;

fn client(namesrv: &str, instance: &str) -> ClientConfig {
    ClientConfig {
        instance_name: instance.to_owned(),
        poll_name_server_interval: Duration::from_secs(1),
        persist_consumer_offset_interval: Duration::from_millis(500),
        rebalance_interval: Duration::from_secs(2),
        ..ClientConfig::with_namesrv(namesrv)
    }
}

pub async fn producer(namesrv: &str, instance: &str) -> Result<Arc<Producer>, String> {
    let p = Producer::new(ProducerConfig {
        client: client(namesrv, instance),
        producer_group: format!("{instance}-group"),
        send_msg_timeout: Duration::from_secs(3),
        // Bodies stay as sent, so that a raw read of the topic compares them directly.
        compress_msg_body_over_howmuch: usize::MAX,
        ..Default::default()
    });
    p.start()
        .await
        .map_err(|e| format!("producer start: {e}"))?;
    Ok(Arc::new(p))
}

/// Producer tasks until [`Producers::stop`].
pub struct Producers {
    stop: Arc<AtomicBool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Producers {
    /// `tasks` tasks sending `<prefix>-<task>-<n>` to `topic`, `pause` between sends.
    pub fn start(
        producer: Arc<Producer>,
        topic: &str,
        prefix: &str,
        tasks: usize,
        pause: Duration,
        ledger: Arc<Ledger>,
    ) -> Producers {
        Self::start_padded(producer, topic, prefix, tasks, pause, 0, ledger)
    }

    /// As [`Producers::start`], each body padded to `pad` more bytes after a `|` (the
    /// ledger keeps what comes before it).
    pub fn start_padded(
        producer: Arc<Producer>,
        topic: &str,
        prefix: &str,
        tasks: usize,
        pause: Duration,
        pad: usize,
        ledger: Arc<Ledger>,
    ) -> Producers {
        let padding = if pad == 0 {
            String::new()
        } else {
            format!("|{}", ".".repeat(pad))
        };
        let stop = Arc::new(AtomicBool::new(false));
        let tasks = (0..tasks)
            .map(|t| {
                let (producer, ledger, stop) = (producer.clone(), ledger.clone(), stop.clone());
                let (topic, prefix, padding) =
                    (topic.to_owned(), prefix.to_owned(), padding.clone());
                tokio::spawn(async move {
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let body = format!("{prefix}-{t}-{n}");
                        n += 1;
                        ledger.attempt();
                        let message = Message::new(&topic, format!("{body}{padding}"));
                        let failed = match producer.send(message).await {
                            Ok(r) if r.send_status == SendStatus::SendOk => {
                                ledger.ack(body);
                                false
                            }
                            Ok(r) => {
                                ledger.fail(r.send_status.name());
                                true
                            }
                            Err(e) => {
                                ledger.fail(outcome(&e));
                                true
                            }
                        };
                        if failed {
                            // The broker is down or refusing: do not spin.
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        } else if !pause.is_zero() {
                            tokio::time::sleep(pause).await;
                        }
                    }
                })
            })
            .collect();
        Producers { stop, tasks }
    }

    pub async fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

/// A failed send by kind: the broker's response code by name, else the error's kind.
pub fn outcome(e: &ClientError) -> String {
    match e {
        ClientError::Broker { code, .. } => response_code::name(*code).to_owned(),
        ClientError::Timeout { .. } => "timeout".to_owned(),
        ClientError::Remoting { .. } => "connection".to_owned(),
        ClientError::NoRoute { .. } | ClientError::NoBroker { .. } => "no route".to_owned(),
        other => {
            let text = other.to_string();
            text.split(':').next().unwrap_or("error").to_owned()
        }
    }
}

/// Bodies a consumer received, with how many times.
pub type Received = Arc<Mutex<HashMap<String, u32>>>;

pub async fn consumer(
    namesrv: &str,
    group: &str,
    topic: &str,
) -> Result<(PushConsumer, Received), String> {
    let received: Received = Arc::default();
    let consumer = PushConsumer::new(ConsumerConfig {
        common: CommonConsumerConfig {
            client: client(namesrv, group),
            consumer_group: group.into(),
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            ..CommonConsumerConfig::push_defaults()
        },
        ..Default::default()
    });
    consumer
        .subscribe(topic, "*")
        .map_err(|e| format!("subscribe: {e}"))?;
    let r = received.clone();
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            let mut r = r.lock().expect("received lock");
            for m in msgs {
                *r.entry(crate::ledger::key(&m.body)).or_default() += 1;
            }
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer
        .start()
        .await
        .map_err(|e| format!("consumer start: {e}"))?;
    Ok((consumer, received))
}

/// Waits until the consumer has every acknowledged body (or `limit` passes); returns
/// how many it is missing and how many deliveries were repeats.
pub async fn wait_received(received: &Received, ledger: &Ledger, limit: Duration) -> (usize, u64) {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let (missing, repeats) = {
            let r = received.lock().expect("received lock");
            let repeats = r.values().map(|&n| u64::from(n.saturating_sub(1))).sum();
            let missing = ledger.acked() - r.keys().filter(|b| ledger.is_acked(b)).count();
            (missing, repeats)
        };
        if missing == 0 || tokio::time::Instant::now() > deadline {
            return (missing, repeats);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
