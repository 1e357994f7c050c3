//! Scrapes that sign in with an account (docs/operations.md#metrics): a scrape may
//! send HTTP Basic credentials (`Authorization: Basic base64(user:password)`) of an
//! account of the server's ACL; the server decides what that account may see
//! ([`ScrapeAccounts`]), and [`filter`] keeps only the series it may.
//!
//! A series is kept when it names at least one topic or group (labels `topic`,
//! `consumer_group`, `group`) and every one it names is admitted; a series that
//! names none (totals, process figures) is left out, since it would count what the
//! account may not see. Comment lines (`# HELP`, `# TYPE`) are kept.

use std::net::IpAddr;

use base64::Engine;

/// What one signed-in scrape may see.
pub enum Scope {
    /// The account is refused (the remark says why): 401.
    Refused(String),
    /// The account sees what a scrape without it sees (the bearer token rules apply).
    Unrestricted,
    /// Only series whose topics and groups this admits.
    Only(Box<dyn Fn(&str) -> bool + Send>),
}

/// The server's accounts, as the metrics endpoint asks about them.
pub trait ScrapeAccounts: Send + Sync + 'static {
    /// What `user` (who gave `password`) from `ip` may see.
    fn scope(&self, ip: IpAddr, user: &str, password: &str) -> Scope;
}

/// The user and password of an `Authorization: Basic` header value, when it is one.
pub fn basic_credentials(authorization: &str) -> Option<(String, String)> {
    let (scheme, value) = authorization.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(value.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

/// The labels that name a topic or a group.
const NAMING_LABELS: &[&str] = &["topic", "consumer_group", "group"];

/// `text` (the Prometheus text format) with only the series `admits` allows.
pub fn filter(text: &str, admits: &dyn Fn(&str) -> bool) -> String {
    let mut out = String::with_capacity(text.len() / 2);
    for line in text.lines() {
        let keep = line.starts_with('#') || {
            let names = named(line);
            !names.is_empty() && names.iter().all(|n| admits(n))
        };
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The topic and group names a sample line's labels carry.
fn named(line: &str) -> Vec<String> {
    let Some(open) = line.find('{') else {
        return Vec::new();
    };
    let mut names = Vec::new();
    let mut rest = &line[open + 1..];
    while let Some((key, after)) = rest.split_once("=\"") {
        let key = key.trim_start_matches([',', ' ']);
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        value.push(match escaped {
                            'n' => '\n',
                            other => other,
                        });
                    }
                }
                '"' => {
                    end = i + 1;
                    break;
                }
                c => value.push(c),
            }
        }
        if NAMING_LABELS.contains(&key) {
            names.push(value);
        }
        rest = &after[end..];
        if rest.starts_with('}') {
            break;
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_series_naming_admitted_topics_and_groups_are_kept() {
        let text = "# HELP m help\n# TYPE m gauge\n\
            m{cluster=\"c\",topic=\"ns1%a\"} 1\n\
            m{topic=\"ns2%a\"} 2\n\
            m{topic=\"ns1%a\",consumer_group=\"ns2%g\"} 3\n\
            m{topic=\"a\\\"b\",group=\"ns1%g\"} 4\n\
            total 5\n";
        let kept = filter(text, &|n: &str| n.starts_with("ns1%"));
        assert_eq!(
            kept,
            "# HELP m help\n# TYPE m gauge\nm{cluster=\"c\",topic=\"ns1%a\"} 1\n"
        );
    }

    #[test]
    fn basic_credentials_are_read() {
        assert_eq!(
            basic_credentials("Basic YWxpY2U6cHc6eA=="),
            Some(("alice".into(), "pw:x".into()))
        );
        assert_eq!(basic_credentials("Bearer YWxpY2U6cHc="), None);
        assert_eq!(basic_credentials("Basic !!"), None);
    }
}
