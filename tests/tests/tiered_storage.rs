//! Tiered storage through a broker process: with local retention deleting commitlog
//! files as soon as they are in the tier, a consumer group created afterwards reads
//! every message from offset 0, in order per queue, with its tags, keys and body; the
//! tier's figures are in `mqadmin brokerStatus`, the Prometheus metrics and the console.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use vostok_client::{
    CommonConsumerConfig, ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, ConsumeFromWhere,
    ConsumerConfig, Message, MessageExt, MessageListener, MessageSelector, Producer,
    ProducerConfig, PushConsumer,
};
use vostok_remoting::protocol::header::{
    GetConsumeStatsRequestHeader, QueryConsumeQueueRequestHeader, QueryConsumerOffsetRequestHeader,
    SearchOffsetRequestHeader, ViewMessageRequestHeader,
};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;
use vostok_tests::client::TestClient;
use vostok_tests::sdk::{client, eventually, wait_until};
use vostok_tests::tier::{every_hour, expiring, local_files, phy_of_id, tiered};
use vostok_tests::{binary, http, Broker, BrokerOptions};

const N: usize = 400;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_created_after_local_deletion_reads_everything_from_the_tier() {
    let tier = tempfile::tempdir().unwrap();
    let broker = Broker::start(
        BrokerOptions::default()
            .set(
                "messageStorePlugIn",
                "org.apache.rocketmq.tieredstore.TieredMessageStore",
            )
            .set(
                "tieredBackendServiceProvider",
                "org.apache.rocketmq.tieredstore.provider.PosixFileSegment",
            )
            .set("tieredStoreFilePath", tier.path().display())
            .set("mappedFileSizeCommitLog", 64 * 1024)
            .set("fileReservedTime", 0)
            .set("deleteWhen", every_hour())
            .set("cleanResourceInterval", 200)
            .set("flushCommitLogThoroughInterval", 50)
            .set("tieredStorageLevel", "NOT_IN_DISK")
            .set("tieredStoreFileReservedTime", 720)
            .set("tieredStoreCommitLogMaxSize", 1073741824)
            .set("tieredStoreGroupCommitCount", 4096)
            .set("metricsExporterType", "PROM"),
    );
    let ns = broker.namesrv.clone();
    let topic = "ArchiveTopic";
    broker.create_topic(topic, 4).await;
    let producer = Producer::new(ProducerConfig {
        client: client(&ns, "producer"),
        producer_group: "archive-producer".into(),
        ..Default::default()
    });
    producer.start().await.unwrap();
    let mut sent = BTreeMap::new();
    for i in 0..N {
        let body = format!("archived {i:04} ").repeat(40);
        let msg = Message::new(topic, body.clone())
            .with_tags(format!("tag{}", i % 3))
            .with_keys([format!("key{i}")]);
        producer.send(msg).await.unwrap();
        sent.insert(format!("key{i}"), (format!("tag{}", i % 3), body));
    }
    // Everything sealed reaches the tier and leaves the local disk.
    wait_until("the first local commitlog files deleted", || {
        let files = local_files(&broker);
        files.len() <= 2 && files.first().is_some_and(|f| f != "00000000000000000000")
    })
    .await;

    // A new group's offset is not found (no "0 while the first message is in memory"
    // for a message only the tier holds): a CONSUME_FROM_LAST_OFFSET group starts at
    // the end, as with Apache, instead of replaying the tier.
    let admin = TestClient::default();
    for q in 0..4 {
        let header = QueryConsumerOffsetRequestHeader {
            consumer_group: "late-group".into(),
            topic: topic.into(),
            queue_id: q,
            set_zero_if_not_found: None,
        };
        let response = admin
            .call(
                &broker.addr,
                RemotingCommand::request_with_header(request_code::QUERY_CONSUMER_OFFSET, &header),
            )
            .await;
        assert_eq!(
            response.code,
            response_code::QUERY_NOT_FOUND,
            "queue {q}: {}",
            response.remark()
        );
    }

    let seen: Arc<Mutex<Vec<MessageExt>>> = Arc::default();
    let consumer = PushConsumer::new(ConsumerConfig {
        common: CommonConsumerConfig {
            client: client(&ns, "late"),
            consumer_group: "late-group".into(),
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            ..CommonConsumerConfig::push_defaults()
        },
        ..Default::default()
    });
    consumer
        .subscribe_with_selector(topic, MessageSelector::by_tag("*"))
        .unwrap();
    let s = seen.clone();
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            s.lock().unwrap().extend(msgs.iter().cloned());
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer.start().await.unwrap();
    wait_until("every message consumed", || seen.lock().unwrap().len() >= N).await;
    consumer.shutdown().await;

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), N, "no duplicates");
    let mut per_queue: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    for m in &seen {
        let key = m.property("KEYS").expect("keys").to_owned();
        let (tags, body) = &sent[&key];
        assert_eq!(m.tags(), Some(tags.as_str()), "{key}");
        assert_eq!(&m.body[..], body.as_bytes(), "{key}");
        per_queue
            .entry(m.queue_id)
            .or_default()
            .push(m.queue_offset);
    }
    for (q, offsets) in per_queue {
        let mut sorted = offsets.clone();
        sorted.sort();
        assert_eq!(sorted[0], 0, "queue {q} read from offset 0");
        assert!(sorted.windows(2).all(|w| w[1] == w[0] + 1), "queue {q}");
    }

    // The tier's state, as an operator sees it.
    let out = std::process::Command::new(binary("vostok-test-mqadmin"))
        .args(["-n", &ns, "brokerStatus", "-b", &broker.addr])
        .env_remove("NAMESRV_ADDR")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{status}");
    let figure = |key: &str| -> i64 {
        status
            .lines()
            .find_map(|l| {
                let mut words = l.split_whitespace();
                (words.next() == Some(key))
                    .then(|| words.last().and_then(|v| v.parse().ok()))
                    .flatten()
            })
            .unwrap_or_else(|| panic!("{key} in {status}"))
    };
    assert!(figure("tierSegments") >= 1);
    assert!(figure("tierMessagesRead") > 0, "{status}");
    assert!(figure("tierBytesUploaded") > 0);
    assert!(figure("tierUploadLagBytes") > 0, "the writer's file");
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("tierState") && l.ends_with(": OK")),
        "{status}"
    );
    let metrics = http::get(&broker.metrics_addr.clone().expect("metrics"), "/metrics")
        .await
        .body;
    for name in [
        "rocketmq_tiered_store_uploaded_bytes_total",
        "rocketmq_tiered_store_upload_lag_bytes",
        "rocketmq_tiered_store_upload_lag_seconds",
        "rocketmq_tiered_store_messages_read_total",
        "rocketmq_tiered_store_read_latency_seconds_count",
        "rocketmq_tiered_store_cache_hits_total",
    ] {
        assert!(metrics.contains(name), "{name} in {metrics}");
    }
}

