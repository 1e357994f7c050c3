//! A small, honest in-process fake of a RocketMQ name server and brokers, to test the
//! client's protocol behaviour over real sockets on 127.0.0.1.
//!
//! It stores real commitlog records (`RecordFields`), so pulls return what a broker
//! would; it keeps consumer groups, offsets, queue locks, retry/DLQ topics and
//! transaction half messages; and it can send CHECK_TRANSACTION_STATE and
//! NOTIFY_CONSUMER_IDS_CHANGED to clients. It does not persist anything, has no delay
//! levels (retries are visible at once) and no flush or replication.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use vostok_remoting::protocol::body::{
    ConsumerIdList, HeartbeatData, LockBatchRequestBody, LockBatchResponseBody, MessageQueue,
    SubscriptionData,
};
use vostok_remoting::protocol::filter::{
    build_subscription, matches_tags_code, parse_tags, tags_code,
};
use vostok_remoting::protocol::header::*;
use vostok_remoting::protocol::message::batch;
use vostok_remoting::protocol::message::id::create_offset_msg_id;
use vostok_remoting::protocol::message::record::{crc32, RecordFields};
use vostok_remoting::protocol::message::{property, sysflag, MessageExt, Properties};
use vostok_remoting::protocol::route::{BrokerData, QueueData, TopicRouteData};
use vostok_remoting::protocol::topic::{self, AUTO_CREATE_TOPIC_KEY_TOPIC};
use vostok_remoting::protocol::{json, request_code, response_code};
use vostok_remoting::support::time::now_millis;
use vostok_remoting::{
    BoxFuture, Channel, RemotingCommand, RemotingServer, RequestProcessor, ServerConfig,
};

pub const T: Duration = Duration::from_secs(20);

/// Waits until `cond` holds, polling every 10 ms, at most `T`.
pub async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + T;
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A request seen by a fake broker: code, ext fields, body length.
pub type SeenRequest = (i32, Vec<(String, String)>, usize);

/// A stored record and what the fake needs to filter and look it up.
#[derive(Clone)]
pub struct Stored {
    pub record: Bytes,
    pub phys: i64,
    pub tags_code: i64,
}

#[derive(Default)]
pub struct BrokerState {
    pub name: String,
    pub addr: String,
    /// topic → queue count.
    pub topics: BTreeMap<String, i32>,
    pub queues: HashMap<(String, i32), Vec<Stored>>,
    pub next_phys: i64,
    /// Every request seen: (code, ext fields, body length).
    pub requests: Vec<SeenRequest>,
    /// The connection (the client's address) each request came on, by request code.
    pub request_peers: Vec<(i32, SocketAddr)>,
    /// Raw SEND bodies and headers, for compression and batch assertions.
    pub sends: Vec<RemotingCommand>,
    /// group → client id → channel.
    pub consumers: HashMap<String, BTreeMap<String, Channel>>,
    pub subscriptions: HashMap<(String, String), SubscriptionData>,
    /// group → producer channels.
    pub producers: HashMap<String, Vec<Channel>>,
    pub offsets: HashMap<(String, String, i32), i64>,
    pub locks: HashMap<(String, MessageQueue), String>,
    /// Half messages by commitlog offset.
    pub half: BTreeMap<i64, MessageExt>,
    pub end_transactions: Vec<EndTransactionRequestHeader>,
    /// While set, sends are stored but their answers wait until it is closed.
    pub hold_send_answers: Option<Arc<tokio::sync::Semaphore>>,
    /// Answer the next N sends with this code.
    pub fail_sends: Option<(i32, usize)>,
    pub send_backs: Vec<ConsumerSendMsgBackRequestHeader>,
    /// Refuse CONSUMER_SEND_MSG_BACK (to test the client's fallback).
    pub reject_send_back: bool,
    pub heartbeats: Vec<HeartbeatData>,
    pub unregisters: Vec<UnregisterClientRequestHeader>,
}

impl BrokerState {
    pub fn count(&self, code: i32) -> usize {
        self.requests.iter().filter(|r| r.0 == code).count()
    }

