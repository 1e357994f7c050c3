//! Work put off to the end of the unit of work that caused it, on the same thread.
//!
//! A unit is a stretch of work that handles a batch of input in one go: one poll of a
//! connection's reader task (every frame one socket read brought, until the reader
//! would wait for the socket again), one pass of the store's dispatcher. What [`defer`]
//! is given during a unit runs once the unit ends, in the order given, before the
//! thread moves on. The broker answers held pulls this way: the first message of a
//! producer's burst releases the pull, and the pull's answer, built after the whole
//! burst was handled, carries all of it.
//!
//! Units do not nest: a unit begun inside another is part of the outer one.

use std::cell::RefCell;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::pin;

/// Work given to [`defer`].
pub type Deferred = Box<dyn FnOnce()>;

thread_local! {
    /// The work deferred by the unit running on this thread; `None` outside units.
    static DEFERRED: RefCell<Option<Vec<Deferred>>> = const { RefCell::new(None) };
}

/// Ends the unit it began: takes its deferred work, and leaves the thread outside a
/// unit, even when the unit panicked (its work is then dropped, not run).
struct Begun;

impl Drop for Begun {
    fn drop(&mut self) {
        let _ = DEFERRED.with(|d| d.borrow_mut().take());
    }
}

/// Runs `f` as a unit: what it defers runs when it returns (and what that defers, runs
/// at once). Inside a unit already, just runs `f`. A deferred work that panics is
/// logged and the rest still run.
pub fn unit<R>(f: impl FnOnce() -> R) -> R {
    let outer = DEFERRED.with(|d| {
        let mut d = d.borrow_mut();
        if d.is_some() {
            return true;
        }
        *d = Some(Vec::new());
        false
    });
    if outer {
        return f();
    }
    let begun = Begun;
    let result = f();
    let work = DEFERRED.with(|d| d.borrow_mut().take()).unwrap_or_default();
    drop(begun);
    for w in work {
        // As a request's processing is: a panic ends that work, not the unit's thread
        // or task (a connection's reader, the dispatcher).
        if std::panic::catch_unwind(AssertUnwindSafe(w)).is_err() {
            tracing::warn!("deferred work panicked");
        }
    }
    result
}

/// Whether a unit is running on this thread: what [`defer`] would take now. For a
/// caller that would build its work only to have it given back.
pub fn in_unit() -> bool {
    DEFERRED.with(|d| d.borrow().is_some())
}

/// Puts `work` off to the end of the unit running on this thread; gives it back when
/// none is.
pub fn defer(work: Deferred) -> Result<(), Deferred> {
    DEFERRED.with(|d| match d.borrow_mut().as_mut() {
        Some(queue) => {
            queue.push(work);
            Ok(())
        }
        None => Err(work),
    })
}

/// `fut`, with each of its polls a unit.
pub async fn polled_as_units<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    std::future::poll_fn(|cx| unit(|| fut.as_mut().poll(cx))).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    /// Defers `work`, in a unit.
    fn put(work: Deferred) {
        assert!(defer(work).is_ok(), "in a unit");
    }

    fn log() -> (
        Rc<RefCell<Vec<&'static str>>>,
        impl Fn(&'static str) -> Deferred,
    ) {
        let log = Rc::new(RefCell::new(Vec::new()));
        let l = log.clone();
        (log, move |what| {
            let l = l.clone();
            Box::new(move || l.borrow_mut().push(what)) as Deferred
        })
    }

    #[test]
    fn deferred_work_runs_at_the_end_of_the_outermost_unit_in_order() {
        let (log, note) = log();
        assert!(!in_unit());
        assert!(defer(note("outside")).is_err(), "no unit, given back");
        unit(|| {
            assert!(in_unit());
            put(note("a"));
            unit(|| put(note("b")));
            assert!(
                log.borrow().is_empty(),
                "an inner unit is part of the outer"
            );
            log.borrow_mut().push("body");
        });
        assert_eq!(*log.borrow(), ["body", "a", "b"]);
        assert!(defer(note("after")).is_err(), "the unit ended");
    }

    #[test]
    fn work_deferred_by_deferred_work_runs_at_once() {
        let (log, note) = log();
        let again = note("again");
        let l = log.clone();
        unit(|| {
            put(Box::new(move || {
                l.borrow_mut().push("first");
                if let Err(w) = defer(again) {
                    w();
                }
            }));
        });
        assert_eq!(*log.borrow(), ["first", "again"]);
    }

    #[test]
    fn a_panicking_unit_drops_its_work_and_leaves_the_thread_outside_units() {
        let (log, note) = log();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            unit(|| {
                put(note("dropped"));
                panic!("in the unit");
            })
        }));
        assert!(r.is_err());
        assert!(log.borrow().is_empty());
        assert!(!in_unit());
        assert!(defer(note("outside")).is_err());
    }

    #[test]
    fn a_panicking_deferred_work_does_not_stop_the_others() {
        let (log, note) = log();
        unit(|| {
            put(Box::new(|| panic!("deferred")));
            put(note("after"));
        });
        assert_eq!(*log.borrow(), ["after"]);
    }

    #[tokio::test]
    async fn each_poll_of_a_future_is_a_unit() {
        let (log, note) = log();
        let (first, second) = (note("first poll"), note("second poll"));
        let l = log.clone();
        polled_as_units(async move {
            put(first);
            tokio::task::yield_now().await;
            assert_eq!(*l.borrow(), ["first poll"], "ran when the first poll ended");
            put(second);
        })
        .await;
        assert_eq!(*log.borrow(), ["first poll", "second poll"]);
    }
}
