//! Requests to one other broker, signed as the viewer, and what is read of its
//! answers. Nothing in an answer is trusted: every figure is added and subtracted
//! saturating, a time outside years 1970 to 9999 reads as none, a console address is
//! taken only when its host is a plain host name or address, and a body that does not
//! decode is a [`PeerError::Unreadable`], never a panic.

use std::collections::BTreeMap;

use vostok_remoting::auth::SessionCredentials;
use vostok_remoting::protocol::body::{
    BrowsedMessage, ConsumeStats, ConsumerConnection, OffsetWrapper, SubscriptionGroupWrapper,
    TopicConfig, TopicStatsTable,
};
use vostok_remoting::protocol::header::QueryMessageRequestHeader;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::{json, request_code as code, response_code};
use vostok_remoting::RemotingCommand;

use super::{in_namespace, PeerError, Remote, TopicRow, PEER_TIMEOUT};

/// Messages one search asks another broker for.
const MAX_FOUND: i32 = 32;
/// The last millisecond of year 9999: a later time from another broker reads as none.
const LAST_TIME: i64 = 253_402_300_799_999;

/// Requests to one broker, signed as the viewer.
pub(super) struct Asker<'a> {
    pub(super) remote: &'a Remote,
    pub(super) addr: &'a str,
    pub(super) who: Option<&'a SessionCredentials>,
}

impl Asker<'_> {
    /// The answer to `request`, whatever its code.
    async fn answer(&self, request: RemotingCommand) -> Result<RemotingCommand, PeerError> {
        self.remote
            .call(self.addr, request, self.who, PEER_TIMEOUT)
            .await
            .map_err(|e| PeerError::Unreachable(e.to_string()))
    }

    /// The answer to `request` when it succeeded.
    pub(super) async fn ask(&self, request: RemotingCommand) -> Result<RemotingCommand, PeerError> {
        let r = self.answer(request).await?;
        match r.code {
            response_code::SUCCESS => Ok(r),
            response_code::NO_PERMISSION => Err(PeerError::Refused(r.remark().to_owned())),
            code => Err(PeerError::Answer {
                code,
                remark: r.remark().to_owned(),
            }),
        }
    }

    /// Messages kept in `topic` (0 when it does not exist there).
    pub(super) async fn messages_kept(&self, topic: &str) -> Option<i64> {
        let r = self
            .answer(with(code::GET_TOPIC_STATS_INFO, &[("topic", topic)]))
            .await
            .ok()?;
        match r.code {
            response_code::SUCCESS => TopicStatsTable::decode(&r.body).ok().map(|t| {
                t.offset_table
                    .values()
                    .map(|q| q.max_offset.saturating_sub(q.min_offset).max(0))
                    .fold(0i64, i64::saturating_add)
            }),
            response_code::TOPIC_NOT_EXIST => Some(0),
            _ => None,
        }
    }

    /// Topic `name` as this broker answers the viewer about it (GET_TOPIC_CONFIG), if
    /// it has it and tells.
    pub(super) async fn topic(&self, name: &str) -> Option<TopicRow> {
        let r = self
            .ask(with(code::GET_TOPIC_CONFIG, &[("topic", name)]))
            .await
            .ok()?;
        let t: TopicConfig = json::from_slice("TopicConfig", &r.body).ok()?;
        let messages = self.messages_kept(name).await;
        Some(TopicRow {
            name: name.to_owned(),
            read_queues: t.read_queue_nums,
            write_queues: t.write_queue_nums,
            perm: t.perm,
            messages,
        })
    }

    /// The group's consumers online (none: CONSUMER_NOT_ONLINE).
    pub(super) async fn consumers(&self, group: &str) -> Option<ConsumerConnection> {
        let request = with(
            code::GET_CONSUMER_CONNECTION_LIST,
            &[("consumerGroup", group)],
        );
        let r = self.answer(request).await.ok()?;
        match r.code {
            response_code::SUCCESS => ConsumerConnection::decode(&r.body).ok(),
            response_code::CONSUMER_NOT_ONLINE => Some(ConsumerConnection::default()),
            _ => None,
        }
    }

    /// The group's lag: messages behind and the oldest's wait (ms).
    pub(super) async fn lag(&self, group: &str, now: i64) -> Option<(i64, i64)> {
        let request = with(code::GET_CONSUME_STATS, &[("consumerGroup", group)]);
        let r = self.ask(request).await.ok()?;
        let stats = ConsumeStats::decode(&r.body).ok()?;
        Some(lag_of(stats.offset_table.values(), now))
    }

    /// The operator's consumer groups (not the broker's own).
    pub(super) async fn group_names(
        &self,
        namespace: Option<&str>,
    ) -> Result<Vec<String>, PeerError> {
        let r = self
            .ask(RemotingCommand::request(
                code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
            ))
            .await?;
        let all: SubscriptionGroupWrapper = json::from_slice("SubscriptionGroupWrapper", &r.body)
            .map_err(|e| PeerError::Unreadable(e.to_string()))?;
        Ok(all
            .subscription_group_table
            .into_keys()
            .filter(|g| !g.starts_with("CID_RMQ_SYS_") && in_namespace(namespace, g))
            .collect())
    }

    /// The message at commitlog `offset` (VIEW_MESSAGE_BY_ID), if there is one.
    pub(super) async fn view(&self, offset: i64) -> Option<MessageExt> {
        let offset = offset.to_string();
        let r = self
            .ask(with(code::VIEW_MESSAGE_BY_ID, &[("offset", &offset)]))
            .await
            .ok()?;
        MessageExt::decode(&r.body, false).ok()
    }

    /// QUERY_MESSAGE for `key` in `topic` (a unique key when `unique`).
    pub(super) async fn query(
        &self,
        topic: &str,
        key: &str,
        unique: bool,
    ) -> Result<Vec<MessageExt>, PeerError> {
        let header = QueryMessageRequestHeader {
            topic: topic.to_owned(),
            key: key.to_owned(),
            max_num: MAX_FOUND,
            begin_timestamp: 0,
            end_timestamp: i64::MAX,
            unique_key_query: unique.then_some(true),
        };
        let request = RemotingCommand::request_with_header(code::QUERY_MESSAGE, &header);
        let r = self.answer(request).await?;
        match r.code {
            response_code::SUCCESS => {
                let mut found = MessageExt::decode_all(&r.body);
                found.truncate(MAX_FOUND as usize);
                Ok(found)
            }
            response_code::QUERY_NOT_FOUND => Ok(Vec::new()),
            response_code::NO_PERMISSION => Err(PeerError::Refused(r.remark().to_owned())),
            code => Err(PeerError::Answer {
                code,
                remark: r.remark().to_owned(),
            }),
        }
    }

    /// The broker's console address from GET_BROKER_CONFIG, when it serves one on a
    /// fixed port.
    pub(super) async fn console(&self) -> Option<String> {
        let r = self
            .ask(RemotingCommand::request(code::GET_BROKER_CONFIG))
            .await
            .ok()?;
        let text = String::from_utf8_lossy(&r.body);
        let config: BTreeMap<&str, &str> = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.trim(), v.trim()))
            .collect();
        console_addr(&config, self.addr)
    }
}

