//! `updateTopicPerm`, `topicClusterList` and `updateOrderConf`: a topic's permission
//! on its brokers, the clusters that serve it, and its order config in the name
//! servers' KV store (namespace `ORDER_TOPIC_CONFIG`).

use std::collections::BTreeSet;

use clap::{ArgGroup, Args, ValueEnum};
use serde::Serialize;
use vostok_client::AdminClient;
use vostok_remoting::protocol::request_code::{
    DELETE_KV_CONFIG, GET_KV_CONFIG, GET_TOPIC_CONFIG, PUT_KV_CONFIG, UPDATE_AND_CREATE_TOPIC,
};
use vostok_remoting::protocol::topic::perm;

use super::cluster::{cluster_info, cluster_masters};
use super::error::{during, AdminError};
use super::output::JsonFlag;
use super::topic::route;

/// The KV namespace of ordered topics' queue layout (Java `NAMESPACE_ORDER_TOPIC_CONFIG`).
pub const ORDER_TOPIC_CONFIG: &str = "ORDER_TOPIC_CONFIG";

#[derive(Args, Debug, Clone)]
#[command(group(ArgGroup::new("target").required(true).args(["broker_addr", "cluster_name"])))]
pub struct UpdateTopicPermArgs {
    /// Topic name.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// The master at this address.
    #[arg(short = 'b', long = "brokerAddr", value_name = "ADDR")]
    pub broker_addr: Option<String>,
    /// Every master of this cluster that serves the topic.
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    pub cluster_name: Option<String>,
    /// The new permission: 2 write, 4 read, 6 both.
    #[arg(short = 'p', long = "perm")]
    pub perm: i32,
}

#[derive(Args, Debug, Clone)]
pub struct TopicClusterListArgs {
    /// Topic name.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderConfMethod {
    Get,
    Put,
    Delete,
}

#[derive(Args, Debug, Clone)]
pub struct UpdateOrderConfArgs {
    /// Topic name.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// With `put`: the order config, `brokerName:queueNum;brokerName:queueNum`.
    #[arg(short = 'v', long = "orderConf", value_name = "CONF")]
    pub order_conf: Option<String>,
    /// `get`, `put` or `delete`.
    #[arg(short = 'm', long = "method", value_enum)]
    pub method: OrderConfMethod,
}

/// What `updateTopicPerm` did on one broker.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PermChange {
    broker_addr: String,
    old_perm: i32,
    new_perm: i32,
    changed: bool,
}

/// Reads each target master's own config of the topic (GET_TOPIC_CONFIG) and writes it
/// back with the new permission (UPDATE_AND_CREATE_TOPIC): queue counts, order flag
/// and attributes stay as that broker has them. **Vostok differs:** Apache copies the
/// queue counts of the route's first broker to every broker.
pub async fn update_topic_perm(
    admin: &AdminClient,
    args: &UpdateTopicPermArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let valid = perm::READ | perm::WRITE | perm::INHERIT | perm::PRIORITY;
    if args.perm & !valid != 0 || args.perm < 0 {
        return Err(AdminError::Invalid(format!(
            "-p {}: permission bits are 2 (write), 4 (read), 1 (inherit), 8 (priority)",
            args.perm
        )));
    }
    let route = route(admin, &args.topic).await?;
    let serving: BTreeSet<&str> = route
        .queue_datas
        .iter()
        .map(|q| q.broker_name.as_str())
        .collect();
    let targets: Vec<String> = match (&args.broker_addr, &args.cluster_name) {
        (Some(addr), _) => {
            let is_master = route
                .broker_datas
                .iter()
                .any(|b| serving.contains(b.broker_name.as_str()) && b.master_addr() == Some(addr));
            if !is_master {
                return Err(AdminError::NotFound(format!(
                    "{addr} is not a master serving topic {}",
                    args.topic
                )));
            }
            vec![addr.clone()]
        }
        (None, Some(cluster)) => {
            let info = cluster_info(admin).await?;
            cluster_masters(&info, cluster)?
                .into_iter()
                .filter(|(name, _)| serving.contains(name.as_str()))
                .map(|(_, addr)| addr)
                .collect()
        }
        (None, None) => Vec::new(),
    };
    if targets.is_empty() {
        return Err(AdminError::NotFound(format!(
            "no master of that cluster serves topic {}",
            args.topic
        )));
    }
    let mut changes = Vec::new();
    let mut text = String::new();
    for addr in targets {
        let mut config = admin
            .examine_topic_config(&addr, &args.topic)
            .await
            .map_err(during(GET_TOPIC_CONFIG))?;
        let old_perm = config.perm;
        if old_perm == args.perm {
            text.push_str(&format!("new perm equals to the old one! ({addr})\n"));
            changes.push(PermChange {
                broker_addr: addr,
                old_perm,
                new_perm: args.perm,
                changed: false,
            });
            continue;
        }
        config.perm = args.perm;
        admin
            .create_and_update_topic_config(&addr, &config)
            .await
            .map_err(during(UPDATE_AND_CREATE_TOPIC))?;
        text.push_str(&format!(
            "update topic perm from {old_perm} to {} in {addr} success.\n",
            args.perm
        ));
        changes.push(PermChange {
            broker_addr: addr,
            old_perm,
            new_perm: args.perm,
            changed: true,
        });
    }
    out.render(&changes, |_| text)
}

