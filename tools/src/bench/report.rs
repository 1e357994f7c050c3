//! The final summary: printed for people, written as JSON (`--json`) for scripts.
//!
//! JSON fields: `command`, `settings`, `elapsed_secs`, `sent`, `send_errors`, `errors`
//! (by kind), `received`, `lost`, `duplicates`, `foreign`, `msgs_per_sec` (sends, or
//! receipts for `consume`), `mb_per_sec` (MiB/s, 2^20 bytes), `recv_msgs_per_sec`,
//! `latency_ms` (send latency; for `consume`, born-to-consume), `e2e_latency_ms`, each
//! with `p50`, `p90`, `p99`, `p999`, `max`, `mean`, `count`; `broker`, `mqbench`,
//! `machine`. Figures that were not measured are `null`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::histogram::{round3, LatencySummary};
use super::monitor::Figures;
use super::progress::thousands;

const MIB: f64 = 1024.0 * 1024.0;

#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub command: &'static str,
    /// The run's parameters, as given.
    pub settings: Map<String, Value>,
    /// The measured window.
    pub elapsed: Duration,
    pub sent: Option<u64>,
    pub sent_bytes: u64,
    pub send_errors: u64,
    pub errors: BTreeMap<String, u64>,
    pub received: Option<u64>,
    pub received_bytes: u64,
    pub lost: Option<u64>,
    pub duplicates: Option<u64>,
    pub foreign: Option<u64>,
    pub send_latency: Option<LatencySummary>,
    pub e2e_latency: Option<LatencySummary>,
    pub figures: Option<Figures>,
}

fn per_sec(v: u64, d: Duration) -> f64 {
    v as f64 / d.as_secs_f64().max(1e-9)
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

impl Summary {
    /// Sends a second for `produce` and `e2e`, receipts for `consume`.
    pub fn msgs_per_sec(&self) -> f64 {
        match self.sent {
            Some(s) => per_sec(s, self.elapsed),
            None => per_sec(self.received.unwrap_or(0), self.elapsed),
        }
    }

    pub fn mb_per_sec(&self) -> f64 {
        let bytes = if self.sent.is_some() {
            self.sent_bytes
        } else {
            self.received_bytes
        };
        per_sec(bytes, self.elapsed) / MIB
    }

    /// The headline latency: sends, or born-to-consume for `consume`.
    pub fn latency(&self) -> Option<&LatencySummary> {
        self.send_latency.as_ref().or(if self.sent.is_none() {
            self.e2e_latency.as_ref()
        } else {
            None
        })
    }

    pub fn to_json(&self) -> Value {
        let lat = |l: Option<&LatencySummary>| l.map(LatencySummary::to_json);
        let mut v = json!({
            "command": self.command,
            "settings": self.settings,
            "elapsed_secs": round3(self.elapsed.as_secs_f64()),
            "sent": self.sent,
            "send_errors": self.send_errors,
            "errors": self.errors,
            "received": self.received,
            "lost": self.lost,
            "duplicates": self.duplicates,
            "foreign": self.foreign,
            "msgs_per_sec": round1(self.msgs_per_sec()),
            "mb_per_sec": round3(self.mb_per_sec()),
            "recv_msgs_per_sec": self.received.map(|r| round1(per_sec(r, self.elapsed))),
            "latency_ms": lat(self.latency()),
            "e2e_latency_ms": lat(self.e2e_latency.as_ref()),
            "machine": machine(),
        });
        if let Some(f) = &self.figures {
            let extra = f.to_json(self.elapsed);
            v["broker"] = extra["broker"].clone();
            v["mqbench"] = extra["mqbench"].clone();
        }
        v
    }

    /// The summary for people.
    pub fn text(&self) -> String {
        let mut out = vec![format!(
            "==== mqbench {} summary ({:.2} s measured) ====",
            self.command,
            self.elapsed.as_secs_f64()
        )];
        let settings: Vec<String> = self
            .settings
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| format!("{k}={}", v.to_string().trim_matches('"')))
            .collect();
        out.push(format!("settings: {}", settings.join(" ")));
        if let Some(sent) = self.sent {
            out.push(format!(
                "sent:     {} msgs, {} msg/s, {:.1} MiB/s, {} send errors",
                thousands(sent),
                thousands(per_sec(sent, self.elapsed).round() as u64),
                per_sec(self.sent_bytes, self.elapsed) / MIB,
                thousands(self.send_errors)
            ));
        }
        if let Some(l) = &self.send_latency {
            out.push(format!("send latency:  {}", l.line()));
        }
        if let Some(r) = self.received {
            out.push(format!(
                "received: {} msgs, {} msg/s, {:.1} MiB/s",
                thousands(r),
                thousands(per_sec(r, self.elapsed).round() as u64),
                per_sec(self.received_bytes, self.elapsed) / MIB
            ));
        }
        if let Some(l) = &self.e2e_latency {
            let what = if self.sent.is_some() {
                "e2e latency:   "
            } else {
                "born-to-consume latency:"
            };
            out.push(format!("{what} {}", l.line()));
        }
        if self.lost.is_some() || self.duplicates.is_some() {
            out.push(format!(
                "lost: {}  duplicates: {}  foreign: {}",
                self.lost.map(thousands).unwrap_or_else(|| "n/a".into()),
                self.duplicates
                    .map(thousands)
                    .unwrap_or_else(|| "n/a".into()),
                self.foreign.map(thousands).unwrap_or_else(|| "n/a".into()),
            ));
        }
        if !self.errors.is_empty() {
            out.push("errors by kind:".into());
            for (k, n) in &self.errors {
                out.push(format!("  {:>10}  {k}", thousands(*n)));
            }
        }
        if let Some(f) = &self.figures {
            out.extend(f.lines(self.elapsed));
        }
        out.join("\n")
    }
}

