//! `/topic/edit`: a topic's permission (read, write, both, none) and its read and
//! write queue counts, as `mqadmin updateTopic`/`updateTopicPerm` and
//! rocketmq-dashboard's topic page change them. The change asks first, naming what
//! stops: sends or reads refused, and the messages in read queues taken away.

use std::fmt::Write;

use vostok_observe::http::HttpRequest;
use vostok_remoting::protocol::body::TopicConfig;
use vostok_remoting::protocol::topic::perm;

use super::html::{esc, form, hidden, url};
use super::offsets::Field;
use super::Console;
use crate::ops::topic::{self as op, CreateTopic};

/// The permissions an operator picks, as mqadmin names them.
const PERMS: [(i32, &str); 4] = [
    (perm::READ | perm::WRITE, "RW (read and write)"),
    (perm::READ, "R (read only: sends refused)"),
    (perm::WRITE, "W (write only: reads refused)"),
    (0, "none (sends and reads refused)"),
];

fn perm_name(p: i32) -> &'static str {
    match p & (perm::READ | perm::WRITE) {
        6 => "RW",
        4 => "R",
        2 => "W",
        _ => "none",
    }
}

/// `/topic/edit?name=T`: the form, for an admin.
pub(crate) fn page(c: &Console, r: &HttpRequest, admin: bool) -> String {
    let name = r.param("name").unwrap_or_default();
    let Some(t) = c.broker.storage.topics.get(&name) else {
        return format!("<p class=\"warn\">No topic {} here.</p>", esc(&name));
    };
    let mut out = format!(
        "<p>Topic <a href=\"/topic?name={}\">{}</a>: permission {}, {} read and {} write queues.</p>",
        url(&name),
        esc(&name),
        perm_name(t.perm),
        t.read_queue_nums,
        t.write_queue_nums
    );
    if !admin {
        return out;
    }
    let mut fields = hidden("topic", &name);
    fields.push_str("<p><label>Permission <select name=\"perm\" id=\"t-perm\">");
    let current = t.perm & (perm::READ | perm::WRITE);
    for (value, label) in PERMS {
        let _ = write!(
            fields,
            "<option value=\"{value}\"{}>{}</option>",
            if value == current { " selected" } else { "" },
            esc(label)
        );
    }
    let _ = write!(
        fields,
        "</select></label></p><p><label>Read queues <input name=\"readQueueNums\" id=\"t-read\" type=\"number\" min=\"1\" max=\"1024\" value=\"{}\"></label> <label>Write queues <input name=\"writeQueueNums\" id=\"t-write\" type=\"number\" min=\"1\" max=\"1024\" value=\"{}\"></label></p>",
        t.read_queue_nums, t.write_queue_nums
    );
    out.push_str(
        &form("/topics/update", &c.token, &fields, "Change topic").replacen(
            "<button ",
            "<button id=\"t-save\" ",
            1,
        ),
    );
    out.push_str("<p class=\"note\">More write queues spread sends wider; fewer read queues leave the messages in the queues past the count unread until it grows again. It asks first.</p>");
    out
}

/// The change a form asks for, on the topic as it is now.
fn request(c: &Console, f: Field<'_>) -> Result<(TopicConfig, CreateTopic), String> {
    let name = f("topic");
    let t = c
        .broker
        .storage
        .topics
        .get(&name)
        .ok_or_else(|| format!("no topic {name} here"))?;
    let number = |k: &str| -> Result<i32, String> {
        f(k).parse::<i32>()
            .ok()
            .filter(|n| (1..=1024).contains(n))
            .ok_or_else(|| format!("{k} {:?} is not 1 to 1024", f(k)))
    };
    let p: i32 = f("perm")
        .parse()
        .ok()
        .filter(|p| PERMS.iter().any(|(v, _)| v == p))
        .ok_or_else(|| format!("permission {:?} is not one of 6, 4, 2, 0", f("perm")))?;
    let change = CreateTopic {
        topic: name,
        read_queue_nums: number("readQueueNums")?,
        write_queue_nums: number("writeQueueNums")?,
        // Other bits (inherit, priority) stay as they were.
        perm: (t.perm & !(perm::READ | perm::WRITE)) | p,
        topic_filter_type: t.topic_filter_type.to_string(),
        topic_sys_flag: t.topic_sys_flag,
        order: t.order,
        attributes: None,
    };
    Ok((t, change))
}

/// The confirmation: what the change stops. HTML.
pub(crate) fn loss(c: &Console, f: Field<'_>) -> (String, String) {
    let title = format!("Change topic {}?", f("topic"));
    let (t, change) = match request(c, f) {
        Ok(x) => x,
        Err(e) => return (title, esc(&e)),
    };
    let mut items = Vec::new();
    let (was, will) = (t.perm, change.perm);
    if perm_name(was) != perm_name(will) {
        let mut said = format!("permission {} → {}", perm_name(was), perm_name(will));
        if will & perm::WRITE == 0 && was & perm::WRITE != 0 {
            said.push_str(": every send to it is refused");
        }
        if will & perm::READ == 0 && was & perm::READ != 0 {
            said.push_str(": no group receives from it");
        }
        items.push(said);
    }
    if change.read_queue_nums < t.read_queue_nums {
        let b = &c.broker;
        let unread: i64 = (change.read_queue_nums..t.read_queue_nums)
            .map(|q| {
                (b.storage.store.max_offset_in_queue(&t.topic_name, q)
                    - b.storage.store.min_offset_in_queue(&t.topic_name, q))
                .max(0)
            })
            .sum();
        items.push(format!(
            "read queues {} → {}: <strong id=\"loss-unread\">{unread}</strong> messages in queues {} to {} are no longer delivered",
            t.read_queue_nums,
            change.read_queue_nums,
            change.read_queue_nums,
            t.read_queue_nums - 1
        ));
    } else if change.read_queue_nums != t.read_queue_nums {
        items.push(format!(
            "read queues {} → {}",
            t.read_queue_nums, change.read_queue_nums
        ));
    }
    if change.write_queue_nums != t.write_queue_nums {
        items.push(format!(
            "write queues {} → {}",
            t.write_queue_nums, change.write_queue_nums
        ));
    }
    if items.is_empty() {
        items.push("nothing changes".to_owned());
    }
    let loss = format!(
        "Change topic <strong>{}</strong>: {}.",
        esc(&t.topic_name),
        items.join("; ")
    );
    (title, loss)
}

pub(crate) fn back(f: Field<'_>) -> String {
    format!("/topic?name={}", url(&f("topic")))
}

/// POST `/topics/update`, confirmed.
pub(crate) async fn update(c: &Console, f: Field<'_>) -> Result<String, String> {
    let (_, change) = request(c, f)?;
    let said = format!(
        "topic {} now {} with {} read and {} write queues",
        change.topic,
        perm_name(change.perm),
        change.read_queue_nums,
        change.write_queue_nums
    );
    op::create_topic(&c.broker, change)
        .await
        .map_err(|r| r.remark)?;
    Ok(said)
}
