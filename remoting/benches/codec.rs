//! Encode and decode of a typical SEND_MESSAGE_V2 request (1 KiB body).

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tokio_util::codec::{Decoder, Encoder};
use vostok_remoting::protocol::header::{SendMessageRequestHeader, SendMessageRequestHeaderV2};
use vostok_remoting::protocol::request_code;
use vostok_remoting::{RemotingCodec, RemotingCommand, SerializeType};

fn send_request(serialize_type: SerializeType) -> RemotingCommand {
    let header = SendMessageRequestHeader {
        producer_group: "please_rename_unique_group_name".into(),
        topic: "BenchmarkTest".into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 3,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        flag: 0,
        properties: Some("UNIQ_KEY\u{1}7F0000010F7A18B4AAC25B7C5F8F0000\u{2}WAIT\u{1}true\u{2}TAGS\u{1}TagA\u{2}".into()),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        batch: Some(false),
        max_reconsume_times: None,
        broker_name: Some("broker-a".into()),
    };
    let mut cmd = RemotingCommand::request_with_header(
        request_code::SEND_MESSAGE_V2,
        &SendMessageRequestHeaderV2::from(header),
    )
    .with_body(Bytes::from(vec![b'x'; 1024]));
    cmd.serialize_type = serialize_type;
    cmd
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("send_request");
    group.throughput(Throughput::Elements(1));
    for (name, kind) in [
        ("json", SerializeType::Json),
        ("binary", SerializeType::RocketMq),
    ] {
        let cmd = send_request(kind);
        let mut codec = RemotingCodec::default();
        group.bench_function(format!("encode_{name}"), |b| {
            let mut buf = BytesMut::with_capacity(4096);
            b.iter(|| {
                buf.clear();
                codec.encode(&cmd, &mut buf).unwrap();
            })
        });
        let mut frame = BytesMut::new();
        codec.encode(&cmd, &mut frame).unwrap();
        let frame = frame.freeze();
        group.bench_function(format!("decode_{name}"), |b| {
            b.iter(|| {
                let mut buf = BytesMut::from(&frame[..]);
                codec.decode(&mut buf).unwrap().unwrap()
            })
        });
        group.bench_function(format!("decode_header_{name}"), |b| {
            let mut buf = BytesMut::from(&frame[..]);
            let decoded = codec.decode(&mut buf).unwrap().unwrap();
            b.iter(|| {
                SendMessageRequestHeader::decode(request_code::SEND_MESSAGE_V2, &decoded.ext_fields)
                    .unwrap()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
