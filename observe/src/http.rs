//! A small HTTP/1.1 server: hyper underneath, plain request and response values on
//! top, so that handlers (the metrics endpoint, the console) know nothing of hyper.
//!
//! Bounds: at most [`MAX_CONNECTIONS`] connections at once (more wait in the listen
//! backlog), request bodies of at most [`MAX_BODY`] bytes (larger ones get 413), and
//! [`HttpLimits`] on time, so that a slow or silent client cannot keep a connection
//! slot: a request's head (and a kept-alive connection's next one) within the header
//! timeout, its body within the request timeout (else 408), and its answer read by the
//! client with no stall longer than the write timeout (else the connection is closed).
//! Each connection is a task of the server's tracker; [`HttpServer::shutdown`] stops
//! accepting, lets requests in progress finish and waits for the connections to close.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 64;
/// Largest request body accepted.
pub const MAX_BODY: usize = 1 << 20;
/// Longest wait for a request's head, by default.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client may take, the bounds that free a connection slot held by a slow
/// or silent client (the servers set them from `frameReadTimeoutMillis` and
/// `writeStallTimeoutMillis`, as for remoting connections: docs/limits.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// For a request's head, from the connection's start or the previous answer (an
    /// idle kept-alive connection is closed after it).
    pub header_timeout: Duration,
    /// For a request's body, once its head is read.
    pub request_timeout: Duration,
    /// For the client to read any of its answer while the server waits to write.
    pub write_stall_timeout: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            header_timeout: HEADER_TIMEOUT,
            request_timeout: Duration::from_secs(30),
            write_stall_timeout: Duration::from_secs(30),
        }
    }
}

impl HttpLimits {
    /// The limits of a server whose peers get `frame_read` to send a request (the head
    /// within [`HEADER_TIMEOUT`] at most) and `write_stall` to read.
    pub fn from_server(frame_read: Duration, write_stall: Duration) -> HttpLimits {
        HttpLimits {
            header_timeout: frame_read.min(HEADER_TIMEOUT),
            request_timeout: frame_read,
            write_stall_timeout: write_stall,
        }
    }
}

/// A boxed future, as handlers return them.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// One request, read whole.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub method: String,
    /// The path, percent-decoded.
    pub path: String,
    /// The raw query string (after `?`), empty when there is none.
    pub query: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
    pub peer: SocketAddr,
}

impl HttpRequest {
    /// The first value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The query's parameters, decoded.
    pub fn query_params(&self) -> Vec<(String, String)> {
        parse_form(&self.query)
    }

    /// The first query parameter `key`, decoded.
    pub fn param(&self, key: &str) -> Option<String> {
        self.query_params()
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// An `application/x-www-form-urlencoded` body's fields, decoded.
    pub fn form(&self) -> Vec<(String, String)> {
        parse_form(&String::from_utf8_lossy(&self.body))
    }
}

/// What a handler answers.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    pub status: u16,
    pub content_type: String,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
}

impl HttpResponse {
    pub fn new(status: u16, content_type: &str, body: impl Into<Bytes>) -> Self {
        HttpResponse {
            status,
            content_type: content_type.to_owned(),
            headers: Vec::new(),
            body: body.into(),
        }
    }

    pub fn html(body: impl Into<String>) -> Self {
        Self::new(200, "text/html; charset=utf-8", body.into())
    }

    pub fn text(status: u16, body: impl Into<String>) -> Self {
        Self::new(status, "text/plain; charset=utf-8", body.into())
    }

    pub fn json(body: impl Into<Bytes>) -> Self {
        Self::new(200, "application/json", body)
    }

    /// 303 See Other to `location` (the answer to a form POST).
    pub fn redirect(location: &str) -> Self {
        Self::text(303, "").with_header("location", location)
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

/// Serves requests; called once per request, concurrently.
pub trait HttpHandler: Send + Sync + 'static {
    fn handle(&self, request: HttpRequest) -> BoxFuture<HttpResponse>;
}

/// A running HTTP server.
#[derive(Debug)]
pub struct HttpServer {
    addr: SocketAddr,
    shutdown: CancellationToken,
    tasks: TaskTracker,
}

impl HttpServer {
    /// Serves `handler` on `listener` until [`HttpServer::shutdown`], with the default
    /// [`HttpLimits`]; `name` goes in logs.
    pub fn start(listener: TcpListener, handler: Arc<dyn HttpHandler>, name: &'static str) -> Self {
        Self::start_with(listener, handler, name, HttpLimits::default())
    }

