//! The final summary: printed for people, written as JSON (`--json`) for scripts.
//!
//! Every figure says what it covers. The **window** runs from the end of the warm-up
//! until the producers are done (`produce`, `e2e`) or the consumer reached `-c` or
//! the duration (`consume`): rates, sends, send errors and receipts `in the window`
//! come from it. The **whole run** is everything the consumer received from its
//! start until it stopped (warm-up and window; for `e2e` the drain too), and `e2e`'s
//! sequence check (acknowledged, lost, duplicates, foreign) covers those same
//! deliveries, so `received = (acknowledged - lost) + received_unacknowledged +
//! duplicates + foreign` always holds.
//!
//! JSON fields: `command`, `settings`, `elapsed_secs` (the window), in the window:
//! `sent`, `send_errors` (the sum of `errors` by kind), `errors`, `received_in_window`,
//! `msgs_per_sec` (sends, or receipts for `consume`), `mb_per_sec` (MiB/s, 2^20
//! bytes), `recv_msgs_per_sec`; over the whole run: `received`, and for `e2e`
//! `acknowledged`, `received_unacknowledged`, `lost`, `duplicates`, `foreign`;
//! `latency_ms` (send latency; for `consume`, born-to-consume), `e2e_latency_ms`, each
//! with `p50`, `p90`, `p99`, `p999`, `max`, `mean`, `count`; `broker`, `mqbench`,
//! `machine`. Figures that were not measured are `null`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::consume::Receipts;
use super::histogram::{round3, LatencySummary};
use super::meter::Totals;
use super::monitor::Figures;
use super::progress::thousands;
use super::sequence::SequenceCheck;

const MIB: f64 = 1024.0 * 1024.0;

