//! The broker's HTTP endpoints (the console and `/metrics`) against hostile clients,
//! spoken to over real sockets (docs/operations.md#console, docs/limits.md).

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use vostok_tests::{http, Broker, BrokerOptions};

/// More half-open requests than the 64 connections an endpoint serves at once (a head
/// and half a body, which the server waits for), then a normal request: answered once
/// the slow ones have timed out (`frameReadTimeoutMillis`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_open_requests_do_not_silence_the_console_or_the_metrics() {
    let broker = Broker::start(
        BrokerOptions::default()
            .set("metricsExporterType", "PROM")
            .set("metricsPromExporterPort", 0)
            .set("frameReadTimeoutMillis", 1000),
    );
    let console = broker.console_addr.clone().expect("console address");
    let metrics = broker.metrics_addr.clone().expect("metrics address");
    for (addr, path) in [(&console, "/topics"), (&metrics, "/metrics")] {
        let mut held = Vec::new();
        for _ in 0..70 {
            let mut s = TcpStream::connect(addr.as_str()).await.expect("connect");
            let head =
                format!("POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-length: 100\r\n\r\nab");
            s.write_all(head.as_bytes()).await.expect("write");
            held.push(s);
        }
        // Within the helper's 10 s: the half-open ones are dropped after a second.
        let answer = http::get(addr, path).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
        drop(held);
    }
}
