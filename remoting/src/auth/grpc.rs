//! The `authorization` metadata of the 5.x gRPC clients (docs/security.md#grpc).
//!
//! `MQv2-HMAC-SHA1 Credential=<accessKey>[/...], SignedHeaders=x-mq-date-time,
//! Signature=<hex>`, where the signature is HmacSHA1 keyed with the secret over the
//! exact `x-mq-date-time` text of the same request. Java, C# and Node write the hex
//! upper-case, Python and Go lower-case; Go appends `//Rocketmq` to the credential.
//! Like Apache's proxy, the date is not compared with the server's clock.

use hmac::{Hmac, Mac};
use sha1::Sha1;

use super::signature::SigningKey;

/// The algorithm the 5.x clients name.
pub const ALGORITHM: &str = "MQv2-HMAC-SHA1";
/// Metadata key of the signature.
pub const AUTHORIZATION: &str = "authorization";
/// Metadata key of the signed date.
pub const DATE_TIME: &str = "x-mq-date-time";

/// A parsed `authorization` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrpcAuthorization {
    pub access_key: String,
    signature: Vec<u8>,
}

impl GrpcAuthorization {
    /// Parses the metadata value; `None` when it is not a well-formed MQv2 signature.
    pub fn parse(value: &str) -> Option<GrpcAuthorization> {
        let (algorithm, rest) = value.trim().split_once(' ')?;
        if algorithm != ALGORITHM {
            return None;
        }
        let (mut credential, mut signature) = (None, None);
        for part in rest.split(',') {
            let (key, value) = part.trim().split_once('=')?;
            match key.trim() {
                "Credential" => credential = Some(value.trim()),
                "Signature" => signature = Some(value.trim()),
                _ => {}
            }
        }
        let access_key = credential?.split('/').next()?.to_owned();
        let signature = decode_hex(signature?)?;
        (!access_key.is_empty()).then_some(GrpcAuthorization {
            access_key,
            signature,
        })
    }

    /// True when the signature is HmacSHA1(`secret`, `date_time`), compared in
    /// constant time.
    pub fn verify(&self, secret: &str, date_time: &str) -> bool {
        self.verify_with(&SigningKey::new(secret), date_time)
    }

    /// [`GrpcAuthorization::verify`] with the HMAC keyed already.
    pub fn verify_with(&self, key: &SigningKey, date_time: &str) -> bool {
        key.verify_content(date_time.as_bytes(), &self.signature)
    }
}

/// The `authorization` value a client with `access_key`/`secret` sends at `date_time`.
pub fn sign(access_key: &str, secret: &str, date_time: &str) -> String {
    let mut mac = match Hmac::<Sha1>::new_from_slice(secret.as_bytes()) {
        Ok(mac) => mac,
        // HMAC takes keys of any length.
        Err(_) => return String::new(),
    };
    mac.update(date_time.as_bytes());
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect();
    format!("{ALGORITHM} Credential={access_key}, SignedHeaders={DATE_TIME}, Signature={hex}")
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 || s.len() > 128 {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    s.as_bytes()
        .chunks(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_each_client_writes_is_read_and_verified() {
        let date = "20261201T120000Z";
        let upper = sign("ak", "secret", date);
        assert!(upper
            .starts_with("MQv2-HMAC-SHA1 Credential=ak, SignedHeaders=x-mq-date-time, Signature="));
        let parsed = GrpcAuthorization::parse(&upper).unwrap();
        assert_eq!(parsed.access_key, "ak");
        assert!(parsed.verify("secret", date));
        assert!(!parsed.verify("wrong", date));
        assert!(!parsed.verify("secret", "20261201T120001Z"));
        // Python and Go: lower-case hex; Go: a credential scope after the key.
        let hex = upper.rsplit('=').next().unwrap().to_ascii_lowercase();
        let go = format!(
            "MQv2-HMAC-SHA1 Credential=ak//Rocketmq, SignedHeaders=x-mq-date-time, Signature={hex}"
        );
        let parsed = GrpcAuthorization::parse(&go).unwrap();
        assert_eq!(parsed.access_key, "ak");
        assert!(parsed.verify("secret", date));
    }

    #[test]
    fn malformed_values_are_refused() {
        for bad in [
            "",
            "Basic abc",
            "MQv2-HMAC-SHA1",
            "MQv2-HMAC-SHA1 Credential=, Signature=00",
            "MQv2-HMAC-SHA1 Credential=ak, Signature=xyz",
            "MQv2-HMAC-SHA1 Credential=ak, Signature=0",
            "MQv2-HMAC-SHA1 Credential=ak",
        ] {
            assert!(GrpcAuthorization::parse(bad).is_none(), "{bad:?}");
        }
    }
}
