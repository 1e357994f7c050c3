//! RocketMQ 5's metrics beyond sends and pulls, on a real broker read with a
//! Prometheus text-format parser: DLQ moves, transactions, create times, timers, FIFO
//! sends, the store's labels, the process's metrics; and the Grafana dashboard in
//! deploy/grafana queries no series a broker does not export.

use std::collections::BTreeSet;
use std::time::Duration;

use prometheus_parse::{Sample, Scrape, Value};
use vostok_remoting::protocol::header::{
    ConsumerSendMsgBackRequestHeader, EndTransactionRequestHeader, SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
};
use vostok_remoting::protocol::message::id::decode_offset_msg_id;
use vostok_remoting::protocol::message::property::{self, push_pair};
use vostok_remoting::protocol::message::sysflag;
use vostok_remoting::protocol::{request_code as code, response_code};
use vostok_remoting::RemotingCommand;
use vostok_tests::client::TestClient;
use vostok_tests::{http, Broker, BrokerOptions};

const DASHBOARD: &str = include_str!("../../deploy/grafana/vostok-dashboard.json");

/// Series the dashboard shows that need more than one broker (a master's slaves):
/// declared by every broker, sampled only where they apply.
const NEEDS_A_SLAVE: &[&str] = &["rocketmq_ha_slave_behind_bytes"];

async fn scrape(addr: &str) -> (Scrape, String) {
    let answer = http::get(addr, "/metrics").await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let lines = answer.body.lines().map(|l| Ok(l.to_owned()));
    let parsed = Scrape::parse(lines).expect("Prometheus text format");
    (parsed, answer.body)
}

fn find<'a>(s: &'a Scrape, metric: &str, labels: &[(&str, &str)]) -> Option<&'a Sample> {
    s.samples
        .iter()
        .find(|x| x.metric == metric && labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
}

/// The sample's value and its type as the exposition declares it.
fn typed(s: &Scrape, metric: &str, labels: &[(&str, &str)]) -> (&'static str, f64) {
    let sample = find(s, metric, labels).unwrap_or_else(|| panic!("no {metric} {labels:?}"));
    match &sample.value {
        Value::Counter(v) => ("counter", *v),
        Value::Gauge(v) => ("gauge", *v),
        Value::Untyped(v) => ("untyped", *v),
        Value::Histogram(b) => ("histogram", b.last().map_or(0.0, |b| b.count)),
        Value::Summary(_) => ("summary", 0.0),
    }
}

fn commit_log_offset(h: &SendMessageResponseHeader) -> i64 {
    decode_offset_msg_id(&h.msg_id)
        .expect("offset message id")
        .1
}

/// A half message of producer group `PG` to `topic`: (queue offset, commitlog offset, id).
async fn send_half(c: &TestClient, addr: &str, topic: &str) -> (i64, i64, String) {
    let mut props = TestClient::properties(None, None);
    push_pair(&mut props, property::TRANSACTION_PREPARED, "true");
    push_pair(&mut props, property::PRODUCER_GROUP, "PG");
    let header = SendMessageRequestHeaderV2 {
        a: "PG".into(),
        b: topic.into(),
        c: "TBW102".into(),
        d: 1,
        e: 0,
        f: sysflag::TRANSACTION_PREPARED_TYPE,
        g: vostok_remoting::support::time::now_millis(),
        i: Some(props),
        ..Default::default()
    };
    let r = c
        .call(
            addr,
            RemotingCommand::request_with_header(code::SEND_MESSAGE_V2, &header)
                .with_body(&b"half"[..]),
        )
        .await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    let h: SendMessageResponseHeader = r.decode_header().expect("send response header");
    (h.queue_offset, commit_log_offset(&h), h.msg_id)
}

async fn end_transaction(c: &TestClient, addr: &str, half: &(i64, i64, String), outcome: i32) {
    let header = EndTransactionRequestHeader {
        producer_group: "PG".into(),
        tran_state_table_offset: half.0,
        commit_log_offset: half.1,
        commit_or_rollback: outcome,
        from_transaction_check: Some(false),
        msg_id: half.2.clone(),
        transaction_id: Some(half.2.clone()),
        topic: None,
    };
    let r = c
        .call(
            addr,
            RemotingCommand::request_with_header(code::END_TRANSACTION, &header),
        )
        .await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
}

