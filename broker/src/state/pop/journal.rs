//! Records of the revive topic (docs/pop.md#the-revive-topic): what makes POP state
//! survive a restart.
//!
//! Each pop writes a checkpoint record (tag `ck`) before it answers, each ack an ack
//! record (`ack`, or `bAck` for several offsets) before it answers, and the revive
//! service a `bAck` record naming what it revived. The bodies are RocketMQ's
//! `PopCheckPoint`, `AckMsg` and `BatchAckMsg` JSON:
//!
//! | record | keys |
//! |---|---|
//! | `ck` | `so` start offset, `pt` pop time, `it` invisible time, `bm` ack bitmap, `n` count, `q` queue, `t` topic, `c` group, `ro` revive offset, `d` offset diffs, `bn` broker |
//! | `ack` | `ao` acked offset, `so`, `c`, `t`, `q`, `pt`, `bn` |
//! | `bAck` | as `ack`, with `aol` the acked offsets (`ao` is -1) |
//!
//! **Vostok differs:** the records are stored straight into the revive queue, not as
//! timer messages due at the revive time; replay at start-up reads each revive queue
//! from its watermark and rebuilds the live checkpoints.

use std::net::SocketAddr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use vostok_remoting::protocol::filter::tags_code;
use vostok_remoting::protocol::message::property::{self, Properties};
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::pop::{ACK_TAG, BATCH_ACK_TAG, CK_TAG};
use vostok_remoting::support::time::now_millis;
use vostok_store::MessageInner;

use super::checkpoint::{Checkpoint, CkKey};

#[derive(Serialize, Deserialize)]
struct CkJson {
    so: i64,
    pt: i64,
    it: i64,
    #[serde(default)]
    bm: i64,
    n: i32,
    q: i32,
    t: String,
    c: String,
    #[serde(default)]
    ro: i64,
    #[serde(default)]
    d: Vec<i64>,
    #[serde(default)]
    bn: String,
}

#[derive(Serialize, Deserialize)]
struct AckJson {
    #[serde(default = "minus_one")]
    ao: i64,
    so: i64,
    c: String,
    t: String,
    q: i32,
    pt: i64,
    #[serde(default)]
    bn: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    aol: Vec<i64>,
}

fn minus_one() -> i64 {
    -1
}

/// A record read back from the revive topic.
#[derive(Debug)]
pub(crate) enum JournalRecord {
    /// A checkpoint; its `revive_qid` and `revive_offset` are where the record was read.
    Checkpoint(Checkpoint),
    Ack {
        key: CkKey,
        offsets: Vec<i64>,
    },
}

/// The record of a checkpoint about to be stored in revive queue `ck.revive_qid`.
pub(crate) fn checkpoint_record(
    ck: &Checkpoint,
    revive_topic: &str,
    broker_name: &str,
    host: SocketAddr,
) -> MessageInner {
    let body = CkJson {
        so: ck.key.start_offset,
        pt: ck.key.pop_time,
        it: ck.invisible_time,
        bm: ck.acked as i64,
        n: ck.diffs.len() as i32,
        q: ck.key.queue_id,
        t: ck.key.topic.to_string(),
        c: ck.key.group.to_string(),
        ro: -1,
        d: ck.diffs.iter().map(|&d| i64::from(d)).collect(),
        bn: broker_name.to_owned(),
    };
    record(
        revive_topic,
        ck.revive_qid,
        CK_TAG,
        serde_json::to_vec(&body),
        host,
    )
}

/// The record of acks of `offsets` of checkpoint `key`.
pub(crate) fn ack_record(
    key: &CkKey,
    offsets: &[i64],
    revive_topic: &str,
    revive_qid: i32,
    broker_name: &str,
    host: SocketAddr,
) -> MessageInner {
    let single = offsets.len() == 1;
    let body = AckJson {
        ao: if single { offsets[0] } else { -1 },
        so: key.start_offset,
        c: key.group.to_string(),
        t: key.topic.to_string(),
        q: key.queue_id,
        pt: key.pop_time,
        bn: broker_name.to_owned(),
        aol: if single { Vec::new() } else { offsets.to_vec() },
    };
    let tag = if single { ACK_TAG } else { BATCH_ACK_TAG };
    record(
        revive_topic,
        revive_qid,
        tag,
        serde_json::to_vec(&body),
        host,
    )
}

