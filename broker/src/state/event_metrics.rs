//! The metrics of rarer events than sends and pulls (docs/operations.md#metrics), in
//! RocketMQ 5's names, types and labels (`BrokerMetricsConstant`,
//! `DefaultStoreMetricsConstant`):
//!
//! * `rocketmq_send_to_dlq_messages_total` {consumer_group, topic, is_system}: messages
//!   moved to a group's DLQ (send-back, a retry send past the maximum, POP revive);
//! * `rocketmq_commit_messages_total`, `rocketmq_rollback_messages_total` {topic}:
//!   transactions ended; `rocketmq_finish_message_latency` {topic}: seconds from a
//!   half message's birth to its commit;
//! * `rocketmq_topic_create_execution_time` {invocation_status, is_system} and
//!   `rocketmq_consumer_group_create_execution_time` {invocation_status}: ms per
//!   create or update request;
//! * `rocketmq_timer_enqueue_total`, `rocketmq_timer_dequeue_total` {topic}: timer
//!   messages parked and delivered; `rocketmq_delay_message_latency` {topic}: seconds
//!   a timer or delay-level message is set to wait;
//! * the half messages per topic, read by the scrape-time gauges (`exporter`).
//!
//! Each event takes a read lock and a hash of its label set: these are per message
//! only for DLQ moves, transactions and timers, never on the plain send or pull path.

use std::collections::HashMap;
use std::sync::Mutex;

use vostok_observe::prometheus_client::metrics::counter::Counter;
use vostok_observe::prometheus_client::metrics::family::Family;
use vostok_observe::prometheus_client::registry::Registry;
use vostok_observe::{AtomicHistogram, Buckets};
use vostok_remoting::protocol::topic;
use vostok_remoting::support::sync::MutexExt;

type Labels = Vec<(&'static str, String)>;
type HistogramFamily = Family<Labels, AtomicHistogram, fn() -> AtomicHistogram>;

/// Apache's transaction finish buckets, seconds: 5 s, 1 min, 10 min, 1 h, 12 h, 24 h.
static FINISH_BUCKETS: Buckets = Buckets {
    bounds: &[5, 60, 600, 3600, 43_200, 86_400],
    scale: 1.0,
};

/// Apache's create-time buckets, ms: 10 ms, 100 ms, 1 s, 3 s, 5 s.
static CREATE_BUCKETS: Buckets = Buckets {
    bounds: &[10, 100, 1000, 3000, 5000],
    scale: 1.0,
};

/// Apache's delay latency buckets, seconds: 1 min, 10 min, 1 h, 12 h, 1 day, 3 days.
static DELAY_BUCKETS: Buckets = Buckets {
    bounds: &[60, 600, 3600, 43_200, 86_400, 259_200],
    scale: 1.0,
};

fn finish_histogram() -> AtomicHistogram {
    AtomicHistogram::new(&FINISH_BUCKETS)
}

fn create_histogram() -> AtomicHistogram {
    AtomicHistogram::new(&CREATE_BUCKETS)
}

fn delay_histogram() -> AtomicHistogram {
    AtomicHistogram::new(&DELAY_BUCKETS)
}

fn flag(b: bool) -> String {
    b.to_string()
}

/// Apache's `MixAll.CID_RMQ_SYS_PREFIX`, compared without case.
const SYSTEM_GROUP_PREFIX: &str = "cid_rmq_sys_";

/// Apache's `isSystem(topic, group)`: a system topic or a `CID_RMQ_SYS_` group.
pub(crate) fn is_system(topic_name: &str, group: &str) -> bool {
    topic::is_system_topic(topic_name)
        || group
            .get(..SYSTEM_GROUP_PREFIX.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(SYSTEM_GROUP_PREFIX))
}

/// Whether a request succeeded, as Apache's `invocation_status` says it.
pub(crate) fn invocation_status(success: bool) -> &'static str {
    if success {
        "success"
    } else {
        "failure"
    }
}

pub(crate) struct EventMetrics {
    enabled: bool,
    send_to_dlq: Family<Labels, Counter>,
    commits: Family<Labels, Counter>,
    rollbacks: Family<Labels, Counter>,
    finish_latency: HistogramFamily,
    topic_create: HistogramFamily,
    group_create: HistogramFamily,
    timer_enqueue: Family<Labels, Counter>,
    timer_dequeue: Family<Labels, Counter>,
    delay_latency: HistogramFamily,
    /// Half messages stored and not ended yet, per real topic, since start.
    half: Mutex<HashMap<String, i64>>,
}

