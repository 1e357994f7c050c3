//! Frame codec: golden bytes written by hand from docs/wire.md (frame layout, JSON and
//! binary headers), round trips, splitting, and rejection of bad frames.

use bytes::{BufMut, Bytes, BytesMut};
use proptest::prelude::*;
use tokio_util::codec::{Decoder, Encoder};
use vostok_remoting::codec::{FrameLimits, RemotingCodec};
use vostok_remoting::command::{ExtFields, LanguageCode, RemotingCommand, SerializeType};
use vostok_remoting::RemotingError;

/// docs/wire.md#json-header's example request, as a Java 5.3.3 client sends it.
const JSON_HEADER: &str = r#"{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":42,"serializeTypeCurrentRPC":"JSON","version":479}"#;

fn sample_request(serialize_type: SerializeType) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(105);
    cmd.language = LanguageCode::Java;
    cmd.version = 479;
    cmd.opaque = 42;
    cmd.ext_fields.insert("topic", "TopicTest");
    cmd.serialize_type = serialize_type;
    cmd
}

fn json_frame(body: &[u8]) -> Vec<u8> {
    let header = JSON_HEADER.as_bytes();
    let mut frame = Vec::new();
    frame.extend_from_slice(&((4 + header.len() + body.len()) as u32).to_be_bytes());
    frame.push(0); // serialize type JSON
    frame.extend_from_slice(&(header.len() as u32).to_be_bytes()[1..]);
    frame.extend_from_slice(header);
    frame.extend_from_slice(body);
    frame
}

/// The same request with the binary header, byte by byte.
fn binary_frame() -> Vec<u8> {
    vec![
        0x00, 0x00, 0x00, 0x2D, // length = 4 + 41
        0x01, 0x00, 0x00, 0x29, // ROCKETMQ, header length 41
        0x00, 0x69, // code 105
        0x00, // language JAVA
        0x01, 0xDF, // version 479
        0x00, 0x00, 0x00, 0x2A, // opaque 42
        0x00, 0x00, 0x00, 0x00, // flag
        0x00, 0x00, 0x00, 0x00, // remark length 0
        0x00, 0x00, 0x00, 0x14, // extFields length 20
        0x00, 0x05, b't', b'o', b'p', b'i', b'c', //
        0x00, 0x00, 0x00, 0x09, b'T', b'o', b'p', b'i', b'c', b'T', b'e', b's', b't',
    ]
}

fn decode_all(
    codec: &mut RemotingCodec,
    buf: &mut BytesMut,
) -> Result<Vec<RemotingCommand>, RemotingError> {
    let mut out = Vec::new();
    while let Some(cmd) = codec.decode(buf)? {
        out.push(cmd);
    }
    Ok(out)
}

#[test]
fn json_frame_golden_bytes() {
    let mut codec = RemotingCodec::default();
    let mut cmd = sample_request(SerializeType::Json);
    cmd.body = Bytes::from_static(b"body");
    let mut out = BytesMut::new();
    codec.encode(&cmd, &mut out).unwrap();
    assert_eq!(&out[..], &json_frame(b"body")[..]);

    let decoded = codec.decode(&mut out).unwrap().unwrap();
    assert_eq!(decoded, cmd);
    assert!(out.is_empty());
}

#[test]
fn binary_frame_golden_bytes() {
    let mut codec = RemotingCodec::default();
    let cmd = sample_request(SerializeType::RocketMq);
    let mut out = BytesMut::new();
    codec.encode(&cmd, &mut out).unwrap();
    assert_eq!(&out[..], &binary_frame()[..]);
    let mut input = BytesMut::from(&binary_frame()[..]);
    let decoded = codec.decode(&mut input).unwrap().unwrap();
    assert_eq!(decoded, cmd);
}

/// A connection queues a frame as its head and its body (`encode_frame`): together the
/// same bytes as the whole frame written into one buffer, in either header format.
#[test]
fn queued_frames_hold_the_golden_bytes() {
    let codec = RemotingCodec::default();
    let mut json = sample_request(SerializeType::Json);
    json.body = Bytes::from_static(b"body");
    let frame = codec.encode_frame(&json).unwrap();
    assert_eq!(
        [&frame.head[..], &frame.body[..]].concat(),
        json_frame(b"body")
    );
    let binary = sample_request(SerializeType::RocketMq);
    let frame = codec.encode_frame(&binary).unwrap();
    assert_eq!([&frame.head[..], &frame.body[..]].concat(), binary_frame());
    assert_eq!(frame.len(), binary_frame().len());
}

/// The binary header has 16 bits for the code (Java truncates a larger one): a command
/// whose code does not fit, such as POP_MESSAGE (200050), goes out with a JSON header.
#[test]
fn codes_past_a_short_go_in_json() {
    let mut codec = RemotingCodec::default();
    let mut cmd = sample_request(SerializeType::RocketMq);
    cmd.code = 200_050;
    let frame = codec.encode_frame(&cmd).unwrap();
    assert_eq!(frame.head[4], 0, "the header word names JSON");
    let mut buf = BytesMut::new();
    codec.encode(&cmd, &mut buf).unwrap();
    assert_eq!(&buf[..], &frame.head[..]);
    let decoded = codec.decode(&mut buf).unwrap().unwrap();
    assert_eq!(decoded.code, 200_050);
    assert_eq!(decoded.serialize_type, SerializeType::Json);
    assert_eq!(decoded.ext_fields.get("topic"), Some("TopicTest"));
}

