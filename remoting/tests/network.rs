//! Client and server over real sockets on 127.0.0.1.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Notify};
use vostok_remoting::protocol::response_code;
use vostok_remoting::{
    BoxFuture, Channel, ClientConfig, ConnectionConfig, RemotingClient, RemotingCommand,
    RemotingError, RemotingServer, RequestProcessor, ResponseFuture, RpcHook, ServerConfig,
};

const ECHO: i32 = 1000;
const SLOW: i32 = 1001;
const ONEWAY: i32 = 1002;
const CALL_BACK: i32 = 1003;
const HANG: i32 = 1004;
const PANIC: i32 = 1005;
const GATED: i32 = 1006;
const T: Duration = Duration::from_secs(10);

/// Test server: echoes bodies, records oneway requests, calls the client back.
#[derive(Default)]
struct TestProcessor {
    oneway: Mutex<Option<mpsc::UnboundedSender<RemotingCommand>>>,
    hang: Notify,
    /// GATED requests wait until this is true.
    gate: tokio::sync::watch::Sender<bool>,
    gated_waiting: AtomicUsize,
    gated_finished: AtomicUsize,
    closed: AtomicUsize,
    connected: AtomicUsize,
}

impl RequestProcessor for TestProcessor {
    fn process<'a>(
        &'a self,
        channel: &'a Channel,
        request: RemotingCommand,
    ) -> BoxFuture<'a, Option<RemotingCommand>> {
        Box::pin(async move {
            match request.code {
                ECHO => Some(RemotingCommand::success().with_body(request.body.clone())),
                SLOW => {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    Some(RemotingCommand::success().with_body(Bytes::from_static(b"slow")))
                }
                ONEWAY => {
                    if let Some(tx) = self.oneway.lock().unwrap().as_ref() {
                        let _ = tx.send(request);
                    }
                    Some(RemotingCommand::success())
                }
                CALL_BACK => {
                    // Ask the client something over its own connection, relay the answer.
                    let question = RemotingCommand::request(ECHO)
                        .with_body(Bytes::from_static(b"from server"));
                    match channel.invoke(question, T).await {
                        Ok(answer) => Some(RemotingCommand::success().with_body(answer.body)),
                        Err(e) => Some(RemotingCommand::response(
                            response_code::SYSTEM_ERROR,
                            e.to_string(),
                        )),
                    }
                }
                HANG => {
                    self.hang.notified().await;
                    None
                }
                PANIC => panic!("processor bug"),
                GATED => {
                    let mut open = self.gate.subscribe();
                    self.gated_waiting.fetch_add(1, Ordering::SeqCst);
                    let _ = open.wait_for(|open| *open).await;
                    self.gated_finished.fetch_add(1, Ordering::SeqCst);
                    Some(RemotingCommand::success().with_body(Bytes::from_static(b"gated")))
                }
                _ => Some(vostok_remoting::processor::not_supported(&request)),
            }
        })
    }

    fn on_channel_connected(&self, _channel: &Channel) {
        self.connected.fetch_add(1, Ordering::SeqCst);
    }

    fn on_channel_closed(&self, _channel: &Channel) {
        self.closed.fetch_add(1, Ordering::SeqCst);
    }
}

async fn start(config: ServerConfig) -> (RemotingServer, Arc<TestProcessor>) {
    start_with_hooks(config, Vec::new()).await
}

async fn start_with_hooks(
    config: ServerConfig,
    hooks: Vec<Arc<dyn RpcHook>>,
) -> (RemotingServer, Arc<TestProcessor>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let processor = Arc::new(TestProcessor::default());
    let server = RemotingServer::start(listener, processor.clone(), config, hooks);
    (server, processor)
}

/// Sends `n` GATED requests without waiting for their answers.
async fn gated(client: &RemotingClient, addr: &str, n: usize) -> Vec<ResponseFuture> {
    let mut answers = Vec::new();
    for _ in 0..n {
        answers.push(
            client
                .invoke_async(addr, RemotingCommand::request(GATED), T)
                .await
                .unwrap(),
        );
    }
    answers
}

fn echo(body: &'static [u8]) -> RemotingCommand {
    RemotingCommand::request(ECHO).with_body(Bytes::from_static(body))
}

