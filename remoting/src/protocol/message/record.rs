//! The commitlog record (docs/store.md#commitlog-record-layout), which is also the
//! pull-response format.
//!
//! ```text
//! off  size  field                       off  size   field
//!   0     4  TOTALSIZE                    48  8|20   BORNHOST (ip + int port)
//!   4     4  MAGICCODE (v1 / v2)          ..     8   STORETIMESTAMP
//!   8     4  BODYCRC                      ..  8|20   STOREHOST
//!  12     4  QUEUEID                      ..     4   RECONSUMETIMES
//!  16     4  FLAG                         ..     8   PREPARED TRANSACTION OFFSET
//!  20     8  QUEUEOFFSET                  ..     4   BODYLEN, then BODY
//!  28     8  PHYSICALOFFSET               ..   1|2   TOPICLEN (v1: 1, v2: 2), then TOPIC
//!  36     4  SYSFLAG                      ..     2   PROPERTIESLEN, then PROPERTIES
//!  40     8  BORNTIMESTAMP
//! ```
//!
//! Host fields are 20 bytes when the sysFlag's IPv6 bits are set. A file's unused tail
//! starts with an 8-byte blank: `int remaining` + `int BLANK_MAGIC_CODE`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::BufMut;

use super::property;
use super::sysflag::{BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG};
use crate::error::DecodeError;

/// Magic of a record with a 1-byte topic length.
pub const MAGIC_V1: i32 = 0xDAA3_20A7_u32 as i32;
/// Magic of a record with a 2-byte topic length (topics over 127 bytes).
pub const MAGIC_V2: i32 = 0xDAA3_20AB_u32 as i32;
/// Magic of the end-of-file blank.
pub const BLANK_MAGIC: i32 = 0xCBD4_3194_u32 as i32;
/// Size of the end-of-file blank marker.
pub const BLANK_LEN: usize = 8;

pub const TOTAL_SIZE_POS: usize = 0;
pub const MAGIC_POS: usize = 4;
pub const BODY_CRC_POS: usize = 8;
pub const QUEUE_ID_POS: usize = 12;
pub const FLAG_POS: usize = 16;
pub const QUEUE_OFFSET_POS: usize = 20;
pub const PHYSICAL_OFFSET_POS: usize = 28;
pub const SYS_FLAG_POS: usize = 36;
pub const BORN_TIMESTAMP_POS: usize = 40;
pub const BORN_HOST_POS: usize = 48;

/// Topics longer than this need the v2 record.
const V1_MAX_TOPIC_LEN: usize = 127;

/// Size of a host field: address + int port.
pub fn host_len(v6: bool) -> usize {
    if v6 {
        20
    } else {
        8
    }
}

/// Position of STORETIMESTAMP, which follows the born host.
pub fn store_timestamp_pos(sys_flag: i32) -> usize {
    BORN_HOST_POS + host_len(sys_flag & BORNHOST_V6_FLAG != 0)
}

/// Whole record length for the given parts (`calMsgLength`).
pub fn record_len(
    sys_flag: i32,
    body_len: usize,
    topic_len: usize,
    properties_len: usize,
) -> usize {
    let topic_len_size = if topic_len > V1_MAX_TOPIC_LEN { 2 } else { 1 };
    4 + 4
        + 4
        + 4
        + 4
        + 8
        + 8
        + 4
        + 8
        + host_len(sys_flag & BORNHOST_V6_FLAG != 0)
        + 8
        + host_len(sys_flag & STOREHOSTADDRESS_V6_FLAG != 0)
        + 4
        + 8
        + 4
        + body_len
        + topic_len_size
        + topic_len
        + 2
        + properties_len
}

/// The standard RocketMQ CRC: CRC-32 masked to a non-negative int.
pub fn crc32(data: &[u8]) -> u32 {
    crc32fast::hash(data) & 0x7FFF_FFFF
}

/// Everything a writer supplies to encode one record.
#[derive(Debug, Clone)]
pub struct RecordFields<'a> {
    pub body_crc: u32,
    pub queue_id: i32,
    pub flag: i32,
    pub queue_offset: i64,
    pub physical_offset: i64,
    /// The IPv6 host bits are derived from the addresses, whatever is set here.
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub born_host: SocketAddr,
    pub store_timestamp: i64,
    pub store_host: SocketAddr,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
    pub body: &'a [u8],
    pub topic: &'a str,
    pub properties: &'a str,
}

