//! Store housekeeping on an operator's request: CLEAN_EXPIRED_CONSUMEQUEUE (306,
//! `mqadmin cleanExpiredCQ`), CLEAN_UNUSED_TOPIC (316, `mqadmin cleanUnusedTopic`) and
//! DELETE_EXPIRED_COMMITLOG (329, `mqadmin deleteExpiredCommitLog`),
//! docs/commands.md#store-housekeeping.

use std::sync::Arc;

use tracing::{info, warn};
use vostok_remoting::protocol::{response_code, topic};
use vostok_remoting::RemotingCommand;

use super::error;
use crate::state::Broker;

/// Removes the consume queues of topics this broker no longer has (a topic deleted
/// while the broker was down, or by hand), as Apache's `cleanUnusedTopic` does;
/// system topics are kept. Both CLEAN_UNUSED_TOPIC and CLEAN_EXPIRED_CONSUMEQUEUE do
/// this. The file deletion runs off the async runtime.
pub(crate) async fn clean_unused_topics(broker: &Arc<Broker>) -> RemotingCommand {
    let orphans: Vec<String> = broker
        .storage
        .store
        .topics()
        .into_iter()
        .filter(|t| !broker.storage.topics.contains(t) && !topic::is_system_topic(t))
        .collect();
    if orphans.is_empty() {
        return RemotingCommand::success();
    }
    let store = broker.storage.store.clone();
    let gone = orphans.clone();
    match tokio::task::spawn_blocking(move || store.delete_topics(&gone)).await {
        Ok(Ok(())) => {
            info!(topics = ?orphans, "consume queues of deleted topics removed");
            RemotingCommand::success()
        }
        Ok(Err(e)) => {
            warn!(error = %e, "cleaning expired consume queues failed");
            error(response_code::SYSTEM_ERROR, format!("clean failed: {e}"))
        }
        Err(e) => error(response_code::SYSTEM_ERROR, format!("clean failed: {e}")),
    }
}

/// Asks the next retention pass to delete expired commitlog files whatever the hour
/// (Apache's `executeDeleteFilesManually`); files still unconsumed or not expired
/// stay, as in a scheduled pass.
pub(crate) fn delete_expired_commit_log(broker: &Broker) -> RemotingCommand {
    broker.storage.store.delete_expired_files_now();
    info!("expired commitlog files to be deleted by the next retention pass");
    RemotingCommand::success()
}