    pub fn messages(&self, topic: &str) -> Vec<MessageExt> {
        let mut out = Vec::new();
        for ((t, _), list) in &self.queues {
            if t == topic {
                for s in list {
                    out.extend(MessageExt::decode(&s.record, false));
                }
            }
        }
        out
    }

    pub fn max_offset(&self, topic: &str, queue_id: i32) -> i64 {
        self.queues
            .get(&(topic.to_owned(), queue_id))
            .map_or(0, |q| q.len() as i64)
    }

    fn store(&mut self, topic: &str, queue_id: i32, msg: Incoming<'_>) -> (i64, i64, String) {
        let queue = self.queues.entry((topic.to_owned(), queue_id)).or_default();
        let queue_offset = queue.len() as i64;
        let phys = self.next_phys;
        let store_host: SocketAddr = self.addr.parse().expect("fake broker address");
        let fields = RecordFields {
            body_crc: crc32(msg.body),
            queue_id,
            flag: msg.flag,
            queue_offset,
            physical_offset: phys,
            sys_flag: msg.sys_flag,
            born_timestamp: msg.born_timestamp,
            born_host: msg.born_host,
            store_timestamp: now_millis(),
            store_host,
            reconsume_times: msg.reconsume_times,
            prepared_transaction_offset: 0,
            body: msg.body,
            topic,
            properties: msg.properties,
        };
        let mut buf = Vec::with_capacity(fields.encoded_len());
        fields.encode(&mut buf);
        self.next_phys += buf.len() as i64;
        let tags = property::find(msg.properties, property::TAGS);
        queue.push(Stored {
            record: Bytes::from(buf),
            phys,
            tags_code: tags_code(tags),
        });
        (queue_offset, phys, create_offset_msg_id(store_host, phys))
    }

    fn find_by_phys(&self, phys: i64) -> Option<MessageExt> {
        self.queues
            .values()
            .flatten()
            .find(|s| s.phys == phys)
            .and_then(|s| MessageExt::decode(&s.record, false).ok())
    }

    fn ensure_topic(&mut self, topic: &str, queues: i32) -> i32 {
        *self.topics.entry(topic.to_owned()).or_insert(queues)
    }
}

struct Incoming<'a> {
    body: &'a [u8],
    flag: i32,
    sys_flag: i32,
    born_timestamp: i64,
    born_host: SocketAddr,
    reconsume_times: i32,
    properties: &'a str,
}

pub struct FakeBroker {
    pub state: Arc<Mutex<BrokerState>>,
    pub arrived: Arc<Notify>,
    /// Set by `kill`: parked long polls answer at once instead of holding the server's
    /// shutdown for their whole hold time.
    stopping: Arc<std::sync::atomic::AtomicBool>,
    server: Mutex<Option<RemotingServer>>,
    pub addr: String,
    pub name: String,
}

impl FakeBroker {
    pub fn state(&self) -> std::sync::MutexGuard<'_, BrokerState> {
        self.state.lock().unwrap()
    }

    pub fn create_topic(&self, topic: &str, queues: i32) {
        self.state().topics.insert(topic.to_owned(), queues);
    }

    /// Stops serving (connections refused from now on); the name server keeps
    /// advertising the broker, as a real one does until the registration expires.
    pub async fn kill(&self) {
        let server = self.server.lock().unwrap().take();
        self.stopping
            .store(true, std::sync::atomic::Ordering::Release);
        self.arrived.notify_waiters();
        if let Some(server) = server {
            for ch in server.channels() {
                ch.close();
            }
            server.shutdown().await;
        }
    }

    /// Sends CHECK_TRANSACTION_STATE for every unresolved half message of `group`.
    pub async fn check_transactions(&self, group: &str) -> usize {
        let (channels, half): (Vec<Channel>, Vec<MessageExt>) = {
            let st = self.state();
            (
                st.producers.get(group).cloned().unwrap_or_default(),
                st.half.values().cloned().collect(),
            )
        };
        let Some(channel) = channels.into_iter().find(|c| !c.is_closed()) else {
            return 0;
        };
        let mut sent = 0;
        for half_msg in half {
            if half_msg.property(property::PRODUCER_GROUP) != Some(group) {
                continue;
            }
            let mut restored = half_msg.clone();
            restored.topic = half_msg
                .property(property::REAL_TOPIC)
                .unwrap_or("")
                .to_owned();
            let header = CheckTransactionStateRequestHeader {
                tran_state_table_offset: half_msg.queue_offset,
                commit_log_offset: half_msg.commit_log_offset,
                msg_id: half_msg.properties.uniq_key().map(str::to_owned),
                transaction_id: half_msg.properties.uniq_key().map(str::to_owned),
                offset_msg_id: Some(half_msg.offset_msg_id()),
                topic: Some(topic::TRANS_HALF_TOPIC.to_owned()),
                broker_name: Some(self.name.clone()),
            };
            let request = RemotingCommand::request_with_header(
                request_code::CHECK_TRANSACTION_STATE,
                &header,
            )
            .with_body(restored.encode());
            if channel.invoke_oneway(request, T).await.is_ok() {
                sent += 1;
            }
        }
        sent
    }

    /// The committed offset of a group on a queue.
    pub fn offset(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        self.state()
            .offsets
            .get(&(group.to_owned(), topic.to_owned(), queue_id))
            .copied()
    }
}

