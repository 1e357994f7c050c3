//! A held pull answered with the whole burst that released it: the broker in process,
//! a raw TCP connection that pipelines requests as a client holding a pull and
//! sending on one connection does (mqbench e2e, a producer and a push consumer in
//! one process).

use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::codec::Decoder;
use vostok_broker::{Broker, BrokerHandle};
use vostok_remoting::protocol::header::{
    CreateTopicRequestHeader, PullMessageRequestHeader, SendMessageRequestHeader,
    SendMessageRequestHeaderV2, PULL_FLAG_SUBSCRIPTION, PULL_FLAG_SUSPEND,
};
use vostok_remoting::protocol::message::property::{self, push_pair};
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::{ClientConfig, FrameLimits, RemotingClient, RemotingCodec, RemotingCommand};

mod common;

const T: Duration = Duration::from_secs(30);
const TOPIC: &str = "HeldBurst";

async fn start() -> (BrokerHandle, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = common::broker_config("held-pull-test", dir.path().join("store"));
    let broker = Broker::start(config).await.expect("broker starts");
    (broker, dir)
}

fn send(opaque: i32, body: String) -> RemotingCommand {
    let mut properties = String::new();
    push_pair(&mut properties, property::WAIT_STORE_MSG_OK, "true");
    let header = SendMessageRequestHeader {
        producer_group: "held-burst-producer".into(),
        topic: TOPIC.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 8,
        queue_id: 0,
        sys_flag: 0,
        born_timestamp: vostok_remoting::support::time::now_millis(),
        flag: 0,
        properties: Some(properties),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        batch: Some(false),
        max_reconsume_times: None,
        broker_name: None,
    };
    let mut request = RemotingCommand::request_with_header(
        request_code::SEND_MESSAGE_V2,
        &SendMessageRequestHeaderV2::from(header),
    )
    .with_body(body.into_bytes());
    request.opaque = opaque;
    request
}

fn pull(opaque: i32, offset: i64, suspend: Duration) -> RemotingCommand {
    let header = PullMessageRequestHeader {
        consumer_group: "held-burst".into(),
        topic: TOPIC.into(),
        queue_id: 0,
        queue_offset: offset,
        max_msg_nums: 32,
        sys_flag: PULL_FLAG_SUBSCRIPTION | PULL_FLAG_SUSPEND,
        commit_offset: 0,
        suspend_timeout_millis: suspend.as_millis() as i64,
        subscription: Some("*".into()),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        max_msg_bytes: None,
        broker_name: None,
    };
    let mut request = RemotingCommand::request_with_header(request_code::PULL_MESSAGE, &header);
    request.opaque = opaque;
    request
}

/// A raw connection: frames written as given, responses read one by one.
struct Raw {
    stream: TcpStream,
    codec: RemotingCodec,
    buf: BytesMut,
}

impl Raw {
    async fn connect(addr: std::net::SocketAddr) -> Self {
        Raw {
            stream: TcpStream::connect(addr).await.expect("connect"),
            codec: RemotingCodec::new(FrameLimits::default()),
            buf: BytesMut::new(),
        }
    }

    /// Writes `requests` with one write: they reach the broker in one read.
    async fn write(&mut self, requests: &[RemotingCommand]) {
        let mut out = BytesMut::new();
        for r in requests {
            self.codec.encode_into(r, &mut out).unwrap();
        }
        self.stream.write_all(&out).await.expect("write");
    }

    async fn next(&mut self) -> RemotingCommand {
        loop {
            if let Some(cmd) = self.codec.decode(&mut self.buf).expect("a frame") {
                return cmd;
            }
            let n = tokio::time::timeout(T, self.stream.read_buf(&mut self.buf))
                .await
                .expect("an answer in time")
                .expect("read");
            assert!(n > 0, "the broker closed the connection");
        }
    }
}

async fn held(admin: &RemotingClient, addr: &str) -> usize {
    let request = RemotingCommand::request(request_code::GET_BROKER_RUNTIME_INFO);
    let r = admin
        .invoke_sync(addr, request, T)
        .await
        .expect("runtime info");
    let table: vostok_remoting::protocol::body::KvTable =
        vostok_remoting::protocol::json::from_slice("runtime info", &r.body).unwrap();
    table.table["pullRequestsHeld"].parse().unwrap()
}

/// A pull held on an empty queue and released by a burst of sends that arrive in one
/// read on the same connection is answered once the reader has handled the whole
/// read: one response with every message of the burst, after the sends' answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_pull_is_answered_with_the_whole_burst_that_released_it() {
    const BURST: usize = 8;
    let (broker, _dir) = start().await;
    let addr = broker.addr().to_string();
    let admin = RemotingClient::new(ClientConfig::default(), None);
    let create = CreateTopicRequestHeader {
        topic: TOPIC.into(),
        default_topic: "TBW102".into(),
        read_queue_nums: 1,
        write_queue_nums: 1,
        perm: 6,
        topic_filter_type: "SINGLE_TAG".into(),
        topic_sys_flag: Some(0),
        order: Some(false),
        attributes: None,
        force: None,
    };
    let created = admin
        .invoke_sync(
            &addr,
            RemotingCommand::request_with_header(request_code::UPDATE_AND_CREATE_TOPIC, &create),
            T,
        )
        .await
        .unwrap();
    assert_eq!(created.code, response_code::SUCCESS, "{}", created.remark());

    let mut raw = Raw::connect(broker.addr()).await;
    for round in 0..3 {
        let offset = (round * BURST) as i64;
        // The pull's opaque, then the sends'.
        let pull_opaque = (round * (BURST + 1) + 1) as i32;
        raw.write(&[pull(pull_opaque, offset, T)]).await;
        // Held once the broker counts it; nothing is answered meanwhile.
        let deadline = tokio::time::Instant::now() + T;
        while held(&admin, &addr).await != 1 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the pull was not held"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let burst: Vec<_> = (0..BURST)
            .map(|i| {
                send(
                    pull_opaque + 1 + i as i32,
                    format!("round {round} message {i}"),
                )
            })
            .collect();
        raw.write(&burst).await;
        let mut sends_answered = 0;
        let pulled = loop {
            let response = raw.next().await;
            if response.opaque == pull_opaque {
                break response;
            }
            assert_eq!(
                response.code,
                response_code::SUCCESS,
                "{}",
                response.remark()
            );
            sends_answered += 1;
        };
        assert_eq!(
            sends_answered, BURST,
            "the sends are answered before the pull they released"
        );
        assert_eq!(pulled.code, response_code::SUCCESS, "{}", pulled.remark());
        let messages = MessageExt::decode_all(&pulled.body);
        let bodies: Vec<_> = messages
            .iter()
            .map(|m| String::from_utf8_lossy(&m.body).into_owned())
            .collect();
        let expected: Vec<_> = (0..BURST)
            .map(|i| format!("round {round} message {i}"))
            .collect();
        assert_eq!(bodies, expected, "one response carries the whole burst");
        assert_eq!(held(&admin, &addr).await, 0);
    }
    admin.shutdown().await;
    broker.shutdown().await;
}
