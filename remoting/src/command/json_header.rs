//! JSON header (serialize type 0), docs/wire.md#json-header.
//!
//! Written by hand, keys in fastjson's alphabetical order, compact, nulls omitted:
//!
//! ```text
//! {"code":105,"extFields":{"topic":"T"},"flag":0,"language":"RUST","opaque":42,
//!  "serializeTypeCurrentRPC":"JSON","version":479}
//! ```
//!
//! Read leniently, as fastjson reads it: `language` as a name or an ordinal, numbers
//! as numbers or numeric strings, `extFields` values as strings, numbers or booleans,
//! unknown keys ignored, trailing whitespace tolerated.

use bytes::BufMut;

use super::{HeaderOut, RemotingCommand};
use crate::error::RemotingError;
use crate::support::decimal::decimal;

/// Appends the JSON header of `cmd` to `out`.
pub fn encode(cmd: &RemotingCommand, out: &mut impl HeaderOut) {
    out.reserve_more(96 + cmd.ext_fields.text_len() + cmd.ext_fields.len() * 8);
    out.put_slice(b"{\"code\":");
    put_int(out, cmd.code as i64);
    if !cmd.ext_fields.is_empty() {
        out.put_slice(b",\"extFields\":{");
        for (i, (k, v)) in cmd.ext_fields.iter().enumerate() {
            if i > 0 {
                out.put_u8(b',');
            }
            put_string(out, k);
            out.put_u8(b':');
            put_string(out, v);
        }
        out.put_u8(b'}');
    }
    out.put_slice(b",\"flag\":");
    put_int(out, cmd.flag as i64);
    out.put_slice(b",\"language\":");
    put_string(out, cmd.language.name());
    out.put_slice(b",\"opaque\":");
    put_int(out, cmd.opaque as i64);
    if let Some(remark) = &cmd.remark {
        out.put_slice(b",\"remark\":");
        put_string(out, remark);
    }
    out.put_slice(b",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":");
    put_int(out, cmd.version as i64);
    out.put_u8(b'}');
}

fn put_int(out: &mut impl BufMut, v: i64) {
    out.put_slice(decimal(v, &mut [0u8; 20]));
}

/// Whether `b` cannot stand as itself inside a JSON string.
fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Writes `s` as a JSON string. Control characters (the property separators U+0001 and
/// U+0002 among them) become `\u00XX`; other UTF-8 passes through.
///
/// Most strings (keys, ids, numbers, names) need no escape: they are checked with one
/// pass without early exit, which compiles to wide compares, and copied whole; only a
/// string that needs an escape is walked byte by byte.
pub(crate) fn put_string(out: &mut impl BufMut, s: &str) {
    let bytes = s.as_bytes();
    out.put_u8(b'"');
    if bytes.iter().fold(false, |any, &b| any | needs_escape(b)) {
        put_escaped(out, bytes);
    } else {
        out.put_slice(bytes);
    }
    out.put_u8(b'"');
}

fn put_escaped(out: &mut impl BufMut, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.put_slice(&bytes[start..i]);
        if escape.is_empty() {
            out.put_slice(b"\\u00");
            out.put_u8(HEX[(b >> 4) as usize]);
            out.put_u8(HEX[(b & 0xf) as usize]);
        } else {
            out.put_slice(escape);
        }
        start = i + 1;
    }
    out.put_slice(&bytes[start..]);
}

/// Decodes a JSON header. The body is attached by the caller.
pub fn decode(header: &[u8]) -> Result<RemotingCommand, RemotingError> {
    super::json_reader::decode(header)
}

/// The serde-based reading of the header: the reference the hand-written reader
/// (`json_reader`) is tested against.
#[cfg(test)]
pub(crate) mod reference {
    use std::fmt;

    use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
    use serde::Deserialize;

    use crate::command::{ExtFields, LanguageCode, RemotingCommand, SerializeType};
    use crate::error::RemotingError;

    pub(crate) fn decode_with_serde(header: &[u8]) -> Result<RemotingCommand, RemotingError> {
        let mut de = serde_json::Deserializer::from_slice(header);
        let decoded = de
            .deserialize_map(HeaderVisitor)
            .and_then(|h| de.end().map(|_| h))
            .map_err(|e| RemotingError::MalformedHeader {
                kind: "JSON",
                reason: e.to_string(),
            })?;
        Ok(decoded)
    }

    #[derive(Deserialize)]
    #[serde(field_identifier, rename_all = "camelCase")]
    enum Field {
        Code,
        Language,
        Version,
        Opaque,
        Flag,
        Remark,
        ExtFields,
        #[serde(other)]
        Other,
    }

    struct HeaderVisitor;

    impl<'de> Visitor<'de> for HeaderVisitor {
        type Value = RemotingCommand;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a RemotingCommand header object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RemotingCommand, A::Error> {
            let mut code = None;
            let mut cmd = RemotingCommand {
                code: 0,
                // fastjson leaves the Java field initialiser in place when the key is absent.
                language: LanguageCode::Java,
                version: 0,
                opaque: 0,
                flag: 0,
                remark: None,
                ext_fields: ExtFields::new(),
                body: bytes::Bytes::new(),
                serialize_type: SerializeType::Json,
            };
            while let Some(field) = map.next_key::<Field>()? {
                match field {
                    Field::Code => code = Some(map.next_value::<LenientI32>()?.0),
                    Field::Language => cmd.language = map.next_value::<LanguageValue>()?.0,
                    Field::Version => cmd.version = map.next_value::<LenientI32>()?.0,
                    Field::Opaque => cmd.opaque = map.next_value::<LenientI32>()?.0,
                    Field::Flag => cmd.flag = map.next_value::<LenientI32>()?.0,
                    Field::Remark => {
                        cmd.remark = map
                            .next_value::<Option<String>>()?
                            .map(String::into_boxed_str)
                    }
                    Field::ExtFields => {
                        cmd.ext_fields = map
                            .next_value::<Option<ExtFieldsValue>>()?
                            .map(|e| e.0)
                            .unwrap_or_default()
                    }
                    Field::Other => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            cmd.code = code.ok_or_else(|| de::Error::missing_field("code"))?;
            Ok(cmd)
        }
    }

    /// An int written as a number or as a numeric string; null reads as 0.
    struct LenientI32(i32);

    impl<'de> Deserialize<'de> for LenientI32 {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl Visitor<'_> for V {
                type Value = LenientI32;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a 32-bit integer")
                }
                fn visit_i64<E: de::Error>(self, v: i64) -> Result<LenientI32, E> {
                    i32::try_from(v)
                        .map(LenientI32)
                        .map_err(|_| E::custom(format!("{v} out of int range")))
                }
                fn visit_u64<E: de::Error>(self, v: u64) -> Result<LenientI32, E> {
                    i32::try_from(v)
                        .map(LenientI32)
                        .map_err(|_| E::custom(format!("{v} out of int range")))
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<LenientI32, E> {
                    v.trim()
                        .parse()
                        .map(LenientI32)
                        .map_err(|_| E::custom(format!("{v:?} is not an int")))
                }
                fn visit_unit<E: de::Error>(self) -> Result<LenientI32, E> {
                    Ok(LenientI32(0))
                }
            }
            d.deserialize_any(V)
        }
    }

    /// `LanguageCode` by name (Java, Go, C++) or by ordinal (fastjson accepts both).
    struct LanguageValue(LanguageCode);

    impl<'de> Deserialize<'de> for LanguageValue {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl Visitor<'_> for V {
                type Value = LanguageValue;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a language name or code")
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<LanguageValue, E> {
                    Ok(LanguageValue(LanguageCode::from_name(v)))
                }
                fn visit_i64<E: de::Error>(self, v: i64) -> Result<LanguageValue, E> {
                    Ok(LanguageValue(LanguageCode::from_code(v)))
                }
                fn visit_u64<E: de::Error>(self, v: u64) -> Result<LanguageValue, E> {
                    Ok(LanguageValue(LanguageCode::from_code(
                        i64::try_from(v).unwrap_or(-1),
                    )))
                }
                fn visit_unit<E: de::Error>(self) -> Result<LanguageValue, E> {
                    Ok(LanguageValue(LanguageCode::Java))
                }
            }
            d.deserialize_any(V)
        }
    }

    /// `extFields`: values may be strings, numbers or booleans (the C++ client sends numbers);
    /// null values are dropped, as Java drops them.
    struct ExtFieldsValue(ExtFields);

    impl<'de> Deserialize<'de> for ExtFieldsValue {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = ExtFieldsValue;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("an object of string values")
                }
                fn visit_map<A: MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<ExtFieldsValue, A::Error> {
                    let mut fields = ExtFields::with_capacity(map.size_hint().unwrap_or(16));
                    let mut value = String::new();
                    while let Some(key) = map.next_key::<KeyStr>()? {
                        value.clear();
                        if map.next_value_seed(ScalarInto(&mut value))? {
                            fields.push_decoded(&key.0, &value);
                        }
                    }
                    Ok(ExtFieldsValue(fields))
                }
            }
            d.deserialize_map(V)
        }
    }

    /// An object key, borrowed from the input when it has no escapes.
    struct KeyStr<'de>(std::borrow::Cow<'de, str>);

    impl<'de> Deserialize<'de> for KeyStr<'de> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = KeyStr<'de>;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a string key")
                }
                fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<KeyStr<'de>, E> {
                    Ok(KeyStr(std::borrow::Cow::Borrowed(v)))
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<KeyStr<'de>, E> {
                    Ok(KeyStr(std::borrow::Cow::Owned(v.to_owned())))
                }
            }
            d.deserialize_str(V)
        }
    }

    /// Writes a JSON scalar into a reused string, rendered as Java's `toString()` would;
    /// `false` for null (Java drops null values).
    struct ScalarInto<'a>(&'a mut String);

    impl<'de> de::DeserializeSeed<'de> for ScalarInto<'_> {
        type Value = bool;

        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
            use std::fmt::Write;
            struct V<'a>(&'a mut String);
            impl Visitor<'_> for V<'_> {
                type Value = bool;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a string, number or boolean")
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
                    self.0.push_str(v);
                    Ok(true)
                }
                fn visit_i64<E: de::Error>(self, v: i64) -> Result<bool, E> {
                    let _ = write!(self.0, "{v}");
                    Ok(true)
                }
                fn visit_u64<E: de::Error>(self, v: u64) -> Result<bool, E> {
                    let _ = write!(self.0, "{v}");
                    Ok(true)
                }
                fn visit_f64<E: de::Error>(self, v: f64) -> Result<bool, E> {
                    let _ = write!(self.0, "{v}");
                    Ok(true)
                }
                fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
                    self.0.push_str(if v { "true" } else { "false" });
                    Ok(true)
                }
                fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
                    Ok(false)
                }
            }
            d.deserialize_any(V(self.0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::LanguageCode;
    use bytes::BytesMut;
    use proptest::prelude::*;
    use serde_json::{json, Map, Value};

    fn arb_scalar() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "[a-z0-9\u{1}\u{2}\\\"é😀 \n]{0,12}".prop_map(Value::String),
        ]
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        arb_scalar().prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z]{0,6}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    prop_compose! {
        fn arb_header()(
            code in prop_oneof![any::<i32>().prop_map(|n| json!(n)), any::<i32>().prop_map(|n| json!(n.to_string()))],
            opaque in any::<i32>(),
            language in prop_oneof![Just(json!("JAVA")), Just(json!("GO")), (0i64..20).prop_map(|n| json!(n)), Just(Value::Null)],
            remark in prop_oneof![Just(Value::Null), "[a-z \u{1}é]{0,8}".prop_map(Value::String)],
            ext in prop::collection::btree_map("[a-zA-Z]{1,6}", arb_scalar(), 0..6),
            unknown in prop::collection::btree_map("[x-z]{1,4}", arb_value(), 0..3),
            pretty in any::<bool>(),
        ) -> String {
            let mut m = Map::new();
            m.insert("code".into(), code);
            m.insert("opaque".into(), json!(opaque));
            m.insert("language".into(), language);
            m.insert("remark".into(), remark);
            m.insert("extFields".into(), Value::Object(ext.into_iter().collect()));
            for (k, v) in unknown {
                m.insert(k, v);
            }
            let v = Value::Object(m);
            if pretty { serde_json::to_string_pretty(&v).unwrap() } else { v.to_string() }
        }
    }

    proptest! {
        /// The hand-written reader reads every header exactly as serde does.
        #[test]
        fn reader_agrees_with_serde(text in arb_header()) {
            let ours = decode(text.as_bytes());
            let reference = reference::decode_with_serde(text.as_bytes());
            match (ours, reference) {
                (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
                (Err(_), Err(_)) => {}
                (a, b) => prop_assert!(false, "disagree on {}: {:?} vs {:?}", text, a.is_ok(), b.is_ok()),
            }
        }

        /// Garbage never panics the reader.
        #[test]
        fn reader_survives_garbage(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode(&bytes);
        }
    }

    #[test]
    fn reader_rejects_deep_nesting_and_accepts_raw_control_characters() {
        let deep = format!(
            "{{\"code\":1,\"x\":{}{}}}",
            "[".repeat(1000),
            "]".repeat(1000)
        );
        assert!(decode(deep.as_bytes()).is_err());
        let raw = b"{\"code\":1,\"extFields\":{\"p\":\"a\x01b\x02\"}}";
        assert_eq!(
            decode(raw).unwrap().ext_fields.get("p"),
            Some("a\u{1}b\u{2}")
        );
    }

    fn encoded(cmd: &RemotingCommand) -> String {
        let mut out = BytesMut::new();
        encode(cmd, &mut out);
        String::from_utf8(out.to_vec()).unwrap()
    }

    #[test]
    fn escapes_control_characters_and_quotes() {
        let mut out = BytesMut::new();
        put_string(&mut out, "a\u{1}b\u{2}\"\\\n\u{7f}é");
        assert_eq!(
            &out[..],
            "\"a\\u0001b\\u0002\\\"\\\\\\n\u{7f}é\"".as_bytes()
        );
    }

    /// The escaping loop `put_string` ran on every string before it checked for a
    /// plain string first: the new one must write the same bytes.
    fn put_string_byte_by_byte(out: &mut BytesMut, s: &str) {
        out.put_u8(b'"');
        put_escaped(out, s.as_bytes());
        out.put_u8(b'"');
    }

    proptest! {
        #[test]
        fn strings_are_written_as_by_the_escaping_loop(s in "[a-zA-Z0-9\u{0}-\u{1f}\"\\\\/ é😀\u{7f}]{0,40}") {
            let (mut fast, mut slow) = (BytesMut::new(), BytesMut::new());
            put_string(&mut fast, &s);
            put_string_byte_by_byte(&mut slow, &s);
            prop_assert_eq!(&fast[..], &slow[..]);
            let back: String = serde_json::from_slice(&fast).unwrap();
            prop_assert_eq!(back, s);
        }
    }

    #[test]
    fn a_send_response_is_written_as_before() {
        // What the broker answers a send with, in the bytes main wrote before strings
        // were checked for escapes first; values needing escapes included.
        let mut cmd = RemotingCommand::response(0, None);
        cmd.opaque = 1_234_567;
        for (k, v) in [
            ("msgId", "7F00000100002A9F0000000000ABCDEF"),
            ("queueId", "3"),
            ("queueOffset", "-1"),
            ("transactionId", "7F0000011B5818B4AAC2634A0C6E0000"),
            ("MSG_REGION", "Default\"Region\\\u{1}"),
            ("TRACE_ON", "true"),
        ] {
            cmd.ext_fields.insert(k, v);
        }
        assert_eq!(
            encoded(&cmd),
            concat!(
                r#"{"code":0,"extFields":{"msgId":"7F00000100002A9F0000000000ABCDEF","#,
                r#""queueId":"3","queueOffset":"-1","#,
                r#""transactionId":"7F0000011B5818B4AAC2634A0C6E0000","#,
                r#""MSG_REGION":"Default\"Region\\\u0001","TRACE_ON":"true"},"flag":1,"#,
                r#""language":"RUST","opaque":1234567,"serializeTypeCurrentRPC":"JSON","#,
                r#""version":"#,
            )
            .to_owned()
                + &crate::protocol::version::CURRENT_VERSION.to_string()
                + "}"
        );
        let mut head = Vec::new();
        encode(&cmd, &mut head);
        assert_eq!(
            head,
            encoded(&cmd).into_bytes(),
            "a Vec gets what BytesMut gets"
        );
    }

    #[test]
    fn negative_numbers_are_written_in_full() {
        let mut cmd = RemotingCommand::response(0, None);
        cmd.opaque = i32::MIN;
        assert!(encoded(&cmd).contains("\"opaque\":-2147483648"));
    }

    #[test]
    fn accepts_what_the_cpp_client_sends() {
        // No serializeTypeCurrentRPC, numeric extFields values, empty remark, trailing newline.
        let raw = br#"{"code":310,"language":"CPP","version":63,"opaque":7,"flag":0,"remark":"","extFields":{"AccessKey":"","a":"g","e":3,"m":false,"n":null}}
"#;
        let cmd = decode(raw).unwrap();
        assert_eq!(cmd.code, 310);
        assert_eq!(cmd.language, LanguageCode::Cpp);
        assert_eq!(cmd.ext_fields.get("e"), Some("3"));
        assert_eq!(cmd.ext_fields.get("m"), Some("false"));
        assert_eq!(cmd.ext_fields.get("n"), None);
        assert_eq!(cmd.ext_fields.get("AccessKey"), Some(""));
        assert_eq!(cmd.remark.as_deref(), Some(""));
    }

    #[test]
    fn accepts_language_ordinal_and_string_numbers() {
        let cmd = decode(br#"{"code":"34","language":9,"opaque":"5","flag":1}"#).unwrap();
        assert_eq!(cmd.code, 34);
        assert_eq!(cmd.language, LanguageCode::Go);
        assert_eq!(cmd.opaque, 5);
        assert!(cmd.is_response());
    }

    #[test]
    fn rejects_garbage() {
        assert!(decode(b"").is_err());
        assert!(decode(b"{").is_err());
        assert!(decode(b"[1,2]").is_err());
        assert!(decode(br#"{"flag":0}"#).is_err(), "code is mandatory");
        assert!(decode(br#"{"code":99999999999}"#).is_err());
        assert!(decode(br#"{"code":1,"extFields":{"a":{"b":1}}}"#).is_err());
        assert!(decode(br#"{"code":1} trailing"#).is_err());
    }
}
