//! POP consumption against real broker processes (issue 18): the SDK's SimpleConsumer
//! receives and acks; an unacked message comes back with a higher delivery attempt,
//! later after a changed invisible time, and in the DLQ after `retryMaxTimes`; FIFO
//! pops block a queue until acked and repeat for the same attempt id; POP and PULL
//! groups each get every message of a topic; a pop is held until a message arrives;
//! the held pops are bounded; and after kill -9 unacked messages come back while acked
//! ones never do.
//!
//! "Never comes back" is checked against an event, not a time: a message that is
//! expected back was popped after (or with) the acked ones, so once it is back the
//! revive service has passed every earlier checkpoint.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use vostok_client::{ConsumeFromWhere, MessageView, SimpleConsumer, SimpleConsumerConfig};
use vostok_remoting::protocol::header::{
    PollingInfoRequestHeader, PollingInfoResponseHeader, PopMessageRequestHeader,
    PopMessageResponseHeader,
};
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::{request_code, response_code, topic};
use vostok_remoting::RemotingCommand;
use vostok_tests::client::TestClient;
use vostok_tests::sdk::{client, WAIT};
use vostok_tests::{Broker, BrokerOptions};

fn broker() -> Broker {
    Broker::start(BrokerOptions::default().set("reviveInterval", 100))
}

/// Sends `bodies` round robin over `queues` queues.
async fn send(broker: &Broker, topic: &str, queues: i32, bodies: &[String]) {
    let c = TestClient::default();
    for (i, body) in bodies.iter().enumerate() {
        c.send(
            &broker.addr,
            topic,
            i as i32 % queues,
            body.clone().into_bytes(),
            TestClient::properties(Some("a"), None),
        )
        .await;
    }
}

