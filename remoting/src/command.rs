//! `RemotingCommand`: the unit every request and response travels in (docs/wire.md).
//!
//! A command is a header (code, language, version, opaque, flag, remark, `extFields`)
//! plus an opaque body. The header is serialised either as JSON or in the binary
//! `ROCKETMQ` layout; see [`json_header`] and [`binary_header`].

pub mod binary_header;
pub mod json_header;
mod json_reader;

use std::fmt;
use std::sync::atomic::{AtomicI32, Ordering};

use bytes::Bytes;

use crate::error::HeaderError;
use crate::protocol::header::CommandHeader;
use crate::protocol::version::CURRENT_VERSION;

/// Flag bit 0: set on responses.
pub const FLAG_RESPONSE: i32 = 0x1;
/// Flag bit 1: set on oneway requests, which the receiver must not answer.
pub const FLAG_ONEWAY: i32 = 0x2;

static NEXT_OPAQUE: AtomicI32 = AtomicI32::new(1);

/// A process-wide request id, as the Java client's `requestId` counter.
/// Opaque values only need to be unique per sender, so wrapping is harmless.
pub fn next_opaque() -> i32 {
    NEXT_OPAQUE.fetch_add(1, Ordering::Relaxed)
}

/// What a header is encoded into: a frame's own head (`Vec<u8>`, queued as it is and
/// copied into the connection's write buffer) or a codec's output (`BytesMut`).
pub trait HeaderOut: bytes::BufMut {
    fn reserve_more(&mut self, additional: usize);
    fn written(&self) -> usize;
    fn truncate_to(&mut self, len: usize);
    fn written_mut(&mut self) -> &mut [u8];
}

impl HeaderOut for Vec<u8> {
    fn reserve_more(&mut self, additional: usize) {
        self.reserve(additional);
    }
    fn written(&self) -> usize {
        self.len()
    }
    fn truncate_to(&mut self, len: usize) {
        self.truncate(len);
    }
    fn written_mut(&mut self) -> &mut [u8] {
        self
    }
}

impl HeaderOut for bytes::BytesMut {
    fn reserve_more(&mut self, additional: usize) {
        self.reserve(additional);
    }
    fn written(&self) -> usize {
        self.len()
    }
    fn truncate_to(&mut self, len: usize) {
        self.truncate(len);
    }
    fn written_mut(&mut self) -> &mut [u8] {
        self
    }
}

/// How the header of a frame is serialised: the high byte of the header-length word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SerializeType {
    #[default]
    Json,
    RocketMq,
}

impl SerializeType {
    pub fn code(self) -> u8 {
        match self {
            SerializeType::Json => 0,
            SerializeType::RocketMq => 1,
        }
    }

    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(SerializeType::Json),
            1 => Some(SerializeType::RocketMq),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SerializeType::Json => "JSON",
            SerializeType::RocketMq => "ROCKETMQ",
        }
    }
}

impl std::str::FromStr for SerializeType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_uppercase().as_str() {
            "JSON" => Ok(SerializeType::Json),
            "ROCKETMQ" => Ok(SerializeType::RocketMq),
            other => Err(format!(
                "unknown serialize type {other:?} (JSON or ROCKETMQ)"
            )),
        }
    }
}

/// The sender's implementation language (`LanguageCode`, docs/wire.md#language-codes). JSON
/// carries the name, the binary header the code; unknown values decode as `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LanguageCode {
    Java,
    Cpp,
    Dotnet,
    Python,
    Delphi,
    Erlang,
    Ruby,
    Other,
    Http,
    Go,
    Php,
    Oms,
    #[default]
    Rust,
    NodeJs,
}

impl LanguageCode {
    const ALL: [LanguageCode; 14] = [
        LanguageCode::Java,
        LanguageCode::Cpp,
        LanguageCode::Dotnet,
        LanguageCode::Python,
        LanguageCode::Delphi,
        LanguageCode::Erlang,
        LanguageCode::Ruby,
        LanguageCode::Other,
        LanguageCode::Http,
        LanguageCode::Go,
        LanguageCode::Php,
        LanguageCode::Oms,
        LanguageCode::Rust,
        LanguageCode::NodeJs,
    ];

    pub fn code(self) -> u8 {
        self as u8
    }

    pub fn from_code(code: i64) -> Self {
        usize::try_from(code)
            .ok()
            .and_then(|i| Self::ALL.get(i).copied())
            .unwrap_or(LanguageCode::Other)
    }

