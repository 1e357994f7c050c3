//! Process figures from Linux `/proc`: memory (`status`), CPU time (`stat`), bytes
//! written to storage (`io`), and the process listening on a TCP port (`net/tcp*` and
//! `fd/`), so that a broker on the same machine is found without being told its pid.

use std::path::Path;

/// Kernel clock ticks per second of `utime`/`stime` (USER_HZ, 100 on every Linux
/// architecture that Rust targets).
const CLOCK_TICKS: f64 = 100.0;

/// One reading of a process.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcSample {
    /// `RssAnon`: anonymous resident memory (heap, stacks), KiB.
    pub rss_anon_kib: u64,
    /// `VmRSS`, KiB.
    pub vm_rss_kib: u64,
    /// `VmHWM`: peak resident set since the process started, KiB.
    pub vm_hwm_kib: u64,
    /// User + system CPU time, seconds.
    pub cpu_secs: f64,
    /// `write_bytes` of `/proc/PID/io` (what reached the block layer); `None` when not
    /// readable.
    pub write_bytes: Option<u64>,
}

/// `(RssAnon, VmRSS, VmHWM)` in KiB from `/proc/PID/status`.
pub fn parse_status(text: &str) -> (u64, u64, u64) {
    let mut out = (0, 0, 0);
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let kib = || {
            value
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        match key {
            "RssAnon" => out.0 = kib(),
            "VmRSS" => out.1 = kib(),
            "VmHWM" => out.2 = kib(),
            _ => {}
        }
    }
    out
}

/// User + system CPU seconds from `/proc/PID/stat`. The command name (field 2) is in
/// parentheses and may hold spaces, so fields are counted after the last `)`.
pub fn parse_stat(text: &str) -> Option<f64> {
    let rest = &text[text.rfind(')')? + 1..];
    // After ")": state(3) ppid(4) ... utime(14) stime(15).
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / CLOCK_TICKS)
}

/// `write_bytes` from `/proc/PID/io`.
pub fn parse_io(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Reads `/proc/<pid>/...` (`pid` `None`: this process).
pub fn sample(pid: Option<u32>) -> std::io::Result<ProcSample> {
    let dir = match pid {
        Some(p) => format!("/proc/{p}"),
        None => "/proc/self".to_owned(),
    };
    let dir = Path::new(&dir);
    let (rss_anon_kib, vm_rss_kib, vm_hwm_kib) =
        parse_status(&std::fs::read_to_string(dir.join("status"))?);
    let cpu_secs = parse_stat(&std::fs::read_to_string(dir.join("stat"))?).unwrap_or(0.0);
    let write_bytes = std::fs::read_to_string(dir.join("io"))
        .ok()
        .and_then(|t| parse_io(&t));
    Ok(ProcSample {
        rss_anon_kib,
        vm_rss_kib,
        vm_hwm_kib,
        cpu_secs,
        write_bytes,
    })
}

/// Socket inodes listening on `port` in a `/proc/net/tcp` or `tcp6` table.
pub fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    const LISTEN: &str = "0A";
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let local_port = f.get(1)?.rsplit(':').next()?;
            let local_port = u16::from_str_radix(local_port, 16).ok()?;
            (local_port == port && *f.get(3)? == LISTEN)
                .then(|| f.get(9)?.parse().ok())
                .flatten()
        })
        .collect()
}

/// The process listening on TCP `port` on this machine, if it can be seen (needs the
/// right to read the other process's `fd/`).
pub fn listening_pid(port: u16) -> Option<u32> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(table) {
            inodes.extend(listening_inodes(&text, port));
        }
    }
    if inodes.is_empty() {
        return None;
    }
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(target) = std::fs::read_link(fd.path()) {
                if wanted.iter().any(|w| target.as_os_str() == w.as_str()) {
                    return Some(pid);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATUS: &str = "Name:\tmqbroker\nUmask:\t0022\nState:\tS (sleeping)\n\
        VmPeak:\t 1234567 kB\nVmHWM:\t  300000 kB\nVmRSS:\t  250000 kB\n\
        RssAnon:\t   81234 kB\nRssFile:\t  168766 kB\nRssShmem:\t       0 kB\nThreads:\t5\n";

    #[test]
    fn status_gives_memory_in_kib() {
        assert_eq!(parse_status(STATUS), (81_234, 250_000, 300_000));
        assert_eq!(parse_status("garbage"), (0, 0, 0));
    }

    #[test]
    fn stat_counts_fields_after_the_command_name() {
        // The command name holds spaces and a ')' of its own.
        let stat = "4242 (my (weird) cmd) S 1 4242 4242 0 -1 4194560 1000 0 0 0 \
                    250 75 0 0 20 0 5 0 12345 1000000 2000 18446744073709551615";
        assert_eq!(parse_stat(stat), Some(3.25));
        assert_eq!(parse_stat("4242 (x) S 1"), None);
        assert_eq!(parse_stat("no parens"), None);
    }

    #[test]
    fn io_gives_write_bytes() {
        let io = "rchar: 100\nwchar: 200\nsyscr: 3\nsyscw: 4\nread_bytes: 4096\n\
                  write_bytes: 1048576\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_io(io), Some(1_048_576));
        assert_eq!(parse_io("rchar: 1\n"), None);
    }

    #[test]
    fn listening_sockets_are_found_by_port() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:2A9F 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0000000000000000 100 0 0 10 0\n\
   1: 0100007F:2A9F 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 222 1 0000000000000000 20 4 30 10 -1\n\
   2: 00000000:2694 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 333 1 0000000000000000 100 0 0 10 0\n";
        // 0x2A9F = 10911: the listener, not the established connection.
        assert_eq!(listening_inodes(table, 10911), [111]);
        assert_eq!(listening_inodes(table, 9876), [333]);
        assert!(listening_inodes(table, 1).is_empty());
    }

    #[test]
    fn this_process_can_be_sampled() {
        let s = sample(None).unwrap();
        assert!(s.vm_rss_kib > 0);
        assert!(s.vm_hwm_kib >= s.vm_rss_kib);
    }

    #[test]
    fn the_listener_of_a_bound_port_is_this_process() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert_eq!(listening_pid(port), Some(std::process::id()));
    }
}
