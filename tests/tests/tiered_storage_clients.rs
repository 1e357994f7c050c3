//! Tiered storage read through Apache's clients: messages with tags, keys and user
//! properties are stored by a broker with a file-system tier and tiny commitlog files,
//! the local files holding the first of them are deleted, and then a consumer group
//! created afterwards reads every message from offset 0, in order per queue,
//! byte-identical, through the C++ client (remoting, an orderly push consumer starting
//! at the first offset) and the 5.x Python client (gRPC, a simple consumer). The
//! scenarios are `tests/python/cpp_client.py` and `tests/python/grpc_client.py`;
//! without a client installed its test says so and passes without running.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;
use vostok_client::{Compression, Message, Producer, ProducerConfig};
use vostok_tests::client::TestClient;
use vostok_tests::python::{self, PyClient};
use vostok_tests::sdk::{client, wait_until};
use vostok_tests::tier::{expiring, local_files, phy_of_id, tiered};
use vostok_tests::Broker;

/// Bound of one scenario.
const T: Duration = Duration::from_secs(150);
const N: usize = 400;
const TOPIC: &str = "TierClientTopic";
const QUEUES: i32 = 4;
/// The user properties every message carries.
const PROPS: [&str; 3] = ["index", "origin", "note"];

/// What the broker stored, by (queue, queue offset), and how many of those messages
/// only the tier holds.
struct Stored {
    sent: BTreeMap<(i64, i64), Sent>,
    cold: usize,
}

/// What was stored at one (queue, queue offset).
#[derive(Debug, Clone)]
struct Sent {
    body: Vec<u8>,
    tags: String,
    keys: [String; 2],
    properties: BTreeMap<String, String>,
}

/// A broker with a file-system tier whose first local commitlog files are gone, and
/// what it stored by (queue, queue offset). The tier directory lives as long as the
/// broker is needed.
fn broker_with_cold_messages() -> (Broker, tempfile::TempDir, Stored) {
    let tier = tempfile::tempdir().unwrap();
    let broker = Broker::start(expiring(tiered(tier.path())));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let stored = runtime.block_on(async {
        broker.create_topic(TOPIC, QUEUES).await;
        let producer = Producer::new(ProducerConfig {
            client: client(&broker.namesrv, "producer"),
            producer_group: "tier-clients-producer".into(),
            // Apache's default; the C++ and 5.x clients inflate zlib only.
            compress_type: Compression::Zlib,
            ..Default::default()
        });
        producer.start().await.unwrap();
        let mut sent = BTreeMap::new();
        let mut phys = Vec::new();
        for i in 0..N {
            // Non-ASCII UTF-8 included; every tenth body is over the producer's
            // compression threshold (4 KiB), so it is stored compressed with zlib.
            let repeat = if i % 10 == 0 { 250 } else { 25 };
            let body = format!("tiered ünïcødé {i:04} €; ")
                .repeat(repeat)
                .into_bytes();
            let tags = format!("tag{}", i % 3);
            let keys = [format!("key{i}"), format!("alt{i}")];
            let properties: BTreeMap<String, String> = [
                ("index", i.to_string()),
                ("origin", "tier clients".to_owned()),
                ("note", format!("café № {i}")),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
            let mut msg = Message::new(TOPIC, body.clone())
                .with_tags(&tags)
                .with_keys(keys.clone());
            for (k, v) in &properties {
                msg = msg.with_property(k, v);
            }
            let r = producer.send(msg).await.unwrap();
            phys.push(phy_of_id(&r.offset_msg_id));
            let at = (i64::from(r.message_queue.queue_id), r.queue_offset);
            let previous = sent.insert(
                at,
                Sent {
                    body,
                    tags,
                    keys,
                    properties,
                },
            );
            assert!(previous.is_none(), "{at:?} given twice");
        }
        producer.shutdown().await;
        // Every sealed file reaches the tier and leaves the local disk.
        wait_until("the first local commitlog files deleted", || {
            let files = local_files(&broker);
            files.len() <= 2 && files.first().is_some_and(|f| f != "00000000000000000000")
        })
        .await;
        let first_local: i64 = local_files(&broker)[0].parse().expect("a file name");
        let cold = phys.iter().filter(|&&p| p < first_local).count();
        assert!(cold >= N / 2, "{cold} messages only in the tier");
        Stored { sent, cold }
    });
    (broker, tier, stored)
}

/// Checks what a client received against what was stored: every (queue, offset) once,
/// each queue from offset 0 in order, and each message's body, tag, keys and
/// properties as sent (`at` and `keys` read them from one received message); and that
/// the broker served the cold messages from the tier.
fn check(
    broker: &Broker,
    stored: &Stored,
    received: &[Value],
    at: impl Fn(&Value) -> (i64, i64),
    keys: impl Fn(&Value) -> Vec<String>,
    tag_field: &str,
) {
    check_messages(&stored.sent, received, at, keys, tag_field);
    let info = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(TestClient::default().runtime_info(&broker.addr));
    let read: usize = info
        .get("tierMessagesRead")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("tierMessagesRead in {info:?}"));
    assert!(
        read >= stored.cold,
        "{read} read from the tier, {} cold",
        stored.cold
    );
}

