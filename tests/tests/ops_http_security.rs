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

/// The form token of a console page.
fn form_token(page: &str) -> String {
    let at = page
        .find("name=\"csrf\" value=\"")
        .expect("a form with its token")
        + "name=\"csrf\" value=\"".len();
    page[at..].split('"').next().unwrap_or_default().to_owned()
}

const FORM: (&str, &str) = ("content-type", "application/x-www-form-urlencoded");

/// A web page rebinding its own name to 127.0.0.1 posts the console's form with the
/// token it read through the same trick: refused, as is a request from an opaque
/// origin, and nothing is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rebound_and_opaque_origin_requests_are_refused() {
    let broker = Broker::start(BrokerOptions::default());
    let console = broker.console_addr.clone().expect("console address");
    let token = form_token(&http::get(&console, "/topics").await.body);
    let create = format!("csrf={token}&topic=RebindTopic&queues=4");
    let rebound = http::request(
        &console,
        "POST",
        "/topics/create",
        &[
            ("host", "evil.example:8082"),
            ("origin", "http://evil.example:8082"),
            FORM,
        ],
        &create,
    )
    .await;
    assert_eq!(rebound.status, 403, "{}", rebound.body);
    assert!(rebound.body.contains("evil.example"), "{}", rebound.body);
    let read = http::request(
        &console,
        "GET",
        "/topics",
        &[("host", "evil.example:8082")],
        "",
    )
    .await;
    assert_eq!(read.status, 403, "{}", read.body);
    let opaque = http::request(
        &console,
        "POST",
        "/topics/create",
        &[("origin", "null"), FORM],
        &create,
    )
    .await;
    assert_eq!(opaque.status, 403, "{}", opaque.body);
    let page = http::get(&console, "/topic?name=RebindTopic").await;
    assert!(page.body.contains("No topic RebindTopic"), "{}", page.body);
    // The console's own page, by address or by localhost, still works.
    let port = console.rsplit(':').next().unwrap_or_default();
    let local = http::request(
        &console,
        "POST",
        "/topics/create",
        &[("host", &format!("localhost:{port}")), FORM],
        &create,
    )
    .await;
    assert_eq!(local.status, 303, "{}", local.body);
}

const ACL: &str = r#"
accounts:
  - accessKey: console-reader
    secretKey: reader-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - ReadableTopic=SUB
    groupPerms:
      - ReadableGroup=SUB
  - accessKey: console-admin
    secretKey: admin-secret
    admin: true
"#;

/// Signs in; the session cookie (`name=token`).
async fn sign_in(console: &str, access_key: &str, secret: &str) -> Result<String, http::Answer> {
    let token = form_token(&http::get(console, "/login").await.body);
    let answer = http::request(
        console,
        "POST",
        "/login",
        &[FORM],
        &format!("csrf={token}&accessKey={access_key}&secretKey={secret}&next=%2Ftopics"),
    )
    .await;
    if answer.status != 303 {
        return Err(answer);
    }
    assert_eq!(answer.header("location"), Some("/topics"));
    let cookie = answer.header("set-cookie").expect("a session cookie");
    for part in ["HttpOnly", "SameSite=Strict", "Max-Age="] {
        assert!(cookie.contains(part), "{cookie}");
    }
    Ok(cookie.split(';').next().unwrap_or_default().to_owned())
}

async fn get_as(console: &str, cookie: &str, path: &str) -> http::Answer {
    http::request(console, "GET", path, &[("cookie", cookie)], "").await
}

