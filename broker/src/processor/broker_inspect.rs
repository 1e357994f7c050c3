//! What an operator asks about the broker's own state (docs/commands.md#broker-inspection,
//! Apache `AdminBrokerProcessor`): every group's consume stats
//! (GET_BROKER_CONSUME_STATS, `mqadmin brokerConsumeStats`), a consume queue's entries
//! (QUERY_CONSUME_QUEUE, `queryCq`), replication status (GET_BROKER_HA_STATUS,
//! `haStatus`) and a slave's record of its master's flushed offset
//! (RESET_MASTER_FLUSH_OFFSET, `resetMasterFlushOffset`).

use std::collections::BTreeMap;

use tracing::info;
use vostok_remoting::protocol::body::{
    ConsumeQueueData, ConsumeStats, ConsumeStatsList, HaClientRuntimeInfo, HaConnectionRuntimeInfo,
    HaRuntimeInfo, MessageQueue, OffsetWrapper, QueryConsumeQueueResponseBody,
};
use vostok_remoting::protocol::filter::{is_tag_type, matches_tags_code};
use vostok_remoting::protocol::header::{
    GetConsumeStatsInBrokerHeader, QueryConsumeQueueRequestHeader, ResetMasterFlushOffsetHeader,
};
use vostok_remoting::protocol::{json, response_code};
use vostok_remoting::RemotingCommand;

use super::{decode_header, error};
use crate::state::Broker;

/// Most entries one QUERY_CONSUME_QUEUE returns.
const MAX_QUEUE_ENTRIES: i32 = 1000;

/// GET_BROKER_CONSUME_STATS: for each subscription group, the consume stats of each
/// topic it has offsets on (with `isOrder`, ordered topics only), and the total
/// backlog. A topic the broker no longer has, or one an online group no longer
/// subscribes to, is left out, as Apache leaves it out.
pub(crate) fn get_broker_consume_stats(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, GetConsumeStatsInBrokerHeader);
    let mut topics_by_group: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (topic, group) in broker.consumers.offsets.topic_groups() {
        topics_by_group.entry(group).or_default().push(topic);
    }
    let mut list = Vec::new();
    let (mut total_diff, mut total_inflight_diff) = (0, 0);
    for group in broker.consumers.subscriptions.group_names() {
        let online = broker.consumers.clients.consumer_group(&group);
        let mut stats_of_group = Vec::new();
        let mut topics = topics_by_group.remove(&group).unwrap_or_default();
        topics.sort();
        for topic in topics {
            let Some(config) = broker.storage.topics.get(&topic) else {
                continue;
            };
            if header.is_order && !config.order {
                continue;
            }
            if let Some(g) = &online {
                if !g.subscriptions.is_empty() && !g.subscriptions.contains_key(&topic) {
                    continue;
                }
            }
            let mut stats = ConsumeStats::default();
            for queue_id in 0..config.write_queue_nums {
                let broker_offset = broker
                    .storage
                    .store
                    .max_offset_in_queue(&topic, queue_id)
                    .max(0);
                let consumer_offset = broker
                    .consumers
                    .offsets
                    .query(&group, &topic, queue_id)
                    .max(0);
                let last_timestamp = if consumer_offset > 0 {
                    broker
                        .storage
                        .store
                        .message_store_timestamp(&topic, queue_id, consumer_offset - 1)
                        .unwrap_or(0)
                } else {
                    0
                };
                stats.offset_table.insert(
                    MessageQueue::new(&topic, &broker.config.broker_name, queue_id),
                    OffsetWrapper {
                        broker_offset,
                        consumer_offset,
                        pull_offset: consumer_offset,
                        last_timestamp,
                    },
                );
            }
            total_diff += stats.total_diff();
            total_inflight_diff += stats.total_inflight_diff();
            stats_of_group.push(stats);
        }
        list.push([(group, stats_of_group)].into());
    }
    let body = ConsumeStatsList {
        consume_stats_list: list,
        broker_addr: broker.broker_addr.to_string(),
        total_diff,
        total_inflight_diff,
    };
    RemotingCommand::success().with_body(body.encode())
}

