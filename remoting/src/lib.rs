//! Vostok's remoting layer: Apache RocketMQ's classic TCP protocol.
//!
//! * [`command`]: [`RemotingCommand`] and its two header serialisations (JSON, binary).
//! * [`codec`]: the bounded frame codec.
//! * [`protocol`]: request/response codes, typed headers, JSON bodies, route data and
//!   the message record format shared by the store, the broker and the clients.
//!
//! * [`channel`]: one connection (reader and writer tasks, pending calls by opaque,
//!   a write queue bounded in bytes, request concurrency, backpressure on a peer that
//!   does not read, deadlines on frames and idle connections).
//! * [`budget`]: the process's memory account ([`MemoryBudget`]) every frame received
//!   or queued reserves from; [`limits`]: the keys that size it and the connection
//!   limits (`maxMemoryBytes`, `serverMaxConnections`, ...), shared by both servers.
//! * [`server`] and [`client`]: [`RemotingServer`] dispatches requests to a
//!   [`RequestProcessor`]; [`RemotingClient`] keeps one multiplexed connection per
//!   address and offers sync, async and oneway calls.
//! * [`auth`]: request signatures (`AccessKey`, `Signature`), signing and verifying.
//! * [`tls`]: TLS on connections (rustls): `tls.*` keys, the server's first-byte
//!   detection, the client's handshake.
//! * [`mod@error`]: the crate's error type, [`RemotingError`].
//! * [`support`]: what every Vostok crate shares: clocks and local time, poison-safe
//!   lock helpers, crash-safe config files, `.properties` parsing.
//!
//! Request flow: a frame is read by the connection's reader, decoded by
//! [`RemotingCodec`]; a response completes the pending call with its opaque. A request
//! goes to the processor: its first poll runs on the reader itself (most requests finish
//! there without waiting), and one that must wait stays with the reader, which polls it
//! between reads, so that the answers one event releases leave in one write; the
//! answer is queued to the connection's writer with the request's opaque. Processors
//! must therefore not block, before their first `.await` or after it.
//!
//! See docs/wire.md, docs/commands.md, docs/bodies.md, docs/message.md for the formats this
//! crate implements.

pub mod auth;
pub mod budget;
pub mod channel;
pub mod client;
pub mod codec;
pub mod command;
pub mod error;
pub mod limits;
pub mod processor;
pub mod protocol;
pub mod server;
pub mod support;
pub mod tls;
mod writer;

pub use budget::{MemoryBudget, Reservation};
pub use channel::{Channel, ConnectionConfig, DetachedReceiver, ResponseCallback};
pub use client::{ClientConfig, RemotingClient, ResponseFuture};
pub use codec::{Frame, FrameLimits, RemotingCodec};
pub use command::{ExtFields, LanguageCode, RemotingCommand, SerializeType};
pub use error::{DecodeError, HeaderError, RemotingError};
pub use limits::ServerLimits;
pub use processor::{BoxFuture, RequestProcessor, RpcHook};
pub use server::{RemotingServer, ServerConfig};
