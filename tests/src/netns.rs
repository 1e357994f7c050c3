//! Multi-host tests on one machine: each host is a Linux network namespace with its
//! own IPv4 address, wired by a veth pair to a bridge in the root namespace.
//!
//! ```text
//!   root namespace (the test, its clients)     host namespaces (vktest-...)
//!   10.a.b.254 on bridge vkb.. ──┬── veth vkv..-1 ─── eth0 10.a.b.1  (namesrv)
//!                                ├── veth vkv..-2 ─── eth0 10.a.b.2  (broker)
//!                                └── ...
//! ```
//!
//! The test process stays in the root namespace and reaches every host at its 10.x
//! address (the bridge has the root namespace's address on the subnet); the processes
//! under test run in their host's namespace (`ip netns exec`) on the default ports.
//! [`Host::link_down`] takes the host's bridge port down: packets to and from it are
//! dropped without a reply, as in a network partition, until [`Host::link_up`].
//!
//! Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2: [`Network::new`] returns
//! `None` with a message otherwise, unless `VOSTOK_REQUIRE_NETNS` is set (CI), when it
//! panics. Names carry the test process's pid and a per-process counter, subnets are
//! claimed with a lock file, so tests run in parallel within and across processes;
//! dropping the [`Network`] (also when the test panics) kills its processes and
//! removes its namespaces, veths and bridge, and the first network of a process
//! removes what dead test processes left (names and locks: `netns/ip.rs`).

mod ip;
mod process;

use std::ffi::OsStr;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, Once};

pub use ip::remove_leftovers;
pub use process::{HostBroker, HostNamesrv};

use crate::BrokerOptions;
use ip::{ip, ip_quietly, Names, Subnet};

/// The root namespace's address on every network's subnet (`10.a.b.254`).
const GATEWAY: u8 = 254;

/// A bridge and the hosts on it; dropping it tears everything down.
pub struct Network {
    name: String,
    names: Names,
    subnet: Subnet,
    bridge: String,
    hosts: Mutex<Vec<Host>>,
}

/// One host: a network namespace with one address. Cheap to clone; it stays valid as
/// long as its [`Network`].
#[derive(Clone, Debug)]
pub struct Host {
    name: String,
    netns: String,
    veth: String,
    ip: Ipv4Addr,
}

fn skip(why: &str) -> Option<Network> {
    if std::env::var_os("VOSTOK_REQUIRE_NETNS").is_some() {
        panic!("VOSTOK_REQUIRE_NETNS is set but network namespaces are unavailable: {why}");
    }
    eprintln!("skipping: needs root and ip netns ({why})");
    None
}

/// Whether a failed `ip` command failed for want of privileges, not for a harness bug.
fn is_permission_error(error: &str) -> bool {
    ["Operation not permitted", "Permission denied", "cannot run"]
        .iter()
        .any(|s| error.contains(s))
}

impl Network {
    /// A new bridge with no hosts yet; `None` (after saying why on stderr) when this
    /// process may not create network namespaces. `name` only labels messages.
    pub fn new(name: &str) -> Option<Network> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        static LEFTOVERS: Once = Once::new();
        // SAFETY: geteuid(2) has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return skip("not running as root");
        }
        if let Err(e) = ip(&["-V"]) {
            return skip(&e);
        }
        LEFTOVERS.call_once(|| {
            ip::remove_leftovers_at_start();
            warn_if_bridges_are_filtered();
        });
        let names = Names::new(COUNTER.fetch_add(1, Ordering::Relaxed));
        let seed = std::process::id()
            .wrapping_mul(131)
            .wrapping_add(names_seed(&names));
        let subnet = Subnet::claim(seed).unwrap_or_else(|e| panic!("network {name}: {e}"));
        let bridge = names.bridge();
        match ip(&["link", "add", "name", &bridge, "type", "bridge"]) {
            Ok(_) => {}
            Err(e) if is_permission_error(&e) => return skip(&e),
            Err(e) => panic!("network {name}: {e}"),
        }
        // From here on, dropping `network` removes what exists.
        let network = Network {
            name: name.to_owned(),
            names,
            subnet,
            bridge,
            hosts: Mutex::default(),
        };
        let probe = network.names.netns("probe");
        match ip(&["netns", "add", &probe]) {
            Ok(_) => ip_quietly(&["netns", "del", &probe]),
            Err(e) if is_permission_error(&e) => return skip(&e),
            Err(e) => panic!("network {name}: {e}"),
        }
        let gateway = format!("{}/24", network.subnet.addr(GATEWAY));
        network.run(&["addr", "add", &gateway, "dev", &network.bridge]);
        network.run(&["link", "set", &network.bridge, "up"]);
        Some(network)
    }

    fn run(&self, args: &[&str]) {
        if let Err(e) = ip(args) {
            panic!("network {}: {e}", self.name);
        }
    }

    /// Adds a host: a namespace `vktest-...-<name>` with loopback and `eth0` up, the
    /// next free address of the subnet, and its veth on the bridge.
    pub fn host(&self, name: &str) -> Host {
        let mut hosts = self.hosts.lock().unwrap_or_else(|e| e.into_inner());
        assert!(
            hosts.iter().all(|h| h.name != name),
            "network {}: host {name} exists already",
            self.name
        );
        let index = hosts.len() as u32 + 1;
        assert!(index < u32::from(GATEWAY), "at most 253 hosts per network");
        let host = Host {
            name: name.to_owned(),
            netns: self.names.netns(name),
            veth: self.names.veth(index),
            ip: self.subnet.addr(index as u8),
        };
        self.run(&["netns", "add", &host.netns]);
        // Recorded before wiring, so that teardown removes a half-built host too.
        hosts.push(host.clone());
        let (ns, veth) = (host.netns.as_str(), host.veth.as_str());
        let cidr = format!("{}/24", host.ip);
        self.run(&[
            "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns,
        ]);
        self.run(&["link", "set", veth, "master", &self.bridge, "up"]);
        self.run(&["-n", ns, "link", "set", "lo", "up"]);
        self.run(&["-n", ns, "addr", "add", &cidr, "dev", "eth0"]);
        self.run(&["-n", ns, "link", "set", "eth0", "up"]);
        host
    }

    /// The root namespace's address on the bridge: where hosts see the test's clients.
    pub fn gateway(&self) -> Ipv4Addr {
        self.subnet.addr(GATEWAY)
    }

    /// The bridge's interface name (for checks of the teardown).
    pub fn bridge(&self) -> &str {
        &self.bridge
    }
}