/// The `<table id="tier">` of the console's broker page.
fn tier_table(page: &str) -> &str {
    let at = page
        .find("<table id=\"tier\">")
        .unwrap_or_else(|| panic!("no tier table in {page}"));
    let end = page[at..].find("</table>").map_or(page.len(), |e| at + e);
    &page[at..end]
}

/// The figure in the cell after the row named `name`.
fn cell(table: &str, name: &str) -> i64 {
    let mark = format!("<td>{name}</td><td class=\"n\">");
    let at = table
        .find(&mark)
        .unwrap_or_else(|| panic!("{name} in {table}"))
        + mark.len();
    table[at..]
        .split('<')
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name} in {table}"))
}

/// The console's broker page shows the tier: on, its directory, what it uploaded, its
/// lag, no error, and the reads of messages no longer on the local disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_the_tier_of_the_broker() {
    let tier = tempfile::tempdir().unwrap();
    let broker = Broker::start(expiring(tiered(tier.path())));
    let console = broker.console_addr.clone().expect("console address");
    let admin = TestClient::default();
    assert_eq!(
        admin.create_topic(&broker.addr, "TierTopic", 1).await.code,
        0
    );
    for i in 0..300 {
        let body = format!("tiered {i:04} ").repeat(50);
        admin
            .send(
                &broker.addr,
                "TierTopic",
                0,
                body,
                TestClient::properties(None, None),
            )
            .await;
    }
    wait_until("the first local commitlog file deleted", || {
        local_files(&broker)
            .first()
            .is_some_and(|f| f != "00000000000000000000")
    })
    .await;
    admin.wait_dispatched(&broker.addr).await;
    // Read from offset 0: from the tier, one block read then cache hits.
    let pulled = admin
        .pull(
            &broker.addr,
            "tier-reader",
            "TierTopic",
            0,
            0,
            32,
            None,
            "*",
        )
        .await;
    let read = pulled.messages.len() as i64;
    assert!(read > 1, "code {}", pulled.code);

    let page = http::get(&console, "/").await;
    assert_eq!(page.status, 200, "{}", page.body);
    let table = tier_table(&page.body);
    assert!(table.contains("id=\"tier-state\">on<"), "{table}");
    assert!(
        table.contains(&format!("file system {}", tier.path().display())),
        "{table}"
    );
    assert!(cell(table, "Segments in the tier") >= 1, "{table}");
    assert!(table.contains("Uploaded since start"), "{table}");
    assert!(table.contains(" KiB"), "{table}");
    assert!(table.contains(", oldest message "), "{table}");
    assert!(
        table.contains("<td>Last upload error</td><td>none since the broker started</td>"),
        "{table}"
    );
    // The last upload's time carries its zone.
    let last = table
        .split("<td>Last upload</td><td>")
        .nth(1)
        .unwrap_or_default();
    assert!(
        last.split('<').next().is_some_and(|t| t.contains(" UTC")),
        "{table}"
    );
    assert!(
        cell(table, "Messages read from the tier") >= read,
        "{table}"
    );
    assert!(table.contains("Read cache"), "{table}");
    let hits = table
        .split("<td>Read cache</td><td>")
        .nth(1)
        .and_then(|c| c.split(' ').next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or_default();
    assert!(hits > 0, "{table}");
    assert!(!page.body.contains("id=\"tier-off\""), "{}", page.body);
}

