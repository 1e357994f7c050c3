//! The console's daily operations over real HTTP against a real broker
//! (docs/operations.md#console): reset a group's offsets (to a time with its zone, or
//! skip accumulated), create, edit and delete a subscription group, change a topic's
//! permission and queue counts, send a test message. Every form carries the page's
//! token; what changes delivery asks first, naming the count.

use vostok_remoting::protocol::{request_code, response_code};
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

/// A form body: `k=v&...`, percent-encoded.
fn body(fields: &[(&str, &str)]) -> String {
    fields
        .iter()
        .map(|(k, v)| {
            let v: String = v
                .bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                        (b as char).to_string()
                    }
                    _ => format!("%{b:02X}"),
                })
                .collect();
            format!("{k}={v}")
        })
        .collect::<Vec<_>>()
        .join("&")
}

async fn post(console: &str, path: &str, fields: &[(&str, &str)]) -> http::Answer {
    http::request(console, "POST", path, &[FORM], &body(fields)).await
}

/// The text between `id="{id}">` and the next `<`.
fn by_id<'a>(page: &'a str, id: &str) -> &'a str {
    let mark = format!("id=\"{id}\">");
    let at = page
        .find(&mark)
        .unwrap_or_else(|| panic!("no #{id} in {page}"))
        + mark.len();
    page[at..].split('<').next().unwrap_or_default()
}

/// The flash a redirect carries, decoded.
fn flash(answer: &http::Answer) -> String {
    let location = answer.header("location").unwrap_or_default();
    let raw = location.split("flash=").nth(1).unwrap_or_default();
    let bytes = raw.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("20");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b' '));
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Skip accumulated and reset to a time: each asks first with the counts per queue,
/// changes nothing until confirmed, then commits the offsets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_are_reset_by_time_or_to_the_end_after_a_confirmation() {
    let broker = Broker::start(BrokerOptions::default());
    let console = broker.console_addr.clone().expect("console address");
    let c = TestClient::default();
    let (topic, group) = ("ResetTopic", "ResetGroup");
    assert_eq!(c.create_topic(&broker.addr, topic, 2).await.code, 0);
    for i in 0..5 {
        let props = TestClient::properties(None, Some(&format!("k{i}")));
        c.send(&broker.addr, topic, i % 2, format!("m{i}"), props)
            .await;
    }
    c.wait_dispatched(&broker.addr).await;
    c.update_offset(&broker.addr, group, topic, 0, 1).await;
    c.update_offset(&broker.addr, group, topic, 1, 0).await;

    let page = http::get(&console, &format!("/offsets?group={group}")).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("id=\"skip-accumulated\""),
        "{}",
        page.body
    );
    assert!(page.body.contains("value=\"ResetTopic\""), "{}", page.body);
    let token = form_token(&page.body);
    let skip = [
        ("csrf", token.as_str()),
        ("group", group),
        ("topic", topic),
        ("mode", "end"),
    ];
    let ask = post(&console, "/offsets/reset", &skip).await;
    assert_eq!(ask.status, 200, "{}", ask.body);
    assert_eq!(by_id(&ask.body, "loss-skipped"), "4", "{}", ask.body);
    assert_eq!(by_id(&ask.body, "loss-replayed"), "0");
    assert!(ask.body.contains("id=\"reset-plan\""), "{}", ask.body);
    assert!(ask.body.contains("name=\"confirm\" value=\"yes\""));
    assert_eq!(
        c.query_offset(&broker.addr, group, topic, 0).await,
        Some(1),
        "asking changed nothing"
    );
    let mut confirmed = skip.to_vec();
    confirmed.push(("confirm", "yes"));
    let done = post(&console, "/offsets/reset", &confirmed).await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert!(
        flash(&done).contains("4 messages skipped"),
        "{}",
        flash(&done)
    );
    assert_eq!(c.query_offset(&broker.addr, group, topic, 0).await, Some(3));
    assert_eq!(c.query_offset(&broker.addr, group, topic, 1).await, Some(2));

    // Back to a time before everything, written in another zone: all 5 again.
    let to_time = [
        ("csrf", token.as_str()),
        ("group", group),
        ("topic", topic),
        ("mode", "time"),
        ("time", "2001-02-03T04:05:06"),
        ("zone", "UTC+05:30"),
    ];
    let ask = post(&console, "/offsets/reset", &to_time).await;
    assert_eq!(by_id(&ask.body, "loss-replayed"), "5", "{}", ask.body);
    assert!(ask.body.contains("2001-02-0"), "{}", ask.body);
    let mut confirmed = to_time.to_vec();
    confirmed.push(("confirm", "yes"));
    let done = post(&console, "/offsets/reset", &confirmed).await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_eq!(c.query_offset(&broker.addr, group, topic, 0).await, Some(0));
    let lag = http::get(&console, &format!("/group?name={group}")).await;
    assert_eq!(by_id(&lag.body, "lag-total"), "5", "{}", lag.body);

    // A time that cannot be read changes nothing and says why.
    let mut bad = to_time.to_vec();
    bad[5] = ("zone", "Mars/Olympus");
    bad.push(("confirm", "yes"));
    let refused = post(&console, "/offsets/reset", &bad).await;
    assert!(flash(&refused).starts_with("error"), "{}", flash(&refused));
}

