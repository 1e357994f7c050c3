//! What the store tells the broker: records arriving (held pulls, timers, delay
//! levels, a slave's topics and removals) and, for retention, what groups committed.

use std::collections::HashMap;
use std::sync::Arc;

use vostok_remoting::protocol::message::property;
use vostok_remoting::protocol::topic::{REMOVED_MESSAGE_TOPIC, SCHEDULE_TOPIC, TIMER_TOPIC};
use vostok_store::{ConsumedOffsets, MessageArrivingListener};

use crate::state::Broker;

/// Feeds store arrivals to held pulls, the timer table and the delay levels; on a
/// slave, to the topic table too (a topic is known as soon as its data is).
pub(super) struct ArrivalBridge(pub(super) Arc<Broker>);

impl MessageArrivingListener for ArrivalBridge {
    /// `max_offset` is the queue's new max offset: the message's queue offset + 1.
    fn arriving(
        &self,
        topic: &str,
        queue_id: i32,
        max_offset: i64,
        tags_code: i64,
        store_timestamp: i64,
        properties: &str,
    ) {
        let broker = &self.0;
        if !broker.is_master() {
            broker.storage.topics.note_replicated(topic, queue_id);
        }
        if topic == TIMER_TOPIC {
            // The consume queue keeps the TAGS hash; the delivery time is a property.
            let at = property::find(properties, property::TIMER_OUT_MS)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let real = property::find(properties, property::REAL_TOPIC).unwrap_or_default();
            broker.deferred.timers.on_arrival(max_offset - 1, at, real);
            // A rolled copy waits no longer than its original did.
            let rolled = property::find(properties, crate::reroute::TIMER_ROLL_FROM).is_some();
            let delay = (!rolled).then_some(at - store_timestamp);
            (broker.observed.metrics.events).timer_parked(real, delay, true);
        } else if topic == SCHEDULE_TOPIC {
            broker.deferred.delay_offsets.on_arrival(queue_id);
            if let Some(delay) = broker.deferred.delay_offsets.level_delay(queue_id + 1) {
                let real = property::find(properties, property::REAL_TOPIC).unwrap_or_default();
                let delay = Some(delay.as_millis() as i64);
                (broker.observed.metrics.events).timer_parked(real, delay, false);
            }
        } else if topic == REMOVED_MESSAGE_TOPIC {
            // A slave learns removals as their records arrive from the master.
            if let Some((t, q, o)) = crate::state::removal::from_properties(properties) {
                broker.storage.removals.add(&t, q, o);
            }
        }
        broker
            .consumers
            .long_polling
            .notify(topic, queue_id, max_offset, tags_code);
        broker.pop.polling.notify(topic, queue_id);
    }
}

/// Lets the store's retention see what consumer groups committed, so that a forced deletion
/// never drops unconsumed messages unless `cleanFileForciblyEnable`.
pub(super) struct ConsumedBridge(pub(super) Arc<Broker>);

impl ConsumedOffsets for ConsumedBridge {
    fn min_committed_offsets(&self, topic: &str) -> HashMap<i32, i64> {
        self.0.min_committed_offsets(topic)
    }
}
