//! Three controllers with `aclEnable` on real sockets: they sign their Raft messages
//! with their own account (one for the quorum, or one each listed in
//! `controllerAccessKeys`) and still elect a leader, while Raft messages signed by
//! any other account, admins included, are refused; every request needs a signature,
//! reads any account, and changes to a broker group an admin account that lists the
//! group under `brokerNames`.

mod common;

use std::time::Duration;

use vostok_controller::{Controller, ControllerConfig};
use vostok_remoting::auth::{SessionCredentials, ACCESS_KEY};
use vostok_remoting::protocol::header::{
    ElectMasterRequestHeader, GetMetaDataResponseHeader, GetNextBrokerIdRequestHeader,
};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::{ClientConfig, RemotingClient, RemotingCommand};

const T: Duration = Duration::from_secs(3);

const ACCOUNTS: &str = "accounts:
  - accessKey: controllers
    secretKey: controllers-secret
    admin: true
  - accessKey: broker-a-1
    secretKey: broker-a-secret
    admin: true
    brokerNames:
      - broker-a
  - accessKey: reader-1
    secretKey: reader-secret
  - accessKey: ops-admin
    secretKey: ops-secret
    admin: true
  - accessKey: controller-0
    secretKey: controller-0-secret
    admin: true
  - accessKey: controller-1
    secretKey: controller-1-secret
    admin: true
  - accessKey: controller-2
    secretKey: controller-2-secret
    admin: true
";

/// Who the controllers sign their Raft messages as.
#[derive(Clone, Copy)]
enum Identities {
    /// One account for the quorum (`controllers`), the default list.
    Shared,
    /// One account each (`controller-N`), listed in `controllerAccessKeys`.
    OnePerController,
}

struct Quorum {
    _dirs: Vec<tempfile::TempDir>,
    _home: tempfile::TempDir,
    addrs: Vec<String>,
    nodes: Vec<Controller>,
}

async fn start(identities: Identities) -> Quorum {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join("conf")).unwrap();
    std::fs::write(home.path().join("conf/plain_acl.yml"), ACCOUNTS).unwrap();
    let (listeners, addrs) = common::bind_peers(3).await;
    let peers = common::peers(&addrs);
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut nodes = Vec::new();
    for (i, l) in listeners.into_iter().enumerate() {
        let mut c = ControllerConfig {
            store_path: dirs[i].path().to_owned(),
            self_id: format!("n{i}"),
            raft_heartbeat_interval: Duration::from_millis(100),
            raft_election_timeout: Duration::from_millis(500),
            ..ControllerConfig::default()
        };
        let (own_key, own_secret) = (format!("controller-{i}"), format!("controller-{i}-secret"));
        let mut settings = vec![
            ("controllerDLegerPeers", peers.as_str()),
            ("aclEnable", "true"),
            ("rocketmqHome", home.path().to_str().unwrap()),
        ];
        match identities {
            Identities::Shared => settings.extend([
                ("accessKey", "controllers"),
                ("secretKey", "controllers-secret"),
            ]),
            Identities::OnePerController => settings.extend([
                ("accessKey", own_key.as_str()),
                ("secretKey", own_secret.as_str()),
                (
                    "controllerAccessKeys",
                    "controller-0,controller-1,controller-2",
                ),
            ]),
        }
        for (k, v) in settings {
            assert!(c.apply_property(k, v).unwrap(), "{k} is a controller key");
        }
        nodes.push(Controller::start(c, l).await.unwrap());
    }
    Quorum {
        _dirs: dirs,
        _home: home,
        addrs,
        nodes,
    }
}

fn client() -> RemotingClient {
    RemotingClient::new(ClientConfig::default(), None)
}

/// `request` signed as `ak`/`sk`.
fn signed(mut request: RemotingCommand, ak: &str, sk: &str) -> RemotingCommand {
    SessionCredentials::new(ak, sk).sign(&mut request);
    request
}

fn metadata() -> RemotingCommand {
    RemotingCommand::request(request_code::CONTROLLER_GET_METADATA_INFO)
}

