//! The gRPC endpoint of the 5.x clients: Apache RocketMQ's `MessagingService`
//! (package `apache.rocketmq.v2`) on `grpcServerPort`, served by the broker process
//! itself, over the same state as the remoting protocol (docs/grpc.md).
//!
//! It is a second front end beside the remoting processors, never importing them: an
//! RPC calls the operations the processors call (`crate::ops` for send, end
//! transaction and send back; `crate::ops::pop`) or reads the state, so both protocols
//! share one send path, one transaction path and one POP path. [`status`] maps an
//! operation's refusal to a gRPC status. Nothing below calls into it: the broker
//! reaches a gRPC client through the detached [`vostok_remoting::Channel`] of its
//! session, registered in the client registry like any connection.
//!
//! * [`server`]: accept loop, TLS or plaintext by the first byte ([`tls`]), tonic.
//! * [`service`]: the `MessagingService` trait, dispatching to:
//!   [`route`] (QueryRoute, QueryAssignment), [`client`] (Heartbeat,
//!   NotifyClientTermination, registration), [`telemetry`] (settings, check-back),
//!   [`send`], [`receive`], [`ack`] (ack, invisible duration, DLQ), [`transaction`],
//!   [`pull`] (pull and offsets), [`recall`].
//! * [`session`]: client sessions; [`context`]: request metadata; [`convert`]:
//!   stored messages as gRPC messages; [`status`]: status codes.
//! * [`proto`]: the generated messages and service trait.

mod access;
mod ack;
mod client;
mod context;
mod convert;
mod endpoint;
pub mod proto;
mod pull;
mod recall;
mod receive;
mod route;
mod send;
mod server;
mod service;
mod session;
mod status;
mod telemetry;
mod tls;
mod transaction;

pub use server::GrpcServer;