/// Every `rocketmq_*` and `process_*` name in the dashboard's queries.
fn dashboard_series() -> BTreeSet<String> {
    let json: serde_json::Value = serde_json::from_str(DASHBOARD).expect("dashboard JSON");
    let mut exprs = Vec::new();
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    match (k.as_str(), v) {
                        ("expr", serde_json::Value::String(e)) => out.push(e.clone()),
                        _ => walk(v, out),
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    walk(&json, &mut exprs);
    assert!(
        exprs.len() >= 30,
        "the dashboard has its queries: {exprs:?}"
    );
    exprs
        .iter()
        .flat_map(|e| e.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
        .filter(|w| w.starts_with("rocketmq_") || w.starts_with("process_"))
        .map(str::to_owned)
        .collect()
}

/// Whether `series` (a sample name, or a histogram's `_bucket`/`_sum`/`_count`) has a
/// sample in the scrape.
fn sampled(s: &Scrape, series: &str) -> bool {
    let base = ["_bucket", "_sum", "_count"]
        .iter()
        .find_map(|suffix| series.strip_suffix(suffix))
        .unwrap_or(series);
    s.samples
        .iter()
        .any(|x| x.metric == series || (x.metric == base && matches!(x.value, Value::Histogram(_))))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_series_the_dashboard_queries_is_exported_with_apaches_types_and_labels() {
    let broker = Broker::start(
        BrokerOptions::default()
            .set("metricsExporterType", "PROM")
            .set("metricsPromExporterPort", 0),
    );
    let metrics = broker.metrics_addr.clone().expect("metrics address");
    let addr = &broker.addr;
    let c = TestClient::default();
    for topic in ["Orders", "Fifo", "Timed", "Tx"] {
        assert_eq!(
            c.create_topic(addr, topic, 1).await.code,
            response_code::SUCCESS
        );
    }
    let group = serde_json::json!({ "groupName": "Billing" });
    let r = c
        .call(
            addr,
            RemotingCommand::request(code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
                .with_body(serde_json::to_vec(&group).expect("json")),
        )
        .await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());

    // A producer and a consumer online.
    let r = c.heartbeat_producer(addr, "PG").await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    let r = c.heartbeat_consumer(addr, "Billing", "Orders", "*").await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    // A group whose DLQ exists and is empty.
    let r = c.heartbeat_consumer(addr, "Audit", "Orders", "*").await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    assert_eq!(
        c.create_topic(addr, "%DLQ%Audit", 1).await.code,
        response_code::SUCCESS
    );
    // Plain sends, one of them moved to the DLQ by send-back.
    let mut sent = Vec::new();
    for i in 0..3 {
        let props = TestClient::properties(Some("a"), Some(&format!("k{i}")));
        sent.push(c.send(addr, "Orders", 0, &b"order"[..], props).await);
    }
    let back = ConsumerSendMsgBackRequestHeader {
        offset: commit_log_offset(&sent[0]),
        group: "Billing".into(),
        delay_level: -1,
        origin_msg_id: None,
        origin_topic: Some("Orders".into()),
        unit_mode: None,
        max_reconsume_times: None,
    };
    let r = c
        .call(
            addr,
            RemotingCommand::request_with_header(code::CONSUMER_SEND_MSG_BACK, &back),
        )
        .await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    // A FIFO message: a message group (sharding key), as 5.x clients send it.
    let mut props = TestClient::properties(None, None);
    push_pair(&mut props, property::SHARDING_KEY, "customer-7");
    c.send(addr, "Fifo", 0, &b"first"[..], props).await;
    // Transactions: one committed, one rolled back, one left open.
    let committed = send_half(&c, addr, "Tx").await;
    let rolled_back = send_half(&c, addr, "Tx").await;
    send_half(&c, addr, "Tx").await;
    end_transaction(&c, addr, &committed, sysflag::TRANSACTION_COMMIT_TYPE).await;
    end_transaction(&c, addr, &rolled_back, sysflag::TRANSACTION_ROLLBACK_TYPE).await;
    // Timers: one due in an hour, one due soon that the test waits to see delivered.
    let now = vostok_remoting::support::time::now_millis();
    for (queue, at) in [(0, now + 3_600_000), (0, now + 1_500)] {
        let mut props = TestClient::properties(None, None);
        push_pair(&mut props, property::TIMER_DELIVER_MS, &at.to_string());
        c.send(addr, "Timed", queue, &b"later"[..], props).await;
    }
    let delivered = c
        .pull(
            addr,
            "TimerWatch",
            "Timed",
            0,
            0,
            1,
            Some(Duration::from_secs(20)),
            "*",
        )
        .await;
    assert_eq!(
        delivered.messages.len(),
        1,
        "the soon-due timer was delivered"
    );
    c.wait_dispatched(addr).await;
    // Billing pulled 2 of the 3 and committed 1: one waits to be pulled.
    let pulled = c.pull(addr, "Billing", "Orders", 0, 0, 2, None, "*").await;
    assert_eq!(pulled.messages.len(), 2);
    c.update_offset(addr, "Billing", "Orders", 0, 1).await;

    let (s, text) = scrape(&metrics).await;

    // Every series the dashboard queries is there.
    let series = dashboard_series();
    let missing: Vec<&String> = series
        .iter()
        .filter(|name| match NEEDS_A_SLAVE.contains(&name.as_str()) {
            true => !text.contains(&format!("# TYPE {name} ")),
            false => !sampled(&s, name),
        })
        .collect();
    assert!(
        missing.is_empty(),
        "the dashboard queries {missing:?}, not in\n{text}"
    );
    for needed in [
        "rocketmq_send_to_dlq_messages_total",
        "rocketmq_consumer_queueing_latency",
        "rocketmq_timing_messages",
        "process_cpu_seconds_total",
    ] {
        assert!(series.contains(needed), "the dashboard shows {needed}");
    }

    // Names, types and labels, as Apache's exporter gives them.
    let dlq = [
        ("consumer_group", "Billing"),
        ("topic", "Orders"),
        ("is_system", "false"),
    ];
    assert_eq!(
        typed(&s, "rocketmq_send_to_dlq_messages_total", &dlq),
        ("counter", 1.0)
    );
    assert_eq!(
        typed(
            &s,
            "rocketmq_dlq_messages",
            &[("consumer_group", "Billing")]
        ),
        ("gauge", 1.0)
    );
    assert_eq!(
        typed(&s, "rocketmq_dlq_messages", &[("consumer_group", "Audit")]),
        ("gauge", 0.0),
        "an empty DLQ reads 0"
    );
    let fifo = [("topic", "Fifo"), ("message_type", "fifo")];
    assert_eq!(
        typed(&s, "rocketmq_messages_in_total", &fifo),
        ("counter", 1.0)
    );
    let tx = [("topic", "Tx")];
    assert_eq!(
        typed(&s, "rocketmq_commit_messages_total", &tx),
        ("counter", 1.0)
    );
    assert_eq!(
        typed(&s, "rocketmq_rollback_messages_total", &tx),
        ("counter", 1.0)
    );
    assert_eq!(typed(&s, "rocketmq_half_messages", &tx), ("gauge", 1.0));
    assert_eq!(
        typed(&s, "rocketmq_finish_message_latency", &tx),
        ("histogram", 1.0)
    );
    let created = [("invocation_status", "success"), ("is_system", "false")];
    let (t, n) = typed(&s, "rocketmq_topic_create_execution_time", &created);
    assert_eq!((t, n), ("histogram", 5.0), "the five topics created");
    let (t, n) = typed(
        &s,
        "rocketmq_consumer_group_create_execution_time",
        &[("invocation_status", "success")],
    );
    assert_eq!((t, n), ("histogram", 1.0));
    let timed = [("topic", "Timed")];
    assert_eq!(
        typed(&s, "rocketmq_timer_enqueue_total", &timed),
        ("counter", 2.0)
    );
    assert_eq!(
        typed(&s, "rocketmq_timer_dequeue_total", &timed),
        ("counter", 1.0)
    );
    assert_eq!(
        typed(&s, "rocketmq_timing_messages", &timed),
        ("gauge", 1.0)
    );
    assert_eq!(
        typed(&s, "rocketmq_delay_message_latency", &timed),
        ("histogram", 2.0)
    );
    assert_eq!(
        typed(
            &s,
            "rocketmq_timer_message_snapshot",
            &[("timer_bound_s", "3600")]
        ),
        ("gauge", 1.0)
    );
    assert_eq!(typed(&s, "rocketmq_timer_dequeue_lag", &[]), ("gauge", 0.0));
    assert_eq!(typed(&s, "rocketmq_broker_permission", &[]), ("gauge", 6.0));
    let lag = [("topic", "Orders"), ("consumer_group", "Billing")];
    let (t, queued) = typed(&s, "rocketmq_consumer_queueing_latency", &lag);
    assert_eq!(t, "gauge");
    // From the next offset pulled (2), younger than the oldest unconsumed one (1).
    let (_, behind) = typed(&s, "rocketmq_consumer_lag_latency", &lag);
    assert!((0.0..=behind).contains(&queued), "{queued} > {behind}");
    assert_eq!(typed(&s, "rocketmq_consumer_lag_messages", &lag).1, 2.0);
    let disk = [("storage_type", "local"), ("storage_medium", "disk")];
    for store_series in [
        "rocketmq_storage_size",
        "rocketmq_storage_flush_behind_bytes",
        "rocketmq_storage_dispatch_behind_bytes",
        "rocketmq_storage_message_reserve_time",
        "rocketmq_timing_messages",
    ] {
        assert_eq!(typed(&s, store_series, &disk).0, "gauge", "{store_series}");
    }
    let (t, cpu) = typed(&s, "process_cpu_seconds_total", &[("node_type", "broker")]);
    assert_eq!(t, "counter");
    assert!(cpu > 0.0);
    for gauge in [
        "process_resident_memory_bytes",
        "process_anonymous_memory_bytes",
        "process_virtual_memory_bytes",
        "process_open_fds",
        "process_max_fds",
        "process_start_time_seconds",
        "process_threads",
    ] {
        let (t, v) = typed(&s, gauge, &[]);
        assert_eq!(t, "gauge", "{gauge}");
        assert!(v > 0.0, "{gauge} = {v}");
    }
}