impl EventMetrics {
    pub(crate) fn new(enabled: bool) -> Self {
        EventMetrics {
            enabled,
            send_to_dlq: Family::default(),
            commits: Family::default(),
            rollbacks: Family::default(),
            finish_latency: Family::new_with_constructor(finish_histogram),
            topic_create: Family::new_with_constructor(create_histogram),
            group_create: Family::new_with_constructor(create_histogram),
            timer_enqueue: Family::default(),
            timer_dequeue: Family::default(),
            delay_latency: Family::new_with_constructor(delay_histogram),
            half: Mutex::default(),
        }
    }

    pub(crate) fn register(&self, registry: &mut Registry) {
        let r = registry;
        r.register(
            "rocketmq_send_to_dlq_messages",
            "Consumer send to DLQ messages",
            self.send_to_dlq.clone(),
        );
        r.register(
            "rocketmq_commit_messages",
            "Total number of commit messages",
            self.commits.clone(),
        );
        r.register(
            "rocketmq_rollback_messages",
            "Total number of rollback messages",
            self.rollbacks.clone(),
        );
        r.register(
            "rocketmq_finish_message_latency",
            "Transaction finish latency, seconds",
            self.finish_latency.clone(),
        );
        r.register(
            "rocketmq_topic_create_execution_time",
            "The distribution of create topic time, milliseconds",
            self.topic_create.clone(),
        );
        r.register(
            "rocketmq_consumer_group_create_execution_time",
            "The distribution of create subscription time, milliseconds",
            self.group_create.clone(),
        );
        r.register(
            "rocketmq_timer_enqueue",
            "Total number of timer enqueue",
            self.timer_enqueue.clone(),
        );
        r.register(
            "rocketmq_timer_dequeue",
            "Total number of timer dequeue",
            self.timer_dequeue.clone(),
        );
        r.register(
            "rocketmq_delay_message_latency",
            "Timer message set latency distribution, seconds",
            self.delay_latency.clone(),
        );
    }

    /// A message of `topic` consumed by `group` was stored in the group's DLQ.
    pub(crate) fn dlq_moved(&self, group: &str, origin_topic: &str) {
        if !self.enabled {
            return;
        }
        let labels: Labels = vec![
            ("consumer_group", group.to_owned()),
            ("topic", origin_topic.to_owned()),
            ("is_system", flag(is_system(origin_topic, group))),
        ];
        self.send_to_dlq.get_or_create(&labels).inc();
    }

    /// A half message of `topic` was stored.
    pub(crate) fn half_stored(&self, topic_name: &str) {
        if self.enabled {
            *self.half.locked().entry(topic_name.to_owned()).or_default() += 1;
        }
    }

    /// A half message of `topic` was given up after its last check.
    pub(crate) fn half_dropped(&self, topic_name: &str) {
        if self.enabled {
            self.half_ended(topic_name);
        }
    }

    fn half_ended(&self, topic_name: &str) {
        let mut half = self.half.locked();
        if let Some(n) = half.get_mut(topic_name) {
            *n -= 1;
            if *n <= 0 {
                half.remove(topic_name);
            }
        }
    }

    /// A transaction of `topic` was committed; its half message was born at `born_ms`.
    pub(crate) fn committed(&self, topic_name: &str, born_ms: i64, now_ms: i64) {
        if !self.enabled {
            return;
        }
        self.half_ended(topic_name);
        let labels: Labels = vec![("topic", topic_name.to_owned())];
        self.commits.get_or_create(&labels).inc();
        let seconds = (now_ms - born_ms).max(0) / 1000;
        self.finish_latency
            .get_or_create(&labels)
            .observe(seconds as u64);
    }

    /// A transaction of `topic` was rolled back.
    pub(crate) fn rolled_back(&self, topic_name: &str) {
        if !self.enabled {
            return;
        }
        self.half_ended(topic_name);
        let labels: Labels = vec![("topic", topic_name.to_owned())];
        self.rollbacks.get_or_create(&labels).inc();
    }

    /// Half messages not ended, per topic (counted since the broker started).
    pub(crate) fn half_messages(&self) -> Vec<(String, i64)> {
        let mut out: Vec<(String, i64)> = self
            .half
            .locked()
            .iter()
            .map(|(t, n)| (t.clone(), *n))
            .collect();
        out.sort();
        out
    }