/// Name server plus brokers.
pub struct FakeCluster {
    pub namesrv_addr: String,
    pub brokers: Vec<Arc<FakeBroker>>,
    pub namesrv: RemotingServer,
    pub namesrv_state: Arc<Mutex<NamesrvState>>,
}

#[derive(Default)]
pub struct NamesrvState {
    /// Answer routes in fastjson's bare-integer-key form.
    pub bare_keys: bool,
    pub route_requests: usize,
}

struct NamesrvProcessor {
    brokers: Vec<Arc<FakeBroker>>,
    state: Arc<Mutex<NamesrvState>>,
}

impl RequestProcessor for NamesrvProcessor {
    fn process<'a>(
        &'a self,
        _channel: &'a Channel,
        request: RemotingCommand,
    ) -> BoxFuture<'a, Option<RemotingCommand>> {
        Box::pin(async move {
            if request.code != request_code::GET_ROUTEINFO_BY_TOPIC {
                return Some(vostok_remoting::processor::not_supported(&request));
            }
            let Ok(header) = request.decode_header::<GetRouteInfoRequestHeader>() else {
                return Some(RemotingCommand::response(
                    response_code::SYSTEM_ERROR,
                    "bad header".to_owned(),
                ));
            };
            let bare = {
                let mut st = self.state.lock().unwrap();
                st.route_requests += 1;
                st.bare_keys
            };
            let mut route = TopicRouteData::default();
            for broker in &self.brokers {
                let st = broker.state();
                let queues = if header.topic == AUTO_CREATE_TOPIC_KEY_TOPIC {
                    Some(8)
                } else {
                    st.topics.get(&header.topic).copied()
                };
                if let Some(n) = queues {
                    route.queue_datas.push(QueueData {
                        broker_name: st.name.clone(),
                        perm: if header.topic == AUTO_CREATE_TOPIC_KEY_TOPIC {
                            7
                        } else {
                            6
                        },
                        read_queue_nums: n,
                        write_queue_nums: n,
                        topic_sys_flag: 0,
                    });
                    route.broker_datas.push(BrokerData {
                        broker_addrs: [(0, st.addr.clone())].into(),
                        broker_name: st.name.clone(),
                        cluster: "FakeCluster".into(),
                        ..Default::default()
                    });
                }
            }
            if route.queue_datas.is_empty() {
                return Some(RemotingCommand::response(
                    response_code::TOPIC_NOT_EXIST,
                    format!(
                        "No topic route info in name server for the topic: {}",
                        header.topic
                    ),
                ));
            }
            let mut body = String::from_utf8(route.encode()).unwrap();
            if bare {
                body = body.replace("{\"0\":", "{0:");
            }
            Some(RemotingCommand::success().with_body(body))
        })
    }
}

