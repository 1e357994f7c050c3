//! A controller-mode cluster across hosts (network namespaces, [`crate::netns`]):
//! three name servers each running a controller (`enableControllerInNamesrv`, one
//! Raft quorum) and one broker group (of three unless asked; `enableControllerMode`,
//! `allAckInSyncStateSet`), each process on its own address, with short timers
//! (heartbeat timeout 3 s, polls every 300 ms); and what the scenarios ask of it:
//! who is master, who leads the controllers, an election by hand, what a broker
//! stores.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use vostok_remoting::protocol::body::{BrokerReplicasInfo, KvTable};
use vostok_remoting::protocol::header::{
    ElectMasterRequestHeader, ElectMasterResponseHeader, GetMetaDataResponseHeader,
    TopicRequestHeader,
};
use vostok_remoting::protocol::{json, request_code, response_code};
use vostok_remoting::{ClientConfig, RemotingClient, RemotingCommand};

use crate::client::TestClient;
use crate::netns::{Host, HostBroker, HostNamesrv, Network};
use crate::sdk::{self, eventually};
use crate::BrokerOptions;

pub const TOPIC: &str = "ControllerTopic";
pub const QUEUES: i32 = 4;
pub const CONTROLLER_PORT: u16 = 9878;
pub const BROKER_NAME: &str = "broker-a";
const CLUSTER: &str = "DefaultCluster";

pub struct Cluster {
    pub namesrvs: Vec<Option<HostNamesrv>>,
    /// The name servers, `ip:port;ip:port;ip:port`.
    pub namesrv: String,
    pub brokers: Vec<Option<HostBroker>>,
    /// The controllers' Raft stores, which outlive their restarts.
    pub stores: Vec<tempfile::TempDir>,
}

/// Starts the cluster with `broker_count` brokers; `broker_settings` are added to
/// every broker's (and win over the defaults here).
pub fn start_cluster(
    net: &Network,
    name: &str,
    broker_count: usize,
    broker_settings: &[(&str, &str)],
) -> Cluster {
    start_cluster_with(net, name, broker_count, |_, host, mut options| {
        for (key, value) in broker_settings {
            options = options.set(key, value);
        }
        host.spawn_broker(options)
    })
}

/// Starts the cluster with `broker_count` brokers, each by `spawn(index, host,
/// options)`, which may add settings to the controller-mode `options` and choose the
/// broker's store.
pub fn start_cluster_with(
    net: &Network,
    name: &str,
    broker_count: usize,
    mut spawn: impl FnMut(usize, &Host, BrokerOptions) -> HostBroker,
) -> Cluster {
    let hosts: Vec<_> = (0..3).map(|i| net.host(&format!("{name}-c{i}"))).collect();
    let peers = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| format!("n{i}-{}", h.addr(CONTROLLER_PORT)))
        .collect::<Vec<_>>()
        .join(";");
    let stores: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let namesrvs: Vec<_> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let store = stores[i].path().display().to_string();
            let id = format!("n{i}");
            Some(h.spawn_namesrv_with(&[
                ("enableControllerInNamesrv", "true"),
                ("controllerDLegerGroup", "vostok-test"),
                ("controllerDLegerPeers", &peers),
                ("controllerDLegerSelfId", &id),
                ("controllerStorePath", &store),
                ("scanNotActiveBrokerInterval", "500"),
                ("raftHeartbeatIntervalMills", "150"),
                ("raftElectionTimeoutMills", "800"),
            ]))
        })
        .collect();
    let namesrv = namesrvs
        .iter()
        .flatten()
        .map(|n| n.addr.clone())
        .collect::<Vec<_>>()
        .join(";");
    let controllers = hosts
        .iter()
        .map(|h| h.addr(CONTROLLER_PORT))
        .collect::<Vec<_>>()
        .join(";");
    let brokers = (0..broker_count)
        .map(|i| {
            let host = net.host(&format!("{name}-b{i}"));
            let options = BrokerOptions {
                namesrv: Some(namesrv.clone()),
                broker_name: BROKER_NAME.into(),
                ..Default::default()
            }
            .set("enableControllerMode", true)
            .set("controllerAddr", &controllers)
            .set("allAckInSyncStateSet", true)
            .set("brokerRole", "SLAVE")
            .set("brokerId", -1)
            .set("haListenPort", 10912)
            .set("brokerIP1", host.ip())
            .set("controllerHeartBeatTimeoutMills", 3000)
            .set("brokerHeartbeatInterval", 300)
            .set("syncBrokerMetadataPeriod", 300)
            .set("checkSyncStateSetPeriod", 500)
            .set("haMaxTimeSlaveNotCatchup", 3000)
            .set("haSendHeartbeatInterval", 300)
            .set("haHousekeepingInterval", 3000)
            .set("syncFlushTimeout", 2000)
            .set("registerNameServerPeriod", 10000);
            Some(spawn(i, &host, options))
        })
        .collect();
    Cluster {
        namesrvs,
        namesrv,
        brokers,
        stores,
    }
}

