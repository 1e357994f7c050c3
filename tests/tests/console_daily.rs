//! The console's daily operations over real HTTP against a real broker
//! (docs/operations.md#console): reset a group's offsets (to a time with its zone, or
//! skip accumulated), create, edit and delete a subscription group, change a topic's
//! permission and queue counts, send a test message. Every form carries the page's
//! token; what changes delivery asks first, naming the count.

use vostok_remoting::protocol::{request_code, response_code};
use vostok_tests::client::TestClient;
use vostok_tests::console::{by_id, flash, form_token, post};
use vostok_tests::{http, Broker, BrokerOptions};

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