    pub fn name(self) -> &'static str {
        match self {
            LanguageCode::Java => "JAVA",
            LanguageCode::Cpp => "CPP",
            LanguageCode::Dotnet => "DOTNET",
            LanguageCode::Python => "PYTHON",
            LanguageCode::Delphi => "DELPHI",
            LanguageCode::Erlang => "ERLANG",
            LanguageCode::Ruby => "RUBY",
            LanguageCode::Other => "OTHER",
            LanguageCode::Http => "HTTP",
            LanguageCode::Go => "GO",
            LanguageCode::Php => "PHP",
            LanguageCode::Oms => "OMS",
            LanguageCode::Rust => "RUST",
            LanguageCode::NodeJs => "NODE_JS",
        }
    }

    pub fn from_name(name: &str) -> Self {
        Self::ALL
            .iter()
            .copied()
            .find(|l| l.name().eq_ignore_ascii_case(name))
            .unwrap_or(LanguageCode::Other)
    }
}

impl fmt::Display for LanguageCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The `extFields` map: every value is a string on the wire.
///
/// Every key and value lives in one string buffer, with a small table of ranges: a
/// decoded header costs two allocations however many fields it has, where a map of
/// owned strings costs two per field (allocation was the largest cost per request).
/// Headers hold a dozen keys, so a linear scan beats hashing; insertion order is kept
/// for readable frames.
#[derive(Clone, Default)]
pub struct ExtFields {
    buf: String,
    /// `(key start, key end, value end)` into `buf`; the value starts at the key's end.
    entries: Vec<(u32, u32, u32)>,
}

impl ExtFields {
    pub fn new() -> Self {
        ExtFields::default()
    }

    pub fn with_capacity(n: usize) -> Self {
        ExtFields {
            buf: String::with_capacity(n * 24),
            entries: Vec::with_capacity(n),
        }
    }

    fn entry(&self, (k, kv, end): (u32, u32, u32)) -> (&str, &str) {
        (
            &self.buf[k as usize..kv as usize],
            &self.buf[kv as usize..end as usize],
        )
    }

    /// The value of `key`; with duplicate keys (only decoders create them) the last wins,
    /// as in the Java map.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .rev()
            .map(|e| self.entry(*e))
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }

    /// Inserts or replaces `key`.
    pub fn insert(&mut self, key: impl AsRef<str>, value: impl AsRef<str>) {
        let value = value.as_ref();
        self.insert_with(key.as_ref(), |buf| buf.push_str(value));
    }

    /// Inserts or replaces `key` with the value `render` appends to the buffer, so that
    /// a typed header's numbers are written in place rather than through a `String`
    /// each (headers are built for every request and response).
    pub(crate) fn insert_with(&mut self, key: &str, render: impl FnOnce(&mut String)) {
        if self.get(key).is_some() {
            self.remove_entries(key);
        }
        self.push_with(key, render);
    }

    /// Appends `key` without looking for an existing entry: for writers that know the
    /// key is new, such as a typed header written into an empty map. `render` must
    /// only append: the map's ranges point into the buffer (hence crate-private).
    pub(crate) fn push_with(&mut self, key: &str, render: impl FnOnce(&mut String)) {
        let k = self.buf.len() as u32;
        self.buf.push_str(key);
        let kv = self.buf.len() as u32;
        render(&mut self.buf);
        self.entries.push((k, kv, self.buf.len() as u32));
    }

    /// Appends without looking for an existing key, so that decoding stays linear
    /// however many keys a hostile header holds; [`ExtFields::get`] lets the last win.
    /// Headers are bounded far below 4 GiB, so offsets fit in `u32`.
    pub(crate) fn push_decoded(&mut self, key: &str, value: &str) {
        let k = self.buf.len() as u32;
        self.buf.push_str(key);
        let kv = self.buf.len() as u32;
        self.buf.push_str(value);
        self.entries.push((k, kv, self.buf.len() as u32));
    }

    /// Removes every entry of `key`, returning the value that [`ExtFields::get`] saw.
    /// The bytes stay in the buffer until the map is dropped.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let last = self.get(key).map(str::to_owned);
        if last.is_some() {
            self.remove_entries(key);
        }
        last
    }

    fn remove_entries(&mut self, key: &str) {
        let buf = &self.buf;
        self.entries
            .retain(|(k, kv, _)| &buf[*k as usize..*kv as usize] != key);
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Bytes of the keys and values held (what a writer of the fields copies at least).
    pub(crate) fn text_len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries in insertion order (duplicates included, as decoded).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|e| self.entry(*e))
    }
}

