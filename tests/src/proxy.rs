//! A TCP proxy in front of a broker that loses the answers of some sends: it forwards
//! the request to the broker, then closes the client's connection before the answer
//! comes back, as a network failure or a crash of the path would. The producer sees
//! its call fail and retries a message the broker has stored.
//!
//! The broker binds another loopback address than the one it registers
//! (`bindAddress=127.0.0.2`, `brokerIP1=127.0.0.1`), and the proxy listens on the
//! registered one, so that clients routed by the name server go through it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::Decoder;
use vostok_remoting::protocol::request_code;
use vostok_remoting::{FrameLimits, RemotingCodec, RemotingCommand};

/// Decodes one whole frame's command, for its code and flag.
fn decode_frame(frame: &[u8]) -> Option<RemotingCommand> {
    let mut codec = RemotingCodec::new(FrameLimits::default());
    codec.decode(&mut BytesMut::from(frame)).ok().flatten()
}

/// The proxy; it stops when dropped.
pub struct AnswerDropper {
    pub addr: SocketAddr,
    sends: Arc<AtomicUsize>,
    cuts: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl AnswerDropper {
    /// Listens on `listen` and forwards to `upstream`; the answer of every `every`-th
    /// send request (SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE) is lost.
    pub async fn start(listen: SocketAddr, upstream: SocketAddr, every: usize) -> AnswerDropper {
        let listener = TcpListener::bind(listen).await.expect("proxy listens");
        let addr = listener.local_addr().expect("proxy address");
        let sends = Arc::new(AtomicUsize::new(0));
        let cuts = Arc::new(AtomicUsize::new(0));
        let (s, c) = (sends.clone(), cuts.clone());
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(broker) = TcpStream::connect(upstream).await else {
                    continue;
                };
                tokio::spawn(relay(client, broker, every.max(1), s.clone(), c.clone()));
            }
        });
        AnswerDropper {
            addr,
            sends,
            cuts,
            task,
        }
    }

    /// Send requests seen so far.
    pub fn sends(&self) -> usize {
        self.sends.load(Ordering::SeqCst)
    }

    /// Answers lost so far.
    pub fn cuts(&self) -> usize {
        self.cuts.load(Ordering::SeqCst)
    }
}

impl Drop for AnswerDropper {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One connection: requests frame by frame to the broker, answers back until a cut.
/// A cut closes the client's side only: the broker keeps its connection, processes the
/// request and answers into the void, as when the answer is lost on the way.
async fn relay(
    client: TcpStream,
    broker: TcpStream,
    every: usize,
    sends: Arc<AtomicUsize>,
    cuts: Arc<AtomicUsize>,
) {
    let (mut client_rx, client_tx) = client.into_split();
    let (mut broker_rx, mut broker_tx) = broker.into_split();
    let client_tx = Arc::new(tokio::sync::Mutex::new(Some(client_tx)));
    let cut = Arc::new(AtomicBool::new(false));
    let (to_client, cut_back) = (client_tx.clone(), cut.clone());
    tokio::spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match broker_rx.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let mut tx = to_client.lock().await;
            // Checked under the lock: nothing passes once a cut is decided.
            if cut_back.load(Ordering::SeqCst) {
                continue;
            }
            if let Some(w) = tx.as_mut() {
                if w.write_all(&buf[..n]).await.is_err() {
                    *tx = None;
                }
            }
        }
    });
    loop {
        let mut len = [0u8; 4];
        if client_rx.read_exact(&mut len).await.is_err() {
            break;
        }
        let size = u32::from_be_bytes(len) as usize;
        let mut frame = BytesMut::zeroed(4 + size);
        frame[..4].copy_from_slice(&len);
        if client_rx.read_exact(&mut frame[4..]).await.is_err() {
            break;
        }
        let is_send = decode_frame(&frame).is_some_and(|cmd| {
            !cmd.is_response()
                && matches!(
                    cmd.code,
                    request_code::SEND_MESSAGE
                        | request_code::SEND_MESSAGE_V2
                        | request_code::SEND_BATCH_MESSAGE
                )
        });
        let lose = is_send && (sends.fetch_add(1, Ordering::SeqCst) + 1) % every == 0;
        if lose {
            let mut tx = client_tx.lock().await;
            cut.store(true, Ordering::SeqCst);
            // Closes the client's connection (with its read half, dropped below).
            *tx = None;
        }
        if broker_tx.write_all(&frame).await.is_err() {
            break;
        }
        if lose {
            cuts.fetch_add(1, Ordering::SeqCst);
            break;
        }
    }
    if cut.load(Ordering::SeqCst) {
        // After a cut the broker's side stays open: its answer is read and dropped.
        let _keep = broker_tx;
        std::future::pending::<()>().await;
    }
}
