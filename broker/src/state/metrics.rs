//! What the send, pull and POP paths record for Prometheus and the console: RocketMQ
//! 5's request metrics (docs/operations.md#metrics).
//!
//! * `rocketmq_messages_in_total`, `rocketmq_throughput_in_total`,
//!   `rocketmq_message_size` by `topic`, `message_type`, `is_system`: one add per put
//!   (a batch counts its messages; the size is the put's bytes over its messages, as
//!   Apache records it).
//! * `rocketmq_messages_out_total`, `rocketmq_throughput_out_total` by `topic`,
//!   `consumer_group`, `is_retry`, `is_system`: one add per pull or pop that found
//!   messages.
//!
//! Cost on the send path: the topic's handles come from a small per-thread cache of the
//! topics recorded last (a string compare; the shared map, its lock and a hash only on
//! a miss), then four relaxed atomic adds; the size histogram is an array of atomic
//! counters, not a locked one. Label text is built once per topic (and message type),
//! never per message. With neither the exporter nor the console on, nothing is recorded
//! at all.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use vostok_observe::prometheus_client::metrics::counter::Counter;
use vostok_observe::prometheus_client::metrics::family::Family;
use vostok_observe::prometheus_client::registry::Registry;
use vostok_observe::{AtomicHistogram, Buckets, RpcMetrics};
use vostok_remoting::protocol::body::TopicConfig;
use vostok_remoting::protocol::topic;
use vostok_remoting::support::sync::{MutexExt, RwLockExt};
use vostok_store::PutMessageResult;

use super::event_metrics::EventMetrics;

type Labels = Vec<(&'static str, String)>;

/// Apache's `message_type` label values (`TopicMessageType`, lower case).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MessageKind {
    Normal = 0,
    Delay = 1,
    Transaction = 2,
    Fifo = 3,
}

impl MessageKind {
    fn name(self) -> &'static str {
        match self {
            MessageKind::Normal => "normal",
            MessageKind::Delay => "delay",
            MessageKind::Transaction => "transaction",
            MessageKind::Fifo => "fifo",
        }
    }

    /// A topic created as FIFO: `message.type=FIFO` (Apache 5's topic attribute), or an
    /// ordered topic (4.x `order`).
    pub(crate) fn is_fifo_topic(config: &TopicConfig) -> bool {
        config.order
            || ["message.type", "+message.type"].iter().any(|key| {
                config
                    .attributes
                    .get(*key)
                    .is_some_and(|t| t.eq_ignore_ascii_case("fifo"))
            })
    }
}

/// Apache's message size buckets, in bytes: 1 KiB, 4 KiB, 512 KiB, 1, 2, 4 MiB.
static SIZE_BUCKETS: Buckets = Buckets {
    bounds: &[1024, 4096, 524_288, 1_048_576, 2_097_152, 4_194_304],
    scale: 1.0,
};

fn size_histogram() -> AtomicHistogram {
    AtomicHistogram::new(&SIZE_BUCKETS)
}

/// The handles of one topic and message type.
struct InMeter {
    messages: Counter,
    bytes: Counter,
    size: AtomicHistogram,
}

impl InMeter {
    fn add(&self, count: u64, bytes: u64) {
        self.messages.inc_by(count);
        self.bytes.inc_by(bytes);
        // Apache records the size of the put over its messages.
        self.size.observe(bytes / count.max(1));
    }
}

/// The handles of one topic, by message type.
#[derive(Default)]
pub(crate) struct TopicIn {
    kinds: [OnceLock<InMeter>; 4],
}

impl TopicIn {
    /// Messages stored since start, every type together (console rates).
    fn messages(&self) -> u64 {
        self.kinds
            .iter()
            .filter_map(OnceLock::get)
            .map(|m| m.messages.get())
            .sum()
    }
}

/// Tells apart the `BrokerMetrics` of one process in the per-thread caches (tests run
/// several brokers in one process).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Topics a thread keeps handles for; a send path serves few topics per thread at once.
const RECENT_TOPICS: usize = 4;

type RecentTopic = (u64, Box<str>, Arc<TopicIn>);

thread_local! {
    /// The topics this thread recorded last, with their handles, round-robin.
    static RECENT: RefCell<([Option<RecentTopic>; RECENT_TOPICS], usize)> =
        const { RefCell::new(([None, None, None, None], 0)) };
}

/// The handles of one topic and group.
pub(crate) struct OutMeter {
    messages: Counter,
    bytes: Counter,
    /// Queue → the next offset the group pulls or pops there
    /// (`rocketmq_consumer_queueing_latency`).
    next: Mutex<HashMap<i32, i64>>,
}

impl OutMeter {
    pub(crate) fn messages(&self) -> u64 {
        self.messages.get()
    }
}

