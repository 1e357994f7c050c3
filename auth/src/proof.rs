//! What a request offers to prove who sent it, and when: the same accounts and
//! permissions are checked whichever way it came.
//!
//! * A remoting request: `AccessKey` and `Signature` in its ext fields, the signature
//!   over its fields and body (docs/security.md#signature); from Vostok's clients also
//!   `VostokSignature`, over the request code and the time (docs/security.md#replay).
//! * A gRPC call of the 5.x clients: the `authorization` metadata, a signature over the
//!   call's `x-mq-date-time` (docs/security.md#grpc).
//! * A console session ([`MacProof`]): an HMAC made at login with the secret typed in.

use vostok_remoting::auth::grpc::{parse_date_time, GrpcAuthorization};
use vostok_remoting::auth::signature::SigningKey;
use vostok_remoting::auth::stamp::{self, VOSTOK_SIGNATURE};
use vostok_remoting::auth::{ACCESS_KEY, SIGNATURE};
use vostok_remoting::RemotingCommand;

use crate::resource::Denied;

/// How far from the server's clock a signed time may be (docs/security.md#replay).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeWindow {
    /// `authenticationMaxTimeSkewMillis`: the most a signed time may differ from the
    /// server's clock, either way.
    pub max_skew_ms: i64,
    /// `authenticationTimeRequired`: remoting requests without `VostokSignature`
    /// (every client but Vostok's) are refused.
    pub required: bool,
    /// `grpcSignedDateUtc`: the 5.x clients' `x-mq-date-time` is UTC. Off, a date is
    /// read in whichever time zone brings it nearest the clock, since Java, Python and
    /// Go clients write local time.
    pub grpc_date_utc: bool,
}

/// 15 minutes, as AWS Signature Version 4 allows.
pub const DEFAULT_MAX_SKEW_MS: i64 = 15 * 60 * 1000;

impl Default for TimeWindow {
    fn default() -> Self {
        TimeWindow {
            max_skew_ms: DEFAULT_MAX_SKEW_MS,
            required: false,
            grpc_date_utc: false,
        }
    }
}

/// The sender's claim, checked against an account's secret.
pub trait Proof {
    /// The request code (gRPC calls name the remoting request they stand for), for
    /// whitelists and remarks.
    fn code(&self) -> i32;
    /// The access key (ACL 2.0: the user name) the request claims, if any.
    fn access_key(&self) -> Option<&str>;
    /// True when the request is signed with the secret `key` was made from.
    fn signed_with(&self, key: &SigningKey) -> bool;
    /// Once [`Proof::signed_with`] holds: whether the time it was signed at (when it
    /// says) is within `window` of `now_ms`; the error says why not.
    fn signed_in_time(
        &self,
        key: &SigningKey,
        window: &TimeWindow,
        now_ms: i64,
    ) -> Result<(), String>;
    /// [`Proof::signed_with`], then [`Proof::signed_in_time`]: what the guards ask of
    /// every request. A remoting request does both over one sorted list of its fields.
    fn proven(&self, key: &SigningKey, window: &TimeWindow, now_ms: i64) -> Result<(), Unproven> {
        if !self.signed_with(key) {
            return Err(Unproven::Signature);
        }
        self.signed_in_time(key, window, now_ms)
            .map_err(Unproven::Time)
    }
}

/// Why [`Proof::proven`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unproven {
    /// Not signed with the account's secret.
    Signature,
    /// Signed, but not in time (or the time's proof is missing or forged); says why.
    Time(String),
}

impl Unproven {
    /// The refusal of a request whose proof failed, naming the key it claimed
    /// (`AccessKey K`, `User:N`): the same words from every checker.
    pub(crate) fn refusal(self, who: impl std::fmt::Display) -> Denied {
        Denied::unauthenticated(match self {
            Unproven::Signature => format!("access denied: signature check failed for {who}"),
            Unproven::Time(why) => format!("access denied: {why} ({who})"),
        })
    }
}

