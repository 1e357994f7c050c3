//! A group's offsets on one topic moved to a time or to the end ("skip accumulated"),
//! as Apache's `Broker2Client.resetOffset`: for each write queue of the topic here, the
//! offset of the first message stored at or after the time (the queue's end for
//! [`ResetTo::End`]), kept only where it moves the group back unless `force`. The
//! broker commits the new offsets itself and pushes them to every online client of the
//! group (RESET_CONSUMER_CLIENT_OFFSET, oneway). For INVOKE_BROKER_TO_RESET_OFFSET and
//! the console's offsets page, which first shows the [`plan`] so that an operator sees
//! how many messages each queue skips or replays.

use std::time::Duration;

use tracing::{debug, info};
use vostok_remoting::protocol::body::{MessageQueue, ResetOffsetBody};
use vostok_remoting::protocol::header::ResetOffsetRequestHeader;
use vostok_remoting::protocol::request_code;
use vostok_remoting::RemotingCommand;

use super::{Refusal, Refused};
use crate::state::{Consumers, Storage};

/// Where the offsets go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResetTo {
    /// The first message stored at or after this time (ms since the epoch).
    Time(i64),
    /// The end of each queue: everything waiting is skipped.
    End,
}

impl ResetTo {
    /// The wire's timestamp: `-1` for the end.
    pub(crate) fn timestamp(self) -> i64 {
        match self {
            ResetTo::Time(ms) => ms,
            ResetTo::End => -1,
        }
    }

    pub(crate) fn of_timestamp(timestamp: i64) -> Self {
        if timestamp == -1 {
            ResetTo::End
        } else {
            ResetTo::Time(timestamp)
        }
    }
}

/// A reset of `group`'s offsets on `topic`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResetOffset {
    pub(crate) group: String,
    pub(crate) topic: String,
    pub(crate) to: ResetTo,
    /// Move forward too (else only where the group would go back).
    pub(crate) force: bool,
}

/// What the reset does to one queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QueueReset {
    pub(crate) queue_id: i32,
    /// The group's committed offset before, if it has one.
    pub(crate) committed: Option<i64>,
    /// The offset after.
    pub(crate) offset: i64,
    /// The queue's end (the next offset to be written).
    pub(crate) max: i64,
}

impl QueueReset {
    /// Messages the group will not receive that it would have: moved forward.
    pub(crate) fn skipped(&self) -> i64 {
        let from = self.committed.unwrap_or(0);
        (self.offset - from).max(0)
    }

    /// Messages the group will receive again: moved back.
    pub(crate) fn replayed(&self) -> i64 {
        match self.committed {
            Some(from) => (from - self.offset).max(0),
            None => 0,
        }
    }
}

/// What `reset` would do, queue by queue, changing nothing: reads the storage and
/// the group's committed offsets.
pub(crate) fn plan(
    storage: &Storage,
    consumers: &Consumers,
    reset: &ResetOffset,
) -> Result<Vec<QueueReset>, Refusal> {
    let Some(topic) = storage.topics.get(&reset.topic) else {
        return Err(Refusal::new(
            Refused::TopicNotExist,
            format!(
                "[reset-offset] reset offset failed, no topic in this broker. topic={}",
                reset.topic
            ),
        ));
    };
    Ok((0..topic.write_queue_nums)
        .map(|queue_id| {
            let committed = consumers
                .offsets
                .query(&reset.group, &reset.topic, queue_id);
            let committed = (committed >= 0).then_some(committed);
            let max = storage.store.max_offset_in_queue(&reset.topic, queue_id);
            let target = match reset.to {
                ResetTo::End => max,
                ResetTo::Time(ms) => {
                    storage
                        .store
                        .offset_in_queue_by_time(&reset.topic, queue_id, ms)
                }
            }
            .max(0);
            let offset = match committed {
                Some(c) if !reset.force && target >= c => c,
                _ => target,
            };
            QueueReset {
                queue_id,
                committed,
                offset,
                max,
            }
        })
        .collect())
}

