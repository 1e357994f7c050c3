//! A slave's copy of its master's metadata (RocketMQ 4.x `SlaveSynchronize`): topic
//! configs, consumer offsets, delay offsets and subscription groups, fetched with
//! RocketMQ's request codes from the master's main port, first 3 s after start, then
//! every 10 s, and at once when the name server reports a new master. Each table is
//! written through its owner, which marks it dirty for the config writer. Topics
//! whose data arrived before the master's table listed them were derived from the
//! data meanwhile (`state::topic`); the master's values replace them.
//!
//! Each round also compares the master's commitlog end with this slave's, read
//! before asking: a slave ahead of its master cannot replicate (the master refuses
//! it), and says so here.

use std::sync::Arc;
use std::time::Duration;

use tracing::{debug, error, info, warn};
use vostok_remoting::protocol::body::{KvTable, TopicConfigSerializeWrapper};
use vostok_remoting::protocol::{json, request_code, response_code};
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::RemotingCommand;

use crate::state::Broker;

const FIRST_DELAY: Duration = Duration::from_secs(3);
const PERIOD: Duration = Duration::from_secs(10);
const TIMEOUT: Duration = Duration::from_secs(3);

pub(crate) fn spawn(broker: &Arc<Broker>) {
    if broker.config.is_master() && !broker.config.controller.enable {
        return;
    }
    let b = broker.clone();
    broker.life.tasks.spawn(async move { run(b).await });
}

async fn run(broker: Arc<Broker>) {
    let mut wait = FIRST_DELAY;
    loop {
        tokio::select! {
            _ = broker.life.shutdown.cancelled() => return,
            _ = tokio::time::sleep(wait) => {}
            _ = broker.roles.master_changed.notified() => {}
        }
        wait = PERIOD;
        if broker.is_master() {
            continue;
        }
        let master = broker.roles.master_addr.read_locked().clone();
        let Some(master) = master.filter(|m| *m != broker.broker_addr.to_string()) else {
            continue;
        };
        sync_all(&broker, &master).await;
        check_not_ahead(&broker, &master).await;
    }
}

async fn fetch(broker: &Broker, master: &str, code: i32) -> Option<RemotingCommand> {
    let request = RemotingCommand::request(code);
    match broker
        .namesrv
        .client
        .invoke_sync(master, request, TIMEOUT)
        .await
    {
        Ok(r) if r.code == response_code::SUCCESS => Some(r),
        Ok(r) => {
            debug!(
                master,
                code,
                response = r.code,
                remark = r.remark(),
                "master answered no data"
            );
            None
        }
        Err(e) => {
            warn!(master, code, error = %e, "metadata sync from the master failed");
            None
        }
    }
}

/// One `syncAll`: topics, consumer offsets, delay offsets, subscription groups.
pub(crate) async fn sync_all(broker: &Arc<Broker>, master: &str) {
    // Read before the table: a topic the table lacks whose data reaches this far was
    // created after the table was read; one whose data all lies below was deleted.
    let master_end = master_commitlog_end(broker, master).await;
    if let Some(r) = fetch(broker, master, request_code::GET_ALL_TOPIC_CONFIG).await {
        match json::from_slice::<TopicConfigSerializeWrapper>("topicConfigTable", &r.body) {
            Ok(wrapper) => {
                let store = &broker.storage.store;
                broker.storage.topics.replace_from_master(wrapper, |topic| {
                    match (master_end, store.topic_phy_end(topic)) {
                        (Some(master_end), Some(data_end)) => data_end > master_end,
                        (Some(_), None) => false,
                        (None, _) => true,
                    }
                });
            }
            Err(e) => warn!(master, error = %e, "undecodable topic configs from the master"),
        }
    }
    if let Some(r) = fetch(broker, master, request_code::GET_ALL_CONSUMER_OFFSET).await {
        if let Err(e) = broker.consumers.offsets.put_all_from_master(&r.body) {
            warn!(master, error = %e, "undecodable consumer offsets from the master");
        }
    }
    if let Some(r) = fetch(broker, master, request_code::GET_ALL_DELAY_OFFSET).await {
        if let Err(e) = broker.deferred.delay_offsets.replace_from_master(&r.body) {
            warn!(master, error = %e, "undecodable delay offsets from the master");
        }
    }
    if let Some(r) = fetch(
        broker,
        master,
        request_code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
    )
    .await
    {
        match broker.consumers.subscriptions.replace_from_master(&r.body) {
            Ok(true) => info!(master, "subscription groups copied from the master"),
            Ok(false) => {}
            Err(e) => warn!(master, error = %e, "undecodable subscription groups from the master"),
        }
    }
    let b = broker.clone();
    let _ = tokio::task::spawn_blocking(move || {
        b.consumers.offsets.persist(false);
        b.deferred.delay_offsets.persist();
    })
    .await;
    debug!(master, "metadata synchronised from the master");
}

/// The end of the master's commitlog (`commitLogMaxOffset` of its runtime info).
async fn master_commitlog_end(broker: &Broker, master: &str) -> Option<i64> {
    let r = fetch(broker, master, request_code::GET_BROKER_RUNTIME_INFO).await?;
    let kv = json::from_slice::<KvTable>("runtimeInfo", &r.body).ok()?;
    kv.table.get("commitLogMaxOffset")?.parse().ok()
}

/// Logs an error when this slave's commitlog ends beyond its master's.
async fn check_not_ahead(broker: &Broker, master: &str) {
    let master_end = master_commitlog_end(broker, master);
    if let Some((own, master_max)) =
        ahead_of_master(|| broker.storage.store.raw_write_end(), master_end).await
    {
        error!(
            master,
            slave_offset = own,
            master_offset = master_max,
            "this slave's commitlog ends beyond its master's: the master lost data this slave \
             holds, or this slave followed another master. Replication is refused rather than \
             forked; repair by hand (truncate or empty this slave's store)"
        );
    }
}

/// This slave's commitlog end and its master's, when the slave's is beyond. The own
/// end is read before the master is asked: all it holds then came from the master,
/// which had it before it answered, so only a real divergence counts. Read after,
/// it would count what the master wrote and sent while answering.
async fn ahead_of_master(
    own_end: impl Fn() -> i64,
    master_end: impl std::future::Future<Output = Option<i64>>,
) -> Option<(i64, i64)> {
    let own = own_end();
    let master_max = master_end.await?;
    (own > master_max).then_some((own, master_max))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicI64, Ordering};

    use super::*;

    #[tokio::test]
    async fn what_replicates_while_the_master_is_asked_is_no_divergence() {
        // The master answers 1_500; by the time its answer is read the slave has
        // replicated what the master wrote meanwhile, up to 1_800.
        let own = AtomicI64::new(1_000);
        let master = async {
            own.store(1_800, Ordering::SeqCst);
            Some(1_500)
        };
        assert_eq!(
            ahead_of_master(|| own.load(Ordering::SeqCst), master).await,
            None
        );
    }

    #[tokio::test]
    async fn a_slave_holding_more_than_its_master_is_reported() {
        let master = async { Some(1_500) };
        assert_eq!(
            ahead_of_master(|| 2_000, master).await,
            Some((2_000, 1_500))
        );
        // Level, or a master that does not answer: nothing to say.
        assert_eq!(ahead_of_master(|| 1_500, async { Some(1_500) }).await, None);
        assert_eq!(ahead_of_master(|| 2_000, async { None }).await, None);
    }
}
