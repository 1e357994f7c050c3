//! JSON helpers for bodies written by Java's fastjson
//! (docs/bodies.md#how-java-writes-json).
//!
//! fastjson writes maps with integer keys unquoted (`{0:"10.0.0.1:10911"}`), which is
//! not JSON. [`quote_bare_keys`] rewrites such keys to strings so serde can read them;
//! what Vostok writes is always standard, compact JSON.

use std::borrow::Cow;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::DecodeError;

/// Rewrites unquoted numeric object keys (`{0:"a",-1:"b"}`) as quoted strings. Input
/// that has none is returned as is.
pub fn quote_bare_keys(input: &[u8]) -> Cow<'_, [u8]> {
    let mut out: Option<Vec<u8>> = None;
    let mut in_string = false;
    let mut escaped = false;
    let mut expect_key = false;
    let mut copied = 0;
    let mut i = 0;
    while i < input.len() {
        let b = input[i];
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                expect_key = false;
            }
            b'{' | b',' => expect_key = true,
            b' ' | b'\t' | b'\r' | b'\n' => {}
            b'-' | b'0'..=b'9' if expect_key => {
                let start = i;
                let mut end = i + 1;
                while end < input.len() && input[end].is_ascii_digit() {
                    end += 1;
                }
                let mut colon = end;
                while colon < input.len() && input[colon].is_ascii_whitespace() {
                    colon += 1;
                }
                if colon < input.len() && input[colon] == b':' {
                    let buf = out.get_or_insert_with(|| Vec::with_capacity(input.len() + 16));
                    buf.extend_from_slice(&input[copied..start]);
                    buf.push(b'"');
                    buf.extend_from_slice(&input[start..end]);
                    buf.push(b'"');
                    copied = end;
                }
                expect_key = false;
                i = end;
                continue;
            }
            _ => expect_key = false,
        }
        i += 1;
    }
    match out {
        Some(mut buf) => {
            buf.extend_from_slice(&input[copied..]);
            Cow::Owned(buf)
        }
        None => Cow::Borrowed(input),
    }
}

/// Parses a body that Java or any RocketMQ client may have written.
pub fn from_slice<T: DeserializeOwned>(what: &'static str, body: &[u8]) -> Result<T, DecodeError> {
    serde_json::from_slice(&quote_bare_keys(body))
        .map_err(|source| DecodeError::Json { what, source })
}

/// Standard, compact JSON: quoted keys, no spaces (the Go client splits route text on `,`
/// and `:` without trimming, docs/bodies.md#topicroutedata).
pub fn to_vec<T: Serialize>(value: &T) -> Vec<u8> {
    // Serialising plain data structures into a Vec cannot fail.
    serde_json::to_vec(value).expect("JSON serialisation of a protocol body")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn quotes_integer_keys_but_not_values_or_strings() {
        let raw = br#"{"brokerAddrs":{0:"10.0.0.1:10911", 1 :"a,2:b"},"list":[1,2],"n":{-3:4}}"#;
        let fixed = quote_bare_keys(raw);
        assert_eq!(
            std::str::from_utf8(&fixed).unwrap(),
            r#"{"brokerAddrs":{"0":"10.0.0.1:10911", "1" :"a,2:b"},"list":[1,2],"n":{"-3":4}}"#
        );
        let standard = br#"{"a":{"0":"x"}}"#;
        assert!(matches!(quote_bare_keys(standard), Cow::Borrowed(_)));
    }

    #[test]
    fn reads_fastjson_offset_tables() {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Offsets {
            offset_table: BTreeMap<String, BTreeMap<i32, i64>>,
        }
        let raw = b"{\n\t\"offsetTable\":{\n\t\t\"T@g\":{0:12,1:3}\n\t}\n}";
        let parsed: Offsets = from_slice("offsets", raw).unwrap();
        assert_eq!(parsed.offset_table["T@g"][&1], 3);
    }
}
