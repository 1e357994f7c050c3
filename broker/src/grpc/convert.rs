//! A stored message as the 5.x clients see it (docs/grpc.md#receivemessage; Apache's
//! `GrpcConverter.buildMessage`): system properties from the record and its RocketMQ
//! properties, user properties for the rest.

use std::io::Read;
use std::net::SocketAddr;

use vostok_remoting::protocol::message::{property, sysflag, MessageExt};

use super::context::RequestContext;
use super::proto::{Digest, DigestType, Encoding, Message, MessageType, SystemProperties};

/// Where a message was handed out from, for its receipt handle and invisible time.
#[derive(Debug, Clone, Default)]
pub(crate) struct Delivery {
    pub(crate) receipt_handle: Option<String>,
    pub(crate) invisible_ms: Option<i64>,
    /// Earlier deliveries beyond what `reconsumeTimes` counts (FIFO pops).
    pub(crate) extra_attempts: i32,
}

pub(crate) fn timestamp(ms: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

pub(crate) fn millis_of(ts: &prost_types::Timestamp) -> i64 {
    ts.seconds
        .saturating_mul(1000)
        .saturating_add(i64::from(ts.nanos) / 1_000_000)
}

pub(crate) fn duration_ms(ms: i64) -> prost_types::Duration {
    prost_types::Duration {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

pub(crate) fn millis_of_duration(d: &prost_types::Duration) -> i64 {
    d.seconds
        .saturating_mul(1000)
        .saturating_add(i64::from(d.nanos) / 1_000_000)
}

fn host(addr: SocketAddr) -> String {
    addr.to_string()
}

/// The type a message was sent as, from its properties.
pub(crate) fn message_type(msg: &MessageExt) -> MessageType {
    let has = |k| msg.property(k).is_some();
    if msg
        .property(property::TRANSACTION_PREPARED)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    {
        MessageType::Transaction
    } else if has(property::DELAY_TIME_LEVEL)
        || has(property::TIMER_DELIVER_MS)
        || has(property::TIMER_DELAY_SEC)
        || has(property::TIMER_DELAY_MS)
    {
        MessageType::Delay
    } else if has(property::SHARDING_KEY) {
        MessageType::Fifo
    } else {
        MessageType::Normal
    }
}

/// Properties the broker or the protocol owns: never shown as user properties.
fn is_system(key: &str) -> bool {
    property::RESERVED.contains(&key)
        || matches!(
            key,
            property::POP_CK
                | property::POP_CK_OFFSET
                | property::FIRST_POP_TIME
                | property::TRANSACTION_ID
                | property::TRANSACTION_CHECK_TIMES
                | property::TRANSACTION_PREPARED_QUEUE_OFFSET
                | property::CHECK_IMMUNITY_TIME_IN_SECONDS
                | property::CLUSTER
                | property::SHARDING_KEY
                | property::BORN_HOST
                | property::BORN_TIMESTAMP
                | property::TRACE_CONTEXT
        )
        || key.starts_with("TIMER_")
}

/// CRC32 of the body as 8 upper-case hex digits, as the 5.x clients compute it.
pub(crate) fn crc32_hex(body: &[u8]) -> String {
    format!("{:08X}", crc32fast::hash(body))
}

/// Largest body the front end inflates for a client. A producer checks the plain body
/// against `maxMessageSize` (4 MiB by default), so a genuine body stays far below it;
/// a record claiming more is handed out as stored rather than held in memory.
const MAX_INFLATED_BODY: u64 = 64 * 1024 * 1024;

/// Why a stored compressed body was not inflated.
#[derive(Debug, thiserror::Error)]
enum InflateError {
    #[error("{0}")]
    Codec(#[from] std::io::Error),
    #[error("inflates beyond {MAX_INFLATED_BODY} bytes")]
    TooLarge,
}

/// The plain bytes of a body stored with `compression`, bounded by [`MAX_INFLATED_BODY`].
fn inflate(body: &[u8], compression: sysflag::Compression) -> Result<Vec<u8>, InflateError> {
    let mut out = Vec::with_capacity(body.len().saturating_mul(4).min(1 << 20));
    let limit = MAX_INFLATED_BODY + 1;
    match compression {
        sysflag::Compression::Zlib => {
            flate2::read::ZlibDecoder::new(body)
                .take(limit)
                .read_to_end(&mut out)?;
        }
        sysflag::Compression::Lz4 => {
            lz4_flex::frame::FrameDecoder::new(body)
                .take(limit)
                .read_to_end(&mut out)?;
        }
        sysflag::Compression::Zstd => {
            zstd::stream::read::Decoder::new(body)?
                .take(limit)
                .read_to_end(&mut out)?;
        }
    }
    if out.len() as u64 > MAX_INFLATED_BODY {
        return Err(InflateError::TooLarge);
    }
    Ok(out)
}

/// The body a 5.x client is handed and its encoding. Apache's proxy decodes stored
/// messages with decompression on, so its clients get plain bytes whatever codec the
/// producer chose; so does this front end, for zlib, LZ4 and zstd alike. A body that
/// does not inflate is handed out as stored: a zlib one marked GZIP (the
/// client's own inflate then reports the message as corrupted), the others as they are.
fn client_body(msg: &MessageExt) -> (bytes::Bytes, Encoding) {
    let Some(compression) = sysflag::compression(msg.sys_flag) else {
        return (msg.body.clone(), Encoding::Identity);
    };
    match inflate(&msg.body, compression) {
        Ok(plain) => (bytes::Bytes::from(plain), Encoding::Identity),
        Err(error) => {
            tracing::warn!(
                topic = %msg.topic,
                queue_id = msg.queue_id,
                queue_offset = msg.queue_offset,
                ?compression,
                %error,
                "cannot decompress a message body for a gRPC client; handing it out as stored"
            );
            let encoding = if compression == sysflag::Compression::Zlib {
                Encoding::Gzip
            } else {
                Encoding::Identity
            };
            (msg.body.clone(), encoding)
        }
    }
}

/// The gRPC message for a stored one.
pub(crate) fn to_proto(ctx: &RequestContext, msg: &MessageExt, delivery: &Delivery) -> Message {
    let props = &msg.properties;
    let tag = msg.tags().map(str::to_owned);
    let keys = props
        .get(property::KEYS)
        .map(|k| {
            k.split(property::KEY_SEPARATOR)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let message_id = props
        .get(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        .map(str::to_owned)
        .unwrap_or_else(|| msg.offset_msg_id());
    let (body, body_encoding) = client_body(msg);
    let delivery_timestamp = props
        .get(property::TIMER_DELIVER_MS)
        .and_then(|v| v.parse::<i64>().ok())
        .map(timestamp);
    let user_properties = props
        .iter()
        .filter(|(k, _)| !is_system(k))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let born_host = props
        .get(property::BORN_HOST)
        .map(str::to_owned)
        .unwrap_or_else(|| host(msg.born_host));
    let system_properties = SystemProperties {
        tag,
        keys,
        message_id,
        body_digest: Some(Digest {
            r#type: DigestType::Crc32 as i32,
            checksum: crc32_hex(&body),
        }),
        body_encoding: body_encoding as i32,
        message_type: message_type(msg) as i32,
        born_timestamp: Some(timestamp(msg.born_timestamp)),
        born_host,
        store_timestamp: Some(timestamp(msg.store_timestamp)),
        store_host: host(msg.store_host),
        delivery_timestamp,
        receipt_handle: delivery.receipt_handle.clone(),
        queue_id: msg.queue_id,
        queue_offset: Some(msg.queue_offset),
        invisible_duration: delivery.invisible_ms.map(duration_ms),
        delivery_attempt: Some(
            msg.reconsume_times
                .saturating_add(1)
                .saturating_add(delivery.extra_attempts),
        ),
        message_group: props.get(property::SHARDING_KEY).map(str::to_owned),
        trace_context: props.get(property::TRACE_CONTEXT).map(str::to_owned),
        ..Default::default()
    };
    Message {
        topic: Some(ctx.resource(&msg.topic)),
        user_properties,
        system_properties: Some(system_properties),
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_is_upper_case_hex_of_eight_digits() {
        // zlib.crc32(b"hello") == 0x3610a686
        assert_eq!(crc32_hex(b"hello"), "3610A686");
        assert_eq!(crc32_hex(b""), "00000000");
    }

    #[test]
    fn times_round_trip() {
        assert_eq!(millis_of(&timestamp(1_700_000_000_123)), 1_700_000_000_123);
        assert_eq!(millis_of_duration(&duration_ms(30_500)), 30_500);
    }

    fn stored(body: &[u8], sys_flag: i32) -> MessageExt {
        MessageExt {
            sys_flag,
            ..MessageExt::new(
                "T",
                0,
                bytes::Bytes::copy_from_slice(body),
                Default::default(),
                "127.0.0.1:10911".parse().unwrap(),
            )
        }
    }

    #[test]
    fn compressed_bodies_are_handed_out_plain() {
        let plain: Vec<u8> = (0..20_000u32).map(|i| (i % 13) as u8).collect();
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(5));
        std::io::Write::write_all(&mut zlib, &plain).unwrap();
        let zlib = zlib.finish().unwrap();
        let mut lz4 = lz4_flex::frame::FrameEncoder::new(Vec::new());
        std::io::Write::write_all(&mut lz4, &plain).unwrap();
        let lz4 = lz4.finish().unwrap();
        let zstd = zstd::bulk::compress(&plain, 3).unwrap();
        for (packed, flag) in [
            (&zlib, sysflag::compression_bits(sysflag::Compression::Zlib)),
            // 4.x producers set only the compressed bit: zlib.
            (&zlib, sysflag::COMPRESSED_FLAG),
            (&lz4, sysflag::compression_bits(sysflag::Compression::Lz4)),
            (&zstd, sysflag::compression_bits(sysflag::Compression::Zstd)),
        ] {
            let (body, encoding) = client_body(&stored(packed, flag));
            assert_eq!(body.as_ref(), plain.as_slice(), "sysFlag {flag:#x}");
            assert_eq!(encoding, Encoding::Identity);
        }
        let (body, encoding) = client_body(&stored(b"plain", 0));
        assert_eq!(
            (body.as_ref(), encoding),
            (&b"plain"[..], Encoding::Identity)
        );
    }

    #[test]
    fn a_body_that_does_not_inflate_is_handed_out_as_stored() {
        let junk = b"not compressed at all";
        for (c, encoding) in [
            (sysflag::Compression::Zlib, Encoding::Gzip),
            (sysflag::Compression::Lz4, Encoding::Identity),
            (sysflag::Compression::Zstd, Encoding::Identity),
        ] {
            let (body, got) = client_body(&stored(junk, sysflag::compression_bits(c)));
            assert_eq!((body.as_ref(), got), (&junk[..], encoding), "{c:?}");
        }
    }

    #[test]
    fn system_properties_stay_out_of_user_properties() {
        assert!(is_system("TAGS"));
        assert!(is_system("POP_CK"));
        assert!(is_system("TIMER_OUT_MS"));
        assert!(!is_system("color"));
    }
}
