//! The handshake between the commitlog's writer and the pre-fault thread, which
//! writes zeros over pages ahead of it (`prefault`): zeros must never land on bytes
//! the writer has written or is writing.
//!
//! * The writer publishes how far it is about to write ([`ZeroFence::announce`]),
//!   then waits while a chunk starting before that end is being zero-filled.
//! * The thread publishes where the chunk it is about to fill starts
//!   ([`ZeroFence::fill_if_clear`]), then reads how far the writer is about to write,
//!   and fills the chunk only if that end is at least a margin before it.
//!
//! Both sides publish before they read, all sequentially consistent, so at least one
//! of them sees the other: either the thread sees the writer's end and leaves the
//! chunk alone, or the writer sees the chunk and waits for it.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// What `zeroing` holds while no chunk is being filled.
const NONE: i64 = i64::MAX;

pub(crate) struct ZeroFence {
    /// How far the writer is about to write (or has written).
    writing_to: AtomicI64,
    /// Where the chunk being zero-filled starts; [`NONE`] when none is.
    zeroing: AtomicI64,
}

impl ZeroFence {
    pub(crate) fn new() -> Self {
        ZeroFence {
            writing_to: AtomicI64::new(0),
            zeroing: AtomicI64::new(NONE),
        }
    }

    /// The writer, before it writes bytes up to `end`. The wait, rare (the thread
    /// works ahead of the writer), lasts one chunk's zeros; a long one (the chunk's
    /// write held up by the kernel's dirty-page throttling) sleeps rather than spins.
    pub(crate) fn announce(&self, end: i64) {
        self.writing_to.store(end, Ordering::SeqCst);
        let mut spins = 0u32;
        while self.zeroing.load(Ordering::SeqCst) < end {
            spins += 1;
            if spins < 64 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    }

    /// Where writing stands once nothing is being written (after recovery, or a
    /// replica's truncation): `end`, possibly below what was announced before.
    pub(crate) fn reset(&self, end: i64) {
        self.writing_to.store(end, Ordering::SeqCst);
    }

    /// How far the writer last announced.
    pub(crate) fn announced(&self) -> i64 {
        self.writing_to.load(Ordering::SeqCst)
    }

    /// Runs `fill` (the zeros for a chunk starting at `start`) if the writer's
    /// announced end is at least `margin` before `start`, with every writer that would
    /// write past `start` held until it returns; `None` without running it otherwise.
    pub(crate) fn fill_if_clear<T>(
        &self,
        start: i64,
        margin: i64,
        fill: impl FnOnce() -> T,
    ) -> Option<T> {
        let _filling = Filling::start(&self.zeroing, start);
        if self
            .writing_to
            .load(Ordering::SeqCst)
            .saturating_add(margin)
            > start
        {
            return None;
        }
        Some(fill())
    }
}

/// A chunk being filled: published while alive, cleared when dropped, even by a
/// panic, so that no writer waits for a chunk nobody fills.
struct Filling<'a>(&'a AtomicI64);

impl<'a> Filling<'a> {
    fn start(zeroing: &'a AtomicI64, start: i64) -> Self {
        zeroing.store(start, Ordering::SeqCst);
        Filling(zeroing)
    }
}

impl Drop for Filling<'_> {
    fn drop(&mut self) {
        self.0.store(NONE, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::{mpsc, Arc};

    use super::*;

    const MARGIN: i64 = 1 << 20;

    #[test]
    fn a_chunk_near_the_writer_is_left_alone() {
        let fence = ZeroFence::new();
        fence.announce(5 << 20);
        assert_eq!(fence.fill_if_clear((6 << 20) - 1, MARGIN, || ()), None);
        assert_eq!(fence.fill_if_clear(6 << 20, MARGIN, || 7), Some(7));
        // After a truncation the writer's end may go back.
        fence.reset(1 << 20);
        assert_eq!(fence.announced(), 1 << 20);
        assert_eq!(fence.fill_if_clear(2 << 20, MARGIN, || 8), Some(8));
    }

    /// The writer comes within reach of a chunk while it is being filled: it must not
    /// go on before the chunk's zeros are written, else they would land on its bytes.
    #[test]
    fn a_writer_waits_for_the_chunk_it_would_write_into() {
        let fence = Arc::new(ZeroFence::new());
        let filled = Arc::new(AtomicBool::new(false));
        let (started_tx, started) = mpsc::channel();
        let (release, release_rx) = mpsc::channel::<()>();
        let filler = {
            let (fence, filled) = (fence.clone(), filled.clone());
            std::thread::spawn(move || {
                fence.fill_if_clear(4 << 20, MARGIN, || {
                    started_tx.send(()).unwrap();
                    release_rx.recv().unwrap();
                    filled.store(true, Ordering::SeqCst);
                })
            })
        };
        started.recv().unwrap();
        let (returned_tx, returned) = mpsc::channel();
        let writer = {
            let (fence, filled) = (fence.clone(), filled.clone());
            std::thread::spawn(move || {
                fence.announce((4 << 20) + 100);
                returned_tx.send(filled.load(Ordering::SeqCst)).unwrap();
            })
        };
        assert!(
            returned.recv_timeout(Duration::from_millis(100)).is_err(),
            "the writer went on while the chunk was being filled"
        );
        release.send(()).unwrap();
        assert!(returned.recv().unwrap(), "the zeros were written first");
        assert_eq!(filler.join().unwrap(), Some(()));
        writer.join().unwrap();
        // A writer below the chunk's start never waits.
        fence.announce(1 << 20);
    }

    #[test]
    fn a_panicking_fill_does_not_hold_writers_back() {
        let fence = ZeroFence::new();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            fence.fill_if_clear(4 << 20, MARGIN, || panic!("fill"))
        }));
        assert!(caught.is_err());
        fence.announce(8 << 20);
    }
}
