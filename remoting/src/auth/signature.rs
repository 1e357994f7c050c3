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
//! Every signed request pays the SHA-1 of its body on both sides, so the rest is kept
//! off the request path: a [`SigningKey`] holds the HMAC's inner and outer padded
//! states, computed once per secret (two SHA-1 blocks saved per request); the values
//! are fed to the HMAC one by one, in an order sorted on the stack (no content
//! buffer, no field list on the heap); the Base64 text is written on the stack
//! ([`Signature`]) and a received one decoded there, then compared in constant time.

use std::fmt;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha1::Sha1;

use super::SIGNATURE;
use crate::command::ExtFields;

pub(crate) type HmacSha1 = Hmac<Sha1>;

/// Ext field Java clients up to 4.9.3 added after signing.
pub const UNIQUE_KEY_QUERY: &str = "_UNIQUE_KEY_QUERY";

/// `MQVersion` ordinal of 4.9.3, the last release that signed only declared fields.
pub const V4_9_3: i32 = 399;

/// Length of a signature in Base64: 20 bytes of HmacSHA1, padded.
const SIGNATURE_LEN: usize = 28;

/// Signed fields sorted on the stack: requests carry a dozen or two; more go to
/// the heap.
const INLINE_FIELDS: usize = 32;

/// The signed fields of a request in key order, one per key (the last one sent),
/// sorted once on the stack (on the heap past [`INLINE_FIELDS`]): a verifier walks
/// them twice, for RocketMQ's signature and for Vostok's stamp.
pub(crate) struct SignedFields<'a> {
    inline: [(&'a str, &'a str); INLINE_FIELDS],
    heap: Vec<(&'a str, &'a str)>,
    len: usize,
}

impl<'a> SignedFields<'a> {
    pub(crate) fn of(ext: &'a ExtFields, skip_unique_key_query: bool) -> SignedFields<'a> {
        let signed = |k: &str| k != SIGNATURE && !(skip_unique_key_query && k == UNIQUE_KEY_QUERY);
        let mut out = SignedFields {
            inline: [("", ""); INLINE_FIELDS],
            heap: Vec::new(),
            len: 0,
        };
        if ext.len() <= INLINE_FIELDS {
            // A plain loop: the iterator adapters it replaces copied each pair through
            // the stack twice.
            for (k, v) in ext.iter() {
                if signed(k) {
                    out.inline[out.len] = (k, v);
                    out.len += 1;
                }
            }
        } else {
            out.heap.extend(ext.iter().filter(|(k, _)| signed(k)));
            out.len = out.heap.len();
        }
        let fields = out.all_mut();
        // Stable (and, at these sizes, without a heap buffer): among equal keys the
        // order sent is kept, so the last of a run is the value Java's map holds.
        fields.sort_by(|a, b| a.0.cmp(b.0));
        // Keep the last of each run of equal keys, in place.
        let mut kept = 0;
        for i in 0..fields.len() {
            if fields.get(i + 1).is_none_or(|next| next.0 != fields[i].0) {
                fields[kept] = fields[i];
                kept += 1;
            }
        }
        out.len = kept;
        out
    }

    fn all_mut(&mut self) -> &mut [(&'a str, &'a str)] {
        if self.heap.is_empty() {
            &mut self.inline[..self.len]
        } else {
            &mut self.heap[..self.len]
        }
    }

    /// Key and value of every signed field, in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str)> + '_ {
        let all = if self.heap.is_empty() {
            &self.inline[..self.len]
        } else {
            &self.heap[..self.len]
        };
        all.iter().copied()
    }

    /// RocketMQ's signature over these fields and `body`: the values, then the body.
    pub(crate) fn mac(&self, key: &SigningKey, body: &[u8]) -> HmacSha1 {
        let mut mac = key.mac.clone();
        for (_, v) in self.iter() {
            mac.update(v.as_bytes());
        }
        mac.update(body);
        mac
    }
}

