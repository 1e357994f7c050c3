//! One async function per RPC a client makes (RocketMQ's `MQClientAPIImpl`).
//!
//! Each builds the request from typed headers, calls the broker or name server and
//! turns the answer into a typed result; a non-success code becomes
//! [`ClientError::Broker`] with its code and remark.

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;
use vostok_remoting::protocol::body::{
    ConsumerIdList, HeartbeatData, LockBatchRequestBody, LockBatchResponseBody, MessageQueue,
};
use vostok_remoting::protocol::header::*;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::route::TopicRouteData;
use vostok_remoting::protocol::{json, request_code, response_code};
use vostok_remoting::support::latency_trace::{self, Stage};
use vostok_remoting::{RemotingClient, RemotingCommand};

use crate::error::{ClientError, Result};

pub(crate) async fn invoke(
    client: &RemotingClient,
    addr: &str,
    request: RemotingCommand,
    timeout: Duration,
) -> Result<RemotingCommand> {
    client
        .invoke_sync(addr, request, timeout)
        .await
        .map_err(|e| ClientError::remoting(addr, e))
}

pub(crate) async fn invoke_oneway(
    client: &RemotingClient,
    addr: &str,
    request: RemotingCommand,
    timeout: Duration,
) -> Result<()> {
    client
        .invoke_oneway(addr, request, timeout)
        .await
        .map_err(|e| ClientError::remoting(addr, e))
}

/// SUCCESS or a [`ClientError::Broker`].
pub(crate) fn expect_success(addr: &str, response: RemotingCommand) -> Result<RemotingCommand> {
    if response.code == response_code::SUCCESS {
        Ok(response)
    } else {
        Err(ClientError::broker(addr, response.code, response.remark()))
    }
}

pub(crate) fn decode_header<H: CommandHeader>(addr: &str, response: &RemotingCommand) -> Result<H> {
    response
        .decode_header::<H>()
        .map_err(|source| ClientError::Header {
            addr: addr.to_owned(),
            source,
        })
}

/// GET_ROUTEINFO_BY_TOPIC; `None` when the name server has no route (TOPIC_NOT_EXIST).
pub(crate) async fn get_topic_route(
    client: &RemotingClient,
    addr: &str,
    topic: &str,
    timeout: Duration,
) -> Result<Option<TopicRouteData>> {
    let header = GetRouteInfoRequestHeader {
        topic: topic.to_owned(),
        accept_standard_json_only: None,
    };
    let request =
        RemotingCommand::request_with_header(request_code::GET_ROUTEINFO_BY_TOPIC, &header);
    let response = invoke(client, addr, request, timeout).await?;
    match response.code {
        response_code::SUCCESS => Ok(Some(TopicRouteData::decode(&response.body)?)),
        response_code::TOPIC_NOT_EXIST => Ok(None),
        code => Err(ClientError::broker(addr, code, response.remark())),
    }
}

/// HEART_BEAT; returns the broker's version ordinal.
pub(crate) async fn heartbeat(
    client: &RemotingClient,
    addr: &str,
    data: Bytes,
    timeout: Duration,
) -> Result<i32> {
    let request = RemotingCommand::request(request_code::HEART_BEAT).with_body(data);
    let response = expect_success(addr, invoke(client, addr, request, timeout).await?)?;
    Ok(response.version)
}

pub(crate) fn encode_heartbeat(data: &HeartbeatData) -> Bytes {
    Bytes::from(data.encode())
}

/// UNREGISTER_CLIENT for one group.
pub(crate) async fn unregister_client(
    client: &RemotingClient,
    addr: &str,
    header: &UnregisterClientRequestHeader,
    timeout: Duration,
) -> Result<()> {
    let request = RemotingCommand::request_with_header(request_code::UNREGISTER_CLIENT, header);
    expect_success(addr, invoke(client, addr, request, timeout).await?)?;
    Ok(())
}

/// GET_CONSUMER_LIST_BY_GROUP.
pub(crate) async fn get_consumer_id_list(
    client: &RemotingClient,
    addr: &str,
    group: &str,
    timeout: Duration,
) -> Result<Vec<String>> {
    let header = GetConsumerListByGroupRequestHeader {
        consumer_group: group.to_owned(),
    };
    let request =
        RemotingCommand::request_with_header(request_code::GET_CONSUMER_LIST_BY_GROUP, &header);
    let response = expect_success(addr, invoke(client, addr, request, timeout).await?)?;
    let list: ConsumerIdList = json::from_slice("ConsumerIdList", &response.body)?;
    Ok(list.consumer_id_list)
}

