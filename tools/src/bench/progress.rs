//! The live line printed each second: rates over the last second, errors, and a
//! progress bar when the count is known.

use std::time::Duration;

use super::meter::Totals;

const MIB: f64 = 1024.0 * 1024.0;

/// What one side (send or receive) did over the last interval.
#[derive(Debug, Clone, Copy)]
pub struct Delta {
    pub label: &'static str,
    pub now: Totals,
    pub before: Totals,
}

/// Formats a count with thousands separators: `1,234,567`.
pub fn thousands(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn bar(done: u64, total: u64) -> String {
    const WIDTH: u64 = 20;
    let done = done.min(total);
    let filled = (done * WIDTH).checked_div(total).unwrap_or(WIDTH);
    format!(
        "[{}{}] {:>3}%",
        "#".repeat(filled as usize),
        ".".repeat((WIDTH - filled) as usize),
        (done * 100).checked_div(total).unwrap_or(100)
    )
}

/// `[   5s] send 152,311 msg/s 148.7 MiB/s err 0 | recv ... [####....]  40%`.
pub fn line(
    elapsed: Duration,
    warming_up: bool,
    interval: Duration,
    sides: &[Delta],
    progress: Option<(u64, u64)>,
) -> String {
    let secs = interval.as_secs_f64().max(1e-9);
    let mut out = format!(
        "[{:>5}s]{}",
        elapsed.as_secs(),
        if warming_up { " warm-up" } else { "" }
    );
    for d in sides {
        let delta = d.now - d.before;
        out.push_str(&format!(
            " {} {:>9} msg/s {:>7.1} MiB/s err {}",
            d.label,
            thousands((delta.msgs as f64 / secs).round() as u64),
            delta.bytes as f64 / MIB / secs,
            thousands(d.now.errors)
        ));
    }
    if let Some((done, total)) = progress {
        out.push(' ');
        out.push_str(&bar(done, total));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn line_shows_rates_errors_and_bar() {
        let before = Totals::default();
        let now = Totals {
            msgs: 150_000,
            bytes: 150_000 * 1024,
            errors: 2,
        };
        let l = line(
            Duration::from_secs(5),
            false,
            Duration::from_secs(1),
            &[Delta {
                label: "send",
                now,
                before,
            }],
            Some((250, 1000)),
        );
        assert!(l.contains("150,000 msg/s"), "{l}");
        assert!(l.contains("146.5 MiB/s"), "{l}");
        assert!(l.contains("err 2"), "{l}");
        assert!(l.contains("[#####...............]  25%"), "{l}");
        let w = line(Duration::ZERO, true, Duration::from_secs(1), &[], None);
        assert!(w.contains("warm-up"), "{w}");
    }

    #[test]
    fn bar_is_full_at_and_past_the_end() {
        assert_eq!(bar(10, 10), "[####################] 100%");
        assert_eq!(bar(20, 10), "[####################] 100%");
        assert_eq!(bar(0, 0), "[####################] 100%");
    }
}
