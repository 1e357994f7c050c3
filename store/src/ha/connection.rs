//! One slave's connection on the master (RocketMQ `DefaultHAConnection`): a reader
//! that takes the slave's offset reports, and a writer that sends the commitlog from
//! the slave's first report on, in chunks of at most `haTransferBatchSize` bytes that
//! never span two files, with a heartbeat when idle.
//!
//! The first report decides where the transfer starts: 0 (an empty slave) → the start
//! of this master's last commitlog file; otherwise the reported offset itself. A
//! report beyond this master's end means the slave holds data the master does not
//! (the master lost a tail the slave had received, or the slave followed another
//! master): the connection is refused with an error, never continued at a forked
//! offset (classic HA has no epochs to truncate by; docs/replication.md).

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};
use vostok_remoting::support::time::now_millis;
use vostok_remoting::tls::TLS_HANDSHAKE_BYTE;

use super::state::SlaveLink;
use super::wire::{decode_handshake, decode_reports, encode_transfer_header};
use crate::error::{Result, StoreError};
use crate::MessageStore;

/// Bytes of frames gathered into one write while data is waiting.
const WRITE_BATCH: usize = 256 * 1024;

/// Serves one slave until either side closes, the connection goes silent for
/// `haHousekeepingInterval`, or `shutdown`. Generic over the stream, so that a TLS
/// acceptor can hand over its streams.
pub async fn serve_slave<S>(
    store: Arc<MessageStore>,
    stream: S,
    peer: SocketAddr,
    shutdown: CancellationToken,
) where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let ha = store.ha_state();
    let link = ha.add_link(peer);
    info!(slave = %peer, "slave connected");
    let (reader, writer) = tokio::io::split(stream);
    let (first_tx, first_rx) = watch::channel(None);
    let result = tokio::select! {
        r = read_reports(&store, reader, &link, first_tx) => r,
        r = transfer(&store, &link, writer, first_rx, peer) => r,
        _ = shutdown.cancelled() => Ok(()),
    };
    ha.remove_link(&link);
    match result {
        Ok(()) => info!(slave = %peer, "slave connection closed"),
        Err(e) => warn!(slave = %peer, error = %e, "slave connection closed"),
    }
}

fn io_error(peer: SocketAddr, source: std::io::Error) -> StoreError {
    StoreError::HaIo {
        peer: peer.to_string(),
        source,
    }
}

async fn read_reports<R: AsyncRead + Unpin>(
    store: &MessageStore,
    mut reader: R,
    link: &SlaveLink,
    first: watch::Sender<Option<i64>>,
) -> Result<()> {
    let housekeeping = store.config().ha.housekeeping_interval;
    let ha = store.ha_state();
    let mut buf = BytesMut::with_capacity(1024);
    let controller_mode = store.config().ha.controller_mode;
    let mut handshake_due = controller_mode;
    loop {
        buf.reserve(512);
        let n = match tokio::time::timeout(housekeeping, reader.read_buf(&mut buf)).await {
            Err(_) => {
                return Err(StoreError::HaProtocol {
                    reason: format!("no report from the slave for {housekeeping:?}"),
                })
            }
            Ok(r) => r.map_err(|e| io_error(link.addr, e))?,
        };
        if n == 0 {
            return Ok(());
        }
        if link.ack.load(Ordering::Acquire) < 0 && buf.first() == Some(&TLS_HANDSHAKE_BYTE) {
            // Reports and handshakes open with a zero byte; 0x16 opens a ClientHello.
            error!(
                slave = %link.addr,
                "the slave opened a TLS handshake but this HA port is plain (no tls.server.* \
                 on this master): give the master tls.server.mode and a certificate, or set \
                 tls.enable=false on the slave"
            );
            return Err(StoreError::HaProtocol {
                reason: "TLS handshake on a plain HA port".into(),
            });
        }
        if handshake_due {
            match decode_handshake(&mut buf)? {
                Some(id) => {
                    link.slave_id.store(id, Ordering::Release);
                    handshake_due = false;
                    info!(slave = %link.addr, broker_id = id, "slave handshake");
                }
                None => continue,
            }
        }
        if let Some(offset) = decode_reports(&mut buf)? {
            let now = now_millis();
            link.last_report_ms.store(now, Ordering::Relaxed);
            let max = store.max_phy_offset();
            let before = link.max_at_last_report.swap(max, Ordering::AcqRel);
            if offset >= max.min(before) {
                link.caught_up_ms.store(now, Ordering::Release);
            }
            if link.ack.swap(offset, Ordering::AcqRel) < 0 {
                first.send_replace(Some(offset));
            }
            let sent = link.sent.load(Ordering::Acquire);
            if sent >= 0 {
                ha.group.on_ack(offset.min(sent));
                ha.acked.notify_waiters();
                if controller_mode {
                    ha.maybe_admit(link, max);
                }
            }
        }
    }
}

