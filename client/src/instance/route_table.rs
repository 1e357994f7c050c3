//! Topic routes and broker addresses (Java `MQClientInstance.topicRouteTable` /
//! `brokerAddrTable`): routes come from the name servers (GET_ROUTEINFO_BY_TOPIC, tried
//! in turn), are cached per topic and pushed to the producers and consumers; the broker
//! addresses they bring say where sends, pulls and heartbeats go.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use tracing::{debug, warn};
use vostok_remoting::protocol::route::TopicRouteData;
use vostok_remoting::protocol::topic::{AUTO_CREATE_TOPIC_KEY_TOPIC, MASTER_ID};
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::{BoxFuture, RemotingClient};

use super::ClientInstance;
use crate::api;
use crate::error::{ClientError, Result};
use crate::route::{subscribe_queues, TopicPublishInfo};
use crate::NameMap;

/// The cached routes and the broker addresses they name.
pub(super) struct RouteTable {
    /// The name server that answered last; calls start there.
    namesrv_index: AtomicUsize,
    routes: RwLock<NameMap<Arc<TopicRouteData>>>,
    /// broker name → broker id → address, from every route seen. Shared strings: a
    /// send takes its broker's address with a count, not a copy.
    brokers: RwLock<NameMap<BTreeMap<i64, Arc<str>>>>,
    /// One route update at a time, so that an older answer never replaces a newer one.
    update: tokio::sync::Mutex<()>,
}

impl Default for RouteTable {
    fn default() -> Self {
        RouteTable {
            namesrv_index: AtomicUsize::new(rand::random::<u8>() as usize),
            routes: RwLock::default(),
            brokers: RwLock::default(),
            update: tokio::sync::Mutex::new(()),
        }
    }
}

impl RouteTable {
    /// Adds a route's broker addresses; true if one of them is new.
    fn remember_brokers(&self, route: &TopicRouteData) -> bool {
        let mut brokers = self.brokers.write_locked();
        let mut new = false;
        for bd in &route.broker_datas {
            let known = brokers.get(&bd.broker_name);
            new |= bd
                .broker_addrs
                .values()
                .any(|a| !known.is_some_and(|k| k.values().any(|x| **x == **a)));
            let addrs = bd
                .broker_addrs
                .iter()
                .map(|(id, a)| (*id, Arc::from(a.as_str())))
                .collect();
            brokers.insert(bd.broker_name.clone(), addrs);
        }
        new
    }

    /// Forgets brokers no cached route mentions any more.
    pub(super) fn clean_offline_brokers(&self) {
        let routes = self.routes.read_locked();
        let mut brokers = self.brokers.write_locked();
        brokers.retain(|name, _| {
            routes
                .values()
                .any(|r| r.broker_datas.iter().any(|b| &b.broker_name == name))
        });
    }

