//! Requests sent on the remoting layer alone: creating topics, reading a whole topic
//! back (the ground truth every scenario checks acknowledged messages against), and the
//! broker's runtime figures.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use vostok_remoting::protocol::header::{
    CreateTopicRequestHeader, GetRouteInfoRequestHeader, PullMessageRequestHeader,
    PullMessageResponseHeader, PULL_FLAG_SUBSCRIPTION,
};
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::{ClientConfig, RemotingClient, RemotingCommand};

pub const TIMEOUT: Duration = Duration::from_secs(10);

pub struct Raw {
    pub client: RemotingClient,
}

impl Default for Raw {
    fn default() -> Self {
        Raw {
            client: RemotingClient::new(ClientConfig::default(), None),
        }
    }
}

impl Raw {
    pub async fn call(
        &self,
        addr: &str,
        request: RemotingCommand,
    ) -> Result<RemotingCommand, String> {
        self.client
            .invoke_sync(addr, request, TIMEOUT)
            .await
            .map_err(|e| format!("{addr}: {e}"))
    }

    pub async fn create_topic(&self, addr: &str, topic: &str, queues: i32) -> Result<(), String> {
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
        let request =
            RemotingCommand::request_with_header(request_code::UPDATE_AND_CREATE_TOPIC, &header);
        let response = self.call(addr, request).await?;
        if response.code != response_code::SUCCESS {
            return Err(format!(
                "create {topic}: {} {}",
                response.code,
                response.remark()
            ));
        }
        Ok(())
    }

    /// Whether a name server has a route for `topic`: `Ok(Err(code))` with its answer
    /// when it has none.
    pub async fn route(&self, namesrv: &str, topic: &str) -> Result<Result<(), i32>, String> {
        let header = GetRouteInfoRequestHeader {
            topic: topic.into(),
            accept_standard_json_only: None,
        };
        let request =
            RemotingCommand::request_with_header(request_code::GET_ROUTEINFO_BY_TOPIC, &header);
        let response = self.call(namesrv, request).await?;
        Ok(if response.code == response_code::SUCCESS {
            Ok(())
        } else {
            Err(response.code)
        })
    }

    /// Waits until the name server has a route for `topic`.
    pub async fn wait_route(
        &self,
        namesrv: &str,
        topic: &str,
        limit: Duration,
    ) -> Result<(), String> {
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(Ok(())) = self.route(namesrv, topic).await {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("no route of {topic} on {namesrv} within {limit:?}"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// GET_BROKER_RUNTIME_INFO as a map.
    pub async fn runtime_info(&self, addr: &str) -> Result<HashMap<String, String>, String> {
        let response = self
            .call(
                addr,
                RemotingCommand::request(request_code::GET_BROKER_RUNTIME_INFO),
            )
            .await?;
        let value: serde_json::Value = serde_json::from_slice(&response.body)
            .map_err(|e| format!("runtime info of {addr}: {e}"))?;
        let table = value
            .get("table")
            .and_then(|t| t.as_object())
            .ok_or_else(|| format!("runtime info of {addr} has no table"))?;
        Ok(table
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
            .collect())
    }

    /// Waits until the broker has dispatched everything it stored.
    pub async fn wait_dispatched(&self, addr: &str, limit: Duration) -> Result<(), String> {
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(info) = self.runtime_info(addr).await {
                if info.get("dispatchBehindBytes").map(String::as_str) == Some("0") {
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                return Err(format!("{addr} did not dispatch within {limit:?}"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Every message stored in `topic`'s `queues` queues, from offset 0.
    pub async fn read_topic(
        &self,
        addr: &str,
        topic: &str,
        queues: i32,
    ) -> Result<Vec<MessageExt>, String> {
        self.wait_dispatched(addr, Duration::from_secs(60)).await?;
        let mut out = Vec::new();
        for queue_id in 0..queues {
            let mut offset = 0;
            loop {
                let header = PullMessageRequestHeader {
                    consumer_group: "chaos-reader".into(),
                    topic: topic.into(),
                    queue_id,
                    queue_offset: offset,
                    max_msg_nums: 32,
                    sys_flag: PULL_FLAG_SUBSCRIPTION,
                    commit_offset: 0,
                    suspend_timeout_millis: 0,
                    subscription: Some("*".into()),
                    sub_version: 0,
                    expression_type: Some("TAG".into()),
                    max_msg_bytes: None,
                    broker_name: None,
                };
                let request =
                    RemotingCommand::request_with_header(request_code::PULL_MESSAGE, &header);
                let response = self.call(addr, request).await?;
                let next = response
                    .decode_header::<PullMessageResponseHeader>()
                    .map(|h| h.next_begin_offset);
                match response.code {
                    response_code::SUCCESS => {
                        out.extend(MessageExt::decode_all(&response.body));
                        offset = next.map_err(|e| format!("pull header: {e}"))?;
                    }
                    response_code::PULL_RETRY_IMMEDIATELY | response_code::PULL_OFFSET_MOVED => {
                        let next = next.map_err(|e| format!("pull header: {e}"))?;
                        if next <= offset {
                            return Err(format!("{topic}/{queue_id}: stuck at offset {offset}"));
                        }
                        offset = next;
                    }
                    response_code::PULL_NOT_FOUND => break,
                    other => {
                        return Err(format!(
                            "pull {topic}/{queue_id}@{offset}: code {other} {}",
                            response.remark()
                        ))
                    }
                }
            }
        }
        Ok(out)
    }
}