/// GET_SUBSCRIPTIONGROUP_CONFIG of EditedGroup, as JSON, or `None`.
async fn group_config(c: &TestClient, addr: &str) -> Option<serde_json::Value> {
    let r = c
        .call(
            addr,
            vostok_tests::acl::request(
                request_code::GET_SUBSCRIPTIONGROUP_CONFIG,
                &[("group", "EditedGroup")],
            ),
        )
        .await;
    (r.code == response_code::SUCCESS)
        .then(|| serde_json::from_slice::<serde_json::Value>(&r.body).expect("json"))
}

/// A group is created with its settings, edited, and deleted (asking first); the
/// broker's own answer to GET_SUBSCRIPTIONGROUP_CONFIG follows each step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_group_is_created_edited_and_deleted() {
    let broker = Broker::start(BrokerOptions::default());
    let console = broker.console_addr.clone().expect("console address");
    let c = TestClient::default();
    assert!(group_config(&c, &broker.addr).await.is_none());
    let groups = http::get(&console, "/groups").await;
    assert!(
        groups.body.contains("id=\"create-group\""),
        "{}",
        groups.body
    );
    let form = http::get(&console, "/subscription").await;
    assert!(form.body.contains("id=\"g-group\""), "{}", form.body);
    let token = form_token(&form.body);
    let created = post(
        &console,
        "/groups/update",
        &[
            ("csrf", &token),
            ("group", "EditedGroup"),
            ("retryMaxTimes", "3"),
            ("consumeMessageOrderly", "true"),
            ("consumeEnable", "true"),
        ],
    )
    .await;
    assert_eq!(created.status, 303, "{}", created.body);
    assert!(
        flash(&created).starts_with("group EditedGroup created"),
        "{}",
        flash(&created)
    );
    let kept = group_config(&c, &broker.addr).await.expect("created");
    assert_eq!(kept["retryMaxTimes"], 3);
    assert_eq!(kept["consumeMessageOrderly"], true);
    assert_eq!(kept["consumeBroadcastEnable"], false);
    assert_eq!(kept["consumeEnable"], true);

    // Edit: consuming off (an unticked box is not sent).
    let edited = post(
        &console,
        "/groups/update",
        &[
            ("csrf", &token),
            ("group", "EditedGroup"),
            ("retryMaxTimes", "5"),
            ("consumeBroadcastEnable", "true"),
        ],
    )
    .await;
    assert_eq!(edited.status, 303, "{}", edited.body);
    let kept = group_config(&c, &broker.addr).await.expect("kept");
    assert_eq!(kept["retryMaxTimes"], 5);
    assert_eq!(kept["consumeEnable"], false);
    let page = http::get(&console, "/subscription?name=EditedGroup").await;
    assert!(
        page.body
            .contains("id=\"g-consumeBroadcastEnable\" value=\"true\" checked"),
        "{}",
        page.body
    );
    let bad = post(
        &console,
        "/groups/update",
        &[
            ("csrf", &token),
            ("group", "EditedGroup"),
            ("retryMaxTimes", "many"),
        ],
    )
    .await;
    assert!(flash(&bad).starts_with("error"), "{}", flash(&bad));

    // Delete: it names the offsets dropped, then does it.
    c.update_offset(&broker.addr, "EditedGroup", "%RETRY%EditedGroup", 0, 0)
        .await;
    assert_eq!(c.create_topic(&broker.addr, "GroupTopic", 2).await.code, 0);
    c.update_offset(&broker.addr, "EditedGroup", "GroupTopic", 0, 0)
        .await;
    c.update_offset(&broker.addr, "EditedGroup", "GroupTopic", 1, 0)
        .await;
    let delete = [("csrf", token.as_str()), ("group", "EditedGroup")];
    let ask = post(&console, "/groups/delete", &delete).await;
    assert_eq!(ask.status, 200, "{}", ask.body);
    assert!(by_id(&ask.body, "loss-queues").parse::<i32>().unwrap_or(0) >= 2);
    assert!(ask.body.contains("GroupTopic"), "{}", ask.body);
    assert!(group_config(&c, &broker.addr).await.is_some());
    let done = post(
        &console,
        "/groups/delete",
        &[delete[0], delete[1], ("confirm", "yes")],
    )
    .await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert!(group_config(&c, &broker.addr).await.is_none());
    assert_eq!(
        c.query_offset(&broker.addr, "EditedGroup", "GroupTopic", 0)
            .await,
        None,
        "its offsets went with it"
    );
}

