//! The send path (Java `DefaultMQProducerImpl.sendDefaultImpl` / `sendKernelImpl`).
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

use bytes::Bytes;
use tokio::sync::OwnedSemaphorePermit;
use tracing::debug;
use vostok_remoting::protocol::body::MessageQueue;
use vostok_remoting::protocol::header::{
    SendMessageRequestHeader, SendMessageRequestHeaderV2, SendMessageResponseHeader,
};
use vostok_remoting::protocol::message::{property, sysflag};
use vostok_remoting::protocol::{request_code, topic};
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::support::time::now_millis;
use vostok_remoting::{RemotingCommand, ResponseFuture};

use super::{Producer, ProducerShared, SendResult, SendStatus};
use crate::api;
use crate::error::{ClientError, Result};
use crate::hook::{CheckForbiddenContext, CommunicationMode, SendMessageContext};
use crate::message::{self, Message};
use crate::route::TopicPublishInfo;

/// A message ready to go: namespaced topic, UNIQ_KEY set; for a batch the body is the
/// encoded batch and `batch_ids` the inner ids.
pub(crate) struct Prepared {
    pub msg: Message,
    pub batch_ids: Option<String>,
}

impl Prepared {
    fn is_batch(&self) -> bool {
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

/// One attempt in flight.
struct Attempt {
    mq: MessageQueue,
    addr: String,
    started: Instant,
    response: Option<ResponseFuture>,
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
            .send_default(Arc::new(prepared), CommunicationMode::Sync, timeout)
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
                Arc::new(prepared),
                CommunicationMode::Sync,
                shared.config.send_msg_timeout,
            )
            .await
    }

