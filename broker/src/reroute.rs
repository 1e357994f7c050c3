//! Parking messages in system topics and restoring them.
//!
//! Three features hold a message back by storing it in a system topic first, with its
//! real topic and queue in `REAL_TOPIC` / `REAL_QUEUE_ID`, and store it again in the real
//! topic later (docs/flows.md, "Delay levels" and "Transactions"):
//!
//! | parked in                      | for                    | restored when                 |
//! |--------------------------------|------------------------|-------------------------------|
//! | `SCHEDULE_TOPIC_XXXX`, level-1 | delay levels (`DELAY`) | the level's delay has passed  |
//! | `rmq_sys_wheel_timer`, queue 0 | timers (`TIMER_*`)     | `TIMER_OUT_MS` has come       |
//! | `RMQ_SYS_TRANS_HALF_TOPIC`, 0  | prepared transactions  | END_TRANSACTION commits       |
//!
//! Everything that writes a stored message again (a restore, a retry or dead letter, a
//! timer rolled forward, a half message re-appended for its next check) starts from
//! [`copy_of`], the one constructor from a stored message. Parking and restoring edit
//! the copy's properties and move it; nothing else in the broker spells out which
//! properties travel with a parked message.

use std::net::SocketAddr;

use vostok_remoting::protocol::filter::tags_code;
use vostok_remoting::protocol::message::property::{self, Properties};
use vostok_remoting::protocol::message::{sysflag, MessageExt};
use vostok_remoting::protocol::topic::{SCHEDULE_TOPIC, TIMER_TOPIC, TRANS_HALF_TOPIC};
use vostok_remoting::support::time::now_millis;
use vostok_store::{MessageInner, MessageStore};

/// On a timer record rolled forward: the queue offset of the record it replaces, so
/// that a restart before the next checkpoint does not deliver both. Removed on delivery.
pub(crate) const TIMER_ROLL_FROM: &str = "TIMER_ROLL_FROM";

/// The properties that ask for a timer.
const TIMER_REQUEST: &[&str] = &[
    property::TIMER_DELIVER_MS,
    property::TIMER_DELAY_SEC,
    property::TIMER_DELAY_MS,
];

/// The topic a stored message is for: its `REAL_TOPIC` when it waits in one of the
/// parking topics above, else the topic it is stored in. Only the broker parks
/// messages, and parking overwrites `REAL_TOPIC`: a client cannot choose it.
pub(crate) fn topic_of<'a>(stored_topic: &'a str, real_topic: Option<&'a str>) -> &'a str {
    match real_topic {
        Some(real) if [SCHEDULE_TOPIC, TIMER_TOPIC, TRANS_HALF_TOPIC].contains(&stored_topic) => {
            real
        }
        _ => stored_topic,
    }
}

/// Where a message waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parking {
    /// A delay level, 1-based and already clamped to the configured levels.
    Delay { level: i32 },
    /// A timer, due at `at` (ms since the epoch).
    Timer { at: i64 },
    /// A prepared transaction.
    Half,
}

/// A copy of a stored message to be written again: same topic, queue, body,
/// properties, flags and birth; this broker as the store host.
pub(crate) fn copy_of(stored: &MessageExt, store_host: SocketAddr) -> MessageInner {
    MessageInner {
        flag: stored.flag,
        tags_code: tags_code(stored.properties.tags()),
        sys_flag: stored.sys_flag,
        born_timestamp: stored.born_timestamp,
        born_host: stored.born_host,
        reconsume_times: stored.reconsume_times,
        ..MessageInner::new(
            stored.topic.clone(),
            stored.queue_id,
            stored.body.clone(),
            stored.properties.encode(),
            store_host,
        )
    }
}

