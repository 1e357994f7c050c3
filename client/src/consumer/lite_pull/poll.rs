//! What the application calls on a running lite pull consumer: `poll` (with
//! auto-commit), `commit`, `committed`, `seek*`, `pause` and `resume`.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use vostok_remoting::protocol::body::MessageQueue;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::support::sync::MutexExt;

use super::LitePullConsumer;
use crate::error::{ClientError, Result};

impl LitePullConsumer {
    /// Messages pulled so far, waiting up to `timeout` for some.
    pub async fn poll(&self, timeout: Duration) -> Result<Vec<MessageExt>> {
        let core = self.core()?.clone();
        let cache = &self.shared.cache;
        if cache.config.auto_commit {
            let due = cache.last_commit.locked().elapsed() >= cache.config.auto_commit_interval;
            if due {
                self.commit().await?;
            }
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let mut rx = cache.rx.lock().await;
        loop {
            let resumed = {
                let paused = cache.paused.locked();
                let mut parked = cache.parked.locked();
                parked
                    .iter()
                    .position(|r| !paused.contains(&r.mq))
                    .map(|i| parked.remove(i))
            };
            let request = match resumed {
                Some(r) => r,
                None => tokio::select! {
                    _ = core.shutdown.cancelled() => return Err(ClientError::ShutDown("consumer")),
                    r = tokio::time::timeout_at(deadline, rx.recv()) => match r {
                        Ok(Some(r)) => r,
                        Ok(None) | Err(_) => return Ok(Vec::new()),
                    },
                },
            };
            if request.pq.is_dropped() {
                cache
                    .buffered
                    .fetch_sub(request.msgs.len(), Ordering::AcqRel);
                continue;
            }
            if cache.paused.locked().contains(&request.mq) {
                cache.parked.locked().push(request);
                continue;
            }
            cache
                .buffered
                .fetch_sub(request.msgs.len(), Ordering::AcqRel);
            if let Some(offset) = request
                .pq
                .remove(request.msgs.iter().map(|m| m.queue_offset))
            {
                cache.consumed.locked().insert(request.mq.clone(), offset);
            }
            return Ok(request.msgs);
        }
    }

    pub async fn poll_default(&self) -> Result<Vec<MessageExt>> {
        self.poll(self.shared.cache.config.poll_timeout).await
    }

    /// Commits the offsets of everything polled so far, waiting for the broker.
    pub async fn commit(&self) -> Result<()> {
        let core = self.core()?;
        let consumed: Vec<(MessageQueue, i64)> = self
            .shared
            .cache
            .consumed
            .locked()
            .iter()
            .map(|(m, o)| (m.clone(), *o))
            .collect();
        for (mq, offset) in consumed {
            core.offsets.update(&mq, offset, false);
            core.offsets.persist(&mq).await;
        }
        *self.shared.cache.last_commit.locked() = Instant::now();
        Ok(())
    }

    /// The committed offset of a queue on the broker (or in the local file).
    pub async fn committed(&self, mq: &MessageQueue) -> Result<Option<i64>> {
        let core = self.core()?;
        let mq = core.wrap_mq(mq);
        core.offsets.read_from_store(&mq).await
    }

    /// Moves an assigned queue to `offset`: buffered messages of it are discarded and
    /// the next poll returns messages from there.
    pub async fn seek(&self, mq: &MessageQueue, offset: i64) -> Result<()> {
        let core = self.core()?.clone();
        let mq = core.wrap_mq(mq);
        let old = core
            .pqs
            .locked()
            .remove(&mq)
            .ok_or_else(|| ClientError::InvalidArgument(format!("{mq} is not assigned")))?;
        old.set_dropped();
        self.shared
            .cache
            .consumed
            .locked()
            .insert(mq.clone(), offset);
        self.start_queue(&core, mq, offset);
        Ok(())
    }

    pub async fn seek_to_begin(&self, mq: &MessageQueue) -> Result<()> {
        let core = self.core()?;
        let wrapped = core.wrap_mq(mq);
        let min = core.min_offset(&wrapped).await?;
        self.seek(mq, min).await
    }

    pub async fn seek_to_end(&self, mq: &MessageQueue) -> Result<()> {
        let core = self.core()?;
        let wrapped = core.wrap_mq(mq);
        let max = core.max_offset(&wrapped).await?;
        self.seek(mq, max).await
    }

    /// Stops pulling these queues until [`Self::resume`].
    pub fn pause(&self, queues: &[MessageQueue]) {
        let Some(core) = self.shared.core.get() else {
            return;
        };
        let mut paused = self.shared.cache.paused.locked();
        for q in queues {
            paused.insert(MessageQueue::new(
                core.wrap(&q.topic),
                q.broker_name.clone(),
                q.queue_id,
            ));
        }
    }

    pub fn resume(&self, queues: &[MessageQueue]) {
        let Some(core) = self.shared.core.get() else {
            return;
        };
        let mut paused = self.shared.cache.paused.locked();
        for q in queues {
            paused.remove(&MessageQueue::new(
                core.wrap(&q.topic),
                q.broker_name.clone(),
                q.queue_id,
            ));
        }
    }
}
