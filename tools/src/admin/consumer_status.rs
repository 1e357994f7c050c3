//! `consumerStatus`: each online client of a consumer group describes itself
//! (GET_CONSUMER_RUNNING_INFO, relayed by a broker it is connected to): options,
//! subscriptions, and per queue its committed offset and cache. Without `-i`, one row
//! per client and RocketMQ's two checks: do all clients subscribe alike, and does no
//! queue belong to two clients. RocketMQ also writes each client's report to a file
//! under the working directory; Vostok prints `-` in that column and writes nothing
//! (`-i` prints one report, `--json` all of them).

use std::collections::{BTreeMap, BTreeSet};

use clap::Args;
use serde_json::Value;
use vostok_client::AdminClient;
use vostok_remoting::protocol::request_code::{
    GET_CONSUMER_CONNECTION_LIST, GET_CONSUMER_RUNNING_INFO,
};
use vostok_remoting::protocol::response_code::CONSUMER_NOT_ONLINE;

use super::cluster::cluster_info;
use super::error::{during, unless_answered, AdminError};
use super::output::JsonFlag;

#[derive(Args, Debug, Clone)]
pub struct ConsumerStatusArgs {
    /// Consumer group.
    #[arg(short = 'g', long = "consumerGroup", value_name = "GROUP")]
    pub group: String,
    /// Only this client.
    #[arg(short = 'i', long = "clientId", value_name = "CLIENT_ID")]
    pub client_id: Option<String>,
    /// Ask through this broker only.
    #[arg(short = 'b', long = "brokerAddr", value_name = "ADDR")]
    pub broker_addr: Option<String>,
    /// Ask for thread stacks (Java clients; others ignore it).
    #[arg(short = 's', long = "jstack", default_value_t = false)]
    pub jstack: bool,
}

/// `client id → (version, broker it is connected to)`.
async fn clients(
    admin: &AdminClient,
    args: &ConsumerStatusArgs,
) -> Result<BTreeMap<String, (i32, String)>, AdminError> {
    let brokers: Vec<String> = match &args.broker_addr {
        Some(b) => vec![b.trim().to_owned()],
        None => cluster_info(admin)
            .await?
            .broker_addr_table
            .values()
            .filter_map(|b| b.master_addr().map(str::to_owned))
            .collect(),
    };
    let mut out = BTreeMap::new();
    for addr in brokers {
        let connection = unless_answered(
            admin
                .examine_consumer_connection_info(&addr, args.group.trim())
                .await,
            &[CONSUMER_NOT_ONLINE],
        )
        .map_err(during(GET_CONSUMER_CONNECTION_LIST))?;
        for c in connection.into_iter().flat_map(|c| c.connection_set) {
            out.entry(c.client_id).or_insert((c.version, addr.clone()));
        }
    }
    Ok(out)
}

/// Java `ConsumerRunningInfo.formatString`: properties, subscriptions, offsets.
fn format_info(info: &Value) -> String {
    let mut out = String::from("#Consumer Properties#\n");
    if let Some(props) = info["properties"].as_object() {
        let sorted: BTreeMap<&String, &Value> = props.iter().collect();
        for (k, v) in sorted {
            let v = v
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| v.to_string());
            out.push_str(&format!("{k:<40}: {v}\n"));
        }
    }
    out.push_str("\n\n#Consumer Subscription#\n");
    for (i, s) in info["subscriptionSet"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        out.push_str(&format!(
            "{:03} Topic: {:<40} ClassFilter: {:<8} SubExpression: {}\n",
            i + 1,
            s["topic"].as_str().unwrap_or(""),
            s["classFilterMode"].as_bool().unwrap_or(false),
            s["subString"].as_str().unwrap_or("")
        ));
    }
    out.push_str("\n\n#Consumer Offset#\n");
    out.push_str(&format!(
        "{:<64}  {:<32}  {:<4}  {:<20}\n",
        "#Topic", "#Broker Name", "#QID", "#Consumer Offset"
    ));
    for (mq, detail) in queues(info) {
        out.push_str(&format!(
            "{:<64}  {:<32}  {:<4}  {:<20}\n",
            mq.0, mq.1, mq.2, detail["commitOffset"]
        ));
    }
    out
}

/// `(topic, broker, queue) → queue detail` of a running info's `mqTable`.
fn queues(info: &Value) -> BTreeMap<(String, String, i64), &Value> {
    let mut out = BTreeMap::new();
    for (key, detail) in info["mqTable"].as_object().into_iter().flatten() {
        if let Ok(mq) = serde_json::from_str::<Value>(key) {
            out.insert(
                (
                    mq["topic"].as_str().unwrap_or("").to_owned(),
                    mq["brokerName"].as_str().unwrap_or("").to_owned(),
                    mq["queueId"].as_i64().unwrap_or(-1),
                ),
                detail,
            );
        }
    }
    out
}

/// Java `analyzeSubscription`: every client subscribes the same topics and expressions.
fn same_subscription(infos: &BTreeMap<String, Value>) -> bool {
    let subs = |info: &Value| -> BTreeSet<(String, String)> {
        info["subscriptionSet"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                (
                    s["topic"].as_str().unwrap_or("").to_owned(),
                    s["subString"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect()
    };
    let mut all = infos.values().map(subs);
    let Some(first) = all.next() else {
        return true;
    };
    all.all(|s| s == first)
}

/// Java `analyzeRebalance`: no queue is held by two clients.
fn rebalance_ok(infos: &BTreeMap<String, Value>) -> bool {
    let mut seen = BTreeSet::new();
    infos
        .values()
        .flat_map(|info| queues(info).into_keys().collect::<Vec<_>>())
        .all(|mq| seen.insert(mq))
}

pub async fn consumer_status(
    admin: &AdminClient,
    args: &ConsumerStatusArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let group = args.group.trim();
    let online = clients(admin, args).await?;
    if online.is_empty() {
        return Err(AdminError::NotFound(format!(
            "consumer group {group} has no client online"
        )));
    }
    if let Some(id) = &args.client_id {
        let id = id.trim();
        let (_, broker) = online
            .get(id)
            .ok_or_else(|| AdminError::NotFound(format!("client {id} of {group} is not online")))?;
        let info = admin
            .get_consumer_running_info(broker, group, id, args.jstack)
            .await
            .map_err(during(GET_CONSUMER_RUNNING_INFO))?;
        return out.render(&info, format_info);
    }
    let mut infos = BTreeMap::new();
    let mut text = format!(
        "{:<10} {:<40} {:<20} {}\n",
        "#Index", "#ClientId", "#Version", "#ConsumerRunningInfoFile"
    );
    for (i, (id, (version, broker))) in online.iter().enumerate() {
        let info = admin
            .get_consumer_running_info(broker, group, id, args.jstack)
            .await
            .map_err(during(GET_CONSUMER_RUNNING_INFO))?;
        text.push_str(&format!("{:<10} {id:<40} {version:<20} -\n", i + 1));
        infos.insert(id.clone(), info);
    }
    if same_subscription(&infos) {
        text.push_str("\n\nSame subscription in the same group of consumer");
        let ok = rebalance_ok(&infos);
        text.push_str(&format!(
            "\n\nRebalance {}\n",
            if ok { "OK" } else { "Failed" }
        ));
    } else {
        text.push_str("\n\nWARN: Different subscription in the same group of consumer!!!\n");
    }
    out.render(&infos, |_| text)
}
