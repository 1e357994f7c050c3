//! The store's scrape-time gauges (Apache's `DefaultStoreMetricsManager`), each with
//! `storage_type="local"` and `storage_medium="disk"`, and the half messages of
//! transactions.

use vostok_remoting::support::time::now_millis;

use super::{GaugeFamily, Labels};
use crate::state::timer::TIMER_BOUNDS_S;
use crate::state::Broker;

/// Apache's `storage_type` and `storage_medium` for a local disk store.
fn local() -> Labels {
    vec![
        ("storage_type", "local".to_owned()),
        ("storage_medium", "disk".to_owned()),
    ]
}

fn with(mut labels: Labels, more: &[(&'static str, String)]) -> Labels {
    labels.extend_from_slice(more);
    labels
}

pub(super) fn storage(b: &Broker) -> Vec<GaugeFamily> {
    let store = &b.storage.store;
    let max = store.max_phy_offset();
    let mut size = GaugeFamily::new("rocketmq_storage_size", "Broker storage size, bytes");
    size.samples
        .push((local(), (max - store.min_phy_offset()).max(0)));
    let mut flush = GaugeFamily::new(
        "rocketmq_storage_flush_behind_bytes",
        "Broker flush behind bytes",
    );
    flush
        .samples
        .push((local(), (max - store.flushed_phy_offset()).max(0)));
    let mut dispatch = GaugeFamily::new(
        "rocketmq_storage_dispatch_behind_bytes",
        "Broker dispatch behind bytes",
    );
    dispatch
        .samples
        .push((local(), (max - store.dispatched_phy_offset()).max(0)));
    let mut reserve = GaugeFamily::new(
        "rocketmq_storage_message_reserve_time",
        "Broker message reserve time, milliseconds",
    );
    // The oldest message kept: the first record of the commitlog.
    if max > store.min_phy_offset() {
        if let Some(oldest) = store.look_message_by_offset(store.min_phy_offset()) {
            if oldest.store_timestamp > 0 {
                let age = (now_millis() - oldest.store_timestamp).max(0);
                reserve.samples.push((local(), age));
            }
        }
    }
    let mut ha = GaugeFamily::new(
        "rocketmq_ha_slave_behind_bytes",
        "Bytes each slave of this master is behind",
    );
    ha.samples = store
        .ha_slaves()
        .into_iter()
        .map(|s| (vec![("slave", s.addr.to_string())], s.behind_bytes))
        .collect();
    vec![size, flush, dispatch, reserve, ha]
}

/// The timer wheel's gauges, when timers are on (Apache: `timerWheelEnable`).
pub(super) fn timers(b: &Broker) -> Vec<GaugeFamily> {
    if !b.config.timer_wheel_enable {
        return Vec::new();
    }
    let s = b.deferred.timers.snapshot(now_millis());
    let mut lag = GaugeFamily::new(
        "rocketmq_timer_dequeue_lag",
        "Timer messages due and not delivered yet",
    );
    lag.samples.push((local(), s.due));
    let mut latency = GaugeFamily::new(
        "rocketmq_timer_dequeue_latency",
        "Milliseconds the earliest due timer message is late",
    );
    latency.samples.push((local(), s.behind_ms));
    let mut timing = GaugeFamily::new(
        "rocketmq_timing_messages",
        "Current message number in timing",
    );
    timing.samples = s
        .per_topic
        .into_iter()
        .map(|(t, n)| (with(local(), &[("topic", t)]), n))
        .collect();
    let mut snapshot = GaugeFamily::new(
        "rocketmq_timer_message_snapshot",
        "Timer message distribution snapshot, only count timing messages in 24h",
    );
    snapshot.samples = TIMER_BOUNDS_S
        .iter()
        .zip(s.distribution)
        .map(|(bound, n)| (with(local(), &[("timer_bound_s", bound.to_string())]), n))
        .collect();
    vec![lag, latency, timing, snapshot]
}

/// `rocketmq_half_messages` {topic}: half messages stored and not ended.
pub(super) fn transactions(b: &Broker) -> Vec<GaugeFamily> {
    let mut half = GaugeFamily::new("rocketmq_half_messages", "Half messages of all topics");
    half.samples = b
        .observed
        .metrics
        .events
        .half_messages()
        .into_iter()
        .map(|(t, n)| (vec![("topic", t)], n))
        .collect();
    vec![half]
}