/// The request metrics of one broker.
pub(crate) struct BrokerMetrics {
    /// False when neither the exporter nor the console is on: nothing is recorded.
    enabled: bool,
    /// This instance's key in the per-thread topic caches.
    id: u64,
    pub(crate) rpc: RpcMetrics,
    /// DLQ moves, transactions, creates, timers (`event_metrics`).
    pub(crate) events: EventMetrics,
    messages_in: Family<Labels, Counter>,
    throughput_in: Family<Labels, Counter>,
    message_size: Family<Labels, AtomicHistogram, fn() -> AtomicHistogram>,
    messages_out: Family<Labels, Counter>,
    throughput_out: Family<Labels, Counter>,
    inbound: RwLock<HashMap<String, Arc<TopicIn>>>,
    /// topic → group → handles.
    outbound: RwLock<HashMap<String, HashMap<String, Arc<OutMeter>>>>,
}

fn is_system(t: &str) -> &'static str {
    if topic::is_system_topic(t) {
        "true"
    } else {
        "false"
    }
}

impl BrokerMetrics {
    pub(crate) fn new(enabled: bool) -> Self {
        BrokerMetrics {
            enabled,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            rpc: RpcMetrics::default(),
            events: EventMetrics::new(enabled),
            messages_in: Family::default(),
            throughput_in: Family::default(),
            message_size: Family::new_with_constructor(size_histogram),
            messages_out: Family::default(),
            throughput_out: Family::default(),
            inbound: RwLock::default(),
            outbound: RwLock::default(),
        }
    }

    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// Adds the request families to `registry`.
    pub(crate) fn register(&self, registry: &mut Registry) {
        self.rpc.register(registry);
        self.events.register(registry);
        registry.register(
            "rocketmq_messages_in",
            "Total number of incoming messages",
            self.messages_in.clone(),
        );
        registry.register(
            "rocketmq_throughput_in",
            "Total traffic of incoming messages",
            self.throughput_in.clone(),
        );
        registry.register(
            "rocketmq_message_size",
            "Incoming messages size",
            self.message_size.clone(),
        );
        registry.register(
            "rocketmq_messages_out",
            "Total number of outgoing messages",
            self.messages_out.clone(),
        );
        registry.register(
            "rocketmq_throughput_out",
            "Total traffic of outgoing messages",
            self.throughput_out.clone(),
        );
    }

    /// A put to `topic` was answered: counts its messages and bytes when stored.
    pub(crate) fn record_put(&self, topic: &str, kind: MessageKind, result: &PutMessageResult) {
        if !self.enabled || !result.is_ok() {
            return;
        }
        if let Some(a) = &result.append {
            self.add_put(topic, kind, a.msg_num as u64, a.wrote_bytes as u64);
        }
    }

    /// Adds `count` messages of `bytes` bytes to `topic`'s counters.
    ///
    /// The topic's handles come from this thread's cache when it recorded the topic
    /// lately, else from the shared map (created on first use), and are then cached.
    pub(crate) fn add_put(&self, topic: &str, kind: MessageKind, count: u64, bytes: u64) {
        if !self.enabled || count == 0 {
            return;
        }
        let hit = RECENT.with_borrow(|(recent, _)| {
            let found = recent
                .iter()
                .flatten()
                .find(|(id, name, _)| *id == self.id && **name == *topic);
            if let Some((_, _, t)) = found {
                self.add_to(t, topic, kind, count, bytes);
            }
            found.is_some()
        });
        if hit {
            return;
        }
        let found = self.inbound.read_locked().get(topic).cloned();
        let t = found.unwrap_or_else(|| {
            self.inbound
                .write_locked()
                .entry(topic.to_owned())
                .or_default()
                .clone()
        });
        self.add_to(&t, topic, kind, count, bytes);
        RECENT.with_borrow_mut(|(recent, next)| {
            recent[*next % RECENT_TOPICS] = Some((self.id, topic.into(), t));
            *next = next.wrapping_add(1);
        });
    }

    fn add_to(&self, t: &TopicIn, topic: &str, kind: MessageKind, count: u64, bytes: u64) {
        let meter = t.kinds[kind as usize].get_or_init(|| {
            let labels: Labels = vec![
                ("topic", topic.to_owned()),
                ("message_type", kind.name().to_owned()),
                ("is_system", is_system(topic).to_owned()),
            ];
            InMeter {
                messages: self.messages_in.get_or_create_owned(&labels),
                bytes: self.throughput_in.get_or_create_owned(&labels),
                size: self.message_size.get_or_create_owned(&labels),
            }
        });
        meter.add(count, bytes);
    }

