//! The request signature (docs/security.md#signature).
//!
//! Content: every ext field except `Signature`, sorted by key (byte order, so
//! `AccessKey` and `SecurityToken` come before lowercase header keys), the values
//! concatenated without keys or separators, then the body as sent. Signature:
//! HmacSHA1 of the content keyed with the secret (UTF-8), in standard Base64 with
//! padding.
//!
//! A verifier rebuilds the content from the fields exactly as received: a value that
//! arrived as a JSON number is its literal text (the JSON reader keeps it so), and a
//! key sent twice counts once with its last value, as Java's map keeps it. Java
//! clients up to 4.9.3 did not sign `_UNIQUE_KEY_QUERY`, so it is left out for
//! requests whose version is at most V4_9_3.
//!
//! The HMAC is fed field by field: no content buffer is built, so signing costs the
//! hash and one small sort per request.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha1::Sha1;

use super::SIGNATURE;
use crate::command::ExtFields;

type HmacSha1 = Hmac<Sha1>;

/// Ext field Java clients up to 4.9.3 added after signing.
pub const UNIQUE_KEY_QUERY: &str = "_UNIQUE_KEY_QUERY";

/// `MQVersion` ordinal of 4.9.3, the last release that signed only declared fields.
pub const V4_9_3: i32 = 399;

/// The signed fields of `ext`, sorted by key, one per key (the last one sent).
pub fn signed_fields(ext: &ExtFields, skip_unique_key_query: bool) -> Vec<(&str, &str)> {
    let mut fields: Vec<(&str, &str)> = ext
        .iter()
        .filter(|(k, _)| *k != SIGNATURE && !(skip_unique_key_query && *k == UNIQUE_KEY_QUERY))
        .collect();
    // Stable: among equal keys the order sent is kept, so the last of a run is the
    // value Java's map holds.
    fields.sort_by(|a, b| a.0.cmp(b.0));
    let mut keep = 0;
    for i in 0..fields.len() {
        if fields.get(i + 1).is_none_or(|next| next.0 != fields[i].0) {
            fields[keep] = fields[i];
            keep += 1;
        }
    }
    fields.truncate(keep);
    fields
}

/// The signed content as one byte string (for tests and diagnostics; signing and
/// verifying feed the HMAC without building it).
pub fn content(ext: &ExtFields, body: &[u8], skip_unique_key_query: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for (_, v) in signed_fields(ext, skip_unique_key_query) {
        out.extend_from_slice(v.as_bytes());
    }
    out.extend_from_slice(body);
    out
}

fn mac(secret: &[u8]) -> HmacSha1 {
    // HMAC takes keys of any length; the error case cannot happen.
    <HmacSha1 as Mac>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"))
}

fn keyed(secret: &str, ext: &ExtFields, body: &[u8], skip_unique_key_query: bool) -> HmacSha1 {
    let mut mac = mac(secret.as_bytes());
    for (_, v) in signed_fields(ext, skip_unique_key_query) {
        mac.update(v.as_bytes());
    }
    mac.update(body);
    mac
}

/// Base64 HmacSHA1 of raw `content` (what the C++ client's `spas_sign` computes).
pub fn sign_content(secret: &str, content: &[u8]) -> String {
    let mut mac = mac(secret.as_bytes());
    mac.update(content);
    STANDARD.encode(mac.finalize().into_bytes())
}

/// The signature a client puts in `Signature` for these fields and body.
pub fn sign(secret: &str, ext: &ExtFields, body: &[u8]) -> String {
    STANDARD.encode(keyed(secret, ext, body, false).finalize().into_bytes())
}

/// Whether `signature` (as received) signs these fields and body with `secret`.
/// The comparison takes the same time wherever the first difference lies.
pub fn verify(secret: &str, ext: &ExtFields, body: &[u8], version: i32, signature: &str) -> bool {
    // A SHA-1 HMAC is 20 bytes: decoded on the stack, anything longer is no match.
    let mut received = [0u8; 32];
    let Ok(len) = STANDARD.decode_slice(signature.trim(), &mut received) else {
        return false;
    };
    keyed(secret, ext, body, version <= V4_9_3)
        .verify_slice(&received[..len])
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::json_header;

    /// Base64(HmacSHA1(key, data)) with the test vector of RFC 2202 case 2.
    #[test]
    fn hmac_sha1_matches_the_rfc_vector() {
        // RFC 2202: key "Jefe", data "what do ya want for nothing?",
        // digest effcdf6ae5eb2fa2d27416d5f184df9c259a7c79.
        assert_eq!(
            sign_content("Jefe", b"what do ya want for nothing?"),
            "7/zfauXrL6LSdBbV8YTfnCWafHk="
        );
    }

    #[test]
    fn content_is_sorted_values_then_body_without_the_signature() {
        let ext: ExtFields = [
            ("topic", "T"),
            ("AccessKey", "ak"),
            ("Signature", "old"),
            ("queueId", "3"),
            ("SecurityToken", "tok"),
        ]
        .into_iter()
        .collect();
        // AccessKey < SecurityToken < queueId < topic in byte order.
        assert_eq!(content(&ext, b"BODY", false), b"aktok3TBODY");
    }

    #[test]
    fn a_key_sent_twice_counts_once_with_its_last_value() {
        let header = br#"{"code":10,"extFields":{"topic":"A","AccessKey":"ak","topic":"B"},"flag":0,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":479}"#;
        let cmd = json_header::decode(header).unwrap();
        assert_eq!(content(&cmd.ext_fields, b"", false), b"akB");
    }

    #[test]
    fn unique_key_query_is_unsigned_for_old_clients_only() {
        let ext: ExtFields = [
            ("AccessKey", "ak"),
            ("_UNIQUE_KEY_QUERY", "true"),
            ("topic", "T"),
        ]
        .into_iter()
        .collect();
        let new = sign("secret12", &ext, b"");
        assert!(verify("secret12", &ext, b"", 479, &new));
        assert!(!verify("secret12", &ext, b"", V4_9_3, &new));
        let mut without = ext.clone();
        without.remove(UNIQUE_KEY_QUERY);
        let old = sign("secret12", &without, b"");
        assert!(verify("secret12", &ext, b"", V4_9_3, &old));
        assert!(!verify("secret12", &ext, b"", 479, &old));
    }

    #[test]
    fn verification_refuses_a_wrong_key_a_changed_field_or_garbage() {
        let ext: ExtFields = [("AccessKey", "ak"), ("topic", "T")].into_iter().collect();
        let sig = sign("secret12", &ext, b"body");
        assert!(verify("secret12", &ext, b"body", 479, &sig));
        assert!(!verify("secret13", &ext, b"body", 479, &sig));
        assert!(!verify("secret12", &ext, b"bodY", 479, &sig));
        let mut changed = ext.clone();
        changed.insert("topic", "U");
        assert!(!verify("secret12", &changed, b"body", 479, &sig));
        assert!(!verify("secret12", &ext, b"body", 479, "not base64!"));
        assert!(!verify("secret12", &ext, b"body", 479, ""));
    }
}