    /// [`HttpServer::start`] with `limits`.
    pub fn start_with(
        listener: TcpListener,
        handler: Arc<dyn HttpHandler>,
        name: &'static str,
        limits: HttpLimits,
    ) -> Self {
        let addr = listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
        let shutdown = CancellationToken::new();
        let tasks = TaskTracker::new();
        let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
        let (stop, tracker) = (shutdown.clone(), tasks.clone());
        tasks.spawn(async move {
            info!(%addr, server = name, "http endpoint listening");
            loop {
                let permit = tokio::select! {
                    _ = stop.cancelled() => break,
                    p = permits.clone().acquire_owned() => match p {
                        Ok(p) => p,
                        Err(_) => break,
                    },
                };
                let (stream, peer) = tokio::select! {
                    _ = stop.cancelled() => break,
                    accepted = listener.accept() => match accepted {
                        Ok(a) => a,
                        Err(e) => {
                            warn!(server = name, error = %e, "accept failed");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    },
                };
                let handler = handler.clone();
                let stop = stop.clone();
                tracker.spawn(async move {
                    let _permit = permit;
                    let service = service_fn(move |req: hyper::Request<Incoming>| {
                        let handler = handler.clone();
                        async move {
                            Ok::<_, Infallible>(
                                serve_one(&*handler, req, peer, limits.request_timeout).await,
                            )
                        }
                    });
                    let mut builder = http1::Builder::new();
                    builder
                        .timer(TokioTimer::new())
                        .header_read_timeout(limits.header_timeout);
                    let stream = StallGuard::new(stream, limits.write_stall_timeout);
                    let conn = builder.serve_connection(TokioIo::new(stream), service);
                    let mut conn = std::pin::pin!(conn);
                    tokio::select! {
                        r = conn.as_mut() => {
                            if let Err(e) = r {
                                debug!(%peer, server = name, error = %e, "http connection ended");
                            }
                        }
                        _ = stop.cancelled() => {
                            conn.as_mut().graceful_shutdown();
                            let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
                        }
                    }
                });
            }
        });
        HttpServer {
            addr,
            shutdown,
            tasks,
        }
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting and waits (bounded) for the connections to finish.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        self.tasks.close();
        let _ = tokio::time::timeout(Duration::from_secs(10), self.tasks.wait()).await;
    }
}

async fn serve_one(
    handler: &dyn HttpHandler,
    req: hyper::Request<Incoming>,
    peer: SocketAddr,
    request_timeout: Duration,
) -> hyper::Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let collected = tokio::time::timeout(request_timeout, Limited::new(body, MAX_BODY).collect());
    let body = match collected.await {
        Ok(Ok(b)) => b.to_bytes(),
        Ok(Err(_)) => return to_hyper(HttpResponse::text(413, "request body too large\n")),
        Err(_) => {
            debug!(%peer, "request body not received in time");
            // The rest of the body may never come: close rather than wait for it.
            let mut timed_out = to_hyper(HttpResponse::text(
                408,
                "request body not received in time\n",
            ));
            timed_out.headers_mut().insert(
                hyper::header::CONNECTION,
                hyper::header::HeaderValue::from_static("close"),
            );
            return timed_out;
        }
    };
    let request = HttpRequest {
        method: parts.method.as_str().to_owned(),
        path: percent_decode(parts.uri.path(), false),
        query: parts.uri.query().unwrap_or("").to_owned(),
        headers: parts
            .headers
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect(),
        body,
        peer,
    };
    to_hyper(handler.handle(request).await)
}

/// A connection's socket whose writes fail once they have made no progress for
/// `stall`: a client that stops reading its answer frees its slot.
struct StallGuard {
    inner: tokio::net::TcpStream,
    stall: Duration,
    /// Armed while a write waits.
    waiting: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl StallGuard {
    fn new(inner: tokio::net::TcpStream, stall: Duration) -> Self {
        StallGuard {
            inner,
            stall,
            waiting: None,
        }
    }

    /// `Pending` from the socket: keeps waiting, or fails once the stall is over.
    fn stalled<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let stall = self.stall;
        let timer = self
            .waiting
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(stall)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client stopped reading its answer",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn progressed<T>(
        &mut self,
        result: Poll<io::Result<T>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<T>> {
        match result {
            Poll::Pending => self.stalled(cx),
            ready => {
                self.waiting = None;
                ready
            }
        }
    }
}

impl AsyncRead for StallGuard {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for StallGuard {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.progressed(result, cx)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.inner).poll_flush(cx);
        self.progressed(result, cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.progressed(result, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.progressed(result, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

fn to_hyper(r: HttpResponse) -> hyper::Response<Full<Bytes>> {
    let mut builder = hyper::Response::builder()
        .status(r.status)
        .header("content-type", r.content_type.as_str());
    for (k, v) in &r.headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    builder.body(Full::new(r.body)).unwrap_or_else(|e| {
        // Only a handler's malformed header name or value gets here.
        warn!(error = %e, "bad response header");
        let mut resp = hyper::Response::new(Full::new(Bytes::from_static(b"bad response\n")));
        *resp.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
        resp
    })
}

/// `a=1&b=x%20y` → pairs, decoded (`+` is a space).
pub fn parse_form(text: &str) -> Vec<(String, String)> {
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k, true), percent_decode(v, true))
        })
        .collect()
}

/// Decodes `%XX` escapes (and `+` as a space when `plus`); malformed escapes stay.
pub fn percent_decode(s: &str, plus: bool) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b'+' if plus => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Escapes text for HTML element content and attribute values.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Encodes a query-string value.
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    struct Echo;

