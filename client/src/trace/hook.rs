//! The trace hooks (Java `SendMessageTraceHookImpl`, `ConsumeMessageTraceHookImpl`,
//! `EndTransactionTraceHookImpl`): each turns what a hook sees into a record for the
//! [`TraceDispatcher`], and never waits.
//!
//! * Pub: after a send that the broker answered (a failed request writes nothing, as in
//!   Java) and whose answer does not switch tracing off (`TRACE_ON=false`).
//! * SubBefore and SubAfter: around each listener call, one bean per message, both with
//!   the call's request id; messages stored with `TRACE_ON=false` are left out.
//! * EndTransaction: after the producer ends a transaction.

use std::sync::Arc;

use vostok_remoting::protocol::message::{property, MessageExt};
use vostok_remoting::protocol::topic;
use vostok_remoting::support::time::now_millis;

use super::data::{MessageType, TraceBean, TraceContext, TraceType};
use super::dispatcher::TraceDispatcher;
use crate::hook::{ConsumeMessageContext, ConsumeMessageHook, SendMessageContext, SendMessageHook};
use crate::message::Message;

/// Java writes an absent value with `StringBuilder.append(null)`: `null`.
fn or_null(v: Option<&str>) -> String {
    v.unwrap_or("null").to_owned()
}

/// Java `MessageType` of a message being sent.
fn msg_type(m: &Message) -> MessageType {
    if m.properties.is_transaction_prepared() {
        MessageType::TransMsgHalf
    } else if m.property(property::DELAY_TIME_LEVEL).is_some()
        || m.property(property::TIMER_DELIVER_MS).is_some()
        || m.property(property::TIMER_DELAY_SEC).is_some()
        || m.property(property::TIMER_DELAY_MS).is_some()
    {
        MessageType::DelayMsg
    } else {
        MessageType::NormalMsg
    }
}

/// Writes Pub records.
pub struct SendMessageTraceHook {
    dispatcher: Arc<TraceDispatcher>,
}

impl SendMessageTraceHook {
    pub fn new(dispatcher: Arc<TraceDispatcher>) -> Self {
        SendMessageTraceHook { dispatcher }
    }
}

impl SendMessageHook for SendMessageTraceHook {
    fn hook_name(&self) -> &str {
        "SendMessageTraceHook"
    }

    fn send_message_before(&self, _context: &SendMessageContext<'_>) {}

    fn send_message_after(&self, context: &SendMessageContext<'_>) {
        let m = context.message;
        if m.topic.starts_with(self.dispatcher.topic()) {
            return;
        }
        let Some(result) = context.send_result else {
            return;
        };
        let Some(region) = &result.region_id else {
            return;
        };
        if !result.trace_on {
            return;
        }
        let cost = context.elapsed.unwrap_or_default().as_millis();
        let cost = i32::try_from(cost).unwrap_or(i32::MAX);
        let mut ctx = TraceContext::new(TraceType::Pub);
        ctx.time_stamp = now_millis() - i64::from(cost);
        ctx.region_id = region.clone();
        ctx.group_name = topic::unwrap_namespace(context.namespace, context.producer_group);
        ctx.cost_time = cost;
        ctx.success = result.send_status == crate::SendStatus::SendOk;
        ctx.beans.push(TraceBean {
            topic: topic::unwrap_namespace(context.namespace, &m.topic),
            msg_id: result.msg_id.clone(),
            offset_msg_id: result.offset_msg_id.clone(),
            tags: or_null(m.tags()),
            keys: or_null(m.property(property::KEYS)),
            store_host: context.broker_addr.to_owned(),
            body_length: i32::try_from(m.body.len()).unwrap_or(i32::MAX),
            msg_type: msg_type(m),
            ..TraceBean::default()
        });
        self.dispatcher.append(ctx);
    }
}

/// Writes SubBefore and SubAfter records.
pub struct ConsumeMessageTraceHook {
    dispatcher: Arc<TraceDispatcher>,
    namespace: String,
}

impl ConsumeMessageTraceHook {
    pub fn new(dispatcher: Arc<TraceDispatcher>, namespace: String) -> Self {
        ConsumeMessageTraceHook {
            dispatcher,
            namespace,
        }
    }

