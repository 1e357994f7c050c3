//! Hooks around sends and consumption, as RocketMQ's `SendMessageHook`,
//! `CheckForbiddenHook` and `ConsumeMessageHook`.
//!
//! Send hooks run once per attempt (a retried send calls them again), in registration
//! order: `check_forbidden` first, then `send_message_before`, the request, then
//! `send_message_after` with the result or the error. RPC hooks (ext fields on every
//! request, e.g. ACL signatures) are [`vostok_remoting::RpcHook`]s given in the config.

use std::sync::Arc;
use std::time::Duration;

use vostok_remoting::protocol::body::MessageQueue;

use crate::message::{Message, MessageExt};
use crate::producer::send_result::SendResult;

/// How a send was issued (Java `CommunicationMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommunicationMode {
    Sync,
    Async,
    Oneway,
}

/// What a send hook sees about one attempt.
#[derive(Debug)]
pub struct SendMessageContext<'a> {
    pub producer_group: &'a str,
    /// The message as sent (topic with namespace, UNIQ_KEY set; body uncompressed).
    pub message: &'a Message,
    pub mq: &'a MessageQueue,
    pub broker_addr: &'a str,
    pub born_host: Option<String>,
    pub communication_mode: CommunicationMode,
    pub namespace: &'a str,
    /// Set before `send_message_after` on success.
    pub send_result: Option<&'a SendResult>,
    /// Set before `send_message_after` on failure.
    pub error: Option<String>,
    /// Set before `send_message_after`: time since the request was queued.
    pub elapsed: Option<Duration>,
}

pub trait SendMessageHook: Send + Sync {
    fn hook_name(&self) -> &str;
    fn send_message_before(&self, context: &SendMessageContext<'_>);
    fn send_message_after(&self, context: &SendMessageContext<'_>);
}

/// What a check-forbidden hook sees before the request is built.
#[derive(Debug)]
pub struct CheckForbiddenContext<'a> {
    pub producer_group: &'a str,
    pub message: &'a Message,
    pub mq: &'a MessageQueue,
    pub broker_addr: &'a str,
    pub communication_mode: CommunicationMode,
    pub namespace: &'a str,
}

/// Refuses a send by returning the reason; the send fails with
/// [`crate::ClientError::Forbidden`] and is not retried.
pub trait CheckForbiddenHook: Send + Sync {
    fn hook_name(&self) -> &str;
    fn check_forbidden(&self, context: &CheckForbiddenContext<'_>) -> Result<(), String>;
}

/// What a consume hook sees around one listener call.
#[derive(Debug)]
pub struct ConsumeMessageContext<'a> {
    pub consumer_group: &'a str,
    pub mq: &'a MessageQueue,
    pub messages: &'a [MessageExt],
    /// Set for `consume_message_after`: `CONSUME_SUCCESS`, `RECONSUME_LATER`, ...
    pub status: Option<&'static str>,
    pub success: bool,
    /// Names one listener call: the same in its before and after calls (Java trace's
    /// `requestId`); empty when no hook was registered when the call began.
    pub request_id: &'a str,
    /// Set for `consume_message_after`: how long the listener call took.
    pub elapsed: Option<Duration>,
}

pub trait ConsumeMessageHook: Send + Sync {
    fn hook_name(&self) -> &str;
    fn consume_message_before(&self, context: &ConsumeMessageContext<'_>);
    fn consume_message_after(&self, context: &ConsumeMessageContext<'_>);
}

pub(crate) type SendHooks = Vec<Arc<dyn SendMessageHook>>;
pub(crate) type ForbiddenHooks = Vec<Arc<dyn CheckForbiddenHook>>;
pub(crate) type ConsumeHooks = Vec<Arc<dyn ConsumeMessageHook>>;
