//! Three controllers in-process on real sockets: registration, the first election,
//! a re-election when the master's heartbeats stop, and the same after the Raft
//! leader is gone; the metadata survives a restart from the data directory. Each
//! election is pushed to the group's alive brokers (NOTIFY_BROKER_ROLE_CHANGED).

mod common;

use std::time::Duration;

use tokio::sync::mpsc;
use vostok_controller::{Controller, ControllerConfig};
use vostok_remoting::protocol::body::SyncStateSet;
use vostok_remoting::protocol::header::{
    AlterSyncStateSetRequestHeader, ApplyBrokerIdRequestHeader, BrokerHeartbeatRequestHeader,
    ElectMasterRequestHeader, ElectMasterResponseHeader, GetMetaDataResponseHeader,
    GetNextBrokerIdRequestHeader, GetNextBrokerIdResponseHeader, GetReplicaInfoRequestHeader,
    GetReplicaInfoResponseHeader, NotifyBrokerRoleChangedRequestHeader,
    RegisterBrokerToControllerRequestHeader,
};
use vostok_remoting::protocol::{json, request_code, response_code};
use vostok_remoting::{
    BoxFuture, Channel, ClientConfig, RemotingClient, RemotingCommand, RemotingServer,
    RequestProcessor, ServerConfig,
};

const T: Duration = Duration::from_secs(3);

struct Quorum {
    dirs: Vec<tempfile::TempDir>,
    addrs: Vec<String>,
    nodes: Vec<Option<Controller>>,
}

fn config(dir: &std::path::Path, addrs: &[String], i: usize) -> ControllerConfig {
    let peers = common::peers(addrs);
    let mut c = ControllerConfig {
        store_path: dir.to_owned(),
        self_id: format!("n{i}"),
        scan_not_active_broker_interval: Duration::from_millis(200),
        heartbeat_timeout: Duration::from_millis(1500),
        raft_heartbeat_interval: Duration::from_millis(100),
        raft_election_timeout: Duration::from_millis(500),
        ..ControllerConfig::default()
    };
    c.apply_property("controllerDLegerPeers", &peers).unwrap();
    c
}

impl Quorum {
    async fn start() -> Quorum {
        let (listeners, addrs) = common::bind_peers(3).await;
        let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
        let mut nodes = Vec::new();
        for (i, l) in listeners.into_iter().enumerate() {
            let c = Controller::start(config(dirs[i].path(), &addrs, i), l)
                .await
                .unwrap();
            nodes.push(Some(c));
        }
        Quorum { dirs, addrs, nodes }
    }

    async fn restart(&mut self, i: usize) {
        let l = tokio::net::TcpListener::bind(&self.addrs[i]).await.unwrap();
        let c = Controller::start(config(self.dirs[i].path(), &self.addrs, i), l)
            .await
            .unwrap();
        self.nodes[i] = Some(c);
    }

    async fn stop(&mut self, i: usize) {
        if let Some(c) = self.nodes[i].take() {
            c.shutdown().await;
        }
    }
}

