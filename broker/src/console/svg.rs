//! Inline SVG line plots: no script, no external asset.

use std::fmt::Write;

use super::history::Series;
use super::html::{esc, not_negative};

const W: f64 = 560.0;
const H: f64 = 120.0;
const PAD: f64 = 28.0;

/// A line plot of `series` over the last hour, titled `title`, the y axis from 0 to
/// the series' maximum.
pub(crate) fn plot(title: &str, unit: &str, series: &Series) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<figure class="plot"><figcaption>{}</figcaption><svg role="img" aria-label="{}" viewBox="0 0 {W} {H}" width="{W}" height="{H}">"#,
        esc(title),
        esc(title)
    );
    let _ = write!(
        out,
        r##"<rect x="{PAD}" y="4" width="{}" height="{}" fill="#fafafa" stroke="#ccc"/>"##,
        W - PAD - 4.0,
        H - PAD - 4.0
    );
    if series.len() < 2 {
        let _ = write!(
            out,
            r##"<text x="{}" y="{}" fill="#888" font-size="12">collecting samples (one every 10 s)</text></svg></figure>"##,
            PAD + 10.0,
            H / 2.0
        );
        return out;
    }
    let (t0, t1) = (series[0].0, series[series.len() - 1].0.max(series[0].0 + 1));
    let max = series
        .iter()
        .map(|p| not_negative(p.1))
        .fold(0.0_f64, f64::max)
        .max(1.0);
    let x = |t: i64| PAD + (t - t0) as f64 / (t1 - t0) as f64 * (W - PAD - 4.0);
    let y = |v: f64| 4.0 + (H - PAD - 4.0) * (1.0 - v / max);
    let points: Vec<String> = series
        .iter()
        .map(|(t, v)| format!("{:.1},{:.1}", x(*t), y(not_negative(*v))))
        .collect();
    let _ = write!(
        out,
        r##"<polyline fill="none" stroke="#2a6fdb" stroke-width="1.5" points="{}"/>"##,
        points.join(" ")
    );
    let last = not_negative(series[series.len() - 1].1);
    let _ = write!(
        out,
        r##"<text x="2" y="14" font-size="10" fill="#555">{}</text><text x="2" y="{}" font-size="10" fill="#555">0</text><text x="{PAD}" y="{}" font-size="10" fill="#555">{}</text><text x="{}" y="{}" font-size="10" fill="#555" text-anchor="end">now: {} {}</text>"##,
        short(max),
        H - PAD,
        H - 8.0,
        span(t1 - t0),
        W - 4.0,
        H - 8.0,
        short(last),
        esc(unit)
    );
    out.push_str("</svg></figure>");
    out
}

/// The left end of the time axis, `span_ms` before its right end: `-12 min`, `-40 s`.
fn span(span_ms: i64) -> String {
    match span_ms.max(0) {
        ms if ms >= 60_000 => format!("-{} min", ms / 60_000),
        ms if ms >= 1000 => format!("-{} s", ms / 1000),
        _ => "now".to_owned(),
    }
}

fn short(v: f64) -> String {
    let v = not_negative(v);
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plots_points_and_escapes_titles() {
        let svg = plot(
            "in <T>",
            "msg/s",
            &vec![(0, 0.0), (60_000, 10.0), (120_000, 5.0)],
        );
        assert!(svg.contains("<polyline"), "{svg}");
        assert!(svg.contains("in &lt;T&gt;"), "{svg}");
        assert!(svg.contains("now: 5 msg/s"), "{svg}");
        assert!(plot("x", "", &vec![]).contains("collecting samples"));
    }

    #[test]
    fn no_negative_zero_on_axes_or_values() {
        // Two samples 20 s apart, the last a little below zero (clock skew).
        let svg = plot("lag", "s", &vec![(0, -0.0), (20_000, -0.3)]);
        assert!(!svg.contains("-0"), "{svg}");
        assert!(svg.contains("-20 s"), "{svg}");
        assert!(svg.contains("now: 0 s"), "{svg}");
        assert_eq!(span(30 * 60_000), "-30 min");
        assert_eq!(span(59_999), "-59 s");
        assert_eq!(short(-0.0), "0");
    }
}
