//! The console's safety over real HTTP against a real broker
//! (docs/operations.md#console-security): what loses messages asks first and names the
//! loss, and a console listening off loopback with ACL off changes nothing unless
//! `consoleAdminEnable=true`.

use vostok_tests::client::TestClient;
use vostok_tests::{http, Broker, BrokerOptions};

const FORM: (&str, &str) = ("content-type", "application/x-www-form-urlencoded");

/// The form token of a console page.
fn form_token(page: &str) -> String {
    let at = page
        .find("name=\"csrf\" value=\"")
        .expect("a form with its token")
        + "name=\"csrf\" value=\"".len();
    page[at..].split('"').next().unwrap_or_default().to_owned()
}

async fn post(console: &str, path: &str, body: &str) -> http::Answer {
    http::request(console, "POST", path, &[FORM], body).await
}

/// Deleting a topic and removing a message: the first POST shows the loss and changes
/// nothing; the confirmed one does it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destructive_actions_ask_first_and_name_the_loss() {
    let broker = Broker::start(BrokerOptions::default());
    let console = broker.console_addr.clone().expect("console address");
    let client = TestClient::default();
    for topic in ["DoomedTopic", "KeptTopic"] {
        let r = client.create_topic(&broker.addr, topic, 2).await;
        assert_eq!(r.code, 0, "{}", r.remark());
    }
    for i in 0..3 {
        let props = TestClient::properties(None, Some(&format!("doomed-{i}")));
        client
            .send(
                &broker.addr,
                "DoomedTopic",
                i % 2,
                format!("body {i}"),
                props,
            )
            .await;
    }
    let props = TestClient::properties(None, Some("keep-me"));
    client
        .send(&broker.addr, "KeptTopic", 0, "x".repeat(2048), props)
        .await;
    client.wait_dispatched(&broker.addr).await;
    let token = form_token(&http::get(&console, "/topics").await.body);

    // Delete, unconfirmed: the figure, a second form, and the topic still there.
    let ask = post(
        &console,
        "/topics/delete",
        &format!("csrf={token}&topic=DoomedTopic"),
    )
    .await;
    assert_eq!(ask.status, 200, "{}", ask.body);
    assert!(
        ask.body.contains(
            "Delete topic <strong>DoomedTopic</strong>: <strong id=\"loss-messages\">3</strong> messages kept on this broker"
        ),
        "{}",
        ask.body
    );
    assert!(
        ask.body.contains("name=\"confirm\" value=\"yes\""),
        "{}",
        ask.body
    );
    assert!(ask.body.contains(&token), "{}", ask.body);
    let page = http::get(&console, "/topic?name=DoomedTopic").await;
    assert!(page.body.contains("Min offset"), "{}", page.body);
    // Confirmed: gone.
    let done = post(
        &console,
        "/topics/delete",
        &format!("csrf={token}&topic=DoomedTopic&confirm=yes"),
    )
    .await;
    assert_eq!(done.status, 303, "{}", done.body);
    let page = http::get(&console, "/topic?name=DoomedTopic").await;
    assert!(page.body.contains("No topic DoomedTopic"), "{}", page.body);

    // Remove, unconfirmed: the message named with its size, and still delivered.
    let remove = format!(
        "csrf={token}&topic=KeptTopic&queueId=0&queueOffset=0&back=%2Fbrowse%3Ftopic%3DKeptTopic"
    );
    let ask = post(&console, "/messages/remove", &remove).await;
    assert_eq!(ask.status, 200, "{}", ask.body);
    assert!(
        ask.body.contains("keys keep-me, body 2.0 KiB"),
        "{}",
        ask.body
    );
    assert!(
        ask.body.contains("no group will receive it"),
        "{}",
        ask.body
    );
    let status = "/messages?topic=KeptTopic&key=keep-me";
    let page = http::get(&console, status).await;
    assert!(page.body.contains("body 2.0 KiB"), "{}", page.body);
    assert!(!page.body.contains("id=\"removed\""), "{}", page.body);
    let done = post(
        &console,
        "/messages/remove",
        &format!("{remove}&confirm=yes"),
    )
    .await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_eq!(
        done.header("location")
            .map(|l| l.starts_with("/browse?topic=KeptTopic")),
        Some(true)
    );
    let page = http::get(&console, status).await;
    assert!(page.body.contains("id=\"removed\""), "{}", page.body);
}

/// Bound to every address with ACL off, the console shows no action and refuses
/// every POST with the reason; `consoleAdminEnable=true` lets it change things.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exposed_console_without_acl_is_read_only_unless_enabled() {
    let exposed = Broker::start(BrokerOptions::default().set("consoleHost", "0.0.0.0"));
    let console = exposed.console_addr.clone().expect("console address");
    let client = TestClient::default();
    let r = client.create_topic(&exposed.addr, "ShownTopic", 1).await;
    assert_eq!(r.code, 0, "{}", r.remark());
    let topics = http::get(&console, "/topics").await;
    assert_eq!(topics.status, 200, "{}", topics.body);
    assert!(topics.body.contains("ShownTopic"), "{}", topics.body);
    assert!(topics.body.contains("id=\"read-only\""), "{}", topics.body);
    for action in ["/topics/delete", "/topics/create", "method=\"post\""] {
        assert!(!topics.body.contains(action), "{action}: {}", topics.body);
    }
    for (path, body) in [
        ("/topics/create", "topic=Sneaked&queues=1"),
        ("/topics/delete", "topic=ShownTopic&confirm=yes"),
        (
            "/messages/remove",
            "topic=ShownTopic&queueId=0&queueOffset=0&confirm=yes",
        ),
    ] {
        let refused = post(&console, path, body).await;
        assert_eq!(refused.status, 403, "{path}: {}", refused.body);
        assert!(
            refused.body.contains("consoleAdminEnable=true"),
            "{}",
            refused.body
        );
    }
    let page = http::get(&console, "/topic?name=ShownTopic").await;
    assert!(page.body.contains("Min offset"), "{}", page.body);
    let page = http::get(&console, "/topic?name=Sneaked").await;
    assert!(page.body.contains("No topic Sneaked"), "{}", page.body);

    let enabled = Broker::start(
        BrokerOptions::default()
            .set("consoleHost", "0.0.0.0")
            .set("consoleAdminEnable", true),
    );
    let console = enabled.console_addr.clone().expect("console address");
    let topics = http::get(&console, "/topics").await;
    assert!(!topics.body.contains("id=\"read-only\""), "{}", topics.body);
    assert!(topics.body.contains("Create a topic"), "{}", topics.body);
    let token = form_token(&topics.body);
    let created = post(
        &console,
        "/topics/create",
        &format!("csrf={token}&topic=Made&queues=1"),
    )
    .await;
    assert_eq!(created.status, 303, "{}", created.body);
    let page = http::get(&console, "/topic?name=Made").await;
    assert!(page.body.contains("Min offset"), "{}", page.body);
}
