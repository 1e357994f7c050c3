//! Message ids (docs/message.md#unique-message-id, #offset-message-id).
//!
//! * Offset message id: upper-case hex of store host address, int port, long
//!   commitlog offset (32 hex characters for IPv4, 56 for IPv6).
//! * Unique id (`UNIQ_KEY`): upper-case hex of client IP, pid (2 bytes), a per-process
//!   random int, milliseconds since the start of the current month (local time), and a
//!   2-byte counter.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Mutex;

use crate::error::DecodeError;
use crate::support::sync::MutexExt;
use crate::support::time::{month_bounds, now_millis};

const HEX: &[u8; 16] = b"0123456789ABCDEF";

fn push_hex(out: &mut String, bytes: &[u8]) {
    for b in bytes {
        out.push(HEX[(b >> 4) as usize] as char);
        out.push(HEX[(b & 0xf) as usize] as char);
    }
}

fn parse_hex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    s.as_bytes()
        .chunks(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

/// The offset message id of the record at `offset` stored by `store_host`.
pub fn create_offset_msg_id(store_host: SocketAddr, offset: i64) -> String {
    let mut out = String::with_capacity(56);
    push_offset_msg_id(&mut out, store_host, offset);
    out
}

/// Appends [`create_offset_msg_id`]'s text to `out` (a batch's ids join in one string).
pub fn push_offset_msg_id(out: &mut String, store_host: SocketAddr, offset: i64) {
    match store_host.ip() {
        IpAddr::V4(ip) => push_hex(out, &ip.octets()),
        IpAddr::V6(ip) => push_hex(out, &ip.octets()),
    }
    push_hex(out, &(store_host.port() as i32).to_be_bytes());
    push_hex(out, &offset.to_be_bytes());
}

/// Store host and commitlog offset of an offset message id.
pub fn decode_offset_msg_id(id: &str) -> Result<(SocketAddr, i64), DecodeError> {
    let bytes = parse_hex(id)
        .ok_or_else(|| DecodeError::invalid("offset message id", format!("{id:?} is not hex")))?;
    let ip_len = match bytes.len() {
        16 => 4,
        28 => 16,
        n => {
            return Err(DecodeError::invalid(
                "offset message id",
                format!("{n} bytes, expected 16 or 28"),
            ))
        }
    };
    let ip: IpAddr = if ip_len == 4 {
        Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]).into()
    } else {
        let mut octets = [0u8; 16];
        octets.copy_from_slice(&bytes[..16]);
        Ipv6Addr::from(octets).into()
    };
    let port = i32::from_be_bytes([
        bytes[ip_len],
        bytes[ip_len + 1],
        bytes[ip_len + 2],
        bytes[ip_len + 3],
    ]);
    let mut offset = [0u8; 8];
    offset.copy_from_slice(&bytes[ip_len + 4..ip_len + 12]);
    Ok((SocketAddr::new(ip, port as u16), i64::from_be_bytes(offset)))
}

/// What a unique id (`UNIQ_KEY`) tells: the client's address and process id, and
/// about when it was made (Java's `MessageClientIDSetter.getIPStrFromID`,
/// `getNearlyTimeFromID`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniqIdInfo {
    pub ip: IpAddr,
    /// The low 16 bits of the producer's process id.
    pub pid: u16,
    /// Milliseconds since the epoch. The id holds the time since the start of a month,
    /// taken as this month's unless that is in the future, then as last month's.
    pub nearly_time_ms: i64,
}

/// Decodes a unique id (32 hex digits for an IPv4 client, 56 for IPv6), its time
/// read relative to `now_ms`.
pub fn decode_uniq_id(id: &str, now_ms: i64) -> Result<UniqIdInfo, DecodeError> {
    let bad = |reason: &str| DecodeError::Invalid {
        what: "unique message id",
        reason: format!("{id:?}: {reason}"),
    };
    let bytes = parse_hex(id.trim()).ok_or_else(|| bad("not hexadecimal"))?;
    let ip_len = match bytes.len() {
        16 => 4,
        28 => 16,
        _ => return Err(bad("not 32 or 56 hex digits")),
    };
    let ip = if ip_len == 4 {
        let mut o = [0u8; 4];
        o.copy_from_slice(&bytes[..4]);
        IpAddr::V4(Ipv4Addr::from(o))
    } else {
        let mut o = [0u8; 16];
        o.copy_from_slice(&bytes[..16]);
        IpAddr::V6(Ipv6Addr::from(o))
    };
    let pid = u16::from_be_bytes([bytes[ip_len], bytes[ip_len + 1]]);
    let at = ip_len + 6;
    let span = i64::from(u32::from_be_bytes([
        bytes[at],
        bytes[at + 1],
        bytes[at + 2],
        bytes[at + 3],
    ]));
    let (mut start, _) = month_bounds(now_ms);
    if start + span >= now_ms {
        start = month_bounds(start - 1).0;
    }
    Ok(UniqIdInfo {
        ip,
        pid,
        nearly_time_ms: start + span,
    })
}

