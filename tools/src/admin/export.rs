//! `exportMetadata`, `exportConfigs` and `exportMetrics`: a cluster's topics and
//! subscription groups, its brokers' main settings, and a summary of its load, written
//! as JSON files under `-f` (`/tmp/rocketmq/export` by default) in Apache's layout.
//! Each prints the file it wrote.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use clap::{ArgGroup, Args};
use serde_json::{json, Map, Value};
use vostok_client::AdminClient;
use vostok_remoting::protocol::body::{
    SubscriptionGroupConfig, SubscriptionGroupWrapper, TopicConfig, TopicConfigSerializeWrapper,
};
use vostok_remoting::protocol::request_code::{
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG, GET_ALL_TOPIC_CONFIG, GET_BROKER_CONFIG,
    GET_BROKER_RUNTIME_INFO,
};
use vostok_remoting::protocol::route::ClusterInfo;
use vostok_remoting::protocol::topic::{self, perm};

use super::cluster::{cluster_info, cluster_masters};
use super::error::{during, AdminError};
use super::output::JsonFlag;

const DEFAULT_DIR: &str = "/tmp/rocketmq/export";

#[derive(Args, Debug, Clone)]
#[command(group(ArgGroup::new("target").required(true).args(["broker_addr", "cluster_name"])))]
pub struct ExportMetadataArgs {
    /// Every master of this cluster, merged.
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    pub cluster_name: Option<String>,
    /// One broker.
    #[arg(short = 'b', long = "brokerAddr", value_name = "ADDR")]
    pub broker_addr: Option<String>,
    /// The directory to write to.
    #[arg(short = 'f', long = "filePath", value_name = "DIR", default_value = DEFAULT_DIR)]
    pub file_path: PathBuf,
    /// Only the topics (`topic.json`).
    #[arg(short = 't', long = "topic", conflicts_with = "subscription_group")]
    pub topic: bool,
    /// Only the subscription groups (`subscriptionGroup.json`).
    #[arg(short = 'g', long = "subscriptionGroup")]
    pub subscription_group: bool,
    /// Retry and dead-letter topics too.
    #[arg(short = 's', long = "specialTopic")]
    pub special_topic: bool,
}

#[derive(Args, Debug, Clone)]
pub struct ExportClusterArgs {
    /// The cluster.
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    pub cluster_name: String,
    /// The directory to write to.
    #[arg(short = 'f', long = "filePath", value_name = "DIR", default_value = DEFAULT_DIR)]
    pub file_path: PathBuf,
}

/// Groups the brokers create for themselves (Java `MixAll.isSysConsumerGroup`,
/// `isPredefinedGroup`).
fn is_system_group(group: &str) -> bool {
    group.starts_with("CID_RMQ_SYS_")
        || matches!(
            group,
            "TOOLS_CONSUMER"
                | "FILTERSRV_CONSUMER"
                | "__MONITOR_CONSUMER"
                | "CLIENT_INNER_PRODUCER"
                | "SELF_TEST_P_GROUP"
                | "SELF_TEST_C_GROUP"
                | "CID_ONS-HTTP-PROXY"
                | "CID_ONSAPI_PERMISSION"
                | "CID_ONSAPI_OWNER"
                | "CID_ONSAPI_PULL"
        )
}

/// The topics users made (Java `getUserTopicConfig`): no system topic, none named
/// after a cluster or a broker, retry and DLQ topics only with `special`.
async fn user_topics(
    admin: &AdminClient,
    addr: &str,
    info: &ClusterInfo,
    special: bool,
) -> Result<TopicConfigSerializeWrapper, AdminError> {
    let mut wrapper = admin
        .get_all_topic_config(addr)
        .await
        .map_err(during(GET_ALL_TOPIC_CONFIG))?;
    let valid_perm = perm::READ | perm::WRITE | perm::INHERIT | perm::PRIORITY;
    wrapper.topic_config_table.retain(|name, config| {
        !topic::is_system_topic(name)
            && !info.cluster_addr_table.contains_key(name)
            && !info.broker_addr_table.contains_key(name)
            && (special || !(topic::is_retry_topic(name) || topic::is_dlq_topic(name)))
            && config.perm & !valid_perm == 0
    });
    Ok(wrapper)
}

