//! One attempt of a send (Java `sendKernelImpl`): pick a queue (round robin, avoiding
//! brokers that failed lately), check-forbidden hooks, build SEND_MESSAGE_V2 /
//! SEND_BATCH_MESSAGE / SEND_REPLY_MESSAGE_V2 (compression, sysFlag), send-hooks
//! before, queue the request; then the response, the broker's latency for fault
//! avoidance, send-hooks after, and the [`SendResult`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use vostok_remoting::protocol::body::MessageQueue;
use vostok_remoting::protocol::header::{HeaderField, SendHeaderView};
use vostok_remoting::protocol::message::{property, sysflag};
use vostok_remoting::protocol::{request_code, topic};
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::support::time::now_millis;
use vostok_remoting::{ExtFields, RemotingCommand, RemotingError};

use super::send::{Attempt, Prepared};
use super::send_result::{SendResult, SendStatus};
use super::ProducerShared;
use crate::error::{ClientError, Result};
use crate::hook::{CheckForbiddenContext, CommunicationMode, SendMessageContext};
use crate::message;
use crate::route::TopicPublishInfo;

impl ProducerShared {
    fn select_queue(
        &self,
        info: &TopicPublishInfo,
        last_broker: Option<&str>,
    ) -> Option<MessageQueue> {
        self.select_queue_at(info, last_broker, Instant::now())
    }

    /// [`Self::select_queue`] with the clock already read (`now`, for fault avoidance).
    pub(super) fn select_queue_at(
        &self,
        info: &TopicPublishInfo,
        last_broker: Option<&str>,
        now: Instant,
    ) -> Option<MessageQueue> {
        if self.config.send_latency_fault_enable {
            info.select_queue(last_broker, |b| self.fault.is_available(b, now))
                .cloned()
        } else {
            info.select_queue(last_broker, |_| true).cloned()
        }
    }

    fn record_latency(&self, broker: &str, started: Instant, isolation: bool) {
        if self.config.send_latency_fault_enable {
            // One clock read for both the latency and the fault's start.
            let now = Instant::now();
            self.fault.update(
                broker,
                now.saturating_duration_since(started).as_millis() as u64,
                isolation,
                now,
            );
        }
    }