/// Asks every live controller who leads until one says it does.
async fn leader(client: &RemotingClient, q: &Quorum) -> String {
    for _ in 0..200 {
        for (i, addr) in q.addrs.iter().enumerate() {
            if q.nodes[i].is_none() {
                continue;
            }
            let req = RemotingCommand::request(request_code::CONTROLLER_GET_METADATA_INFO);
            if let Ok(resp) = client.invoke_sync(addr, req, T).await {
                let h: GetMetaDataResponseHeader = resp.decode_header().unwrap();
                if h.is_leader {
                    return addr.clone();
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no controller leader");
}

/// Sends `req` to the leader, asking again (as brokers do) while leadership moves.
async fn call(client: &RemotingClient, q: &Quorum, req: RemotingCommand) -> RemotingCommand {
    for _ in 0..100 {
        let addr = leader(client, q).await;
        let resp = client.invoke_sync(&addr, req.clone(), T).await.unwrap();
        if resp.code != response_code::CONTROLLER_NOT_LEADER {
            return resp;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no controller kept its leadership long enough to answer");
}

async fn heartbeat(client: &RemotingClient, q: &Quorum, id: i64, max_offset: i64) {
    for (i, addr) in q.addrs.iter().enumerate() {
        if q.nodes[i].is_none() {
            continue;
        }
        let h = BrokerHeartbeatRequestHeader {
            cluster_name: "c".into(),
            broker_addr: format!("10.0.0.{id}:10911"),
            broker_name: "b".into(),
            broker_id: Some(id),
            epoch: Some(0),
            max_offset: Some(max_offset),
            heartbeat_timeout_mills: Some(1500),
            ..Default::default()
        };
        let req = RemotingCommand::request_with_header(request_code::BROKER_HEARTBEAT, &h);
        let resp = client.invoke_sync(addr, req, T).await.unwrap();
        assert_eq!(resp.code, response_code::SUCCESS);
    }
}

async fn register(client: &RemotingClient, q: &Quorum) -> i64 {
    register_at(client, q, None).await
}

/// Registers the next broker id at `addr` (default `10.0.0.<id>:10911`).
async fn register_at(client: &RemotingClient, q: &Quorum, addr: Option<&str>) -> i64 {
    let h = GetNextBrokerIdRequestHeader {
        cluster_name: "c".into(),
        broker_name: "b".into(),
    };
    let resp = call(
        client,
        q,
        RemotingCommand::request_with_header(request_code::CONTROLLER_GET_NEXT_BROKER_ID, &h),
    )
    .await;
    let next: GetNextBrokerIdResponseHeader = resp.decode_header().unwrap();
    let id = next.next_broker_id.unwrap();
    let addr = addr.map_or_else(|| format!("10.0.0.{id}:10911"), str::to_owned);
    let apply = ApplyBrokerIdRequestHeader {
        cluster_name: "c".into(),
        broker_name: "b".into(),
        applied_broker_id: id,
        register_check_code: format!("{addr};1"),
    };
    let resp = call(
        client,
        q,
        RemotingCommand::request_with_header(request_code::CONTROLLER_APPLY_BROKER_ID, &apply),
    )
    .await;
    assert_eq!(resp.code, response_code::SUCCESS, "{:?}", resp.remark);
    let reg = RegisterBrokerToControllerRequestHeader {
        cluster_name: "c".into(),
        broker_name: "b".into(),
        broker_id: id,
        broker_address: addr,
        ha_address: Some(format!("10.0.0.{id}:10912")),
        invoke_time: None,
    };
    let resp = call(
        client,
        q,
        RemotingCommand::request_with_header(request_code::CONTROLLER_REGISTER_BROKER, &reg),
    )
    .await;
    assert_eq!(resp.code, response_code::SUCCESS, "{:?}", resp.remark);
    id
}

async fn replica_info(
    client: &RemotingClient,
    q: &Quorum,
) -> (GetReplicaInfoResponseHeader, SyncStateSet) {
    let h = GetReplicaInfoRequestHeader {
        broker_name: "b".into(),
    };
    let resp = call(
        client,
        q,
        RemotingCommand::request_with_header(request_code::CONTROLLER_GET_REPLICA_INFO, &h),
    )
    .await;
    assert_eq!(resp.code, response_code::SUCCESS);
    (
        resp.decode_header().unwrap(),
        json::from_slice("sss", &resp.body).unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elections_survive_the_loss_of_the_raft_leader() {
    let mut q = Quorum::start().await;
    let client = RemotingClient::new(ClientConfig::default(), None);
    let ids = [
        register(&client, &q).await,
        register(&client, &q).await,
        register(&client, &q).await,
    ];
    assert_eq!(ids, [1, 2, 3]);
    for id in ids {
        heartbeat(&client, &q, id, 100).await;
    }
    // The first broker asking becomes the first master.
    let elect = ElectMasterRequestHeader {
        cluster_name: "c".into(),
        broker_name: "b".into(),
        broker_id: 2,
        designate_elect: Some(false),
        invoke_time: None,
    };
    let resp = call(
        &client,
        &q,
        RemotingCommand::request_with_header(request_code::CONTROLLER_ELECT_MASTER, &elect),
    )
    .await;
    assert_eq!(resp.code, response_code::SUCCESS, "{:?}", resp.remark);
    let h: ElectMasterResponseHeader = resp.decode_header().unwrap();
    assert_eq!((h.master_broker_id, h.master_epoch), (Some(2), Some(1)));
    assert_eq!(h.master_ha_address.as_deref(), Some("10.0.0.2:10912"));
    // A second request sees the live master.
    let again = call(
        &client,
        &q,
        RemotingCommand::request_with_header(request_code::CONTROLLER_ELECT_MASTER, &elect),
    )
    .await;
    assert_eq!(again.code, response_code::CONTROLLER_MASTER_STILL_EXIST);
    // The master adds 1 and 3 to its SyncStateSet.
    let alter = AlterSyncStateSetRequestHeader {
        broker_name: "b".into(),
        master_broker_id: 2,
        master_epoch: 1,
        invoke_time: None,
    };
    let body = SyncStateSet {
        sync_state_set: [1, 2, 3].into(),
        sync_state_set_epoch: 1,
    };
    let req =
        RemotingCommand::request_with_header(request_code::CONTROLLER_ALTER_SYNC_STATE_SET, &alter)
            .with_body(json::to_vec(&body));
    let resp = call(&client, &q, req).await;
    assert_eq!(resp.code, response_code::SUCCESS, "{:?}", resp.remark);

    // Kill the Raft leader, then stop the master's heartbeats: the survivors elect.
    let leader_addr = leader(&client, &q).await;
    let li = q.addrs.iter().position(|a| *a == leader_addr).unwrap();
    q.stop(li).await;
    let mut new_master = None;
    for _ in 0..100 {
        // 3 first: when stopping the leader took longer than the heartbeat timeout, 1 and
        // 3 are dead too, and whichever comes back first may be elected alone.
        heartbeat(&client, &q, 3, 200).await;
        heartbeat(&client, &q, 1, 100).await;
        let (h, sss) = replica_info(&client, &q).await;
        if h.master_broker_id != Some(2) {
            // 3 has the higher max offset.
            assert_eq!(h.master_epoch, Some(2));
            assert_eq!(sss.sync_state_set, [3].into());
            new_master = h.master_broker_id;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(new_master, Some(3));
    // The old master's SyncStateSet change is fenced by its epoch.
    let body = SyncStateSet {
        sync_state_set: [2].into(),
        sync_state_set_epoch: 2,
    };
    let req =
        RemotingCommand::request_with_header(request_code::CONTROLLER_ALTER_SYNC_STATE_SET, &alter)
            .with_body(json::to_vec(&body));
    let resp = call(&client, &q, req).await;
    assert_eq!(resp.code, response_code::CONTROLLER_FENCED_MASTER_EPOCH);

    // The stopped controller comes back from its data directory and catches up.
    q.restart(li).await;
    for i in 0..3 {
        q.stop(i).await;
    }
    for i in 0..3 {
        q.restart(i).await;
    }
    let (h, _) = replica_info(&client, &q).await;
    assert_eq!((h.master_broker_id, h.master_epoch), (Some(3), Some(2)));
    for i in 0..3 {
        q.stop(i).await;
    }
    client.shutdown().await;
}

type Notice = (NotifyBrokerRoleChangedRequestHeader, SyncStateSet);

/// A broker's main port that keeps the role change notices it receives.
struct NoticeBox(mpsc::Sender<Notice>);

impl RequestProcessor for NoticeBox {
    fn process<'a>(
        &'a self,
        _channel: &'a Channel,
        request: RemotingCommand,
    ) -> BoxFuture<'a, Option<RemotingCommand>> {
        Box::pin(async move {
            assert_eq!(request.code, request_code::NOTIFY_BROKER_ROLE_CHANGED);
            assert!(request.is_oneway(), "a notice expects no answer");
            let h = request.decode_header().unwrap();
            let sss = json::from_slice("SyncStateSet", &request.body).unwrap();
            self.0.try_send((h, sss)).unwrap();
            None
        })
    }
}

async fn notice_box() -> (String, RemotingServer, mpsc::Receiver<Notice>) {
    let (tx, rx) = mpsc::channel(16);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = RemotingServer::start(
        listener,
        std::sync::Arc::new(NoticeBox(tx)),
        ServerConfig::default(),
        Vec::new(),
    );
    (server.local_addr().to_string(), server, rx)
}

async fn next_notice(rx: &mut mpsc::Receiver<Notice>) -> Notice {
    tokio::time::timeout(Duration::from_secs(30), rx.recv())
        .await
        .expect("a role change notice")
        .expect("the notice box is open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elections_are_pushed_to_the_alive_brokers() {
    let mut q = Quorum::start().await;
    let client = RemotingClient::new(ClientConfig::default(), None);
    let (addr1, server1, mut box1) = notice_box().await;
    let (addr2, server2, mut box2) = notice_box().await;
    assert_eq!(register_at(&client, &q, Some(&addr1)).await, 1);
    assert_eq!(register_at(&client, &q, Some(&addr2)).await, 2);
    heartbeat(&client, &q, 1, 100).await;
    heartbeat(&client, &q, 2, 100).await;
    // The first election, on request: both brokers are told.
    let elect = ElectMasterRequestHeader {
        cluster_name: "c".into(),
        broker_name: "b".into(),
        broker_id: 1,
        designate_elect: Some(false),
        invoke_time: None,
    };
    let resp = call(
        &client,
        &q,
        RemotingCommand::request_with_header(request_code::CONTROLLER_ELECT_MASTER, &elect),
    )
    .await;
    assert_eq!(resp.code, response_code::SUCCESS, "{:?}", resp.remark);
    for rx in [&mut box1, &mut box2] {
        let (h, sss) = next_notice(rx).await;
        assert_eq!((h.master_broker_id, h.master_epoch), (Some(1), Some(1)));
        assert_eq!(h.master_address.as_deref(), Some(addr1.as_str()));
        assert_eq!(h.master_ha_address.as_deref(), Some("10.0.0.1:10912"));
        assert_eq!(h.sync_state_set_epoch, Some(1));
        assert_eq!(
            (sss.sync_state_set, sss.sync_state_set_epoch),
            ([1].into(), 1)
        );
    }
    // 2 joins the SyncStateSet; then the master goes silent: the scan elects 2 and
    // tells it, without being asked.
    let alter = AlterSyncStateSetRequestHeader {
        broker_name: "b".into(),
        master_broker_id: 1,
        master_epoch: 1,
        invoke_time: None,
    };
    let body = SyncStateSet {
        sync_state_set: [1, 2].into(),
        sync_state_set_epoch: 1,
    };
    let req =
        RemotingCommand::request_with_header(request_code::CONTROLLER_ALTER_SYNC_STATE_SET, &alter)
            .with_body(json::to_vec(&body));
    let resp = call(&client, &q, req).await;
    assert_eq!(resp.code, response_code::SUCCESS, "{:?}", resp.remark);
    let mut notice = None;
    for _ in 0..300 {
        heartbeat(&client, &q, 2, 100).await;
        if let Ok(n) = box2.try_recv() {
            notice = Some(n);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (h, sss) = notice.expect("no notice of the re-election");
    assert_eq!((h.master_broker_id, h.master_epoch), (Some(2), Some(2)));
    assert_eq!(h.master_address.as_deref(), Some(addr2.as_str()));
    assert_eq!(
        (sss.sync_state_set, sss.sync_state_set_epoch),
        ([2].into(), 3)
    );
    let (info, _) = replica_info(&client, &q).await;
    assert_eq!(
        (info.master_broker_id, info.master_epoch),
        (Some(2), Some(2))
    );
    for i in 0..3 {
        q.stop(i).await;
    }
    server1.shutdown().await;
    server2.shutdown().await;
    client.shutdown().await;
}
