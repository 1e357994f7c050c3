//! A producer and consumer written on the remoting layer alone: the requests a RocketMQ
//! client sends, built by hand, so that broker tests do not depend on the SDK.

use std::time::Duration;

use bytes::Bytes;
use vostok_remoting::protocol::body::{
    ConsumeFromWhere, ConsumeType, ConsumerData, HeartbeatData, MessageModel, ProducerData,
    RegisterBrokerBody,
};
use vostok_remoting::protocol::filter::build_subscription;
use vostok_remoting::protocol::header::{
    CreateTopicRequestHeader, GetMaxOffsetRequestHeader, GetRouteInfoRequestHeader,
    OffsetResponseHeader, PullMessageRequestHeader, PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader, QueryConsumerOffsetResponseHeader,
    RegisterBrokerRequestHeader, SendMessageRequestHeader, SendMessageRequestHeaderV2,
    SendMessageResponseHeader, UpdateConsumerOffsetRequestHeader, PULL_FLAG_COMMIT_OFFSET,
    PULL_FLAG_SUBSCRIPTION, PULL_FLAG_SUSPEND,
};
use vostok_remoting::protocol::message::property::{self, push_pair};
use vostok_remoting::protocol::message::{batch, MessageExt};
use vostok_remoting::protocol::route::TopicRouteData;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::{ClientConfig, RemotingClient, RemotingCommand};

pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The outcome of a pull.
#[derive(Debug)]
pub struct Pulled {
    pub code: i32,
    pub header: Option<PullMessageResponseHeader>,
    pub messages: Vec<MessageExt>,
}

/// A raw protocol client.
pub struct TestClient {
    pub remoting: RemotingClient,
    pub client_id: String,
}

impl Default for TestClient {
    fn default() -> Self {
        Self::new("test-client")
    }
}

impl TestClient {
    pub fn new(client_id: &str) -> Self {
        Self::with_processor(client_id, None)
    }

    /// A client that serves broker-initiated requests (CHECK_TRANSACTION_STATE, ...).
    pub fn with_processor(
        client_id: &str,
        processor: Option<std::sync::Arc<dyn vostok_remoting::RequestProcessor>>,
    ) -> Self {
        TestClient {
            remoting: RemotingClient::new(ClientConfig::default(), processor),
            client_id: format!("127.0.0.1@{client_id}-{}", rand::random::<u32>()),
        }
    }

    pub async fn call(&self, addr: &str, request: RemotingCommand) -> RemotingCommand {
        self.remoting
            .invoke_sync(addr, request, TIMEOUT)
            .await
            .unwrap_or_else(|e| panic!("call to {addr} failed: {e}"))
    }

    /// Properties with TAGS and KEYS set (and WAIT, as the Java client always sets it).
    pub fn properties(tags: Option<&str>, keys: Option<&str>) -> String {
        let mut props = String::new();
        if let Some(t) = tags {
            push_pair(&mut props, property::TAGS, t);
        }
        if let Some(k) = keys {
            push_pair(&mut props, property::KEYS, k);
        }
        push_pair(&mut props, property::WAIT_STORE_MSG_OK, "true");
        props
    }

    fn send_header(topic: &str, queue_id: i32, properties: String) -> SendMessageRequestHeader {
        SendMessageRequestHeader {
            producer_group: "test-producer".into(),
            topic: topic.into(),
            default_topic: "TBW102".into(),
            default_topic_queue_nums: 8,
            queue_id,
            sys_flag: 0,
            born_timestamp: vostok_remoting::support::time::now_millis(),
            flag: 0,
            properties: Some(properties),
            reconsume_times: Some(0),
            unit_mode: Some(false),
            batch: Some(false),
            max_reconsume_times: None,
            broker_name: None,
        }
    }

    /// SEND_MESSAGE_V2; returns the raw response.
    pub async fn send_raw(
        &self,
        addr: &str,
        topic: &str,
        queue_id: i32,
        body: impl Into<Bytes>,
        properties: String,
    ) -> RemotingCommand {
        let header =
            SendMessageRequestHeaderV2::from(Self::send_header(topic, queue_id, properties));
        let request = RemotingCommand::request_with_header(request_code::SEND_MESSAGE_V2, &header)
            .with_body(body);
        self.call(addr, request).await
    }