/// Calls `each` with the key and value of every signed field of `ext`, in key order,
/// one per key (the last one sent).
pub(crate) fn for_each_signed<'a>(
    ext: &'a ExtFields,
    skip_unique_key_query: bool,
    mut each: impl FnMut(&'a str, &'a str),
) {
    for (k, v) in SignedFields::of(ext, skip_unique_key_query).iter() {
        each(k, v);
    }
}

/// The signed content as one byte string (for tests and diagnostics; signing and
/// verifying feed the HMAC without building it).
pub fn content(ext: &ExtFields, body: &[u8], skip_unique_key_query: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for_each_signed(ext, skip_unique_key_query, |_, v| {
        out.extend_from_slice(v.as_bytes())
    });
    out.extend_from_slice(body);
    out
}

/// A secret made ready to sign and verify: the HMAC keyed once, its padded states
/// kept, so that a request costs the hash of its content only. `Debug` never shows
/// the secret (nor the states, which stand for it).
#[derive(Clone)]
pub struct SigningKey {
    mac: HmacSha1,
}

impl SigningKey {
    pub fn new(secret: &str) -> SigningKey {
        // HMAC takes keys of any length; the error case cannot happen.
        let mac = <HmacSha1 as Mac>::new_from_slice(secret.as_bytes())
            .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
        SigningKey { mac }
    }

    fn keyed(&self, ext: &ExtFields, body: &[u8], skip_unique_key_query: bool) -> HmacSha1 {
        SignedFields::of(ext, skip_unique_key_query).mac(self, body)
    }

    /// The signature a client puts in `Signature` for these fields and body.
    pub fn sign(&self, ext: &ExtFields, body: &[u8]) -> Signature {
        Signature::of(self.keyed(ext, body, false))
    }

    /// Whether `signature` (as received) signs these fields and body. The comparison
    /// takes the same time wherever the first difference lies.
    pub fn verify(&self, ext: &ExtFields, body: &[u8], version: i32, signature: &str) -> bool {
        let Some(received) = Received::decode(signature) else {
            return false;
        };
        self.keyed(ext, body, version <= V4_9_3)
            .verify_slice(received.bytes())
            .is_ok()
    }

    /// The keyed HMAC, for content fed piece by piece (the signature extension).
    pub(crate) fn keyed_mac(&self) -> HmacSha1 {
        self.mac.clone()
    }

    /// Base64 HmacSHA1 of raw `content` (what the C++ client's `spas_sign` computes).
    pub fn sign_content(&self, content: &[u8]) -> Signature {
        let mut mac = self.mac.clone();
        mac.update(content);
        Signature::of(mac)
    }

    /// The raw HmacSHA1 of `content` (what [`SigningKey::verify_content`] expects).
    pub fn mac_content(&self, content: &[u8]) -> [u8; 20] {
        let mut mac = self.mac.clone();
        mac.update(content);
        mac.finalize().into_bytes().into()
    }

    /// Whether `expected` is the raw HmacSHA1 of `content`, compared in constant time.
    pub fn verify_content(&self, content: &[u8], expected: &[u8]) -> bool {
        let mut mac = self.mac.clone();
        mac.update(content);
        mac.verify_slice(expected).is_ok()
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningKey(<redacted>)")
    }
}

/// A signature in Base64, held on the stack.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Signature([u8; SIGNATURE_LEN]);

impl Signature {
    pub(crate) fn of(mac: HmacSha1) -> Signature {
        let mut text = [0u8; SIGNATURE_LEN];
        // 20 bytes always take exactly 28 characters of padded Base64.
        let _ = STANDARD.encode_slice(mac.finalize().into_bytes(), &mut text);
        Signature(text)
    }

    pub fn as_str(&self) -> &str {
        // Base64 is ASCII: the fallback cannot be taken.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl AsRef<str> for Signature {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Signature({})", self.as_str())
    }
}

/// A received signature decoded on the stack: a SHA-1 HMAC is 20 bytes, anything
/// longer than the buffer is no match.
pub(crate) struct Received {
    bytes: [u8; 32],
    len: usize,
}

