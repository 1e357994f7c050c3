//! The HA frames survive any split: a stream of transfer frames (and of offset
//! reports) cut into arbitrary reads decodes to the same frames.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use vostok_store::ha::wire::{
    decode_reports, decode_transfer, encode_report, encode_transfer_header, TransferFrame,
    MAX_TRANSFER_BODY,
};

fn frames() -> impl Strategy<Value = Vec<(i64, Vec<u8>)>> {
    prop::collection::vec(
        (0..i64::MAX / 2, prop::collection::vec(any::<u8>(), 0..300)),
        1..12,
    )
}

proptest! {
    #[test]
    fn transfer_frames_split_anywhere(frames in frames(), cuts in prop::collection::vec(1usize..97, 1..40)) {
        let mut stream = Vec::new();
        for (offset, body) in &frames {
            stream.extend_from_slice(&encode_transfer_header(*offset, body.len()));
            stream.extend_from_slice(body);
        }
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        let mut pos = 0;
        let mut k = 0;
        while pos < stream.len() {
            let n = cuts[k % cuts.len()].min(stream.len() - pos);
            k += 1;
            buf.extend_from_slice(&stream[pos..pos + n]);
            pos += n;
            while let Some(f) = decode_transfer(&mut buf, MAX_TRANSFER_BODY).unwrap() {
                out.push(f);
            }
        }
        prop_assert!(buf.is_empty());
        let expected: Vec<TransferFrame> = frames
            .into_iter()
            .map(|(offset, body)| TransferFrame { offset, body: Bytes::from(body) })
            .collect();
        prop_assert_eq!(out, expected);
    }

    #[test]
    fn reports_split_anywhere(offsets in prop::collection::vec(0..i64::MAX, 1..20), cut in 1usize..20) {
        let stream: Vec<u8> = offsets.iter().flat_map(|o| encode_report(*o)).collect();
        let mut buf = BytesMut::new();
        let mut last = None;
        for chunk in stream.chunks(cut) {
            buf.extend_from_slice(chunk);
            if let Some(o) = decode_reports(&mut buf).unwrap() {
                last = Some(o);
            }
        }
        prop_assert_eq!(last, offsets.last().copied());
        prop_assert!(buf.is_empty());
    }
}

/// Every single-byte split of a two-frame stream.
#[test]
fn every_split_point_of_two_frames() {
    let mut stream = encode_transfer_header(4096, 5).to_vec();
    stream.extend_from_slice(b"hello");
    stream.extend_from_slice(&encode_transfer_header(4101, 0));
    for cut in 0..=stream.len() {
        let mut buf = BytesMut::from(&stream[..cut]);
        let mut out = Vec::new();
        while let Some(f) = decode_transfer(&mut buf, MAX_TRANSFER_BODY).unwrap() {
            out.push(f);
        }
        buf.extend_from_slice(&stream[cut..]);
        while let Some(f) = decode_transfer(&mut buf, MAX_TRANSFER_BODY).unwrap() {
            out.push(f);
        }
        assert_eq!(out.len(), 2, "cut at {cut}");
        assert_eq!(&out[0].body[..], b"hello");
        assert!(out[1].is_heartbeat());
        assert_eq!(out[1].offset, 4101);
    }
}
