//! `rocketmq_rpc_latency`: how long each remoting request took, by request and
//! response code (Apache `remoting:metrics/RemotingMetricsManager.java`): labels
//! `protocol_type` (`remoting`), `request_code` and `response_code` (lower-case
//! RocketMQ names), `is_long_polling`, `result`; unit milliseconds; buckets 1, 3, 5,
//! 7, 10, 100, 1000, 2000, 3000 ms.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use vostok_remoting::protocol::{request_code, response_code};

/// Apache's bucket bounds, in milliseconds.
pub const RPC_BUCKETS_MS: [f64; 9] = [1.0, 3.0, 5.0, 7.0, 10.0, 100.0, 1000.0, 2000.0, 3000.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RpcLabels {
    protocol_type: &'static str,
    request_code: &'static str,
    response_code: &'static str,
    is_long_polling: &'static str,
    result: &'static str,
}

fn rpc_histogram() -> Histogram {
    Histogram::new(RPC_BUCKETS_MS)
}

/// The request latency histogram of one server.
#[derive(Clone, Debug)]
pub struct RpcMetrics {
    latency: Family<RpcLabels, Histogram, fn() -> Histogram>,
}

impl Default for RpcMetrics {
    fn default() -> Self {
        RpcMetrics {
            latency: Family::new_with_constructor(rpc_histogram),
        }
    }
}

impl RpcMetrics {
    pub fn register(&self, registry: &mut Registry) {
        registry.register("rocketmq_rpc_latency", "Rpc latency", self.latency.clone());
    }

    /// Records one request. `response` is `None` for a oneway request. Labels are
    /// static names, so recording allocates nothing.
    pub fn observe(
        &self,
        request: i32,
        response: Option<i32>,
        long_polling: bool,
        elapsed: Duration,
    ) {
        let labels = RpcLabels {
            protocol_type: "remoting",
            request_code: lower_name(request_code::name(request), request),
            response_code: response.map_or("", |c| lower_name(response_code::name(c), c)),
            is_long_polling: if long_polling { "true" } else { "false" },
            result: match response {
                None => "oneway",
                Some(_) => "success",
            },
        };
        self.latency
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64() * 1000.0);
    }
}

/// RocketMQ's names in lower case, as Apache's labels spell them; computed once per
/// name and kept.
fn lower_name(name: &'static str, code: i32) -> &'static str {
    use std::collections::HashMap;
    use std::sync::{OnceLock, RwLock};
    use vostok_remoting::support::sync::RwLockExt;
    static CACHE: OnceLock<RwLock<HashMap<&'static str, &'static str>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if name == "UNKNOWN" {
        // Unknown codes are labelled by number; a bounded set of them is kept.
        let _ = code;
        return "unknown";
    }
    if let Some(l) = cache.read_locked().get(name) {
        return l;
    }
    let lower: &'static str = Box::leak(name.to_ascii_lowercase().into_boxed_str());
    cache.write_locked().entry(name).or_insert(lower)
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