impl Received {
    pub(crate) fn decode(text: &str) -> Option<Received> {
        let mut bytes = [0u8; 32];
        let len = STANDARD.decode_slice(text.trim(), &mut bytes).ok()?;
        Some(Received { bytes, len })
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Base64 HmacSHA1 of raw `content` with `secret` (keys it for this call only).
pub fn sign_content(secret: &str, content: &[u8]) -> String {
    SigningKey::new(secret).sign_content(content).to_string()
}

/// The signature for these fields and body with `secret` (keys it for this call
/// only: a signer of many requests keeps a [`SigningKey`]).
pub fn sign(secret: &str, ext: &ExtFields, body: &[u8]) -> String {
    SigningKey::new(secret).sign(ext, body).to_string()
}

/// Whether `signature` (as received) signs these fields and body with `secret` (see
/// [`SigningKey::verify`]).
pub fn verify(secret: &str, ext: &ExtFields, body: &[u8], version: i32, signature: &str) -> bool {
    SigningKey::new(secret).verify(ext, body, version, signature)
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

    /// A SEND_MESSAGE_V2 signed the way Java's `AclClientRPCHook` does (a `TreeMap` of
    /// the fields, values then body, HmacSHA1, Base64), the expected value computed
    /// apart from this code (`openssl dgst -sha1 -hmac bench-secret -binary | base64`
    /// over the same bytes).
    #[test]
    fn a_send_signs_as_java_does() {
        let props = "UNIQ_KEY\u{1}7F0000010001ABCDEF0123456789AB\u{2}WAIT\u{1}true\u{2}";
        let ext: ExtFields = [
            ("k", "false"),
            ("b", "BenchTopic"),
            ("a", "benchmark_producer"),
            ("c", "TBW102"),
            ("d", "8"),
            ("e", "3"),
            ("f", "0"),
            ("g", "1700000000000"),
            ("h", "0"),
            ("i", props),
            ("j", "0"),
            ("AccessKey", "bench-user"),
        ]
        .into_iter()
        .collect();
        let body = [7u8; 1024];
        let expected = "MHB6yw5V/01CzEyGb1HJZOuOOYs=";
        let key = SigningKey::new("bench-secret");
        assert_eq!(key.sign(&ext, &body).as_str(), expected);
        assert_eq!(sign("bench-secret", &ext, &body), expected);
        // The key is reused, not consumed: a second request signs alike.
        assert_eq!(key.sign(&ext, &body).as_str(), expected);
        assert!(key.verify(&ext, &body, 479, expected));
        assert!(key.verify(&ext, &body, 479, &format!(" {expected}\n")));
        assert!(!key.verify(&ext, &body, 479, &expected.replace('M', "N")));
        assert!(!SigningKey::new("bench-secreT").verify(&ext, &body, 479, expected));
        assert_eq!(
            format!("{key:?}"),
            "SigningKey(<redacted>)",
            "the secret stays out of logs"
        );
    }

    /// Past the fields sorted on the stack, the heap takes over with the same order.
    #[test]
    fn many_fields_sort_alike() {
        let keys: Vec<String> = (0..INLINE_FIELDS + 9)
            .rev()
            .map(|i| format!("k{i:03}"))
            .collect();
        let mut ext: ExtFields = keys.iter().map(|k| (k.as_str(), k.as_str())).collect();
        let expected: Vec<u8> = {
            let mut sorted = keys.clone();
            sorted.sort();
            sorted.concat().into_bytes()
        };
        assert_eq!(content(&ext, b"", false), expected);
        ext.insert(SIGNATURE, "x");
        assert_eq!(
            content(&ext, b"", false),
            expected,
            "the signature is not signed"
        );
        let sig = sign("secret12", &ext, b"");
        assert_eq!(sig, sign_content("secret12", &expected));
        assert!(verify("secret12", &ext, b"", 479, &sig));
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