/// Commits `queues` (a [`plan`] of `reset`) and pushes them to the group's online
/// clients; the table as clients receive it, its queues named on `broker_name`.
pub(crate) fn apply(
    consumers: &Consumers,
    broker_name: &str,
    reset: &ResetOffset,
    queues: &[QueueReset],
) -> ResetOffsetBody {
    let mut table = ResetOffsetBody::default();
    for q in queues {
        consumers
            .offsets
            .commit(&reset.group, &reset.topic, q.queue_id, q.offset);
        let mq = MessageQueue::new(reset.topic.as_str(), broker_name, q.queue_id);
        table.offset_table.insert(mq, q.offset);
    }
    let body = table.encode();
    let channels = consumers.clients.consumer_channels(&reset.group);
    let online = channels.len();
    for channel in channels {
        let push = RemotingCommand::request_with_header(
            request_code::RESET_CONSUMER_CLIENT_OFFSET,
            &ResetOffsetRequestHeader {
                topic: reset.topic.clone(),
                group: reset.group.clone(),
                timestamp: reset.to.timestamp(),
                is_force: Some(reset.force),
            },
        )
        .with_body(body.clone());
        tokio::spawn(async move {
            if let Err(e) = channel.invoke_oneway(push, Duration::from_secs(5)).await {
                debug!(peer = %channel.peer_addr(), error = %e, "RESET_CONSUMER_CLIENT_OFFSET not delivered");
            }
        });
    }
    info!(topic = %reset.topic, group = %reset.group, timestamp = reset.to.timestamp(), queues = queues.len(), online, "offsets reset");
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing;
    use crate::ops::topic::{create_topic, CreateTopic};
    use crate::state::Broker;

    /// Stores `count` messages in `topic`, alternating queues 0 and 1, and waits until
    /// the consume queues have them.
    pub(crate) async fn fill(b: &Broker, topic: &str, count: i32) {
        for i in 0..count {
            let mut send = crate::ops::send::tests::to(topic);
            send.to.queue_id = i % 2;
            crate::ops::send::send(crate::ops::send::SendTables::of(b), testing::peer(), send)
                .await
                .unwrap();
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while (0..2)
            .map(|q| b.storage.store.max_offset_in_queue(topic, q))
            .sum::<i64>()
            < i64::from(count)
        {
            assert!(std::time::Instant::now() < deadline, "never dispatched");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reset_skips_or_replays_and_commits() {
        let dir = tempfile::tempdir().unwrap();
        let handle = testing::broker(dir.path()).await;
        let b = handle.broker();
        let create = CreateTopic {
            topic: "reset-topic".into(),
            read_queue_nums: 2,
            write_queue_nums: 2,
            perm: 6,
            topic_filter_type: "SINGLE_TAG".into(),
            topic_sys_flag: 0,
            order: false,
            attributes: None,
        };
        create_topic(b, create).await.unwrap();
        fill(b, "reset-topic", 5).await;
        b.consumers
            .offsets
            .commit("reset-group", "reset-topic", 0, 1);
        let mut reset = ResetOffset {
            group: "reset-group".into(),
            topic: "reset-topic".into(),
            to: ResetTo::End,
            force: true,
        };
        let queues = plan(&b.storage, &b.consumers, &reset).unwrap();
        assert_eq!(queues.len(), 2);
        assert_eq!((queues[0].committed, queues[0].offset), (Some(1), 3));
        assert_eq!((queues[0].skipped(), queues[0].replayed()), (2, 0));
        assert_eq!((queues[1].committed, queues[1].offset), (None, 2));
        assert_eq!(queues[1].skipped(), 2);
        // A plan changes nothing.
        assert_eq!(
            b.consumers.offsets.query("reset-group", "reset-topic", 0),
            1
        );
        apply(&b.consumers, &b.config.broker_name, &reset, &queues);
        assert_eq!(
            b.consumers.offsets.query("reset-group", "reset-topic", 0),
            3
        );
        assert_eq!(
            b.consumers.offsets.query("reset-group", "reset-topic", 1),
            2
        );

        // Back to the beginning: everything is replayed.
        reset.to = ResetTo::Time(0);
        let queues = plan(&b.storage, &b.consumers, &reset).unwrap();
        assert_eq!(
            queues.iter().map(QueueReset::replayed).collect::<Vec<_>>(),
            [3, 2]
        );
        // Not forced, the end moves nobody forward.
        apply(&b.consumers, &b.config.broker_name, &reset, &queues);
        reset.to = ResetTo::End;
        reset.force = false;
        let queues = plan(&b.storage, &b.consumers, &reset).unwrap();
        assert!(queues.iter().all(|q| q.skipped() == 0), "{queues:?}");

        reset.topic = "no-such-topic".into();
        assert_eq!(
            plan(&b.storage, &b.consumers, &reset).map_err(|r| r.kind),
            Err(Refused::TopicNotExist)
        );
        handle.shutdown().await;
    }
}
