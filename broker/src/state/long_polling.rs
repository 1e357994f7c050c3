//! Long polling (`PullRequestHoldService`): a pull that finds no new message waits here
//! until a message for its queue is dispatched or its suspend time runs out, then the
//! broker runs the pull again. Wake-ups come from the store's dispatcher through
//! [`LongPolling::notify`].
//!
//! A held pull waits in one of two ways. [`LongPolling::hold`] parks the caller's task
//! until the notification (gRPC's pulls). [`LongPolling::hold_answer`] keeps no task
//! at all: it registers what answers the pull, and the notification runs it where the
//! message arrives (at the end of the unit of work that dispatched it: the reader's
//! poll that handled the sender's frames, or the dispatcher's pass; see
//! [`vostok_remoting::support::defer`]), so a held remoting pull costs no task spawn,
//! no task wake-up and no timer per pull, and its answer carries every message of the
//! burst that released it. On the e2e row at 10,000 msg/s those were about a quarter
//! of the broker's CPU (deploy/bench/README.md#where-the-e2e-rows-cpu-goes-at-10000-msgs).
//! Their suspend times are kept by one sweeper task ([`LongPolling::sweep`]) that looks
//! every [`SWEEP_TICK`] while any such pull is held and sleeps otherwise.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, Notify};
use vostok_remoting::support::defer;
use vostok_remoting::support::sync::MutexExt;

/// What answers a pull held by [`LongPolling::hold_answer`]. Called once, with `true`
/// by the notification of the message it waited for (it may run the pull right there,
/// on the thread that dispatched the message), with `false` when it should hand the
/// pull to a task instead: the other pulls the same message satisfies (so that one
/// arrival never runs many pulls in a row before the sender is answered), a suspend
/// time that ran out, a shutdown.
pub type Answer = Box<dyn FnOnce(bool) + Send>;

/// How often the sweeper looks for held answers past their suspend time, while there
/// are any: the precision of their timeout (a pull asks 15–30 s; short polling 1 s).
pub const SWEEP_TICK: Duration = Duration::from_millis(100);

/// At most this many pulls wait as answers at once; more are refused by
/// [`LongPolling::hold_answer`] (the caller holds them on its task, where the
/// connection's in-flight bound counts them). An answer holds no request permit of
/// its connection, so this is what bounds the memory a flood of pulls can keep.
pub const MAX_ANSWERS: usize = 16_384;

enum Wake {
    /// The task in [`LongPolling::hold`].
    Task(oneshot::Sender<()>),
    /// [`LongPolling::hold_answer`]: run at the notification, or by the sweeper at
    /// `deadline`; dropped unrun when connection `channel` closes.
    Answer {
        answer: Answer,
        deadline: Instant,
        channel: u64,
    },
}

struct Held {
    id: u64,
    /// Wake when the queue's max offset passes this (the pull's offset).
    offset: i64,
    /// Tag codes the pull accepts; `None` accepts every message.
    tag_codes: Option<BTreeSet<i32>>,
    waker: Wake,
}

struct Registered<'a> {
    polling: &'a LongPolling,
    topic: &'a str,
    queue_id: i32,
    id: u64,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.polling.forget(self.topic, self.queue_id, self.id);
    }
}

#[derive(Default)]
pub struct LongPolling {
    /// topic → queue id → held pulls.
    table: Mutex<HashMap<String, HashMap<i32, Vec<Held>>>>,
    next_id: AtomicU64,
    shut_down: AtomicBool,
    /// Held answers in the table (changed under its lock).
    answers: AtomicUsize,
    /// Set by the sweeper before it sleeps for want of answers; the first answer
    /// held after that clears it and wakes the sweeper.
    sweeper_idle: AtomicBool,
    sweeper_wake: Notify,
    sweeper_started: AtomicBool,
}

impl LongPolling {
    pub fn new() -> Self {
        Self::default()
    }

