//! The writing side of a connection: queued frames go to the socket in batches.
//!
//! Heads and small bodies are copied into one buffer; a larger body (a pull response,
//! a batch) is handed to the kernel where it lies, as its own slice of one `writev`,
//! so the bytes of a big frame are copied once (into the socket), not three times.

use std::io::{self, IoSlice};

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncWrite, AsyncWriteExt};

use crate::codec::Frame;

/// A batch is written once it holds this many bytes (or the queue is empty).
pub(crate) const WRITE_BATCH_BYTES: usize = 256 * 1024;

/// Bodies up to this size are copied next to their head: below it one more slice
/// costs the kernel about what the copy costs here.
const INLINE_BODY_BYTES: usize = 2048;

/// Slices per `writev` (Linux allows 1,024).
const MAX_SLICES: usize = 512;

/// Frames gathered for one write.
#[derive(Default)]
pub(crate) struct WriteBatch {
    /// Copied bytes not yet sealed into `pieces`.
    buf: BytesMut,
    /// What goes to the socket, in order.
    pieces: Vec<Bytes>,
    bytes: usize,
}

impl WriteBatch {
    pub(crate) fn push(&mut self, frame: &Frame) {
        self.bytes += frame.len();
        self.buf.extend_from_slice(&frame.head);
        if frame.body.len() <= INLINE_BODY_BYTES {
            self.buf.extend_from_slice(&frame.body);
        } else {
            self.seal();
            self.pieces.push(frame.body.clone());
        }
    }

    /// Whether another frame may join before the batch is written.
    pub(crate) fn has_room(&self) -> bool {
        self.bytes < WRITE_BATCH_BYTES && self.pieces.len() < MAX_SLICES
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    fn seal(&mut self) {
        if !self.buf.is_empty() {
            self.pieces.push(self.buf.split().freeze());
        }
    }

    /// Writes the whole batch and empties it.
    pub(crate) async fn write_to<W: AsyncWrite + Unpin>(&mut self, wr: &mut W) -> io::Result<()> {
        self.seal();
        let result = write_all_vectored(wr, &mut self.pieces).await;
        self.pieces.clear();
        self.bytes = 0;
        if self.buf.capacity() > 4 * WRITE_BATCH_BYTES {
            self.buf = BytesMut::new();
        }
        result
    }
}

/// `write_all` over several buffers, resuming after partial writes.
async fn write_all_vectored<W: AsyncWrite + Unpin>(
    wr: &mut W,
    pieces: &mut [Bytes],
) -> io::Result<()> {
    let mut next = 0;
    while next < pieces.len() {
        if pieces.len() - next == 1 {
            return wr.write_all(&pieces[next]).await;
        }
        let slices: Vec<IoSlice<'_>> = pieces[next..]
            .iter()
            .take(MAX_SLICES)
            .map(|p| IoSlice::new(p))
            .collect();
        let mut written = wr.write_vectored(&slices).await?;
        if written == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        while written > 0 {
            let piece = &mut pieces[next];
            if written >= piece.len() {
                written -= piece.len();
                next += 1;
            } else {
                piece.advance(written);
                written = 0;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// Accepts at most `step` bytes per call, to exercise partial writes.
    struct Trickle {
        out: Vec<u8>,
        step: usize,
    }

    impl AsyncWrite for Trickle {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let n = buf.len().min(self.step);
            self.out.extend_from_slice(&buf[..n]);
            Poll::Ready(Ok(n))
        }

        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            let mut left = self.step;
            let mut n = 0;
            for b in bufs {
                let take = b.len().min(left);
                self.out.extend_from_slice(&b[..take]);
                n += take;
                left -= take;
                if left == 0 {
                    break;
                }
            }
            Poll::Ready(Ok(n))
        }

        fn is_write_vectored(&self) -> bool {
            true
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    fn frame(head: &[u8], body_len: usize, fill: u8) -> Frame {
        Frame {
            head: head.to_vec(),
            body: Bytes::from(vec![fill; body_len]),
        }
    }

    #[tokio::test]
    async fn frames_reach_the_socket_in_order_through_partial_writes() {
        let frames = vec![
            frame(b"h1", 10, 1),
            frame(b"h2", 5000, 2),
            frame(b"h3", 0, 0),
            frame(b"h4", 3000, 4),
            frame(b"h5", 7, 5),
        ];
        let mut expected = Vec::new();
        for f in &frames {
            expected.extend_from_slice(&f.head);
            expected.extend_from_slice(&f.body);
        }
        for step in [1, 3, 1000, 4096, usize::MAX] {
            let mut batch = WriteBatch::default();
            for f in &frames {
                batch.push(f);
            }
            assert!(!batch.is_empty());
            let mut sink = Trickle {
                out: Vec::new(),
                step,
            };
            batch.write_to(&mut sink).await.unwrap();
            assert_eq!(sink.out, expected, "step {step}");
            assert!(batch.is_empty());
        }
    }

    #[test]
    fn a_batch_is_bounded_in_bytes_and_slices() {
        let mut batch = WriteBatch::default();
        while batch.has_room() {
            batch.push(&frame(b"h", 4096, 9));
        }
        assert!(batch.bytes >= WRITE_BATCH_BYTES);
        let mut batch = WriteBatch::default();
        let mut n = 0;
        while batch.has_room() {
            batch.push(&frame(b"", INLINE_BODY_BYTES + 1, 9));
            n += 1;
        }
        assert!(n <= MAX_SLICES, "{n} frames");
    }
}