/// QUERY_CONSUME_QUEUE: up to `count` entries of a queue from `index` (at most
/// [`MAX_QUEUE_ENTRIES`]), with the queue's bounds; with `consumerGroup`, that group's
/// subscription, and for each entry whether it matches (tags by the entry's tag hash,
/// SQL92 by the message's properties). A queue this broker does not have:
/// SYSTEM_ERROR, as Apache answers.
pub(crate) fn query_consume_queue(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let header = decode_header!(request, QueryConsumeQueueRequestHeader);
    let count = header.count.clamp(0, MAX_QUEUE_ENTRIES) as usize;
    let Some(queue) =
        broker
            .storage
            .store
            .queue_entries(&header.topic, header.queue_id, header.index, count)
    else {
        return error(
            response_code::SYSTEM_ERROR,
            format!("{}@{} is not exist!", header.queue_id, header.topic),
        );
    };
    let mut body = QueryConsumeQueueResponseBody {
        max_queue_index: queue.max_offset,
        min_queue_index: queue.min_offset,
        ..QueryConsumeQueueResponseBody::default()
    };
    let subscription = header.consumer_group.as_deref().map(|group| {
        let sub = broker
            .consumers
            .clients
            .consumer_group(group)
            .and_then(|g| g.subscriptions.get(&header.topic).cloned());
        (group, sub)
    });
    let sql = match &subscription {
        Some((group, Some(sub))) if !is_tag_type(&sub.expression_type) => broker
            .consumers
            .filters
            .get(&header.topic, group)
            .and_then(|f| f.compiled.as_ref().ok().cloned()),
        _ => None,
    };
    match &subscription {
        Some((group, None)) => {
            body.filter_data = Some(format!("{group}@{} is not online!", header.topic));
        }
        Some((_, Some(sub))) => {
            body.filter_data = Some(format!("{} {}", sub.expression_type, sub.sub_string));
            body.subscription_data = Some(sub.clone());
        }
        None => {}
    }
    for e in queue.entries {
        let mut data = ConsumeQueueData {
            queue_offset: Some(e.queue_offset),
            physic_offset: e.phy_offset,
            physic_size: e.size,
            tags_code: e.tags_code,
            ..ConsumeQueueData::default()
        };
        if let Some((_, Some(sub))) = &subscription {
            data.eval = match &sql {
                Some(filter) => broker
                    .storage
                    .store
                    .look_message_by_offset(e.phy_offset)
                    .is_some_and(|m| filter.matches(|k| m.property(k))),
                None if is_tag_type(&sub.expression_type) => matches_tags_code(sub, e.tags_code),
                None => {
                    data.msg = Some("the group's expression does not compile".into());
                    false
                }
            };
        }
        body.queue_data.push(data);
    }
    RemotingCommand::success().with_body(json::to_vec(&body))
}

/// GET_BROKER_HA_STATUS: a master's slaves (acknowledged offset, distance behind,
/// in sync or not, bytes per second), or a slave's link to its master.
pub(crate) fn get_broker_ha_status(broker: &Broker) -> RemotingCommand {
    let store = &broker.storage.store;
    let max = store.max_phy_offset();
    let mut info = HaRuntimeInfo {
        master: broker.is_master(),
        master_commit_log_max_offset: max,
        ..HaRuntimeInfo::default()
    };
    if info.master {
        for s in store.ha_slaves() {
            if s.in_sync {
                info.in_sync_slave_nums += 1;
            }
            info.ha_connection_info.push(HaConnectionRuntimeInfo {
                addr: s.addr.to_string(),
                slave_ack_offset: s.ack_offset,
                diff: s.behind_bytes,
                in_sync: s.in_sync,
                transferred_byte_in_second: s.bytes_per_sec,
                transfer_from_where: s.transfer_from,
            });
        }
    } else {
        let link = store.ha_master_link();
        info.ha_client_runtime_info = HaClientRuntimeInfo {
            master_addr: link.master_addr,
            transferred_byte_in_second: link.bytes_per_sec,
            max_offset: max,
            last_read_timestamp: link.last_read_ms,
            last_write_timestamp: link.last_write_ms,
            master_flush_offset: store.master_flushed_offset(),
            is_activated: link.connected,
        };
    }
    RemotingCommand::success().with_body(json::to_vec(&info))
}

/// RESET_MASTER_FLUSH_OFFSET: a slave records the master's flushed offset given (kept
/// in its checkpoint file, shown by `haStatus`); a master ignores it, as Apache's does.
pub(crate) async fn reset_master_flush_offset(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, ResetMasterFlushOffsetHeader);
    let Some(offset) = header.master_flush_offset else {
        return RemotingCommand::success();
    };
    if broker.is_master() {
        return RemotingCommand::success();
    }
    if offset < 0 {
        return error(
            response_code::INVALID_PARAMETER,
            format!("masterFlushOffset {offset} is negative"),
        );
    }
    let store = broker.storage.store.clone();
    match tokio::task::spawn_blocking(move || store.set_master_flushed_offset(offset)).await {
        Ok(Ok(())) => {
            info!(offset, "master flushed offset reset by an operator");
            RemotingCommand::success()
        }
        Ok(Err(e)) => error(response_code::SYSTEM_ERROR, format!("checkpoint: {e}")),
        Err(e) => error(response_code::SYSTEM_ERROR, format!("checkpoint: {e}")),
    }
}
