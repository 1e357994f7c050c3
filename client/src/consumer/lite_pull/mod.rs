//! The lite pull consumer (Java `DefaultLitePullConsumer`): the application calls
//! [`LitePullConsumer::poll`]; pull tasks fill a bounded buffer behind it.
//!
//! Queues come from a subscription (rebalanced like the push consumer) or from
//! [`LitePullConsumer::assign`]. Offsets advance when messages are polled and are
//! committed automatically every `autoCommitIntervalMillis` (at poll time) or by
//! [`LitePullConsumer::commit`].
//!
//! * this file: the handle (subscribe or assign, start, shutdown).
//! * `poll`: poll, commit, seek, pause and resume.
//! * `cache`: what the consumer core hands to a lite pull consumer: the buffer of
//!   pulled messages, the polled offsets, the paused queues.

mod cache;
mod poll;

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use tracing::info;
use vostok_remoting::protocol::body::{ConsumeType, MessageQueue};
use vostok_remoting::protocol::topic;
use vostok_remoting::support::sync::{MutexExt, RwLockExt};

use super::core::{ConsumerCore, CoreParams};
use super::process_queue::ProcessQueue;
use super::subscription::MessageSelector;
use super::{pull, rebalance};
use crate::error::{ClientError, Result};
use crate::instance::ClientInstance;
use crate::route::subscribe_queues;
use crate::service_state::ServiceState;
use cache::ConsumeRequestCache;

pub use super::config::LitePullConsumerConfig;

/// See the module documentation.
#[derive(Clone)]
pub struct LitePullConsumer {
    shared: Arc<LiteShared>,
}

/// What the clones of one lite pull consumer share; `core` is set by `start`.
struct LiteShared {
    cache: Arc<ConsumeRequestCache>,
    state: Arc<ServiceState>,
    pending_subs: RwLock<Vec<(String, MessageSelector)>>,
    core: OnceLock<Arc<ConsumerCore>>,
}

impl LitePullConsumer {
    pub fn new(config: LitePullConsumerConfig) -> Self {
        LitePullConsumer {
            shared: Arc::new(LiteShared {
                cache: Arc::new(ConsumeRequestCache::new(config)),
                state: Arc::default(),
                pending_subs: RwLock::default(),
                core: OnceLock::new(),
            }),
        }
    }

    /// Subscribes to a topic; queues are assigned by rebalancing. Call before `start`.
    pub fn subscribe(&self, topic: &str, expression: &str) -> Result<()> {
        self.subscribe_with_selector(topic, MessageSelector::by_tag(expression))
    }

    /// Subscribes with a tag, SQL92 or routing-key selector; an invalid binding key is
    /// refused here.
    pub fn subscribe_with_selector(&self, topic: &str, selector: MessageSelector) -> Result<()> {
        topic::validate_topic(topic).map_err(ClientError::InvalidArgument)?;
        selector.validate()?;
        match self.shared.core.get() {
            Some(core) => core.subscribe(topic, &selector),
            None => self
                .shared
                .pending_subs
                .write_locked()
                .push((topic.to_owned(), selector)),
        }
        Ok(())
    }

    pub async fn start(&self) -> Result<()> {
        let shared = &self.shared;
        let common = &shared.cache.config.common;
        topic::validate_group(&common.consumer_group).map_err(ClientError::InvalidArgument)?;
        shared.state.start("consumer")?;
        let instance = ClientInstance::get_or_create(&common.client)?;
        let core = Arc::new(ConsumerCore::new(
            instance.clone(),
            common,
            CoreParams {
                kind: shared.cache.clone(),
                state: shared.state.clone(),
                consume_type: ConsumeType::ConsumeActively,
                orderly: false,
                max_reconsume_times: -1,
                pull_interval: Duration::ZERO,
                post_subscription: true,
            },
        )?);
        let subs = std::mem::take(&mut *shared.pending_subs.write_locked());
        for (t, selector) in &subs {
            core.subscribe(t, selector);
        }
        let _ = shared.core.set(core.clone());
        if let Err(e) = instance.register_consumer(core.clone()) {
            shared.state.mark_shut_down();
            return Err(e);
        }
        instance.start();
        for t in core.subscribed_topics() {
            let _ = instance.update_route(&t).await;
        }
        if let Err(e) = super::check_client::check_client_in_broker(&instance, &core).await {
            tracing::warn!(group = %core.group, error = %e, "a broker refuses a subscription");
            self.shutdown().await;
            return Err(e);
        }
        instance.send_heartbeat_to_all_brokers().await;
        instance.rebalance_immediately();
        info!(group = %core.group, client_id = %instance.client_id(), "lite pull consumer started");
        Ok(())
    }

