//! ACL 1.0 verbs (Apache 4.x/5.1 mqadmin): `updateAclConfig`, `deleteAclConfig`,
//! `updateGlobalWhiteAddr` and `clusterAclConfigVersion`. A change goes to one broker
//! (`-b`) or to every broker of a cluster, masters and slaves (`-c`), since each keeps
//! its own `plain_acl.yml`; the versions are read from the masters.

use clap::{ArgGroup, Args};
use serde::Serialize;
use vostok_client::admin::plain_acl::ClusterAclVersionInfo;
use vostok_client::AdminClient;
use vostok_remoting::protocol::header::CreateAccessConfigRequestHeader;
use vostok_remoting::protocol::request_code as code;

use super::cluster::{cluster_brokers, cluster_info};
use super::error::{during, AdminError};
use super::output::{format_seconds, render_applied, Applied, JsonFlag};
use super::table::Table;
use super::target::{masters, Target};

/// `-b ADDR` or `-c CLUSTER` (every broker of it, slaves included).
#[derive(Args, Debug, Clone)]
#[command(group(ArgGroup::new("target").required(true).args(["broker_addr", "cluster_name"])))]
pub struct AllBrokers {
    /// One broker.
    #[arg(short = 'b', long = "brokerAddr", value_name = "ADDR")]
    pub broker_addr: Option<String>,
    /// Every broker of this cluster, masters and slaves.
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    pub cluster_name: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct UpdateAclConfigArgs {
    #[command(flatten)]
    pub target: AllBrokers,
    /// The account's access key.
    #[arg(short = 'a', long = "accessKey", value_name = "KEY")]
    pub account: String,
    /// Its secret key (more than 6 characters).
    #[arg(short = 's', long = "secretKey", value_name = "SECRET")]
    pub account_secret: Option<String>,
    /// The addresses it may connect from.
    #[arg(short = 'w', long = "whiteRemoteAddress", value_name = "PATTERN")]
    pub white_remote_address: Option<String>,
    /// Permission on topics it has no entry for: DENY, PUB, SUB or PUB|SUB.
    #[arg(short = 'i', long = "defaultTopicPerm", value_name = "PERM")]
    pub default_topic_perm: Option<String>,
    /// Permission on groups it has no entry for.
    #[arg(short = 'u', long = "defaultGroupPerm", value_name = "PERM")]
    pub default_group_perm: Option<String>,
    /// Topic entries, comma-separated: `topicA=DENY,topicB=PUB|SUB`.
    #[arg(short = 't', long = "topicPerms", value_name = "ENTRIES")]
    pub topic_perms: Option<String>,
    /// Group entries, comma-separated: `groupA=DENY,groupB=SUB`.
    #[arg(short = 'g', long = "groupPerms", value_name = "ENTRIES")]
    pub group_perms: Option<String>,
    /// Whether it is an admin account.
    #[arg(short = 'm', long = "admin", value_name = "BOOL", action = clap::ArgAction::Set)]
    pub admin: Option<bool>,
}

#[derive(Args, Debug, Clone)]
pub struct DeleteAclConfigArgs {
    #[command(flatten)]
    pub target: AllBrokers,
    /// The account's access key.
    #[arg(short = 'a', long = "accessKey", value_name = "KEY")]
    pub account: String,
}

#[derive(Args, Debug, Clone)]
pub struct UpdateGlobalWhiteAddrArgs {
    #[command(flatten)]
    pub target: AllBrokers,
    /// The addresses, comma-separated: `10.10.103.*,192.168.0.*`.
    #[arg(
        short = 'g',
        long = "globalWhiteRemoteAddresses",
        value_name = "PATTERNS"
    )]
    pub addresses: String,
    /// The ACL file to change (`conf/plain_acl.yml` when absent).
    #[arg(short = 'p', long = "aclFileFullPath", value_name = "PATH")]
    pub acl_file: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct ClusterAclConfigVersionArgs {
    #[command(flatten)]
    pub target: Target,
}

/// `-b`'s address, or every broker of `-c`'s cluster.
async fn every_broker(admin: &AdminClient, target: &AllBrokers) -> Result<Vec<String>, AdminError> {
    if let Some(addr) = &target.broker_addr {
        return Ok(vec![addr.clone()]);
    }
    let cluster = target.cluster_name.as_deref().unwrap_or_default();
    let info = cluster_info(admin).await?;
    let addrs: Vec<String> = cluster_brokers(&info, cluster)
        .into_iter()
        .map(|(_, _, addr)| addr)
        .collect();
    if addrs.is_empty() {
        return Err(AdminError::NotFound(format!(
            "cluster {cluster} has no broker"
        )));
    }
    Ok(addrs)
}

