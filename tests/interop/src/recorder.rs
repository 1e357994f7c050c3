//! A concurrent-consumption listener that records every message it is handed.

use std::sync::{Arc, Mutex};

use rocketmq_client_rust::{
    ClientResult, ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus,
    MessageListenerConcurrently,
};
use rocketmq_model::common::message::message_ext::MessageExt;

use crate::corpus::Received;

/// Shared by every consumer instance of one group; each listener tags its records with
/// the instance it belongs to.
#[derive(Clone, Default)]
pub struct Records(Arc<Mutex<Vec<Received>>>);

impl Records {
    pub fn snapshot(&self) -> Vec<Received> {
        self.0
            .lock()
            .expect("the listener does not panic while holding the lock")
            .clone()
    }

    pub fn listener(&self, instance: &str) -> Recorder {
        Recorder {
            instance: instance.to_string(),
            records: self.clone(),
        }
    }
}

pub struct Recorder {
    instance: String,
    records: Records,
}

impl MessageListenerConcurrently for Recorder {
    fn consume_message(
        &self,
        msgs: &[&MessageExt],
        _context: &ConsumeConcurrentlyContext,
    ) -> ClientResult<ConsumeConcurrentlyStatus> {
        let batch: Vec<Received> = msgs
            .iter()
            .map(|m| Received {
                instance: self.instance.clone(),
                topic: m.topic().to_string(),
                queue_id: m.queue_id(),
                queue_offset: m.queue_offset(),
                reconsume_times: m.reconsume_times(),
                commit_log_offset: m.commit_log_offset(),
                store_host: m.store_host(),
                properties: m
                    .properties()
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                body: m.body().map(|b| b.to_vec()).unwrap_or_default(),
            })
            .collect();
        self.records
            .0
            .lock()
            .expect("the listener does not panic while holding the lock")
            .extend(batch);
        Ok(ConsumeConcurrentlyStatus::ConsumeSuccess)
    }
}
