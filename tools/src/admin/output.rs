//! What a verb prints: RocketMQ's text layout, or with `--json` one JSON document for
//! scripts (camelCase field names, as RocketMQ's JSON bodies).

use clap::Args;
use serde::Serialize;

use super::error::AdminError;

/// `--json`: print one JSON document instead of text. Global: every sub-command takes
/// it, before or after its name.
#[derive(Args, Debug, Clone, Copy, Default)]
pub struct JsonFlag {
    /// Print one JSON document instead of text.
    #[arg(long = "json", global = true)]
    pub json: bool,
}

impl JsonFlag {
    /// `value` as pretty JSON (ending in a newline) with `--json`, else `text(value)`.
    pub fn render<T: Serialize>(
        self,
        value: &T,
        text: impl FnOnce(&T) -> String,
    ) -> Result<String, AdminError> {
        if self.json {
            let mut out = serde_json::to_string_pretty(value)
                .map_err(|e| AdminError::Invalid(format!("cannot print JSON: {e}")))?;
            out.push('\n');
            Ok(out)
        } else {
            Ok(text(value))
        }
    }
}

/// What a verb that changes something did on one server: its address and the line
/// the text output prints for it. `--json` of such verbs is an array of these.
#[derive(Debug, Clone, Serialize)]
pub struct Applied {
    pub addr: String,
    pub result: String,
}

impl Applied {
    pub fn new(addr: impl Into<String>, result: impl Into<String>) -> Self {
        Applied {
            addr: addr.into(),
            result: result.into(),
        }
    }
}

/// `applied` as JSON with `--json`, else each result on its line.
pub fn render_applied(out: JsonFlag, applied: &[Applied]) -> Result<String, AdminError> {
    out.render(&applied, |applied| {
        applied.iter().map(|a| format!("{}\n", a.result)).collect()
    })
}

/// Milliseconds since the epoch as `yyyy-MM-dd HH:mm:ss` (UTC), the layout of
/// RocketMQ's `DateFormatUtils.format(t, "yyyy-MM-dd HH:mm:ss")`.
pub fn format_seconds(ms: i64) -> String {
    let iso = super::table::format_millis(ms);
    match iso.get(..19) {
        Some(head) if iso.len() > 19 => head.replacen('T', " ", 1),
        _ => iso,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_or_text() {
        let v = vec![1, 2];
        let text = JsonFlag { json: false }
            .render(&v, |v| format!("{} items\n", v.len()))
            .unwrap();
        assert_eq!(text, "2 items\n");
        let json = JsonFlag { json: true }
            .render(&v, |_| unreachable!())
            .unwrap();
        assert_eq!(serde_json::from_str::<Vec<i32>>(&json).unwrap(), vec![1, 2]);
        assert_eq!(format_seconds(1_700_000_000_123), "2023-11-14 22:13:20");
        assert_eq!(format_seconds(0), "-");
    }
}
