//! `topicList`, `topicRoute`, `updateTopic`, `deleteTopic` and `topicStatus`.

use clap::{ArgGroup, Args};
use vostok_client::{AdminClient, MessageQueue};
use vostok_remoting::protocol::body::TopicConfig;
use vostok_remoting::protocol::request_code::{
    DELETE_TOPIC_IN_BROKER, DELETE_TOPIC_IN_NAMESRV, GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
    GET_MAX_OFFSET, GET_MIN_OFFSET, GET_ROUTEINFO_BY_TOPIC, GET_TOPIC_STATS_INFO,
    UPDATE_AND_CREATE_TOPIC,
};
use vostok_remoting::protocol::response_code::REQUEST_CODE_NOT_SUPPORTED;
use vostok_remoting::protocol::route::TopicRouteData;
use vostok_remoting::protocol::topic::{self, perm};

use super::cluster::{cluster_info, cluster_masters};
use serde::Serialize;

use super::error::{during, unless_answered, AdminError};
use super::output::{render_applied, Applied, JsonFlag};
use super::table::{format_millis, Table};

#[derive(Args, Debug, Clone)]
pub struct TopicArgs {
    /// Topic name.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
}

#[derive(Args, Debug, Clone)]
#[command(group(ArgGroup::new("target").required(true).args(["broker_addr", "cluster_name"])))]
pub struct UpdateTopicArgs {
    /// Topic name: `[%|a-zA-Z0-9_-]`, at most 127 characters.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Create the topic on this broker.
    #[arg(short = 'b', long = "brokerAddr", value_name = "ADDR")]
    pub broker_addr: Option<String>,
    /// Create the topic on every master of this cluster.
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    pub cluster_name: Option<String>,
    /// Queues consumers read.
    #[arg(
        short = 'r',
        long = "readQueueNums",
        value_name = "N",
        default_value_t = 8
    )]
    pub read_queue_nums: i32,
    /// Queues producers write.
    #[arg(
        short = 'w',
        long = "writeQueueNums",
        value_name = "N",
        default_value_t = 8
    )]
    pub write_queue_nums: i32,
    /// Permission bits: 2 write, 4 read, 6 both.
    #[arg(short = 'p', long = "perm", default_value_t = 6)]
    pub perm: i32,
    /// Topic attributes in Apache's form, comma-separated: `+key=value` sets, `-key`
    /// removes; e.g. `+duplication.window.seconds=60`.
    #[arg(short = 'a', long = "attributes", value_name = "ATTRS")]
    pub attributes: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct DeleteTopicArgs {
    /// Topic name.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Delete the topic from every master of this cluster.
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    pub cluster_name: String,
}

/// GET_ROUTEINFO_BY_TOPIC from the first name server that answers; a topic without
/// route is an error (TOPIC_NOT_EXIST).
pub async fn route(admin: &AdminClient, topic: &str) -> Result<TopicRouteData, AdminError> {
    admin
        .examine_topic_route_info(topic)
        .await
        .map_err(during(GET_ROUTEINFO_BY_TOPIC))
}

/// GET_MAX_OFFSET of one queue.
pub async fn max_offset(
    admin: &AdminClient,
    addr: &str,
    mq: &MessageQueue,
) -> Result<i64, AdminError> {
    admin
        .max_offset(addr, mq)
        .await
        .map_err(during(GET_MAX_OFFSET))
}

#[derive(Args, Debug, Clone)]
pub struct TopicListArgs {
    /// Only the topics of this namespace (`ns%topic`, its groups' `%RETRY%ns%...` and
    /// `%DLQ%ns%...`).
    #[arg(long = "namespace", value_name = "NS")]
    pub namespace: Option<String>,
}

/// Whether `name` is shown under `--namespace` (everything without one).
pub fn shown(namespace: Option<&str>, name: &str) -> bool {
    namespace.is_none_or(|ns| topic::namespace_of(name) == Some(ns.trim()))
}

/// GET_ALL_TOPIC_LIST_FROM_NAMESERVER: one topic a line, sorted.
pub async fn topic_list(
    admin: &AdminClient,
    args: &TopicListArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let mut list = admin
        .fetch_all_topic_list()
        .await
        .map_err(during(GET_ALL_TOPIC_LIST_FROM_NAMESERVER))?;
    let ns = args.namespace.as_deref();
    list.topic_list.retain(|t| shown(ns, t));
    out.render(&list, |list| {
        list.topic_list.iter().map(|t| format!("{t}\n")).collect()
    })
}

