//! The network-namespace harness itself: processes run in their host's namespace
//! under their own pid, the test reaches them at their hosts' addresses, a cut link
//! makes calls time out until it heals, and everything is removed after a test ends,
//! panics, or its process is killed. Skipped (with a message) without root.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use vostok_remoting::protocol::request_code;
use vostok_remoting::protocol::response_code;
use vostok_remoting::{RemotingCommand, RemotingError};
use vostok_tests::client::TestClient;
use vostok_tests::netns::{self, Network};
use vostok_tests::BrokerOptions;

/// A call that must not be answered while a link is down: short, as it always fails.
const CUT_TIMEOUT: Duration = Duration::from_secs(2);

fn netns_inode(path: &str) -> u64 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .ino()
}

/// The names `ip netns` knows.
fn namespaces() -> HashSet<String> {
    std::fs::read_dir("/run/netns")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect()
}

fn link_exists(name: &str) -> bool {
    std::path::Path::new("/sys/class/net").join(name).exists()
}

/// Every broker request answers something; GET_BROKER_RUNTIME_INFO needs no header.
fn probe() -> RemotingCommand {
    RemotingCommand::request(request_code::GET_BROKER_RUNTIME_INFO)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_in_the_root_namespace_reaches_a_broker_host_until_its_link_is_cut() {
    let Some(net) = Network::new("harness") else {
        return;
    };
    let ns_host = net.host("namesrv");
    let broker_host = net.host("broker");
    assert_ne!(ns_host.ip(), broker_host.ip());
    let namesrv = ns_host.spawn_namesrv();
    assert_eq!(namesrv.addr, ns_host.addr(9876));
    let broker = broker_host.spawn_broker(BrokerOptions {
        namesrv: Some(namesrv.addr.clone()),
        ..Default::default()
    });
    assert_eq!(broker.addr, broker_host.addr(10911));

    // The child is the broker itself (ip netns exec execs it), in the host's namespace.
    let pid = broker.process.pid();
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).expect("broker's exe");
    assert!(
        exe.ends_with("vostok-test-broker"),
        "pid {pid} is {}",
        exe.display()
    );
    assert_eq!(
        netns_inode(&format!("/proc/{pid}/ns/net")),
        netns_inode(&format!("/run/netns/{}", broker_host.netns()))
    );
    assert_ne!(
        netns_inode(&format!("/proc/{pid}/ns/net")),
        netns_inode("/proc/self/ns/net")
    );
    assert_eq!(broker_host.pids(), vec![pid]);

    // From the root namespace: create a topic, see it routed to the broker's 10.x
    // address by the name server on the other host, send and pull a message.
    let client = TestClient::default();
    let topic = "NetnsHarnessTopic";
    let response = client.create_topic(&broker.addr, topic, 1).await;
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{}",
        response.remark()
    );
    let route = client
        .wait_for_route(&namesrv.addr, topic, |r| !r.broker_datas.is_empty())
        .await;
    let addrs = &route.broker_datas[0].broker_addrs;
    assert_eq!(addrs.get(&0), Some(&broker.addr), "{route:?}");
    let props = TestClient::properties(None, None);
    client
        .send(&broker.addr, topic, 0, "before the cut", props.clone())
        .await;
    let pulled = client.drain(&broker.addr, "harness", topic, 0, 0).await;
    let bodies: Vec<&[u8]> = pulled.iter().map(|m| &m.body[..]).collect();
    assert_eq!(bodies, [&b"before the cut"[..]]);

    // Cut: the open connection gets no answer, a new one is not refused but times out.
    broker_host.link_down();
    let cut = client
        .remoting
        .invoke_sync(&broker.addr, probe(), CUT_TIMEOUT)
        .await;
    assert!(
        matches!(cut, Err(RemotingError::Timeout { .. })),
        "open connection: {cut:?}"
    );
    let fresh = TestClient::new("fresh");
    let cut = fresh
        .remoting
        .invoke_sync(&broker.addr, probe(), CUT_TIMEOUT)
        .await;
    assert!(
        matches!(cut, Err(RemotingError::ConnectTimeout { .. })),
        "new connection: {cut:?}"
    );

    // Healed: both clients get through again, and the broker kept its data.
    broker_host.link_up();
    client
        .send(&broker.addr, topic, 0, "after the cut", props)
        .await;
    let pulled = fresh.drain(&broker.addr, "harness", topic, 0, 0).await;
    let bodies: Vec<&[u8]> = pulled.iter().map(|m| &m.body[..]).collect();
    assert_eq!(bodies, [&b"before the cut"[..], &b"after the cut"[..]]);

    // Inside the name server's host, 127.0.0.1:9876 is that name server.
    let inside = ns_host.run_inside(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            TestClient::new("inside")
                .route("127.0.0.1:9876", topic)
                .await
                .map(|r| r.broker_datas.len())
        })
    });
    assert_eq!(inside, Some(1));
}

