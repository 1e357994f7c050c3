//! The load: SDK producer tasks sending synchronously at a steady pace, each message
//! under a unique key, and the log of every SEND_OK (key, queue, offset, when) that
//! the checker compares with the replicas.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use vostok_client::{ClientConfig, ClientError, Message, Producer, ProducerConfig, SendStatus};
use vostok_remoting::protocol::response_code;

/// One acknowledged send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ack {
    pub key: String,
    pub broker: String,
    pub queue: i32,
    pub offset: i64,
    /// When the answer came, from the start of the run.
    pub at: Duration,
}

/// What the producers were told.
pub(super) struct SendLog {
    started: Instant,
    acks: Mutex<Vec<Ack>>,
    failures: Mutex<BTreeMap<String, u64>>,
    attempts: AtomicU64,
    /// Every SEND_OK as a line `millis key broker queue offset`, when kept.
    file: Option<Mutex<std::io::BufWriter<std::fs::File>>>,
}

impl SendLog {
    pub(super) fn new(started: Instant, file: Option<std::fs::File>) -> SendLog {
        SendLog {
            started,
            acks: Mutex::default(),
            failures: Mutex::default(),
            attempts: AtomicU64::new(0),
            file: file.map(|f| Mutex::new(std::io::BufWriter::new(f))),
        }
    }

    fn ack(&self, ack: Ack) {
        if let Some(file) = &self.file {
            let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
            // The log is an aid to a reader; the run keeps its acks in memory anyway.
            let _ = writeln!(
                file,
                "{}\t{}\t{}\t{}\t{}",
                ack.at.as_millis(),
                ack.key,
                ack.broker,
                ack.queue,
                ack.offset
            );
        }
        self.acks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(ack);
    }

    fn fail(&self, outcome: String) {
        *self
            .failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(outcome)
            .or_default() += 1;
    }

    pub(super) fn acked(&self) -> usize {
        self.acks.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// When the last SEND_OK came, from the start of the run.
    pub(super) fn last_ack(&self) -> Option<Duration> {
        let acks = self.acks.lock().unwrap_or_else(|e| e.into_inner());
        acks.last().map(|a| a.at)
    }

    pub(super) fn acks(&self) -> Vec<Ack> {
        let mut acks = self.acks.lock().unwrap_or_else(|e| e.into_inner()).clone();
        acks.sort_by_key(|a| a.at);
        acks
    }

    pub(super) fn attempts(&self) -> u64 {
        self.attempts.load(Ordering::Relaxed)
    }

    pub(super) fn failures(&self) -> BTreeMap<String, u64> {
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(super) fn flush(&self) {
        if let Some(file) = &self.file {
            let _ = file.lock().unwrap_or_else(|e| e.into_inner()).flush();
        }
    }
}

/// The body of the message sent under `key`: the key, then padding after a `|`.
fn body(key: &str) -> String {
    format!("{key}|{}", ".".repeat(64))
}

/// The key a stored body was sent under.
pub(super) fn key_of(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    text.split('|').next().unwrap_or_default().to_owned()
}

/// Producer tasks until [`Producers::stop`].
pub(super) struct Producers {
    producer: Arc<Producer>,
    stop: Arc<AtomicBool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Producers {
    /// `tasks` tasks sending to `topic` at `rate` messages a second between them.
    pub(super) async fn start(
        namesrv: &str,
        topic: &str,
        tasks: usize,
        rate: u32,
        log: Arc<SendLog>,
    ) -> Result<Producers, String> {
        let producer = Producer::new(ProducerConfig {
            client: ClientConfig {
                instance_name: "schedule".into(),
                poll_name_server_interval: Duration::from_millis(500),
                heartbeat_broker_interval: Duration::from_secs(1),
                ..ClientConfig::with_namesrv(namesrv)
            },
            producer_group: "schedule-producers".into(),
            send_msg_timeout: Duration::from_secs(3),
            // One attempt per key: a second copy of a key in a queue is then the
            // broker's doing, never a client retry.
            retry_times_when_send_failed: 0,
            compress_msg_body_over_howmuch: usize::MAX,
            ..Default::default()
        });
        producer
            .start()
            .await
            .map_err(|e| format!("producer start: {e}"))?;
        let producer = Arc::new(producer);
        let stop = Arc::new(AtomicBool::new(false));
        let interval = Duration::from_secs_f64(tasks as f64 / f64::from(rate.max(1)));
        let tasks = (0..tasks)
            .map(|t| {
                let (producer, log, stop) = (producer.clone(), log.clone(), stop.clone());
                let topic = topic.to_owned();
                tokio::spawn(async move {
                    let mut next = tokio::time::Instant::now();
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let key = format!("k{t}-{n}");
                        n += 1;
                        log.attempts.fetch_add(1, Ordering::Relaxed);
                        let message = Message::new(&topic, body(&key)).with_keys([key.as_str()]);
                        match producer.send(message).await {
                            Ok(r) if r.send_status == SendStatus::SendOk => log.ack(Ack {
                                key,
                                broker: r.message_queue.broker_name.clone(),
                                queue: r.message_queue.queue_id,
                                offset: r.queue_offset,
                                at: log.started.elapsed(),
                            }),
                            Ok(r) => log.fail(r.send_status.name().to_owned()),
                            Err(e) => log.fail(outcome(&e)),
                        }
                        // A steady pace, without a burst to catch up after an outage.
                        next += interval;
                        let now = tokio::time::Instant::now();
                        if next < now {
                            next = now;
                        }
                        tokio::time::sleep_until(next).await;
                    }
                })
            })
            .collect();
        Ok(Producers {
            producer,
            stop,
            tasks,
        })
    }

    pub(super) async fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in std::mem::take(&mut self.tasks) {
            let _ = t.await;
        }
        self.producer.shutdown().await;
    }
}

impl Drop for Producers {
    /// A run that ends early (an error) stops its senders too.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A failed send by kind: the broker's response code by name, else the error's kind.
fn outcome(e: &ClientError) -> String {
    match e {
        ClientError::Broker { code, .. } => response_code::name(*code).to_owned(),
        ClientError::Timeout { .. } => "timeout".to_owned(),
        ClientError::Remoting { .. } => "no answer".to_owned(),
        ClientError::NoRoute { .. } | ClientError::NoBroker { .. } => "no route".to_owned(),
        other => other
            .to_string()
            .split(':')
            .next()
            .unwrap_or("error")
            .to_owned(),
    }
}
