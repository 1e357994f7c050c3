//! Concurrent consumption (Java `ConsumeMessageConcurrentlyService`): batches of
//! `consumeMessageBatchMaxSize` messages on up to `consumeThreadMax` listener calls at
//! once; failed messages are sent back to the broker (clustering) or dropped
//! (broadcasting), and the queue's committed offset is the smallest offset still
//! cached. Calls running past `consumeTimeout` have their messages sent back.

use std::sync::Arc;
use std::time::Duration;

use tracing::warn;
use vostok_remoting::protocol::body::MessageQueue;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::BoxFuture;

use super::service::ConsumeMessageService;
use crate::consumer::core::ConsumerCore;
use crate::consumer::listener::{
    ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, MessageListenerConcurrently,
};
use crate::consumer::process_queue::ProcessQueue;

impl ConsumeMessageService {
    /// One concurrent listener call and its result handling (Java
    /// `ConsumeRequest.run` + `processConsumeResult`).
    pub(super) fn consume_concurrently(
        self: Arc<Self>,
        core: Arc<ConsumerCore>,
        listener: Arc<dyn MessageListenerConcurrently>,
        mq: MessageQueue,
        pq: Arc<ProcessQueue>,
        msgs: Vec<MessageExt>,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let Ok(_permit) = self.permits.clone().acquire_owned().await else {
                return;
            };
            if pq.is_dropped() {
                return;
            }
            pq.begin_consume();
            pq.mark_started(msgs.iter().map(|m| m.queue_offset));
            let mut ctx = ConsumeConcurrentlyContext {
                message_queue: mq.clone(),
                delay_level_when_next_consume: 0,
                ack_index: i32::MAX,
            };
            let call = self.hook_call(&core);
            self.run_hooks(&call, &mq, &msgs, None);
            let status = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                listener.consume_message(&msgs, &mut ctx)
            }))
            .unwrap_or_else(|_| {
                warn!(group = %self.group, %mq, "listener panicked; messages will be retried");
                ConsumeConcurrentlyStatus::ReconsumeLater
            });
            let ok = status == ConsumeConcurrentlyStatus::ConsumeSuccess;
            self.run_hooks(
                &call,
                &mq,
                &msgs,
                Some((
                    if ok {
                        "CONSUME_SUCCESS"
                    } else {
                        "RECONSUME_LATER"
                    },
                    ok,
                )),
            );
            let ack = if ok {
                (ctx.ack_index.max(-1) as i64).min(msgs.len() as i64 - 1)
            } else {
                -1
            };
            let failed = &msgs[(ack + 1) as usize..];
            let mut retry_locally = Vec::new();
            if !failed.is_empty() {
                if core.clustering() {
                    for m in failed {
                        if let Err(e) = core
                            .send_back(m, &mq.broker_name, ctx.delay_level_when_next_consume)
                            .await
                        {
                            warn!(msg_id = %m.msg_id(), error = %e, "send-back failed; retrying locally");
                            let mut again = m.clone();
                            again.reconsume_times += 1;
                            retry_locally.push(again);
                        }
                    }
                } else {
                    for m in failed {
                        warn!(msg_id = %m.msg_id(), "broadcasting consumption failed; message dropped");
                    }
                }
            }
            let done = msgs
                .iter()
                .map(|m| m.queue_offset)
                .filter(|o| !retry_locally.iter().any(|r| r.queue_offset == *o));
            if let Some(offset) = pq.remove(done) {
                // Also when the queue is being dropped: the commit that follows must cover
                // what this call consumed, or the next owner would consume it again.
                core.offsets.update(&mq, offset, true);
            }
            pq.end_consume();
            if !retry_locally.is_empty() && !pq.is_dropped() {
                let shared = self.clone();
                let core2 = core.clone();
                core.tracker.spawn(async move {
                tokio::select! {
                    _ = core2.shutdown.cancelled() => {}
                    _ = tokio::time::sleep(Duration::from_secs(5)) => {
                        let listener = listener.clone();
                        shared.consume_concurrently(core2, listener, mq, pq, retry_locally).await;
                    }
                }
            });
            }
        })
    }
}

/// Periodically sends back messages whose listener call exceeded `consumeTimeout`
/// (Java `cleanExpireMsg`), so one stuck call cannot hold a queue's offset forever.
pub(super) fn spawn_timeout_sweeper(service: &ConsumeMessageService, core: Arc<ConsumerCore>) {
    if service.listener().is_some_and(|l| l.is_orderly()) {
        return;
    }
    let timeout = service.config.consume_timeout;
    let period = timeout
        .min(Duration::from_secs(60))
        .max(Duration::from_millis(100));
    let core2 = core.clone();
    core.tracker.spawn(async move {
        loop {
            tokio::select! {
                _ = core2.shutdown.cancelled() => return,
                _ = tokio::time::sleep(period) => {}
            }
            let pqs = core2.process_queues();
            for (mq, pq) in pqs {
                for m in pq.expired(timeout) {
                    warn!(group = %core2.group, msg_id = %m.msg_id(), "consume timeout; sending the message back");
                    if core2.clustering() && core2.send_back(&m, &mq.broker_name, 3).await.is_err() {
                        continue;
                    }
                    if let Some(offset) = pq.remove([m.queue_offset]) {
                        core2.offsets.update(&mq, offset, true);
                    }
                }
            }
        }
    });
}
