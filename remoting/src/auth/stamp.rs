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

use super::signature::{for_each_signed, HmacSha1, Received, Signature, SigningKey, V4_9_3};
use super::SIGNATURE;
use crate::command::RemotingCommand;

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

fn mac_of(key: &SigningKey, request: &RemotingCommand, millis: &str) -> HmacSha1 {
    let mut mac = key.keyed_mac();
    for part in [
        VOSTOK_SIGNATURE,
        "/",
        VERSION,
        "\0",
        &request.code.to_string(),
        "\0",
        millis,
        "\0",
    ] {
        mac.update(part.as_bytes());
    }
    let skip = request.version <= V4_9_3;
    for_each_signed(&request.ext_fields, skip, |k, v| {
        if k == VOSTOK_SIGNATURE || k == SIGNATURE {
            return;
        }
        for part in [k, v] {
            mac.update(&(part.len() as u32).to_be_bytes());
            mac.update(part.as_bytes());
        }
    });
    mac
}

/// Adds (or replaces) `request`'s `VostokSignature`, signed at `now_ms`. Call it once
/// every other field is in place and before RocketMQ's signature.
pub fn stamp(key: &SigningKey, request: &mut RemotingCommand, now_ms: i64) {
    request.ext_fields.remove(VOSTOK_SIGNATURE);
    let millis = now_ms.to_string();
    let mac = Signature::of(mac_of(key, request, &millis));
    let value = format!("{VERSION}.{millis}.{mac}");
    request.ext_fields.insert(VOSTOK_SIGNATURE, value);
}

/// Checks `request`'s `VostokSignature` against `key` and the server's clock: `Ok(None)`
/// when the request has none (a client other than Vostok's), `Ok(Some(signed_ms))`
/// when it verifies and was signed within `max_skew_ms` of `now_ms`. Only meaningful
/// once RocketMQ's signature has verified with the same key.
pub fn verify(
    key: &SigningKey,
    request: &RemotingCommand,
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
    if mac_of(key, request, millis)
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
