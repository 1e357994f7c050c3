//! The frame decoder alone, fed in pieces. The first two bytes choose the codec's
//! bounds (a frame limit of 64 B to 64 KiB, a header limit below it), the third
//! where the input is split into reads.
//! Contract: no panic; `Ok(None)` consumes nothing; `Ok(Some)` consumes exactly one
//! frame (its length word plus `length` bytes, within the limit); the commands
//! decoded from the pieces equal those decoded from the whole input; an error ends
//! the stream.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use tokio_util::codec::{Decoder, Encoder};
use vostok_remoting::codec::{FrameLimits, RemotingCodec};
use vostok_remoting::RemotingCommand;

fn decode_all(codec: &mut RemotingCodec, pieces: &[&[u8]]) -> (Vec<RemotingCommand>, bool) {
    let limits = codec.limits();
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for piece in pieces {
        buf.extend_from_slice(piece);
        loop {
            let before = buf.len();
            match codec.decode(&mut buf) {
                Ok(None) => {
                    assert_eq!(buf.len(), before, "Ok(None) consumed input");
                    break;
                }
                Ok(Some(cmd)) => {
                    let used = before - buf.len();
                    assert!(
                        used >= 8 && used - 4 <= limits.max_frame,
                        "frame of {used} bytes"
                    );
                    out.push(cmd);
                }
                Err(_) => return (out, true),
            }
        }
    }
    (out, false)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let max_frame = 64 + (u16::from_be_bytes([data[0], data[1]]) as usize);
    let limits = FrameLimits {
        max_frame,
        max_header: max_frame / 2,
    };
    let cut = data[2] as usize;
    let data = &data[3..];
    let mut codec = RemotingCodec::new(limits);
    let (whole, whole_failed) = decode_all(&mut codec, &[data]);
    // Split into reads of `cut + 1` bytes.
    let pieces: Vec<&[u8]> = data.chunks(cut + 1).collect();
    let (split, split_failed) = decode_all(&mut codec, &pieces);
    assert_eq!(whole, split);
    assert_eq!(whole_failed, split_failed);
    for cmd in &whole {
        let mut again = BytesMut::new();
        if codec.encode(cmd, &mut again).is_ok() {
            let back = codec.decode(&mut again).expect("re-encoded frame decodes");
            assert_eq!(back.as_ref(), Some(cmd));
            assert!(again.is_empty());
        }
    }
});
