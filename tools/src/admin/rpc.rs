//! [`Admin`]: one async function per request `mqadmin` makes (RocketMQ's
//! `MQClientAPIImpl` admin calls), each within the `--timeout-ms` budget.
//!
//! A non-success answer becomes [`AdminError::Response`] with its code and remark,
//! except where a code is an expected outcome (REQUEST_CODE_NOT_SUPPORTED from a
//! broker that lacks an optional request, QUERY_NOT_FOUND, CONSUMER_NOT_ONLINE): those
//! are `None` or empty results for the caller to handle.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use vostok_remoting::protocol::body::{KvTable, TopicList};
use vostok_remoting::protocol::header::{
    CommandHeader, CreateTopicRequestHeader, DeleteTopicFromNamesrvRequestHeader,
    GetConsumeStatsRequestHeader, GetConsumerConnectionListRequestHeader,
    GetMaxOffsetRequestHeader, GetMinOffsetRequestHeader, GetRouteInfoRequestHeader,
    OffsetResponseHeader, QueryConsumerOffsetRequestHeader, QueryConsumerOffsetResponseHeader,
    QueryMessageRequestHeader, TopicRequestHeader, ViewMessageRequestHeader,
};
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::route::{ClusterInfo, TopicRouteData};
use vostok_remoting::protocol::{json, request_code, response_code};
use vostok_remoting::{ClientConfig, DecodeError, RemotingClient, RemotingCommand};

use super::body::{ConsumeStats, ConsumerConnection, TopicStatsTable};
use super::AdminError;

type Result<T, E = AdminError> = std::result::Result<T, E>;

/// A connection pool to the name servers and brokers of one cluster.
pub struct Admin {
    client: RemotingClient,
    namesrv: Vec<String>,
    timeout: Duration,
}