/// With ACL on, the console needs a sign-in with an ACL account, and each page and
/// form is allowed as that account's own request would be.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_acl_on_the_console_needs_an_account_with_the_rights() {
    let home = vostok_tests::acl::home(ACL);
    let broker = Broker::start(
        BrokerOptions::default()
            .set("aclEnable", true)
            .set("rocketmqHome", home.path().display()),
    );
    let console = broker.console_addr.clone().expect("console address");
    let admin = vostok_tests::client::TestClient {
        remoting: vostok_tests::acl::signed_client("console-admin", "admin-secret"),
        client_id: "127.0.0.1@console-admin".into(),
    };
    for topic in ["ReadableTopic", "HiddenTopic"] {
        let r = admin.create_topic(&broker.addr, topic, 1).await;
        assert_eq!(r.code, 0, "{}", r.remark());
    }

    // Nobody signed in: to the sign-in page, and no form goes through.
    let anonymous = http::get(&console, "/topics").await;
    assert_eq!(anonymous.status, 303);
    assert_eq!(anonymous.header("location"), Some("/login?next=%2Ftopics"));
    let token = form_token(&http::get(&console, "/login").await.body);
    let forged = http::request(
        &console,
        "POST",
        "/topics/create",
        &[FORM],
        &format!("csrf={token}&topic=Created&queues=1"),
    )
    .await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    let wrong = sign_in(&console, "console-reader", "not-the-secret")
        .await
        .expect_err("a wrong secret is refused");
    assert_eq!(wrong.status, 403);
    assert!(wrong.body.contains("wrong access key or secret key"));
    assert!(!wrong.body.contains("not-the-secret"));

    // A reader sees what it may read, and nothing else.
    let reader = sign_in(&console, "console-reader", "reader-secret")
        .await
        .expect("the reader signs in");
    let topics = get_as(&console, &reader, "/topics").await;
    assert_eq!(topics.status, 200, "{}", topics.body);
    assert!(topics.body.contains("ReadableTopic"), "{}", topics.body);
    assert!(!topics.body.contains("HiddenTopic"), "{}", topics.body);
    assert!(!topics.body.contains("Create a topic"));
    assert!(!topics.body.contains("/topics/delete"), "{}", topics.body);
    assert_eq!(
        get_as(&console, &reader, "/topic?name=ReadableTopic")
            .await
            .status,
        200
    );
    for refused in [
        "/topic?name=HiddenTopic",
        "/messages?topic=HiddenTopic&key=k",
        "/browse?topic=HiddenTopic",
        "/group?name=OtherGroup",
        "/clients",
        "/",
    ] {
        let page = get_as(&console, &reader, refused).await;
        assert_eq!(page.status, 403, "{refused}: {}", page.body);
        assert!(
            page.body.contains("console-reader"),
            "{refused}: {}",
            page.body
        );
    }
    let token = form_token(&topics.body);
    let create = |cookie: &str| {
        let cookie = cookie.to_owned();
        let console = console.clone();
        let body = format!("csrf={token}&topic=Created&queues=1");
        async move {
            http::request(
                &console,
                "POST",
                "/topics/create",
                &[("cookie", &cookie), FORM],
                &body,
            )
            .await
        }
    };
    let refused = create(&reader).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(
        refused.body.contains("needs an admin account"),
        "{}",
        refused.body
    );
    // Nor does it get a confirmation page for a delete: refused before that.
    let delete = http::request(
        &console,
        "POST",
        "/topics/delete",
        &[("cookie", &reader), FORM],
        &format!("csrf={token}&topic=ReadableTopic"),
    )
    .await;
    assert_eq!(delete.status, 403, "{}", delete.body);

    // An admin may change things.
    let admin_cookie = sign_in(&console, "console-admin", "admin-secret")
        .await
        .expect("the admin signs in");
    let created = create(&admin_cookie).await;
    assert_eq!(created.status, 303, "{}", created.body);
    let page = get_as(&console, &admin_cookie, "/topic?name=Created").await;
    assert!(page.body.contains("Min offset"), "{}", page.body);

    // A new secret for the admin account ends its session (the file is reloaded
    // within seconds).
    std::fs::write(
        home.path().join("conf/plain_acl.yml"),
        ACL.replace("admin-secret", "rotated-secret"),
    )
    .expect("rewrite plain_acl.yml");
    let rotated = std::time::Instant::now();
    while get_as(&console, &admin_cookie, "/topics").await.status != 303 {
        assert!(
            rotated.elapsed() < std::time::Duration::from_secs(30),
            "the session outlived its secret"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }

    // Signing out ends the session.
    let out = http::request(
        &console,
        "POST",
        "/logout",
        &[("cookie", &reader), FORM],
        &format!("csrf={token}"),
    )
    .await;
    assert_eq!(out.status, 303);
    assert_eq!(get_as(&console, &reader, "/topics").await.status, 303);
}

/// With `metricsBearerToken`, a scrape without the token (or with another) gets 401;
/// the token stays out of the printed configuration.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_need_the_bearer_token_when_one_is_set() {
    let broker = Broker::start(
        BrokerOptions::default()
            .set("metricsExporterType", "PROM")
            .set("metricsPromExporterPort", 0)
            .set("metricsBearerToken", "scrape-t0ken-42"),
    );
    let metrics = broker.metrics_addr.clone().expect("metrics address");
    let bare = http::get(&metrics, "/metrics").await;
    assert_eq!(bare.status, 401, "{}", bare.body);
    assert!(bare
        .header("www-authenticate")
        .is_some_and(|v| v.starts_with("Bearer")));
    let wrong = http::request(
        &metrics,
        "GET",
        "/metrics",
        &[("authorization", "Bearer another")],
        "",
    )
    .await;
    assert_eq!(wrong.status, 401);
    let scrape = http::request(
        &metrics,
        "GET",
        "/metrics",
        &[("authorization", "Bearer scrape-t0ken-42")],
        "",
    )
    .await;
    assert_eq!(scrape.status, 200);
    assert!(scrape.body.contains("rocketmq_"), "{}", scrape.body);
    assert!(!broker.process.log().contains("scrape-t0ken-42"));
}