/// With the tier unreachable, the console says uploads fail and why, naming the bucket
/// and never the keys; with the tier off, it says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_tier_is_shown_by_the_console_broker_status_and_metrics() {
    // Started first without the tier: a broker with no local data would not start
    // while its tier cannot be listed.
    let mut broker =
        Broker::start(BrokerOptions::default().set("mappedFileSizeCommitLog", 64 * 1024));
    let admin = TestClient::default();
    assert_eq!(
        admin.create_topic(&broker.addr, "TierTopic", 1).await.code,
        0
    );
    admin
        .send(
            &broker.addr,
            "TierTopic",
            0,
            "before the tier",
            TestClient::properties(None, None),
        )
        .await;
    for (k, v) in [
        (
            "messageStorePlugIn",
            "org.apache.rocketmq.tieredstore.TieredMessageStore",
        ),
        ("tieredBackendServiceProvider", "s3"),
        // Nothing listens on port 1: every upload fails quickly.
        ("objectStoreEndpoint", "http://127.0.0.1:1"),
        ("objectStoreBucket", "unreachable-bucket"),
        ("objectStoreRegion", "us-east-1"),
        ("objectStoreAccessKey", "console-access-key"),
        ("objectStoreSecretKey", "console-secret-key"),
        ("tieredStoreUploadTimeout", "2000"),
        ("metricsExporterType", "PROM"),
    ] {
        broker.options = broker.options.set(k, v);
    }
    let broker = broker.restart(false);
    let console = broker.console_addr.clone().expect("console address");
    // More than a file: the first one is sealed and its upload tried.
    for i in 0..150 {
        let body = format!("tiered {i:04} ").repeat(50);
        admin
            .send(
                &broker.addr,
                "TierTopic",
                0,
                body,
                TestClient::properties(None, None),
            )
            .await;
    }
    let page = std::sync::Mutex::new(String::new());
    eventually("the upload error on the console", || async {
        let body = http::get(&console, "/").await.body;
        let failed = body.contains("id=\"tier-error\"");
        *page.lock().unwrap() = body;
        failed
    })
    .await;
    let page = page.into_inner().unwrap();
    let table = tier_table(&page);
    assert!(table.contains("uploads failing"), "{table}");
    assert!(table.contains("id=\"tier-error\""), "{table}");
    assert!(table.contains("unreachable-bucket"), "{table}");
    assert!(!page.contains("console-secret-key"), "{page}");
    assert!(!page.contains("console-access-key"), "{page}");

    // The same in `mqadmin brokerStatus`: the state, the failures and the last error
    // with its time, without the keys.
    let out = std::process::Command::new(binary("vostok-test-mqadmin"))
        .args(["-n", &broker.namesrv, "brokerStatus", "-b", &broker.addr])
        .env_remove("NAMESRV_ADDR")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{status}");
    let field = |key: &str| -> String {
        status
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == key).then(|| v.trim().to_owned())
            })
            .unwrap_or_else(|| panic!("{key} in {status}"))
    };
    assert_eq!(field("tierState"), "UPLOAD_FAILING", "{status}");
    assert!(field("tierUploadFailures").parse::<u64>().unwrap() >= 1);
    let error = field("tierLastUploadError");
    assert!(error.contains("unreachable-bucket"), "{error}");
    let at: i64 = field("tierLastUploadErrorTime").parse().unwrap();
    assert!(at > 0, "{status}");
    assert!(!status.contains("console-secret-key"), "{status}");
    assert!(!status.contains("console-access-key"), "{status}");
    // And in the Prometheus metrics.
    let metrics = http::get(&broker.metrics_addr.clone().expect("metrics"), "/metrics")
        .await
        .body;
    // `name{labels} value`
    let value = |name: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| {
                let rest = l.strip_prefix(name)?.strip_prefix('{')?;
                rest.rsplit_once(' ')?.1.trim().parse().ok()
            })
            .unwrap_or_else(|| panic!("{name} in {metrics}"))
    };
    assert!(value("rocketmq_tiered_store_upload_failures_total") >= 1.0);
    assert_eq!(value("rocketmq_tiered_store_upload_failing"), 1.0);
    assert!(value("rocketmq_tiered_store_last_upload_error_timestamp_seconds") > 0.0);
    assert!(!metrics.contains("console-secret-key"));

    let plain = Broker::start(BrokerOptions::default());
    let page = http::get(&plain.console_addr.clone().expect("console"), "/").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("id=\"tier-off\""), "{}", page.body);
    assert!(!page.body.contains("<table id=\"tier\">"), "{}", page.body);
}

