//! Queue assignment by the broker (Apache's `QueryAssignmentProcessor`,
//! docs/commands.md#queue-assignment): SET_MESSAGE_REQUEST_MODE (401, `mqadmin
//! setConsumeMode`) records whether a group reads a topic by pulling or by POP;
//! GET_ALL_MESSAGE_REQUEST_MODE (402) answers the table; QUERY_ASSIGNMENT (400) gives
//! a consumer that lets the broker balance (Java's `clientRebalance=false`) its queues
//! of a topic and how to read them. In POP mode consumers may share queues: each gets
//! its own share plus those of the next `popShareQueueNum` consumers, or every queue
//! (as queue id -1, "any queue of this broker") when that number is 0 or covers the
//! group. Retry topics are always pulled.

use std::sync::Arc;
use std::time::Duration;

use tracing::info;
use vostok_remoting::protocol::body::{
    MessageModel, MessageQueue, MessageQueueAssignment, MessageRequestMode,
    QueryAssignmentRequestBody, QueryAssignmentResponseBody, SetMessageRequestModeRequestBody,
};
use vostok_remoting::protocol::header::GetRouteInfoRequestHeader;
use vostok_remoting::protocol::route::TopicRouteData;
use vostok_remoting::protocol::{json, request_code, response_code, topic};
use vostok_remoting::RemotingCommand;

use super::{decode_body, error};
use crate::state::Broker;

/// How long the name servers have to answer a route lookup.
const NAMESRV_TIMEOUT: Duration = Duration::from_secs(3);

/// The mode when none was set: pull, as Apache's `defaultMessageRequestMode`.
const DEFAULT_MODE: MessageRequestMode = MessageRequestMode::Pull;

pub(crate) async fn set_message_request_mode(
    broker: &Arc<Broker>,
    request: RemotingCommand,
) -> RemotingCommand {
    let body = decode_body!(
        request,
        SetMessageRequestModeRequestBody,
        "SetMessageRequestModeRequestBody"
    );
    if topic::is_retry_topic(&body.topic) {
        return error(
            response_code::NO_PERMISSION,
            "retry topic is not allowed to set mode",
        );
    }
    if !broker.storage.topics.contains(&body.topic) {
        return error(
            response_code::TOPIC_NOT_EXIST,
            format!("topic[{}] not exist", body.topic),
        );
    }
    if broker
        .consumers
        .subscriptions
        .get(&body.consumer_group)
        .is_none()
    {
        return error(
            response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
            "subscription group does not exist",
        );
    }
    info!(topic = %body.topic, group = %body.consumer_group, mode = %body.mode, share = body.pop_share_queue_num, "message request mode set");
    broker.consumers.request_modes.set(body);
    let b = broker.clone();
    let _ = tokio::task::spawn_blocking(move || b.consumers.request_modes.persist()).await;
    RemotingCommand::success()
}

pub(crate) fn get_all_message_request_mode(broker: &Broker) -> RemotingCommand {
    RemotingCommand::success().with_body(broker.consumers.request_modes.encode())
}

/// The topic's readable queues, from the first name server that knows the topic.
async fn subscribe_queues(broker: &Broker, topic_name: &str) -> Option<Vec<MessageQueue>> {
    let header = GetRouteInfoRequestHeader {
        topic: topic_name.to_owned(),
        accept_standard_json_only: None,
    };
    for addr in &broker.namesrv.addrs {
        let request =
            RemotingCommand::request_with_header(request_code::GET_ROUTEINFO_BY_TOPIC, &header);
        let Ok(response) = broker
            .namesrv
            .client
            .invoke_sync(addr, request, NAMESRV_TIMEOUT)
            .await
        else {
            continue;
        };
        if response.code != response_code::SUCCESS {
            return None;
        }
        let route = TopicRouteData::decode(&response.body).ok()?;
        let mut queues: Vec<MessageQueue> = route
            .read_queues()
            .into_iter()
            .map(|(name, q)| MessageQueue::new(topic_name, name, q))
            .collect();
        queues.sort();
        queues.dedup();
        return Some(queues);
    }
    None
}

/// Java's `AllocateMessageQueueAveragely` (`AVG`): a contiguous block each.
fn averagely(queues: &[MessageQueue], ids: &[String], index: usize) -> Vec<MessageQueue> {
    let (n, m) = (queues.len(), ids.len());
    if n == 0 || m == 0 {
        return Vec::new();
    }
    let rem = n % m;
    let size = if n <= m {
        1
    } else if index < rem {
        n / m + 1
    } else {
        n / m
    };
    let start = if index < rem {
        index * size
    } else {
        index * size + rem
    };
    (0..size.min(n.saturating_sub(start)))
        .map(|i| queues[(start + i) % n].clone())
        .collect()
}

/// Java's `AllocateMessageQueueAveragelyByCircle` (`AVG_BY_CIRCLE`): every m-th queue.
fn by_circle(queues: &[MessageQueue], ids: &[String], index: usize) -> Vec<MessageQueue> {
    queues
        .iter()
        .enumerate()
        .filter(|(i, _)| !ids.is_empty() && i % ids.len() == index)
        .map(|(_, q)| q.clone())
        .collect()
}

type Strategy = fn(&[MessageQueue], &[String], usize) -> Vec<MessageQueue>;

