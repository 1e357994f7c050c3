//! A reply to a request message (docs/semantics.md#request-reply, Apache's
//! `ReplyMessageProcessor`): a replier's answer on `<cluster>_REPLY_TOPIC`, checked as a
//! single send is ([`super::send::check_message`]). The broker pushes it at once to the
//! requesting client named by `REPLY_TO_CLIENT` (PUSH_REPLY_MESSAGE_TO_CLIENT over that
//! client's producer connection) and, with `storeReplyMessageEnable`, stores it too.

use std::time::Duration;

use bytes::Bytes;
use tracing::{debug, warn};
use vostok_remoting::protocol::header::ReplyMessageRequestHeader;
use vostok_remoting::protocol::message::property::{self, Properties};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::support::time::now_millis;
use vostok_remoting::RemotingCommand;
use vostok_store::MessageInner;

use super::send::{check_message, Destination, SendTables};
use super::stored::choose_queue;
use super::{Client, Refusal};

/// How long the requester has to acknowledge a pushed reply (Apache's `callClient`).
const PUSH_TIMEOUT: Duration = Duration::from_secs(10);

/// A replier's answer.
#[derive(Debug, Clone)]
pub(crate) struct ReplyRequest {
    pub(crate) producer_group: String,
    pub(crate) to: Destination,
    pub(crate) sys_flag: i32,
    pub(crate) born_timestamp: i64,
    pub(crate) flag: i32,
    /// The encoded property string; `REPLY_TO_CLIENT` names the requester.
    pub(crate) properties: String,
    pub(crate) body: Bytes,
    pub(crate) reconsume_times: Option<i32>,
    /// As the replier sent it, passed on to the requester.
    pub(crate) unit_mode: Option<bool>,
}

/// What became of a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Replied {
    pub(crate) queue_id: i32,
    /// The stored copy's offset message id and queue offset, when one was stored.
    pub(crate) stored: Option<(String, i64)>,
    /// Whether the push reached the requester; the error is the words for the replier
    /// (the reply may still have been stored).
    pub(crate) pushed: Result<(), String>,
}

/// Pushes a reply sent by `client` to its requester, and stores it when the broker
/// keeps replies.
pub(crate) async fn reply(
    tables: SendTables<'_>,
    client: Client<'_>,
    request: ReplyRequest,
) -> Result<Replied, Refusal> {
    let topic_config = check_message(tables, client, &request.to)?;
    let queue_id = choose_queue(request.to.queue_id, &topic_config);
    let pushed = push_reply(tables, client, &request).await;
    let mut stored = None;
    if tables.config.store_reply_message_enable {
        let properties = Properties::decode(&request.properties).into_string();
        let msg = MessageInner {
            flag: request.flag,
            sys_flag: request.sys_flag,
            born_timestamp: request.born_timestamp,
            born_host: client.addr,
            reconsume_times: request.reconsume_times.unwrap_or(0),
            ..MessageInner::new(
                request.to.topic.clone(),
                queue_id,
                request.body.clone(),
                properties,
                tables.broker_addr,
            )
        };
        let result = tables.storage.store.put_message(msg).await;
        tables.observed.count_put(1);
        match result.append.filter(|_| result.status.is_stored()) {
            Some(append) => stored = Some((append.msg_id, append.queue_offset)),
            None => {
                warn!(topic = %request.to.topic, status = result.status.as_str(), "reply message not stored")
            }
        }
    }
    Ok(Replied {
        queue_id,
        stored,
        pushed,
    })
}

