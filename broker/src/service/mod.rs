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

pub(crate) mod config_flush;
pub(crate) mod housekeeping;
pub(crate) mod registration;
pub(crate) mod revive;
pub(crate) mod schedule;
pub(crate) mod slave_sync;
pub(crate) mod timer;
pub(crate) mod transaction_check;

use std::sync::Arc;

use crate::state::Broker;

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
