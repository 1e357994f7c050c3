//! The name server's Prometheus endpoint (`metricsExporterType=PROM`): RocketMQ 5's
//! `rocketmq_rpc_latency` of every request, and the route table's size
//! (`rocketmq_namesrv_brokers`, `rocketmq_namesrv_topics`, Vostok names), each with
//! `cluster` (empty), `node_type` (`nameserver`) and `node_id` (the listen address);
//! and the `process_*` metrics (CPU, memory, file descriptors, threads).

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use vostok_observe::exporter::MetricsEndpoint;
use vostok_observe::prometheus_client::collector::Collector;
use vostok_observe::prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use vostok_observe::prometheus_client::metrics::gauge::ConstGauge;
use vostok_observe::{HttpServer, RpcMetrics};

use crate::route::RouteInfoManager;
use crate::NamesrvError;

/// Gauges read from the route table at scrape time.
#[derive(Debug)]
struct RouteCollector(Arc<RouteInfoManager>);

impl Collector for RouteCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let figures = [
            (
                "rocketmq_namesrv_brokers",
                "Brokers registered",
                self.0.live_brokers().len() as i64,
            ),
            (
                "rocketmq_namesrv_topics",
                "Topics routed",
                self.0.topic_count() as i64,
            ),
        ];
        for (name, help, value) in figures {
            let gauge = ConstGauge::new(value);
            let metric = encoder.encode_descriptor(name, help, None, gauge.metric_type())?;
            gauge.encode(metric)?;
        }
        Ok(())
    }
}

/// Binds and serves `/metrics` when the config asks for it.
pub(crate) async fn start(
    config: &crate::NamesrvConfig,
    local_addr: SocketAddr,
    rpc: &RpcMetrics,
    route: Arc<RouteInfoManager>,
) -> Result<Option<HttpServer>, NamesrvError> {
    let m = &config.metrics;
    if !m.is_prom() {
        return Ok(None);
    }
    let ip = if m.prom_host.is_empty() {
        local_addr.ip()
    } else {
        m.prom_host.parse().map_err(|_| {
            NamesrvError::invalid("metricsPromExporterHost", &m.prom_host, "not an IP address")
        })?
    };
    let at = SocketAddr::new(ip, m.prom_port);
    let listener = TcpListener::bind(at)
        .await
        .map_err(|source| NamesrvError::Bind {
            addr: at.to_string(),
            key: "metricsPromExporterPort",
            source,
        })?;
    let node_id = local_addr.to_string();
    let mut registry = m.registry(&[
        ("cluster", ""),
        ("node_type", "nameserver"),
        ("node_id", &node_id),
    ]);
    rpc.register(&mut registry);
    registry.register_collector(Box::new(RouteCollector(route)));
    registry.register_collector(Box::new(vostok_observe::ProcessCollector));
    let endpoint =
        MetricsEndpoint::new(Arc::new(registry)).with_bearer_token(m.bearer_token.clone());
    Ok(Some(HttpServer::start(
        listener,
        Arc::new(endpoint),
        "metrics",
    )))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use vostok_observe::ExporterType;
    use vostok_remoting::protocol::request_code;
    use vostok_remoting::{RemotingClient, RemotingCommand};

    use crate::{NameServer, NamesrvConfig};

    #[tokio::test]
    async fn metrics_count_the_requests_served() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = NamesrvConfig {
            kv_config_path: dir.path().join("kv.json"),
            ..Default::default()
        };
        config.metrics.exporter_type = ExporterType::Prom;
        config.metrics.prom_port = 0;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let ns = NameServer::start(config, listener).await.unwrap();
        let client = RemotingClient::new(Default::default(), None);
        let addr = ns.local_addr().to_string();
        for _ in 0..2 {
            let request = RemotingCommand::request(request_code::GET_BROKER_CLUSTER_INFO);
            client
                .invoke_sync(&addr, request, Duration::from_secs(5))
                .await
                .unwrap();
        }
        let mut s = tokio::net::TcpStream::connect(ns.metrics_addr().unwrap())
            .await
            .unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).await.unwrap();
        let body = text.split_once("\r\n\r\n").unwrap().1;
        let scrape =
            prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_owned()))).unwrap();
        let count = scrape
            .samples
            .iter()
            .find(|s| {
                s.metric == "rocketmq_rpc_latency_count"
                    && s.labels.get("request_code") == Some("get_broker_cluster_info")
            })
            .unwrap_or_else(|| panic!("{body}"));
        let n = match count.value {
            prometheus_parse::Value::Untyped(v)
            | prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v) => v,
            ref other => panic!("{other:?}"),
        };
        assert_eq!(n, 2.0, "{body}");
        assert_eq!(count.labels.get("node_type"), Some("nameserver"));
        assert!(body.contains("rocketmq_namesrv_brokers{"), "{body}");
        // The process metrics every exporter has.
        #[cfg(target_os = "linux")]
        for name in [
            "process_cpu_seconds_total",
            "process_resident_memory_bytes",
            "process_open_fds",
            "process_threads",
        ] {
            let sample = scrape.samples.iter().find(|s| s.metric == name);
            assert!(
                sample.is_some_and(|s| s.labels.get("node_type") == Some("nameserver")),
                "{name}: {body}"
            );
        }
        client.shutdown().await;
        ns.shutdown().await;
    }
}