/// A topic made read-only with fewer read queues: the confirmation names the refused
/// sends and the messages left unread; after it, sends are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_permission_and_queue_counts_change_after_a_confirmation() {
    let broker = Broker::start(BrokerOptions::default());
    let console = broker.console_addr.clone().expect("console address");
    let c = TestClient::default();
    let topic = "PermTopic";
    assert_eq!(c.create_topic(&broker.addr, topic, 4).await.code, 0);
    for q in [2, 3, 3] {
        c.send(
            &broker.addr,
            topic,
            q,
            "x",
            TestClient::properties(None, None),
        )
        .await;
    }
    c.wait_dispatched(&broker.addr).await;
    let page = http::get(&console, &format!("/topic?name={topic}")).await;
    assert!(page.body.contains("id=\"edit-topic\""), "{}", page.body);
    let form = http::get(&console, &format!("/topic/edit?name={topic}")).await;
    assert!(form.body.contains("id=\"t-perm\""), "{}", form.body);
    let token = form_token(&form.body);
    let change = [
        ("csrf", token.as_str()),
        ("topic", topic),
        ("perm", "4"),
        ("readQueueNums", "2"),
        ("writeQueueNums", "2"),
    ];
    let ask = post(&console, "/topics/update", &change).await;
    assert_eq!(ask.status, 200, "{}", ask.body);
    assert!(
        ask.body
            .contains("permission RW → R: every send to it is refused"),
        "{}",
        ask.body
    );
    assert_eq!(by_id(&ask.body, "loss-unread"), "3", "{}", ask.body);
    // Asking changed nothing: a send still goes through.
    c.send(
        &broker.addr,
        topic,
        0,
        "x",
        TestClient::properties(None, None),
    )
    .await;
    let mut confirmed = change.to_vec();
    confirmed.push(("confirm", "yes"));
    let done = post(&console, "/topics/update", &confirmed).await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert!(
        flash(&done).contains("now R with 2 read and 2 write queues"),
        "{}",
        flash(&done)
    );
    let r = c
        .send_raw(
            &broker.addr,
            topic,
            0,
            "x",
            TestClient::properties(None, None),
        )
        .await;
    assert_eq!(r.code, response_code::NO_PERMISSION, "{}", r.remark());
    let topics = http::get(&console, "/topics").await;
    assert!(topics.body.contains("<td>2/2</td>"), "{}", topics.body);
}

