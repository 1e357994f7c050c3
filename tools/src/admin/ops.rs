//! Vostok's operations verbs (a Vostok broker's VOSTOK_* requests): `messageStatus`
//! ("where is my message"), `browseMessage`, `removeMessage`, `resendDlqMessage`,
//! `connectedClients`. Each asks the master of every broker that hosts the topic (or,
//! for group-wide verbs, every master); `--json` prints the brokers' answers as JSON.

use clap::Args;
use vostok_client::AdminClient;
use vostok_remoting::protocol::body::{BrowsedMessage, MessageStatus};
use vostok_remoting::protocol::header::BrowseMessagesRequestHeader;
use vostok_remoting::protocol::request_code::{
    VOSTOK_BROWSE_MESSAGES, VOSTOK_GET_CONNECTED_CLIENTS, VOSTOK_MESSAGE_STATUS,
    VOSTOK_REMOVE_MESSAGE, VOSTOK_RESEND_DLQ_MESSAGE,
};

use super::cluster::cluster_info;
use super::error::{during, AdminError};
use super::output::JsonFlag;
use super::table::{format_millis, Table};
use super::topic::route;

#[derive(Args, Debug, Clone)]
pub struct MessageStatusArgs {
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Offset message id or unique (client) id.
    #[arg(
        short = 'i',
        long = "msgId",
        value_name = "MSGID",
        required_unless_present = "key"
    )]
    pub msg_id: Option<String>,
    /// One of the message's keys.
    #[arg(short = 'k', long = "msgKey", value_name = "KEY")]
    pub key: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct BrowseMessageArgs {
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Start after this group's committed offsets (each queue's start without it).
    #[arg(short = 'g', long = "consumerGroup", value_name = "GROUP")]
    pub group: Option<String>,
    /// Only this queue.
    #[arg(short = 'q', long = "queueId")]
    pub queue_id: Option<i32>,
    /// Most messages per broker.
    #[arg(short = 'c', long = "count", default_value_t = 32)]
    pub count: i32,
}

#[derive(Args, Debug, Clone)]
pub struct RemoveMessageArgs {
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// The broker holding the message (needed when the topic is on several).
    #[arg(short = 'b', long = "brokerName")]
    pub broker_name: Option<String>,
    #[arg(short = 'q', long = "queueId")]
    pub queue_id: i32,
    #[arg(short = 'o', long = "offset", value_name = "QUEUE_OFFSET")]
    pub offset: i64,
}

#[derive(Args, Debug, Clone)]
pub struct ResendDlqMessageArgs {
    /// The consumer group whose DLQ holds the message.
    #[arg(short = 'g', long = "consumerGroup", value_name = "GROUP")]
    pub group: String,
    /// The DLQ copy's offset message id, or the message's unique id.
    #[arg(short = 'i', long = "msgId", value_name = "MSGID")]
    pub msg_id: String,
}

#[derive(Args, Debug, Clone)]
pub struct ConnectedClientsArgs {}

/// `(broker name, master address)` of the brokers hosting `topic`.
async fn topic_masters(
    admin: &AdminClient,
    topic: &str,
) -> Result<Vec<(String, String)>, AdminError> {
    let route = route(admin, topic).await?;
    Ok(route
        .broker_datas
        .iter()
        .filter_map(|b| Some((b.broker_name.clone(), b.master_addr()?.to_owned())))
        .collect())
}

/// Every master of the cluster.
async fn all_masters(admin: &AdminClient) -> Result<Vec<(String, String)>, AdminError> {
    let info = cluster_info(admin).await?;
    Ok(info
        .broker_addr_table
        .iter()
        .filter_map(|(name, b)| Some((name.clone(), b.master_addr()?.to_owned())))
        .collect())
}

/// `messageStatus`.
pub async fn message_status(
    admin: &AdminClient,
    a: &MessageStatusArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let mut answers = Vec::new();
    for (_, addr) in topic_masters(admin, &a.topic).await? {
        let body = admin
            .message_status(&addr, &a.topic, a.msg_id.as_deref(), a.key.as_deref())
            .await
            .map_err(during(VOSTOK_MESSAGE_STATUS))?;
        answers.push(body);
    }
    if out.json {
        return out.render(&answers, |_| String::new());
    }
    let mut text = String::new();
    let mut found = 0;
    for answer in &answers {
        for m in &answer.messages {
            found += 1;
            text.push_str(&status_text(&answer.broker_name, m));
        }
    }
    if found == 0 {
        return Err(AdminError::NotFound(format!(
            "no message {} in topic {} on any broker",
            a.msg_id.as_deref().or(a.key.as_deref()).unwrap_or(""),
            a.topic
        )));
    }
    if let Some(answer) = answers.first() {
        text.push_str("\nWhat the broker cannot know:\n");
        for u in &answer.unknowable {
            text.push_str(&format!("  - {u}\n"));
        }
    }
    Ok(text)
}

