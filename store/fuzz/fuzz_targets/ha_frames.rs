//! Feeds arbitrary bytes to the HA decoders, in two reads split where the first byte
//! says. Contract: no panic, no allocation beyond the slave's read buffer; every
//! decoded transfer frame re-encodes to the bytes it came from.
//!
//! Run from `store/`: `cargo +nightly fuzz run ha_frames fuzz/corpus/ha_frames
//! fuzz/seeds/ha_frames` (`fuzz/seeds/ha_frames` holds hand-written frames: a report,
//! a transfer, a heartbeat, a bad size; new inputs go to the first, untracked
//! directory).
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use vostok_store::ha::wire::{
    decode_reports, decode_transfer, encode_transfer_header, MAX_TRANSFER_BODY, SLAVE_READ_BUFFER,
};

fuzz_target!(|data: &[u8]| {
    let Some((&cut, data)) = data.split_first() else {
        return;
    };
    let cut = (cut as usize).min(data.len());
    let mut buf = BytesMut::new();
    let mut consumed = Vec::new();
    for part in [&data[..cut], &data[cut..]] {
        buf.extend_from_slice(part);
        while let Ok(Some(frame)) = decode_transfer(&mut buf, MAX_TRANSFER_BODY) {
            consumed.extend_from_slice(&encode_transfer_header(frame.offset, frame.body.len()));
            consumed.extend_from_slice(&frame.body);
        }
        assert!(buf.capacity() <= SLAVE_READ_BUFFER + data.len() + 64);
    }
    assert_eq!(&data[..consumed.len()], &consumed[..]);
    let mut reports = BytesMut::from(data);
    if decode_reports(&mut reports).is_ok() {
        assert!(reports.len() < 8);
    }
});
