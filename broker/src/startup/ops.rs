//! The broker's HTTP endpoints (docs/operations.md): `/metrics` when
//! `metricsExporterType=PROM` (on `metricsPromExporterHost:metricsPromExporterPort`),
//! and the web console when `consoleEnable` (on `consoleHost:consolePort`; on by
//! default in standalone mode, where it binds 127.0.0.1). Both listeners are bound
//! before anything starts, so a taken port fails the start-up.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tracing::warn;
use vostok_observe::exporter::MetricsEndpoint;
use vostok_observe::http::HttpLimits;
use vostok_observe::HttpServer;

use super::bind;
use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::state::Broker;

/// The endpoints' listeners, bound early.
pub(super) struct OpsListeners {
    metrics: Option<TcpListener>,
    console: Option<TcpListener>,
}

/// The running endpoints.
#[derive(Default)]
pub(super) struct OpsServers {
    pub(super) metrics: Option<HttpServer>,
    pub(super) console: Option<HttpServer>,
}

fn addr(config: &BrokerConfig, host: &str, port: u16) -> Result<SocketAddr, BrokerError> {
    if host.is_empty() {
        return Ok(config.bind_addr(port));
    }
    let ip = host.parse().map_err(|_| BrokerError::Config {
        key: "metricsPromExporterHost/consoleHost".into(),
        reason: format!("not an IP address: {host:?}"),
    })?;
    Ok(SocketAddr::new(ip, port))
}

/// Binds the endpoints `config` asks for.
pub(super) async fn bind_ops(config: &BrokerConfig) -> Result<OpsListeners, BrokerError> {
    let ops = &config.ops;
    let metrics = if ops.metrics.is_prom() {
        let at = addr(config, &ops.metrics.prom_host, ops.metrics.prom_port)?;
        Some(bind(at, "metricsPromExporterPort").await?)
    } else {
        None
    };
    let console = if ops.console_on() {
        let at = addr(config, &ops.console_host, ops.console_port)?;
        Some(bind(at, "consolePort").await?)
    } else {
        None
    };
    Ok(OpsListeners { metrics, console })
}

/// Serves the bound endpoints. A client gets as long to send an HTTP request, and
/// to read its answer, as a remoting peer to send a frame and to read
/// (`frameReadTimeoutMillis`, `writeStallTimeoutMillis`).
pub(super) fn start_ops(broker: &Arc<Broker>, listeners: OpsListeners) -> OpsServers {
    let limits = &broker.config.limits;
    let limits = HttpLimits::from_server(limits.frame_read_timeout, limits.write_stall_timeout);
    let metrics = listeners.metrics.map(|l| {
        let token = broker.config.ops.metrics.bearer_token.clone();
        let exposed = l.local_addr().is_ok_and(|a| !a.ip().is_loopback());
        if broker.guard.is_some() && token.get().is_none() && exposed {
            warn!(addr = ?l.local_addr().ok(), "ACL is on but /metrics, which names every topic and group, needs no credentials: set metricsBearerToken or bind metricsPromExporterHost to a private address");
        }
        let registry = Arc::new(crate::exporter::registry(broker));
        let endpoint = MetricsEndpoint::new(registry).with_bearer_token(token);
        let endpoint = match broker.guard {
            Some(_) => endpoint.with_accounts(Arc::new(crate::exporter::accounts::BrokerAccounts(
                broker.clone(),
            ))),
            None => endpoint,
        };
        let endpoint = Arc::new(endpoint);
        HttpServer::start_with(l, endpoint, "metrics", limits)
    });
    let console = listeners.console.map(|l| {
        let handler = crate::console::handler(broker, l.local_addr().ok());
        HttpServer::start_with(l, handler, "console", limits)
    });
    OpsServers { metrics, console }
}

impl OpsServers {
    pub(super) async fn shutdown(&self) {
        for server in [&self.metrics, &self.console].into_iter().flatten() {
            server.shutdown().await;
        }
    }
}
