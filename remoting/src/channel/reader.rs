//! The reading side of a connection: frames in, with every byte accounted.
//!
//! [`FrameReader`] reads into a buffer sized by what arrives (Netty's adaptive
//! allocator: from 2 KiB up to 64 KiB a read, and nothing while the connection is
//! idle), not by what a length word announces. Once a frame's length word is in, the
//! frame's bytes (plus [`REQUEST_OVERHEAD`] for the request it becomes) are reserved
//! from the memory budget; the reservation follows the request until it is answered.
//! When the budget has no room the frame waits, unread. A frame must be complete
//! within `frameReadTimeoutMillis` of its first byte, memory wait included: a peer
//! that starts frames and never finishes them (slow-loris) is disconnected.

use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::time::Instant;
use tokio_util::codec::Decoder;

use crate::budget::{MemoryBudget, Reservation};
use crate::codec::RemotingCodec;
use crate::command::RemotingCommand;
use crate::error::{RemotingError, Result};

/// What a request costs beyond its frame while it is in flight: its task, its decoded
/// header, and the small response it usually gets.
pub(crate) const REQUEST_OVERHEAD: usize = 2048;

const MIN_READ: usize = 1024;
const FIRST_READ: usize = 2048;
const MAX_READ: usize = 64 * 1024;

/// Frames from one connection's read half.
pub(crate) struct FrameReader<R> {
    rd: R,
    buf: BytesMut,
    codec: RemotingCodec,
    budget: Arc<MemoryBudget>,
    frame_timeout: Duration,
    read_size: usize,
    /// When the first byte of the frame being received arrived (for a frame that came
    /// with the one before it, when the read that brought it returned).
    started: Option<Instant>,
    /// When the last read returned: the clock is read once per read, not per frame
    /// (a read brings dozens of frames under load).
    last_read: Option<Instant>,
    /// The reservation of the frame being received, once its length is known.
    charge: Option<Reservation>,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub(crate) fn new(
        rd: R,
        codec: RemotingCodec,
        budget: Arc<MemoryBudget>,
        frame_timeout: Duration,
    ) -> Self {
        FrameReader {
            rd,
            buf: BytesMut::new(),
            codec,
            budget,
            frame_timeout,
            read_size: FIRST_READ,
            started: None,
            last_read: None,
            charge: None,
        }
    }

    /// The next frame and its reservation; `None` when the peer closed between frames.
    /// Cancel-safe: bytes read and memory reserved stay with the reader.
    pub(crate) async fn next(&mut self) -> Result<Option<(RemotingCommand, Reservation)>> {
        loop {
            if let Some(length) = self.codec.frame_len(&self.buf)? {
                if self.charge.is_none() {
                    self.charge = Some(self.reserve(length).await?);
                    if self.buf.capacity() < length {
                        // Exactly the frame: the pages fill in as its bytes arrive.
                        let mut grown = BytesMut::with_capacity(length);
                        grown.extend_from_slice(&self.buf);
                        self.buf = grown;
                    }
                }
                if self.buf.len() >= length {
                    return self.take_frame().map(Some);
                }
            }
            if self.buf.capacity() == self.buf.len() {
                self.buf.reserve(self.read_size);
            }
            let spare = self.buf.capacity() - self.buf.len();
            let n = match self.started {
                Some(started) => {
                    match tokio::time::timeout_at(
                        started + self.frame_timeout,
                        self.rd.read_buf(&mut self.buf),
                    )
                    .await
                    {
                        Ok(read) => read?,
                        Err(_) => return Err(self.timeout_error()),
                    }
                }
                None => self.rd.read_buf(&mut self.buf).await?,
            };
            if n == 0 {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                return Err(RemotingError::Io(std::io::ErrorKind::UnexpectedEof.into()));
            }
            let now = Instant::now();
            self.last_read = Some(now);
            if self.started.is_none() {
                self.started = Some(now);
            }
            if n == spare {
                self.read_size = (self.read_size * 2).min(MAX_READ);
            } else if n < self.read_size / 4 {
                self.read_size = (self.read_size / 2).max(MIN_READ);
            }
        }
    }

