//! `getBrokerConfig` and `updateBrokerConfig`: a broker's effective configuration
//! (GET_BROKER_CONFIG) and changing it at run time (UPDATE_BROKER_CONFIG), on one broker
//! or a cluster, printed as RocketMQ's commands print them.

use std::collections::BTreeMap;

use clap::{ArgGroup, Args};
use vostok_client::AdminClient;
use vostok_remoting::protocol::request_code::{GET_BROKER_CONFIG, UPDATE_BROKER_CONFIG};

use super::cluster::{cluster_info, cluster_masters};
use super::error::{during, AdminError};
use super::output::JsonFlag;

#[derive(Args, Debug, Clone)]
#[command(group(ArgGroup::new("target").required(true).args(["broker_addr", "cluster_name"])))]
pub struct GetBrokerConfigArgs {
    /// One broker.
    #[arg(short = 'b', long = "brokerAddr", value_name = "ADDR")]
    pub broker_addr: Option<String>,
    /// Every broker of this cluster, masters and slaves.
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    pub cluster_name: Option<String>,
}

#[derive(Args, Debug, Clone)]
#[command(group(ArgGroup::new("target").required(true).args(["broker_addr", "cluster_name"])))]
pub struct UpdateBrokerConfigArgs {
    /// One broker.
    #[arg(short = 'b', long = "brokerAddr", value_name = "ADDR")]
    pub broker_addr: Option<String>,
    /// Every master of this cluster (with `-a true`, the slaves too).
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    pub cluster_name: Option<String>,
    /// With `-c`: update the slaves as well.
    #[arg(
        short = 'a',
        long = "updateAllBroker",
        value_name = "BOOL", default_value_t = false, action = clap::ArgAction::Set
    )]
    pub update_all_broker: bool,
    /// The key, as in broker.conf.
    #[arg(short = 'k', long = "key")]
    pub key: String,
    /// Its new value.
    #[arg(short = 'v', long = "value")]
    pub value: String,
}

/// `(title, address)` of each broker to show: `-b`'s, or the cluster's masters, each
/// followed by its slaves, titled as RocketMQ titles them.
async fn brokers_of(
    admin: &AdminClient,
    broker_addr: &Option<String>,
    cluster: &Option<String>,
    slaves: bool,
) -> Result<Vec<(String, String)>, AdminError> {
    if let Some(addr) = broker_addr {
        return Ok(vec![(addr.clone(), addr.clone())]);
    }
    let cluster = cluster.as_deref().unwrap_or_default();
    let info = cluster_info(admin).await?;
    let mut out = Vec::new();
    for (name, master) in cluster_masters(&info, cluster)? {
        out.push((format!("Master: {master}"), master.clone()));
        if !slaves {
            continue;
        }
        let Some(broker) = info.broker_addr_table.get(&name) else {
            continue;
        };
        for (id, slave) in &broker.broker_addrs {
            if *id != 0 {
                out.push((
                    format!("My Master: {master}=====Slave: {slave}"),
                    slave.clone(),
                ));
            }
        }
    }
    Ok(out)
}

pub async fn get_broker_config(
    admin: &AdminClient,
    args: &GetBrokerConfigArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let brokers = brokers_of(admin, &args.broker_addr, &args.cluster_name, true).await?;
    let mut text = String::new();
    let mut all: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (title, addr) in &brokers {
        let config = admin
            .get_broker_config(addr)
            .await
            .map_err(during(GET_BROKER_CONFIG))?;
        text.push_str(&format!("============{title}============\n"));
        if config.is_empty() {
            text.push_str(&format!("Broker[{addr}] has no config property!\n"));
        }
        for (k, v) in &config {
            text.push_str(&format!("{k:<50}=  {v}\n"));
        }
        text.push('\n');
        all.insert(addr.clone(), config.into_iter().collect());
    }
    out.render(&all, |_| text)
}

pub async fn update_broker_config(
    admin: &AdminClient,
    args: &UpdateBrokerConfigArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let key = args.key.trim();
    if key.is_empty() {
        return Err(AdminError::Invalid("-k names no key".into()));
    }
    let change = [(key.to_owned(), args.value.trim().to_owned())];
    let brokers = brokers_of(
        admin,
        &args.broker_addr,
        &args.cluster_name,
        args.update_all_broker,
    )
    .await?;
    let mut text = String::new();
    let mut updated = Vec::new();
    for (_, addr) in brokers {
        admin
            .update_broker_config(&addr, &change)
            .await
            .map_err(during(UPDATE_BROKER_CONFIG))?;
        text.push_str(&format!("update broker config success, {addr}\n"));
        updated.push(addr);
    }
    out.render(&updated, |_| text)
}
