//! The SEND_BATCH_MESSAGE body decoder.
//! Contract: no panic, no allocation beyond the input; a body that decodes re-encodes
//! block by block to the same bytes (apart from the ignored magic and CRC words).
#![no_main]

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use vostok_remoting::protocol::message::batch;

fuzz_target!(|data: &[u8]| {
    let body = Bytes::copy_from_slice(data);
    let Ok(entries) = batch::decode(&body) else {
        return;
    };
    let mut again = BytesMut::new();
    for e in &entries {
        batch::encode_block(&mut again, e.flag, &e.body, &e.properties);
    }
    let back = batch::decode(&again.freeze()).expect("an encoded batch decodes");
    assert_eq!(back, entries);
    let total: usize = entries
        .iter()
        .map(|e| batch::block_len(e.body.len(), e.properties.len()))
        .sum();
    assert!(total <= data.len());
});