impl Proof for RemotingCommand {
    fn code(&self) -> i32 {
        self.code
    }

    fn access_key(&self) -> Option<&str> {
        self.ext_fields.get(ACCESS_KEY).filter(|k| !k.is_empty())
    }

    fn signed_with(&self, key: &SigningKey) -> bool {
        self.ext_fields
            .get(SIGNATURE)
            .is_some_and(|sig| key.verify(&self.ext_fields, &self.body, self.version, sig))
    }

    fn signed_in_time(
        &self,
        key: &SigningKey,
        window: &TimeWindow,
        now_ms: i64,
    ) -> Result<(), String> {
        match stamp::verify(key, self, now_ms, window.max_skew_ms) {
            Ok(Some(_)) => Ok(()),
            Ok(None) if window.required => Err(no_stamp()),
            Ok(None) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }

    fn proven(&self, key: &SigningKey, window: &TimeWindow, now_ms: i64) -> Result<(), Unproven> {
        match stamp::verify_signed(key, self, now_ms, window.max_skew_ms) {
            Ok(Some(_)) => Ok(()),
            Ok(None) if window.required => Err(Unproven::Time(no_stamp())),
            Ok(None) => Ok(()),
            Err(stamp::Unproven::Signature) => Err(Unproven::Signature),
            Err(stamp::Unproven::Stamp(e)) => Err(Unproven::Time(e.to_string())),
        }
    }
}

fn no_stamp() -> String {
    format!(
        "the request carries no {VOSTOK_SIGNATURE} (code and time), which authenticationTimeRequired=true asks of every client"
    )
}

/// A gRPC call: its `authorization` (when sent and well formed) and `x-mq-date-time`.
#[derive(Debug, Clone, Copy)]
pub struct GrpcProof<'a> {
    /// The remoting request code the call stands for.
    pub code: i32,
    pub authorization: Option<&'a GrpcAuthorization>,
    pub date_time: &'a str,
}

/// UTC offsets in use, in quarter hours: UTC−12:00 to UTC+14:00.
const ZONES: std::ops::RangeInclusive<i64> = -48..=56;
const QUARTER_HOUR_MS: i64 = 15 * 60 * 1000;

/// How far `date_ms` (a local time read as UTC) is from `now_ms`, in the time zone
/// that brings it nearest, or in UTC alone.
fn date_skew(date_ms: i64, now_ms: i64, utc_only: bool) -> i64 {
    let off = date_ms.saturating_sub(now_ms);
    if utc_only {
        return off.saturating_abs();
    }
    let zone = off
        .saturating_add(QUARTER_HOUR_MS / 2)
        .div_euclid(QUARTER_HOUR_MS)
        .clamp(*ZONES.start(), *ZONES.end());
    off.saturating_sub(zone * QUARTER_HOUR_MS).saturating_abs()
}

impl Proof for GrpcProof<'_> {
    fn code(&self) -> i32 {
        self.code
    }

    fn access_key(&self) -> Option<&str> {
        self.authorization
            .map(|a| a.access_key.as_str())
            .filter(|k| !k.is_empty())
    }

    fn signed_with(&self, key: &SigningKey) -> bool {
        self.authorization
            .is_some_and(|a| a.verify_with(key, self.date_time))
    }

    fn signed_in_time(
        &self,
        _key: &SigningKey,
        window: &TimeWindow,
        now_ms: i64,
    ) -> Result<(), String> {
        let Some(date_ms) = parse_date_time(self.date_time) else {
            return Err(format!(
                "x-mq-date-time {:?} is not a yyyyMMdd'T'HHmmss'Z' time",
                self.date_time
            ));
        };
        let skew = date_skew(date_ms, now_ms, window.grpc_date_utc);
        if skew > window.max_skew_ms {
            return Err(format!(
                "x-mq-date-time {} is {skew} ms away from the server's clock{} (at most {} ms): a replay, or a clock out of sync",
                self.date_time,
                if window.grpc_date_utc { "" } else { " in every time zone" },
                window.max_skew_ms
            ));
        }
        Ok(())
    }
}

