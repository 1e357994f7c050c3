//! gRPC keys of `broker.conf` (docs/grpc.md#configuration): the endpoint of the 5.x
//! clients, served by the broker process itself (Apache runs it in its proxy).

use vostok_remoting::config_key;
use vostok_remoting::support::keys::{Flag, Num, Section, Table};

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

/// The gRPC keys.
pub static KEYS: Table<GrpcConfig> = Table {
    keys: &[
        config_key!("grpcServerEnable", grpc_server_enable: Flag, "serve the gRPC endpoint of the 5.x clients at all"),
        config_key!("grpcServerPort", grpc_server_port: Num, "its port (TLS and plaintext on one port); 0 a free port"),
        config_key!("grpcMaxSessions", grpc_max_sessions: Num, "client sessions kept at once; a new client beyond is refused"),
        config_key!("grpcMaxConnections", grpc_max_connections: Num, "gRPC connections at once; more wait in the listen backlog"),
    ],
    nested: &[],
};

impl Section for GrpcConfig {
    fn table() -> &'static Table<Self> {
        &KEYS
    }
}

impl GrpcConfig {
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
        assert!(c.set_key("grpcServerPort", "0").unwrap());
        assert!(c.set_key("grpcServerEnable", "false").unwrap());
        assert!(!c.set_key("listenPort", "1").unwrap());
        assert!(c.set_key("grpcServerPort", "x").is_err());
        assert_eq!(c.grpc_server_port, 0);
        assert!(c
            .key_values()
            .iter()
            .any(|(k, v)| k == "grpcServerEnable" && v == "false"));
        c.grpc_max_sessions = 0;
        assert!(c.validate().is_err());
    }
}
