//! EndTransaction (Apache's `EndTransactionActivity`; docs/grpc.md#transactions): an
//! END_TRANSACTION for the broker's own transaction path. The transaction id is the
//! half message's offset message id (SendMessage answers it, a check-back sends it), so
//! the half message is found without a table of open transactions; the producer group
//! is the topic, as every gRPC producer's half message records it.

use vostok_remoting::protocol::header::EndTransactionRequestHeader;
use vostok_remoting::protocol::message::id::decode_offset_msg_id;
use vostok_remoting::protocol::message::sysflag;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;

use super::context::RequestContext;
use super::endpoint::GrpcService;
use super::proto::{
    Code, EndTransactionRequest, EndTransactionResponse, Status, TransactionResolution,
    TransactionSource,
};
use super::status::{from_remoting, ok, status};
use crate::processor;

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
    let store = svc.broker.store.clone();
    let half = tokio::task::spawn_blocking(move || store.look_message_by_offset(commit_log_offset))
        .await
        .ok()
        .flatten()
        .ok_or_else(invalid)?;
    let commit_or_rollback = match TransactionResolution::try_from(request.resolution) {
        Ok(TransactionResolution::Commit) => sysflag::TRANSACTION_COMMIT_TYPE,
        Ok(TransactionResolution::Rollback) => sysflag::TRANSACTION_ROLLBACK_TYPE,
        _ => sysflag::TRANSACTION_NOT_TYPE,
    };
    let header = EndTransactionRequestHeader {
        producer_group: topic.clone(),
        tran_state_table_offset: half.queue_offset,
        commit_log_offset,
        commit_or_rollback,
        from_transaction_check: Some(request.source == TransactionSource::SourceServerCheck as i32),
        msg_id: request.message_id.clone(),
        transaction_id: Some(request.transaction_id.clone()),
        topic: Some(topic),
    };
    let command = RemotingCommand::request_with_header(request_code::END_TRANSACTION, &header);
    let channel = svc.channel_for(ctx);
    let response = processor::transaction::end_transaction(&svc.broker, &channel, command).await;
    if response.code == response_code::SUCCESS {
        Ok(())
    } else {
        Err(from_remoting(response.code, response.remark()))
    }
}
