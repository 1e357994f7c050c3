//! Messages a producer sends ([`Message`]) and their body compression.
//!
//! Received messages are [`MessageExt`] records as the broker stored them, with the body
//! decompressed by the consumer (docs/message.md#compression).

use std::io::{Read, Write};

use bytes::Bytes;
use vostok_remoting::protocol::filter::routing::{validate_routing_key, ROUTING_KEY};
use vostok_remoting::protocol::message::property::{self, Properties};
use vostok_remoting::protocol::message::sysflag::{self, Compression};
pub use vostok_remoting::protocol::message::MessageExt;

use crate::error::{ClientError, Result};

/// A message to send: topic, body, user flag and properties (tags, keys, delay, user
/// properties). Mirrors Java's `org.apache.rocketmq.common.message.Message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub topic: String,
    pub body: Bytes,
    /// User flag, stored as is.
    pub flag: i32,
    pub properties: Properties,
    /// Set by the transactional producer.
    pub transaction_id: Option<String>,
}

impl Message {
    /// A message with `WAIT=true`, as Java's constructor writes it.
    pub fn new(topic: impl Into<String>, body: impl Into<Bytes>) -> Self {
        // WAIT (11 bytes) and the unique key the producer adds (42) leave room for tags
        // and keys.
        let mut properties = Properties::with_capacity(128);
        properties.insert(property::WAIT_STORE_MSG_OK, "true");
        Message {
            topic: topic.into(),
            body: body.into(),
            flag: 0,
            properties,
            transaction_id: None,
        }
    }

    pub fn with_tags(mut self, tags: impl AsRef<str>) -> Self {
        self.set_tags(tags);
        self
    }

    /// Business keys, indexed by the broker for QUERY_MESSAGE.
    pub fn with_keys<I, S>(mut self, keys: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let joined: Vec<String> = keys.into_iter().map(|k| k.as_ref().to_owned()).collect();
        self.set_keys(&joined.join(property::KEY_SEPARATOR));
        self
    }

    pub fn with_flag(mut self, flag: i32) -> Self {
        self.flag = flag;
        self
    }

    /// A user property. Reserved names (`TAGS`, `DELAY`, ...) are refused at send time,
    /// as the Java client refuses them.
    pub fn with_property(mut self, name: impl AsRef<str>, value: impl AsRef<str>) -> Self {
        self.properties.insert(name, value);
        self
    }

    /// Delay level (1-based index into the broker's `messageDelayLevel`: 1s 5s 10s ...).
    pub fn with_delay_level(mut self, level: i32) -> Self {
        self.set_delay_level(level);
        self
    }

    /// Deliver at a wall-clock time (ms since the epoch): RocketMQ 5's timer messages
    /// (`TIMER_DELIVER_MS`); brokers without the timer wheel deliver at once.
    pub fn with_deliver_time_ms(mut self, deliver_at_ms: i64) -> Self {
        self.properties
            .insert(property::TIMER_DELIVER_MS, deliver_at_ms.to_string());
        self
    }

    /// Whether the broker should answer only after flush/replication (`WAIT`).
    pub fn with_wait_store_msg_ok(mut self, wait: bool) -> Self {
        self.properties
            .insert(property::WAIT_STORE_MSG_OK, wait.to_string());
        self
    }

    /// The routing key consumers bind to with
    /// [`MessageSelector::by_routing_key`](crate::consumer::MessageSelector::by_routing_key)
    /// (the `ROUTING_KEY` property, docs/amqp.md): dot-separated parts of letters,
    /// digits and `_`. An invalid key is refused here, since no binding key would
    /// match it.
    pub fn with_routing_key(mut self, key: impl AsRef<str>) -> Result<Self> {
        self.set_routing_key(key)?;
        Ok(self)
    }

    /// See [`Message::with_routing_key`].
    pub fn set_routing_key(&mut self, key: impl AsRef<str>) -> Result<()> {
        let key = key.as_ref();
        validate_routing_key(key).map_err(|e| ClientError::InvalidArgument(e.to_string()))?;
        self.properties.insert(ROUTING_KEY, key);
        Ok(())
    }

    /// The routing key set with [`Message::with_routing_key`].
    pub fn routing_key(&self) -> Option<&str> {
        self.properties.get(ROUTING_KEY)
    }

    pub fn set_tags(&mut self, tags: impl AsRef<str>) {
        self.properties.insert(property::TAGS, tags);
    }

    pub fn set_keys(&mut self, keys: &str) {
        self.properties.insert(property::KEYS, keys);
    }