    impl HttpHandler for Echo {
        fn handle(&self, r: HttpRequest) -> BoxFuture<HttpResponse> {
            Box::pin(async move {
                HttpResponse::text(
                    200,
                    format!(
                        "{} {} q={:?} body={}",
                        r.method,
                        r.path,
                        r.param("x"),
                        String::from_utf8_lossy(&r.body)
                    ),
                )
            })
        }
    }

    async fn exchange(addr: SocketAddr, raw: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(raw.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    /// The status line of the answer to `raw`, or "" when the server closed first; the
    /// server may leave the connection open after an error (the body was never sent).
    async fn status_line(addr: SocketAddr, raw: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        // The server may answer and close before it read everything.
        let _ = s.write_all(raw.as_bytes()).await;
        let mut out = Vec::new();
        let mut buf = [0u8; 256];
        while !out.windows(2).any(|w| w == b"\r\n") {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
        String::from_utf8_lossy(&out)
            .lines()
            .next()
            .unwrap_or("")
            .to_owned()
    }

    #[tokio::test]
    async fn serves_requests_and_bounds_bodies() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = HttpServer::start(listener, Arc::new(Echo), "test");
        let addr = server.local_addr();
        let out = exchange(
            addr,
            "POST /a%20b?x=1+2%21 HTTP/1.1\r\nhost: h\r\ncontent-length: 3\r\nconnection: close\r\n\r\nabc",
        )
        .await;
        assert!(out.starts_with("HTTP/1.1 200"), "{out}");
        assert!(
            out.ends_with("POST /a b q=Some(\"1 2!\") body=abc"),
            "{out}"
        );
        let big = MAX_BODY + 1;
        let out = status_line(
            addr,
            &format!("POST / HTTP/1.1\r\nhost: h\r\ncontent-length: {big}\r\nconnection: close\r\n\r\n{}", "x".repeat(big)),
        )
        .await;
        assert!(out.starts_with("HTTP/1.1 413"), "{out}");
        let out = status_line(addr, "garbage\r\n\r\n").await;
        assert!(out.is_empty() || out.starts_with("HTTP/1.1 400"), "{out}");
        server.shutdown().await;
        assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    }

    /// More half-open requests than the server has connection slots (no head at all,
    /// half a head, a head and half a body), then a normal request: it is answered
    /// once the slow ones have timed out.
    #[tokio::test]
    async fn half_open_requests_do_not_take_the_server_down() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let limits = HttpLimits {
            header_timeout: Duration::from_millis(300),
            request_timeout: Duration::from_millis(500),
            write_stall_timeout: Duration::from_millis(500),
        };
        let server = HttpServer::start_with(listener, Arc::new(Echo), "test", limits);
        let addr = server.local_addr();
        let mut held = Vec::new();
        for i in 0..MAX_CONNECTIONS + 6 {
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            // The first ones take every slot with a head and half a body; the others
            // wait in the listen backlog.
            let partial = match i.saturating_sub(MAX_CONNECTIONS) % 3 {
                _ if i < MAX_CONNECTIONS => {
                    "POST / HTTP/1.1\r\nhost: h\r\ncontent-length: 100\r\n\r\nab"
                }
                0 => "",
                1 => "GET / HTTP/1.1\r\nhost: h\r\n",
                _ => "POST / HTTP/1.1\r\nhost: h\r\ncontent-length: 100\r\n\r\nab",
            };
            s.write_all(partial.as_bytes()).await.unwrap();
            held.push(s);
        }
        let answered = tokio::time::timeout(
            Duration::from_secs(10),
            exchange(
                addr,
                "GET /ok HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
            ),
        )
        .await
        .expect("a normal request is answered once the half-open ones time out");
        assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
        drop(held);
        server.shutdown().await;
    }

    /// A client that stops reading: the write fails once it has stalled long enough.
    #[tokio::test]
    async fn a_write_the_client_does_not_read_fails_after_the_stall() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (server_side, _) = listener.accept().await.unwrap();
        let mut guarded = StallGuard::new(server_side, Duration::from_millis(200));
        let chunk = vec![0u8; 1 << 20];
        let started = std::time::Instant::now();
        let failed = loop {
            match guarded.write_all(&chunk).await {
                Ok(()) => assert!(started.elapsed() < Duration::from_secs(10), "never stalled"),
                Err(e) => break e,
            }
        };
        assert_eq!(failed.kind(), io::ErrorKind::TimedOut);
    }

    #[test]
    fn decoding_and_escaping() {
        assert_eq!(percent_decode("a%2Fb%zz%", false), "a/b%zz%");
        assert_eq!(percent_decode("a+b", true), "a b");
        assert_eq!(
            parse_form("t=T&k=&x"),
            [
                ("t".into(), "T".into()),
                ("k".into(), "".into()),
                ("x".into(), "".into())
            ]
        );
        assert_eq!(
            escape_html("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(percent_encode("a b/%"), "a%20b%2F%25");
    }
}
