//! Consumer groups: starting push consumers and scenario 8, a group's restart.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rocketmq_client_rust::{
    ClientConfig, ClientRuntime, DefaultMQProducer, DefaultMQPushConsumer, MQPushConsumer,
};
use rocketmq_model::common::consumer::consume_from_where::ConsumeFromWhere;
use rocketmq_protocol::protocol::heartbeat::message_model::MessageModel;

use crate::corpus::{Expected, SendKind, Verdict};
use crate::recorder::Records;
use crate::sends::sync_sends;
use crate::{bounded, Options, GRACE, LIFECYCLE_TIMEOUT};

/// How long a restarted consumer gets to rebalance and pull what it would redeliver.
const RESUME_SETTLE: Duration = Duration::from_secs(5);

/// One subscription group and the scenario that judges it.
pub struct Group {
    pub scenario: &'static str,
    pub name: String,
    pub expression: String,
    pub instances: usize,
    /// The tags the subscription takes; `None` for all.
    pub tags: Option<Vec<String>>,
    pub records: Records,
    pub consumers: Vec<DefaultMQPushConsumer>,
    pub start_error: Option<String>,
}

impl Group {
    pub fn new(scenario: &'static str, name: String, expression: &str, instances: usize) -> Self {
        // RocketMQ's reading of a tag expression: `*` takes all, else split on `||`,
        // trim, drop empties.
        let tags = (expression.trim() != "*").then(|| {
            expression
                .split("||")
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .collect()
        });
        Group {
            scenario,
            name,
            expression: expression.to_string(),
            instances,
            tags,
            records: Records::default(),
            consumers: Vec::new(),
            start_error: None,
        }
    }

    pub fn accepts(&self, e: &Expected) -> bool {
        self.tags.as_ref().is_none_or(|tags| tags.contains(&e.tags))
    }
}

/// Starts one consumer in a group whose consumers all stopped, from the first offset
/// should the broker have no committed offset; checks that it gets nothing already
/// consumed, and does get a message sent after it started.
pub async fn resume(
    rt: &Arc<ClientRuntime>,
    o: &Options,
    topic: &str,
    run_id: &str,
    producer: &DefaultMQProducer,
    name: &str,
) -> (bool, String) {
    let mut group = Group::new("", name.to_string(), "*", 1);
    let instance = format!("{name}#resumed");
    match start_consumer(rt, o, topic, &group, &instance).await {
        Ok(consumer) => group.consumers.push(consumer),
        Err(e) => return (false, format!("consumer {instance}: {e}")),
    }
    tokio::time::sleep(RESUME_SETTLE).await;
    let mut probe = vec![Expected::new(run_id, topic, SendKind::Probe, 0)];
    let (sent, detail) = sync_sends(producer, &mut probe, o.send_timeout.as_millis() as u64).await;
    let deadline = Instant::now() + o.timeout;
    while sent
        && Instant::now() < deadline
        && !group
            .records
            .snapshot()
            .iter()
            .any(|r| r.id() == Some(probe[0].id.as_str()))
    {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    tokio::time::sleep(GRACE).await;
    let verdict = Verdict::check(probe.iter(), &group.records.snapshot());
    for consumer in &mut group.consumers {
        if bounded("consumer shutdown", LIFECYCLE_TIMEOUT, consumer.shutdown())
            .await
            .is_err()
        {
            eprintln!("note: the restarted consumer of {name} did not shut down in time");
        }
    }
    if !sent {
        return (false, format!("probe send: {detail}"));
    }
    let ok = verdict.passed();
    let detail = if ok {
        "no redelivery; the message sent after the restart arrived once".to_string()
    } else {
        verdict.summary()
    };
    (ok, detail)
}

pub async fn start_consumer(
    rt: &Arc<ClientRuntime>,
    o: &Options,
    topic: &str,
    group: &Group,
    instance: &str,
) -> Result<DefaultMQPushConsumer, String> {
    // One instance name per consumer: two consumers of one group in one process would
    // otherwise share a client id, and the broker would see a single member.
    let mut config = ClientConfig::default();
    config.set_instance_name(instance.into());
    let mut consumer = DefaultMQPushConsumer::builder(rt.clone())
        .client_config(config)
        .name_server_addr(o.namesrv.as_str())
        .consumer_group(group.name.as_str())
        .message_model(MessageModel::Clustering)
        .consume_from_where(ConsumeFromWhere::ConsumeFromFirstOffset)
        .build();
    bounded(
        "subscribe",
        LIFECYCLE_TIMEOUT,
        consumer.subscribe(topic, group.expression.as_str()),
    )
    .await?
    .map_err(|e| format!("subscribe: {e}"))?;
    consumer.register_message_listener_concurrently(group.records.listener(instance));
    bounded("consumer start", LIFECYCLE_TIMEOUT, consumer.start())
        .await?
        .map_err(|e| format!("start: {e}"))?;
    Ok(consumer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_expressions_read_as_rocketmq_reads_them() {
        let g = Group::new("", "g".into(), " TagA ||TagB|| ", 1);
        assert_eq!(g.tags, Some(vec!["TagA".to_string(), "TagB".to_string()]));
        assert_eq!(Group::new("", "g".into(), "*", 1).tags, None);
        let e = Expected::new("r", "T", SendKind::Sync, 2); // TagC
        assert!(!g.accepts(&e));
        assert!(Group::new("", "g".into(), "*", 1).accepts(&e));
    }
}