/// Generates `UNIQ_KEY` values in `MessageClientIDSetter`'s layout.
pub struct UniqIdGenerator {
    prefix: String,
    counter: AtomicU16,
    month: Mutex<(i64, i64)>,
}

impl UniqIdGenerator {
    /// `ip` is the client's address; the pid and a random int complete the constant prefix.
    pub fn new(ip: IpAddr) -> Self {
        let mut prefix = String::with_capacity(44);
        match ip {
            IpAddr::V4(v4) => push_hex(&mut prefix, &v4.octets()),
            IpAddr::V6(v6) => push_hex(&mut prefix, &v6.octets()),
        }
        push_hex(&mut prefix, &(std::process::id() as u16).to_be_bytes());
        push_hex(&mut prefix, &rand::random::<i32>().to_be_bytes());
        UniqIdGenerator {
            prefix,
            counter: AtomicU16::new(rand::random()),
            month: Mutex::new((i64::MIN, i64::MIN)),
        }
    }

    /// A new id.
    pub fn next_id(&self) -> String {
        let mut id = String::with_capacity(self.prefix.len() + 12);
        self.push_next_id(&mut id);
        id
    }

    /// A new id, appended to `out` (a message's property text, without a copy).
    pub fn push_next_id(&self, out: &mut String) {
        let now = now_millis();
        let since_month = {
            // A poisoned lock only means another thread panicked mid-update of two integers.
            let mut month = self.month.locked();
            if now >= month.1 {
                *month = month_bounds(now);
            }
            now - month.0
        };
        out.push_str(&self.prefix);
        push_hex(out, &(since_month as i32).to_be_bytes());
        push_hex(
            out,
            &self.counter.fetch_add(1, Ordering::Relaxed).to_be_bytes(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_ids_tell_their_client_and_time() {
        let generator = UniqIdGenerator::new("10.1.2.3".parse().unwrap());
        let now = now_millis();
        let id = generator.next_id();
        let info = decode_uniq_id(&id, now + 1000).unwrap();
        assert_eq!(info.ip, "10.1.2.3".parse::<IpAddr>().unwrap());
        assert_eq!(info.pid, std::process::id() as u16);
        assert!(
            (info.nearly_time_ms - now).abs() < 5_000,
            "{info:?} vs {now}"
        );
        assert!(decode_uniq_id("XYZ", now).is_err());
        assert!(decode_uniq_id("0A01020300", now).is_err());
    }

    #[test]
    fn offset_id_matches_the_documented_example() {
        let id = create_offset_msg_id("127.0.0.1:10911".parse().unwrap(), 1_073_741_824);
        assert_eq!(id, "7F00000100002A9F0000000040000000");
        assert_eq!(
            decode_offset_msg_id(&id).unwrap(),
            ("127.0.0.1:10911".parse().unwrap(), 1_073_741_824)
        );
        let v6: SocketAddr = "[fe80::1]:10911".parse().unwrap();
        let id6 = create_offset_msg_id(v6, 5);
        assert_eq!(id6.len(), 56);
        assert_eq!(decode_offset_msg_id(&id6).unwrap(), (v6, 5));
        assert!(decode_offset_msg_id("XYZ").is_err());
        assert!(decode_offset_msg_id("7F00").is_err());
        assert!(decode_offset_msg_id("7F00000100002A9F000000004000000G").is_err());
    }

    #[test]
    fn uniq_ids_have_the_java_shape_and_differ() {
        let g = UniqIdGenerator::new("10.1.2.3".parse().unwrap());
        let a = g.next_id();
        let b = g.next_id();
        assert_eq!(a.len(), 32);
        assert!(a.starts_with("0A010203"));
        assert_eq!(a[..20], b[..20], "constant per process");
        assert_ne!(a, b);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase()));
    }
}
