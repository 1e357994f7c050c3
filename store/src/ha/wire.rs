//! The classic HA wire format (Apache RocketMQ `DefaultHAConnection` / `DefaultHAClient`,
//! docs/replication.md#wire-format): a raw TCP byte stream, big-endian, no handshake.
//!
//! Slave → master, an offset report (8 bytes), sent after each applied chunk and as a
//! heartbeat; the first one is where the slave wants the transfer to start:
//!
//! ```text
//! | 0 | 8 | slave's max commitlog offset (i64) |
//! ```
//!
//! Master → slave, a transfer frame; a body of 0 bytes is a heartbeat:
//!
//! ```text
//! | 0  | 8        | phyOffset: commitlog offset of the first body byte (i64) |
//! | 8  | 4        | bodySize (i32)                                           |
//! | 12 | bodySize | raw commitlog bytes, never across two files              |
//! ```
//!
//! Decoding is sans-IO: the callers read into a [`BytesMut`] and call the decoders,
//! which consume only complete records and check every length before using it.

use bytes::{Buf, Bytes, BytesMut};

use crate::error::{Result, StoreError};

/// Size of a slave's offset report.
pub const REPORT_SIZE: usize = 8;
/// Size of a transfer frame's header.
pub const TRANSFER_HEADER_SIZE: usize = 12;
/// The slave's read buffer (Apache `READ_MAX_BUFFER_SIZE`): no frame may be larger.
pub const SLAVE_READ_BUFFER: usize = 4 * 1024 * 1024;
/// The largest transfer body a slave accepts.
pub const MAX_TRANSFER_BODY: usize = SLAVE_READ_BUFFER - TRANSFER_HEADER_SIZE;

/// One frame from the master: `body` is empty for a heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferFrame {
    pub offset: i64,
    pub body: Bytes,
}

impl TransferFrame {
    pub fn is_heartbeat(&self) -> bool {
        self.body.is_empty()
    }

    /// Offset right after the body.
    pub fn end(&self) -> i64 {
        self.offset + self.body.len() as i64
    }
}

/// Size of a controller-mode slave's handshake (Apache `AutoSwitchHAClient`'s
/// layout): `[state = 1: i32][isSyncFromLastFile: i16][isAsyncLearner: i16][brokerId: i64]`.
pub const HANDSHAKE_SIZE: usize = 16;

/// A controller-mode slave's first bytes on a connection.
pub fn encode_handshake(broker_id: i64) -> [u8; HANDSHAKE_SIZE] {
    let mut out = [0u8; HANDSHAKE_SIZE];
    out[0..4].copy_from_slice(&1i32.to_be_bytes());
    out[8..16].copy_from_slice(&broker_id.to_be_bytes());
    out
}

/// The slave's broker id once the whole handshake is buffered (consumed then).
pub fn decode_handshake(buf: &mut BytesMut) -> Result<Option<i64>> {
    if buf.len() < HANDSHAKE_SIZE {
        return Ok(None);
    }
    let mut h = buf.split_to(HANDSHAKE_SIZE);
    let state = h.get_i32();
    if state != 1 {
        return Err(StoreError::HaProtocol {
            reason: format!("expected a handshake (state 1), got state {state}"),
        });
    }
    h.advance(4);
    Ok(Some(h.get_i64()))
}

/// A slave's offset report.
pub fn encode_report(offset: i64) -> [u8; REPORT_SIZE] {
    offset.to_be_bytes()
}

/// The header of a transfer frame carrying `body_len` bytes from `offset`.
pub fn encode_transfer_header(offset: i64, body_len: usize) -> [u8; TRANSFER_HEADER_SIZE] {
    let mut out = [0u8; TRANSFER_HEADER_SIZE];
    out[..8].copy_from_slice(&offset.to_be_bytes());
    // Callers cap bodies at `haTransferBatchSize`, far below i32::MAX.
    out[8..].copy_from_slice(&(body_len.min(i32::MAX as usize) as i32).to_be_bytes());
    out
}

fn protocol(reason: String) -> StoreError {
    StoreError::HaProtocol { reason }
}

/// Consumes every complete report in `buf` and returns the last one (the master
/// keeps only the newest, as Apache does); a partial report stays in `buf`.
pub fn decode_reports(buf: &mut BytesMut) -> Result<Option<i64>> {
    let mut last = None;
    while buf.remaining() >= REPORT_SIZE {
        let offset = buf.get_i64();
        if offset < 0 {
            return Err(protocol(format!("negative offset report {offset}")));
        }
        last = Some(offset);
    }
    Ok(last)
}

