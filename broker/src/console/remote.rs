//! The other broker groups' rows of the cluster-wide pages
//! (docs/operations.md#one-console-for-the-cluster): topics, groups, clients and
//! message searches of every broker group the name servers know, asked with the admin
//! requests mqadmin sends (GET_ALL_TOPIC_CONFIG, GET_TOPIC_STATS_INFO,
//! GET_ALL_SUBSCRIPTIONGROUP_CONFIG, GET_CONSUME_STATS, GET_CONSUMER_CONNECTION_LIST,
//! QUERY_MESSAGE, VIEW_MESSAGE_BY_ID), and each one's console address
//! (GET_BROKER_CONFIG: `consoleEnable`, `consolePort`, `consoleHost`).
//!
//! Every broker group is asked at once, each within [`PEER_TIMEOUT`] in all: one that
//! does not answer is a row "unreachable: why", never a stalled page. With ACL on, each
//! request is signed with the signed-in account's keys, so that its own rights apply
//! on the other broker; with ACL off, requests are plain. The requests go through a
//! client of their own, with the broker's TLS settings and without the broker's own
//! signing hook, so that no request carries the broker's rights.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::join_all;
use vostok_remoting::auth::SessionCredentials;
use vostok_remoting::protocol::body::{
    BrowsedMessage, ConsumeStats, ConsumerConnection, SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper, TopicStatsTable,
};
use vostok_remoting::protocol::header::QueryMessageRequestHeader;
use vostok_remoting::protocol::message::id::decode_offset_msg_id;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::{json, request_code as code, response_code, topic};
use vostok_remoting::support::time::now_millis;
use vostok_remoting::{RemotingClient, RemotingCommand};

use super::viewer::Viewer;
use super::{ClusterView, Console};
use crate::state::Broker;
use vostok_observe::http::HttpRequest;

/// How long the page waits for one other broker, all its requests together.
pub(crate) const PEER_TIMEOUT: Duration = Duration::from_millis(1500);
/// Topics or groups of one broker whose figures are asked for; rows past it show `-`.
const MAX_ASKED: usize = 256;

/// Why another broker's rows are missing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PeerError {
    /// No answer: not connected, or no answer in time.
    #[error("unreachable: {0}")]
    Unreachable(String),
    /// The other broker refused the account (ACL).
    #[error("refused: {0}")]
    Refused(String),
    #[error("error: code {code}: {remark}")]
    Answer { code: i32, remark: String },
    #[error("unreadable answer: {0}")]
    Unreadable(String),
}

/// Another broker group, by the address asked (its master when it has one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Peer {
    pub(crate) name: String,
    pub(crate) addr: String,
}

/// A topic of another broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TopicRow {
    pub(crate) name: String,
    pub(crate) read_queues: i32,
    pub(crate) write_queues: i32,
    pub(crate) perm: i32,
    /// Messages kept, when asked and answered.
    pub(crate) messages: Option<i64>,
}

/// A consumer group of another broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GroupRow {
    pub(crate) name: String,
    /// Messages behind, and how long the oldest waits (ms).
    pub(crate) lag: Option<(i64, i64)>,
    pub(crate) dlq: Option<i64>,
    pub(crate) clients: Option<usize>,
}

/// A consumer connected to another broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClientRow {
    pub(crate) group: String,
    pub(crate) client_id: String,
    pub(crate) addr: String,
    pub(crate) language: String,
    pub(crate) version: i32,
    pub(crate) consume_type: String,
}

/// What a page wants of each other broker.
#[derive(Debug, Clone)]
pub(crate) enum Want {
    Topics {
        namespace: Option<String>,
    },
    Groups {
        namespace: Option<String>,
    },
    Clients,
    /// Messages of `topic` by message id (offset or unique) or key.
    Messages {
        topic: String,
        id: String,
        key: String,
    },
}

/// Rows of one other broker.
#[derive(Debug, Clone)]
pub(crate) enum Rows {
    Topics(Vec<TopicRow>),
    Groups(Vec<GroupRow>),
    Clients(Vec<ClientRow>),
    Messages(Vec<BrowsedMessage>),
}

/// One other broker's answer: its rows or why there are none, and its console's
/// address (`None`: off, unknown, or not for this account to know).
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    pub(crate) peer: Peer,
    pub(crate) console: Option<String>,
    pub(crate) rows: Result<Rows, PeerError>,
}

/// Every other broker's answer, or why the name servers could not list them.
pub(crate) type Others = Result<Vec<Answer>, String>;

/// The client the console asks other brokers with.
pub(crate) struct Remote {
    client: RemotingClient,
}

impl Remote {
    /// A client with `b`'s outgoing settings (TLS, runtime), without its signing hook.
    pub(crate) fn new(b: &Broker) -> Self {
        Remote {
            client: RemotingClient::new(b.outer.config().clone(), None),
        }
    }

