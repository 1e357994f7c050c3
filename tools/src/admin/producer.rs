//! `producerConnection`: who is online in a producer group, asked of every broker of a
//! topic's route (GET_PRODUCER_CONNECTION_LIST) as RocketMQ's
//! `examineProducerConnectionInfo` does, merged by client id.

use std::collections::BTreeMap;

use clap::Args;
use vostok_client::AdminClient;
use vostok_remoting::protocol::body::Connection;
use vostok_remoting::protocol::request_code::GET_PRODUCER_CONNECTION_LIST;
use vostok_remoting::protocol::response_code::SYSTEM_ERROR;

use super::error::{during, unless_answered, AdminError};
use super::output::JsonFlag;
use super::topic::route;

#[derive(Args, Debug, Clone)]
pub struct ProducerConnectionArgs {
    /// Producer group.
    #[arg(short = 'g', long = "producerGroup", value_name = "GROUP")]
    pub group: String,
    /// A topic the group sends to (its route names the brokers to ask).
    #[arg(short = 't', long = "topic")]
    pub topic: String,
}

pub async fn producer_connection(
    admin: &AdminClient,
    args: &ProducerConnectionArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let route = route(admin, args.topic.trim()).await?;
    let mut clients: BTreeMap<String, Connection> = BTreeMap::new();
    for broker in &route.broker_datas {
        let Some(addr) = broker.master_addr() else {
            continue;
        };
        // A broker where the group has nobody answers SYSTEM_ERROR ("not exist").
        let answer = unless_answered(
            admin
                .examine_producer_connection_info(addr, args.group.trim())
                .await,
            &[SYSTEM_ERROR],
        )
        .map_err(during(GET_PRODUCER_CONNECTION_LIST))?;
        for c in answer.into_iter().flat_map(|a| a.connection_set) {
            clients.insert(c.client_id.clone(), c);
        }
    }
    if clients.is_empty() {
        return Err(AdminError::NotFound(format!(
            "producer group {} has no client online on the brokers of {}",
            args.group, args.topic
        )));
    }
    let clients: Vec<Connection> = clients.into_values().collect();
    out.render(&clients, |clients| {
        clients
            .iter()
            .enumerate()
            .map(|(i, c)| {
                format!(
                    "{:04}  {:<32} {:<22} {:<8} {}\n",
                    i + 1,
                    c.client_id,
                    c.client_addr,
                    c.language,
                    c.version
                )
            })
            .collect()
    })
}