fn status_text(broker: &str, m: &MessageStatus) -> String {
    let mut out = format!(
        "Message {} (unique id {}, keys {}, tags {})\n  stored on {broker}, topic {}, queue {}, offset {}, at {}\n",
        m.msg_id,
        if m.uniq_key.is_empty() { "-" } else { &m.uniq_key },
        if m.keys.is_empty() { "-" } else { &m.keys },
        if m.tags.is_empty() { "-" } else { &m.tags },
        m.topic,
        m.queue_id,
        m.queue_offset,
        format_millis(m.store_timestamp)
    );
    if m.removed {
        out.push_str("  REMOVED by an operator: no group receives it\n");
    }
    let mut t = Table::new(&[
        "#Group",
        "#Filter",
        "#State",
        "#Committed",
        "#Retries",
        "#Reconsume",
        "#DLQ",
    ]);
    for g in &m.groups {
        t.row(vec![
            g.group.clone(),
            g.filter.clone(),
            g.state.clone(),
            g.committed_offset.to_string(),
            g.retries.to_string(),
            g.reconsume_times.to_string(),
            if g.in_dlq {
                g.dlq_msg_id.clone()
            } else {
                String::new()
            },
        ]);
    }
    out.push_str(&t.render());
    for g in &m.groups {
        out.push_str(&format!("  {}: {}\n", g.group, g.explanation));
    }
    out
}

/// `browseMessage`.
pub async fn browse_message(
    admin: &AdminClient,
    a: &BrowseMessageArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let mut all: Vec<(String, BrowsedMessage)> = Vec::new();
    for (name, addr) in topic_masters(admin, &a.topic).await? {
        let header = BrowseMessagesRequestHeader {
            topic: a.topic.clone(),
            group: a.group.clone(),
            queue_id: a.queue_id,
            max_count: Some(a.count),
        };
        let body = admin
            .browse_messages(&addr, header)
            .await
            .map_err(during(VOSTOK_BROWSE_MESSAGES))?;
        all.extend(body.messages.into_iter().map(|m| (name.clone(), m)));
    }
    if out.json {
        let list: Vec<&BrowsedMessage> = all.iter().map(|(_, m)| m).collect();
        return out.render(&list, |_| String::new());
    }
    let mut t = Table::new(&[
        "#Broker",
        "#QID",
        "#Offset",
        "#MsgId",
        "#Keys",
        "#Tags",
        "#StoreTime",
        "#Size",
    ]);
    for (broker, m) in &all {
        t.row(vec![
            broker.clone(),
            m.queue_id.to_string(),
            m.queue_offset.to_string(),
            m.msg_id.clone(),
            m.keys.replace(' ', ","),
            m.tags.clone(),
            format_millis(m.store_timestamp),
            m.body_size.to_string(),
        ]);
    }
    Ok(t.render())
}

/// `removeMessage`.
pub async fn remove_message(
    admin: &AdminClient,
    a: &RemoveMessageArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let masters = topic_masters(admin, &a.topic).await?;
    let target = match &a.broker_name {
        Some(b) => masters.iter().find(|(name, _)| name == b),
        None if masters.len() == 1 => masters.first(),
        None => {
            return Err(AdminError::Invalid(format!(
                "topic {} is on {} brokers: say which with -b",
                a.topic,
                masters.len()
            )))
        }
    };
    let (name, addr) =
        target.ok_or_else(|| AdminError::NotFound("no such broker for the topic".into()))?;
    let r = admin
        .remove_message(addr, &a.topic, a.queue_id, a.offset)
        .await
        .map_err(during(VOSTOK_REMOVE_MESSAGE))?;
    let text = format!(
        "removed {} from {name}: topic {}, queue {}, offset {}\n",
        r.msg_id, r.topic, r.queue_id, r.queue_offset
    );
    out.render(&r, |_| text)
}

/// `resendDlqMessage`: tries each master until one holds the message.
pub async fn resend_dlq_message(
    admin: &AdminClient,
    a: &ResendDlqMessageArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let mut last = None;
    for (name, addr) in all_masters(admin).await? {
        match admin.resend_dlq_message(&addr, &a.group, &a.msg_id).await {
            Ok(r) => {
                let text = format!(
                    "resent from {name}: now {} in topic {}, queue {}, offset {}\n",
                    r.msg_id, r.topic, r.queue_id, r.queue_offset
                );
                return out.render(&r, |_| text);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(e) => during(VOSTOK_RESEND_DLQ_MESSAGE)(e),
        None => AdminError::NotFound("no master broker online".into()),
    })
}

/// `connectedClients`: every application connected to a master.
pub async fn connected_clients(
    admin: &AdminClient,
    _args: &ConnectedClientsArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let mut t = Table::new(&[
        "#Broker",
        "#Role",
        "#Group",
        "#ClientId",
        "#ClientAddr",
        "#Language",
        "#Version",
        "#Consume",
        "#LastHeartbeatMs",
    ]);
    let mut all = Vec::new();
    for (name, addr) in all_masters(admin).await? {
        let body = admin
            .connected_clients(&addr)
            .await
            .map_err(during(VOSTOK_GET_CONNECTED_CLIENTS))?;
        for c in body.clients {
            t.row(vec![
                name.clone(),
                c.role.clone(),
                c.group.clone(),
                c.client_id.clone(),
                c.addr.clone(),
                c.language.clone(),
                c.version.to_string(),
                c.consume_type.clone(),
                c.last_heartbeat_ms_ago.to_string(),
            ]);
            all.push(c);
        }
    }
    out.render(&all, |_| t.render())
}
