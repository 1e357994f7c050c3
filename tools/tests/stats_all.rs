//! `statsAll` against a real broker that keeps per-topic counters (the Prometheus
//! exporter on): the in and out counts are exactly what was sent and consumed, and the
//! rates are non-zero and agree with the counts.

mod common;

use std::sync::Arc;

use common::{json, ok, start_broker};
use tokio::sync::mpsc;
use vostok_client::{
    ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, ConsumeFromWhere, ConsumerConfig,
    Message, MessageExt, MessageListener, Producer, ProducerConfig, PushConsumer,
};

const SENT: usize = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_all_counts_and_rates_come_from_the_broker() {
    let (broker, _dir) = start_broker("stats-a", |c| {
        for (k, v) in [
            ("metricsExporterType", "PROM"),
            ("metricsPromExporterHost", "127.0.0.1"),
            ("metricsPromExporterPort", "0"),
        ] {
            c.apply_property(k, v).expect("exporter key");
        }
    })
    .await;
    let ns_owned = broker.namesrv_addr();
    let ns = ns_owned.as_str();
    let addr = broker.addr().to_string();
    ok(
        ns,
        &[
            "updateTopic",
            "-t",
            "StatsTopic",
            "-b",
            &addr,
            "-r",
            "2",
            "-w",
            "2",
        ],
    )
    .await;
    let producer = Producer::new(ProducerConfig::new("StatsPG", ns));
    producer.start().await.unwrap();
    for i in 0..SENT {
        producer
            .send(Message::new("StatsTopic", format!("m{i}")))
            .await
            .expect("sent");
    }

    // Nobody consumes yet: one row, the in figures only.
    let v = json(ns, &["statsAll", "-t", "StatsTopic"]).await;
    let row = &v[0];
    assert!(row["consumerGroup"].is_null(), "{v}");
    assert_eq!(row["inMsg24Hour"], SENT as i64, "{v}");
    let in_tps = row["inTps"].as_f64().expect("inTps is a number");
    assert!(in_tps > 0.0, "{v}");
    assert!(row["outTps"].is_null(), "{v}");

    let mut config = ConsumerConfig::new("StatsCG", ns);
    config.common.consume_from_where = ConsumeFromWhere::ConsumeFromFirstOffset;
    let consumer = PushConsumer::new(config);
    consumer.subscribe("StatsTopic", "*").unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let tx = Arc::new(tx);
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            for _ in msgs {
                let _ = tx.send(());
            }
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer.start().await.unwrap();
    for _ in 0..SENT {
        tokio::time::timeout(common::DEADLINE, rx.recv())
            .await
            .expect("consumed")
            .unwrap();
    }

    let v = json(ns, &["statsAll", "-t", "StatsTopic"]).await;
    let row = v
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["consumerGroup"] == "StatsCG")
        .unwrap_or_else(|| panic!("no StatsCG row in {v}"));
    assert_eq!(row["inMsg24Hour"], SENT as i64, "{v}");
    assert_eq!(row["outMsg24Hour"], SENT as i64, "{v}");
    let out_tps = row["outTps"].as_f64().expect("outTps is a number");
    assert!(out_tps > 0.0, "{v}");
    // Both rates are counts over the same window since the broker's first sample, and
    // the gets came after the puts: the out rate cannot exceed the in rate.
    assert!(
        out_tps <= row["inTps"].as_f64().unwrap(),
        "out rate above in rate: {v}"
    );

    // The text form prints the figures, not "-".
    let text = ok(ns, &["statsAll", "-t", "StatsTopic"]).await;
    let cells: Vec<&str> = text
        .lines()
        .find(|l| l.contains(" StatsCG "))
        .expect("StatsCG row")
        .split_whitespace()
        .collect();
    assert_eq!(cells[..2], ["StatsTopic", "StatsCG"], "{text}");
    assert_eq!(cells[5..], ["40", "40"], "{text}");
    assert!(!cells.contains(&"-"), "{text}");

    consumer.shutdown().await;
    producer.shutdown().await;
    broker.shutdown().await;
}