/// The broker's disk is lost (its whole store directory deleted while it is down, the
/// tier kept): started again, it serves every uploaded message to a new group from
/// offset 0, byte-identical, and new messages get offsets after the tier's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_on_a_new_disk_serves_the_tier_and_continues_after_it() {
    const FILE: i64 = 64 * 1024; // the commitlog file size `tiered` sets
    let tier = tempfile::tempdir().unwrap();
    let broker = Broker::start(tiered(tier.path()));
    let topic = "LostDiskTopic";
    broker.create_topic(topic, 4).await;
    let producer = Producer::new(ProducerConfig {
        client: client(&broker.namesrv, "producer"),
        producer_group: "lost-disk-producer".into(),
        ..Default::default()
    });
    producer.start().await.unwrap();
    // key -> (body, commitlog offset, queue, queue offset)
    let mut sent = BTreeMap::new();
    for i in 0..N {
        let body = format!("lost disk {i:04} ").repeat(40);
        let msg = Message::new(topic, body.clone()).with_keys([format!("key{i}")]);
        let r = producer.send(msg).await.unwrap();
        let phy = phy_of_id(&r.offset_msg_id);
        sent.insert(
            format!("key{i}"),
            (body, phy, r.message_queue.queue_id, r.queue_offset),
        );
    }
    producer.shutdown().await;
    // Every file before the writer's is in the tier.
    let last_phy = sent.values().map(|v| v.1).max().unwrap();
    let sealed = (last_phy / FILE) as usize;
    assert!(sealed >= 3, "{sealed} sealed files");
    let tier_files = |sub: &str| std::fs::read_dir(tier.path().join(sub)).map_or(0, |d| d.count());
    wait_until("every sealed file in the tier", || {
        tier_files("commitlog") == sealed && tier_files("index") == sealed
    })
    .await;
    let tier_end = sealed as i64 * FILE;
    let in_tier: BTreeMap<_, _> = sent
        .iter()
        .filter(|(_, v)| v.1 < tier_end)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut tier_queue_end: BTreeMap<i32, i64> = BTreeMap::new();
    for (_, _, q, offset) in sent.values().filter(|v| v.1 < tier_end) {
        let end = tier_queue_end.entry(*q).or_default();
        *end = (*end).max(offset + 1);
    }

    let broker = broker.restart_with(false, |store| std::fs::remove_dir_all(store).unwrap());
    assert!(!local_files(&broker)
        .iter()
        .any(|f| f == "00000000000000000000"));
    // The topic's configuration went with the disk.
    broker.create_topic(topic, 4).await;
    let seen: Arc<Mutex<Vec<MessageExt>>> = Arc::default();
    let consumer = PushConsumer::new(ConsumerConfig {
        common: CommonConsumerConfig {
            client: client(&broker.namesrv, "after-loss"),
            consumer_group: "after-loss-group".into(),
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            ..CommonConsumerConfig::push_defaults()
        },
        ..Default::default()
    });
    consumer
        .subscribe_with_selector(topic, MessageSelector::by_tag("*"))
        .unwrap();
    let s = seen.clone();
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            s.lock().unwrap().extend(msgs.iter().cloned());
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer.start().await.unwrap();
    wait_until("every uploaded message consumed", || {
        seen.lock().unwrap().len() >= in_tier.len()
    })
    .await;
    // New messages, after the tier's offsets.
    let producer = Producer::new(ProducerConfig {
        client: client(&broker.namesrv, "producer-after"),
        producer_group: "lost-disk-producer".into(),
        ..Default::default()
    });
    producer.start().await.unwrap();
    let mut new_keys = BTreeMap::new();
    for i in 0..20 {
        let body = format!("after the loss {i}");
        let msg = Message::new(topic, body.clone()).with_keys([format!("new{i}")]);
        let r = producer.send(msg).await.unwrap();
        assert!(phy_of_id(&r.offset_msg_id) >= tier_end, "{r:?}");
        let end = tier_queue_end
            .get(&r.message_queue.queue_id)
            .copied()
            .unwrap_or(0);
        assert!(r.queue_offset >= end, "{r:?} below the tier's {end}");
        new_keys.insert(format!("new{i}"), body);
    }
    producer.shutdown().await;
    wait_until("the new messages consumed", || {
        seen.lock().unwrap().len() >= in_tier.len() + new_keys.len()
    })
    .await;
    consumer.shutdown().await;

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), in_tier.len() + new_keys.len(), "no duplicates");
    for m in &seen {
        let key = m.property("KEYS").expect("keys").to_owned();
        if let Some(body) = new_keys.get(&key) {
            assert_eq!(&m.body[..], body.as_bytes(), "{key}");
            assert!(m.commit_log_offset >= tier_end, "{key}");
            continue;
        }
        let (body, phy, q, offset) = &in_tier[&key];
        assert_eq!(&m.body[..], body.as_bytes(), "{key}");
        assert_eq!(
            (m.commit_log_offset, m.queue_id, m.queue_offset),
            (*phy, *q, *offset),
            "{key}"
        );
    }
}

