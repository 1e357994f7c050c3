//! The send path (Java `DefaultMQProducerImpl.sendDefaultImpl`): the send modes and
//! their retries; each attempt is made by `attempt` (Java `sendKernelImpl`).
//!
//! ```text
//! validate → publish info (route) → pick a queue (round robin, avoid failed brokers)
//!   → build SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE (UNIQ_KEY, compression, sysFlag)
//!   → hooks before → request → hooks after → SendResult, or retry on another broker
//! ```
//!
//! Retries (`retryTimesWhenSendFailed`) happen for sync and async sends when the broker
//! did not answer or answered one of `retry_response_codes`, as long as the send's
//! timeout is not used up; oneway sends and sends to a chosen queue are not retried.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::sync::OwnedSemaphorePermit;
use tracing::debug;
use vostok_remoting::protocol::body::MessageQueue;
use vostok_remoting::protocol::message::property;
use vostok_remoting::protocol::topic;
use vostok_remoting::ResponseFuture;

use super::send_result::{SendResult, SendStatus};
use super::{Producer, ProducerShared};
use crate::error::{ClientError, Result};
use crate::hook::CommunicationMode;
use crate::message::{self, Message};
use crate::route::TopicPublishInfo;

/// A message ready to go: namespaced topic, UNIQ_KEY set; for a batch the body is the
/// encoded batch and `batch_ids` the inner ids.
pub(crate) struct Prepared {
    pub msg: Message,
    pub batch_ids: Option<String>,
}

/// An async send up to its first attempt (see `Producer::start_async`).
struct AsyncStart {
    shared: Arc<ProducerShared>,
    /// Held until the send's result is given.
    permit: OwnedSemaphorePermit,
    prepared: Prepared,
    timeout: Duration,
    begin: Instant,
    info: Arc<TopicPublishInfo>,
}

impl Prepared {
    pub(super) fn is_batch(&self) -> bool {
        self.batch_ids.is_some()
    }
}

/// The pending answer of an async send: resolves to the [`SendResult`] after any
/// retries. Created by [`Producer::send_async`] once the first request is queued.
pub struct SendFuture {
    inner: Pin<Box<dyn Future<Output = Result<SendResult>> + Send>>,
}

impl Future for SendFuture {
    type Output = Result<SendResult>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }
}

/// One attempt in flight (see `attempt`): the queue chosen, its broker, when the
/// request left, and its pending response (none for oneway).
pub(super) struct Attempt {
    pub(super) mq: MessageQueue,
    pub(super) addr: Arc<str>,
    pub(super) started: Instant,
    pub(super) response: Option<ResponseFuture>,
}

impl Producer {
    /// Sends synchronously with the configured `sendMsgTimeout`.
    pub async fn send(&self, msg: Message) -> Result<SendResult> {
        self.send_with_timeout(msg, self.shared.config.send_msg_timeout)
            .await
    }

    pub async fn send_with_timeout(&self, msg: Message, timeout: Duration) -> Result<SendResult> {
        let shared = &self.shared;
        let prepared = shared.prepare(msg)?;
        shared
            .send_default(&prepared, CommunicationMode::Sync, timeout)
            .await
    }

    /// A send for the client's own use (consumer send-back fallback): properties copied
    /// from a stored message may carry reserved names.
    pub(crate) async fn send_internal(&self, mut msg: Message) -> Result<SendResult> {
        let shared = &self.shared;
        shared.instance()?;
        message::validate(&msg, shared.config.max_message_size)?;
        msg.topic = shared.wrap(&msg.topic);
        shared.stamp_uniq_key(&mut msg)?;
        let prepared = Prepared {
            msg,
            batch_ids: None,
        };
        shared
            .send_default(
                &prepared,
                CommunicationMode::Sync,
                shared.config.send_msg_timeout,
            )
            .await
    }

