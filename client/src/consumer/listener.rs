//! What a push consumer's application implements (Java `MessageListenerConcurrently`
//! / `MessageListenerOrderly`), with the context of each call and what it answers.

use std::sync::Arc;

use vostok_remoting::protocol::body::MessageQueue;
use vostok_remoting::protocol::message::MessageExt;

/// What a concurrent listener answers (Java `ConsumeConcurrentlyStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumeConcurrentlyStatus {
    ConsumeSuccess,
    /// Retry later: the messages are sent back to `%RETRY%<group>` (clustering).
    ReconsumeLater,
}

/// What an orderly listener answers (Java `ConsumeOrderlyStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumeOrderlyStatus {
    Success,
    /// Retry the same messages on the same queue after `suspendCurrentQueueTimeMillis`.
    SuspendCurrentQueueAMoment,
}

/// Context of a concurrent listener call (Java `ConsumeConcurrentlyContext`).
#[derive(Debug, Clone)]
pub struct ConsumeConcurrentlyContext {
    pub message_queue: MessageQueue,
    /// Delay level of the send-back on RECONSUME_LATER; 0 lets the broker choose
    /// (`3 + reconsumeTimes`), negative sends straight to the DLQ.
    pub delay_level_when_next_consume: i32,
    /// With CONSUME_SUCCESS, messages after this index are still retried.
    pub ack_index: i32,
}

/// Context of an orderly listener call (Java `ConsumeOrderlyContext`).
#[derive(Debug, Clone)]
pub struct ConsumeOrderlyContext {
    pub message_queue: MessageQueue,
    /// Overrides `suspendCurrentQueueTimeMillis` for this call when positive.
    pub suspend_current_queue_time_millis: i64,
}

/// A listener called with up to `consumeMessageBatchMaxSize` messages of one queue,
/// possibly on several queues at once. It runs on the async runtime: long blocking
/// work belongs in `tokio::task::block_in_place` or a thread of its own.
pub trait MessageListenerConcurrently: Send + Sync + 'static {
    fn consume_message(
        &self,
        msgs: &[MessageExt],
        context: &mut ConsumeConcurrentlyContext,
    ) -> ConsumeConcurrentlyStatus;
}

/// A listener called with the messages of one queue in queue order, one call at a time
/// per queue.
pub trait MessageListenerOrderly: Send + Sync + 'static {
    fn consume_message(
        &self,
        msgs: &[MessageExt],
        context: &mut ConsumeOrderlyContext,
    ) -> ConsumeOrderlyStatus;
}

impl<F> MessageListenerConcurrently for F
where
    F: Fn(&[MessageExt], &mut ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus
        + Send
        + Sync
        + 'static,
{
    fn consume_message(
        &self,
        msgs: &[MessageExt],
        context: &mut ConsumeConcurrentlyContext,
    ) -> ConsumeConcurrentlyStatus {
        self(msgs, context)
    }
}

/// The listener of a push consumer.
#[derive(Clone)]
pub enum MessageListener {
    Concurrently(Arc<dyn MessageListenerConcurrently>),
    Orderly(Arc<dyn MessageListenerOrderly>),
}

impl MessageListener {
    pub fn concurrently(l: impl MessageListenerConcurrently) -> Self {
        MessageListener::Concurrently(Arc::new(l))
    }

    pub fn orderly(l: impl MessageListenerOrderly) -> Self {
        MessageListener::Orderly(Arc::new(l))
    }

    pub(crate) fn is_orderly(&self) -> bool {
        matches!(self, MessageListener::Orderly(_))
    }
}