    pub fn set_delay_level(&mut self, level: i32) {
        self.properties
            .insert(property::DELAY_TIME_LEVEL, level.to_string());
    }

    pub fn tags(&self) -> Option<&str> {
        self.properties.tags()
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.properties.keys()
    }

    pub fn delay_level(&self) -> i32 {
        self.properties.delay_level()
    }

    pub fn property(&self, name: &str) -> Option<&str> {
        self.properties.get(name)
    }

    /// The client-side unique id (`UNIQ_KEY`) once the producer assigned it.
    pub fn uniq_key(&self) -> Option<&str> {
        self.properties.uniq_key()
    }

    pub(crate) fn wait_store_msg_ok(&self) -> bool {
        self.properties
            .get(property::WAIT_STORE_MSG_OK)
            .is_none_or(|v| v.eq_ignore_ascii_case("true"))
    }
}

/// Largest decompressed body accepted: a corrupt or hostile frame must not make the
/// consumer allocate without bound.
pub const MAX_DECOMPRESSED_BODY: u64 = 256 * 1024 * 1024;

/// Compresses a body with `compression` (LZ4 frame, zlib stream, zstd frame).
pub fn compress(body: &[u8], compression: Compression, zlib_level: u32) -> Result<Vec<u8>> {
    let io = |source| ClientError::Io {
        what: "compressing a message body".into(),
        source,
    };
    match compression {
        Compression::Lz4 => {
            let mut enc = lz4_flex::frame::FrameEncoder::new(Vec::with_capacity(body.len() / 2));
            enc.write_all(body).map_err(io)?;
            enc.finish()
                .map_err(|e| io(std::io::Error::other(e.to_string())))
        }
        Compression::Zlib => {
            let mut enc = flate2::write::ZlibEncoder::new(
                Vec::with_capacity(body.len() / 2),
                flate2::Compression::new(zlib_level.min(9)),
            );
            enc.write_all(body).map_err(io)?;
            enc.finish().map_err(io)
        }
        Compression::Zstd => zstd::bulk::compress(body, 3).map_err(io),
    }
}

/// Decompresses a body compressed as announced by `sys_flag`; a body without the
/// compressed bit is returned as is.
pub fn decompress(body: &[u8], sys_flag: i32) -> Result<Option<Vec<u8>>> {
    let Some(compression) = sysflag::compression(sys_flag) else {
        return Ok(None);
    };
    let io = |source| ClientError::Io {
        what: format!("decompressing a {compression:?} message body"),
        source,
    };
    let mut out = Vec::with_capacity(body.len().saturating_mul(2));
    match compression {
        Compression::Lz4 => lz4_flex::frame::FrameDecoder::new(body)
            .take(MAX_DECOMPRESSED_BODY + 1)
            .read_to_end(&mut out)
            .map_err(io)?,
        Compression::Zlib => flate2::read::ZlibDecoder::new(body)
            .take(MAX_DECOMPRESSED_BODY + 1)
            .read_to_end(&mut out)
            .map_err(io)?,
        Compression::Zstd => zstd::stream::read::Decoder::new(body)
            .map_err(io)?
            .take(MAX_DECOMPRESSED_BODY + 1)
            .read_to_end(&mut out)
            .map_err(io)?,
    };
    if out.len() as u64 > MAX_DECOMPRESSED_BODY {
        return Err(ClientError::InvalidMessage(format!(
            "decompressed body exceeds {MAX_DECOMPRESSED_BODY} bytes"
        )));
    }
    Ok(Some(out))
}

/// Replaces a received message's compressed body by its plain bytes and clears the
/// compression bits, as the Java consumer does when decoding. A body that does not
/// decompress is left as is (logged), so one bad record does not stop a queue.
pub(crate) fn decompress_in_place(msg: &mut MessageExt) {
    match decompress(&msg.body, msg.sys_flag) {
        Ok(Some(plain)) => {
            msg.body = Bytes::from(plain);
            msg.sys_flag &= !(sysflag::COMPRESSED_FLAG | sysflag::COMPRESSION_TYPE_MASK);
        }
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(topic = %msg.topic, queue_id = msg.queue_id, offset = msg.queue_offset, error = %e, "cannot decompress message body");
        }
    }
}

