//! ACL 2.0 (RocketMQ 5.3+): users and ACL policies, managed with request codes
//! 3001–3010, signed on the wire exactly as ACL 1.0 (docs/security.md#acl-2).
//!
//! * [`model`]: `UserInfo`/`AclInfo` bodies and the compiled policy entries.
//! * [`store`]: the users and ACLs, persisted under the broker's config directory.
//! * [`check`]: authentication and authorization of one request.
//! * [`migrate`]: plain_acl.yml accounts imported as users and ACLs.

pub mod check;
pub mod migrate;
pub mod model;
pub mod store;

pub use model::{AclInfo, PolicyEntryInfo, PolicyInfo, UserInfo};
pub use store::{AuthMetadata, MetadataError};