    /// Sends and asserts the message was stored.
    pub async fn send(
        &self,
        addr: &str,
        topic: &str,
        queue_id: i32,
        body: impl Into<Bytes>,
        properties: String,
    ) -> SendMessageResponseHeader {
        let response = self.send_raw(addr, topic, queue_id, body, properties).await;
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "send failed: {}",
            response.remark()
        );
        response.decode_header().expect("send response header")
    }

    /// SEND_BATCH_MESSAGE of `bodies` to one queue.
    pub async fn send_batch(
        &self,
        addr: &str,
        topic: &str,
        queue_id: i32,
        bodies: &[Vec<u8>],
    ) -> RemotingCommand {
        let mut body = Vec::new();
        for (i, b) in bodies.iter().enumerate() {
            let mut props = String::new();
            push_pair(&mut props, property::KEYS, &format!("batch-{i}"));
            batch::encode_block(&mut body, 0, b, &props);
        }
        let mut header = Self::send_header(topic, queue_id, String::new());
        header.batch = Some(true);
        let request = RemotingCommand::request_with_header(
            request_code::SEND_BATCH_MESSAGE,
            &SendMessageRequestHeaderV2::from(header),
        )
        .with_body(body);
        self.call(addr, request).await
    }

    /// PULL_MESSAGE with the subscription in the request (as a lite pull consumer sends it).
    #[allow(clippy::too_many_arguments)]
    pub async fn pull(
        &self,
        addr: &str,
        group: &str,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max: i32,
        suspend: Option<Duration>,
        expression: &str,
    ) -> Pulled {
        self.pull_by(
            addr,
            group,
            topic,
            (queue_id, offset, max),
            suspend,
            "TAG",
            expression,
        )
        .await
    }

    /// [`TestClient::pull`] with an expression of any type (`TAG`, `SQL92`); `at` is
    /// (queue id, offset, most messages).
    #[allow(clippy::too_many_arguments)] // the request's fields, as a test spells them
    pub async fn pull_by(
        &self,
        addr: &str,
        group: &str,
        topic: &str,
        at: (i32, i64, i32),
        suspend: Option<Duration>,
        expression_type: &str,
        expression: &str,
    ) -> Pulled {
        let (queue_id, offset, max) = at;
        let mut sys_flag = PULL_FLAG_SUBSCRIPTION;
        if suspend.is_some() {
            sys_flag |= PULL_FLAG_SUSPEND;
        }
        let header = PullMessageRequestHeader {
            consumer_group: group.into(),
            topic: topic.into(),
            queue_id,
            queue_offset: offset,
            max_msg_nums: max,
            sys_flag,
            commit_offset: 0,
            suspend_timeout_millis: suspend.unwrap_or_default().as_millis() as i64,
            subscription: Some(expression.into()),
            sub_version: 0,
            expression_type: Some(expression_type.into()),
            max_msg_bytes: None,
            broker_name: None,
        };
        let request = RemotingCommand::request_with_header(request_code::PULL_MESSAGE, &header);
        let response = self
            .remoting
            .invoke_sync(addr, request, Duration::from_secs(40))
            .await
            .unwrap_or_else(|e| panic!("pull from {addr} failed: {e}"));
        Pulled {
            code: response.code,
            header: response.decode_header().ok(),
            messages: MessageExt::decode_all(&response.body),
        }
    }

    /// A pull that also commits `commit_offset` (sysFlag bit 0), without subscription bit:
    /// the broker uses the heartbeat's subscription.
    pub async fn pull_with_commit(
        &self,
        addr: &str,
        group: &str,
        topic: &str,
        queue_id: i32,
        offset: i64,
        commit_offset: i64,
    ) -> Pulled {
        let header = PullMessageRequestHeader {
            consumer_group: group.into(),
            topic: topic.into(),
            queue_id,
            queue_offset: offset,
            max_msg_nums: 32,
            sys_flag: PULL_FLAG_COMMIT_OFFSET,
            commit_offset,
            suspend_timeout_millis: 0,
            subscription: None,
            sub_version: 0,
            expression_type: None,
            max_msg_bytes: None,
            broker_name: None,
        };
        let request = RemotingCommand::request_with_header(request_code::PULL_MESSAGE, &header);
        let response = self.call(addr, request).await;
        Pulled {
            code: response.code,
            header: response.decode_header().ok(),
            messages: MessageExt::decode_all(&response.body),
        }
    }

    /// HEART_BEAT for a clustering push consumer of `group` on `topic` (plus its retry topic).
    pub async fn heartbeat_consumer(
        &self,
        addr: &str,
        group: &str,
        topic: &str,
        expression: &str,
    ) -> RemotingCommand {
        let now = vostok_remoting::support::time::now_millis();
        let heartbeat = HeartbeatData {
            client_id: self.client_id.clone(),
            consumer_data_set: vec![ConsumerData {
                consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
                consume_type: ConsumeType::ConsumePassively,
                group_name: group.into(),
                message_model: MessageModel::Clustering,
                subscription_data_set: vec![
                    build_subscription(topic, expression, now),
                    build_subscription(
                        &vostok_remoting::protocol::topic::retry_topic(group),
                        "*",
                        now,
                    ),
                ],
                unit_mode: false,
            }],
            heartbeat_fingerprint: 0,
            producer_data_set: vec![ProducerData {
                group_name: "CLIENT_INNER_PRODUCER".into(),
            }],
            without_sub: false,
        };
        let request =
            RemotingCommand::request(request_code::HEART_BEAT).with_body(heartbeat.encode());
        self.call(addr, request).await
    }

    /// HEART_BEAT for a producer group.
    pub async fn heartbeat_producer(&self, addr: &str, group: &str) -> RemotingCommand {
        let heartbeat = HeartbeatData {
            client_id: self.client_id.clone(),
            producer_data_set: vec![ProducerData {
                group_name: group.into(),
            }],
            ..Default::default()
        };
        let request =
            RemotingCommand::request(request_code::HEART_BEAT).with_body(heartbeat.encode());
        self.call(addr, request).await
    }

    pub async fn route(&self, namesrv: &str, topic: &str) -> Option<TopicRouteData> {
        let header = GetRouteInfoRequestHeader {
            topic: topic.into(),
            accept_standard_json_only: None,
        };
        let response = self
            .call(
                namesrv,
                RemotingCommand::request_with_header(request_code::GET_ROUTEINFO_BY_TOPIC, &header),
            )
            .await;
        if response.code != response_code::SUCCESS {
            return None;
        }
        Some(TopicRouteData::decode(&response.body).expect("route JSON"))
    }

    /// Polls the name server until `check` accepts the topic's route.
    pub async fn wait_for_route(
        &self,
        namesrv: &str,
        topic: &str,
        check: impl Fn(&TopicRouteData) -> bool,
    ) -> TopicRouteData {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(route) = self.route(namesrv, topic).await {
                if check(&route) {
                    return route;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "route of {topic} not as expected in time"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn create_topic(&self, addr: &str, topic: &str, queues: i32) -> RemotingCommand {
        let header = CreateTopicRequestHeader {
            topic: topic.into(),
            default_topic: "TBW102".into(),
            read_queue_nums: queues,
            write_queue_nums: queues,
            perm: 6,
            topic_filter_type: "SINGLE_TAG".into(),
            topic_sys_flag: Some(0),
            order: Some(false),
            attributes: None,
            force: None,
        };
        self.call(
            addr,
            RemotingCommand::request_with_header(request_code::UPDATE_AND_CREATE_TOPIC, &header),
        )
        .await
    }

    /// Registers broker group `name`'s master at `addr` with the name server at
    /// `namesrv`, as a broker does, over this client's connection: the name server lists
    /// it until that connection closes or the registration expires, whether or not
    /// anything answers at `addr`.
    pub async fn register_broker(&self, namesrv: &str, name: &str, addr: &str) -> RemotingCommand {
        let header = RegisterBrokerRequestHeader {
            broker_name: name.into(),
            broker_addr: addr.into(),
            cluster_name: "DefaultCluster".into(),
            ha_server_addr: addr.into(),
            broker_id: 0,
            heartbeat_timeout_millis: None,
            enable_acting_master: Some(false),
            compressed: Some(false),
            body_crc32: Some(0),
        };
        let body = RegisterBrokerBody::default().encode();
        let request = RemotingCommand::request_with_header(request_code::REGISTER_BROKER, &header);
        self.call(namesrv, request.with_body(body)).await
    }

    pub async fn update_offset(
        &self,
        addr: &str,
        group: &str,
        topic: &str,
        queue_id: i32,
        offset: i64,
    ) -> RemotingCommand {
        let header = UpdateConsumerOffsetRequestHeader {
            consumer_group: group.into(),
            topic: topic.into(),
            queue_id,
            commit_offset: offset,
        };
        self.call(
            addr,
            RemotingCommand::request_with_header(request_code::UPDATE_CONSUMER_OFFSET, &header),
        )
        .await
    }

    /// The committed offset, or `None` for QUERY_NOT_FOUND.
    pub async fn query_offset(
        &self,
        addr: &str,
        group: &str,
        topic: &str,
        queue_id: i32,
    ) -> Option<i64> {
        let header = QueryConsumerOffsetRequestHeader {
            consumer_group: group.into(),
            topic: topic.into(),
            queue_id,
            set_zero_if_not_found: Some(false),
        };
        let response = self
            .call(
                addr,
                RemotingCommand::request_with_header(request_code::QUERY_CONSUMER_OFFSET, &header),
            )
            .await;
        (response.code == response_code::SUCCESS).then(|| {
            response
                .decode_header::<QueryConsumerOffsetResponseHeader>()
                .expect("offset")
                .offset
        })
    }

    pub async fn max_offset(&self, addr: &str, topic: &str, queue_id: i32) -> i64 {
        let header = GetMaxOffsetRequestHeader {
            topic: topic.into(),
            queue_id,
            committed: None,
        };
        let response = self
            .call(
                addr,
                RemotingCommand::request_with_header(request_code::GET_MAX_OFFSET, &header),
            )
            .await;
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{}",
            response.remark()
        );
        response
            .decode_header::<OffsetResponseHeader>()
            .expect("offset")
            .offset
    }

    /// GET_BROKER_RUNTIME_INFO as a table.
    pub async fn runtime_info(&self, addr: &str) -> std::collections::BTreeMap<String, String> {
        let response = self
            .call(
                addr,
                RemotingCommand::request(request_code::GET_BROKER_RUNTIME_INFO),
            )
            .await;
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{}",
            response.remark()
        );
        vostok_remoting::protocol::json::from_slice::<vostok_remoting::protocol::body::KvTable>(
            "runtime info",
            &response.body,
        )
        .map(|kv| kv.table)
        .unwrap_or_else(|e| panic!("runtime info of {addr}: {e}"))
    }

    /// Waits until the broker's store has dispatched every record it holds, so that a
    /// message whose send was acknowledged is visible to pulls.
    pub async fn wait_dispatched(&self, addr: &str) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let response = self
                .call(
                    addr,
                    RemotingCommand::request(request_code::GET_BROKER_RUNTIME_INFO),
                )
                .await;
            let info = String::from_utf8_lossy(&response.body).into_owned();
            if info.contains("\"dispatchBehindBytes\":\"0\"") {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{addr} did not dispatch in time: {info}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Pulls every message of a queue from `offset` until PULL_NOT_FOUND, after the
    /// broker has dispatched everything acknowledged so far.
    pub async fn drain(
        &self,
        addr: &str,
        group: &str,
        topic: &str,
        queue_id: i32,
        mut offset: i64,
    ) -> Vec<MessageExt> {
        self.wait_dispatched(addr).await;
        let mut out = Vec::new();
        loop {
            let pulled = self
                .pull(addr, group, topic, queue_id, offset, 32, None, "*")
                .await;
            match pulled.code {
                response_code::SUCCESS => {
                    offset = pulled.header.expect("header").next_begin_offset;
                    out.extend(pulled.messages);
                }
                response_code::PULL_NOT_FOUND => return out,
                response_code::PULL_RETRY_IMMEDIATELY => {
                    offset = pulled.header.expect("header").next_begin_offset;
                }
                other => panic!("pull failed with code {other}"),
            }
        }
    }
}

impl crate::Broker {
    /// Creates `topic` with `queues` queues on this broker, asserting it was created,
    /// and waits until its name server routes it with that many queues.
    pub async fn create_topic(&self, topic: &str, queues: i32) {
        let admin = TestClient::default();
        let response = admin.create_topic(&self.addr, topic, queues).await;
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{}",
            response.remark()
        );
        admin
            .wait_for_route(&self.namesrv, topic, |r| {
                r.queue_datas.iter().any(|q| q.read_queue_nums == queues)
            })
            .await;
    }
}
