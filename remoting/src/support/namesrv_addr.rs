//! Name server address lists (`namesrvAddr`, `-n`, `NAMESRV_ADDR`): `host:port`
//! entries separated by `;` (RocketMQ's form) or `,` (which some clients accept).
//! Parsed strictly where a program starts, so that a typo stops it with the accepted
//! form instead of a broker that boots and never registers.

/// The accepted form, for error messages.
pub const FORM: &str = "host:port, several separated by `;` (e.g. 127.0.0.1:9876;10.0.0.2:9876)";

/// A malformed name server address list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NamesrvAddrError {
    #[error("name server address list {0:?} names no address: expected {FORM}")]
    Empty(String),
    #[error("name server address {0:?} has no port: expected {FORM}")]
    NoPort(String),
    #[error("name server address {0:?} has no host: expected {FORM}")]
    NoHost(String),
    #[error("name server address {addr:?}: port {port:?} is not a number from 1 to 65535; expected {FORM}")]
    BadPort { addr: String, port: String },
    #[error("name server address {0:?} contains spaces: expected {FORM}")]
    Spaces(String),
}

/// Splits `list` into its `host:port` entries, refusing any entry without a host or a
/// valid port. Empty entries (a trailing `;`) are skipped; a list of none is an error.
pub fn parse(list: &str) -> Result<Vec<String>, NamesrvAddrError> {
    let mut out = Vec::new();
    for entry in list.split([';', ',']).map(str::trim) {
        if entry.is_empty() {
            continue;
        }
        if entry.contains(char::is_whitespace) {
            return Err(NamesrvAddrError::Spaces(entry.to_owned()));
        }
        let Some((host, port)) = entry.rsplit_once(':') else {
            return Err(NamesrvAddrError::NoPort(entry.to_owned()));
        };
        // `[::1]` alone splits inside the brackets.
        if host.starts_with('[') && !host.ends_with(']') {
            return Err(NamesrvAddrError::NoPort(entry.to_owned()));
        }
        if host.is_empty() || host == "[]" {
            return Err(NamesrvAddrError::NoHost(entry.to_owned()));
        }
        match port.parse::<u16>() {
            Ok(p) if p > 0 => out.push(entry.to_owned()),
            _ => {
                return Err(NamesrvAddrError::BadPort {
                    addr: entry.to_owned(),
                    port: port.to_owned(),
                })
            }
        }
    }
    if out.is_empty() {
        return Err(NamesrvAddrError::Empty(list.to_owned()));
    }
    Ok(out)
}

/// [`parse`] for a command-line flag (a clap `value_parser`): the list in
/// RocketMQ's `;`-separated form, or the error as text.
pub fn parse_arg(list: &str) -> Result<String, String> {
    parse(list).map(|v| v.join(";")).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_semicolons_and_commas_and_refuses_what_cannot_connect() {
        assert_eq!(
            parse("a:9876; b:9877;").unwrap(),
            ["a:9876", "b:9877"],
            "RocketMQ's form, a trailing separator ignored"
        );
        assert_eq!(parse("a:9876,b:9876").unwrap(), ["a:9876", "b:9876"]);
        assert_eq!(parse("[::1]:9876").unwrap(), ["[::1]:9876"]);
        for (bad, expect) in [
            ("127.0.0.1", "has no port"),
            ("[::1]", "has no port"),
            (":9876", "has no host"),
            ("a:98765", "not a number"),
            ("a:0", "not a number"),
            ("a:x", "not a number"),
            ("a :9876", "contains spaces"),
            (" ; ", "names no address"),
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains(expect), "{bad}: {e}");
            assert!(
                e.contains("host:port, several separated by `;`"),
                "{bad}: {e}"
            );
        }
    }
}
