//! RocketMQ 5's metrics exporter keys and the Prometheus endpoint.
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `metricsExporterType` | `DISABLE` | `PROM` serves `/metrics`; Apache's `OTLP_GRPC` and `LOG` are refused |
//! | `metricsPromExporterHost` | `""` | address to bind; empty: the server's own bind address |
//! | `metricsPromExporterPort` | `5557` | port of `/metrics` |
//! | `metricsLabel` | `""` | extra labels on every metric, `k1:v1,k2:v2` |
//! | `metricsBearerToken` | `""` | **Vostok**: when set, a scrape must send `Authorization: Bearer <token>` |
//!
//! Apache: `common:metrics/MetricsExporterType.java`, `BrokerConfig.java`.

use crate::scrape_scope::{basic_credentials, filter, Scope, ScrapeAccounts};
use std::borrow::Cow;
use std::sync::Arc;

use prometheus_client::encoding::prometheus_text;
use prometheus_client::registry::Registry;

use crate::http::{BoxFuture, HttpHandler, HttpRequest, HttpResponse};
use crate::ObserveError;
use vostok_remoting::config_key;
use vostok_remoting::support::keys::{Key, Num, Section, Table, Text};

/// `metricsExporterType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExporterType {
    Disable,
    OtlpGrpc,
    Prom,
    Log,
}

impl ExporterType {
    pub fn name(self) -> &'static str {
        match self {
            ExporterType::Disable => "DISABLE",
            ExporterType::OtlpGrpc => "OTLP_GRPC",
            ExporterType::Prom => "PROM",
            ExporterType::Log => "LOG",
        }
    }
}

impl std::str::FromStr for ExporterType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_uppercase().as_str() {
            "DISABLE" | "" => Ok(ExporterType::Disable),
            "OTLP_GRPC" => Ok(ExporterType::OtlpGrpc),
            "PROM" => Ok(ExporterType::Prom),
            "LOG" => Ok(ExporterType::Log),
            other => Err(format!(
                "unknown metricsExporterType {other:?} (DISABLE, PROM, OTLP_GRPC or LOG)"
            )),
        }
    }
}

/// The exporter keys of a broker or a name server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsConfig {
    pub exporter_type: ExporterType,
    /// Empty: the server's bind address.
    pub prom_host: String,
    pub prom_port: u16,
    /// `k1:v1,k2:v2`, added to every metric.
    pub label: String,
    /// `metricsBearerToken`: what a scrape must send as `Authorization: Bearer`; empty,
    /// nothing (the metrics name topics and groups: docs/operations.md#metrics).
    pub bearer_token: BearerToken,
}

/// A bearer token, never shown by `Debug`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct BearerToken(pub String);

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_empty() {
            "none"
        } else {
            "<redacted>"
        })
    }
}

impl BearerToken {
    /// The token, when one is set.
    pub fn get(&self) -> Option<&str> {
        Some(self.0.as_str()).filter(|t| !t.is_empty())
    }

    /// Whether `authorization` (the header's value) carries this token; compared in
    /// constant time.
    pub fn admits(&self, authorization: Option<&str>) -> bool {
        let Some(expected) = self.get() else {
            return true;
        };
        let Some(given) = authorization.and_then(|a| {
            a.trim()
                .split_once(' ')
                .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
                .map(|(_, token)| token.trim())
        }) else {
            return false;
        };
        given.len() == expected.len()
            && given
                .bytes()
                .zip(expected.bytes())
                .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                == 0
    }
}

/// Apache's `metricsPromExporterPort` default.
pub const DEFAULT_PROM_PORT: u16 = 5557;

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            exporter_type: ExporterType::Disable,
            prom_host: String::new(),
            prom_port: DEFAULT_PROM_PORT,
            label: String::new(),
            bearer_token: BearerToken::default(),
        }
    }
}

