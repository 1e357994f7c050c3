//! Consumer offsets (Java `RemoteBrokerOffsetStore` / `LocalFileOffsetStore`).
//!
//! The offset of a queue is the next offset to consume. Clustering consumers keep them
//! on the broker (QUERY/UPDATE_CONSUMER_OFFSET, oneway updates every 5 s);
//! broadcasting consumers in a local JSON file,
//! `<dir>/<clientId>/<group>/offsets.json` (written to a temporary file and renamed,
//! the previous version kept as `offsets.json.bak`). The file layout is Vostok's own:
//! `{"offsetTable":[{"topic":..,"brokerName":..,"queueId":..,"offset":..}]}`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tracing::{debug, warn};
use vostok_remoting::protocol::body::MessageQueue;
use vostok_remoting::protocol::header::{
    QueryConsumerOffsetRequestHeader, UpdateConsumerOffsetRequestHeader,
};
use vostok_remoting::support::config_file;
use vostok_remoting::support::sync::MutexExt;

use crate::api;
use crate::error::{ClientError, Result};
use crate::instance::ClientInstance;

pub(crate) enum Backend {
    Remote,
    Local { path: PathBuf },
}

pub(crate) struct OffsetStore {
    group: String,
    instance: Arc<ClientInstance>,
    backend: Backend,
    table: Mutex<HashMap<MessageQueue, i64>>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileEntry {
    topic: String,
    broker_name: String,
    queue_id: i32,
    offset: i64,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct OffsetFile {
    offset_table: Vec<FileEntry>,
}

impl OffsetStore {
    pub fn remote(group: String, instance: Arc<ClientInstance>) -> Self {
        OffsetStore {
            group,
            instance,
            backend: Backend::Remote,
            table: Mutex::default(),
        }
    }

    /// A local store; loads the file (or its backup) if present.
    pub fn local(group: String, instance: Arc<ClientInstance>) -> Result<Self> {
        let root = instance
            .config()
            .local_offset_store_dir
            .clone()
            .or_else(|| {
                std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".rocketmq_offsets"))
            })
            .unwrap_or_else(|| PathBuf::from(".rocketmq_offsets"));
        let path = root
            .join(instance.client_id().replace([':', '/'], "_"))
            .join(&group)
            .join("offsets.json");
        let store = OffsetStore {
            group,
            instance,
            backend: Backend::Local { path: path.clone() },
            table: Mutex::default(),
        };
        let loaded = config_file::load(&path, |bytes| {
            serde_json::from_slice::<OffsetFile>(bytes).ok()
        });
        if let Some(file) = loaded {
            let mut table = store.table.locked();
            for e in file.offset_table {
                table.insert(
                    MessageQueue::new(e.topic, e.broker_name, e.queue_id),
                    e.offset,
                );
            }
        }
        Ok(store)
    }

    /// Records a new offset; with `increase_only` an older value never replaces a newer.
    pub fn update(&self, mq: &MessageQueue, offset: i64, increase_only: bool) {
        let mut table = self.table.locked();
        match table.get_mut(mq) {
            Some(current) if increase_only => *current = (*current).max(offset),
            Some(current) => *current = offset,
            None => {
                table.insert(mq.clone(), offset);
            }
        }
    }

    pub fn read_memory(&self, mq: &MessageQueue) -> Option<i64> {
        self.table.locked().get(mq).copied()
    }

    /// The stored offset: the broker's (remote) or the file's (local); `None` when
    /// there is none yet.
    pub async fn read_from_store(&self, mq: &MessageQueue) -> Result<Option<i64>> {
        match &self.backend {
            Backend::Local { .. } => Ok(self.read_memory(mq)),
            Backend::Remote => {
                let addr = self.broker_addr(mq).await?;
                let header = QueryConsumerOffsetRequestHeader {
                    consumer_group: self.group.clone(),
                    topic: mq.topic.clone(),
                    queue_id: mq.queue_id,
                    set_zero_if_not_found: None,
                };
                let offset = api::query_consumer_offset(
                    self.instance.remoting(),
                    &addr,
                    &header,
                    self.instance.api_timeout(),
                )
                .await?;
                if let Some(o) = offset {
                    self.update(mq, o, false);
                }
                Ok(offset)
            }
        }
    }

