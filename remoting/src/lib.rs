//! Vostok's remoting layer: Apache RocketMQ's classic TCP protocol.
//!
//! * [`command`]: [`RemotingCommand`] and its two header serialisations (JSON, binary).
//! * [`codec`]: the bounded frame codec.
//! * [`protocol`]: request/response codes, typed headers, JSON bodies, route data and
//!   the message record format shared by the store, the broker and the clients.
//!
//! See `PROTOCOL.md` sections 1–5 for the formats this crate implements.

pub mod codec;
pub mod command;
pub mod error;
pub mod protocol;

pub use codec::{FrameLimits, RemotingCodec};
pub use command::{ExtFields, LanguageCode, RemotingCommand, SerializeType};
pub use error::{DecodeError, HeaderError, RemotingError};
