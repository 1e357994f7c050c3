//! The tier's metrics (docs/tiered-storage.md#status-and-metrics), when tiered storage is on,
//! read from the store at scrape time:
//!
//! | metric | type | value |
//! |---|---|---|
//! | `rocketmq_tiered_store_segments` | gauge | segments in the tier |
//! | `rocketmq_tiered_store_uploaded_segments_total`, `..._uploaded_bytes_total` | counter | uploaded since start |
//! | `rocketmq_tiered_store_upload_failures_total` | counter | failed upload passes |
//! | `rocketmq_tiered_store_upload_failing` | gauge | 1 while the last upload pass failed |
//! | `rocketmq_tiered_store_last_upload_error_timestamp_seconds` | gauge | when the last upload failed (0: not since start) |
//! | `rocketmq_tiered_store_upload_lag_bytes` | gauge | commitlog bytes not in the tier yet |
//! | `rocketmq_tiered_store_upload_lag_seconds` | gauge | age of the oldest message not in the tier yet |
//! | `rocketmq_tiered_store_messages_read_total` | counter | messages served from the tier |
//! | `rocketmq_tiered_store_read_bytes_total`, `..._read_failures_total` | counter | object-store reads |
//! | `rocketmq_tiered_store_read_latency_seconds` | histogram | object-store read latency |
//! | `rocketmq_tiered_store_cache_hits_total`, `..._cache_misses_total` | counter | read cache |
//! | `rocketmq_tiered_store_cache_bytes` | gauge | bytes the read cache holds |

use vostok_observe::prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use vostok_observe::prometheus_client::metrics::counter::ConstCounter;
use vostok_observe::prometheus_client::metrics::gauge::ConstGauge;
use vostok_observe::prometheus_client::metrics::MetricType;
use vostok_store::tier::{TierStatus, READ_LATENCY_BOUNDS_MS};

use crate::state::Broker;

const P: &str = "rocketmq_tiered_store_";

fn counter(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    v: u64,
) -> Result<(), std::fmt::Error> {
    let name = format!("{P}{name}");
    let m = e.encode_descriptor(&name, help, None, MetricType::Counter)?;
    ConstCounter::new(v).encode(m)
}

fn gauge(e: &mut DescriptorEncoder, name: &str, help: &str, v: i64) -> Result<(), std::fmt::Error> {
    let name = format!("{P}{name}");
    let m = e.encode_descriptor(&name, help, None, MetricType::Gauge)?;
    ConstGauge::new(v).encode(m)
}

/// Encodes the tier's metrics; nothing when the tier is off.
pub(super) fn encode(b: &Broker, e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let Some(t) = b.storage.store.tier_status() else {
        return Ok(());
    };
    encode_status(&t, e)
}

fn encode_status(t: &TierStatus, e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    gauge(e, "segments", "Segments in the tier", t.segments as i64)?;
    counter(
        e,
        "uploaded_segments",
        "Segments uploaded to the tier",
        t.segments_uploaded,
    )?;
    counter(
        e,
        "uploaded_bytes",
        "Bytes uploaded to the tier",
        t.bytes_uploaded,
    )?;
    counter(
        e,
        "upload_failures",
        "Failed upload passes (each retried with backoff)",
        t.upload_failures,
    )?;
    gauge(
        e,
        "upload_failing",
        "1 while the last upload pass failed",
        i64::from(t.failing),
    )?;
    gauge(
        e,
        "last_upload_error_timestamp_seconds",
        "When the last upload pass failed, seconds since the epoch; 0: none since start",
        t.last_upload_error.as_ref().map_or(0, |(at, _)| at / 1000),
    )?;
    gauge(
        e,
        "upload_lag_bytes",
        "Commitlog bytes not in the tier yet, the current file included",
        t.upload_lag_bytes,
    )?;
    gauge(
        e,
        "upload_lag_seconds",
        "Age of the oldest message not in the tier yet, seconds",
        t.upload_lag_ms / 1000,
    )?;
    counter(e, "messages_read", "Messages served from the tier", t.reads)?;
    counter(
        e,
        "read_bytes",
        "Bytes read from the object store",
        t.object_read_bytes,
    )?;
    counter(
        e,
        "read_failures",
        "Object-store reads that failed",
        t.object_read_failures,
    )?;
    gauge(
        e,
        "reads_pending",
        "Reads of cold data queued or running on the tier's reader threads",
        t.reads_pending as i64,
    )?;
    counter(
        e,
        "reads_over_budget",
        "Tier reads given up over the I/O budget (answered not found, asked again)",
        t.reads_over_budget,
    )?;
    let name = format!("{P}read_latency_seconds");
    let mut m = e.encode_descriptor(
        &name,
        "Object-store read latency, seconds",
        None,
        MetricType::Histogram,
    )?;
    let mut buckets: Vec<(f64, u64)> = READ_LATENCY_BOUNDS_MS
        .iter()
        .map(|ms| *ms as f64 / 1000.0)
        .chain([f64::INFINITY])
        .zip(t.read_latency_buckets.iter().copied())
        .collect();
    buckets.truncate(READ_LATENCY_BOUNDS_MS.len() + 1);
    let count = buckets.iter().map(|(_, n)| n).sum();
    m.encode_histogram::<NoLabelSet>(t.read_latency_micros as f64 / 1e6, count, &buckets, None)?;
    counter(
        e,
        "cache_hits",
        "Tier reads answered by the read cache",
        t.cache_hits,
    )?;
    counter(
        e,
        "cache_misses",
        "Tier reads that went to the object store",
        t.cache_misses,
    )?;
    gauge(
        e,
        "cache_bytes",
        "Bytes the tier's read cache holds",
        t.cache_bytes as i64,
    )
}