/// A test message is stored as a send: the answer names its id, queue and offset,
/// and a search by its key finds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_message_is_sent_and_found() {
    let broker = Broker::start(BrokerOptions::default());
    let console = broker.console_addr.clone().expect("console address");
    let c = TestClient::default();
    assert_eq!(c.create_topic(&broker.addr, "SendTopic", 1).await.code, 0);
    let form = http::get(&console, "/send?topic=SendTopic").await;
    assert!(form.body.contains("id=\"s-body\""), "{}", form.body);
    let token = form_token(&form.body);
    let sent = post(
        &console,
        "/messages/send",
        &[
            ("csrf", &token),
            ("topic", "SendTopic"),
            ("tag", "TagA"),
            ("keys", "console-key"),
            ("body", "hello from the console"),
        ],
    )
    .await;
    assert_eq!(sent.status, 303, "{}", sent.body);
    let said = flash(&sent);
    assert!(
        said.starts_with("SEND_OK: sent to SendTopic, msgId ")
            && said.ends_with("queue 0, offset 0"),
        "{said}"
    );
    c.wait_dispatched(&broker.addr).await;
    let found = http::get(&console, "/messages?topic=SendTopic&key=console-key").await;
    assert!(found.body.contains("tags TagA"), "{}", found.body);
    let pulled = c
        .pull(&broker.addr, "SendGroup", "SendTopic", 0, 0, 8, None, "*")
        .await;
    assert_eq!(pulled.messages.len(), 1);
    assert_eq!(&pulled.messages[0].body[..], b"hello from the console");

    let nowhere = post(
        &console,
        "/messages/send",
        &[("csrf", &token), ("topic", "NoSuchTopic"), ("body", "x")],
    )
    .await;
    assert!(
        flash(&nowhere).starts_with("error: no topic NoSuchTopic"),
        "{}",
        flash(&nowhere)
    );
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

/// Signs in; the session cookie (`name=token`) and the page's form token.
async fn sign_in(console: &str, access_key: &str, secret: &str) -> String {
    let token = form_token(&http::get(console, "/login").await.body);
    let answer = post(
        console,
        "/login",
        &[
            ("csrf", &token),
            ("accessKey", access_key),
            ("secretKey", secret),
            ("next", "/topics"),
        ],
    )
    .await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    let cookie = answer.header("set-cookie").expect("a session cookie");
    cookie.split(';').next().unwrap_or_default().to_owned()
}

/// With ACL on, each new action is the account's own request: a reader sees no form
/// and is refused if it posts anyway; an account that may publish to a topic sends a
/// test message to it and nothing else. Off loopback with ACL off, all are refused.
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