    /// Waits until a message at or beyond `offset` arrives in the queue (matching
    /// `tag_codes`), `timeout` passes, or the broker shuts down. `max_offset` is read once
    /// after registering, so a message that arrived meanwhile is not missed.
    pub async fn hold(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        tag_codes: Option<BTreeSet<i32>>,
        timeout: Duration,
        max_offset: impl FnOnce() -> i64,
    ) {
        if self.shut_down.load(Ordering::Acquire) {
            return;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut table = self.table.locked();
            table
                .entry(topic.to_owned())
                .or_default()
                .entry(queue_id)
                .or_default()
                .push(Held {
                    id,
                    offset,
                    tag_codes,
                    waker: Wake::Task(tx),
                });
        }
        // Unregisters however the wait ends, dropped (the connection closed) included.
        let _registered = Registered {
            polling: self,
            topic,
            queue_id,
            id,
        };
        if max_offset() <= offset && !self.shut_down.load(Ordering::Acquire) {
            let _ = tokio::time::timeout(timeout, rx).await;
        }
    }

    /// Holds a pull as `answer`, run once a message at or beyond `offset` arrives in
    /// the queue (matching `tag_codes`), `timeout` passes (give or take [`SWEEP_TICK`]),
    /// or the broker shuts down; no task waits for it. Gives `answer` back, for the
    /// caller to answer now, when `max_offset` (read once after registering) shows a
    /// message that arrived meanwhile, or when the broker is shutting down; `Err` gives
    /// it back untouched when [`MAX_ANSWERS`] are already held. Someone must run
    /// [`Self::sweep`] (see [`Self::start_sweeper`]) for the timeouts to fire, and
    /// call [`Self::forget_channel`] when the pull's connection (`channel`, its id)
    /// closes.
    #[allow(clippy::too_many_arguments)]
    pub fn hold_answer(
        &self,
        channel: u64,
        topic: &str,
        queue_id: i32,
        offset: i64,
        tag_codes: Option<BTreeSet<i32>>,
        timeout: Duration,
        max_offset: impl FnOnce() -> i64,
        answer: Answer,
    ) -> Result<Option<Answer>, Answer> {
        if self.shut_down.load(Ordering::Acquire) {
            return Ok(Some(answer));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        {
            let mut table = self.table.locked();
            if self.answers.load(Ordering::Relaxed) >= MAX_ANSWERS {
                return Err(answer);
            }
            self.answers.fetch_add(1, Ordering::Relaxed);
            table
                .entry(topic.to_owned())
                .or_default()
                .entry(queue_id)
                .or_default()
                .push(Held {
                    id,
                    offset,
                    tag_codes,
                    waker: Wake::Answer {
                        answer,
                        deadline: Instant::now() + timeout,
                        channel,
                    },
                });
        }
        // Pairs with the sweeper's fence: it either sees this answer counted or is
        // seen idle here.
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.sweeper_idle.load(Ordering::SeqCst)
            && self.sweeper_idle.swap(false, Ordering::SeqCst)
        {
            self.sweeper_wake.notify_one();
        }
        if max_offset() <= offset && !self.shut_down.load(Ordering::Acquire) {
            return Ok(None);
        }
        // Arrived meanwhile: take it back unless a notification already ran it.
        match self.take(topic, queue_id, id) {
            Some(Wake::Answer { answer, .. }) => Ok(Some(answer)),
            _ => Ok(None),
        }
    }

    /// True the first time only: the caller then runs [`Self::sweep`] on a task.
    pub fn start_sweeper(&self) -> bool {
        // Read first: every held pull asks, and only the first writes.
        !self.sweeper_started.load(Ordering::Acquire)
            && !self.sweeper_started.swap(true, Ordering::AcqRel)
    }

    /// Answers the held answers whose suspend time ran out, every [`SWEEP_TICK`] while
    /// there are any; sleeps while there are none, until one is held. Returns once the
    /// broker shuts down.
    pub async fn sweep(&self) {
        loop {
            if self.shut_down.load(Ordering::Acquire) {
                return;
            }
            if self.answers.load(Ordering::SeqCst) == 0 {
                self.sweeper_idle.store(true, Ordering::SeqCst);
                std::sync::atomic::fence(Ordering::SeqCst);
                if self.answers.load(Ordering::SeqCst) == 0
                    && !self.shut_down.load(Ordering::Acquire)
                {
                    // A wake-up given before this point is kept by `Notify`.
                    self.sweeper_wake.notified().await;
                }
                self.sweeper_idle.store(false, Ordering::SeqCst);
                continue;
            }
            tokio::time::sleep(SWEEP_TICK).await;
            for answer in self.expired(Instant::now()) {
                answer(false);
            }
        }
    }

    /// Takes the held answers whose deadline is at or before `now`.
    fn expired(&self, now: Instant) -> Vec<Answer> {
        let mut expired = Vec::new();
        let mut table = self.table.locked();
        for queues in table.values_mut() {
            for held in queues.values_mut() {
                let mut i = 0;
                while i < held.len() {
                    match &held[i].waker {
                        Wake::Answer { deadline, .. } if *deadline <= now => {
                            if let Wake::Answer { answer, .. } = held.swap_remove(i).waker {
                                expired.push(answer);
                            }
                        }
                        _ => i += 1,
                    }
                }
            }
            queues.retain(|_, held| !held.is_empty());
        }
        table.retain(|_, queues| !queues.is_empty());
        self.answers.fetch_sub(expired.len(), Ordering::Relaxed);
        expired
    }

    /// Drops the held answers of a connection that closed: nobody reads their answer,
    /// and they would otherwise wait for a message or their suspend time (as a held
    /// task stops waiting when its connection closes).
    pub fn forget_channel(&self, channel: u64) {
        let mut dropped = Vec::new();
        let mut table = self.table.locked();
        for queues in table.values_mut() {
            for held in queues.values_mut() {
                let mut i = 0;
                while i < held.len() {
                    match &held[i].waker {
                        Wake::Answer { channel: c, .. } if *c == channel => {
                            dropped.push(held.swap_remove(i));
                        }
                        _ => i += 1,
                    }
                }
            }
            queues.retain(|_, held| !held.is_empty());
        }
        table.retain(|_, queues| !queues.is_empty());
        self.answers.fetch_sub(dropped.len(), Ordering::Relaxed);
        drop(table);
        // Their closures (and what they hold) are dropped outside the lock.
        drop(dropped);
    }

    /// Removes the held pull `id`, returning how it was to be woken.
    fn take(&self, topic: &str, queue_id: i32, id: u64) -> Option<Wake> {
        let mut table = self.table.locked();
        let queues = table.get_mut(topic)?;
        let held = queues.get_mut(&queue_id)?;
        let i = held.iter().position(|h| h.id == id)?;
        let taken = held.swap_remove(i).waker;
        if held.is_empty() {
            queues.remove(&queue_id);
        }
        if queues.is_empty() {
            table.remove(topic);
        }
        if matches!(taken, Wake::Answer { .. }) {
            self.answers.fetch_sub(1, Ordering::Relaxed);
        }
        Some(taken)
    }

    fn forget(&self, topic: &str, queue_id: i32, id: u64) {
        let _ = self.take(topic, queue_id, id);
    }

    /// A message with `tags_code` was dispatched, making the queue's max offset
    /// `max_offset` (its queue offset + 1): wake the pulls it satisfies.
    ///
    /// Held answers run after the table's lock is released: the first one here, on the
    /// caller's thread, the others told to go to a task (see [`Answer`]). Inside a
    /// [unit](vostok_remoting::support::defer) they run when it ends, so that a pull
    /// released by the first message of a burst is answered with the whole burst.
    pub fn notify(&self, topic: &str, queue_id: i32, max_offset: i64, tags_code: i64) {
        let mut answers = Vec::new();
        {
            let mut table = self.table.locked();
            let Some(held) = table.get_mut(topic).and_then(|q| q.get_mut(&queue_id)) else {
                return;
            };
            let mut i = 0;
            while i < held.len() {
                let h = &held[i];
                let arrived = max_offset > h.offset;
                let matches = h
                    .tag_codes
                    .as_ref()
                    .is_none_or(|codes| codes.contains(&(tags_code as i32)));
                if arrived && matches {
                    match held.swap_remove(i).waker {
                        Wake::Task(tx) => {
                            let _ = tx.send(());
                        }
                        Wake::Answer { answer, .. } => answers.push(answer),
                    }
                } else {
                    i += 1;
                }
            }
            self.answers.fetch_sub(answers.len(), Ordering::Relaxed);
        }
        if answers.is_empty() {
            return;
        }
        let run = move || {
            for (i, answer) in answers.into_iter().enumerate() {
                answer(i == 0);
            }
        };
        // In a unit (the reader's poll that handles the sender's frames, a dispatcher
        // pass), the answers run when it ends: the rest of the burst this message
        // came with is in the queue by then, and goes in the same response.
        if let Err(run) = defer::defer(Box::new(run)) {
            run();
        }
    }

    /// Releases every held pull (shutdown): they answer with what they have.
    pub fn wake_all(&self) {
        self.shut_down.store(true, Ordering::Release);
        let drained: Vec<_> = self.table.locked().drain().collect();
        self.sweeper_wake.notify_one();
        for (_, queues) in drained {
            for (_, held) in queues {
                for h in held {
                    match h.waker {
                        Wake::Task(tx) => {
                            let _ = tx.send(());
                        }
                        Wake::Answer { answer, .. } => {
                            self.answers.fetch_sub(1, Ordering::Relaxed);
                            answer(false);
                        }
                    }
                }
            }
        }
    }

    /// Number of pulls waiting (for runtime info).
    pub fn held_count(&self) -> usize {
        self.table
            .locked()
            .values()
            .flat_map(|q| q.values())
            .map(Vec::len)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Instant;

    #[tokio::test]
    async fn wakes_on_arrival_and_respects_tags() {
        let lp = Arc::new(LongPolling::new());
        let waiter = {
            let lp = lp.clone();
            tokio::spawn(async move {
                let start = Instant::now();
                lp.hold(
                    "T",
                    0,
                    5,
                    Some(BTreeSet::from([7])),
                    Duration::from_secs(10),
                    || 5,
                )
                .await;
                start.elapsed()
            })
        };
        while lp.held_count() == 0 {
            tokio::task::yield_now().await;
        }
        lp.notify("T", 1, 6, 7); // other queue
        lp.notify("T", 0, 5, 7); // the message before the awaited offset
        lp.notify("T", 0, 6, 8); // tag does not match
        assert_eq!(lp.held_count(), 1);
        lp.notify("T", 0, 6, 7);
        let waited = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
        assert!(waited < Duration::from_secs(5));
        assert_eq!(lp.held_count(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn does_not_wait_when_a_message_arrived_before_registration() {
        let lp = LongPolling::new();
        let start = tokio::time::Instant::now();
        lp.hold("T", 0, 5, None, Duration::from_secs(10), || 6)
            .await;
        // Paused time only moves when everything waits: a hold would have moved it.
        assert_eq!(start.elapsed(), Duration::ZERO);
    }

    #[tokio::test]
    async fn a_dropped_wait_unregisters() {
        let lp = LongPolling::new();
        let wait = lp.hold("T", 0, 5, None, Duration::from_secs(10), || 5);
        let _ = tokio::time::timeout(Duration::from_millis(10), wait).await;
        assert_eq!(lp.held_count(), 0);
    }

    /// An answer that reports, with its `here` flag, on `tx`.
    fn answer(tx: &std::sync::mpsc::Sender<(u32, bool)>, n: u32) -> Answer {
        let tx = tx.clone();
        Box::new(move |here| {
            let _ = tx.send((n, here));
        })
    }

    /// Holds `answer` for connection `channel` on queue 0 of `T` from offset 5, the
    /// queue's max offset then read as `max_offset`.
    fn hold(
        lp: &LongPolling,
        channel: u64,
        tags: Option<BTreeSet<i32>>,
        timeout: Duration,
        max_offset: i64,
        answer: Answer,
    ) -> Result<Option<Answer>, Answer> {
        lp.hold_answer(channel, "T", 0, 5, tags, timeout, || max_offset, answer)
    }

    #[test]
    fn held_answers_run_on_arrival_the_first_here_the_rest_on_tasks() {
        let lp = LongPolling::new();
        let (tx, rx) = std::sync::mpsc::channel();
        let held = |n, tags: Option<BTreeSet<i32>>| {
            let r = hold(&lp, 0, tags, Duration::from_secs(60), 5, answer(&tx, n));
            assert!(matches!(r, Ok(None)), "held");
        };
        held(1, None);
        held(2, Some(BTreeSet::from([7])));
        held(3, Some(BTreeSet::from([8])));
        assert_eq!(lp.held_count(), 3);
        lp.notify("T", 1, 6, 7); // other queue
        lp.notify("T", 0, 5, 7); // the message before the awaited offset
        assert!(rx.try_recv().is_err(), "nothing satisfied yet");
        lp.notify("T", 0, 6, 7);
        let mut got: Vec<_> = rx.try_iter().collect();
        got.sort();
        // Pull 1 (any tag) and pull 2 (tag 7) ran, one of them on this thread; 3 waits.
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!((got[0].0, got[1].0), (1, 2));
        assert_eq!(got.iter().filter(|(_, here)| *here).count(), 1);
        assert_eq!(lp.held_count(), 1);
        assert_eq!(lp.answers.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn an_answer_is_given_back_when_its_message_arrived_before_it_was_held() {
        let lp = LongPolling::new();
        let (tx, rx) = std::sync::mpsc::channel();
        let r = hold(&lp, 0, None, Duration::from_secs(60), 6, answer(&tx, 1));
        let Ok(Some(given_back)) = r else {
            panic!("not given back");
        };
        assert_eq!(lp.held_count(), 0);
        assert_eq!(lp.answers.load(Ordering::Relaxed), 0);
        given_back(true);
        assert_eq!(rx.try_recv(), Ok((1, true)));
    }

    #[test]
    fn answers_beyond_the_bound_are_refused_and_shutdown_runs_the_held_ones() {
        let lp = LongPolling::new();
        let (tx, rx) = std::sync::mpsc::channel();
        for n in 0..MAX_ANSWERS as u32 {
            let r = hold(&lp, 0, None, Duration::from_secs(60), 5, answer(&tx, n));
            assert!(matches!(r, Ok(None)));
        }
        let over = hold(&lp, 0, None, Duration::from_secs(60), 5, answer(&tx, 0));
        assert!(over.is_err(), "one more than the bound is refused");
        lp.wake_all();
        assert_eq!(rx.try_iter().filter(|(_, here)| !here).count(), MAX_ANSWERS);
        assert_eq!(lp.held_count(), 0);
        // Shut down: given back at once.
        let after = hold(&lp, 0, None, Duration::from_secs(60), 5, answer(&tx, 0));
        assert!(matches!(after, Ok(Some(_))));
    }

    #[test]
    fn a_closed_connection_drops_its_held_answers_unrun() {
        let lp = LongPolling::new();
        let (tx, rx) = std::sync::mpsc::channel();
        for (channel, n) in [(1, 1), (2, 2), (1, 3)] {
            let r = hold(
                &lp,
                channel,
                None,
                Duration::from_secs(60),
                5,
                answer(&tx, n),
            );
            assert!(matches!(r, Ok(None)));
        }
        lp.forget_channel(1);
        assert_eq!(lp.held_count(), 1);
        assert_eq!(lp.answers.load(Ordering::Relaxed), 1);
        lp.notify("T", 0, 6, 0);
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), vec![(2, true)]);
    }

    /// The sweeper answers a held pull whose suspend time ran out, sleeps while none is
    /// held, and is woken by the next one. The waits are bounded by the test's own
    /// timeouts, not measured.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_sweeper_answers_held_pulls_past_their_suspend_time() {
        let lp = Arc::new(LongPolling::new());
        assert!(lp.start_sweeper());
        assert!(!lp.start_sweeper(), "one sweeper");
        let sweeper = {
            let lp = lp.clone();
            tokio::spawn(async move { lp.sweep().await })
        };
        let (tx, rx) = std::sync::mpsc::channel();
        for n in 0..2 {
            let r = hold(&lp, 0, None, Duration::from_millis(1), 5, answer(&tx, n));
            assert!(matches!(r, Ok(None)));
            let (m, here) =
                tokio::task::block_in_place(|| rx.recv_timeout(Duration::from_secs(30)))
                    .expect("the sweeper answered");
            assert_eq!((m, here), (n, false));
            assert_eq!(lp.held_count(), 0);
            // The sweeper goes idle once nothing is held; the next hold wakes it.
            while !lp.sweeper_idle.load(Ordering::SeqCst) {
                tokio::task::yield_now().await;
            }
        }
        lp.wake_all();
        tokio::time::timeout(Duration::from_secs(30), sweeper)
            .await
            .expect("the sweeper ends at shutdown")
            .unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn times_out() {
        let lp = LongPolling::new();
        let start = tokio::time::Instant::now();
        lp.hold("T", 0, 5, None, Duration::from_secs(15), || 5)
            .await;
        assert_eq!(start.elapsed(), Duration::from_secs(15));
        assert_eq!(lp.held_count(), 0);
    }
}
