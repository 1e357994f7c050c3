//! `/message?topic=T&id=ID`: one message's page, as rocketmq-dashboard's message
//! detail: where it is stored, its body (text, or hex for binary), every property, its
//! trace when clients recorded one ([`super::trace`]), each group's state, and "resend
//! to group X": the message handed to an online consumer of that group, whose listener
//! runs on it once more (Apache's CONSUME_MESSAGE_DIRECTLY).

use std::fmt::Write;

use vostok_observe::http::HttpRequest;
use vostok_remoting::protocol::message::id::create_offset_msg_id;
use vostok_remoting::protocol::message::property;
use vostok_remoting::protocol::message::{sysflag, MessageExt};

use super::html::{esc, form, hidden, size, table, time, url};
use super::offsets::Field;
use super::viewer::Viewer;
use super::Console;
use crate::ops::consume_directly::{consume_directly, ConsumeDirectly};

/// The most body bytes a page shows.
const SHOWN_BODY: usize = 64 * 1024;

fn offset_id(m: &MessageExt) -> String {
    create_offset_msg_id(m.store_host, m.commit_log_offset)
}

/// The page's own address.
fn page_path(topic: &str, id: &str) -> String {
    format!("/message?topic={}&id={}", url(topic), url(id))
}

/// A body as people read it: text when it is UTF-8 without control characters
/// other than line breaks and tabs, else hex; at most [`SHOWN_BODY`] bytes. Returns
/// (what it is, the shown text).
pub(crate) fn shown_body(body: &[u8], compressed: bool) -> (String, String) {
    let cut = &body[..body.len().min(SHOWN_BODY)];
    let more = if cut.len() < body.len() {
        format!(", the first {} shown", size(cut.len() as i64))
    } else {
        String::new()
    };
    let text = std::str::from_utf8(cut).ok().filter(|t| {
        !compressed
            && t.chars()
                .all(|ch| !ch.is_control() || matches!(ch, '\n' | '\r' | '\t'))
    });
    match text {
        Some(t) => (
            format!("text, {}{more}", size(body.len() as i64)),
            t.to_owned(),
        ),
        None => {
            let what = if compressed {
                "compressed, in hex"
            } else {
                "binary, in hex"
            };
            let hex = super::dlq::hex(cut);
            // Groups of 4 bytes, so that the browser can wrap long bodies.
            let spaced: Vec<&str> = hex
                .as_bytes()
                .chunks(8)
                .filter_map(|c| std::str::from_utf8(c).ok())
                .collect();
            (
                format!("{what}, {}{more}", size(body.len() as i64)),
                spaced.join(" "),
            )
        }
    }
}

/// `/message?topic=T&id=ID[&traceTopic=X]`.
pub(crate) fn page(c: &Console, r: &HttpRequest, viewer: &Viewer, admin: bool) -> String {
    let p = |k: &str| r.param(k).unwrap_or_default().trim().to_owned();
    let (topic, id) = (p("topic"), p("id"));
    let found = crate::ops::message_status::messages_by_id(&c.broker.storage.store, &topic, &id);
    let Some(m) = found.first() else {
        return format!(
            "<p class=\"warn\" id=\"not-found\">No message {} in topic {} on this broker.</p>",
            esc(&id),
            esc(&topic)
        );
    };
    let here = page_path(&topic, &id);
    let mut out = facts(c, m);
    if found.len() > 1 {
        out.push_str("<p class=\"note\">Other messages stored with this id: ");
        for other in &found[1..] {
            let oid = offset_id(other);
            let _ = write!(
                out,
                "<a href=\"{}\">{}</a> ",
                esc(&page_path(&topic, &oid)),
                esc(&oid)
            );
        }
        out.push_str("</p>");
    }
    let compressed = m.sys_flag & sysflag::COMPRESSED_FLAG != 0;
    let (what, body) = shown_body(&m.body, compressed);
    let _ = write!(
        out,
        "<h2>Body</h2><p class=\"note\" id=\"body-kind\">{}</p><pre class=\"body\" id=\"message-body\">{}</pre>",
        esc(&what),
        esc(&body)
    );
    let mut props: Vec<(&str, &str)> = m.properties.iter().collect();
    props.sort();
    let rows: Vec<Vec<String>> = props.iter().map(|(k, v)| vec![esc(k), esc(v)]).collect();
    out.push_str("<h2>Properties</h2>");
    out.push_str(&table("message-properties", &["Name", "Value"], &rows));
    out.push_str(&groups(c, m, admin, &here));
    let trace_topic = r
        .param("traceTopic")
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| c.broker.config.msg_trace_topic_name.clone());
    out.push_str(&super::trace::section(
        c,
        &trace_topic,
        viewer.reads_topic(&trace_topic),
        m,
    ));
    let _ = write!(
        out,
        "<form method=\"get\" action=\"/message\">{}{}<label>Trace topic <input name=\"traceTopic\" id=\"trace-topic\" value=\"{}\"></label> <button type=\"submit\">Show its trace</button></form>",
        hidden("topic", &topic),
        hidden("id", &id),
        esc(&trace_topic)
    );
    out
}

