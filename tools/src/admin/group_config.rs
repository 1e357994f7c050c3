//! `getConsumerConfig` and `setConsumeMode`: a subscription group's settings on each
//! broker that has it, and how a group's consumers get a topic's messages (pull or
//! POP), as the brokers answer QUERY_ASSIGNMENT.

use clap::{ArgGroup, Args};
use serde::Serialize;
use vostok_client::AdminClient;
use vostok_remoting::protocol::body::{
    MessageRequestMode, SetMessageRequestModeRequestBody, SubscriptionGroupConfig,
};
use vostok_remoting::protocol::request_code::{
    GET_SUBSCRIPTIONGROUP_CONFIG, SET_MESSAGE_REQUEST_MODE,
};
use vostok_remoting::protocol::response_code::SUBSCRIPTION_GROUP_NOT_EXIST;

use super::cluster::cluster_info;
use super::error::{during, unless_answered, AdminError};
use super::output::{render_applied, Applied, JsonFlag};
use super::target::{masters, Target};

#[derive(Args, Debug, Clone)]
pub struct GetConsumerConfigArgs {
    /// Subscription group.
    #[arg(short = 'g', long = "groupName", value_name = "GROUP")]
    pub group: String,
}

#[derive(Args, Debug, Clone)]
#[command(group(ArgGroup::new("target").required(true).args(["broker_addr", "cluster_name"])))]
pub struct SetConsumeModeArgs {
    /// One broker.
    #[arg(short = 'b', long = "brokerAddr", value_name = "ADDR")]
    pub broker_addr: Option<String>,
    /// Every master of this cluster.
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    pub cluster_name: Option<String>,
    /// Topic.
    #[arg(short = 't', long = "topicName", value_name = "TOPIC")]
    pub topic: String,
    /// Consumer group.
    #[arg(short = 'g', long = "groupName", value_name = "GROUP")]
    pub group: String,
    /// `PULL` or `POP`.
    #[arg(short = 'm', long = "mode", value_parser = parse_mode)]
    pub mode: MessageRequestMode,
    /// POP mode: how many other consumers share each consumer's queues (0: every
    /// consumer pops every queue).
    #[arg(
        short = 'q',
        long = "popShareQueueNum",
        value_name = "N",
        default_value_t = 0
    )]
    pub pop_share_queue_num: i32,
}

fn parse_mode(s: &str) -> Result<MessageRequestMode, String> {
    MessageRequestMode::from_name(&s.trim().to_ascii_uppercase())
        .ok_or_else(|| format!("{s}: PULL or POP"))
}

/// A group's settings on one broker.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ConsumerConfigInfo {
    cluster_name: String,
    broker_name: String,
    subscription_group_config: SubscriptionGroupConfig,
}

/// The settings as `name=  value` lines, in Java's field order.
fn config_lines(c: &SubscriptionGroupConfig) -> String {
    let attributes: Vec<String> = c
        .attributes
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let fields = [
        ("groupName", c.group_name.clone()),
        ("consumeEnable", c.consume_enable.to_string()),
        (
            "consumeFromMinEnable",
            c.consume_from_min_enable.to_string(),
        ),
        (
            "consumeBroadcastEnable",
            c.consume_broadcast_enable.to_string(),
        ),
        (
            "consumeMessageOrderly",
            c.consume_message_orderly.to_string(),
        ),
        ("retryQueueNums", c.retry_queue_nums.to_string()),
        ("retryMaxTimes", c.retry_max_times.to_string()),
        ("brokerId", c.broker_id.to_string()),
        (
            "whichBrokerWhenConsumeSlowly",
            c.which_broker_when_consume_slowly.to_string(),
        ),
        (
            "notifyConsumerIdsChangedEnable",
            c.notify_consumer_ids_changed_enable.to_string(),
        ),
        ("groupSysFlag", c.group_sys_flag.to_string()),
        ("consumeTimeoutMinute", c.consume_timeout_minute.to_string()),
        ("attributes", format!("{{{}}}", attributes.join(", "))),
    ];
    fields
        .iter()
        .map(|(name, value)| format!("{name:<40}=  {value}\n"))
        .collect()
}

/// GET_SUBSCRIPTIONGROUP_CONFIG on one broker of each broker name (the master when
/// online); brokers that do not have the group are skipped.
pub async fn get_consumer_config(
    admin: &AdminClient,
    args: &GetConsumerConfigArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let info = cluster_info(admin).await?;
    let mut found = Vec::new();
    for (name, broker) in &info.broker_addr_table {
        let Some(addr) = broker.select_addr() else {
            continue;
        };
        let config = unless_answered(
            admin
                .examine_subscription_group_config(addr, &args.group)
                .await,
            &[SUBSCRIPTION_GROUP_NOT_EXIST],
        )
        .map_err(during(GET_SUBSCRIPTIONGROUP_CONFIG))?;
        let Some(config) = config else {
            continue;
        };
        let cluster = info
            .cluster_addr_table
            .iter()
            .find(|(_, names)| names.contains(name))
            .map(|(c, _)| c.clone())
            .unwrap_or_else(|| broker.cluster.clone());
        found.push(ConsumerConfigInfo {
            cluster_name: cluster,
            broker_name: name.clone(),
            subscription_group_config: config,
        });
    }
    if found.is_empty() {
        return Err(AdminError::NotFound(format!(
            "no broker has subscription group {}",
            args.group
        )));
    }
    out.render(&found, |found| {
        found
            .iter()
            .map(|f| {
                format!(
                    "============================={}:{}=============================\n{}",
                    f.cluster_name,
                    f.broker_name,
                    config_lines(&f.subscription_group_config)
                )
            })
            .collect()
    })
}

/// SET_MESSAGE_REQUEST_MODE on one broker or every master of a cluster.
pub async fn set_consume_mode(
    admin: &AdminClient,
    args: &SetConsumeModeArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let target = Target {
        broker_addr: args.broker_addr.clone(),
        cluster_name: args.cluster_name.clone(),
    };
    let body = SetMessageRequestModeRequestBody {
        topic: args.topic.trim().to_owned(),
        consumer_group: args.group.trim().to_owned(),
        mode: args.mode,
        pop_share_queue_num: args.pop_share_queue_num,
    };
    let mut applied = Vec::new();
    for addr in masters(admin, &target).await? {
        admin
            .set_message_request_mode(&addr, &body)
            .await
            .map_err(during(SET_MESSAGE_REQUEST_MODE))?;
        let line = format!(
            "set consume mode to {addr} success: topic[{}] group[{}] consume mode[{}] popShareQueueNum[{}]",
            body.topic, body.consumer_group, body.mode, body.pop_share_queue_num
        );
        applied.push(Applied::new(addr, line));
    }
    render_applied(out, &applied)
}