    /// The messages of a call that are traced, and the region of the last one.
    fn beans(&self, messages: &[MessageExt]) -> (Vec<TraceBean>, String) {
        let mut region = String::new();
        let beans = messages
            .iter()
            .filter(|m| m.property(property::TRACE_SWITCH) != Some("false"))
            .map(|m| {
                region = m.property(property::MSG_REGION).unwrap_or("").to_owned();
                TraceBean {
                    topic: topic::unwrap_namespace(&self.namespace, &m.topic),
                    msg_id: m.msg_id(),
                    tags: or_null(m.tags()),
                    keys: or_null(m.property(property::KEYS)),
                    body_length: m.store_size,
                    retry_times: m.reconsume_times,
                    ..TraceBean::default()
                }
            })
            .collect();
        (beans, region)
    }
}

impl ConsumeMessageHook for ConsumeMessageTraceHook {
    fn hook_name(&self) -> &str {
        "ConsumeMessageTraceHook"
    }

    fn consume_message_before(&self, context: &ConsumeMessageContext<'_>) {
        let (beans, region) = self.beans(context.messages);
        if beans.is_empty() {
            return;
        }
        let mut ctx = TraceContext::new(TraceType::SubBefore);
        ctx.time_stamp = now_millis();
        ctx.region_id = region;
        ctx.group_name = topic::unwrap_namespace(&self.namespace, context.consumer_group);
        ctx.request_id = context.request_id.to_owned();
        ctx.beans = beans;
        self.dispatcher.append(ctx);
    }

    fn consume_message_after(&self, context: &ConsumeMessageContext<'_>) {
        let (beans, region) = self.beans(context.messages);
        if beans.is_empty() {
            return;
        }
        let n = u128::try_from(context.messages.len().max(1)).unwrap_or(1);
        let cost = context.elapsed.unwrap_or_default().as_millis() / n;
        let mut ctx = TraceContext::new(TraceType::SubAfter);
        ctx.time_stamp = now_millis();
        ctx.region_id = region;
        ctx.group_name = topic::unwrap_namespace(&self.namespace, context.consumer_group);
        ctx.request_id = context.request_id.to_owned();
        ctx.success = context.success;
        ctx.cost_time = i32::try_from(cost).unwrap_or(i32::MAX);
        // Java `ConsumeReturnType`: SUCCESS 0, FAILED 4.
        ctx.context_code = if context.success { 0 } else { 4 };
        ctx.beans = beans;
        self.dispatcher.append(ctx);
    }
}

/// What an ended transaction's record is made of (Java `EndTransactionContext`).
pub struct EndTransactionContext<'a> {
    pub namespace: &'a str,
    pub producer_group: &'a str,
    pub message: &'a Message,
    pub broker_addr: &'a str,
    pub msg_id: &'a str,
    pub transaction_id: &'a str,
    /// Java `LocalTransactionState` name: `COMMIT_MESSAGE`, `ROLLBACK_MESSAGE`, `UNKNOW`.
    pub state: &'a str,
    pub from_transaction_check: bool,
}

/// The EndTransaction record of a transaction the producer ended.
pub fn end_transaction_record(e: &EndTransactionContext<'_>) -> TraceContext {
    let mut ctx = TraceContext::new(TraceType::EndTransaction);
    ctx.time_stamp = now_millis();
    ctx.region_id = e
        .message
        .property(property::MSG_REGION)
        .filter(|r| !r.is_empty())
        .unwrap_or("DefaultRegion")
        .to_owned();
    ctx.group_name = topic::unwrap_namespace(e.namespace, e.producer_group);
    ctx.beans.push(TraceBean {
        topic: topic::unwrap_namespace(e.namespace, &e.message.topic),
        msg_id: e.msg_id.to_owned(),
        tags: or_null(e.message.tags()),
        keys: or_null(e.message.property(property::KEYS)),
        store_host: e.broker_addr.to_owned(),
        msg_type: MessageType::TransMsgCommit,
        transaction_id: e.transaction_id.to_owned(),
        transaction_state: e.state.to_owned(),
        from_transaction_check: e.from_transaction_check,
        ..TraceBean::default()
    });
    ctx
}