    /// The frame's bytes and its request's overhead, waiting for room in the budget
    /// until the frame's deadline.
    async fn reserve(&mut self, length: usize) -> Result<Reservation> {
        let bytes = length + REQUEST_OVERHEAD;
        if let Some(charge) = self.budget.try_reserve(bytes) {
            return Ok(charge);
        }
        let deadline = self.started.unwrap_or_else(Instant::now) + self.frame_timeout;
        match tokio::time::timeout_at(deadline, self.budget.reserve(bytes)).await {
            Ok(charge) => Ok(charge),
            Err(_) => Err(RemotingError::NoMemory {
                what: "a received frame",
                bytes,
            }),
        }
    }

    fn take_frame(&mut self) -> Result<(RemotingCommand, Reservation)> {
        let cmd = self.codec.decode(&mut self.buf)?;
        let charge = self.charge.take().unwrap_or_else(|| self.budget.empty());
        self.started = if self.buf.is_empty() {
            // Nothing kept between frames: an idle connection holds no buffer.
            self.buf = BytesMut::new();
            None
        } else {
            // The rest of the buffer arrived with the last read.
            Some(self.last_read.unwrap_or_else(Instant::now))
        };
        match cmd {
            Some(cmd) => Ok((cmd, charge)),
            // `frame_len` said the frame was whole; the codec agrees by construction.
            None => Err(RemotingError::Io(std::io::ErrorKind::InvalidData.into())),
        }
    }

    fn timeout_error(&self) -> RemotingError {
        RemotingError::FrameTimeout {
            length: self.codec.frame_len(&self.buf).ok().flatten().unwrap_or(0),
            received: self.buf.len(),
            timeout: self.frame_timeout,
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;
    use crate::codec::FrameLimits;
    use crate::protocol::request_code;

    fn frame(body: usize) -> Vec<u8> {
        let cmd = RemotingCommand::request(request_code::HEART_BEAT)
            .with_body(bytes::Bytes::from(vec![7; body]));
        RemotingCodec::default()
            .encode_to_bytes(&cmd)
            .unwrap()
            .to_vec()
    }

    #[tokio::test]
    async fn frames_are_reserved_until_their_reservation_drops() {
        let (mut tx, rx) = tokio::io::duplex(1 << 20);
        let budget = MemoryBudget::new(1 << 20, 1 << 20);
        let mut reader = FrameReader::new(
            rx,
            RemotingCodec::default(),
            budget.clone(),
            Duration::from_secs(5),
        );
        let mut bytes = frame(10);
        bytes.extend(frame(100_000));
        tx.write_all(&bytes).await.unwrap();
        let (a, ca) = reader.next().await.unwrap().unwrap();
        let (b, cb) = reader.next().await.unwrap().unwrap();
        assert_eq!((a.body.len(), b.body.len()), (10, 100_000));
        assert_eq!(budget.used(), ca.bytes() + cb.bytes());
        assert!(cb.bytes() >= 100_000 + REQUEST_OVERHEAD);
        drop((ca, cb));
        assert_eq!(budget.used(), 0);
        drop(tx);
        assert!(reader.next().await.unwrap().is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn an_unfinished_frame_times_out() {
        let (mut tx, rx) = tokio::io::duplex(1 << 20);
        let mut reader = FrameReader::new(
            rx,
            RemotingCodec::default(),
            MemoryBudget::unlimited(),
            Duration::from_secs(3),
        );
        let bytes = frame(50_000);
        tx.write_all(&bytes[..bytes.len() - 1]).await.unwrap();
        let err = reader.next().await.unwrap_err();
        assert!(
            matches!(err, RemotingError::FrameTimeout { received, .. } if received == bytes.len() - 1),
            "{err}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_frame_waits_for_memory_then_gives_up_at_its_deadline() {
        let (mut tx, rx) = tokio::io::duplex(1 << 20);
        let budget = MemoryBudget::new(64 * 1024, 64 * 1024);
        let mut reader = FrameReader::new(
            rx,
            RemotingCodec::new(FrameLimits::default()),
            budget.clone(),
            Duration::from_secs(3),
        );
        tx.write_all(&frame(40_000)).await.unwrap();
        let held = budget.try_reserve(30_000).unwrap();
        // Room comes back in time: the frame is read.
        let release = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            drop(held);
        });
        let (cmd, charge) = reader.next().await.unwrap().unwrap();
        assert_eq!(cmd.body.len(), 40_000);
        release.await.unwrap();
        drop(charge);
        // It does not: the connection gives up.
        let _held = budget.try_reserve(30_000).unwrap();
        tx.write_all(&frame(40_000)).await.unwrap();
        let err = reader.next().await.unwrap_err();
        assert!(matches!(err, RemotingError::NoMemory { .. }), "{err}");
    }
}
