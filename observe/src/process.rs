//! The process metrics every Prometheus client library exports (`process_*`), read
//! from `/proc/self` when Prometheus scrapes; on systems without `/proc` nothing is
//! exported.
//!
//! | metric | type | value |
//! |---|---|---|
//! | `process_cpu_seconds_total` | counter | user and system CPU time |
//! | `process_resident_memory_bytes` | gauge | resident set size |
//! | `process_virtual_memory_bytes` | gauge | virtual memory size |
//! | `process_anonymous_memory_bytes` | gauge | resident anonymous memory (heap, stacks; not the mapped commitlog) |
//! | `process_open_fds` | gauge | open file descriptors |
//! | `process_max_fds` | gauge | the soft limit on them |
//! | `process_start_time_seconds` | gauge | start time, seconds since the epoch |
//! | `process_threads` | gauge | threads |

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Reads `/proc/self` at each scrape.
#[derive(Debug, Default)]
pub struct ProcessCollector;

/// What one read of `/proc/self` found; a field the system did not give is `None`.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ProcessStats {
    pub cpu_seconds: Option<f64>,
    pub resident_bytes: Option<i64>,
    pub virtual_bytes: Option<i64>,
    pub anonymous_bytes: Option<i64>,
    pub open_fds: Option<i64>,
    pub max_fds: Option<i64>,
    pub start_time_seconds: Option<f64>,
    pub threads: Option<i64>,
}

/// Clock ticks per second (`USER_HZ`).
fn clock_ticks() -> Option<f64> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sysconf has no preconditions.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        (ticks > 0).then_some(ticks as f64)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// The fields of `/proc/<pid>/stat` after the command name, which may hold spaces and
/// parentheses: `fields[0]` is field 3 (state).
fn stat_fields(stat: &str) -> Vec<&str> {
    stat.rfind(')')
        .and_then(|i| stat.get(i + 1..))
        .map(|rest| rest.split_whitespace().collect())
        .unwrap_or_default()
}

/// A `Key:   1234 kB` line of `/proc/<pid>/status`, in bytes (or the bare number).
fn status_value(status: &str, key: &str) -> Option<i64> {
    let line = status.lines().find(|l| l.split(':').next() == Some(key))?;
    let mut words = line.split(':').nth(1)?.split_whitespace();
    let n: i64 = words.next()?.parse().ok()?;
    Some(match words.next() {
        Some("kB") => n.saturating_mul(1024),
        _ => n,
    })
}

impl ProcessStats {
    /// Parses the texts of `stat`, `status`, `limits` and `/proc/stat` (boot time);
    /// `ticks` is `USER_HZ`.
    pub fn parse(
        stat: &str,
        status: &str,
        limits: &str,
        system_stat: &str,
        ticks: f64,
        open_fds: Option<i64>,
    ) -> Self {
        let fields = stat_fields(stat);
        // Fields 14 (utime), 15 (stime), 22 (starttime), 23 (vsize), 1-based.
        let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<u64>().ok());
        let cpu_seconds = field(14)
            .zip(field(15))
            .map(|(u, s)| (u + s) as f64 / ticks);
        let boot: Option<f64> = system_stat
            .lines()
            .find_map(|l| l.strip_prefix("btime "))
            .and_then(|v| v.trim().parse().ok());
        let start_time_seconds = boot
            .zip(field(22))
            .map(|(boot, start)| boot + start as f64 / ticks);
        let max_fds = limits
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .and_then(|l| {
                l.trim_start_matches("Max open files")
                    .split_whitespace()
                    .next()
            })
            .and_then(|v| v.parse().ok());
        ProcessStats {
            cpu_seconds,
            resident_bytes: status_value(status, "VmRSS"),
            virtual_bytes: field(23).map(|v| v as i64),
            anonymous_bytes: status_value(status, "RssAnon"),
            open_fds,
            max_fds,
            start_time_seconds,
            threads: status_value(status, "Threads"),
        }
    }

    /// This process, now; `None` where `/proc/self` cannot be read.
    pub fn read() -> Option<Self> {
        let ticks = clock_ticks()?;
        let read = |p: &str| std::fs::read_to_string(p).ok();
        let stat = read("/proc/self/stat")?;
        let open_fds = std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|d| d.count() as i64);
        Some(Self::parse(
            &stat,
            &read("/proc/self/status").unwrap_or_default(),
            &read("/proc/self/limits").unwrap_or_default(),
            &read("/proc/stat").unwrap_or_default(),
            ticks,
            open_fds,
        ))
    }
}

