//! The messages the scenarios send, and the check of what a consumer got back.
//!
//! Every message carries its own identity (`interop_id` property, and the same id at the
//! front of its body), so a consumer's record can be matched to what was sent by content
//! alone, whatever queue or order it arrived in.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use rocketmq_model::common::message::message_single::Message;

/// How a message was sent; also the prefix of its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SendKind {
    Sync,
    Async,
    Oneway,
    Batch,
    /// Sent after a group restarted, to show its consumer is live.
    Probe,
}

impl SendKind {
    pub fn name(self) -> &'static str {
        match self {
            SendKind::Sync => "sync",
            SendKind::Async => "async",
            SendKind::Oneway => "oneway",
            SendKind::Batch => "batch",
            SendKind::Probe => "probe",
        }
    }
}

/// Tags rotate over three values so that a `TagA || TagB` subscription has something to drop.
const TAGS: [&str; 3] = ["TagA", "TagB", "TagC"];

/// Bodies over this size are compressed by the producer (RocketMQ's default
/// `compressMsgBodyOverHowmuch` is 4 KiB), so one message per single-send kind crosses it.
const LARGE_BODY: usize = 8 * 1024;

/// What one message was sent with; the reference a received copy is compared to.
#[derive(Clone, Debug)]
pub struct Expected {
    pub id: String,
    pub topic: String,
    pub tags: String,
    pub keys: Vec<String>,
    pub user_properties: BTreeMap<String, String>,
    pub body: Vec<u8>,
    /// The message id (`UNIQ_KEY`) the send result reported, when there was one.
    pub msg_id: Option<String>,
    /// Where the send result said the message was stored, when there was one.
    pub stored: Option<Stored>,
}

/// A send result's account of where a message went.
#[derive(Clone, Debug)]
pub struct Stored {
    pub queue_id: i32,
    pub queue_offset: i64,
    /// The broker's offset message id: store host and commitlog offset
    /// (docs/message.md#offset-message-id).
    pub offset_msg_id: String,
}

/// Splits an offset message id into store host and commitlog offset: upper-case hex of
/// IPv4 (4 bytes) or IPv6 (16), port (4), offset (8); the length tells which.
pub fn decode_offset_msg_id(id: &str) -> Option<(SocketAddr, i64)> {
    let ip_len = match id.len() {
        32 => 4,
        56 => 16,
        _ => return None,
    };
    let bytes: Vec<u8> = (0..id.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(id.get(i..i + 2)?, 16).ok())
        .collect::<Option<_>>()?;
    let ip = if ip_len == 4 {
        IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(&bytes[..4]).ok()?))
    } else {
        IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(&bytes[..16]).ok()?))
    };
    let port = i32::from_be_bytes(bytes[ip_len..ip_len + 4].try_into().ok()?);
    let offset = i64::from_be_bytes(bytes[ip_len + 4..].try_into().ok()?);
    Some((SocketAddr::new(ip, u16::try_from(port).ok()?), offset))
}

impl Expected {
    pub fn new(run: &str, topic: &str, kind: SendKind, index: usize) -> Self {
        let id = format!("{}-{index}", kind.name());
        let tags = TAGS[index % TAGS.len()].to_string();
        let keys = vec![format!("key-{run}-{id}"), format!("alt-{id}")];
        let mut user_properties = BTreeMap::new();
        user_properties.insert("interop_id".to_string(), id.clone());
        user_properties.insert("interop_kind".to_string(), kind.name().to_string());
        // Non-ASCII and the characters that look like separators, but not RocketMQ's own
        // property separators (0x01, 0x02), which no value may contain.
        user_properties.insert(
            "interop_text".to_string(),
            format!("héllo=wörld; ✓ #{index}"),
        );
        let mut body = format!("{run}:{id}:").into_bytes();
        if index == 0 && matches!(kind, SendKind::Sync | SendKind::Async) {
            while body.len() < LARGE_BODY {
                body.extend_from_slice(b"compressible interop payload ");
            }
        } else {
            // Every byte value, at a length that differs per message.
            body.extend((0..(index * 37) % 300).map(|i| (i * 7 + index) as u8));
        }
        Expected {
            id,
            topic: topic.to_string(),
            tags,
            keys,
            user_properties,
            body,
            msg_id: None,
            stored: None,
        }
    }

    pub fn to_message(&self) -> Message {
        let mut builder = Message::builder()
            .topic(self.topic.as_str())
            .tags(self.tags.as_str())
            .keys(self.keys.clone())
            .body(self.body.clone());
        for (name, value) in &self.user_properties {
            builder = builder
                .raw_property(name.as_str(), value.as_str())
                .expect("interop_* property names are not reserved by RocketMQ");
        }
        builder.build().expect("the topic is set")
    }
}