fn record(
    topic: &str,
    queue_id: i32,
    tag: &str,
    body: serde_json::Result<Vec<u8>>,
    host: SocketAddr,
) -> MessageInner {
    let props: Properties = [(property::TAGS, tag)].into_iter().collect();
    // Serialising these plain structs cannot fail; an empty body would be skipped on
    // replay.
    let body = body.unwrap_or_default().into();
    MessageInner {
        tags_code: tags_code(Some(tag)),
        born_timestamp: now_millis(),
        ..MessageInner::new(topic, queue_id, body, props.into_string(), host)
    }
}

/// Reads a revive-topic record; `None` for a record that is not one of ours or is
/// malformed (skipped, with the caller logging it).
pub(crate) fn read(msg: &MessageExt) -> Option<JournalRecord> {
    match msg.properties.tags()? {
        CK_TAG => {
            let j: CkJson = serde_json::from_slice(&msg.body).ok()?;
            let mut diffs: Vec<u32> = if j.d.is_empty() {
                (0..j.n.max(0) as u32).collect()
            } else {
                j.d.iter()
                    .map(|&d| u32::try_from(d).ok())
                    .collect::<Option<_>>()?
            };
            diffs.truncate(super::checkpoint::MAX_CK_MESSAGES);
            Some(JournalRecord::Checkpoint(Checkpoint {
                key: CkKey {
                    topic: Arc::from(j.t),
                    group: Arc::from(j.c),
                    queue_id: j.q,
                    start_offset: j.so,
                    pop_time: j.pt,
                },
                invisible_time: j.it,
                diffs: diffs.into(),
                acked: j.bm as u64,
                revive_qid: msg.queue_id,
                revive_offset: msg.queue_offset,
            }))
        }
        ACK_TAG | BATCH_ACK_TAG => {
            let j: AckJson = serde_json::from_slice(&msg.body).ok()?;
            let offsets = if j.aol.is_empty() { vec![j.ao] } else { j.aol };
            Some(JournalRecord::Ack {
                key: CkKey {
                    topic: Arc::from(j.t),
                    group: Arc::from(j.c),
                    queue_id: j.q,
                    start_offset: j.so,
                    pop_time: j.pt,
                },
                offsets,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn stored(inner: &MessageInner, queue_offset: i64) -> MessageExt {
        MessageExt {
            queue_offset,
            born_host: inner.born_host,
            ..MessageExt::new(
                inner.topic.clone(),
                inner.queue_id,
                inner.body.clone(),
                Properties::decode(&inner.properties),
                inner.store_host,
            )
        }
    }

    fn key() -> CkKey {
        CkKey {
            topic: "%RETRY%g_T".into(),
            group: "g".into(),
            queue_id: 0,
            start_offset: 40,
            pop_time: 1_700_000_000_000,
        }
    }

    #[test]
    fn checkpoints_and_acks_read_back() {
        let host: SocketAddr = "127.0.0.1:10911".parse().unwrap();
        let ck = Checkpoint {
            key: key(),
            invisible_time: 60_000,
            diffs: vec![0, 1, 5].into(),
            acked: 0,
            revive_qid: 3,
            revive_offset: 0,
        };
        let rec = checkpoint_record(&ck, "rmq_sys_REVIVE_LOG_C", "b", host);
        assert_eq!(
            (rec.queue_id, rec.topic.as_str()),
            (3, "rmq_sys_REVIVE_LOG_C")
        );
        let Some(JournalRecord::Checkpoint(back)) = read(&stored(&rec, 9)) else {
            panic!("not a checkpoint");
        };
        assert_eq!((back.key.clone(), back.revive_offset), (key(), 9));
        assert_eq!(&*back.diffs, &[0, 1, 5]);
        for offsets in [vec![41], vec![40, 45]] {
            let rec = ack_record(&key(), &offsets, "R", 3, "b", host);
            let Some(JournalRecord::Ack { key: k, offsets: o }) = read(&stored(&rec, 10)) else {
                panic!("not an ack");
            };
            assert_eq!((k, o), (key(), offsets));
        }
    }

    #[test]
    fn java_checkpoints_without_diffs_and_garbage() {
        let mut m = stored(
            &record(
                "R",
                0,
                CK_TAG,
                Ok(
                    b"{\"so\":5,\"pt\":1,\"it\":2,\"n\":3,\"q\":0,\"t\":\"T\",\"c\":\"g\"}"
                        .to_vec(),
                ),
                "127.0.0.1:1".parse().unwrap(),
            ),
            0,
        );
        let Some(JournalRecord::Checkpoint(ck)) = read(&m) else {
            panic!("not read");
        };
        assert_eq!(&*ck.diffs, &[0, 1, 2]);
        m.body = Bytes::from_static(b"{not json");
        assert!(read(&m).is_none());
    }
}
