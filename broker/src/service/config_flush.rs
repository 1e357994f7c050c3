//! The config writer: writes `topics.json` and `subscriptionGroup.json` after they
//! change, off the async runtime, once for however many changes a burst brings.
//!
//! Requests only change the tables in memory and mark their files dirty, so a
//! heartbeat that creates many groups, or a flood of topic creations, costs one write
//! per file per [`COALESCE`] instead of one per change, and never blocks a runtime
//! worker on disk I/O (RocketMQ writes the whole file once per change, on the request
//! thread). Admin requests that must be durable before they answer await
//! [`Broker::persist_configs`] themselves.

use std::sync::Arc;
use std::time::Duration;

use crate::state::Broker;

/// How long the writer waits after a change for more changes to join the write.
const COALESCE: Duration = Duration::from_millis(200);

pub(crate) fn spawn(broker: &Arc<Broker>) {
    let b = broker.clone();
    broker.life.tasks.spawn(async move {
        loop {
            tokio::select! {
                _ = b.storage.topics.unsaved() => {}
                _ = b.consumers.subscriptions.unsaved() => {}
                _ = b.life.shutdown.cancelled() => break,
            }
            tokio::select! {
                _ = tokio::time::sleep(COALESCE) => {}
                _ = b.life.shutdown.cancelled() => break,
            }
            b.persist_configs().await;
        }
    });
}
