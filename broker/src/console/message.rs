//! Messages: search by key, id or time range with the "where is my message" view,
//! browsing waiting messages, and the forms that change things (remove, resend,
//! topic create and delete).

use std::fmt::Write;

use vostok_observe::http::HttpRequest;
use vostok_remoting::protocol::body::{BrowsedMessage, MessageStatus};

use super::html::{esc, form, hidden, parse_local, size, table, time, url};
use super::Console;
use crate::ops::topic::{CreateTopic, DeleteTopic};
use crate::ops::{self, Operator};

/// Most messages a time-range search lists.
const MAX_LISTED: usize = 64;

fn input(name: &str, label: &str, value: &str, kind: &str) -> String {
    format!(
        "<label>{} <input name=\"{}\" id=\"q-{}\" type=\"{kind}\" value=\"{}\"></label> ",
        esc(label),
        esc(name),
        esc(name),
        esc(value)
    )
}

/// `/messages`: the search form, then what it found; `admin`: with the remove and
/// resend forms.
pub(crate) fn search(c: &Console, r: &HttpRequest, admin: bool) -> String {
    let p = |k: &str| r.param(k).unwrap_or_default().trim().to_owned();
    let (topic, key, id, begin, end) = (p("topic"), p("key"), p("id"), p("begin"), p("end"));
    let mut out = String::from("<form method=\"get\" action=\"/messages\">");
    out.push_str(&input("topic", "Topic", &topic, "text"));
    out.push_str(&input("id", "Message id", &id, "text"));
    out.push_str(&input("key", "Key", &key, "text"));
    out.push_str(&input("begin", "From", &begin, "datetime-local"));
    out.push_str(&input("end", "To", &end, "datetime-local"));
    out.push_str("<button type=\"submit\" id=\"search\">Search</button></form>");
    if topic.is_empty() {
        out.push_str("<p class=\"note\">Give a topic and a message id (offset or unique id), a key, or a time range.</p>");
        return out;
    }
    if !id.is_empty() || !key.is_empty() {
        let find = ops::message_status::FindMessage {
            topic: topic.clone(),
            msg_id: Some(id.clone()),
            key: Some(key.clone()),
        };
        let found = match ops::message_status::message_status(
            ops::message_status::Lookup::of(&c.broker),
            &find,
        ) {
            Ok(found) => found,
            Err(refusal) => return format!("{out}<p class=\"warn\">{}</p>", esc(&refusal.remark)),
        };
        if found.messages.is_empty() {
            out.push_str("<p class=\"warn\" id=\"not-found\">No such message on this broker.</p>");
        }
        let back = format!(
            "/messages?topic={}&id={}&key={}",
            url(&topic),
            url(&id),
            url(&key)
        );
        for m in &found.messages {
            out.push_str(&status_view(c, m, admin.then_some(back.as_str())));
        }
        out.push_str("<h3>What the broker cannot know</h3><ul class=\"note\">");
        for u in &found.unknowable {
            let _ = write!(out, "<li>{}</li>", esc(u));
        }
        out.push_str("</ul>");
        return out;
    }
    let now = vostok_remoting::support::time::now_millis();
    let from = parse_local(&begin).unwrap_or(now - 3_600_000);
    let to = parse_local(&end).unwrap_or(now);
    let b = &c.broker;
    let mut listed: Vec<BrowsedMessage> = Vec::new();
    for q in b.storage.store.queue_ids(&topic) {
        let mut offset = b.storage.store.offset_in_queue_by_time(&topic, q, from);
        let max = b.storage.store.max_offset_in_queue(&topic, q);
        while offset < max && listed.len() < MAX_LISTED {
            match crate::ops::browse::message_at(&b.storage.store, &topic, q, offset) {
                Some(m) if m.store_timestamp > to => break,
                Some(m) if m.store_timestamp >= from => {
                    listed.push(crate::ops::browse::browsed(&m))
                }
                _ => {}
            }
            offset += 1;
        }
    }
    listed.sort_by_key(|m| m.store_timestamp);
    let _ = write!(
        out,
        "<p>Stored {} – {}: {} messages (at most {MAX_LISTED}).</p>",
        time(from),
        time(to),
        listed.len()
    );
    out.push_str(&message_table(c, &topic, &listed, None));
    out
}