    /// Sends asynchronously: the returned future is ready once the request is queued
    /// (after waiting for room when `backPressureForAsyncSendNum` sends are in flight);
    /// awaiting the [`SendFuture`] gives the result, after up to
    /// `retryTimesWhenSendAsyncFailed` retries.
    pub async fn send_async(&self, msg: Message) -> Result<SendFuture> {
        let shared = self.shared.clone();
        shared.instance()?;
        let permit = shared
            .async_permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ClientError::ShutDown("producer"))?;
        let prepared = Arc::new(shared.prepare(msg)?);
        let timeout = shared.config.send_msg_timeout;
        let begin = Instant::now();
        let topic = prepared.msg.topic.clone();
        let info = shared.publish_info(&topic).await?;
        let first = shared
            .start_attempt(&prepared, &info, None, CommunicationMode::Async, timeout)
            .await;
        Ok(SendFuture {
            inner: Box::pin(async move {
                shared
                    .finish_async(prepared, info, first, begin, timeout, permit)
                    .await
            }),
        })
    }

    /// Sends asynchronously and calls `callback` with the result (Java `SendCallback`).
    pub async fn send_with_callback<F>(&self, msg: Message, callback: F) -> Result<()>
    where
        F: FnOnce(Result<SendResult>) + Send + 'static,
    {
        let future = self.send_async(msg).await?;
        tokio::spawn(async move { callback(future.await) });
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
        if msg.uniq_key().is_none() {
            let id = self.instance()?.next_uniq_id();
            msg.properties
                .insert(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, id);
        }
        Ok(())
    }

    fn is_retryable(&self, e: &ClientError) -> bool {
        match e {
            ClientError::Remoting { .. } | ClientError::NoBroker { .. } => true,
            ClientError::Broker { code, .. } => self.config.retry_response_codes.contains(code),
            _ => false,
        }
    }

    fn select_queue(
        &self,
        info: &TopicPublishInfo,
        last_broker: Option<&str>,
    ) -> Option<MessageQueue> {
        if self.config.send_latency_fault_enable {
            let now = Instant::now();
            info.select_queue(last_broker, |b| self.fault.is_available(b, now))
                .cloned()
        } else {
            info.select_queue(last_broker, |_| true).cloned()
        }
    }

    fn record_latency(&self, broker: &str, started: Instant, isolation: bool) {
        if self.config.send_latency_fault_enable {
            self.fault.update(
                broker,
                started.elapsed().as_millis() as u64,
                isolation,
                Instant::now(),
            );
        }
    }

    /// Sync send with retries on other brokers.
    pub(crate) async fn send_default(
        &self,
        prepared: Arc<Prepared>,
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
                    &prepared,
                    &info,
                    last_broker.as_deref(),
                    mode,
                    timeout - elapsed,
                )
                .await;
            let outcome = match started {
                Ok(attempt) => self.await_attempt(&prepared, attempt, mode).await,
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

    async fn finish_async(
        &self,
        prepared: Arc<Prepared>,
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
                    self.await_attempt(&prepared, attempt, CommunicationMode::Async)
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
                    &prepared,
                    &info,
                    Some(&mq.broker_name),
                    CommunicationMode::Async,
                    timeout - elapsed,
                )
                .await;
        }
    }

    /// Picks a queue and queues the request.
    async fn start_attempt(
        &self,
        prepared: &Prepared,
        info: &TopicPublishInfo,
        last_broker: Option<&str>,
        mode: CommunicationMode,
        timeout: Duration,
    ) -> std::result::Result<Attempt, (MessageQueue, ClientError)> {
        let Some(mq) = self.select_queue(info, last_broker) else {
            return Err((
                MessageQueue::new(prepared.msg.topic.clone(), "", -1),
                ClientError::NoRoute {
                    topic: prepared.msg.topic.clone(),
                },
            ));
        };
        self.start_on_queue(prepared, mq, mode, timeout).await
    }

    /// Builds the request for `mq` and queues it (Java `sendKernelImpl`).
    async fn start_on_queue(
        &self,
        prepared: &Prepared,
        mq: MessageQueue,
        mode: CommunicationMode,
        timeout: Duration,
    ) -> std::result::Result<Attempt, (MessageQueue, ClientError)> {
        let instance = match self.instance() {
            Ok(i) => i,
            Err(e) => return Err((mq, e)),
        };
        let addr = match instance.find_broker_addr_in_publish(&mq.broker_name) {
            Some(a) => a,
            None => {
                let _ = instance.update_route(&mq.topic).await;
                match instance.find_broker_addr_in_publish(&mq.broker_name) {
                    Some(a) => a,
                    None => {
                        let e = ClientError::NoBroker {
                            topic: mq.topic.clone(),
                            broker_name: mq.broker_name.clone(),
                        };
                        return Err((mq, e));
                    }
                }
            }
        };
        let request = match self.build_request(prepared, &mq, &addr, mode) {
            Ok(r) => r,
            Err(e) => return Err((mq, e)),
        };
        let started = Instant::now();
        let attempt = |response| Attempt {
            mq: mq.clone(),
            addr: addr.clone(),
            started,
            response,
        };
        let remoting = instance.remoting();
        match mode {
            CommunicationMode::Oneway => {
                match remoting.invoke_oneway(&addr, request, timeout).await {
                    Ok(()) => Ok(attempt(None)),
                    Err(e) => {
                        let e = ClientError::remoting(&addr, e);
                        self.after_hooks(prepared, &attempt(None), mode, None, Some(&e));
                        Err((mq, e))
                    }
                }
            }
            _ => match remoting.invoke_async(&addr, request, timeout).await {
                Ok(response) => Ok(attempt(Some(response))),
                Err(e) => {
                    let e = ClientError::remoting(&addr, e);
                    self.record_latency(&mq.broker_name, started, true);
                    self.after_hooks(prepared, &attempt(None), mode, None, Some(&e));
                    Err((mq, e))
                }
            },
        }
    }

    /// Waits for an attempt's response and turns it into a result (hooks after).
    async fn await_attempt(
        &self,
        prepared: &Prepared,
        mut attempt: Attempt,
        mode: CommunicationMode,
    ) -> std::result::Result<SendResult, (MessageQueue, ClientError)> {
        let Some(response) = attempt.response.take() else {
            return Err((
                attempt.mq.clone(),
                ClientError::InvalidArgument("oneway send has no result".into()),
            ));
        };
        let outcome = match response.await {
            Ok(response) => self.process_response(prepared, &attempt, response),
            Err(e) => Err(ClientError::remoting(&attempt.addr, e)),
        };
        let isolation = match &outcome {
            Ok(_) => false,
            Err(e) => e.is_transport() || self.is_retryable(e),
        };
        self.record_latency(&attempt.mq.broker_name, attempt.started, isolation);
        match outcome {
            Ok(result) => {
                self.after_hooks(prepared, &attempt, mode, Some(&result), None);
                Ok(result)
            }
            Err(e) => {
                self.after_hooks(prepared, &attempt, mode, None, Some(&e));
                Err((attempt.mq, e))
            }
        }
    }

    fn build_request(
        &self,
        prepared: &Prepared,
        mq: &MessageQueue,
        addr: &str,
        mode: CommunicationMode,
    ) -> Result<RemotingCommand> {
        let msg = &prepared.msg;
        self.check_forbidden(prepared, mq, addr, mode)?;
        let mut sys_flag = 0;
        let mut body: Bytes = msg.body.clone();
        if !prepared.is_batch() && body.len() >= self.config.compress_msg_body_over_howmuch {
            let packed =
                message::compress(&body, self.config.compress_type, self.config.compress_level)?;
            body = Bytes::from(packed);
            sys_flag |= sysflag::compression_bits(self.config.compress_type);
        }
        if msg.properties.is_transaction_prepared() {
            sys_flag |= sysflag::TRANSACTION_PREPARED_TYPE;
        }
        let hooks = self.send_hooks.read_locked().clone();
        if !hooks.is_empty() {
            let ctx = self.hook_context(prepared, mq, addr, mode);
            for hook in &hooks {
                hook.send_message_before(&ctx);
            }
        }
        let mut reconsume_times = None;
        let mut max_reconsume_times = None;
        let properties = if topic::is_retry_topic(&msg.topic) {
            let mut props = msg.properties.clone();
            reconsume_times = props
                .remove(property::RECONSUME_TIME)
                .and_then(|v| v.parse().ok());
            max_reconsume_times = props
                .remove(property::MAX_RECONSUME_TIMES)
                .and_then(|v| v.parse().ok());
            props.encode()
        } else {
            msg.properties.encode()
        };
        let header = SendMessageRequestHeader {
            producer_group: self.group.clone(),
            topic: msg.topic.clone(),
            default_topic: self.config.create_topic_key.clone(),
            default_topic_queue_nums: self.config.default_topic_queue_nums,
            queue_id: mq.queue_id,
            sys_flag,
            born_timestamp: now_millis(),
            flag: msg.flag,
            properties: Some(properties),
            reconsume_times: Some(reconsume_times.unwrap_or(0)),
            unit_mode: Some(false),
            batch: Some(prepared.is_batch()),
            max_reconsume_times,
            broker_name: Some(mq.broker_name.clone()),
        };
        let is_reply = msg.property(property::MESSAGE_TYPE) == Some(property::REPLY_MESSAGE_FLAG);
        let code = if is_reply {
            request_code::SEND_REPLY_MESSAGE_V2
        } else if prepared.is_batch() {
            request_code::SEND_BATCH_MESSAGE
        } else {
            request_code::SEND_MESSAGE_V2
        };
        Ok(
            RemotingCommand::request_with_header(code, &SendMessageRequestHeaderV2::from(header))
                .with_body(body),
        )
    }

    fn process_response(
        &self,
        prepared: &Prepared,
        attempt: &Attempt,
        response: RemotingCommand,
    ) -> Result<SendResult> {
        let Some(send_status) = SendStatus::from_code(response.code) else {
            return Err(ClientError::broker(
                &attempt.addr,
                response.code,
                response.remark(),
            ));
        };
        let h: SendMessageResponseHeader = api::decode_header(&attempt.addr, &response)?;
        let msg_id = match &prepared.batch_ids {
            Some(ids) => ids.clone(),
            None => prepared.msg.uniq_key().unwrap_or_default().to_owned(),
        };
        let mq = MessageQueue::new(
            topic::unwrap_namespace(self.namespace(), &attempt.mq.topic),
            attempt.mq.broker_name.clone(),
            h.queue_id,
        );
        Ok(SendResult {
            send_status,
            msg_id,
            offset_msg_id: h.msg_id,
            message_queue: mq,
            queue_offset: h.queue_offset,
            transaction_id: h.transaction_id,
            region_id: h.msg_region,
            trace_on: h.trace_on.as_deref() != Some("false"),
        })
    }

    fn check_forbidden(
        &self,
        prepared: &Prepared,
        mq: &MessageQueue,
        addr: &str,
        mode: CommunicationMode,
    ) -> Result<()> {
        let hooks = self.forbidden_hooks.read_locked().clone();
        if hooks.is_empty() {
            return Ok(());
        }
        let ctx = CheckForbiddenContext {
            producer_group: &self.group,
            message: &prepared.msg,
            mq,
            broker_addr: addr,
            communication_mode: mode,
            namespace: self.namespace(),
        };
        for hook in hooks {
            hook.check_forbidden(&ctx)
                .map_err(|reason| ClientError::Forbidden {
                    hook: hook.hook_name().to_owned(),
                    reason,
                })?;
        }
        Ok(())
    }

    fn hook_context<'a>(
        &'a self,
        prepared: &'a Prepared,
        mq: &'a MessageQueue,
        addr: &'a str,
        mode: CommunicationMode,
    ) -> SendMessageContext<'a> {
        SendMessageContext {
            producer_group: &self.group,
            message: &prepared.msg,
            mq,
            broker_addr: addr,
            born_host: self
                .instance
                .get()
                .map(|i| i.config().client_ip().to_string()),
            communication_mode: mode,
            namespace: self.namespace(),
            send_result: None,
            error: None,
        }
    }

    fn after_hooks(
        &self,
        prepared: &Prepared,
        attempt: &Attempt,
        mode: CommunicationMode,
        result: Option<&SendResult>,
        error: Option<&ClientError>,
    ) {
        let hooks = self.send_hooks.read_locked().clone();
        if hooks.is_empty() {
            return;
        }
        let mut ctx = self.hook_context(prepared, &attempt.mq, &attempt.addr, mode);
        ctx.send_result = result;
        ctx.error = error.map(ToString::to_string);
        for hook in &hooks {
            hook.send_message_after(&ctx);
        }
    }
}
