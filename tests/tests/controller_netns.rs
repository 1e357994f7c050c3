//! Controller mode across hosts (network namespaces, see `vostok_tests::netns`):
//! three name servers each running a controller (`enableControllerInNamesrv`, one
//! Raft quorum) and one broker group of three (`enableControllerMode`,
//! `allAckInSyncStateSet`), each process on its own address:
//!
//! * (a) the master killed with SIGKILL under a producer's load: a new master takes
//!   sends within 10 s, and every acknowledged message is on it exactly once;
//! * (b) the master cut off (link down) under load, then healed: a new master takes
//!   over, the old one never acknowledges while cut off, rejoins as a slave with its
//!   unacknowledged tail cut, and no acknowledged message is missing or doubled;
//! * (c) the controller leading the Raft quorum killed, then the master: the two
//!   controllers left still elect.
//!
//! Skipped (with a message) without root.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use vostok_client::{Message, Producer, ProducerConfig, SendStatus};
use vostok_remoting::protocol::body::KvTable;
use vostok_remoting::protocol::header::{GetMetaDataResponseHeader, TopicRequestHeader};
use vostok_remoting::protocol::{json, request_code, response_code};
use vostok_remoting::{ClientConfig, RemotingClient, RemotingCommand};
use vostok_tests::client::TestClient;
use vostok_tests::netns::{HostBroker, HostNamesrv, Network};
use vostok_tests::sdk::{self, eventually, wait_until};
use vostok_tests::BrokerOptions;

const TOPIC: &str = "ControllerTopic";
const QUEUES: i32 = 4;
const CONTROLLER_PORT: u16 = 9878;

struct Cluster {
    namesrvs: Vec<Option<HostNamesrv>>,
    namesrv: String,
    brokers: Vec<Option<HostBroker>>,
    _stores: Vec<tempfile::TempDir>,
}