    /// `want` of every broker group but `b`'s own, all at once, signed with `who`.
    pub(crate) async fn others(
        &self,
        b: &Broker,
        who: Option<&SessionCredentials>,
        want: &Want,
    ) -> Others {
        if b.namesrv_addrs.is_empty() {
            return Ok(Vec::new());
        }
        let info = super::cluster::cluster_info(b).await?;
        let peers = peers(&info, &b.config.broker_name);
        let asks = peers.into_iter().map(|peer| async move {
            let ask = Asker {
                client: &self.client,
                addr: &peer.addr,
                who,
            };
            let both = futures_util::future::join(rows(&ask, want), console_of(&ask));
            match tokio::time::timeout(PEER_TIMEOUT, both).await {
                Ok((rows, console)) => Answer {
                    peer,
                    console,
                    rows,
                },
                Err(_) => Answer {
                    peer,
                    console: None,
                    rows: Err(PeerError::Unreachable(format!(
                        "no answer within {} ms",
                        PEER_TIMEOUT.as_millis()
                    ))),
                },
            }
        });
        Ok(join_all(asks).await)
    }
}

/// What a page asked first, before it is drawn off the reactor.
pub(crate) enum Fetched {
    Nothing,
    /// The cluster page's brokers.
    Cluster(ClusterView),
    /// A cluster-wide page's rows of the other brokers.
    Others(Others),
}

impl Fetched {
    pub(crate) fn cluster(&self) -> Option<&ClusterView> {
        match self {
            Fetched::Cluster(view) => Some(view),
            _ => None,
        }
    }

    pub(crate) fn others(&self) -> Option<&Others> {
        match self {
            Fetched::Others(others) => Some(others),
            _ => None,
        }
    }
}

/// What page `r` needs from the name servers and the other brokers, asked as `viewer`.
pub(crate) async fn fetch(c: &Console, r: &HttpRequest, viewer: &Viewer) -> Fetched {
    let namespace = || {
        r.param("namespace")
            .map(|ns| ns.trim().to_owned())
            .filter(|ns| !ns.is_empty())
    };
    let p = |k: &str| r.param(k).unwrap_or_default().trim().to_owned();
    let want = match r.path.as_str() {
        "/" => return Fetched::Cluster(super::cluster::members(&c.broker).await),
        "/topics" => Want::Topics {
            namespace: namespace(),
        },
        "/groups" => Want::Groups {
            namespace: namespace(),
        },
        "/clients" => Want::Clients,
        "/messages" if !p("topic").is_empty() && (!p("id").is_empty() || !p("key").is_empty()) => {
            Want::Messages {
                topic: p("topic"),
                id: p("id"),
                key: p("key"),
            }
        }
        _ => return Fetched::Nothing,
    };
    Fetched::Others(
        c.remote
            .others(&c.broker, viewer.credentials(), &want)
            .await,
    )
}

