//! Popping messages (`PopMessageProcessor`, docs/pop.md#pop_message).
//!
//! One pass reads the queues of the topic (one, or all starting at a random one) and
//! the group's POP retry topic (first with probability `popFromRetryProbability`,
//! else only when the batch is not full). Per queue, under the queue's pop lock: read
//! from the group's offset; for a plain pop store a checkpoint record, then move the
//! offset past the batch and add the checkpoint to the table; for a FIFO pop record the
//! batch in the order table and leave the offset at its start. [`pop`] repeats the pass
//! after each wake-up of the long polling until something is found or the poll time is
//! over.

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use vostok_remoting::protocol::header::INIT_MODE_MIN;
use vostok_remoting::protocol::message::record::RecordView;
use vostok_remoting::protocol::message::{property, MessageExt};
use vostok_remoting::protocol::pop::{
    self, ExtraInfo, RetryFlag, MAX_POP_NUMS, ORDER_REVIVE_QUEUE,
};
use vostok_remoting::protocol::response_code;
use vostok_remoting::protocol::topic;
use vostok_remoting::support::time::now_millis;
use vostok_remoting::Channel;
use vostok_store::GetMessageStatus;

use super::{consuming_group, readable_topic, PopError, PopTables};
use crate::state::consumer_filter::ExpressionMessageFilter;
use crate::state::pop::checkpoint::{Checkpoint, CkKey};
use crate::state::pop::journal;

/// What a consumer asks for.
#[derive(Debug, Clone)]
pub(crate) struct PopRequest {
    pub(crate) group: String,
    pub(crate) topic: String,
    /// Negative: every readable queue.
    pub(crate) queue_id: i32,
    pub(crate) max_msgs: i32,
    pub(crate) invisible_time: i64,
    /// How long to hold the request while nothing is there.
    pub(crate) poll_time: Duration,
    /// `INIT_MODE_MIN` or `INIT_MODE_MAX`.
    pub(crate) init_mode: i32,
    /// A tag or routing-key filter (docs/amqp.md); `None` takes everything.
    pub(crate) filter: Option<ExpressionMessageFilter>,
    pub(crate) order: bool,
    pub(crate) attempt_id: Option<String>,
    /// The client's connection, when it has one of its own: a group created on first
    /// use counts against its share (docs/limits.md#groups-and-topics).
    pub(crate) client: Option<Channel>,
}

/// One popped message.
#[derive(Debug, Clone)]
pub(crate) struct PoppedMessage {
    /// The record to hand out: as stored, or for a retried message re-encoded under the
    /// popped topic with `POP_CK` set (unless `popResponseReturnActualRetryTopic`).
    pub(crate) record: Bytes,
    /// Its handle (`POP_CK`): what an ack names. The remoting response carries it in
    /// the header's offset infos instead; the gRPC front end makes receipt handles of it.
    pub(crate) extra_info: ExtraInfo,
    /// Earlier deliveries of a FIFO message (`orderCountInfo`).
    pub(crate) order_count: i32,
}

/// The outcome of a pop; `messages` may be empty.
#[derive(Debug, Clone, Default)]
pub(crate) struct PopResult {
    pub(crate) pop_time: i64,
    pub(crate) invisible_time: i64,
    pub(crate) revive_qid: i32,
    /// Messages left behind in the queues read (an estimate).
    pub(crate) rest_num: i64,
    pub(crate) start_offset_info: String,
    pub(crate) msg_offset_info: String,
    pub(crate) order_count_info: String,
    pub(crate) messages: Vec<PoppedMessage>,
}

