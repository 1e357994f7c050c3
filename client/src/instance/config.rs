//! What every producer and consumer of a client instance is configured with (Java
//! `ClientConfig`), and the client id derived from it.

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use vostok_remoting::auth::{AclClientHook, SessionCredentials};
use vostok_remoting::{RemotingClient, RpcHook, SerializeType};

/// Settings shared by producers and consumers (Java `ClientConfig`).
#[derive(Clone)]
pub struct ClientConfig {
    /// Name server addresses (`namesrvAddr`, `host:port`); tried in turn on failure.
    pub namesrv_addr: Vec<String>,
    /// `instanceName`: `DEFAULT` is replaced by the process id, so that the producers
    /// and consumers of a process share one instance.
    pub instance_name: String,
    /// `clientIP`; detected from the default route when `None`.
    pub client_ip: Option<IpAddr>,
    pub unit_name: Option<String>,
    /// Namespace: every topic and group is used as `namespace%name`.
    pub namespace: String,
    /// `pollNameServerInterval`.
    pub poll_name_server_interval: Duration,
    /// `heartbeatBrokerInterval`.
    pub heartbeat_broker_interval: Duration,
    /// `persistConsumerOffsetInterval`.
    pub persist_consumer_offset_interval: Duration,
    /// `rocketmq.client.rebalance.waitInterval`.
    pub rebalance_interval: Duration,
    /// `mqClientApiTimeout`: timeout of route, heartbeat and offset calls.
    pub mq_client_api_timeout: Duration,
    /// Root of broadcasting consumers' offset files
    /// (`rocketmq.client.localOffsetStoreDir`, default `~/.rocketmq_offsets`).
    pub local_offset_store_dir: Option<PathBuf>,
    /// Adds ext fields to every request (trace ids and the like).
    pub rpc_hook: Option<Arc<dyn RpcHook>>,
    /// ACL credentials: every request is signed with them, as Java's
    /// `AclClientRPCHook` signs (docs/security.md#signature).
    pub credentials: Option<SessionCredentials>,
    /// Connection settings; `remoting.tls` wraps every connection in TLS
    /// ([`vostok_remoting::tls::ClientTls`]). Requests carry binary (`ROCKETMQ`)
    /// headers unless `ROCKETMQ_SERIALIZE_TYPE=JSON` is set (see [`serialize_type_from_env`]).
    pub remoting: vostok_remoting::ClientConfig,
}

/// The header serialisation of the SDK's requests: `ROCKETMQ_SERIALIZE_TYPE` (Java's
/// variable; `JSON` or `ROCKETMQ`), binary when it is unset. Every RocketMQ server
/// reads both (and answers in the request's type or in JSON, both read here), and the
/// binary header costs both sides less CPU per request than JSON (Java's default).
pub fn serialize_type_from_env() -> SerializeType {
    match std::env::var("ROCKETMQ_SERIALIZE_TYPE") {
        Ok(v) if v.trim().eq_ignore_ascii_case("JSON") => SerializeType::Json,
        Ok(v) if !v.trim().eq_ignore_ascii_case("ROCKETMQ") => {
            // Every client config reads the variable; one warning per process is enough.
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                tracing::warn!(value = %v, "ROCKETMQ_SERIALIZE_TYPE is neither JSON nor ROCKETMQ; using ROCKETMQ");
            });
            SerializeType::RocketMq
        }
        _ => SerializeType::RocketMq,
    }
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            namesrv_addr: std::env::var("NAMESRV_ADDR")
                .map(|s| parse_namesrv_addr(&s))
                .unwrap_or_default(),
            instance_name: "DEFAULT".into(),
            client_ip: None,
            unit_name: None,
            namespace: String::new(),
            poll_name_server_interval: Duration::from_secs(30),
            heartbeat_broker_interval: Duration::from_secs(30),
            persist_consumer_offset_interval: Duration::from_secs(5),
            rebalance_interval: Duration::from_secs(20),
            mq_client_api_timeout: Duration::from_secs(3),
            local_offset_store_dir: None,
            rpc_hook: None,
            credentials: None,
            remoting: {
                let mut remoting = vostok_remoting::ClientConfig::default();
                remoting.connection.serialize_type = serialize_type_from_env();
                remoting
            },
        }
    }
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("namesrv_addr", &self.namesrv_addr)
            .field("instance_name", &self.instance_name)
            .field("client_ip", &self.client_ip)
            .field("namespace", &self.namespace)
            .field("credentials", &self.credentials)
            .field("tls", &self.remoting.tls.is_some())
            .finish_non_exhaustive()
    }
}

/// Splits `host:port;host:port` (Java's `namesrvAddr` syntax; `,` also separates).
pub fn parse_namesrv_addr(s: &str) -> Vec<String> {
    s.split([';', ','])
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .collect()
}

impl ClientConfig {
    /// Registers the hooks this config asks for on `remoting`: the RPC hook, then the
    /// signature (last, so that it covers every field the other hooks add).
    pub(crate) fn install_hooks(&self, remoting: &RemotingClient) {
        if let Some(hook) = &self.rpc_hook {
            remoting.register_rpc_hook(hook.clone());
        }
        if let Some(credentials) = &self.credentials {
            remoting.register_rpc_hook(Arc::new(AclClientHook::new(credentials.clone())));
        }
    }

    pub fn with_namesrv(addr: &str) -> Self {
        ClientConfig {
            namesrv_addr: parse_namesrv_addr(addr),
            ..Default::default()
        }
    }

    pub fn client_ip(&self) -> IpAddr {
        self.client_ip.unwrap_or_else(local_ip)
    }

    /// `clientIP@instanceName[@unitName]`.
    pub fn client_id(&self) -> String {
        let instance = if self.instance_name == "DEFAULT" {
            std::process::id().to_string()
        } else {
            self.instance_name.clone()
        };
        let mut id = format!("{}@{}", self.client_ip(), instance);
        if let Some(unit) = self.unit_name.as_deref().filter(|u| !u.is_empty()) {
            id.push('@');
            id.push_str(unit);
        }
        id
    }
}

/// The address of the interface the default route uses; no packet is sent.
pub fn local_ip() -> IpAddr {
    let probe = || -> std::io::Result<IpAddr> {
        let socket = std::net::UdpSocket::bind("0.0.0.0:0")?;
        socket.connect("10.254.254.254:1")?;
        Ok(socket.local_addr()?.ip())
    };
    match probe() {
        Ok(ip) if !ip.is_unspecified() => ip,
        _ => IpAddr::V4(Ipv4Addr::LOCALHOST),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_ids_and_namesrv_lists() {
        assert_eq!(
            parse_namesrv_addr(" a:1;b:2 ;;"),
            vec!["a:1".to_owned(), "b:2".to_owned()]
        );
        let config = ClientConfig {
            client_ip: Some("10.0.0.5".parse().unwrap()),
            instance_name: "inst".into(),
            unit_name: Some("u".into()),
            ..ClientConfig::with_namesrv("a:1")
        };
        assert_eq!(config.client_id(), "10.0.0.5@inst@u");
        let default = ClientConfig {
            client_ip: Some("10.0.0.5".parse().unwrap()),
            ..ClientConfig::with_namesrv("a:1")
        };
        assert_eq!(
            default.client_id(),
            format!("10.0.0.5@{}", std::process::id())
        );
    }
}
