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
td,.msg p{overflow-wrap:anywhere;word-break:break-word}table{max-width:100%}\
pre.body{white-space:pre-wrap;overflow-wrap:anywhere;background:#f7f7f7;padding:6px;max-height:40em;overflow:auto}\
.confirm{border:2px solid #b00;padding:8px 12px;margin:8px 0}\
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
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{} · Vostok {}</title><style>{STYLE}</style></head><body><header><strong>Vostok · {}</strong> &nbsp; <a href=\"/\">Cluster</a><a href=\"/topics\">Topics</a><a href=\"/groups\">Groups</a><a href=\"/clients\">Clients</a><a href=\"/messages\">Messages</a><a href=\"/producers\">Producers</a><a href=\"/config\">Config</a>",
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

/// `yyyy-MM-dd HH:mm:ss` local time with its zone (`UTC`, `UTC+05:30`), empty for 0.
pub(crate) fn time(ms: i64) -> String {
    if ms <= 0 {
        return String::new();
    }
    LocalTime::of_millis(ms).map_or_else(String::new, |t| {
        // The local fields read as UTC, minus the instant: the zone's offset.
        let as_utc = days_from_civil(t.year, t.month, t.day) * 86_400_000
            + i64::from(t.hour * 3600 + t.minute * 60 + t.second) * 1000
            + i64::from(t.millis);
        format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02} {}",
            t.year,
            t.month,
            t.day,
            t.hour,
            t.minute,
            t.second,
            zone((as_utc - ms).div_euclid(60_000))
        )
    })
}

/// A zone named by its offset from UTC in minutes: `UTC`, `UTC+01:00`, `UTC-05:30`.
pub(crate) fn zone(offset_minutes: i64) -> String {
    if offset_minutes == 0 {
        return "UTC".to_owned();
    }
    let sign = if offset_minutes < 0 { '-' } else { '+' };
    let m = offset_minutes.abs();
    format!("UTC{sign}{:02}:{:02}", m / 60, m % 60)
}

/// Days from 1970-01-01 to a proleptic Gregorian date.
pub(crate) fn days_from_civil(year: i32, month: u32, day: u32) -> i64 {
    let (m, d) = (i64::from(month), i64::from(day));
    let y = i64::from(year) - i64::from(m <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A byte count in B, KiB, MiB, GiB or TiB (powers of 1024); a negative count (a
/// figure read while it moved) is 0.
pub(crate) fn size(bytes: i64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    let bytes = bytes.max(0);
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// A quantity that cannot be negative (lag, age, a rate): a negative value, from clock
/// skew between machines or a figure read while it moved, and negative zero read 0.
pub(crate) fn not_negative(v: f64) -> f64 {
    if v > 0.0 {
        v
    } else {
        0.0
    }
}

/// Milliseconds as `1h 2m 3s` / `850 ms`; a negative span (clock skew) is `0 ms`.
pub(crate) fn duration(ms: i64) -> String {
    let ms = ms.max(0);
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
        assert!(
            time(ms).starts_with("2024-05-06 07:08:00 UTC"),
            "{}",
            time(ms)
        );
        assert!(page("b", "<t>", Some("error: x"), None, "").contains("class=\"error\""));
        let signed_in = page("b", "t", None, Some(("<ak>", "tok")), "");
        assert!(signed_in.contains("&lt;ak&gt;") && signed_in.contains("/logout"));
        assert!(login_form("tok", "/x\"", Some("no")).contains("/x&quot;"));
    }

    #[test]
    fn sizes_are_in_binary_units() {
        assert_eq!(size(0), "0 B");
        assert_eq!(size(1023), "1023 B");
        assert_eq!(size(1024), "1.0 KiB");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(5 * 1024 * 1024), "5.0 MiB");
        assert_eq!(size(3 * (1 << 30) + (1 << 29)), "3.5 GiB");
        assert_eq!(size(2048 << 30), "2.0 TiB");
        assert_eq!(size(-12), "0 B");
    }

    #[test]
    fn negative_zero_and_skew_read_zero() {
        assert_eq!(format!("{}", not_negative(-0.0)), "0");
        assert_eq!(format!("{:.1}", not_negative(-0.04)), "0.0");
        assert_eq!(not_negative(-3.0), 0.0);
        assert_eq!(not_negative(2.5), 2.5);
        assert_eq!(duration(-250), "0 ms");
        assert_eq!(duration(-5_000), "0 ms");
    }

    #[test]
    fn times_carry_their_zone() {
        assert_eq!(zone(0), "UTC");
        assert_eq!(zone(60), "UTC+01:00");
        assert_eq!(zone(330), "UTC+05:30");
        assert_eq!(zone(-300), "UTC-05:00");
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2026, 12, 4), 20_791);
        assert_eq!(days_from_civil(2000, 2, 29), 11_016);
        // 2026-12-04 23:10:05 UTC: its local rendering ends with a zone, whichever.
        let shown = time(1_796_425_805_000);
        let (clock, zone) = shown.split_at(19);
        assert_eq!(clock.len(), 19, "{shown}");
        assert!(zone.starts_with(" UTC"), "{shown}");
        assert_eq!(time(0), "");
    }
}
