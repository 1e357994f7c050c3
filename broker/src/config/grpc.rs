//! gRPC keys of `broker.conf` (docs/grpc.md#configuration): the endpoint of the 5.x
//! clients, served by the broker process itself (Apache runs it in its proxy).

use crate::error::BrokerError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrpcConfig {
    /// `grpcServerEnable` (**Vostok**): serve `MessagingService` at all.
    pub grpc_server_enable: bool,
    /// `grpcServerPort` (Apache proxy's key and default, 8081); 0 binds a free port.
    /// TLS and plaintext are both served on it.
    pub grpc_server_port: u16,
    /// `grpcMaxSessions` (**Vostok**): client sessions (client ids with settings) kept
    /// at once; a new client beyond it is refused with TOO_MANY_REQUESTS.
    pub grpc_max_sessions: usize,
    /// `grpcMaxConnections` (**Vostok**): gRPC connections at once; more wait in the
    /// listen backlog.
    pub grpc_max_connections: usize,
}

impl Default for GrpcConfig {
    fn default() -> Self {
        GrpcConfig {
            grpc_server_enable: true,
            grpc_server_port: 8081,
            grpc_max_sessions: 10_000,
            grpc_max_connections: 4_096,
        }
    }
}

fn bad(key: &str, value: &str) -> BrokerError {
    BrokerError::Config {
        key: key.to_owned(),
        reason: format!("cannot parse {value:?}"),
    }
}

fn num<T: std::str::FromStr>(key: &str, v: &str) -> Result<T, BrokerError> {
    v.trim().parse().map_err(|_| bad(key, v))
}

fn flag(key: &str, v: &str) -> Result<bool, BrokerError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(bad(key, v)),
    }
}

impl GrpcConfig {
    /// Applies one key; false when it is not a gRPC key.
    pub fn apply_property(&mut self, key: &str, v: &str) -> Result<bool, BrokerError> {
        match key {
            "grpcServerEnable" => self.grpc_server_enable = flag(key, v)?,
            "grpcServerPort" => self.grpc_server_port = num(key, v)?,
            "grpcMaxSessions" => self.grpc_max_sessions = num(key, v)?,
            "grpcMaxConnections" => self.grpc_max_connections = num(key, v)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    pub fn to_properties(&self) -> Vec<(String, String)> {
        [
            ("grpcServerEnable", self.grpc_server_enable.to_string()),
            ("grpcServerPort", self.grpc_server_port.to_string()),
            ("grpcMaxSessions", self.grpc_max_sessions.to_string()),
            ("grpcMaxConnections", self.grpc_max_connections.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

    pub(crate) fn validate(&self) -> Result<(), BrokerError> {
        let invalid = |key: &str| {
            Err(BrokerError::Config {
                key: key.to_owned(),
                reason: "must be greater than 0".to_owned(),
            })
        };
        if self.grpc_max_sessions == 0 {
            return invalid("grpcMaxSessions");
        }
        if self.grpc_max_connections == 0 {
            return invalid("grpcMaxConnections");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_apply_and_print() {
        let mut c = GrpcConfig::default();
        assert_eq!(c.grpc_server_port, 8081);
        assert!(c.apply_property("grpcServerPort", "0").unwrap());
        assert!(c.apply_property("grpcServerEnable", "false").unwrap());
        assert!(!c.apply_property("listenPort", "1").unwrap());
        assert!(c.apply_property("grpcServerPort", "x").is_err());
        assert_eq!(c.grpc_server_port, 0);
        assert!(c
            .to_properties()
            .iter()
            .any(|(k, v)| k == "grpcServerEnable" && v == "false"));
        c.grpc_max_sessions = 0;
        assert!(c.validate().is_err());
    }
}
