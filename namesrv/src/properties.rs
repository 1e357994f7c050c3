//! Java `.properties` text, the format of RocketMQ's `namesrv.conf` / `broker.conf`.
//!
//! Follows `java.util.Properties.load`: `#`/`!` comment lines, `key=value`,
//! `key:value` or `key value`, leading whitespace dropped, a line ending in an odd
//! number of backslashes continues on the next one, and the escapes `\t \n \r \f
//! \uXXXX` (any other escaped character stands for itself). Later keys win.

/// Parses properties text into `(key, value)` pairs in file order. The error is the
/// 1-based line number of a malformed `\u` escape and a description.
pub fn parse(text: &str) -> Result<Vec<(String, String)>, (usize, String)> {
    let mut out = Vec::new();
    let mut natural = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .enumerate();
    while let Some((index, first)) = natural.next() {
        let line_no = index + 1;
        let trimmed = trim_leading(first);
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!') {
            continue;
        }
        let mut logical = String::from(trimmed);
        while ends_with_odd_backslashes(&logical) {
            logical.pop();
            match natural.next() {
                Some((_, next)) => logical.push_str(trim_leading(next)),
                None => break,
            }
        }
        out.push(split_pair(&logical).map_err(|e| (line_no, e))?);
    }
    Ok(out)
}

fn trim_leading(s: &str) -> &str {
    s.trim_start_matches([' ', '\t', '\x0c'])
}

fn ends_with_odd_backslashes(s: &str) -> bool {
    s.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1
}

fn split_pair(line: &str) -> Result<(String, String), String> {
    let mut key_end = line.len();
    let mut value_start = line.len();
    let mut chars = line.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '=' | ':' => {
                key_end = i;
                value_start = i + 1;
                break;
            }
            ' ' | '\t' | '\x0c' => {
                key_end = i;
                // Whitespace, then at most one '=' or ':', separates key and value.
                let rest = trim_leading(&line[i..]);
                let mut start = line.len() - rest.len();
                if rest.starts_with(['=', ':']) {
                    start += 1;
                }
                value_start = start;
                break;
            }
            _ => {}
        }
    }
    let key = unescape(&line[..key_end])?;
    let value = unescape(trim_leading(&line[value_start..]))?;
    Ok((key, value))
}

fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    let mut pending_high: Option<u32> = None;
    while let Some(c) = chars.next() {
        if c != '\\' {
            if pending_high.take().is_some() {
                return Err("unpaired surrogate in \\u escape".into());
            }
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else { break };
        if e != 'u' && pending_high.take().is_some() {
            return Err("unpaired surrogate in \\u escape".into());
        }
        match e {
            't' => out.push('\t'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            'f' => out.push('\x0c'),
            'u' => {
                let hex: String = chars.by_ref().take(4).collect();
                let unit = (hex.len() == 4)
                    .then(|| u32::from_str_radix(&hex, 16).ok())
                    .flatten()
                    .ok_or_else(|| format!("malformed \\uxxxx encoding: \\u{hex}"))?;
                match (pending_high.take(), unit) {
                    (None, 0xD800..=0xDBFF) => pending_high = Some(unit),
                    (Some(high), 0xDC00..=0xDFFF) => {
                        let code = 0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00);
                        out.push(char::from_u32(code).ok_or("invalid surrogate pair")?);
                    }
                    (None, unit) => {
                        out.push(char::from_u32(unit).ok_or("unpaired surrogate in \\u escape")?)
                    }
                    (Some(_), _) => return Err("unpaired surrogate in \\u escape".into()),
                }
            }
            other => out.push(other),
        }
    }
    if pending_high.is_some() {
        return Err("unpaired surrogate in \\u escape".into());
    }
    Ok(out)
}

/// Escapes a value for writing, so that [`parse`] reads it back unchanged.
pub fn escape(s: &str, is_key: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, c) in s.chars().enumerate() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\x0c' => out.push_str("\\f"),
            '=' | ':' | '#' | '!' if is_key || i == 0 => {
                out.push('\\');
                out.push(c);
            }
            ' ' if is_key || i == 0 => out.push_str("\\ "),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pairs(text: &str) -> Vec<(String, String)> {
        parse(text).unwrap()
    }

    fn kv(k: &str, v: &str) -> (String, String) {
        (k.to_owned(), v.to_owned())
    }

    #[test]
    fn reads_the_usual_forms() {
        let text = "# comment\n! other\n\nlistenPort=9876\r\n  kvConfigPath : /tmp/kv.json\nrocketmqHome /opt/rmq\nempty=\nflag\n";
        assert_eq!(
            pairs(text),
            vec![
                kv("listenPort", "9876"),
                kv("kvConfigPath", "/tmp/kv.json"),
                kv("rocketmqHome", "/opt/rmq"),
                kv("empty", ""),
                kv("flag", ""),
            ]
        );
    }

    #[test]
    fn continuation_lines_and_escapes() {
        let text = "a = one \\\n    two\\\\\nb\\=c = x\\ty\\u0041\\uD83D\\uDE00\nc = trailing\\";
        assert_eq!(
            pairs(text),
            vec![
                kv("a", "one two\\"),
                kv("b=c", "x\tyA\u{1F600}"),
                kv("c", "trailing"),
            ]
        );
    }

    #[test]
    fn malformed_unicode_escape_names_the_line() {
        assert_eq!(parse("ok=1\nbad=\\u12").unwrap_err().0, 2);
        assert!(parse("bad=\\uD800x").is_err());
    }

    proptest! {
        #[test]
        fn escaped_pairs_read_back(key in "[^\\x00]{1,12}", value in "[^\\x00]{0,24}") {
            let line = format!("{}={}", escape(&key, true), escape(&value, false));
            prop_assert_eq!(parse(&line).unwrap(), vec![(key, value)]);
        }
    }
}