fn strategy(name: &str) -> Option<Strategy> {
    match name {
        "" | "AVG" => Some(averagely),
        "AVG_BY_CIRCLE" => Some(by_circle),
        _ => None,
    }
}

/// The queues of consumer `index` of `ids` in `mode` (Apache's `doLoadBalance` for
/// clustering, `allocate4Pop` for POP).
fn assign(
    queues: &[MessageQueue],
    ids: &[String],
    index: usize,
    mode: &SetMessageRequestModeRequestBody,
    allocate: Strategy,
) -> Vec<MessageQueue> {
    if mode.mode != MessageRequestMode::Pop {
        return allocate(queues, ids, index);
    }
    let share = mode.pop_share_queue_num;
    if share <= 0 || share as usize >= ids.len().saturating_sub(1) {
        // Every consumer pops from every broker of the topic.
        let mut any: Vec<MessageQueue> = queues
            .iter()
            .map(|q| MessageQueue::new(&q.topic, &q.broker_name, -1))
            .collect();
        any.dedup();
        return any;
    }
    if ids.len() <= queues.len() {
        let mut out = allocate(queues, ids, index);
        for i in 1..=share as usize {
            out.extend(allocate(queues, ids, (index + i) % ids.len()));
        }
        out
    } else {
        // More consumers than queues: each gets one, round the queues.
        vec![queues[index % queues.len()].clone()]
    }
}

pub(crate) async fn query_assignment(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let body = decode_body!(
        request,
        QueryAssignmentRequestBody,
        "QueryAssignmentRequestBody"
    );
    let mode = broker
        .consumers
        .request_modes
        .get(&body.topic, &body.consumer_group)
        .unwrap_or_else(|| SetMessageRequestModeRequestBody {
            topic: body.topic.clone(),
            consumer_group: body.consumer_group.clone(),
            mode: DEFAULT_MODE,
            pop_share_queue_num: 0,
        });
    let mode = if topic::is_retry_topic(&body.topic) {
        SetMessageRequestModeRequestBody {
            mode: MessageRequestMode::Pull,
            ..mode
        }
    } else {
        mode
    };
    let assigned = match subscribe_queues(broker, &body.topic).await {
        None => None,
        Some(queues) if body.message_model == MessageModel::Broadcasting => Some(queues),
        Some(queues) if queues.is_empty() => Some(queues),
        Some(queues) => {
            let mut ids = broker
                .consumers
                .clients
                .consumer_group(&body.consumer_group)
                .map(|g| g.client_ids())
                .unwrap_or_default();
            ids.sort();
            match (
                ids.iter().position(|id| *id == body.client_id),
                strategy(&body.strategy_name),
            ) {
                (Some(index), Some(allocate)) => {
                    Some(assign(&queues, &ids, index, &mode, allocate))
                }
                // Not registered here yet, or a strategy this broker does not know: the
                // client keeps what it has.
                _ => None,
            }
        }
    };
    let answer = QueryAssignmentResponseBody {
        message_queue_assignments: assigned.map(|queues| {
            queues
                .into_iter()
                .map(|message_queue| MessageQueueAssignment {
                    message_queue,
                    mode: mode.mode,
                    attachments: None,
                })
                .collect()
        }),
    };
    RemotingCommand::success().with_body(json::to_vec(&answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queues(n: i32) -> Vec<MessageQueue> {
        (0..n).map(|q| MessageQueue::new("T", "b", q)).collect()
    }

    fn ids(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("c{i}")).collect()
    }

    fn mode(m: MessageRequestMode, share: i32) -> SetMessageRequestModeRequestBody {
        SetMessageRequestModeRequestBody {
            topic: "T".into(),
            consumer_group: "G".into(),
            mode: m,
            pop_share_queue_num: share,
        }
    }

    #[test]
    fn pull_mode_shares_the_queues_out() {
        let q = queues(5);
        let pull = mode(MessageRequestMode::Pull, 0);
        let all: Vec<Vec<i32>> = (0..2)
            .map(|i| {
                assign(&q, &ids(2), i, &pull, averagely)
                    .iter()
                    .map(|m| m.queue_id)
                    .collect()
            })
            .collect();
        assert_eq!(all, [vec![0, 1, 2], vec![3, 4]]);
        let circle: Vec<i32> = assign(&q, &ids(2), 1, &pull, by_circle)
            .iter()
            .map(|m| m.queue_id)
            .collect();
        assert_eq!(circle, [1, 3]);
    }

    #[test]
    fn pop_mode_shares_queues_between_consumers() {
        let q = queues(4);
        let every = assign(&q, &ids(3), 0, &mode(MessageRequestMode::Pop, 0), averagely);
        assert_eq!(every, [MessageQueue::new("T", "b", -1)]);
        let shared: Vec<i32> = assign(&q, &ids(4), 0, &mode(MessageRequestMode::Pop, 1), averagely)
            .iter()
            .map(|m| m.queue_id)
            .collect();
        assert_eq!(shared, [0, 1], "its own queue and the next consumer's");
        let crowded = assign(
            &queues(2),
            &ids(5),
            3,
            &mode(MessageRequestMode::Pop, 1),
            averagely,
        );
        assert_eq!(crowded, [MessageQueue::new("T", "b", 1)]);
    }
}
