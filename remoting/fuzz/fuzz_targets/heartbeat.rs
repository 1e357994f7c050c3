//! The HEART_BEAT body (JSON, read as leniently as fastjson writes it).
//! Contract: no panic; a body that decodes re-encodes to one that decodes equal.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vostok_remoting::protocol::body::HeartbeatData;

fuzz_target!(|data: &[u8]| {
    if let Ok(heartbeat) = HeartbeatData::decode(data) {
        let back = HeartbeatData::decode(&heartbeat.encode()).expect("an encoded body decodes");
        assert_eq!(back, heartbeat);
    }
});
