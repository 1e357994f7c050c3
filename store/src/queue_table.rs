//! All consume queues, by topic and queue id (RocketMQ `consumeQueueTable`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use vostok_remoting::support::sync::RwLockExt;

use crate::consume_queue::ConsumeQueue;
use crate::error::{Result, StoreError};

type Table = HashMap<String, HashMap<i32, Arc<ConsumeQueue>>>;

pub(crate) struct ConsumeQueueTable {
    dir: PathBuf,
    file_size: usize,
    queues: RwLock<Table>,
}

impl ConsumeQueueTable {
    /// Loads `consumequeue/<topic>/<queueId>/` directories.
    pub(crate) fn load(dir: &Path, file_size: usize) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::io("create directory", dir, e))?;
        let mut table = Table::new();
        for topic_entry in std::fs::read_dir(dir).map_err(|e| StoreError::io("list", dir, e))? {
            let topic_entry = topic_entry.map_err(|e| StoreError::io("list", dir, e))?;
            let topic_path = topic_entry.path();
            let Some(topic) = topic_entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if !topic_path.is_dir() {
                continue;
            }
            for q in std::fs::read_dir(&topic_path)
                .map_err(|e| StoreError::io("list", &topic_path, e))?
            {
                let q = q.map_err(|e| StoreError::io("list", &topic_path, e))?;
                let Some(queue_id) = q.file_name().to_str().and_then(|n| n.parse::<i32>().ok())
                else {
                    continue;
                };
                let cq = ConsumeQueue::load(&q.path(), &topic, queue_id, file_size)?;
                table
                    .entry(topic.clone())
                    .or_default()
                    .insert(queue_id, Arc::new(cq));
            }
        }
        Ok(ConsumeQueueTable {
            dir: dir.to_path_buf(),
            file_size,
            queues: RwLock::new(table),
        })
    }

    pub(crate) fn find(&self, topic: &str, queue_id: i32) -> Option<Arc<ConsumeQueue>> {
        let table = self.queues.read_locked();
        table.get(topic)?.get(&queue_id).cloned()
    }

    pub(crate) fn find_or_create(&self, topic: &str, queue_id: i32) -> Result<Arc<ConsumeQueue>> {
        if let Some(cq) = self.find(topic, queue_id) {
            return Ok(cq);
        }
        let mut table = self.queues.write_locked();
        if let Some(cq) = table.get(topic).and_then(|t| t.get(&queue_id)) {
            return Ok(Arc::clone(cq));
        }
        let path = self.dir.join(topic).join(queue_id.to_string());
        let cq = Arc::new(ConsumeQueue::load(&path, topic, queue_id, self.file_size)?);
        table
            .entry(topic.to_owned())
            .or_default()
            .insert(queue_id, Arc::clone(&cq));
        Ok(cq)
    }

    pub(crate) fn all(&self) -> Vec<Arc<ConsumeQueue>> {
        let table = self.queues.read_locked();
        table.values().flat_map(|q| q.values().cloned()).collect()
    }

    pub(crate) fn queue_ids(&self, topic: &str) -> Vec<i32> {
        let table = self.queues.read_locked();
        let mut ids: Vec<i32> = table
            .get(topic)
            .map(|q| q.keys().copied().collect())
            .unwrap_or_default();
        ids.sort_unstable();
        ids
    }

    pub(crate) fn topics(&self) -> Vec<String> {
        let table = self.queues.read_locked();
        table.keys().cloned().collect()
    }

    /// Removes a topic's queues from the table and deletes their files.
    pub(crate) fn delete_topic(&self, topic: &str) -> Result<()> {
        let removed = {
            let mut table = self.queues.write_locked();
            table.remove(topic)
        };
        if let Some(queues) = removed {
            for cq in queues.values() {
                cq.destroy()?;
            }
            let dir = self.dir.join(topic);
            match std::fs::remove_dir(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    tracing::warn!(dir = %dir.display(), error = %e, "could not remove topic directory")
                }
            }
        }
        Ok(())
    }
}
