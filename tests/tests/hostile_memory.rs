//! The memory ceiling of real `mqbroker` and `mqnamesrv` processes under hostile
//! clients: a client that pipelines requests and never reads the answers, a frame
//! started and never finished, more connections than the limit, and producers near
//! the ceiling. Memory is read from the child's `/proc/<pid>/status` (`RssAnon`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use vostok_remoting::protocol::body::{
    RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper,
};
use vostok_remoting::protocol::header::RegisterBrokerRequestHeader;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::{RemotingCodec, RemotingCommand};
use vostok_tests::client::TestClient;
use vostok_tests::{Broker, BrokerOptions, Namesrv, Process};

/// The configured ceiling of every process here.
const CEILING: u64 = 64 << 20;
/// How long any one wait may last before the test fails.
const T: Duration = Duration::from_secs(30);

fn encode(request: &RemotingCommand) -> Bytes {
    RemotingCodec::default()
        .encode_to_bytes(request)
        .expect("a request encodes")
}

/// The highest `RssAnon` of a process, sampled on a thread of its own until dropped.
struct RssSampler {
    max: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RssSampler {
    fn start(process: &Process) -> RssSampler {
        let pid = process.pid();
        let max = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (m, s) = (max.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                if let Some(rss) = vostok_tests::rss_anon_bytes(pid) {
                    m.fetch_max(rss, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        RssSampler {
            max,
            stop,
            thread: Some(thread),
        }
    }

    /// Stops sampling; the highest reading.
    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.max.load(Ordering::Relaxed)
    }
}

/// Pipelines `request` on a connection without ever reading, until the server closes
/// it; the number of requests written. Panics if the server never closes it.
async fn pipeline_without_reading(addr: String, request: Bytes) -> u64 {
    let mut stream = TcpStream::connect(&addr).await.expect("connect");
    let batch: Vec<u8> = request
        .iter()
        .copied()
        .cycle()
        .take(request.len() * 256)
        .collect();
    let deadline = tokio::time::Instant::now() + T;
    let mut sent = 0u64;
    loop {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{addr} never closed a connection that does not read ({sent} requests sent)"
        );
        match tokio::time::timeout(Duration::from_millis(200), stream.write_all(&batch)).await {
            Ok(Ok(())) => sent += 256,
            Ok(Err(_)) => return sent, // reset by the server
            Err(_) => {}               // the server stopped reading; keep pushing until it gives up
        }
    }
}

/// Runs `connections` clients that never read against `addr` while sampling the
/// process's memory; the requests they wrote and the highest `RssAnon`.
async fn flood_without_reading(
    process: &Process,
    addr: &str,
    request: RemotingCommand,
    connections: usize,
) -> (u64, u64) {
    let sampler = RssSampler::start(process);
    let frame = encode(&request);
    let clients: Vec<_> = (0..connections)
        .map(|_| tokio::spawn(pipeline_without_reading(addr.to_owned(), frame.clone())))
        .collect();
    let mut sent = 0;
    for client in clients {
        sent += client.await.expect("flooding client");
    }
    (sent, sampler.finish())
}

fn limited(options: BrokerOptions) -> BrokerOptions {
    options
        .set("maxMemoryBytes", CEILING)
        .set("writeBufferHighWaterMark", 1 << 20)
        .set("writeBufferLowWaterMark", 256 << 10)
        .set("writeStallTimeoutMillis", 1000)
}

/// Waits until the broker's memory account satisfies `condition`; its last figures.
async fn wait_account(
    client: &TestClient,
    addr: &str,
    what: &str,
    condition: impl Fn(u64, u64) -> bool,
) {
    let deadline = tokio::time::Instant::now() + T;
    loop {
        let info = client.runtime_info(addr).await;
        let figure = |k: &str| info.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        let (used, soft) = (figure("memoryUsedBytes"), figure("memorySoftLimitBytes"));
        if condition(used, soft) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}: used {used}, soft limit {soft}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_disconnects_clients_that_do_not_read_and_its_memory_stays_bounded() {
    let broker = Broker::start(limited(BrokerOptions::default()));
    let client = TestClient::default();
    // Topics with long names make every GET_ALL_TOPIC_CONFIG answer tens of KB.
    for i in 0..100 {
        let name = format!("{i:03}_{}", "t".repeat(100));
        let created = client.create_topic(&broker.addr, &name, 1).await;
        assert_eq!(created.code, response_code::SUCCESS, "{}", created.remark());
    }
    let request = RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG);
    let answer = client.call(&broker.addr, request.clone()).await.body.len() as u64;
    assert!(answer > 20_000, "{answer} bytes");

    let (sent, max_rss) = flood_without_reading(&broker.process, &broker.addr, request, 6).await;
    eprintln!("broker: {sent} requests of {answer} B answers, RssAnon at most {max_rss} B");
    assert!(
        sent * answer > 20 * CEILING,
        "asked for {} MiB of answers: not enough to test the ceiling",
        (sent * answer) >> 20
    );
    assert!(
        max_rss < CEILING,
        "RssAnon reached {} MiB under a ceiling of {} MiB",
        max_rss >> 20,
        CEILING >> 20
    );
    assert!(
        broker
            .process
            .log()
            .contains("closing connection: the peer does not read its responses"),
        "the reason is logged"
    );
    // The queued answers were dropped with their connections; others are served.
    wait_account(&client, &broker.addr, "the queues released", |used, _| {
        used < 1 << 20
    })
    .await;
    let again = client
        .call(
            &broker.addr,
            RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG),
        )
        .await;
    assert_eq!(again.body.len() as u64, answer);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_server_disconnects_clients_that_do_not_read_and_its_memory_stays_bounded() {
    let namesrv = Namesrv::start_with(&[
        ("maxMemoryBytes", &CEILING.to_string()),
        ("writeBufferHighWaterMark", "1048576"),
        ("writeBufferLowWaterMark", "262144"),
        ("writeStallTimeoutMillis", "1000"),
    ]);
    let client = TestClient::default();
    // One broker with 2,000 topics: every topic list is a few hundred KB.
    let wrapper = TopicConfigSerializeWrapper {
        topic_config_table: (0..2000)
            .map(|i| {
                let name = format!("{i:04}_{}", "n".repeat(100));
                (name.clone(), TopicConfig::new(name, 4))
            })
            .collect(),
        ..Default::default()
    };
    let header = RegisterBrokerRequestHeader {
        broker_name: "broker-x".into(),
        broker_addr: "127.0.0.1:1".into(),
        cluster_name: "DefaultCluster".into(),
        ha_server_addr: "127.0.0.1:2".into(),
        broker_id: 0,
        heartbeat_timeout_millis: None,
        enable_acting_master: Some(false),
        compressed: Some(false),
        body_crc32: Some(0),
    };
    let body = RegisterBrokerBody {
        filter_server_list: Vec::new(),
        topic_config_serialize_wrapper: wrapper,
    };
    let registered = client
        .call(
            &namesrv.addr,
            RemotingCommand::request_with_header(request_code::REGISTER_BROKER, &header)
                .with_body(body.encode()),
        )
        .await;
    assert_eq!(
        registered.code,
        response_code::SUCCESS,
        "{}",
        registered.remark()
    );
    let request = RemotingCommand::request(request_code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
    let answer = client.call(&namesrv.addr, request.clone()).await.body.len() as u64;
    assert!(answer > 200_000, "{answer} bytes");

    let (sent, max_rss) = flood_without_reading(&namesrv.process, &namesrv.addr, request, 6).await;
    eprintln!("name server: {sent} requests of {answer} B answers, RssAnon at most {max_rss} B");
    assert!(
        sent * answer > 20 * CEILING,
        "asked for {} MiB of answers: not enough to test the ceiling",
        (sent * answer) >> 20
    );
    assert!(
        max_rss < CEILING,
        "RssAnon reached {} MiB under a ceiling of {} MiB",
        max_rss >> 20,
        CEILING >> 20
    );
    assert!(namesrv
        .process
        .log()
        .contains("closing connection: the peer does not read its responses"));
    let again = client
        .call(
            &namesrv.addr,
            RemotingCommand::request(request_code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
        )
        .await;
    assert_eq!(again.body.len() as u64, answer);
}

/// The first bytes of a frame announcing a body of `body` bytes.
fn frame_start(body: usize) -> Bytes {
    let whole =
        encode(&RemotingCommand::request(request_code::SEND_MESSAGE).with_body(vec![0u8; body]));
    whole.slice(..1000)
}

/// Reads until the server closes the connection; false if it is still open after `T`.
async fn closed_by_server(stream: &mut TcpStream) -> bool {
    let mut buf = vec![0; 64 * 1024];
    let deadline = tokio::time::Instant::now() + T;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_left_unfinished_is_closed_after_frame_read_timeout() {
    let broker =
        Broker::start(limited(BrokerOptions::default()).set("frameReadTimeoutMillis", 500));
    let client = TestClient::default();
    let mut slow = TcpStream::connect(&broker.addr).await.unwrap();
    slow.write_all(&frame_start(8 << 20)).await.unwrap();
    assert!(closed_by_server(&mut slow).await, "closed at its deadline");
    assert!(broker
        .process
        .log()
        .contains("closing connection: frame not finished in time"));
    wait_account(&client, &broker.addr, "the frame released", |used, _| {
        used < 1 << 20
    })
    .await;
    client.create_topic(&broker.addr, "Whole", 1).await;
    let sent = client
        .send(
            &broker.addr,
            "Whole",
            0,
            "ok",
            TestClient::properties(None, None),
        )
        .await;
    assert_eq!(sent.queue_offset, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn near_the_ceiling_producers_get_system_busy_until_memory_is_released() {
    let broker = Broker::start(limited(BrokerOptions::default()));
    let client = TestClient::default();
    client.create_topic(&broker.addr, "Pressed", 1).await;
    let sampler = RssSampler::start(&broker.process);
    let before = broker.process.rss_anon_bytes().unwrap_or(0);
    // Three frames of 14 MiB each, all but their last byte sent: 42 MiB reserved and
    // held, past the soft limit (three fifths of the ceiling) but under the limit.
    let mut slow = Vec::new();
    for _ in 0..3 {
        let mut stream = TcpStream::connect(&broker.addr).await.unwrap();
        stream.write_all(&frame_start(14 << 20)).await.unwrap();
        slow.push(stream);
    }
    let filler = vec![b'x'; 1 << 20];
    for stream in &mut slow {
        for _ in 0..13 {
            stream.write_all(&filler).await.unwrap();
        }
    }
    wait_account(
        &client,
        &broker.addr,
        "the frames reserved",
        |used, soft| soft > 0 && used >= soft,
    )
    .await;
    // With the 39 MiB sent in the broker's buffers, the process stays under its
    // ceiling while the account is near its limit.
    let deadline = tokio::time::Instant::now() + T;
    let mut rss = 0;
    while rss < before + (39 << 20) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the frames never reached the broker's memory: RssAnon {rss} B"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        rss = broker.process.rss_anon_bytes().unwrap_or(0);
    }
    let max_rss = sampler.finish().max(rss);
    eprintln!(
        "RssAnon at most {} KiB with 42 MiB of frames held",
        max_rss >> 10
    );
    assert!(
        max_rss < CEILING,
        "RssAnon reached {} MiB under a ceiling of {} MiB",
        max_rss >> 20,
        CEILING >> 20
    );
    let busy = client
        .send_raw(
            &broker.addr,
            "Pressed",
            0,
            "pressed",
            TestClient::properties(None, None),
        )
        .await;
    assert_eq!(busy.code, response_code::SYSTEM_BUSY, "{}", busy.remark());
    assert!(busy.remark().contains("[MEMORY]"), "{}", busy.remark());

    // Their connections go: memory is released and sends are stored again.
    drop(slow);
    wait_account(
        &client,
        &broker.addr,
        "the frames released",
        |used, soft| used < soft,
    )
    .await;
    let sent = client
        .send(
            &broker.addr,
            "Pressed",
            0,
            "ok",
            TestClient::properties(None, None),
        )
        .await;
    assert_eq!(sent.queue_offset, 0, "the busy send stored nothing");
}

/// Sends a request on a raw connection and reads its answer.
async fn round_trip(stream: &mut TcpStream) {
    let request = encode(&RemotingCommand::request(
        request_code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
    ));
    stream.write_all(&request).await.expect("write");
    let mut head = [0u8; 4];
    stream.read_exact(&mut head).await.expect("an answer");
    let mut rest = vec![0u8; u32::from_be_bytes(head) as usize];
    stream
        .read_exact(&mut rest)
        .await
        .expect("the whole answer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_connection_limit_the_connection_idle_longest_is_closed() {
    let namesrv = Namesrv::start_with(&[("serverMaxConnections", "3")]);
    let addr = namesrv.addr.as_str();
    let mut oldest = TcpStream::connect(addr).await.unwrap();
    round_trip(&mut oldest).await;
    let mut b = TcpStream::connect(addr).await.unwrap();
    let mut c = TcpStream::connect(addr).await.unwrap();
    // Only a connection idle for a second may be closed for a newcomer.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    round_trip(&mut b).await;
    round_trip(&mut c).await;
    let mut newcomer = TcpStream::connect(addr).await.unwrap();
    round_trip(&mut newcomer).await;
    assert!(
        closed_by_server(&mut oldest).await,
        "the idle one made room"
    );
    round_trip(&mut b).await;
    round_trip(&mut c).await;
    assert!(namesrv
        .process
        .log()
        .contains("connection limit reached: closing the connection idle the longest"));
}