/// GET_ROUTEINFO_BY_TOPIC as pretty JSON, with or without `--json`.
pub async fn topic_route(
    admin: &AdminClient,
    topic: &str,
    _out: JsonFlag,
) -> Result<String, AdminError> {
    let route = route(admin, topic).await?;
    JsonFlag { json: true }.render(&route, |_| String::new())
}

/// UPDATE_AND_CREATE_TOPIC to one broker (`-b`) or every master of a cluster (`-c`).
pub async fn update_topic(
    admin: &AdminClient,
    args: &UpdateTopicArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    topic::validate_topic(&args.topic).map_err(AdminError::Invalid)?;
    for (flag, n) in [("-r", args.read_queue_nums), ("-w", args.write_queue_nums)] {
        if n < 1 {
            return Err(AdminError::Invalid(format!("{flag} {n}: at least 1 queue")));
        }
    }
    let valid_perm = perm::READ | perm::WRITE | perm::INHERIT | perm::PRIORITY;
    if args.perm & !valid_perm != 0 {
        return Err(AdminError::Invalid(format!(
            "-p {}: permission bits are 2 (write), 4 (read), 1 (inherit), 8 (priority)",
            args.perm
        )));
    }
    let targets = match (&args.broker_addr, &args.cluster_name) {
        (Some(addr), _) => vec![addr.clone()],
        (None, Some(cluster)) => {
            let info = cluster_info(admin).await?;
            cluster_masters(&info, cluster)?
                .into_iter()
                .map(|(_, addr)| addr)
                .collect()
        }
        (None, None) => {
            return Err(AdminError::Invalid(
                "updateTopic needs -b BROKER_ADDR or -c CLUSTER".into(),
            ))
        }
    };
    // A single-tag topic with no system flag, as RocketMQ's `updateTopic` creates by
    // default; attribute changes travel as given (`+key` → value, `-key` → empty).
    let mut attributes = std::collections::BTreeMap::new();
    for item in args.attributes.as_deref().unwrap_or("").split(',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let (key, value) = item.split_once('=').unwrap_or((item, ""));
        if !(key.starts_with('+') && !value.is_empty() || key.starts_with('-') && value.is_empty())
        {
            return Err(AdminError::Invalid(format!(
                "-a {item}: attributes are +key=value or -key"
            )));
        }
        attributes.insert(key.to_owned(), value.to_owned());
    }
    let config = TopicConfig {
        read_queue_nums: args.read_queue_nums,
        write_queue_nums: args.write_queue_nums,
        perm: args.perm,
        attributes,
        ..TopicConfig::new(args.topic.clone(), 1)
    };
    let mut applied = Vec::new();
    for addr in targets {
        admin
            .create_and_update_topic_config(&addr, &config)
            .await
            .map_err(during(UPDATE_AND_CREATE_TOPIC))?;
        let line = format!("create topic to {addr} success.");
        applied.push(Applied::new(addr, line));
    }
    if out.json {
        let doc = serde_json::json!({ "topicConfig": config, "brokers": applied });
        return out.render(&doc, |_| String::new());
    }
    let mut text: String = applied.iter().map(|a| format!("{}\n", a.result)).collect();
    text.push_str(&format!(
        "TopicConfig [topicName={}, readQueueNums={}, writeQueueNums={}, perm={}, topicFilterType={}]\n",
        config.topic_name,
        config.read_queue_nums,
        config.write_queue_nums,
        perm::to_text(config.perm),
        config.topic_filter_type
    ));
    Ok(text)
}

/// DELETE_TOPIC_IN_BROKER on every master of the cluster, then DELETE_TOPIC_IN_NAMESRV
/// on every name server, as RocketMQ's `deleteTopic` does.
pub async fn delete_topic(
    admin: &AdminClient,
    args: &DeleteTopicArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let info = cluster_info(admin).await?;
    let masters = cluster_masters(&info, &args.cluster_name)?;
    for (_, addr) in &masters {
        admin
            .delete_topic_in_broker(addr, &args.topic)
            .await
            .map_err(during(DELETE_TOPIC_IN_BROKER))?;
    }
    let mut applied: Vec<Applied> = masters
        .iter()
        .map(|(_, addr)| {
            let line = format!(
                "delete topic [{}] from broker {addr} of cluster [{}] success.",
                args.topic, args.cluster_name
            );
            Applied::new(addr.clone(), line)
        })
        .collect();
    admin
        .delete_topic_in_namesrv(&args.topic, Some(&args.cluster_name))
        .await
        .map_err(during(DELETE_TOPIC_IN_NAMESRV))?;
    for ns in admin.namesrv_addrs() {
        let line = format!(
            "delete topic [{}] from NameServer {ns} success.",
            args.topic
        );
        applied.push(Applied::new(ns.clone(), line));
    }
    if out.json {
        return render_applied(out, &applied);
    }
    Ok(format!(
        "delete topic [{}] from cluster [{}] success.\ndelete topic [{}] from NameServer success.\n",
        args.topic, args.cluster_name, args.topic
    ))
}