/// The "where is my message" view of one message; with the forms that come `back`
/// here when given (an admin's).
fn status_view(c: &Console, m: &MessageStatus, back: Option<&str>) -> String {
    let mut out = String::from("<div class=\"msg\">");
    let _ = write!(
        out,
        "<p>Stored on <strong>{}</strong>, topic <strong>{}</strong>, queue {}, offset {} at {} (born {}); id {}; unique id {}; keys {}; tags {}; body {}.</p>",
        esc(&c.broker.config.broker_name),
        esc(&m.topic),
        m.queue_id,
        m.queue_offset,
        time(m.store_timestamp),
        time(m.born_timestamp),
        esc(&m.msg_id),
        esc(&m.uniq_key),
        esc(&m.keys),
        esc(&m.tags),
        size(i64::from(m.body_size))
    );
    let _ = write!(
        out,
        "<p><a href=\"/message?topic={}&amp;id={}\" class=\"detail\">Body, properties, trace and resend to a group</a></p>",
        url(&m.topic),
        url(&m.msg_id)
    );
    if m.removed {
        out.push_str(
            "<p class=\"warn\" id=\"removed\">Removed by an operator: no group receives it.</p>",
        );
    }
    let rows: Vec<Vec<String>> = m
        .groups
        .iter()
        .map(|g| {
            let resend = if let (true, Some(back)) = (g.in_dlq, back) {
                form(
                    "/messages/resend",
                    &c.token,
                    &(hidden("group", &g.group)
                        + &hidden("msgId", &g.dlq_msg_id)
                        + &hidden("back", back)),
                    "Resend from DLQ",
                )
            } else {
                String::new()
            };
            vec![
                format!(
                    "<a href=\"/group?name={}\">{}</a>",
                    url(&g.group),
                    esc(&g.group)
                ),
                if g.expression.is_empty() {
                    "(no consumer online)".into()
                } else {
                    esc(&format!("{} {}", g.expression_type, g.expression))
                },
                esc(&g.filter),
                format!("<span class=\"state\">{}</span>", esc(&g.state)),
                g.committed_offset.to_string(),
                g.retries.to_string(),
                g.reconsume_times.to_string(),
                esc(&g.explanation),
                resend,
            ]
        })
        .collect();
    if rows.is_empty() {
        out.push_str("<p>No group consumes this topic here yet (no committed offset, no consumer online).</p>");
    } else {
        out.push_str(&table(
            "status",
            &[
                "Group",
                "Subscription",
                "Filter",
                "State",
                "Committed",
                "Retries",
                "Reconsume",
                "In words",
                "",
            ],
            &rows,
        ));
    }
    if let (false, Some(back)) = (m.removed, back) {
        out.push_str(&remove_form(c, &m.topic, m.queue_id, m.queue_offset, back));
    }
    out.push_str("</div>");
    out
}

fn remove_form(c: &Console, topic: &str, queue: i32, offset: i64, back: &str) -> String {
    let fields = hidden("topic", topic)
        + &hidden("queueId", &queue.to_string())
        + &hidden("queueOffset", &offset.to_string())
        + &hidden("back", back);
    form("/messages/remove", &c.token, &fields, "Remove this message")
}

fn message_table(c: &Console, topic: &str, list: &[BrowsedMessage], back: Option<&str>) -> String {
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|m| {
            let status = format!("/messages?topic={}&amp;id={}", url(topic), url(&m.msg_id));
            let mut row = vec![
                m.queue_id.to_string(),
                m.queue_offset.to_string(),
                format!("<a href=\"{status}\">{}</a>", esc(&m.msg_id)),
                esc(&m.keys),
                esc(&m.tags),
                time(m.store_timestamp),
                m.reconsume_times.to_string(),
                esc(&m.body_preview),
            ];
            if let Some(back) = back {
                row.push(remove_form(c, topic, m.queue_id, m.queue_offset, back));
            }
            row
        })
        .collect();
    table(
        "messages",
        &[
            "Queue",
            "Offset",
            "Message id",
            "Keys",
            "Tags",
            "Stored",
            "Reconsume",
            "Body",
            "",
        ],
        &rows,
    )
}

