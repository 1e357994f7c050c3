//! The ACL 2.0 decision for one request (Apache's `DefaultAuthenticationHandler`,
//! `UserAuthorizationHandler` and `AclAuthorizationHandler`).
//!
//! Authentication: the user named by `AccessKey` must exist and be enabled, and the
//! signature (same algorithm as ACL 1.0) must verify with its password.
//! Authorization: SUPER users may do anything; a request that names no resource it
//! needs, or cannot be resolved, is refused to the others, who need, for each resource
//! the request touches, a matching policy entry (CUSTOM entries first, DEFAULT ones when
//! none match; the most specific resource decides, Deny over Allow) whose decision
//! is Allow. Admin-only requests need a SUPER user (**Vostok differs**: Apache maps
//! them to `Cluster`/`Topic` resources with Create/Update/Delete actions; Vostok keeps
//! every administrative request for SUPER users).

use std::net::IpAddr;

use vostok_remoting::auth::signature::SigningKey;
use vostok_remoting::protocol::request_code;

use super::model::{deciding, Entry};
use super::store::{subject_key, Snapshot};
use crate::permission;
use crate::proof::{Proof, TimeWindow};
use crate::resource::{Access, Denied, Need};

/// The user named by the request, authenticated, its signed time (if any) within
/// `window` of `now_ms`.
pub fn authenticate<'a>(
    snapshot: &'a Snapshot,
    request: &impl Proof,
    (window, now_ms): (&TimeWindow, i64),
) -> Result<&'a str, Denied> {
    let Some(name) = request.access_key() else {
        return Err(Denied::unauthenticated(format!(
            "access denied: no AccessKey on request {}: sign requests with a user's credentials",
            request_code::name(request.code())
        )));
    };
    let Some((key, user)) = snapshot.users.get_key_value(name) else {
        return Err(Denied::unauthenticated(format!(
            "access denied: User:{name} is not found"
        )));
    };
    if user.is_disabled() {
        return Err(Denied::unauthenticated(format!(
            "access denied: User:{name} is disabled"
        )));
    }
    let made;
    let signing_key = match snapshot.signing_keys.get(name) {
        Some(key) => key,
        None => {
            made = SigningKey::new(user.password.as_deref().unwrap_or(""));
            &made
        }
    };
    request
        .proven(signing_key, window, now_ms)
        .map_err(|e| e.refusal(format_args!("User:{name}")))?;
    Ok(key)
}

/// Whether the user named `name` may make a request needing `access` from `ip`.
pub fn authorize(
    snapshot: &Snapshot,
    name: &str,
    ip: IpAddr,
    code: i32,
    access: Access<'_>,
) -> Result<(), Denied> {
    let is_super = snapshot.users.get(name).is_some_and(|u| u.is_super());
    if is_super {
        return Ok(());
    }
    if !snapshot.users.contains_key(name) {
        return Err(Denied::new(format!(
            "access denied: User:{name} is not found"
        )));
    }
    if matches!(access, Access::Open | Access::Names(_)) {
        return Ok(());
    }
    if let Some(why) = access.unresolved() {
        return Err(Denied::new(format!(
            "access denied: request {} {why} (User:{name})",
            request_code::name(code)
        )));
    }
    let Access::Needs(needs) = access else {
        return Err(Denied::new(format!(
            "access denied: request {} ({code}) needs a SUPER user, and User:{name} is not one",
            request_code::name(code)
        )));
    };
    let acl = snapshot.acls.get(&subject_key(name));
    for Need { resource, perm } in &needs {
        let action = match *perm {
            permission::PUB => "Pub",
            permission::SUB => "Sub",
            _ => "Any",
        };
        let pick = |entries: &'_ [Entry]| {
            let mut matching = entries
                .iter()
                .filter(|e| e.matches(resource, action, ip))
                .peekable();
            matching
                .peek()
                .is_some()
                .then(|| deciding(matching))
                .flatten()
                .map(|e| e.allow)
        };
        let decision = acl.and_then(|acl| pick(&acl.custom).or_else(|| pick(&acl.default)));
        match decision {
            Some(true) => {}
            Some(false) => {
                return Err(Denied::new(format!(
                    "access denied: User:{name} is denied {action} on {resource} from {ip} (request {})",
                    request_code::name(code)
                )))
            }
            None => {
                return Err(Denied::new(format!(
                    "access denied: User:{name} has no policy allowing {action} on {resource} from {ip} (request {})",
                    request_code::name(code)
                )))
            }
        }
    }
    Ok(())
}
