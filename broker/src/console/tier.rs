//! The tiered store on the broker page (docs/tiered-storage.md#status-and-metrics): on
//! or off, its object store (never credentials), what it has uploaded, how far behind it
//! is, its last upload error, its reads. The figures are the store's own `tier_status`,
//! the one `mqadmin brokerStatus` (`tier*`) and `/metrics` read.

use vostok_remoting::support::time::now_millis;
use vostok_store::tier::TierStatus;

use super::html::{duration, esc, size, table, time};
use super::Console;

/// The section "Tiered storage" of this broker.
pub(crate) fn section(c: &Console) -> String {
    let mut out = String::from("<h2>Tiered storage</h2>");
    match c.broker.storage.store.tier_status() {
        None => out.push_str(
            "<p id=\"tier-off\">Off: messages are kept on the local disk only (<code>messageStorePlugIn</code> turns tiered storage on).</p>",
        ),
        Some(t) => out.push_str(&table("tier", &["", ""], &rows(&t, now_millis()))),
    }
    out
}

/// The rows of the tier's table, at `now` (ms).
fn rows(t: &TierStatus, now: i64) -> Vec<Vec<String>> {
    let row = |k: &str, v: String| vec![k.to_owned(), v];
    let state = if t.failing {
        "<span class=\"warn\" id=\"tier-state\">on, uploads failing (local files are kept)</span>"
    } else {
        "<span id=\"tier-state\">on</span>"
    };
    let last_upload = if t.last_upload_ms > 0 {
        format!(
            "{} ({} ago)",
            time(t.last_upload_ms),
            duration(now - t.last_upload_ms)
        )
    } else {
        "none since the broker started".to_owned()
    };
    let last_error = match &t.last_upload_error {
        None => "none since the broker started".to_owned(),
        Some((at, why)) => format!(
            "<span id=\"tier-error\">{}: {}</span>{}",
            time(*at),
            esc(why),
            if t.failing { "" } else { " (recovered since)" }
        ),
    };
    vec![
        row("State", state.to_owned()),
        row("Object store", esc(&t.backend)),
        row("Segments in the tier", t.segments.to_string()),
        row(
            "Uploaded since start",
            format!(
                "{} segments, {}",
                t.segments_uploaded,
                size(t.bytes_uploaded as i64)
            ),
        ),
        row("Last upload", last_upload),
        row(
            "Upload lag",
            format!(
                "{}, oldest message {} old",
                size(t.upload_lag_bytes),
                duration(t.upload_lag_ms)
            ),
        ),
        row("Upload failures since start", t.upload_failures.to_string()),
        row("Last upload error", last_error),
        row("Segments expired", t.segments_expired.to_string()),
        row("Messages read from the tier", t.reads.to_string()),
        row(
            "Read cache",
            format!(
                "{} hits, {} misses, {} held",
                t.cache_hits,
                t.cache_misses,
                size(t.cache_bytes as i64)
            ),
        ),
        row(
            "Object-store reads",
            format!(
                "{}, {} failed, {}",
                t.object_reads,
                t.object_read_failures,
                size(t.object_read_bytes as i64)
            ),
        ),
        row(
            "Reads of cold data",
            format!(
                "{} waiting or running, {} given up over the read budget",
                t.reads_pending, t.reads_over_budget
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_tier_says_so_with_its_error_escaped() {
        let t = TierStatus {
            failing: true,
            backend: "file system /var/tier".into(),
            bytes_uploaded: 3 * 1024 * 1024,
            upload_lag_bytes: 2048,
            upload_lag_ms: 65_000,
            last_upload_error: Some((1_000_000, "object store: <denied>".into())),
            ..TierStatus::default()
        };
        let page = rows(&t, 2_000_000)
            .into_iter()
            .map(|r| r.join(" = "))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(page.contains("uploads failing"), "{page}");
        assert!(page.contains("3.0 MiB"), "{page}");
        assert!(page.contains("2.0 KiB, oldest message 1m 5s old"), "{page}");
        assert!(page.contains("object store: &lt;denied&gt;"), "{page}");
        assert!(!page.contains("recovered"), "{page}");
        assert!(page.contains("Last upload = none since"), "{page}");
    }
}
