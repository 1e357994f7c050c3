//! Java `.properties` files, the format of RocketMQ's `broker.conf` and `namesrv.conf`.
//!
//! Supports `key=value`, `key: value` and `key value`, `#`/`!` comments, trailing
//! backslash continuation lines and the escapes `\t \n \r \f \\ \uXXXX`.

use std::path::Path;

/// Parses properties text into `(key, value)` pairs in file order.
pub fn parse(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut logical = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if logical.is_empty()
            && (trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!'))
        {
            continue;
        }
        let (content, continues) = strip_continuation(trimmed);
        logical.push_str(content);
        if continues && lines.clone().next().is_some() {
            continue;
        }
        if let Some(pair) = split_pair(&logical) {
            out.push(pair);
        }
        logical.clear();
    }
    out
}

/// Reads and parses a properties file.
pub fn load(path: &Path) -> std::io::Result<Vec<(String, String)>> {
    Ok(parse(&std::fs::read_to_string(path)?))
}

/// Renders pairs as properties text (for `-p`).
pub fn render(pairs: &[(String, String)]) -> String {
    let mut out = String::new();
    for (k, v) in pairs {
        out.push_str(k);
        out.push('=');
        out.push_str(v);
        out.push('\n');
    }
    out
}

/// An odd number of trailing backslashes continues the line.
fn strip_continuation(line: &str) -> (&str, bool) {
    let trailing = line.bytes().rev().take_while(|b| *b == b'\\').count();
    if trailing % 2 == 1 {
        (&line[..line.len() - 1], true)
    } else {
        (line, false)
    }
}

fn split_pair(line: &str) -> Option<(String, String)> {
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    let mut key = String::new();
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() {
            i = unescape(&chars, i, &mut key);
            continue;
        }
        if c == '=' || c == ':' || c.is_whitespace() {
            break;
        }
        key.push(c);
        i += 1;
    }
    if key.is_empty() {
        return None;
    }
    while i < chars.len() && chars[i].is_whitespace() {
        i += 1;
    }
    if i < chars.len() && (chars[i] == '=' || chars[i] == ':') {
        i += 1;
    }
    while i < chars.len() && chars[i].is_whitespace() {
        i += 1;
    }
    let mut value = String::new();
    while i < chars.len() {
        if chars[i] == '\\' && i + 1 < chars.len() {
            i = unescape(&chars, i, &mut value);
        } else {
            value.push(chars[i]);
            i += 1;
        }
    }
    Some((key, value.trim_end().to_owned()))
}

/// Decodes the escape starting at `chars[i]` (a backslash) into `out`; returns the next index.
fn unescape(chars: &[char], i: usize, out: &mut String) -> usize {
    match chars[i + 1] {
        't' => out.push('\t'),
        'n' => out.push('\n'),
        'r' => out.push('\r'),
        'f' => out.push('\u{c}'),
        'u' if i + 5 < chars.len() => {
            let hex: String = chars[i + 2..i + 6].iter().collect();
            match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                Some(c) => out.push(c),
                None => out.push_str(&hex),
            }
            return i + 6;
        }
        other => out.push(other),
    }
    i + 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_broker_conf_style_files() {
        let text = "# comment\n! also a comment\nbrokerClusterName = DefaultCluster\nbrokerName=broker-a\nbrokerId:0\ndeleteWhen 04\nmessageDelayLevel=1s 5s \\\n   10s\npath=C\\:\\\\data\\u0041\n\n  listenPort =  10911  \n";
        let pairs = parse(text);
        let get = |k: &str| {
            pairs
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("brokerClusterName"), Some("DefaultCluster"));
        assert_eq!(get("brokerName"), Some("broker-a"));
        assert_eq!(get("brokerId"), Some("0"));
        assert_eq!(get("deleteWhen"), Some("04"));
        assert_eq!(get("messageDelayLevel"), Some("1s 5s 10s"));
        assert_eq!(get("path"), Some("C:\\dataA"));
        assert_eq!(get("listenPort"), Some("10911"));
        assert_eq!(pairs.len(), 7);
    }

    #[test]
    fn odd_input_does_not_panic() {
        for text in ["\\", "=", "\\u12", "a\\", "key\\u", "\\\\\\", "é=ü\\"] {
            let _ = parse(text);
        }
    }
}
