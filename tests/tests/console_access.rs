//! With ACL on, each console page and action is the account's own request
//! (docs/operations.md#console-security): a read-only account sees no button and is
//! refused when it posts anyway; off loopback with ACL off, the console is read-only.

use vostok_tests::client::TestClient;
use vostok_tests::console::{body, by_id, flash, form_token, post, sign_in, FORM};
use vostok_tests::{http, Broker, BrokerOptions};

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
  - accessKey: console-sender
    secretKey: sender-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - SendableTopic=PUB|SUB
  - accessKey: console-admin
    secretKey: admin-secret
    admin: true
"#;

/// With ACL on, each new action is the account's own request: a reader sees no form
/// and is refused if it posts anyway; an account that may publish to a topic sends a
/// test message to it (its topic page links the form) and nothing else. Off loopback with ACL off, all are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_action_needs_the_rights_of_its_own_request() {
    let home = vostok_tests::acl::home(ACL);
    let broker = Broker::start(
        BrokerOptions::default()
            .set("aclEnable", true)
            .set("rocketmqHome", home.path().display()),
    );
    let console = broker.console_addr.clone().expect("console address");
    let admin = TestClient {
        remoting: vostok_tests::acl::signed_client("console-admin", "admin-secret"),
        client_id: "127.0.0.1@console-admin".into(),
    };
    for topic in ["ReadableTopic", "SendableTopic"] {
        let r = admin.create_topic(&broker.addr, topic, 1).await;
        assert_eq!(r.code, 0, "{}", r.remark());
    }
    let as_ = |cookie: &str, path: &str, fields: Vec<(&str, &str)>| {
        let (console, cookie, path) = (console.clone(), cookie.to_owned(), path.to_owned());
        let fields = body(&fields);
        async move {
            http::request(
                &console,
                "POST",
                &path,
                &[("cookie", &cookie), FORM],
                &fields,
            )
            .await
        }
    };
    // A message of a readable topic, and an online consumer of a readable group.
    let stored = admin
        .send(
            &broker.addr,
            "ReadableTopic",
            0,
            "readable",
            TestClient::properties(None, Some("readable-key")),
        )
        .await;
    let offset_id = stored.msg_id.clone();
    let r = admin
        .heartbeat_consumer(&broker.addr, "ReadableGroup", "ReadableTopic", "*")
        .await;
    assert_eq!(r.code, 0, "{}", r.remark());
    admin.wait_dispatched(&broker.addr).await;
    let message_page = format!("/message?topic=ReadableTopic&id={offset_id}");
    let as_admin = sign_in(&console, "console-admin", "admin-secret").await;
    let page = http::request(&console, "GET", &message_page, &[("cookie", &as_admin)], "").await;
    assert!(
        page.body.contains("Resend to group ReadableGroup"),
        "{}",
        page.body
    );

    let reader = sign_in(&console, "console-reader", "reader-secret").await;
    let page = http::request(&console, "GET", &message_page, &[("cookie", &reader)], "").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(by_id(&page.body, "message-body").starts_with("readable"));
    assert!(!page.body.contains("Resend to group"), "{}", page.body);
    assert!(page.body.contains("id=\"trace-refused\""), "{}", page.body);
    let page = http::request(
        &console,
        "GET",
        "/offsets?group=ReadableGroup",
        &[("cookie", &reader)],
        "",
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(!page.body.contains("skip-accumulated"), "{}", page.body);
    let token = form_token(&page.body);
    for (path, fields) in [
        (
            "/offsets/reset",
            vec![
                ("group", "ReadableGroup"),
                ("topic", "ReadableTopic"),
                ("mode", "end"),
            ],
        ),
        (
            "/groups/update",
            vec![("group", "ReadableGroup"), ("retryMaxTimes", "1")],
        ),
        ("/groups/delete", vec![("group", "ReadableGroup")]),
        (
            "/topics/update",
            vec![
                ("topic", "ReadableTopic"),
                ("perm", "0"),
                ("readQueueNums", "1"),
                ("writeQueueNums", "1"),
            ],
        ),
        (
            "/messages/send",
            vec![("topic", "ReadableTopic"), ("body", "x")],
        ),
        (
            "/messages/consume",
            vec![
                ("topic", "ReadableTopic"),
                ("msgId", offset_id.as_str()),
                ("group", "ReadableGroup"),
                ("confirm", "yes"),
            ],
        ),
        (
            "/messages/remove",
            vec![
                ("topic", "ReadableTopic"),
                ("queueId", "0"),
                ("queueOffset", "0"),
                ("confirm", "yes"),
            ],
        ),
        (
            "/messages/resend",
            vec![("group", "ReadableGroup"), ("msgId", offset_id.as_str())],
        ),
        ("/dlq/resend-all", vec![("group", "ReadableGroup")]),
        (
            "/config/update",
            vec![("key", "brokerPermission"), ("value", "4")],
        ),
        ("/topics/create", vec![("topic", "ReaderTopic")]),
        (
            "/topics/delete",
            vec![("topic", "ReadableTopic"), ("confirm", "yes")],
        ),
    ] {
        let mut fields = fields;
        fields.push(("csrf", &token));
        let refused = as_(&reader, path, fields).await;
        assert_eq!(refused.status, 403, "{path}: {}", refused.body);
    }
    let page = http::request(
        &console,
        "GET",
        "/topic/edit?name=ReadableTopic",
        &[("cookie", &reader)],
        "",
    )
    .await;
    assert!(!page.body.contains("t-perm"), "{}", page.body);

    let sender = sign_in(&console, "console-sender", "sender-secret").await;
    // The topic's page offers a test message to whoever may publish to it.
    let page = http::request(
        &console,
        "GET",
        "/topic?name=SendableTopic",
        &[("cookie", &sender)],
        "",
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body
            .contains("href=\"/send?topic=SendableTopic\" id=\"send-test\""),
        "{}",
        page.body
    );
    assert!(!page.body.contains("id=\"edit-topic\""), "{}", page.body);
    let page = http::request(
        &console,
        "GET",
        "/topic?name=ReadableTopic",
        &[("cookie", &reader)],
        "",
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(!page.body.contains("id=\"send-test\""), "{}", page.body);
    let form = http::request(
        &console,
        "GET",
        "/send?topic=SendableTopic",
        &[("cookie", &sender)],
        "",
    )
    .await;
    assert!(form.body.contains("id=\"s-body\""), "{}", form.body);
    let sent = as_(
        &sender,
        "/messages/send",
        vec![("csrf", &token), ("topic", "SendableTopic"), ("body", "x")],
    )
    .await;
    assert_eq!(sent.status, 303, "{}", sent.body);
    assert!(flash(&sent).starts_with("SEND_OK"), "{}", flash(&sent));
    let elsewhere = as_(
        &sender,
        "/messages/send",
        vec![("csrf", &token), ("topic", "ReadableTopic"), ("body", "x")],
    )
    .await;
    assert_eq!(elsewhere.status, 403, "{}", elsewhere.body);
    let reset = as_(
        &sender,
        "/offsets/reset",
        vec![
            ("csrf", &token),
            ("group", "g"),
            ("topic", "SendableTopic"),
            ("mode", "end"),
        ],
    )
    .await;
    assert_eq!(reset.status, 403, "{}", reset.body);

    let exposed = Broker::start(BrokerOptions::default().set("consoleHost", "0.0.0.0"));
    let console = exposed.console_addr.clone().expect("console address");
    let page = http::get(&console, "/offsets?group=G").await;
    assert!(!page.body.contains("skip-accumulated"), "{}", page.body);
    // A message with a consumer online: its page shows no resend button.
    let anyone = TestClient::default();
    assert_eq!(anyone.create_topic(&exposed.addr, "T", 1).await.code, 0);
    let stored = anyone
        .send(
            &exposed.addr,
            "T",
            0,
            "x",
            TestClient::properties(None, None),
        )
        .await;
    let r = anyone
        .heartbeat_consumer(&exposed.addr, "G", "T", "*")
        .await;
    assert_eq!(r.code, 0, "{}", r.remark());
    anyone.wait_dispatched(&exposed.addr).await;
    let page = http::get(&console, &format!("/message?topic=T&id={}", stored.msg_id)).await;
    assert!(
        page.body.contains("id=\"message-body\">x<"),
        "{}",
        page.body
    );
    assert!(page.body.contains("id=\"read-only\""), "{}", page.body);
    assert!(!page.body.contains("Resend to group"), "{}", page.body);
    for path in [
        "/offsets/reset",
        "/groups/update",
        "/groups/delete",
        "/topics/update",
        "/messages/send",
        "/messages/consume",
        "/messages/remove",
        "/messages/resend",
        "/dlq/resend-all",
        "/config/update",
        "/topics/create",
        "/topics/delete",
    ] {
        let refused = post(
            &console,
            path,
            &[("group", "G"), ("topic", "T"), ("confirm", "yes")],
        )
        .await;
        assert_eq!(refused.status, 403, "{path}: {}", refused.body);
        assert!(
            refused.body.contains("consoleAdminEnable=true"),
            "{}",
            refused.body
        );
    }
}