/// With br_netfilter's `bridge-nf-call-iptables` on, traffic between hosts crosses
/// iptables' FORWARD chain, which a DROP policy (as Docker sets) closes.
fn warn_if_bridges_are_filtered() {
    let path = "/proc/sys/net/bridge/bridge-nf-call-iptables";
    if std::fs::read_to_string(path).is_ok_and(|v| v.trim() == "1") {
        eprintln!(
            "netns: {path} is 1: iptables FORWARD rules filter traffic between hosts; \
             if hosts cannot reach each other, check that chain's policy"
        );
    }
}

/// Spreads the networks of one process over the subnet range.
fn names_seed(names: &Names) -> u32 {
    names
        .bridge()
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)))
}

impl Drop for Network {
    fn drop(&mut self) {
        let hosts = std::mem::take(self.hosts.get_mut().unwrap_or_else(|e| e.into_inner()));
        // Processes first: a namespace lives on while a process is in it.
        for host in &hosts {
            ip::kill_all_in(&host.netns);
        }
        for host in &hosts {
            ip_quietly(&["link", "del", &host.veth]);
        }
        ip_quietly(&["link", "del", &self.bridge]);
        for host in &hosts {
            ip_quietly(&["netns", "del", &host.netns]);
        }
    }
}

impl Host {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn ip(&self) -> Ipv4Addr {
        self.ip
    }

    /// `ip:port` on this host.
    pub fn addr(&self, port: u16) -> String {
        format!("{}:{port}", self.ip)
    }

    /// The network namespace's name (`ip netns exec <netns> ...`).
    pub fn netns(&self) -> &str {
        &self.netns
    }

    /// The bridge side of the host's veth pair.
    pub fn veth(&self) -> &str {
        &self.veth
    }

    /// A command that runs `program` in this host's namespace. `ip netns exec` execs
    /// it, so the child's pid is the program's own.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new(ip::ip_program());
        command
            .args(["netns", "exec", &self.netns])
            .arg(program.as_ref());
        command
    }

    /// Starts `mqnamesrv` on port 9876 of this host.
    pub fn spawn_namesrv(&self) -> HostNamesrv {
        HostNamesrv::start(self, &[])
    }

    /// Starts `mqnamesrv` on this host with extra settings (`listenPort` included).
    pub fn spawn_namesrv_with(&self, settings: &[(&str, &str)]) -> HostNamesrv {
        HostNamesrv::start(self, settings)
    }

    /// Starts `mqbroker` on this host: `brokerIP1` is the host's address, `listenPort`
    /// 10911 unless `options.settings` says otherwise. Without a name server in
    /// `options` it runs standalone, its embedded name server on this host's 9876.
    pub fn spawn_broker(&self, options: BrokerOptions) -> HostBroker {
        HostBroker::start(self, options)
    }

    /// As [`Host::spawn_broker`], with the store (`storePathRootDir`) at `store_dir`.
    pub fn spawn_broker_with_store(
        &self,
        options: BrokerOptions,
        store_dir: std::path::PathBuf,
    ) -> HostBroker {
        HostBroker::start_with_store(self, options, store_dir)
    }

    /// Cuts the host off: its bridge port goes down, so that everything it sends or is
    /// sent is dropped silently (calls time out, nothing is refused).
    pub fn link_down(&self) {
        if let Err(e) = ip(&["link", "set", &self.veth, "down"]) {
            panic!("host {}: {e}", self.name);
        }
    }

    /// Heals [`Host::link_down`].
    pub fn link_up(&self) {
        if let Err(e) = ip(&["link", "set", &self.veth, "up"]) {
            panic!("host {}: {e}", self.name);
        }
    }

    /// Pids of the processes running in this host's namespace.
    pub fn pids(&self) -> Vec<u32> {
        ip::pids_in(&self.netns)
    }

    /// SIGKILL to every process on this host, as when the machine loses power.
    pub fn crash(&self) {
        ip::kill_all_in(&self.netns)
    }

    /// Runs `f` on a thread that joined this host's network namespace: the sockets it
    /// (and threads it starts, such as a Tokio runtime's) opens are the host's, so
    /// `127.0.0.1` is the host's loopback. Panics in `f` propagate.
    pub fn run_inside<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        let path = format!("/run/netns/{}", self.netns);
        std::thread::scope(|scope| {
            let thread = scope.spawn(|| {
                let netns = std::fs::File::open(&path)
                    .unwrap_or_else(|e| panic!("host {}: {path}: {e}", self.name));
                // SAFETY: setns(2) on an open namespace file; it changes only the
                // calling thread, which is this scoped thread.
                let rc = unsafe { libc::setns(netns.as_raw_fd(), libc::CLONE_NEWNET) };
                assert_eq!(
                    rc,
                    0,
                    "setns into {path}: {}",
                    std::io::Error::last_os_error()
                );
                f()
            });
            thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }
}
