//! What the harness asks of the kernel: `ip` commands, the names it gives its
//! namespaces and interfaces, the subnet it claims, and the removal of what a dead
//! test process left behind.
//!
//! Names carry the owning test process's pid so that leftovers can be told from the
//! networks of live test processes:
//!
//! | object                    | name                          | example            |
//! |---------------------------|-------------------------------|--------------------|
//! | host network namespace    | `vktest-<pid>-<net>-<host>`   | `vktest-4711-0-ns` |
//! | bridge (root namespace)   | `vkb<pid36>-<net36>`          | `vkb3nz-0`         |
//! | host's veth, bridge side  | `vkv<pid36>-<net36>-<host36>` | `vkv3nz-0-1`       |
//!
//! (`36` = base 36, which keeps interface names within Linux's 15 characters.) Inside
//! its namespace each host's end of the veth pair is `eth0`.

use std::fs::File;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(super) const NETNS_PREFIX: &str = "vktest-";
const BRIDGE_PREFIX: &str = "vkb";
const VETH_PREFIX: &str = "vkv";
/// Subnets are `10.<FIRST_OCTET2 + i / 256>.<i % 256>.0/24` for `i < SUBNETS`.
const FIRST_OCTET2: u32 = 200;
const SUBNETS: u32 = 32 * 256;

/// The `ip` program; `/usr/sbin` is not on every test runner's `PATH`.
pub(super) fn ip_program() -> &'static str {
    ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("ip")
}