#[tokio::test]
async fn sync_async_and_oneway_calls() {
    let (server, processor) = start(ServerConfig::default()).await;
    let addr = server.local_addr().to_string();
    let client = RemotingClient::new(ClientConfig::default(), None);

    let response = client.invoke_sync(&addr, echo(b"hello"), T).await.unwrap();
    assert_eq!(response.code, response_code::SUCCESS);
    assert_eq!(&response.body[..], b"hello");
    assert!(response.is_response());

    let future = client.invoke_async(&addr, echo(b"async"), T).await.unwrap();
    assert_eq!(&future.await.unwrap().body[..], b"async");

    let (tx, mut rx) = mpsc::unbounded_channel();
    *processor.oneway.lock().unwrap() = Some(tx);
    let request = RemotingCommand::request(ONEWAY).with_body(Bytes::from_static(b"fire"));
    client.invoke_oneway(&addr, request, T).await.unwrap();
    let got = tokio::time::timeout(T, rx.recv()).await.unwrap().unwrap();
    assert!(got.is_oneway());
    assert_eq!(&got.body[..], b"fire");
    // The oneway request got no response: the next call's answer is its own.
    let response = client.invoke_sync(&addr, echo(b"after"), T).await.unwrap();
    assert_eq!(&response.body[..], b"after");
    client.shutdown().await;
    server.shutdown().await;
}

#[tokio::test]
async fn unknown_code_gets_request_code_not_supported() {
    let (server, _) = start(ServerConfig::default()).await;
    let client = RemotingClient::new(ClientConfig::default(), None);
    let response = client
        .invoke_sync(
            &server.local_addr().to_string(),
            RemotingCommand::request(4242),
            T,
        )
        .await
        .unwrap();
    assert_eq!(response.code, response_code::REQUEST_CODE_NOT_SUPPORTED);
    assert!(response.remark().contains("4242"));
}

#[tokio::test]
async fn a_panicking_processor_answers_system_error() {
    let (server, _) = start(ServerConfig::default()).await;
    let addr = server.local_addr().to_string();
    let client = RemotingClient::new(ClientConfig::default(), None);
    let response = client
        .invoke_sync(&addr, RemotingCommand::request(PANIC), T)
        .await
        .unwrap();
    assert_eq!(response.code, response_code::SYSTEM_ERROR);
    // The connection and the server keep working.
    assert_eq!(
        &client
            .invoke_sync(&addr, echo(b"ok"), T)
            .await
            .unwrap()
            .body[..],
        b"ok"
    );
}

#[tokio::test]
async fn timeout_frees_the_call_and_a_late_answer_is_dropped() {
    let (server, _) = start(ServerConfig::default()).await;
    let addr = server.local_addr().to_string();
    let client = RemotingClient::new(ClientConfig::default(), None);
    let err = client
        .invoke_sync(
            &addr,
            RemotingCommand::request(SLOW),
            Duration::from_millis(50),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, RemotingError::Timeout { .. }), "{err}");
    // The late SLOW answer arrives on the same connection and must not be mistaken
    // for this call's response.
    let response = client.invoke_sync(&addr, echo(b"next"), T).await.unwrap();
    assert_eq!(&response.body[..], b"next");
}

/// A call whose answer goes to a callback: the callback's outcomes, in the order given.
fn callback_into(
    tx: &mpsc::UnboundedSender<(&'static str, Result<RemotingCommand, RemotingError>)>,
    name: &'static str,
) -> impl FnOnce(Result<RemotingCommand, RemotingError>) + Send + 'static {
    let tx = tx.clone();
    move |outcome| {
        let _ = tx.send((name, outcome));
    }
}

