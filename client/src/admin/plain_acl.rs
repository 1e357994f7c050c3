//! ACL 1.0 administration (Java `MQAdminExt.createAndUpdatePlainAccessConfig`,
//! `deletePlainAccessConfig`, `updateGlobalWhiteAddrConfig`,
//! `examineBrokerClusterAclVersionInfo`, codes 50–53): the accounts and global white
//! addresses of one broker's plain ACL files. The caller signs with an admin account.

use std::collections::BTreeMap;

use vostok_remoting::protocol::body::DataVersion;
use vostok_remoting::protocol::header::{
    CreateAccessConfigRequestHeader, DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader, UpdateGlobalWhiteAddrsConfigRequestHeader,
};
use vostok_remoting::protocol::{json, request_code};
use vostok_remoting::RemotingCommand;

use super::AdminClient;
use crate::api;
use crate::error::Result;

/// GET_BROKER_CLUSTER_ACL_INFO answer (`ClusterAclVersionInfo`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAclVersionInfo {
    pub cluster_name: String,
    pub broker_name: String,
    pub broker_addr: String,
    /// The version of `plain_acl.yml`.
    pub acl_config_data_version: DataVersion,
    /// Each ACL file's version, by path.
    pub all_acl_config_data_version: BTreeMap<String, DataVersion>,
}

impl AdminClient {
    /// UPDATE_AND_CREATE_ACL_CONFIG: creates or updates an account.
    pub async fn create_and_update_plain_access_config(
        &self,
        broker_addr: &str,
        config: &CreateAccessConfigRequestHeader,
    ) -> Result<()> {
        let request = RemotingCommand::request_with_header(
            request_code::UPDATE_AND_CREATE_ACL_CONFIG,
            config,
        );
        self.call(broker_addr, request).await.map(drop)
    }

    /// DELETE_ACL_CONFIG: removes an account.
    pub async fn delete_plain_access_config(
        &self,
        broker_addr: &str,
        access_key: &str,
    ) -> Result<()> {
        let header = DeleteAccessConfigRequestHeader {
            access_key: access_key.to_owned(),
        };
        let request =
            RemotingCommand::request_with_header(request_code::DELETE_ACL_CONFIG, &header);
        self.call(broker_addr, request).await.map(drop)
    }

    /// UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: replaces the global white addresses of one
    /// ACL file (`plain_acl.yml` when `acl_file` is `None`).
    pub async fn update_global_white_addr_config(
        &self,
        broker_addr: &str,
        addresses: &str,
        acl_file: Option<&str>,
    ) -> Result<()> {
        let header = UpdateGlobalWhiteAddrsConfigRequestHeader {
            global_white_addrs: addresses.to_owned(),
            acl_file_full_path: acl_file.map(str::to_owned),
        };
        let request = RemotingCommand::request_with_header(
            request_code::UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
            &header,
        );
        self.call(broker_addr, request).await.map(drop)
    }

    /// GET_BROKER_CLUSTER_ACL_INFO: the versions of the broker's ACL files.
    pub async fn examine_broker_cluster_acl_version_info(
        &self,
        broker_addr: &str,
    ) -> Result<ClusterAclVersionInfo> {
        let request = RemotingCommand::request(request_code::GET_BROKER_CLUSTER_ACL_INFO);
        let response = self.call(broker_addr, request).await?;
        let h: GetBrokerAclConfigResponseHeader = api::decode_header(broker_addr, &response)?;
        let acl_config_data_version = json::from_slice("DataVersion", h.version.as_bytes())?;
        let all_acl_config_data_version = match h.all_acl_file_version.as_deref() {
            Some(text) if !text.is_empty() => {
                json::from_slice("allAclFileVersion", text.as_bytes())?
            }
            _ => BTreeMap::new(),
        };
        Ok(ClusterAclVersionInfo {
            cluster_name: h.cluster_name,
            broker_name: h.broker_name,
            broker_addr: h.broker_addr,
            acl_config_data_version,
            all_acl_config_data_version,
        })
    }
}
