//! `/producers`: producer groups and their connections (client id, address, language,
//! version), as rocketmq-dashboard's producer page and `mqadmin producerConnection`
//! show them; `?group=` narrows to one group.

use vostok_observe::http::HttpRequest;

use super::html::{esc, table};
use super::Console;

pub(crate) fn page(c: &Console, r: &HttpRequest) -> String {
    let only = r.param("group").filter(|g| !g.trim().is_empty());
    let mut groups = c.broker.consumers.clients.producer_groups();
    groups.retain(|(g, _)| only.as_deref().is_none_or(|o| o.trim() == g));
    groups.sort_by(|a, b| a.0.cmp(&b.0));
    let mut rows = Vec::new();
    for (group, infos) in &groups {
        for info in infos {
            rows.push(vec![
                esc(group),
                esc(&info.client_id),
                esc(&info.channel.peer_addr().to_string()),
                info.language.name().to_owned(),
                info.version.to_string(),
            ]);
        }
    }
    let mut out = format!(
        "<form method=\"get\" action=\"/producers\"><label>Producer group <input name=\"group\" id=\"p-group\" value=\"{}\"></label> <button type=\"submit\">Show</button></form>",
        esc(only.as_deref().unwrap_or(""))
    );
    if rows.is_empty() {
        out.push_str(
            "<p id=\"no-producers\">No producer of this group is connected to this broker.</p>",
        );
    }
    out.push_str(&table(
        "producers",
        &[
            "Producer group",
            "Client id",
            "Address",
            "Language",
            "Version",
        ],
        &rows,
    ));
    out
}