/// UPDATE_AND_CREATE_ACL_CONFIG: only the fields given change; the secret key is never
/// printed.
pub async fn update_acl_config(
    admin: &AdminClient,
    args: &UpdateAclConfigArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let header = CreateAccessConfigRequestHeader {
        access_key: args.account.trim().to_owned(),
        secret_key: args.account_secret.as_deref().map(|s| s.trim().to_owned()),
        white_remote_address: args.white_remote_address.clone(),
        admin: args.admin,
        default_topic_perm: args.default_topic_perm.clone(),
        default_group_perm: args.default_group_perm.clone(),
        topic_perms: args.topic_perms.clone(),
        group_perms: args.group_perms.clone(),
    };
    let mut applied = Vec::new();
    for addr in every_broker(admin, &args.target).await? {
        admin
            .create_and_update_plain_access_config(&addr, &header)
            .await
            .map_err(during(code::UPDATE_AND_CREATE_ACL_CONFIG))?;
        let line = format!("create or update plain access config to {addr} success.");
        applied.push(Applied::new(addr, line));
    }
    if out.json {
        return render_applied(out, &applied);
    }
    let mut text: String = applied.iter().map(|a| format!("{}\n", a.result)).collect();
    text.push_str(&format!(
        "PlainAccessConfig{{accessKey='{}', whiteRemoteAddress='{}', admin={}, defaultTopicPerm='{}', defaultGroupPerm='{}', topicPerms=[{}], groupPerms=[{}]}}\n",
        header.access_key,
        header.white_remote_address.as_deref().unwrap_or(""),
        header.admin.map_or("-".to_owned(), |a| a.to_string()),
        header.default_topic_perm.as_deref().unwrap_or(""),
        header.default_group_perm.as_deref().unwrap_or(""),
        header.topic_perms.as_deref().unwrap_or(""),
        header.group_perms.as_deref().unwrap_or(""),
    ));
    Ok(text)
}

/// DELETE_ACL_CONFIG.
pub async fn delete_acl_config(
    admin: &AdminClient,
    args: &DeleteAclConfigArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let mut applied = Vec::new();
    for addr in every_broker(admin, &args.target).await? {
        admin
            .delete_plain_access_config(&addr, args.account.trim())
            .await
            .map_err(during(code::DELETE_ACL_CONFIG))?;
        let line = format!(
            "delete plain access config account from {addr} success. account's accessKey is:{}",
            args.account.trim()
        );
        applied.push(Applied::new(addr, line));
    }
    render_applied(out, &applied)
}

/// UPDATE_GLOBAL_WHITE_ADDRS_CONFIG.
pub async fn update_global_white_addr(
    admin: &AdminClient,
    args: &UpdateGlobalWhiteAddrArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let mut applied = Vec::new();
    for addr in every_broker(admin, &args.target).await? {
        admin
            .update_global_white_addr_config(&addr, args.addresses.trim(), args.acl_file.as_deref())
            .await
            .map_err(during(code::UPDATE_GLOBAL_WHITE_ADDRS_CONFIG))?;
        let line = format!("update global white remote addresses to {addr} success.");
        applied.push(Applied::new(addr, line));
    }
    render_applied(out, &applied)
}

/// One ACL file of one broker.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct FileVersion {
    cluster_name: String,
    broker_name: String,
    broker_addr: String,
    acl_file_path: String,
    acl_config_version_num: i64,
    acl_last_update_time: i64,
}

fn file_versions(info: &ClusterAclVersionInfo) -> Vec<FileVersion> {
    info.all_acl_config_data_version
        .iter()
        .map(|(path, v)| FileVersion {
            cluster_name: info.cluster_name.clone(),
            broker_name: info.broker_name.clone(),
            broker_addr: info.broker_addr.clone(),
            acl_file_path: path.clone(),
            acl_config_version_num: v.counter,
            acl_last_update_time: v.timestamp,
        })
        .collect()
}

/// GET_BROKER_CLUSTER_ACL_INFO of `-b`, or of each master of `-c`: every ACL file's
/// version.
pub async fn cluster_acl_config_version(
    admin: &AdminClient,
    args: &ClusterAclConfigVersionArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let mut rows = Vec::new();
    for addr in masters(admin, &args.target).await? {
        let info = admin
            .examine_broker_cluster_acl_version_info(&addr)
            .await
            .map_err(during(code::GET_BROKER_CLUSTER_ACL_INFO))?;
        rows.extend(file_versions(&info));
    }
    out.render(&rows, |rows| {
        let mut t = Table::new(&[
            "#Cluster Name",
            "#Broker Name",
            "#Broker Addr",
            "#AclFilePath",
            "#AclConfigVersionNum",
            "#AclLastUpdateTime",
        ]);
        for r in rows {
            t.row(vec![
                r.cluster_name.clone(),
                r.broker_name.clone(),
                r.broker_addr.clone(),
                r.acl_file_path.clone(),
                r.acl_config_version_num.to_string(),
                format_seconds(r.acl_last_update_time).replace(' ', "T"),
            ]);
        }
        t.render()
    })
}
