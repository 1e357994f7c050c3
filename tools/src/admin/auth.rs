//! ACL 2.0 sub-commands, as Apache's mqadmin names them: `createUser`, `updateUser`,
//! `deleteUser`, `listUser`, `createAcl`, `updateAcl`, `deleteAcl`, `listAcl`. Each
//! acts on one broker (`-b`) or on every master of a cluster (`-c`).

use clap::Args;
use vostok_client::AdminClient;
use vostok_remoting::protocol::body::{AclInfo, PolicyEntryInfo, PolicyInfo, UserInfo};
use vostok_remoting::protocol::request_code as code;

use serde::Serialize;

use super::error::{during, AdminError};
use super::output::{render_applied, Applied, JsonFlag};
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
    out: JsonFlag,
) -> Result<String, AdminError> {
    let user = user_of(args);
    let mut applied = Vec::new();
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
        let line = format!("user {} {verb} on {addr}", args.username);
        applied.push(Applied::new(addr, line));
    }
    render_applied(out, &applied)
}

pub async fn delete_user(
    admin: &AdminClient,
    args: &DeleteUserArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let mut applied = Vec::new();
    for addr in brokers(admin, &args.target).await? {
        admin
            .delete_user(&addr, &args.username)
            .await
            .map_err(during(code::AUTH_DELETE_USER))?;
        let line = format!("user {} deleted on {addr}", args.username);
        applied.push(Applied::new(addr, line));
    }
    render_applied(out, &applied)
}

pub async fn list_users(
    admin: &AdminClient,
    args: &ListUserArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let mut rows = Vec::new();
    for addr in brokers(admin, &args.target).await? {
        let users = admin
            .list_users(&addr, args.filter.as_deref())
            .await
            .map_err(during(code::AUTH_LIST_USER))?;
        rows.extend(users.into_iter().map(|user| UserRow {
            broker_addr: addr.clone(),
            user,
        }));
    }
    out.render(&rows, |rows| {
        let mut table = Table::new(&["#Broker", "#Username", "#UserType", "#UserStatus"]);
        for r in rows {
            table.row(vec![
                r.broker_addr.clone(),
                r.user.username.clone().unwrap_or_default(),
                r.user.user_type.clone().unwrap_or_default(),
                r.user.user_status.clone().unwrap_or_default(),
            ]);
        }
        table.render()
    })
}

pub async fn create_acl(
    admin: &AdminClient,
    args: &AclArgs,
    update: bool,
    out: JsonFlag,
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
    let mut applied = Vec::new();
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
        let line = format!("acl of {} saved on {addr}", args.subject);
        applied.push(Applied::new(addr, line));
    }
    render_applied(out, &applied)
}

pub async fn delete_acl(
    admin: &AdminClient,
    args: &DeleteAclArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let mut applied = Vec::new();
    for addr in brokers(admin, &args.target).await? {
        admin
            .delete_acl(&addr, &args.subject, None, args.resource.as_deref())
            .await
            .map_err(during(code::AUTH_DELETE_ACL))?;
        let line = format!("acl of {} deleted on {addr}", args.subject);
        applied.push(Applied::new(addr, line));
    }
    render_applied(out, &applied)
}

pub async fn list_acls(
    admin: &AdminClient,
    args: &ListAclArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let mut rows = Vec::new();
    for addr in brokers(admin, &args.target).await? {
        let acls = admin
            .list_acls(&addr, args.subject.as_deref(), args.resource.as_deref())
            .await
            .map_err(during(code::AUTH_LIST_ACL))?;
        rows.extend(acl_rows(&addr, &acls));
    }
    out.render(&rows, |rows| acl_table(rows, true))
}

/// A user and the broker it was read from.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UserRow {
    pub(crate) broker_addr: String,
    #[serde(flatten)]
    pub(crate) user: UserInfo,
}

/// One policy entry of an ACL, as `listAcl` and `getAcl` print them.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AclRow {
    broker_addr: String,
    subject: String,
    policy_type: String,
    resource: String,
    actions: Vec<String>,
    source_ips: Vec<String>,
    decision: String,
}

pub(crate) fn acl_rows(addr: &str, acls: &[AclInfo]) -> Vec<AclRow> {
    let mut rows = Vec::new();
    for acl in acls {
        for policy in &acl.policies {
            for e in &policy.entries {
                rows.push(AclRow {
                    broker_addr: addr.to_owned(),
                    subject: acl.subject.clone().unwrap_or_default(),
                    policy_type: policy
                        .policy_type
                        .clone()
                        .unwrap_or_else(|| "Custom".into()),
                    resource: e.resource.clone(),
                    actions: e.actions.clone(),
                    source_ips: e.source_ips.clone(),
                    decision: e.decision.clone(),
                });
            }
        }
    }
    rows
}

/// The rows as a table, with the broker column when `with_broker`.
pub(crate) fn acl_table(rows: &[AclRow], with_broker: bool) -> String {
    let mut header = vec![
        "#Subject",
        "#PolicyType",
        "#Resource",
        "#Actions",
        "#SourceIp",
        "#Decision",
    ];
    if with_broker {
        header.insert(0, "#Broker");
    }
    let mut table = Table::new(&header);
    for r in rows {
        let mut cells = vec![
            r.subject.clone(),
            r.policy_type.clone(),
            r.resource.clone(),
            r.actions.join(","),
            r.source_ips.join(","),
            r.decision.clone(),
        ];
        if with_broker {
            cells.insert(0, r.broker_addr.clone());
        }
        table.row(cells);
    }
    table.render()
}
