//! The cost of ACL signatures per request: signing (the client) and verifying (the
//! broker) a SEND_MESSAGE_V2 with its thirteen header fields and a 1 KiB body, with
//! the HMAC keyed per request (`SessionCredentials::sign`, `signature::verify`) and
//! keyed once per secret (the SDK's hook, the broker's accounts).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use vostok_remoting::auth::signature::SigningKey;
use vostok_remoting::auth::{signature, stamp, AclClientHook, SessionCredentials, SIGNATURE};
use vostok_remoting::protocol::header::SendMessageRequestHeaderV2;
use vostok_remoting::RemotingCommand;
use vostok_remoting::RpcHook;

fn request() -> RemotingCommand {
    let header = SendMessageRequestHeaderV2 {
        a: "benchmark_producer".into(),
        b: "BenchTopic".into(),
        c: "TBW102".into(),
        d: 8,
        e: 3,
        f: 0,
        g: 1_700_000_000_000,
        h: 0,
        i: Some("UNIQ_KEY\u{1}7F0000010001ABCDEF0123456789AB\u{2}WAIT\u{1}true\u{2}".into()),
        ..Default::default()
    };
    RemotingCommand::request_with_header(310, &header).with_body(vec![7u8; 1024])
}

fn bench(c: &mut Criterion) {
    let creds = SessionCredentials::new("bench-user", "bench-secret");
    let mut group = c.benchmark_group("signature");
    group.throughput(Throughput::Elements(1));
    group.bench_function("sign SEND_MESSAGE_V2 1 KiB", |b| {
        b.iter_batched(request, |mut r| creds.sign(&mut r), BatchSize::SmallInput)
    });
    let hook = AclClientHook::new(creds.clone());
    group.bench_function("sign SEND_MESSAGE_V2 1 KiB, key kept", |b| {
        b.iter_batched(
            request,
            |mut r| hook.before_request("127.0.0.1:10911", &mut r),
            BatchSize::SmallInput,
        )
    });
    let mut signed = request();
    creds.sign(&mut signed);
    let sig = signed.ext_fields.get(SIGNATURE).unwrap().to_owned();
    group.bench_function("verify SEND_MESSAGE_V2 1 KiB", |b| {
        b.iter(|| signature::verify("bench-secret", &signed.ext_fields, &signed.body, 479, &sig))
    });
    let key = SigningKey::new("bench-secret");
    group.bench_function("verify SEND_MESSAGE_V2 1 KiB, key kept", |b| {
        b.iter(|| key.verify(&signed.ext_fields, &signed.body, 479, &sig))
    });
    // What the broker checks of a request from Vostok's SDK: RocketMQ's signature and
    // the VostokSignature stamp, in two passes and in one.
    let mut stamped = request();
    stamp::stamp(&key, &mut stamped, 1_700_000_000_000);
    creds.sign(&mut stamped);
    let stamped_sig = stamped.ext_fields.get(SIGNATURE).unwrap().to_owned();
    group.bench_function("verify both signatures, two passes", |b| {
        b.iter(|| {
            key.verify(&stamped.ext_fields, &stamped.body, 479, &stamped_sig)
                && stamp::verify(&key, &stamped, 1_700_000_000_000, 60_000).is_ok()
        })
    });
    group.bench_function("verify both signatures, one pass", |b| {
        b.iter(|| stamp::verify_signed(&key, &stamped, 1_700_000_000_000, 60_000).is_ok())
    });
    let content = signature::content(&signed.ext_fields, &signed.body, false);
    group.bench_function("HmacSHA1 + Base64 of the content alone", |b| {
        b.iter(|| signature::sign_content("bench-secret", &content))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
