//! Vostok's broker: RocketMQ's broker requests over the remoting layer and the store.
//!
//! Module map, from the top floor down (a module imports only what stands below it):
//! * [`cli`]: the `mqbroker` command line; [`startup`]: builds the shared state, binds
//!   the listeners, starts the services, shuts down ([`Broker::start`], [`BrokerHandle`]).
//! * Front ends, side by side and never importing each other:
//!   [`processor`], one function per request code in one file per request family
//!   ([`processor::BrokerProcessor`] is the request table); [`grpc`], the gRPC
//!   endpoint of the 5.x clients (`MessagingService`); `console`, the web console
//!   (docs/operations.md#console) on the observe crate's HTTP server, whose pages read
//!   the state and whose forms call the operations (with ACL on, authorized by the same
//!   guard as requests); `exporter`, the Prometheus registry of `/metrics`.
//! * `ops`: the operations more than one front end needs (send, end transaction, send
//!   back, topic create and delete, POP consumption, browse, remove, resend, message
//!   status, lag, offsets, creation on first use, a stored message's ACL resources): a
//!   typed request and the `ops::Client` (or `ops::Operator`) it serves in, a typed
//!   outcome or `ops::Refusal` out (POP's own `PopError` still carries its code). The
//!   front ends map a refusal to a RocketMQ response code (`processor::refused`) or a
//!   gRPC status (`grpc::status::from_refusal`). An operation takes the groups of
//!   tables it uses (`offset::commit_offset(&broker.consumers, &broker.storage.topics,
//!   ..)`), or a small struct of them where it uses many (`ops::send::SendTables` for
//!   what stores a message, `ops::pop::PopTables`); creating or deleting a topic or
//!   group takes the shared broker, to write its files off the async runtime, and
//!   says so.
//! * [`service`]: background services (name-server registration, housekeeping,
//!   delay levels, timers, transaction check-back, POP revive, a slave's metadata
//!   sync, controller mode's heartbeats and role changes). Replication itself (the HA listener, a slave's client, the SYNC_MASTER
//!   wait) lives in the store (`vostok_store::ha`); start-up wires it to the roles.
//! * [`reroute`]: parking messages in system topics (delay, timer, half) and
//!   restoring them; the one constructor of a message copy from a stored message.
//! * [`state`]: tables only, each file saying what it keeps: topics, subscription
//!   groups, consumer offsets, clients, queue locks, held pulls, delay offsets, timers,
//!   transactions, compiled SQL92 filters, the duplication window, stats and their
//!   minute/hour/day windows, request metrics, removed messages, the running
//!   master-only services. [`Broker`] holds them in a few groups (`Storage`,
//!   `Consumers`, `Deferred`, `Roles`, `Intake`, `Observed`, `NameServers`,
//!   `Lifecycle`) that code takes one at a time.
//! * [`config`]: `broker.conf`; [`error`]: [`BrokerError`].
//!
//! Request flow: the remoting server (plain or TLS, `tls.*` keys) hands each request to
//! [`processor::BrokerProcessor`], which first passes it through the ACL guard when
//! ACL is on (`vostok_auth::Guard`, with the broker's request table in
//! `processor::access`), then decodes the typed header into an operation's typed
//! request, calls the operation (which checks permissions and names and calls the
//! store), and maps its outcome to a RocketMQ response code. A gRPC call or a console
//! form reaches the same operation through its own front end.
//! The store's dispatcher reports each new message to the state's held pulls (and the
//! timer and delay tables), which wake the pulls and services waiting for that queue.
//!
//! Adding a feature: an `ops` file when more than one front end needs it, a processor
//! file and a line in the request table, a service file and a line in [`service`], a
//! table in [`state`] and a field in its group of [`state::Broker`]
//! (docs/architecture.md, *Where to add*). Formats and flows are
//! described in the repository's `docs/`.

pub mod cli;
pub mod config;
pub(crate) mod console;
pub mod error;
pub(crate) mod exporter;
pub mod grpc;
pub(crate) mod ops;
pub mod processor;
pub(crate) mod reroute;
pub(crate) mod service;
pub mod startup;
pub mod state;

pub use config::{BrokerConfig, BrokerRole};
pub use error::BrokerError;
pub use startup::BrokerHandle;
pub use state::Broker;