/// The exporter keys, RocketMQ 5's names.
pub static KEYS: Table<MetricsConfig> = Table {
    keys: &[
        Key::new(
            "metricsExporterType",
            "`PROM`: serve Prometheus metrics in RocketMQ 5's names; `DISABLE`: none",
            |c, v| {
                c.exporter_type = v.parse()?;
                Ok(())
            },
            |c| c.exporter_type.name().to_owned(),
        ),
        config_key!("metricsPromExporterHost", prom_host: Text, "where `/metrics` listens; empty: the server's bind address"),
        config_key!("metricsPromExporterPort", prom_port: Num, "its port; 0 a free port"),
        config_key!("metricsLabel", label: Text, "`k1:v1,k2:v2` added to every metric"),
        Key::new(
            "metricsBearerToken",
            "what a scrape must send as `Authorization: Bearer`; empty: nothing (printed as `******`)",
            |c, v| {
                c.bearer_token = BearerToken(v.trim().to_owned());
                Ok(())
            },
            |c| c.bearer_token.get().map_or("", |_| "******").to_owned(),
        ),
    ],
    nested: &[],
};

impl Section for MetricsConfig {
    fn table() -> &'static Table<Self> {
        &KEYS
    }
}

impl MetricsConfig {
    /// True when `/metrics` is served.
    pub fn is_prom(&self) -> bool {
        self.exporter_type == ExporterType::Prom
    }

    /// Refuses the exporters Vostok does not have.
    pub fn validate(&self) -> Result<(), ObserveError> {
        match self.exporter_type {
            ExporterType::OtlpGrpc | ExporterType::Log => Err(ObserveError::Config {
                key: "metricsExporterType".into(),
                reason: format!(
                    "{} is not available in Vostok: use PROM (or DISABLE)",
                    self.exporter_type.name()
                ),
            }),
            _ => Ok(()),
        }
    }

    /// `metricsLabel` as pairs; malformed items are skipped (Apache warns and skips).
    pub fn extra_labels(&self) -> Vec<(String, String)> {
        self.label
            .split(',')
            .filter_map(|item| {
                let (k, v) = item.split_once(':')?;
                let (k, v) = (k.trim(), v.trim());
                (!k.is_empty() && !v.contains(':')).then(|| (k.to_owned(), v.to_owned()))
            })
            .collect()
    }

    /// A registry whose every metric carries `labels` (Apache's `cluster`,
    /// `node_type`, `node_id`), then `metricsLabel`'s.
    pub fn registry(&self, labels: &[(&str, &str)]) -> Registry {
        let mut all: Vec<(Cow<'static, str>, Cow<'static, str>)> = labels
            .iter()
            .map(|(k, v)| (Cow::Owned((*k).to_owned()), Cow::Owned((*v).to_owned())))
            .collect();
        all.extend(
            self.extra_labels()
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k), Cow::Owned(v))),
        );
        Registry::with_labels(all.into_iter())
    }
}

/// Serves `GET /metrics` (and `/`) from a registry, in the Prometheus text format;
/// with a bearer token, only to scrapes that send it (else 401).
pub struct MetricsEndpoint {
    registry: Arc<Registry>,
    token: BearerToken,
    accounts: Option<Arc<dyn ScrapeAccounts>>,
}

impl MetricsEndpoint {
    pub fn new(registry: Arc<Registry>) -> Self {
        MetricsEndpoint {
            registry,
            token: BearerToken::default(),
            accounts: None,
        }
    }

    /// Lets scrapes sign in with an account of `accounts` (HTTP Basic), which then see
    /// what that account may ([`crate::scrape_scope`]).
    pub fn with_accounts(mut self, accounts: Arc<dyn ScrapeAccounts>) -> Self {
        self.accounts = Some(accounts);
        self
    }

    /// Requires `token` (`metricsBearerToken`) of every scrape, when set.
    pub fn with_bearer_token(mut self, token: BearerToken) -> Self {
        self.token = token;
        self
    }

