//! Binary `ROCKETMQ` header (serialize type 1), docs/wire.md#binary-header.
//!
//! ```text
//! +--------+----------+---------+--------+------+-----------+--------+-------------+-----------+
//! | code   | language | version | opaque | flag | remarkLen | remark | extFieldsLen| entries   |
//! | short  | byte     | short   | int    | int  | int       | UTF-8  | int         | see below |
//! +--------+----------+---------+--------+------+-----------+--------+-------------+-----------+
//! entry = keyLen (short) + key + valueLen (int) + value
//! ```
//!
//! `code` and `version` are shorts on the wire, as in Java, which truncates larger values;
//! the codec sends a command whose code does not fit (POP's, 200050 and up) in JSON.

use bytes::Buf;

use super::{ExtFields, HeaderOut, LanguageCode, RemotingCommand, SerializeType};
use crate::error::RemotingError;

const FIXED_LEN: usize = 21;

/// Appends the binary header of `cmd` to `out`.
pub fn encode(cmd: &RemotingCommand, out: &mut impl HeaderOut) {
    out.reserve_more(
        FIXED_LEN
            + cmd.remark.as_deref().map_or(0, str::len)
            + cmd.ext_fields.text_len()
            + 6 * cmd.ext_fields.len(),
    );
    out.put_i16(cmd.code as i16);
    out.put_u8(cmd.language.code());
    out.put_i16(cmd.version as i16);
    out.put_i32(cmd.opaque);
    out.put_i32(cmd.flag);
    match &cmd.remark {
        Some(remark) if !remark.is_empty() => {
            out.put_i32(remark.len() as i32);
            out.put_slice(remark.as_bytes());
        }
        _ => out.put_i32(0),
    }
    let len_at = out.written();
    out.put_i32(0);
    for (k, v) in cmd.ext_fields.iter() {
        out.put_i16(k.len() as i16);
        out.put_slice(k.as_bytes());
        out.put_i32(v.len() as i32);
        out.put_slice(v.as_bytes());
    }
    let map_len = (out.written() - len_at - 4) as i32;
    out.written_mut()[len_at..len_at + 4].copy_from_slice(&map_len.to_be_bytes());
}

fn malformed(reason: impl Into<String>) -> RemotingError {
    RemotingError::MalformedHeader {
        kind: "ROCKETMQ",
        reason: reason.into(),
    }
}

/// The next `len` bytes as text, borrowed from the header. `ascii`: every byte of
/// `buf` is known to be ASCII (checked once for the whole map, as most headers are),
/// so no string of it needs a check of its own.
fn take_str<'a>(
    buf: &mut &'a [u8],
    len: usize,
    what: &str,
    ascii: bool,
) -> Result<&'a str, RemotingError> {
    if buf.remaining() < len {
        return Err(malformed(format!(
            "{what} of {len} bytes overruns the header ({} left)",
            buf.remaining()
        )));
    }
    let (text, rest) = buf.split_at(len);
    let s = if ascii {
        // SAFETY: ASCII bytes are UTF-8, and every split of them is at a character
        // boundary.
        unsafe { std::str::from_utf8_unchecked(text) }
    } else {
        std::str::from_utf8(text).map_err(|_| malformed(format!("{what} is not UTF-8")))?
    };
    *buf = rest;
    Ok(s)
}

fn length(v: i64, what: &str) -> Result<usize, RemotingError> {
    usize::try_from(v).map_err(|_| malformed(format!("negative {what} length {v}")))
}

