//! The broker's Prometheus registry (docs/operations.md#metrics): the request metrics
//! the send, pull and POP paths record (`state::metrics`), plus the gauges Apache's
//! broker and store compute when scraped, here read from the broker's tables at scrape
//! time by [`ScrapeCollector`]:
//!
//! | metric | labels | value |
//! |---|---|---|
//! | `rocketmq_consumer_lag_messages` | topic, consumer_group, is_retry, is_system | messages behind the committed offset, removed ones excluded |
//! | `rocketmq_consumer_lag_latency` | same | ms since the oldest unconsumed message was stored |
//! | `rocketmq_consumer_inflight_messages` | same | popped, not acked |
//! | `rocketmq_consumer_ready_messages` | same | lag minus inflight |
//! | `rocketmq_send_to_dlq_messages` | consumer_group | messages in the group's DLQ (Vostok: a gauge) |
//! | `rocketmq_producer_connections` | language, version | |
//! | `rocketmq_consumer_connections` | consumer_group, language, version, consume_mode | |
//! | `rocketmq_processor_watermark` | processor | sends in progress |
//! | `rocketmq_topic_number`, `rocketmq_consumer_group_number` | | |
//! | `rocketmq_storage_size` | storage_type | bytes of commitlog kept |
//! | `rocketmq_storage_flush_behind_bytes`, `rocketmq_storage_dispatch_behind_bytes` | storage_type | |
//! | `rocketmq_ha_slave_behind_bytes` (Vostok) | slave | a master's slaves, bytes behind |
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

use crate::state::Broker;

/// The registry `/metrics` serves for `broker`.
pub(crate) fn registry(broker: &Arc<Broker>) -> Registry {
    let c = &broker.config;
    let node_id = format!("{}_{}", c.broker_name, c.broker_id);
    let mut registry = c.ops.metrics.registry(&[
        ("cluster", &c.broker_cluster_name),
        ("node_type", "broker"),
        ("node_id", &node_id),
    ]);
    broker.metrics.register(&mut registry);
    registry.register_collector(Box::new(ScrapeCollector(broker.clone())));
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
        let mut dlq = GaugeFamily::new(
            "rocketmq_send_to_dlq_messages",
            "Messages in the consumer group's dead letter queue",
        );
        for group in b.known_groups() {
            let group_lag = b.group_lag(&group, None);
            let mut per_topic: BTreeMap<&str, (i64, i64, i64)> = BTreeMap::new();
            for q in &group_lag.queues {
                let e = per_topic.entry(&q.topic).or_default();
                e.0 += q.lag;
                e.1 = e.1.max(q.latency_ms(now));
                e.2 += q.inflight;
            }
            for (t, (messages, ms, popped)) in per_topic {
                let labels: Labels = vec![
                    ("topic", t.to_owned()),
                    ("consumer_group", group.clone()),
                    ("is_retry", flag(topic::is_retry_topic(t))),
                    ("is_system", flag(topic::is_system_topic(t))),
                ];
                lag.samples.push((labels.clone(), messages));
                latency.samples.push((labels.clone(), ms));
                inflight.samples.push((labels.clone(), popped));
                ready.samples.push((labels, (messages - popped).max(0)));
            }
            if group_lag.dlq_messages > 0 {
                dlq.samples
                    .push((vec![("consumer_group", group)], group_lag.dlq_messages));
            }
        }
        let mut families = vec![lag, latency, inflight, ready, dlq];
        families.extend(self.connections());
        families.extend(self.storage());
        families
    }

    fn connections(&self) -> Vec<GaugeFamily> {
        let b = &*self.0;
        let mut producers: BTreeMap<(String, String), i64> = BTreeMap::new();
        for (_, clients) in b.clients.producer_groups() {
            for c in clients {
                *producers
                    .entry((c.language.name().to_owned(), c.version.to_string()))
                    .or_default() += 1;
            }
        }
        let mut consumers: BTreeMap<(String, String, String, &str), i64> = BTreeMap::new();
        for (group, info) in b.clients.consumer_groups() {
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
        let in_use = capacity.saturating_sub(b.send_permits.available_permits());
        watermark
            .samples
            .push((vec![("processor", "send".to_owned())], in_use as i64));
        let mut topics = GaugeFamily::new("rocketmq_topic_number", "Active topic number");
        topics
            .samples
            .push((Vec::new(), b.topics.topic_names().len() as i64));
        let mut groups = GaugeFamily::new(
            "rocketmq_consumer_group_number",
            "Active subscription group number",
        );
        groups
            .samples
            .push((Vec::new(), b.subscriptions.group_names().len() as i64));
        vec![p, c, watermark, topics, groups]
    }

    fn storage(&self) -> Vec<GaugeFamily> {
        let store = &self.0.store;
        let local = || vec![("storage_type", "local".to_owned())];
        let max = store.max_phy_offset();
        let mut size = GaugeFamily::new("rocketmq_storage_size", "Broker storage size, bytes");
        size.samples
            .push((local(), (max - store.min_phy_offset()).max(0)));
        let mut flush = GaugeFamily::new(
            "rocketmq_storage_flush_behind_bytes",
            "Broker flush behind bytes",
        );
        flush
            .samples
            .push((local(), (max - store.flushed_phy_offset()).max(0)));
        let mut dispatch = GaugeFamily::new(
            "rocketmq_storage_dispatch_behind_bytes",
            "Broker dispatch behind bytes",
        );
        dispatch
            .samples
            .push((local(), (max - store.dispatched_phy_offset()).max(0)));
        let mut ha = GaugeFamily::new(
            "rocketmq_ha_slave_behind_bytes",
            "Bytes each slave of this master is behind",
        );
        ha.samples = store
            .ha_slaves()
            .into_iter()
            .map(|s| (vec![("slave", s.addr.to_string())], s.behind_bytes))
            .collect();
        vec![size, flush, dispatch, ha]
    }
}

impl Collector for ScrapeCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for family in self.families() {
            family.encode(&mut encoder)?;
        }
        Ok(())
    }
}