/// One message as a consumer's listener saw it.
#[derive(Clone, Debug)]
pub struct Received {
    pub instance: String,
    pub topic: String,
    pub queue_id: i32,
    pub queue_offset: i64,
    pub reconsume_times: i32,
    pub commit_log_offset: i64,
    pub store_host: SocketAddr,
    pub properties: HashMap<String, String>,
    pub body: Vec<u8>,
}

impl Received {
    pub fn id(&self) -> Option<&str> {
        self.properties.get("interop_id").map(String::as_str)
    }

    /// Differences from what was sent, empty when the message arrived intact.
    pub fn diff(&self, expected: &Expected) -> Vec<String> {
        let mut out = Vec::new();
        if self.topic != expected.topic {
            out.push(format!("topic {:?} != {:?}", self.topic, expected.topic));
        }
        let tags = self.properties.get("TAGS").map(String::as_str);
        if tags != Some(expected.tags.as_str()) {
            out.push(format!("TAGS {tags:?} != {:?}", expected.tags));
        }
        // RocketMQ joins keys with a single space (MessageConst.KEY_SEPARATOR).
        let keys = self.properties.get("KEYS").map(String::as_str);
        let want_keys = expected.keys.join(" ");
        if keys != Some(want_keys.as_str()) {
            out.push(format!("KEYS {keys:?} != {want_keys:?}"));
        }
        for (name, value) in &expected.user_properties {
            let got = self.properties.get(name);
            if got != Some(value) {
                out.push(format!("property {name} {got:?} != {value:?}"));
            }
        }
        if let Some(msg_id) = &expected.msg_id {
            let uniq = self.properties.get("UNIQ_KEY");
            if uniq != Some(msg_id) {
                out.push(format!("UNIQ_KEY {uniq:?} != send result msgId {msg_id:?}"));
            }
        }
        // A redelivered message is a new record on the group's retry topic (only its topic
        // is restored), so the send result's position describes another record.
        let first_delivery = self.reconsume_times == 0;
        if let Some(stored) = expected.stored.as_ref().filter(|_| first_delivery) {
            let (queue, offset) = (self.queue_id, self.queue_offset);
            if (queue, offset) != (stored.queue_id, stored.queue_offset) {
                out.push(format!(
                    "queue {queue} offset {offset} != send result's queue {} offset {}",
                    stored.queue_id, stored.queue_offset
                ));
            }
            let want = (self.store_host, self.commit_log_offset);
            match decode_offset_msg_id(&stored.offset_msg_id) {
                Some(got) if got == want => {}
                got => out.push(format!(
                    "send result's offsetMsgId {:?} decodes to {got:?}, the record is at {want:?}",
                    stored.offset_msg_id
                )),
            }
        }
        if self.body != expected.body {
            out.push(format!(
                "body differs ({} bytes received, {} sent)",
                self.body.len(),
                expected.body.len()
            ));
        }
        out
    }
}

/// The outcome of comparing one group's records with the messages it should have got.
#[derive(Default, Debug)]
pub struct Verdict {
    pub expected: usize,
    pub received: usize,
    pub missing: Vec<String>,
    pub duplicated: Vec<(String, usize)>,
    pub unexpected: Vec<String>,
    pub corrupted: Vec<(String, Vec<String>)>,
    pub redelivered: usize,
    /// Queue ids each consumer instance took messages from.
    pub queues_by_instance: BTreeMap<String, Vec<i32>>,
}

