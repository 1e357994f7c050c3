//! `/send`: a test message (topic, tag, keys, body) stored as a producer's send would
//! be, answering its message id, queue and offset, as rocketmq-dashboard's "send
//! message" does. It is a SEND_MESSAGE: it needs PUB on the topic, not an admin.

use std::net::SocketAddr;

use bytes::Bytes;
use vostok_observe::http::HttpRequest;
use vostok_remoting::protocol::message::id::UniqIdGenerator;
use vostok_remoting::protocol::message::property::{self, Properties};
use vostok_remoting::protocol::topic;
use vostok_remoting::support::time::now_millis;

use super::html::{esc, url};
use super::offsets::Field;
use super::Console;
use crate::ops::send::{self as op, Destination, SendRequest};
use crate::ops::stored::Ack;

/// `/send?topic=T`: the form; `may_send`: the viewer may publish to the topic (else a
/// note).
pub(crate) fn page(c: &Console, r: &HttpRequest, may_send: bool) -> String {
    let topic = r.param("topic").unwrap_or_default();
    if !may_send {
        return "<p class=\"note\">Sending needs an account that may publish to the topic.</p>"
            .to_owned();
    }
    format!(
        "<form method=\"post\" action=\"/messages/send\" id=\"send-form\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
         <p><label>Topic <input name=\"topic\" id=\"s-topic\" required value=\"{}\"></label> \
         <label>Tag <input name=\"tag\" id=\"s-tag\"></label> \
         <label>Keys <input name=\"keys\" id=\"s-keys\"></label></p>\
         <p><label>Body<br><textarea name=\"body\" id=\"s-body\" rows=\"6\" cols=\"80\"></textarea></label></p>\
         <button type=\"submit\" id=\"s-send\">Send</button></form>\
         <p class=\"note\">Stored as a producer's send: consumers of the topic receive it. Keys are separated by spaces.</p>",
        esc(&c.token),
        esc(&topic)
    )
}

pub(crate) fn back(f: Field<'_>) -> String {
    format!("/send?topic={}", url(&f("topic")))
}

/// POST `/messages/send`: stores the message as sent from `peer`.
pub(crate) async fn send(c: &Console, f: Field<'_>, peer: SocketAddr) -> Result<String, String> {
    let name = f("topic");
    let b = &c.broker;
    if b.storage.topics.get(&name).is_none() || topic::is_system_topic(&name) {
        return Err(format!("no topic {name} to send to here"));
    }
    let mut props = Properties::new();
    let (tag, keys) = (f("tag"), f("keys"));
    if !tag.is_empty() {
        props.insert(property::TAGS, &tag);
    }
    if !keys.is_empty() {
        props.insert(property::KEYS, &keys);
    }
    props.insert(property::WAIT_STORE_MSG_OK, "true");
    // A unique id, as a producer gives each message: found by it, traced under it.
    let uniq = UniqIdGenerator::new(b.broker_addr.ip()).next_id();
    props.insert(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, &uniq);
    let request = SendRequest {
        to: Destination {
            topic: name.clone(),
            default_topic: topic::AUTO_CREATE_TOPIC_KEY_TOPIC.into(),
            default_topic_queue_nums: 4,
            queue_id: -1,
            unit_mode: false,
        },
        sys_flag: 0,
        born_timestamp: now_millis(),
        flag: 0,
        properties: props.encode(),
        body: Bytes::from(f("body").into_bytes()),
        reconsume_times: 0,
        max_reconsume_times: None,
        received: None,
    };
    let client = crate::ops::Client {
        addr: peer,
        connection: None,
    };
    let stored = op::send(op::SendTables::of(b), client, request)
        .await
        .map_err(|r| r.remark)?;
    let status = match stored.ack {
        Ack::Stored => "SEND_OK",
        Ack::FlushDiskTimeout => "FLUSH_DISK_TIMEOUT",
        Ack::FlushSlaveTimeout => "FLUSH_SLAVE_TIMEOUT",
        Ack::SlaveNotAvailable => "SLAVE_NOT_AVAILABLE",
    };
    Ok(format!(
        "{status}: sent to {name}, msgId {}, offsetMsgId {}, queue {}, offset {}",
        stored.uniq_key.as_deref().unwrap_or(&stored.msg_id),
        stored.msg_id,
        stored.queue_id,
        stored.queue_offset
    ))
}
