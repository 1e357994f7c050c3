//! ACL 2.0 sub-commands, as Apache's mqadmin names them: `createUser`, `updateUser`,
//! `deleteUser`, `listUser`, `createAcl`, `updateAcl`, `deleteAcl`, `listAcl`. Each
//! acts on one broker (`-b`) or on every master of a cluster (`-c`).

use clap::Args;
use vostok_client::AdminClient;
use vostok_remoting::protocol::body::{AclInfo, PolicyEntryInfo, PolicyInfo, UserInfo};
use vostok_remoting::protocol::request_code as code;

use super::error::{during, AdminError};
use super::table::Table;
use super::target::{masters as brokers, Target};

#[derive(Args, Debug, Clone)]
pub struct UserArgs {
    #[command(flatten)]
    pub target: Target,
    /// User name.
    #[arg(short = 'u', long = "username")]
    pub username: String,
    /// Password (the secret key clients sign with).
    #[arg(short = 'p', long = "password")]
    pub password: Option<String>,
    /// `Super` or `Normal`.
    #[arg(short = 't', long = "userType")]
    pub user_type: Option<String>,
    /// `enable` or `disable` (updateUser).
    #[arg(short = 's', long = "userStatus")]
    pub user_status: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct DeleteUserArgs {
    #[command(flatten)]
    pub target: Target,
    #[arg(short = 'u', long = "username")]
    pub username: String,
}

#[derive(Args, Debug, Clone)]
pub struct ListUserArgs {
    #[command(flatten)]
    pub target: Target,
    /// Only users whose name contains this.
    #[arg(short = 'f', long = "filter")]
    pub filter: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct AclArgs {
    #[command(flatten)]
    pub target: Target,
    /// Subject, `User:<name>`.
    #[arg(short = 's', long = "subject")]
    pub subject: String,
    /// Resources, comma-separated: `Topic:orders`, `Group:g*`, `Topic:*`, `*`.
    #[arg(short = 'r', long = "resources", value_delimiter = ',')]
    pub resources: Vec<String>,
    /// Actions, comma-separated: `Pub`, `Sub`, `All`, ...
    #[arg(short = 'a', long = "actions", value_delimiter = ',')]
    pub actions: Vec<String>,
    /// Source addresses or CIDR blocks, comma-separated.
    #[arg(short = 'i', long = "sourceIp", value_delimiter = ',')]
    pub source_ips: Vec<String>,
    /// `Allow` or `Deny`.
    #[arg(short = 'd', long = "decision")]
    pub decision: String,
}

#[derive(Args, Debug, Clone)]
pub struct DeleteAclArgs {
    #[command(flatten)]
    pub target: Target,
    #[arg(short = 's', long = "subject")]
    pub subject: String,
    /// Only this resource's entry (else the whole ACL).
    #[arg(short = 'r', long = "resource")]
    pub resource: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct ListAclArgs {
    #[command(flatten)]
    pub target: Target,
    #[arg(short = 's', long = "subject")]
    pub subject: Option<String>,
    #[arg(short = 'r', long = "resource")]
    pub resource: Option<String>,
}

fn user_of(args: &UserArgs) -> UserInfo {
    UserInfo {
        username: Some(args.username.clone()),
        password: args.password.clone(),
        user_type: args.user_type.clone(),
        user_status: args.user_status.clone(),
    }
}

pub async fn create_user(
    admin: &AdminClient,
    args: &UserArgs,
    update: bool,
) -> Result<String, AdminError> {
    let user = user_of(args);
    let mut out = String::new();
    for addr in brokers(admin, &args.target).await? {
        if update {
            admin
                .update_user(&addr, &user)
                .await
                .map_err(during(code::AUTH_UPDATE_USER))?;
        } else {
            admin
                .create_user(&addr, &user)
                .await
                .map_err(during(code::AUTH_CREATE_USER))?;
        }
        let verb = if update { "updated" } else { "created" };
        out.push_str(&format!("user {} {verb} on {addr}\n", args.username));
    }
    Ok(out)
}

pub async fn delete_user(admin: &AdminClient, args: &DeleteUserArgs) -> Result<String, AdminError> {
    let mut out = String::new();
    for addr in brokers(admin, &args.target).await? {
        admin
            .delete_user(&addr, &args.username)
            .await
            .map_err(during(code::AUTH_DELETE_USER))?;
        out.push_str(&format!("user {} deleted on {addr}\n", args.username));
    }
    Ok(out)
}

pub async fn list_users(admin: &AdminClient, args: &ListUserArgs) -> Result<String, AdminError> {
    let mut table = Table::new(&["#Broker", "#Username", "#UserType", "#UserStatus"]);
    for addr in brokers(admin, &args.target).await? {
        let users = admin
            .list_users(&addr, args.filter.as_deref())
            .await
            .map_err(during(code::AUTH_LIST_USER))?;
        for u in users {
            table.row(vec![
                addr.clone(),
                u.username.unwrap_or_default(),
                u.user_type.unwrap_or_default(),
                u.user_status.unwrap_or_default(),
            ]);
        }
    }
    Ok(table.render())
}

pub async fn create_acl(
    admin: &AdminClient,
    args: &AclArgs,
    update: bool,
) -> Result<String, AdminError> {
    if args.resources.is_empty() || args.actions.is_empty() {
        return Err(AdminError::Invalid(
            "-r (resources) and -a (actions) are required".into(),
        ));
    }
    let entries = args
        .resources
        .iter()
        .map(|r| PolicyEntryInfo {
            resource: r.trim().to_owned(),
            actions: args.actions.iter().map(|a| a.trim().to_owned()).collect(),
            source_ips: args
                .source_ips
                .iter()
                .map(|i| i.trim().to_owned())
                .collect(),
            decision: args.decision.clone(),
        })
        .collect();
    let acl = AclInfo {
        subject: Some(args.subject.clone()),
        policies: vec![PolicyInfo {
            policy_type: None,
            entries,
        }],
    };
    let mut out = String::new();
    for addr in brokers(admin, &args.target).await? {
        if update {
            admin
                .update_acl(&addr, &args.subject, &acl)
                .await
                .map_err(during(code::AUTH_UPDATE_ACL))?;
        } else {
            admin
                .create_acl(&addr, &args.subject, &acl)
                .await
                .map_err(during(code::AUTH_CREATE_ACL))?;
        }
        out.push_str(&format!("acl of {} saved on {addr}\n", args.subject));
    }
    Ok(out)
}

pub async fn delete_acl(admin: &AdminClient, args: &DeleteAclArgs) -> Result<String, AdminError> {
    let mut out = String::new();
    for addr in brokers(admin, &args.target).await? {
        admin
            .delete_acl(&addr, &args.subject, None, args.resource.as_deref())
            .await
            .map_err(during(code::AUTH_DELETE_ACL))?;
        out.push_str(&format!("acl of {} deleted on {addr}\n", args.subject));
    }
    Ok(out)
}

pub async fn list_acls(admin: &AdminClient, args: &ListAclArgs) -> Result<String, AdminError> {
    let mut table = Table::new(&[
        "#Broker",
        "#Subject",
        "#PolicyType",
        "#Resource",
        "#Actions",
        "#SourceIps",
        "#Decision",
    ]);
    for addr in brokers(admin, &args.target).await? {
        let acls = admin
            .list_acls(&addr, args.subject.as_deref(), args.resource.as_deref())
            .await
            .map_err(during(code::AUTH_LIST_ACL))?;
        for acl in acls {
            for policy in &acl.policies {
                for e in &policy.entries {
                    table.row(vec![
                        addr.clone(),
                        acl.subject.clone().unwrap_or_default(),
                        policy
                            .policy_type
                            .clone()
                            .unwrap_or_else(|| "Custom".into()),
                        e.resource.clone(),
                        e.actions.join(","),
                        e.source_ips.join(","),
                        e.decision.clone(),
                    ]);
                }
            }
        }
    }
    Ok(table.render())
}
