//! 100,000 pending timer messages spread over an hour: broker memory and punctuality.
//! Outside CI (it runs for minutes):
//!
//! ```sh
//! cargo test --release -p vostok-tests --test timer_scale -- --ignored --nocapture
//! ```

use std::time::{Duration, Instant};

use vostok_remoting::protocol::header::SendMessageRequestHeaderV2;
use vostok_remoting::protocol::message::property::{self, push_pair};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::support::time::now_millis;
use vostok_remoting::RemotingCommand;
use vostok_tests::client::TestClient;
use vostok_tests::{Broker, BrokerOptions};

const PENDING: i64 = 100_000;
const SPREAD_MS: i64 = 3_600_000;
/// How long deliveries are watched for punctuality.
const WATCH: Duration = Duration::from_secs(120);

fn rss_anon_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("RssAnon:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long-running scale test; run with --ignored"]
async fn hundred_thousand_pending_timers() {
    let broker = Broker::start(BrokerOptions::default());
    let pid = broker.process.pid();
    let client = TestClient::default();
    client.create_topic(&broker.addr, "TimerScale", 1).await;
    let idle = rss_anon_kib(pid);

    // Delivery times spread evenly over the next hour, starting 10 s from now.
    let base = now_millis() + 10_000;
    let mut pending = Vec::new();
    for i in 0..PENDING {
        let at = base + i * SPREAD_MS / PENDING;
        let mut props = TestClient::properties(None, None);
        push_pair(&mut props, property::TIMER_DELIVER_MS, &at.to_string());
        let header = SendMessageRequestHeaderV2 {
            a: "pg".into(),
            b: "TimerScale".into(),
            c: "TBW102".into(),
            d: 1,
            e: 0,
            g: now_millis(),
            i: Some(props),
            ..Default::default()
        };
        let request = RemotingCommand::request_with_header(request_code::SEND_MESSAGE_V2, &header)
            .with_body(at.to_be_bytes().to_vec());
        pending.push(
            client
                .remoting
                .invoke_async(&broker.addr, request, Duration::from_secs(60))
                .await
                .unwrap(),
        );
        if pending.len() == 1024 {
            for f in pending.drain(..) {
                assert_eq!(f.await.unwrap().code, response_code::SUCCESS);
            }
        }
    }
    for f in pending.drain(..) {
        assert_eq!(f.await.unwrap().code, response_code::SUCCESS);
    }
    let loaded = rss_anon_kib(pid);
    println!("broker RssAnon: idle {idle} KiB, with {PENDING} pending timers {loaded} KiB");

    // Watch the first deliveries: each must arrive within a second of its time.
    let mut offset = 0;
    let mut delivered = 0u64;
    let mut worst_late = 0i64;
    let started = Instant::now();
    while started.elapsed() < WATCH {
        let pulled = client
            .pull(
                &broker.addr,
                "scale",
                "TimerScale",
                0,
                offset,
                32,
                Some(Duration::from_secs(5)),
                "*",
            )
            .await;
        if pulled.code != response_code::SUCCESS {
            if let Some(h) = pulled.header {
                offset = h.next_begin_offset;
            }
            continue;
        }
        let now = now_millis();
        for msg in &pulled.messages {
            let at = i64::from_be_bytes(msg.body[..8].try_into().unwrap());
            assert!(now >= at - 50, "delivered {} ms early", at - now);
            worst_late = worst_late.max(now - at);
            delivered += 1;
        }
        offset = pulled.header.unwrap().next_begin_offset;
    }
    let peak = rss_anon_kib(pid);
    println!(
        "delivered {delivered} in {WATCH:?}, worst lateness {worst_late} ms (pull batching included); RssAnon now {peak} KiB"
    );
    assert!(delivered > 0);
    assert!(worst_late <= 1000, "a timer was {worst_late} ms late");
    assert!(
        loaded < 64 * 1024,
        "RssAnon {loaded} KiB with {PENDING} pending timers"
    );
}