impl FakeCluster {
    pub async fn start(broker_count: usize) -> FakeCluster {
        let mut brokers = Vec::new();
        for i in 0..broker_count {
            brokers.push(start_broker(&format!("broker-{}", (b'a' + i as u8) as char)).await);
        }
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let namesrv_state = Arc::new(Mutex::new(NamesrvState::default()));
        let namesrv = RemotingServer::start(
            listener,
            Arc::new(NamesrvProcessor {
                brokers: brokers.clone(),
                state: namesrv_state.clone(),
            }),
            ServerConfig::default(),
            Vec::new(),
        );
        FakeCluster {
            namesrv_addr: namesrv.local_addr().to_string(),
            brokers,
            namesrv,
            namesrv_state,
        }
    }

    pub fn broker(&self, i: usize) -> &Arc<FakeBroker> {
        &self.brokers[i]
    }

    pub fn create_topic(&self, topic: &str, queues_per_broker: i32) {
        for b in &self.brokers {
            b.create_topic(topic, queues_per_broker);
        }
    }

    pub fn all_messages(&self, topic: &str) -> Vec<MessageExt> {
        self.brokers
            .iter()
            .flat_map(|b| b.state().messages(topic))
            .collect()
    }

    pub async fn shutdown(&self) {
        for b in &self.brokers {
            b.kill().await;
        }
        self.namesrv.shutdown().await;
    }
}

async fn start_broker(name: &str) -> Arc<FakeBroker> {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let state = Arc::new(Mutex::new(BrokerState {
        name: name.to_owned(),
        addr: addr.clone(),
        ..Default::default()
    }));
    let arrived = Arc::new(Notify::new());
    let stopping = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let processor = Arc::new(BrokerProcessor {
        state: state.clone(),
        arrived: arrived.clone(),
        stopping: stopping.clone(),
    });
    let server = RemotingServer::start(listener, processor, ServerConfig::default(), Vec::new());
    Arc::new(FakeBroker {
        state,
        arrived,
        stopping,
        server: Mutex::new(Some(server)),
        addr,
        name: name.to_owned(),
    })
}

struct BrokerProcessor {
    state: Arc<Mutex<BrokerState>>,
    arrived: Arc<Notify>,
    stopping: Arc<std::sync::atomic::AtomicBool>,
}

fn error(code: i32, remark: impl Into<String>) -> RemotingCommand {
    RemotingCommand::response(code, Some(remark.into()))
}