/// Checks a message as Java's `Validators.checkMessage` does.
pub(crate) fn validate(msg: &Message, max_message_size: usize) -> Result<()> {
    vostok_remoting::protocol::topic::validate_topic(&msg.topic)
        .map_err(ClientError::InvalidMessage)?;
    if vostok_remoting::protocol::topic::is_not_allowed_send_topic(&msg.topic) {
        return Err(ClientError::InvalidMessage(format!(
            "sending message to topic[{}] is forbidden",
            msg.topic
        )));
    }
    if msg.body.is_empty() {
        return Err(ClientError::InvalidMessage(
            "the message body is empty".into(),
        ));
    }
    if msg.body.len() > max_message_size {
        return Err(ClientError::MessageTooLarge {
            size: msg.body.len(),
            max: max_message_size,
        });
    }
    Ok(())
}

/// User properties must not use reserved names (`MessageConst.STRING_HASH_SET`), except
/// those the [`Message`] setters write themselves.
pub(crate) fn check_user_properties(msg: &Message) -> Result<()> {
    const SETTER_OWNED: &[&str] = &[
        property::TAGS,
        property::KEYS,
        property::WAIT_STORE_MSG_OK,
        property::DELAY_TIME_LEVEL,
        property::TIMER_DELIVER_MS,
        property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
        // Set by the consumer's fallback send-back and request/reply.
        property::RETRY_TOPIC,
        property::ORIGIN_MESSAGE_ID,
        property::RECONSUME_TIME,
        property::MAX_RECONSUME_TIMES,
        property::CORRELATION_ID,
        property::MESSAGE_REPLY_TO_CLIENT,
        property::MESSAGE_TTL,
        property::MESSAGE_TYPE,
        property::CLUSTER,
        property::TRANSACTION_PREPARED,
        property::PRODUCER_GROUP,
        property::SHARDING_KEY,
    ];
    for (name, _) in msg.properties.iter() {
        if property::RESERVED.contains(&name) && !SETTER_OWNED.contains(&name) {
            return Err(ClientError::InvalidMessage(format!(
                "the property name {name} is reserved by the system"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_round_trips_and_is_flagged() {
        let body: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        for c in [Compression::Lz4, Compression::Zlib, Compression::Zstd] {
            let packed = compress(&body, c, 5).unwrap();
            assert!(packed.len() < body.len());
            let flag = sysflag::compression_bits(c);
            assert_eq!(decompress(&packed, flag).unwrap().unwrap(), body);
        }
        // The LZ4 body is a frame (magic 0x184D2204, little-endian) as Java's Lz4Compressor writes.
        let lz4 = compress(&body, Compression::Lz4, 5).unwrap();
        assert_eq!(&lz4[..4], &[0x04, 0x22, 0x4D, 0x18]);
        // A zlib stream starts with the zlib header byte 0x78.
        assert_eq!(compress(&body, Compression::Zlib, 5).unwrap()[0], 0x78);
        // 4.x clients set only bit 0: zlib.
        let zlib = compress(&body, Compression::Zlib, 5).unwrap();
        assert_eq!(decompress(&zlib, 1).unwrap().unwrap(), body);
        assert!(decompress(&body, 0).unwrap().is_none());
    }

    #[test]
    fn garbage_bodies_fail_cleanly() {
        for c in [Compression::Lz4, Compression::Zlib, Compression::Zstd] {
            assert!(decompress(b"not compressed at all", sysflag::compression_bits(c)).is_err());
        }
    }

    #[test]
    fn validation_follows_java_rules() {
        let ok = Message::new("TopicTest", "x").with_tags("A");
        assert!(validate(&ok, 10).is_ok());
        assert!(validate(&Message::new("bad topic", "x"), 10).is_err());
        assert!(validate(&Message::new("T", ""), 10).is_err());
        assert!(matches!(
            validate(&Message::new("T", "01234567890"), 10),
            Err(ClientError::MessageTooLarge { size: 11, max: 10 })
        ));
        assert!(validate(&Message::new("SCHEDULE_TOPIC_XXXX", "x"), 10).is_err());
        assert!(check_user_properties(&ok.clone().with_property("REAL_TOPIC", "x")).is_err());
        assert!(check_user_properties(&ok.with_property("color", "red")).is_ok());
    }

    #[test]
    fn builder_writes_rocketmq_properties() {
        let m = Message::new("T", "b")
            .with_tags("TagA")
            .with_keys(["k1", "k2"])
            .with_delay_level(3);
        assert_eq!(m.property("WAIT"), Some("true"));
        assert_eq!(m.tags(), Some("TagA"));
        assert_eq!(m.keys().collect::<Vec<_>>(), ["k1", "k2"]);
        assert_eq!(m.delay_level(), 3);
    }
}
