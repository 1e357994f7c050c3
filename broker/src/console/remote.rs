//! The other broker groups' rows of the cluster-wide pages
//! (docs/operations.md#one-console-for-the-cluster): topics, groups, clients and
//! message searches of every broker group the name servers know, asked with the admin
//! requests mqadmin sends (GET_ALL_TOPIC_CONFIG, GET_TOPIC_STATS_INFO,
//! GET_ALL_SUBSCRIPTIONGROUP_CONFIG, GET_CONSUME_STATS, GET_CONSUMER_CONNECTION_LIST,
//! QUERY_MESSAGE, VIEW_MESSAGE_BY_ID; GET_TOPIC_CONFIG per topic the viewer may read
//! when a broker refuses it the topic list), and each one's console address
//! (GET_BROKER_CONFIG: `consoleEnable`, `consolePort`, `consoleHost`).
//!
//! Every broker group is asked at once, each within [`PEER_TIMEOUT`] in all: one that
//! does not answer is a row "unreachable: why", never a stalled page, and its
//! connection is closed so that the next page starts afresh. Answers are bounded: an
//! answer over [`PEER_MAX_FRAME`] closes its connection, every answer being read
//! waits for room in the console's own [`PEER_MEMORY`] (never the broker's), and at
//! most [`MAX_ROWS`] rows of one broker are drawn. With ACL on, each
//! request is signed with the signed-in account's keys, so that its own rights apply
//! on the other broker; with ACL off, requests are plain. The requests go through a
//! client of their own, with the broker's TLS settings and without the broker's own
//! signing hook, so that no request carries the broker's rights.

use std::time::Duration;

use futures_util::future::join_all;
use vostok_remoting::auth::SessionCredentials;
use vostok_remoting::protocol::body::{BrowsedMessage, TopicConfigSerializeWrapper, TopicList};
use vostok_remoting::protocol::message::id::decode_offset_msg_id;
use vostok_remoting::protocol::message::{property, MessageExt};
use vostok_remoting::protocol::{json, request_code as code, topic};
use vostok_remoting::support::time::now_millis;
use vostok_remoting::{MemoryBudget, RemotingClient, RemotingCommand, RemotingError};

use self::ask::Asker;
use super::viewer::Viewer;
use super::{ClusterView, Console};
use crate::state::Broker;
use vostok_observe::http::HttpRequest;

/// How long the page waits for one other broker, all its requests together.
pub(crate) const PEER_TIMEOUT: Duration = Duration::from_millis(1500);
/// Topics or groups of one broker whose figures are asked for; rows past it show `-`.
const MAX_ASKED: usize = 256;
/// Rows of one other broker drawn on a page; the rest are counted, not drawn.
pub(crate) const MAX_ROWS: usize = 1000;
/// The largest answer read from another broker; a larger one closes its connection.
pub(crate) const PEER_MAX_FRAME: usize = 8 << 20;
/// The memory every answer being read from the other brokers shares, all pages
/// together: an answer waits for room in it, and is dropped with its page at the latest.
pub(crate) const PEER_MEMORY: usize = 32 << 20;

mod ask;

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
        /// Topics to ask one by one of a broker that refuses the viewer its listing:
        /// those the name servers list that the viewer may read here.
        readable: Vec<String>,
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
    /// Rows past [`MAX_ROWS`], not drawn.
    pub(crate) left_off: usize,
}

/// Every other broker's answer, or why the name servers could not list them.
pub(crate) type Others = Result<Vec<Answer>, String>;

/// The client the console asks other brokers with.
pub(crate) struct Remote {
    client: RemotingClient,
}

