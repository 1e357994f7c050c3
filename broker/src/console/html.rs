//! The console's page frame and small HTML helpers. Everything is rendered on the
//! server; the only style is the inline sheet below, so the console works offline
//! and behind any proxy.

use std::fmt::Write;

use vostok_observe::http::{escape_html, percent_encode};
use vostok_remoting::support::time::LocalTime;

pub(crate) fn esc(s: &str) -> String {
    escape_html(s)
}

pub(crate) fn url(s: &str) -> String {
    percent_encode(s)
}

const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:0;color:#222}\
header{background:#1d3557;color:#fff;padding:8px 16px}header a{color:#fff;margin-right:16px}\
main{padding:12px 16px}table{border-collapse:collapse;margin:8px 0}\
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}th{background:#f1f1f1}\
td.n{text-align:right;font-variant-numeric:tabular-nums}.warn{color:#b00}\
form.inline{display:inline}.plots{display:flex;flex-wrap:wrap;gap:12px}\
figure{margin:0}figcaption{font-weight:600}.msg{border:1px solid #ccc;padding:8px;margin:8px 0}\
.note{color:#555;font-size:12px}.flash{background:#e7f5e7;padding:6px}.error{background:#fde8e8;padding:6px}";

/// A whole page: `title`, the navigation, the signed-in account (with the form token
/// of its sign-out button), an optional flash message, `body`.
pub(crate) fn page(
    broker_name: &str,
    title: &str,
    flash: Option<&str>,
    account: Option<(&str, &str)>,
    body: &str,
) -> String {
    let mut out = String::with_capacity(body.len() + 2048);
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{} · Vostok {}</title><style>{STYLE}</style></head><body><header><strong>Vostok · {}</strong> &nbsp; <a href=\"/\">Cluster</a><a href=\"/topics\">Topics</a><a href=\"/groups\">Groups</a><a href=\"/clients\">Clients</a><a href=\"/messages\">Messages</a>",
        esc(title),
        esc(broker_name),
        esc(broker_name),
    );
    if let Some((account, token)) = account {
        let _ = write!(
            out,
            "<span id=\"account\">{}</span> {}",
            esc(account),
            form("/logout", token, "", "Sign out")
        );
    }
    let _ = write!(out, "</header><main><h1>{}</h1>", esc(title));
    if let Some(f) = flash {
        let class = if f.starts_with("error") {
            "error"
        } else {
            "flash"
        };
        let _ = write!(out, "<p class=\"{class}\" id=\"flash\">{}</p>", esc(f));
    }
    out.push_str(body);
    out.push_str("</main></body></html>");
    out
}

/// The sign-in form: an ACL account's access key and secret key (ACL 2.0: user name and
/// password); `next`, the page to go back to.
pub(crate) fn login_form(token: &str, next: &str, error: Option<&str>) -> String {
    let mut out = String::new();
    if let Some(e) = error {
        let _ = write!(out, "<p class=\"error\" id=\"login-error\">{}</p>", esc(e));
    }
    let _ = write!(
        out,
        "<form method=\"post\" action=\"/login\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"next\" value=\"{}\"><p><label>Access key <input name=\"accessKey\" id=\"access-key\" autocomplete=\"username\" required></label></p><p><label>Secret key <input name=\"secretKey\" id=\"secret-key\" type=\"password\" autocomplete=\"current-password\" required></label></p><button type=\"submit\" id=\"sign-in\">Sign in</button></form><p class=\"note\">ACL is on: sign in with an account of this broker's ACL (ACL 2.0: a user). Each page needs the rights its own request would.</p>",
        esc(token),
        esc(next)
    );
    out
}

/// A table with a header row; cells are already HTML.
pub(crate) fn table(id: &str, head: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("<table id=\"{}\"><tr>", esc(id));
    for h in head {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr>");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            let numeric = !cell.is_empty()
                && cell
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b == b'-' || b == b'.');
            let class = if numeric { " class=\"n\"" } else { "" };
            let _ = write!(out, "<td{class}>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    out
}

/// A form that POSTs to `action` with the CSRF token and `fields` (HTML inputs).
pub(crate) fn form(action: &str, token: &str, fields: &str, button: &str) -> String {
    format!(
        "<form class=\"inline\" method=\"post\" action=\"{}\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">{fields}<button type=\"submit\">{}</button></form>",
        esc(action),
        esc(token),
        esc(button)
    )
}

/// A hidden form field.
pub(crate) fn hidden(name: &str, value: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
        esc(name),
        esc(value)
    )
}

/// `yyyy-MM-dd HH:mm:ss.SSS` local time, empty for 0.
pub(crate) fn time(ms: i64) -> String {
    if ms <= 0 {
        return String::new();
    }
    LocalTime::of_millis(ms).map_or_else(String::new, |t| {
        format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03}",
            t.year, t.month, t.day, t.hour, t.minute, t.second, t.millis
        )
    })
}

/// Milliseconds as `1h 2m 3s` / `850 ms`.
pub(crate) fn duration(ms: i64) -> String {
    if ms < 1000 {
        return format!("{ms} ms");
    }
    let s = ms / 1000;
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m {sec}s"),
        (h, m, sec) => format!("{h}h {m}m {sec}s"),
    }
}

/// `yyyy-MM-ddTHH:mm` (an HTML datetime-local input) to ms, local time.
pub(crate) fn parse_local(s: &str) -> Option<i64> {
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    let padded = format!("{digits:0<14}");
    vostok_remoting::support::time::parse_compact(padded.get(..14)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_escape_and_format() {
        assert_eq!(duration(850), "850 ms");
        assert_eq!(duration(3_723_000), "1h 2m 3s");
        assert!(table("t", &["a"], &[vec!["<b>".into()]]).contains("<td><b></td>"));
        assert!(form("/x", "tok", "", "Go").contains("value=\"tok\""));
        let ms = parse_local("2024-05-06T07:08").unwrap();
        assert!(time(ms).starts_with("2024-05-06 07:08:00"));
        assert!(page("b", "<t>", Some("error: x"), None, "").contains("class=\"error\""));
        let signed_in = page("b", "t", None, Some(("<ak>", "tok")), "");
        assert!(signed_in.contains("&lt;ak&gt;") && signed_in.contains("/logout"));
        assert!(login_form("tok", "/x\"", Some("no")).contains("/x&quot;"));
    }
}