#[tokio::test]
async fn callbacks_get_the_answer_a_timeout_or_the_connection_loss_once_each() {
    let (server, processor) = start(ServerConfig::default()).await;
    let addr = server.local_addr().to_string();
    let client = RemotingClient::new(ClientConfig::default(), None);
    let (tx, mut rx) = mpsc::unbounded_channel();

    client
        .invoke_async_with_callback(&addr, echo(b"cb"), T, callback_into(&tx, "echo"))
        .await;
    let (name, outcome) = tokio::time::timeout(T, rx.recv()).await.unwrap().unwrap();
    assert_eq!(name, "echo");
    assert_eq!(&outcome.unwrap().body[..], b"cb");

    // A long deadline first, then a short one: the sweeper wakes for the earlier one.
    client
        .invoke_async_with_callback(
            &addr,
            RemotingCommand::request(HANG),
            Duration::from_secs(60),
            callback_into(&tx, "hang"),
        )
        .await;
    client
        .invoke_async_with_callback(
            &addr,
            RemotingCommand::request(SLOW),
            Duration::from_millis(50),
            callback_into(&tx, "slow"),
        )
        .await;
    let (name, outcome) = tokio::time::timeout(T, rx.recv()).await.unwrap().unwrap();
    assert_eq!(name, "slow");
    assert!(
        matches!(outcome, Err(RemotingError::Timeout { .. })),
        "{outcome:?}"
    );

    // The hanging call learns of the connection's loss, long before its deadline.
    for ch in server.channels() {
        ch.close();
    }
    let (name, outcome) = tokio::time::timeout(T, rx.recv()).await.unwrap().unwrap();
    assert_eq!(name, "hang");
    assert!(
        matches!(outcome, Err(RemotingError::ConnectionClosed { .. })),
        "{outcome:?}"
    );
    processor.hang.notify_waiters();

    // Each callback ran once: nothing else arrives once the client is gone.
    client.shutdown().await;
    drop(tx);
    assert!(tokio::time::timeout(T, rx.recv()).await.unwrap().is_none());
}

#[tokio::test]
async fn connection_loss_fails_pending_calls_at_once_and_reconnects() {
    let (server, processor) = start(ServerConfig::default()).await;
    let addr = server.local_addr().to_string();
    let client = Arc::new(RemotingClient::new(ClientConfig::default(), None));
    let channel = client.channel(&addr).await.unwrap();

    let caller = {
        let client = client.clone();
        let addr = addr.clone();
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            let result = client
                .invoke_sync(
                    &addr,
                    RemotingCommand::request(HANG),
                    Duration::from_secs(30),
                )
                .await;
            (result, started.elapsed())
        })
    };
    // Wait until the server holds the request, then cut the connection server-side.
    wait_for(|| server.channels().len() == 1).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    for ch in server.channels() {
        ch.close();
    }
    let (result, elapsed) = tokio::time::timeout(T, caller).await.unwrap().unwrap();
    assert!(
        matches!(result, Err(RemotingError::ConnectionClosed { .. })),
        "{result:?}"
    );
    assert!(
        elapsed < Duration::from_secs(5),
        "failed at once, not at its timeout"
    );
    tokio::time::timeout(T, channel.closed()).await.unwrap();
    processor.hang.notify_waiters();

    // The next call reconnects.
    let response = client.invoke_sync(&addr, echo(b"again"), T).await.unwrap();
    assert_eq!(&response.body[..], b"again");
    wait_for(|| processor.connected.load(Ordering::SeqCst) == 2).await;
}

#[tokio::test]
async fn server_initiated_request_is_answered_by_the_client() {
    struct ClientSide;
    impl RequestProcessor for ClientSide {
        fn process<'a>(
            &'a self,
            _: &'a Channel,
            request: RemotingCommand,
        ) -> BoxFuture<'a, Option<RemotingCommand>> {
            Box::pin(async move {
                let mut body = b"client saw: ".to_vec();
                body.extend_from_slice(&request.body);
                Some(RemotingCommand::success().with_body(body))
            })
        }
    }
    let (server, _) = start(ServerConfig::default()).await;
    let client = RemotingClient::new(ClientConfig::default(), Some(Arc::new(ClientSide)));
    let response = client
        .invoke_sync(
            &server.local_addr().to_string(),
            RemotingCommand::request(CALL_BACK),
            T,
        )
        .await
        .unwrap();
    assert_eq!(response.code, response_code::SUCCESS);
    assert_eq!(&response.body[..], b"client saw: from server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_concurrent_async_requests_on_one_connection() {
    let (server, processor) = start(ServerConfig::default()).await;
    let addr = server.local_addr().to_string();
    let client = RemotingClient::new(ClientConfig::default(), None);
    let mut futures = Vec::with_capacity(10_000);
    for i in 0..10_000u32 {
        let request = RemotingCommand::request(ECHO).with_body(i.to_be_bytes().to_vec());
        futures.push(
            client
                .invoke_async(&addr, request, Duration::from_secs(30))
                .await
                .unwrap(),
        );
    }
    let mut seen = vec![false; 10_000];
    for (i, future) in futures.into_iter().enumerate() {
        let response = future.await.unwrap();
        let n = u32::from_be_bytes(response.body[..4].try_into().unwrap()) as usize;
        assert_eq!(n, i, "each call gets its own answer");
        assert!(!seen[n]);
        seen[n] = true;
    }
    assert!(seen.iter().all(|s| *s));
    assert_eq!(
        processor.connected.load(Ordering::SeqCst),
        1,
        "one multiplexed connection"
    );
}

