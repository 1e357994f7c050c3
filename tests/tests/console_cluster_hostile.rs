//! One console for the cluster (docs/operations.md#one-console-for-the-cluster) facing
//! another "broker" that answers as a hostile or broken one could: a topic list larger
//! than the console reads from another broker, figures at the ends of the 64-bit range,
//! unreadable bodies, more groups than a page draws, a console address that is not a
//! host, runtime info larger than the console reads. A real `mqnamesrv` lists it beside a real `mqbroker`, whose pages keep
//! answering, drawing what is sane and saying what is not.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::Framed;
use vostok_remoting::protocol::body::{TopicConfig, TopicConfigSerializeWrapper};
use vostok_remoting::protocol::{request_code as code, response_code};
use vostok_remoting::{FrameLimits, RemotingCodec, RemotingCommand};
use vostok_tests::client::TestClient;
use vostok_tests::{http, Broker, BrokerOptions, Namesrv};

/// Groups the hostile broker lists: more than the 1,000 rows a page draws of one broker.
const GROUPS: usize = 1200;

/// A topic list of about 12 MiB: under the 16 MiB any remoting frame may be, over the
/// 8 MiB the console reads from another broker.
fn huge_topic_list() -> Vec<u8> {
    let wrapper = TopicConfigSerializeWrapper {
        topic_config_table: (0..22_000)
            .map(|i| {
                let name = format!("HugeTopic-{i:05}-{}", "x".repeat(200));
                (name.clone(), TopicConfig::new(name, 1))
            })
            .collect(),
        ..Default::default()
    };
    let body = serde_json::to_vec(&wrapper).expect("a topic list");
    assert!(
        (9 << 20..15 << 20).contains(&body.len()),
        "{} bytes",
        body.len()
    );
    body
}

/// Runtime info of about 12 MiB, as large as the topic list.
fn huge_runtime_info() -> Vec<u8> {
    let table: serde_json::Map<String, serde_json::Value> = (0..22_000)
        .map(|i| (format!("key{i:05}"), "x".repeat(560).into()))
        .collect();
    let body = serde_json::to_vec(&serde_json::json!({ "table": table })).expect("a table");
    assert!(
        (9 << 20..15 << 20).contains(&body.len()),
        "{} bytes",
        body.len()
    );
    body
}

/// The hostile broker's large answers.
struct Huge {
    topics: Vec<u8>,
    runtime: Vec<u8>,
}

/// The hostile broker's answer to `request`.
fn hostile_answer(request: &RemotingCommand, huge: &Huge) -> RemotingCommand {
    let ok = |body: Vec<u8>| RemotingCommand::success().with_body(body);
    let queue = |i: usize| format!(r#"{{"brokerName":"console-evil","queueId":{i},"topic":"T"}}"#);
    match request.code {
        code::GET_BROKER_CONFIG => {
            ok(b"consoleEnable=true\nconsolePort=8080\nconsoleHost=evil.example/phish?\n".to_vec())
        }
        code::GET_ALL_TOPIC_CONFIG => ok(huge.topics.clone()),
        code::GET_BROKER_RUNTIME_INFO => ok(huge.runtime.clone()),
        code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG => {
            let table: serde_json::Map<String, serde_json::Value> = (0..GROUPS)
                .map(|i| {
                    let name = format!("EvilGroup-{i:04}");
                    (name.clone(), serde_json::json!({ "groupName": name }))
                })
                .collect();
            ok(serde_json::to_vec(&serde_json::json!({ "subscriptionGroupTable": table }))
                .expect("a group list"))
        }
        // Behind by more than an i64 holds, twice over.
        code::GET_CONSUME_STATS => ok(format!(
            r#"{{"consumeTps":0.0,"offsetTable":{{{}:{{"brokerOffset":{max},"consumerOffset":{min},"lastTimestamp":1}},{}:{{"brokerOffset":{max},"consumerOffset":0,"lastTimestamp":{min}}}}}}}"#,
            queue(0),
            queue(1),
            max = i64::MAX,
            min = i64::MIN,
        )
        .into_bytes()),
        // The DLQ keeps more than an i64 holds.
        code::GET_TOPIC_STATS_INFO => ok(format!(
            r#"{{"offsetTable":{{{}:{{"maxOffset":{max},"minOffset":{min}}},{}:{{"maxOffset":{max},"minOffset":0}}}}}}"#,
            queue(0),
            queue(1),
            max = i64::MAX,
            min = i64::MIN,
        )
        .into_bytes()),
        code::GET_CONSUMER_CONNECTION_LIST => ok(b"{\"connectionSet\":[{\"clientId\":".to_vec()),
        _ => RemotingCommand::response(response_code::REQUEST_CODE_NOT_SUPPORTED, None),
    }
}

async fn serve(stream: TcpStream, huge: std::sync::Arc<Huge>) {
    let mut frames = Framed::new(stream, RemotingCodec::new(FrameLimits::default()));
    while let Some(Ok(request)) = frames.next().await {
        let mut answer = hostile_answer(&request, &huge);
        answer.opaque = request.opaque;
        if frames.send(answer).await.is_err() {
            return;
        }
    }
}

/// The hostile broker's address; it serves until the test ends.
async fn hostile_broker() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("listens");
    let addr = listener.local_addr().expect("its address").to_string();
    let huge = std::sync::Arc::new(Huge {
        topics: huge_topic_list(),
        runtime: huge_runtime_info(),
    });
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream, huge.clone()));
        }
    });
    addr
}

