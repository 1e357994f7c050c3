//! `allocateMQ`: how RocketMQ's default strategy (`AllocateMessageQueueAveragely`)
//! shares a topic's read queues among the given consumer ids, printed as RocketMQ's
//! `RebalanceResult` JSON (`{"result":{"id":[queue, ...]}}`).

use std::collections::BTreeMap;

use clap::Args;
use serde::Serialize;
use vostok_client::consumer::{AllocateMessageQueueAveragely, AllocateStrategy};
use vostok_client::route::subscribe_queues;
use vostok_client::{AdminClient, MessageQueue};

use super::error::AdminError;
use super::output::JsonFlag;
use super::topic::route;

#[derive(Args, Debug, Clone)]
pub struct AllocateMqArgs {
    /// Topic.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Consumer ids (addresses), comma-separated.
    #[arg(short = 'i', long = "ipList", value_name = "IDS")]
    pub ip_list: String,
}

/// Java `RebalanceResult`.
#[derive(Serialize)]
struct RebalanceResult {
    result: BTreeMap<String, Vec<MessageQueue>>,
}

pub async fn allocate_mq(
    admin: &AdminClient,
    args: &AllocateMqArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let topic = args.topic.trim();
    let route = route(admin, topic).await?;
    let mut queues = subscribe_queues(topic, &route);
    queues.sort();
    let ids: Vec<String> = args
        .ip_list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    if ids.is_empty() {
        return Err(AdminError::Invalid("-i lists no consumer id".into()));
    }
    // Java hands the list over unsorted; the strategy sorts its own copy.
    let mut sorted = ids.clone();
    sorted.sort();
    let result = ids
        .iter()
        .map(|id| {
            let share = AllocateMessageQueueAveragely.allocate(id, &queues, &sorted);
            (id.clone(), share)
        })
        .collect();
    let rebalance = RebalanceResult { result };
    // RocketMQ prints the JSON either way.
    let compact = serde_json::to_string(&rebalance)
        .map_err(|e| AdminError::Invalid(format!("cannot print JSON: {e}")))?;
    out.render(&rebalance, |_| format!("{compact}\n"))
}
