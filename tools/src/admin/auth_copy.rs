//! ACL 2.0 lookups and copies, as Apache's mqadmin names them: `getUser`, `getAcl`
//! (one broker, or the masters of a cluster), `copyUser` and `copyAcl` (from one broker
//! to another: what the source has is created on the target, or replaces what the
//! target has). A Vostok broker hands out passwords to SUPER users only, so copying
//! users needs a SUPER account.

use clap::Args;
use vostok_client::AdminClient;
use vostok_remoting::protocol::body::UserInfo;
use vostok_remoting::protocol::request_code as code;

use super::auth::{acl_rows, acl_table, UserRow};
use super::error::{during, AdminError};
use super::output::{render_applied, Applied, JsonFlag};
use super::table::Table;
use super::target::{masters, Target};

#[derive(Args, Debug, Clone)]
pub struct GetUserArgs {
    #[command(flatten)]
    pub target: Target,
    /// User name.
    #[arg(short = 'u', long = "username")]
    pub username: String,
}

#[derive(Args, Debug, Clone)]
pub struct GetAclArgs {
    #[command(flatten)]
    pub target: Target,
    /// Subject, `User:<name>`.
    #[arg(short = 's', long = "subject")]
    pub subject: String,
}

#[derive(Args, Debug, Clone)]
pub struct CopyUserArgs {
    /// The broker to copy from.
    #[arg(short = 'f', long = "fromBroker", value_name = "ADDR")]
    pub from: String,
    /// The broker to copy to.
    #[arg(short = 't', long = "toBroker", value_name = "ADDR")]
    pub to: String,
    /// Only these users, comma-separated (all when absent).
    #[arg(short = 'u', long = "usernames", value_name = "NAMES")]
    pub usernames: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct CopyAclArgs {
    /// The broker to copy from.
    #[arg(short = 'f', long = "fromBroker", value_name = "ADDR")]
    pub from: String,
    /// The broker to copy to.
    #[arg(short = 't', long = "toBroker", value_name = "ADDR")]
    pub to: String,
    /// Only these subjects, comma-separated (all when absent).
    #[arg(short = 's', long = "subjects", value_name = "SUBJECTS")]
    pub subjects: Option<String>,
}

fn names(list: &Option<String>) -> Vec<String> {
    list.as_deref()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// AUTH_GET_USER on each target broker; with `-c` the first master that has the user.
pub async fn get_user(
    admin: &AdminClient,
    args: &GetUserArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let mut found = None;
    for addr in masters(admin, &args.target).await? {
        let user = admin
            .get_user(&addr, &args.username)
            .await
            .map_err(during(code::AUTH_GET_USER))?;
        if let Some(user) = user {
            found = Some(UserRow {
                broker_addr: addr,
                user,
            });
            break;
        }
    }
    let row = found.ok_or_else(|| {
        AdminError::NotFound(format!("no user {} on those brokers", args.username))
    })?;
    out.render(&row, |r| {
        let mut t = Table::new(&["#UserName", "#Password", "#UserType", "#UserStatus"]);
        t.row(vec![
            r.user.username.clone().unwrap_or_default(),
            r.user.password.clone().unwrap_or_default(),
            r.user.user_type.clone().unwrap_or_default(),
            r.user.user_status.clone().unwrap_or_default(),
        ]);
        t.render()
    })
}

/// AUTH_GET_ACL on each target broker.
pub async fn get_acl(
    admin: &AdminClient,
    args: &GetAclArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let mut rows = Vec::new();
    for addr in masters(admin, &args.target).await? {
        let acl = admin
            .get_acl(&addr, &args.subject)
            .await
            .map_err(during(code::AUTH_GET_ACL))?;
        if let Some(acl) = acl {
            rows.extend(acl_rows(&addr, std::slice::from_ref(&acl)));
        }
    }
    if rows.is_empty() {
        return Err(AdminError::NotFound(format!(
            "no ACL of {} on those brokers",
            args.subject
        )));
    }
    let several = args.target.cluster_name.is_some();
    out.render(&rows, |rows| acl_table(rows, several))
}

/// The source's users (with passwords) created, or updated, on the target.
pub async fn copy_user(
    admin: &AdminClient,
    args: &CopyUserArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let wanted = names(&args.usernames);
    let users: Vec<UserInfo> = if wanted.is_empty() {
        admin
            .list_users_with_password(&args.from)
            .await
            .map_err(during(code::AUTH_LIST_USER))?
    } else {
        let mut users = Vec::new();
        for name in &wanted {
            let user = admin
                .get_user_with_password(&args.from, name)
                .await
                .map_err(during(code::AUTH_GET_USER))?
                .ok_or_else(|| AdminError::NotFound(format!("no user {name} on {}", args.from)))?;
            users.push(user);
        }
        users
    };
    let mut applied = Vec::new();
    for user in users {
        let name = user.username.clone().unwrap_or_default();
        if user.password.is_none() {
            return Err(AdminError::Invalid(format!(
                "{} did not give the password of {name}: copying users needs a SUPER account",
                args.from
            )));
        }
        let exists = admin
            .get_user(&args.to, &name)
            .await
            .map_err(during(code::AUTH_GET_USER))?
            .is_some();
        if exists {
            admin
                .update_user(&args.to, &user)
                .await
                .map_err(during(code::AUTH_UPDATE_USER))?;
        } else {
            admin
                .create_user(&args.to, &user)
                .await
                .map_err(during(code::AUTH_CREATE_USER))?;
        }
        let line = format!(
            "copy user of {name} from {} to {} success.",
            args.from, args.to
        );
        applied.push(Applied::new(args.to.clone(), line));
    }
    render_applied(out, &applied)
}

/// The source's ACLs created, or updated, on the target.
pub async fn copy_acl(
    admin: &AdminClient,
    args: &CopyAclArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let wanted = names(&args.subjects);
    let acls = if wanted.is_empty() {
        admin
            .list_acls(&args.from, None, None)
            .await
            .map_err(during(code::AUTH_LIST_ACL))?
    } else {
        let mut acls = Vec::new();
        for subject in &wanted {
            let acl = admin
                .get_acl(&args.from, subject)
                .await
                .map_err(during(code::AUTH_GET_ACL))?
                .ok_or_else(|| {
                    AdminError::NotFound(format!("no ACL of {subject} on {}", args.from))
                })?;
            acls.push(acl);
        }
        acls
    };
    let mut applied = Vec::new();
    for acl in acls {
        let subject = acl.subject.clone().unwrap_or_default();
        let exists = admin
            .get_acl(&args.to, &subject)
            .await
            .map_err(during(code::AUTH_GET_ACL))?
            .is_some();
        if exists {
            admin
                .update_acl(&args.to, &subject, &acl)
                .await
                .map_err(during(code::AUTH_UPDATE_ACL))?;
        } else {
            admin
                .create_acl(&args.to, &subject, &acl)
                .await
                .map_err(during(code::AUTH_CREATE_ACL))?;
        }
        let line = format!(
            "copy acl of {subject} from {} to {} success.",
            args.from, args.to
        );
        applied.push(Applied::new(args.to.clone(), line));
    }
    render_applied(out, &applied)
}
