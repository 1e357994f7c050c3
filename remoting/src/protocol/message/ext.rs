//! [`MessageExt`]: a message as the store holds it, decoded from its commitlog record
//! (docs/store.md#commitlog-record-layout), with its store metadata. What pulls, queries
//! and views return to clients, and what the broker reads back to move a message.

use std::net::SocketAddr;

use bytes::Bytes;

use super::id;
use super::property::Properties;
use super::record::{RecordFields, RecordView};
use crate::error::DecodeError;

/// A decoded message with its store metadata (Java `MessageExt`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageExt {
    pub topic: String,
    pub flag: i32,
    pub properties: Properties,
    pub body: Bytes,
    pub queue_id: i32,
    pub store_size: i32,
    pub queue_offset: i64,
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub born_host: SocketAddr,
    pub store_timestamp: i64,
    pub store_host: SocketAddr,
    pub commit_log_offset: i64,
    pub body_crc: u32,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
}

impl MessageExt {
    /// A message of queue `queue_id` of `topic`, born at and stored by `host`, with no
    /// flag, offsets, times, CRC or retries: callers set the fields they have on top
    /// (`MessageExt { queue_offset, ..MessageExt::new(..) }`).
    pub fn new(
        topic: impl Into<String>,
        queue_id: i32,
        body: Bytes,
        properties: Properties,
        host: SocketAddr,
    ) -> Self {
        MessageExt {
            topic: topic.into(),
            flag: 0,
            properties,
            body,
            queue_id,
            store_size: 0,
            queue_offset: 0,
            sys_flag: 0,
            born_timestamp: 0,
            born_host: host,
            store_timestamp: 0,
            store_host: host,
            commit_log_offset: 0,
            body_crc: 0,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
        }
    }

    /// Builds the owned message from a view; `body` is the same bytes as a shared
    /// buffer when the caller has one (zero-copy), else they are copied.
    pub fn from_view(view: &RecordView<'_>, body: Option<Bytes>) -> Self {
        MessageExt {
            topic: view.topic().to_owned(),
            flag: view.flag(),
            properties: Properties::decode(view.properties()),
            body: body.unwrap_or_else(|| Bytes::copy_from_slice(view.body())),
            queue_id: view.queue_id(),
            store_size: view.total_size() as i32,
            queue_offset: view.queue_offset(),
            sys_flag: view.sys_flag(),
            born_timestamp: view.born_timestamp(),
            born_host: view.born_host(),
            store_timestamp: view.store_timestamp(),
            store_host: view.store_host(),
            commit_log_offset: view.physical_offset(),
            body_crc: view.body_crc(),
            reconsume_times: view.reconsume_times(),
            prepared_transaction_offset: view.prepared_transaction_offset(),
        }
    }

    /// Decodes one record from the start of `buf`.
    pub fn decode(buf: &Bytes, verify_crc: bool) -> Result<Self, DecodeError> {
        let view = RecordView::parse_message(buf, verify_crc)?;
        let start = view.body_pos;
        let body = buf.slice(start..start + view.body_len);
        Ok(Self::from_view(&view, Some(body)))
    }

    /// Decodes the concatenated records of a pull, query or view body. Like the Java
    /// client it stops at the first record it cannot decode.
    pub fn decode_all(buf: &Bytes) -> Vec<MessageExt> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < buf.len() {
            let rest = buf.slice(at..);
            match Self::decode(&rest, false) {
                Ok(msg) => {
                    at += msg.store_size as usize;
                    out.push(msg);
                }
                Err(_) => break,
            }
        }
        out
    }

    /// Encodes the message as a record (`MessageDecoder.encode`): what CHECK_TRANSACTION_STATE
    /// carries and what a store writes.
    pub fn encode(&self) -> Vec<u8> {
        let properties = self.properties.encode();
        let fields = RecordFields {
            body_crc: self.body_crc,
            queue_id: self.queue_id,
            flag: self.flag,
            queue_offset: self.queue_offset,
            physical_offset: self.commit_log_offset,
            sys_flag: self.sys_flag,
            born_timestamp: self.born_timestamp,
            born_host: self.born_host,
            store_timestamp: self.store_timestamp,
            store_host: self.store_host,
            reconsume_times: self.reconsume_times,
            prepared_transaction_offset: self.prepared_transaction_offset,
            body: &self.body,
            topic: &self.topic,
            properties: &properties,
        };
        let mut out = Vec::with_capacity(fields.encoded_len());
        fields.encode(&mut out);
        out
    }

    pub fn property(&self, name: &str) -> Option<&str> {
        self.properties.get(name)
    }

    pub fn tags(&self) -> Option<&str> {
        self.properties.tags()
    }

    /// The offset message id: store host and commitlog offset.
    pub fn offset_msg_id(&self) -> String {
        id::create_offset_msg_id(self.store_host, self.commit_log_offset)
    }

    /// The id users see: UNIQ_KEY when present, else the offset id.
    pub fn msg_id(&self) -> String {
        match self.properties.uniq_key() {
            Some(uniq) => uniq.to_owned(),
            None => self.offset_msg_id(),
        }
    }
}
