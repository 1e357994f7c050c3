//! Feeds arbitrary bytes to every decoder that reads network or disk data.
//! Contract: no panic, no unbounded allocation; what decodes re-encodes to an equal
//! command.
#![no_main]

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use tokio_util::codec::{Decoder, Encoder};
use vostok_remoting::codec::{FrameLimits, RemotingCodec};
use vostok_remoting::protocol::body::{HeartbeatData, RegisterBrokerBody};
use vostok_remoting::protocol::header::SendMessageRequestHeader;
use vostok_remoting::protocol::message::{batch, MessageExt, RecordView};
use vostok_remoting::protocol::route::TopicRouteData;

fuzz_target!(|data: &[u8]| {
    let mut codec = RemotingCodec::new(FrameLimits {
        max_frame: 64 * 1024,
        max_header: 16 * 1024,
    });
    let mut buf = BytesMut::from(data);
    while let Ok(Some(cmd)) = codec.decode(&mut buf) {
        let _ = SendMessageRequestHeader::decode(cmd.code, &cmd.ext_fields);
        let mut again = BytesMut::new();
        if codec.encode(&cmd, &mut again).is_ok() {
            let back = codec.decode(&mut again).expect("re-encoded frame decodes").expect("whole frame");
            assert_eq!(back, cmd);
        }
    }
    let bytes = Bytes::copy_from_slice(data);
    let _ = MessageExt::decode_all(&bytes);
    let _ = RecordView::parse(data, true);
    let _ = batch::decode(&bytes);
    let _ = HeartbeatData::decode(data);
    let _ = TopicRouteData::decode(data);
    let _ = RegisterBrokerBody::decode(data, true);
    let _ = RegisterBrokerBody::decode(data, false);
});