/// One address of every broker group but `own`: its master (id 0), else its lowest id.
fn peers(info: &vostok_remoting::protocol::route::ClusterInfo, own: &str) -> Vec<Peer> {
    let mut out: Vec<Peer> = info
        .broker_addr_table
        .values()
        .filter(|data| data.broker_name != own)
        .filter_map(|data| {
            let (_, addr) = data.broker_addrs.iter().min_by_key(|(id, _)| **id)?;
            Some(Peer {
                name: data.broker_name.clone(),
                addr: addr.clone(),
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Whether `name` is shown under the page's `?namespace=` (everything without one).
pub(crate) fn in_namespace(namespace: Option<&str>, name: &str) -> bool {
    namespace.is_none_or(|ns| vostok_auth::namespace::is_in(ns, name))
}

/// Requests to one broker, signed as the viewer.
struct Asker<'a> {
    client: &'a RemotingClient,
    addr: &'a str,
    who: Option<&'a SessionCredentials>,
}

impl Asker<'_> {
    /// The answer to `request`, whatever its code.
    async fn answer(&self, mut request: RemotingCommand) -> Result<RemotingCommand, PeerError> {
        if let Some(who) = self.who {
            who.sign(&mut request);
        }
        self.client
            .invoke_sync(self.addr, request, PEER_TIMEOUT)
            .await
            .map_err(|e| PeerError::Unreachable(e.to_string()))
    }

    /// The answer to `request` when it succeeded.
    async fn ask(&self, request: RemotingCommand) -> Result<RemotingCommand, PeerError> {
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
    async fn messages_kept(&self, topic: &str) -> Option<i64> {
        let r = self
            .answer(with(code::GET_TOPIC_STATS_INFO, &[("topic", topic)]))
            .await;
        let r = r.ok()?;
        match r.code {
            response_code::SUCCESS => TopicStatsTable::decode(&r.body).ok().map(|t| {
                t.offset_table
                    .values()
                    .map(|q| (q.max_offset - q.min_offset).max(0))
                    .sum()
            }),
            response_code::TOPIC_NOT_EXIST => Some(0),
            _ => None,
        }
    }

    /// The group's consumers online (none: CONSUMER_NOT_ONLINE).
    async fn consumers(&self, group: &str) -> Option<ConsumerConnection> {
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
    async fn lag(&self, group: &str, now: i64) -> Option<(i64, i64)> {
        let request = with(code::GET_CONSUME_STATS, &[("consumerGroup", group)]);
        let r = self.ask(request).await.ok()?;
        let stats = ConsumeStats::decode(&r.body).ok()?;
        let behind = |q: &vostok_remoting::protocol::body::OffsetWrapper| {
            (q.broker_offset - q.consumer_offset).max(0)
        };
        let messages = stats.offset_table.values().map(behind).sum();
        let wait = stats
            .offset_table
            .values()
            .filter(|q| behind(q) > 0 && q.last_timestamp > 0)
            .map(|q| now - q.last_timestamp)
            .max()
            .unwrap_or(0);
        Some((messages, wait))
    }

    /// The operator's consumer groups (not the broker's own).
    async fn group_names(&self, namespace: Option<&str>) -> Result<Vec<String>, PeerError> {
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

    /// QUERY_MESSAGE for `key` in `topic` (a unique key when `unique`).
    async fn query(
        &self,
        topic: &str,
        key: &str,
        unique: bool,
    ) -> Result<Vec<MessageExt>, PeerError> {
        let header = QueryMessageRequestHeader {
            topic: topic.to_owned(),
            key: key.to_owned(),
            max_num: 32,
            begin_timestamp: 0,
            end_timestamp: i64::MAX,
            unique_key_query: unique.then_some(true),
        };
        let request = RemotingCommand::request_with_header(code::QUERY_MESSAGE, &header);
        let r = self.answer(request).await?;
        match r.code {
            response_code::SUCCESS => Ok(MessageExt::decode_all(&r.body)),
            response_code::QUERY_NOT_FOUND => Ok(Vec::new()),
            response_code::NO_PERMISSION => Err(PeerError::Refused(r.remark().to_owned())),
            code => Err(PeerError::Answer {
                code,
                remark: r.remark().to_owned(),
            }),
        }
    }
}

/// A request with these ext fields.
fn with(request_code: i32, fields: &[(&str, &str)]) -> RemotingCommand {
    let mut r = RemotingCommand::request(request_code);
    for (k, v) in fields {
        r.ext_fields.insert(k, v);
    }
    r
}

async fn rows(ask: &Asker<'_>, want: &Want) -> Result<Rows, PeerError> {
    match want {
        Want::Topics { namespace } => topics(ask, namespace.as_deref()).await.map(Rows::Topics),
        Want::Groups { namespace } => groups(ask, namespace.as_deref()).await.map(Rows::Groups),
        Want::Clients => clients(ask).await.map(Rows::Clients),
        Want::Messages { topic, id, key } => {
            messages(ask, topic, id, key).await.map(Rows::Messages)
        }
    }
}

async fn topics(ask: &Asker<'_>, namespace: Option<&str>) -> Result<Vec<TopicRow>, PeerError> {
    let r = ask
        .ask(RemotingCommand::request(code::GET_ALL_TOPIC_CONFIG))
        .await?;
    let all: TopicConfigSerializeWrapper = json::from_slice("TopicConfigSerializeWrapper", &r.body)
        .map_err(|e| PeerError::Unreadable(e.to_string()))?;
    let mut rows: Vec<TopicRow> = all
        .topic_config_table
        .into_iter()
        .filter(|(name, _)| in_namespace(namespace, name))
        .map(|(name, t)| TopicRow {
            name,
            read_queues: t.read_queue_nums,
            write_queues: t.write_queue_nums,
            perm: t.perm,
            messages: None,
        })
        .collect();
    let counts = join_all(
        rows.iter()
            .take(MAX_ASKED)
            .map(|t| ask.messages_kept(&t.name)),
    )
    .await;
    for (row, count) in rows.iter_mut().zip(counts) {
        row.messages = count;
    }
    Ok(rows)
}

async fn groups(ask: &Asker<'_>, namespace: Option<&str>) -> Result<Vec<GroupRow>, PeerError> {
    let names = ask.group_names(namespace).await?;
    let now = now_millis();
    let figures = join_all(names.iter().take(MAX_ASKED).map(|g| async move {
        let dlq = topic::dlq_topic(g);
        futures_util::join!(ask.lag(g, now), ask.messages_kept(&dlq), ask.consumers(g))
    }))
    .await;
    let mut figures = figures.into_iter();
    Ok(names
        .into_iter()
        .map(|name| {
            let (lag, dlq, online) = figures.next().unwrap_or((None, None, None));
            GroupRow {
                name,
                lag,
                dlq,
                clients: online.map(|c| c.connection_set.len()),
            }
        })
        .collect())
}

async fn clients(ask: &Asker<'_>) -> Result<Vec<ClientRow>, PeerError> {
    let names = ask.group_names(None).await?;
    let online = join_all(names.iter().take(MAX_ASKED).map(|g| ask.consumers(g))).await;
    Ok(names
        .iter()
        .zip(online)
        .filter_map(|(group, c)| Some((group, c?)))
        .flat_map(|(group, c)| {
            let consume_type = c.consume_type.map_or("", |t| t.name()).to_owned();
            c.connection_set.into_iter().map(move |x| ClientRow {
                group: group.clone(),
                client_id: x.client_id,
                addr: x.client_addr,
                language: x.language,
                version: x.version,
                consume_type: consume_type.clone(),
            })
        })
        .collect())
}

/// Messages of `topic` by `id` (a unique key, or an offset id of this broker) or `key`.
async fn messages(
    ask: &Asker<'_>,
    topic: &str,
    id: &str,
    key: &str,
) -> Result<Vec<BrowsedMessage>, PeerError> {
    let mut found: Vec<MessageExt> = Vec::new();
    if !id.is_empty() {
        found = ask.query(topic, id, true).await?;
        found.retain(|m| m.properties.uniq_key() == Some(id));
        let offset_id = decode_offset_msg_id(id)
            .ok()
            .filter(|(host, _)| host.to_string() == ask.addr);
        if let (true, Some((_, offset))) = (found.is_empty(), offset_id) {
            let header = [("offset", offset.to_string())];
            let fields: Vec<(&str, &str)> = header.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let r = ask.ask(with(code::VIEW_MESSAGE_BY_ID, &fields)).await;
            if let Ok(m) = r.and_then(|r| {
                MessageExt::decode(&r.body, false).map_err(|e| PeerError::Unreadable(e.to_string()))
            }) {
                found.extend(Some(m).filter(|m| m.topic == topic));
            }
        }
    } else if !key.is_empty() {
        found = ask.query(topic, key, false).await?;
        found.retain(|m| {
            m.properties
                .get(vostok_remoting::protocol::message::property::KEYS)
                .is_some_and(|keys| keys.split(' ').any(|k| k == key))
        });
    }
    found.sort_by_key(|m| (m.store_timestamp, m.commit_log_offset));
    Ok(found.iter().map(crate::state::browse::browsed).collect())
}

/// The broker's console address from GET_BROKER_CONFIG, when it serves one on a
/// fixed port: `consoleHost` unless it is a wildcard, else the broker's own host.
async fn console_of(ask: &Asker<'_>) -> Option<String> {
    let r = ask
        .ask(RemotingCommand::request(code::GET_BROKER_CONFIG))
        .await
        .ok()?;
    let text = String::from_utf8_lossy(&r.body);
    let config: BTreeMap<&str, &str> = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim(), v.trim()))
        .collect();
    console_addr(&config, ask.addr)
}

fn console_addr(config: &BTreeMap<&str, &str>, broker_addr: &str) -> Option<String> {
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
    Some(format!("http://{host}:{port}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use vostok_remoting::protocol::route::{BrokerData, ClusterInfo};

    #[test]
    fn the_console_address_needs_a_fixed_port_and_the_console_on() {
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
        ] {
            assert_eq!(console_addr(&off, at), None);
        }
    }

    #[test]
    fn each_other_group_is_asked_once_at_its_master() {
        let mut info = ClusterInfo::default();
        for (name, addrs) in [
            ("own", vec![(0, "a:1")]),
            ("b", vec![(1, "b-slave:1"), (0, "b-master:1")]),
            ("c", vec![(2, "c2:1"), (1, "c1:1")]),
        ] {
            info.broker_addr_table.insert(
                name.to_owned(),
                BrokerData {
                    cluster: "C".into(),
                    broker_name: name.to_owned(),
                    broker_addrs: addrs
                        .into_iter()
                        .map(|(id, a)| (id, a.to_owned()))
                        .collect(),
                    ..Default::default()
                },
            );
        }
        let got: Vec<(String, String)> = peers(&info, "own")
            .into_iter()
            .map(|p| (p.name, p.addr))
            .collect();
        assert_eq!(
            got,
            [
                ("b".to_owned(), "b-master:1".to_owned()),
                ("c".to_owned(), "c1:1".to_owned())
            ]
        );
        assert_eq!(
            PeerError::Unreachable("connect refused".into()).to_string(),
            "unreachable: connect refused"
        );
    }
}
