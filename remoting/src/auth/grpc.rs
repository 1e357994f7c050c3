//! The `authorization` metadata of the 5.x gRPC clients (docs/security.md#grpc).
//!
//! `MQv2-HMAC-SHA1 Credential=<accessKey>[/...], SignedHeaders=x-mq-date-time,
//! Signature=<hex>`, where the signature is HmacSHA1 keyed with the secret over the
//! exact `x-mq-date-time` text of the same request. Java, C# and Node write the hex
//! upper-case, Python and Go lower-case; Go appends `//Rocketmq` to the credential.
//! Apache's proxy does not compare the date with its clock; a Vostok broker does
//! (`auth::proof`), allowing for the clients that write local time.

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

/// The `x-mq-date-time` text of `ms` in UTC (`yyyyMMdd'T'HHmmss'Z'`), as the Node.js
/// client writes it.
pub fn date_time(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Milliseconds since the epoch of an `x-mq-date-time` text read as UTC; `None` when
/// it is not `yyyyMMdd'T'HHmmss'Z'` with a valid date. Java, Python and Go clients
/// write their *local* time with the `Z`: the caller allows for time zones.
pub fn parse_date_time(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let digits = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = text.get(r)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())
            .flatten()
    };
    let (y, m, d) = (digits(0..4)?, digits(4..6)?, digits(6..8)?);
    let (hh, mm, ss) = (digits(9..11)?, digits(11..13)?, digits(13..15)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    let days = days_from_civil(y, m, d);
    Some(((days * 24 + hh) * 60 + mm) * 60_000 + ss * 1000)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01 (the inverse of [`days_from_civil`]).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
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
    fn dates_read_and_write_as_utc() {
        // 2026-12-01T12:00:00Z.
        assert_eq!(parse_date_time("20261201T120000Z"), Some(1_796_126_400_000));
        assert_eq!(date_time(1_796_126_400_999), "20261201T120000Z");
        assert_eq!(parse_date_time("19700101T000000Z"), Some(0));
        assert_eq!(date_time(951_782_400_000), "20000229T000000Z");
        for bad in [
            "",
            "20261201 120000Z",
            "20261301T120000Z",
            "20261201T120000",
            "2026120xT120000Z",
            "20261201T250000Z",
            "+0261201T120000Z",
        ] {
            assert_eq!(parse_date_time(bad), None, "{bad}");
        }
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
