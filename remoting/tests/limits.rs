//! The server's bounds over real sockets: a peer that never reads its answers, a frame
//! never finished, the connection limit, the memory ceiling.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use vostok_remoting::protocol::response_code;
use vostok_remoting::{
    BoxFuture, Channel, ClientConfig, ConnectionConfig, MemoryBudget, RemotingClient,
    RemotingCodec, RemotingCommand, RemotingServer, RequestProcessor, ServerConfig,
};

const ECHO: i32 = 1000;
/// Answers with a body of 1 MiB.
const BIG: i32 = 1001;
/// Protects the connection it comes on.
const PROTECT: i32 = 1002;
const T: Duration = Duration::from_secs(10);

static MEBIBYTE: [u8; 1 << 20] = [0; 1 << 20];

struct Processor;

impl RequestProcessor for Processor {
    fn process<'a>(
        &'a self,
        channel: &'a Channel,
        request: RemotingCommand,
    ) -> BoxFuture<'a, Option<RemotingCommand>> {
        Box::pin(async move {
            Some(match request.code {
                ECHO => RemotingCommand::success().with_body(request.body.clone()),
                BIG => RemotingCommand::success().with_body(Bytes::from_static(&MEBIBYTE)),
                PROTECT => {
                    channel.protect();
                    RemotingCommand::success()
                }
                _ => vostok_remoting::processor::not_supported(&request),
            })
        })
    }
}

async fn start(connection: ConnectionConfig, max_connections: usize) -> RemotingServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = ServerConfig {
        connection,
        max_connections,
        ..ServerConfig::default()
    };
    RemotingServer::start(listener, Arc::new(Processor), config, Vec::new())
}

fn frame(code: i32, body: usize) -> Bytes {
    RemotingCodec::default()
        .encode_to_bytes(&RemotingCommand::request(code).with_body(vec![1u8; body]))
        .unwrap()
}