    /// The registry's text, as a scrape gets it.
    pub fn render(registry: &Registry) -> String {
        let mut text = String::new();
        if let Err(e) = prometheus_text::encode(&mut text, registry) {
            tracing::warn!(error = %e, "metrics encoding failed");
        }
        text
    }
}

impl HttpHandler for MetricsEndpoint {
    fn handle(&self, request: HttpRequest) -> BoxFuture<HttpResponse> {
        let registry = self.registry.clone();
        let authorization = request.header("authorization");
        let mut admitted = self.token.admits(authorization);
        let mut only = None;
        let signed_in = authorization.and_then(basic_credentials);
        if let (Some(accounts), Some((user, password))) = (&self.accounts, signed_in) {
            match accounts.scope(request.peer.ip(), &user, &password) {
                Scope::Refused(why) => {
                    tracing::info!(peer = %request.peer, user = %user, reason = %why, "metrics scrape refused");
                    return Box::pin(async move {
                        HttpResponse::text(401, "wrong user or password\n")
                            .with_header("www-authenticate", "Basic realm=\"metrics\"")
                    });
                }
                Scope::Unrestricted => {}
                Scope::Only(admits) => {
                    admitted = true;
                    only = Some(admits);
                }
            }
        }
        Box::pin(async move {
            if request.method != "GET" && request.method != "HEAD" {
                return HttpResponse::text(405, "GET only\n");
            }
            if !admitted {
                return HttpResponse::text(401, "a bearer token is needed (metricsBearerToken)\n")
                    .with_header("www-authenticate", "Bearer realm=\"metrics\"");
            }
            match request.path.as_str() {
                "/metrics" | "/" => {
                    // Collectors read broker tables: keep them off the reactor.
                    let text = tokio::task::spawn_blocking(move || {
                        let text = Self::render(&registry);
                        match only {
                            Some(admits) => filter(&text, &*admits),
                            None => text,
                        }
                    })
                    .await
                    .unwrap_or_default();
                    HttpResponse::new(200, prometheus_text::CONTENT_TYPE, text)
                }
                _ => HttpResponse::text(404, "not found: try /metrics\n"),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_labels_parse() {
        let mut c = MetricsConfig::default();
        assert!(c.set_key("metricsExporterType", "prom").unwrap());
        assert!(c.set_key("metricsPromExporterPort", "6000").unwrap());
        assert!(c.set_key("metricsLabel", "dc:eu1, bad ,rack:r2").unwrap());
        assert!(!c.set_key("listenPort", "1").unwrap());
        assert!(c.set_key("metricsPromExporterPort", "x").is_err());
        assert!(c.is_prom());
        assert_eq!(
            c.extra_labels(),
            [("dc".into(), "eu1".into()), ("rack".into(), "r2".into())]
        );
        c.validate().unwrap();
        c.exporter_type = ExporterType::OtlpGrpc;
        assert!(c.validate().is_err());
        let props = c.key_values();
        assert!(props.contains(&("metricsPromExporterPort".into(), "6000".into())));
    }

    #[test]
    fn a_bearer_token_is_checked_and_never_shown() {
        let mut c = MetricsConfig::default();
        assert!(c.bearer_token.admits(None), "no token set: open");
        assert!(c.set_key("metricsBearerToken", "s3cret-t0ken").unwrap());
        let t = &c.bearer_token;
        assert!(t.admits(Some("Bearer s3cret-t0ken")));
        assert!(t.admits(Some("bearer  s3cret-t0ken ")));
        for wrong in [
            None,
            Some("Bearer s3cret"),
            Some("Basic s3cret-t0ken"),
            Some("s3cret-t0ken"),
        ] {
            assert!(!t.admits(wrong), "{wrong:?}");
        }
        assert!(!format!("{c:?}").contains("s3cret"));
        assert!(c
            .key_values()
            .contains(&("metricsBearerToken".into(), "******".into())));
    }
}