/// A proof of the secret without a signed request: HmacSHA1 of `content` keyed with
/// the secret. The console makes one at login, from the secret typed in and a random
/// content, and keeps it with the session: each page is then checked against the
/// account as it is now (a changed secret or a removed account ends the session), and
/// the session holds no secret.
#[derive(Debug, Clone, Copy)]
pub struct MacProof<'a> {
    /// The request the action stands for.
    pub code: i32,
    pub access_key: &'a str,
    pub content: &'a [u8],
    /// The raw HMAC (20 bytes).
    pub mac: &'a [u8],
}

impl MacProof<'_> {
    /// The HMAC a [`MacProof`] carries: of `content`, keyed with `secret`.
    pub fn mac_of(secret: &str, content: &[u8]) -> [u8; 20] {
        SigningKey::new(secret).mac_content(content)
    }
}

impl Proof for MacProof<'_> {
    fn code(&self) -> i32 {
        self.code
    }

    fn access_key(&self) -> Option<&str> {
        Some(self.access_key).filter(|k| !k.is_empty())
    }

    fn signed_with(&self, key: &SigningKey) -> bool {
        key.verify_content(self.content, self.mac)
    }

    fn signed_in_time(&self, _: &SigningKey, _: &TimeWindow, _: i64) -> Result<(), String> {
        // The session's own expiry bounds it.
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000;

    #[test]
    fn a_local_date_is_read_in_the_nearest_time_zone() {
        let now = 1_796_126_400_000;
        // UTC, UTC+8 (Shanghai), UTC−5, UTC+5:45 (Kathmandu), each a minute off.
        for off in [0, 8 * H, -5 * H, 5 * H + 45 * 60_000] {
            assert_eq!(date_skew(now + off + 60_000, now, false), 60_000, "{off}");
        }
        assert_eq!(date_skew(now + 8 * H, now, true), 8 * H);
        // Past UTC+14 or UTC−12 no zone helps.
        assert_eq!(date_skew(now + 15 * H, now, false), H);
        assert_eq!(date_skew(now - 13 * H, now, false), H);
        // Between zones: at most 7.5 minutes from some zone.
        assert_eq!(date_skew(now + 7 * 60_000, now, false), 7 * 60_000);
        assert_eq!(date_skew(now + 8 * 60_000, now, false), 7 * 60_000);
    }

    #[test]
    fn a_grpc_date_out_of_the_window_is_refused() {
        let key = SigningKey::new("secret");
        let window = TimeWindow {
            max_skew_ms: 5 * 60_000,
            grpc_date_utc: true,
            ..TimeWindow::default()
        };
        let now = 1_796_126_400_000;
        let proof = |date_time| GrpcProof {
            code: 310,
            authorization: None,
            date_time,
        };
        assert!(proof("20261201T120400Z")
            .signed_in_time(&key, &window, now)
            .is_ok());
        let late = proof("20261201T121000Z").signed_in_time(&key, &window, now);
        assert!(late.is_err_and(|e| e.contains("600000 ms away")));
        assert!(proof("")
            .signed_in_time(&key, &window, now)
            .is_err_and(|e| e.contains("is not a")));
    }

    #[test]
    fn a_mac_proof_verifies_with_the_secret_it_was_made_from() {
        let mac = MacProof::mac_of("secret-1", b"nonce");
        let proof = MacProof {
            code: 0,
            access_key: "ak",
            content: b"nonce",
            mac: &mac,
        };
        assert_eq!(mac.len(), 20);
        assert!(proof.signed_with(&SigningKey::new("secret-1")));
        assert!(!proof.signed_with(&SigningKey::new("secret-2")));
    }
}
