//! SEND_BATCH_MESSAGE body (docs/message.md#batch-body): one block per message.
//!
//! ```text
//! TOTALSIZE int | MAGICCODE int (0) | BODYCRC int (0) | FLAG int | BODYLEN int | BODY |
//! PROPERTIESLEN short | PROPERTIES
//! ```

use bytes::{Buf, BufMut, Bytes};

use crate::error::DecodeError;

const BLOCK_FIXED: usize = 4 + 4 + 4 + 4 + 4 + 2;

/// One message of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchEntry {
    pub flag: i32,
    pub body: Bytes,
    /// The encoded property string of this message.
    pub properties: String,
}

/// Size of one encoded block.
pub fn block_len(body_len: usize, properties_len: usize) -> usize {
    BLOCK_FIXED + body_len + properties_len
}

/// Appends one block.
pub fn encode_block(out: &mut impl BufMut, flag: i32, body: &[u8], properties: &str) {
    out.put_i32(block_len(body.len(), properties.len()) as i32);
    out.put_i32(0);
    out.put_i32(0);
    out.put_i32(flag);
    out.put_i32(body.len() as i32);
    out.put_slice(body);
    out.put_i16(properties.len() as i16);
    out.put_slice(properties.as_bytes());
}

/// Splits a batch body into its messages; any inconsistency rejects the whole batch.
pub fn decode(body: &Bytes) -> Result<Vec<BatchEntry>, DecodeError> {
    const WHAT: &str = "batch block";
    let mut entries = Vec::new();
    let mut at = 0usize;
    while at < body.len() {
        let mut buf = &body[at..];
        if buf.remaining() < BLOCK_FIXED {
            return Err(DecodeError::Truncated {
                what: WHAT,
                needed: BLOCK_FIXED,
                available: buf.remaining(),
            });
        }
        let total = buf.get_i32();
        let _magic = buf.get_i32();
        let _crc = buf.get_i32();
        let flag = buf.get_i32();
        let body_len = usize::try_from(buf.get_i32())
            .map_err(|_| DecodeError::invalid(WHAT, "negative body length"))?;
        if buf.remaining() < body_len + 2 {
            return Err(DecodeError::Truncated {
                what: WHAT,
                needed: body_len + 2,
                available: buf.remaining(),
            });
        }
        let body_start = at + 20;
        let msg_body = body.slice(body_start..body_start + body_len);
        buf.advance(body_len);
        let props_len = usize::try_from(buf.get_i16())
            .map_err(|_| DecodeError::invalid(WHAT, "negative properties length"))?;
        if buf.remaining() < props_len {
            return Err(DecodeError::Truncated {
                what: WHAT,
                needed: props_len,
                available: buf.remaining(),
            });
        }
        let properties = std::str::from_utf8(&buf[..props_len])
            .map_err(|_| DecodeError::invalid(WHAT, "properties are not UTF-8"))?
            .to_owned();
        let len = block_len(body_len, props_len);
        if total as i64 != len as i64 {
            return Err(DecodeError::invalid(
                WHAT,
                format!("total size {total} differs from computed {len}"),
            ));
        }
        entries.push(BatchEntry {
            flag,
            body: msg_body,
            properties,
        });
        at += len;
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_block_and_round_trip() {
        let mut out = Vec::new();
        encode_block(&mut out, 5, b"ab", "K\u{1}v\u{2}");
        let golden: Vec<u8> = [
            &[0, 0, 0, 28][..], // TOTALSIZE = 22 + 2 + 4
            &[0, 0, 0, 0],      // MAGICCODE
            &[0, 0, 0, 0],      // BODYCRC
            &[0, 0, 0, 5],      // FLAG
            &[0, 0, 0, 2, b'a', b'b'],
            &[0, 4, b'K', 1, b'v', 2],
        ]
        .concat();
        assert_eq!(out, golden);
        encode_block(&mut out, 0, b"", "");
        let entries = decode(&Bytes::from(out)).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(&entries[0].body[..], b"ab");
        assert_eq!(entries[0].properties, "K\u{1}v\u{2}");
        assert_eq!(entries[1].flag, 0);
    }

    #[test]
    fn rejects_inconsistent_blocks() {
        let mut out = Vec::new();
        encode_block(&mut out, 0, b"abc", "");
        for cut in 1..out.len() {
            assert!(
                decode(&Bytes::copy_from_slice(&out[..cut])).is_err(),
                "cut {cut}"
            );
        }
        let mut wrong_total = out.clone();
        wrong_total[3] = 99;
        assert!(decode(&Bytes::from(wrong_total)).is_err());
        let mut negative = out.clone();
        negative[16..20].copy_from_slice(&(-1i32).to_be_bytes());
        assert!(decode(&Bytes::from(negative)).is_err());
    }
}
