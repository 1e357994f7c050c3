//! ACL 2.0 management, requests 3001–3010 (Apache `AdminBrokerProcessor`'s
//! `createUser` … `listAcl`): users and ACLs of the broker's guard. The guard already
//! let only SUPER users (admin accounts) through; only a SUPER user may create, change
//! or delete a SUPER user. Changes are written to disk before the answer, off the
//! runtime.
//!
//! **Vostok differs:** GET_USER and LIST_USER answer without passwords, unless a SUPER
//! user asks `withPassword=true` (what `mqadmin copyUser` needs).

use std::sync::Arc;

use vostok_auth::v2::{AclInfo, AuthMetadata, MetadataError, UserInfo};
use vostok_remoting::protocol::header::{
    AclRequestHeader, DeleteAclRequestHeader, ListAclsRequestHeader, ListUsersRequestHeader,
    UserRequestHeader,
};
use vostok_remoting::protocol::{json, request_code as code, response_code};
use vostok_remoting::RemotingCommand;

use super::{decode_body, decode_header, error};
use crate::state::Broker;

fn answer(result: Result<(), MetadataError>) -> RemotingCommand {
    match result {
        Ok(()) => RemotingCommand::success(),
        Err(MetadataError::Invalid(r)) => error(response_code::INVALID_PARAMETER, r),
        Err(MetadataError::Refused(r)) => error(response_code::NO_PERMISSION, r),
        Err(MetadataError::Storage(r)) => error(response_code::SYSTEM_ERROR, r),
    }
}

/// Runs a change on the blocking pool: it writes the metadata files.
async fn change(
    metadata: &Arc<AuthMetadata>,
    f: impl FnOnce(&AuthMetadata) -> Result<(), MetadataError> + Send + 'static,
) -> RemotingCommand {
    let metadata = metadata.clone();
    match tokio::task::spawn_blocking(move || f(&metadata)).await {
        Ok(result) => answer(result),
        Err(e) => error(
            response_code::SYSTEM_ERROR,
            format!("metadata change failed: {e}"),
        ),
    }
}

fn json_body<T: serde::Serialize>(value: &T) -> RemotingCommand {
    RemotingCommand::success().with_body(json::to_vec(value))
}

pub(crate) async fn process(broker: &Arc<Broker>, request: RemotingCommand) -> RemotingCommand {
    let Some(guard) = &broker.guard else {
        return error(
            response_code::SYSTEM_ERROR,
            "ACL 2.0 is not enabled on this broker (authenticationEnabled / authorizationEnabled)",
        );
    };
    let Some(metadata) = guard.metadata() else {
        return error(response_code::SYSTEM_ERROR, "ACL 2.0 is not enabled on this broker (aclEnable selects ACL 1.0, managed in plain_acl.yml)");
    };
    let caller_is_super = guard.is_super_request(&request);
    match request.code {
        code::AUTH_CREATE_USER | code::AUTH_UPDATE_USER => {
            let header = decode_header!(request, UserRequestHeader);
            if header.username.trim().is_empty() {
                return error(response_code::INVALID_PARAMETER, "The username is blank");
            }
            let mut user = decode_body!(request, UserInfo, "UserInfo");
            user.username = Some(header.username.clone());
            let existing_super = metadata
                .user(&header.username)
                .is_some_and(|u| u.is_super());
            if (user.is_super() || existing_super) && !caller_is_super {
                return error(
                    response_code::NO_PERMISSION,
                    "A SUPER user can only be created or changed by a SUPER user",
                );
            }
            if request.code == code::AUTH_CREATE_USER {
                change(metadata, move |m| m.create_user(user)).await
            } else {
                change(metadata, move |m| m.update_user(user)).await
            }
        }
        code::AUTH_DELETE_USER => {
            let header = decode_header!(request, UserRequestHeader);
            if metadata
                .user(&header.username)
                .is_some_and(|u| u.is_super())
                && !caller_is_super
            {
                return error(
                    response_code::NO_PERMISSION,
                    "A SUPER user can only be deleted by a SUPER user",
                );
            }
            change(metadata, move |m| m.delete_user(&header.username)).await
        }
        code::AUTH_GET_USER => {
            let header = decode_header!(request, UserRequestHeader);
            let with_password = header.with_password == Some(true) && caller_is_super;
            match metadata.user(&header.username) {
                Some(user) if with_password => json_body(&user),
                Some(user) => json_body(&user.without_password()),
                None => RemotingCommand::success(),
            }
        }
        code::AUTH_LIST_USER => {
            let header = decode_header!(request, ListUsersRequestHeader);
            let with_password = header.with_password == Some(true) && caller_is_super;
            let users: Vec<UserInfo> = metadata
                .list_users(header.filter.as_deref().filter(|f| !f.is_empty()))
                .iter()
                .map(|u| {
                    if with_password {
                        u.clone()
                    } else {
                        u.without_password()
                    }
                })
                .collect();
            json_body(&users)
        }
        code::AUTH_CREATE_ACL | code::AUTH_UPDATE_ACL => {
            let header = decode_header!(request, AclRequestHeader);
            let acl = decode_body!(request, AclInfo, "AclInfo");
            change(metadata, move |m| m.upsert_acl(&header.subject, acl)).await
        }
        code::AUTH_DELETE_ACL => {
            let header = decode_header!(request, DeleteAclRequestHeader);
            change(metadata, move |m| {
                m.delete_acl(
                    &header.subject,
                    header.policy_type.as_deref(),
                    header.resource.as_deref(),
                )
            })
            .await
        }
        code::AUTH_GET_ACL => {
            let header = decode_header!(request, AclRequestHeader);
            match metadata.acl(&header.subject) {
                Ok(Some(acl)) => json_body(&acl),
                Ok(None) => RemotingCommand::success(),
                Err(e) => answer(Err(e)),
            }
        }
        code::AUTH_LIST_ACL => {
            let header = decode_header!(request, ListAclsRequestHeader);
            json_body(&metadata.list_acls(
                header.subject_filter.as_deref().filter(|f| !f.is_empty()),
                header.resource_filter.as_deref().filter(|f| !f.is_empty()),
            ))
        }
        _ => vostok_remoting::processor::not_supported(&request),
    }
}
