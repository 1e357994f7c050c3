//! `topicList`, `topicRoute`, `updateTopic`, `deleteTopic` and `topicStatus`.

use vostok_remoting::protocol::body::TopicFilterType;
use vostok_remoting::protocol::header::CreateTopicRequestHeader;
use vostok_remoting::protocol::route::TopicRouteData;
use vostok_remoting::protocol::topic::{self, perm};

use super::args::{DeleteTopicArgs, UpdateTopicArgs};
use super::cluster::cluster_masters;
use super::rpc::Admin;
use super::table::{format_millis, Table};
use super::AdminError;

/// GET_ALL_TOPIC_LIST_FROM_NAMESERVER: one topic a line, sorted.
pub async fn topic_list(admin: &Admin) -> Result<String, AdminError> {
    let list = admin.all_topic_list().await?;
    Ok(list.topic_list.iter().map(|t| format!("{t}\n")).collect())
}

/// GET_ROUTEINFO_BY_TOPIC as pretty JSON.
pub async fn topic_route(admin: &Admin, topic: &str) -> Result<String, AdminError> {
    let route = admin.topic_route(topic).await?;
    // Plain data with string and integer map keys always serialises.
    let text = serde_json::to_string_pretty(&route).expect("a route serialises");
    Ok(text + "\n")
}

/// UPDATE_AND_CREATE_TOPIC to one broker (`-b`) or every master of a cluster (`-c`).
pub async fn update_topic(admin: &Admin, args: &UpdateTopicArgs) -> Result<String, AdminError> {
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
            let info = admin.cluster_info().await?;
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
    let header = CreateTopicRequestHeader {
        topic: args.topic.clone(),
        default_topic: topic::AUTO_CREATE_TOPIC_KEY_TOPIC.to_owned(),
        read_queue_nums: args.read_queue_nums,
        write_queue_nums: args.write_queue_nums,
        perm: args.perm,
        topic_filter_type: TopicFilterType::SingleTag.name().to_owned(),
        topic_sys_flag: Some(0),
        order: Some(false),
        attributes: None,
        force: None,
    };
    let mut out = String::new();
    for addr in targets {
        admin.create_topic(&addr, &header).await?;
        out.push_str(&format!("create topic to {addr} success.\n"));
    }
    out.push_str(&format!(
        "TopicConfig [topicName={}, readQueueNums={}, writeQueueNums={}, perm={}, topicFilterType={}]\n",
        header.topic,
        header.read_queue_nums,
        header.write_queue_nums,
        perm::to_text(header.perm),
        header.topic_filter_type
    ));
    Ok(out)
}

/// DELETE_TOPIC_IN_BROKER on every master of the cluster, then DELETE_TOPIC_IN_NAMESRV
/// on every name server, as RocketMQ's `deleteTopic` does.
pub async fn delete_topic(admin: &Admin, args: &DeleteTopicArgs) -> Result<String, AdminError> {
    let info = admin.cluster_info().await?;
    let masters = cluster_masters(&info, &args.cluster_name)?;
    for (_, addr) in &masters {
        admin.delete_topic_in_broker(addr, &args.topic).await?;
    }
    let mut out = format!(
        "delete topic [{}] from cluster [{}] success.\n",
        args.topic, args.cluster_name
    );
    admin
        .delete_topic_in_namesrv(&args.topic, Some(&args.cluster_name))
        .await?;
    out.push_str(&format!(
        "delete topic [{}] from NameServer success.\n",
        args.topic
    ));
    Ok(out)
}

/// Offsets of each queue of the topic's route: GET_TOPIC_STATS_INFO where the broker
/// serves it, else GET_MIN_OFFSET and GET_MAX_OFFSET per queue (no last-updated time).
pub async fn topic_status(admin: &Admin, topic: &str) -> Result<String, AdminError> {
    let route = admin.topic_route(topic).await?;
    let mut table = Table::new(&[
        "#Broker Name",
        "#QID",
        "#Min Offset",
        "#Max Offset",
        "#Last Updated",
    ]);
    for (broker_name, addr, queues) in broker_queues(&route) {
        match admin.topic_stats(&addr, topic).await? {
            Some(stats) => {
                for (mq, offset) in &stats.offset_table {
                    table.row(vec![
                        mq.broker_name.clone(),
                        mq.queue_id.to_string(),
                        offset.min_offset.to_string(),
                        offset.max_offset.to_string(),
                        format_millis(offset.last_update_timestamp),
                    ]);
                }
            }
            None => {
                for queue_id in 0..queues {
                    let min = admin.min_offset(&addr, topic, queue_id).await?;
                    let max = admin.max_offset(&addr, topic, queue_id).await?;
                    table.row(vec![
                        broker_name.clone(),
                        queue_id.to_string(),
                        min.to_string(),
                        max.to_string(),
                        String::new(),
                    ]);
                }
            }
        }
    }
    Ok(table.render())
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
