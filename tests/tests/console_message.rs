//! The console's message pages over real HTTP against a real broker
//! (docs/operations.md#console): a group's dead letters listed, exported and resent;
//! one message's page with its body, properties and trace, and "resend to group".

use vostok_remoting::protocol::{request_code, response_code};
use vostok_tests::client::TestClient;
use vostok_tests::console::{by_id, flash, form_token, post};
use vostok_tests::{http, Broker, BrokerOptions};

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