/// Moves `msg` into its parking topic; `props` are its properties (normalised).
pub(crate) fn park(msg: &mut MessageInner, mut props: Properties, parking: Parking) {
    props.insert(property::REAL_TOPIC, &msg.topic);
    props.insert(property::REAL_QUEUE_ID, msg.queue_id.to_string());
    let (topic, queue_id, tags) = match parking {
        Parking::Delay { level } => {
            props.insert(property::DELAY_TIME_LEVEL, level.to_string());
            (SCHEDULE_TOPIC, level - 1, msg.tags_code)
        }
        Parking::Timer { at } => {
            for name in TIMER_REQUEST {
                props.remove(name);
            }
            props.insert(property::TIMER_OUT_MS, at.to_string());
            (TIMER_TOPIC, 0, at)
        }
        Parking::Half => {
            // A half message is never delayed itself (Java clients clear the level;
            // others may not).
            props.remove(property::DELAY_TIME_LEVEL);
            if props.get(property::TRANSACTION_ID).is_none() {
                if let Some(uniq) = props.uniq_key().map(str::to_owned) {
                    props.insert(property::TRANSACTION_ID, uniq);
                }
            }
            msg.sys_flag =
                sysflag::reset_transaction_type(msg.sys_flag, sysflag::TRANSACTION_NOT_TYPE);
            (TRANS_HALF_TOPIC, 0, 0)
        }
    };
    msg.properties = props.into_string();
    msg.topic = topic.to_owned();
    msg.queue_id = queue_id;
    msg.tags_code = tags;
}

/// The message a delay-level record stands for, due now (`messageTimeUp`).
pub(crate) fn restore_delayed(parked: &MessageExt, store_host: SocketAddr) -> Option<MessageInner> {
    let mut msg = into_real_queue(parked, store_host)?;
    msg.prepared_transaction_offset = parked.prepared_transaction_offset;
    edit(&mut msg, |p| {
        p.remove(property::DELAY_TIME_LEVEL);
        p.insert(property::WAIT_STORE_MSG_OK, "false");
    });
    Some(msg)
}

/// The message a timer record stands for, due now.
pub(crate) fn restore_timer(parked: &MessageExt, store_host: SocketAddr) -> Option<MessageInner> {
    let mut msg = into_real_queue(parked, store_host)?;
    edit(&mut msg, |p| {
        for name in [
            property::REAL_TOPIC,
            property::REAL_QUEUE_ID,
            property::WAIT_STORE_MSG_OK,
            TIMER_ROLL_FROM,
        ] {
            p.remove(name);
        }
        p.insert(property::TIMER_DEQUEUE_MS, now_millis().to_string());
    });
    Some(msg)
}

/// The committed message for a half record (`endMessageTransaction`).
pub(crate) fn restore_committed(half: &MessageExt, store_host: SocketAddr) -> Option<MessageInner> {
    let mut msg = into_real_queue(half, store_host)?;
    msg.sys_flag = sysflag::reset_transaction_type(half.sys_flag, sysflag::TRANSACTION_COMMIT_TYPE);
    msg.prepared_transaction_offset = half.commit_log_offset;
    edit(&mut msg, |p| {
        for name in [
            property::REAL_TOPIC,
            property::REAL_QUEUE_ID,
            property::TRANSACTION_PREPARED,
            property::TRANSACTION_CHECK_TIMES,
        ] {
            p.remove(name);
        }
    });
    Some(msg)
}

/// A copy of a timer record at the end of the timer queue, replacing the record at
/// `offset` (which then counts as delivered).
pub(crate) fn roll_timer(parked: &MessageExt, offset: i64, store_host: SocketAddr) -> MessageInner {
    let mut copy = copy_of(parked, store_host);
    let rolls: i64 = parked
        .property(property::TIMER_ROLL_TIMES)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    copy.tags_code = parked
        .property(property::TIMER_OUT_MS)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    edit(&mut copy, |p| {
        p.insert(property::TIMER_ROLL_TIMES, (rolls + 1).to_string());
        p.insert(TIMER_ROLL_FROM, offset.to_string());
    });
    copy
}