#[test]
fn frames_split_at_every_byte_boundary() {
    let mut stream = json_frame(b"xyz");
    stream.extend_from_slice(&binary_frame());
    for cut in 0..=stream.len() {
        let mut codec = RemotingCodec::default();
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&stream[..cut]);
        let mut got = decode_all(&mut codec, &mut buf).unwrap();
        buf.extend_from_slice(&stream[cut..]);
        got.extend(decode_all(&mut codec, &mut buf).unwrap());
        assert_eq!(got.len(), 2, "cut at {cut}");
        assert_eq!(&got[0].body[..], b"xyz");
        assert_eq!(got[1].serialize_type, SerializeType::RocketMq);
        assert!(buf.is_empty());
    }
}

#[test]
fn many_frames_in_one_read() {
    let mut stream = Vec::new();
    for _ in 0..500 {
        stream.extend_from_slice(&json_frame(b""));
        stream.extend_from_slice(&binary_frame());
    }
    let mut buf = BytesMut::from(&stream[..]);
    let got = decode_all(&mut RemotingCodec::default(), &mut buf).unwrap();
    assert_eq!(got.len(), 1000);
}

#[test]
fn incomplete_frame_is_not_consumed() {
    let frame = json_frame(b"abc");
    let mut buf = BytesMut::from(&frame[..frame.len() - 1]);
    assert!(RemotingCodec::default().decode(&mut buf).unwrap().is_none());
    assert_eq!(buf.len(), frame.len() - 1);
}

#[test]
fn oversize_frames_are_rejected_before_buffering() {
    let limits = FrameLimits {
        max_frame: 1024,
        max_header: 256,
    };
    let mut codec = RemotingCodec::new(limits);
    // Only the 4-byte prefix has arrived: rejected at once, nothing waits for 1 GiB.
    let mut buf = BytesMut::from(&(1u32 << 30).to_be_bytes()[..]);
    assert!(matches!(
        codec.decode(&mut buf),
        Err(RemotingError::FrameTooLarge { .. })
    ));
    let mut buf = BytesMut::new();
    buf.put_u32(600);
    buf.put_u32(300); // JSON header of 300 bytes > 256
    assert!(matches!(
        codec.decode(&mut buf),
        Err(RemotingError::HeaderTooLarge { .. })
    ));
    // The encoder refuses to produce what the peer would reject.
    let big = RemotingCommand::request(10).with_body(vec![0u8; 2048]);
    let mut out = BytesMut::new();
    assert!(codec.encode(&big, &mut out).is_err());
    assert!(out.is_empty());
}

#[test]
fn malformed_frames_are_errors_not_panics() {
    let cases: Vec<Vec<u8>> = vec![
        vec![0, 0, 0, 0],                         // length below 4
        vec![0xff, 0xff, 0xff, 0xff],             // negative length
        vec![0, 0, 0, 4, 2, 0, 0, 0],             // unknown serialize type
        vec![0, 0, 0, 6, 0, 0, 0, 9, b'{', b'}'], // header longer than frame
        vec![0, 0, 0, 6, 0, 0, 0, 2, b'{', b'x'], // bad JSON
        vec![0, 0, 0, 7, 1, 0, 0, 3, 0, 0, 0],    // binary header shorter than its fixed part
        vec![0, 0, 0, 4, 0, 0, 0, 0],             // empty JSON header
    ];
    for case in cases {
        let mut buf = BytesMut::from(&case[..]);
        assert!(
            RemotingCodec::default().decode(&mut buf).is_err(),
            "{case:?} should be rejected"
        );
    }
}

fn arb_string() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9_%|-]{0,12}",
        any::<String>(),
        // The property separators must survive JSON escaping.
        "[a-z\u{1}\u{2}\"\\\\\n]{0,16}",
    ]
}

prop_compose! {
    fn arb_command()(
        code in any::<i16>(),
        language in 0i64..14,
        version in any::<i16>(),
        opaque in any::<i32>(),
        flag in 0i32..4,
        remark in proptest::option::of(arb_string().prop_filter("binary reads an empty remark as none", |s| !s.is_empty())),
        ext in proptest::collection::vec((arb_string(), arb_string()), 0..8),
        body in proptest::collection::vec(any::<u8>(), 0..64),
        binary in any::<bool>(),
    ) -> RemotingCommand {
        let mut fields = ExtFields::new();
        for (k, v) in ext {
            fields.insert(k, v);
        }
        RemotingCommand {
            code: code as i32,
            language: LanguageCode::from_code(language),
            version: version as i32,
            opaque,
            flag,
            remark: remark.map(String::into_boxed_str),
            ext_fields: fields,
            body: Bytes::from(body),
            serialize_type: if binary { SerializeType::RocketMq } else { SerializeType::Json },
        }
    }
}

proptest! {
    #[test]
    fn round_trip_in_both_serialisations(cmd in arb_command()) {
        let mut codec = RemotingCodec::default();
        let mut buf = BytesMut::new();
        codec.encode(&cmd, &mut buf).unwrap();
        let decoded = codec.decode(&mut buf).unwrap().unwrap();
        prop_assert_eq!(decoded, cmd);
        prop_assert!(buf.is_empty());
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..256)) {
        let mut buf = BytesMut::from(&data[..]);
        let mut codec = RemotingCodec::default();
        while let Ok(Some(_)) = codec.decode(&mut buf) {}
    }
}
