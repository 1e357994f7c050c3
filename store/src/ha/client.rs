//! The slave's side (RocketMQ `DefaultHAClient`): connects to the master's HA
//! address, reports its write end, applies the transfer frames to its commitlog
//! through the replication seam and reports again after each applied batch, with a
//! report every `haSendHeartbeatInterval` when idle.
//!
//! A frame must continue this store's commitlog exactly (its offset equal to the
//! write end, unless the store is empty): anything else means the two logs differ,
//! and the connection is closed with an error rather than written at a wrong offset.
//! Any error closes the connection; the client reconnects every 5 s. A master silent
//! for `haHousekeepingInterval` (heartbeats included) is dropped the same way.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};
use vostok_remoting::support::sync::{MutexExt, RwLockExt};
use vostok_remoting::support::time::now_millis;
use vostok_remoting::tls::{ClientTls, HANDSHAKE_TIMEOUT};

use super::wire::{
    decode_transfer, encode_handshake, encode_report, TransferFrame, MAX_TRANSFER_BODY,
    SLAVE_READ_BUFFER,
};
use crate::error::{Result, StoreError};
use crate::MessageStore;

/// Wait between two connection attempts.
pub const RECONNECT_INTERVAL: Duration = Duration::from_secs(5);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// A slave's replication client. The master address is fixed (`haMasterAddress`) or
/// follows what the name servers report ([`HaClient::update_master`]).
pub struct HaClient {
    store: Arc<MessageStore>,
    /// TLS towards the master (`tls.enable`), as the broker's other outgoing
    /// connections; plain when `None`.
    tls: Option<Arc<ClientTls>>,
    fixed: bool,
    changed: Notify,
}

impl HaClient {
    /// Starts replicating into `store` until `shutdown`, in TLS when `tls` is given.
    pub fn start(
        store: Arc<MessageStore>,
        tls: Option<Arc<ClientTls>>,
        tasks: &tokio_util::task::TaskTracker,
        shutdown: CancellationToken,
    ) -> Arc<HaClient> {
        let fixed = store.config().ha.master_address.clone();
        *store.ha_state().client_master.write_locked() = fixed.clone();
        let client = Arc::new(HaClient {
            store,
            tls,
            fixed: fixed.is_some(),
            changed: Notify::new(),
        });
        let c = client.clone();
        tasks.spawn(async move { c.run(shutdown).await });
        client
    }

    /// The master's HA address as the name server reported it; ignored when
    /// `haMasterAddress` is configured. A change drops the current connection.
    pub fn update_master(&self, addr: &str) {
        if self.fixed || addr.len() < 6 {
            return;
        }
        let mut current = self.store.ha_state().client_master.write_locked();
        if current.as_deref() != Some(addr) {
            info!(master = %addr, "master HA address updated");
            *current = Some(addr.to_owned());
            self.changed.notify_waiters();
        }
    }

    /// Controller mode: stop replicating (this broker became master, or must
    /// truncate before following its new master).
    pub fn clear_master(&self) {
        let mut current = self.store.ha_state().client_master.write_locked();
        if current.is_some() {
            *current = None;
            self.changed.notify_waiters();
        }
    }

    /// Connected to the master and replicating.
    pub fn is_connected(&self) -> bool {
        self.store
            .ha_state()
            .client_connected
            .load(Ordering::Acquire)
    }

    fn master(&self) -> Option<String> {
        self.store.ha_state().client_master.read_locked().clone()
    }

    async fn run(&self, shutdown: CancellationToken) {
        let ha = self.store.ha_state();
        while !shutdown.is_cancelled() {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if let Some(addr) = self.master() {
                let result = tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = &mut changed => None,
                    r = self.connect_and_replicate(&addr) => Some(r),
                };
                ha.client_connected.store(false, Ordering::Release);
                match result {
                    // The master moved: connect to the new one at once.
                    None => continue,
                    Some(Err(e)) => {
                        warn!(master = %addr, error = %e, "replication from the master stopped; reconnecting in 5 s");
                        *ha.client_error.write_locked() = Some(e.to_string());
                    }
                    Some(Ok(())) => {}
                }
            }
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = &mut changed => {}
                _ = tokio::time::sleep(RECONNECT_INTERVAL) => {}
            }
        }
    }

    async fn connect_and_replicate(&self, addr: &str) -> Result<()> {
        let io = |source| StoreError::HaIo {
            peer: addr.to_owned(),
            source,
        };
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| io(std::io::ErrorKind::TimedOut.into()))?
            .map_err(io)?;
        stream.set_nodelay(true).map_err(io)?;
        let Some(tls) = &self.tls else {
            return replicate(&self.store, stream, addr).await;
        };
        let stream = tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.connect(addr, stream))
            .await
            .map_err(|_| io(std::io::ErrorKind::TimedOut.into()))?
            .map_err(|source| StoreError::HaTls {
                peer: addr.to_owned(),
                source,
            })?;
        replicate(&self.store, stream, addr).await
    }
}