#[tokio::test]
async fn a_bad_frame_closes_only_its_own_connection() {
    let (server, processor) = start(ServerConfig::default()).await;
    let addr = server.local_addr().to_string();
    let client = RemotingClient::new(ClientConfig::default(), None);
    assert!(client.invoke_sync(&addr, echo(b"1"), T).await.is_ok());

    for garbage in [
        vec![0xff, 0xff, 0xff, 0xff],                         // negative length
        vec![0x7f, 0xff, 0xff, 0xff],                         // 2 GiB frame
        vec![0, 0, 0, 8, 9, 0, 0, 0, 0, 0, 0, 0],             // unknown serialize type
        vec![0, 0, 0, 8, 0, 0, 0, 4, b'n', b'u', b'l', b'l'], // JSON that is not a header
    ] {
        let mut raw = TcpStream::connect(&addr).await.unwrap();
        raw.write_all(&garbage).await.unwrap();
        let mut buf = [0u8; 16];
        // The server closes this connection: read returns EOF (or reset).
        let n = tokio::time::timeout(T, raw.read(&mut buf))
            .await
            .unwrap()
            .unwrap_or(0);
        assert_eq!(n, 0, "no answer to garbage, just a close");
    }
    // The well-behaved client's connection is untouched.
    assert_eq!(
        &client.invoke_sync(&addr, echo(b"2"), T).await.unwrap().body[..],
        b"2"
    );
    wait_for(|| processor.closed.load(Ordering::SeqCst) == 4).await;
}

#[tokio::test]
async fn idle_connections_are_closed() {
    let mut config = ServerConfig::default();
    config.connection.idle_timeout = Duration::from_millis(200);
    let (server, processor) = start(config).await;
    let mut raw = TcpStream::connect(server.local_addr()).await.unwrap();
    let mut buf = [0u8; 1];
    let n = tokio::time::timeout(T, raw.read(&mut buf))
        .await
        .unwrap()
        .unwrap_or(0);
    assert_eq!(n, 0);
    wait_for(|| processor.closed.load(Ordering::SeqCst) == 1).await;
}

#[tokio::test]
async fn graceful_shutdown_answers_requests_in_flight() {
    let (server, _) = start(ServerConfig::default()).await;
    let addr = server.local_addr().to_string();
    let client = RemotingClient::new(ClientConfig::default(), None);
    let future = client
        .invoke_async(&addr, RemotingCommand::request(SLOW), T)
        .await
        .unwrap();
    wait_for(|| server.channels().len() == 1).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    server.shutdown().await;
    let response = future.await.unwrap();
    assert_eq!(&response.body[..], b"slow");
    assert!(
        TcpStream::connect(&addr).await.is_err(),
        "no longer accepting"
    );
}

