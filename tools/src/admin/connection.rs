//! `consumerConnection`: who is online in a consumer group (remoting and gRPC clients
//! alike), with the language each client speaks, and what the group subscribes.

use clap::Args;
use std::collections::BTreeMap;

use vostok_client::AdminClient;
use vostok_remoting::protocol::request_code::GET_CONSUMER_CONNECTION_LIST;
use vostok_remoting::protocol::response_code::CONSUMER_NOT_ONLINE;
use vostok_remoting::protocol::topic;

use super::cluster::cluster_info;
use super::error::{during, unless_answered, AdminError};
use super::output::JsonFlag;
use super::table::Table;

#[derive(Args, Debug, Clone)]
pub struct ConsumerConnectionArgs {
    /// Consumer group.
    #[arg(short = 'g', long = "consumerGroup", value_name = "GROUP")]
    pub group: String,
}

/// GET_CONSUMER_CONNECTION_LIST on every master, merged: the clients, then the
/// subscriptions and the group's consume type and model, as RocketMQ's
/// `consumerConnection` prints them.
pub async fn consumer_connection(
    admin: &AdminClient,
    args: &ConsumerConnectionArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    topic::validate_group(&args.group).map_err(AdminError::Invalid)?;
    let info = cluster_info(admin).await?;
    let mut clients = Table::new(&["#", "#ClientId", "#ClientAddr", "#Language", "#Version"]);
    let mut all = Vec::new();
    let mut subscriptions = BTreeMap::new();
    let mut kind = None;
    let mut n = 0;
    for broker in info.broker_addr_table.values() {
        let Some(addr) = broker.master_addr() else {
            continue;
        };
        let connection = unless_answered(
            admin
                .examine_consumer_connection_info(addr, &args.group)
                .await,
            &[CONSUMER_NOT_ONLINE],
        )
        .map_err(during(GET_CONSUMER_CONNECTION_LIST))?;
        let Some(connection) = connection else {
            continue;
        };
        for c in connection.connection_set {
            n += 1;
            clients.row(vec![
                n.to_string(),
                c.client_id.clone(),
                c.client_addr.clone(),
                c.language.clone(),
                c.version.to_string(),
            ]);
            all.push(c);
        }
        for (t, sub) in connection.subscription_table {
            subscriptions.insert(t, sub.sub_string);
        }
        kind = kind.or(connection
            .consume_type
            .map(|t| (t, connection.message_model, connection.consume_from_where)));
    }
    if n == 0 {
        return Err(AdminError::NotFound(format!(
            "consumer group {} has no client online",
            args.group
        )));
    }
    if out.json {
        let (consume_type, model, from) = match kind {
            Some((t, m, f)) => (Some(t.name()), m.map(|m| m.name()), f.map(|f| f.name())),
            None => (None, None, None),
        };
        let doc = serde_json::json!({
            "connectionSet": all,
            "subscriptionTable": subscriptions,
            "consumeType": consume_type,
            "messageModel": model,
            "consumeFromWhere": from,
        });
        return out.render(&doc, |_| String::new());
    }
    let mut out = clients.render();
    out.push_str("\nBelow is subscription:\n");
    let mut subs = Table::new(&["#", "#Topic", "#SubExpression"]);
    for (i, (t, expression)) in subscriptions.into_iter().enumerate() {
        subs.row(vec![(i + 1).to_string(), t, expression]);
    }
    out.push_str(&subs.render());
    if let Some((consume_type, model, from)) = kind {
        out.push_str(&format!("\nConsumeType: {}\n", consume_type.name()));
        if let Some(model) = model {
            out.push_str(&format!("MessageModel: {}\n", model.name()));
        }
        if let Some(from) = from {
            out.push_str(&format!("ConsumeFromWhere: {}\n", from.name()));
        }
    }
    Ok(out)
}