/// A broker whose tier reads starve: one reader, one byte a second, so that after the
/// first object read every read of another object waits for the budget far longer
/// than a test. Holds 300 messages of `ColdTopic` of which only the tier keeps the
/// first, and an empty `HotTopic`.
async fn starved_tier_broker(tier: &std::path::Path, client: &str) -> (Broker, Arc<TestClient>) {
    let broker = Broker::start(
        expiring(tiered(tier))
            .set("tieredStoreReadConcurrency", 1)
            .set("tieredStoreReadBandwidth", 1)
            .set("tieredStoreReadBlockSize", 4096)
            .set("tieredStoreReadTimeout", 600_000),
    );
    broker.create_topic("ColdTopic", 1).await;
    broker.create_topic("HotTopic", 1).await;
    let client = Arc::new(TestClient::new(client));
    for i in 0..300 {
        let body = format!("cold {i:04} ").repeat(40);
        client
            .send(&broker.addr, "ColdTopic", 0, body, String::new())
            .await;
    }
    wait_until("the first local commitlog files deleted", || {
        let files = local_files(&broker);
        files.len() <= 2 && files.first().is_some_and(|f| f != "00000000000000000000")
    })
    .await;
    (broker, client)
}

/// Requests waiting for the tier's read budget, from the broker's runtime info.
fn tier_reads_pending(info: &BTreeMap<String, String>) -> usize {
    info.get("tierReadsPending")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Sends one message to `HotTopic` and pulls it back, answered in full; returns the
/// broker's runtime info read right after.
async fn a_hot_tail_pull_is_answered(
    broker: &Broker,
    client: &TestClient,
) -> BTreeMap<String, String> {
    client
        .send(&broker.addr, "HotTopic", 0, "hot", String::new())
        .await;
    let hot = client
        .pull(&broker.addr, "hot", "HotTopic", 0, 0, 32, None, "*")
        .await;
    assert_eq!(hot.code, 0, "SUCCESS");
    assert_eq!(hot.messages.len(), 1);
    assert_eq!(&hot.messages[0].body[..], b"hot");
    client.runtime_info(&broker.addr).await
}

/// Pulls of cold data wait for the tier's read budget on the tier's own threads: a
/// pull of the hot tail is answered meanwhile, however many cold pulls are in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hot_tail_pull_is_answered_while_cold_pulls_wait_for_the_tier() {
    let tier = tempfile::tempdir().unwrap();
    let (broker, client) = starved_tier_broker(tier.path(), "budget").await;

    // More cold pulls than the broker has async workers, each from offset 0.
    const COLD: usize = 12;
    let cold: Vec<_> = (0..COLD)
        .map(|n| {
            let (c, addr) = (client.clone(), broker.addr.clone());
            tokio::spawn(async move {
                c.pull(
                    &addr,
                    &format!("cold-{n}"),
                    "ColdTopic",
                    0,
                    0,
                    32,
                    None,
                    "*",
                )
                .await
            })
        })
        .collect();
    eventually("every cold pull waiting for the tier", || {
        let (c, addr) = (client.clone(), broker.addr.clone());
        async move { tier_reads_pending(&c.runtime_info(&addr).await) == COLD }
    })
    .await;

    let info = a_hot_tail_pull_is_answered(&broker, &client).await;
    assert_eq!(tier_reads_pending(&info), COLD, "the cold pulls still wait");
    assert!(cold.iter().all(|c| !c.is_finished()));
    assert_eq!(
        info.get("tierReadsOverBudget").map(String::as_str),
        Some("0")
    );
}

