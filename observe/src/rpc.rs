//! `rocketmq_rpc_latency`: how long each remoting request took, by request and
//! response code (Apache `remoting:metrics/RemotingMetricsManager.java`): labels
//! `protocol_type` (`remoting`), `request_code` and `response_code` (lower-case
//! RocketMQ names), `is_long_polling`, `result`; unit milliseconds; buckets 1, 3, 5,
//! 7, 10, 100, 1000, 2000, 3000 ms.
//!
//! Recording is lock-free and allocates nothing: a request code below
//! [`DIRECT_CODES`] indexes its slot directly, and a slot keeps its few (response
//! code, long polling) histograms in a fixed array found by a short scan; label text
//! is built only when Prometheus scrapes. Codes RocketMQ does not name share the label
//! `unknown`, so the scrape adds their histograms together.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::support::sync::RwLockExt;

use crate::histogram::{AtomicHistogram, Buckets, HistogramSnapshot};

/// Apache's bucket bounds, in milliseconds.
pub const RPC_BUCKETS_MS: [f64; 9] = [1.0, 3.0, 5.0, 7.0, 10.0, 100.0, 1000.0, 2000.0, 3000.0];

/// The same bounds in nanoseconds, the unit recorded.
static RPC_BUCKETS: Buckets = Buckets {
    bounds: &[
        1_000_000,
        3_000_000,
        5_000_000,
        7_000_000,
        10_000_000,
        100_000_000,
        1_000_000_000,
        2_000_000_000,
        3_000_000_000,
    ],
    scale: 1e6,
};

/// Request codes below this index their slot directly (every code a client sends
/// often is); the rest sit in a map behind a lock.
pub const DIRECT_CODES: usize = 1024;

/// Histograms per request code kept in the slot's fixed array; more response codes
/// than that for one request code go to the slot's overflow list.
const PER_CODE: usize = 8;

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
struct RpcLabels {
    protocol_type: &'static str,
    request_code: String,
    response_code: String,
    is_long_polling: &'static str,
    result: &'static str,
}

/// What tells two histograms of one request code apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Outcome {
    /// `None`: a oneway request.
    response: Option<i32>,
    long_polling: bool,
}

#[derive(Debug)]
struct Entry {
    outcome: Outcome,
    latency: AtomicHistogram,
}

/// The histograms of one request code.
#[derive(Debug, Default)]
struct Slot {
    entries: [OnceLock<Entry>; PER_CODE],
    overflow: RwLock<Vec<Arc<Entry>>>,
}

impl Slot {
    fn observe(&self, outcome: Outcome, nanos: u64) {
        for cell in &self.entries {
            let entry = cell.get_or_init(|| Entry {
                outcome,
                latency: AtomicHistogram::new(&RPC_BUCKETS),
            });
            if entry.outcome == outcome {
                entry.latency.observe(nanos);
                return;
            }
        }
        let found = self
            .overflow
            .read_locked()
            .iter()
            .find(|e| e.outcome == outcome)
            .cloned();
        let entry = found.unwrap_or_else(|| {
            let mut list = self.overflow.write_locked();
            match list.iter().find(|e| e.outcome == outcome) {
                Some(e) => e.clone(),
                None => {
                    let e = Arc::new(Entry {
                        outcome,
                        latency: AtomicHistogram::new(&RPC_BUCKETS),
                    });
                    list.push(e.clone());
                    e
                }
            }
        });
        entry.latency.observe(nanos);
    }

    fn for_each(&self, mut f: impl FnMut(&Entry)) {
        self.entries
            .iter()
            .filter_map(OnceLock::get)
            .for_each(&mut f);
        self.overflow.read_locked().iter().for_each(|e| f(e));
    }
}

/// The request latency histogram of one server.
#[derive(Clone, Debug)]
pub struct RpcMetrics {
    inner: Arc<RpcTable>,
}

#[derive(Debug)]
struct RpcTable {
    direct: Box<[Slot]>,
    other: RwLock<BTreeMap<i32, Arc<Slot>>>,
}

impl Default for RpcMetrics {
    fn default() -> Self {
        RpcMetrics {
            inner: Arc::new(RpcTable {
                direct: (0..DIRECT_CODES).map(|_| Slot::default()).collect(),
                other: RwLock::default(),
            }),
        }
    }
}