    /// Every known broker address (masters only if asked), sorted.
    pub(super) fn all_broker_addrs(&self, masters_only: bool) -> Vec<String> {
        let brokers = self.brokers.read_locked();
        let mut out: Vec<String> = brokers
            .values()
            .flat_map(|addrs| {
                addrs
                    .iter()
                    .filter(|(id, _)| !masters_only || **id == MASTER_ID)
                    .map(|(_, a)| a.to_string())
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

impl ClientInstance {
    /// Calls the name servers in turn, starting with the last one that answered.
    pub(crate) async fn invoke_namesrv<T, F>(&self, call: F) -> Result<T>
    where
        F: for<'a> Fn(&'a RemotingClient, &'a str) -> BoxFuture<'a, Result<T>>,
    {
        let addrs = &self.config.namesrv_addr;
        if addrs.is_empty() {
            return Err(ClientError::NoNameServer);
        }
        let start = self.routes.namesrv_index.load(Ordering::Relaxed);
        let mut last_err = None;
        for i in 0..addrs.len() {
            let index = (start + i) % addrs.len();
            match call(&self.remoting, &addrs[index]).await {
                Err(e) if e.is_transport() => {
                    warn!(namesrv = %addrs[index], error = %e, "name server unreachable; trying the next one");
                    last_err = Some(e);
                }
                other => {
                    self.routes.namesrv_index.store(index, Ordering::Relaxed);
                    return other;
                }
            }
        }
        Err(last_err.unwrap_or(ClientError::NoNameServer))
    }

    /// Fetches a topic's route; `None` when the name servers do not know the topic.
    pub(crate) async fn fetch_route(&self, topic: &str) -> Result<Option<TopicRouteData>> {
        let timeout = self.api_timeout();
        let topic = topic.to_owned();
        self.invoke_namesrv(|client, addr| {
            let topic = topic.clone();
            Box::pin(async move { api::get_topic_route(client, addr, &topic, timeout).await })
        })
        .await
    }

    /// Refreshes one topic's route and pushes the result to producers and consumers.
    /// Returns the route now cached, if any.
    pub(crate) async fn update_route(&self, topic: &str) -> Result<Option<Arc<TopicRouteData>>> {
        let _guard = self.routes.update.lock().await;
        let Some(route) = self.fetch_route(topic).await? else {
            return Ok(None);
        };
        Ok(Some(self.apply_route(topic, route)))
    }

    /// Caches a topic's route and pushes it to producers and consumers. The route is
    /// cached before its brokers are remembered: the heartbeat task forgets brokers no
    /// cached route mentions (`clean_offline_brokers`), and must not see a broker whose
    /// route is not in the cache yet. An unchanged route still re-remembers its brokers,
    /// in case they were forgotten meanwhile.
    fn apply_route(&self, topic: &str, route: TopicRouteData) -> Arc<TopicRouteData> {
        let old = self.cached_route(topic);
        if let Some(old) = old.filter(|old| **old == route) {
            if self.routes.remember_brokers(&old) {
                self.heartbeat.wake();
            }
            return old;
        }
        debug!(topic, "topic route changed");
        let route = Arc::new(route);
        self.routes
            .routes
            .write_locked()
            .insert(topic.to_owned(), route.clone());
        let new_broker = self.routes.remember_brokers(&route);
        let info = Arc::new(TopicPublishInfo::new(topic, route.clone()));
        for producer in self.registry.producers() {
            producer.update_publish_info(topic, info.clone());
        }
        let queues = subscribe_queues(topic, &route);
        for consumer in self.registry.consumers() {
            consumer.update_subscribe_info(topic, queues.clone());
        }
        if new_broker {
            self.heartbeat.wake();
        }
        route
    }

    /// The publish info of an unknown topic built from `TBW102`'s route, so that the
    /// broker auto-creates the topic on the first send. As Java's
    /// `updateTopicRouteInfoFromNameServer(topic, true, producer)`, the template route
    /// (queue counts cut to `default_queue_nums`) is cached as the topic's own route
    /// until the name servers know the real one: the broker addresses it brings stay
    /// known (the heartbeat's `clean_offline_brokers` keeps brokers of cached routes
    /// only), and the route poll replaces it once the topic exists.
    pub(crate) async fn default_publish_info(
        &self,
        topic: &str,
        default_queue_nums: i32,
    ) -> Result<Option<TopicPublishInfo>> {
        let _guard = self.routes.update.lock().await;
        let Some(template) = self.fetch_route(AUTO_CREATE_TOPIC_KEY_TOPIC).await? else {
            return Ok(None);
        };
        let info = TopicPublishInfo::for_auto_create(topic, Arc::new(template), default_queue_nums);
        let route = self.apply_route(topic, (*info.route).clone());
        Ok(Some(TopicPublishInfo::new(topic, route)))
    }

    pub(crate) fn cached_route(&self, topic: &str) -> Option<Arc<TopicRouteData>> {
        self.routes.routes.read_locked().get(topic).cloned()
    }

    /// The route poll: every topic a producer or consumer uses.
    pub(super) async fn update_all_routes(&self) {
        let mut topics: Vec<String> = Vec::new();
        for p in self.registry.producers() {
            topics.extend(p.publish_topics());
        }
        for c in self.registry.consumers() {
            topics.extend(c.subscribed_topics());
        }
        topics.sort();
        topics.dedup();
        for topic in topics {
            if let Err(e) = self.update_route(&topic).await {
                debug!(topic = %topic, error = %e, "route refresh failed");
            }
        }
    }

    /// The master address of a broker name (where sends go).
    pub(crate) fn find_broker_addr_in_publish(&self, broker_name: &str) -> Option<Arc<str>> {
        self.routes
            .brokers
            .read_locked()
            .get(broker_name)
            .and_then(|addrs| addrs.get(&MASTER_ID).cloned())
    }

    /// Where to read from: the master, else any slave.
    pub(crate) fn find_broker_addr_in_subscribe(&self, broker_name: &str) -> Option<String> {
        self.find_broker_addr_in_subscribe_for(broker_name, MASTER_ID)
            .map(|(addr, _)| addr)
    }

    /// Java `findBrokerAddressInSubscribe(brokerName, brokerId, false)`: the broker
    /// `broker_id`; if it is missing and not the master, `broker_id + 1`; else the
    /// lowest id listed (the master while it is there). The flag says "a slave".
    pub(crate) fn find_broker_addr_in_subscribe_for(
        &self,
        broker_name: &str,
        broker_id: i64,
    ) -> Option<(String, bool)> {
        let brokers = self.routes.brokers.read_locked();
        let addrs = brokers.get(broker_name)?;
        let found = addrs
            .get_key_value(&broker_id)
            .or_else(|| {
                (broker_id != MASTER_ID)
                    .then(|| addrs.get_key_value(&(broker_id + 1)))
                    .flatten()
            })
            .or_else(|| addrs.iter().next());
        found.map(|(id, addr)| (addr.to_string(), *id != MASTER_ID))
    }

    /// A broker serving `topic` (random broker name, its master if it has one), as
    /// `findBrokerAddrByTopic` picks where to ask for the consumer list.
    fn find_broker_addr_by_topic(&self, topic: &str) -> Option<String> {
        let route = self.cached_route(topic)?;
        if route.broker_datas.is_empty() {
            return None;
        }
        let bd = &route.broker_datas[rand::random::<u32>() as usize % route.broker_datas.len()];
        bd.select_addr().map(str::to_owned)
    }

    /// Client ids of a consumer group as one broker of the topic sees them.
    pub(crate) async fn find_consumer_id_list(
        &self,
        topic: &str,
        group: &str,
    ) -> Result<Vec<String>> {
        let addr = match self.find_broker_addr_by_topic(topic) {
            Some(a) => a,
            None => {
                self.update_route(topic).await?;
                self.find_broker_addr_by_topic(topic)
                    .ok_or_else(|| ClientError::NoRoute {
                        topic: topic.to_owned(),
                    })?
            }
        };
        api::get_consumer_id_list(&self.remoting, &addr, group, self.api_timeout()).await
    }
}
