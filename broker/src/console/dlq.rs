//! `/dlq?group=G`: a group's dead-letter queue (`%DLQ%G`), as rocketmq-dashboard's
//! DLQ page: its messages with the topic each came from, resent one by one or all at
//! once to that topic (a copy with its reconsume count back at zero; the dead letter
//! stays, as Apache's resend leaves it), and exported as JSON lines.

use std::fmt::Write;

use vostok_observe::http::{HttpRequest, HttpResponse};
use vostok_remoting::protocol::message::id::create_offset_msg_id;
use vostok_remoting::protocol::message::property;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::topic;

use super::html::{esc, form, hidden, size, table, time, url};
use super::offsets::Field;
use super::Console;

/// Messages a page lists.
const PAGE: usize = 64;
/// Messages an export or a "resend all" reads at most.
const MAX_ALL: usize = 10_000;

/// Up to `max` dead letters of `group` from offset `from` of each queue.
fn dead_letters(c: &Console, group: &str, from: i64, max: usize) -> Vec<MessageExt> {
    let b = &c.broker;
    let dlq = topic::dlq_topic(group);
    let mut out = Vec::new();
    for q in b.storage.store.queue_ids(&dlq) {
        let mut offset = from.max(b.storage.store.min_offset_in_queue(&dlq, q));
        let end = b.storage.store.max_offset_in_queue(&dlq, q);
        while offset < end && out.len() < max {
            if let Some(m) = crate::ops::browse::message_at(&b.storage.store, &dlq, q, offset) {
                out.push(m);
            }
            offset += 1;
        }
    }
    out
}

fn original_topic(m: &MessageExt) -> &str {
    m.properties.get(property::RETRY_TOPIC).unwrap_or("")
}

fn offset_id(m: &MessageExt) -> String {
    create_offset_msg_id(m.store_host, m.commit_log_offset)
}

/// `/dlq?group=G[&from=N]`: the dead letters, with resend buttons for an admin.
pub(crate) fn page(c: &Console, r: &HttpRequest, admin: bool) -> String {
    let group = r.param("group").unwrap_or_default();
    let from: i64 = r.param("from").and_then(|f| f.parse().ok()).unwrap_or(0);
    let dlq = topic::dlq_topic(&group);
    let b = &c.broker;
    let kept: i64 = b
        .storage
        .store
        .queue_ids(&dlq)
        .into_iter()
        .map(|q| {
            (b.storage.store.max_offset_in_queue(&dlq, q)
                - b.storage.store.min_offset_in_queue(&dlq, q))
            .max(0)
        })
        .sum();
    let back = format!("/dlq?group={}&from={from}", url(&group));
    let list = dead_letters(c, &group, from, PAGE);
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|m| {
            let id = offset_id(m);
            let resend = if admin {
                form(
                    "/messages/resend",
                    &c.token,
                    &(hidden("group", &group) + &hidden("msgId", &id) + &hidden("back", &back)),
                    "Resend",
                )
            } else {
                String::new()
            };
            vec![
                m.queue_offset.to_string(),
                format!(
                    "<a href=\"/messages?topic={}&amp;id={}\">{}</a>",
                    url(&dlq),
                    url(&id),
                    esc(&id)
                ),
                esc(original_topic(m)),
                esc(m.properties.get(property::KEYS).unwrap_or("")),
                esc(m.properties.get(property::TAGS).unwrap_or("")),
                time(m.store_timestamp),
                size(m.body.len() as i64),
                resend,
            ]
        })
        .collect();
    let mut out = format!(
        "<p>Group <a href=\"/group?name={}\">{}</a>: <strong id=\"dlq-kept\">{kept}</strong> dead letters kept in {}. Resending stores a copy in the topic it came from; the dead letter stays.</p>",
        url(&group),
        esc(&group),
        esc(&dlq)
    );
    out.push_str(&table(
        "dlq",
        &[
            "Offset",
            "Message id",
            "From topic",
            "Keys",
            "Tags",
            "Stored",
            "Body",
            "",
        ],
        &rows,
    ));
    if list.len() == PAGE {
        let next = list.iter().map(|m| m.queue_offset).max().unwrap_or(from) + 1;
        let _ = write!(
            out,
            "<p><a href=\"/dlq?group={}&amp;from={next}\" id=\"dlq-next\">Next {PAGE}</a></p>",
            url(&group)
        );
    }
    let _ = write!(
        out,
        "<p><a href=\"/dlq/export?group={}\" id=\"dlq-export\" download>Export as JSON lines</a></p>",
        url(&group)
    );
    if admin && kept > 0 {
        out.push_str(
            &form(
                "/dlq/resend-all",
                &c.token,
                &hidden("group", &group),
                "Resend all",
            )
            .replacen("<button ", "<button id=\"dlq-resend-all\" ", 1),
        );
    }
    out
}