/// The absolute delivery time a timer message asks for (`TIMER_DELIVER_MS`, else
/// `TIMER_DELAY_SEC`, else `TIMER_DELAY_MS`), or a remark for MESSAGE_ILLEGAL.
pub(crate) fn timer_due_at(props: &Properties, now: i64) -> Result<i64, String> {
    let read = |name: &str| -> Result<Option<i64>, String> {
        props
            .get(name)
            .map(|v| {
                v.trim()
                    .parse::<i64>()
                    .map_err(|_| format!("{name} {v:?} is not a number"))
            })
            .transpose()
    };
    if let Some(at) = read(property::TIMER_DELIVER_MS)? {
        return Ok(at);
    }
    if let Some(secs) = read(property::TIMER_DELAY_SEC)? {
        return Ok(now.saturating_add(secs.saturating_mul(1000)));
    }
    if let Some(ms) = read(property::TIMER_DELAY_MS)? {
        return Ok(now.saturating_add(ms));
    }
    Err("no timer property".to_owned())
}

/// Drops the timer request properties of a message delivered at once.
pub(crate) fn without_timer_request(mut props: Properties) -> Properties {
    for name in TIMER_REQUEST {
        props.remove(name);
    }
    props
}

/// True when the message a parked record stands for is already in its real topic: the
/// index has a copy with the record's `UNIQ_KEY` stored after the record. Delivery
/// services ask this after a restart, so that a crash between storing a restored copy
/// and saving their progress does not deliver it twice.
pub(crate) fn already_restored(store: &MessageStore, parked: &MessageExt) -> bool {
    let (Some(topic), Some(key)) = (
        parked.property(property::REAL_TOPIC),
        parked.property(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
    ) else {
        return false;
    };
    let found = store.query_message(topic, key, 64, parked.store_timestamp, i64::MAX);
    found.messages.iter().any(|record| {
        MessageExt::decode(record, false).is_ok_and(|copy| {
            copy.topic == topic
                && copy.commit_log_offset > parked.commit_log_offset
                && copy.properties.uniq_key() == Some(key)
        })
    })
}

/// A parked message moved to the topic and queue its properties name.
fn into_real_queue(parked: &MessageExt, store_host: SocketAddr) -> Option<MessageInner> {
    let topic = parked.property(property::REAL_TOPIC)?.to_owned();
    let queue_id = parked.property(property::REAL_QUEUE_ID)?.parse().ok()?;
    let mut msg = copy_of(parked, store_host);
    msg.topic = topic;
    msg.queue_id = queue_id;
    Some(msg)
}

/// Edits a copy's properties, keeping its tag code in step.
fn edit(msg: &mut MessageInner, f: impl FnOnce(&mut Properties)) {
    let mut props = Properties::decode_owned_with(std::mem::take(&mut msg.properties), |_, _| {});
    f(&mut props);
    if msg.topic != TIMER_TOPIC {
        msg.tags_code = tags_code(props.tags());
    }
    msg.properties = props.into_string();
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn addr() -> SocketAddr {
        "10.0.0.1:10911".parse().unwrap()
    }

    fn message(topic: &str, props: &[(&str, &str)]) -> MessageInner {
        MessageInner {
            topic: topic.into(),
            queue_id: 3,
            flag: 7,
            body: Bytes::from_static(b"body"),
            properties: props.iter().copied().collect::<Properties>().into_string(),
            tags_code: 0,
            sys_flag: 0,
            born_timestamp: 1,
            born_host: addr(),
            store_host: addr(),
            reconsume_times: 2,
            prepared_transaction_offset: 0,
        }
    }

    /// The record the store would keep for `msg`.
    fn stored(msg: &MessageInner, queue_offset: i64, commit_log_offset: i64) -> MessageExt {
        MessageExt {
            flag: msg.flag,
            queue_offset,
            sys_flag: msg.sys_flag,
            born_timestamp: msg.born_timestamp,
            born_host: msg.born_host,
            store_timestamp: 5,
            commit_log_offset,
            reconsume_times: msg.reconsume_times,
            prepared_transaction_offset: msg.prepared_transaction_offset,
            ..MessageExt::new(
                msg.topic.clone(),
                msg.queue_id,
                msg.body.clone(),
                Properties::decode(&msg.properties),
                msg.store_host,
            )
        }
    }

    fn props(msg: &MessageInner) -> Properties {
        Properties::decode(&msg.properties)
    }

    #[test]
    fn a_delayed_message_parks_and_comes_back_unchanged() {
        let original = message("T", &[("TAGS", "a"), ("DELAY", "3")]);
        let mut parked = original.clone();
        park(&mut parked, props(&original), Parking::Delay { level: 3 });
        assert_eq!(
            (parked.topic.as_str(), parked.queue_id),
            (SCHEDULE_TOPIC, 2)
        );
        assert_eq!(props(&parked).get(property::REAL_TOPIC), Some("T"));
        let back = restore_delayed(&stored(&parked, 0, 100), addr()).unwrap();
        assert_eq!((back.topic.as_str(), back.queue_id), ("T", 3));
        let p = props(&back);
        assert_eq!(p.get(property::DELAY_TIME_LEVEL), None);
        assert_eq!(p.get(property::WAIT_STORE_MSG_OK), Some("false"));
        assert_eq!(back.tags_code, tags_code(Some("a")));
        assert_eq!((back.body, back.reconsume_times), (original.body, 2));
    }

    #[test]
    fn a_timer_parks_with_its_due_time_and_is_restored_without_it() {
        let original = message("T", &[(property::TIMER_DELAY_SEC, "5")]);
        let at = timer_due_at(&props(&original), 1_000).unwrap();
        assert_eq!(at, 6_000);
        let mut parked = original.clone();
        park(&mut parked, props(&original), Parking::Timer { at });
        assert_eq!((parked.topic.as_str(), parked.tags_code), (TIMER_TOPIC, at));
        assert_eq!(props(&parked).get(property::TIMER_DELAY_SEC), None);
        let rolled = roll_timer(&stored(&parked, 4, 100), 4, addr());
        assert_eq!(rolled.tags_code, at);
        assert_eq!(props(&rolled).get(TIMER_ROLL_FROM), Some("4"));
        let back = restore_timer(&stored(&rolled, 9, 200), addr()).unwrap();
        let p = props(&back);
        assert_eq!((back.topic.as_str(), back.queue_id), ("T", 3));
        assert!(p.get(property::REAL_TOPIC).is_none() && p.get(TIMER_ROLL_FROM).is_none());
        assert!(p.get(property::TIMER_DEQUEUE_MS).is_some());
    }

    #[test]
    fn a_half_message_is_committed_to_its_real_queue() {
        let original = message(
            "T",
            &[
                (property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "U1"),
                ("DELAY", "2"),
            ],
        );
        let mut half = original.clone();
        half.sys_flag = sysflag::TRANSACTION_PREPARED_TYPE;
        park(&mut half, props(&original), Parking::Half);
        assert_eq!(half.topic, TRANS_HALF_TOPIC);
        assert_eq!(
            sysflag::transaction_type(half.sys_flag),
            sysflag::TRANSACTION_NOT_TYPE
        );
        let p = props(&half);
        assert_eq!(p.get(property::TRANSACTION_ID), Some("U1"));
        assert_eq!(p.get(property::DELAY_TIME_LEVEL), None);
        let committed = restore_committed(&stored(&half, 0, 4242), addr()).unwrap();
        assert_eq!((committed.topic.as_str(), committed.queue_id), ("T", 3));
        assert_eq!(committed.prepared_transaction_offset, 4242);
        assert_eq!(
            sysflag::transaction_type(committed.sys_flag),
            sysflag::TRANSACTION_COMMIT_TYPE
        );
        assert!(props(&committed).get(property::REAL_TOPIC).is_none());
    }

    #[test]
    fn a_record_without_its_real_topic_is_not_restored() {
        let parked = stored(&message(SCHEDULE_TOPIC, &[("DELAY", "1")]), 0, 0);
        assert!(restore_delayed(&parked, addr()).is_none());
        assert!(restore_timer(&parked, addr()).is_none());
        assert!(restore_committed(&parked, addr()).is_none());
    }

    #[test]
    fn bad_timer_properties_are_named() {
        let p: Properties = [(property::TIMER_DELAY_MS, "soon")].into_iter().collect();
        assert!(timer_due_at(&p, 0).unwrap_err().contains("TIMER_DELAY_MS"));
        assert!(timer_due_at(&Properties::new(), 0).is_err());
    }
}
