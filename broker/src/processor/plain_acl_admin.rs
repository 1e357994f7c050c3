//! ACL 1.0 administration, requests 50–53 (Apache 4.x/5.1 `AdminBrokerProcessor`'s
//! `updateAndCreateAccessConfig` … `getBrokerAclConfigVersion`;
//! docs/security.md#plain-acl-administration): accounts and global white addresses of
//! the broker's plain ACL files, changed in the files themselves (`vostok_auth::
//! plain_edit`), and their versions. Admin accounts only (the request table).
//! Changes write files, off the runtime.
//!
//! **Vostok differs:** a refused change answers INVALID_PARAMETER (a value the file
//! cannot hold, a path that is not an ACL file) and a failed write SYSTEM_ERROR, where
//! Apache answers 209–211, codes 5.x also uses for POP.

use std::sync::Arc;

use tracing::info;
use vostok_auth::plain_edit::AccountChange;
use vostok_auth::plain_store::PlainAclStore;
use vostok_auth::AuthError;
use vostok_remoting::protocol::body::DataVersion;
use vostok_remoting::protocol::header::{
    CreateAccessConfigRequestHeader, DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader, UpdateGlobalWhiteAddrsConfigRequestHeader,
};
use vostok_remoting::protocol::{json, request_code as code, response_code};
use vostok_remoting::RemotingCommand;

use super::{decode_header, error};
use crate::state::Broker;

/// `a,b,,c` as `[a, b, c]`.
fn split(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn refused(e: AuthError) -> RemotingCommand {
    match e {
        AuthError::Read { .. } | AuthError::Write { .. } => {
            error(response_code::SYSTEM_ERROR, e.to_string())
        }
        AuthError::Acl { .. } | AuthError::Config(_) => {
            error(response_code::INVALID_PARAMETER, e.to_string())
        }
    }
}

/// Runs a file change on the blocking pool.
async fn change(
    store: &Arc<PlainAclStore>,
    f: impl FnOnce(&PlainAclStore) -> Result<RemotingCommand, AuthError> + Send + 'static,
) -> RemotingCommand {
    let store = store.clone();
    match tokio::task::spawn_blocking(move || f(&store)).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(e)) => refused(e),
        Err(e) => error(
            response_code::SYSTEM_ERROR,
            format!("ACL change failed: {e}"),
        ),
    }
}

pub(crate) async fn process(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let Some(store) = broker.guard.as_ref().and_then(|g| g.plain()).cloned() else {
        return error(
            response_code::SYSTEM_ERROR,
            "ACL 1.0 is not enabled on this broker (aclEnable=true reads conf/plain_acl.yml)",
        );
    };
    match request.code {
        code::UPDATE_AND_CREATE_ACL_CONFIG => {
            let h = decode_header!(request, CreateAccessConfigRequestHeader);
            let account = AccountChange {
                access_key: h.access_key,
                secret_key: h.secret_key,
                white_remote_address: h.white_remote_address,
                admin: h.admin,
                default_topic_perm: h.default_topic_perm,
                default_group_perm: h.default_group_perm,
                topic_perms: h.topic_perms.as_deref().map(split),
                group_perms: h.group_perms.as_deref().map(split),
            };
            change(&store, move |s| {
                s.update_account(&account)?;
                info!(access_key = %account.access_key, "ACL account created or updated");
                Ok(RemotingCommand::success())
            })
            .await
        }
        code::DELETE_ACL_CONFIG => {
            let h = decode_header!(request, DeleteAccessConfigRequestHeader);
            change(&store, move |s| {
                if s.delete_account(&h.access_key)? {
                    info!(access_key = %h.access_key, "ACL account deleted");
                    Ok(RemotingCommand::success())
                } else {
                    Ok(error(
                        response_code::INVALID_PARAMETER,
                        format!("no ACL file defines the accessKey[{}]", h.access_key),
                    ))
                }
            })
            .await
        }
        code::UPDATE_GLOBAL_WHITE_ADDRS_CONFIG => {
            let h = decode_header!(request, UpdateGlobalWhiteAddrsConfigRequestHeader);
            let addresses = split(&h.global_white_addrs);
            let file = h
                .acl_file_full_path
                .filter(|p| !p.trim().is_empty())
                .map(std::path::PathBuf::from);
            change(&store, move |s| {
                s.update_global_white(&addresses, file.as_deref())?;
                info!(addresses = ?addresses, "ACL global white addresses updated");
                Ok(RemotingCommand::success())
            })
            .await
        }
        code::GET_BROKER_CLUSTER_ACL_INFO => {
            let default_file = store.default_file().display().to_string();
            let cluster = broker.config.broker_cluster_name.clone();
            let name = broker.config.broker_name.clone();
            let addr = broker.broker_addr.to_string();
            change(&store, move |s| {
                let versions = s.versions()?;
                let main = versions.get(&default_file).cloned().unwrap_or(DataVersion {
                    counter: 0,
                    state_version: 0,
                    timestamp: 0,
                });
                let header = GetBrokerAclConfigResponseHeader {
                    version: String::from_utf8_lossy(&json::to_vec(&main)).into_owned(),
                    all_acl_file_version: Some(
                        String::from_utf8_lossy(&json::to_vec(&versions)).into_owned(),
                    ),
                    broker_name: name,
                    broker_addr: addr,
                    cluster_name: cluster,
                };
                Ok(RemotingCommand::success().with_header(&header))
            })
            .await
        }
        _ => vostok_remoting::processor::not_supported(&request),
    }
}
