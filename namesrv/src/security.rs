//! The name server's guard and TLS, built from its config at start-up
//! (docs/security.md#name-server).
//!
//! With `aclEnable` (or `authenticationEnabled`) the accounts of
//! `$ROCKETMQ_HOME/conf/plain_acl.yml` (plus `conf/acl/`) decide, reloaded on change;
//! `rocketmqHome` overrides `$ROCKETMQ_HOME`. The name server keeps no ACL 2.0
//! users of its own: both switches select the account files. One embedded in a
//! standalone broker also knows that broker's ACL 2.0 users ([`AuthUsers`]), to
//! answer their queries within their namespaces.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tracing::{info, warn};
use vostok_auth::plain::PlainAccount;
use vostok_auth::plain_store::POLL_INTERVAL;
use vostok_auth::v2::AuthMetadata;
use vostok_auth::{Guard, GuardConfig, TimeWindow};
use vostok_remoting::tls::ServerTls;

use crate::config::NamesrvConfig;
use crate::error::NamesrvError;

/// ACL 2.0 users known to the name server without deciding its access: a signed
/// query of one of them is answered within the namespaces it is confined to.
#[derive(Clone)]
pub struct AuthUsers {
    pub metadata: Arc<AuthMetadata>,
    /// How far a signed time may be from the clock.
    pub time_window: TimeWindow,
}

impl std::fmt::Debug for AuthUsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthUsers")
            .field("dir", &self.metadata.dir())
            .finish()
    }
}

impl PartialEq for AuthUsers {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.metadata, &other.metadata) && self.time_window == other.time_window
    }
}

impl Eq for AuthUsers {}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, NamesrvError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| NamesrvError::Security(e.to_string()))?
        .map_err(NamesrvError::Security)
}

/// The guard (`None` when ACL is off) and the listener's TLS (`None` when plain).
pub(crate) async fn open(
    config: &NamesrvConfig,
) -> Result<(Option<Guard>, Option<Arc<ServerTls>>), NamesrvError> {
    let guard = if config.acl_enable {
        let extra_accounts = config
            .embedded_broker
            .iter()
            .map(|(name, creds)| PlainAccount::internal(creds, vec![name.clone()]))
            .collect();
        let guard_config = GuardConfig {
            acl_enable: true,
            rocketmq_home: vostok_auth::plain_store::rocketmq_home_or(&config.rocketmq_home),
            extra_accounts,
            ..GuardConfig::default()
        };
        blocking(move || Guard::open(&guard_config).map_err(|e| e.to_string())).await?
    } else {
        None
    };
    let tls = config.tls.clone();
    let tls = blocking(move || {
        let options = tls
            .effective()
            .and_then(|t| t.server())
            .map_err(|e| e.to_string())?;
        options
            .map(|o| ServerTls::new(&o).map(Arc::new))
            .transpose()
            .map_err(|e| e.to_string())
    })
    .await?;
    Ok((guard, tls))
}

/// The ACL 2.0 users of `authConfigPath`, when set and no embedding broker gave its own.
pub(crate) async fn open_users(config: &NamesrvConfig) -> Result<Option<AuthUsers>, NamesrvError> {
    if config.auth_users.is_some() {
        return Ok(config.auth_users.clone());
    }
    let Some(dir) = config.auth_config_path.clone() else {
        return Ok(None);
    };
    let metadata = blocking(move || AuthMetadata::open(dir).map_err(|e| e.to_string())).await?;
    info!(dir = %metadata.dir().display(), users = metadata.snapshot().users.len(), "ACL 2.0 users followed");
    Ok(Some(AuthUsers {
        metadata: Arc::new(metadata),
        time_window: TimeWindow::default(),
    }))
}

/// Reads the users of `authConfigPath` again every [`POLL_INTERVAL`] until `stop`, so
/// that users and ACLs a broker changes reach the name server's answers.
pub(crate) async fn follow_users(users: AuthUsers, stop: CancellationToken) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(POLL_INTERVAL) => {}
        }
        let metadata = users.metadata.clone();
        match tokio::task::spawn_blocking(move || metadata.reload()).await {
            Ok(Ok(true)) => info!(dir = %users.metadata.dir().display(), "ACL 2.0 users reloaded"),
            Ok(Ok(false)) => {}
            Ok(Err(e)) => {
                warn!(dir = %users.metadata.dir().display(), error = %e, "ACL 2.0 users not reloaded; the previous ones stay")
            }
            Err(e) => warn!(error = %e, "ACL 2.0 users reload task failed"),
        }
    }
}
