//! `mqadmin getControllerMetaData`, `getSyncStateSet` and `electMaster` against a
//! real controller (in this process, a quorum of one) holding a broker group whose
//! three brokers are played by this test: ids, registration, heartbeats.

use std::time::Duration;

use vostok_controller::{Controller, ControllerConfig};
use vostok_remoting::protocol::header::{
    ApplyBrokerIdRequestHeader, BrokerHeartbeatRequestHeader, ElectMasterRequestHeader,
    RegisterBrokerToControllerRequestHeader,
};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::{ClientConfig, RemotingClient, RemotingCommand};

const T: Duration = Duration::from_secs(5);

async fn mqadmin(args: &[&str]) -> (bool, String) {
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_mqadmin"))
        .args(args)
        .args(["-n", "127.0.0.1:1"])
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("mqadmin finishes")
        .expect("mqadmin runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

async fn call(client: &RemotingClient, addr: &str, req: RemotingCommand) -> RemotingCommand {
    for _ in 0..100 {
        let resp = client.invoke_sync(addr, req.clone(), T).await.unwrap();
        if resp.code != response_code::CONTROLLER_NOT_LEADER {
            return resp;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the controller never led");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_verbs_show_and_change_the_master() {
    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let mut config = ControllerConfig {
        store_path: dir.path().to_owned(),
        raft_heartbeat_interval: Duration::from_millis(100),
        raft_election_timeout: Duration::from_millis(400),
        ..ControllerConfig::default()
    };
    config
        .apply_property("controllerDLegerPeers", &format!("n0-{addr}"))
        .unwrap();
    let controller = Controller::start(config, listener).await.unwrap();
    let client = RemotingClient::new(ClientConfig::default(), None);
    for id in 1..=3i64 {
        let apply = ApplyBrokerIdRequestHeader {
            cluster_name: "c".into(),
            broker_name: "broker-a".into(),
            applied_broker_id: id,
            register_check_code: format!("10.0.0.{id}:10911;1"),
        };
        let r = call(
            &client,
            &addr,
            RemotingCommand::request_with_header(request_code::CONTROLLER_APPLY_BROKER_ID, &apply),
        )
        .await;
        assert_eq!(r.code, response_code::SUCCESS);
        let reg = RegisterBrokerToControllerRequestHeader {
            cluster_name: "c".into(),
            broker_name: "broker-a".into(),
            broker_id: id,
            broker_address: format!("10.0.0.{id}:10911"),
            ha_address: None,
            invoke_time: None,
        };
        call(
            &client,
            &addr,
            RemotingCommand::request_with_header(request_code::CONTROLLER_REGISTER_BROKER, &reg),
        )
        .await;
        let hb = BrokerHeartbeatRequestHeader {
            cluster_name: "c".into(),
            broker_addr: format!("10.0.0.{id}:10911"),
            broker_name: "broker-a".into(),
            broker_id: Some(id),
            heartbeat_timeout_mills: Some(60_000),
            ..Default::default()
        };
        call(
            &client,
            &addr,
            RemotingCommand::request_with_header(request_code::BROKER_HEARTBEAT, &hb),
        )
        .await;
    }
    let elect = ElectMasterRequestHeader {
        cluster_name: "c".into(),
        broker_name: "broker-a".into(),
        broker_id: 1,
        designate_elect: Some(false),
        invoke_time: None,
    };
    let r = call(
        &client,
        &addr,
        RemotingCommand::request_with_header(request_code::CONTROLLER_ELECT_MASTER, &elect),
    )
    .await;
    assert_eq!(r.code, response_code::SUCCESS);

    let (ok, out) = mqadmin(&["getControllerMetaData", "-a", &addr]).await;
    assert!(ok, "{out}");
    assert!(out.contains("#IsLeader               : true"), "{out}");
    assert!(
        out.contains(&format!("#ControllerLeaderAddress: {addr}")),
        "{out}"
    );

    let (ok, out) = mqadmin(&["getSyncStateSet", "-a", &addr, "-b", "broker-a"]).await;
    assert!(ok, "{out}");
    let row = out.lines().find(|l| l.starts_with("broker-a")).expect(&out);
    let cells: Vec<_> = row.split_whitespace().collect();
    // name, master id, master address, epoch, SyncStateSet epoch, in sync, not in sync
    assert_eq!(
        cells[..6],
        ["broker-a", "1", "10.0.0.1:10911", "1", "1", "1"],
        "{out}"
    );
    assert_eq!(cells[6], "2,3", "{out}");

    // 3 is not in the SyncStateSet: refused; 1 is elected again with a new epoch.
    let (ok, out) = mqadmin(&[
        "electMaster",
        "-a",
        &addr,
        "-c",
        "c",
        "-b",
        "broker-a",
        "-i",
        "3",
    ])
    .await;
    assert!(!ok, "{out}");
    assert!(out.contains("CONTROLLER_ELECT_MASTER"), "{out}");
    let (ok, out) = mqadmin(&[
        "electMaster",
        "-a",
        &addr,
        "-c",
        "c",
        "-b",
        "broker-a",
        "-i",
        "1",
    ])
    .await;
    assert!(ok, "{out}");
    assert!(out.contains("#MasterEpoch  : 2"), "{out}");

    // getControllerConfig / updateControllerConfig: unclean elections switched on at
    // run time let broker 3 (alive, out of the SyncStateSet) be elected.
    let (ok, out) = mqadmin(&["getControllerConfig", "-a", &addr]).await;
    assert!(ok, "{out}");
    assert!(
        out.starts_with(&format!("============{addr}============\n")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("enableElectUncleanMaster") && l.ends_with("=  false")),
        "{out}"
    );
    let (ok, out) = mqadmin(&[
        "updateControllerConfig",
        "-a",
        &addr,
        "-k",
        "enableElectUncleanMaster",
        "-v",
        "true",
    ])
    .await;
    assert!(ok, "{out}");
    assert!(
        out.starts_with("update controller config success!"),
        "{out}"
    );
    let (ok, out) = mqadmin(&["getControllerConfig", "-a", &addr, "--json"]).await;
    assert!(ok, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect(&out);
    assert_eq!(v[addr.as_str()]["enableElectUncleanMaster"], "true", "{v}");
    let (ok, out) = mqadmin(&[
        "updateControllerConfig",
        "-a",
        &addr,
        "-k",
        "controllerStorePath",
        "-v",
        "/tmp",
    ])
    .await;
    assert!(!ok && out.contains("read at start only"), "{out}");
    let (ok, out) = mqadmin(&[
        "electMaster",
        "-a",
        &addr,
        "-c",
        "c",
        "-b",
        "broker-a",
        "-i",
        "3",
        "--json",
    ])
    .await;
    assert!(ok, "unclean elections are on now: {out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect(&out);
    assert_eq!(v["masterBrokerId"], 3, "{v}");

    // cleanBrokerMetadata: a living broker only with -l.
    let clean = |living: bool| {
        let mut args = vec![
            "cleanBrokerMetadata",
            "-a",
            addr.as_str(),
            "--brokerName",
            "broker-a",
            "-b",
            "2",
            "-c",
            "c",
        ];
        if living {
            args.push("-l");
        }
        args
    };
    let (ok, out) = mqadmin(&clean(false)).await;
    assert!(!ok && out.contains("alive"), "{out}");
    let (ok, out) = mqadmin(&clean(true)).await;
    assert!(ok, "{out}");
    assert_eq!(
        out,
        "clear broker broker-a metadata from controller success!\n"
    );
    let mut again = clean(true);
    again.push("--json");
    let (ok, out) = mqadmin(&again).await;
    assert!(ok, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect(&out);
    assert_eq!(v[0]["addr"], addr.as_str(), "{v}");
    let (ok, out) = mqadmin(&["getSyncStateSet", "-a", &addr, "-b", "broker-a", "--json"]).await;
    assert!(ok, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect(&out);
    let group = &v["replicasInfoTable"]["broker-a"];
    let ids: Vec<i64> = ["inSyncReplicas", "notInSyncReplicas"]
        .iter()
        .flat_map(|k| group[k].as_array().cloned().unwrap_or_default())
        .filter_map(|r| r["brokerId"].as_i64())
        .collect();
    assert!(!ids.contains(&2) && ids.contains(&3), "{v}");
    client.shutdown().await;
    controller.shutdown().await;
}
