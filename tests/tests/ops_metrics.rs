//! The Prometheus endpoint of a real broker, read with a Prometheus text-format parser:
//! RocketMQ 5's names and labels, and counters equal to what was sent and pulled.

use vostok_remoting::protocol::response_code;
use vostok_tests::client::TestClient;
use vostok_tests::{http, Broker, BrokerOptions};

/// One scrape, parsed.
async fn scrape(addr: &str) -> prometheus_parse::Scrape {
    let answer = http::get(addr, "/metrics").await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(
        answer
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/plain")),
        "{:?}",
        answer.headers
    );
    let lines = answer.body.lines().map(|l| Ok(l.to_owned()));
    prometheus_parse::Scrape::parse(lines).expect("Prometheus text format")
}

/// The value of the sample `metric` whose labels include `labels`.
fn value(scrape: &prometheus_parse::Scrape, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
    scrape
        .samples
        .iter()
        .find(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            ref other => panic!("{metric} is not a single value: {other:?}"),
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_and_lag_match_what_was_sent_and_pulled() {
    let broker = Broker::start(
        BrokerOptions::default()
            .set("metricsExporterType", "PROM")
            .set("metricsPromExporterPort", 0)
            .set("metricsLabel", "dc:test"),
    );
    let metrics = broker
        .metrics_addr
        .clone()
        .expect("metrics address printed");
    let client = TestClient::default();
    let topic = "MetricsTopic";
    let group = "MetricsGroup";
    assert_eq!(
        client.create_topic(&broker.addr, topic, 2).await.code,
        response_code::SUCCESS
    );
    for i in 0..7 {
        let props = TestClient::properties(Some("a"), Some(&format!("k{i}")));
        client
            .send(&broker.addr, topic, 0, vec![b'x'; 100], props)
            .await;
    }
    let batch = client
        .send_batch(
            &broker.addr,
            topic,
            1,
            &[vec![1; 10], vec![2; 10], vec![3; 10]],
        )
        .await;
    assert_eq!(batch.code, response_code::SUCCESS, "{}", batch.remark());
    client.wait_dispatched(&broker.addr).await;
    let pulled = client
        .pull(&broker.addr, group, topic, 0, 0, 4, None, "*")
        .await;
    assert_eq!(pulled.messages.len(), 4);
    // The group has consumed 4 of queue 0 and none of queue 1.
    client.update_offset(&broker.addr, group, topic, 0, 4).await;

    let s = scrape(&metrics).await;
    let topic_normal = [
        ("topic", topic),
        ("message_type", "normal"),
        ("is_system", "false"),
    ];
    assert_eq!(
        value(&s, "rocketmq_messages_in_total", &topic_normal),
        Some(10.0)
    );
    let bytes_in = value(&s, "rocketmq_throughput_in_total", &topic_normal).expect("bytes in");
    assert!(bytes_in >= 7.0 * 100.0 + 30.0, "{bytes_in}");
    let out = [
        ("topic", topic),
        ("consumer_group", group),
        ("is_retry", "false"),
    ];
    assert_eq!(value(&s, "rocketmq_messages_out_total", &out), Some(4.0));
    assert!(value(&s, "rocketmq_throughput_out_total", &out).is_some_and(|b| b >= 400.0));
    // Every sample carries the node labels and metricsLabel's.
    let sample = s
        .samples
        .iter()
        .find(|x| x.metric == "rocketmq_messages_in_total")
        .expect("a sample");
    assert_eq!(sample.labels.get("node_type"), Some("broker"));
    assert_eq!(sample.labels.get("cluster"), Some("DefaultCluster"));
    assert_eq!(sample.labels.get("dc"), Some("test"));
    // The size histogram counted every message.
    let sizes = s
        .samples
        .iter()
        .find(|x| x.metric == "rocketmq_message_size" && x.labels.get("topic") == Some(topic))
        .expect("message size histogram");
    match &sizes.value {
        prometheus_parse::Value::Histogram(buckets) => {
            let total = buckets.last().expect("buckets").count;
            assert_eq!(total, 8.0, "one observation per put: {buckets:?}");
        }
        other => panic!("rocketmq_message_size is not a histogram: {other:?}"),
    }
    // Lag: 3 behind on queue 0 and 3 on queue 1 (never committed: from its start).
    let lag = [("topic", topic), ("consumer_group", group)];
    assert_eq!(value(&s, "rocketmq_consumer_lag_messages", &lag), Some(6.0));
    assert!(value(&s, "rocketmq_consumer_lag_latency", &lag).is_some());
    assert_eq!(
        value(&s, "rocketmq_consumer_inflight_messages", &lag),
        Some(0.0)
    );
    assert!(value(&s, "rocketmq_topic_number", &[]).is_some_and(|n| n >= 1.0));
    assert!(
        value(&s, "rocketmq_storage_size", &[("storage_type", "local")]).is_some_and(|n| n > 0.0)
    );
    assert!(value(
        &s,
        "rocketmq_rpc_latency_count",
        &[
            ("request_code", "send_message_v2"),
            ("response_code", "success")
        ]
    )
    .is_some_and(|n| n >= 7.0));
    assert_eq!(http::get(&metrics, "/nothing").await.status, 404);
}
