//! Subscription groups created, changed or deleted. For
//! UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, DELETE_SUBSCRIPTIONGROUP and the console's
//! group settings page.

use std::sync::Arc;

use tracing::info;
use vostok_remoting::protocol::topic;

use super::{Refusal, Refused};
use crate::state::subscription::SubscriptionGroupConfig;
use crate::state::Broker;

/// A group to delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeleteGroup {
    pub(crate) group: String,
    /// Drop its committed offsets too (else they keep holding retention back, and a
    /// group of the same name starts where this one stopped).
    pub(crate) clean_offset: bool,
}

/// Creates `config.group_name`, or replaces its settings. Changes the group table only,
/// but takes the broker itself (shared) to write the table's file off the async
/// runtime, with the topic table's ([`Broker::persist_configs`]).
pub(crate) async fn update_group(
    broker: &Arc<Broker>,
    config: SubscriptionGroupConfig,
) -> Result<(), Refusal> {
    if let Err(reason) = topic::validate_group(&config.group_name) {
        return Err(Refusal::new(Refused::InvalidParameter, reason));
    }
    info!(group = %config.group_name, retry_max_times = config.retry_max_times, orderly = config.consume_message_orderly, broadcast = config.consume_broadcast_enable, consume_enable = config.consume_enable, "subscription group updated");
    broker.consumers.subscriptions.update(config);
    broker.persist_configs().await;
    Ok(())
}

/// Deletes a group's settings (and its offsets when asked). Deleting a group this
/// broker does not have succeeds, as Apache's does. Changes the consumer tables only;
/// takes the broker itself (shared) to write their files off the async runtime.
pub(crate) async fn delete_group(broker: &Arc<Broker>, delete: DeleteGroup) -> Result<(), Refusal> {
    if delete.group.is_empty() {
        return Err(Refusal::new(
            Refused::InvalidParameter,
            "bad request header: missing groupName",
        ));
    }
    broker.consumers.subscriptions.delete(&delete.group);
    if delete.clean_offset && broker.consumers.offsets.remove_group(&delete.group) {
        let b = broker.clone();
        let _ = tokio::task::spawn_blocking(move || b.consumers.offsets.persist(false)).await;
    }
    info!(group = %delete.group, clean_offset = delete.clean_offset, "subscription group deleted");
    broker.persist_configs().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_group_is_created_changed_and_deleted_with_its_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let handle = testing::broker(dir.path()).await;
        let b = handle.broker();
        let mut config = SubscriptionGroupConfig::new("ops-group");
        config.retry_max_times = 3;
        config.consume_message_orderly = true;
        update_group(b, config.clone()).await.unwrap();
        let kept = b.consumers.subscriptions.get("ops-group").unwrap();
        assert_eq!(
            (kept.retry_max_times, kept.consume_message_orderly),
            (3, true)
        );
        config.consume_enable = false;
        update_group(b, config).await.unwrap();
        assert!(
            !b.consumers
                .subscriptions
                .get("ops-group")
                .unwrap()
                .consume_enable
        );

        b.consumers.offsets.commit("ops-group", "ops-topic", 0, 7);
        let keep_offsets = DeleteGroup {
            group: "ops-group".into(),
            clean_offset: false,
        };
        delete_group(b, keep_offsets).await.unwrap();
        assert!(b.consumers.subscriptions.get("ops-group").is_none());
        assert_eq!(b.consumers.offsets.query("ops-group", "ops-topic", 0), 7);
        let clean = DeleteGroup {
            group: "ops-group".into(),
            clean_offset: true,
        };
        delete_group(b, clean).await.unwrap();
        assert_eq!(b.consumers.offsets.query("ops-group", "ops-topic", 0), -1);

        let kind = |r: Result<(), Refusal>| r.err().map(|r| r.kind);
        let bad = SubscriptionGroupConfig::new("bad group!");
        assert_eq!(
            kind(update_group(b, bad).await),
            Some(Refused::InvalidParameter)
        );
        handle.shutdown().await;
    }
}
