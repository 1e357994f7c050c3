//! Lets the store's periodic threads sleep and still stop at once.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use vostok_remoting::support::sync::{CondvarExt, MutexExt};

/// Lets periodic threads sleep and still stop at once.
#[derive(Debug, Default)]
pub(crate) struct Stopper {
    stopped: Mutex<bool>,
    cv: Condvar,
}

impl Stopper {
    /// Sleeps up to `d`; `true` if stopped.
    pub(crate) fn wait(&self, d: Duration) -> bool {
        let deadline = Instant::now() + d;
        let mut stopped = self.stopped.locked();
        while !*stopped {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            stopped = self.cv.wait_timeout_locked(stopped, deadline - now);
        }
        true
    }

    pub(crate) fn is_stopped(&self) -> bool {
        *self.stopped.locked()
    }

    pub(crate) fn stop(&self) {
        *self.stopped.locked() = true;
        self.cv.notify_all();
    }
}
