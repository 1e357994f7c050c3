//! JSON bodies (docs/commands.md#heartbeat, #consumer-list, #queue-locks,
//! docs/bodies.md#small-bodies, #registerbrokerbody-and-topicconfig).

mod admin;
mod auth;
mod batch_ack;
mod controller;
mod heartbeat;
mod inspect;
mod lock;
mod misc;
mod ops;
mod queue_table;
mod register;
mod reset_offset;
mod subscription_group;
mod topic_config;

pub use admin::*;
pub use auth::*;
pub use batch_ack::*;
pub use controller::*;
pub use heartbeat::*;
pub use inspect::*;
pub use lock::*;
pub use misc::*;
pub use ops::*;
pub use queue_table::quote_object_keys;
pub use register::*;
pub use reset_offset::*;
pub use subscription_group::*;
pub use topic_config::*;

/// Declares a Java enum carried in JSON bodies: written by name, read by name or by ordinal
/// (the C++ client sends ordinals, docs/wire.md#lenient-input).
macro_rules! java_enum {
    ($(#[$meta:meta])* pub enum $name:ident { $($variant:ident = $text:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($variant,)* }

        impl $name {
            const VARIANTS: &'static [$name] = &[$($name::$variant,)*];

            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text,)* }
            }

            pub fn from_name(name: &str) -> Option<Self> {
                match name { $($text => Some($name::$variant),)* _ => None }
            }

            pub fn from_ordinal(ordinal: i64) -> Option<Self> {
                usize::try_from(ordinal).ok().and_then(|i| Self::VARIANTS.get(i).copied())
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                Self::from_name(s).ok_or_else(|| format!("unknown {} {s:?}", stringify!($name)))
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl serde::de::Visitor<'_> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        write!(f, "a {} name or ordinal", stringify!($name))
                    }
                    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<$name, E> {
                        $name::from_name(v).ok_or_else(|| E::unknown_variant(v, &[$($text,)*]))
                    }
                    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<$name, E> {
                        $name::from_ordinal(v).ok_or_else(|| E::custom(format!("ordinal {v} out of range")))
                    }
                    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<$name, E> {
                        self.visit_i64(i64::try_from(v).unwrap_or(-1))
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}
pub(crate) use java_enum;

/// Reads a long written as a number or as a numeric string (the C++ client sends
/// `subVersion` as a string).
pub(crate) mod lenient_i64 {
    use serde::{de, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = i64;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a long")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
                Ok(v)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
                i64::try_from(v).map_err(E::custom)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<i64, E> {
                Ok(v as i64)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<i64, E> {
                v.trim().parse().map_err(E::custom)
            }
            fn visit_unit<E: de::Error>(self) -> Result<i64, E> {
                Ok(0)
            }
        }
        d.deserialize_any(V)
    }
}