/// Cores, load average and kernel of this machine, for the record.
fn machine() -> Value {
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
    json!({
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "load_avg": load,
    })
}

#[cfg(test)]
mod tests {
    use super::super::histogram::{new_histogram, record_micros};
    use super::*;

    fn latency() -> LatencySummary {
        let mut h = new_histogram();
        for us in [100, 200, 300, 5000] {
            record_micros(&mut h, us);
        }
        LatencySummary::of(&h).unwrap()
    }

    #[test]
    fn json_has_the_fields_scripts_read() {
        let s = Summary {
            command: "e2e",
            elapsed: Duration::from_secs(2),
            sent: Some(200_000),
            sent_bytes: 200_000 * 1024,
            send_errors: 3,
            errors: BTreeMap::from([("timeout".to_owned(), 3)]),
            received: Some(199_000),
            received_bytes: 199_000 * 1024,
            lost: Some(1),
            duplicates: Some(2),
            foreign: Some(0),
            send_latency: Some(latency()),
            e2e_latency: Some(latency()),
            ..Default::default()
        };
        let v = s.to_json();
        assert_eq!(v["sent"], 200_000);
        assert_eq!(v["send_errors"], 3);
        assert_eq!(v["received"], 199_000);
        assert_eq!(v["lost"], 1);
        assert_eq!(v["duplicates"], 2);
        assert_eq!(v["msgs_per_sec"], 100_000.0);
        assert_eq!(v["mb_per_sec"], 97.656);
        assert_eq!(v["recv_msgs_per_sec"], 99_500.0);
        assert_eq!(v["errors"]["timeout"], 3);
        for k in ["p50", "p99", "p999", "max"] {
            assert!(v["latency_ms"][k].is_number(), "latency_ms.{k}");
            assert!(v["e2e_latency_ms"][k].is_number(), "e2e_latency_ms.{k}");
        }
        assert!(v["machine"]["cores"].as_u64().unwrap() >= 1);
        let text = s.text();
        assert!(text.contains("100,000 msg/s"), "{text}");
        assert!(text.contains("lost: 1  duplicates: 2"), "{text}");
        assert!(text.contains("timeout"), "{text}");
    }

    #[test]
    fn consume_reports_receipts_and_null_sequence_figures() {
        let s = Summary {
            command: "consume",
            elapsed: Duration::from_secs(4),
            received: Some(1_000_000),
            received_bytes: 1_000_000 * 1024,
            e2e_latency: Some(latency()),
            ..Default::default()
        };
        let v = s.to_json();
        assert_eq!(v["sent"], Value::Null);
        assert_eq!(v["lost"], Value::Null);
        assert_eq!(v["duplicates"], Value::Null);
        assert_eq!(v["msgs_per_sec"], 250_000.0);
        // The headline latency of consume is born-to-consume.
        assert_eq!(v["latency_ms"], v["e2e_latency_ms"]);
        assert!(v.get("broker").is_none());
    }

    #[test]
    fn figures_are_merged_in() {
        let s = Summary {
            command: "produce",
            elapsed: Duration::from_secs(2),
            sent: Some(10),
            figures: Some(Figures {
                broker_pid: Some(7),
                broker_peak_rss_anon_kib: Some(2048),
                broker_cpu_secs: Some(1.0),
                store_bytes_written: Some(12_345),
                tool_cpu_secs: 0.5,
                ..Default::default()
            }),
            ..Default::default()
        };
        let v = s.to_json();
        assert_eq!(v["broker"]["pid"], 7);
        assert_eq!(v["broker"]["peak_rss_anon_mib"], 2.0);
        assert_eq!(v["broker"]["cpu_cores"], 0.5);
        assert_eq!(v["broker"]["store_bytes_written"], 12_345);
        assert_eq!(v["mqbench"]["cpu_cores"], 0.25);
        assert!(s.text().contains("broker pid 7"));
    }
}
