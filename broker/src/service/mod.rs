//! Background services: each takes the shared [`crate::state::Broker`] and runs until
//! its shutdown token is cancelled. None calls into a request processor; what both
//! need is a method on the state they share.
//!
//! * [`registration`]: registers with the name servers (RocketMQ's `BrokerOuterAPI`).
//! * [`config_flush`]: writes the topic and subscription-group files after changes.
//! * [`housekeeping`]: consumer offsets flush, expiry of silent clients, stats sampling.
//! * [`schedule`]: delay-level delivery.
//! * [`timer`]: timer delivery and rolling.
//! * [`transaction_check`]: checks back transactions left unknown.
//! * [`revive`]: brings back popped messages not acked in time (POP).
//! * [`slave_sync`]: a slave's copy of its master's metadata (SlaveSynchronize).
//! * [`replicas_manager`]: controller mode: id, registration, heartbeats, role
//!   (with [`controller_client`], [`role_change`], [`sync_state_set`]).

pub(crate) mod config_flush;
pub(crate) mod controller_client;
pub(crate) mod housekeeping;
pub(crate) mod registration;
pub(crate) mod replicas_manager;
pub(crate) mod revive;
pub(crate) mod role_change;
pub(crate) mod schedule;
pub(crate) mod slave_sync;
pub(crate) mod sync_state_set;
pub(crate) mod timer;
pub(crate) mod transaction_check;

use std::sync::Arc;

use crate::state::Broker;

/// Controller mode: the services only a master runs, started when this broker is
/// first promoted (they keep running after a demotion; the store refuses their
/// writes then).
pub(crate) fn spawn_master_services(broker: &Arc<Broker>) {
    schedule::spawn(broker);
    transaction_check::spawn(broker);
    timer::spawn(broker);
    revive::spawn(broker);
}

/// Starts every background service; one line per service.
pub(crate) fn spawn_all(broker: &Arc<Broker>) {
    registration::spawn(broker);
    config_flush::spawn(broker);
    housekeeping::spawn(broker);
    schedule::spawn(broker);
    transaction_check::spawn(broker);
    timer::spawn(broker);
    revive::spawn(broker);
    slave_sync::spawn(broker);
}
