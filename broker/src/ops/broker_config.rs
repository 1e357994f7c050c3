//! The broker keys that change at run time (`.at_run_time()` in the key table)
//! changed, all or none. A change of `brokerPermission` bumps the topic table's
//! version, so that the next registration shows it in routes. For UPDATE_BROKER_CONFIG
//! and the console's configuration page.

use tracing::info;

use super::{Refusal, Refused};
use crate::state::Broker;

/// Applies `changes` (key, value): every key must be one that changes at run time.
pub(crate) fn update_broker_config(
    broker: &Broker,
    changes: &[(String, String)],
) -> Result<(), Refusal> {
    if changes.is_empty() {
        return Err(Refusal::new(
            Refused::SystemError,
            "no config in the request body",
        ));
    }
    let before = broker.runtime.broker_permission();
    if let Err(reason) = broker.runtime.apply(&broker.config, changes) {
        return Err(Refusal::new(Refused::InvalidParameter, reason));
    }
    info!(changes = ?changes, "broker config updated at run time");
    broker
        .consumers
        .subscriptions
        .set_auto_create(broker.runtime.auto_create_subscription_group());
    if broker.runtime.broker_permission() != before {
        broker.storage.topics.bump_version();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn runtime_keys_change_and_others_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let handle = testing::broker(dir.path()).await;
        let b = handle.broker();
        let set = |k: &str, v: &str| vec![(k.to_owned(), v.to_owned())];
        update_broker_config(b, &set("brokerPermission", "4")).unwrap();
        assert_eq!(b.runtime.broker_permission(), 4);
        let refused = update_broker_config(b, &set("listenPort", "1")).unwrap_err();
        assert_eq!(refused.kind, Refused::InvalidParameter);
        assert_eq!(
            update_broker_config(b, &[]).map_err(|r| r.kind),
            Err(Refused::SystemError)
        );
        handle.shutdown().await;
    }
}
