//! `cloneGroupOffset` and `getConsumerStatus`: copying one group's committed offsets
//! of a topic to another group, and the offsets each online consumer of a group holds
//! (Apache's `offset` commands).

use clap::Args;
use serde::Serialize;
use vostok_client::{AdminClient, MessageQueue};
use vostok_remoting::protocol::request_code::{
    INVOKE_BROKER_TO_GET_CONSUMER_STATUS, QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET,
};
use vostok_remoting::protocol::topic;

use super::error::{during, AdminError};
use super::output::JsonFlag;
use super::table::Table;
use super::topic::{broker_queues, route};

#[derive(Args, Debug, Clone)]
pub struct CloneGroupOffsetArgs {
    /// The group whose offsets are copied.
    #[arg(short = 's', long = "srcGroup", value_name = "GROUP")]
    pub src_group: String,
    /// The group that gets them.
    #[arg(short = 'd', long = "destGroup", value_name = "GROUP")]
    pub dest_group: String,
    /// The topic whose offsets are copied.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Accepted for Apache's command line; the copy is the same either way.
    #[arg(short = 'o', long = "offline", value_name = "BOOL")]
    pub offline: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct GetConsumerStatusArgs {
    /// Consumer group.
    #[arg(short = 'g', long = "group", value_name = "GROUP")]
    pub group: String,
    /// Topic.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Only this client (its client id).
    #[arg(short = 'i', long = "originClientId", value_name = "CLIENT_ID")]
    pub client_id: Option<String>,
}

/// One queue's offset copied from the source group.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Cloned {
    broker_name: String,
    queue_id: i32,
    offset: i64,
}

/// QUERY_CONSUMER_OFFSET of the source group on each queue of the topic's route and,
/// where it committed one, UPDATE_CONSUMER_OFFSET of the same offset for the
/// destination group. Queues the source never committed are left alone.
pub async fn clone_group_offset(
    admin: &AdminClient,
    args: &CloneGroupOffsetArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    for group in [&args.src_group, &args.dest_group] {
        topic::validate_group(group).map_err(AdminError::Invalid)?;
    }
    let route = route(admin, &args.topic).await?;
    let mut cloned = Vec::new();
    for (broker_name, addr, queues) in broker_queues(&route) {
        for queue_id in 0..queues {
            let mq = MessageQueue::new(&args.topic, &broker_name, queue_id);
            let offset = admin
                .query_consumer_offset(&addr, &args.src_group, &mq)
                .await
                .map_err(during(QUERY_CONSUMER_OFFSET))?;
            let Some(offset) = offset.filter(|o| *o >= 0) else {
                continue;
            };
            admin
                .update_consumer_offset(&addr, &args.dest_group, &mq, offset)
                .await
                .map_err(during(UPDATE_CONSUMER_OFFSET))?;
            cloned.push(Cloned {
                broker_name: broker_name.clone(),
                queue_id,
                offset,
            });
        }
    }
    let text = format!(
        "clone group offset success. srcGroup[{}], destGroup=[{}], topic[{}]: {} queues\n",
        args.src_group,
        args.dest_group,
        args.topic,
        cloned.len()
    );
    out.render(&cloned, |_| text)
}

/// One queue as a client holds it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ClientOffset {
    client_id: String,
    broker_name: String,
    queue_id: i32,
    offset: i64,
}

/// INVOKE_BROKER_TO_GET_CONSUMER_STATUS to the first broker of the topic's route that
/// answers: it asks each online client of the group (every consumer heartbeats to
/// every broker) for the offsets it holds.
pub async fn get_consumer_status(
    admin: &AdminClient,
    args: &GetConsumerStatusArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let route = route(admin, &args.topic).await?;
    let mut last = None;
    let mut table = None;
    for broker in &route.broker_datas {
        let Some(addr) = broker.select_addr() else {
            continue;
        };
        match admin
            .get_consume_status(addr, &args.topic, &args.group, args.client_id.as_deref())
            .await
        {
            Ok(t) => {
                table = Some(t);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let table = match (table, last) {
        (Some(t), _) => t,
        (None, Some(e)) => return Err(during(INVOKE_BROKER_TO_GET_CONSUMER_STATUS)(e)),
        (None, None) => {
            return Err(AdminError::NotFound(format!(
                "topic {} has no broker online",
                args.topic
            )))
        }
    };
    let rows: Vec<ClientOffset> = table
        .consumer_table
        .into_iter()
        .flat_map(|(client_id, queues)| {
            queues.into_iter().map(move |(mq, offset)| ClientOffset {
                client_id: client_id.clone(),
                broker_name: mq.broker_name,
                queue_id: mq.queue_id,
                offset,
            })
        })
        .collect();
    out.render(&rows, |rows| {
        let mut text = format!(
            "get consumer status from client. group={}, topic={}, originClientId={}\n",
            args.group,
            args.topic,
            args.client_id.as_deref().unwrap_or("")
        );
        let mut t = Table::new(&["#clientId", "#brokerName", "#queueId", "#offset"]);
        for r in rows {
            t.row(vec![
                r.client_id.clone(),
                r.broker_name.clone(),
                r.queue_id.to_string(),
                r.offset.to_string(),
            ]);
        }
        text.push_str(&t.render());
        text
    })
}
