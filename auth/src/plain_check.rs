//! The ACL 1.0 decision for one request (Java `PlainPermissionManager.validate` and
//! `PlainPermissionChecker`), in Java's order:
//!
//! 1. the peer's address matches a global white pattern: accepted;
//! 2. no `AccessKey`: refused; 3. unknown key: refused;
//! 4. the account's `whiteRemoteAddress` matches: the signature is not checked;
//! 5. the signature does not verify, or (Vostok) the time it carries is out of the
//!    window: refused;
//! 6. an admin account: accepted;
//! 7. a request that names no resource it needs (a field left out) or cannot be
//!    resolved: refused;
//! 8. admin-only request: refused; a send to the trace topic needs nothing on it;
//!    a needed permission missing: refused.
//!
//! **Vostok differs** at step 4: Java skips the permission checks too for an
//! account's white address, so anyone there who knows an access key (not its secret)
//! gets everything; Vostok still applies the account's permissions. At step 7 Java
//! reads a missing resource name as an unlisted resource, open with a permissive
//! default; and its trace-topic exemption passes a request that needs the trace
//! topic and anything else.

use std::net::IpAddr;
use std::sync::Arc;

use vostok_remoting::protocol::request_code;

use crate::guard::Principal;
use crate::permission;
use crate::plain::PlainAccount;
use crate::plain_store::PlainAcl;
use crate::proof::{Proof, TimeWindow};
use crate::resource::{Access, Denied, Need, Resource, TRACE_TOPIC};

/// Checks `request` from `ip` against `acl`, its signed time (if any) against
/// `window` at `now_ms`.
pub fn check<'r>(
    acl: &PlainAcl,
    ip: IpAddr,
    request: &impl Proof,
    (window, now_ms): (&TimeWindow, i64),
    access: impl FnOnce() -> Access<'r>,
) -> Result<Principal, Denied> {
    if acl.global_white.iter().any(|p| p.matches(ip)) {
        return Ok(Principal::Trusted);
    }
    let Some(access_key) = request.access_key() else {
        return Err(Denied::unauthenticated(format!(
            "access denied: no AccessKey on request {} from {ip}: sign requests with an account's credentials",
            request_code::name(request.code())
        )));
    };
    let Some(account) = acl.accounts.get(access_key) else {
        return Err(Denied::unauthenticated(format!(
            "access denied: unknown AccessKey {access_key}"
        )));
    };
    if !account.white_remote_address.matches(ip) {
        request
            .proven(account.signing_key(), window, now_ms)
            .map_err(|e| e.refusal(format_args!("AccessKey {access_key}")))?;
    }
    authorize(account, request.code(), access())?;
    Ok(Principal::Plain(account.clone()))
}

fn authorize(account: &Arc<PlainAccount>, code: i32, access: Access<'_>) -> Result<(), Denied> {
    if matches!(access, Access::Open | Access::Names(_)) || account.admin {
        return Ok(());
    }
    if let Some(why) = access.unresolved() {
        return Err(Denied::new(format!(
            "access denied: request {} {why} (AccessKey {})",
            request_code::name(code),
            account.access_key
        )));
    }
    let Access::Needs(needs) = access else {
        return Err(Denied::new(format!(
            "access denied: request {} ({code}) needs an admin account, and AccessKey {} is not one",
            request_code::name(code),
            account.access_key
        )));
    };
    let is_trace_send = |n: &Need| {
        matches!(&n.resource, Resource::Topic(t) if t == TRACE_TOPIC) && n.perm == permission::PUB
    };
    for Need { resource, perm } in needs.iter().filter(|n| !is_trace_send(n)) {
        if !permission::allows(*perm, account.owned(resource)) {
            return Err(Denied::new(format!(
                "access denied: AccessKey {} has no {} permission on {resource} (request {})",
                account.access_key,
                permission::name(*perm),
                request_code::name(code)
            )));
        }
    }
    Ok(())
}