impl Remote {
    /// A client with `b`'s outgoing settings (TLS, runtime), without its signing hook,
    /// reading answers of at most [`PEER_MAX_FRAME`] into [`PEER_MEMORY`] of its own.
    pub(crate) fn new(b: &Broker) -> Self {
        let mut config = b.namesrv.client.config().clone();
        config.connection.limits.max_frame = PEER_MAX_FRAME;
        config.connection.frame_read_timeout = PEER_TIMEOUT;
        config.connection.budget = MemoryBudget::new(PEER_MEMORY, PEER_MEMORY);
        Remote {
            client: RemotingClient::new(config, None),
        }
    }

    /// `request` to `addr`, signed with `who`, answered within `timeout`; a connection
    /// that did not answer in time is closed, for the next call to start afresh.
    pub(crate) async fn call(
        &self,
        addr: &str,
        mut request: RemotingCommand,
        who: Option<&SessionCredentials>,
        timeout: Duration,
    ) -> Result<RemotingCommand, RemotingError> {
        if let Some(who) = who {
            who.sign(&mut request);
        }
        let r = self.client.invoke_sync(addr, request, timeout).await;
        if matches!(r, Err(RemotingError::Timeout { .. })) {
            self.client.close_channel(addr);
        }
        r
    }

    /// `want` of every broker group but `b`'s own, all at once, signed with `who`.
    pub(crate) async fn others(
        &self,
        b: &Broker,
        who: Option<&SessionCredentials>,
        want: &Want,
    ) -> Others {
        if b.namesrv.addrs.is_empty() {
            return Ok(Vec::new());
        }
        let info = super::cluster::cluster_info(b).await?;
        let peers = peers(&info, &b.config.broker_name);
        let asks = peers.into_iter().map(|peer| async move {
            let ask = Asker {
                remote: self,
                addr: &peer.addr,
                who,
            };
            let both = futures_util::future::join(rows(&ask, want), ask.console());
            match tokio::time::timeout(PEER_TIMEOUT, both).await {
                Ok((rows, console)) => {
                    let (rows, left_off) = match rows {
                        Ok((rows, left_off)) => (Ok(rows), left_off),
                        Err(why) => (Err(why), 0),
                    };
                    Answer {
                        peer,
                        console,
                        rows,
                        left_off,
                    }
                }
                Err(_) => {
                    // Whatever it was sending is not waited for: the next page reconnects.
                    self.client.close_channel(&peer.addr);
                    Answer {
                        peer,
                        console: None,
                        rows: Err(PeerError::Unreachable(format!(
                            "no answer within {} ms",
                            PEER_TIMEOUT.as_millis()
                        ))),
                        left_off: 0,
                    }
                }
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
        "/" => {
            let who = viewer.credentials();
            return Fetched::Cluster(super::cluster::members(&c.broker, &c.remote, who).await);
        }
        "/topics" => Want::Topics {
            readable: readable_topics(c, viewer, namespace().as_deref()).await,
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

/// The topics the name servers list to the viewer (GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
/// that it may read here, in `namespace` when given; at most [`MAX_ASKED`]. None for a
/// viewer with the right to list topics, and with ACL off.
async fn readable_topics(c: &Console, viewer: &Viewer, namespace: Option<&str>) -> Vec<String> {
    let b = &c.broker;
    let lister = viewer.may(code::GET_ALL_TOPIC_CONFIG, vostok_auth::Access::Admin);
    if viewer.credentials().is_none() || lister {
        return Vec::new();
    }
    for addr in &b.namesrv.addrs {
        let request = RemotingCommand::request(code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
        let who = viewer.credentials();
        let Ok(r) = c.remote.call(addr, request, who, PEER_TIMEOUT).await else {
            continue;
        };
        let Ok(list) = json::from_slice::<TopicList>("TopicList", &r.body) else {
            continue;
        };
        return list
            .topic_list
            .into_iter()
            .filter(|t| in_namespace(namespace, t) && viewer.reads_topic(t))
            .take(MAX_ASKED)
            .collect();
    }
    Vec::new()
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

/// The rows `want` asks of one broker, at most [`MAX_ROWS`], and how many more it has.
async fn rows(ask: &Asker<'_>, want: &Want) -> Result<(Rows, usize), PeerError> {
    Ok(match want {
        Want::Topics {
            namespace,
            readable,
        } => {
            let (rows, more) = topics(ask, namespace.as_deref(), readable).await?;
            (Rows::Topics(rows), more)
        }
        Want::Groups { namespace } => {
            let (rows, more) = groups(ask, namespace.as_deref()).await?;
            (Rows::Groups(rows), more)
        }
        Want::Clients => {
            let (rows, more) = capped(clients(ask).await?);
            (Rows::Clients(rows), more)
        }
        Want::Messages { topic, id, key } => {
            (Rows::Messages(messages(ask, topic, id, key).await?), 0)
        }
    })
}

/// The first [`MAX_ROWS`] of `rows`, and how many there were past them.
fn capped<T>(mut rows: Vec<T>) -> (Vec<T>, usize) {
    let more = rows.len().saturating_sub(MAX_ROWS);
    rows.truncate(MAX_ROWS);
    (rows, more)
}

/// The topics of one broker; when it refuses the viewer its listing, those of
/// `readable` it answers the viewer about one by one (GET_TOPIC_CONFIG).
async fn topics(
    ask: &Asker<'_>,
    namespace: Option<&str>,
    readable: &[String],
) -> Result<(Vec<TopicRow>, usize), PeerError> {
    let r = match ask
        .ask(RemotingCommand::request(code::GET_ALL_TOPIC_CONFIG))
        .await
    {
        Err(PeerError::Refused(why)) => {
            let each = join_all(readable.iter().map(|t| ask.topic(t))).await;
            let rows: Vec<TopicRow> = each.into_iter().flatten().collect();
            return match rows.is_empty() {
                true => Err(PeerError::Refused(why)),
                false => Ok((rows, 0)),
            };
        }
        r => r?,
    };
    let all: TopicConfigSerializeWrapper = json::from_slice("TopicConfigSerializeWrapper", &r.body)
        .map_err(|e| PeerError::Unreadable(e.to_string()))?;
    let (mut rows, more) = capped(
        all.topic_config_table
            .into_iter()
            .filter(|(name, _)| in_namespace(namespace, name))
            .map(|(name, t)| TopicRow {
                name,
                read_queues: t.read_queue_nums,
                write_queues: t.write_queue_nums,
                perm: t.perm,
                messages: None,
            })
            .collect(),
    );
    let counts = join_all(
        rows.iter()
            .take(MAX_ASKED)
            .map(|t| ask.messages_kept(&t.name)),
    )
    .await;
    for (row, count) in rows.iter_mut().zip(counts) {
        row.messages = count;
    }
    Ok((rows, more))
}

async fn groups(
    ask: &Asker<'_>,
    namespace: Option<&str>,
) -> Result<(Vec<GroupRow>, usize), PeerError> {
    let (names, more) = capped(ask.group_names(namespace).await?);
    let now = now_millis();
    let figures = join_all(names.iter().take(MAX_ASKED).map(|g| async move {
        let dlq = topic::dlq_topic(g);
        futures_util::join!(ask.lag(g, now), ask.messages_kept(&dlq), ask.consumers(g))
    }))
    .await;
    let mut figures = figures.into_iter();
    let rows = names
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
        .collect();
    Ok((rows, more))
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
            found.extend(ask.view(offset).await.filter(|m| m.topic == topic));
        }
    } else if !key.is_empty() {
        found = ask.query(topic, key, false).await?;
        found.retain(|m| {
            m.properties
                .get(property::KEYS)
                .is_some_and(|keys| keys.split(property::KEY_SEPARATOR).any(|k| k == key))
        });
    }
    found.sort_by_key(|m| (m.store_timestamp, m.commit_log_offset));
    Ok(found.iter().map(ask::found).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use vostok_remoting::protocol::route::{BrokerData, ClusterInfo};

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