impl PartialEq for ExtFields {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}
impl Eq for ExtFields {}

impl fmt::Debug for ExtFields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: AsRef<str>, V: AsRef<str>> FromIterator<(K, V)> for ExtFields {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut fields = ExtFields::new();
        for (k, v) in iter {
            fields.insert(k, v);
        }
        fields
    }
}

/// One request or response.
#[derive(Clone, PartialEq)]
pub struct RemotingCommand {
    /// Request code for requests, response code for responses.
    pub code: i32,
    pub language: LanguageCode,
    /// Sender's `MQVersion` ordinal.
    pub version: i32,
    /// Request id, echoed by the response.
    pub opaque: i32,
    /// [`FLAG_RESPONSE`] and [`FLAG_ONEWAY`] bits.
    pub flag: i32,
    /// Boxed rather than `String`: keeps a command small enough to move cheaply.
    pub remark: Option<Box<str>>,
    pub ext_fields: ExtFields,
    pub body: Bytes,
    /// How the header is written when this command is sent; set from the frame on decode.
    pub serialize_type: SerializeType,
}

impl fmt::Debug for RemotingCommand {
    // Bodies stay out of logs: print their size only.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemotingCommand")
            .field("code", &self.code)
            .field("language", &self.language)
            .field("version", &self.version)
            .field("opaque", &self.opaque)
            .field("flag", &self.flag)
            .field("remark", &self.remark)
            .field("ext_fields", &self.ext_fields)
            .field("body_len", &self.body.len())
            .finish()
    }
}

impl RemotingCommand {
    /// A new request with a fresh opaque.
    pub fn request(code: i32) -> Self {
        RemotingCommand {
            code,
            language: LanguageCode::Rust,
            version: CURRENT_VERSION,
            opaque: next_opaque(),
            flag: 0,
            remark: None,
            ext_fields: ExtFields::new(),
            body: Bytes::new(),
            serialize_type: SerializeType::Json,
        }
    }

    /// A new request carrying a typed header.
    pub fn request_with_header<H: CommandHeader>(code: i32, header: &H) -> Self {
        let mut cmd = Self::request(code);
        cmd.ext_fields = ExtFields::with_capacity(16);
        header.write_to(&mut cmd.ext_fields);
        cmd
    }

    /// A response with `code` and an optional remark; the server fills in the opaque.
    pub fn response(code: i32, remark: impl Into<Option<String>>) -> Self {
        RemotingCommand {
            code,
            language: LanguageCode::Rust,
            version: CURRENT_VERSION,
            opaque: 0,
            flag: FLAG_RESPONSE,
            remark: remark.into().map(String::into_boxed_str),
            ext_fields: ExtFields::new(),
            body: Bytes::new(),
            serialize_type: SerializeType::Json,
        }
    }

    /// A SUCCESS response.
    pub fn success() -> Self {
        Self::response(crate::protocol::response_code::SUCCESS, None)
    }

    pub fn with_body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    pub fn with_remark(mut self, remark: impl Into<String>) -> Self {
        self.remark = Some(remark.into().into_boxed_str());
        self
    }

    pub fn with_header<H: CommandHeader>(mut self, header: &H) -> Self {
        if self.ext_fields.is_empty() {
            self.ext_fields = ExtFields::with_capacity(8);
        }
        header.write_to(&mut self.ext_fields);
        self
    }

    /// Decodes the typed header from `extFields`.
    pub fn decode_header<H: CommandHeader>(&self) -> Result<H, HeaderError> {
        H::read_from(&self.ext_fields)
    }

    pub fn is_response(&self) -> bool {
        self.flag & FLAG_RESPONSE != 0
    }

    pub fn is_oneway(&self) -> bool {
        self.flag & FLAG_ONEWAY != 0
    }

    pub fn mark_response(&mut self) {
        self.flag |= FLAG_RESPONSE;
    }

    pub fn mark_oneway(&mut self) {
        self.flag |= FLAG_ONEWAY;
    }

    pub fn remark(&self) -> &str {
        self.remark.as_deref().unwrap_or("")
    }
}