fn bodies(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

fn body(v: &MessageView) -> String {
    String::from_utf8_lossy(v.body()).into_owned()
}

async fn consumer(broker: &Broker, group: &str, topic: &str, fifo: bool) -> SimpleConsumer {
    let c = SimpleConsumer::new(SimpleConsumerConfig {
        client: client(&broker.namesrv, group),
        consumer_group: group.to_owned(),
        await_duration: Duration::from_secs(2),
        consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
        fifo,
        ..Default::default()
    });
    c.subscribe(topic, "*").unwrap();
    c.start().await.unwrap();
    c
}

/// Receives until `done` holds for everything received so far (at most [`WAIT`]).
async fn receive_until(
    c: &SimpleConsumer,
    invisible: Duration,
    mut done: impl FnMut(&[MessageView]) -> bool,
) -> Vec<MessageView> {
    let deadline = Instant::now() + WAIT;
    let mut all = Vec::new();
    while !done(&all) {
        assert!(
            Instant::now() < deadline,
            "timed out; received {:?}",
            all.iter().map(body).collect::<Vec<_>>()
        );
        all.extend(c.receive(32, invisible).await.unwrap());
    }
    all
}

#[tokio::test]
async fn received_messages_are_acked_once_and_never_come_back() {
    let broker = broker();
    broker.create_topic("PopAck", 4).await;
    let sent = bodies("a", 40);
    send(&broker, "PopAck", 4, &sent).await;
    let c = consumer(&broker, "pop-ack", "PopAck", false).await;
    let got = receive_until(&c, Duration::from_secs(60), |m| m.len() >= 40).await;
    let distinct: BTreeSet<String> = got.iter().map(body).collect();
    assert_eq!(
        distinct,
        sent.iter().cloned().collect(),
        "each message once"
    );
    assert!(got
        .iter()
        .all(|m| m.delivery_attempt() == 1 && m.topic() == "PopAck"));
    // Half acked one by one, half in batches.
    let (one_by_one, batched) = got.split_at(20);
    for m in one_by_one {
        c.ack(m).await.unwrap();
    }
    c.ack_all(batched).await.unwrap();
    // A marker popped after the acks, left unacked with a short invisible time: once it
    // is back, every earlier checkpoint has been through the revive service.
    send(&broker, "PopAck", 4, &["marker".to_owned()]).await;
    let marker = receive_until(&c, Duration::from_secs(1), |m| !m.is_empty()).await;
    assert_eq!(body(&marker[0]), "marker");
    let back = receive_until(&c, Duration::from_secs(60), |m| {
        m.iter().any(|v| body(v) == "marker")
    })
    .await;
    assert!(
        back.iter().all(|v| body(v) == "marker"),
        "an acked message came back: {:?}",
        back.iter().map(body).collect::<Vec<_>>()
    );
    assert_eq!(back[0].delivery_attempt(), 2);
    c.shutdown().await;
}

#[tokio::test]
async fn an_unacked_message_comes_back_and_a_changed_invisible_time_holds_it() {
    let broker = broker();
    broker.create_topic("PopLapse", 1).await;
    send(&broker, "PopLapse", 1, &bodies("l", 2)).await;
    let c = consumer(&broker, "pop-lapse", "PopLapse", false).await;
    let mut first = receive_until(&c, Duration::from_secs(3), |m| m.len() >= 2).await;
    first.sort_by_key(body);
    let (mut held, _lapsing) = (first[0].clone(), first[1].clone());
    c.change_invisible_duration(&mut held, Duration::from_secs(120))
        .await
        .unwrap();
    // l-1 comes back (attempt 2) while l-0, held for two minutes, does not.
    let back = receive_until(&c, Duration::from_secs(60), |m| {
        m.iter().any(|v| body(v) == "l-1")
    })
    .await;
    assert!(back.iter().all(|v| body(v) == "l-1"), "l-0 came back early");
    let again = back.iter().find(|v| body(v) == "l-1").unwrap();
    assert_eq!(again.delivery_attempt(), 2);
    assert!(again.message().properties.get("1ST_POP_TIME").is_some());
    c.ack(again).await.unwrap();
    // The new handle acks the held message.
    c.ack(&held).await.unwrap();
    c.shutdown().await;
}

#[tokio::test]
async fn a_message_reconsumed_retry_max_times_goes_to_the_dlq() {
    let broker = broker();
    broker.create_topic("PopDlq", 1).await;
    let admin = TestClient::default();
    let group = "pop-dlq";
    let config = serde_json::json!({ "groupName": group, "retryMaxTimes": 1 });
    let response = admin
        .call(
            &broker.addr,
            RemotingCommand::request(request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
                .with_body(serde_json::to_vec(&config).unwrap()),
        )
        .await;
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{}",
        response.remark()
    );
    send(&broker, "PopDlq", 1, &["doomed".to_owned()]).await;
    let c = consumer(&broker, group, "PopDlq", false).await;
    // Delivered twice (reconsume 0, then 1 = retryMaxTimes), never acked.
    let seen = receive_until(&c, Duration::from_millis(500), |m| m.len() >= 2).await;
    let attempts: Vec<i32> = seen.iter().map(MessageView::delivery_attempt).collect();
    assert_eq!(attempts, vec![1, 2]);
    let dlq = topic::dlq_topic(group);
    let deadline = Instant::now() + WAIT;
    while admin.max_offset(&broker.addr, &dlq, 0).await < 1 {
        assert!(Instant::now() < deadline, "the message did not reach {dlq}");
        assert!(
            c.receive(32, Duration::from_millis(500))
                .await
                .unwrap()
                .is_empty(),
            "delivered a third time"
        );
    }
    let dead = admin.drain(&broker.addr, "dlq-reader", &dlq, 0, 0).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].body.as_ref(), b"doomed");
    assert_eq!(dead[0].reconsume_times, 2);
    c.shutdown().await;
}

/// A raw FIFO POP_MESSAGE of one queue.
async fn fifo_pop(client: &TestClient, addr: &str, attempt: &str) -> (i32, Vec<MessageExt>) {
    let header = PopMessageRequestHeader {
        consumer_group: "pop-fifo".into(),
        topic: "PopFifo".into(),
        queue_id: 0,
        max_msg_nums: 2,
        invisible_time: 60_000,
        poll_time: 0,
        born_time: None,
        init_mode: Some(0),
        order: Some(true),
        attempt_id: Some(attempt.to_owned()),
        ..Default::default()
    };
    let response = client
        .call(
            addr,
            RemotingCommand::request_with_header(request_code::POP_MESSAGE, &header),
        )
        .await;
    if response.code == response_code::SUCCESS {
        let reply: PopMessageResponseHeader = response.decode_header().unwrap();
        assert_eq!(reply.revive_qid, 999);
    }
    (response.code, MessageExt::decode_all(&response.body))
}

