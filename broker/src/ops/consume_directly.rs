//! A stored message handed to one online consumer of a group, whose listener runs on
//! it once more (Apache's CONSUME_MESSAGE_DIRECTLY, rocketmq-dashboard's "resend
//! message", `AdminBrokerProcessor.consumeMessageDirectly`). Nothing is stored and no
//! offset moves: the answer is what the listener returned. For
//! CONSUME_MESSAGE_DIRECTLY and the console's message page.

use std::time::Duration;

use bytes::Bytes;
use serde::Deserialize;
use tracing::{debug, info};
use vostok_remoting::protocol::header::ConsumeMessageDirectlyResultRequestHeader;
use vostok_remoting::protocol::message::id::decode_offset_msg_id;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;

use super::{Refusal, Refused};
use crate::state::{Consumers, Storage};

/// How long the client has to answer (its listener runs meanwhile).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// A message to hand to a consumer of `group`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConsumeDirectly {
    pub(crate) group: String,
    /// The client to ask; `None`: the first online client of the group (by id), as
    /// rocketmq-dashboard picks.
    pub(crate) client_id: Option<String>,
    /// The offset message id of the stored message.
    pub(crate) msg_id: String,
    /// When given, the message must belong to this topic.
    pub(crate) topic: Option<String>,
}

/// What the client answered (Java `ConsumeMessageDirectlyResult`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct DirectResult {
    pub(crate) order: bool,
    pub(crate) auto_commit: bool,
    /// `CR_SUCCESS`, `CR_LATER`, `CR_ROLLBACK`, `CR_COMMIT`, `CR_THROW_EXCEPTION`,
    /// `CR_RETURN_NULL`.
    pub(crate) consume_result: Option<String>,
    pub(crate) remark: Option<String>,
    pub(crate) spent_time_mills: i64,
}

/// The client's answer: who answered, its body as sent, and the body read.
#[derive(Debug, Clone)]
pub(crate) struct Consumed {
    pub(crate) client_id: String,
    pub(crate) body: Bytes,
    /// `None` when the body is not the JSON Java writes.
    pub(crate) result: Option<DirectResult>,
}

/// Hands the message to the client and waits for its listener's verdict. Reads the
/// store and the client table; `broker_name` goes in the request to the client.
pub(crate) async fn consume_directly(
    storage: &Storage,
    consumers: &Consumers,
    broker_name: &str,
    request: ConsumeDirectly,
) -> Result<Consumed, Refusal> {
    let (_, offset) = decode_offset_msg_id(&request.msg_id).map_err(|e| {
        Refusal::new(
            Refused::InvalidParameter,
            format!("bad message id {}: {e}", request.msg_id),
        )
    })?;
    let not_found = || {
        Refusal::new(
            Refused::SystemError,
            format!("no message {} on this broker", request.msg_id),
        )
    };
    let raw = storage
        .store
        .select_one_message_by_offset(offset)
        .ok_or_else(not_found)?;
    let message = MessageExt::decode(&raw, false).map_err(|_| not_found())?;
    if let Some(topic) = request.topic.as_deref().filter(|t| !t.is_empty()) {
        if message.topic != topic {
            return Err(not_found());
        }
    }
    let mut online: Vec<_> = consumers
        .clients
        .consumer_group(&request.group)
        .map(|g| g.channels.into_values().collect())
        .unwrap_or_default();
    online.sort_by(|a, b| a.client_id.cmp(&b.client_id));
    let wanted = request.client_id.as_deref().filter(|c| !c.is_empty());
    let Some(client) = online
        .into_iter()
        .find(|c| wanted.is_none_or(|w| w == c.client_id))
    else {
        return Err(Refusal::new(
            Refused::SystemError,
            match wanted {
                Some(id) => format!("The Consumer <{}> <{id}> not online", request.group),
                None => format!("no consumer of group {} is online here", request.group),
            },
        ));
    };
    let header = ConsumeMessageDirectlyResultRequestHeader {
        consumer_group: request.group.clone(),
        client_id: Some(client.client_id.clone()),
        msg_id: Some(request.msg_id.clone()),
        broker_name: Some(broker_name.to_owned()),
        topic: Some(message.topic.clone()),
    };
    let ask = RemotingCommand::request_with_header(request_code::CONSUME_MESSAGE_DIRECTLY, &header)
        .with_body(raw);
    let answer = client
        .channel
        .invoke(ask, CLIENT_TIMEOUT)
        .await
        .map_err(|e| {
            debug!(client = %client.client_id, error = %e, "consume directly not answered");
            Refusal::new(
                Refused::SystemError,
                format!(
                    "consumer <{}> <{}> did not answer: {e}",
                    request.group, client.client_id
                ),
            )
        })?;
    if answer.code != response_code::SUCCESS {
        return Err(Refusal::new(
            Refused::SystemError,
            format!(
                "consumer <{}> <{}> refused: {}",
                request.group,
                client.client_id,
                answer.remark.as_deref().unwrap_or("")
            ),
        ));
    }
    let result = serde_json::from_slice::<DirectResult>(&answer.body).ok();
    info!(group = %request.group, client = %client.client_id, msg_id = %request.msg_id, result = ?result.as_ref().and_then(|r| r.consume_result.as_deref()), "message consumed directly");
    Ok(Consumed {
        client_id: client.client_id,
        body: answer.body,
        result,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_is_read_as_java_writes_it() {
        let body = br#"{"order":false,"autoCommit":true,"consumeResult":"CR_SUCCESS","remark":null,"spentTimeMills":3}"#;
        let r: DirectResult = serde_json::from_slice(body).unwrap();
        assert_eq!(r.consume_result.as_deref(), Some("CR_SUCCESS"));
        assert!(r.auto_commit && !r.order);
        assert_eq!(r.spent_time_mills, 3);
        let partial: DirectResult =
            serde_json::from_slice(br#"{"consumeResult":"CR_LATER"}"#).unwrap();
        assert_eq!(partial.consume_result.as_deref(), Some("CR_LATER"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_group_with_nobody_online_or_a_bad_id_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let handle = crate::ops::testing::broker(dir.path()).await;
        let broker = handle.broker();
        let ask = |msg_id: &str| ConsumeDirectly {
            group: "G".into(),
            client_id: None,
            msg_id: msg_id.into(),
            topic: None,
        };
        let bad = consume_directly(
            &broker.storage,
            &broker.consumers,
            &broker.config.broker_name,
            ask("nothex"),
        )
        .await
        .unwrap_err();
        assert_eq!(bad.kind, Refused::InvalidParameter);
        let missing = consume_directly(
            &broker.storage,
            &broker.consumers,
            &broker.config.broker_name,
            ask("7F00000100002A9F0000000000000000"),
        )
        .await
        .unwrap_err();
        assert!(missing.remark.contains("no message"), "{missing:?}");
        handle.shutdown().await;
    }
}
