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
//!
//!   These four run on a master only, together ([`start_master_services`],
//!   [`stop_master_services`]).
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
use std::time::Duration;

use tracing::{info, warn};

use crate::state::Broker;

/// Longest a demotion waits for the master-only services to stop.
const MASTER_SERVICES_STOP: Duration = Duration::from_secs(10);

/// The services only a master runs ([`schedule`], [`transaction_check`], [`timer`],
/// [`revive`]), in one scope (`state::master_services`): for a classic master once
/// at start, in controller mode on each promotion. Nothing when they run already.
pub(crate) fn start_master_services(broker: &Arc<Broker>) {
    let services = &broker.roles.replicas.master_services;
    let Some(scope) = services.begin(&broker.life.shutdown, &broker.life.tasks) else {
        return;
    };
    schedule::spawn(broker, &scope);
    transaction_check::spawn(broker, &scope);
    timer::spawn(broker, &scope);
    revive::spawn(broker, &scope);
    info!("master-only services started");
}

/// Controller mode, on a demotion: stops the master-only services and waits (at most
/// [`MASTER_SERVICES_STOP`]) until they have.
pub(crate) async fn stop_master_services(broker: &Broker) {
    let Some(tasks) = broker.roles.replicas.master_services.end() else {
        return;
    };
    if tokio::time::timeout(MASTER_SERVICES_STOP, tasks.wait())
        .await
        .is_err()
    {
        warn!(
            waited = ?MASTER_SERVICES_STOP,
            "master-only services still stopping; going on (the store refuses their writes)"
        );
    } else {
        info!("master-only services stopped");
    }
}

/// Starts every background service; one line per service.
pub(crate) fn spawn_all(broker: &Arc<Broker>) {
    registration::spawn(broker);
    config_flush::spawn(broker);
    housekeeping::spawn(broker);
    // A controller-mode broker has no role yet: its promotion starts them.
    if broker.is_master() {
        start_master_services(broker);
    }
    slave_sync::spawn(broker);
}
