//! `/subscription`: a subscription group's settings, as rocketmq-dashboard's group
//! page edits them: created, changed (retry count, orderly, broadcast, consume
//! enable) and deleted. Deleting asks first, naming the offsets and lag dropped with it.

use std::collections::BTreeSet;
use std::fmt::Write;

use vostok_observe::http::HttpRequest;

use super::html::{esc, form, hidden, table, url};
use super::offsets::Field;
use super::Console;
use crate::ops::group::{self as op, DeleteGroup};
use crate::state::subscription::SubscriptionGroupConfig;

fn checkbox(name: &str, label: &str, on: bool, admin: bool) -> String {
    format!(
        "<label><input type=\"checkbox\" name=\"{name}\" id=\"g-{name}\" value=\"true\"{}{}> {}</label> ",
        if on { " checked" } else { "" },
        if admin { "" } else { " disabled" },
        esc(label)
    )
}

/// `/subscription?name=G`: the group's settings (a new group's form without a name);
/// editable, with delete, for an admin.
pub(crate) fn page(c: &Console, r: &HttpRequest, admin: bool) -> String {
    let name = r.param("name").unwrap_or_default().trim().to_owned();
    let existing = (!name.is_empty())
        .then(|| c.broker.consumers.subscriptions.get(&name))
        .flatten();
    let mut out = String::new();
    if !name.is_empty() && existing.is_none() {
        let _ = write!(
            out,
            "<p class=\"note\" id=\"no-settings\">Group {} has no settings on this broker yet: saving creates them.</p>",
            esc(&name)
        );
    }
    if !admin && name.is_empty() {
        out.push_str("<p class=\"note\">Creating a group needs an admin account.</p>");
        return out;
    }
    let config = existing
        .clone()
        .unwrap_or_else(|| SubscriptionGroupConfig::new(name.clone()));
    let name_field = if name.is_empty() {
        "<label>Group <input name=\"group\" id=\"g-group\" required></label> ".to_owned()
    } else {
        hidden("group", &name)
    };
    let mut fields = format!(
        "{name_field}<p><label>Retry count (retryMaxTimes) <input name=\"retryMaxTimes\" id=\"g-retryMaxTimes\" type=\"number\" min=\"0\" max=\"64\" value=\"{}\"{}></label></p><p>",
        config.retry_max_times,
        if admin { "" } else { " disabled" }
    );
    fields.push_str(&checkbox(
        "consumeMessageOrderly",
        "Orderly (one queue at a time)",
        config.consume_message_orderly,
        admin,
    ));
    fields.push_str(&checkbox(
        "consumeBroadcastEnable",
        "Broadcast allowed",
        config.consume_broadcast_enable,
        admin,
    ));
    fields.push_str(&checkbox(
        "consumeEnable",
        "Consume enabled",
        config.consume_enable,
        admin,
    ));
    fields.push_str("</p>");
    if !admin {
        out.push_str(&fields);
        return out;
    }
    let button = if name.is_empty() {
        "Create group"
    } else {
        "Save"
    };
    out.push_str(&form("/groups/update", &c.token, &fields, button).replacen(
        "<button ",
        "<button id=\"g-save\" ",
        1,
    ));
    if existing.is_some() {
        out.push_str("<h2>Delete</h2>");
        out.push_str(
            &form(
                "/groups/delete",
                &c.token,
                &hidden("group", &name),
                "Delete group",
            )
            .replacen("<button ", "<button id=\"g-delete\" ", 1),
        );
    }
    out
}

pub(crate) fn update_back(f: Field<'_>) -> String {
    format!("/subscription?name={}", url(&f("group")))
}

/// POST `/groups/update`: the group created, or its settings changed.
pub(crate) async fn update(c: &Console, f: Field<'_>) -> Result<String, String> {
    let group = f("group");
    let retry: i32 = f("retryMaxTimes")
        .parse()
        .ok()
        .filter(|n| (0..=64).contains(n))
        .ok_or_else(|| format!("retry count {:?} is not 0 to 64", f("retryMaxTimes")))?;
    let existed = c.broker.consumers.subscriptions.get(&group);
    let mut config = existed
        .clone()
        .unwrap_or_else(|| SubscriptionGroupConfig::new(group.clone()));
    config.retry_max_times = retry;
    config.consume_message_orderly = f("consumeMessageOrderly") == "true";
    config.consume_broadcast_enable = f("consumeBroadcastEnable") == "true";
    config.consume_enable = f("consumeEnable") == "true";
    let said = format!(
        "retry {retry}, {}, broadcast {}, consume {}",
        if config.consume_message_orderly {
            "orderly"
        } else {
            "concurrently"
        },
        if config.consume_broadcast_enable {
            "allowed"
        } else {
            "refused"
        },
        if config.consume_enable {
            "enabled"
        } else {
            "disabled"
        }
    );
    op::update_group(&c.broker, config)
        .await
        .map_err(|r| r.remark)?;
    Ok(format!(
        "group {group} {}: {said}",
        if existed.is_some() {
            "saved"
        } else {
            "created"
        }
    ))
}

/// What deleting a group loses: its settings and its committed offsets, with the lag
/// they hold. HTML.
pub(crate) fn delete_loss(c: &Console, f: Field<'_>) -> (String, String) {
    let group = f("group");
    let title = format!("Delete group {group}?");
    let b = &c.broker;
    let lag = crate::ops::lag::group_lag(
        &b.storage,
        &b.consumers,
        &b.pop,
        &crate::ops::lag::LagOf::all(&group),
    );
    let committed: Vec<_> = lag
        .queues
        .iter()
        .filter(|q| q.consumer_offset.is_some())
        .collect();
    let topics: BTreeSet<&str> = committed.iter().map(|q| q.topic.as_str()).collect();
    let behind: i64 = committed.iter().map(|q| q.lag).sum();
    let online = b.consumers.clients.consumer_channels(&group).len();
    let mut loss = format!(
        "Delete group <strong>{}</strong>: its settings and its committed offsets on <strong id=\"loss-queues\">{}</strong> queues ({}) are dropped; {behind} messages it has not consumed yet stay in their topics.",
        esc(&group),
        committed.len(),
        esc(&topics.into_iter().collect::<Vec<_>>().join(", "))
    );
    if online > 0 {
        let _ = write!(
            loss,
            " {online} consumers of it are online: they start again as a new group (from where their consume-from setting says)."
        );
    }
    if let Some(config) = b.consumers.subscriptions.get(&group) {
        loss.push_str(&table(
            "settings",
            &["Retry count", "Orderly", "Broadcast", "Consume"],
            &[vec![
                config.retry_max_times.to_string(),
                config.consume_message_orderly.to_string(),
                config.consume_broadcast_enable.to_string(),
                config.consume_enable.to_string(),
            ]],
        ));
    }
    (title, loss)
}

/// POST `/groups/delete`, confirmed: settings and offsets gone.
pub(crate) async fn delete(c: &Console, f: Field<'_>) -> Result<String, String> {
    let group = f("group");
    let delete = DeleteGroup {
        group: group.clone(),
        clean_offset: true,
    };
    op::delete_group(&c.broker, delete)
        .await
        .map_err(|r| r.remark)?;
    Ok(format!("group {group} deleted with its offsets"))
}