/// Requests that wait hold every request permit of their connection: the reader stops
/// reading, and must still drive them to their end (they wait with the reader, not on
/// tasks of their own) so that it can read the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_waiting_on_every_permit_finish_and_the_rest_is_read() {
    let config = ServerConfig {
        connection: ConnectionConfig {
            max_inflight_requests: 4,
            ..ConnectionConfig::default()
        },
        ..ServerConfig::default()
    };
    let (server, processor) = start(config).await;
    let addr = server.local_addr().to_string();
    let client = RemotingClient::new(ClientConfig::default(), None);
    let answers = gated(&client, &addr, 8).await;
    let echoed = client.invoke_async(&addr, echo(b"last"), T).await.unwrap();
    wait_for(|| processor.gated_waiting.load(Ordering::SeqCst) == 4).await;
    processor.gate.send_replace(true);
    for answer in answers {
        assert_eq!(&answer.await.unwrap().body[..], b"gated");
    }
    assert_eq!(&echoed.await.unwrap().body[..], b"last");
    assert_eq!(processor.gated_finished.load(Ordering::SeqCst), 8);
}

/// A connection that closes while its requests wait does not cancel them: they run to
/// their end (a send's wait for the disk, an admin change half-way) as they would have
/// with the connection open.
#[tokio::test]
async fn requests_left_waiting_by_a_closed_connection_still_finish() {
    let (server, processor) = start(ServerConfig::default()).await;
    let addr = server.local_addr().to_string();
    let client = RemotingClient::new(ClientConfig::default(), None);
    let answers = gated(&client, &addr, 3).await;
    wait_for(|| processor.gated_waiting.load(Ordering::SeqCst) == 3).await;
    for channel in server.channels() {
        channel.close();
    }
    wait_for(|| processor.closed.load(Ordering::SeqCst) == 1).await;
    processor.gate.send_replace(true);
    wait_for(|| processor.gated_finished.load(Ordering::SeqCst) == 3).await;
    for answer in answers {
        assert!(answer.await.is_err(), "the connection was closed");
    }
}

/// A server hook that panics on one response costs that request only: the requests
/// the reader was driving with it, and the next ones, are still answered.
#[tokio::test]
async fn a_panicking_hook_costs_its_request_only() {
    struct PanicOnce(AtomicUsize);
    impl RpcHook for PanicOnce {
        fn before_request(&self, _: &str, _: &mut RemotingCommand) {}
        fn after_response(&self, _: &str, request: &RemotingCommand, _: &mut RemotingCommand) {
            if request.code == GATED && self.0.fetch_add(1, Ordering::SeqCst) == 0 {
                panic!("hook bug");
            }
        }
    }
    let hook: Arc<dyn RpcHook> = Arc::new(PanicOnce(AtomicUsize::new(0)));
    let (server, processor) = start_with_hooks(ServerConfig::default(), vec![hook]).await;
    let addr = server.local_addr().to_string();
    let client = RemotingClient::new(ClientConfig::default(), None);
    let answers = gated(&client, &addr, 3).await;
    wait_for(|| processor.gated_waiting.load(Ordering::SeqCst) == 3).await;
    processor.gate.send_replace(true);
    // One of the three is never answered; the other two are, and so is what follows.
    let mut answered = 0;
    let mut answers = futures_util::stream::FuturesUnordered::from_iter(answers);
    while answered < 2 {
        let answer = futures_util::StreamExt::next(&mut answers).await.unwrap();
        assert_eq!(&answer.unwrap().body[..], b"gated");
        answered += 1;
    }
    let response = client.invoke_sync(&addr, echo(b"after"), T).await.unwrap();
    assert_eq!(&response.body[..], b"after");
}

#[tokio::test]
async fn a_reader_that_stops_reading_bounds_the_server() {
    // The peer floods requests without reading answers: once the write queue and the
    // in-flight limit are full the server stops reading, instead of buffering without end.
    let config = ServerConfig {
        connection: ConnectionConfig {
            write_queue_capacity: 4,
            max_inflight_requests: 4,
            ..ConnectionConfig::default()
        },
        ..ServerConfig::default()
    };
    let (server, _) = start(config).await;
    let raw = TcpStream::connect(server.local_addr()).await.unwrap();
    let (_rd, mut wr) = raw.into_split();
    let codec = vostok_remoting::RemotingCodec::default();
    let frame = codec
        .encode_to_bytes(&RemotingCommand::request(ECHO).with_body(vec![7u8; 64 * 1024]))
        .unwrap();
    // Keep writing until the kernel buffers on both sides are full and a write blocks.
    let mut blocked = false;
    for _ in 0..10_000 {
        if tokio::time::timeout(Duration::from_millis(500), wr.write_all(&frame))
            .await
            .is_err()
        {
            blocked = true;
            break;
        }
    }
    assert!(
        blocked,
        "writes eventually block: the server stopped reading"
    );
    // Other clients are still served.
    let client = RemotingClient::new(ClientConfig::default(), None);
    let response = client
        .invoke_sync(&server.local_addr().to_string(), echo(b"fine"), T)
        .await
        .unwrap();
    assert_eq!(&response.body[..], b"fine");
}

