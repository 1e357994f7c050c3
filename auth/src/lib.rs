//! Authentication and authorization for Vostok's servers (broker and name server):
//! RocketMQ's ACL 1.0 (`plain_acl.yml`) and ACL 2.0 (users and ACL policies), both
//! verified with the request signature of `vostok_remoting::auth`
//! (docs/security.md).
//!
//! Module map, from the entry point down:
//!
//! * [`guard`]: [`Guard`], the one check a server runs before a request's processor,
//!   whichever model is on; [`Principal`], who was let in.
//! * [`proof`]: what a request offers to prove its sender (by remoting, by gRPC, by a
//!   console session) and the time it was signed ([`TimeWindow`]).
//! * [`resource`]: what a request needs ([`Access`], [`Need`], [`Resource`]), decided
//!   by the server that knows its request codes; [`Denied`], the refusal's remark.
//! * ACL 1.0: [`plain`] (the file format), [`plain_store`] (every file merged, hot
//!   reload), [`plain_edit`] (changes at run time), [`plain_check`] (the decision),
//!   [`permission`] (DENY/PUB/SUB bits).
//! * ACL 2.0: [`v2`] (users and ACLs, their storage, the decision, the migration);
//!   [`namespace`], users confined to namespaces.
//! * [`address`]: white-address patterns and CIDR blocks; [`error`]: [`AuthError`].
//!
//! Secrets (secret keys, passwords) never reach a log line or a remark: the types
//! holding them redact them in `Debug`.

pub mod address;
pub mod error;
pub mod guard;
pub mod namespace;
pub mod permission;
pub mod plain;
pub mod plain_check;
pub mod plain_edit;
pub mod plain_store;
pub mod proof;
pub mod resource;
pub mod v2;

pub use error::AuthError;
pub use guard::{Guard, GuardConfig, Principal};
pub use proof::{GrpcProof, MacProof, Proof, TimeWindow, Unproven};
pub use resource::{Access, Denied, Need, Resource};
