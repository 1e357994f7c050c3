//! EndTransaction (Apache's `EndTransactionActivity`; docs/grpc.md#transactions): a
//! typed end for the broker's own transaction operation (`crate::ops::transaction`). The transaction id is the
//! half message's offset message id (SendMessage answers it, a check-back sends it), so
//! the half message is found without a table of open transactions; the producer group
//! is the topic, as every gRPC producer's half message records it.

use vostok_remoting::protocol::message::id::decode_offset_msg_id;

use super::context::RequestContext;
use super::endpoint::GrpcService;
use super::proto::{
    Code, EndTransactionRequest, EndTransactionResponse, Status, TransactionResolution,
    TransactionSource,
};
use super::status::{from_refusal, ok, status};
use crate::ops::send::SendTables;
use crate::ops::transaction::{end_transaction as end_op, EndTransaction, Resolution};

pub(crate) async fn end_transaction(
    svc: &GrpcService,
    ctx: &RequestContext,
    request: EndTransactionRequest,
) -> EndTransactionResponse {
    EndTransactionResponse {
        status: Some(end(svc, ctx, request).await.err().unwrap_or_else(ok)),
    }
}

async fn end(
    svc: &GrpcService,
    ctx: &RequestContext,
    request: EndTransactionRequest,
) -> Result<(), Status> {
    let topic = ctx.name_of(request.topic.as_ref());
    let invalid = || {
        status(
            Code::InvalidTransactionId,
            format!(
                "transaction id {:?} is not one this broker gave",
                request.transaction_id
            ),
        )
    };
    let (_, commit_log_offset) =
        decode_offset_msg_id(request.transaction_id.trim()).map_err(|_| invalid())?;
    let store = svc.broker.storage.store.clone();
    let half = tokio::task::spawn_blocking(move || store.look_message_by_offset(commit_log_offset))
        .await
        .ok()
        .flatten()
        .ok_or_else(invalid)?;
    let resolution = match TransactionResolution::try_from(request.resolution) {
        Ok(TransactionResolution::Commit) => Resolution::Commit,
        Ok(TransactionResolution::Rollback) => Resolution::Rollback,
        _ => Resolution::Unknown,
    };
    if request.source == TransactionSource::SourceServerCheck as i32 {
        tracing::debug!(topic = %topic, "transaction ended from a check-back");
    }
    let end = EndTransaction {
        producer_group: topic,
        tran_state_table_offset: half.queue_offset,
        commit_log_offset,
        resolution,
        msg_id: request.message_id.clone(),
    };
    end_op(SendTables::of(&svc.broker), end)
        .await
        .map(|_| ())
        .map_err(from_refusal)
}