#[tokio::test]
async fn rpc_hooks_add_ext_fields_and_see_responses() {
    struct Sign(AtomicUsize);
    impl RpcHook for Sign {
        fn before_request(&self, _: &str, request: &mut RemotingCommand) {
            request.ext_fields.insert("AccessKey", "ak");
        }
        fn after_response(
            &self,
            _: &str,
            request: &RemotingCommand,
            response: &mut RemotingCommand,
        ) {
            assert_eq!(request.ext_fields.get("AccessKey"), Some("ak"));
            response.ext_fields.insert("seen", "yes");
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    struct Check;
    impl RequestProcessor for Check {
        fn process<'a>(
            &'a self,
            _: &'a Channel,
            request: RemotingCommand,
        ) -> BoxFuture<'a, Option<RemotingCommand>> {
            Box::pin(async move {
                let key = request
                    .ext_fields
                    .get("AccessKey")
                    .unwrap_or("none")
                    .to_owned();
                Some(RemotingCommand::success().with_body(key))
            })
        }
    }
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = RemotingServer::start(
        listener,
        Arc::new(Check),
        ServerConfig::default(),
        Vec::new(),
    );
    let client = RemotingClient::new(ClientConfig::default(), None);
    let hook = Arc::new(Sign(AtomicUsize::new(0)));
    client.register_rpc_hook(hook.clone());
    let response = client
        .invoke_sync(
            &server.local_addr().to_string(),
            RemotingCommand::request(1),
            T,
        )
        .await
        .unwrap();
    assert_eq!(&response.body[..], b"ak");
    assert_eq!(response.ext_fields.get("seen"), Some("yes"));
    assert_eq!(hook.0.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn binary_headers_can_be_chosen_and_both_are_read() {
    let mut config = ServerConfig::default();
    config.connection.serialize_type = vostok_remoting::SerializeType::RocketMq;
    let (server, _) = start(config).await;
    // A JSON client talks to a server that answers in binary.
    let client = RemotingClient::new(ClientConfig::default(), None);
    let response = client
        .invoke_sync(&server.local_addr().to_string(), echo(b"mixed"), T)
        .await
        .unwrap();
    assert_eq!(
        response.serialize_type,
        vostok_remoting::SerializeType::RocketMq
    );
    assert_eq!(&response.body[..], b"mixed");
}

#[tokio::test]
async fn a_json_server_answers_binary_requests_in_binary() {
    let (server, _) = start(ServerConfig::default()).await;
    let addr = server.local_addr().to_string();
    let json = RemotingClient::new(ClientConfig::default(), None);
    let response = json.invoke_sync(&addr, echo(b"plain"), T).await.unwrap();
    assert_eq!(
        response.serialize_type,
        vostok_remoting::SerializeType::Json
    );
    assert_eq!(&response.body[..], b"plain");

    let mut config = ClientConfig::default();
    config.connection.serialize_type = vostok_remoting::SerializeType::RocketMq;
    let binary = RemotingClient::new(config, None);
    let response = binary.invoke_sync(&addr, echo(b"binary"), T).await.unwrap();
    assert_eq!(
        response.serialize_type,
        vostok_remoting::SerializeType::RocketMq
    );
    assert_eq!(&response.body[..], b"binary");
}

#[tokio::test]
async fn connect_failure_is_a_typed_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    drop(listener);
    let client = RemotingClient::new(ClientConfig::default(), None);
    let err = client.invoke_sync(&addr, echo(b"x"), T).await.unwrap_err();
    assert!(matches!(err, RemotingError::Connect { .. }), "{err}");
    assert!(err.is_transport());
}

async fn wait_for(mut condition: impl FnMut() -> bool) {
    tokio::time::timeout(T, async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("condition not reached in time");
}