/// Where the transfer to a slave that reported `requested` starts, or why it cannot.
fn start_offset(store: &MessageStore, requested: i64, peer: SocketAddr) -> Result<i64> {
    let max = store.max_phy_offset();
    if requested == 0 && store.config().ha.controller_mode {
        // Controller mode: any replica may become master, so it gets everything.
        return Ok(store.min_phy_offset());
    }
    if requested == 0 {
        let file = store.config().mapped_file_size_commit_log as i64;
        return Ok(max - max % file);
    }
    if requested > max {
        error!(
            slave = %peer,
            slave_offset = requested,
            master_offset = max,
            "the slave is ahead of this master: it holds commitlog data this master does not \
             have; refusing to replicate rather than fork the log (repair by hand: remove the \
             slave's store or truncate it to the master's end)"
        );
        return Err(StoreError::HaProtocol {
            reason: format!("slave ahead of master ({requested} > {max})"),
        });
    }
    if requested < store.min_phy_offset() {
        error!(
            slave = %peer,
            slave_offset = requested,
            master_min_offset = store.min_phy_offset(),
            "the slave's offset is older than this master's oldest commitlog file"
        );
        return Err(StoreError::HaProtocol {
            reason: format!("slave offset {requested} below the master's first file"),
        });
    }
    Ok(requested)
}

async fn transfer<W: AsyncWrite + Unpin>(
    store: &Arc<MessageStore>,
    link: &SlaveLink,
    mut writer: W,
    mut first: watch::Receiver<Option<i64>>,
    peer: SocketAddr,
) -> Result<()> {
    // Nothing is sent before the slave's first report.
    let requested = loop {
        if let Some(offset) = *first.borrow_and_update() {
            break offset;
        }
        if first.changed().await.is_err() {
            return Ok(());
        }
    };
    let mut next = start_offset(store, requested, peer)?;
    link.sent.store(next, Ordering::Release);
    link.transfer_from.store(next, Ordering::Release);
    info!(slave = %peer, from = next, "transfer to slave starts");
    let config = &store.config().ha;
    let heartbeat = config.send_heartbeat_interval;
    let ha = store.ha_state();
    let mut out = Vec::with_capacity(WRITE_BATCH + config.transfer_batch_size + 12);
    let mut last_write = Instant::now();
    loop {
        let notified = ha.new_data.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if next < store.max_phy_offset() {
            // Several frames (each at most `haTransferBatchSize`, within one file) per
            // write while data is waiting: fewer system calls under load.
            out.clear();
            let mut end = next;
            // The store time of the newest record, when this write reaches the end.
            let mut newest = 0;
            while end < store.max_phy_offset() && out.len() < WRITE_BATCH {
                newest = store.last_store_timestamp();
                let Some(body) = read_chunk(store, end, config.transfer_batch_size).await else {
                    return Err(StoreError::HaProtocol {
                        reason: format!("commitlog offset {end} is not readable on this master"),
                    });
                };
                out.extend_from_slice(&encode_transfer_header(end, body.len()));
                out.extend_from_slice(&body);
                end += body.len() as i64;
            }
            let started = Instant::now();
            writer
                .write_all(&out)
                .await
                .map_err(|e| io_error(peer, e))?;
            ha.send_block.record(started.elapsed().as_millis() as i64);
            link.rate.add(out.len() as i64, now_millis());
            if end >= store.max_phy_offset() && newest > 0 {
                ha.send_delay.record(now_millis() - newest);
            }
            next = end;
            link.sent.store(next, Ordering::Release);
            last_write = Instant::now();
            continue;
        }
        let idle = heartbeat.saturating_sub(last_write.elapsed());
        if idle.is_zero() {
            writer
                .write_all(&encode_transfer_header(next, 0))
                .await
                .map_err(|e| io_error(peer, e))?;
            last_write = Instant::now();
            debug!(slave = %peer, offset = next, "heartbeat to slave");
            continue;
        }
        // Woken by an append; the timeout bounds a missed wake-up too.
        let _ = tokio::time::timeout(idle.min(Duration::from_millis(100)), notified).await;
    }
}

/// The next chunk: zero-copy when the bytes are in the page-cache window, else
/// copied on a blocking thread (reading cold pages may wait for the disk).
async fn read_chunk(store: &Arc<MessageStore>, from: i64, max: usize) -> Option<Bytes> {
    if store.is_in_memory(from) {
        return store.read_for_slave(from, max);
    }
    let store = store.clone();
    tokio::task::spawn_blocking(move || {
        store
            .read_for_slave(from, max)
            .map(|b| Bytes::copy_from_slice(&b))
    })
    .await
    .ok()
    .flatten()
}