    async fn broker_addr(&self, mq: &MessageQueue) -> Result<String> {
        if let Some(a) = self.instance.find_broker_addr_in_subscribe(&mq.broker_name) {
            return Ok(a);
        }
        self.instance.update_route(&mq.topic).await?;
        self.instance
            .find_broker_addr_in_subscribe(&mq.broker_name)
            .ok_or_else(|| ClientError::NoBroker {
                topic: mq.topic.clone(),
                broker_name: mq.broker_name.clone(),
            })
    }

    /// Persists the offsets of `mqs` (all known offsets when `None`).
    pub async fn persist_all(&self, mqs: Option<&[MessageQueue]>) {
        let snapshot: Vec<(MessageQueue, i64)> = {
            let table = self.table.locked();
            table
                .iter()
                .filter(|(mq, _)| mqs.is_none_or(|set| set.contains(mq)))
                .map(|(mq, o)| (mq.clone(), *o))
                .collect()
        };
        match &self.backend {
            Backend::Remote => {
                for (mq, offset) in snapshot {
                    if let Err(e) = self.update_on_broker(&mq, offset, true).await {
                        debug!(%mq, error = %e, "offset update failed");
                    }
                }
            }
            Backend::Local { path } => {
                let all: Vec<(MessageQueue, i64)> = {
                    let table = self.table.locked();
                    table.iter().map(|(mq, o)| (mq.clone(), *o)).collect()
                };
                let path = path.clone();
                let written = tokio::task::spawn_blocking(move || write_file(&path, all)).await;
                match written {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => warn!(error = %e, "cannot write the local offset file"),
                    Err(e) => warn!(error = %e, "offset file writer failed"),
                }
            }
        }
    }

    /// Persists one queue's offset, waiting for the broker's answer (used when a queue
    /// moves to another member, so the new owner reads it).
    pub async fn persist(&self, mq: &MessageQueue) {
        let Some(offset) = self.read_memory(mq) else {
            return;
        };
        match &self.backend {
            Backend::Remote => {
                if let Err(e) = self.update_on_broker(mq, offset, false).await {
                    warn!(%mq, error = %e, "offset commit failed");
                }
            }
            Backend::Local { .. } => self.persist_all(None).await,
        }
    }

    async fn update_on_broker(&self, mq: &MessageQueue, offset: i64, oneway: bool) -> Result<()> {
        let addr = self.broker_addr(mq).await?;
        let header = UpdateConsumerOffsetRequestHeader {
            consumer_group: self.group.clone(),
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            commit_offset: offset,
        };
        api::update_consumer_offset(
            self.instance.remoting(),
            &addr,
            &header,
            oneway,
            self.instance.api_timeout(),
        )
        .await
    }

    /// Forgets a queue's in-memory offset once it moved to another member. A local
    /// store keeps it: broadcasting members own every queue, and the file must keep
    /// listing it.
    pub fn remove(&self, mq: &MessageQueue) {
        if matches!(self.backend, Backend::Remote) {
            self.table.locked().remove(mq);
        }
    }

    pub fn snapshot(&self) -> HashMap<MessageQueue, i64> {
        self.table.locked().clone()
    }
}

fn write_file(path: &std::path::Path, entries: Vec<(MessageQueue, i64)>) -> std::io::Result<()> {
    let mut entries: Vec<FileEntry> = entries
        .into_iter()
        .map(|(mq, offset)| FileEntry {
            topic: mq.topic,
            broker_name: mq.broker_name,
            queue_id: mq.queue_id,
            offset,
        })
        .collect();
    entries.sort_by(|a, b| {
        (&a.topic, &a.broker_name, a.queue_id).cmp(&(&b.topic, &b.broker_name, b.queue_id))
    });
    let body = serde_json::to_vec_pretty(&OffsetFile {
        offset_table: entries,
    })
    .map_err(std::io::Error::other)?;
    config_file::persist(path, &body)
}