impl RecordFields<'_> {
    /// sysFlag with the host-address bits matching the addresses.
    pub fn effective_sys_flag(&self) -> i32 {
        let mut flag = self.sys_flag & !(BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG);
        if self.born_host.is_ipv6() {
            flag |= BORNHOST_V6_FLAG;
        }
        if self.store_host.is_ipv6() {
            flag |= STOREHOSTADDRESS_V6_FLAG;
        }
        flag
    }

    pub fn encoded_len(&self) -> usize {
        record_len(
            self.effective_sys_flag(),
            self.body.len(),
            self.topic.len(),
            self.properties.len(),
        )
    }

    /// Appends the record. The caller has checked the topic (≤ 65,535 bytes) and
    /// properties (≤ 32,767 bytes) limits.
    pub fn encode(&self, out: &mut impl BufMut) {
        let sys_flag = self.effective_sys_flag();
        let v2 = self.topic.len() > V1_MAX_TOPIC_LEN;
        out.put_i32(self.encoded_len() as i32);
        out.put_i32(if v2 { MAGIC_V2 } else { MAGIC_V1 });
        out.put_u32(self.body_crc);
        out.put_i32(self.queue_id);
        out.put_i32(self.flag);
        out.put_i64(self.queue_offset);
        out.put_i64(self.physical_offset);
        out.put_i32(sys_flag);
        out.put_i64(self.born_timestamp);
        put_host(out, self.born_host);
        out.put_i64(self.store_timestamp);
        put_host(out, self.store_host);
        out.put_i32(self.reconsume_times);
        out.put_i64(self.prepared_transaction_offset);
        out.put_i32(self.body.len() as i32);
        out.put_slice(self.body);
        if v2 {
            out.put_u16(self.topic.len() as u16);
        } else {
            out.put_u8(self.topic.len() as u8);
        }
        out.put_slice(self.topic.as_bytes());
        out.put_i16(self.properties.len() as i16);
        out.put_slice(self.properties.as_bytes());
    }
}

fn put_host(out: &mut impl BufMut, addr: SocketAddr) {
    match addr.ip() {
        IpAddr::V4(ip) => out.put_slice(&ip.octets()),
        IpAddr::V6(ip) => out.put_slice(&ip.octets()),
    }
    out.put_i32(addr.port() as i32);
}

fn read_i32(buf: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]])
}

fn read_i64(buf: &[u8], at: usize) -> i64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[at..at + 8]);
    i64::from_be_bytes(b)
}

fn read_host(buf: &[u8], at: usize, v6: bool) -> SocketAddr {
    if v6 {
        let mut octets = [0u8; 16];
        octets.copy_from_slice(&buf[at..at + 16]);
        SocketAddr::new(Ipv6Addr::from(octets).into(), read_i32(buf, at + 16) as u16)
    } else {
        let ip = Ipv4Addr::new(buf[at], buf[at + 1], buf[at + 2], buf[at + 3]);
        SocketAddr::new(ip.into(), read_i32(buf, at + 4) as u16)
    }
}

/// What starts at a position of a commitlog file.
#[derive(Debug, Clone, Copy)]
pub enum RecordKind<'a> {
    /// A complete, consistent record.
    Message(RecordView<'a>),
    /// The end-of-file blank; the file's data ends here.
    Blank,
}

/// A borrowed, validated record: every length field was checked against the buffer
/// and against TOTALSIZE, so the accessors cannot go out of bounds.
#[derive(Debug, Clone, Copy)]
pub struct RecordView<'a> {
    buf: &'a [u8],
    store_host_pos: usize,
    pub(super) body_pos: usize,
    pub(super) body_len: usize,
    topic: &'a str,
    properties: &'a str,
}