/// The clusters whose brokers serve the topic, one a line.
pub async fn topic_cluster_list(
    admin: &AdminClient,
    args: &TopicClusterListArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let route = route(admin, &args.topic).await?;
    let info = cluster_info(admin).await?;
    let clusters: BTreeSet<String> = route
        .broker_datas
        .iter()
        .filter_map(|b| {
            info.cluster_addr_table
                .iter()
                .find(|(_, names)| names.contains(&b.broker_name))
                .map(|(cluster, _)| cluster.clone())
                .or_else(|| (!b.cluster.is_empty()).then(|| b.cluster.clone()))
        })
        .collect();
    out.render(&clusters, |clusters| {
        clusters.iter().map(|c| format!("{c}\n")).collect()
    })
}

/// `brokerName:queueNum;...` checked: each part a name and a positive count.
fn check_order_conf(conf: &str) -> Result<(), AdminError> {
    let bad = || {
        AdminError::Invalid(format!(
            "-v {conf}: the order config is brokerName:queueNum;brokerName:queueNum"
        ))
    };
    if conf.trim().is_empty() {
        return Err(AdminError::Invalid(
            "put needs the order config: -v brokerName:queueNum;...".into(),
        ));
    }
    for part in conf.split(';').filter(|p| !p.trim().is_empty()) {
        let (name, num) = part.split_once(':').ok_or_else(bad)?;
        if name.trim().is_empty() || num.trim().parse::<u32>().map_or(true, |n| n == 0) {
            return Err(bad());
        }
    }
    Ok(())
}

/// GET_KV_CONFIG, PUT_KV_CONFIG or DELETE_KV_CONFIG of the topic's order config.
pub async fn update_order_conf(
    admin: &AdminClient,
    args: &UpdateOrderConfArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let topic = args.topic.trim();
    let (conf, text) = match args.method {
        OrderConfMethod::Get => {
            let conf = admin
                .get_kv_config(ORDER_TOPIC_CONFIG, topic)
                .await
                .map_err(during(GET_KV_CONFIG))?;
            let text = format!(
                "get orderConf success. topic=[{topic}], orderConf=[{}]\n",
                conf.as_deref().unwrap_or("")
            );
            (conf, text)
        }
        OrderConfMethod::Put => {
            let conf = args.order_conf.clone().unwrap_or_default();
            check_order_conf(&conf)?;
            admin
                .create_and_update_kv_config(ORDER_TOPIC_CONFIG, topic, conf.trim())
                .await
                .map_err(during(PUT_KV_CONFIG))?;
            let text = format!("update orderConf success. topic=[{topic}], orderConf=[{conf}]\n");
            (Some(conf), text)
        }
        OrderConfMethod::Delete => {
            admin
                .delete_kv_config(ORDER_TOPIC_CONFIG, topic)
                .await
                .map_err(during(DELETE_KV_CONFIG))?;
            (None, format!("delete orderConf success. topic=[{topic}]\n"))
        }
    };
    let doc = serde_json::json!({ "topic": topic, "orderConf": conf });
    out.render(&doc, |_| text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_confs_are_broker_names_and_queue_counts() {
        assert!(check_order_conf("broker-a:4;broker-b:8").is_ok());
        assert!(check_order_conf("broker-a:4;").is_ok());
        for bad in ["", "broker-a", "broker-a:0", ":4", "broker-a:x"] {
            assert!(check_order_conf(bad).is_err(), "{bad}");
        }
    }
}