    /// Picks a queue and queues the request.
    pub(super) async fn start_attempt(
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
    pub(super) async fn start_on_queue(
        &self,
        prepared: &Prepared,
        mq: MessageQueue,
        mode: CommunicationMode,
        timeout: Duration,
    ) -> std::result::Result<Attempt, (MessageQueue, ClientError)> {
        let (mq, addr, request) = self.request_for(prepared, mq, mode).await?;
        let started = Instant::now();
        let remoting = match self.instance() {
            Ok(instance) => instance.remoting(),
            Err(e) => return Err((mq, e)),
        };
        let queued = match mode {
            CommunicationMode::Oneway => remoting
                .invoke_oneway(&addr, request, timeout)
                .await
                .map(|()| None),
            _ => remoting
                .invoke_async(&addr, request, timeout)
                .await
                .map(Some),
        };
        // The queue and address move into the attempt: a send copies neither.
        match queued {
            Ok(response) => Ok(Attempt {
                mq,
                addr,
                started,
                response,
            }),
            Err(e) => {
                let e = ClientError::remoting(&addr, e);
                if mode != CommunicationMode::Oneway {
                    self.record_latency(&mq.broker_name, started, true);
                }
                let attempt = Attempt {
                    mq,
                    addr,
                    started,
                    response: None,
                };
                self.after_hooks(prepared, &attempt, mode, None, Some(&e));
                Err((attempt.mq, e))
            }
        }
    }

    /// The broker address of `mq` (the route updated when it is unknown) and the
    /// request for it.
    pub(super) async fn request_for(
        &self,
        prepared: &Prepared,
        mq: MessageQueue,
        mode: CommunicationMode,
    ) -> std::result::Result<(MessageQueue, Arc<str>, RemotingCommand), (MessageQueue, ClientError)>
    {
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
        match self.build_request(prepared, &mq, &addr, mode) {
            Ok(request) => Ok((mq, addr, request)),
            Err(e) => Err((mq, e)),
        }
    }

    /// Waits for an attempt's response and turns it into a result (hooks after).
    pub(super) async fn await_attempt(
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
        let answer = response.await;
        self.finish_attempt(prepared, attempt, mode, answer)
    }

    /// Turns an attempt's answer into a result: the broker's latency for fault
    /// avoidance, hooks after.
    // The (queue, error) pair every step of an attempt returns; moved only on failure.
    #[allow(clippy::result_large_err)]
    pub(super) fn finish_attempt(
        &self,
        prepared: &Prepared,
        attempt: Attempt,
        mode: CommunicationMode,
        answer: std::result::Result<RemotingCommand, RemotingError>,
    ) -> std::result::Result<SendResult, (MessageQueue, ClientError)> {
        let outcome = match answer {
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
        // The two properties the request depends on, read in one pass.
        let (mut transaction_prepared, mut is_reply) = (false, false);
        for (name, value) in msg.properties.iter() {
            match name {
                property::TRANSACTION_PREPARED => {
                    transaction_prepared = value.eq_ignore_ascii_case("true")
                }
                property::MESSAGE_TYPE => is_reply = value == property::REPLY_MESSAGE_FLAG,
                _ => {}
            }
        }
        if transaction_prepared {
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
        // Borrowed as they are, unless a retry's counters come out of them.
        let retry_properties = if topic::is_retry_topic(&msg.topic) {
            let mut props = msg.properties.clone();
            reconsume_times = props
                .remove(property::RECONSUME_TIME)
                .and_then(|v| v.parse().ok());
            max_reconsume_times = props
                .remove(property::MAX_RECONSUME_TIMES)
                .and_then(|v| v.parse().ok());
            Some(props)
        } else {
            None
        };
        let properties = retry_properties
            .as_ref()
            .unwrap_or(&msg.properties)
            .as_str();
        // Written straight into extFields from borrowed fields: no copy of the group,
        // topic or broker name per send.
        let header = SendHeaderView {
            producer_group: &self.group,
            topic: &msg.topic,
            default_topic: &self.config.create_topic_key,
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
            broker_name: Some(&mq.broker_name),
        };
        let code = if is_reply {
            request_code::SEND_REPLY_MESSAGE_V2
        } else if prepared.is_batch() {
            request_code::SEND_BATCH_MESSAGE
        } else {
            request_code::SEND_MESSAGE_V2
        };
        let mut request = RemotingCommand::request(code);
        // The fields and the property string in one buffer sized for them.
        request.ext_fields = ExtFields::with_capacity(16 + properties.len() / 24);
        header.write_v2(&mut request.ext_fields);
        Ok(request.with_body(body))
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
        // The fields read in place, in one pass (a later duplicate wins, as with `get`):
        // only those the result keeps are copied.
        let (mut offset_id, mut queue_id, mut queue_offset) = (None, None, None);
        let (mut transaction_id, mut region_id, mut trace_on) = (None, None, None);
        for (name, value) in response.ext_fields.iter() {
            match name {
                "msgId" => offset_id = Some(value),
                "queueId" => queue_id = Some(value),
                "queueOffset" => queue_offset = Some(value),
                "transactionId" => transaction_id = Some(value),
                "MSG_REGION" => region_id = Some(value),
                "TRACE_ON" => trace_on = Some(value),
                _ => {}
            }
        }
        let header_error = |source| ClientError::Header {
            addr: attempt.addr.to_string(),
            source,
        };
        let offset_msg_id = String::from_raw(offset_id, "msgId").map_err(header_error)?;
        let queue_id = i32::from_raw(queue_id, "queueId").map_err(header_error)?;
        let queue_offset = i64::from_raw(queue_offset, "queueOffset").map_err(header_error)?;
        let transaction_id = transaction_id.map(str::to_owned);
        let region_id = region_id.map(str::to_owned);
        let trace_on = trace_on != Some("false");
        let msg_id = match &prepared.batch_ids {
            Some(ids) => ids.clone(),
            None => prepared.msg.uniq_key().unwrap_or_default().to_owned(),
        };
        let mq = MessageQueue::new(
            topic::unwrap_namespace(self.namespace(), &attempt.mq.topic),
            attempt.mq.broker_name.clone(),
            queue_id,
        );
        Ok(SendResult {
            send_status,
            msg_id,
            offset_msg_id,
            message_queue: mq,
            queue_offset,
            transaction_id,
            region_id,
            trace_on,
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
            elapsed: None,
        }
    }

    pub(super) fn after_hooks(
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
        ctx.elapsed = Some(attempt.started.elapsed());
        for hook in &hooks {
            hook.send_message_after(&ctx);
        }
    }
}