/// `/browse`: waiting messages, nothing consumed; `admin`: with remove buttons.
pub(crate) fn browse(c: &Console, r: &HttpRequest, admin: bool) -> String {
    let topic = r.param("topic").unwrap_or_default();
    let group = r.param("group").filter(|g| !g.is_empty());
    let queue = r.param("queue").and_then(|q| q.parse().ok());
    let request = ops::browse::Browse {
        topic: topic.clone(),
        group: group.clone(),
        queue_id: queue,
        max: 64,
    };
    // A topic this broker does not have lists nothing (a group's DLQ before its first
    // dead letter).
    let list =
        ops::browse::browse(&c.broker.storage, &c.broker.consumers, &request).unwrap_or_default();
    let back = format!(
        "/browse?topic={}&group={}&queue={}",
        url(&topic),
        url(group.as_deref().unwrap_or("")),
        queue.map_or_else(String::new, |q: i32| q.to_string())
    );
    let mut out = format!(
        "<p>Topic {}, {}; {} waiting (browsing consumes nothing).</p>",
        esc(&topic),
        group.as_deref().map_or_else(
            || "from each queue's start".to_owned(),
            |g| format!("after group {}'s committed offset", esc(g))
        ),
        list.len()
    );
    out.push_str(&message_table(
        c,
        &topic,
        &list,
        admin.then_some(back.as_str()),
    ));
    out
}

type Field<'a> = &'a (dyn Fn(&str) -> String + Sync);

pub(crate) async fn remove(c: &Console, by: &Operator, f: Field<'_>) -> Result<String, String> {
    let queue = f("queueId")
        .parse()
        .map_err(|_| "bad queue id".to_owned())?;
    let offset = f("queueOffset")
        .parse()
        .map_err(|_| "bad queue offset".to_owned())?;
    let remove = ops::remove::RemoveMessage {
        topic: f("topic"),
        queue_id: queue,
        queue_offset: offset,
    };
    let r = ops::remove::remove_message(
        &c.broker.storage,
        &c.broker.config,
        c.broker.broker_addr,
        by,
        remove,
    )
    .await
    .map_err(|e| e.to_string())?;
    Ok(format!(
        "removed {} (queue {}, offset {})",
        r.msg_id, r.queue_id, r.queue_offset
    ))
}

pub(crate) async fn resend(c: &Console, by: &Operator, f: Field<'_>) -> Result<String, String> {
    let resend = ops::resend::ResendDlq {
        group: f("group"),
        msg_id: f("msgId"),
    };
    let r = ops::resend::resend_dlq(
        &c.broker.storage,
        &c.broker.observed,
        &c.broker.config,
        c.broker.broker_addr,
        by,
        resend,
    )
    .await
    .map_err(|e| e.to_string())?;
    Ok(format!("resent to {} as {}", r.topic, r.msg_id))
}

pub(crate) async fn create_topic(c: &Console, f: Field<'_>) -> Result<String, String> {
    let topic = f("topic");
    let queues: i32 = f("queues").parse().unwrap_or(8).clamp(1, 1024);
    let create = CreateTopic {
        topic: topic.clone(),
        read_queue_nums: queues,
        write_queue_nums: queues,
        perm: 6,
        topic_filter_type: "SINGLE_TAG".to_owned(),
        topic_sys_flag: 0,
        order: false,
        attributes: None,
    };
    ops::topic::create_topic(&c.broker, create)
        .await
        .map_err(|refusal| refusal.remark)?;
    Ok(format!("topic {topic} created with {queues} queues"))
}

pub(crate) async fn delete_topic(c: &Console, f: Field<'_>) -> Result<String, String> {
    let topic = f("topic");
    let delete = DeleteTopic {
        topic: topic.clone(),
    };
    ops::topic::delete_topic(&c.broker, delete)
        .await
        .map_err(|refusal| refusal.remark)?;
    Ok(format!("topic {topic} deleted"))
}