impl Verdict {
    pub fn check<'a>(
        expected: impl Iterator<Item = &'a Expected>,
        records: &[Received],
    ) -> Verdict {
        let expected: BTreeMap<&str, &Expected> = expected.map(|e| (e.id.as_str(), e)).collect();
        let mut verdict = Verdict {
            expected: expected.len(),
            received: records.len(),
            ..Verdict::default()
        };
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for record in records {
            let queues = verdict
                .queues_by_instance
                .entry(record.instance.clone())
                .or_default();
            if !queues.contains(&record.queue_id) {
                queues.push(record.queue_id);
                queues.sort_unstable();
            }
            if record.reconsume_times > 0 {
                verdict.redelivered += 1;
            }
            let Some(id) = record.id() else {
                verdict.unexpected.push(format!(
                    "<no interop_id> queue {} offset {}",
                    record.queue_id, record.queue_offset
                ));
                continue;
            };
            match expected.get(id) {
                None => verdict.unexpected.push(id.to_string()),
                Some(want) => {
                    *counts.entry(want.id.as_str()).or_default() += 1;
                    let diff = record.diff(want);
                    if !diff.is_empty() {
                        verdict.corrupted.push((id.to_string(), diff));
                    }
                }
            }
        }
        for id in expected.keys() {
            match counts.get(id) {
                None => verdict.missing.push(id.to_string()),
                Some(&n) if n > 1 => verdict.duplicated.push((id.to_string(), n)),
                Some(_) => {}
            }
        }
        verdict
    }

    pub fn passed(&self) -> bool {
        self.missing.is_empty()
            && self.duplicated.is_empty()
            && self.unexpected.is_empty()
            && self.corrupted.is_empty()
    }

    pub fn summary(&self) -> String {
        let mut parts = vec![format!(
            "{} of {} expected received, {} deliveries",
            self.expected - self.missing.len(),
            self.expected,
            self.received
        )];
        if !self.missing.is_empty() {
            parts.push(format!("missing {}", abbreviate(&self.missing)));
        }
        if !self.duplicated.is_empty() {
            let ids: Vec<String> = self
                .duplicated
                .iter()
                .map(|(id, n)| format!("{id}x{n}"))
                .collect();
            parts.push(format!("duplicated {}", abbreviate(&ids)));
        }
        if !self.unexpected.is_empty() {
            parts.push(format!("unexpected {}", abbreviate(&self.unexpected)));
        }
        if !self.corrupted.is_empty() {
            let (id, diff) = &self.corrupted[0];
            parts.push(format!(
                "{} corrupted, first {id}: {}",
                self.corrupted.len(),
                diff.join("; ")
            ));
        }
        if self.redelivered > 0 {
            parts.push(format!("{} with reconsumeTimes > 0", self.redelivered));
        }
        let queues: Vec<String> = self
            .queues_by_instance
            .iter()
            .map(|(instance, q)| format!("{instance}: queues {q:?}"))
            .collect();
        if !queues.is_empty() {
            parts.push(queues.join(", "));
        }
        parts.join("; ")
    }
}

fn abbreviate(ids: &[String]) -> String {
    const SHOWN: usize = 8;
    if ids.len() <= SHOWN {
        format!("[{}]", ids.join(", "))
    } else {
        format!(
            "[{}, ... {} more]",
            ids[..SHOWN].join(", "),
            ids.len() - SHOWN
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn received_from(e: &Expected, instance: &str) -> Received {
        let mut properties: HashMap<String, String> = e
            .user_properties
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        properties.insert("TAGS".into(), e.tags.clone());
        properties.insert("KEYS".into(), e.keys.join(" "));
        Received {
            instance: instance.into(),
            topic: e.topic.clone(),
            queue_id: 0,
            queue_offset: 0,
            reconsume_times: 0,
            commit_log_offset: 0,
            store_host: "127.0.0.1:10911".parse().unwrap(),
            properties,
            body: e.body.clone(),
        }
    }

    #[test]
    fn exact_delivery_passes_and_faults_are_named() {
        let sent: Vec<Expected> = (0..3)
            .map(|i| Expected::new("r", "T", SendKind::Sync, i))
            .collect();
        let mut got: Vec<Received> = sent.iter().map(|e| received_from(e, "a")).collect();
        assert!(Verdict::check(sent.iter(), &got).passed());

        got[1].body.push(0);
        got.push(received_from(&sent[2], "b"));
        got.remove(0);
        let v = Verdict::check(sent.iter(), &got);
        assert_eq!(v.missing, vec!["sync-0".to_string()]);
        assert_eq!(v.duplicated, vec![("sync-2".to_string(), 2)]);
        assert_eq!(v.corrupted.len(), 1);
        assert!(!v.passed());
    }

    #[test]
    fn offset_msg_ids_decode_as_in_protocol_md() {
        let (host, offset) = decode_offset_msg_id("7F00000100002A9F0000000040000000").unwrap();
        assert_eq!(host, "127.0.0.1:10911".parse().unwrap());
        assert_eq!(offset, 1073741824);
        assert_eq!(decode_offset_msg_id("7F000001"), None);
        assert_eq!(
            decode_offset_msg_id("ZZ00000100002A9F0000000040000000"),
            None
        );
    }

    #[test]
    fn first_sync_and_async_bodies_cross_the_compression_threshold() {
        assert!(Expected::new("r", "T", SendKind::Sync, 0).body.len() >= LARGE_BODY);
        assert!(Expected::new("r", "T", SendKind::Async, 0).body.len() >= LARGE_BODY);
        assert!(Expected::new("r", "T", SendKind::Batch, 0).body.len() < 4096);
    }
}
