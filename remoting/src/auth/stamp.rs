//! Vostok's signature extension (docs/security.md#replay): a second HMAC, in the
//! `VostokSignature` ext field, over what RocketMQ's signature leaves out (the request
//! code, the time of signing, the fields' names), so that a captured request can be
//! neither replayed later nor sent again under another request code.
//!
//! Value: `1.<millis>.<Base64 HmacSHA1>`. The HMAC, keyed with the account's secret,
//! covers `VostokSignature/1`, the code and the millis (decimal, each followed by a
//! NUL), then every signed field but `Signature` and this one, in key order, each as
//! its key's length (u32, big-endian), key, value's length and value. The body is not
//! hashed a second time: RocketMQ's signature binds it to the fields' values, which this
//! one fixes exactly, and a verifier checks both.
//!
//! A client adds the field before computing RocketMQ's signature, so that signature
//! covers it like any other field: an Apache broker, which signs over every ext field
//! but `Signature` (`DefaultAuthenticationContextBuilder`, `PlainAccessResource`),
//! verifies the request as before and ignores the field.

use std::fmt;

use hmac::Mac;

use super::signature::{HmacSha1, Received, Signature, SignedFields, SigningKey, V4_9_3};
use super::SIGNATURE;
use crate::command::RemotingCommand;
use crate::support::decimal::decimal;

/// The ext field.
pub const VOSTOK_SIGNATURE: &str = "VostokSignature";

/// The format's version, first in the value and in the signed content.
const VERSION: &str = "1";

/// Why a `VostokSignature` is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StampError {
    /// Not `1.<millis>.<Base64>`.
    Malformed,
    /// The HMAC does not match: the request code or a field's name was changed after
    /// signing (or the value was made up).
    Forged,
    /// Signed longer ago (or further ahead) than the server allows.
    Stale { signed_ms: i64, skew_ms: i64 },
}

impl fmt::Display for StampError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StampError::Malformed => write!(f, "{VOSTOK_SIGNATURE} is malformed"),
            StampError::Forged => write!(
                f,
                "{VOSTOK_SIGNATURE} does not verify: the request code or a field name was changed after signing"
            ),
            StampError::Stale { signed_ms, skew_ms } => write!(
                f,
                "the request was signed at {signed_ms} (ms since the epoch), {skew_ms} ms away from the server's clock: a replay, or a clock out of sync"
            ),
        }
    }
}

fn mac_of(key: &SigningKey, code: i32, millis: &str, fields: &SignedFields<'_>) -> HmacSha1 {
    let mut mac = key.keyed_mac();
    let mut digits = [0u8; 20];
    let head: [&[u8]; 8] = [
        VOSTOK_SIGNATURE.as_bytes(),
        b"/",
        VERSION.as_bytes(),
        b"\0",
        decimal(i64::from(code), &mut digits),
        b"\0",
        millis.as_bytes(),
        b"\0",
    ];
    for part in head {
        mac.update(part);
    }
    for (k, v) in fields.iter() {
        if k == VOSTOK_SIGNATURE || k == SIGNATURE {
            continue;
        }
        for part in [k, v] {
            mac.update(&(part.len() as u32).to_be_bytes());
            mac.update(part.as_bytes());
        }
    }
    mac
}

/// Adds (or replaces) `request`'s `VostokSignature`, signed at `now_ms`. Call it once
/// every other field is in place and before RocketMQ's signature.
pub fn stamp(key: &SigningKey, request: &mut RemotingCommand, now_ms: i64) {
    request.ext_fields.remove(VOSTOK_SIGNATURE);
    let millis = now_ms.to_string();
    let fields = SignedFields::of(&request.ext_fields, request.version <= V4_9_3);
    let mac = Signature::of(mac_of(key, request.code, &millis, &fields));
    let value = format!("{VERSION}.{millis}.{mac}");
    request.ext_fields.insert(VOSTOK_SIGNATURE, value);
}

