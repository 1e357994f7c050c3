//! Retry topics, dead letters, delay levels, timer messages and transactions against a
//! real broker process, with a client on the remoting layer.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use vostok_remoting::protocol::header::{
    CheckTransactionStateRequestHeader, ConsumerSendMsgBackRequestHeader,
    EndTransactionRequestHeader, QueryMessageRequestHeader,
};
use vostok_remoting::protocol::message::id::decode_offset_msg_id;
use vostok_remoting::protocol::message::property::{self, push_pair};
use vostok_remoting::protocol::message::{sysflag, MessageExt};
use vostok_remoting::protocol::{request_code, response_code, topic};
use vostok_remoting::support::time::now_millis;
use vostok_remoting::{BoxFuture, Channel, RemotingCommand, RequestProcessor};
use vostok_tests::client::TestClient;
use vostok_tests::{Broker, BrokerOptions};

/// Every delay level 1 s, so retries come quickly.
const FAST_LEVELS: &str = "1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s";

async fn send_back(client: &TestClient, addr: &str, msg: &MessageExt, group: &str, max: i32) {
    let header = ConsumerSendMsgBackRequestHeader {
        offset: msg.commit_log_offset,
        group: group.into(),
        delay_level: 0,
        origin_msg_id: Some(msg.msg_id()),
        origin_topic: Some(msg.topic.clone()),
        unit_mode: Some(false),
        max_reconsume_times: Some(max),
    };
    let response = client
        .call(
            addr,
            RemotingCommand::request_with_header(request_code::CONSUMER_SEND_MSG_BACK, &header),
        )
        .await;
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{}",
        response.remark()
    );
}

/// Long-polls a queue until one message arrives beyond `offset`.
async fn next_message(
    client: &TestClient,
    addr: &str,
    group: &str,
    topic: &str,
    queue: i32,
    offset: i64,
) -> MessageExt {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut offset = offset;
    loop {
        assert!(
            Instant::now() < deadline,
            "no message on {topic} queue {queue} beyond offset {offset} in time"
        );
        let pulled = client
            .pull(
                addr,
                group,
                topic,
                queue,
                offset,
                1,
                Some(Duration::from_secs(5)),
                "*",
            )
            .await;
        match pulled.code {
            response_code::SUCCESS => {
                return pulled.messages.into_iter().next().expect("a message")
            }
            response_code::PULL_NOT_FOUND
            | response_code::PULL_RETRY_IMMEDIATELY
            | response_code::PULL_OFFSET_MOVED => {
                if let Some(h) = pulled.header {
                    offset = h.next_begin_offset;
                }
            }
            other => panic!("pull of {topic} failed with {other}"),
        }
    }
}