/// QUERY_CONSUMER_OFFSET; `None` on QUERY_NOT_FOUND.
pub(crate) async fn query_consumer_offset(
    client: &RemotingClient,
    addr: &str,
    header: &QueryConsumerOffsetRequestHeader,
    timeout: Duration,
) -> Result<Option<i64>> {
    let request = RemotingCommand::request_with_header(request_code::QUERY_CONSUMER_OFFSET, header);
    let response = invoke(client, addr, request, timeout).await?;
    match response.code {
        response_code::SUCCESS => Ok(Some(
            decode_header::<QueryConsumerOffsetResponseHeader>(addr, &response)?.offset,
        )),
        response_code::QUERY_NOT_FOUND => Ok(None),
        code => Err(ClientError::broker(addr, code, response.remark())),
    }
}

/// UPDATE_CONSUMER_OFFSET, oneway as the Java offset store sends it, or awaited.
pub(crate) async fn update_consumer_offset(
    client: &RemotingClient,
    addr: &str,
    header: &UpdateConsumerOffsetRequestHeader,
    oneway: bool,
    timeout: Duration,
) -> Result<()> {
    let request =
        RemotingCommand::request_with_header(request_code::UPDATE_CONSUMER_OFFSET, header);
    if oneway {
        invoke_oneway(client, addr, request, timeout).await
    } else {
        expect_success(addr, invoke(client, addr, request, timeout).await?)?;
        Ok(())
    }
}

async fn offset_query<H: CommandHeader>(
    client: &RemotingClient,
    addr: &str,
    code: i32,
    header: &H,
    timeout: Duration,
) -> Result<i64> {
    let request = RemotingCommand::request_with_header(code, header);
    let response = expect_success(addr, invoke(client, addr, request, timeout).await?)?;
    Ok(decode_header::<OffsetResponseHeader>(addr, &response)?.offset)
}

pub(crate) async fn get_max_offset(
    client: &RemotingClient,
    addr: &str,
    mq: &MessageQueue,
    timeout: Duration,
) -> Result<i64> {
    let header = GetMaxOffsetRequestHeader {
        topic: mq.topic.clone(),
        queue_id: mq.queue_id,
        committed: None,
    };
    offset_query(client, addr, request_code::GET_MAX_OFFSET, &header, timeout).await
}

pub(crate) async fn get_min_offset(
    client: &RemotingClient,
    addr: &str,
    mq: &MessageQueue,
    timeout: Duration,
) -> Result<i64> {
    let header = GetMinOffsetRequestHeader {
        topic: mq.topic.clone(),
        queue_id: mq.queue_id,
    };
    offset_query(client, addr, request_code::GET_MIN_OFFSET, &header, timeout).await
}

pub(crate) async fn search_offset(
    client: &RemotingClient,
    addr: &str,
    mq: &MessageQueue,
    timestamp: i64,
    timeout: Duration,
) -> Result<i64> {
    let header = SearchOffsetRequestHeader {
        topic: mq.topic.clone(),
        queue_id: mq.queue_id,
        timestamp,
        boundary_type: None,
    };
    offset_query(
        client,
        addr,
        request_code::SEARCH_OFFSET_BY_TIMESTAMP,
        &header,
        timeout,
    )
    .await
}

/// What a pull returned (Java `PullStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullStatus {
    Found,
    NoNewMsg,
    NoMatchedMsg,
    OffsetIllegal,
}

/// The answer to one pull (Java `PullResult`); `messages` are decoded but not yet
/// decompressed or filtered.
#[derive(Debug, Clone)]
pub struct PullResult {
    pub status: PullStatus,
    pub next_begin_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
    /// Where the broker suggests the next pull of this queue goes (`suggestWhichBrokerId`).
    pub suggest_which_broker_id: i64,
    pub messages: Vec<MessageExt>,
}

/// PULL_MESSAGE (or LITE_PULL_MESSAGE when the lite-pull bit is set).
pub(crate) async fn pull_message(
    client: &RemotingClient,
    addr: &str,
    header: &PullMessageRequestHeader,
    timeout: Duration,
) -> Result<PullResult> {
    let code = if header.sys_flag & PULL_FLAG_LITE_PULL != 0 {
        request_code::LITE_PULL_MESSAGE
    } else {
        request_code::PULL_MESSAGE
    };
    let request = RemotingCommand::request_with_header(code, header);
    let response = invoke(client, addr, request, timeout).await?;
    let status = match response.code {
        response_code::SUCCESS => PullStatus::Found,
        response_code::PULL_NOT_FOUND => PullStatus::NoNewMsg,
        response_code::PULL_RETRY_IMMEDIATELY => PullStatus::NoMatchedMsg,
        response_code::PULL_OFFSET_MOVED => PullStatus::OffsetIllegal,
        code => return Err(ClientError::broker(addr, code, response.remark())),
    };
    let h: PullMessageResponseHeader = decode_header(addr, &response)?;
    let messages = if status == PullStatus::Found {
        MessageExt::decode_all(&response.body)
    } else {
        Vec::new()
    };
    if latency_trace::enabled() {
        let now = latency_trace::now_micros();
        for m in &messages {
            latency_trace::stamp_at(Stage::ClientPulled, m.commit_log_offset, now);
        }
    }
    Ok(PullResult {
        status,
        next_begin_offset: h.next_begin_offset,
        min_offset: h.min_offset,
        max_offset: h.max_offset,
        suggest_which_broker_id: h.suggest_which_broker_id,
        messages,
    })
}