    /// A topic create or update request took `ms`.
    pub(crate) fn topic_created(&self, topic_name: &str, success: bool, ms: u64) {
        if self.enabled {
            let labels: Labels = vec![
                ("invocation_status", invocation_status(success).to_owned()),
                ("is_system", flag(topic::is_system_topic(topic_name))),
            ];
            self.topic_create.get_or_create(&labels).observe(ms);
        }
    }

    /// A subscription group create or update request took `ms`.
    pub(crate) fn group_created(&self, success: bool, ms: u64) {
        if self.enabled {
            let labels: Labels = vec![("invocation_status", invocation_status(success).to_owned())];
            self.group_create.get_or_create(&labels).observe(ms);
        }
    }

    /// A timer or delay-level message of `topic` was parked, to wait `delay_ms` (`None`
    /// for a timer rolled forward, counted when first parked); `timer`: it waits in
    /// the timer wheel (counted as an enqueue).
    pub(crate) fn timer_parked(&self, topic_name: &str, delay_ms: Option<i64>, timer: bool) {
        if !self.enabled {
            return;
        }
        let labels: Labels = vec![("topic", topic_name.to_owned())];
        if timer {
            self.timer_enqueue.get_or_create(&labels).inc();
        }
        if let Some(ms) = delay_ms {
            self.delay_latency
                .get_or_create(&labels)
                .observe((ms.max(0) / 1000) as u64);
        }
    }

    /// A timer message of `topic` was delivered.
    pub(crate) fn timer_delivered(&self, topic_name: &str) {
        if self.enabled {
            let labels: Labels = vec![("topic", topic_name.to_owned())];
            self.timer_dequeue.get_or_create(&labels).inc();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(m: &EventMetrics) -> String {
        let mut registry = Registry::default();
        m.register(&mut registry);
        vostok_observe::exporter::MetricsEndpoint::render(&registry)
    }

    #[test]
    fn events_are_exported_with_apaches_names_types_and_labels() {
        let m = EventMetrics::new(true);
        m.dlq_moved("G", "T");
        m.dlq_moved("G", "T");
        m.half_stored("T");
        m.half_stored("T");
        m.half_stored("U");
        m.half_dropped("U");
        m.committed("T", 0, 7_000);
        m.rolled_back("T");
        m.topic_created("T", true, 12);
        m.group_created(false, 4);
        m.timer_parked("T", Some(90_000), true);
        m.timer_parked("T", None, true);
        m.timer_delivered("T");
        let text = render(&m);
        for expected in [
            "# TYPE rocketmq_send_to_dlq_messages_total counter",
            "rocketmq_send_to_dlq_messages_total{consumer_group=\"G\",topic=\"T\",is_system=\"false\"} 2",
            "rocketmq_commit_messages_total{topic=\"T\"} 1",
            "rocketmq_rollback_messages_total{topic=\"T\"} 1",
            "rocketmq_finish_message_latency_bucket{topic=\"T\",le=\"60\"} 1",
            "rocketmq_finish_message_latency_bucket{topic=\"T\",le=\"5\"} 0",
            "rocketmq_topic_create_execution_time_bucket{invocation_status=\"success\",is_system=\"false\",le=\"100\"} 1",
            "rocketmq_consumer_group_create_execution_time_count{invocation_status=\"failure\"} 1",
            "rocketmq_timer_enqueue_total{topic=\"T\"} 2",
            "rocketmq_timer_dequeue_total{topic=\"T\"} 1",
            "rocketmq_delay_message_latency_bucket{topic=\"T\",le=\"600\"} 1",
        ] {
            assert!(text.contains(expected), "{expected} in\n{text}");
        }
        assert!(m.half_messages().is_empty(), "both half messages ended");
    }

    #[test]
    fn disabled_records_nothing() {
        let m = EventMetrics::new(false);
        m.dlq_moved("G", "T");
        m.half_stored("T");
        assert!(!render(&m).contains("rocketmq_send_to_dlq_messages_total{"));
        assert!(m.half_messages().is_empty());
    }

    #[test]
    fn a_system_group_makes_the_sample_a_system_one() {
        assert!(is_system("T", "CID_RMQ_SYS_TRANS"));
        assert!(!is_system("T", "G"));
    }
}
