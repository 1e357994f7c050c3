//! `queryCq`: the entries of one consume queue (QUERY_CONSUME_QUEUE): where each
//! message is in the commitlog, its size and tag hash, and with `-g` whether it
//! matches that group's subscription.

use clap::Args;
use vostok_client::AdminClient;
use vostok_remoting::protocol::header::QueryConsumeQueueRequestHeader;
use vostok_remoting::protocol::request_code::QUERY_CONSUME_QUEUE;

use super::error::{during, AdminError};
use super::output::JsonFlag;
use super::topic::route;

#[derive(Args, Debug, Clone)]
pub struct QueryCqArgs {
    /// Topic.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Queue id.
    #[arg(short = 'q', long = "queue", value_name = "QUEUE_ID")]
    pub queue_id: i32,
    /// First queue offset.
    #[arg(short = 'i', long = "index", value_name = "OFFSET")]
    pub index: i64,
    /// How many entries (the broker returns at most 1000).
    #[arg(short = 'c', long = "count", default_value_t = 10)]
    pub count: i32,
    /// The broker (the master of the topic's first broker when absent).
    #[arg(short = 'b', long = "broker", value_name = "ADDR")]
    pub broker_addr: Option<String>,
    /// Show this consumer group's subscription and whether each entry matches it.
    #[arg(short = 'g', long = "consumer", value_name = "GROUP")]
    pub group: Option<String>,
}

const RULE: &str = "======================================\n";

pub async fn query_cq(
    admin: &AdminClient,
    args: &QueryCqArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let addr = match &args.broker_addr {
        Some(addr) => addr.clone(),
        None => {
            let route = route(admin, &args.topic).await?;
            let mut brokers: Vec<_> = route.broker_datas.iter().collect();
            brokers.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
            brokers
                .iter()
                .find_map(|b| b.master_addr().map(str::to_owned))
                .ok_or_else(|| {
                    AdminError::NotFound(format!("topic {} has no master online", args.topic))
                })?
        }
    };
    let header = QueryConsumeQueueRequestHeader {
        topic: args.topic.clone(),
        queue_id: args.queue_id,
        index: args.index,
        count: args.count,
        consumer_group: args.group.clone(),
    };
    let body = admin
        .query_consume_queue(&addr, &header)
        .await
        .map_err(during(QUERY_CONSUME_QUEUE))?;
    out.render(&body, |body| {
        let mut text = String::new();
        if let Some(sub) = &body.subscription_data {
            let json = serde_json::to_string_pretty(sub).unwrap_or_default();
            text.push_str(&format!("Subscription data: \n{json}\n{RULE}"));
        }
        if let Some(filter) = &body.filter_data {
            text.push_str(&format!("Filter data: \n{filter}\n{RULE}"));
        }
        text.push_str(&format!(
            "Queue data: \nmax: {}, min: {}\n{RULE}",
            body.max_queue_index, body.min_queue_index
        ));
        let quoted = |v: &Option<String>| v.as_deref().unwrap_or("null").to_owned();
        for (i, d) in body.queue_data.iter().enumerate() {
            let idx = d.queue_offset.unwrap_or(args.index + i as i64);
            text.push_str(&format!(
                "idx: {idx}\nConsumeQueueData{{physicOffset={}, physicSize={}, tagsCode={}, extendDataJson='{}', bitMap='{}', eval={}, msg='{}'}}\n{RULE}",
                d.physic_offset,
                d.physic_size,
                d.tags_code,
                quoted(&d.extend_data_json),
                quoted(&d.bit_map),
                d.eval,
                quoted(&d.msg)
            ));
        }
        text
    })
}