    /// A pull or pop by `group` took `count` messages, `bytes` bytes, from `topic`.
    pub(crate) fn record_get(&self, topic: &str, group: &str, count: u64, bytes: u64) {
        if !self.enabled || count == 0 {
            return;
        }
        if let Some(m) = self
            .outbound
            .read_locked()
            .get(topic)
            .and_then(|g| g.get(group))
        {
            m.messages.inc_by(count);
            m.bytes.inc_by(bytes);
            return;
        }
        let meter = {
            {
                let labels: Labels = vec![
                    ("topic", topic.to_owned()),
                    ("consumer_group", group.to_owned()),
                    ("is_retry", topic::is_retry_topic(topic).to_string()),
                    ("is_system", is_system(topic).to_owned()),
                ];
                let meter = Arc::new(OutMeter {
                    messages: self.messages_out.get_or_create_owned(&labels),
                    bytes: self.throughput_out.get_or_create_owned(&labels),
                    next: Mutex::default(),
                });
                self.outbound
                    .write_locked()
                    .entry(topic.to_owned())
                    .or_default()
                    .entry(group.to_owned())
                    .or_insert(meter)
                    .clone()
            }
        };
        meter.messages.inc_by(count);
        meter.bytes.inc_by(bytes);
    }

    /// A pull or pop by `group` that took messages from `topic`'s queue moved on to
    /// `next`: a map lookup under the read lock and a small lock of the group's own.
    pub(crate) fn pulled_to(&self, topic: &str, group: &str, queue_id: i32, next: i64) {
        if !self.enabled {
            return;
        }
        let out = self.outbound.read_locked();
        if let Some(m) = out.get(topic).and_then(|g| g.get(group)) {
            let mut offsets = m.next.locked();
            let e = offsets.entry(queue_id).or_insert(next);
            *e = (*e).max(next);
        }
    }

    /// The next offset `group` pulls on `topic`'s queue, when it took messages there
    /// since start.
    pub(crate) fn next_pull(&self, topic: &str, group: &str, queue_id: i32) -> Option<i64> {
        let out = self.outbound.read_locked();
        let m = out.get(topic).and_then(|g| g.get(group))?;
        let next = m.next.locked().get(&queue_id).copied();
        next
    }

    /// Messages stored per topic since start (console rates).
    pub(crate) fn topic_in_totals(&self) -> Vec<(String, u64)> {
        self.inbound
            .read_locked()
            .iter()
            .map(|(t, m)| (t.clone(), m.messages()))
            .collect()
    }

    /// Per topic since start: messages stored and the puts that stored them.
    pub(crate) fn topic_put_counts(&self) -> Vec<(String, u64, u64)> {
        self.inbound
            .read_locked()
            .iter()
            .map(|(t, m)| {
                let puts = m.kinds.iter().filter_map(OnceLock::get);
                (t.clone(), m.messages(), puts.map(|k| k.size.count()).sum())
            })
            .collect()
    }

    /// Messages taken per topic and group since start (console rates).
    pub(crate) fn group_out_totals(&self) -> Vec<(String, String, u64)> {
        let out = self.outbound.read_locked();
        out.iter()
            .flat_map(|(t, groups)| {
                groups
                    .iter()
                    .map(move |(g, m)| (t.clone(), g.clone(), m.messages()))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disabled_metrics_record_nothing() {
        let m = BrokerMetrics::new(false);
        m.add_put("T", MessageKind::Normal, 3, 300);
        m.record_get("T", "G", 3, 300);
        assert!(m.topic_in_totals().is_empty());
        assert!(m.group_out_totals().is_empty());
    }

    #[test]
    fn puts_and_gets_add_up_per_topic_and_group() {
        let m = BrokerMetrics::new(true);
        m.add_put("T", MessageKind::Normal, 3, 300);
        m.add_put("T", MessageKind::Delay, 1, 50);
        m.record_get("T", "G", 2, 200);
        m.record_get("T", "G", 1, 100);
        m.pulled_to("T", "G", 1, 7);
        m.pulled_to("T", "G", 1, 5);
        m.pulled_to("T", "other", 1, 5);
        assert_eq!(m.next_pull("T", "G", 1), Some(7), "the furthest pull");
        assert_eq!(m.next_pull("T", "G", 0), None);
        assert_eq!(m.next_pull("T", "other", 1), None, "took nothing: not kept");
        assert_eq!(m.topic_in_totals(), [("T".to_owned(), 4)]);
        assert_eq!(m.group_out_totals(), [("T".into(), "G".into(), 3)]);
        let mut registry = Registry::default();
        m.register(&mut registry);
        let text = vostok_observe::exporter::MetricsEndpoint::render(&registry);
        assert!(
            text.contains(
                "rocketmq_messages_in_total{topic=\"T\",message_type=\"normal\",is_system=\"false\"} 3"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "rocketmq_message_size_bucket{topic=\"T\",message_type=\"normal\",is_system=\"false\",le=\"1024\"} 1"
            ),
            "{text}"
        );
    }
}