impl Cluster {
    /// The main address of broker `i`.
    pub fn addr(&self, i: usize) -> String {
        self.brokers[i]
            .as_ref()
            .expect("a running broker")
            .addr
            .clone()
    }

    /// The controllers' addresses, of the name servers still running.
    pub fn controllers(&self) -> Vec<String> {
        self.namesrvs
            .iter()
            .flatten()
            .map(|n| n.host().addr(CONTROLLER_PORT))
            .collect()
    }
}

pub fn rpc() -> RemotingClient {
    RemotingClient::new(
        ClientConfig {
            connect_timeout: Duration::from_millis(500),
            ..ClientConfig::default()
        },
        None,
    )
}

/// GET_BROKER_RUNTIME_INFO; empty when the broker does not answer.
pub async fn runtime_info(client: &RemotingClient, addr: &str) -> HashMap<String, String> {
    let request = RemotingCommand::request(request_code::GET_BROKER_RUNTIME_INFO);
    let Ok(response) = client
        .invoke_sync(addr, request, Duration::from_secs(1))
        .await
    else {
        return HashMap::new();
    };
    json::from_slice::<KvTable>("runtime info", &response.body)
        .map(|kv| kv.table.into_iter().collect())
        .unwrap_or_default()
}

/// The index of the broker that is master with every broker in its SyncStateSet.
pub async fn master_with_full_set(client: &RemotingClient, c: &Cluster) -> Option<usize> {
    for (i, b) in c.brokers.iter().enumerate() {
        let Some(b) = b else { continue };
        let info = runtime_info(client, &b.addr).await;
        let full = info
            .get("syncStateSet")
            .is_some_and(|s| s.split(',').count() == c.brokers.iter().flatten().count());
        if info.get("brokerRole").map(String::as_str) == Some("SYNC_MASTER") && full {
            return Some(i);
        }
    }
    None
}

/// The index of a broker other than `old` that is master and takes a send.
pub async fn new_master(
    client: &TestClient,
    rpc: &RemotingClient,
    c: &Cluster,
    old: usize,
) -> Option<usize> {
    for (i, b) in c.brokers.iter().enumerate() {
        let Some(b) = b.as_ref().filter(|_| i != old) else {
            continue;
        };
        let info = runtime_info(rpc, &b.addr).await;
        if info.get("brokerRole").map(String::as_str) != Some("SYNC_MASTER") {
            continue;
        }
        let code = client
            .send_raw(&b.addr, TOPIC, 0, "probe".to_string(), String::new())
            .await
            .code;
        if code == response_code::SUCCESS {
            return Some(i);
        }
    }
    None
}

async fn create_topic(admin: &TestClient, rpc: &RemotingClient, c: &Cluster, master: usize) {
    let response = admin.create_topic(&c.addr(master), TOPIC, QUEUES).await;
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{}",
        response.remark()
    );
    for b in c.brokers.iter().flatten() {
        let addr = b.addr.clone();
        eventually("every broker to hold the topic", || {
            let addr = addr.clone();
            async move {
                let request = RemotingCommand::request_with_header(
                    request_code::GET_TOPIC_CONFIG,
                    &TopicRequestHeader {
                        topic: TOPIC.into(),
                    },
                );
                matches!(rpc.invoke_sync(&addr, request, Duration::from_secs(1)).await,
                    Ok(r) if r.code == response_code::SUCCESS)
            }
        })
        .await;
    }
    let ns = c.namesrv.split(';').next().unwrap().to_owned();
    admin
        .wait_for_route(&ns, TOPIC, |r| {
            r.broker_datas
                .iter()
                .any(|b| b.broker_addrs.contains_key(&0))
        })
        .await;
}

/// Starts a cluster of three brokers, waits for a master with a full SyncStateSet
/// and creates [`TOPIC`] on it; the cluster, clients and the master's index.
pub async fn ready(
    net: &Network,
    name: &str,
    broker_settings: &[(&str, &str)],
) -> (Cluster, TestClient, RemotingClient, usize) {
    ready_with(net, name, 3, broker_settings).await
}

