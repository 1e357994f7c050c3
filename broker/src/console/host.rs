//! Which requests the console answers at all (docs/operations.md#console-security):
//! those addressed to it by a name it knows, and not sent by another site's page.
//!
//! DNS rebinding: a page of `evil.example` points its own name at 127.0.0.1 and, with
//! the browser's help, reads the console and posts its forms as a same-origin page.
//! The browser still writes `Host: evil.example`, so the console answers only to the
//! names it is known by: `localhost`, IP addresses (a page can only rebind a name; a
//! page served from an IP address cannot reach another address under it), and
//! `consoleAllowedHosts`. A request whose `Origin` names another site, or is `null`
//! (sandboxed frames, `data:` and `file:` pages), is refused too.

use std::net::{Ipv4Addr, Ipv6Addr};

use vostok_observe::http::HttpRequest;

/// The names the console answers to.
#[derive(Debug, Clone)]
pub(crate) struct Hosts {
    /// `consoleAllowedHosts`, lower case.
    names: Vec<String>,
}

/// The host of a `Host` value or an origin's authority: `[::1]:8082` → `[::1]`,
/// `h:8082` → `h`.
fn host_of(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority
            .find(']')
            .map_or(authority, |end| &authority[..=end]);
    }
    authority
        .rsplit_once(':')
        .map_or(authority, |(host, _port)| host)
}

fn is_ip_literal(host: &str) -> bool {
    host.parse::<Ipv4Addr>().is_ok()
        || host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .is_some_and(|h| h.parse::<Ipv6Addr>().is_ok())
}

impl Hosts {
    /// From `consoleAllowedHosts` (comma separated).
    pub(crate) fn new(allowed: &str) -> Hosts {
        Hosts {
            names: allowed
                .split(',')
                .map(|n| n.trim().to_ascii_lowercase())
                .filter(|n| !n.is_empty())
                .collect(),
        }
    }

    fn knows(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        let host = host.strip_suffix('.').unwrap_or(&host);
        host == "localhost" || is_ip_literal(host) || self.names.iter().any(|n| n == host)
    }

    /// Why `r` is refused, if it is.
    pub(crate) fn refusal(&self, r: &HttpRequest) -> Option<String> {
        let Some(authority) = r.header("host").map(str::trim) else {
            return Some("the request has no Host header".to_owned());
        };
        let host = host_of(authority);
        if !self.knows(host) {
            return Some(format!(
                "this console does not answer to the name {host:?}: add it to consoleAllowedHosts if it is this broker's"
            ));
        }
        match r.header("origin").map(str::trim) {
            None => None,
            Some("null") => Some("a request from an opaque origin (Origin: null)".to_owned()),
            Some(origin) => {
                let same = origin
                    .split_once("://")
                    .is_some_and(|(_, rest)| rest.eq_ignore_ascii_case(authority));
                (!same).then(|| format!("a cross-site request (Origin {origin})"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(headers: &[(&str, &str)]) -> HttpRequest {
        HttpRequest {
            method: "POST".into(),
            path: "/topics/create".into(),
            query: String::new(),
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            body: Default::default(),
            peer: "127.0.0.1:5000".parse().unwrap(),
        }
    }

    #[test]
    fn known_names_pass_and_rebound_ones_do_not() {
        let hosts = Hosts::new("console.example.com, Ops.Internal");
        for host in [
            "127.0.0.1:8082",
            "localhost:8082",
            "LOCALHOST",
            "[::1]:8082",
            "10.1.2.3",
            "console.example.com",
            "ops.internal:80",
            "localhost.:8082",
        ] {
            assert_eq!(hosts.refusal(&request(&[("host", host)])), None, "{host}");
        }
        for host in [
            "evil.example:8082",
            "127.0.0.1.evil.example",
            "[::1",
            "localhost.evil.example",
        ] {
            assert!(
                hosts.refusal(&request(&[("host", host)])).is_some(),
                "{host}"
            );
        }
        assert!(hosts.refusal(&request(&[])).is_some(), "no Host");
    }

    #[test]
    fn origins_other_than_the_console_itself_are_refused() {
        let hosts = Hosts::new("");
        let with = |origin| request(&[("host", "127.0.0.1:8082"), ("origin", origin)]);
        assert_eq!(hosts.refusal(&with("http://127.0.0.1:8082")), None);
        for origin in ["null", "http://evil.example:8082", "http://127.0.0.1:9999"] {
            assert!(hosts.refusal(&with(origin)).is_some(), "{origin}");
        }
        // The reproduction: a rebound name, with its own origin.
        let rebound = request(&[
            ("host", "evil.example:8082"),
            ("origin", "http://evil.example:8082"),
        ]);
        assert!(hosts.refusal(&rebound).is_some());
    }
}