/// Checks `request`'s `VostokSignature` against `key` and the server's clock: `Ok(None)`
/// when the request has none (a client other than Vostok's), `Ok(Some(signed_ms))`
/// when it verifies and was signed within `max_skew_ms` of `now_ms`. Only meaningful
/// once RocketMQ's signature has verified with the same key ([`verify_signed`] checks
/// both).
pub fn verify(
    key: &SigningKey,
    request: &RemotingCommand,
    now_ms: i64,
    max_skew_ms: i64,
) -> Result<Option<i64>, StampError> {
    let fields = SignedFields::of(&request.ext_fields, request.version <= V4_9_3);
    verify_fields(key, request, &fields, now_ms, max_skew_ms)
}

fn verify_fields(
    key: &SigningKey,
    request: &RemotingCommand,
    fields: &SignedFields<'_>,
    now_ms: i64,
    max_skew_ms: i64,
) -> Result<Option<i64>, StampError> {
    let Some(value) = request.ext_fields.get(VOSTOK_SIGNATURE) else {
        return Ok(None);
    };
    let mut parts = value.splitn(3, '.');
    let (Some(VERSION), Some(millis), Some(mac)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(StampError::Malformed);
    };
    let signed_ms: i64 = millis.parse().map_err(|_| StampError::Malformed)?;
    let received = Received::decode(mac).ok_or(StampError::Malformed)?;
    if mac_of(key, request.code, millis, fields)
        .verify_slice(received.bytes())
        .is_err()
    {
        return Err(StampError::Forged);
    }
    let skew_ms = now_ms.saturating_sub(signed_ms).saturating_abs();
    if skew_ms > max_skew_ms {
        return Err(StampError::Stale { signed_ms, skew_ms });
    }
    Ok(Some(signed_ms))
}

/// Why a signed request is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unproven {
    /// RocketMQ's `Signature` is missing or does not sign the fields and body.
    Signature,
    /// RocketMQ's signature holds, Vostok's does not.
    Stamp(StampError),
}

