//! The master's HA listener (RocketMQ `DefaultHAService.AcceptSocketService`): every
//! slave that connects gets a [`super::connection`] task. The accept path is one
//! function over a bound listener, so that a TLS acceptor can sit in front of
//! [`super::serve_slave`] instead.

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use super::connection::serve_slave;
use crate::MessageStore;

/// Accepts slaves on `listener` until `shutdown`; each connection runs on `tasks`.
pub async fn serve(
    store: Arc<MessageStore>,
    listener: TcpListener,
    tasks: TaskTracker,
    shutdown: CancellationToken,
) {
    if let Ok(addr) = listener.local_addr() {
        info!(addr = %addr, "HA service listening for slaves");
    }
    // Puts that timed out leave their waiters behind; drop them now and then.
    let mut prune = tokio::time::interval(std::time::Duration::from_secs(1));
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = prune.tick() => {
                store.ha_state().group.prune();
                continue;
            }
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, peer)) => {
                if let Err(e) = stream.set_nodelay(true) {
                    warn!(slave = %peer, error = %e, "could not set TCP_NODELAY");
                }
                tasks.spawn(serve_slave(store.clone(), stream, peer, shutdown.clone()));
            }
            Err(e) => {
                warn!(error = %e, "HA accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}