    /// What both async sends do before their first attempt: wait for room among the
    /// `backPressureForAsyncSendNum` sends in flight, validate and prepare the message,
    /// start its clock and find its route.
    async fn start_async(&self, msg: Message) -> Result<AsyncStart> {
        let shared = self.shared.clone();
        shared.instance()?;
        let permit = shared
            .async_permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ClientError::ShutDown("producer"))?;
        let prepared = shared.prepare(msg)?;
        let timeout = shared.config.send_msg_timeout;
        let begin = Instant::now();
        let info = shared.publish_info(&prepared.msg.topic).await?;
        Ok(AsyncStart {
            shared,
            permit,
            prepared,
            timeout,
            begin,
            info,
        })
    }

    /// Sends asynchronously: the returned future is ready once the request is queued
    /// (after waiting for room when `backPressureForAsyncSendNum` sends are in flight);
    /// awaiting the [`SendFuture`] gives the result, after up to
    /// `retryTimesWhenSendAsyncFailed` retries.
    pub async fn send_async(&self, msg: Message) -> Result<SendFuture> {
        let AsyncStart {
            shared,
            permit,
            prepared,
            timeout,
            begin,
            info,
        } = self.start_async(msg).await?;
        let first = shared
            .start_attempt(&prepared, &info, None, CommunicationMode::Async, timeout)
            .await;
        Ok(SendFuture {
            inner: Box::pin(async move {
                shared
                    .finish_async(&prepared, info, first, begin, timeout, permit)
                    .await
            }),
        })
    }

    /// Sends asynchronously and calls `callback` with the result (Java `SendCallback`),
    /// after up to `retryTimesWhenSendAsyncFailed` retries. Returns once the request is
    /// queued (after waiting for room when `backPressureForAsyncSendNum` sends are in
    /// flight).
    ///
    /// The callback of a send answered at the first attempt runs on the task reading
    /// the broker's connection, with no task of its own: keep it short (hand longer
    /// work to a task or a channel), as a callback that blocks holds up the answers of
    /// every send on that connection. A retried send calls it from a task.
    pub async fn send_with_callback<F>(&self, msg: Message, callback: F) -> Result<()>
    where
        F: FnOnce(Result<SendResult>) + Send + 'static,
    {
        let AsyncStart {
            shared,
            permit,
            prepared,
            timeout,
            begin,
            info,
        } = self.start_async(msg).await?;
        let Some(mq) = shared.select_queue_at(&info, None, begin) else {
            // No queue now: the retries (if any) look again, as for `send_async`.
            let failed = Err((
                MessageQueue::new(prepared.msg.topic.clone(), "", -1),
                ClientError::NoRoute {
                    topic: prepared.msg.topic.clone(),
                },
            ));
            shared.retry_with_callback(prepared, info, failed, begin, timeout, permit, callback);
            return Ok(());
        };
        let (mq, addr, request) = match shared
            .request_for(&prepared, mq, CommunicationMode::Async)
            .await
        {
            Ok(ready) => ready,
            Err(failed) => {
                shared.retry_with_callback(
                    prepared,
                    info,
                    Err(failed),
                    begin,
                    timeout,
                    permit,
                    callback,
                );
                return Ok(());
            }
        };
        let instance = shared.instance()?.clone();
        // The broker's latency is counted from `begin`: the request was built in
        // microseconds, and a clock read per send is saved.
        let started = begin;
        let answered = {
            let addr = addr.clone();
            move |answer| {
                let attempt = Attempt {
                    mq,
                    addr,
                    started,
                    response: None,
                };
                let outcome =
                    shared.finish_attempt(&prepared, attempt, CommunicationMode::Async, answer);
                match outcome {
                    Ok(result) => {
                        drop(permit);
                        callback(Ok(result));
                    }
                    Err(failed) => shared.retry_with_callback(
                        prepared,
                        info,
                        Err(failed),
                        begin,
                        timeout,
                        permit,
                        callback,
                    ),
                }
            }
        };
        instance
            .remoting()
            .invoke_async_with_callback_since(&addr, request, begin, timeout, answered)
            .await;
        Ok(())
    }

    /// Sends without waiting for an answer (no retry, no result).
    pub async fn send_oneway(&self, msg: Message) -> Result<()> {
        let shared = &self.shared;
        let prepared = shared.prepare(msg)?;
        let info = shared.publish_info(&prepared.msg.topic).await?;
        let attempt = shared
            .start_attempt(
                &prepared,
                &info,
                None,
                CommunicationMode::Oneway,
                shared.config.send_msg_timeout,
            )
            .await
            .map_err(|(_, e)| e)?;
        shared.after_hooks(&prepared, &attempt, CommunicationMode::Oneway, None, None);
        Ok(())
    }

    /// Sends to one queue of the message's topic (no retry on another queue).
    pub async fn send_to_queue(&self, msg: Message, mq: &MessageQueue) -> Result<SendResult> {
        if mq.topic != msg.topic {
            return Err(ClientError::InvalidArgument(format!(
                "message topic {} differs from queue topic {}",
                msg.topic, mq.topic
            )));
        }
        let shared = &self.shared;
        let prepared = shared.prepare(msg)?;
        let target = MessageQueue::new(shared.wrap(&mq.topic), mq.broker_name.clone(), mq.queue_id);
        shared
            .send_to(&prepared, target, shared.config.send_msg_timeout)
            .await
    }

    /// Sends to the queue `selector` picks among the topic's write queues (orderly
    /// messages: the same `arg` always picks the same queue while the route is stable).
    pub async fn send_with_selector(
        &self,
        msg: Message,
        selector: &dyn super::MessageQueueSelector,
        arg: &str,
    ) -> Result<SendResult> {
        let shared = &self.shared;
        let begin = Instant::now();
        let prepared = shared.prepare(msg)?;
        let info = shared.publish_info(&prepared.msg.topic).await?;
        let user_queues: Vec<MessageQueue> =
            info.queues.iter().map(|q| shared.unwrap_mq(q)).collect();
        let mut user_msg = prepared.msg.clone();
        user_msg.topic = topic::unwrap_namespace(shared.namespace(), &user_msg.topic);
        let index = selector
            .select(&user_queues, &user_msg, arg)
            .filter(|i| *i < info.queues.len())
            .ok_or_else(|| ClientError::InvalidArgument("the selector chose no queue".into()))?;
        let target = info.queues[index].clone();
        let timeout = shared
            .config
            .send_msg_timeout
            .saturating_sub(begin.elapsed());
        shared.send_to(&prepared, target, timeout).await
    }

    /// Orderly send by key: messages with the same `sharding_key` go to the same queue
    /// (Java `SelectMessageQueueByHash`).
    pub async fn send_orderly(&self, msg: Message, sharding_key: &str) -> Result<SendResult> {
        self.send_with_selector(msg, &super::SelectMessageQueueByHash, sharding_key)
            .await
    }
}