#[test]
fn a_panicking_test_leaves_no_namespace_link_or_process_behind() {
    let mut made = None;
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let Some(net) = Network::new("panicking") else {
            return;
        };
        let host = net.host("doomed");
        let namesrv = host.spawn_namesrv();
        made = Some((
            net.bridge().to_owned(),
            host.veth().to_owned(),
            host.netns().to_owned(),
            namesrv.process.pid(),
        ));
        assert!(link_exists(net.bridge()) && link_exists(host.veth()));
        assert!(namespaces().contains(host.netns()));
        panic!("the test fails with its network up");
    }));
    let Some((bridge, veth, netns, pid)) = made else {
        return;
    };
    assert!(outcome.is_err());
    assert!(!link_exists(&bridge), "bridge {bridge} left behind");
    assert!(!link_exists(&veth), "veth {veth} left behind");
    assert!(
        !namespaces().contains(&netns),
        "namespace {netns} left behind"
    );
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "name server {pid} left running"
    );
}

/// Run by [`a_killed_test_process_leaves_what_the_next_one_removes`] in a child
/// process: builds a network with a name server, prints its names and waits to be
/// killed. Does nothing when run otherwise.
#[test]
#[ignore = "run as a child process by another test"]
fn child_holds_a_network_until_killed() {
    if std::env::var_os("VOSTOK_NETNS_CHILD").is_none() {
        return;
    }
    let Some(net) = Network::new("child") else {
        return;
    };
    let host = net.host("orphan");
    let namesrv = host.spawn_namesrv();
    println!(
        "READY {} {} {} {} {}",
        net.bridge(),
        host.veth(),
        host.netns(),
        namesrv.process.pid(),
        net.gateway()
    );
    std::thread::sleep(Duration::from_secs(120));
}

#[test]
fn a_killed_test_process_leaves_what_the_next_one_removes() {
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } != 0 || Network::new("probe").is_none() {
        eprintln!("skipping: needs root and ip netns");
        return;
    }
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "child_holds_a_network_until_killed",
            "--ignored",
            "--nocapture",
        ])
        .env("VOSTOK_NETNS_CHILD", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("child test process");
    let stdout = child.stdout.take().expect("piped stdout");
    let line = std::io::BufRead::lines(std::io::BufReader::new(stdout))
        .map_while(Result::ok)
        .find(|l| l.starts_with("READY "));
    child.kill().expect("SIGKILL to the child");
    child.wait().expect("reaped child");
    let line = line.expect("the child built its network");
    let fields: Vec<&str> = line.split_whitespace().skip(1).collect();
    let [bridge, veth, netns, pid, gateway] = fields[..] else {
        panic!("unexpected line {line:?}");
    };
    // SIGKILL ran no destructor: everything is still there, the name server too.
    assert!(link_exists(bridge) && link_exists(veth));
    assert!(namespaces().contains(netns));
    let alive = |pid: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| !stat.rsplit(')').next().unwrap_or("").starts_with(" Z"))
    };
    assert!(alive(pid), "the orphaned name server runs on");
    // The subnet's lock file, which nobody holds now.
    let subnet = gateway.rsplit_once('.').expect("an IPv4 address").0;
    let lock = std::env::temp_dir().join(format!("vostok-netns/{subnet}.0.lock"));
    assert!(lock.exists(), "{} of the child's subnet", lock.display());

    netns::remove_leftovers();
    assert!(!link_exists(bridge), "bridge {bridge} left behind");
    assert!(!link_exists(veth), "veth {veth} left behind");
    assert!(
        !namespaces().contains(netns),
        "namespace {netns} left behind"
    );
    assert!(!alive(pid), "orphaned name server {pid} still running");
    assert!(!lock.exists(), "{} left behind", lock.display());
}