impl Admin {
    /// `namesrv` is RocketMQ's `host:port;host:port` list.
    pub fn new(namesrv: &str, timeout: Duration) -> Result<Self> {
        let namesrv: Vec<String> = namesrv
            .split(';')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_owned)
            .collect();
        if namesrv.is_empty() {
            return Err(AdminError::Invalid(
                "no name server address (-n or NAMESRV_ADDR)".into(),
            ));
        }
        let config = ClientConfig {
            connect_timeout: timeout,
            ..ClientConfig::default()
        };
        Ok(Admin {
            client: RemotingClient::new(config, None),
            namesrv,
            timeout,
        })
    }

    pub fn namesrv_addrs(&self) -> &[String] {
        &self.namesrv
    }

    /// Closes the connections.
    pub async fn shutdown(&self) {
        self.client.shutdown().await;
    }

    /// Sends `request` to `addr`; only transport failures are errors here.
    async fn invoke(&self, addr: &str, request: RemotingCommand) -> Result<RemotingCommand> {
        let what = request_code::name(request.code);
        self.client
            .invoke_sync(addr, request, self.timeout)
            .await
            .map_err(|source| AdminError::Remoting {
                what,
                addr: addr.to_owned(),
                source,
            })
    }

    /// Sends `request` to `addr` and requires SUCCESS.
    async fn invoke_ok(&self, addr: &str, request: RemotingCommand) -> Result<RemotingCommand> {
        let what = request_code::name(request.code);
        let response = self.invoke(addr, request).await?;
        expect_success(what, addr, response)
    }

    /// Sends `request` to the first name server that answers (the others are tried in
    /// order when one cannot be reached) and requires SUCCESS.
    async fn invoke_namesrv(&self, request: RemotingCommand) -> Result<(String, RemotingCommand)> {
        let mut last = None;
        for addr in &self.namesrv {
            match self.invoke(addr, request.clone()).await {
                Ok(response) => {
                    let what = request_code::name(request.code);
                    return Ok((addr.clone(), expect_success(what, addr, response)?));
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("Admin::new requires at least one name server"))
    }

    /// GET_BROKER_CLUSTER_INFO.
    pub async fn cluster_info(&self) -> Result<ClusterInfo> {
        let request = RemotingCommand::request(request_code::GET_BROKER_CLUSTER_INFO);
        let (addr, response) = self.invoke_namesrv(request).await?;
        ClusterInfo::decode(&response.body)
            .map_err(|e| decode_error(request_code::GET_BROKER_CLUSTER_INFO, &addr, e))
    }

    /// GET_ALL_TOPIC_LIST_FROM_NAMESERVER.
    pub async fn all_topic_list(&self) -> Result<TopicList> {
        let code = request_code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER;
        let (addr, response) = self.invoke_namesrv(RemotingCommand::request(code)).await?;
        json::from_slice("TopicList", &response.body).map_err(|e| decode_error(code, &addr, e))
    }

    /// GET_ROUTEINFO_BY_TOPIC; a topic without route is an error (TOPIC_NOT_EXIST).
    pub async fn topic_route(&self, topic: &str) -> Result<TopicRouteData> {
        let code = request_code::GET_ROUTEINFO_BY_TOPIC;
        let header = GetRouteInfoRequestHeader {
            topic: topic.to_owned(),
            accept_standard_json_only: Some(true),
        };
        let (addr, response) = self
            .invoke_namesrv(RemotingCommand::request_with_header(code, &header))
            .await?;
        TopicRouteData::decode(&response.body).map_err(|e| decode_error(code, &addr, e))
    }

    /// DELETE_TOPIC_IN_NAMESRV on every name server.
    pub async fn delete_topic_in_namesrv(&self, topic: &str, cluster: Option<&str>) -> Result<()> {
        let header = DeleteTopicFromNamesrvRequestHeader {
            topic: topic.to_owned(),
            cluster_name: cluster.map(str::to_owned),
        };
        for addr in &self.namesrv {
            let request = RemotingCommand::request_with_header(
                request_code::DELETE_TOPIC_IN_NAMESRV,
                &header,
            );
            self.invoke_ok(addr, request).await?;
        }
        Ok(())
    }

    /// UPDATE_AND_CREATE_TOPIC.
    pub async fn create_topic(&self, addr: &str, header: &CreateTopicRequestHeader) -> Result<()> {
        let request =
            RemotingCommand::request_with_header(request_code::UPDATE_AND_CREATE_TOPIC, header);
        self.invoke_ok(addr, request).await.map(drop)
    }

    /// DELETE_TOPIC_IN_BROKER.
    pub async fn delete_topic_in_broker(&self, addr: &str, topic: &str) -> Result<()> {
        let header = TopicRequestHeader {
            topic: topic.to_owned(),
        };
        let request =
            RemotingCommand::request_with_header(request_code::DELETE_TOPIC_IN_BROKER, &header);
        self.invoke_ok(addr, request).await.map(drop)
    }

    /// GET_TOPIC_STATS_INFO; `None` when the broker does not serve it.
    pub async fn topic_stats(&self, addr: &str, topic: &str) -> Result<Option<TopicStatsTable>> {
        let code = request_code::GET_TOPIC_STATS_INFO;
        let header = TopicRequestHeader {
            topic: topic.to_owned(),
        };
        let response = self
            .invoke(addr, RemotingCommand::request_with_header(code, &header))
            .await?;
        if response.code == response_code::REQUEST_CODE_NOT_SUPPORTED {
            return Ok(None);
        }
        let response = expect_success(request_code::name(code), addr, response)?;
        TopicStatsTable::decode(&response.body)
            .map(Some)
            .map_err(|e| decode_error(code, addr, e))
    }

    /// GET_MAX_OFFSET: the offset the next message of the queue will get.
    pub async fn max_offset(&self, addr: &str, topic: &str, queue_id: i32) -> Result<i64> {
        let header = GetMaxOffsetRequestHeader {
            topic: topic.to_owned(),
            queue_id,
            committed: None,
        };
        let request = RemotingCommand::request_with_header(request_code::GET_MAX_OFFSET, &header);
        self.offset(addr, request).await
    }

    /// GET_MIN_OFFSET: the offset of the oldest message still stored.
    pub async fn min_offset(&self, addr: &str, topic: &str, queue_id: i32) -> Result<i64> {
        let header = GetMinOffsetRequestHeader {
            topic: topic.to_owned(),
            queue_id,
        };
        let request = RemotingCommand::request_with_header(request_code::GET_MIN_OFFSET, &header);
        self.offset(addr, request).await
    }

    async fn offset(&self, addr: &str, request: RemotingCommand) -> Result<i64> {
        let what = request_code::name(request.code);
        let response = self.invoke_ok(addr, request).await?;
        read_header::<OffsetResponseHeader>(what, addr, &response).map(|h| h.offset)
    }

    /// GET_BROKER_RUNTIME_INFO: the broker's key/value table.
    pub async fn runtime_info(&self, addr: &str) -> Result<BTreeMap<String, String>> {
        let code = request_code::GET_BROKER_RUNTIME_INFO;
        let response = self.invoke_ok(addr, RemotingCommand::request(code)).await?;
        json::from_slice::<KvTable>("KvTable", &response.body)
            .map(|kv| kv.table)
            .map_err(|e| decode_error(code, addr, e))
    }

    /// GET_CONSUMER_CONNECTION_LIST; `None` when the group is not online there or the
    /// broker does not serve the request.
    pub async fn consumer_connection(
        &self,
        addr: &str,
        group: &str,
    ) -> Result<Option<ConsumerConnection>> {
        let code = request_code::GET_CONSUMER_CONNECTION_LIST;
        let header = GetConsumerConnectionListRequestHeader {
            consumer_group: group.to_owned(),
        };
        let response = self
            .invoke(addr, RemotingCommand::request_with_header(code, &header))
            .await?;
        if matches!(
            response.code,
            response_code::CONSUMER_NOT_ONLINE | response_code::REQUEST_CODE_NOT_SUPPORTED
        ) {
            return Ok(None);
        }
        let response = expect_success(request_code::name(code), addr, response)?;
        json::from_slice("ConsumerConnection", &response.body)
            .map(Some)
            .map_err(|e| decode_error(code, addr, e))
    }

    /// GET_CONSUME_STATS for one topic or, without `topic`, every topic the group has
    /// offsets for; `None` when the broker does not serve it.
    pub async fn consume_stats(
        &self,
        addr: &str,
        group: &str,
        topic: Option<&str>,
    ) -> Result<Option<ConsumeStats>> {
        let code = request_code::GET_CONSUME_STATS;
        let header = GetConsumeStatsRequestHeader {
            consumer_group: group.to_owned(),
            topic: topic.map(str::to_owned),
        };
        let response = self
            .invoke(addr, RemotingCommand::request_with_header(code, &header))
            .await?;
        if response.code == response_code::REQUEST_CODE_NOT_SUPPORTED {
            return Ok(None);
        }
        let response = expect_success(request_code::name(code), addr, response)?;
        ConsumeStats::decode(&response.body)
            .map(Some)
            .map_err(|e| decode_error(code, addr, e))
    }

    /// QUERY_CONSUMER_OFFSET; `None` when the group has committed nothing there.
    pub async fn consumer_offset(
        &self,
        addr: &str,
        group: &str,
        topic: &str,
        queue_id: i32,
    ) -> Result<Option<i64>> {
        let code = request_code::QUERY_CONSUMER_OFFSET;
        let header = QueryConsumerOffsetRequestHeader {
            consumer_group: group.to_owned(),
            topic: topic.to_owned(),
            queue_id,
            // The committed offset only, not the broker's guess for a new group.
            set_zero_if_not_found: Some(false),
        };
        let response = self
            .invoke(addr, RemotingCommand::request_with_header(code, &header))
            .await?;
        if response.code == response_code::QUERY_NOT_FOUND {
            return Ok(None);
        }
        let what = request_code::name(code);
        let response = expect_success(what, addr, response)?;
        read_header::<QueryConsumerOffsetResponseHeader>(what, addr, &response)
            .map(|h| Some(h.offset))
    }

    /// QUERY_MESSAGE: the records the broker's index finds (none on QUERY_NOT_FOUND).
    pub async fn query_message(
        &self,
        addr: &str,
        header: &QueryMessageRequestHeader,
    ) -> Result<Vec<MessageExt>> {
        let code = request_code::QUERY_MESSAGE;
        let response = self
            .invoke(addr, RemotingCommand::request_with_header(code, header))
            .await?;
        if response.code == response_code::QUERY_NOT_FOUND {
            return Ok(Vec::new());
        }
        let response = expect_success(request_code::name(code), addr, response)?;
        decode_records(&response.body).map_err(|e| decode_error(code, addr, e))
    }

    /// VIEW_MESSAGE_BY_ID: the record at commitlog offset `offset`.
    pub async fn view_message(&self, addr: &str, offset: i64) -> Result<MessageExt> {
        let code = request_code::VIEW_MESSAGE_BY_ID;
        let header = ViewMessageRequestHeader {
            offset,
            topic: None,
        };
        let response = self
            .invoke_ok(addr, RemotingCommand::request_with_header(code, &header))
            .await?;
        MessageExt::decode(&response.body, false).map_err(|e| decode_error(code, addr, e))
    }
}

fn expect_success(
    what: &'static str,
    addr: &str,
    response: RemotingCommand,
) -> Result<RemotingCommand> {
    if response.code == response_code::SUCCESS {
        Ok(response)
    } else {
        Err(AdminError::Response {
            what,
            addr: addr.to_owned(),
            code: response.code,
            remark: response.remark().to_owned(),
        })
    }
}

fn read_header<H: CommandHeader>(
    what: &'static str,
    addr: &str,
    response: &RemotingCommand,
) -> Result<H> {
    response
        .decode_header::<H>()
        .map_err(|source| AdminError::Header {
            what,
            addr: addr.to_owned(),
            source,
        })
}

fn decode_error(code: i32, addr: &str, source: DecodeError) -> AdminError {
    AdminError::Decode {
        what: request_code::name(code),
        addr: addr.to_owned(),
        source,
    }
}

/// The concatenated records of a query answer; a record that does not decode is an
/// error rather than the silent end of the list.
pub fn decode_records(body: &Bytes) -> Result<Vec<MessageExt>, DecodeError> {
    let mut out = Vec::new();
    let mut rest = body.clone();
    while !rest.is_empty() {
        let message = MessageExt::decode(&rest, false)?;
        let size = usize::try_from(message.store_size)
            .ok()
            .filter(|&n| n > 0 && n <= rest.len())
            .ok_or_else(|| DecodeError::Invalid {
                what: "message record",
                reason: format!("size {} with {} bytes left", message.store_size, rest.len()),
            })?;
        rest = rest.slice(size..);
        out.push(message);
    }
    Ok(out)
}
