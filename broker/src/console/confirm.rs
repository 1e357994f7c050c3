//! Confirmation of the actions that lose something (delete a topic, remove a
//! message) or send one (resend a message to a group). The first POST changes nothing: it answers a page that names what will be
//! lost, with a second form carrying the same fields, `confirm=yes` and the form token.
//! It works without script, and a forged or replayed first form does nothing.

use std::fmt::Write;

use super::html::{esc, form, hidden, size, url};
use super::Console;

/// Whether the action at `path` with `form` loses something and must be confirmed.
pub(crate) fn needed(c: &Console, path: &str, form: &[(String, String)]) -> bool {
    if path == "/config/update" {
        return super::broker_config::takes_permission_away(c, form);
    }
    matches!(
        path,
        "/topics/delete"
            | "/topics/update"
            | "/messages/remove"
            | "/offsets/reset"
            | "/groups/delete"
            | "/messages/consume"
    )
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
        "/topics/update" => {
            let (title, loss) = super::topic_admin::loss(c, &field);
            (
                title,
                loss,
                "Change topic".to_owned(),
                super::topic_admin::back(&field),
            )
        }
        "/groups/delete" => {
            let (title, loss) = super::groups_admin::delete_loss(c, &field);
            (
                title,
                loss,
                format!("Delete group {}", field("group")),
                "/groups".to_owned(),
            )
        }
        "/messages/consume" => {
            let (title, effect) = super::detail::consume_effect(c, &field);
            let button = format!("Resend to group {}", field("group"));
            (title, effect, button, field("back"))
        }
        "/config/update" => {
            let (title, loss) = super::broker_config::loss(c, fields);
            let button = "Change the permission".to_owned();
            (title, loss, button, "/config".to_owned())
        }
        "/offsets/reset" => {
            let (title, loss) = super::offsets::loss(c, &field);
            (
                title,
                loss,
                "Reset offsets".to_owned(),
                super::offsets::back(&field),
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
    let groups: Vec<String> = crate::ops::message_status::groups_of_topic(&b.consumers, topic)
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
    let Some(m) = crate::ops::browse::message_at(&c.broker.storage.store, topic, q, o) else {
        return (
            title,
            format!(
                "There is no message at {} queue {q} offset {o} here.",
                esc(topic)
            ),
        );
    };
    let m = crate::ops::browse::browsed(&m);
    let groups: Vec<String> =
        crate::ops::message_status::groups_of_topic(&c.broker.consumers, topic)
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