/// The groups users made (Java `getUserSubscriptionGroup`).
async fn user_groups(
    admin: &AdminClient,
    addr: &str,
) -> Result<SubscriptionGroupWrapper, AdminError> {
    let mut wrapper = admin
        .get_all_subscription_group(addr)
        .await
        .map_err(during(GET_ALL_SUBSCRIPTIONGROUP_CONFIG))?;
    wrapper
        .subscription_group_table
        .retain(|name, _| !is_system_group(name));
    Ok(wrapper)
}

/// Writes `doc` as pretty JSON to `dir/name`.
fn write(dir: &Path, name: &str, doc: &Value) -> Result<PathBuf, AdminError> {
    let path = dir.join(name);
    let text = serde_json::to_string_pretty(doc)
        .map_err(|e| AdminError::Invalid(format!("cannot write JSON: {e}")))?;
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&path, text + "\n"))
        .map_err(|e| AdminError::Invalid(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

fn written(out: JsonFlag, path: &Path) -> Result<String, AdminError> {
    let doc = json!({ "file": path.display().to_string() });
    out.render(&doc, |_| format!("export {} success\n", path.display()))
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// One broker's tables as they are; a cluster's merged: a topic's queue counts and a
/// group's retry queues summed over its brokers, as Apache merges them.
pub async fn export_metadata(
    admin: &AdminClient,
    args: &ExportMetadataArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let info = cluster_info(admin).await?;
    if let Some(addr) = &args.broker_addr {
        let (name, doc) = if args.subscription_group {
            (
                "subscriptionGroup.json",
                to_value(&user_groups(admin, addr).await?),
            )
        } else if args.topic {
            (
                "topic.json",
                to_value(&user_topics(admin, addr, &info, args.special_topic).await?),
            )
        } else {
            let topics = user_topics(admin, addr, &info, args.special_topic).await?;
            let groups = user_groups(admin, addr).await?;
            let doc = json!({
                "topicConfigTable": topics.topic_config_table,
                "subscriptionGroupTable": groups.subscription_group_table,
                "exportTime": vostok_remoting::support::time::now_millis(),
            });
            ("metadata.json", doc)
        };
        return written(out, &write(&args.file_path, name, &doc)?);
    }
    let cluster = args.cluster_name.as_deref().unwrap_or_default();
    let mut topics: BTreeMap<String, TopicConfig> = BTreeMap::new();
    let mut groups: BTreeMap<String, SubscriptionGroupConfig> = BTreeMap::new();
    for (_, addr) in cluster_masters(&info, cluster)? {
        for (name, mut config) in user_topics(admin, &addr, &info, args.special_topic)
            .await?
            .topic_config_table
        {
            if let Some(seen) = topics.get(&name) {
                config.read_queue_nums += seen.read_queue_nums;
                config.write_queue_nums += seen.write_queue_nums;
            }
            topics.insert(name, config);
        }
        for (name, mut config) in user_groups(admin, &addr).await?.subscription_group_table {
            if let Some(seen) = groups.get(&name) {
                config.retry_queue_nums += seen.retry_queue_nums;
            }
            groups.insert(name, config);
        }
    }
    let mut doc = Map::new();
    let name = if args.topic {
        doc.insert("topicConfigTable".into(), to_value(&topics));
        "topic.json"
    } else if args.subscription_group {
        doc.insert("subscriptionGroupTable".into(), to_value(&groups));
        "subscriptionGroup.json"
    } else {
        doc.insert("topicConfigTable".into(), to_value(&topics));
        doc.insert("subscriptionGroupTable".into(), to_value(&groups));
        "metadata.json"
    };
    doc.insert(
        "exportTime".into(),
        json!(vostok_remoting::support::time::now_millis()),
    );
    written(out, &write(&args.file_path, name, &Value::Object(doc))?)
}

/// The broker keys `exportConfigs` keeps (Apache's list).
const EXPORTED_KEYS: &[&str] = &[
    "brokerClusterName",
    "brokerId",
    "brokerName",
    "brokerRole",
    "fileReservedTime",
    "filterServerNums",
    "flushDiskType",
    "maxMessageSize",
    "messageDelayLevel",
    "msgTraceTopicName",
    "slaveReadEnable",
    "traceOn",
    "traceTopicEnable",
    "useTLS",
    "autoCreateTopicEnable",
    "autoCreateSubscriptionGroup",
];

/// `configs.json`: each master's main settings by broker name, and the cluster's size.
pub async fn export_configs(
    admin: &AdminClient,
    args: &ExportClusterArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let info = cluster_info(admin).await?;
    let mut broker_configs = Map::new();
    let (mut masters, mut slaves) = (0, 0);
    for (name, addr) in cluster_masters(&info, &args.cluster_name)? {
        masters += 1;
        slaves += info
            .broker_addr_table
            .get(&name)
            .map_or(0, |b| b.broker_addrs.len().saturating_sub(1));
        let config: BTreeMap<String, String> = admin
            .get_broker_config(&addr)
            .await
            .map_err(during(GET_BROKER_CONFIG))?
            .into_iter()
            .filter(|(k, _)| EXPORTED_KEYS.contains(&k.as_str()))
            .collect();
        broker_configs.insert(name, to_value(&config));
    }
    let doc = json!({
        "brokerConfigs": broker_configs,
        "clusterScale": {
            "namesrvSize": admin.namesrv_addrs().len(),
            "masterBrokerSize": masters,
            "slaveBrokerSize": slaves,
        },
    });
    written(out, &write(&args.file_path, "configs.json", &doc)?)
}

/// The first rate of a runtime figure (`putTps` holds three).
fn first_rate(table: &BTreeMap<String, String>, key: &str) -> Option<f64> {
    table.get(key)?.split_whitespace().next()?.parse().ok()
}

/// `metrics.json`: for each master of the cluster, its machine, load and client
/// versions, and the cluster's totals (Apache's `evaluateReport` and `totalData`).
/// Figures a broker does not report are `null`: a Vostok broker keeps no
/// yesterday-morning totals, so the day's message counts are `null` there.
pub async fn export_metrics(
    admin: &AdminClient,
    args: &ExportClusterArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let info = cluster_info(admin).await?;
    let mut report = Map::new();
    let (mut total_in, mut total_out, mut total_trans, mut total_schedule) = (0.0, 0.0, 0.0, 0.0);
    let mut day_totals: BTreeMap<&str, Option<i64>> = [
        ("normalOneDayInNum", Some(0)),
        ("normalOneDayOutNum", Some(0)),
        ("transOneDayInNum", Some(0)),
        ("scheduleOneDayInNum", Some(0)),
    ]
    .into();
    for (name, addr) in cluster_masters(&info, &args.cluster_name)? {
        let runtime = admin
            .fetch_broker_runtime_stats(&addr)
            .await
            .map_err(during(GET_BROKER_RUNTIME_INFO))?;
        let config: BTreeMap<String, String> = admin
            .get_broker_config(&addr)
            .await
            .map_err(during(GET_BROKER_CONFIG))?
            .into_iter()
            .collect();
        let topics = user_topics(admin, &addr, &info, false).await?;
        let groups = user_groups(admin, &addr).await?;
        // A broker that never counted a topic, or keeps no counters, has no figures.
        let trans = admin
            .view_broker_stats_data(&addr, "TOPIC_PUT_NUMS", topic::TRANS_HALF_TOPIC)
            .await
            .ok();
        let schedule = admin
            .view_broker_stats_data(&addr, "TOPIC_PUT_NUMS", topic::SCHEDULE_TOPIC)
            .await
            .ok();
        let figure = |k: &str| runtime.get(k).and_then(|v| v.trim().parse::<i64>().ok());
        let day = |today: &str, yesterday: &str| Some(figure(today)? - figure(yesterday)?);
        let in_tps = first_rate(&runtime, "putTps").unwrap_or(0.0);
        let out_tps = first_rate(&runtime, "getTransferedTps")
            .or_else(|| first_rate(&runtime, "getTransferredTps"))
            .unwrap_or(0.0);
        let trans_tps = trans.as_ref().map_or(0.0, |s| s.stats_minute.tps);
        let schedule_tps = schedule.as_ref().map_or(0.0, |s| s.stats_minute.tps);
        let one_day: BTreeMap<&str, Option<i64>> = [
            (
                "normalOneDayInNum",
                day("msgPutTotalTodayMorning", "msgPutTotalYesterdayMorning"),
            ),
            (
                "normalOneDayOutNum",
                day("msgGetTotalTodayMorning", "msgGetTotalYesterdayMorning"),
            ),
            (
                "transOneDayInNum",
                Some(trans.as_ref().map_or(0, |s| s.sum_24h())),
            ),
            (
                "scheduleOneDayInNum",
                Some(schedule.as_ref().map_or(0, |s| s.sum_24h())),
            ),
        ]
        .into();
        for (k, v) in &one_day {
            let total = day_totals.entry(k).or_insert(Some(0));
            *total = total.zip(*v).map(|(a, b)| a + b);
        }
        total_in += in_tps;
        total_out += out_tps;
        total_trans += trans_tps;
        total_schedule += schedule_tps;
        let average_size = match (
            figure("putMessageSizeTotal"),
            figure("putMessageTimesTotal"),
        ) {
            (Some(bytes), Some(n)) if n > 0 => Some(bytes / n),
            _ => None,
        };
        let mut clients = BTreeSet::new();
        for group in groups.subscription_group_table.keys() {
            if let Ok(c) = admin.examine_consumer_connection_info(&addr, group).await {
                for conn in c.connection_set {
                    clients.insert(format!("{}%{}", conn.language, conn.version));
                }
            }
        }
        report.insert(
            name,
            json!({
                "runtimeEnv": {
                    "cpuNum": config.get("clientCallbackExecutorThreads"),
                    "totalMemKBytes": runtime.get("totalMemKBytes"),
                },
                "runtimeQuota": {
                    "diskRatio": {
                        "commitLogDiskRatio": runtime.get("commitLogDiskRatio"),
                        "consumeQueueDiskRatio": runtime.get("consumeQueueDiskRatio"),
                    },
                    "tps": {
                        "normalInTps": in_tps,
                        "normalOutTps": out_tps,
                        "transInTps": trans_tps,
                        "scheduleInTps": schedule_tps,
                    },
                    "oneDayNum": one_day,
                    "messageAverageSize": average_size,
                    "topicSize": topics.topic_config_table.len(),
                    "groupSize": groups.subscription_group_table.len(),
                },
                "runtimeVersion": {
                    "rocketmqVersion": runtime.get("brokerVersionDesc"),
                    "clientInfo": clients,
                },
            }),
        );
    }
    let doc = json!({
        "evaluateReport": report,
        "totalData": {
            "totalTps": {
                "totalNormalInTps": total_in,
                "totalNormalOutTps": total_out,
                "totalTransInTps": total_trans,
                "totalScheduleInTps": total_schedule,
            },
            "totalOneDayNum": day_totals,
        },
    });
    written(out, &write(&args.file_path, "metrics.json", &doc)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_groups_are_left_out() {
        assert!(is_system_group("CID_RMQ_SYS_TRANS"));
        assert!(is_system_group("TOOLS_CONSUMER"));
        assert!(!is_system_group("orders"));
    }
}