fn start_cluster(net: &Network, name: &str) -> Cluster {
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
    let brokers = (0..3)
        .map(|i| {
            let host = net.host(&format!("{name}-b{i}"));
            let options = BrokerOptions {
                namesrv: Some(namesrv.clone()),
                broker_name: "broker-a".into(),
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
            Some(host.spawn_broker(options))
        })
        .collect();
    Cluster {
        namesrvs,
        namesrv,
        brokers,
        _stores: stores,
    }
}

fn rpc() -> RemotingClient {
    RemotingClient::new(
        ClientConfig {
            connect_timeout: Duration::from_millis(500),
            ..ClientConfig::default()
        },
        None,
    )
}

async fn runtime_info(client: &RemotingClient, addr: &str) -> HashMap<String, String> {
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
async fn master_with_full_set(client: &RemotingClient, c: &Cluster) -> Option<usize> {
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
async fn new_master(
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
    let addr = c.brokers[master].as_ref().unwrap().addr.clone();
    let response = admin.create_topic(&addr, TOPIC, QUEUES).await;
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

fn body(n: u64) -> String {
    format!("m{n:07}-{}", "x".repeat((n % 200) as usize))
}

#[derive(Default)]
struct Sends {
    ok: Mutex<Vec<String>>,
    other: Mutex<usize>,
}

fn start_senders(producer: &Producer, sends: &Arc<Sends>, stop: &Arc<AtomicBool>, tasks: usize) {
    let next = Arc::new(AtomicU64::new(0));
    for _ in 0..tasks {
        let (producer, sends, stop, next) =
            (producer.clone(), sends.clone(), stop.clone(), next.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let b = body(next.fetch_add(1, Ordering::Relaxed));
                match producer.send(Message::new(TOPIC, b.clone())).await {
                    Ok(r) if r.send_status == SendStatus::SendOk => {
                        sends.ok.lock().unwrap().push(b)
                    }
                    Ok(_) => *sends.other.lock().unwrap() += 1,
                    Err(_) => {
                        *sends.other.lock().unwrap() += 1;
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        });
    }
}

fn producer(namesrv: &str, instance: &str) -> Producer {
    Producer::new(ProducerConfig {
        client: vostok_client::ClientConfig {
            poll_name_server_interval: Duration::from_millis(500),
            heartbeat_broker_interval: Duration::from_secs(1),
            ..sdk::client(namesrv, instance)
        },
        producer_group: format!("{instance}-producers"),
        // A retried send may be stored twice; each attempt here is its own body.
        retry_times_when_send_failed: 0,
        send_msg_timeout: Duration::from_secs(3),
        ..Default::default()
    })
}

async fn stored_bodies(client: &TestClient, addr: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for q in 0..QUEUES {
        for m in client.drain(addr, "controller-audit", TOPIC, q, 0).await {
            *out.entry(String::from_utf8_lossy(&m.body).into_owned())
                .or_default() += 1;
        }
    }
    out
}

/// Every acknowledged body is stored at `addr` exactly once.
async fn assert_exactly_once(admin: &TestClient, addr: &str, acked: &[String], what: &str) {
    let stored = stored_bodies(admin, addr).await;
    let missing: Vec<_> = acked.iter().filter(|b| !stored.contains_key(*b)).collect();
    assert!(
        missing.is_empty(),
        "{what}: {} of {} acknowledged messages missing: {:?}",
        missing.len(),
        acked.len(),
        &missing[..missing.len().min(5)]
    );
    let twice: Vec<_> = stored
        .iter()
        .filter(|(b, n)| **n > 1 && *b != "probe")
        .collect();
    assert!(twice.is_empty(), "{what}: stored more than once: {twice:?}");
}

/// Starts a cluster, waits for a master with a full SyncStateSet and the topic.
async fn ready(net: &Network, name: &str) -> (Cluster, TestClient, RemotingClient, usize) {
    let c = start_cluster(net, name);
    let admin = TestClient::default();
    let rpc = rpc();
    let deadline = Instant::now() + sdk::WAIT;
    let master = loop {
        if let Some(m) = master_with_full_set(&rpc, &c).await {
            break m;
        }
        assert!(
            Instant::now() < deadline,
            "no master with all three brokers in sync"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    create_topic(&admin, &rpc, &c, master).await;
    (c, admin, rpc, master)
}

/// Waits (at most 10 s after `since`) for a new master; its index.
async fn await_new_master(
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_master_is_replaced_without_losing_acknowledged_messages() {
    let Some(net) = Network::new("ctl-kill") else {
        return;
    };
    let (mut c, admin, rpc, master) = ready(&net, "ck").await;
    let producer = producer(&c.namesrv, "ctl-kill");
    producer.start().await.unwrap();
    let (sends, stop) = (Arc::new(Sends::default()), Arc::new(AtomicBool::new(false)));
    start_senders(&producer, &sends, &stop, 8);
    let acked = |s: &Sends| s.ok.lock().unwrap().len();
    wait_until("acknowledged sends", || acked(&sends) >= 300).await;

    c.brokers[master].as_mut().unwrap().kill9();
    let killed = Instant::now();
    let before = acked(&sends);
    let new = await_new_master(&c, &admin, &rpc, master, killed).await;
    wait_until("sends acknowledged by the new master", || {
        acked(&sends) >= before + 200
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let acked_bodies = sends.ok.lock().unwrap().clone();
    let addr = c.brokers[new].as_ref().unwrap().addr.clone();
    assert_exactly_once(&admin, &addr, &acked_bodies, "new master").await;
    eprintln!(
        "controller_netns kill: {} acknowledged, {} not",
        acked_bodies.len(),
        sends.other.lock().unwrap()
    );
    producer.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_master_is_fenced_and_rejoins_with_its_tail_cut() {
    let Some(net) = Network::new("ctl-cut") else {
        return;
    };
    let (c, admin, rpc, master) = ready(&net, "cc").await;
    let producer = producer(&c.namesrv, "ctl-cut");
    producer.start().await.unwrap();
    let (sends, stop) = (Arc::new(Sends::default()), Arc::new(AtomicBool::new(false)));
    start_senders(&producer, &sends, &stop, 8);
    let acked = |s: &Sends| s.ok.lock().unwrap().len();
    wait_until("acknowledged sends", || acked(&sends) >= 300).await;

    let old = c.brokers[master].as_ref().unwrap();
    old.host().link_down();
    let cut = Instant::now();
    let before = acked(&sends);
    let new = await_new_master(&c, &admin, &rpc, master, cut).await;
    wait_until("sends acknowledged by the new master", || {
        acked(&sends) >= before + 200
    })
    .await;
    old.host().link_up();
    // Healed: the old master learns the new epoch and follows the new master.
    let old_addr = old.addr.clone();
    eventually("the old master to become a slave", || {
        let (rpc, addr) = (&rpc, old_addr.clone());
        async move {
            runtime_info(rpc, &addr)
                .await
                .get("brokerRole")
                .map(String::as_str)
                == Some("SLAVE")
        }
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let acked_bodies = sends.ok.lock().unwrap().clone();
    let new_addr = c.brokers[new].as_ref().unwrap().addr.clone();
    assert_exactly_once(&admin, &new_addr, &acked_bodies, "new master").await;
    // The old master cut its unacknowledged tail and copied the new master's log.
    let end = runtime_info(&rpc, &new_addr).await["commitLogMaxOffset"].clone();
    eventually("the old master to hold the new master's log", || {
        let (rpc, addr, end) = (&rpc, old_addr.clone(), end.clone());
        async move { runtime_info(rpc, &addr).await.get("commitLogMaxOffset") == Some(&end) }
    })
    .await;
    assert_exactly_once(&admin, &old_addr, &acked_bodies, "old master, rejoined").await;
    assert_eq!(
        stored_bodies(&admin, &old_addr).await,
        stored_bodies(&admin, &new_addr).await,
        "the two logs differ"
    );
    eprintln!(
        "controller_netns cut: {} acknowledged, {} not",
        acked_bodies.len(),
        sends.other.lock().unwrap()
    );
    producer.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elections_go_on_without_the_raft_leader() {
    let Some(net) = Network::new("ctl-raft") else {
        return;
    };
    let (mut c, admin, rpc, master) = ready(&net, "cr").await;
    // The controller leading the Raft quorum, killed with its name server.
    let some_controller = c.namesrvs[0].as_ref().unwrap().host().addr(CONTROLLER_PORT);
    let request = RemotingCommand::request(request_code::CONTROLLER_GET_METADATA_INFO);
    let response = rpc
        .invoke_sync(&some_controller, request, Duration::from_secs(3))
        .await
        .unwrap();
    let meta: GetMetaDataResponseHeader = response.decode_header().unwrap();
    let leader = meta.controller_leader_address.expect("a Raft leader");
    let li = c
        .namesrvs
        .iter()
        .position(|n| n.as_ref().unwrap().host().addr(CONTROLLER_PORT) == leader)
        .unwrap();
    c.namesrvs[li].as_mut().unwrap().kill9();
    c.namesrvs[li] = None;
    // Then the master: the two controllers left elect another.
    c.brokers[master].as_mut().unwrap().kill9();
    let killed = Instant::now();
    let new = await_new_master(&c, &admin, &rpc, master, killed).await;
    assert_ne!(new, master);
}