/// Dead letters: listed with the topic each came from, exported as JSON lines (a
/// binary body in hex), resent one by one and all at once to that topic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_are_listed_exported_and_resent() {
    use vostok_remoting::protocol::header::ConsumerSendMsgBackRequestHeader;
    use vostok_remoting::RemotingCommand;

    let broker = Broker::start(BrokerOptions::default());
    let console = broker.console_addr.clone().expect("console address");
    let c = TestClient::default();
    let (topic, group) = ("DlqTopic", "DlqGroup");
    assert_eq!(c.create_topic(&broker.addr, topic, 1).await.code, 0);
    c.send(
        &broker.addr,
        topic,
        0,
        "dead text",
        TestClient::properties(None, Some("dead-1")),
    )
    .await;
    c.send(
        &broker.addr,
        topic,
        0,
        vec![0u8, 159, 146, 150],
        TestClient::properties(None, Some("dead-2")),
    )
    .await;
    c.wait_dispatched(&broker.addr).await;
    let pulled = c.pull(&broker.addr, group, topic, 0, 0, 8, None, "*").await;
    assert_eq!(pulled.messages.len(), 2);
    for m in &pulled.messages {
        let header = ConsumerSendMsgBackRequestHeader {
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
                RemotingCommand::request_with_header(request_code::CONSUMER_SEND_MSG_BACK, &header),
            )
            .await;
        assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    }
    c.wait_dispatched(&broker.addr).await;

    let page = http::get(&console, &format!("/dlq?group={group}")).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(by_id(&page.body, "dlq-kept"), "2", "{}", page.body);
    assert!(page.body.contains("<td>DlqTopic</td>"), "{}", page.body);
    let group_page = http::get(&console, &format!("/group?name={group}")).await;
    assert!(
        group_page.body.contains("id=\"dlq-page\""),
        "{}",
        group_page.body
    );

    let export = http::get(&console, &format!("/dlq/export?group={group}")).await;
    assert_eq!(export.status, 200);
    assert!(
        export
            .header("content-disposition")
            .unwrap_or_default()
            .contains("attachment"),
        "{:?}",
        export.header("content-disposition")
    );
    let lines: Vec<serde_json::Value> = export
        .body
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 2, "{}", export.body);
    assert_eq!(lines[0]["originalTopic"], "DlqTopic");
    assert_eq!(lines[0]["body"], "dead text");
    assert_eq!(lines[1]["bodyHex"], "009f9296");
    assert_eq!(lines[1]["keys"], "dead-2");

    // Resend one, then all: each a copy in the original topic.
    let token = form_token(&page.body);
    let id = lines[0]["offsetMsgId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let back = format!("/dlq?group={group}");
    let one = post(
        &console,
        "/messages/resend",
        &[
            ("csrf", &token),
            ("group", group),
            ("msgId", &id),
            ("back", &back),
        ],
    )
    .await;
    assert_eq!(one.status, 303, "{}", one.body);
    assert!(
        flash(&one).starts_with("resent to DlqTopic"),
        "{}",
        flash(&one)
    );
    c.wait_dispatched(&broker.addr).await;
    assert_eq!(c.max_offset(&broker.addr, topic, 0).await, 3);
    let all = post(
        &console,
        "/dlq/resend-all",
        &[("csrf", &token), ("group", group)],
    )
    .await;
    assert_eq!(all.status, 303, "{}", all.body);
    assert_eq!(flash(&all), "resent 2 of 2 dead letters of DlqGroup");
    c.wait_dispatched(&broker.addr).await;
    assert_eq!(c.max_offset(&broker.addr, topic, 0).await, 5);
    let page = http::get(&console, &format!("/dlq?group={group}")).await;
    assert_eq!(by_id(&page.body, "dlq-kept"), "2", "the dead letters stay");
}

/// Every key with its value; the run-time keys change from the form, all or none, and
/// the broker acts on them at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_time_keys_change_from_the_configuration_page() {
    let broker = Broker::start(BrokerOptions::default());
    let console = broker.console_addr.clone().expect("console address");
    let c = TestClient::default();
    assert_eq!(c.create_topic(&broker.addr, "CfgTopic", 1).await.code, 0);
    let page = http::get(&console, "/config").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body
            .contains("id=\"cfg-brokerPermission\" value=\"6\""),
        "{}",
        page.body
    );
    assert!(page.body.contains("<td>listenPort</td>"), "{}", page.body);
    assert!(
        !page.body.contains("id=\"cfg-listenPort\""),
        "{}",
        page.body
    );
    let token = form_token(&page.body);
    let bad = post(
        &console,
        "/config/update",
        &[
            ("csrf", &token),
            ("brokerPermission", "4"),
            ("longPollingEnable", "maybe"),
            ("confirm", "yes"),
        ],
    )
    .await;
    assert!(flash(&bad).starts_with("error"), "{}", flash(&bad));
    let page = http::get(&console, "/config").await;
    assert!(
        page.body
            .contains("id=\"cfg-brokerPermission\" value=\"6\""),
        "all or none"
    );
    // Taking write away asks first, naming what stops.
    let asked = post(
        &console,
        "/config/update",
        &[
            ("csrf", &token),
            ("brokerPermission", "4"),
            ("listenPort", "1"),
        ],
    )
    .await;
    assert_eq!(asked.status, 200, "{}", asked.body);
    assert_eq!(
        by_id(&asked.body, "loss-sends"),
        "every send to this broker is refused"
    );
    let page = http::get(&console, "/config").await;
    assert!(
        page.body
            .contains("id=\"cfg-brokerPermission\" value=\"6\""),
        "nothing changes before the confirmation"
    );
    let done = post(
        &console,
        "/config/update",
        &[
            ("csrf", &token),
            ("brokerPermission", "4"),
            ("listenPort", "1"),
            ("confirm", "yes"),
        ],
    )
    .await;
    assert_eq!(flash(&done), "changed at run time: brokerPermission=4");
    let r = c
        .send_raw(
            &broker.addr,
            "CfgTopic",
            0,
            "x",
            TestClient::properties(None, None),
        )
        .await;
    assert_ne!(
        r.code,
        response_code::SUCCESS,
        "a read-only broker takes no send"
    );
}