impl BrokerProcessor {
    fn st(&self) -> std::sync::MutexGuard<'_, BrokerState> {
        self.state.lock().unwrap()
    }

    fn notify_group_changed(&self, group: &str) {
        let channels: Vec<Channel> = self
            .st()
            .consumers
            .get(group)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default();
        for ch in channels {
            let header = NotifyConsumerIdsChangedRequestHeader {
                consumer_group: group.to_owned(),
            };
            let req = RemotingCommand::request_with_header(
                request_code::NOTIFY_CONSUMER_IDS_CHANGED,
                &header,
            );
            tokio::spawn(async move {
                let _ = ch.invoke_oneway(req, T).await;
            });
        }
    }

    fn send(&self, channel: &Channel, request: &RemotingCommand) -> RemotingCommand {
        let Ok(h) = SendMessageRequestHeader::decode(request.code, &request.ext_fields) else {
            return error(response_code::SYSTEM_ERROR, "bad send header");
        };
        let mut st = self.st();
        st.sends.push(request.clone());
        if let Some((code, n)) = st.fail_sends {
            if n > 0 {
                st.fail_sends = if n > 1 { Some((code, n - 1)) } else { None };
                return error(code, "injected failure");
            }
        }
        let mut topic = h.topic.clone();
        let props_text = h.properties.clone().unwrap_or_default();
        let mut props = Properties::decode(&props_text);
        let reconsume = h.reconsume_times.unwrap_or(0);
        if topic::is_retry_topic(&topic) {
            let max = h.max_reconsume_times.unwrap_or(16);
            if reconsume > max {
                let group = topic
                    .trim_start_matches(topic::RETRY_GROUP_TOPIC_PREFIX)
                    .to_owned();
                topic = topic::dlq_topic(&group);
                props.insert(property::DELAY_TIME_LEVEL, "-1");
            }
        }
        let queues = if st.topics.contains_key(&topic)
            || topic::is_retry_topic(&topic)
            || topic::is_dlq_topic(&topic)
        {
            st.ensure_topic(&topic, 1)
        } else {
            let n = h.default_topic_queue_nums.clamp(1, 8);
            st.ensure_topic(&topic, n)
        };
        let queue_id = if h.queue_id < 0 || h.queue_id >= queues {
            0
        } else {
            h.queue_id
        };
        let born_host = channel.peer_addr();
        let entries: Vec<(Bytes, i32, String)> = if h.is_batch() {
            match batch::decode(&request.body) {
                Ok(e) => e
                    .into_iter()
                    .map(|e| (e.body, e.flag, e.properties))
                    .collect(),
                Err(e) => return error(response_code::MESSAGE_ILLEGAL, e.to_string()),
            }
        } else {
            vec![(request.body.clone(), h.flag, props.encode())]
        };
        let mut ids = Vec::new();
        let mut first_offset = None;
        for (body, flag, props_text) in entries {
            let p = Properties::decode(&props_text);
            let is_half = p.is_transaction_prepared();
            let (store_topic, store_queue, store_props) = if is_half {
                let mut hp = p.clone();
                hp.insert(property::REAL_TOPIC, topic.clone());
                hp.insert(property::REAL_QUEUE_ID, queue_id.to_string());
                (topic::TRANS_HALF_TOPIC.to_owned(), 0, hp.encode())
            } else {
                (topic.clone(), queue_id, props_text.clone())
            };
            let (qo, phys, id) = st.store(
                &store_topic,
                store_queue,
                Incoming {
                    body: &body,
                    flag,
                    sys_flag: sysflag::reset_transaction_type(h.sys_flag, 0),
                    born_timestamp: h.born_timestamp,
                    born_host,
                    reconsume_times: reconsume,
                    properties: &store_props,
                },
            );
            if is_half {
                let rec = st.find_by_phys(phys).unwrap();
                st.half.insert(phys, rec);
            }
            first_offset.get_or_insert(qo);
            ids.push(id);
        }
        drop(st);
        self.arrived.notify_waiters();
        let resp = SendMessageResponseHeader {
            msg_id: ids.join(","),
            queue_id,
            queue_offset: first_offset.unwrap_or(0),
            transaction_id: props.uniq_key().map(str::to_owned),
            batch_uniq_id: None,
            msg_region: Some("DefaultRegion".into()),
            trace_on: Some("true".into()),
        };
        RemotingCommand::success().with_header(&resp)
    }

    async fn pull(&self, request: &RemotingCommand) -> RemotingCommand {
        let Ok(h) = request.decode_header::<PullMessageRequestHeader>() else {
            return error(response_code::SYSTEM_ERROR, "bad pull header");
        };
        let sub = if h.sys_flag & PULL_FLAG_SUBSCRIPTION != 0 {
            Some(build_subscription(
                &h.topic,
                h.subscription.as_deref().unwrap_or("*"),
                0,
            ))
        } else {
            self.st()
                .subscriptions
                .get(&(h.consumer_group.clone(), h.topic.clone()))
                .cloned()
        };
        if h.sys_flag & PULL_FLAG_COMMIT_OFFSET != 0 {
            self.st().offsets.insert(
                (h.consumer_group.clone(), h.topic.clone(), h.queue_id),
                h.commit_offset,
            );
        }
        let hold = Duration::from_millis(h.suspend_timeout_millis.clamp(0, 20_000) as u64);
        let deadline = tokio::time::Instant::now() + hold;
        loop {
            let notified = self.arrived.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let answer = {
                let st = self.st();
                let queue = st.queues.get(&(h.topic.clone(), h.queue_id));
                let max = queue.map_or(0, |q| q.len() as i64);
                let header = |next: i64| PullMessageResponseHeader {
                    suggest_which_broker_id: 0,
                    next_begin_offset: next,
                    min_offset: 0,
                    max_offset: max,
                };
                if h.queue_offset > max || h.queue_offset < 0 {
                    Some(
                        RemotingCommand::response(response_code::PULL_OFFSET_MOVED, None)
                            .with_header(&header(max)),
                    )
                } else if h.queue_offset < max {
                    let q = queue.unwrap();
                    let mut body = Vec::new();
                    let mut next = h.queue_offset;
                    let mut found = 0;
                    while next < max && found < h.max_msg_nums.max(1) {
                        let s = &q[next as usize];
                        next += 1;
                        if sub
                            .as_ref()
                            .is_none_or(|sub| matches_tags_code(sub, s.tags_code))
                        {
                            body.extend_from_slice(&s.record);
                            found += 1;
                        }
                    }
                    if found == 0 {
                        Some(
                            RemotingCommand::response(response_code::PULL_RETRY_IMMEDIATELY, None)
                                .with_header(&header(next)),
                        )
                    } else {
                        Some(
                            RemotingCommand::success()
                                .with_header(&header(next))
                                .with_body(body),
                        )
                    }
                } else if h.sys_flag & PULL_FLAG_SUSPEND == 0
                    || tokio::time::Instant::now() >= deadline
                    || self.stopping.load(std::sync::atomic::Ordering::Acquire)
                {
                    Some(
                        RemotingCommand::response(response_code::PULL_NOT_FOUND, None)
                            .with_header(&header(h.queue_offset)),
                    )
                } else {
                    None
                }
            };
            if let Some(a) = answer {
                return a;
            }
            let _ = tokio::time::timeout_at(deadline, notified).await;
        }
    }

    fn send_back(&self, request: &RemotingCommand) -> RemotingCommand {
        let Ok(h) = request.decode_header::<ConsumerSendMsgBackRequestHeader>() else {
            return error(response_code::SYSTEM_ERROR, "bad header");
        };
        let mut st = self.st();
        st.send_backs.push(h.clone());
        if st.reject_send_back {
            return error(response_code::SYSTEM_ERROR, "send back rejected (test)");
        }
        let Some(orig) = st.find_by_phys(h.offset) else {
            return error(response_code::SYSTEM_ERROR, "look message by offset failed");
        };
        let mut props = orig.properties.clone();
        if !props.contains(property::RETRY_TOPIC) {
            props.insert(property::RETRY_TOPIC, orig.topic.clone());
        }
        if !props.contains(property::ORIGIN_MESSAGE_ID) {
            props.insert(property::ORIGIN_MESSAGE_ID, orig.msg_id());
        }
        let max = h.max_reconsume_times.unwrap_or(16);
        let target = if orig.reconsume_times >= max || h.delay_level < 0 {
            topic::dlq_topic(&h.group)
        } else {
            topic::retry_topic(&h.group)
        };
        st.ensure_topic(&target, 1);
        let text = props.encode();
        st.store(
            &target,
            0,
            Incoming {
                body: &orig.body,
                flag: orig.flag,
                sys_flag: orig.sys_flag,
                born_timestamp: orig.born_timestamp,
                born_host: orig.born_host,
                reconsume_times: orig.reconsume_times + 1,
                properties: &text,
            },
        );
        drop(st);
        self.arrived.notify_waiters();
        RemotingCommand::success()
    }

    fn end_transaction(&self, request: &RemotingCommand) {
        let Ok(h) = request.decode_header::<EndTransactionRequestHeader>() else {
            return;
        };
        let mut st = self.st();
        st.end_transactions.push(h.clone());
        if h.commit_or_rollback == sysflag::TRANSACTION_NOT_TYPE {
            return;
        }
        let Some(half) = st.half.remove(&h.commit_log_offset) else {
            return;
        };
        if h.commit_or_rollback == sysflag::TRANSACTION_COMMIT_TYPE {
            let mut props = half.properties.clone();
            let topic = props.remove(property::REAL_TOPIC).unwrap_or_default();
            let qid: i32 = props
                .remove(property::REAL_QUEUE_ID)
                .and_then(|q| q.parse().ok())
                .unwrap_or(0);
            props.remove(property::TRANSACTION_PREPARED);
            let text = props.encode();
            st.store(
                &topic,
                qid,
                Incoming {
                    body: &half.body,
                    flag: half.flag,
                    sys_flag: sysflag::reset_transaction_type(
                        half.sys_flag,
                        sysflag::TRANSACTION_COMMIT_TYPE,
                    ),
                    born_timestamp: half.born_timestamp,
                    born_host: half.born_host,
                    reconsume_times: 0,
                    properties: &text,
                },
            );
            drop(st);
            self.arrived.notify_waiters();
        }
    }
}

