//! The broker keys that change at run time (`.at_run_time()` in the key table)
//! changed, all or none. A change of `brokerPermission` bumps the topic table's
//! version, so that the next registration shows it in routes. For UPDATE_BROKER_CONFIG
//! and the console's configuration page.

use tracing::info;

use super::{Refusal, Refused};
use crate::config::BrokerConfig;
use crate::state::runtime_config::RuntimeConfig;
use crate::state::{Consumers, Storage};

/// Applies `changes` (key, value): every key must be one that changes at run time.
/// Sets the run-time keys, and passes what changed on to the group table (creation on
/// first use) and the topic table (its version).
pub(crate) fn update_broker_config(
    config: &BrokerConfig,
    runtime: &RuntimeConfig,
    consumers: &Consumers,
    storage: &Storage,
    changes: &[(String, String)],
) -> Result<(), Refusal> {
    if changes.is_empty() {
        return Err(Refusal::new(
            Refused::SystemError,
            "no config in the request body",
        ));
    }
    let before = runtime.broker_permission();
    if let Err(reason) = runtime.apply(config, changes) {
        return Err(Refusal::new(Refused::InvalidParameter, reason));
    }
    info!(changes = ?changes, "broker config updated at run time");
    consumers
        .subscriptions
        .set_auto_create(runtime.auto_create_subscription_group());
    if runtime.broker_permission() != before {
        storage.topics.bump_version();
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
        update_broker_config(
            &b.config,
            &b.runtime,
            &b.consumers,
            &b.storage,
            &set("brokerPermission", "4"),
        )
        .unwrap();
        assert_eq!(b.runtime.broker_permission(), 4);
        let refused = update_broker_config(
            &b.config,
            &b.runtime,
            &b.consumers,
            &b.storage,
            &set("listenPort", "1"),
        )
        .unwrap_err();
        assert_eq!(refused.kind, Refused::InvalidParameter);
        assert_eq!(
            update_broker_config(&b.config, &b.runtime, &b.consumers, &b.storage, &[])
                .map_err(|r| r.kind),
            Err(Refused::SystemError)
        );
        handle.shutdown().await;
    }
}