/// Pops, holding the request up to its poll time while nothing is found. Returns the
/// result (empty when the poll time ran out) or POLLING_FULL and the other refusals.
/// `gone` resolves when nobody waits for the answer any more.
pub(crate) async fn pop(
    tables: PopTables<'_>,
    req: &PopRequest,
    gone: impl Future<Output = ()>,
) -> Result<PopResult, PopError> {
    let deadline = tokio::time::Instant::now() + req.poll_time;
    tokio::pin!(gone);
    loop {
        let result = pop_once(tables, req).await?;
        let now = tokio::time::Instant::now();
        if !result.messages.is_empty() || now >= deadline || tables.life.shutdown.is_cancelled() {
            return Ok(result);
        }
        let hold =
            tables
                .pop
                .polling
                .hold(&req.topic, &req.group, req.queue_id, deadline - now, || {
                    may_have_messages(tables, req)
                });
        tokio::select! {
            held = hold => held.map_err(|_| {
                PopError::new(response_code::POLLING_FULL, "too many pop requests held")
            })?,
            _ = &mut gone => return Ok(result),
        }
    }
}

/// One pass over the queues, without holding.
pub(crate) async fn pop_once(
    tables: PopTables<'_>,
    req: &PopRequest,
) -> Result<PopResult, PopError> {
    let config = &tables.config;
    if !topic::perm::is_readable(tables.runtime.broker_permission()) {
        return Err(PopError::new(
            response_code::NO_PERMISSION,
            format!("the broker[{}] pop message is forbidden", config.broker_ip1),
        ));
    }
    if req.max_msgs > MAX_POP_NUMS || req.max_msgs <= 0 {
        return Err(PopError::new(
            response_code::INVALID_PARAMETER,
            format!(
                "the broker[{}] pop message's num is greater than 32",
                config.broker_ip1
            ),
        ));
    }
    let topic_config = readable_topic(&tables.storage.topics, &req.topic)?;
    if req.queue_id >= topic_config.read_queue_nums {
        return Err(PopError::new(
            response_code::INVALID_PARAMETER,
            format!(
                "queueId[{}] is illegal, topic:[{}] topicConfig.readQueueNums:[{}]",
                req.queue_id, req.topic, topic_config.read_queue_nums
            ),
        ));
    }
    consuming_group(tables.consumers, &req.group, req.client.as_ref())?;
    if !req.order && tables.pop.checkpoints().len() >= tables.pop.max_checkpoints {
        return Err(PopError::new(
            response_code::POLLING_FULL,
            "too many popped messages not acked yet (popCkMaxBufferSize)",
        ));
    }
    let mut pass = Pass {
        tables,
        req,
        result: PopResult {
            pop_time: now_millis(),
            invisible_time: req.invisible_time,
            revive_qid: if req.order {
                ORDER_REVIVE_QUEUE
            } else {
                tables.pop.next_revive_qid()
            },
            ..PopResult::default()
        },
    };
    let random = rand::random_range(0..100);
    let retry_first = !req.order && random < config.pop.pop_from_retry_probability;
    let retry_topic =
        pop::pop_retry_topic(&req.topic, &req.group, config.pop.enable_retry_topic_v2);
    if retry_first {
        pass.topic(&retry_topic, random).await;
    }
    if req.queue_id < 0 {
        pass.topic(&req.topic, random).await;
    } else {
        pass.queue(&req.topic, req.queue_id).await;
    }
    if !retry_first && !req.order {
        pass.topic(&retry_topic, random).await;
    }
    Ok(pass.result)
}

/// True when a queue of the request has messages beyond the group's offset (checked
/// once a held request is registered, so that an arrival just before is not missed).
fn may_have_messages(tables: PopTables<'_>, req: &PopRequest) -> bool {
    let Some(config) = tables.storage.topics.get(&req.topic) else {
        return false;
    };
    let queues: Vec<i32> = if req.queue_id < 0 {
        (0..config.read_queue_nums).collect()
    } else {
        vec![req.queue_id]
    };
    let now = now_millis();
    queues.into_iter().any(|q| {
        let committed = tables.consumers.offsets.query(&req.group, &req.topic, q);
        let blocked = req.order
            && tables.pop.orders().check_block(
                &(req.topic.clone(), req.group.clone(), q),
                req.attempt_id.as_deref(),
                now,
            );
        !blocked
            && committed >= 0
            && tables.storage.store.max_offset_in_queue(&req.topic, q) > committed
    })
}

