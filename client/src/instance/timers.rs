//! The periodic tasks of a client instance (Java `MQClientInstance.startScheduledTask`
//! and `RebalanceService`); see the table in the module documentation. Each runs on its
//! interval, some also at once when woken, until the instance shuts down.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tracing::info;
use vostok_remoting::BoxFuture;

use super::ClientInstance;

impl ClientInstance {
    /// Starts the timers once.
    pub(crate) fn start(self: &Arc<Self>) {
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        info!(client_id = %self.client_id, namesrv = ?self.config.namesrv_addr, "client instance starting");
        let weak = Arc::downgrade(self);
        self.spawn_timer(
            weak.clone(),
            self.config.poll_name_server_interval,
            None,
            |i| Box::pin(async move { i.update_all_routes().await }),
        );
        let heartbeat_now = Some(self.heartbeat.waker());
        self.spawn_timer(
            weak.clone(),
            self.config.heartbeat_broker_interval,
            heartbeat_now,
            |i| {
                Box::pin(async move {
                    i.routes.clean_offline_brokers();
                    i.send_heartbeat_to_all_brokers().await;
                })
            },
        );
        self.spawn_timer(
            weak.clone(),
            self.config.persist_consumer_offset_interval,
            None,
            |i| Box::pin(async move { i.persist_all_consumer_offsets().await }),
        );
        // Rebalance: on its interval or at once when a broker says the group changed.
        let rebalance_now = Some(self.rebalance_now.clone());
        self.spawn_timer(weak, self.config.rebalance_interval, rebalance_now, |i| {
            Box::pin(async move { i.do_rebalance().await })
        });
    }

    /// Runs `tick` every `period`, and at once whenever `wake` is notified.
    fn spawn_timer(
        &self,
        weak: Weak<ClientInstance>,
        period: Duration,
        wake: Option<Arc<Notify>>,
        tick: impl Fn(Arc<ClientInstance>) -> BoxFuture<'static, ()> + Send + 'static,
    ) {
        let shutdown = self.shutdown.clone();
        let wake = wake.unwrap_or_default();
        self.tracker.spawn(async move {
            loop {
                let notified = wake.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(period) => {}
                    _ = &mut notified => {}
                }
                let Some(instance) = weak.upgrade() else {
                    return;
                };
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tick(instance) => {}
                }
            }
        });
    }

    /// Asks the rebalance task to run now.
    pub(crate) fn rebalance_immediately(&self) {
        self.rebalance_now.notify_one();
    }

    pub(crate) async fn do_rebalance(&self) {
        for consumer in self.registry.consumers() {
            consumer.do_rebalance().await;
        }
    }

    async fn persist_all_consumer_offsets(&self) {
        for consumer in self.registry.consumers() {
            consumer.persist_offsets().await;
        }
    }
}
