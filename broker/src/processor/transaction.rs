//! END_TRANSACTION (docs/commands.md#transactions, docs/flows.md#transaction-flow): commit
//! or roll back a half message.

use tracing::{debug, info, warn};
use vostok_remoting::protocol::header::EndTransactionRequestHeader;
use vostok_remoting::protocol::message::{property, sysflag, MessageExt};
use vostok_remoting::protocol::response_code;
use vostok_remoting::protocol::topic;
use vostok_remoting::{Channel, RemotingCommand};

use super::{decode_header, error};
use crate::reroute;
use crate::state::transaction::root_of;
use crate::state::Broker;

pub(crate) async fn end_transaction(
    broker: &Broker,
    channel: &Channel,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, EndTransactionRequestHeader);
    if !broker.is_master() {
        return error(
            response_code::SLAVE_NOT_AVAILABLE,
            "the broker is a slave: end transactions on the master",
        );
    }
    let kind = header.commit_or_rollback;
    if kind == sysflag::TRANSACTION_NOT_TYPE {
        debug!(peer = %channel.peer_addr(), msg_id = %header.msg_id, "transaction state unknown; waiting for check-back");
        return RemotingCommand::success();
    }
    if kind != sysflag::TRANSACTION_COMMIT_TYPE && kind != sysflag::TRANSACTION_ROLLBACK_TYPE {
        return error(
            response_code::INVALID_PARAMETER,
            format!("commitOrRollback {kind} is neither 0, 8 nor 12"),
        );
    }
    let half = match check_prepared(broker, &header) {
        Ok(half) => half,
        Err(response) => return response,
    };
    let root = root_of(&half.properties, half.queue_offset);
    // Claimed before the (possibly slow, SYNC_FLUSH) commit: a second END_TRANSACTION
    // for the same transaction, racing this one or arriving later, is ignored.
    let Some(claim) = broker.transactions.claim(root) else {
        debug!(
            root,
            "transaction already finished or being finished; duplicate end ignored"
        );
        return RemotingCommand::success();
    };
    if kind == sysflag::TRANSACTION_COMMIT_TYPE {
        let Some(msg) = reroute::restore_committed(&half, broker.broker_addr) else {
            return error(
                response_code::SYSTEM_ERROR,
                "half message lacks its real topic",
            );
        };
        let result = broker.store.put_message(msg).await;
        let response = super::put_response::put_response(broker, result, half.queue_id, None);
        if !response_code::is_stored(response.code) {
            warn!(
                root,
                code = response.code,
                remark = response.remark(),
                "transaction commit not stored"
            );
            return response;
        }
        broker.count_put(1);
        let real_topic = half.property(property::REAL_TOPIC).unwrap_or_default();
        broker.metrics.events.committed(
            real_topic,
            half.born_timestamp,
            vostok_remoting::support::time::now_millis(),
        );
        info!(root, msg_id = %header.msg_id, "transaction committed");
    } else {
        let real_topic = half.property(property::REAL_TOPIC).unwrap_or_default();
        broker.metrics.events.rolled_back(real_topic);
        info!(root, msg_id = %header.msg_id, "transaction rolled back");
    }
    claim.finish();
    if !broker
        .transactions
        .write_op(&broker.store, broker.broker_addr, root)
        .await
    {
        return error(
            response_code::SYSTEM_ERROR,
            "cannot record the transaction outcome",
        );
    }
    RemotingCommand::success()
}

/// Reads the half message and checks it is the one the producer names.
fn check_prepared(
    broker: &Broker,
    header: &EndTransactionRequestHeader,
) -> Result<MessageExt, RemotingCommand> {
    let half = broker
        .store
        .look_message_by_offset(header.commit_log_offset)
        .ok_or_else(|| {
            error(
                response_code::SYSTEM_ERROR,
                "Find prepared transaction message failed",
            )
        })?;
    if half.topic != topic::TRANS_HALF_TOPIC {
        return Err(error(
            response_code::SYSTEM_ERROR,
            "the commit log offset does not point to a half message",
        ));
    }
    if half.property(property::PRODUCER_GROUP) != Some(header.producer_group.as_str()) {
        return Err(error(
            response_code::SYSTEM_ERROR,
            "The producer group wrong",
        ));
    }
    if half.queue_offset != header.tran_state_table_offset {
        return Err(error(
            response_code::SYSTEM_ERROR,
            "The transaction state table offset wrong",
        ));
    }
    if half.commit_log_offset != header.commit_log_offset {
        return Err(error(
            response_code::SYSTEM_ERROR,
            "The commit log offset wrong",
        ));
    }
    Ok(half)
}