/// Decodes a binary header. The body is attached by the caller.
pub fn decode(header: &[u8]) -> Result<RemotingCommand, RemotingError> {
    let mut buf = header;
    if buf.remaining() < FIXED_LEN {
        return Err(malformed(format!(
            "{} bytes is shorter than the fixed part of {FIXED_LEN}",
            buf.remaining()
        )));
    }
    let code = buf.get_i16() as i32;
    let language = LanguageCode::from_code(buf.get_u8() as i64);
    let version = buf.get_i16() as i32;
    let opaque = buf.get_i32();
    let flag = buf.get_i32();
    let remark_len = length(buf.get_i32() as i64, "remark")?;
    let remark = match remark_len {
        0 => None,
        n => Some(take_str(&mut buf, n, "remark", false)?.into()),
    };
    if buf.remaining() < 4 {
        return Err(malformed("missing extFields length"));
    }
    let map_len = length(buf.get_i32() as i64, "extFields")?;
    if map_len > buf.remaining() {
        return Err(malformed(format!(
            "extFields of {map_len} bytes overruns the header ({} left)",
            buf.remaining()
        )));
    }
    let (mut map, rest) = buf.split_at(map_len);
    if !rest.is_empty() {
        return Err(malformed(format!(
            "{} trailing bytes after extFields",
            rest.len()
        )));
    }
    // Keys and values are copied once, into the map's one buffer (never more than the
    // map's bytes on the wire): two allocations per header, not two per field.
    let mut ext_fields = ExtFields {
        buf: String::with_capacity(map_len),
        entries: Vec::with_capacity(if map_len == 0 { 0 } else { 16 }),
    };
    // One pass over the map's bytes, lengths included, instead of a UTF-8 check per
    // key and value (a length of 128 or more is not ASCII: those maps take the checks).
    let ascii = map.is_ascii();
    while map.has_remaining() {
        if map.remaining() < 2 {
            return Err(malformed("truncated extFields key length"));
        }
        let key_len = length(map.get_i16() as i64, "key")?;
        let key = take_str(&mut map, key_len, "extFields key", ascii)?;
        if map.remaining() < 4 {
            return Err(malformed("truncated extFields value length"));
        }
        let value_len = length(map.get_i32() as i64, "value")?;
        let value = take_str(&mut map, value_len, "extFields value", ascii)?;
        ext_fields.push_decoded(key, value);
    }
    Ok(RemotingCommand {
        code,
        language,
        version,
        opaque,
        flag,
        remark,
        ext_fields,
        body: bytes::Bytes::new(),
        serialize_type: SerializeType::RocketMq,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_lengths_that_overrun_the_header() {
        let mut raw = vec![0, 10, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0];
        raw.extend_from_slice(&100i32.to_be_bytes()); // remark length 100, nothing follows
        assert!(decode(&raw).is_err());

        let mut raw = vec![0, 10, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0];
        raw.extend_from_slice(&(-1i32).to_be_bytes());
        assert!(decode(&raw).is_err(), "negative remark length");

        let mut raw = vec![0, 10, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
        raw.extend_from_slice(&8i32.to_be_bytes());
        raw.extend_from_slice(&[0, 9, b'k']); // key length 9, one byte present
        raw.extend_from_slice(&[0; 5]);
        assert!(decode(&raw).is_err());
    }

    /// A map all ASCII skips the per-string checks; any other byte (a long value's
    /// length, a UTF-8 letter, a byte that is not UTF-8) brings them back.
    #[test]
    fn text_is_checked_unless_the_whole_map_is_ascii() {
        let header = |key: &[u8], value: &[u8]| {
            let mut map = Vec::new();
            map.extend_from_slice(&(key.len() as i16).to_be_bytes());
            map.extend_from_slice(key);
            map.extend_from_slice(&(value.len() as i32).to_be_bytes());
            map.extend_from_slice(value);
            let mut raw = vec![0, 10, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
            raw.extend_from_slice(&(map.len() as i32).to_be_bytes());
            raw.extend_from_slice(&map);
            raw
        };
        let cmd = decode(&header(b"topic", b"T\x01a\x02")).unwrap();
        assert_eq!(cmd.ext_fields.get("topic"), Some("T\u{1}a\u{2}"));
        let long = "x".repeat(300);
        let cmd = decode(&header(b"k", long.as_bytes())).unwrap();
        assert_eq!(cmd.ext_fields.get("k"), Some(long.as_str()));
        let cmd = decode(&header(b"k", "caf\u{e9}".as_bytes())).unwrap();
        assert_eq!(cmd.ext_fields.get("k"), Some("caf\u{e9}"));
        assert!(decode(&header(b"k", b"a\xffb")).is_err());
        assert!(
            decode(&header(b"k\xc3", b"v")).is_err(),
            "a split UTF-8 letter"
        );
    }
}