/// Offsets of each queue of the topic's route: GET_TOPIC_STATS_INFO where the broker
/// serves it, else GET_MIN_OFFSET and GET_MAX_OFFSET per queue (no last-updated time).
pub async fn topic_status(
    admin: &AdminClient,
    topic: &str,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let route = route(admin, topic).await?;
    let mut rows = Vec::new();
    for (broker_name, addr, queues) in broker_queues(&route) {
        let stats = unless_answered(
            admin.examine_topic_stats(&addr, topic).await,
            &[REQUEST_CODE_NOT_SUPPORTED],
        )
        .map_err(during(GET_TOPIC_STATS_INFO))?;
        match stats {
            Some(stats) => {
                for (mq, offset) in &stats.offset_table {
                    rows.push(QueueStatus {
                        broker_name: mq.broker_name.clone(),
                        queue_id: mq.queue_id,
                        min_offset: offset.min_offset,
                        max_offset: offset.max_offset,
                        last_update_timestamp: Some(offset.last_update_timestamp),
                    });
                }
            }
            None => {
                for queue_id in 0..queues {
                    let mq = MessageQueue::new(topic, &broker_name, queue_id);
                    let min = admin
                        .min_offset(&addr, &mq)
                        .await
                        .map_err(during(GET_MIN_OFFSET))?;
                    let max = max_offset(admin, &addr, &mq).await?;
                    rows.push(QueueStatus {
                        broker_name: broker_name.clone(),
                        queue_id,
                        min_offset: min,
                        max_offset: max,
                        last_update_timestamp: None,
                    });
                }
            }
        }
    }
    out.render(&rows, |rows| {
        let mut table = Table::new(&[
            "#Broker Name",
            "#QID",
            "#Min Offset",
            "#Max Offset",
            "#Last Updated",
        ]);
        for r in rows {
            table.row(vec![
                r.broker_name.clone(),
                r.queue_id.to_string(),
                r.min_offset.to_string(),
                r.max_offset.to_string(),
                r.last_update_timestamp
                    .map(format_millis)
                    .unwrap_or_default(),
            ]);
        }
        table.render()
    })
}

/// One queue of `topicStatus`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueStatus {
    pub broker_name: String,
    pub queue_id: i32,
    pub min_offset: i64,
    pub max_offset: i64,
    /// Store time of the newest message (a broker that serves GET_TOPIC_STATS_INFO).
    pub last_update_timestamp: Option<i64>,
}

/// `(broker name, address, queue count)` of each broker in the route that has an
/// address, by broker name; the master is preferred, the queue count is the larger of
/// the read and write counts (every queue that may hold messages).
pub fn broker_queues(route: &TopicRouteData) -> Vec<(String, String, i32)> {
    let mut out: Vec<(String, String, i32)> = route
        .queue_datas
        .iter()
        .filter_map(|qd| {
            let addr = route.broker(&qd.broker_name)?.select_addr()?;
            Some((
                qd.broker_name.clone(),
                addr.to_owned(),
                qd.read_queue_nums.max(qd.write_queue_nums),
            ))
        })
        .collect();
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_queues_prefer_masters_and_skip_unknown_brokers() {
        let raw = r#"{"brokerDatas":[{"brokerAddrs":{"0":"m:1","1":"s:1"},"brokerName":"b","cluster":"C"},{"brokerAddrs":{"1":"s:2"},"brokerName":"a","cluster":"C"}],"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":4,"writeQueueNums":8},{"brokerName":"a","perm":4,"readQueueNums":2,"writeQueueNums":2},{"brokerName":"gone","perm":6,"readQueueNums":1,"writeQueueNums":1}]}"#;
        let route = TopicRouteData::decode(raw.as_bytes()).unwrap();
        assert_eq!(
            broker_queues(&route),
            [
                ("a".to_owned(), "s:2".to_owned(), 2),
                ("b".to_owned(), "m:1".to_owned(), 8)
            ]
        );
    }
}
