//! Frame codec (docs/wire.md#frame-layout).
//!
//! ```text
//! +------------+----------------------------+-----------------+------------+
//! | length     | serializeType | headerLen  | header          | body       |
//! | int (4)    | byte (1)      | 24 bits    | headerLen bytes | the rest   |
//! +------------+----------------------------+-----------------+------------+
//! length = 4 + headerLen + bodyLen
//! ```
//!
//! The decoder is sans-IO and bounded: it checks the length words against
//! [`FrameLimits`] before buffering a frame, returns `Ok(None)` without consuming
//! anything until the whole frame is present (growing its buffer by at most 64 KiB
//! at a time meanwhile), then takes exactly one frame. Garbage
//! is an `Err`, which closes that one connection.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::command::{binary_header, json_header, HeaderOut, RemotingCommand, SerializeType};
use crate::error::RemotingError;

/// Default largest frame (Java `com.rocketmq.remoting.frameMaxLength`).
pub const DEFAULT_MAX_FRAME: usize = 16 * 1024 * 1024;
/// Default largest header. Headers carry the property string (at most 32 KiB, up to six
/// times that once JSON-escaped) and little else.
pub const DEFAULT_MAX_HEADER: usize = 1024 * 1024;

/// Most the decoder asks its buffer to grow by while a frame is incomplete.
const READ_AHEAD: usize = 64 * 1024;

/// Size limits applied before a frame is buffered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameLimits {
    /// Largest value of the leading `length` word.
    pub max_frame: usize,
    /// Largest header.
    pub max_header: usize,
}

impl Default for FrameLimits {
    fn default() -> Self {
        FrameLimits {
            max_frame: DEFAULT_MAX_FRAME,
            max_header: DEFAULT_MAX_HEADER,
        }
    }
}

/// Encodes and decodes whole frames.
#[derive(Debug, Clone, Default)]
pub struct RemotingCodec {
    limits: FrameLimits,
}

impl RemotingCodec {
    pub fn new(limits: FrameLimits) -> Self {
        RemotingCodec { limits }
    }

    pub fn limits(&self) -> FrameLimits {
        self.limits
    }

    fn check_prefix(&self, src: &[u8]) -> Result<usize, RemotingError> {
        let length = i32::from_be_bytes([src[0], src[1], src[2], src[3]]) as i64;
        if length < 4 {
            return Err(RemotingError::FrameTooSmall { length });
        }
        let length = length as usize;
        if length > self.limits.max_frame {
            return Err(RemotingError::FrameTooLarge {
                length,
                limit: self.limits.max_frame,
            });
        }
        if src.len() >= 8 {
            let word = u32::from_be_bytes([src[4], src[5], src[6], src[7]]);
            self.check_header_word(word, length)?;
        }
        Ok(length)
    }

    fn check_header_word(
        &self,
        word: u32,
        length: usize,
    ) -> Result<(SerializeType, usize), RemotingError> {
        let kind = (word >> 24) as u8;
        let serialize_type =
            SerializeType::from_code(kind).ok_or(RemotingError::UnknownSerializeType(kind))?;
        let header = (word & 0x00FF_FFFF) as usize;
        if header > self.limits.max_header {
            return Err(RemotingError::HeaderTooLarge {
                length: header,
                limit: self.limits.max_header,
            });
        }
        if header > length - 4 {
            return Err(RemotingError::HeaderOutOfFrame {
                header,
                frame: length,
            });
        }
        Ok((serialize_type, header))
    }

    /// The whole length of the frame at the start of `src` (its length word included),
    /// checked against the limits, once its length word has arrived.
    pub fn frame_len(&self, src: &[u8]) -> Result<Option<usize>, RemotingError> {
        if src.len() < 4 {
            return Ok(None);
        }
        self.check_prefix(src).map(|length| Some(4 + length))
    }

    /// Decodes one complete frame (without its leading length word).
    fn decode_frame(&self, mut frame: Bytes) -> Result<RemotingCommand, RemotingError> {
        let length = frame.len();
        let word = frame.get_u32();
        let (serialize_type, header_len) = self.check_header_word(word, length)?;
        let header = frame.split_to(header_len);
        let mut cmd = match serialize_type {
            SerializeType::Json => json_header::decode(&header)?,
            SerializeType::RocketMq => binary_header::decode(&header)?,
        };
        cmd.body = frame;
        Ok(cmd)
    }