/// [`ready`] with `broker_count` brokers.
pub async fn ready_with(
    net: &Network,
    name: &str,
    broker_count: usize,
    broker_settings: &[(&str, &str)],
) -> (Cluster, TestClient, RemotingClient, usize) {
    let c = start_cluster(net, name, broker_count, broker_settings);
    let admin = TestClient::default();
    let rpc = rpc();
    let deadline = Instant::now() + sdk::WAIT;
    let master = loop {
        if let Some(m) = master_with_full_set(&rpc, &c).await {
            break m;
        }
        assert!(
            Instant::now() < deadline,
            "no master with every broker in sync"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    create_topic(&admin, &rpc, &c, master).await;
    (c, admin, rpc, master)
}

/// Waits (at most 10 s after `since`) for a new master; its index.
pub async fn await_new_master(
    c: &Cluster,
    admin: &TestClient,
    rpc: &RemotingClient,
    old: usize,
    since: Instant,
) -> usize {
    loop {
        if let Some(m) = new_master(admin, rpc, c, old).await {
            let took = since.elapsed();
            eprintln!(
                "controller_netns: new master {m} serving after {} ms",
                took.as_millis()
            );
            assert!(took < Duration::from_secs(10), "new master after {took:?}");
            return m;
        }
        assert!(
            since.elapsed() < Duration::from_secs(10),
            "no new master within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The address of the controller leading the Raft quorum.
pub async fn controller_leader(rpc: &RemotingClient, c: &Cluster) -> String {
    let deadline = Instant::now() + sdk::WAIT;
    loop {
        for addr in c.controllers() {
            let request = RemotingCommand::request(request_code::CONTROLLER_GET_METADATA_INFO);
            let Ok(response) = rpc
                .invoke_sync(&addr, request, Duration::from_secs(3))
                .await
            else {
                continue;
            };
            if let Some(leader) = response
                .decode_header::<GetMetaDataResponseHeader>()
                .ok()
                .and_then(|meta| meta.controller_leader_address)
            {
                return leader;
            }
        }
        assert!(Instant::now() < deadline, "no controller leader");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether the controller leading the quorum counts replica `id` of [`BROKER_NAME`]
/// as alive (its heartbeats arrive): the leader decides SyncStateSet changes by it.
pub async fn alive_at_leader(rpc: &RemotingClient, c: &Cluster, id: i64) -> bool {
    let leader = controller_leader(rpc, c).await;
    let request = RemotingCommand::request(request_code::CONTROLLER_GET_SYNC_STATE_DATA)
        .with_body(json::to_vec(&[BROKER_NAME]));
    let Ok(response) = rpc
        .invoke_sync(&leader, request, Duration::from_secs(3))
        .await
    else {
        return false;
    };
    json::from_slice::<BrokerReplicasInfo>("sync state data", &response.body)
        .ok()
        .and_then(|info| info.replicas_info_table.get(BROKER_NAME).cloned())
        .is_some_and(|group| {
            group
                .in_sync_replicas
                .iter()
                .chain(&group.not_in_sync_replicas)
                .any(|r| r.broker_id == id && r.alive)
        })
}

/// Makes broker `i` master by hand (`mqadmin electMaster`); the controller's answer.
pub async fn elect_by_hand(
    rpc: &RemotingClient,
    c: &Cluster,
    i: usize,
) -> ElectMasterResponseHeader {
    let id = runtime_info(rpc, &c.addr(i)).await["controllerBrokerId"]
        .parse()
        .expect("a controller-mode broker id");
    let header = ElectMasterRequestHeader {
        cluster_name: CLUSTER.into(),
        broker_name: BROKER_NAME.into(),
        broker_id: id,
        designate_elect: Some(true),
        invoke_time: None,
    };
    let leader = controller_leader(rpc, c).await;
    let request =
        RemotingCommand::request_with_header(request_code::CONTROLLER_ELECT_MASTER, &header);
    let response = rpc
        .invoke_sync(&leader, request, Duration::from_secs(5))
        .await
        .expect("the controller leader answers");
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "electMaster: {}",
        response.remark()
    );
    response.decode_header().expect("an electMaster answer")
}

/// Every body of [`TOPIC`] stored at `addr`, with how often.
pub async fn stored_bodies(client: &TestClient, addr: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for q in 0..QUEUES {
        for m in client.drain(addr, "controller-audit", TOPIC, q, 0).await {
            *out.entry(String::from_utf8_lossy(&m.body).into_owned())
                .or_default() += 1;
        }
    }
    out
}
