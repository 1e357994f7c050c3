//! END_TRANSACTION (docs/commands.md#transactions): the header decoded into a typed end
//! for `crate::ops::transaction`, its outcome answered.

use vostok_remoting::protocol::header::EndTransactionRequestHeader;
use vostok_remoting::protocol::message::sysflag;
use vostok_remoting::protocol::response_code;
use vostok_remoting::{Channel, RemotingCommand};

use super::{decode_header, error, refused};
use crate::ops::send::SendTables;
use crate::ops::transaction::{end_transaction as end, EndTransaction, Resolution};
use crate::state::Broker;

pub(crate) async fn end_transaction(
    broker: &Broker,
    channel: &Channel,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, EndTransactionRequestHeader);
    let kind = header.commit_or_rollback;
    let resolution = match kind {
        sysflag::TRANSACTION_NOT_TYPE => Resolution::Unknown,
        sysflag::TRANSACTION_COMMIT_TYPE => Resolution::Commit,
        sysflag::TRANSACTION_ROLLBACK_TYPE => Resolution::Rollback,
        // A slave says it is one before it reads the field, as before.
        _ if !broker.is_master() => Resolution::Unknown,
        _ => {
            return error(
                response_code::INVALID_PARAMETER,
                format!("commitOrRollback {kind} is neither 0, 8 nor 12"),
            )
        }
    };
    tracing::trace!(peer = %channel.peer_addr(), ?resolution, "end transaction");
    let end_request = EndTransaction {
        producer_group: header.producer_group,
        tran_state_table_offset: header.tran_state_table_offset,
        commit_log_offset: header.commit_log_offset,
        resolution,
        msg_id: header.msg_id,
    };
    match end(SendTables::of(broker), end_request).await {
        Ok(_) => RemotingCommand::success(),
        Err(refusal) => refused(refusal),
    }
}
