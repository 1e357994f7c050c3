//! The other brokers' rows on the cluster-wide pages, drawn: the broker cell of each
//! row, links to another broker's console, the row of a broker that did not answer,
//! and the other brokers' finds of a message search.

use super::html::{esc, table, time, url};
use super::remote::{Answer, Others, Rows};
use super::Console;

/// The broker cell of a row: name and address; another broker's name links to its
/// console when it has one.
pub(crate) fn broker_cell(name: &str, addr: &str, console: Option<&str>) -> String {
    match console {
        Some(at) => format!(
            "<a class=\"broker\" href=\"{}/\">{}</a> ({})",
            esc(at),
            esc(name),
            esc(addr)
        ),
        None => format!("{} ({})", esc(name), esc(addr)),
    }
}

/// This broker's cell.
pub(crate) fn own_cell(c: &Console) -> String {
    broker_cell(
        &c.broker.config.broker_name,
        &c.broker.broker_addr.to_string(),
        None,
    )
}

/// A link to `path` on another broker's console, or the bare text without one.
pub(crate) fn elsewhere(a: &Answer, path: &str, text: &str) -> String {
    match &a.console {
        Some(at) => format!("<a href=\"{}{}\">{}</a>", esc(at), path, esc(text)),
        None => esc(text),
    }
}

/// The rows of the other brokers, each made by `row`; a broker without rows is one row
/// saying why, and one with more rows than drawn ends with a row saying how many more,
/// `width` cells wide.
pub(crate) fn other_rows(
    others: Option<&Others>,
    width: usize,
    mut row: impl FnMut(&Answer, &Rows, &mut Vec<Vec<String>>),
) -> (Vec<Vec<String>>, String) {
    let mut rows = Vec::new();
    let mut note = String::new();
    match others {
        None => {}
        Some(Err(why)) => {
            note = format!(
                "<p class=\"note\" id=\"others-unknown\">The name servers could not be asked for the other brokers: {}</p>",
                esc(why)
            );
        }
        Some(Ok(answers)) => {
            for a in answers {
                let said = match &a.rows {
                    Ok(found) => {
                        row(a, found, &mut rows);
                        (a.left_off > 0).then(|| {
                            let more = format!("{} more rows not shown", a.left_off);
                            format!(
                                "<span class=\"note left-off\">{}</span>",
                                elsewhere(a, "/", &more)
                            )
                        })
                    }
                    Err(why) => Some(format!(
                        "<span class=\"warn peer-error\">{}</span>",
                        esc(&why.to_string())
                    )),
                };
                if let Some(said) = said {
                    let mut cells = vec![
                        said,
                        broker_cell(&a.peer.name, &a.peer.addr, a.console.as_deref()),
                    ];
                    cells.resize(width, String::new());
                    rows.push(cells);
                }
            }
        }
    }
    (rows, note)
}

/// The messages the other brokers found for a search by id or key, each linked to
/// its broker's console (where it can be followed, removed or resent).
pub(crate) fn other_messages(others: Option<&Others>) -> String {
    let Some(others) = others else {
        return String::new();
    };
    if matches!(others, Ok(answers) if answers.is_empty()) {
        return String::new();
    }
    let (rows, note) = other_rows(Some(others), 9, |a, found, rows| {
        let Rows::Messages(found) = found else { return };
        for m in found {
            let status = format!(
                "/messages?topic={}&amp;id={}",
                url(&m.topic),
                url(&m.msg_id)
            );
            rows.push(vec![
                esc(&m.topic),
                broker_cell(&a.peer.name, &a.peer.addr, a.console.as_deref()),
                m.queue_id.to_string(),
                m.queue_offset.to_string(),
                esc(&m.msg_id),
                esc(&m.keys),
                esc(&m.tags),
                time(m.store_timestamp),
                elsewhere(a, &status, &format!("where is it, on {}", a.peer.name)),
            ]);
        }
    });
    let mut out = String::from("<h2>On the other brokers</h2>");
    out.push_str(&note);
    out.push_str(&table(
        "other-messages",
        &[
            "Topic",
            "Broker",
            "Queue",
            "Offset",
            "Message id",
            "Keys",
            "Tags",
            "Stored",
            "",
        ],
        &rows,
    ));
    out
}
