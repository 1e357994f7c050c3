//! Console logins when ACL is on (docs/operations.md#console-security): an account of
//! the broker's ACL (access key and secret key; ACL 2.0: user name and password) signs
//! in, and gets a session cookie.
//!
//! At login the guard checks the secret typed in as it checks a signed request: the
//! session keeps the access key, a random content and the HMAC of that content keyed
//! with the secret ([`MacProof`]). Each page then asks the guard again with that proof,
//! so a changed secret or a removed account ends the session at once, and each page is
//! authorized as the account's own request would be.
//!
//! The session also holds the account's credentials, in memory only and for its life
//! alone, to sign the requests the cluster-wide pages send to other brokers as this
//! account (`remote`): they are never logged (their `Debug` hides the secret), never
//! written to disk and never put in a page, and are dropped with the session (sign-out,
//! expiry, a changed secret).
//!
//! The cookie: a random 256-bit token, `HttpOnly` (no script reads it), `SameSite=Strict`
//! (no other site's page sends it), `Path=/`, good for [`SESSION_TTL`]. At most
//! [`MAX_SESSIONS`] live at once; a login past that ends the oldest.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use vostok_auth::{Access, Denied, Guard, MacProof};
use vostok_observe::http::HttpRequest;
use vostok_remoting::auth::SessionCredentials;
use vostok_remoting::support::sync::MutexExt;

/// The session cookie's name.
pub(crate) const COOKIE: &str = "vostok_console";
/// How long a session lasts from its login.
pub(crate) const SESSION_TTL: Duration = Duration::from_secs(8 * 3600);
/// Sessions kept at once.
const MAX_SESSIONS: usize = 256;
/// The request code a login stands for, in the guard's remarks and whitelists: none.
const LOGIN: i32 = 0;

/// One signed-in account.
pub(crate) struct Session {
    pub(crate) access_key: String,
    content: [u8; 32],
    mac: [u8; 20],
    expires: Instant,
    /// The account's keys, to sign requests to other brokers as this account.
    credentials: SessionCredentials,
}

impl Session {
    /// The proof of the secret for a page that stands for request `code`.
    pub(crate) fn proof(&self, code: i32) -> MacProof<'_> {
        MacProof {
            code,
            access_key: &self.access_key,
            content: &self.content,
            mac: &self.mac,
        }
    }

    /// The keys that sign this account's requests to other brokers.
    pub(crate) fn credentials(&self) -> &SessionCredentials {
        &self.credentials
    }
}

/// The live sessions, by cookie token.
#[derive(Default)]
pub(crate) struct Sessions {
    table: Mutex<HashMap<String, Arc<Session>>>,
}

fn random_hex(bytes: usize) -> String {
    (0..bytes)
        .map(|_| format!("{:02x}", rand::random::<u8>()))
        .collect()
}

impl Sessions {
    /// Signs `access_key` in from `ip` if `secret` is its secret (as the guard decides
    /// for a signed request from `ip`): the new session's cookie token.
    pub(crate) fn login(
        &self,
        guard: &Guard,
        ip: IpAddr,
        access_key: &str,
        secret: &str,
    ) -> Result<(String, Arc<Session>), Denied> {
        let content: [u8; 32] = rand::random();
        let mac = MacProof::mac_of(secret, &content);
        let session = Arc::new(Session {
            access_key: access_key.to_owned(),
            content,
            mac,
            expires: Instant::now() + SESSION_TTL,
            credentials: SessionCredentials::new(access_key, secret),
        });
        guard.check(ip, &session.proof(LOGIN), || Access::Open)?;
        let token = random_hex(32);
        let mut table = self.table.locked();
        let now = Instant::now();
        table.retain(|_, s| s.expires > now);
        while table.len() >= MAX_SESSIONS {
            let Some(oldest) = table
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(t, _)| t.clone())
            else {
                break;
            };
            table.remove(&oldest);
        }
        table.insert(token.clone(), session.clone());
        Ok((token, session))
    }

    /// The session whose cookie `r` carries, while it lasts and its account still
    /// signs in with the same secret from `r`'s address (else it ends).
    pub(crate) fn of(&self, guard: &Guard, r: &HttpRequest) -> Option<Arc<Session>> {
        let token = cookie(r)?;
        let session = self.table.locked().get(token)?.clone();
        let valid = session.expires > Instant::now()
            && guard
                .check(r.peer.ip(), &session.proof(LOGIN), || Access::Open)
                .is_ok();
        if !valid {
            self.table.locked().remove(token);
            return None;
        }
        Some(session)
    }

    /// Ends the session whose cookie `r` carries.
    pub(crate) fn logout(&self, r: &HttpRequest) {
        if let Some(token) = cookie(r) {
            self.table.locked().remove(token);
        }
    }
}

/// The session token in `r`'s `Cookie` header.
fn cookie(r: &HttpRequest) -> Option<&str> {
    r.headers
        .iter()
        .filter(|(k, _)| k == "cookie")
        .flat_map(|(_, v)| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, token)| token.trim())
        .filter(|t| !t.is_empty())
}

/// The `Set-Cookie` value of a new session.
pub(crate) fn set_cookie(token: &str) -> String {
    format!(
        "{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
        SESSION_TTL.as_secs()
    )
}

/// The `Set-Cookie` value that removes the cookie.
pub(crate) fn clear_cookie() -> String {
    format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_cookie(value: &str) -> HttpRequest {
        HttpRequest {
            method: "GET".into(),
            path: "/".into(),
            query: String::new(),
            headers: vec![("cookie".into(), value.into())],
            body: Default::default(),
            peer: "127.0.0.1:5000".parse().unwrap(),
        }
    }

    #[test]
    fn the_cookie_is_found_among_others_and_is_strict() {
        assert_eq!(
            cookie(&with_cookie("a=1; vostok_console=abc ; b=2")),
            Some("abc")
        );
        assert_eq!(cookie(&with_cookie("vostok_console=")), None);
        assert_eq!(cookie(&with_cookie("other=abc")), None);
        let set = set_cookie("t0k");
        for part in [
            "vostok_console=t0k",
            "HttpOnly",
            "SameSite=Strict",
            "Max-Age=28800",
        ] {
            assert!(set.contains(part), "{set}");
        }
        assert_eq!(random_hex(32).len(), 64);
    }
}
