//! Orderly consumption (Java `ConsumeMessageOrderlyService`): one queue's messages in
//! queue order, one listener call at a time per queue, under the broker lock of the
//! queue (clustering). A failed call suspends the queue for
//! `suspendCurrentQueueTimeMillis` and consumes the same messages again; messages past
//! `maxReconsumeTimes` go to `%RETRY%` (and from there to the DLQ).

use std::sync::Arc;
use std::time::Duration;

use tracing::warn;
use vostok_remoting::protocol::body::MessageQueue;

use super::service::ConsumeMessageService;
use crate::consumer::core::ConsumerCore;
use crate::consumer::listener::{
    ConsumeOrderlyContext, ConsumeOrderlyStatus, MessageListenerOrderly,
};
use crate::consumer::process_queue::ProcessQueue;

impl ConsumeMessageService {
    /// The consume loop of one orderly queue (Java `ConsumeMessageOrderlyService`).
    pub(super) async fn consume_orderly(
        self: Arc<Self>,
        core: Arc<ConsumerCore>,
        listener: Arc<dyn MessageListenerOrderly>,
        mq: MessageQueue,
        pq: Arc<ProcessQueue>,
    ) {
        let batch = self.config.consume_message_batch_max_size.max(1);
        loop {
            if pq.is_dropped() || core.shutdown.is_cancelled() {
                pq.stop_dispatching();
                return;
            }
            if core.clustering() && (!pq.is_locked() || pq.is_lock_expired()) {
                tokio::select! {
                    _ = core.shutdown.cancelled() => {}
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
                continue;
            }
            let guard = pq.consume_lock.lock().await;
            if pq.is_dropped() {
                pq.stop_dispatching();
                return;
            }
            let mut msgs = pq.take(batch);
            if msgs.is_empty() {
                return;
            }
            let Ok(permit) = self.permits.clone().acquire_owned().await else {
                return;
            };
            pq.begin_consume();
            let mut ctx = ConsumeOrderlyContext {
                message_queue: mq.clone(),
                suspend_current_queue_time_millis: -1,
            };
            let call = self.hook_call(&core);
            self.run_hooks(&call, &mq, &msgs, None);
            let status = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                listener.consume_message(&msgs, &mut ctx)
            }))
            .unwrap_or_else(|_| {
                warn!(group = %self.group, %mq, "orderly listener panicked; suspending the queue");
                ConsumeOrderlyStatus::SuspendCurrentQueueAMoment
            });
            drop(permit);
            let ok = status == ConsumeOrderlyStatus::Success;
            self.run_hooks(
                &call,
                &mq,
                &msgs,
                Some((
                    if ok {
                        "SUCCESS"
                    } else {
                        "SUSPEND_CURRENT_QUEUE_A_MOMENT"
                    },
                    ok,
                )),
            );
            let mut suspend = !ok;
            if suspend {
                // Messages past their retry budget go to %RETRY% (the broker then
                // sends them to the DLQ); the others are consumed again in place.
                let mut again = Vec::new();
                for m in &mut msgs {
                    if m.reconsume_times >= core.max_reconsume_times {
                        match core.send_back_as_new_message(m, 0).await {
                            Ok(()) => continue,
                            Err(e) => {
                                warn!(msg_id = %m.msg_id(), error = %e, "orderly send-back failed")
                            }
                        }
                    }
                    m.reconsume_times += 1;
                    again.push(m.clone());
                }
                if again.is_empty() {
                    suspend = false;
                } else {
                    pq.make_again(&again);
                }
            }
            let committed = if suspend { None } else { pq.commit() };
            pq.end_consume();
            if let Some(offset) = committed {
                core.offsets.update(&mq, offset, false);
            }
            drop(guard);
            if suspend {
                let wait = if ctx.suspend_current_queue_time_millis > 0 {
                    Duration::from_millis(ctx.suspend_current_queue_time_millis as u64)
                } else {
                    self.config.suspend_current_queue_time
                };
                tokio::select! {
                    _ = core.shutdown.cancelled() => {}
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        }
    }
}