/// The leader, asked with the reader's account (any account may read).
async fn leader(client: &RemotingClient, q: &Quorum) -> String {
    for _ in 0..200 {
        for addr in &q.addrs {
            let req = signed(metadata(), "reader-1", "reader-secret");
            if let Ok(resp) = client.invoke_sync(addr, req, T).await {
                assert_eq!(resp.code, response_code::SUCCESS, "{:?}", resp.remark);
                let h: GetMetaDataResponseHeader = resp.decode_header().unwrap();
                if h.is_leader {
                    return addr.clone();
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no controller leader: the controllers' signed Raft messages were refused?");
}

fn next_id(broker_name: &str) -> RemotingCommand {
    let h = GetNextBrokerIdRequestHeader {
        cluster_name: "c".into(),
        broker_name: broker_name.into(),
    };
    RemotingCommand::request_with_header(request_code::CONTROLLER_GET_NEXT_BROKER_ID, &h)
}

fn elect(broker_name: &str) -> RemotingCommand {
    let h = ElectMasterRequestHeader {
        cluster_name: "c".into(),
        broker_name: broker_name.into(),
        broker_id: 1,
        designate_elect: Some(true),
        invoke_time: None,
    };
    RemotingCommand::request_with_header(request_code::CONTROLLER_ELECT_MASTER, &h)
}

async fn answer(client: &RemotingClient, addr: &str, req: RemotingCommand) -> RemotingCommand {
    client.invoke_sync(addr, req, T).await.unwrap()
}

/// The leader's answer, asking again (as brokers do) while leadership settles.
async fn from_leader(client: &RemotingClient, q: &Quorum, req: RemotingCommand) -> RemotingCommand {
    for _ in 0..100 {
        let resp = answer(client, &leader(client, q).await, req.clone()).await;
        if resp.code != response_code::CONTROLLER_NOT_LEADER {
            return resp;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no controller kept its leadership long enough to answer");
}

fn assert_refused(resp: &RemotingCommand, says: &str) {
    assert_eq!(resp.code, response_code::NO_PERMISSION, "{:?}", resp.remark);
    let remark = resp.remark.as_deref().unwrap_or("");
    assert!(remark.contains(says), "{remark}");
    assert!(
        !remark.contains("secret"),
        "no secret in a remark: {remark}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_is_signed_and_groups_belong_to_their_accounts() {
    let q = start(Identities::Shared).await;
    let client = client();
    let leader = leader(&client, &q).await;

    // Unsigned, unknown key, wrong secret: refused, reads included.
    let unsigned = answer(&client, &leader, metadata()).await;
    assert_refused(&unsigned, "");
    let mut unknown = metadata();
    unknown.ext_fields.insert(ACCESS_KEY, "nobody-1");
    assert_refused(
        &answer(&client, &leader, signed(unknown, "nobody-1", "x")).await,
        "nobody-1",
    );
    let wrong = signed(metadata(), "reader-1", "reader-secreT");
    assert_refused(&answer(&client, &leader, wrong).await, "");

    // A non-admin account reads but changes nothing.
    let by_reader = signed(elect("broker-a"), "reader-1", "reader-secret");
    assert_refused(&answer(&client, &leader, by_reader).await, "reader");

    // A broker's account acts for its own group only.
    let own = signed(next_id("broker-a"), "broker-a-1", "broker-a-secret");
    let resp = from_leader(&client, &q, own).await;
    assert_eq!(resp.code, response_code::SUCCESS, "{:?}", resp.remark);
    let other = signed(next_id("broker-b"), "broker-a-1", "broker-a-secret");
    assert_refused(&answer(&client, &leader, other).await, "broker-b");
    let reroute = signed(elect("broker-b"), "broker-a-1", "broker-a-secret");
    assert_refused(&answer(&client, &leader, reroute).await, "broker-b");

    for node in q.nodes {
        node.shutdown().await;
    }
}

/// A vote for node 2 at a term far above the quorum's: a leader that took it would
/// step down.
fn forged_vote() -> RemotingCommand {
    let body = r#"{"vote":{"leader_id":{"term":1000000,"node_id":2},"committed":false},"last_log_id":null}"#;
    RemotingCommand::request(request_code::RAFT_VOTE).with_body(body.as_bytes().to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raft_messages_are_taken_only_from_the_controllers_own_accounts() {
    // One account per controller: the quorum forms on the listed keys.
    let q = start(Identities::OnePerController).await;
    let client = client();
    let leading = leader(&client, &q).await;
    let raft_codes = [
        request_code::RAFT_VOTE,
        request_code::RAFT_APPEND_ENTRIES,
        request_code::RAFT_INSTALL_SNAPSHOT,
    ];
    for code in raft_codes {
        let mut request = forged_vote();
        request.code = code;
        // Admins that are not controllers: the operator's, a broker's.
        for (ak, sk) in [
            ("ops-admin", "ops-secret"),
            ("broker-a-1", "broker-a-secret"),
        ] {
            for addr in &q.addrs {
                let resp = answer(&client, addr, signed(request.clone(), ak, sk)).await;
                assert_refused(&resp, ak);
                assert!(
                    resp.remark().contains("controllerAccessKeys"),
                    "{}",
                    resp.remark()
                );
            }
        }
        // A controller's key with a wrong secret, and no signature at all.
        let forged = signed(request.clone(), "controller-1", "guessed");
        assert_refused(&answer(&client, &leading, forged).await, "controller-1");
        assert_refused(&answer(&client, &leading, request.clone()).await, "signed");
    }
    // The quorum still has a leader.
    leader(&client, &q).await;
    // A controller's own account gets through to Raft (this body is no snapshot).
    let mut request = forged_vote();
    request.code = request_code::RAFT_INSTALL_SNAPSHOT;
    let by_controller = signed(request, "controller-0", "controller-0-secret");
    let resp = answer(&client, &leading, by_controller).await;
    assert_eq!(
        resp.code,
        response_code::CONTROLLER_INVALID_REQUEST,
        "{:?}",
        resp.remark
    );
    for node in q.nodes {
        node.shutdown().await;
    }
}
