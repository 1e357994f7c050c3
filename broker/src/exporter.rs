//! The broker's Prometheus registry (docs/operations.md#metrics): the request metrics
//! the send, pull and POP paths record (`state::metrics`), plus the gauges Apache's
//! broker and store compute when scraped, here read from the broker's tables at scrape
//! time by [`ScrapeCollector`]:
//!
//! | metric | labels | value |
//! |---|---|---|
//! | `rocketmq_consumer_lag_messages` | topic, consumer_group, is_retry, is_system | messages behind the committed offset, removed ones excluded |
//! | `rocketmq_consumer_lag_latency` | same | ms since the oldest unconsumed message was stored |
//! | `rocketmq_consumer_queueing_latency` | same | ms since the oldest message not pulled yet was stored |
//! | `rocketmq_consumer_inflight_messages` | same | popped, not acked |
//! | `rocketmq_consumer_ready_messages` | same | lag minus inflight |
//! | `rocketmq_dlq_messages` (Vostok) | consumer_group | messages in the group's DLQ now |
//! | `rocketmq_producer_connections` | language, version | |
//! | `rocketmq_consumer_connections` | consumer_group, language, version, consume_mode | |
//! | `rocketmq_processor_watermark` | processor | sends in progress |
//! | `rocketmq_broker_permission` | | `brokerPermission` |
//! | `rocketmq_topic_number`, `rocketmq_consumer_group_number` | | |
//! | store, timer and transaction gauges | | [`store`] |
//! | `rocketmq_tiered_store_*` (Vostok), with tiered storage on | | [`tier`] |
//! | `process_*` | | `vostok_observe::process` |
//!
//! Every metric carries `cluster`, `node_type` (`broker`), `node_id` (the broker name
//! and id) and `metricsLabel`'s pairs.

use std::collections::BTreeMap;
use std::sync::Arc;

use vostok_observe::prometheus_client::collector::Collector;
use vostok_observe::prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use vostok_observe::prometheus_client::metrics::gauge::ConstGauge;
use vostok_observe::prometheus_client::registry::Registry;
use vostok_remoting::protocol::body::ConsumeType;
use vostok_remoting::protocol::topic;
use vostok_remoting::support::time::now_millis;

use crate::ops::lag::QueueLag;
use crate::state::event_metrics;
use crate::state::Broker;

pub(crate) mod accounts;
mod store;
mod tier;

/// The registry `/metrics` serves for `broker`.
pub(crate) fn registry(broker: &Arc<Broker>) -> Registry {
    let c = &broker.config;
    let node_id = format!("{}_{}", c.broker_name, c.broker_id);
    let mut registry = c.ops.metrics.registry(&[
        ("cluster", &c.broker_cluster_name),
        ("node_type", "broker"),
        ("node_id", &node_id),
    ]);
    broker.observed.metrics.register(&mut registry);
    registry.register_collector(Box::new(ScrapeCollector(broker.clone())));
    registry.register_collector(Box::new(vostok_observe::ProcessCollector));
    registry
}

type Labels = Vec<(&'static str, String)>;

/// One gauge family: name, help, samples.
struct GaugeFamily {
    name: &'static str,
    help: &'static str,
    samples: Vec<(Labels, i64)>,
}

impl GaugeFamily {
    fn new(name: &'static str, help: &'static str) -> Self {
        GaugeFamily {
            name,
            help,
            samples: Vec::new(),
        }
    }

    fn encode(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut metric = encoder.encode_descriptor(
            self.name,
            self.help,
            None,
            ConstGauge::new(0i64).metric_type(),
        )?;
        for (labels, value) in &self.samples {
            ConstGauge::new(*value).encode(metric.encode_family(labels)?)?;
        }
        Ok(())
    }
}

fn flag(b: bool) -> String {
    b.to_string()
}

/// Computes the scrape-time gauges from the broker's tables.
pub(crate) struct ScrapeCollector(pub(crate) Arc<Broker>);

impl std::fmt::Debug for ScrapeCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ScrapeCollector")
            .field(&self.0.config.broker_name)
            .finish()
    }
}