impl<'a> RecordView<'a> {
    /// Parses what starts at `buf[0]`: a record, the blank, or an error for anything
    /// else (torn write, zeros, garbage). With `verify_crc` the body CRC is checked too.
    pub fn parse(buf: &'a [u8], verify_crc: bool) -> Result<RecordKind<'a>, DecodeError> {
        const WHAT: &str = "commitlog record";
        if buf.len() < BLANK_LEN {
            return Err(DecodeError::Truncated {
                what: WHAT,
                needed: BLANK_LEN,
                available: buf.len(),
            });
        }
        let total = read_i32(buf, TOTAL_SIZE_POS);
        let magic = read_i32(buf, MAGIC_POS);
        if magic == BLANK_MAGIC {
            return Ok(RecordKind::Blank);
        }
        let v2 = match magic {
            MAGIC_V1 => false,
            MAGIC_V2 => true,
            other => {
                return Err(DecodeError::invalid(WHAT, format!("bad magic {other:#x}")));
            }
        };
        let total = usize::try_from(total)
            .ok()
            .filter(|t| *t >= record_len(0, 0, 0, 0))
            .ok_or_else(|| DecodeError::invalid(WHAT, format!("bad total size {total}")))?;
        if total > buf.len() {
            return Err(DecodeError::Truncated {
                what: WHAT,
                needed: total,
                available: buf.len(),
            });
        }
        let rec = &buf[..total];
        let sys_flag = read_i32(rec, SYS_FLAG_POS);
        let born_v6 = sys_flag & BORNHOST_V6_FLAG != 0;
        let store_v6 = sys_flag & STOREHOSTADDRESS_V6_FLAG != 0;
        let store_host_pos = BORN_HOST_POS + host_len(born_v6) + 8;
        let body_len_pos = store_host_pos + host_len(store_v6) + 4 + 8;
        // The fixed part must fit before reading the body length.
        if body_len_pos + 4 > total {
            return Err(DecodeError::invalid(WHAT, "fixed fields exceed total size"));
        }
        let body_len = usize::try_from(read_i32(rec, body_len_pos))
            .map_err(|_| DecodeError::invalid(WHAT, "negative body length"))?;
        let body_pos = body_len_pos + 4;
        let topic_len_pos = body_pos
            .checked_add(body_len)
            .filter(|p| *p + if v2 { 2 } else { 1 } <= total)
            .ok_or_else(|| DecodeError::invalid(WHAT, "body exceeds total size"))?;
        let (topic_len, topic_pos) = if v2 {
            (
                u16::from_be_bytes([rec[topic_len_pos], rec[topic_len_pos + 1]]) as usize,
                topic_len_pos + 2,
            )
        } else {
            (rec[topic_len_pos] as usize, topic_len_pos + 1)
        };
        let props_len_pos = topic_pos + topic_len;
        if props_len_pos + 2 > total {
            return Err(DecodeError::invalid(WHAT, "topic exceeds total size"));
        }
        let props_len = usize::try_from(i16::from_be_bytes([
            rec[props_len_pos],
            rec[props_len_pos + 1],
        ]))
        .map_err(|_| DecodeError::invalid(WHAT, "negative properties length"))?;
        let props_pos = props_len_pos + 2;
        if props_pos + props_len != total {
            return Err(DecodeError::invalid(
                WHAT,
                format!(
                    "computed length {} differs from total size {total}",
                    props_pos + props_len
                ),
            ));
        }
        let topic = std::str::from_utf8(&rec[topic_pos..props_len_pos])
            .map_err(|_| DecodeError::invalid(WHAT, "topic is not UTF-8"))?;
        let properties = std::str::from_utf8(&rec[props_pos..total])
            .map_err(|_| DecodeError::invalid(WHAT, "properties are not UTF-8"))?;
        let view = RecordView {
            buf: rec,
            store_host_pos,
            body_pos,
            body_len,
            topic,
            properties,
        };
        if verify_crc && crc32(view.body()) != view.body_crc() {
            return Err(DecodeError::invalid(WHAT, "body CRC mismatch"));
        }
        Ok(RecordKind::Message(view))
    }

    /// Parses a record that must not be a blank.
    pub fn parse_message(buf: &'a [u8], verify_crc: bool) -> Result<Self, DecodeError> {
        match Self::parse(buf, verify_crc)? {
            RecordKind::Message(view) => Ok(view),
            RecordKind::Blank => Err(DecodeError::invalid(
                "commitlog record",
                "blank where a message was expected",
            )),
        }
    }

    /// The record's bytes, exactly as stored.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.buf
    }
    pub fn total_size(&self) -> usize {
        self.buf.len()
    }
    pub fn magic(&self) -> i32 {
        read_i32(self.buf, MAGIC_POS)
    }
    pub fn body_crc(&self) -> u32 {
        read_i32(self.buf, BODY_CRC_POS) as u32
    }
    pub fn queue_id(&self) -> i32 {
        read_i32(self.buf, QUEUE_ID_POS)
    }
    pub fn flag(&self) -> i32 {
        read_i32(self.buf, FLAG_POS)
    }
    pub fn queue_offset(&self) -> i64 {
        read_i64(self.buf, QUEUE_OFFSET_POS)
    }
    pub fn physical_offset(&self) -> i64 {
        read_i64(self.buf, PHYSICAL_OFFSET_POS)
    }
    pub fn sys_flag(&self) -> i32 {
        read_i32(self.buf, SYS_FLAG_POS)
    }
    pub fn born_timestamp(&self) -> i64 {
        read_i64(self.buf, BORN_TIMESTAMP_POS)
    }
    pub fn born_host(&self) -> SocketAddr {
        read_host(
            self.buf,
            BORN_HOST_POS,
            self.sys_flag() & BORNHOST_V6_FLAG != 0,
        )
    }
    pub fn store_timestamp(&self) -> i64 {
        read_i64(self.buf, self.store_host_pos - 8)
    }
    pub fn store_host(&self) -> SocketAddr {
        read_host(
            self.buf,
            self.store_host_pos,
            self.sys_flag() & STOREHOSTADDRESS_V6_FLAG != 0,
        )
    }
    fn after_store_host(&self) -> usize {
        self.store_host_pos + host_len(self.sys_flag() & STOREHOSTADDRESS_V6_FLAG != 0)
    }
    pub fn reconsume_times(&self) -> i32 {
        read_i32(self.buf, self.after_store_host())
    }
    pub fn prepared_transaction_offset(&self) -> i64 {
        read_i64(self.buf, self.after_store_host() + 4)
    }
    pub fn body(&self) -> &'a [u8] {
        &self.buf[self.body_pos..self.body_pos + self.body_len]
    }
    pub fn topic(&self) -> &'a str {
        self.topic
    }
    /// The encoded property string.
    pub fn properties(&self) -> &'a str {
        self.properties
    }
    pub fn property(&self, name: &str) -> Option<&'a str> {
        property::find(self.properties, name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::MessageExt;
    use bytes::Bytes;

    fn sample_fields<'a>(topic: &'a str, body: &'a [u8], properties: &'a str) -> RecordFields<'a> {
        RecordFields {
            body_crc: crc32(body),
            queue_id: 3,
            flag: 7,
            queue_offset: 42,
            physical_offset: 1024,
            sys_flag: 0,
            born_timestamp: 1_700_000_000_000,
            born_host: "10.0.0.5:50000".parse().unwrap(),
            store_timestamp: 1_700_000_000_123,
            store_host: "127.0.0.1:10911".parse().unwrap(),
            reconsume_times: 1,
            prepared_transaction_offset: 0,
            body,
            topic,
            properties,
        }
    }

    /// Golden bytes written field by field from docs/store.md#commitlog-record-layout, not
    /// by the encoder.
    #[test]
    fn encodes_the_documented_layout() {
        let props = "TAGS\u{1}A\u{2}";
        let fields = sample_fields("T", b"hi", props);
        let mut out = Vec::new();
        fields.encode(&mut out);

        let mut golden: Vec<u8> = Vec::new();
        let total = 91 + 2 + 1 + props.len();
        golden.extend_from_slice(&(total as i32).to_be_bytes()); // TOTALSIZE
        golden.extend_from_slice(&[0xDA, 0xA3, 0x20, 0xA7]); // MAGICCODE v1
        golden.extend_from_slice(&(crc32fast::hash(b"hi") & 0x7fff_ffff).to_be_bytes());
        golden.extend_from_slice(&[0, 0, 0, 3]); // QUEUEID
        golden.extend_from_slice(&[0, 0, 0, 7]); // FLAG
        golden.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 42]); // QUEUEOFFSET
        golden.extend_from_slice(&[0, 0, 0, 0, 0, 0, 4, 0]); // PHYSICALOFFSET
        golden.extend_from_slice(&[0, 0, 0, 0]); // SYSFLAG
        golden.extend_from_slice(&1_700_000_000_000i64.to_be_bytes()); // BORNTIMESTAMP
        golden.extend_from_slice(&[10, 0, 0, 5, 0, 0, 0xC3, 0x50]); // BORNHOST 10.0.0.5:50000
        golden.extend_from_slice(&1_700_000_000_123i64.to_be_bytes()); // STORETIMESTAMP
        golden.extend_from_slice(&[127, 0, 0, 1, 0, 0, 0x2A, 0x9F]); // STOREHOST :10911
        golden.extend_from_slice(&[0, 0, 0, 1]); // RECONSUMETIMES
        golden.extend_from_slice(&[0; 8]); // PREPARED TRANSACTION OFFSET
        golden.extend_from_slice(&[0, 0, 0, 2, b'h', b'i']); // BODYLEN + BODY
        golden.extend_from_slice(&[1, b'T']); // TOPICLEN + TOPIC
        golden.extend_from_slice(&(props.len() as i16).to_be_bytes());
        golden.extend_from_slice(props.as_bytes());
        assert_eq!(out, golden);
        assert_eq!(
            crc32(b"Hello RocketMQ"),
            1774740973,
            "docs/message.md#compression vector"
        );
    }

    #[test]
    fn parses_what_it_encodes_including_v2_and_ipv6() {
        let long_topic = "t".repeat(200);
        let mut fields = sample_fields(&long_topic, b"body", "KEYS\u{1}k\u{2}");
        fields.born_host = "[::1]:1234".parse().unwrap();
        let mut out = Vec::new();
        fields.encode(&mut out);
        let view = RecordView::parse_message(&out, true).unwrap();
        assert_eq!(view.magic(), MAGIC_V2);
        assert_eq!(view.topic(), long_topic);
        assert_eq!(view.born_host(), fields.born_host);
        assert_eq!(view.store_host(), fields.store_host);
        assert_eq!(view.store_timestamp(), fields.store_timestamp);
        assert_eq!(view.reconsume_times(), 1);
        assert_eq!(view.property("KEYS"), Some("k"));
        assert_eq!(store_timestamp_pos(view.sys_flag()), 48 + 20);

        let msg = MessageExt::decode(&Bytes::from(out.clone()), true).unwrap();
        assert_eq!(msg.encode(), out);
    }

    #[test]
    fn rejects_every_truncation_and_a_bad_crc() {
        let mut out = Vec::new();
        sample_fields("Topic", b"payload", "A\u{1}b\u{2}").encode(&mut out);
        for cut in 0..out.len() {
            assert!(
                RecordView::parse(&out[..cut], false).is_err(),
                "cut at {cut}"
            );
        }
        let mut bad = out.clone();
        let body_at = bad.len() - "A\u{1}b\u{2}".len() - 2 - 5 - 1 - 7;
        bad[body_at] ^= 0xff;
        assert!(RecordView::parse(&bad, true).is_err());
        assert!(RecordView::parse(&bad, false).is_ok());
    }

    #[test]
    fn recognises_the_blank_and_zeros() {
        let mut blank = Vec::new();
        blank.extend_from_slice(&100i32.to_be_bytes());
        blank.extend_from_slice(&BLANK_MAGIC.to_be_bytes());
        assert!(matches!(
            RecordView::parse(&blank, true),
            Ok(RecordKind::Blank)
        ));
        assert!(RecordView::parse(&[0u8; 64], true).is_err());
    }

    #[test]
    fn decode_all_stops_at_garbage() {
        let mut buf = Vec::new();
        sample_fields("T", b"one", "").encode(&mut buf);
        sample_fields("T", b"two", "").encode(&mut buf);
        buf.extend_from_slice(&[1, 2, 3]);
        let msgs = MessageExt::decode_all(&Bytes::from(buf));
        assert_eq!(msgs.len(), 2);
        assert_eq!(&msgs[1].body[..], b"two");
        assert_eq!(msgs[0].offset_msg_id(), "7F00000100002A9F0000000000000400");
    }
}
