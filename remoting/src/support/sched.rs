//! Scheduling hints for the servers' own threads (Linux; no-ops elsewhere).
//!
//! On a machine with few cores, housekeeping that runs for tens of milliseconds at a
//! stretch (pre-faulting commitlog pages, flushing consume queues and the index,
//! creating files) holds a core while a thread that serves messages is ready to run:
//! measured at 50,000 msg/s on 2 cores, the store's dispatcher sat runnable for up to
//! 30 ms behind the pre-fault and file-creation threads (deploy/bench/README.md,
//! "The read-ahead stalls"). Those threads therefore run at a lower
//! priority: they still get every idle cycle and a share of a busy machine, so they
//! keep up, but whoever serves messages goes first.

/// How much nicer than the process background threads run: at nice 10 a thread
/// weighs 110 against 1,024 for nice 0, so under contention it still gets about a
/// tenth of a core's time.
pub const BACKGROUND_NICE: i32 = 10;

/// Lowers the calling thread's priority by [`BACKGROUND_NICE`] (at most to 19, and
/// relative to what the process was started with). Lowering needs no privilege; a
/// failure only leaves the thread at its priority, so it is ignored.
pub fn background() {
    #[cfg(target_os = "linux")]
    {
        let tid = this_thread();
        // SAFETY: getpriority/setpriority on our own thread id (a Linux thread is a
        // PRIO_PROCESS target) read and change only this thread.
        unsafe {
            let now = libc::getpriority(libc::PRIO_PROCESS, tid);
            let _ = libc::setpriority(libc::PRIO_PROCESS, tid, (now + BACKGROUND_NICE).min(19));
        }
    }
}

#[cfg(target_os = "linux")]
fn this_thread() -> libc::id_t {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as libc::id_t }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn nice_of_this_thread() -> i32 {
        // SAFETY: as in `background`.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, this_thread()) }
    }

    #[test]
    fn background_lowers_only_the_calling_thread() {
        let before = nice_of_this_thread();
        let lowered = std::thread::spawn(|| {
            background();
            nice_of_this_thread()
        })
        .join()
        .unwrap();
        assert_eq!(lowered, (before + BACKGROUND_NICE).min(19));
        assert_eq!(
            nice_of_this_thread(),
            before,
            "only the calling thread changes"
        );
    }
}