fn gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: Option<f64>,
) -> Result<(), std::fmt::Error> {
    let Some(v) = value else {
        return Ok(());
    };
    let g = ConstGauge::new(v);
    g.encode(encoder.encode_descriptor(name, help, None, g.metric_type())?)
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(s) = ProcessStats::read() else {
            return Ok(());
        };
        if let Some(cpu) = s.cpu_seconds {
            let c = ConstCounter::new(cpu);
            c.encode(encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds",
                None,
                c.metric_type(),
            )?)?;
        }
        let bytes = |v: Option<i64>| v.map(|n| n as f64);
        let e = &mut encoder;
        gauge(
            e,
            "process_resident_memory_bytes",
            "Resident memory size in bytes",
            bytes(s.resident_bytes),
        )?;
        gauge(
            e,
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes",
            bytes(s.virtual_bytes),
        )?;
        gauge(
            e,
            "process_anonymous_memory_bytes",
            "Resident anonymous memory in bytes (heap and stacks, not mapped files)",
            bytes(s.anonymous_bytes),
        )?;
        gauge(
            e,
            "process_open_fds",
            "Number of open file descriptors",
            bytes(s.open_fds),
        )?;
        gauge(
            e,
            "process_max_fds",
            "Maximum number of open file descriptors",
            bytes(s.max_fds),
        )?;
        gauge(
            e,
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds",
            s.start_time_seconds,
        )?;
        gauge(
            e,
            "process_threads",
            "Number of OS threads",
            bytes(s.threads),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 7 0 1000 123456789 2048 18446744073709551615";
    const STATUS: &str =
        "Name:\tmqbroker\nVmRSS:\t   8192 kB\nRssAnon:\t    4096 kB\nThreads:\t7\n";
    const LIMITS: &str = "Limit                     Soft Limit           Hard Limit           Units\nMax open files            65536                524288               files\n";

    #[test]
    fn parses_proc_texts() {
        let s = ProcessStats::parse(
            STAT,
            STATUS,
            LIMITS,
            "cpu 1 2 3\nbtime 1700000000\n",
            100.0,
            Some(12),
        );
        assert_eq!(s.cpu_seconds, Some(3.0));
        assert_eq!(s.start_time_seconds, Some(1_700_000_010.0));
        assert_eq!(s.virtual_bytes, Some(123_456_789));
        assert_eq!(s.resident_bytes, Some(8192 * 1024));
        assert_eq!(s.anonymous_bytes, Some(4096 * 1024));
        assert_eq!(s.threads, Some(7));
        assert_eq!(s.max_fds, Some(65536));
        assert_eq!(s.open_fds, Some(12));
    }

    #[test]
    fn garbage_gives_nothing_rather_than_a_panic() {
        let s = ProcessStats::parse("garbage", "", "", "", 100.0, None);
        assert_eq!(s, ProcessStats::default());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_scrape_has_the_standard_names_and_types() {
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(ProcessCollector));
        let text = crate::exporter::MetricsEndpoint::render(&registry);
        let lines = text.lines().map(|l| Ok(l.to_owned()));
        let scrape = prometheus_parse::Scrape::parse(lines).expect("text format");
        let kind = |name: &str| {
            scrape
                .samples
                .iter()
                .find(|s| s.metric == name)
                .map(|s| match s.value {
                    prometheus_parse::Value::Counter(v) => ("counter", v),
                    prometheus_parse::Value::Gauge(v) => ("gauge", v),
                    _ => ("other", 0.0),
                })
        };
        let (t, cpu) = kind("process_cpu_seconds_total").expect(&text);
        assert_eq!(t, "counter");
        assert!(cpu >= 0.0);
        for name in [
            "process_resident_memory_bytes",
            "process_virtual_memory_bytes",
            "process_anonymous_memory_bytes",
            "process_open_fds",
            "process_max_fds",
            "process_start_time_seconds",
            "process_threads",
        ] {
            let (t, v) = kind(name).unwrap_or_else(|| panic!("{name} missing: {text}"));
            assert_eq!(t, "gauge", "{name}");
            assert!(v > 0.0, "{name} = {v}");
        }
    }
}