/// CONSUMER_SEND_MSG_BACK.
pub(crate) async fn consumer_send_msg_back(
    client: &RemotingClient,
    addr: &str,
    header: &ConsumerSendMsgBackRequestHeader,
    timeout: Duration,
) -> Result<()> {
    let request =
        RemotingCommand::request_with_header(request_code::CONSUMER_SEND_MSG_BACK, header);
    expect_success(addr, invoke(client, addr, request, timeout).await?)?;
    Ok(())
}

/// LOCK_BATCH_MQ: the queues now locked by this client.
pub(crate) async fn lock_batch_mq(
    client: &RemotingClient,
    addr: &str,
    body: &LockBatchRequestBody,
    timeout: Duration,
) -> Result<BTreeSet<MessageQueue>> {
    let request =
        RemotingCommand::request(request_code::LOCK_BATCH_MQ).with_body(json::to_vec(body));
    let response = expect_success(addr, invoke(client, addr, request, timeout).await?)?;
    let locked: LockBatchResponseBody = json::from_slice("LockBatchResponseBody", &response.body)?;
    Ok(locked.lock_ok_mq_set)
}

/// UNLOCK_BATCH_MQ.
pub(crate) async fn unlock_batch_mq(
    client: &RemotingClient,
    addr: &str,
    body: &LockBatchRequestBody,
    oneway: bool,
    timeout: Duration,
) -> Result<()> {
    let request =
        RemotingCommand::request(request_code::UNLOCK_BATCH_MQ).with_body(json::to_vec(body));
    if oneway {
        invoke_oneway(client, addr, request, timeout).await
    } else {
        expect_success(addr, invoke(client, addr, request, timeout).await?)?;
        Ok(())
    }
}

/// END_TRANSACTION, oneway as in Java.
pub(crate) async fn end_transaction(
    client: &RemotingClient,
    addr: &str,
    header: &EndTransactionRequestHeader,
    remark: Option<String>,
    timeout: Duration,
) -> Result<()> {
    let mut request = RemotingCommand::request_with_header(request_code::END_TRANSACTION, header);
    request.remark = remark.map(String::into_boxed_str);
    invoke_oneway(client, addr, request, timeout).await
}

/// POP_MESSAGE: the response as it came (SUCCESS, POLLING_TIMEOUT, POLLING_FULL and
/// PULL_NOT_FOUND are answers; other codes are errors).
pub(crate) async fn pop_message(
    client: &RemotingClient,
    addr: &str,
    header: &PopMessageRequestHeader,
    timeout: Duration,
) -> Result<RemotingCommand> {
    let request = RemotingCommand::request_with_header(request_code::POP_MESSAGE, header);
    let response = invoke(client, addr, request, timeout).await?;
    match response.code {
        response_code::SUCCESS
        | response_code::POLLING_TIMEOUT
        | response_code::POLLING_FULL
        | response_code::PULL_NOT_FOUND => Ok(response),
        code => Err(ClientError::broker(addr, code, response.remark())),
    }
}

/// ACK_MESSAGE.
pub(crate) async fn ack_message(
    client: &RemotingClient,
    addr: &str,
    header: &AckMessageRequestHeader,
    timeout: Duration,
) -> Result<()> {
    let request = RemotingCommand::request_with_header(request_code::ACK_MESSAGE, header);
    expect_success(addr, invoke(client, addr, request, timeout).await?)?;
    Ok(())
}

/// BATCH_ACK_MESSAGE.
pub(crate) async fn batch_ack_message(
    client: &RemotingClient,
    addr: &str,
    body: &vostok_remoting::protocol::body::BatchAckMessageRequestBody,
    timeout: Duration,
) -> Result<()> {
    let request = RemotingCommand::request(request_code::BATCH_ACK_MESSAGE)
        .with_body(Bytes::from(json::to_vec(body)));
    expect_success(addr, invoke(client, addr, request, timeout).await?)?;
    Ok(())
}

/// CHANGE_MESSAGE_INVISIBLETIME; returns the handle's new times.
pub(crate) async fn change_invisible_time(
    client: &RemotingClient,
    addr: &str,
    header: &ChangeInvisibleTimeRequestHeader,
    timeout: Duration,
) -> Result<ChangeInvisibleTimeResponseHeader> {
    let request =
        RemotingCommand::request_with_header(request_code::CHANGE_MESSAGE_INVISIBLETIME, header);
    let response = expect_success(addr, invoke(client, addr, request, timeout).await?)?;
    decode_header(addr, &response)
}
