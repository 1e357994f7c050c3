//! The binary `ROCKETMQ` header codec alone (serialize type 1).
//! Contract: no panic, no allocation beyond the input; a header that decodes
//! re-encodes to a header that decodes to an equal command, and that encoding is a
//! fixed point.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use vostok_remoting::command::binary_header;

fuzz_target!(|data: &[u8]| {
    let Ok(cmd) = binary_header::decode(data) else {
        return;
    };
    let mut once = BytesMut::new();
    binary_header::encode(&cmd, &mut once);
    let back = binary_header::decode(&once).expect("an encoded header decodes");
    assert_eq!(back, cmd);
    let mut twice = BytesMut::new();
    binary_header::encode(&back, &mut twice);
    assert_eq!(once, twice);
});