impl RpcMetrics {
    pub fn register(&self, registry: &mut Registry) {
        registry.register("rocketmq_rpc_latency", "Rpc latency", self.clone());
    }

    /// Records one request. `response` is `None` for a oneway request.
    pub fn observe(
        &self,
        request: i32,
        response: Option<i32>,
        long_polling: bool,
        elapsed: Duration,
    ) {
        let outcome = Outcome {
            response,
            long_polling,
        };
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        let table = &self.inner;
        if let Some(slot) = usize::try_from(request)
            .ok()
            .and_then(|i| table.direct.get(i))
        {
            return slot.observe(outcome, nanos);
        }
        let found = table.other.read_locked().get(&request).cloned();
        let slot = found.unwrap_or_else(|| {
            table
                .other
                .write_locked()
                .entry(request)
                .or_default()
                .clone()
        });
        slot.observe(outcome, nanos);
    }

    /// Every label set with its histogram; codes sharing a label are added up.
    fn collect(&self) -> BTreeMap<RpcLabels, HistogramSnapshot> {
        let mut out: BTreeMap<RpcLabels, HistogramSnapshot> = BTreeMap::new();
        let mut add = |request: i32, e: &Entry| {
            let labels = RpcLabels {
                protocol_type: "remoting",
                request_code: lower_name(request_code::name(request)),
                response_code: e
                    .outcome
                    .response
                    .map_or(String::new(), |c| lower_name(response_code::name(c))),
                is_long_polling: if e.outcome.long_polling {
                    "true"
                } else {
                    "false"
                },
                result: match e.outcome.response {
                    None => "oneway",
                    Some(_) => "success",
                },
            };
            let snapshot = e.latency.snapshot();
            match out.get_mut(&labels) {
                Some(sum) => sum.merge(&snapshot),
                None => {
                    out.insert(labels, snapshot);
                }
            }
        };
        for (code, slot) in self.inner.direct.iter().enumerate() {
            slot.for_each(|e| add(code as i32, e));
        }
        for (code, slot) in self.inner.other.read_locked().iter() {
            slot.for_each(|e| add(*code, e));
        }
        out
    }
}

impl TypedMetric for RpcMetrics {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for RpcMetrics {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        for (labels, snapshot) in self.collect() {
            snapshot.encode(&mut encoder.encode_family(&labels)?)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }

    fn is_empty(&self) -> bool {
        let mut any = false;
        for slot in self.inner.direct.iter() {
            slot.for_each(|_| any = true);
        }
        !any && self.inner.other.read_locked().is_empty()
    }
}

/// RocketMQ's names in lower case, as Apache's labels spell them; `unknown` for codes
/// it does not name.
fn lower_name(name: &'static str) -> String {
    name.to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exporter::MetricsEndpoint;

    #[test]
    fn latency_is_labelled_with_apache_names() {
        let rpc = RpcMetrics::default();
        let mut registry = Registry::default();
        rpc.register(&mut registry);
        rpc.observe(
            request_code::SEND_MESSAGE_V2,
            Some(response_code::SUCCESS),
            false,
            Duration::from_millis(2),
        );
        rpc.observe(request_code::HEART_BEAT, None, false, Duration::ZERO);
        let text = MetricsEndpoint::render(&registry);
        let lines: Vec<_> = text.lines().map(|l| Ok(l.to_owned())).collect();
        let scrape = prometheus_parse::Scrape::parse(lines.into_iter()).unwrap();
        let count = scrape
            .samples
            .iter()
            .find(|s| {
                s.metric == "rocketmq_rpc_latency_count"
                    && s.labels.get("request_code") == Some("send_message_v2")
                    && s.labels.get("response_code") == Some("success")
            })
            .unwrap_or_else(|| panic!("no send sample in\n{text}"));
        let n = match count.value {
            prometheus_parse::Value::Untyped(v)
            | prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v) => v,
            ref other => panic!("{other:?}"),
        };
        assert_eq!(n, 1.0, "{text}");
        assert!(text.contains("result=\"oneway\""), "{text}");
    }
}
