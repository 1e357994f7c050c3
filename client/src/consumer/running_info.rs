//! GET_CONSUMER_RUNNING_INFO (Java `ConsumerRunningInfo`): a consumer's options,
//! subscriptions and, per assigned queue, its committed offset and process queue.

use std::sync::atomic::Ordering;

use serde_json::{json, Value};
use vostok_remoting::support::sync::RwLockExt;

use super::core::ConsumerCore;

impl ConsumerCore {
    /// The running info of this consumer, with the properties of its kind.
    pub fn running_info(&self) -> Value {
        let mut properties = serde_json::Map::new();
        properties.insert(
            "PROP_NAMESRV_ADDR".into(),
            Value::String(self.instance.config().namesrv_addr.join(";")),
        );
        properties.insert(
            "PROP_CONSUME_TYPE".into(),
            Value::String(self.consume_type.name().into()),
        );
        properties.insert(
            "PROP_CONSUMEORDERLY".into(),
            Value::String(self.orderly.to_string()),
        );
        properties.insert(
            "PROP_CLIENT_VERSION".into(),
            Value::String(format!("vostok-client {}", env!("CARGO_PKG_VERSION"))),
        );
        properties.insert(
            "PROP_CONSUMER_START_TIMESTAMP".into(),
            Value::String(self.start_ms.to_string()),
        );
        properties.insert(
            "messageModel".into(),
            Value::String(self.model.name().into()),
        );
        properties.insert(
            "consumeFromWhere".into(),
            Value::String(self.consume_from_where.name().into()),
        );
        properties.insert("consumerGroup".into(), Value::String(self.group.clone()));
        properties.insert(
            "allocateMessageQueueStrategy".into(),
            Value::String(self.strategy.name().into()),
        );
        properties.insert(
            "maxReconsumeTimes".into(),
            Value::String(self.max_reconsume_times.to_string()),
        );
        properties.insert(
            "pullBatchSize".into(),
            Value::String(self.pull.batch_size.to_string()),
        );
        self.kind.running_properties(&mut properties);
        let subs: Vec<Value> = self
            .subscriptions
            .read_locked()
            .values()
            .map(|s| serde_json::to_value(&s.data).unwrap_or(Value::Null))
            .collect();
        let offsets = self.offsets.snapshot();
        let mut mq_table = serde_json::Map::new();
        let pqs = self.process_queues();
        for (mq, pq) in pqs {
            let (min, max) = pq.cached_range();
            let key = serde_json::to_string(&mq).unwrap_or_default();
            mq_table.insert(
                key,
                json!({
                    "commitOffset": offsets.get(&mq).copied().unwrap_or(-1),
                    "cachedMsgMinOffset": min,
                    "cachedMsgMaxOffset": max,
                    "cachedMsgCount": pq.msg_count(),
                    "cachedMsgSizeInMiB": pq.msg_size() / (1024 * 1024),
                    "locked": pq.is_locked(),
                    "lastLockTimestamp": pq.last_lock_ms.load(Ordering::Relaxed),
                    "droped": pq.is_dropped(),
                    "lastPullTimestamp": pq.last_pull_ms.load(Ordering::Relaxed),
                    "lastConsumeTimestamp": pq.last_consume_ms.load(Ordering::Relaxed),
                }),
            );
        }
        json!({
            "properties": properties,
            "subscriptionSet": subs,
            "mqTable": mq_table,
            "statusTable": {},
        })
    }
}