struct Pass<'a> {
    tables: PopTables<'a>,
    req: &'a PopRequest,
    result: PopResult,
}

impl Pass<'_> {
    fn room(&self) -> usize {
        (self.req.max_msgs.max(0) as usize).saturating_sub(self.result.messages.len())
    }

    /// Every readable queue of `topic`, starting at `random`.
    async fn topic(&mut self, topic: &str, random: i32) {
        let Some(config) = self.tables.storage.topics.get(topic) else {
            return;
        };
        let n = config.read_queue_nums;
        for i in 0..n {
            self.queue(topic, (random + i) % n).await;
        }
    }

    /// Pops what fits from one queue.
    async fn queue(&mut self, topic: &str, queue_id: i32) {
        let (tables, req) = (self.tables, self.req);
        let store = &tables.storage.store;
        let max_offset = store.max_offset_in_queue(topic, queue_id);
        let Some(_guard) = tables.pop.try_lock_queue(topic, &req.group, queue_id) else {
            self.result.rest_num += max_offset - self.offset(topic, queue_id, false);
            return;
        };
        let order_key = (topic.to_owned(), req.group.clone(), queue_id);
        if req.order {
            let now = now_millis();
            let mut orders = tables.pop.orders();
            if !orders.has_room(&order_key, now)
                || orders.check_block(&order_key, req.attempt_id.as_deref(), now)
            {
                return;
            }
        }
        let mut offset = self.offset(topic, queue_id, true);
        let room = self.room();
        if room == 0 {
            self.result.rest_num += max_offset - offset;
            return;
        }
        let filter = req
            .filter
            .as_ref()
            .filter(|_| !topic::is_retry_topic(topic));
        let get = |from: i64| {
            tables.storage.get_for_consumer_async(
                topic,
                queue_id,
                from,
                (room as i32, i32::MAX),
                filter,
            )
        };
        let mut got = get(offset).await;
        if matches!(
            got.status,
            GetMessageStatus::OffsetTooSmall
                | GetMessageStatus::OffsetOverflowBadly
                | GetMessageStatus::OffsetFoundNull
        ) && got.next_begin_offset != offset
        {
            tables
                .consumers
                .offsets
                .commit(&req.group, topic, queue_id, got.next_begin_offset);
            offset = got.next_begin_offset;
            got = get(offset).await;
        }
        self.result.rest_num += got.max_offset - got.next_begin_offset;
        if got.messages.is_empty() {
            if got.next_begin_offset > offset && got.status != GetMessageStatus::Found {
                tables
                    .consumers
                    .offsets
                    .commit(&req.group, topic, queue_id, got.next_begin_offset);
            }
            return;
        }
        let offsets: Vec<i64> = got
            .messages
            .iter()
            .map(|r| RecordView::parse_message(r, false).map_or(-1, |v| v.queue_offset()))
            .collect();
        let pop_time = self.result.pop_time;
        let mut counts = vec![0; offsets.len()];
        if req.order {
            let (per_offset, min) = tables.pop.orders().update(
                order_key,
                req.attempt_id.clone(),
                pop_time,
                req.invisible_time,
                offsets.clone(),
            );
            counts = per_offset.iter().map(|(_, c)| *c).collect();
            pop::push_order_count_info(
                &mut self.result.order_count_info,
                RetryFlag::of_topic(topic),
                queue_id,
                &per_offset,
                min,
            );
            tables
                .consumers
                .offsets
                .commit(&req.group, topic, queue_id, offset);
        } else if !self
            .checkpoint(topic, queue_id, offset, &offsets, got.next_begin_offset)
            .await
        {
            return;
        }
        tables.observed.count_get(got.messages.len() as u64);
        tables.observed.metrics.record_get(
            topic,
            &req.group,
            got.messages.len() as u64,
            got.messages.iter().map(|m| m.len() as u64).sum(),
        );
        tables
            .observed
            .metrics
            .pulled_to(topic, &req.group, queue_id, got.next_begin_offset);
        let retry = RetryFlag::of_topic(topic);
        pop::push_start_offset_info(&mut self.result.start_offset_info, retry, queue_id, offset);
        pop::push_msg_offset_info(&mut self.result.msg_offset_info, retry, queue_id, &offsets);
        for ((record, queue_offset), order_count) in
            got.messages.into_iter().zip(offsets).zip(counts)
        {
            let extra_info = ExtraInfo {
                ck_queue_offset: offset,
                pop_time,
                invisible_time: req.invisible_time,
                revive_qid: self.result.revive_qid,
                retry,
                broker_name: tables.config.broker_name.clone(),
                queue_id,
                queue_offset: Some(queue_offset),
            };
            let record =
                if retry.is_retry() && !tables.config.pop.pop_response_return_actual_retry_topic {
                    shown_under(&record, &req.topic, &extra_info).unwrap_or(record)
                } else {
                    record
                };
            self.result.messages.push(PoppedMessage {
                record,
                extra_info,
                order_count,
            });
        }
    }

    /// Records the checkpoint of a batch, then moves the group's offset past it. False
    /// when the record could not be stored: nothing is handed out.
    async fn checkpoint(
        &mut self,
        topic: &str,
        queue_id: i32,
        start: i64,
        offsets: &[i64],
        next: i64,
    ) -> bool {
        let (tables, req) = (self.tables, self.req);
        let mut ck = Checkpoint {
            key: CkKey {
                topic: topic.into(),
                group: req.group.as_str().into(),
                queue_id,
                start_offset: start,
                pop_time: self.result.pop_time,
            },
            invisible_time: req.invisible_time,
            diffs: offsets
                .iter()
                .map(|o| u32::try_from(o - start).unwrap_or(u32::MAX))
                .collect(),
            acked: 0,
            revive_qid: self.result.revive_qid,
            revive_offset: -1,
        };
        let _pending = tables.pop.begin_write(ck.revive_qid);
        let record = journal::checkpoint_record(
            &ck,
            &tables.pop.revive_topic,
            &tables.config.broker_name,
            tables.broker_addr,
        );
        let put = tables.storage.store.put_message(record).await;
        let Some(append) = put.append.filter(|_| put.status.is_stored()) else {
            tracing::warn!(topic, queue_id, status = ?put.status, "cannot store a POP checkpoint; nothing popped");
            return false;
        };
        ck.revive_offset = append.queue_offset;
        tables
            .consumers
            .offsets
            .commit(&req.group, topic, queue_id, next);
        tables.pop.checkpoints().insert(ck);
        true
    }

    /// The group's offset on a queue; a group without one starts at `initMode` (retry
    /// topics always at their first message), saved when `init`.
    fn offset(&self, topic: &str, queue_id: i32, init: bool) -> i64 {
        let (tables, req) = (self.tables, self.req);
        let committed = tables.consumers.offsets.query(&req.group, topic, queue_id);
        if committed >= 0 {
            return committed;
        }
        let store = &tables.storage.store;
        let offset = if req.init_mode == INIT_MODE_MIN || topic::is_retry_topic(topic) {
            store.min_offset_in_queue(topic, queue_id)
        } else {
            (store.max_offset_in_queue(topic, queue_id) - 1).max(0)
        };
        if init {
            tables
                .consumers
                .offsets
                .commit(&req.group, topic, queue_id, offset);
        }
        offset
    }
}

/// A retried message's record shown under the topic popped, with its `POP_CK`
/// (`popMsgFromQueue`'s re-encoding).
fn shown_under(record: &Bytes, topic: &str, extra_info: &ExtraInfo) -> Option<Bytes> {
    let mut msg = MessageExt::decode(record, false).ok()?;
    msg.topic = topic.to_owned();
    if !msg.properties.contains(property::POP_CK) {
        msg.properties
            .insert(property::POP_CK, extra_info.to_string());
    }
    Some(Bytes::from(msg.encode()))
}
