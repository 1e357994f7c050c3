//! The gRPC server: accepts connections on `grpcServerPort`, tells TLS from plaintext
//! by the first byte, and serves [`GrpcService`] over HTTP/2 with tonic.
//!
//! Bounds: `grpcMaxConnections` connections at once (further ones wait in the listen
//! backlog), 10 s for a new connection to show its first byte and finish a TLS
//! handshake, 128 concurrent HTTP/2 streams per connection, requests up to twice
//! `maxMessageSize` plus 1 MiB; sessions and streams are bounded in
//! [`super::session`] and [`super::service`].

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tonic::transport::server::{Connected, TcpConnectInfo};
use tracing::{debug, info, warn};
use vostok_remoting::tls::TlsMode;

use super::endpoint::queue_stream;
use super::endpoint::GrpcService;
use super::proto::messaging_service_server::MessagingServiceServer;
use super::session::Sessions;
use super::tls::{self, TLS_HANDSHAKE};
use crate::error::BrokerError;
use crate::state::Broker;

const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_STREAMS_PER_CONNECTION: u32 = 128;
/// Connections handed from the acceptor to the HTTP/2 server and not yet taken.
const ACCEPTED_QUEUE: usize = 64;

/// The running gRPC endpoint.
pub struct GrpcServer {
    addr: SocketAddr,
    stop: CancellationToken,
    sessions: Arc<Sessions>,
    serving: JoinHandle<()>,
}

impl GrpcServer {
    /// Serves `MessagingService` on `listener` until [`GrpcServer::shutdown`].
    /// With `tls` (the `tls.server.*` certificate and mode), TLS uses that certificate
    /// and `enforcing` refuses plaintext; without, a self-signed certificate is made and
    /// both are served.
    pub(crate) fn start(
        broker: &Arc<Broker>,
        listener: TcpListener,
        tls: Option<(TlsMode, Arc<ServerConfig>)>,
    ) -> Result<GrpcServer, BrokerError> {
        let addr = listener.local_addr().map_err(|source| BrokerError::Bind {
            addr: broker
                .config
                .bind_addr(broker.config.grpc.grpc_server_port)
                .to_string(),
            key: "grpcServerPort",
            source,
        })?;
        let (acceptor, plaintext) = match tls {
            Some((mode, config)) => (TlsAcceptor::from(config), mode != TlsMode::Enforcing),
            None => (
                tls::self_signed_acceptor(std::slice::from_ref(&broker.config.broker_ip1))?,
                true,
            ),
        };
        let sessions = Arc::new(Sessions::new(broker.config.grpc.grpc_max_sessions));
        let service = GrpcService::new(broker.clone(), sessions.clone(), addr.port());
        let max_request = broker.config.store.max_message_size.saturating_mul(2) + (1 << 20);
        let svc = MessagingServiceServer::new(service).max_decoding_message_size(max_request);
        let stop = CancellationToken::new();
        let (tx, rx) = mpsc::channel(ACCEPTED_QUEUE);
        let connections = Arc::new(Semaphore::new(broker.config.grpc.grpc_max_connections));
        tokio::spawn(accept_loop(
            listener,
            acceptor,
            plaintext,
            connections,
            tx,
            stop.clone(),
        ));
        let incoming = queue_stream(rx);
        let until = stop.clone().cancelled_owned();
        let serving = tokio::spawn(async move {
            let result = tonic::transport::Server::builder()
                .max_concurrent_streams(Some(MAX_STREAMS_PER_CONNECTION))
                .http2_keepalive_interval(Some(Duration::from_secs(30)))
                .http2_keepalive_timeout(Some(Duration::from_secs(10)))
                .serve_with_incoming_shutdown(svc, incoming, until)
                .await;
            if let Err(e) = result {
                warn!(error = %e, "gRPC server stopped with an error");
            }
        });
        info!(addr = %addr, "gRPC endpoint (MessagingService) listening, TLS and plaintext");
        Ok(GrpcServer {
            addr,
            stop,
            sessions,
            serving,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, ends every session and stream, and waits (5 s at most) for
    /// the connections to close.
    pub(crate) async fn shutdown(self) {
        self.sessions.close_all();
        self.stop.cancel();
        let mut serving = self.serving;
        if tokio::time::timeout(Duration::from_secs(5), &mut serving)
            .await
            .is_err()
        {
            warn!("gRPC connections still open after 5 s; closing them");
            serving.abort();
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    plaintext: bool,
    connections: Arc<Semaphore>,
    tx: mpsc::Sender<io::Result<GrpcStream>>,
    stop: CancellationToken,
) {
    loop {
        let permit = tokio::select! {
            p = connections.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            _ = stop.cancelled() => break,
        };
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stop.cancelled() => break,
        };
        let (stream, remote) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: pause rather than spin.
                warn!(error = %e, "gRPC accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let tx = tx.clone();
        tokio::spawn(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, open(stream, acceptor, plaintext)).await {
                Ok(Ok((io, local))) => {
                    let _ = tx
                        .send(Ok(GrpcStream {
                            io,
                            local,
                            remote,
                            _permit: permit,
                        }))
                        .await;
                }
                Ok(Err(e)) => debug!(peer = %remote, error = %e, "gRPC connection not opened"),
                Err(_) => {
                    debug!(peer = %remote, "gRPC connection silent or slow handshake; closed")
                }
            }
        });
    }
}

/// Reads the first byte without taking it: TLS handshake or plaintext.
async fn open(
    stream: TcpStream,
    acceptor: TlsAcceptor,
    plaintext: bool,
) -> io::Result<(Io, SocketAddr)> {
    stream.set_nodelay(true)?;
    let local = stream.local_addr()?;
    let mut first = [0u8; 1];
    let n = stream.peek(&mut first).await?;
    if n == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "closed before its first byte",
        ));
    }
    if first[0] == TLS_HANDSHAKE {
        let tls = acceptor.accept(stream).await?;
        Ok((Io::Tls(Box::new(tls)), local))
    } else if plaintext {
        Ok((Io::Plain(stream), local))
    } else {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "plaintext refused: tls.server.mode is enforcing",
        ))
    }
}

enum Io {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// One gRPC connection, in the clear or in TLS; holds its connection permit.
pub(crate) struct GrpcStream {
    io: Io,
    local: SocketAddr,
    remote: SocketAddr,
    _permit: OwnedSemaphorePermit,
}

impl Connected for GrpcStream {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        TcpConnectInfo {
            local_addr: Some(self.local),
            remote_addr: Some(self.remote),
        }
    }
}

impl AsyncRead for GrpcStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for GrpcStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().io {
            Io::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().io {
            Io::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.io {
            Io::Plain(s) => s.is_write_vectored(),
            Io::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