async fn wait_for(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + T;
    while !condition() {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Reads until the server closes the connection (EOF or reset).
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

#[tokio::test]
async fn a_peer_that_never_reads_is_stopped_then_disconnected_and_memory_stays_bounded() {
    let budget = MemoryBudget::new(256 << 20, 200 << 20);
    let connection = ConnectionConfig {
        budget: budget.clone(),
        write_high_water: 2 << 20,
        write_low_water: 1 << 20,
        write_stall_timeout: Duration::from_millis(500),
        ..ConnectionConfig::default()
    };
    let server = start(connection, usize::MAX).await;
    let raw = TcpStream::connect(server.local_addr()).await.unwrap();
    let (_rd, mut wr) = raw.into_split();
    // Pipelined requests for 1 MiB answers, never read.
    let request = frame(BIG, 0);
    let mut sent = 0;
    let closed = loop {
        match tokio::time::timeout(Duration::from_millis(200), wr.write_all(&request)).await {
            Ok(Ok(())) => sent += 1,
            Ok(Err(_)) => break true, // the server closed the connection
            Err(_) => {
                // The server stopped reading: wait for it to give up on us.
                wait_for("the stalled connection is closed", || {
                    server.channels().is_empty()
                })
                .await;
                break true;
            }
        }
        assert!(sent < 1_000_000, "the server never stopped reading");
    };
    assert!(closed);
    wait_for("every reservation released", || budget.used() == 0).await;
    // Queue (2 MiB), plus the answers the requests already read were owed: far below
    // the gigabytes that were asked for.
    assert!(
        budget.peak() < 24 << 20,
        "peak {} bytes for {sent} requests of 1 MiB answers",
        budget.peak()
    );
    assert!(sent > 24, "enough was asked to exceed the bound: {sent}");
}

/// Small answers fill the write queue's frame slots and every request permit long
/// before its high-water mark in bytes: the reader then waits for a permit, and that
/// wait too must give up on a peer that reads nothing.
#[tokio::test]
async fn a_peer_that_never_reads_small_answers_is_disconnected_too() {
    let connection = ConnectionConfig {
        write_high_water: 64 << 20,
        write_low_water: 1 << 20,
        write_queue_capacity: 8,
        max_inflight_requests: 8,
        write_stall_timeout: Duration::from_millis(300),
        ..ConnectionConfig::default()
    };
    let server = start(connection, usize::MAX).await;
    let raw = TcpStream::connect(server.local_addr()).await.unwrap();
    let (_rd, mut wr) = raw.into_split();
    // Many small pipelined requests, never read: the answers fill the peer's socket
    // buffers, then the write queue's slots, then the permits.
    let burst: Vec<u8> = (0..1024).flat_map(|_| frame(ECHO, 512).to_vec()).collect();
    let mut sent = 0;
    loop {
        match tokio::time::timeout(Duration::from_millis(200), wr.write_all(&burst)).await {
            Ok(Ok(())) => sent += 1,
            Ok(Err(_)) => break, // the server closed the connection
            Err(_) => {
                wait_for("the stalled connection is closed", || {
                    server.channels().is_empty()
                })
                .await;
                break;
            }
        }
        assert!(sent < 100_000, "the server never stopped reading");
    }
}

#[tokio::test]
async fn a_frame_left_unfinished_is_closed_at_its_deadline() {
    let budget = MemoryBudget::new(64 << 20, 64 << 20);
    let connection = ConnectionConfig {
        budget: budget.clone(),
        frame_read_timeout: Duration::from_millis(300),
        ..ConnectionConfig::default()
    };
    let server = start(connection, usize::MAX).await;
    let mut slow = TcpStream::connect(server.local_addr()).await.unwrap();
    let whole = frame(ECHO, 8 << 20);
    slow.write_all(&whole[..1000]).await.unwrap();
    wait_for("the frame is reserved", || budget.used() > 8 << 20).await;
    assert!(
        closed_by_server(&mut slow).await,
        "closed after the deadline"
    );
    wait_for("its memory released", || budget.used() == 0).await;
    // Whole frames are served as before.
    let client = RemotingClient::new(ClientConfig::default(), None);
    let answer = client
        .invoke_sync(
            &server.local_addr().to_string(),
            RemotingCommand::request(ECHO).with_body(Bytes::from_static(b"hi")),
            T,
        )
        .await
        .unwrap();
    assert_eq!(&answer.body[..], b"hi");
}

async fn echo_on(stream: &mut TcpStream) {
    stream.write_all(&frame(ECHO, 3)).await.unwrap();
    let mut head = [0u8; 4];
    stream.read_exact(&mut head).await.unwrap();
    let mut rest = vec![0u8; u32::from_be_bytes(head) as usize];
    stream.read_exact(&mut rest).await.unwrap();
}

#[tokio::test]
async fn at_the_connection_limit_the_connection_idle_longest_is_closed() {
    let server = start(ConnectionConfig::default(), 3).await;
    let addr = server.local_addr();
    let mut oldest = TcpStream::connect(addr).await.unwrap();
    let mut b = TcpStream::connect(addr).await.unwrap();
    let mut c = TcpStream::connect(addr).await.unwrap();
    wait_for("three connections", || server.channels().len() == 3).await;
    // Only connections idle for a second may be closed for a newcomer.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    echo_on(&mut b).await;
    echo_on(&mut c).await;
    let mut newcomer = TcpStream::connect(addr).await.unwrap();
    assert!(
        closed_by_server(&mut oldest).await,
        "the idle one made room"
    );
    echo_on(&mut newcomer).await;
    echo_on(&mut b).await;

    // Protected connections are never closed: with all three protected, a fourth is
    // refused instead.
    for stream in [&mut b, &mut c, &mut newcomer] {
        stream.write_all(&frame(PROTECT, 0)).await.unwrap();
        let mut head = [0u8; 4];
        stream.read_exact(&mut head).await.unwrap();
        let mut rest = vec![0u8; u32::from_be_bytes(head) as usize];
        stream.read_exact(&mut rest).await.unwrap();
    }
    wait_for("three connections", || server.channels().len() == 3).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let mut refused = TcpStream::connect(addr).await.unwrap();
    assert!(closed_by_server(&mut refused).await);
    echo_on(&mut c).await;
}

#[tokio::test]
async fn at_the_memory_ceiling_a_large_answer_becomes_system_busy() {
    let budget = MemoryBudget::new(8 << 20, 6 << 20);
    let connection = ConnectionConfig {
        budget: budget.clone(),
        ..ConnectionConfig::default()
    };
    let server = start(connection, usize::MAX).await;
    let addr = server.local_addr().to_string();
    let client = RemotingClient::new(ClientConfig::default(), None);
    let big = client
        .invoke_sync(&addr, RemotingCommand::request(BIG), T)
        .await
        .unwrap();
    assert_eq!(
        (big.code, big.body.len()),
        (response_code::SUCCESS, 1 << 20)
    );

    // Someone holds almost everything: the answer would pass the ceiling.
    let held = budget
        .try_reserve(budget.limit() - budget.used() - 200_000)
        .unwrap();
    let busy = client
        .invoke_sync(&addr, RemotingCommand::request(BIG), T)
        .await
        .unwrap();
    assert_eq!(busy.code, response_code::SYSTEM_BUSY, "{}", busy.remark());
    assert!(busy.remark().contains("MEMORY"), "{}", busy.remark());
    assert!(budget.peak() <= budget.limit());
    drop(held);
    let big = client
        .invoke_sync(&addr, RemotingCommand::request(BIG), T)
        .await
        .unwrap();
    assert_eq!(big.code, response_code::SUCCESS);
}