#[tokio::test]
async fn fifo_pops_block_the_queue_until_acked_and_repeat_for_the_same_attempt() {
    let broker = broker();
    broker.create_topic("PopFifo", 1).await;
    send(&broker, "PopFifo", 1, &bodies("f", 4)).await;
    let raw = TestClient::default();
    // A send is answered before its message is dispatched to the queue.
    let deadline = Instant::now() + WAIT;
    while raw.max_offset(&broker.addr, "PopFifo", 0).await < 4 {
        assert!(Instant::now() < deadline, "messages not dispatched");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (code, first) = fifo_pop(&raw, &broker.addr, "a1").await;
    assert_eq!(code, response_code::SUCCESS);
    assert_eq!(
        first.iter().map(|m| m.queue_offset).collect::<Vec<_>>(),
        vec![0, 1]
    );
    // Another attempt is blocked; the same attempt gets the same messages.
    assert_eq!(
        fifo_pop(&raw, &broker.addr, "a2").await.0,
        response_code::POLLING_TIMEOUT
    );
    let (_, repeat) = fifo_pop(&raw, &broker.addr, "a1").await;
    assert_eq!(
        repeat.iter().map(|m| m.queue_offset).collect::<Vec<_>>(),
        vec![0, 1]
    );

    // Through the SDK: a FIFO consumer of the same group gets nothing while that batch
    // is unacked and invisible, then the rest in order once it is acked.
    let c = consumer(&broker, "pop-fifo", "PopFifo", true).await;
    assert!(c
        .receive(2, Duration::from_secs(60))
        .await
        .unwrap()
        .is_empty());
    ack_raw_fifo(&raw, &broker.addr, &repeat).await;
    let next = receive_until(&c, Duration::from_secs(60), |m| !m.is_empty()).await;
    assert_eq!(
        next.iter().map(body).collect::<Vec<_>>(),
        vec!["f-2", "f-3"]
    );
    assert!(next.iter().all(|m| m.delivery_attempt() == 1));
    c.ack_all(&next).await.unwrap();
    c.shutdown().await;
}

/// Acks a raw FIFO batch: the handle is rebuilt from a fresh same-attempt pop, whose
/// pop time is the batch's.
async fn ack_raw_fifo(raw: &TestClient, addr: &str, batch: &[MessageExt]) {
    let header = PopMessageRequestHeader {
        consumer_group: "pop-fifo".into(),
        topic: "PopFifo".into(),
        queue_id: 0,
        max_msg_nums: 2,
        invisible_time: 60_000,
        poll_time: 0,
        init_mode: Some(0),
        order: Some(true),
        attempt_id: Some("a1".into()),
        ..Default::default()
    };
    let response = raw
        .call(
            addr,
            RemotingCommand::request_with_header(request_code::POP_MESSAGE, &header),
        )
        .await;
    let reply: PopMessageResponseHeader = response.decode_header().unwrap();
    for m in batch {
        let ack = vostok_remoting::protocol::header::AckMessageRequestHeader {
            consumer_group: "pop-fifo".into(),
            topic: "PopFifo".into(),
            queue_id: 0,
            extra_info: format!(
                "0 {} 60000 999 0 broker-a 0 {}",
                reply.pop_time, m.queue_offset
            ),
            offset: m.queue_offset,
            broker_name: None,
        };
        let r = raw
            .call(
                addr,
                RemotingCommand::request_with_header(request_code::ACK_MESSAGE, &ack),
            )
            .await;
        assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    }
}

#[tokio::test]
async fn pop_and_pull_groups_each_get_every_message() {
    let broker = broker();
    broker.create_topic("PopPull", 2).await;
    let sent = bodies("p", 30);
    send(&broker, "PopPull", 2, &sent).await;
    let c = consumer(&broker, "pop-side", "PopPull", false).await;
    let popped = receive_until(&c, Duration::from_secs(60), |m| m.len() >= 30).await;
    c.ack_all(&popped).await.unwrap();
    let raw = TestClient::default();
    let mut pulled = Vec::new();
    for q in 0..2 {
        pulled.extend(raw.drain(&broker.addr, "pull-side", "PopPull", q, 0).await);
    }
    let want: BTreeSet<String> = sent.into_iter().collect();
    let popped: BTreeSet<String> = popped.iter().map(body).collect();
    let pulled: BTreeSet<String> = pulled
        .iter()
        .map(|m| String::from_utf8_lossy(&m.body).into_owned())
        .collect();
    assert_eq!(popped, want);
    assert_eq!(pulled, want);
    c.shutdown().await;
}

async fn polling_num(raw: &TestClient, broker: &Broker, group: &str, topic: &str) -> i32 {
    let header = PollingInfoRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id: -1,
        broker_name: None,
    };
    let r = raw
        .call(
            &broker.addr,
            RemotingCommand::request_with_header(request_code::POLLING_INFO, &header),
        )
        .await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    r.decode_header::<PollingInfoResponseHeader>()
        .unwrap()
        .polling_num
}

