//! KV store requests: PUT_KV_CONFIG, GET_KV_CONFIG, DELETE_KV_CONFIG,
//! GET_KVLIST_BY_NAMESPACE (docs/commands.md#name-server-commands).
//!
//! A change is written to `kvConfig.json` before it is acknowledged; the write runs
//! on the blocking pool so that the fsync never stalls the reactor.

use std::sync::Arc;

use tracing::{error as log_error, info};
use vostok_remoting::protocol::body::KvTable;
use vostok_remoting::protocol::header::{
    GetKvConfigResponseHeader, GetKvListByNamespaceRequestHeader, KvConfigRequestHeader,
    PutKvConfigRequestHeader,
};
use vostok_remoting::protocol::response_code;
use vostok_remoting::RemotingCommand;

use super::{error, header, json_body, non_empty, Reply, Shared};
use crate::kv_config::KvConfigManager;

async fn persist(kv: &Arc<KvConfigManager>) -> Reply {
    let kv = kv.clone();
    match tokio::task::spawn_blocking(move || kv.persist()).await {
        Ok(Ok(())) => Ok(RemotingCommand::success()),
        Ok(Err(e)) => {
            log_error!(error = %e, "KV config not persisted");
            Err(error(
                response_code::SYSTEM_ERROR,
                format!("KV config changed in memory but not persisted: {e}"),
            ))
        }
        Err(e) => {
            log_error!(error = %e, "KV config persist task failed");
            Err(error(
                response_code::SYSTEM_ERROR,
                format!("KV config changed in memory but not persisted: {e}"),
            ))
        }
    }
}

pub(super) async fn put_kv_config(s: &Shared, request: &RemotingCommand) -> Reply {
    let h: PutKvConfigRequestHeader = header(request)?;
    non_empty(request, "namespace", &h.namespace)?;
    non_empty(request, "key", &h.key)?;
    let previous = s.kv.put(&h.namespace, &h.key, &h.value);
    info!(namespace = %h.namespace, key = %h.key, updated = previous.is_some(), "KV config put");
    persist(&s.kv).await
}

pub(super) fn get_kv_config(s: &Shared, request: &RemotingCommand) -> Reply {
    let h: KvConfigRequestHeader = header(request)?;
    match s.kv.get(&h.namespace, &h.key) {
        Some(value) => Ok(RemotingCommand::success()
            .with_header(&GetKvConfigResponseHeader { value: Some(value) })),
        None => Err(error(
            response_code::QUERY_NOT_FOUND,
            format!("No config item, Namespace: {} Key: {}", h.namespace, h.key),
        )),
    }
}

pub(super) async fn delete_kv_config(s: &Shared, request: &RemotingCommand) -> Reply {
    let h: KvConfigRequestHeader = header(request)?;
    if s.kv.delete(&h.namespace, &h.key).is_none() {
        return Ok(RemotingCommand::success());
    }
    info!(namespace = %h.namespace, key = %h.key, "KV config deleted");
    persist(&s.kv).await
}

pub(super) fn get_kv_list_by_namespace(s: &Shared, request: &RemotingCommand) -> Reply {
    let h: GetKvListByNamespaceRequestHeader = header(request)?;
    match s.kv.list(&h.namespace) {
        Some(table) => Ok(json_body(&KvTable { table })),
        None => Err(error(
            response_code::QUERY_NOT_FOUND,
            format!("No config item, Namespace: {}", h.namespace),
        )),
    }
}