/// Replicates over one established connection until it fails. Generic over the
/// stream so that TLS can wrap it.
///
/// Reading and applying overlap: the connection task reads and decodes frames and
/// hands them to an applier on a blocking thread ([`Applier`]), at most
/// [`SLAVE_READ_BUFFER`] bytes in flight; the applier publishes the new write end,
/// which the connection task reports.
pub async fn replicate<S>(store: &Arc<MessageStore>, stream: S, master: &str) -> Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let io = |source| StoreError::HaIo {
        peer: master.to_owned(),
        source,
    };
    let ha = store.ha_state();
    let config = &store.config().ha;
    let (mut reader, mut writer) = tokio::io::split(stream);
    let mut reported = store.raw_write_end();
    if config.controller_mode {
        let id = ha.self_id.load(Ordering::Acquire);
        writer.write_all(&encode_handshake(id)).await.map_err(io)?;
    }
    writer
        .write_all(&encode_report(reported))
        .await
        .map_err(io)?;
    ha.client_connected.store(true, Ordering::Release);
    *ha.client_error.write_locked() = None;
    info!(master = %master, offset = reported, "connected to the master; replicating");
    let applier = Applier::start(store.clone());
    let result = async {
        let mut buf = BytesMut::with_capacity(READ_CHUNK);
        let mut last_read = Instant::now();
        let mut last_report = Instant::now();
        // Nothing read yet on this connection: a close now is a refusal.
        let mut received = false;
        loop {
            let report_at = last_report + config.send_heartbeat_interval;
            let silent_at = last_read + config.housekeeping_interval;
            if buf.len() >= SLAVE_READ_BUFFER {
                return Err(StoreError::HaProtocol {
                    reason: "read buffer full without a complete frame".into(),
                });
            }
            buf.reserve(READ_CHUNK);
            let applied = applier.progress.notified();
            tokio::pin!(applied);
            applied.as_mut().enable();
            let end = applier.end()?;
            if end != reported {
                writer.write_all(&encode_report(end)).await.map_err(io)?;
                reported = end;
                last_report = Instant::now();
                ha.client_last_write_ms.store(now_millis(), Ordering::Relaxed);
            }
            tokio::select! {
                n = reader.read_buf(&mut buf) => {
                    let failure = match n {
                        Ok(0) => Some(std::io::ErrorKind::UnexpectedEof.into()),
                        Ok(_) => None,
                        Err(e) => Some(e),
                    };
                    if let Some(source) = failure {
                        return Err(if received {
                            io(source)
                        } else {
                            StoreError::HaClosedEarly { peer: master.to_owned(), source }
                        });
                    }
                    received = true;
                    last_read = Instant::now();
                    ha.client_last_read_ms.store(now_millis(), Ordering::Relaxed);
                    let mut frames = Vec::new();
                    let mut bytes = 0;
                    while let Some(frame) = decode_transfer(&mut buf, MAX_TRANSFER_BODY)? {
                        bytes += frame.body.len();
                        frames.push(frame);
                    }
                    ha.client_rate.add(bytes as i64, now_millis());
                    if !frames.is_empty() {
                        applier.submit(frames, bytes).await?;
                    }
                }
                _ = &mut applied => {}
                _ = tokio::time::sleep_until(report_at) => {
                    writer.write_all(&encode_report(reported)).await.map_err(io)?;
                    last_report = Instant::now();
                    ha.client_last_write_ms.store(now_millis(), Ordering::Relaxed);
                }
                _ = tokio::time::sleep_until(silent_at) => {
                    return Err(StoreError::HaProtocol {
                        reason: format!("nothing from the master for {:?}", config.housekeeping_interval),
                    });
                }
            }
        }
    }
    .await;
    // Whatever was handed over is applied (or failed) before a new connection starts
    // from this store's write end.
    applier.finish().await;
    result
}