/// One message as a JSON object: a text body as `body`, any other as `bodyHex`.
pub(crate) fn json(m: &MessageExt) -> serde_json::Value {
    let mut v = serde_json::json!({
        "topic": m.topic,
        "queueId": m.queue_id,
        "queueOffset": m.queue_offset,
        "msgId": m.properties.get(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX).unwrap_or(""),
        "offsetMsgId": offset_id(m),
        "originalTopic": original_topic(m),
        "keys": m.properties.get(property::KEYS).unwrap_or(""),
        "tags": m.properties.get(property::TAGS).unwrap_or(""),
        "bornTimestamp": m.born_timestamp,
        "bornHost": m.born_host.to_string(),
        "storeTimestamp": m.store_timestamp,
        "storeHost": m.store_host.to_string(),
        "reconsumeTimes": m.reconsume_times,
        "properties": m.properties.iter().collect::<std::collections::BTreeMap<_, _>>(),
    });
    match std::str::from_utf8(&m.body) {
        Ok(text) => v["body"] = text.into(),
        Err(_) => v["bodyHex"] = hex(&m.body).into(),
    }
    v
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// `/dlq/export?group=G`: every dead letter (at most [`MAX_ALL`]), one JSON object a
/// line, as a download.
pub(crate) fn export(c: &Console, r: &HttpRequest) -> HttpResponse {
    let group = r.param("group").unwrap_or_default();
    let mut out = String::new();
    for m in dead_letters(c, &group, 0, MAX_ALL) {
        out.push_str(&json(&m).to_string());
        out.push('\n');
    }
    let file: String = topic::dlq_topic(&group)
        .chars()
        .map(|ch| {
            if ch.is_ascii_alphanumeric() || ch == '-' || ch == '_' {
                ch
            } else {
                '_'
            }
        })
        .collect();
    HttpResponse::new(200, "application/x-ndjson; charset=utf-8", out)
        .with_header(
            "content-disposition",
            &format!("attachment; filename=\"{file}.jsonl\""),
        )
        .with_header("cache-control", "no-store")
}

pub(crate) fn back(f: Field<'_>) -> String {
    format!("/dlq?group={}", url(&f("group")))
}

/// POST `/dlq/resend-all`: every dead letter (at most [`MAX_ALL`]) resent to its topic.
pub(crate) async fn resend_all(
    c: &Console,
    by: &crate::ops::Operator,
    f: Field<'_>,
) -> Result<String, String> {
    let group = f("group");
    let ids: Vec<String> = dead_letters(c, &group, 0, MAX_ALL)
        .iter()
        .map(offset_id)
        .collect();
    let (mut resent, mut failed) = (0, Vec::new());
    for id in &ids {
        let resend = crate::ops::resend::ResendDlq {
            group: group.clone(),
            msg_id: id.clone(),
        };
        match crate::ops::resend::resend_dlq(
            &c.broker.storage,
            &c.broker.observed,
            &c.broker.config,
            c.broker.broker_addr,
            by,
            resend,
        )
        .await
        {
            Ok(_) => resent += 1,
            Err(e) => failed.push(format!("{id}: {e}")),
        }
    }
    if failed.is_empty() {
        Ok(format!(
            "resent {resent} of {} dead letters of {group}",
            ids.len()
        ))
    } else {
        Err(format!(
            "resent {resent} of {} dead letters of {group}; not resent: {}",
            ids.len(),
            failed.join("; ")
        ))
    }
}