async fn query_by_key(client: &TestClient, addr: &str, topic: &str, key: &str) -> Vec<MessageExt> {
    let header = QueryMessageRequestHeader {
        topic: topic.into(),
        key: key.into(),
        max_num: 32,
        begin_timestamp: 0,
        end_timestamp: i64::MAX,
        unique_key_query: Some(true),
    };
    let response = client
        .call(
            addr,
            RemotingCommand::request_with_header(request_code::QUERY_MESSAGE, &header),
        )
        .await;
    if response.code != response_code::SUCCESS {
        return Vec::new();
    }
    MessageExt::decode_all(&response.body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sent_back_three_times_is_delivered_four_times_then_dead_lettered() {
    let broker = Broker::start(BrokerOptions::default().set("messageDelayLevel", FAST_LEVELS));
    let client = TestClient::default();
    let group = "retry-group";
    assert_eq!(
        client
            .heartbeat_consumer(&broker.addr, group, "RetryTopic", "*")
            .await
            .code,
        response_code::SUCCESS
    );
    client.create_topic(&broker.addr, "RetryTopic", 1).await;
    let sent = client
        .send(
            &broker.addr,
            "RetryTopic",
            0,
            "fragile",
            TestClient::properties(Some("T"), None),
        )
        .await;
    let uniq = sent.transaction_id.expect("UNIQ_KEY in the response");

    let retry = topic::retry_topic(group);
    let mut delivered = vec![next_message(&client, &broker.addr, group, "RetryTopic", 0, 0).await];
    let mut retry_offset = 0;
    for _ in 0..3 {
        let last = delivered.last().unwrap().clone();
        send_back(&client, &broker.addr, &last, group, 3).await;
        let started = Instant::now();
        let msg = next_message(&client, &broker.addr, group, &retry, 0, retry_offset).await;
        assert!(
            started.elapsed() >= Duration::from_millis(800),
            "retry waited for its delay level"
        );
        retry_offset = msg.queue_offset + 1;
        delivered.push(msg);
    }
    let counts: Vec<i32> = delivered.iter().map(|m| m.reconsume_times).collect();
    assert_eq!(
        counts,
        [0, 1, 2, 3],
        "four deliveries with increasing reconsume count"
    );
    let first_offset_id = delivered[0].offset_msg_id();
    for msg in &delivered[1..] {
        assert_eq!(msg.property(property::RETRY_TOPIC), Some("RetryTopic"));
        assert_eq!(msg.msg_id(), uniq, "the user-visible id is kept");
        assert_eq!(&msg.body[..], b"fragile");
        assert_eq!(
            msg.property(property::ORIGIN_MESSAGE_ID),
            Some(first_offset_id.as_str()),
            "the first delivery's offset id, kept through retries"
        );
    }

    // The fourth failure exhausts maxReconsumeTimes = 3: the DLQ, not another retry.
    send_back(&client, &broker.addr, delivered.last().unwrap(), group, 3).await;
    let dlq = topic::dlq_topic(group);
    let deadline = Instant::now() + Duration::from_secs(10);
    let dead = loop {
        let found = query_by_key(&client, &broker.addr, &dlq, &uniq).await;
        if let Some(msg) = found.into_iter().find(|m| m.topic == dlq) {
            break msg;
        }
        assert!(Instant::now() < deadline, "message did not reach the DLQ");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(dead.reconsume_times, 4);
    assert_eq!(&dead.body[..], b"fragile");
    assert_eq!(client.max_offset(&broker.addr, &dlq, 0).await, 1);
    // DLQ topics are readable, as RocketMQ 4.9+ creates them: the dead letter can be
    // pulled to inspect it.
    let pulled = client
        .pull(&broker.addr, group, &dlq, 0, 0, 1, None, "*")
        .await;
    assert_eq!(pulled.code, response_code::SUCCESS);
    // And no fifth delivery through the retry topic.
    let pulled = client
        .pull(
            &broker.addr,
            group,
            &retry,
            0,
            retry_offset,
            1,
            Some(Duration::from_secs(2)),
            "*",
        )
        .await;
    assert_eq!(pulled.code, response_code::PULL_NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delay_level_two_arrives_after_five_seconds_not_before() {
    let broker = Broker::start(BrokerOptions::default());
    let client = TestClient::default();
    client.create_topic(&broker.addr, "DelayTopic", 1).await;
    let mut props = TestClient::properties(None, None);
    push_pair(&mut props, property::DELAY_TIME_LEVEL, "2");
    let sent_at = Instant::now();
    client
        .send(&broker.addr, "DelayTopic", 0, "later", props)
        .await;
    let msg = next_message(&client, &broker.addr, "dg", "DelayTopic", 0, 0).await;
    let waited = sent_at.elapsed();
    assert!(
        waited >= Duration::from_millis(4900),
        "arrived after {waited:?}"
    );
    assert!(
        waited < Duration::from_millis(7000),
        "arrived after {waited:?}"
    );
    assert_eq!(&msg.body[..], b"later");
    assert_eq!(
        msg.property(property::DELAY_TIME_LEVEL),
        None,
        "DELAY removed on delivery"
    );
    assert_eq!(msg.property(property::REAL_TOPIC), Some("DelayTopic"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timer_messages_arrive_on_time_across_a_restart() {
    let broker = Broker::start(BrokerOptions::default());
    let client = TestClient::default();
    client.create_topic(&broker.addr, "TimerTopic", 1).await;

    // Three seconds ahead, no restart.
    let at = now_millis() + 3000;
    let mut props = TestClient::properties(None, None);
    push_pair(&mut props, property::TIMER_DELIVER_MS, &at.to_string());
    client
        .send(&broker.addr, "TimerTopic", 0, "on-time", props)
        .await;
    let msg = next_message(&client, &broker.addr, "tg", "TimerTopic", 0, 0).await;
    let arrived = now_millis();
    assert!(arrived >= at - 50, "{} ms early", at - arrived);
    assert!(arrived <= at + 1000, "{} ms late", arrived - at);
    assert_eq!(&msg.body[..], b"on-time");

    // Three seconds ahead with a kill -9 and restart in between.
    let at = now_millis() + 3000;
    let mut props = TestClient::properties(None, None);
    push_pair(&mut props, property::TIMER_DELAY_SEC, "3");
    client
        .send(&broker.addr, "TimerTopic", 0, "survivor", props)
        .await;
    let broker = broker.restart(true);
    let client = TestClient::default();
    let msg = next_message(&client, &broker.addr, "tg", "TimerTopic", 0, 1).await;
    let arrived = now_millis();
    assert!(arrived >= at - 1050, "{} ms early", at - arrived);
    assert!(arrived <= at + 1000, "{} ms late", arrived - at);
    assert_eq!(&msg.body[..], b"survivor");
    // Delivered exactly once, also after another restart.
    let broker = broker.restart(false);
    let client = TestClient::default();
    assert_eq!(
        client
            .drain(&broker.addr, "tg2", "TimerTopic", 0, 0)
            .await
            .len(),
        2
    );
}

/// Answers CHECK_TRANSACTION_STATE with a fixed outcome and reports each check.
struct Checker {
    outcome: i32,
    group: String,
    checks: mpsc::UnboundedSender<CheckTransactionStateRequestHeader>,
}

impl RequestProcessor for Checker {
    fn process<'a>(
        &'a self,
        channel: &'a Channel,
        request: RemotingCommand,
    ) -> BoxFuture<'a, Option<RemotingCommand>> {
        Box::pin(async move {
            if request.code != request_code::CHECK_TRANSACTION_STATE {
                return Some(vostok_remoting::processor::not_supported(&request));
            }
            let header: CheckTransactionStateRequestHeader = request.decode_header().ok()?;
            let msg = MessageExt::decode(&request.body, false).ok()?;
            assert_eq!(msg.topic, "TxTopic", "the check carries the real topic");
            let end = EndTransactionRequestHeader {
                producer_group: self.group.clone(),
                tran_state_table_offset: header.tran_state_table_offset,
                commit_log_offset: header.commit_log_offset,
                commit_or_rollback: self.outcome,
                from_transaction_check: Some(true),
                msg_id: header.msg_id.clone().unwrap_or_default(),
                transaction_id: header.transaction_id.clone(),
                topic: None,
            };
            let _ = self.checks.send(header);
            let _ = channel
                .invoke_oneway(
                    RemotingCommand::request_with_header(request_code::END_TRANSACTION, &end),
                    Duration::from_secs(3),
                )
                .await;
            None
        })
    }
}

async fn send_half(client: &TestClient, addr: &str, group: &str, body: &str) -> (i64, i64, String) {
    send_half_with(client, addr, group, body, now_millis(), None).await
}

async fn send_half_with(
    client: &TestClient,
    addr: &str,
    group: &str,
    body: &str,
    born: i64,
    immunity_secs: Option<i64>,
) -> (i64, i64, String) {
    let mut props = TestClient::properties(None, None);
    push_pair(&mut props, property::TRANSACTION_PREPARED, "true");
    push_pair(&mut props, property::PRODUCER_GROUP, group);
    if let Some(secs) = immunity_secs {
        push_pair(
            &mut props,
            property::CHECK_IMMUNITY_TIME_IN_SECONDS,
            &secs.to_string(),
        );
    }
    let header = vostok_remoting::protocol::header::SendMessageRequestHeaderV2 {
        a: group.into(),
        b: "TxTopic".into(),
        c: "TBW102".into(),
        d: 1,
        e: 0,
        f: sysflag::TRANSACTION_PREPARED_TYPE,
        g: born,
        i: Some(props),
        ..Default::default()
    };
    let response = client
        .call(
            addr,
            RemotingCommand::request_with_header(request_code::SEND_MESSAGE_V2, &header)
                .with_body(body.as_bytes().to_vec()),
        )
        .await;
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{}",
        response.remark()
    );
    let h: vostok_remoting::protocol::header::SendMessageResponseHeader =
        response.decode_header().unwrap();
    let (_, commit_log_offset) = decode_offset_msg_id(&h.msg_id).unwrap();
    (
        h.queue_offset,
        commit_log_offset,
        h.transaction_id.unwrap_or_default(),
    )
}

async fn end(
    client: &TestClient,
    addr: &str,
    group: &str,
    half: &(i64, i64, String),
    outcome: i32,
) {
    let header = EndTransactionRequestHeader {
        producer_group: group.into(),
        tran_state_table_offset: half.0,
        commit_log_offset: half.1,
        commit_or_rollback: outcome,
        from_transaction_check: Some(false),
        msg_id: half.2.clone(),
        transaction_id: Some(half.2.clone()),
        topic: None,
    };
    let request = RemotingCommand::request_with_header(request_code::END_TRANSACTION, &header);
    client
        .remoting
        .invoke_oneway(addr, request, Duration::from_secs(3))
        .await
        .unwrap();
}

fn bodies(messages: &[MessageExt]) -> Vec<String> {
    let mut b: Vec<String> = messages
        .iter()
        .map(|m| String::from_utf8(m.body.to_vec()).unwrap())
        .collect();
    b.sort();
    b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_commit_roll_back_and_get_checked_across_a_restart() {
    let options = BrokerOptions::default()
        .set("transactionTimeOut", 1000)
        .set("transactionCheckInterval", 1000);
    let broker = Broker::start(options);
    let group = "tx-group";
    let (tx, mut checks) = mpsc::unbounded_channel();
    let checker = Arc::new(Checker {
        outcome: sysflag::TRANSACTION_COMMIT_TYPE,
        group: group.into(),
        checks: tx,
    });
    let producer = TestClient::with_processor("tx-producer", Some(checker.clone()));
    producer.create_topic(&broker.addr, "TxTopic", 1).await;

    // Committed: visible once; rolled back: never.
    let committed = send_half(&producer, &broker.addr, group, "committed").await;
    let rolled_back = send_half(&producer, &broker.addr, group, "rolled-back").await;
    let reader = TestClient::default();
    assert!(
        reader
            .drain(&broker.addr, "r", "TxTopic", 0, 0)
            .await
            .is_empty(),
        "half messages are invisible"
    );
    end(
        &producer,
        &broker.addr,
        group,
        &committed,
        sysflag::TRANSACTION_COMMIT_TYPE,
    )
    .await;
    end(
        &producer,
        &broker.addr,
        group,
        &rolled_back,
        sysflag::TRANSACTION_ROLLBACK_TYPE,
    )
    .await;
    let first = next_message(&reader, &broker.addr, "r", "TxTopic", 0, 0).await;
    assert_eq!(&first.body[..], b"committed");
    assert_eq!(
        sysflag::transaction_type(first.sys_flag),
        sysflag::TRANSACTION_COMMIT_TYPE
    );

    // Unknown: the broker checks back with the producer group, which commits.
    producer.heartbeat_producer(&broker.addr, group).await;
    let unknown = send_half(&producer, &broker.addr, group, "checked").await;
    end(
        &producer,
        &broker.addr,
        group,
        &unknown,
        sysflag::TRANSACTION_NOT_TYPE,
    )
    .await;
    let check = tokio::time::timeout(Duration::from_secs(15), checks.recv())
        .await
        .expect("a check")
        .unwrap();
    assert_eq!(check.transaction_id.as_deref(), Some(unknown.2.as_str()));
    let second = next_message(&reader, &broker.addr, "r", "TxTopic", 0, 1).await;
    assert_eq!(&second.body[..], b"checked");

    // A half message pending across a crash is checked after the restart.
    let pending = send_half(&producer, &broker.addr, group, "after-restart").await;
    let broker = broker.restart(true);
    let (tx, mut checks) = mpsc::unbounded_channel();
    let producer = TestClient::with_processor(
        "tx-producer-2",
        Some(Arc::new(Checker {
            outcome: sysflag::TRANSACTION_COMMIT_TYPE,
            group: group.into(),
            checks: tx,
        })),
    );
    producer.heartbeat_producer(&broker.addr, group).await;
    let check = tokio::time::timeout(Duration::from_secs(15), checks.recv())
        .await
        .expect("a check after restart")
        .unwrap();
    assert_eq!(check.transaction_id.as_deref(), Some(pending.2.as_str()));
    let reader = TestClient::default();
    let third = next_message(&reader, &broker.addr, "r", "TxTopic", 0, 2).await;
    assert_eq!(&third.body[..], b"after-restart");

    // Nothing else shows up: no second commit, no rolled-back message, across checks.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let all = reader.drain(&broker.addr, "r2", "TxTopic", 0, 0).await;
    assert_eq!(bodies(&all), ["after-restart", "checked", "committed"]);
    let _unused = Mutex::new(());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolled_timers_are_delivered_once_on_time_even_across_a_crash() {
    // fileReservedTime=0 lets retention delete any closed file, so pending timers roll
    // forward every second: each roll appends a copy and retires the old record.
    let broker = Broker::start(BrokerOptions::default().set("fileReservedTime", 0));
    let client = TestClient::default();
    client.create_topic(&broker.addr, "RollTopic", 1).await;
    let at = now_millis() + 4000;
    let mut props = TestClient::properties(None, None);
    push_pair(&mut props, property::TIMER_DELIVER_MS, &at.to_string());
    client
        .send(&broker.addr, "RollTopic", 0, "rolled", props)
        .await;
    // Wait until at least two rolls happened, then crash.
    let deadline = Instant::now() + Duration::from_secs(10);
    while client.max_offset(&broker.addr, topic::TIMER_TOPIC, 0).await < 3 {
        assert!(Instant::now() < deadline, "the timer was not rolled");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let broker = broker.restart(true);
    let client = TestClient::default();
    let msg = next_message(&client, &broker.addr, "roll", "RollTopic", 0, 0).await;
    let arrived = now_millis();
    assert!(
        arrived >= at - 1050 && arrived <= at + 1000,
        "{} ms off",
        arrived - at
    );
    assert_eq!(&msg.body[..], b"rolled");
    assert_eq!(
        msg.property("TIMER_ROLL_FROM"),
        None,
        "internal marker removed"
    );
    assert_eq!(msg.property(property::REAL_TOPIC), None);
    let pulled = client
        .pull(
            &broker.addr,
            "roll",
            "RollTopic",
            0,
            1,
            1,
            Some(Duration::from_secs(3)),
            "*",
        )
        .await;
    assert_eq!(
        pulled.code,
        response_code::PULL_NOT_FOUND,
        "delivered exactly once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn immune_or_future_born_half_messages_do_not_block_other_checks() {
    let options = BrokerOptions::default()
        .set("transactionTimeOut", 1000)
        .set("transactionCheckInterval", 500);
    let broker = Broker::start(options);
    let group = "tx-immune";
    let (tx, mut checks) = mpsc::unbounded_channel();
    let producer = TestClient::with_processor(
        "tx-immune",
        Some(Arc::new(Checker {
            outcome: sysflag::TRANSACTION_COMMIT_TYPE,
            group: group.into(),
            checks: tx,
        })),
    );
    producer.create_topic(&broker.addr, "TxTopic", 1).await;
    producer.heartbeat_producer(&broker.addr, group).await;
    // An hour of immunity, then one born an hour in the future, then an ordinary one.
    let immune = send_half_with(
        &producer,
        &broker.addr,
        group,
        "immune",
        now_millis(),
        Some(3600),
    )
    .await;
    let future = send_half_with(
        &producer,
        &broker.addr,
        group,
        "future",
        now_millis() + 3_600_000,
        None,
    )
    .await;
    let ordinary = send_half_with(
        &producer,
        &broker.addr,
        group,
        "ordinary",
        now_millis(),
        None,
    )
    .await;
    let mut seen = std::collections::HashSet::new();
    let deadline = Instant::now() + Duration::from_secs(15);
    while !(seen.contains(&future.2) && seen.contains(&ordinary.2)) {
        let left = deadline.saturating_duration_since(Instant::now());
        let check = tokio::time::timeout(left, checks.recv())
            .await
            .expect("checks for the messages behind the immune one")
            .unwrap();
        seen.insert(check.transaction_id.unwrap_or_default());
    }
    assert!(
        !seen.contains(&immune.2),
        "the immune message is not checked yet"
    );
    let reader = TestClient::default();
    let got = reader.drain(&broker.addr, "r", "TxTopic", 0, 0).await;
    assert_eq!(bodies(&got), ["future", "ordinary"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_end_transactions_commit_once() {
    let options = BrokerOptions::default()
        .set("flushDiskType", "SYNC_FLUSH")
        .set("transactionTimeOut", 1000)
        .set("transactionCheckInterval", 500);
    let broker = Broker::start(options);
    let group = "tx-dup";
    let producer = TestClient::default();
    producer.create_topic(&broker.addr, "TxTopic", 1).await;
    let half = send_half(&producer, &broker.addr, group, "once").await;
    // Two ENDs racing (the second arrives while the first waits for the disk) ...
    end(
        &producer,
        &broker.addr,
        group,
        &half,
        sysflag::TRANSACTION_COMMIT_TYPE,
    )
    .await;
    end(
        &producer,
        &broker.addr,
        group,
        &half,
        sysflag::TRANSACTION_COMMIT_TYPE,
    )
    .await;
    let reader = TestClient::default();
    next_message(&reader, &broker.addr, "r", "TxTopic", 0, 0).await;
    // ... and a late one after check rounds passed every half record.
    tokio::time::sleep(Duration::from_secs(2)).await;
    end(
        &producer,
        &broker.addr,
        group,
        &half,
        sysflag::TRANSACTION_COMMIT_TYPE,
    )
    .await;
    // And one more after a restart.
    let broker = broker.restart(false);
    let producer = TestClient::default();
    end(
        &producer,
        &broker.addr,
        group,
        &half,
        sysflag::TRANSACTION_COMMIT_TYPE,
    )
    .await;
    let reader = TestClient::default();
    let got = reader.drain(&broker.addr, "r2", "TxTopic", 0, 0).await;
    assert_eq!(bodies(&got), ["once"]);
}
