//! The name-server verbs: `getNamesrvConfig`, `updateNamesrvConfig`,
//! `updateKvConfig`, `deleteKvConfig`, `wipeWritePerm`, `addWritePerm`, each asked of
//! every name server of `-n` in turn, printed as RocketMQ's commands print them.

use std::collections::BTreeMap;

use clap::Args;
use serde::Serialize;
use vostok_client::AdminClient;
use vostok_remoting::protocol::request_code::{
    ADD_WRITE_PERM_OF_BROKER, DELETE_KV_CONFIG, GET_NAMESRV_CONFIG, PUT_KV_CONFIG,
    UPDATE_NAMESRV_CONFIG, WIPE_WRITE_PERM_OF_BROKER,
};

use super::error::{during, AdminError};
use super::output::JsonFlag;

#[derive(Args, Debug, Clone)]
pub struct GetNamesrvConfigArgs {}

#[derive(Args, Debug, Clone)]
pub struct UpdateNamesrvConfigArgs {
    /// The key, as in namesrv.conf.
    #[arg(short = 'k', long = "key")]
    pub key: String,
    /// Its new value.
    #[arg(short = 'v', long = "value")]
    pub value: String,
}

#[derive(Args, Debug, Clone)]
pub struct UpdateKvConfigArgs {
    /// Namespace.
    #[arg(short = 's', long = "namespace")]
    pub namespace: String,
    /// Key.
    #[arg(short = 'k', long = "key")]
    pub key: String,
    /// Value.
    #[arg(short = 'v', long = "value")]
    pub value: String,
}

#[derive(Args, Debug, Clone)]
pub struct DeleteKvConfigArgs {
    /// Namespace.
    #[arg(short = 's', long = "namespace")]
    pub namespace: String,
    /// Key.
    #[arg(short = 'k', long = "key")]
    pub key: String,
}

#[derive(Args, Debug, Clone)]
pub struct WritePermArgs {
    /// Broker name (all its brokers, master and slaves).
    #[arg(short = 'b', long = "brokerName", value_name = "NAME")]
    pub broker_name: String,
}

/// What a verb did on one name server.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Outcome {
    namesrv: String,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    topic_count: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

pub async fn get_namesrv_config(
    admin: &AdminClient,
    _args: &GetNamesrvConfigArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let mut text = String::new();
    let mut all: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for addr in admin.namesrv_addrs() {
        let config = admin
            .get_namesrv_config(addr)
            .await
            .map_err(during(GET_NAMESRV_CONFIG))?;
        text.push_str(&format!("============{addr}============\n"));
        for (k, v) in &config {
            text.push_str(&format!("{k:<50}=  {v}\n"));
        }
        all.insert(addr.clone(), config.into_iter().collect());
    }
    out.render(&all, |_| text)
}

pub async fn update_namesrv_config(
    admin: &AdminClient,
    args: &UpdateNamesrvConfigArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let key = args.key.trim();
    let value = args.value.trim();
    if key.is_empty() {
        return Err(AdminError::Invalid("-k names no key".into()));
    }
    let change = [(key.to_owned(), value.to_owned())];
    let servers = admin.namesrv_addrs().to_vec();
    for addr in &servers {
        admin
            .update_namesrv_config(addr, &change)
            .await
            .map_err(during(UPDATE_NAMESRV_CONFIG))?;
    }
    let text = format!(
        "update name server config success!{}\n{key} : {value}\n",
        java_list(&servers)
    );
    out.render(&servers, |_| text)
}

/// Java's `List.toString`: `[a, b]`.
fn java_list(items: &[String]) -> String {
    format!("[{}]", items.join(", "))
}

pub async fn update_kv_config(
    admin: &AdminClient,
    args: &UpdateKvConfigArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    admin
        .create_and_update_kv_config(args.namespace.trim(), args.key.trim(), args.value.trim())
        .await
        .map_err(during(PUT_KV_CONFIG))?;
    let servers = admin.namesrv_addrs().to_vec();
    out.render(&servers, |_| {
        "create or update kv config to namespace success.\n".to_owned()
    })
}

pub async fn delete_kv_config(
    admin: &AdminClient,
    args: &DeleteKvConfigArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    admin
        .delete_kv_config(args.namespace.trim(), args.key.trim())
        .await
        .map_err(during(DELETE_KV_CONFIG))?;
    let servers = admin.namesrv_addrs().to_vec();
    out.render(&servers, |_| {
        "delete kv config from namespace success.\n".to_owned()
    })
}

/// `wipeWritePerm` (`add == false`) or `addWritePerm` on every name server: a name
/// server that fails is reported and the others still asked, as RocketMQ does; the
/// verb fails when none succeeded.
pub async fn write_perm(
    admin: &AdminClient,
    args: &WritePermArgs,
    add: bool,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let name = args.broker_name.trim();
    let (verb, code) = if add {
        ("add", ADD_WRITE_PERM_OF_BROKER)
    } else {
        ("wipe", WIPE_WRITE_PERM_OF_BROKER)
    };
    let mut text = String::new();
    let mut outcomes = Vec::new();
    for addr in admin.namesrv_addrs() {
        let answer = if add {
            admin.add_write_perm_of_broker(addr, name).await
        } else {
            admin.wipe_write_perm_of_broker(addr, name).await
        };
        match answer {
            Ok(n) => {
                text.push_str(&format!(
                    "{verb} write perm of broker[{name}] in name server[{addr}] OK, {n}\n"
                ));
                outcomes.push(Outcome {
                    namesrv: addr.clone(),
                    ok: true,
                    topic_count: Some(n),
                    error: None,
                });
            }
            Err(e) => {
                text.push_str(&format!(
                    "{verb} write perm of broker[{name}] in name server[{addr}] Failed\n"
                ));
                outcomes.push(Outcome {
                    namesrv: addr.clone(),
                    ok: false,
                    topic_count: None,
                    error: Some(during(code)(e).to_string()),
                });
            }
        }
    }
    if outcomes.iter().all(|o| !o.ok) {
        let why = outcomes
            .iter()
            .filter_map(|o| o.error.clone())
            .collect::<Vec<_>>()
            .join("; ");
        return Err(AdminError::NotFound(why));
    }
    out.render(&outcomes, |_| text)
}
