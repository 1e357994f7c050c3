//! Message trace end to end: a producer and a push consumer with `enableMsgTrace` write
//! Pub, SubBefore and SubAfter records to the trace topic the broker created
//! (`traceTopicEnable`), and `mqadmin queryMsgTraceById` reads them back.

mod common;

use std::sync::Arc;

use common::{eventually, json, mqadmin, start_broker};
use tokio::sync::mpsc;
use vostok_client::{
    ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, ConsumerConfig, Message, MessageExt,
    MessageListener, Producer, ProducerConfig, PushConsumer, TraceConfig,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_trace_records_are_read_back_by_msg_id() {
    let (broker, _dir) = start_broker("trace-a", |c| c.trace_topic_enable = true).await;
    let ns = broker.namesrv_addr();

    let mut config = ProducerConfig::new("TracePG", &ns);
    config.trace = TraceConfig::enabled();
    let producer = Producer::new(config);
    producer.start().await.unwrap();
    let sent = producer
        .send(
            Message::new("TraceTopic", "traced body")
                .with_tags("TagT")
                .with_keys(["order-7"]),
        )
        .await
        .unwrap();

    let mut config = ConsumerConfig::new("TraceCG", &ns);
    config.trace = TraceConfig::enabled();
    config.common.consume_from_where = vostok_client::ConsumeFromWhere::ConsumeFromFirstOffset;
    let consumer = PushConsumer::new(config);
    consumer.subscribe("TraceTopic", "*").unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let tx = Arc::new(tx);
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            for m in msgs {
                let _ = tx.send(m.msg_id());
            }
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer.start().await.unwrap();
    let consumed = tokio::time::timeout(common::DEADLINE, rx.recv())
        .await
        .expect("consumed in time")
        .unwrap();
    assert_eq!(consumed, sent.msg_id);

    let id = sent.msg_id.as_str();
    let text = eventually("Pub and Sub records", || async {
        let out = mqadmin(&ns, &["queryMsgTraceById", "-i", id]).await;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (out.status.success() && text.contains("Pub ") && text.contains("Sub ")).then_some(text)
    })
    .await;
    let lines: Vec<&str> = text.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.starts_with("#Type      #ProducerGroup"))
        .expect("Pub header");
    let pub_cells: Vec<&str> = lines[header + 1].split_whitespace().collect();
    assert_eq!(pub_cells[0..2], ["Pub", "TracePG"], "{text}");
    assert_eq!(pub_cells[2], "127.0.0.1", "{text}");
    assert!(pub_cells[5].ends_with("ms"), "{text}");
    assert_eq!(pub_cells[6], "success", "{text}");
    assert!(text.contains("#Type      #ConsumerGroup"), "{text}");
    let sub = lines.iter().find(|l| l.starts_with("Sub ")).unwrap();
    let sub_cells: Vec<&str> = sub.split_whitespace().collect();
    assert_eq!(sub_cells[1], "TraceCG", "{text}");
    assert_eq!(sub_cells[6], "success", "{text}");

    let records = json(&ns, &["queryMsgTraceById", "-i", id]).await;
    let records = records.as_array().unwrap();
    let kinds: Vec<&str> = records
        .iter()
        .map(|r| r["traceType"].as_str().unwrap())
        .collect();
    for kind in ["Pub", "SubBefore", "SubAfter"] {
        assert!(kinds.contains(&kind), "{kind} missing: {records:?}");
    }
    let publ = records.iter().find(|r| r["traceType"] == "Pub").unwrap();
    assert_eq!(publ["topic"], "TraceTopic");
    assert_eq!(publ["tags"], "TagT");
    assert_eq!(publ["keys"], "order-7");
    assert_eq!(publ["offsetMsgId"], sent.offset_msg_id.as_str());
    let before = records
        .iter()
        .find(|r| r["traceType"] == "SubBefore")
        .unwrap();
    let after = records
        .iter()
        .find(|r| r["traceType"] == "SubAfter")
        .unwrap();
    assert_eq!(before["requestId"], after["requestId"]);
    assert!(!before["requestId"].as_str().unwrap().is_empty());

    // Another id finds nothing.
    let none = json(
        &ns,
        &[
            "queryMsgTraceById",
            "-i",
            "0000000000000000000000000000FFFF",
        ],
    )
    .await;
    assert_eq!(none.as_array().unwrap().len(), 0);
    let stderr = common::fails(
        &ns,
        &[
            "queryMsgTraceById",
            "-i",
            "0000000000000000000000000000FFFF",
        ],
    )
    .await;
    assert!(
        stderr.contains("no trace recorded for this message"),
        "{stderr}"
    );
    assert_eq!(producer.trace_dispatcher().unwrap().dropped(), 0);

    consumer.shutdown().await;
    producer.shutdown().await;
    broker.shutdown().await;
}