/// Searches by time, lag figures (consumer progress) and queue entries (`queryCq`) that
/// read the tier wait for its read budget on the tier's reader threads, as cold pulls
/// do: a pull of the hot tail is answered meanwhile, however many of them wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hot_tail_pull_is_answered_while_searches_by_time_wait_for_the_tier() {
    let tier = tempfile::tempdir().unwrap();
    let (broker, client) = starved_tier_broker(tier.path(), "queries").await;
    // A group that consumed the first five messages: its lag figure is the store
    // time of offset 4, which only the tier has.
    let committed = client
        .update_offset(&broker.addr, "lagging", "ColdTopic", 0, 5)
        .await;
    assert_eq!(committed.code, response_code::SUCCESS);

    // The first object read (a block of the first record) is served and spends the
    // budget: the segment's queue index, which every request below needs, waits.
    let view = ViewMessageRequestHeader {
        offset: 0,
        topic: None,
    };
    let first = client
        .call(
            &broker.addr,
            RemotingCommand::request_with_header(request_code::VIEW_MESSAGE_BY_ID, &view),
        )
        .await;
    assert_eq!(first.code, response_code::SUCCESS, "{:?}", first.remark);

    // More of them than the broker has async workers.
    let requests: Vec<RemotingCommand> = (0..4)
        .flat_map(|_| {
            let search = SearchOffsetRequestHeader {
                topic: "ColdTopic".into(),
                queue_id: 0,
                timestamp: 0,
                boundary_type: None,
            };
            let entries = QueryConsumeQueueRequestHeader {
                topic: "ColdTopic".into(),
                queue_id: 0,
                index: 0,
                count: 10,
                consumer_group: None,
            };
            let progress = GetConsumeStatsRequestHeader {
                consumer_group: "lagging".into(),
                topic: Some("ColdTopic".into()),
            };
            [
                RemotingCommand::request_with_header(
                    request_code::SEARCH_OFFSET_BY_TIMESTAMP,
                    &search,
                ),
                RemotingCommand::request_with_header(request_code::QUERY_CONSUME_QUEUE, &entries),
                RemotingCommand::request_with_header(request_code::GET_CONSUME_STATS, &progress),
            ]
        })
        .collect();
    let waiting = requests.len();
    let queries: Vec<_> = requests
        .into_iter()
        .map(|request| {
            let (c, addr) = (client.clone(), broker.addr.clone());
            tokio::spawn(async move { c.call(&addr, request).await })
        })
        .collect();
    eventually("every query waiting for the tier", || {
        let (c, addr) = (client.clone(), broker.addr.clone());
        async move { tier_reads_pending(&c.runtime_info(&addr).await) == waiting }
    })
    .await;

    let info = a_hot_tail_pull_is_answered(&broker, &client).await;
    assert_eq!(tier_reads_pending(&info), waiting, "the queries still wait");
    assert!(queries.iter().all(|q| !q.is_finished()));
}