impl ProducerShared {
    /// Validates, namespaces and stamps the message.
    pub(crate) fn prepare(&self, mut msg: Message) -> Result<Prepared> {
        self.instance()?;
        message::validate(&msg, self.config.max_message_size)?;
        message::check_user_properties(&msg)?;
        if !self.namespace().is_empty() {
            msg.topic = self.wrap(&msg.topic);
        }
        self.stamp_uniq_key(&mut msg)?;
        Ok(Prepared {
            msg,
            batch_ids: None,
        })
    }

    pub(crate) fn stamp_uniq_key(&self, msg: &mut Message) -> Result<()> {
        let instance = self.instance()?;
        msg.properties
            .insert_if_absent_with(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, |text| {
                instance.push_uniq_id(text)
            });
        Ok(())
    }

    pub(super) fn is_retryable(&self, e: &ClientError) -> bool {
        match e {
            ClientError::Remoting { .. } | ClientError::NoBroker { .. } => true,
            ClientError::Broker { code, .. } => self.config.retry_response_codes.contains(code),
            _ => false,
        }
    }

    /// Sync send with retries on other brokers.
    pub(crate) async fn send_default(
        &self,
        prepared: &Prepared,
        mode: CommunicationMode,
        timeout: Duration,
    ) -> Result<SendResult> {
        let begin = Instant::now();
        let info = self.publish_info(&prepared.msg.topic).await?;
        let times = 1 + self.config.retry_times_when_send_failed;
        let mut last_broker: Option<String> = None;
        let mut last_err = None;
        for attempt_no in 0..times {
            let elapsed = begin.elapsed();
            if elapsed >= timeout {
                return Err(ClientError::Timeout {
                    operation: "send",
                    elapsed,
                });
            }
            let started = self
                .start_attempt(
                    prepared,
                    &info,
                    last_broker.as_deref(),
                    mode,
                    timeout - elapsed,
                )
                .await;
            let outcome = match started {
                Ok(attempt) => self.await_attempt(prepared, attempt, mode).await,
                Err((mq, e)) => Err((mq, e)),
            };
            match outcome {
                Ok(result) => {
                    if result.send_status != SendStatus::SendOk
                        && self.config.retry_another_broker_when_not_store_ok
                        && attempt_no + 1 < times
                    {
                        last_broker = Some(result.message_queue.broker_name.clone());
                        continue;
                    }
                    return Ok(result);
                }
                Err((mq, e)) => {
                    debug!(topic = %prepared.msg.topic, broker = %mq.broker_name, attempt = attempt_no, error = %e, "send attempt failed");
                    if !self.is_retryable(&e) {
                        return Err(e);
                    }
                    last_broker = Some(mq.broker_name);
                    last_err = Some(e);
                }
            }
        }
        Err(last_err.unwrap_or(ClientError::NoRoute {
            topic: prepared.msg.topic.clone(),
        }))
    }

