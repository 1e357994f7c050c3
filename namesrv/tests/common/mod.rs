//! Shared helpers: a name server on 127.0.0.1:0 in a temp dir, and brokers and
//! clients made of `RemotingClient`s.

#![allow(dead_code)] // each test binary uses a different subset

use std::future::Future;
use std::time::Duration;

use tempfile::TempDir;
use tokio::net::TcpListener;
use vostok_namesrv::{NameServer, NamesrvConfig};
use vostok_remoting::protocol::body::{
    DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper,
};
use vostok_remoting::protocol::header::{
    GetRouteInfoRequestHeader, RegisterBrokerRequestHeader, RegisterBrokerResponseHeader,
};
use vostok_remoting::protocol::route::TopicRouteData;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::{ClientConfig, RemotingClient, RemotingCommand};

/// Upper bound of every wait in these tests.
pub const T: Duration = Duration::from_secs(10);

pub struct TestNamesrv {
    pub server: NameServer,
    pub addr: String,
    /// Holds `kvConfig.json`; removed on drop.
    pub dir: TempDir,
}

impl TestNamesrv {
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(tweak: impl FnOnce(&mut NamesrvConfig)) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = config_in(&dir);
        tweak(&mut config);
        Self::start_in(dir, config).await
    }

    pub async fn start_in(dir: TempDir, config: NamesrvConfig) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let server = NameServer::start(config, listener)
            .await
            .expect("name server starts");
        let addr = server.local_addr().to_string();
        TestNamesrv { server, addr, dir }
    }
}

pub fn config_in(dir: &TempDir) -> NamesrvConfig {
    NamesrvConfig {
        kv_config_path: dir.path().join("namesrv").join("kvConfig.json"),
        listen_port: 0,
        ..Default::default()
    }
}

pub fn client() -> RemotingClient {
    RemotingClient::new(ClientConfig::default(), None)
}

pub async fn call(
    client: &RemotingClient,
    addr: &str,
    request: RemotingCommand,
) -> RemotingCommand {
    client
        .invoke_sync(addr, request, T)
        .await
        .expect("name server answers")
}

/// A broker as the name server sees it.
#[derive(Debug, Clone)]
pub struct Broker {
    pub cluster: String,
    pub name: String,
    pub id: i64,
    pub addr: String,
    pub topics: Vec<TopicConfig>,
    pub version: DataVersion,
}

impl Broker {
    pub fn new(cluster: &str, name: &str, id: i64, addr: &str, topics: &[&str]) -> Self {
        Broker {
            cluster: cluster.into(),
            name: name.into(),
            id,
            addr: addr.into(),
            topics: topics.iter().map(|t| TopicConfig::new(*t, 4)).collect(),
            version: DataVersion {
                counter: 1,
                state_version: 0,
                timestamp: 1_700_000_000_000,
            },
        }
    }

    pub fn ha_addr(&self) -> String {
        format!("{}-ha", self.addr)
    }

    pub fn header(&self) -> RegisterBrokerRequestHeader {
        RegisterBrokerRequestHeader {
            broker_name: self.name.clone(),
            broker_addr: self.addr.clone(),
            cluster_name: self.cluster.clone(),
            ha_server_addr: self.ha_addr(),
            broker_id: self.id,
            heartbeat_timeout_millis: None,
            enable_acting_master: Some(false),
            compressed: Some(false),
            body_crc32: Some(0),
        }
    }

    pub fn body(&self) -> RegisterBrokerBody {
        RegisterBrokerBody {
            filter_server_list: Vec::new(),
            topic_config_serialize_wrapper: TopicConfigSerializeWrapper {
                data_version: self.version.clone(),
                topic_config_table: self
                    .topics
                    .iter()
                    .map(|t| (t.topic_name.clone(), t.clone()))
                    .collect(),
                ..Default::default()
            },
        }
    }

    /// REGISTER_BROKER with the JSON body, as 4.x and 5.x brokers send it.
    pub fn register_request(&self) -> RemotingCommand {
        RemotingCommand::request_with_header(request_code::REGISTER_BROKER, &self.header())
            .with_body(self.body().encode())
    }

    /// Registers over `client` (the broker's own connection); returns the answer.
    pub async fn register(
        &self,
        client: &RemotingClient,
        namesrv: &str,
    ) -> RegisterBrokerResponseHeader {
        let response = call(client, namesrv, self.register_request()).await;
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "register failed: {}",
            response.remark()
        );
        response.decode_header().expect("register response header")
    }
}

pub fn route_request(topic: &str) -> RemotingCommand {
    RemotingCommand::request_with_header(
        request_code::GET_ROUTEINFO_BY_TOPIC,
        &GetRouteInfoRequestHeader {
            topic: topic.into(),
            accept_standard_json_only: None,
        },
    )
}

/// The route of `topic`, or the error response.
pub async fn route(
    client: &RemotingClient,
    namesrv: &str,
    topic: &str,
) -> Result<TopicRouteData, RemotingCommand> {
    let response = call(client, namesrv, route_request(topic)).await;
    if response.code != response_code::SUCCESS {
        return Err(response);
    }
    Ok(TopicRouteData::decode(&response.body).expect("route body decodes"))
}

/// Polls `condition` until it holds; fails the test after [`T`].
pub async fn wait_until<F, Fut>(what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + T;
    loop {
        if condition().await {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
