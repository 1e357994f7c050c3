//! What the dispatcher publishes and how it is woken (RocketMQ `ReputMessageService`'s
//! fields): how far consume queues and index are built, the arrival listener, and the
//! handshake that lets an append skip the wake-up while the dispatcher is busy.
//!
//! The dispatcher itself is `dispatch`; this state sits a floor below it so that the
//! shared store state can own it.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

use vostok_remoting::support::sync::{CondvarExt, MutexExt, RwLockExt};

use crate::message::MessageArrivingListener;

#[derive(Default)]
pub(crate) struct DispatchState {
    /// Commitlog offset up to which records are dispatched.
    reput_from: AtomicI64,
    /// Store timestamp of the newest dispatched record.
    pub(crate) dispatched_timestamp: AtomicI64,
    thread: OnceLock<Thread>,
    /// Set while the dispatcher has caught up and sleeps until woken: only then does an
    /// append unpark it (the first append to see it set clears it, so one pays).
    pub(crate) idle: AtomicBool,
    /// How often the dispatcher slept on a timer instead of until an append woke it
    /// (retries after an error or an unreadable position).
    pub(crate) timed_waits: AtomicU64,
    /// Held by whoever dispatches: the dispatcher thread, or a writer dispatching its
    /// own small append.
    pub(crate) running: Mutex<()>,
    pub(crate) stop: AtomicBool,
    pub(crate) listener: RwLock<Option<Arc<dyn MessageArrivingListener>>>,
    /// Threads inside `wait_for`: only with one does `announce` notify, since a
    /// notification is a system call even when nobody waits, and `announce` runs after
    /// every dispatch pass (once per single send).
    waiters: Mutex<usize>,
    progressed: Condvar,
}

impl DispatchState {
    pub(crate) fn reput_from(&self) -> i64 {
        self.reput_from.load(Ordering::Acquire)
    }

    pub(crate) fn set_reput_from(&self, offset: i64) {
        self.reput_from.store(offset, Ordering::Release);
    }

    pub(crate) fn dispatched_timestamp(&self) -> i64 {
        self.dispatched_timestamp.load(Ordering::Acquire)
    }

    pub(crate) fn set_listener(&self, listener: Arc<dyn MessageArrivingListener>) {
        *self.listener.write_locked() = Some(listener);
    }

    pub(crate) fn set_thread(&self, t: Thread) -> bool {
        self.thread.set(t).is_ok()
    }

    /// Wakes the dispatcher thread; called after every append, once the new max offset
    /// is published. While the dispatcher is still working it finds the records itself,
    /// and the append costs a fence and a load; only when it parked does one append
    /// unpark it.
    pub(crate) fn wake(&self) {
        // Pairs with the fence in `dispatch::run`: either the dispatcher sees the new records after
        // announcing it is idle, or this sees `idle` and unparks it.
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.idle.load(Ordering::SeqCst) && self.idle.swap(false, Ordering::SeqCst) {
            self.unpark();
        }
    }

    pub(crate) fn timed_wait(&self, timeout: Duration) {
        self.timed_waits.fetch_add(1, Ordering::Relaxed);
        std::thread::park_timeout(timeout);
    }

    fn unpark(&self) {
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }

    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.unpark();
    }

    /// Wakes the threads in `wait_for` after the reput offset moved.
    pub(crate) fn announce(&self) {
        // A waiter checks the reput offset under this lock before it waits, so it either
        // saw the new offset or is counted here.
        let waiting = *self.waiters.locked() > 0;
        if waiting {
            self.progressed.notify_all();
        }
    }

    /// Waits until everything below `offset` is dispatched; `false` on timeout.
    pub(crate) fn wait_for(&self, offset: i64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut p = self.waiters.locked();
        *p += 1;
        let reached = loop {
            if self.reput_from() >= offset {
                break true;
            }
            let now = Instant::now();
            if now >= deadline {
                break false;
            }
            p = self.progressed.wait_timeout_locked(p, deadline - now);
        };
        *p -= 1;
        reached
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread in `wait_for` is woken by the announcement of the offset it waits for,
    /// and leaves no waiter counted behind (later announcements notify nobody). Its own
    /// timeout is an hour, so only a notification can end its wait within the test's.
    #[test]
    fn announce_wakes_a_waiter() {
        let state = Arc::new(DispatchState::default());
        let (done, woken) = std::sync::mpsc::channel();
        {
            let state = state.clone();
            std::thread::spawn(move || {
                let _ = done.send(state.wait_for(100, Duration::from_secs(3600)));
            });
        }
        // Once it is counted it holds the lock until it waits, so the one announcement
        // below comes after it started waiting and must wake it.
        while *state.waiters.locked() == 0 {
            std::thread::yield_now();
        }
        state.set_reput_from(100);
        state.announce();
        let reached = woken.recv_timeout(Duration::from_secs(30));
        assert_eq!(
            reached,
            Ok(true),
            "the waiter was not woken by the announcement"
        );
        assert_eq!(*state.waiters.locked(), 0);
        // Already reached: no wait at all.
        assert!(state.wait_for(50, Duration::ZERO));
    }
}
