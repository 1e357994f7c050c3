//! Small periodic duties: flushing consumer offsets (`flushConsumerOffsetInterval`),
//! expiring clients that stopped sending heartbeats (RocketMQ's
//! `ClientHousekeepingService`, every 10 s, `channelExpiredTimeout`), turning the
//! message counters into per-second rates, sampling the per-topic and per-group
//! counters for VIEW_BROKER_STATS_DATA (every 10 s, when they are kept) and estimating
//! the tables for the memory account. They run on the duties runtime (`Broker::duties`): a request flood
//! cannot delay them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use vostok_remoting::support::time::now_millis;

use crate::state::stats_window::SAMPLE_EVERY;
use crate::state::Broker;

const CLIENT_SCAN_PERIOD: Duration = Duration::from_secs(10);
const STATS_PERIOD: Duration = Duration::from_secs(1);

pub(crate) fn spawn(broker: &Arc<Broker>) {
    let duties = &broker.life.duties;
    let b = broker.clone();
    broker.life.tasks.spawn_on(persist_offsets(b), duties);
    let b = broker.clone();
    broker.life.tasks.spawn_on(expire_clients(b), duties);
    let b = broker.clone();
    broker.life.tasks.spawn_on(
        async move {
            let mut tick = tokio::time::interval(STATS_PERIOD);
            loop {
                tokio::select! {
                    _ = tick.tick() => {
                        b.observed.stats.sample();
                        b.sample_memory();
                    }
                    _ = b.life.shutdown.cancelled() => break,
                }
            }
        },
        duties,
    );
    if broker.observed.metrics.is_enabled() {
        let b = broker.clone();
        broker.life.tasks.spawn_on(sample_stats_windows(b), duties);
    }
}

/// Samples the per-topic and per-group counters into the statistics windows.
async fn sample_stats_windows(b: Arc<Broker>) {
    let mut tick = tokio::time::interval(SAMPLE_EVERY);
    loop {
        tokio::select! {
            _ = tick.tick() => b.observed.windows.sample(&b.observed.metrics, now_millis()),
            _ = b.life.shutdown.cancelled() => break,
        }
    }
}

/// Writes `consumerOffset.json` every `flushConsumerOffsetInterval` when it changed.
async fn persist_offsets(b: Arc<Broker>) {
    let mut tick = tokio::time::interval(b.config.flush_consumer_offset_interval);
    tick.tick().await;
    loop {
        tokio::select! {
            _ = tick.tick() => {
                // A write and an fsync: off the duties thread, which also registers.
                let owner = b.clone();
                let write = tokio::task::spawn_blocking(move || owner.consumers.offsets.persist(false));
                let _ = write.await;
            }
            _ = b.life.shutdown.cancelled() => break,
        }
    }
}

/// Drops the clients silent for `channelExpiredTimeout`, every [`CLIENT_SCAN_PERIOD`].
async fn expire_clients(b: Arc<Broker>) {
    let mut tick = tokio::time::interval(CLIENT_SCAN_PERIOD);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let timeout = b.config.channel_expired_timeout;
                let changed = b.consumers.clients.scan_expired(Instant::now(), timeout);
                crate::ops::clients::notify_consumer_ids_changed(
                    &b.consumers,
                    &b.config,
                    &b.life,
                    changed,
                );
            }
            _ = b.life.shutdown.cancelled() => break,
        }
    }
}
