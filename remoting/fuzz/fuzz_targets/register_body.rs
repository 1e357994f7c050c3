//! The REGISTER_BROKER body in both forms. The first byte picks the form: even = the
//! JSON body as sent; odd = the rest is the inflated stream of the compressed form,
//! which the target deflates first (so the fuzzer explores the block layout rather
//! than zlib), and every fourth odd input is also given to the inflater raw.
//! Contract: no panic; the inflated size stays bounded; a JSON body that decodes
//! re-encodes to one that decodes equal; a compressed body that decodes re-encodes
//! compressed to one that decodes equal.
#![no_main]

use std::io::Write;

use flate2::write::ZlibEncoder;
use flate2::Compression;
use libfuzzer_sys::fuzz_target;
use vostok_remoting::protocol::body::RegisterBrokerBody;

fuzz_target!(|data: &[u8]| {
    let Some((&form, data)) = data.split_first() else {
        return;
    };
    if form % 2 == 0 {
        if let Ok(body) = RegisterBrokerBody::decode(data, false) {
            let back =
                RegisterBrokerBody::decode(&body.encode(), false).expect("an encoded body decodes");
            assert_eq!(back, body);
        }
        return;
    }
    if form % 8 == 1 {
        let _ = RegisterBrokerBody::decode(data, true);
    }
    let mut z = ZlibEncoder::new(Vec::new(), Compression::fast());
    z.write_all(data).expect("zlib into memory");
    let compressed = z.finish().expect("zlib into memory");
    if let Ok(body) = RegisterBrokerBody::decode(&compressed, true) {
        let back = RegisterBrokerBody::decode(&body.encode_compressed(), true)
            .expect("a compressed body decodes");
        assert_eq!(back, body);
    }
});
