//! A reader for JSON command headers, written for the hot path.
//!
//! Every request and response header passes through here, so it reads the header in
//! one pass without building a document: known members go straight into the command,
//! `extFields` straight into [`ExtFields`]' single buffer, unknown members are skipped.
//! It is as lenient as fastjson where clients need it (`language` as a name or an
//! ordinal, numbers as numbers or numeric strings, `extFields` values as strings,
//! numbers or booleans, null values dropped, raw control characters inside strings)
//! and strict everywhere else: every index is checked, nesting of skipped values is
//! bounded, and the whole input must be one object plus whitespace.

use super::{ExtFields, LanguageCode, RemotingCommand, SerializeType};
use crate::error::RemotingError;

/// Deepest nesting accepted inside a skipped (unknown) member.
const MAX_SKIP_DEPTH: usize = 64;

fn error(reason: impl Into<String>) -> RemotingError {
    RemotingError::MalformedHeader {
        kind: "JSON",
        reason: reason.into(),
    }
}

struct Reader<'a> {
    /// The header, validated as UTF-8 once up front; every slice taken of it starts and
    /// ends next to an ASCII delimiter, so it is a character boundary.
    text: &'a str,
    buf: &'a [u8],
    pos: usize,
}

/// A scalar as read: a string (unescaped into the caller's buffer), the literal text
/// of a number or boolean, or null.
enum Scalar {
    Str,
    Literal(usize, usize),
    Null,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), RemotingError> {
        self.skip_ws();
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(error(format!(
                "expected '{}' at byte {}",
                byte as char, self.pos
            )))
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.skip_ws();
        if self.peek() == Some(byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), RemotingError> {
        if self.buf[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(error(format!("bad literal at byte {}", self.pos)))
        }
    }

    /// The four hex digits of a `\u` escape, read digit by digit: the property
    /// separators of every send header arrive as `\u0001` and `\u0002`, two escapes
    /// per property, so this runs a dozen times per message.
    fn hex4(&mut self) -> Result<u32, RemotingError> {
        let digits = self
            .buf
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| error("bad \\u escape"))?;
        let mut value = 0;
        for &d in digits {
            let nibble = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return Err(error("bad \\u escape")),
            };
            value = value << 4 | u32::from(nibble);
        }
        self.pos += 4;
        Ok(value)
    }

    /// Reads a string (the opening quote is next) into `out`, unescaped.
    fn string_into(&mut self, out: &mut String) -> Result<(), RemotingError> {
        self.expect(b'"')?;
        loop {
            // Copy the run up to the next quote or backslash in one go.
            let run = self.buf[self.pos..]
                .iter()
                .position(|&b| b == b'"' || b == b'\\')
                .ok_or_else(|| error("unterminated string"))?;
            out.push_str(&self.text[self.pos..self.pos + run]);
            self.pos += run;
            let b = self.buf[self.pos];
            self.pos += 1;
            if b == b'"' {
                return Ok(());
            }
            let escape = self.peek().ok_or_else(|| error("truncated escape"))?;
            self.pos += 1;
            match escape {
                b'"' => out.push('"'),
                b'\\' => out.push('\\'),
                b'/' => out.push('/'),
                b'b' => out.push('\u{8}'),
                b'f' => out.push('\u{c}'),
                b'n' => out.push('\n'),
                b'r' => out.push('\r'),
                b't' => out.push('\t'),
                b'u' => {
                    let mut code = self.hex4()?;
                    if (0xD800..0xDC00).contains(&code) {
                        // A surrogate pair: the low half must follow.
                        if !self.buf[self.pos..].starts_with(b"\\u") {
                            return Err(error("lone leading surrogate"));
                        }
                        self.pos += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..0xE000).contains(&low) {
                            return Err(error("bad trailing surrogate"));
                        }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                    }
                    out.push(char::from_u32(code).ok_or_else(|| error("bad \\u escape"))?);
                }
                other => return Err(error(format!("bad escape \\{}", other as char))),
            }
        }
    }

    /// A number, boolean, null or string.
    fn scalar(&mut self, out: &mut String) -> Result<Scalar, RemotingError> {
        self.skip_ws();
        match self.peek() {
            Some(b'"') => self.string_into(out).map(|()| Scalar::Str),
            Some(b'n') => self.literal(b"null").map(|()| Scalar::Null),
            Some(b't') => {
                let start = self.pos;
                self.literal(b"true")
                    .map(|()| Scalar::Literal(start, self.pos))
            }
            Some(b'f') => {
                let start = self.pos;
                self.literal(b"false")
                    .map(|()| Scalar::Literal(start, self.pos))
            }
            Some(b'-' | b'0'..=b'9') => {
                let start = self.pos;
                self.pos += 1;
                while let Some(b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') = self.peek() {
                    self.pos += 1;
                }
                Ok(Scalar::Literal(start, self.pos))
            }
            _ => Err(error(format!("expected a value at byte {}", self.pos))),
        }
    }

    /// An int member: a number, a numeric string, or null (0).
    fn int(&mut self, scratch: &mut String, name: &str) -> Result<i32, RemotingError> {
        scratch.clear();
        let text = match self.scalar(scratch)? {
            Scalar::Null => return Ok(0),
            Scalar::Str => scratch.trim(),
            Scalar::Literal(s, e) => &self.text[s..e],
        };
        text.parse()
            .map_err(|_| error(format!("`{name}` is not an int: {text:?}")))
    }

    /// Skips any value, with an explicit stack bounded in depth (no recursion).
    fn skip_value(&mut self, scratch: &mut String) -> Result<(), RemotingError> {
        let mut open: Vec<u8> = Vec::new();
        loop {
            // One value: a scalar, an empty container, or the start of a container.
            self.skip_ws();
            let container = match self.peek() {
                Some(b @ (b'{' | b'[')) => {
                    self.pos += 1;
                    let close = if b == b'{' { b'}' } else { b']' };
                    if self.eat(close) {
                        false
                    } else {
                        if open.len() == MAX_SKIP_DEPTH {
                            return Err(error("value nested too deeply"));
                        }
                        open.push(b);
                        if b == b'{' {
                            self.member_key(scratch)?;
                        }
                        true
                    }
                }
                _ => {
                    scratch.clear();
                    self.scalar(scratch)?;
                    false
                }
            };
            if container {
                continue;
            }
            // A value is complete: close what it completes, or move to the next element.
            loop {
                let Some(&top) = open.last() else {
                    return Ok(());
                };
                if self.eat(b',') {
                    if top == b'{' {
                        self.member_key(scratch)?;
                    }
                    break;
                }
                self.expect(if top == b'{' { b'}' } else { b']' })?;
                open.pop();
            }
        }
    }

    /// A member's key and colon, inside an object being skipped.
    fn member_key(&mut self, scratch: &mut String) -> Result<(), RemotingError> {
        scratch.clear();
        self.skip_ws();
        self.string_into(scratch)?;
        self.expect(b':')
    }

    /// `extFields`: an object of scalars, or null.
    fn ext_fields(&mut self) -> Result<ExtFields, RemotingError> {
        self.skip_ws();
        if self.peek() == Some(b'n') {
            self.literal(b"null")?;
            return Ok(ExtFields::new());
        }
        self.expect(b'{')?;
        let mut fields = ExtFields::with_capacity(16);
        if self.eat(b'}') {
            return Ok(fields);
        }
        // Keys and values are unescaped straight into the map's buffer (no copy through
        // a scratch string); a null value takes its key back out.
        loop {
            self.skip_ws();
            let k = fields.buf.len();
            self.string_into(&mut fields.buf)?;
            let kv = fields.buf.len();
            self.expect(b':')?;
            let kept = match self.scalar(&mut fields.buf)? {
                Scalar::Str => true,
                Scalar::Literal(s, e) => {
                    fields.buf.push_str(&self.text[s..e]);
                    true
                }
                Scalar::Null => {
                    fields.buf.truncate(k);
                    false
                }
            };
            if kept {
                let end = fields.buf.len() as u32;
                fields.entries.push((k as u32, kv as u32, end));
            }
            if self.eat(b',') {
                continue;
            }
            self.expect(b'}')?;
            return Ok(fields);
        }
    }
}