/// One complete transfer frame from the front of `buf`, or `None` (consuming
/// nothing) until it is all there. A body above `max_body` or a negative offset or
/// size is an error: the connection is closed.
pub fn decode_transfer(buf: &mut BytesMut, max_body: usize) -> Result<Option<TransferFrame>> {
    if buf.len() < TRANSFER_HEADER_SIZE {
        return Ok(None);
    }
    let mut head = &buf[..TRANSFER_HEADER_SIZE];
    let offset = head.get_i64();
    let size = head.get_i32();
    if offset < 0 {
        return Err(protocol(format!("negative transfer offset {offset}")));
    }
    let Ok(size) = usize::try_from(size) else {
        return Err(protocol(format!("negative transfer size {size}")));
    };
    if size > max_body {
        return Err(protocol(format!(
            "transfer body of {size} bytes exceeds the limit of {max_body}"
        )));
    }
    if buf.len() < TRANSFER_HEADER_SIZE + size {
        buf.reserve(TRANSFER_HEADER_SIZE + size - buf.len());
        return Ok(None);
    }
    buf.advance(TRANSFER_HEADER_SIZE);
    let body = buf.split_to(size).freeze();
    Ok(Some(TransferFrame { offset, body }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_round_trip_and_bad_state() {
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&encode_handshake(3)[..10]);
        assert_eq!(decode_handshake(&mut buf).unwrap(), None);
        buf.extend_from_slice(&encode_handshake(3)[10..]);
        buf.extend_from_slice(&encode_report(77));
        assert_eq!(decode_handshake(&mut buf).unwrap(), Some(3));
        assert_eq!(decode_reports(&mut buf).unwrap(), Some(77));
        let mut bad = BytesMut::from(&encode_report(0).repeat(2)[..]);
        assert!(decode_handshake(&mut bad).is_err());
    }

    /// Golden bytes written by hand from the format above.
    #[test]
    fn golden_frames() {
        assert_eq!(encode_report(0), [0; 8]);
        assert_eq!(
            encode_report(0x0102_0304_0506_0708),
            [1, 2, 3, 4, 5, 6, 7, 8]
        );
        // offset 1 GiB, 3 body bytes.
        assert_eq!(
            encode_transfer_header(1 << 30, 3),
            [0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 3]
        );
        let mut buf = BytesMut::from(
            &[
                0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 3, b'a', b'b', b'c', 0, 0,
            ][..],
        );
        let f = decode_transfer(&mut buf, MAX_TRANSFER_BODY)
            .unwrap()
            .unwrap();
        assert_eq!(f.offset, 1 << 30);
        assert_eq!(&f.body[..], b"abc");
        assert_eq!(f.end(), (1 << 30) + 3);
        assert_eq!(&buf[..], &[0, 0]);
        // A heartbeat: offset, size 0.
        let mut hb = BytesMut::from(&[0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0][..]);
        let f = decode_transfer(&mut hb, MAX_TRANSFER_BODY)
            .unwrap()
            .unwrap();
        assert!(f.is_heartbeat());
        assert_eq!(f.offset, 9);
    }

    #[test]
    fn the_master_keeps_the_last_complete_report() {
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&encode_report(10));
        buf.extend_from_slice(&encode_report(20));
        buf.extend_from_slice(&[0, 0, 0]);
        assert_eq!(decode_reports(&mut buf).unwrap(), Some(20));
        assert_eq!(buf.len(), 3);
        assert_eq!(decode_reports(&mut buf).unwrap(), None);
        buf.extend_from_slice(&[0, 0, 0, 0, 30]);
        assert_eq!(decode_reports(&mut buf).unwrap(), Some(30));
        let mut bad = BytesMut::from(&(-1i64).to_be_bytes()[..]);
        assert!(decode_reports(&mut bad).is_err());
    }

    #[test]
    fn bad_headers_are_errors_not_panics() {
        for header in [
            encode_transfer_header(-5, 1).to_vec(),
            [0u8, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff].to_vec(),
            encode_transfer_header(0, MAX_TRANSFER_BODY + 1).to_vec(),
        ] {
            let mut buf = BytesMut::from(&header[..]);
            assert!(decode_transfer(&mut buf, MAX_TRANSFER_BODY).is_err());
        }
    }
}
