//! `updateSubGroup` and `deleteSubGroup`: a consumer group's settings on one broker or
//! on every master of a cluster (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
//! DELETE_SUBSCRIPTIONGROUP), printed as RocketMQ's commands print them.

use clap::Args;
use serde::Serialize;
use vostok_client::AdminClient;
use vostok_remoting::protocol::body::SubscriptionGroupConfig;
use vostok_remoting::protocol::request_code::{
    DELETE_SUBSCRIPTIONGROUP, UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
};
use vostok_remoting::protocol::topic;

use super::error::{during, AdminError};
use super::output::JsonFlag;
use super::target::masters;
use super::target::Target;

#[derive(Args, Debug, Clone)]
pub struct UpdateSubGroupArgs {
    #[command(flatten)]
    pub target: Target,
    /// Consumer group.
    #[arg(short = 'g', long = "groupName", value_name = "GROUP")]
    pub group: String,
    /// Whether the group may consume.
    #[arg(short = 's', long = "consumeEnable", value_name = "BOOL")]
    pub consume_enable: Option<bool>,
    /// A new group starts from the queue's first offset.
    #[arg(short = 'm', long = "consumeFromMinEnable", value_name = "BOOL")]
    pub consume_from_min_enable: Option<bool>,
    /// Broadcasting consumption allowed.
    #[arg(short = 'd', long = "consumeBroadcastEnable", value_name = "BOOL")]
    pub consume_broadcast_enable: Option<bool>,
    /// Orderly consumption.
    #[arg(short = 'o', long = "consumeMessageOrderly", value_name = "BOOL")]
    pub consume_message_orderly: Option<bool>,
    /// Queues of the group's retry topic.
    #[arg(short = 'q', long = "retryQueueNums", value_name = "N")]
    pub retry_queue_nums: Option<i32>,
    /// Deliveries before a message goes to the group's DLQ.
    #[arg(short = 'r', long = "retryMaxTimes", value_name = "N")]
    pub retry_max_times: Option<i32>,
    /// Broker id consumers read from.
    #[arg(short = 'i', long = "brokerId", value_name = "ID")]
    pub broker_id: Option<i64>,
    /// Broker id consumers read from when they fall behind.
    #[arg(short = 'w', long = "whichBrokerWhenConsumeSlowly", value_name = "ID")]
    pub which_broker_when_consume_slowly: Option<i64>,
    /// Tell consumers when the group's members change.
    #[arg(short = 'a', long = "notifyConsumerIdsChanged", value_name = "BOOL")]
    pub notify_consumer_ids_changed: Option<bool>,
    /// Group attributes, `+key=value,+key2=value2`.
    #[arg(long = "attributes", value_name = "ATTRS")]
    pub attributes: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct DeleteSubGroupArgs {
    #[command(flatten)]
    pub target: Target,
    /// Consumer group.
    #[arg(short = 'g', long = "groupName", value_name = "GROUP")]
    pub group: String,
    /// Also drop the group's committed offsets.
    #[arg(
        short = 'r',
        long = "removeOffset",
        value_name = "BOOL", default_value_t = false, action = clap::ArgAction::Set
    )]
    pub remove_offset: bool,
}

#[derive(Serialize)]
struct Updated<'a> {
    brokers: &'a [String],
    config: &'a SubscriptionGroupConfig,
}

/// The config RocketMQ's `updateSubGroup` sends: Java's defaults, broadcast and
/// from-min off, then the flags given.
fn config_of(args: &UpdateSubGroupArgs) -> Result<SubscriptionGroupConfig, AdminError> {
    let mut c = SubscriptionGroupConfig {
        group_name: args.group.trim().to_owned(),
        consume_broadcast_enable: false,
        consume_from_min_enable: false,
        ..SubscriptionGroupConfig::default()
    };
    let set = |slot: &mut bool, v: Option<bool>| {
        if let Some(v) = v {
            *slot = v;
        }
    };
    set(&mut c.consume_enable, args.consume_enable);
    set(&mut c.consume_from_min_enable, args.consume_from_min_enable);
    set(
        &mut c.consume_broadcast_enable,
        args.consume_broadcast_enable,
    );
    set(&mut c.consume_message_orderly, args.consume_message_orderly);
    set(
        &mut c.notify_consumer_ids_changed_enable,
        args.notify_consumer_ids_changed,
    );
    c.retry_queue_nums = args.retry_queue_nums.unwrap_or(c.retry_queue_nums);
    c.retry_max_times = args.retry_max_times.unwrap_or(c.retry_max_times);
    c.broker_id = args.broker_id.unwrap_or(c.broker_id);
    c.which_broker_when_consume_slowly = args
        .which_broker_when_consume_slowly
        .unwrap_or(c.which_broker_when_consume_slowly);
    if let Some(attrs) = &args.attributes {
        for a in attrs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            match a.strip_prefix('+').and_then(|kv| kv.split_once('=')) {
                Some((k, v)) => {
                    c.attributes.insert(format!("+{k}"), v.to_owned());
                }
                None => match a.strip_prefix('-') {
                    Some(k) => {
                        c.attributes.insert(format!("-{k}"), String::new());
                    }
                    None => {
                        return Err(AdminError::Invalid(format!(
                            "attribute {a:?} is neither +key=value nor -key"
                        )))
                    }
                },
            }
        }
    }
    Ok(c)
}

pub async fn update_sub_group(
    admin: &AdminClient,
    args: &UpdateSubGroupArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    topic::validate_group(args.group.trim()).map_err(AdminError::Invalid)?;
    let config = config_of(args)?;
    let brokers = masters(admin, &args.target).await?;
    let mut text = String::new();
    for addr in &brokers {
        admin
            .create_and_update_subscription_group_config(addr, &config)
            .await
            .map_err(during(UPDATE_AND_CREATE_SUBSCRIPTIONGROUP))?;
        text.push_str(&format!("create subscription group to {addr} success.\n"));
    }
    text.push_str(&format!("{config}\n"));
    out.render(
        &Updated {
            brokers: &brokers,
            config: &config,
        },
        |_| text,
    )
}

pub async fn delete_sub_group(
    admin: &AdminClient,
    args: &DeleteSubGroupArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let group = args.group.trim();
    let brokers = masters(admin, &args.target).await?;
    let mut text = String::new();
    for addr in &brokers {
        admin
            .delete_subscription_group(addr, group, args.remove_offset)
            .await
            .map_err(during(DELETE_SUBSCRIPTIONGROUP))?;
        match &args.target.cluster_name {
            Some(cluster) => text.push_str(&format!(
                "delete subscription group [{group}] from broker [{addr}] in cluster [{cluster}] success.\n"
            )),
            None => text.push_str(&format!(
                "delete subscription group [{group}] from broker [{addr}] success.\n"
            )),
        }
    }
    // As RocketMQ does with -c: the group's retry and DLQ topics go too (best effort).
    if let Some(cluster) = &args.target.cluster_name {
        for t in [topic::retry_topic(group), topic::dlq_topic(group)] {
            for addr in &brokers {
                let _ = admin.delete_topic_in_broker(addr, &t).await;
            }
            let _ = admin.delete_topic_in_namesrv(&t, Some(cluster)).await;
        }
    }
    out.render(&brokers, |_| text)
}
