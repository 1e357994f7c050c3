//! What a client derives from a topic's `TopicRouteData` (docs/bodies.md#topicroutedata):
//! the queues a producer writes to and the queues a consumer reads from.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use vostok_remoting::protocol::body::MessageQueue;
use vostok_remoting::protocol::route::TopicRouteData;

/// When `route` lists queues but none is writable, the brokers that serve them
/// (`broker-a, broker-b`): the topic is read-only there, not missing.
pub fn read_only_brokers(route: &TopicRouteData) -> Option<String> {
    use vostok_remoting::protocol::topic::perm;
    if route.queue_datas.is_empty()
        || route
            .queue_datas
            .iter()
            .any(|qd| perm::is_writeable(qd.perm))
    {
        return None;
    }
    let mut names: Vec<&str> = route
        .queue_datas
        .iter()
        .map(|qd| qd.broker_name.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    Some(names.join(", "))
}

/// Publish view of a topic (Java `TopicPublishInfo`): the writable queues of brokers
/// with a master, and a round-robin cursor shared by every send to the topic.
#[derive(Debug)]
pub struct TopicPublishInfo {
    pub route: Arc<TopicRouteData>,
    pub queues: Vec<MessageQueue>,
    /// `orderTopicConf` was present: the queue list follows it.
    pub order_topic: bool,
    cursor: AtomicUsize,
}

impl TopicPublishInfo {
    /// Builds the queue list as `MQClientInstance.topicRouteData2TopicPublishInfo` does,
    /// including the `orderTopicConf` form `brokerName:queueNum;...`.
    pub fn new(topic: &str, route: Arc<TopicRouteData>) -> Self {
        let mut order_topic = false;
        let queues = match route.order_topic_conf.as_deref().filter(|c| !c.is_empty()) {
            Some(conf) => {
                order_topic = true;
                conf.split(';')
                    .filter_map(|item| {
                        let (broker, nums) = item.split_once(':')?;
                        Some((broker.to_owned(), nums.trim().parse::<i32>().ok()?))
                    })
                    .flat_map(|(broker, nums)| {
                        (0..nums.max(0)).map(move |q| MessageQueue::new(topic, broker.clone(), q))
                    })
                    .collect()
            }
            None => route
                .write_queues()
                .into_iter()
                .map(|(broker, q)| MessageQueue::new(topic, broker, q))
                .collect(),
        };
        TopicPublishInfo {
            route,
            queues,
            order_topic,
            cursor: AtomicUsize::new(rand::random::<u16>() as usize),
        }
    }

    /// Restricts the queues of each broker to `min(default_queue_nums, n)`, as the
    /// producer does with the `TBW102` route of an unknown topic.
    pub fn for_auto_create(
        topic: &str,
        route: Arc<TopicRouteData>,
        default_queue_nums: i32,
    ) -> Self {
        let mut route_copy = (*route).clone();
        for qd in &mut route_copy.queue_datas {
            let n = default_queue_nums.min(qd.read_queue_nums);
            qd.read_queue_nums = n;
            qd.write_queue_nums = n;
        }
        Self::new(topic, Arc::new(route_copy))
    }

    pub fn is_empty(&self) -> bool {
        self.queues.is_empty()
    }

    /// The next queue in round-robin order.
    pub fn next_index(&self) -> usize {
        self.cursor.fetch_add(1, Ordering::Relaxed)
    }

    /// Picks a queue: round-robin, skipping queues on `avoid_broker` (the broker that
    /// just failed) and on brokers `available` rejects; falls back to avoiding only the
    /// failed broker, then to any queue.
    pub fn select_queue(
        &self,
        avoid_broker: Option<&str>,
        available: impl Fn(&str) -> bool,
    ) -> Option<&MessageQueue> {
        let n = self.queues.len();
        if n == 0 {
            return None;
        }
        let start = self.next_index();
        let pick = |accept: &dyn Fn(&MessageQueue) -> bool| {
            (0..n)
                .map(|i| &self.queues[(start + i) % n])
                .find(|mq| accept(mq))
        };
        pick(&|mq| avoid_broker != Some(mq.broker_name.as_str()) && available(&mq.broker_name))
            .or_else(|| pick(&|mq| avoid_broker != Some(mq.broker_name.as_str())))
            .or_else(|| Some(&self.queues[start % n]))
    }
}

/// Readable queues of a topic (Java `topicRouteData2TopicSubscribeInfo`), sorted as
/// Java's `MessageQueue.compareTo` for rebalancing.
pub fn subscribe_queues(topic: &str, route: &TopicRouteData) -> Vec<MessageQueue> {
    let mut queues: Vec<MessageQueue> = route
        .read_queues()
        .into_iter()
        .map(|(broker, q)| MessageQueue::new(topic, broker, q))
        .collect();
    queues.sort();
    queues.dedup();
    queues
}

#[cfg(test)]
mod tests {
    use super::*;
    use vostok_remoting::protocol::route::{BrokerData, QueueData};

    fn route(brokers: &[(&str, i32)]) -> Arc<TopicRouteData> {
        Arc::new(TopicRouteData {
            broker_datas: brokers
                .iter()
                .map(|(name, _)| BrokerData {
                    broker_addrs: [(0, format!("{name}:1"))].into(),
                    broker_name: (*name).into(),
                    ..Default::default()
                })
                .collect(),
            queue_datas: brokers
                .iter()
                .map(|(name, n)| QueueData {
                    broker_name: (*name).into(),
                    perm: 6,
                    read_queue_nums: *n,
                    write_queue_nums: *n,
                    topic_sys_flag: 0,
                })
                .collect(),
            ..Default::default()
        })
    }

    #[test]
    fn round_robin_avoids_the_failed_broker() {
        let info = TopicPublishInfo::new("T", route(&[("a", 2), ("b", 2)]));
        assert_eq!(info.queues.len(), 4);
        for _ in 0..10 {
            let mq = info.select_queue(Some("a"), |_| true).unwrap();
            assert_eq!(mq.broker_name, "b");
        }
        for _ in 0..10 {
            let mq = info.select_queue(None, |b| b != "b").unwrap();
            assert_eq!(mq.broker_name, "a");
        }
        // Every broker unavailable: still a queue.
        assert!(info.select_queue(Some("a"), |_| false).is_some());
        let only_a = TopicPublishInfo::new("T", route(&[("a", 1)]));
        assert_eq!(
            only_a
                .select_queue(Some("a"), |_| true)
                .unwrap()
                .broker_name,
            "a"
        );
    }

    #[test]
    fn order_topic_conf_and_auto_create() {
        let mut r = (*route(&[("a", 8)])).clone();
        r.order_topic_conf = Some("a:2;b:1".into());
        let info = TopicPublishInfo::new("T", Arc::new(r));
        assert!(info.order_topic);
        assert_eq!(info.queues.len(), 3);
        let auto = TopicPublishInfo::for_auto_create("New", route(&[("a", 8)]), 4);
        assert_eq!(auto.queues.len(), 4);
        assert_eq!(auto.queues[0].topic, "New");
        let subs = subscribe_queues("T", &route(&[("b", 2), ("a", 1)]));
        assert_eq!(
            subs.iter()
                .map(|q| (q.broker_name.as_str(), q.queue_id))
                .collect::<Vec<_>>(),
            [("a", 0), ("b", 0), ("b", 1)]
        );
    }
}

#[cfg(test)]
mod read_only_tests {
    use vostok_remoting::protocol::route::{QueueData, TopicRouteData};

    #[test]
    fn a_route_without_writable_queues_names_its_brokers() {
        let queue = |broker: &str, perm: i32| QueueData {
            broker_name: broker.to_owned(),
            read_queue_nums: 4,
            write_queue_nums: 4,
            perm,
            ..Default::default()
        };
        let mut route = TopicRouteData::default();
        assert_eq!(super::read_only_brokers(&route), None, "no route at all");
        route.queue_datas = vec![queue("b", 4), queue("a", 4)];
        assert_eq!(super::read_only_brokers(&route).as_deref(), Some("a, b"));
        route.queue_datas.push(queue("c", 6));
        assert_eq!(super::read_only_brokers(&route), None, "c takes writes");
    }
}