/// The row of table `id` that holds every one of `cells`.
fn table_row<'a>(page: &'a str, id: &str, cells: &[&str]) -> Option<&'a str> {
    let table = page.split(&format!("<table id=\"{id}\">")).nth(1)?;
    let table = table.split("</table>").next()?;
    table
        .split("<tr>")
        .find(|r| cells.iter().all(|c| r.contains(c)))
}

/// `path` of `console`, asked until `ready` holds of its body (30 s).
async fn page_until(console: &str, path: &str, ready: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = http::get(console, path).await;
        if answer.status == 200 && ready(&answer.body) {
            return answer.body;
        }
        assert!(
            Instant::now() < deadline,
            "{path} not as expected in time ({}):\n{}",
            answer.status,
            answer.body
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_broker_cannot_flood_or_break_the_console() {
    let ns = Namesrv::start();
    let a = Broker::start(
        BrokerOptions {
            namesrv: Some(ns.addr.clone()),
            broker_name: "console-a".to_owned(),
            ..Default::default()
        }
        .set("consoleEnable", true),
    );
    let console = a.console_addr.clone().expect("console address printed");
    let evil = hostile_broker().await;
    let c = TestClient::default();
    let r = c.register_broker(&ns.addr, "console-evil", &evil).await;
    assert_eq!(r.code, 0, "{}", r.remark());
    let evil_cell = format!("console-evil ({evil})");

    // Its 12 MiB topic list is not read: its row says why, A's page is whole.
    let topics = page_until(&console, "/topics", |p| {
        table_row(p, "topics", &["peer-error", &evil_cell]).is_some()
    })
    .await;
    assert!(!topics.contains("HugeTopic-"), "a topic of the list drawn");
    assert!(topics.contains("</html>"), "{topics}");

    // Its groups: the first 1,000 drawn, the rest counted; figures past the i64 range
    // saturate; an unreadable client list is "-"; its console address is no link.
    let groups = page_until(&console, "/groups", |p| {
        table_row(p, "groups", &["EvilGroup-0000", &evil_cell]).is_some()
    })
    .await;
    let row = table_row(&groups, "groups", &["EvilGroup-0000"]).expect("its first group");
    let max = format!("<td class=\"n\">{}</td>", i64::MAX);
    assert_eq!(row.matches(&max).count(), 2, "lag and DLQ saturate: {row}");
    assert!(!row.contains("evil.example"), "{row}");
    assert!(
        table_row(&groups, "groups", &["EvilGroup-0999"]).is_some(),
        "the 1,000th group"
    );
    assert!(!groups.contains("EvilGroup-1000"), "past the 1,000th");
    let more = table_row(&groups, "groups", &["left-off", &evil_cell]).expect("the rest");
    assert!(
        more.contains(&format!("{} more rows not shown", GROUPS - 1000)),
        "{more}"
    );

    // The clients page: no client of it drawn, and A still answers everything.
    let clients = http::get(&console, "/clients").await;
    assert_eq!(clients.status, 200, "{}", clients.body);
    assert!(!clients.body.contains("EvilGroup"), "{}", clients.body);

    // Its 12 MiB runtime info is not read either: the cluster page lists it unreachable.
    let cluster = page_until(&console, "/", |p| {
        table_row(p, "members", &[&evil]).is_some()
    })
    .await;
    let row = table_row(&cluster, "members", &[&evil]).expect("its row");
    assert!(row.contains("unreachable"), "{row}");
}