impl RequestProcessor for BrokerProcessor {
    fn process<'a>(
        &'a self,
        channel: &'a Channel,
        request: RemotingCommand,
    ) -> BoxFuture<'a, Option<RemotingCommand>> {
        Box::pin(async move {
            {
                let mut st = self.st();
                st.requests.push((
                    request.code,
                    request
                        .ext_fields
                        .iter()
                        .map(|(k, v)| (k.to_owned(), v.to_owned()))
                        .collect(),
                    request.body.len(),
                ));
                st.request_peers.push((request.code, channel.peer_addr()));
            }
            let ok = RemotingCommand::success;
            Some(match request.code {
                request_code::SEND_MESSAGE
                | request_code::SEND_MESSAGE_V2
                | request_code::SEND_BATCH_MESSAGE => {
                    let answer = self.send(channel, &request);
                    let gate = self.st().hold_send_answers.clone();
                    if let Some(gate) = gate {
                        // Closed to let every held answer go.
                        let _ = gate.acquire().await;
                    }
                    answer
                }
                request_code::PULL_MESSAGE | request_code::LITE_PULL_MESSAGE => {
                    self.pull(&request).await
                }
                request_code::HEART_BEAT => {
                    let Ok(hb) = HeartbeatData::decode(&request.body) else {
                        return Some(error(response_code::SYSTEM_ERROR, "bad heartbeat"));
                    };
                    let mut changed = Vec::new();
                    {
                        let mut st = self.st();
                        st.heartbeats.push(hb.clone());
                        for p in &hb.producer_data_set {
                            let list = st.producers.entry(p.group_name.clone()).or_default();
                            if !list.contains(channel) {
                                list.push(channel.clone());
                            }
                        }
                        for c in &hb.consumer_data_set {
                            let members = st.consumers.entry(c.group_name.clone()).or_default();
                            if members
                                .insert(hb.client_id.clone(), channel.clone())
                                .is_none()
                            {
                                changed.push(c.group_name.clone());
                            }
                            for sub in &c.subscription_data_set {
                                st.subscriptions
                                    .insert((c.group_name.clone(), sub.topic.clone()), sub.clone());
                                if topic::is_retry_topic(&sub.topic) {
                                    st.ensure_topic(&sub.topic, 1);
                                }
                            }
                        }
                    }
                    for g in changed {
                        self.notify_group_changed(&g);
                    }
                    ok()
                }
                request_code::UNREGISTER_CLIENT => {
                    let Ok(h) = request.decode_header::<UnregisterClientRequestHeader>() else {
                        return Some(error(response_code::SYSTEM_ERROR, "bad header"));
                    };
                    let removed = {
                        let mut st = self.st();
                        st.unregisters.push(h.clone());
                        match &h.consumer_group {
                            Some(g) => st
                                .consumers
                                .get_mut(g)
                                .and_then(|m| m.remove(&h.client_id))
                                .map(|_| g.clone()),
                            None => None,
                        }
                    };
                    if let Some(g) = removed {
                        self.notify_group_changed(&g);
                    }
                    ok()
                }
                request_code::GET_CONSUMER_LIST_BY_GROUP => {
                    let Ok(h) = request.decode_header::<GetConsumerListByGroupRequestHeader>()
                    else {
                        return Some(error(response_code::SYSTEM_ERROR, "bad header"));
                    };
                    let ids: Vec<String> = self
                        .st()
                        .consumers
                        .get(&h.consumer_group)
                        .map(|m| m.keys().cloned().collect())
                        .unwrap_or_default();
                    if ids.is_empty() {
                        error(
                            response_code::SYSTEM_ERROR,
                            format!("no consumer for this group, {}", h.consumer_group),
                        )
                    } else {
                        ok().with_body(json::to_vec(&ConsumerIdList {
                            consumer_id_list: ids,
                        }))
                    }
                }
                request_code::QUERY_CONSUMER_OFFSET => {
                    let Ok(h) = request.decode_header::<QueryConsumerOffsetRequestHeader>() else {
                        return Some(error(response_code::SYSTEM_ERROR, "bad header"));
                    };
                    match self
                        .st()
                        .offsets
                        .get(&(h.consumer_group, h.topic, h.queue_id))
                    {
                        Some(o) => {
                            ok().with_header(&QueryConsumerOffsetResponseHeader { offset: *o })
                        }
                        None => error(
                            response_code::QUERY_NOT_FOUND,
                            "Not found, maybe this group consumer boot first",
                        ),
                    }
                }
                request_code::UPDATE_CONSUMER_OFFSET => {
                    if let Ok(h) = request.decode_header::<UpdateConsumerOffsetRequestHeader>() {
                        self.st()
                            .offsets
                            .insert((h.consumer_group, h.topic, h.queue_id), h.commit_offset);
                    }
                    ok()
                }
                request_code::GET_MAX_OFFSET => {
                    let Ok(h) = request.decode_header::<GetMaxOffsetRequestHeader>() else {
                        return Some(error(response_code::SYSTEM_ERROR, "bad header"));
                    };
                    let o = self.st().max_offset(&h.topic, h.queue_id);
                    ok().with_header(&OffsetResponseHeader { offset: o })
                }
                request_code::GET_MIN_OFFSET => {
                    ok().with_header(&OffsetResponseHeader { offset: 0 })
                }
                request_code::SEARCH_OFFSET_BY_TIMESTAMP => {
                    ok().with_header(&OffsetResponseHeader { offset: 0 })
                }
                request_code::CONSUMER_SEND_MSG_BACK => self.send_back(&request),
                request_code::END_TRANSACTION => {
                    self.end_transaction(&request);
                    ok()
                }
                request_code::LOCK_BATCH_MQ | request_code::UNLOCK_BATCH_MQ => {
                    let Ok(body) = json::from_slice::<LockBatchRequestBody>("lock", &request.body)
                    else {
                        return Some(error(response_code::SYSTEM_ERROR, "bad lock body"));
                    };
                    let mut st = self.st();
                    let mut locked = BTreeSet::new();
                    for mq in body.mq_set {
                        let key = (body.consumer_group.clone(), mq.clone());
                        if request.code == request_code::UNLOCK_BATCH_MQ {
                            if st.locks.get(&key) == Some(&body.client_id) {
                                st.locks.remove(&key);
                            }
                            continue;
                        }
                        let free = match st.locks.get(&key) {
                            None => true,
                            Some(holder) => {
                                holder == &body.client_id
                                    || !is_member(&st, &body.consumer_group, holder)
                            }
                        };
                        if free {
                            st.locks.insert(key, body.client_id.clone());
                            locked.insert(mq);
                        }
                    }
                    ok().with_body(json::to_vec(&LockBatchResponseBody {
                        lock_ok_mq_set: locked,
                    }))
                }
                _ => vostok_remoting::processor::not_supported(&request),
            })
        })
    }

    fn on_channel_closed(&self, channel: &Channel) {
        let mut changed = Vec::new();
        {
            let mut st = self.st();
            for (group, members) in st.consumers.iter_mut() {
                let before = members.len();
                members.retain(|_, ch| ch != channel);
                if members.len() != before {
                    changed.push(group.clone());
                }
            }
            for list in st.producers.values_mut() {
                list.retain(|ch| ch != channel);
            }
            // Locks of clients no longer connected expire at once in the fake.
            let live: BTreeSet<(String, String)> = st
                .consumers
                .iter()
                .flat_map(|(g, m)| m.keys().map(move |id| (g.clone(), id.clone())))
                .collect();
            st.locks
                .retain(|(g, _), id| live.contains(&(g.clone(), id.clone())));
        }
        for g in changed {
            self.notify_group_changed(&g);
        }
    }
}

fn is_member(st: &BrokerState, group: &str, id: &str) -> bool {
    st.consumers.get(group).is_some_and(|m| m.contains_key(id))
}

/// Tags of a subscription expression, for tests.
pub fn tags(expr: &str) -> BTreeSet<String> {
    parse_tags(expr)
}
