//! Consumers coming and going (heartbeats over remoting and gRPC, closed connections,
//! expired clients): the client table updated, the group noted on the topics it
//! subscribes to, and the group's consumers told to rebalance.

use std::time::Duration;

use tracing::debug;
use vostok_remoting::protocol::body::MessageModel;
use vostok_remoting::protocol::header::NotifyConsumerIdsChangedRequestHeader;
use vostok_remoting::protocol::request_code;
use vostok_remoting::{Channel, RemotingCommand};

use crate::config::BrokerConfig;
use crate::state::client_registry::{ClientChannelInfo, ConsumerRegistration, OverLimit};
use crate::state::topic::TopicConfigManager;
use crate::state::{Consumers, Lifecycle};

/// Registers or refreshes a consumer from its heartbeat (remoting or gRPC); true
/// when the group's set of clients changed. A clustering group is also noted on
/// each subscribed topic of this broker where it has no offsets yet, so that until
/// it commits, retention counts it as at the start of those queues even after it
/// disconnects (`store/README.md`, *Forced deletion and unconsumed messages*).
/// A registration over the client limits notes nothing.
pub(crate) fn register_consumer(
    consumers: &Consumers,
    topics: &TopicConfigManager,
    info: ClientChannelInfo,
    registration: ConsumerRegistration,
) -> Result<bool, OverLimit> {
    let noted: Vec<String> = if registration.message_model == MessageModel::Clustering {
        registration
            .subscriptions
            .iter()
            .map(|sub| sub.topic.clone())
            .collect()
    } else {
        Vec::new()
    };
    let group = registration.group.clone();
    let changed = consumers.clients.register_consumer(info, registration)?;
    for topic in noted {
        if topics.contains(&topic) && consumers.offsets.note_consumer(&group, &topic) {
            debug!(group = %group, topic = %topic, "consumer group noted on a topic before its first commit");
        }
    }
    Ok(changed)
}

/// A client's connection closed: it leaves its groups, and they rebalance.
pub(crate) fn on_channel_closed(
    consumers: &Consumers,
    config: &BrokerConfig,
    life: &Lifecycle,
    channel: &Channel,
) {
    let changed = consumers.clients.on_channel_closed(channel);
    if !changed.is_empty() {
        debug!(peer = %channel.peer_addr(), groups = ?changed, "client channel closed");
    }
    notify_consumer_ids_changed(consumers, config, life, changed);
}

/// Tells every consumer of each group to rebalance (oneway, best effort), unless the
/// config says not to or the broker is stopping.
pub(crate) fn notify_consumer_ids_changed(
    consumers: &Consumers,
    config: &BrokerConfig,
    life: &Lifecycle,
    groups: Vec<String>,
) {
    for group in &groups {
        if consumers.clients.consumer_group(group).is_none() {
            consumers.filters.unregister_group(group);
        }
    }
    if !config.notify_consumer_ids_changed_enable || life.shutdown.is_cancelled() {
        return;
    }
    for group in groups {
        if let Some(sub) = consumers.subscriptions.get(&group) {
            if !sub.notify_consumer_ids_changed_enable {
                continue;
            }
        }
        for channel in consumers.clients.consumer_channels(&group) {
            let header = NotifyConsumerIdsChangedRequestHeader {
                consumer_group: group.clone(),
            };
            let request = RemotingCommand::request_with_header(
                request_code::NOTIFY_CONSUMER_IDS_CHANGED,
                &header,
            );
            tokio::spawn(async move {
                if let Err(e) = channel.invoke_oneway(request, Duration::from_secs(3)).await {
                    debug!(peer = %channel.peer_addr(), error = %e, "notify consumer ids changed failed");
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use vostok_remoting::protocol::body::{ConsumeFromWhere, ConsumeType};
    use vostok_remoting::protocol::filter::build_subscription;
    use vostok_remoting::LanguageCode;

    use super::*;
    use crate::ops::browse::tests::stored;
    use crate::ops::testing::broker;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_consumer_is_noted_on_the_topics_it_reads_here_until_it_goes() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let b = handle.broker();
        stored(b, "ops-clients", 1).await;
        let addr = "127.0.0.1:1".parse().unwrap();
        let channel = Channel::detached(addr, addr, 1).0;
        let info = ClientChannelInfo {
            client_id: "ops-client".into(),
            channel: channel.clone(),
            language: LanguageCode::Java,
            version: 0,
            last_update: Instant::now(),
        };
        let registration = ConsumerRegistration {
            group: "ops-clients-group".into(),
            consume_type: ConsumeType::ConsumePassively,
            message_model: MessageModel::Clustering,
            consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
            subscriptions: vec![
                build_subscription("ops-clients", "*", 1),
                build_subscription("ops-clients-elsewhere", "*", 1),
            ],
        };
        let (consumers, topics) = (&b.consumers, &b.storage.topics);
        assert_eq!(
            register_consumer(consumers, topics, info, registration),
            Ok(true)
        );
        // Noted on the topic this broker has, not on the one it does not.
        let offsets = &consumers.offsets;
        assert!(!offsets.note_consumer("ops-clients-group", "ops-clients"));
        assert!(offsets.note_consumer("ops-clients-group", "ops-clients-elsewhere"));
        on_channel_closed(consumers, &b.config, &b.life, &channel);
        assert!(consumers
            .clients
            .consumer_group("ops-clients-group")
            .is_none());
        handle.shutdown().await;
    }
}
