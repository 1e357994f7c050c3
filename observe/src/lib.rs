//! Operating Vostok: what the broker and the name server expose to the tools operators
//! already run.
//!
//! * [`http`]: a small HTTP/1.1 server (hyper) with bounded connections, bodies and
//!   header time, handing each request to an [`http::HttpHandler`]; the metrics
//!   endpoint and the broker's web console both sit on it.
//! * [`exporter`]: RocketMQ 5's exporter keys (`metricsExporterType`,
//!   `metricsPromExporterHost`, `metricsPromExporterPort`, `metricsLabel`, and
//!   Vostok's `metricsBearerToken`) and the `/metrics` endpoint in the Prometheus text
//!   format (0.0.4).
//! * [`histogram`]: a fixed-bucket histogram of atomic counters, encoded at scrape
//!   time as `prometheus_client`'s own.
//! * [`rpc`]: `rocketmq_rpc_latency`, the remoting request histogram both servers keep.
//! * [`process`]: the `process_*` metrics of every Prometheus client library (CPU,
//!   memory, file descriptors, threads), read from `/proc/self` at scrape time.
//!
//! Metric names, labels and buckets are RocketMQ 5's (docs/operations.md#metrics), so
//! that the Grafana boards written for Apache RocketMQ read Vostok unchanged. Recording
//! is relaxed atomic adds on handles resolved once per label set, with no lock; label
//! text is built only when Prometheus scrapes.

pub mod exporter;
pub mod histogram;
pub mod http;
pub mod process;
pub mod rpc;
pub mod scrape_scope;

pub use exporter::{BearerToken, ExporterType, MetricsConfig};
pub use histogram::{AtomicHistogram, Buckets};
pub use http::{HttpHandler, HttpRequest, HttpResponse, HttpServer};
pub use process::ProcessCollector;
pub use prometheus_client;
pub use rpc::RpcMetrics;

/// Why an HTTP listener or the exporter could not start.
#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    #[error("{key}: {reason}")]
    Config { key: String, reason: String },
}