/// Producer groups with each connection's client id, address, language and version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producer_connections_are_listed() {
    let broker = Broker::start(BrokerOptions::default());
    let console = broker.console_addr.clone().expect("console address");
    let c = TestClient::new("console-producer");
    let r = c.heartbeat_producer(&broker.addr, "ConsoleProducers").await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    let page = http::get(&console, "/producers").await;
    assert_eq!(page.status, 200, "{}", page.body);
    let row = page
        .body
        .split("<tr>")
        .find(|r| r.contains("<td>ConsoleProducers</td>"))
        .unwrap_or_else(|| panic!("no row: {}", page.body));
    assert!(row.contains(&c.client_id), "{row}");
    assert!(row.contains("<td>127.0.0.1:"), "{row}");
    assert!(row.contains("<td>RUST</td>"), "{row}");
    let other = http::get(&console, "/producers?group=Nobody").await;
    assert!(other.body.contains("id=\"no-producers\""), "{}", other.body);
}

/// A message's page: its body (text escaped, binary in hex), every property, the
/// trace its traced producer and consumer recorded, and "resend to group X", which
/// asks first naming the effect, then hands the message to the group's online
/// consumer (CONSUME_MESSAGE_DIRECTLY), whose listener runs on it once more. The same
/// request over remoting does the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_page_shows_body_properties_trace_and_resends_to_a_group() {
    use std::sync::Arc;
    use vostok_client::{
        ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, ConsumeFromWhere, ConsumerConfig,
        Message, MessageExt, MessageListener, Producer, ProducerConfig, PushConsumer, TraceConfig,
    };
    use vostok_remoting::protocol::header::ConsumeMessageDirectlyResultRequestHeader;
    use vostok_remoting::RemotingCommand;

    let broker = Broker::start(BrokerOptions::default().set("traceTopicEnable", true));
    let console = broker.console_addr.clone().expect("console address");
    let c = TestClient::default();
    let (topic, group) = ("DetailTopic", "DetailGroup");
    assert_eq!(c.create_topic(&broker.addr, topic, 1).await.code, 0);

    let mut config = ProducerConfig::new("DetailPG", &broker.namesrv);
    config.trace = TraceConfig::enabled();
    let producer = Producer::new(config);
    producer.start().await.expect("producer starts");
    let text = format!("<b>detail</b> {}", "long-word-".repeat(200));
    let sent = producer
        .send(
            Message::new(topic, text.clone())
                .with_tags("TagD")
                .with_keys(["detail-key"]),
        )
        .await
        .expect("sent");

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
    let wait = vostok_tests::sdk::WAIT;
    let first = tokio::time::timeout(wait, rx.recv())
        .await
        .expect("consumed");
    assert_eq!(first.as_deref(), Some(text.as_str()));

    // The page by the message's unique id, once the trace records are stored.
    let path = format!("/message?topic={topic}&id={}", sent.msg_id);
    let deadline = std::time::Instant::now() + wait;
    let page = loop {
        let page = http::get(&console, &path).await.body;
        if page.contains(">Pub<") && page.contains(">SubAfter<") {
            break page;
        }
        assert!(std::time::Instant::now() < deadline, "no trace: {page}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert!(by_id(&page, "body-kind").starts_with("text, 2."), "{page}");
    let shown = by_id(&page, "message-body");
    assert!(
        shown.starts_with("&lt;b&gt;detail&lt;/b&gt; long-word-"),
        "{shown}"
    );
    assert!(
        page.contains("<td>KEYS</td><td>detail-key</td>")
            && page.contains("<td>TAGS</td><td>TagD</td>")
            && page.contains(&format!("<td>{}</td>", sent.offset_msg_id)),
        "{page}"
    );
    let pub_row = page
        .split("<tr>")
        .find(|r| r.contains(">Pub<"))
        .expect("a Pub row");
    assert!(
        pub_row.contains("<td>DetailPG</td>") && pub_row.contains("<td>success</td>"),
        "{pub_row}"
    );
    let sub_row = page
        .split("<tr>")
        .find(|r| r.contains(">SubAfter<"))
        .expect("a SubAfter row");
    assert!(sub_row.contains("<td>success</td>"), "{sub_row}");
    assert!(page.contains(&format!("Resend to group {group}")), "{page}");
    let token = form_token(&page);
    let resend = [
        ("csrf", token.as_str()),
        ("topic", topic),
        ("msgId", sent.offset_msg_id.as_str()),
        ("group", group),
        ("back", path.as_str()),
    ];

    // First the effect, named; nothing is delivered until confirmed.
    let asked = post(&console, "/messages/consume", &resend).await;
    assert_eq!(asked.status, 200, "{}", asked.body);
    let effect = by_id(&asked.body, "loss");
    assert!(effect.starts_with("Resend message "), "{}", asked.body);
    assert!(asked
        .body
        .contains("the group's offsets, retries and dead letters do not change"));
    assert!(rx.try_recv().is_err(), "delivered before the confirmation");
    let mut confirmed = resend.to_vec();
    confirmed.push(("confirm", "yes"));
    let done = post(&console, "/messages/consume", &confirmed).await;
    assert_eq!(done.status, 303, "{}", done.body);
    let said = flash(&done);
    assert!(
        said.starts_with(&format!("group {group}'s consumer "))
            && said.contains("answered CR_SUCCESS in "),
        "{said}"
    );
    let again = tokio::time::timeout(wait, rx.recv())
        .await
        .expect("consumed again");
    assert_eq!(again.as_deref(), Some(text.as_str()));

    // The remoting request an admin tool sends.
    let header = ConsumeMessageDirectlyResultRequestHeader {
        consumer_group: group.into(),
        client_id: None,
        msg_id: Some(sent.offset_msg_id.clone()),
        broker_name: None,
        topic: Some(topic.into()),
    };
    let r = c
        .call(
            &broker.addr,
            RemotingCommand::request_with_header(request_code::CONSUME_MESSAGE_DIRECTLY, &header),
        )
        .await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    let answer: serde_json::Value = serde_json::from_slice(&r.body).expect("JSON");
    assert_eq!(answer["consumeResult"], "CR_SUCCESS", "{answer}");
    let third = tokio::time::timeout(wait, rx.recv())
        .await
        .expect("consumed a third time");
    assert_eq!(third.as_deref(), Some(text.as_str()));

    // Nobody online in a group: said, nothing sent.
    let mut nobody = confirmed.clone();
    nobody[3] = ("group", "NobodyGroup");
    let refused = post(&console, "/messages/consume", &nobody).await;
    assert_eq!(
        flash(&refused),
        "error: no consumer of group NobodyGroup is online here"
    );

    // A binary body is shown in hex.
    let props = TestClient::properties(None, Some("binary-key"));
    c.send(&broker.addr, topic, 0, vec![0u8, 1, 2, 0xff, 0x10], props)
        .await;
    c.wait_dispatched(&broker.addr).await;
    let found = http::get(&console, &format!("/messages?topic={topic}&key=binary-key")).await;
    let link = found
        .body
        .split("href=\"")
        .find(|s| s.starts_with("/message?"))
        .and_then(|s| s.split('"').next())
        .expect("a link to the message page")
        .replace("&amp;", "&");
    let binary = http::get(&console, &link).await;
    assert!(
        by_id(&binary.body, "body-kind").starts_with("binary, in hex, 5 B"),
        "{}",
        binary.body
    );
    assert_eq!(by_id(&binary.body, "message-body"), "000102ff 10");

    consumer.shutdown().await;
    producer.shutdown().await;
}