/// RocketMQ's signature of `request` (fields and body, as
/// [`SigningKey::verify`]), then its `VostokSignature` (as [`verify`]), over one
/// sorted list of its fields: what a server checks of every signed request.
pub fn verify_signed(
    key: &SigningKey,
    request: &RemotingCommand,
    now_ms: i64,
    max_skew_ms: i64,
) -> Result<Option<i64>, Unproven> {
    let received = request
        .ext_fields
        .get(SIGNATURE)
        .and_then(Received::decode)
        .ok_or(Unproven::Signature)?;
    let fields = SignedFields::of(&request.ext_fields, request.version <= V4_9_3);
    if fields
        .mac(key, &request.body)
        .verify_slice(received.bytes())
        .is_err()
    {
        return Err(Unproven::Signature);
    }
    verify_fields(key, request, &fields, now_ms, max_skew_ms).map_err(Unproven::Stamp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::signature;

    const NOW: i64 = 1_764_000_000_000;
    const SKEW: i64 = 15 * 60 * 1000;

    fn send(key: &SigningKey) -> RemotingCommand {
        let mut r = RemotingCommand::request(310).with_body(&b"hello"[..]);
        r.ext_fields.insert("b", "TopicA");
        r.ext_fields.insert("e", "3");
        r.ext_fields.insert("AccessKey", "RocketMQ");
        stamp(key, &mut r, NOW);
        let sig = key.sign(&r.ext_fields, &r.body);
        r.ext_fields.insert(SIGNATURE, sig);
        r
    }

    #[test]
    fn a_stamped_request_verifies_and_keeps_rocketmqs_signature_valid() {
        let key = SigningKey::new("12345678");
        let r = send(&key);
        assert_eq!(verify(&key, &r, NOW + 1000, SKEW), Ok(Some(NOW)));
        // RocketMQ's check, which covers every field but Signature, still passes.
        let sig = r.ext_fields.get(SIGNATURE).unwrap();
        assert!(signature::verify(
            "12345678",
            &r.ext_fields,
            &r.body,
            r.version,
            sig
        ));
        let unstamped = RemotingCommand::request(310);
        assert_eq!(verify(&key, &unstamped, NOW, SKEW), Ok(None));
    }

    /// The value for a fixed request, computed apart from this code (Python's `hmac`
    /// over the content the module doc describes), so the format cannot drift.
    #[test]
    fn the_stamp_is_the_documented_hmac() {
        let key = SigningKey::new("12345678");
        let r = send(&key);
        assert_eq!(
            r.ext_fields.get(VOSTOK_SIGNATURE),
            Some(format!("1.{NOW}.XX6TSsDOxRpBgN+sMMD2+brnoT0=").as_str())
        );
    }

    #[test]
    fn both_signatures_are_checked_in_one_pass() {
        let key = SigningKey::new("12345678");
        let r = send(&key);
        assert_eq!(verify_signed(&key, &r, NOW, SKEW), Ok(Some(NOW)));
        let mut body = send(&key);
        body.body = b"another body"[..].into();
        assert_eq!(
            verify_signed(&key, &body, NOW, SKEW),
            Err(Unproven::Signature)
        );
        let mut unsigned = send(&key);
        unsigned.ext_fields.remove(SIGNATURE);
        assert_eq!(
            verify_signed(&key, &unsigned, NOW, SKEW),
            Err(Unproven::Signature)
        );
        let mut retargeted = send(&key);
        retargeted.code = 11;
        assert_eq!(
            verify_signed(&key, &retargeted, NOW, SKEW),
            Err(Unproven::Stamp(StampError::Forged))
        );
        assert!(matches!(
            verify_signed(&key, &r, NOW + SKEW + 1, SKEW),
            Err(Unproven::Stamp(StampError::Stale { .. }))
        ));
        // Signed by a client without the extension: RocketMQ's signature alone.
        let mut plain = RemotingCommand::request(310).with_body(&b"hello"[..]);
        plain.ext_fields.insert("b", "TopicA");
        let sig = key.sign(&plain.ext_fields, &plain.body);
        plain.ext_fields.insert(SIGNATURE, sig);
        assert_eq!(verify_signed(&key, &plain, NOW, SKEW), Ok(None));
    }

    #[test]
    fn another_code_a_renamed_field_or_an_old_request_is_refused() {
        let key = SigningKey::new("12345678");
        let mut retargeted = send(&key);
        retargeted.code = 11;
        assert_eq!(
            verify(&key, &retargeted, NOW, SKEW),
            Err(StampError::Forged)
        );
        // Same values in the same order (so RocketMQ's signature still verifies),
        // under another name.
        let mut renamed = send(&key);
        let v = renamed.ext_fields.remove("e").unwrap();
        renamed.ext_fields.insert("d", v);
        assert_eq!(verify(&key, &renamed, NOW, SKEW), Err(StampError::Forged));
        let r = send(&key);
        assert_eq!(
            verify(&key, &r, NOW + SKEW + 1, SKEW),
            Err(StampError::Stale {
                signed_ms: NOW,
                skew_ms: SKEW + 1
            })
        );
        assert!(verify(&key, &r, NOW - SKEW, SKEW).is_ok(), "ahead is fine");
        assert_eq!(
            verify(&SigningKey::new("another"), &r, NOW, SKEW),
            Err(StampError::Forged)
        );
        for bad in ["", "1", "1.x.AAAA", "2.5.AAAA", "1.5.%%%"] {
            let mut m = send(&key);
            m.ext_fields.insert(VOSTOK_SIGNATURE, bad);
            assert_eq!(
                verify(&key, &m, NOW, SKEW),
                Err(StampError::Malformed),
                "{bad}"
            );
        }
    }
}