impl ScrapeCollector {
    fn families(&self) -> Vec<GaugeFamily> {
        let b = &*self.0;
        let now = now_millis();
        let mut lag = GaugeFamily::new("rocketmq_consumer_lag_messages", "Consumer lag messages");
        let mut latency = GaugeFamily::new(
            "rocketmq_consumer_lag_latency",
            "Consumer lag time, milliseconds",
        );
        let mut inflight = GaugeFamily::new(
            "rocketmq_consumer_inflight_messages",
            "Consumer inflight messages",
        );
        let mut ready = GaugeFamily::new(
            "rocketmq_consumer_ready_messages",
            "Consumer ready messages",
        );
        let mut queueing = GaugeFamily::new(
            "rocketmq_consumer_queueing_latency",
            "Consumer queueing time, milliseconds",
        );
        let mut dlq = GaugeFamily::new(
            "rocketmq_dlq_messages",
            "Messages in the consumer group's dead letter queue",
        );
        for group in crate::ops::lag::known_groups(&b.consumers) {
            let group_lag = crate::ops::lag::group_lag(
                &b.storage,
                &b.consumers,
                &b.pop,
                &crate::ops::lag::LagOf::all(&group),
            );
            let mut per_topic: BTreeMap<&str, [i64; 4]> = BTreeMap::new();
            for q in &group_lag.queues {
                let e = per_topic.entry(&q.topic).or_default();
                e[0] += q.lag;
                e[1] = e[1].max(q.latency_ms(now));
                e[2] += q.inflight;
                e[3] = e[3].max(self.queueing_ms(&group, q, now));
            }
            for (t, [messages, ms, popped, queued_ms]) in per_topic {
                let labels: Labels = vec![
                    ("topic", t.to_owned()),
                    ("consumer_group", group.clone()),
                    ("is_retry", flag(topic::is_retry_topic(t))),
                    ("is_system", flag(event_metrics::is_system(t, &group))),
                ];
                lag.samples.push((labels.clone(), messages));
                latency.samples.push((labels.clone(), ms));
                inflight.samples.push((labels.clone(), popped));
                queueing.samples.push((labels.clone(), queued_ms));
                ready.samples.push((labels, (messages - popped).max(0)));
            }
            // Kept at 0 once the group has a DLQ, so an emptied DLQ reads 0, not nothing.
            if group_lag.dlq_messages > 0
                || b.storage.topics.get(&topic::dlq_topic(&group)).is_some()
            {
                dlq.samples
                    .push((vec![("consumer_group", group)], group_lag.dlq_messages));
            }
        }
        let mut families = vec![lag, latency, queueing, inflight, ready, dlq];
        families.extend(self.connections());
        families.extend(store::storage(b));
        families.extend(store::timers(b));
        families.extend(store::transactions(b));
        families
    }

    /// Ms since the first message `group` has not pulled from `q` yet was stored: from
    /// the next offset it pulls (its committed offset before any pull since start).
    fn queueing_ms(&self, group: &str, q: &QueueLag, now: i64) -> i64 {
        let b = &*self.0;
        let committed = q.consumer_offset.unwrap_or(0);
        let next = b
            .observed
            .metrics
            .next_pull(&q.topic, group, q.queue_id)
            .map_or(committed, |n| n.max(committed));
        if q.lag == 0 || next >= q.broker_offset {
            return 0;
        }
        if next <= committed {
            return q.latency_ms(now);
        }
        b.storage
            .store
            .message_store_timestamp(&q.topic, q.queue_id, next)
            .map_or(0, |t| (now - t).max(0))
    }

    fn connections(&self) -> Vec<GaugeFamily> {
        let b = &*self.0;
        let mut producers: BTreeMap<(String, String), i64> = BTreeMap::new();
        for (_, clients) in b.consumers.clients.producer_groups() {
            for c in clients {
                *producers
                    .entry((c.language.name().to_owned(), c.version.to_string()))
                    .or_default() += 1;
            }
        }
        let mut consumers: BTreeMap<(String, String, String, &str), i64> = BTreeMap::new();
        for (group, info) in b.consumers.clients.consumer_groups() {
            let mode = match info.consume_type {
                ConsumeType::ConsumeActively => "pull",
                ConsumeType::ConsumePassively => "push",
                ConsumeType::ConsumePop => "pop",
            };
            for c in info.channels.values() {
                let key = (
                    group.clone(),
                    c.language.name().to_owned(),
                    c.version.to_string(),
                    mode,
                );
                *consumers.entry(key).or_default() += 1;
            }
        }
        let mut p = GaugeFamily::new("rocketmq_producer_connections", "Producer connections");
        p.samples = producers
            .into_iter()
            .map(|((language, version), n)| (vec![("language", language), ("version", version)], n))
            .collect();
        let mut c = GaugeFamily::new("rocketmq_consumer_connections", "Consumer connections");
        c.samples = consumers
            .into_iter()
            .map(|((group, language, version, mode), n)| {
                let labels: Labels = vec![
                    ("consumer_group", group),
                    ("language", language),
                    ("version", version),
                    ("consume_mode", mode.to_owned()),
                ];
                (labels, n)
            })
            .collect();
        let mut watermark =
            GaugeFamily::new("rocketmq_processor_watermark", "Request queue watermark");
        let capacity = b.config.send_thread_pool_queue_capacity.max(1);
        let in_use = capacity.saturating_sub(b.intake.permits.available_permits());
        watermark
            .samples
            .push((vec![("processor", "send".to_owned())], in_use as i64));
        let mut topics = GaugeFamily::new("rocketmq_topic_number", "Active topic number");
        topics
            .samples
            .push((Vec::new(), b.storage.topics.topic_names().len() as i64));
        let mut groups = GaugeFamily::new(
            "rocketmq_consumer_group_number",
            "Active subscription group number",
        );
        groups.samples.push((
            Vec::new(),
            b.consumers.subscriptions.group_names().len() as i64,
        ));
        let mut permission = GaugeFamily::new("rocketmq_broker_permission", "Broker permission");
        permission
            .samples
            .push((Vec::new(), i64::from(b.runtime.broker_permission())));
        vec![p, c, watermark, permission, topics, groups]
    }
}

impl Collector for ScrapeCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for family in self.families() {
            family.encode(&mut encoder)?;
        }
        tier::encode(&self.0, &mut encoder)
    }
}