/// A request with these ext fields.
pub(super) fn with(request_code: i32, fields: &[(&str, &str)]) -> RemotingCommand {
    let mut r = RemotingCommand::request(request_code);
    for (k, v) in fields {
        r.ext_fields.insert(k, v);
    }
    r
}

/// Messages behind over `queues`, and how long the oldest of them waits (ms).
fn lag_of<'a>(queues: impl Iterator<Item = &'a OffsetWrapper> + Clone, now: i64) -> (i64, i64) {
    let behind = |q: &OffsetWrapper| q.broker_offset.saturating_sub(q.consumer_offset).max(0);
    let messages = queues.clone().map(behind).fold(0i64, i64::saturating_add);
    let wait = queues
        .filter(|q| behind(q) > 0 && q.last_timestamp > 0)
        .map(|q| now.saturating_sub(q.last_timestamp))
        .max()
        .unwrap_or(0);
    (messages, wait)
}

/// A message found on another broker, its store time kept only when it is a time.
pub(super) fn found(m: &MessageExt) -> BrowsedMessage {
    let mut found = crate::ops::browse::browsed(m);
    if !(0..=LAST_TIME).contains(&found.store_timestamp) {
        found.store_timestamp = 0;
    }
    found
}

/// The console address a broker's settings name: `consoleHost` unless it is a
/// wildcard, else the broker's own host; only with the console on, a fixed port and
/// a host made of the characters of a host name or an IP address.
pub(super) fn console_addr(config: &BTreeMap<&str, &str>, broker_addr: &str) -> Option<String> {
    if config.get("consoleEnable") != Some(&"true") {
        return None;
    }
    let port: u16 = config
        .get("consolePort")?
        .parse()
        .ok()
        .filter(|p| *p != 0)?;
    let host = match config.get("consoleHost").copied().unwrap_or("") {
        "" | "0.0.0.0" | "::" | "[::]" => broker_addr.rsplit_once(':')?.0,
        host => host,
    };
    let plain = |c: char| c.is_ascii_alphanumeric() || ".-:[]".contains(c);
    (host.len() <= 255 && host.chars().all(plain)).then(|| format!("http://{host}:{port}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_console_address_needs_a_fixed_port_the_console_on_and_a_plain_host() {
        let config = |pairs: &[(&'static str, &'static str)]| pairs.iter().copied().collect();
        let at = "10.0.0.7:10911";
        let on = config(&[("consoleEnable", "true"), ("consolePort", "8082")]);
        assert_eq!(
            console_addr(&on, at).as_deref(),
            Some("http://10.0.0.7:8082")
        );
        let host = config(&[
            ("consoleEnable", "true"),
            ("consolePort", "9000"),
            ("consoleHost", "ops.example"),
        ]);
        assert_eq!(
            console_addr(&host, at).as_deref(),
            Some("http://ops.example:9000")
        );
        for off in [
            config(&[("consoleEnable", "false"), ("consolePort", "8082")]),
            config(&[("consoleEnable", ""), ("consolePort", "8082")]),
            config(&[("consoleEnable", "true"), ("consolePort", "0")]),
            config(&[
                ("consoleEnable", "true"),
                ("consolePort", "8082"),
                ("consoleHost", "evil.example/phish?x="),
            ]),
            config(&[
                ("consoleEnable", "true"),
                ("consolePort", "8082"),
                ("consoleHost", "a\"><b"),
            ]),
        ] {
            assert_eq!(console_addr(&off, at), None);
        }
    }

    #[test]
    fn figures_from_another_broker_saturate_instead_of_overflowing() {
        let q = |broker_offset, consumer_offset, last_timestamp| OffsetWrapper {
            broker_offset,
            consumer_offset,
            pull_offset: 0,
            last_timestamp,
        };
        let queues = [q(i64::MAX, i64::MIN, i64::MIN + 1), q(i64::MAX, 0, 5)];
        assert_eq!(lag_of(queues.iter(), 10), (i64::MAX, 5));
        let queues = [q(5, 7, 1)];
        assert_eq!(lag_of(queues.iter(), 10), (0, 0));
    }
}
