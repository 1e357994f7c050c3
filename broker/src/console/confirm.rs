//! Confirmation of the actions that lose something (delete a topic, remove a
//! message). The first POST changes nothing: it answers a page that names what will be
//! lost, with a second form carrying the same fields, `confirm=yes` and the form token.
//! It works without script, and a forged or replayed first form does nothing.

use std::fmt::Write;

use super::html::{esc, form, hidden, size, url};
use super::Console;

/// Whether the action at `path` loses something and must be confirmed.
pub(crate) fn needed(path: &str) -> bool {
    matches!(path, "/topics/delete" | "/messages/remove")
}

/// Whether the form says the operator confirmed.
pub(crate) fn confirmed(form: &[(String, String)]) -> bool {
    form.iter().any(|(k, v)| k == "confirm" && v == "yes")
}

/// The confirmation page of the action at `path` with `fields`: its title and body.
pub(crate) fn page(c: &Console, path: &str, fields: &[(String, String)]) -> (String, String) {
    let field = |k: &str| {
        fields
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_default()
    };
    let (title, loss, button, back) = match path {
        "/topics/delete" => {
            let topic = field("topic");
            let (title, loss) = topic_loss(c, &topic);
            (
                title,
                loss,
                format!("Delete topic {topic}"),
                "/topics".to_owned(),
            )
        }
        _ => {
            let (topic, queue, offset) = (field("topic"), field("queueId"), field("queueOffset"));
            let (title, loss) = message_loss(c, &topic, &queue, &offset);
            (title, loss, "Remove this message".to_owned(), field("back"))
        }
    };
    let mut carried = String::new();
    for (k, v) in fields.iter().filter(|(k, _)| k != "csrf" && k != "confirm") {
        carried.push_str(&hidden(k, v));
    }
    carried.push_str(&hidden("confirm", "yes"));
    let back = super::local_path(&back);
    let mut body = format!("<div class=\"confirm\"><p class=\"warn\" id=\"loss\">{loss}</p>");
    body.push_str(&form(path, &c.token, &carried, &button).replacen(
        "<button ",
        "<button id=\"confirm\" ",
        1,
    ));
    let _ = write!(
        body,
        " <a href=\"{}\" id=\"cancel\">Cancel</a></div>",
        esc(&back)
    );
    (title, body)
}

/// What deleting `topic` loses: its messages kept here, by count and size, and the
/// groups that consume it. HTML.
fn topic_loss(c: &Console, topic: &str) -> (String, String) {
    let b = &c.broker;
    let title = format!("Delete topic {topic}?");
    let Some(t) = b.storage.topics.get(topic) else {
        return (title, format!("There is no topic {} here.", esc(topic)));
    };
    let queues = t.read_queue_nums.max(t.write_queue_nums);
    let messages: i64 = (0..queues)
        .map(|q| {
            (b.storage.store.max_offset_in_queue(topic, q)
                - b.storage.store.min_offset_in_queue(topic, q))
            .max(0)
        })
        .sum();
    let groups: Vec<String> = crate::ops::message_status::groups_of_topic(b, topic)
        .into_iter()
        .collect();
    let mut loss = format!(
        "Delete topic <strong>{}</strong>: <strong id=\"loss-messages\">{messages}</strong> messages kept on this broker ({queues} queues) will be unreachable.",
        esc(topic)
    );
    if !groups.is_empty() {
        let _ = write!(
            loss,
            " Groups that consume it lose their place: {}.",
            esc(&groups.join(", "))
        );
    }
    (title, loss)
}

/// What removing the message at `topic`/`queue`/`offset` loses. HTML.
fn message_loss(c: &Console, topic: &str, queue: &str, offset: &str) -> (String, String) {
    let title = "Remove this message?".to_owned();
    let (Ok(q), Ok(o)) = (queue.parse::<i32>(), offset.parse::<i64>()) else {
        return (title, "Bad queue id or offset.".to_owned());
    };
    let Some(m) = crate::ops::browse::message_at(&c.broker, topic, q, o) else {
        return (
            title,
            format!(
                "There is no message at {} queue {q} offset {o} here.",
                esc(topic)
            ),
        );
    };
    let m = crate::ops::browse::browsed(&m);
    let groups: Vec<String> = crate::ops::message_status::groups_of_topic(&c.broker, topic)
        .into_iter()
        .collect();
    let loss = format!(
        "Remove message <a href=\"/messages?topic={}&amp;id={}\">{}</a> (topic {}, queue {q}, offset {o}, keys {}, body {}): no group will receive it{}.",
        url(topic),
        url(&m.msg_id),
        esc(&m.msg_id),
        esc(topic),
        esc(&m.keys),
        size(i64::from(m.body_size)),
        if groups.is_empty() {
            String::new()
        } else {
            format!(" (consumed by {})", esc(&groups.join(", ")))
        }
    );
    (title, loss)
}
