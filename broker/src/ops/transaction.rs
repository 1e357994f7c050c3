//! Ending a transaction (docs/commands.md#transactions, docs/flows.md#transaction-flow):
//! commit or roll back a half message, for END_TRANSACTION and gRPC's EndTransaction.

use tracing::{debug, info, warn};
use vostok_remoting::protocol::message::{property, MessageExt};
use vostok_remoting::protocol::topic;

use super::send::SendTables;
use super::stored::stored;
use super::{Refusal, Refused};
use crate::reroute;
use crate::state::transaction::root_of;

/// What the producer decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolution {
    /// Not decided yet: the broker checks back later.
    Unknown,
    Commit,
    Rollback,
}

/// The end of one transaction: its half message and the producer's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EndTransaction {
    pub(crate) producer_group: String,
    /// The half message's queue offset.
    pub(crate) tran_state_table_offset: i64,
    /// The half message's commitlog offset.
    pub(crate) commit_log_offset: i64,
    pub(crate) resolution: Resolution,
    /// The message id the producer names, for the log.
    pub(crate) msg_id: String,
}

/// What an end did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    Committed,
    RolledBack,
    /// The producer does not know yet; nothing changed.
    Undecided,
    /// Another end finished or is finishing this transaction; this one was ignored.
    Duplicate,
}

fn refused(kind: Refused, remark: impl Into<String>) -> Refusal {
    Refusal::new(kind, remark)
}

/// Commits or rolls back a half message.
pub(crate) async fn end_transaction(
    tables: SendTables<'_>,
    request: EndTransaction,
) -> Result<Ended, Refusal> {
    if !tables.is_master() {
        return Err(refused(
            Refused::NotMaster,
            "the broker is a slave: end transactions on the master",
        ));
    }
    if request.resolution == Resolution::Unknown {
        debug!(msg_id = %request.msg_id, "transaction state unknown; waiting for check-back");
        return Ok(Ended::Undecided);
    }
    let half = check_prepared(tables, &request)?;
    let root = root_of(&half.properties, half.queue_offset);
    // Claimed before the (possibly slow, SYNC_FLUSH) commit: a second END_TRANSACTION
    // for the same transaction, racing this one or arriving later, is ignored.
    let Some(claim) = tables.deferred.transactions.claim(root) else {
        debug!(
            root,
            "transaction already finished or being finished; duplicate end ignored"
        );
        return Ok(Ended::Duplicate);
    };
    let ended = if request.resolution == Resolution::Commit {
        let Some(msg) = reroute::restore_committed(&half, tables.broker_addr) else {
            return Err(refused(
                Refused::SystemError,
                "half message lacks its real topic",
            ));
        };
        let result = tables.storage.store.put_message(msg).await;
        if let Err(refusal) = stored(
            tables.config.store.max_message_size,
            result,
            half.queue_id,
            None,
        ) {
            warn!(root, remark = %refusal.remark, "transaction commit not stored");
            return Err(refusal);
        }
        tables.observed.count_put(1);
        let real_topic = half.property(property::REAL_TOPIC).unwrap_or_default();
        tables.observed.metrics.events.committed(
            real_topic,
            half.born_timestamp,
            vostok_remoting::support::time::now_millis(),
        );
        info!(root, msg_id = %request.msg_id, "transaction committed");
        Ended::Committed
    } else {
        let real_topic = half.property(property::REAL_TOPIC).unwrap_or_default();
        tables.observed.metrics.events.rolled_back(real_topic);
        info!(root, msg_id = %request.msg_id, "transaction rolled back");
        Ended::RolledBack
    };
    claim.finish();
    if !tables
        .deferred
        .transactions
        .write_op(&tables.storage.store, tables.broker_addr, root)
        .await
    {
        return Err(refused(
            Refused::SystemError,
            "cannot record the transaction outcome",
        ));
    }
    Ok(ended)
}
/// Reads the half message and checks it is the one the producer names.
fn check_prepared(tables: SendTables<'_>, header: &EndTransaction) -> Result<MessageExt, Refusal> {
    let half = tables
        .storage
        .store
        .look_message_by_offset(header.commit_log_offset)
        .ok_or_else(|| {
            refused(
                Refused::SystemError,
                "Find prepared transaction message failed",
            )
        })?;
    if half.topic != topic::TRANS_HALF_TOPIC {
        return Err(refused(
            Refused::SystemError,
            "the commit log offset does not point to a half message",
        ));
    }
    if half.property(property::PRODUCER_GROUP) != Some(header.producer_group.as_str()) {
        return Err(refused(Refused::SystemError, "The producer group wrong"));
    }
    if half.queue_offset != header.tran_state_table_offset {
        return Err(refused(
            Refused::SystemError,
            "The transaction state table offset wrong",
        ));
    }
    if half.commit_log_offset != header.commit_log_offset {
        return Err(refused(Refused::SystemError, "The commit log offset wrong"));
    }
    Ok(half)
}

#[cfg(test)]
mod tests {
    use vostok_remoting::protocol::message::id::decode_offset_msg_id;
    use vostok_remoting::protocol::message::property::Properties;
    use vostok_remoting::protocol::message::sysflag;

    use super::super::send::{send, tests::to};
    use super::super::testing::{broker, peer};
    use super::*;
    use crate::state::Broker;

    /// A half message stored by a send, and the end that names it.
    async fn half(broker: &Broker, resolution: Resolution) -> EndTransaction {
        let mut props = Properties::new();
        props.insert(property::TRANSACTION_PREPARED, "true");
        props.insert(property::PRODUCER_GROUP, "ops-tx");
        let mut request = to("ops-tx-topic");
        request.properties = props.into_string();
        request.sys_flag = sysflag::TRANSACTION_PREPARED_TYPE;
        let stored = send(SendTables::of(broker), peer(), request).await.unwrap();
        let (_, commit_log_offset) = decode_offset_msg_id(&stored.msg_id).unwrap();
        EndTransaction {
            producer_group: "ops-tx".into(),
            tran_state_table_offset: stored.queue_offset,
            commit_log_offset,
            resolution,
            msg_id: stored.msg_id,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_commit_stores_the_message_once() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let b = handle.broker();
        let end = half(b, Resolution::Commit).await;
        assert_eq!(
            end_transaction(SendTables::of(b), end.clone()).await,
            Ok(Ended::Committed)
        );
        assert_eq!(
            end_transaction(SendTables::of(b), end).await,
            Ok(Ended::Duplicate)
        );
        assert!(b.storage.topics.get("ops-tx-topic").is_some());
        let undecided = half(b, Resolution::Unknown).await;
        assert_eq!(
            end_transaction(SendTables::of(b), undecided).await,
            Ok(Ended::Undecided)
        );
        handle.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_end_naming_another_half_message_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let b = handle.broker();
        let mut end = half(b, Resolution::Rollback).await;
        end.producer_group = "someone-else".into();
        let refusal = end_transaction(SendTables::of(b), end.clone())
            .await
            .unwrap_err();
        assert_eq!(refusal.kind, Refused::SystemError);
        end.producer_group = "ops-tx".into();
        assert_eq!(
            end_transaction(SendTables::of(b), end).await,
            Ok(Ended::RolledBack)
        );
        handle.shutdown().await;
    }
}