    fn core(&self) -> Result<&Arc<ConsumerCore>> {
        self.shared.state.check_running("consumer")?;
        self.shared
            .core
            .get()
            .ok_or(ClientError::NotStarted("consumer"))
    }

    /// The readable queues of a topic.
    pub async fn fetch_message_queues(&self, topic: &str) -> Result<Vec<MessageQueue>> {
        let core = self.core()?;
        let wrapped = core.wrap(topic);
        let route =
            core.instance
                .update_route(&wrapped)
                .await?
                .ok_or_else(|| ClientError::NoRoute {
                    topic: topic.to_owned(),
                })?;
        Ok(subscribe_queues(&wrapped, &route)
            .iter()
            .map(|mq| core.unwrap_mq(mq))
            .collect())
    }

    /// Consumes exactly these queues (no rebalancing), each from its committed offset.
    pub async fn assign(&self, queues: &[MessageQueue]) -> Result<()> {
        let core = self.core()?.clone();
        core.assigned.store(true, Ordering::Release);
        // Assigned topics are read whole: a `*` subscription unless one was given.
        for q in queues {
            if core.subscription(&core.wrap(&q.topic)).is_none() {
                core.subscribe(&q.topic, &MessageSelector::by_tag("*"));
            }
        }
        let wanted: Vec<MessageQueue> = queues.iter().map(|q| core.wrap_mq(q)).collect();
        for mq in core.assigned_queues() {
            if !wanted.contains(&mq) {
                if let Some(pq) = core.process_queue(&mq) {
                    rebalance::remove_queue(&core, &mq, &pq).await;
                }
            }
        }
        for mq in wanted {
            if core.process_queue(&mq).is_some() {
                continue;
            }
            let offset = core.compute_pull_from_where(&mq).await?;
            self.start_queue(&core, mq, offset);
        }
        Ok(())
    }

    fn start_queue(&self, core: &Arc<ConsumerCore>, mq: MessageQueue, offset: i64) {
        let pq = Arc::new(ProcessQueue::new());
        core.pqs.locked().insert(mq.clone(), pq.clone());
        pull::spawn(core.clone(), mq, pq, offset);
    }

    /// The queues currently assigned (topics without namespace).
    pub fn assignment(&self) -> Vec<MessageQueue> {
        self.shared
            .core
            .get()
            .map(|c| {
                c.assigned_queues()
                    .iter()
                    .map(|mq| c.unwrap_mq(mq))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Commits (with auto-commit), stops the pull tasks and unregisters.
    pub async fn shutdown(&self) {
        let shared = &self.shared;
        if !shared.state.is_running() {
            return;
        }
        if shared.cache.config.auto_commit {
            let _ = self.commit().await;
        }
        shared.state.mark_shut_down();
        let Some(core) = shared.core.get() else {
            return;
        };
        let _guard = core.rebalance_lock.lock().await;
        core.shutdown.cancel();
        for mq in core.assigned_queues() {
            if let Some(pq) = core.process_queue(&mq) {
                rebalance::remove_queue(core, &mq, &pq).await;
            }
        }
        core.tracker.close();
        let _ = tokio::time::timeout(Duration::from_secs(5), core.tracker.wait()).await;
        core.instance.unregister_consumer(&core.group).await;
        info!(group = %core.group, "lite pull consumer shut down");
    }
}