#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub command: &'static str,
    /// The run's parameters, as given.
    pub settings: Map<String, Value>,
    /// The window.
    pub elapsed: Duration,
    /// Sends acknowledged in the window (`produce`, `e2e`).
    pub sent: Option<u64>,
    pub sent_bytes: u64,
    /// Failed sends in the window, by kind.
    pub errors: BTreeMap<String, u64>,
    pub receipts: Option<Receipts>,
    /// Sends completed in the window.
    pub send_latency: Option<LatencySummary>,
    /// First deliveries from the window's start until the consumer stopped.
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
    /// Failed sends in the window: the sum of the errors by kind.
    pub fn send_errors(&self) -> u64 {
        self.errors.values().sum()
    }

    fn in_window(&self) -> Option<Totals> {
        self.receipts.map(|r| r.in_window)
    }

    /// Sends a second for `produce` and `e2e`, receipts for `consume`.
    pub fn msgs_per_sec(&self) -> f64 {
        match self.sent {
            Some(s) => per_sec(s, self.elapsed),
            None => per_sec(self.in_window().unwrap_or_default().msgs, self.elapsed),
        }
    }

    pub fn mb_per_sec(&self) -> f64 {
        let bytes = if self.sent.is_some() {
            self.sent_bytes
        } else {
            self.in_window().unwrap_or_default().bytes
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
        let seq = self.receipts.and_then(|r| r.sequence);
        let seq_field = |f: fn(&SequenceCheck) -> u64| seq.as_ref().map(f);
        let mut v = json!({
            "command": self.command,
            "settings": self.settings,
            "elapsed_secs": round3(self.elapsed.as_secs_f64()),
            "sent": self.sent,
            "send_errors": self.send_errors(),
            "errors": self.errors,
            "received_in_window": self.in_window().map(|t| t.msgs),
            "received": self.receipts.map(|r| r.whole_run.msgs),
            "from_broker_msgs": self.receipts.map(|r| r.from_broker.msgs),
            "from_broker_bytes": self.receipts.map(|r| r.from_broker.bytes),
            "acknowledged": seq_field(|s| s.acknowledged),
            "received_unacknowledged": seq_field(SequenceCheck::received_unacknowledged),
            "lost": seq_field(|s| s.lost),
            "duplicates": seq_field(|s| s.duplicates),
            "foreign": seq_field(|s| s.foreign),
            "msgs_per_sec": round1(self.msgs_per_sec()),
            "mb_per_sec": round3(self.mb_per_sec()),
            "recv_msgs_per_sec": self.in_window().map(|t| round1(per_sec(t.msgs, self.elapsed))),
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

    /// `N msgs, R msg/s, M MiB/s` over the window.
    fn rates(&self, msgs: u64, bytes: u64) -> String {
        format!(
            "{} msgs, {} msg/s, {:.1} MiB/s",
            thousands(msgs),
            thousands(per_sec(msgs, self.elapsed).round() as u64),
            per_sec(bytes, self.elapsed) / MIB
        )
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
        out.push(format!(
            "in the window (the {:.2} s measured, after the warm-up):",
            self.elapsed.as_secs_f64()
        ));
        if let Some(sent) = self.sent {
            out.push(format!(
                "  sent:          {}, {} send errors",
                self.rates(sent, self.sent_bytes),
                thousands(self.send_errors())
            ));
        }
        if let Some(l) = &self.send_latency {
            out.push(format!("  send latency:  {}", l.line()));
        }
        if let Some(t) = self.in_window() {
            out.push(format!("  received:      {}", self.rates(t.msgs, t.bytes)));
        }
        if let Some(l) = &self.e2e_latency {
            let what = if self.sent.is_some() {
                "e2e latency"
            } else {
                "born-to-consume latency"
            };
            out.push(format!(
                "{what} (first deliveries, from the window's start until the consumer stopped):\n  {}",
                l.line()
            ));
        }
        if let Some(r) = &self.receipts {
            out.extend(whole_run_lines(r));
        }
        if !self.errors.is_empty() {
            out.push("send errors by kind (in the window):".into());
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

/// The whole run's receipts and, for `e2e`, the sequence check over them.
fn whole_run_lines(r: &Receipts) -> Vec<String> {
    let Some(s) = &r.sequence else {
        return vec![
            "whole run (warm-up and window, until the consumer stopped):".into(),
            format!("  received:      {} msgs", thousands(r.whole_run.msgs)),
            format!(
                "  from broker:   {} msgs, {} bytes (every record the broker sent, matching or not)",
                thousands(r.from_broker.msgs),
                thousands(r.from_broker.bytes)
            ),
        ];
    };
    vec![
        "whole run (warm-up, window and drain, until the consumer stopped):".into(),
        format!("  acknowledged:  {} msgs", thousands(s.acknowledged)),
        format!(
            "  received:      {} msgs = {} acknowledged + {} unacknowledged + {} duplicates + {} foreign",
            thousands(r.whole_run.msgs),
            thousands(s.received_acknowledged()),
            thousands(s.received_unacknowledged()),
            thousands(s.duplicates),
            thousands(s.foreign)
        ),
        format!(
            "  lost:          {} of the {} acknowledged",
            thousands(s.lost),
            thousands(s.acknowledged)
        ),
    ]
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
    use super::super::consume::ConsumeState;
    use super::super::histogram::{new_histogram, record_micros};
    use super::super::sequence::{now_micros, AckedSet, SeqTracker, Stamp};
    use super::*;
    use bytes::Bytes;
    use vostok_client::MessageExt;

    fn latency() -> LatencySummary {
        let mut h = new_histogram();
        for us in [100, 200, 300, 5000] {
            record_micros(&mut h, us);
        }
        LatencySummary::of(&h).unwrap()
    }

    fn totals(msgs: u64) -> Totals {
        Totals {
            msgs,
            bytes: msgs * 1024,
            errors: 0,
        }
    }

    #[test]
    fn json_has_the_fields_scripts_read() {
        let s = Summary {
            command: "e2e",
            elapsed: Duration::from_secs(2),
            sent: Some(200_000),
            sent_bytes: 200_000 * 1024,
            errors: BTreeMap::from([("timeout".to_owned(), 3)]),
            receipts: Some(Receipts {
                in_window: totals(199_000),
                whole_run: totals(250_003),
                sequence: Some(SequenceCheck {
                    acknowledged: 250_000,
                    received: 250_000,
                    lost: 1,
                    duplicates: 2,
                    foreign: 1,
                }),
                from_broker: totals(250_003),
            }),
            send_latency: Some(latency()),
            e2e_latency: Some(latency()),
            ..Default::default()
        };
        let v = s.to_json();
        assert_eq!(v["sent"], 200_000);
        assert_eq!(v["send_errors"], 3);
        assert_eq!(v["received_in_window"], 199_000);
        assert_eq!(v["received"], 250_003);
        assert_eq!(v["acknowledged"], 250_000);
        assert_eq!(v["received_unacknowledged"], 1);
        assert_eq!(v["lost"], 1);
        assert_eq!(v["duplicates"], 2);
        assert_eq!(v["foreign"], 1);
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
        assert!(text.contains("3 send errors"), "{text}");
        assert!(
            text.contains("lost:          1 of the 250,000 acknowledged"),
            "{text}"
        );
        assert!(text.contains("timeout"), "{text}");
    }

    fn delivery(run_id: u32, seq: u64) -> MessageExt {
        let mut body = vec![0u8; 64];
        Stamp {
            run_id,
            task: 0,
            seq,
            sent_at_us: now_micros(),
        }
        .write(&mut body);
        MessageExt {
            born_host: "127.0.0.1:1".parse().unwrap(),
            ..MessageExt::new(
                "T",
                0,
                Bytes::from(body),
                Default::default(),
                "127.0.0.1:2".parse().unwrap(),
            )
        }
    }

    /// The `e2e` accounting as `run::e2e` does it: a warm-up, a window that ends while
    /// the last sends are still on their way, a drain that brings them. The summary
    /// once printed `received` = the window's deliveries next to `lost` = the whole
    /// run's (`received 162,991` of 200,000 sent, `lost 0`); now every figure on a
    /// line covers the same deliveries, and they add up.
    #[test]
    fn e2e_figures_cover_the_same_deliveries_and_add_up() {
        let state = ConsumeState::new(Some(SeqTracker::new(7, 1)), None);
        let mut acked = vec![AckedSet::default()];
        // Warm-up: 0..20 sent and acknowledged, 0..15 delivered.
        (0..20).for_each(|seq| acked[0].insert(seq));
        let warm: Vec<_> = (0..15).map(|seq| delivery(7, seq)).collect();
        state.on_messages(&warm);
        // Window: 20..100 acknowledged (80 sent), 15..70 delivered, 30 once more, and
        // one message of another run; 100 was sent, failed, and was stored anyway.
        let base = state.start_measuring(false);
        (20..100).for_each(|seq| acked[0].insert(seq));
        let window: Vec<_> = (15..70)
            .chain([30])
            .map(|seq| delivery(7, seq))
            .chain([delivery(8, 0)])
            .collect();
        state.on_messages(&window);
        let in_window = state.meter.totals() - base;
        // Drain: the rest arrives, 99 excepted.
        let drain: Vec<_> = (70..99).chain([100]).map(|seq| delivery(7, seq)).collect();
        state.on_messages(&drain);

        let receipts = state.receipts(in_window, &acked);
        let seq = receipts.sequence.unwrap();
        assert_eq!(in_window.msgs, 57);
        assert_eq!(receipts.whole_run.msgs, 15 + 57 + 30);
        assert_eq!(receipts.whole_run.msgs, seq.deliveries());
        assert_eq!((seq.acknowledged, seq.lost), (100, 1));
        assert_eq!(seq.received_unacknowledged(), 1);

        let s = Summary {
            command: "e2e",
            elapsed: Duration::from_secs(1),
            sent: Some(80),
            sent_bytes: 80 * 64,
            receipts: Some(receipts),
            ..Default::default()
        };
        let v = s.to_json();
        let n = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k}: {v}"));
        // Nothing acknowledged is missing from `received` but what `lost` counts...
        assert!(n("received") + n("lost") >= n("sent"), "{v}");
        // ... and `received` is exactly its parts.
        assert_eq!(
            n("received"),
            n("acknowledged") - n("lost")
                + n("received_unacknowledged")
                + n("duplicates")
                + n("foreign"),
            "{v}"
        );
        assert_eq!(n("received_in_window"), 57);
        let text = s.text();
        for line in [
            "  sent:          80 msgs,",
            "  received:      57 msgs,",
            "whole run (warm-up, window and drain, until the consumer stopped):",
            "  acknowledged:  100 msgs",
            "  received:      102 msgs = 99 acknowledged + 1 unacknowledged + 1 duplicates + 1 foreign",
            "  lost:          1 of the 100 acknowledged",
        ] {
            assert!(text.contains(line), "{line:?} missing from\n{text}");
        }
    }

    #[test]
    fn consume_reports_receipts_and_null_sequence_figures() {
        let s = Summary {
            command: "consume",
            elapsed: Duration::from_secs(4),
            receipts: Some(Receipts {
                in_window: totals(1_000_000),
                whole_run: totals(1_200_000),
                sequence: None,
                from_broker: totals(12_000_000),
            }),
            e2e_latency: Some(latency()),
            ..Default::default()
        };
        let v = s.to_json();
        assert_eq!(v["sent"], Value::Null);
        assert_eq!(v["lost"], Value::Null);
        assert_eq!(v["duplicates"], Value::Null);
        assert_eq!(v["acknowledged"], Value::Null);
        assert_eq!(v["received"], 1_200_000);
        assert_eq!(v["received_in_window"], 1_000_000);
        assert_eq!(v["from_broker_msgs"], 12_000_000);
        assert!(s.text().contains("  from broker:   12,000,000 msgs"));
        assert_eq!(v["msgs_per_sec"], 250_000.0);
        // The headline latency of consume is born-to-consume.
        assert_eq!(v["latency_ms"], v["e2e_latency_ms"]);
        assert!(v.get("broker").is_none());
        let text = s.text();
        assert!(
            text.contains("  received:      1,000,000 msgs, 250,000 msg/s"),
            "{text}"
        );
        assert!(
            text.contains("  received:      1,200,000 msgs\n  from broker:   12,000,000 msgs"),
            "{text}"
        );
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
        assert_eq!(v["received"], Value::Null);
        assert!(s.text().contains("broker pid 7"));
    }
}
