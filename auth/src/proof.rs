//! What a request offers to prove who sent it: the same accounts and permissions are
//! checked whichever protocol it came by.
//!
//! * A remoting request: `AccessKey` and `Signature` in its ext fields, the signature
//!   over its fields and body (docs/security.md#signature).
//! * A gRPC call of the 5.x clients: the `authorization` metadata, a signature over the
//!   call's `x-mq-date-time` (docs/security.md#grpc).

use vostok_remoting::auth::grpc::GrpcAuthorization;
use vostok_remoting::auth::signature::SigningKey;
use vostok_remoting::auth::{ACCESS_KEY, SIGNATURE};
use vostok_remoting::RemotingCommand;

/// The sender's claim, checked against an account's secret.
pub trait Proof {
    /// The request code (gRPC calls name the remoting request they stand for), for
    /// whitelists and remarks.
    fn code(&self) -> i32;
    /// The access key (ACL 2.0: the user name) the request claims, if any.
    fn access_key(&self) -> Option<&str>;
    /// True when the request is signed with the secret `key` was made from.
    fn signed_with(&self, key: &SigningKey) -> bool;
}

impl Proof for RemotingCommand {
    fn code(&self) -> i32 {
        self.code
    }

    fn access_key(&self) -> Option<&str> {
        self.ext_fields.get(ACCESS_KEY).filter(|k| !k.is_empty())
    }

    fn signed_with(&self, key: &SigningKey) -> bool {
        self.ext_fields
            .get(SIGNATURE)
            .is_some_and(|sig| key.verify(&self.ext_fields, &self.body, self.version, sig))
    }
}

/// A gRPC call: its `authorization` (when sent and well formed) and `x-mq-date-time`.
#[derive(Debug, Clone, Copy)]
pub struct GrpcProof<'a> {
    /// The remoting request code the call stands for.
    pub code: i32,
    pub authorization: Option<&'a GrpcAuthorization>,
    pub date_time: &'a str,
}

impl Proof for GrpcProof<'_> {
    fn code(&self) -> i32 {
        self.code
    }

    fn access_key(&self) -> Option<&str> {
        self.authorization
            .map(|a| a.access_key.as_str())
            .filter(|k| !k.is_empty())
    }

    fn signed_with(&self, key: &SigningKey) -> bool {
        self.authorization
            .is_some_and(|a| a.verify_with(key, self.date_time))
    }
}