/// Runs `ip args...`; the error carries the command and its stderr.
pub(super) fn ip(args: &[&str]) -> Result<String, String> {
    let output = Command::new(ip_program())
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", ip_program()))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!(
            "ip {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// Runs `ip args...` in a destructor: failures are reported, never raised.
pub(super) fn ip_quietly(args: &[&str]) {
    if let Err(e) = ip(args) {
        eprintln!("netns teardown: {e}");
    }
}

fn base36(mut n: u32) -> String {
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(digits[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).expect("ASCII digits")
}

/// The names of one network's objects.
#[derive(Clone, Debug)]
pub(super) struct Names {
    pid: u32,
    /// Per-process network number, below 36² so that it fits two base-36 digits.
    net: u32,
}

impl Names {
    pub(super) fn new(net: u32) -> Names {
        Names {
            pid: std::process::id(),
            net: net % (36 * 36),
        }
    }

    pub(super) fn bridge(&self) -> String {
        format!("{BRIDGE_PREFIX}{}-{}", base36(self.pid), base36(self.net))
    }

    pub(super) fn veth(&self, host: u32) -> String {
        format!(
            "{VETH_PREFIX}{}-{}-{}",
            base36(self.pid),
            base36(self.net),
            base36(host)
        )
    }

    /// Host names are kept to `[A-Za-z0-9_-]`, which `ip netns` accepts everywhere.
    pub(super) fn netns(&self, host: &str) -> String {
        let host: String = host
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        format!("{NETNS_PREFIX}{}-{}-{host}", self.pid, self.net)
    }
}

/// The pid that owns a harness object, from its name; `None` for foreign names.
fn owner(name: &str) -> Option<u32> {
    if let Some(rest) = name.strip_prefix(NETNS_PREFIX) {
        return rest.split('-').next()?.parse().ok();
    }
    let rest = name
        .strip_prefix(BRIDGE_PREFIX)
        .or_else(|| name.strip_prefix(VETH_PREFIX))?;
    u32::from_str_radix(rest.split('-').next()?, 36).ok()
}

fn is_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Pids of the processes in network namespace `netns`.
pub(super) fn pids_in(netns: &str) -> Vec<u32> {
    ip(&["netns", "pids", netns])
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// SIGKILL to every process in `netns`.
pub(super) fn kill_all_in(netns: &str) {
    for pid in pids_in(netns) {
        // SAFETY: kill(2) on a pid; a pid that is gone meanwhile is an ESRCH error.
        unsafe {
            libc::kill(pid as i32, libc::SIGKILL);
        }
    }
}

/// Removes the namespaces (killing their processes) and interfaces whose owner is
/// stale according to `stale(pid)`.
pub(super) fn remove_owned_by(stale: impl Fn(u32) -> bool) {
    let namespaces = ip(&["netns", "list"]).unwrap_or_default();
    let namespaces: Vec<&str> = namespaces
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| owner(n).is_some_and(&stale))
        .collect();
    for netns in &namespaces {
        kill_all_in(netns);
    }
    let links: Vec<String> = std::fs::read_dir("/sys/class/net")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| owner(n).is_some_and(&stale))
        .collect();
    // Veths before bridges: deleting one end deletes both.
    for link in links.iter().filter(|l| l.starts_with(VETH_PREFIX)) {
        ip_quietly(&["link", "del", link]);
    }
    for link in links.iter().filter(|l| l.starts_with(BRIDGE_PREFIX)) {
        ip_quietly(&["link", "del", link]);
    }
    for netns in namespaces {
        ip_quietly(&["netns", "del", netns]);
    }
}

/// Removes what test processes that are no longer running left behind (a test
/// process killed with SIGKILL runs no destructor).
pub fn remove_leftovers() {
    remove_owned_by(|pid| !is_alive(pid));
    remove_unheld_locks();
}

/// Subnet lock files nobody holds: a dead process's.
fn remove_unheld_locks() {
    let files = std::fs::read_dir(lock_dir())
        .into_iter()
        .flatten()
        .flatten();
    for path in files.map(|e| e.path()) {
        if let Ok(Some(_held)) = lock(&path) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

fn lock_dir() -> PathBuf {
    std::env::temp_dir().join("vostok-netns")
}

/// What this process left behind, besides dead ones' leftovers: only safe before this
/// process created any network (its pid may be a dead process's, reused).
pub(super) fn remove_leftovers_at_start() {
    let me = std::process::id();
    remove_owned_by(|pid| pid == me || !is_alive(pid));
    remove_unheld_locks();
}

/// A `10.a.b.0/24` held for one network: a lock file under the temp dir, locked with
/// flock(2), which the kernel releases when the process dies however it dies. The
/// holder removes the file when done, so that files do not pile up.
pub(super) struct Subnet {
    pub(super) prefix: [u8; 3],
    path: PathBuf,
    _lock: File,
}

impl Drop for Subnet {
    fn drop(&mut self) {
        // Removed while still locked: whoever opened it meanwhile sees a file that is
        // no longer at `path` once it gets the lock, and tries again.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Locks the file at `path`, created if need be; `None` if another process holds it.
fn lock(path: &Path) -> Result<Option<File>, String> {
    let file = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // SAFETY: flock(2) on a descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Ok(None);
    }
    // The holder before may have removed the file after this one opened it: the lock
    // counts only on the file that is at `path` now.
    let held = file.metadata().map(|m| m.ino()).ok();
    let current = std::fs::metadata(path).map(|m| m.ino()).ok();
    Ok(Some(file).filter(|_| held.is_some() && held == current))
}

impl Subnet {
    pub(super) fn addr(&self, host: u8) -> Ipv4Addr {
        let [a, b, c] = self.prefix;
        Ipv4Addr::new(a, b, c, host)
    }

    /// Claims a free subnet, starting the search at `seed`: one no other harness holds
    /// and no route of the root namespace overlaps.
    pub(super) fn claim(seed: u32) -> Result<Subnet, String> {
        let dir = lock_dir();
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let routes = ip(&["-4", "-o", "route", "show", "table", "all"])?;
        let routes: Vec<(u32, u32)> = routes.lines().filter_map(route_prefix).collect();
        for i in 0..SUBNETS {
            let index = seed.wrapping_add(i) % SUBNETS;
            let prefix = [10, (FIRST_OCTET2 + index / 256) as u8, (index % 256) as u8];
            let net = u32::from_be_bytes([prefix[0], prefix[1], prefix[2], 0]);
            if routes.iter().any(|&(r, len)| overlaps(net, 24, r, len)) {
                continue;
            }
            let path = dir.join(format!("10.{}.{}.0.lock", prefix[1], prefix[2]));
            if let Some(lock) = lock(&path)? {
                return Ok(Subnet {
                    prefix,
                    path,
                    _lock: lock,
                });
            }
        }
        Err("no free 10.x.y.0/24 subnet".to_owned())
    }
}

/// The destination of one line of `ip -o route show`, as (network, prefix length).
fn route_prefix(line: &str) -> Option<(u32, u32)> {
    const TYPES: &[&str] = &[
        "unicast",
        "local",
        "broadcast",
        "multicast",
        "anycast",
        "blackhole",
        "unreachable",
        "prohibit",
        "throw",
        "nat",
    ];
    let mut tokens = line.split_whitespace();
    let mut dest = tokens.next()?;
    if TYPES.contains(&dest) {
        dest = tokens.next()?;
    }
    if dest == "default" {
        return None;
    }
    let (addr, len) = dest.split_once('/').unwrap_or((dest, "32"));
    let addr: Ipv4Addr = addr.parse().ok()?;
    Some((u32::from(addr), len.parse().ok().filter(|l| *l <= 32)?))
}

fn overlaps(a: u32, a_len: u32, b: u32, b_len: u32) -> bool {
    let len = a_len.min(b_len);
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    a & mask == b & mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_linux_interface_names_and_name_their_owner() {
        let names = Names {
            pid: 4_194_304,
            net: 1295,
        };
        assert_eq!(names.bridge(), "vkb2hwcg-zz");
        assert_eq!(names.veth(253), "vkv2hwcg-zz-71");
        assert!(names.veth(1295).len() <= 15);
        assert_eq!(names.netns("a b/c"), "vktest-4194304-1295-a_b_c");
        for name in [names.bridge(), names.veth(3), names.netns("x")] {
            assert_eq!(owner(&name), Some(4_194_304), "{name}");
        }
        assert_eq!(owner("vkc-broker-a"), None);
        assert_eq!(owner("eth0"), None);
    }

    #[test]
    fn route_lines_give_their_destination() {
        let net = |s: &str| u32::from(s.parse::<Ipv4Addr>().unwrap());
        assert_eq!(route_prefix("default via 10.0.0.1 dev eth0"), None);
        assert_eq!(
            route_prefix("10.200.3.0/24 dev vkb1-0 proto kernel scope link src 10.200.3.254"),
            Some((net("10.200.3.0"), 24))
        );
        assert_eq!(
            route_prefix("local 10.200.3.254 dev vkb1-0 table local proto kernel"),
            Some((net("10.200.3.254"), 32))
        );
        assert!(overlaps(net("10.200.3.0"), 24, net("10.0.0.0"), 8));
        assert!(!overlaps(net("10.200.3.0"), 24, net("10.200.4.0"), 24));
        assert!(overlaps(net("10.200.3.0"), 24, net("10.200.3.254"), 32));
    }
}