struct Commit;

impl vostok_client::TransactionListener for Commit {
    fn execute_local_transaction(&self, _msg: &Message) -> vostok_client::LocalTransactionState {
        vostok_client::LocalTransactionState::CommitMessage
    }
    fn check_local_transaction(&self, _msg: &MessageExt) -> vostok_client::LocalTransactionState {
        vostok_client::LocalTransactionState::CommitMessage
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_committed_transaction_leaves_pub_and_end_transaction_records() {
    let (broker, _dir) = start_broker("trace-tx", |c| c.trace_topic_enable = true).await;
    let ns = broker.namesrv_addr();
    let mut config = ProducerConfig::new("TraceTxPG", &ns);
    config.trace = TraceConfig::enabled();
    let producer = vostok_client::TransactionProducer::new(config, Arc::new(Commit));
    producer.start().await.unwrap();
    let sent = producer
        .send_message_in_transaction(Message::new("TraceTxTopic", "tx body").with_keys(["tx-1"]))
        .await
        .unwrap();
    let id = sent.send_result.msg_id.clone();
    let records = eventually("EndTransaction record", || async {
        let out = mqadmin(&ns, &["queryMsgTraceById", "-i", &id, "--json"]).await;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        let records = v.as_array()?.clone();
        records
            .iter()
            .any(|r| r["traceType"] == "EndTransaction")
            .then_some(records)
    })
    .await;
    let end = records
        .iter()
        .find(|r| r["traceType"] == "EndTransaction")
        .unwrap();
    assert_eq!(end["transactionState"], "COMMIT_MESSAGE", "{records:?}");
    assert_eq!(end["groupName"], "TraceTxPG");
    assert_eq!(end["topic"], "TraceTxTopic");
    assert_eq!(end["keys"], "tx-1");
    assert!(
        records.iter().any(|r| r["traceType"] == "Pub"),
        "the half message's Pub: {records:?}"
    );
    producer.shutdown().await;
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untraced_message_says_tracing_is_off_for_its_producer() {
    // No trace topic anywhere: no producer of this cluster ever wrote a trace.
    let (broker, _dir) = start_broker("trace-off", |c| c.trace_topic_enable = false).await;
    let ns = broker.namesrv_addr();
    let producer = Producer::new(ProducerConfig::new("UntracedPG", &ns));
    producer.start().await.unwrap();
    let sent = producer
        .send(Message::new("UntracedTopic", "plain body"))
        .await
        .unwrap();
    let id = sent.msg_id.as_str();
    let stderr = common::fails(&ns, &["queryMsgTraceById", "-i", id]).await;
    assert!(
        stderr.contains("no trace recorded for this message (tracing is off for its producer"),
        "{stderr}"
    );
    assert!(!stderr.contains("TOPIC_NOT_EXIST"), "{stderr}");
    // A script asking for JSON gets no records, not an error.
    let none = json(&ns, &["queryMsgTraceById", "-i", id]).await;
    assert_eq!(none, serde_json::json!([]));
    producer.shutdown().await;
    broker.shutdown().await;
}