#[tokio::test]
async fn a_pop_is_held_until_a_message_arrives_and_held_pops_are_bounded() {
    let broker = Broker::start(
        BrokerOptions::default()
            .set("reviveInterval", 100)
            .set("popPollingSize", 1),
    );
    broker.create_topic("PopHold", 2).await;
    let raw = TestClient::default();
    let c = SimpleConsumer::new(SimpleConsumerConfig {
        client: client(&broker.namesrv, "pop-hold"),
        consumer_group: "pop-hold".into(),
        await_duration: Duration::from_secs(25),
        consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
        ..Default::default()
    });
    c.subscribe("PopHold", "*").unwrap();
    c.start().await.unwrap();
    let waiting = {
        let c = c.clone();
        tokio::spawn(async move { c.receive(1, Duration::from_secs(60)).await })
    };
    let deadline = Instant::now() + WAIT;
    while polling_num(&raw, &broker, "pop-hold", "PopHold").await != 1 {
        assert!(Instant::now() < deadline, "the pop was not held");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // popPollingSize = 1: a second pop of the same key is refused at once.
    let header = PopMessageRequestHeader {
        consumer_group: "pop-hold".into(),
        topic: "PopHold".into(),
        queue_id: -1,
        max_msg_nums: 1,
        invisible_time: 60_000,
        poll_time: 20_000,
        init_mode: Some(0),
        ..Default::default()
    };
    let full = raw
        .call(
            &broker.addr,
            RemotingCommand::request_with_header(request_code::POP_MESSAGE, &header),
        )
        .await;
    assert_eq!(full.code, response_code::POLLING_FULL);
    send(&broker, "PopHold", 2, &["wake".to_owned()]).await;
    let got = tokio::time::timeout(WAIT, waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(got.iter().map(body).collect::<Vec<_>>(), vec!["wake"]);
    c.shutdown().await;
}

#[tokio::test]
async fn after_kill_9_unacked_messages_come_back_and_acked_ones_never_do() {
    let broker = broker();
    broker.create_topic("PopCrash", 2).await;
    let sent = bodies("k", 20);
    send(&broker, "PopCrash", 2, &sent).await;
    let c = consumer(&broker, "pop-crash", "PopCrash", false).await;
    let got = receive_until(&c, Duration::from_secs(5), |m| m.len() >= 20).await;
    let mut acked = BTreeSet::new();
    let mut unacked = BTreeSet::new();
    for (i, m) in got.iter().enumerate() {
        if i % 2 == 0 {
            c.ack(m).await.unwrap();
            acked.insert(body(m));
        } else {
            unacked.insert(body(m));
        }
    }
    c.shutdown().await;
    let broker = broker.restart(true);
    let c = consumer(&broker, "pop-crash", "PopCrash", false).await;
    let mut back: BTreeMap<String, i32> = BTreeMap::new();
    let deadline = Instant::now() + WAIT;
    while !unacked.iter().all(|b| back.contains_key(b)) {
        assert!(
            Instant::now() < deadline,
            "not back: {:?}",
            unacked
                .iter()
                .filter(|b| !back.contains_key(*b))
                .collect::<Vec<_>>()
        );
        for m in c.receive(32, Duration::from_secs(60)).await.unwrap() {
            assert!(!acked.contains(&body(&m)), "acked {} came back", body(&m));
            back.insert(body(&m), m.delivery_attempt());
            c.ack(&m).await.unwrap();
        }
    }
    assert!(back.values().all(|a| *a == 2), "{back:?}");
    c.shutdown().await;
}
