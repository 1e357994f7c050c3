//! Typed request and response headers (docs/commands.md).
//!
//! A header is a struct whose fields map 1:1 to `extFields` keys. Every value is a
//! string on the wire: numbers in decimal, booleans as Java's `Boolean.parseBoolean`
//! reads them (only `"true"`, in any case, is true). A plain field is mandatory: when
//! it is missing or does not parse, decoding fails with a [`HeaderError`] naming it.
//! An `Option` field is optional; an empty value reads as absent (the C++ client sends
//! empty strings for unset fields).

mod admin;
mod auth;
mod client;
mod controller;
mod inspect;
mod namesrv;
mod offset;
mod ops;
mod plain_acl;
mod pop;
mod pull;
mod query;
mod reply;
mod send;
mod topic;
mod transaction;

pub use admin::*;
pub use auth::*;
pub use client::*;
pub use controller::*;
pub use inspect::*;
pub use namesrv::*;
pub use offset::*;
pub use ops::*;
pub use plain_acl::*;
pub use pop::*;
pub use pull::*;
pub use query::*;
pub use reply::*;
pub use send::*;
pub use topic::*;
pub use transaction::*;

use crate::command::ExtFields;
use crate::error::HeaderError;
use crate::support::decimal::decimal;

/// Conversion between a typed header and `extFields`.
pub trait CommandHeader: Sized {
    fn write_to(&self, ext: &mut ExtFields);
    fn read_from(ext: &ExtFields) -> Result<Self, HeaderError>;
}

/// A header with no fields (requests such as HEART_BEAT carry everything in the body).
impl CommandHeader for () {
    fn write_to(&self, _: &mut ExtFields) {}
    fn read_from(_: &ExtFields) -> Result<Self, HeaderError> {
        Ok(())
    }
}

