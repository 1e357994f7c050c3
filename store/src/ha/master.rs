//! The master's HA listener (RocketMQ `DefaultHAService.AcceptSocketService`): every
//! slave that connects gets a [`super::connection`] task.
//!
//! TLS (docs/replication.md#tls): with a [`ServerTls`] the port follows
//! `tls.server.mode` exactly as the remoting port does — enforcing accepts only TLS,
//! permissive tells TLS from plain by the first byte (0x16; a slave's first report
//! never starts with it), and the decision is [`ServerTls::admit`]'s. Without one the
//! port is plain, as Apache's classic HA always is. A refused connection is a
//! misconfigured slave: it is logged as a warning with the reason.

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};
use vostok_remoting::tls::ServerTls;

use super::connection::serve_slave;
use crate::MessageStore;

/// Accepts slaves on `listener` until `shutdown`, in TLS per `tls` (plain when
/// `None`); each connection runs on `tasks`.
pub async fn serve(
    store: Arc<MessageStore>,
    listener: TcpListener,
    tls: Option<Arc<ServerTls>>,
    tasks: TaskTracker,
    shutdown: CancellationToken,
) {
    if let Ok(addr) = listener.local_addr() {
        let mode = tls.as_ref().map_or("disabled", |t| t.mode().name());
        info!(addr = %addr, tls = mode, "HA service listening for slaves");
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
                let Some(tls) = &tls else {
                    tasks.spawn(serve_slave(store.clone(), stream, peer, shutdown.clone()));
                    continue;
                };
                // The first byte and the handshake are awaited off the accept loop.
                let (store, tls, shutdown) = (store.clone(), tls.clone(), shutdown.clone());
                tasks.spawn(async move {
                    match tls.admit(stream).await {
                        Ok(stream) => serve_slave(store, stream, peer, shutdown).await,
                        Err(refused) => warn!(
                            slave = %peer,
                            tls = tls.mode().name(),
                            reason = %refused,
                            "HA connection refused"
                        ),
                    }
                });
            }
            Err(e) => {
                warn!(error = %e, "HA accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}