    /// Appends one encoded frame to `dst`. Fails, writing nothing, when the frame would
    /// exceed the frame limit (the peer would drop the connection).
    pub fn encode_into(
        &self,
        cmd: &RemotingCommand,
        dst: &mut BytesMut,
    ) -> Result<(), RemotingError> {
        dst.reserve(8 + 128 + cmd.body.len());
        self.encode_head_into(cmd, dst)?;
        dst.put_slice(&cmd.body);
        Ok(())
    }

    /// Encodes one frame as its head (length, header word, header) and its body, which
    /// is shared rather than copied: the writer hands both to the socket.
    pub fn encode_frame(&self, cmd: &RemotingCommand) -> Result<Frame, RemotingError> {
        // Room for the fields' text, their quotes and separators, and escapes (the
        // property string's separators are escaped in JSON): one allocation per head.
        // A plain vector rather than frozen `Bytes`: the writer copies the head into its
        // batch, and freezing a buffer with room to spare allocates a shared handle.
        let text = cmd.ext_fields.text_len();
        let mut head = Vec::with_capacity(8 + 192 + text + text / 4 + 8 * cmd.ext_fields.len());
        self.encode_head_into(cmd, &mut head)?;
        Ok(Frame {
            head,
            body: cmd.body.clone(),
        })
    }

    /// Appends everything of a frame but its body (the length counts the body).
    fn encode_head_into(
        &self,
        cmd: &RemotingCommand,
        dst: &mut impl HeaderOut,
    ) -> Result<(), RemotingError> {
        // The binary header carries the code in 16 bits, and Java truncates a larger
        // one (POP_MESSAGE's 200050 would arrive as 3442): such a command goes in JSON.
        let serialize_type = match cmd.serialize_type {
            SerializeType::RocketMq if i16::try_from(cmd.code).is_err() => SerializeType::Json,
            other => other,
        };
        let start = dst.written();
        dst.put_u64(0); // length and header word, patched below
        match serialize_type {
            SerializeType::Json => json_header::encode(cmd, dst),
            SerializeType::RocketMq => binary_header::encode(cmd, dst),
        }
        let header_len = dst.written() - start - 8;
        let length = 4 + header_len + cmd.body.len();
        if header_len > 0x00FF_FFFF || header_len > self.limits.max_header {
            dst.truncate_to(start);
            return Err(RemotingError::HeaderTooLarge {
                length: header_len,
                limit: self.limits.max_header.min(0x00FF_FFFF),
            });
        }
        if length > self.limits.max_frame {
            dst.truncate_to(start);
            return Err(RemotingError::FrameTooLarge {
                length,
                limit: self.limits.max_frame,
            });
        }
        let word = ((serialize_type.code() as u32) << 24) | header_len as u32;
        let dst = dst.written_mut();
        dst[start..start + 4].copy_from_slice(&(length as u32).to_be_bytes());
        dst[start + 4..start + 8].copy_from_slice(&word.to_be_bytes());
        Ok(())
    }

    /// Encodes one frame into its own buffer.
    pub fn encode_to_bytes(&self, cmd: &RemotingCommand) -> Result<Bytes, RemotingError> {
        let mut buf = BytesMut::new();
        self.encode_into(cmd, &mut buf)?;
        Ok(buf.freeze())
    }
}

/// One encoded frame: `head` then `body` on the wire.
#[derive(Debug, Clone)]
pub struct Frame {
    pub head: Vec<u8>,
    pub body: Bytes,
}

impl Frame {
    pub fn len(&self) -> usize {
        self.head.len() + self.body.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Decoder for RemotingCodec {
    type Item = RemotingCommand;
    type Error = RemotingError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<RemotingCommand>, RemotingError> {
        if src.len() < 4 {
            return Ok(None);
        }
        let length = self.check_prefix(src)?;
        let total = 4 + length;
        if src.len() < total {
            // Room for what is missing, but no more than a read's worth at a time: a
            // frame's length word alone must not make its whole size resident.
            src.reserve((total - src.len()).min(READ_AHEAD));
            return Ok(None);
        }
        let mut frame = src.split_to(total).freeze();
        frame.advance(4);
        self.decode_frame(frame).map(Some)
    }
}

impl Encoder<RemotingCommand> for RemotingCodec {
    type Error = RemotingError;

    fn encode(&mut self, cmd: RemotingCommand, dst: &mut BytesMut) -> Result<(), RemotingError> {
        self.encode_into(&cmd, dst)
    }
}

impl Encoder<&RemotingCommand> for RemotingCodec {
    type Error = RemotingError;

    fn encode(&mut self, cmd: &RemotingCommand, dst: &mut BytesMut) -> Result<(), RemotingError> {
        self.encode_into(cmd, dst)
    }
}