fn check_messages(
    sent: &BTreeMap<(i64, i64), Sent>,
    received: &[Value],
    at: impl Fn(&Value) -> (i64, i64),
    keys: impl Fn(&Value) -> Vec<String>,
    tag_field: &str,
) {
    let mut per_queue: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for m in received {
        let (q, offset) = at(m);
        let want = sent
            .get(&(q, offset))
            .unwrap_or_else(|| panic!("({q}, {offset}) was never stored: {m}"));
        let body = hex(m["body_hex"].as_str().expect("body_hex"));
        assert_eq!(body, want.body, "body at ({q}, {offset})");
        assert_ne!(m["corrupted"], true, "digest at ({q}, {offset})");
        assert_eq!(m[tag_field], want.tags.as_str(), "tag at ({q}, {offset})");
        // Compared as sets: the 5.x client keeps a message's keys in a set.
        let (mut got, mut keys_sent) = (keys(m), want.keys.to_vec());
        got.sort();
        keys_sent.sort();
        assert_eq!(got, keys_sent, "keys at ({q}, {offset})");
        for (name, value) in &want.properties {
            assert_eq!(
                m["properties"][name],
                value.as_str(),
                "property {name} at ({q}, {offset}): {m}"
            );
        }
        per_queue.entry(q).or_default().push(offset);
    }
    assert_eq!(received.len(), N, "each message once");
    assert_eq!(per_queue.len(), QUEUES as usize, "{per_queue:?}");
    for (q, offsets) in per_queue {
        let want: Vec<i64> = (0..offsets.len() as i64).collect();
        assert_eq!(offsets, want, "queue {q}: from offset 0, in order");
    }
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

#[test]
fn a_new_cpp_client_group_reads_the_tier_from_offset_0() {
    let Some(py) = python::interpreter(PyClient::Cpp) else {
        return;
    };
    let (broker, _tier, stored) = broker_with_cold_messages();
    let r = python::run(
        &py,
        "cpp_client.py",
        &[
            "consume_first",
            &broker.namesrv,
            TOPIC,
            "tier-cpp-group",
            &N.to_string(),
            &PROPS.join(","),
        ],
        T,
    );
    assert_eq!(r["finished"], true, "{r}");
    check(
        &broker,
        &stored,
        r["seen"].as_array().expect("seen"),
        |m| (m["queue"].as_i64().unwrap(), m["offset"].as_i64().unwrap()),
        |m| {
            m["keys"]
                .as_str()
                .unwrap_or_default()
                .split(' ')
                .map(str::to_owned)
                .collect()
        },
        "tags",
    );
}

#[test]
fn a_new_grpc_client_group_reads_the_tier_from_offset_0() {
    let Some(py) = python::interpreter(PyClient::V5) else {
        return;
    };
    let (broker, _tier, stored) = broker_with_cold_messages();
    let endpoint = broker.grpc_addr.clone().expect("the gRPC endpoint");
    // A new 5.x group starts at each queue's first offset (the broker's POP `initMode`
    // for gRPC is the minimum), which with the tier is 0.
    let r = python::run(
        &py,
        "grpc_client.py",
        &[
            "consume",
            &endpoint,
            TOPIC,
            "GID_TierClients",
            &N.to_string(),
        ],
        T,
    );
    check(
        &broker,
        &stored,
        r["received"].as_array().expect("received"),
        |m| {
            // The receipt handle's 7th and 8th fields: queue id and queue offset.
            let handle: Vec<&str> = m["handle"].as_str().unwrap().split(' ').collect();
            (handle[6].parse().unwrap(), handle[7].parse().unwrap())
        },
        |m| {
            m["keys"]
                .as_array()
                .expect("keys")
                .iter()
                .map(|k| k.as_str().unwrap_or_default().to_owned())
                .collect()
        },
        "tag",
    );
}