/// Pushes the reply to the client named in `REPLY_TO_CLIENT`, over a connection of
/// one of its producers; the error is the answer's remark.
async fn push_reply(
    tables: SendTables<'_>,
    client: Client<'_>,
    request: &ReplyRequest,
) -> Result<(), String> {
    let mut props = Properties::decode(&request.properties);
    let Some(client_id) = props
        .get(property::MESSAGE_REPLY_TO_CLIENT)
        .map(str::to_owned)
    else {
        warn!("reply message without REPLY_TO_CLIENT");
        return Err(format!(
            "reply message properties[{}] is null",
            property::MESSAGE_REPLY_TO_CLIENT
        ));
    };
    let Some(requester) = tables
        .consumers
        .clients
        .producer_channel_of_client(&client_id)
    else {
        warn!(client = %client_id, "push reply message fail: no connection of the requester");
        return Err(format!(
            "push reply message fail, channel of <{client_id}> not found."
        ));
    };
    props.insert(property::PUSH_REPLY_TIME, now_millis().to_string());
    let born = client.addr;
    let to = &request.to;
    let push_header = ReplyMessageRequestHeader {
        producer_group: request.producer_group.clone(),
        topic: to.topic.clone(),
        default_topic: to.default_topic.to_string(),
        default_topic_queue_nums: to.default_topic_queue_nums,
        queue_id: to.queue_id,
        sys_flag: request.sys_flag,
        born_timestamp: request.born_timestamp,
        flag: request.flag,
        properties: Some(props.into_string()),
        reconsume_times: request.reconsume_times,
        unit_mode: request.unit_mode,
        born_host: format!("{}:{}", born.ip(), born.port()),
        store_host: format!("{}:{}", tables.broker_addr.ip(), tables.broker_addr.port()),
        store_timestamp: now_millis(),
    };
    let push = RemotingCommand::request_with_header(
        request_code::PUSH_REPLY_MESSAGE_TO_CLIENT,
        &push_header,
    )
    .with_body(request.body.clone());
    match requester.invoke(push, PUSH_TIMEOUT).await {
        Ok(answer) if answer.code == response_code::SUCCESS => {
            debug!(client = %client_id, "reply pushed to the requester");
            Ok(())
        }
        Ok(answer) => {
            warn!(client = %client_id, code = answer.code, remark = answer.remark(), "the requester refused the reply");
            Err(format!("push reply message to {client_id} fail."))
        }
        Err(e) => {
            warn!(client = %client_id, error = %e, "push reply message failed");
            Err(format!("push reply message to {client_id} fail."))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::send::tests::to;
    use super::super::testing::{broker, peer};
    use super::super::Refused;
    use super::*;

    fn reply_to(topic: &str, properties: String) -> ReplyRequest {
        ReplyRequest {
            producer_group: "ops-replier".to_owned(),
            to: to(topic).to,
            sys_flag: 0,
            born_timestamp: 1,
            flag: 0,
            properties,
            body: Bytes::from_static(b"answer"),
            reconsume_times: None,
            unit_mode: None,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reply_to_a_requester_not_connected_is_stored_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let b = handle.broker();
        let mut props = Properties::default();
        props.insert(property::MESSAGE_REPLY_TO_CLIENT, "gone-client");
        let replied = reply(
            SendTables::of(b),
            peer(),
            reply_to("ops-reply", props.into_string()),
        )
        .await
        .unwrap();
        let remark = replied.pushed.unwrap_err();
        assert!(remark.contains("gone-client"), "{remark}");
        assert_eq!(replied.queue_id, 0);
        if b.config.store_reply_message_enable {
            let (msg_id, offset) = replied.stored.expect("stored copy");
            assert_eq!(offset, 0);
            let (_, at) =
                vostok_remoting::protocol::message::id::decode_offset_msg_id(&msg_id).unwrap();
            let record = b.storage.store.look_message_by_offset(at).unwrap();
            assert_eq!(&record.body[..], b"answer");
        }
        let unnamed = reply(
            SendTables::of(b),
            peer(),
            reply_to("ops-reply", String::new()),
        )
        .await
        .unwrap();
        assert!(unnamed
            .pushed
            .unwrap_err()
            .contains(property::MESSAGE_REPLY_TO_CLIENT));
        handle.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reply_passes_the_single_sends_checks() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let b = handle.broker();
        let refused = reply(
            SendTables::of(b),
            peer(),
            reply_to("bad topic!", String::new()),
        )
        .await;
        assert_eq!(
            refused.err().map(|r| r.kind),
            Some(Refused::InvalidParameter)
        );
        handle.shutdown().await;
    }
}
