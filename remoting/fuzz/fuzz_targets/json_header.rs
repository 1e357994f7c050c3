//! The JSON header codec alone (serialize type 0).
//! Contract: no panic; a header that decodes re-encodes to a header that decodes to
//! an equal command, and that encoding is a fixed point.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use vostok_remoting::command::json_header;

fuzz_target!(|data: &[u8]| {
    let Ok(cmd) = json_header::decode(data) else {
        return;
    };
    let mut once = BytesMut::new();
    json_header::encode(&cmd, &mut once);
    let back = json_header::decode(&once).expect("an encoded header decodes");
    assert_eq!(back, cmd);
    let mut twice = BytesMut::new();
    json_header::encode(&back, &mut twice);
    assert_eq!(once, twice);
});