/// One field of a header: how it is read from and written to `extFields`.
pub trait HeaderField: Sized {
    /// Builds the field from its raw value (`None` when the key is absent).
    fn from_raw(raw: Option<&str>, key: &'static str) -> Result<Self, HeaderError>;
    /// Sets `key`, replacing an existing entry.
    fn write(&self, ext: &mut ExtFields, key: &'static str);
    /// Appends `key`, known to be absent.
    fn append(&self, ext: &mut ExtFields, key: &'static str);

    fn read(ext: &ExtFields, key: &'static str) -> Result<Self, HeaderError> {
        Self::from_raw(ext.get(key), key)
    }
}

/// A scalar value type of a header field.
pub trait HeaderValue: Sized {
    fn parse_value(s: &str) -> Option<Self>;
    /// Appends the wire form to `out`.
    fn render_into(&self, out: &mut String);
}

impl HeaderValue for String {
    fn parse_value(s: &str) -> Option<Self> {
        Some(s.to_owned())
    }
    fn render_into(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl HeaderValue for bool {
    fn parse_value(s: &str) -> Option<Self> {
        Some(s.eq_ignore_ascii_case("true"))
    }
    fn render_into(&self, out: &mut String) {
        out.push_str(if *self { "true" } else { "false" });
    }
}

/// Appends `v` in decimal without going through `fmt`.
fn push_int(out: &mut String, v: i64) {
    // Only ASCII digits and a sign were written.
    out.push_str(std::str::from_utf8(decimal(v, &mut [0u8; 20])).unwrap_or_default());
}

macro_rules! numeric_value {
    ($($t:ty),*) => {$(
        impl HeaderValue for $t {
            fn parse_value(s: &str) -> Option<Self> {
                s.parse().ok()
            }
            fn render_into(&self, out: &mut String) {
                push_int(out, *self as i64);
            }
        }
    )*};
}
numeric_value!(i32, i64);

macro_rules! header_field {
    ($($t:ty),*) => {$(
        impl HeaderField for $t {
            fn from_raw(raw: Option<&str>, key: &'static str) -> Result<Self, HeaderError> {
                let raw = raw.ok_or(HeaderError::Missing { field: key })?;
                <$t as HeaderValue>::parse_value(raw).ok_or_else(|| HeaderError::Malformed {
                    field: key,
                    value: raw.to_owned(),
                })
            }
            fn write(&self, ext: &mut ExtFields, key: &'static str) {
                ext.insert_with(key, |buf| HeaderValue::render_into(self, buf));
            }
            fn append(&self, ext: &mut ExtFields, key: &'static str) {
                ext.push_with(key, |buf| HeaderValue::render_into(self, buf));
            }
        }

        impl HeaderField for Option<$t> {
            fn from_raw(raw: Option<&str>, key: &'static str) -> Result<Self, HeaderError> {
                match raw {
                    None => Ok(None),
                    Some("") if stringify!($t) != "String" => Ok(None),
                    Some(raw) => <$t as HeaderValue>::parse_value(raw)
                        .map(Some)
                        .ok_or_else(|| HeaderError::Malformed {
                            field: key,
                            value: raw.to_owned(),
                        }),
                }
            }
            fn write(&self, ext: &mut ExtFields, key: &'static str) {
                if let Some(v) = self {
                    ext.insert_with(key, |buf| HeaderValue::render_into(v, buf));
                }
            }
            fn append(&self, ext: &mut ExtFields, key: &'static str) {
                if let Some(v) = self {
                    ext.push_with(key, |buf| HeaderValue::render_into(v, buf));
                }
            }
        }
    )*};
}
header_field!(String, bool, i32, i64);

/// Declares a header struct and its [`CommandHeader`] impl from `field: Type = "wireKey"`
/// lines.
#[macro_export]
macro_rules! command_header {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty = $key:literal ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq, Eq)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $crate::protocol::header::CommandHeader for $name {
            /// Into an empty map the fields are appended: their keys are distinct (a
            /// repeated key would be an unreachable pattern in `read_from`).
            fn write_to(&self, ext: &mut $crate::command::ExtFields) {
                if ext.is_empty() {
                    $( $crate::protocol::header::HeaderField::append(&self.$field, ext, $key); )*
                } else {
                    $( $crate::protocol::header::HeaderField::write(&self.$field, ext, $key); )*
                }
            }

            /// One pass over the fields (the last of duplicate keys wins), then each
            /// field parsed from what was found.
            #[allow(unused_variables, unused_mut)]
            fn read_from(
                ext: &$crate::command::ExtFields,
            ) -> Result<Self, $crate::error::HeaderError> {
                $( let mut $field: Option<&str> = None; )*
                for (k, v) in ext.iter() {
                    match k {
                        $( $key => $field = Some(v), )*
                        _ => {}
                    }
                }
                Ok($name {
                    $( $field: $crate::protocol::header::HeaderField::from_raw($field, $key)?, )*
                })
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    command_header! {
        pub struct Sample {
            name: String = "name",
            count: i32 = "count",
            big: Option<i64> = "big",
            flag: Option<bool> = "flag",
            note: Option<String> = "note",
        }
    }

    #[test]
    fn round_trips_through_ext_fields() {
        let h = Sample {
            name: "a\u{1}b".into(),
            count: -3,
            big: Some(i64::MAX),
            flag: Some(true),
            note: None,
        };
        let mut ext = ExtFields::new();
        h.write_to(&mut ext);
        assert_eq!(ext.get("count"), Some("-3"));
        assert!(!ext.contains_key("note"));
        assert_eq!(Sample::read_from(&ext).unwrap(), h);
    }

    #[test]
    fn numbers_render_as_java_prints_them() {
        for v in [0, 7, -1, 10, i64::MAX, i64::MIN, -9_000_000_000] {
            let mut out = String::from("x");
            push_int(&mut out, v);
            assert_eq!(out, format!("x{v}"));
        }
        let mut ext = ExtFields::new();
        Sample {
            count: 1,
            ..Sample::default()
        }
        .write_to(&mut ext);
        Sample {
            count: 2,
            ..Sample::default()
        }
        .write_to(&mut ext);
        assert_eq!(ext.get("count"), Some("2"));
        assert_eq!(ext.len(), 2, "a second write replaces, not appends");
    }

    #[test]
    fn missing_and_malformed_fields_are_named() {
        let ext: ExtFields = [("name", "x")].into_iter().collect();
        assert_eq!(
            Sample::read_from(&ext),
            Err(HeaderError::Missing { field: "count" })
        );
        let ext: ExtFields = [("name", "x"), ("count", "12x")].into_iter().collect();
        assert_eq!(Sample::read_from(&ext).unwrap_err().field(), "count",);
        let ext: ExtFields = [("name", "x"), ("count", "1"), ("big", "nope")]
            .into_iter()
            .collect();
        assert_eq!(Sample::read_from(&ext).unwrap_err().field(), "big");
    }

    #[test]
    fn booleans_and_empty_optionals_read_as_java_does() {
        let ext: ExtFields = [
            ("name", ""),
            ("count", "0"),
            ("flag", "1"),
            ("big", ""),
            ("note", ""),
        ]
        .into_iter()
        .collect();
        let h = Sample::read_from(&ext).unwrap();
        assert_eq!(h.flag, Some(false), "only \"true\" is true");
        assert_eq!(h.big, None);
        assert_eq!(h.note.as_deref(), Some(""));
        let ext: ExtFields = [("name", ""), ("count", "0"), ("flag", "TRUE")]
            .into_iter()
            .collect();
        assert_eq!(Sample::read_from(&ext).unwrap().flag, Some(true));
    }
}
