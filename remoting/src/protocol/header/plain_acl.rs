//! ACL 1.0 administration (docs/security.md#plain-acl-administration): accounts and
//! global white addresses of a broker's `plain_acl.yml`, codes 50–53.

use crate::command_header;

command_header! {
    /// UPDATE_AND_CREATE_ACL_CONFIG (50): an account, created or updated in place.
    /// `topicPerms` and `groupPerms` are comma-separated `name=PERM` lists.
    pub struct CreateAccessConfigRequestHeader {
        access_key: String = "accessKey",
        secret_key: Option<String> = "secretKey",
        white_remote_address: Option<String> = "whiteRemoteAddress",
        admin: Option<bool> = "admin",
        default_topic_perm: Option<String> = "defaultTopicPerm",
        default_group_perm: Option<String> = "defaultGroupPerm",
        topic_perms: Option<String> = "topicPerms",
        group_perms: Option<String> = "groupPerms",
    }
}

command_header! {
    /// DELETE_ACL_CONFIG (51).
    pub struct DeleteAccessConfigRequestHeader {
        access_key: String = "accessKey",
    }
}

command_header! {
    /// UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53): comma-separated addresses, for the file
    /// `aclFileFullPath` (`plain_acl.yml` when empty).
    pub struct UpdateGlobalWhiteAddrsConfigRequestHeader {
        global_white_addrs: String = "globalWhiteAddrs",
        acl_file_full_path: Option<String> = "aclFileFullPath",
    }
}

command_header! {
    /// GET_BROKER_CLUSTER_ACL_INFO (52) answer: `version` is the `DataVersion` JSON of
    /// `plain_acl.yml`, `allAclFileVersion` a JSON object of every ACL file's.
    pub struct GetBrokerAclConfigResponseHeader {
        version: String = "version",
        all_acl_file_version: Option<String> = "allAclFileVersion",
        broker_name: String = "brokerName",
        broker_addr: String = "brokerAddr",
        cluster_name: String = "clusterName",
    }
}