thread_local! {
    /// The key and value scratch of [`decode`], kept by each thread between headers: a
    /// header is decoded for every frame, and fresh scratch would cost two allocations
    /// each time.
    static SCRATCH: std::cell::Cell<(String, String)> =
        const { std::cell::Cell::new((String::new(), String::new())) };
}

/// Scratch grown past this by a header with long keys or values is not kept.
const SCRATCH_KEPT: usize = 1024;

/// Decodes a JSON header. The body is attached by the caller.
pub fn decode(header: &[u8]) -> Result<RemotingCommand, RemotingError> {
    let (mut key, mut scratch) = SCRATCH.take();
    let decoded = decode_with(header, &mut key, &mut scratch);
    if key.capacity() <= SCRATCH_KEPT && scratch.capacity() <= SCRATCH_KEPT {
        key.clear();
        scratch.clear();
        SCRATCH.set((key, scratch));
    }
    decoded
}

fn decode_with(
    header: &[u8],
    key: &mut String,
    scratch: &mut String,
) -> Result<RemotingCommand, RemotingError> {
    let text = std::str::from_utf8(header).map_err(|_| error("header is not UTF-8"))?;
    let mut r = Reader {
        text,
        buf: header,
        pos: 0,
    };
    let mut cmd = RemotingCommand {
        code: 0,
        // fastjson leaves the Java field initialiser in place when the key is absent.
        language: LanguageCode::Java,
        version: 0,
        opaque: 0,
        flag: 0,
        remark: None,
        ext_fields: ExtFields::new(),
        body: bytes::Bytes::new(),
        serialize_type: SerializeType::Json,
    };
    let mut code = None;
    r.expect(b'{')?;
    if !r.eat(b'}') {
        loop {
            key.clear();
            r.skip_ws();
            r.string_into(key)?;
            r.expect(b':')?;
            match key.as_str() {
                "code" => code = Some(r.int(scratch, "code")?),
                "version" => cmd.version = r.int(scratch, "version")?,
                "opaque" => cmd.opaque = r.int(scratch, "opaque")?,
                "flag" => cmd.flag = r.int(scratch, "flag")?,
                "language" => {
                    scratch.clear();
                    cmd.language = match r.scalar(scratch)? {
                        Scalar::Str => LanguageCode::from_name(scratch),
                        Scalar::Literal(s, e) => text[s..e]
                            .parse::<i64>()
                            .ok()
                            .map(LanguageCode::from_code)
                            .ok_or_else(|| error("`language` is neither a name nor a code"))?,
                        Scalar::Null => LanguageCode::Java,
                    };
                }
                "remark" => {
                    scratch.clear();
                    cmd.remark = match r.scalar(scratch)? {
                        Scalar::Str => Some(scratch.as_str().into()),
                        Scalar::Null => None,
                        Scalar::Literal(..) => return Err(error("`remark` is not a string")),
                    };
                }
                "extFields" => cmd.ext_fields = r.ext_fields()?,
                _ => r.skip_value(scratch)?,
            }
            if r.eat(b',') {
                continue;
            }
            r.expect(b'}')?;
            break;
        }
    }
    r.skip_ws();
    if r.pos != header.len() {
        return Err(error(format!("trailing characters at byte {}", r.pos)));
    }
    cmd.code = code.ok_or_else(|| error("missing field `code`"))?;
    Ok(cmd)
}