/// Bytes reserved per read of the connection (frame bodies keep their part of the
/// buffer until applied, so each read may take a fresh allocation of this size).
const READ_CHUNK: usize = 64 * 1024;

/// Frames read together, with what holds their bytes' budget and when they were read.
type Batch = (Vec<TransferFrame>, OwnedSemaphorePermit, std::time::Instant);

/// Applies received frames on a blocking thread, in order.
struct Applier {
    tx: Option<mpsc::Sender<Batch>>,
    /// Bytes received but not yet applied, at most [`SLAVE_READ_BUFFER`].
    budget: Arc<Semaphore>,
    /// Signalled after each applied batch (and on failure).
    progress: Arc<Notify>,
    state: Arc<std::sync::Mutex<std::result::Result<i64, String>>>,
    thread: Option<tokio::task::JoinHandle<()>>,
}

impl Applier {
    fn start(store: Arc<MessageStore>) -> Applier {
        let (tx, mut rx) = mpsc::channel::<Batch>(64);
        let progress = Arc::new(Notify::new());
        let state = Arc::new(std::sync::Mutex::new(Ok(store.raw_write_end())));
        let (p, st) = (progress.clone(), state.clone());
        let thread = tokio::task::spawn_blocking(move || {
            while let Some((frames, _permit, read_at)) = rx.blocking_recv() {
                let published = store.max_phy_offset();
                let result = apply(&store, frames).map_err(|e| e.to_string());
                let ha = store.ha_state();
                ha.apply_wait.record(read_at.elapsed().as_millis() as i64);
                // Complete records became visible: how old is the newest of them?
                if result.is_ok() && store.max_phy_offset() > published {
                    let newest = store.last_store_timestamp();
                    if newest > 0 {
                        ha.apply_delay.record(now_millis() - newest);
                    }
                }
                let failed = result.is_err();
                *st.locked() = result;
                p.notify_one();
                if failed {
                    break;
                }
            }
        });
        Applier {
            tx: Some(tx),
            budget: Arc::new(Semaphore::new(SLAVE_READ_BUFFER)),
            progress,
            state,
            thread: Some(thread),
        }
    }

    /// The write end after the last applied batch, or why applying failed.
    fn end(&self) -> Result<i64> {
        self.state
            .locked()
            .clone()
            .map_err(|reason| StoreError::HaProtocol { reason })
    }

    /// Hands frames over, waiting while too many bytes are not applied yet.
    async fn submit(&self, frames: Vec<TransferFrame>, bytes: usize) -> Result<()> {
        let gone = || StoreError::HaProtocol {
            reason: "the applier stopped".into(),
        };
        let n = bytes.clamp(1, SLAVE_READ_BUFFER) as u32;
        let permit = self
            .budget
            .clone()
            .acquire_many_owned(n)
            .await
            .map_err(|_| gone())?;
        let tx = self.tx.as_ref().ok_or_else(gone)?;
        tx.send((frames, permit, std::time::Instant::now()))
            .await
            .map_err(|_| gone())
    }

    async fn finish(mut self) {
        self.tx = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.await;
        }
    }
}

/// Appends the frames in order (blocking: writes the mapped files); returns the new
/// write end.
fn apply(store: &MessageStore, frames: Vec<TransferFrame>) -> Result<i64> {
    for frame in frames {
        let end = store.raw_write_end();
        if end != 0 && frame.offset != end {
            return Err(StoreError::HaProtocol {
                reason: format!(
                    "the master sends offset {} but this slave's commitlog ends at {end}: \
                     the logs differ; not replicating (repair by hand)",
                    frame.offset
                ),
            });
        }
        if frame.is_heartbeat() {
            continue;
        }
        store.append_raw(frame.offset, &frame.body)?;
        debug!(offset = frame.offset, len = frame.body.len(), "applied");
    }
    Ok(store.raw_write_end())
}
