//! A small HTTP/1.1 server: hyper underneath, plain request and response values on
//! top, so that handlers (the metrics endpoint, the console) know nothing of hyper.
//!
//! Bounds: at most [`MAX_CONNECTIONS`] connections at once (more wait in the listen
//! backlog), request bodies of at most [`MAX_BODY`] bytes (larger ones get 413), a
//! request head within [`HEADER_TIMEOUT`]. Each connection is a task of the server's
//! tracker; [`HttpServer::shutdown`] stops accepting, lets requests in progress finish
//! and waits for the connections to close.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 64;
/// Largest request body accepted.
pub const MAX_BODY: usize = 1 << 20;
/// Longest wait for a request's head.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

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
    /// Serves `handler` on `listener` until [`HttpServer::shutdown`]; `name` goes in logs.
    pub fn start(listener: TcpListener, handler: Arc<dyn HttpHandler>, name: &'static str) -> Self {
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
                        async move { Ok::<_, Infallible>(serve_one(&*handler, req, peer).await) }
                    });
                    let mut builder = http1::Builder::new();
                    builder
                        .timer(TokioTimer::new())
                        .header_read_timeout(HEADER_TIMEOUT);
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
) -> hyper::Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return to_hyper(HttpResponse::text(413, "request body too large\n")),
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
