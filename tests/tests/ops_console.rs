//! The web console in a real headless browser (Debian's chromium over WebDriver):
//! search a message, see where it is, remove it (confirming on the page that names
//! it), see the group's lag drop; skip a group's accumulated messages, create a group,
//! resend a dead letter; send a test message, open its page (body, trace) and resend
//! it to a group; change a topic's queues and a run-time key. Skipped, saying so,
//! where chromium or chromedriver is not installed.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use vostok_remoting::protocol::response_code;
use vostok_tests::client::TestClient;
use vostok_tests::{Broker, BrokerOptions};

/// A chromedriver process, killed on drop.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn find(program: &str) -> Option<String> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| format!("{dir}/{program}"))
        .find(|p| std::path::Path::new(p).is_file())
}

/// chromedriver on a free port and a session of headless chromium, or `None` (with
/// a message) when either is missing.
async fn browser() -> Option<(Driver, Client)> {
    let (Some(driver), Some(chromium)) = (find("chromedriver"), find("chromium")) else {
        eprintln!("SKIPPED: chromium and chromedriver are needed for the console test (apt-get install chromium chromium-driver)");
        return None;
    };
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let child = Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let driver = Driver(child);
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        }),
    );
    // chromedriver needs a moment to listen: retry the session for up to 30 s.
    for _ in 0..300 {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        match ClientBuilder::new(connector)
            .capabilities(caps.clone())
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
        {
            Ok(client) => return Some((driver, client)),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    panic!("no WebDriver session from chromedriver on port {port}");
}

async fn text(client: &Client, css: &str) -> String {
    // A click's navigation may still be under way ("aborted by navigation"): poll,
    // as WebDriver waits do, until the new page has the element.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let found = match client.find(Locator::Css(css)).await {
            Ok(element) => element.text().await,
            Err(e) => Err(e),
        };
        match found {
            Ok(text) => return text,
            Err(e) if std::time::Instant::now() >= deadline => panic!("{css}: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_a_message_remove_it_and_see_the_lag_drop() {
    let Some((_driver, client)) = browser().await else {
        return;
    };
    let broker = Broker::start(BrokerOptions::default());
    let console = format!(
        "http://{}",
        broker
            .console_addr
            .clone()
            .expect("console address printed")
    );
    let c = TestClient::default();
    let (topic, group) = ("ConsoleTopic", "ConsoleGroup");
    assert_eq!(
        c.create_topic(&broker.addr, topic, 1).await.code,
        response_code::SUCCESS
    );
    for i in 0..3 {
        let props = TestClient::properties(Some("t"), Some(&format!("order-{i}")));
        c.send(&broker.addr, topic, 0, format!("body {i}"), props)
            .await;
    }
    c.wait_dispatched(&broker.addr).await;
    // The group is known to the broker and has consumed nothing.
    c.update_offset(&broker.addr, group, topic, 0, 0).await;

    client
        .goto(&format!("{console}/group?name={group}"))
        .await
        .expect("group page");
    assert_eq!(text(&client, "#lag-total").await, "3");

    // Search by key, see the status.
    client
        .goto(&format!("{console}/messages"))
        .await
        .expect("messages page");
    client
        .find(Locator::Css("#q-topic"))
        .await
        .expect("topic field")
        .send_keys(topic)
        .await
        .expect("type");
    client
        .find(Locator::Css("#q-key"))
        .await
        .expect("key field")
        .send_keys("order-1")
        .await
        .expect("type");
    client
        .find(Locator::Css("#search"))
        .await
        .expect("search button")
        .click()
        .await
        .expect("search");
    let status = text(&client, "table#status").await;
    assert!(
        status.contains(group) && status.contains("waiting"),
        "{status}"
    );

    // Remove it: the page says so, and so does the status.
    client
        .find(Locator::XPath("//button[text()='Remove this message']"))
        .await
        .expect("remove button")
        .click()
        .await
        .expect("remove");
    // It asks first, naming what is lost; confirming removes it.
    let loss = text(&client, "#loss").await;
    assert!(
        loss.contains("keys order-1") && loss.contains("no group will receive it"),
        "{loss}"
    );
    client
        .find(Locator::Css("#confirm"))
        .await
        .expect("confirm button")
        .click()
        .await
        .expect("confirm");
    let flash = text(&client, "#flash").await;
    assert!(flash.starts_with("removed"), "{flash}");
    assert!(text(&client, "#removed")
        .await
        .contains("Removed by an operator"));
    assert!(text(&client, "table#status").await.contains("removed"));

    // The lag dropped by one, and a pull no longer gets it.
    client
        .goto(&format!("{console}/group?name={group}"))
        .await
        .expect("group page");
    assert_eq!(text(&client, "#lag-total").await, "2");
    let pulled = c
        .pull(&broker.addr, group, topic, 0, 0, 32, None, "*")
        .await;
    let keys: Vec<&str> = pulled
        .messages
        .iter()
        .filter_map(|m| m.properties.get("KEYS"))
        .collect();
    assert_eq!(keys, ["order-0", "order-2"]);

    // A POST without the page's token is refused.
    let forged = vostok_tests::http::request(
        broker.console_addr.as_deref().unwrap_or_default(),
        "POST",
        "/topics/delete",
        &[("content-type", "application/x-www-form-urlencoded")],
        &format!("topic={topic}"),
    )
    .await;
    assert_eq!(forged.status, 403, "{}", forged.body);

    // A long body without a space wraps: the remove button stays on the page.
    let wide = "WideTopic";
    assert_eq!(
        c.create_topic(&broker.addr, wide, 1).await.code,
        response_code::SUCCESS
    );
    let props = TestClient::properties(None, Some("wide"));
    c.send(&broker.addr, wide, 0, "W".repeat(4096), props).await;
    c.wait_dispatched(&broker.addr).await;
    client
        .set_window_size(1024, 768)
        .await
        .expect("window size");
    client
        .goto(&format!("{console}/browse?topic={wide}"))
        .await
        .expect("browse page");
    text(&client, "table#messages button").await;
    let fits = client
        .execute(
            "const b = document.querySelector('table#messages button').getBoundingClientRect(); \
             return [b.right, document.documentElement.clientWidth];",
            vec![],
        )
        .await
        .expect("measure the page");
    let (right, width) = (fits[0].as_f64(), fits[1].as_f64());
    assert!(
        matches!((right, width), (Some(r), Some(w)) if r <= w),
        "the remove button ends at {right:?}, the page is {width:?} wide"
    );
    client.close().await.expect("close the session");
}

async fn click(client: &Client, css: &str) {
    // As `text`: the element may belong to the page a click is still loading.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let clicked = match client.find(Locator::Css(css)).await {
            Ok(element) => element.click().await,
            Err(e) => Err(e),
        };
        match clicked {
            Ok(()) => return,
            Err(e) if std::time::Instant::now() >= deadline => panic!("{css}: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

async fn type_into(client: &Client, css: &str, value: &str) {
    text(client, css).await;
    let field = client.find(Locator::Css(css)).await.expect(css);
    field.clear().await.expect("clear");
    field.send_keys(value).await.expect("type");
}

/// Daily operations by clicks and forms: skip a group's accumulated messages
/// (confirming the count), create a group with its settings, resend a dead letter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_offsets_create_a_group_and_resend_a_dead_letter() {
    use vostok_remoting::protocol::header::ConsumerSendMsgBackRequestHeader;
    use vostok_remoting::protocol::request_code;
    use vostok_remoting::RemotingCommand;

    let Some((_driver, client)) = browser().await else {
        return;
    };
    let broker = Broker::start(BrokerOptions::default());
    let console = format!(
        "http://{}",
        broker
            .console_addr
            .clone()
            .expect("console address printed")
    );
    let c = TestClient::default();
    let (topic, group) = ("DailyTopic", "DailyGroup");
    assert_eq!(
        c.create_topic(&broker.addr, topic, 1).await.code,
        response_code::SUCCESS
    );
    for i in 0..3 {
        let props = TestClient::properties(None, Some(&format!("daily-{i}")));
        c.send(&broker.addr, topic, 0, format!("body {i}"), props)
            .await;
    }
    c.wait_dispatched(&broker.addr).await;
    c.update_offset(&broker.addr, group, topic, 0, 0).await;

    // Skip accumulated: from the group page, confirming the count.
    client
        .goto(&format!("{console}/group?name={group}"))
        .await
        .expect("group page");
    assert_eq!(text(&client, "#lag-total").await, "3");
    click(&client, "#reset-offsets").await;
    click(&client, "#skip-accumulated").await;
    assert_eq!(text(&client, "#loss-skipped").await, "3");
    click(&client, "#confirm").await;
    let flash = text(&client, "#flash").await;
    assert!(flash.contains("3 messages skipped"), "{flash}");
    client
        .goto(&format!("{console}/group?name={group}"))
        .await
        .expect("group page");
    assert_eq!(text(&client, "#lag-total").await, "0");

    // Create a group: orderly, two retries.
    client
        .goto(&format!("{console}/groups"))
        .await
        .expect("groups page");
    click(&client, "#create-group").await;
    type_into(&client, "#g-group", "ClickedGroup").await;
    type_into(&client, "#g-retryMaxTimes", "2").await;
    click(&client, "#g-consumeMessageOrderly").await;
    click(&client, "#g-save").await;
    let flash = text(&client, "#flash").await;
    assert!(
        flash.starts_with("group ClickedGroup created: retry 2, orderly"),
        "{flash}"
    );
    let orderly = client
        .find(Locator::Css("#g-consumeMessageOrderly"))
        .await
        .expect("orderly box")
        .is_selected()
        .await
        .expect("checked?");
    assert!(orderly, "the saved group shows orderly ticked");

    // A dead letter, resent from the DLQ page.
    let pulled = c.pull(&broker.addr, group, topic, 0, 0, 1, None, "*").await;
    let m = &pulled.messages[0];
    let back = ConsumerSendMsgBackRequestHeader {
        offset: m.commit_log_offset,
        group: group.into(),
        delay_level: 0,
        origin_msg_id: Some(m.msg_id()),
        origin_topic: Some(m.topic.clone()),
        unit_mode: Some(false),
        max_reconsume_times: Some(0),
    };
    let r = c
        .call(
            &broker.addr,
            RemotingCommand::request_with_header(request_code::CONSUMER_SEND_MSG_BACK, &back),
        )
        .await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    c.wait_dispatched(&broker.addr).await;
    client
        .goto(&format!("{console}/group?name={group}"))
        .await
        .expect("group page");
    click(&client, "#dlq-page").await;
    assert_eq!(text(&client, "#dlq-kept").await, "1");
    client
        .find(Locator::XPath(
            "//table[@id='dlq']//button[text()='Resend']",
        ))
        .await
        .expect("resend button")
        .click()
        .await
        .expect("resend");
    let flash = text(&client, "#flash").await;
    assert!(flash.starts_with(&format!("resent to {topic}")), "{flash}");
    c.wait_dispatched(&broker.addr).await;
    assert_eq!(c.max_offset(&broker.addr, topic, 0).await, 4);
    client.close().await.expect("close the session");
}

/// A test message sent from the console's form, then its page by clicks: the long body
/// wraps inside the page, the consumer's trace shows, and "resend to group" asks
/// first, naming the effect, then the group's consumer receives the message again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_a_message_open_its_page_and_resend_it_to_a_group() {
    use std::sync::Arc;
    use vostok_client::{
        ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, ConsumeFromWhere, ConsumerConfig,
        MessageExt, MessageListener, PushConsumer, TraceConfig,
    };

    let Some((_driver, client)) = browser().await else {
        return;
    };
    let broker = Broker::start(BrokerOptions::default().set("traceTopicEnable", true));
    let console = format!(
        "http://{}",
        broker
            .console_addr
            .clone()
            .expect("console address printed")
    );
    let c = TestClient::default();
    let (topic, group) = ("PageTopic", "PageGroup");
    assert_eq!(
        c.create_topic(&broker.addr, topic, 1).await.code,
        response_code::SUCCESS
    );
    let mut config = ConsumerConfig::new(group, &broker.namesrv);
    config.trace = TraceConfig::enabled();
    config.common.consume_from_where = ConsumeFromWhere::ConsumeFromFirstOffset;
    let consumer = PushConsumer::new(config);
    consumer.subscribe(topic, "*").expect("subscribe");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let tx = Arc::new(tx);
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            for m in msgs {
                let _ = tx.send(String::from_utf8_lossy(&m.body).into_owned());
            }
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer.start().await.expect("consumer starts");

    // Send from the form: one long word, which must wrap rather than widen the page.
    let body = format!("start-{}-end", "x".repeat(3000));
    client
        .goto(&format!("{console}/send?topic={topic}"))
        .await
        .expect("send page");
    type_into(&client, "#s-keys", "page-key").await;
    type_into(&client, "#s-body", &body).await;
    click(&client, "#s-send").await;
    let flash = text(&client, "#flash").await;
    assert!(flash.starts_with("SEND_OK"), "{flash}");
    let wait = vostok_tests::sdk::WAIT;
    let first = tokio::time::timeout(wait, rx.recv())
        .await
        .expect("consumed");
    assert_eq!(first.as_deref(), Some(body.as_str()));

    // Search by key, open the message's page.
    client
        .goto(&format!("{console}/messages?topic={topic}&key=page-key"))
        .await
        .expect("search");
    click(&client, "a.detail").await;
    assert!(text(&client, "#body-kind")
        .await
        .starts_with("text, 2.9 KiB"));
    let shown = text(&client, "#message-body").await;
    assert_eq!(shown.replace(['\n', ' '], ""), body);
    let fits = client
        .execute(
            "const b = document.getElementById('message-body').getBoundingClientRect();\
             return b.right <= window.innerWidth && document.documentElement.scrollWidth <= window.innerWidth;",
            vec![],
        )
        .await
        .expect("measure");
    assert_eq!(
        fits,
        serde_json::Value::Bool(true),
        "the body widens the page"
    );
    // The consumer's trace records arrive within a second or so: reload until shown.
    let deadline = std::time::Instant::now() + wait;
    loop {
        let types = client
            .find_all(Locator::Css("#trace-records .trace-type"))
            .await
            .unwrap_or_default();
        let mut kinds = Vec::new();
        for t in types {
            kinds.push(t.text().await.unwrap_or_default());
        }
        if kinds.iter().any(|k| k == "SubAfter") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no trace: {kinds:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
        client.refresh().await.expect("reload");
    }

    // Resend to the group: the confirmation names the effect, then the consumer runs.
    click(&client, &format!("button.consume[data-group='{group}']")).await;
    let effect = text(&client, "#loss").await;
    assert!(
        effect.starts_with("Resend message ") && effect.contains(&format!("to group {group}")),
        "{effect}"
    );
    assert!(rx.try_recv().is_err(), "delivered before the confirmation");
    click(&client, "#confirm").await;
    let flash = text(&client, "#flash").await;
    assert!(flash.contains("answered CR_SUCCESS"), "{flash}");
    let again = tokio::time::timeout(wait, rx.recv())
        .await
        .expect("consumed again");
    assert_eq!(again.as_deref(), Some(body.as_str()));
    // Back on the message's page.
    assert!(text(&client, "#body-kind").await.starts_with("text"));

    consumer.shutdown().await;
    client.close().await.expect("close the session");
}

/// Forms of the topic and broker pages by clicks: fewer read queues, after a
/// confirmation counting the messages left unread; a run-time key changed from the
/// configuration page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn change_a_topic_and_a_run_time_key_by_forms() {
    let Some((_driver, client)) = browser().await else {
        return;
    };
    let broker = Broker::start(BrokerOptions::default());
    let console = format!(
        "http://{}",
        broker
            .console_addr
            .clone()
            .expect("console address printed")
    );
    let c = TestClient::default();
    let topic = "FormTopic";
    assert_eq!(
        c.create_topic(&broker.addr, topic, 2).await.code,
        response_code::SUCCESS
    );
    for i in 0..3 {
        let props = TestClient::properties(None, Some(&format!("form-{i}")));
        c.send(&broker.addr, topic, 1, format!("body {i}"), props)
            .await;
    }
    c.wait_dispatched(&broker.addr).await;

    client
        .goto(&format!("{console}/topic?name={topic}"))
        .await
        .expect("topic page");
    click(&client, "#edit-topic").await;
    type_into(&client, "#t-read", "1").await;
    click(&client, "#t-save").await;
    assert_eq!(text(&client, "#loss-unread").await, "3");
    click(&client, "#confirm").await;
    let flash = text(&client, "#flash").await;
    assert!(
        flash.starts_with(&format!("topic {topic} now "))
            && flash.ends_with("with 1 read and 2 write queues"),
        "{flash}"
    );
    client
        .goto(&format!("{console}/topic/edit?name={topic}"))
        .await
        .expect("topic form");
    let now = text(&client, "main p").await;
    assert!(now.ends_with("1 read and 2 write queues."), "{now}");

    client
        .goto(&format!("{console}/config"))
        .await
        .expect("configuration page");
    type_into(&client, "#cfg-shortPollingTimeMills", "1500").await;
    click(&client, "#cfg-save").await;
    let flash = text(&client, "#flash").await;
    assert_eq!(flash, "changed at run time: shortPollingTimeMills=1500");
    let value = client
        .find(Locator::Css("#cfg-shortPollingTimeMills"))
        .await
        .expect("the key's field")
        .prop("value")
        .await
        .expect("its value");
    assert_eq!(value.as_deref(), Some("1500"));
    client.close().await.expect("close the session");
}
