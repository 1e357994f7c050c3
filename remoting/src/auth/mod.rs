//! RocketMQ's remoting authentication on the wire (ACL 1.0 and 2.0 alike): the
//! `AccessKey`/`Signature`/`SecurityToken` ext fields every signed request carries.
//!
//! * [`signature`]: the content a signature covers and the HmacSHA1 over it, for
//!   signing (clients) and verifying (servers, in constant time).
//! * [`credentials`]: [`SessionCredentials`] and [`AclClientHook`], the RPC hook that
//!   signs every request a client sends (Java `AclClientRPCHook`).
//! * [`stamp`]: Vostok's signature extension, which also signs the request code and
//!   the time, so that a Vostok server refuses replayed and re-targeted requests.
//! * [`grpc`]: the `authorization` metadata of the 5.x gRPC clients.
//!
//! See docs/security.md#signature for the algorithm and the quirks of each client.

pub mod credentials;
pub mod grpc;
pub mod signature;
pub mod stamp;

pub use credentials::{AclClientHook, SessionCredentials};

/// Ext field carrying the account's access key (ACL 2.0: the user name).
pub const ACCESS_KEY: &str = "AccessKey";
/// Ext field carrying the Base64 HmacSHA1 signature.
pub const SIGNATURE: &str = "Signature";
/// Ext field carrying an optional session token (signed like any other field).
pub const SECURITY_TOKEN: &str = "SecurityToken";
/// Ext field the C++ client adds to every request (default `ALIYUN`).
pub const ONS_CHANNEL: &str = "OnsChannel";