    /// Sends to a fixed queue, without retries.
    async fn send_to(
        &self,
        prepared: &Prepared,
        mq: MessageQueue,
        timeout: Duration,
    ) -> Result<SendResult> {
        let attempt = self
            .start_on_queue(prepared, mq, CommunicationMode::Sync, timeout)
            .await
            .map_err(|(_, e)| e)?;
        self.await_attempt(prepared, attempt, CommunicationMode::Sync)
            .await
            .map_err(|(_, e)| e)
    }

    /// The rest of a callback send whose attempt failed: its retries, on a task of
    /// their own, then the callback.
    #[allow(clippy::too_many_arguments)]
    fn retry_with_callback<F>(
        self: Arc<Self>,
        prepared: Prepared,
        info: Arc<TopicPublishInfo>,
        first: std::result::Result<Attempt, (MessageQueue, ClientError)>,
        begin: Instant,
        timeout: Duration,
        permit: OwnedSemaphorePermit,
        callback: F,
    ) where
        F: FnOnce(Result<SendResult>) + Send + 'static,
    {
        tokio::spawn(async move {
            let result = self
                .finish_async(&prepared, info, first, begin, timeout, permit)
                .await;
            callback(result);
        });
    }

    async fn finish_async(
        &self,
        prepared: &Prepared,
        info: Arc<TopicPublishInfo>,
        first: std::result::Result<Attempt, (MessageQueue, ClientError)>,
        begin: Instant,
        timeout: Duration,
        _permit: OwnedSemaphorePermit,
    ) -> Result<SendResult> {
        let times = 1 + self.config.retry_times_when_send_async_failed;
        let mut started = first;
        let mut attempt_no = 0;
        loop {
            let outcome = match started {
                Ok(attempt) => {
                    self.await_attempt(prepared, attempt, CommunicationMode::Async)
                        .await
                }
                Err(failed) => Err(failed),
            };
            let (mq, e) = match outcome {
                Ok(result) => return Ok(result),
                Err(failed) => failed,
            };
            attempt_no += 1;
            let elapsed = begin.elapsed();
            if !self.is_retryable(&e) || attempt_no >= times {
                return Err(e);
            }
            if elapsed >= timeout {
                return Err(ClientError::Timeout {
                    operation: "async send",
                    elapsed,
                });
            }
            debug!(topic = %prepared.msg.topic, broker = %mq.broker_name, attempt = attempt_no, error = %e, "async send failed; retrying");
            started = self
                .start_attempt(
                    prepared,
                    &info,
                    Some(&mq.broker_name),
                    CommunicationMode::Async,
                    timeout - elapsed,
                )
                .await;
        }
    }
}
