//! `/config`: every key of the broker's configuration with its value now, as
//! rocketmq-dashboard's broker configuration view; the keys that change at run time
//! (the set `mqadmin updateBrokerConfig` changes) are a form for an admin. A change
//! applies at once, all keys or none, and is not written to broker.conf. Taking a
//! permission away from the broker (`brokerPermission`) asks first, naming what stops.

use vostok_observe::http::HttpRequest;
use vostok_remoting::protocol::topic::perm;

use super::html::{esc, hidden, table};
use super::Console;
use crate::ops::broker_config as op;
use crate::state::runtime_config::RUNTIME_KEYS;

/// `/config`: the keys; for an admin, the run-time ones editable.
pub(crate) fn page(c: &Console, _r: &HttpRequest, admin: bool) -> String {
    let b = &c.broker;
    let pairs = b.runtime.effective(&b.config).to_properties();
    let rows: Vec<Vec<String>> = pairs
        .iter()
        .map(|(k, v)| {
            let runtime = RUNTIME_KEYS.contains(&k.as_str());
            let value = if runtime && admin {
                format!(
                    "<input name=\"{}\" id=\"cfg-{}\" value=\"{}\" form=\"config-form\">",
                    esc(k),
                    esc(k),
                    esc(v)
                )
            } else {
                esc(v)
            };
            vec![
                esc(k),
                value,
                if runtime { "at run time" } else { "at start" }.to_owned(),
            ]
        })
        .collect();
    let mut out = String::from("<p class=\"note\">Keys marked \"at run time\" change while the broker runs (all or none, until it restarts: write them to broker.conf to keep them); the others are read at start.</p>");
    if admin {
        out.push_str(&format!(
            "<form method=\"post\" action=\"/config/update\" id=\"config-form\">{}<button type=\"submit\" id=\"cfg-save\">Apply the run-time keys</button></form>",
            hidden("csrf", &c.token)
        ));
    }
    out.push_str(&table("config", &["Key", "Value", "Changes"], &rows));
    out
}

/// POST `/config/update`: the run-time keys whose value the form changed.
pub(crate) fn update(c: &Console, form: &[(String, String)]) -> Result<String, String> {
    let b = &c.broker;
    let now = b.runtime.effective(&b.config).to_properties();
    let changes: Vec<(String, String)> = form
        .iter()
        .filter(|(k, _)| RUNTIME_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.trim().to_owned()))
        .filter(|(k, v)| !now.iter().any(|(nk, nv)| nk == k && nv == v))
        .collect();
    if changes.is_empty() {
        return Ok("nothing changed".to_owned());
    }
    op::update_broker_config(&b.config, &b.runtime, &b.consumers, &b.storage, &changes)
        .map_err(|r| r.remark)?;
    let said: Vec<String> = changes.iter().map(|(k, v)| format!("{k}={v}")).collect();
    Ok(format!("changed at run time: {}", said.join(", ")))
}

/// `brokerPermission` now and as the form asks, when the form changes it.
fn permission_change(c: &Console, form: &[(String, String)]) -> Option<(i32, i32)> {
    let b = &c.broker;
    let now: i32 = b
        .runtime
        .effective(&b.config)
        .to_properties()
        .into_iter()
        .find(|(k, _)| k == "brokerPermission")
        .and_then(|(_, v)| v.parse().ok())?;
    let asked: i32 = form
        .iter()
        .find(|(k, _)| k == "brokerPermission")
        .and_then(|(_, v)| v.trim().parse().ok())?;
    (asked != now).then_some((now, asked))
}

/// Whether the form takes read or write permission away from the broker.
pub(crate) fn takes_permission_away(c: &Console, form: &[(String, String)]) -> bool {
    permission_change(c, form)
        .is_some_and(|(now, asked)| now & !asked & (perm::READ | perm::WRITE) != 0)
}

/// What taking a permission away stops, for its confirmation. HTML.
pub(crate) fn loss(c: &Console, form: &[(String, String)]) -> (String, String) {
    let title = "Change the broker's permission?".to_owned();
    let Some((now, asked)) = permission_change(c, form) else {
        return (title, "Nothing changes.".to_owned());
    };
    let mut said = format!(
        "brokerPermission <strong>{now} → {asked}</strong> on {}:",
        esc(&c.broker.config.broker_name)
    );
    if now & perm::WRITE != 0 && asked & perm::WRITE == 0 {
        said.push_str(
            " <strong id=\"loss-sends\">every send to this broker is refused</strong> and producers turn to other brokers of the topic, if any;",
        );
    }
    if now & perm::READ != 0 && asked & perm::READ == 0 {
        said.push_str(
            " <strong id=\"loss-reads\">no consumer receives a message from this broker</strong>;",
        );
    }
    said.push_str(" until it is given back (the change lasts until the broker restarts).");
    (title, said)
}