/// Where the message is and what it is.
fn facts(c: &Console, m: &MessageExt) -> String {
    let prop = |k: &str| esc(m.properties.get(k).unwrap_or(""));
    let oid = offset_id(m);
    let rows = vec![
        vec![
            "Topic".into(),
            format!(
                "<a href=\"/topic?name={}\">{}</a>",
                url(&m.topic),
                esc(&m.topic)
            ),
        ],
        vec![
            "Message id".into(),
            prop(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
        ],
        vec!["Offset message id".into(), esc(&oid)],
        vec![
            "Stored at".into(),
            format!(
                "{}, queue {}, offset {}",
                esc(&c.broker.config.broker_name),
                m.queue_id,
                m.queue_offset
            ),
        ],
        vec!["Tags".into(), prop(property::TAGS)],
        vec!["Keys".into(), prop(property::KEYS)],
        vec![
            "Born".into(),
            format!(
                "{} at {}",
                time(m.born_timestamp),
                esc(&m.born_host.to_string())
            ),
        ],
        vec![
            "Stored".into(),
            format!(
                "{} at {}",
                time(m.store_timestamp),
                esc(&m.store_host.to_string())
            ),
        ],
        vec!["Body size".into(), size(m.body.len() as i64)],
        vec!["Reconsume times".into(), m.reconsume_times.to_string()],
    ];
    let mut out = table("message-facts", &["", ""], &rows);
    let _ = write!(
        out,
        "<p><a href=\"/messages?topic={}&amp;id={}\" id=\"status-link\">Where is this message (each group's state)</a></p>",
        url(&m.topic),
        url(&oid)
    );
    out
}

/// Each group that consumes the topic here: its state, its online consumers and, for
/// an admin, "resend to group X".
fn groups(c: &Console, m: &MessageExt, admin: bool, back: &str) -> String {
    let oid = offset_id(m);
    let find = crate::ops::message_status::FindMessage {
        topic: m.topic.clone(),
        msg_id: Some(oid.clone()),
        key: None,
    };
    let Ok(status) = crate::ops::message_status::message_status(
        crate::ops::message_status::Lookup::of(&c.broker),
        &find,
    ) else {
        return String::new();
    };
    let Some(s) = status.messages.first() else {
        return String::new();
    };
    let rows: Vec<Vec<String>> = s
        .groups
        .iter()
        .map(|g| {
            let online = c
                .broker
                .consumers
                .clients
                .consumer_group(&g.group)
                .map(|info| info.client_ids())
                .unwrap_or_default();
            let action = if admin && !online.is_empty() {
                let mut fields = hidden("topic", &m.topic)
                    + &hidden("msgId", &oid)
                    + &hidden("group", &g.group)
                    + &hidden("back", back);
                fields.push_str("<select name=\"clientId\" aria-label=\"consumer\">");
                for id in &online {
                    let _ = write!(fields, "<option>{}</option>", esc(id));
                }
                fields.push_str("</select> ");
                form(
                    "/messages/consume",
                    &c.token,
                    &fields,
                    &format!("Resend to group {}", g.group),
                )
                .replacen(
                    "<button ",
                    &format!(
                        "<button class=\"consume\" data-group=\"{}\" ",
                        esc(&g.group)
                    ),
                    1,
                )
            } else if online.is_empty() {
                "no consumer online".to_owned()
            } else {
                String::new()
            };
            vec![
                format!(
                    "<a href=\"/group?name={}\">{}</a>",
                    url(&g.group),
                    esc(&g.group)
                ),
                format!("<span class=\"state\">{}</span>", esc(&g.state)),
                esc(&g.explanation),
                online.len().to_string(),
                action,
            ]
        })
        .collect();
    let mut out = String::from("<h2>Consumer groups</h2>");
    if rows.is_empty() {
        out.push_str("<p>No group consumes this topic here yet.</p>");
        return out;
    }
    out.push_str("<p class=\"note\">Resending hands the message to one online consumer of the group, whose listener runs on it once more; nothing is stored and no offset moves.</p>");
    out.push_str(&table(
        "message-groups",
        &["Group", "State", "In words", "Consumers online", ""],
        &rows,
    ));
    out
}

/// What resending to a group does, for its confirmation. HTML.
pub(crate) fn consume_effect(c: &Console, f: Field<'_>) -> (String, String) {
    let (topic, id, group) = (f("topic"), f("msgId"), f("group"));
    let title = format!("Resend to group {group}?");
    let Some(m) = crate::ops::message_status::messages_by_id(&c.broker.storage.store, &topic, &id)
        .into_iter()
        .next()
    else {
        return (
            title,
            format!(
                "There is no message {} in topic {} here.",
                esc(&id),
                esc(&topic)
            ),
        );
    };
    let client = match f("clientId") {
        ref id if !id.is_empty() => format!("consumer <strong>{}</strong>", esc(id)),
        _ => "its first online consumer".to_owned(),
    };
    let effect = format!(
        "Resend message <strong>{}</strong> (topic {}, keys {}, body {}) to group <strong>{}</strong>: {client} runs its listener on it once more, now, whatever the group did with it before. The message stays where it is; the group's offsets, retries and dead letters do not change.",
        esc(&id),
        esc(&topic),
        esc(m.properties.get(property::KEYS).unwrap_or("")),
        size(m.body.len() as i64),
        esc(&group)
    );
    (title, effect)
}

/// POST `/messages/consume`: the message to a consumer of the group; the listener's
/// verdict.
pub(crate) async fn consume(c: &Console, f: Field<'_>) -> Result<String, String> {
    let group = f("group");
    let ask = ConsumeDirectly {
        group: group.clone(),
        client_id: Some(f("clientId")).filter(|c| !c.is_empty()),
        msg_id: f("msgId"),
        topic: Some(f("topic")),
    };
    let done = consume_directly(
        &c.broker.storage,
        &c.broker.consumers,
        &c.broker.config.broker_name,
        ask,
    )
    .await
    .map_err(|r| r.remark)?;
    Ok(match done.result {
        Some(r) => format!(
            "group {group}'s consumer {} answered {} in {} ms{}",
            done.client_id,
            r.consume_result.as_deref().unwrap_or("nothing"),
            r.spent_time_mills,
            r.remark
                .filter(|m| !m.is_empty())
                .map_or_else(String::new, |m| format!(": {m}"))
        ),
        None => format!(
            "group {group}'s consumer {} answered {}",
            done.client_id,
            String::from_utf8_lossy(&done.body)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_bodies_read_as_text_and_others_in_hex() {
        let (what, shown) = shown_body("héllo\nworld".as_bytes(), false);
        assert!(what.starts_with("text, 12 B"), "{what}");
        assert_eq!(shown, "héllo\nworld");
        let (what, shown) = shown_body(&[0, 1, 2, 0xff, 0x10, 0x20], false);
        assert!(what.starts_with("binary, in hex, 6 B"), "{what}");
        assert_eq!(shown, "000102ff 1020");
        let (what, _) = shown_body(b"plain", true);
        assert!(what.starts_with("compressed"), "{what}");
        let long = vec![b'a'; SHOWN_BODY + 10];
        let (what, shown) = shown_body(&long, false);
        assert!(what.contains("the first 64.0 KiB shown"), "{what}");
        assert_eq!(shown.len(), SHOWN_BODY);
    }
}
