//! PullMessage, UpdateOffset, GetOffset and QueryOffset: the offset-based consumer RPCs
//! that Apache's proxy declares but does not serve
//! (docs/grpc.md#pullmessage-and-offsets). Vostok serves them on its store and
//! consumer-offset table, the ones PULL_MESSAGE and the offset
//! requests of the remoting protocol use, so a gRPC pull consumer and a remoting one
//! share offsets.
//!
//! A pull streams a `status`, then one `message` per message found, then the
//! `next_offset`; an empty pull is held (long polling, at most 20 s) until a message
//! arrives.

use std::collections::BTreeSet;
use std::pin::Pin;
use std::time::Duration;

use futures_util::Stream;
use vostok_remoting::protocol::body::{SubscriptionData, EXPRESSION_TYPE_TAG, SUB_ALL};
use vostok_remoting::protocol::message::MessageExt;
use vostok_store::GetMessageStatus;

use super::client::{filter_of, valid_group, valid_topic};
use super::context::RequestContext;
use super::convert::{millis_of, millis_of_duration, to_proto, Delivery};
use super::endpoint::GrpcService;
use super::proto::pull_message_response::Content;
use super::proto::{
    Code, GetOffsetRequest, GetOffsetResponse, PullMessageRequest, PullMessageResponse,
    QueryOffsetPolicy, QueryOffsetRequest, QueryOffsetResponse, Status, UpdateOffsetRequest,
    UpdateOffsetResponse,
};
use super::session::CONSUMER_LONG_POLLING_MS;
use super::status::{from_refusal, from_remoting, ok, status};
use crate::ops::offset::{self, commit_offset, CommitOffset, QueryOffset};
use crate::ops::pop::{consuming_group, readable_topic};
use crate::ops::Client;

pub(crate) type PullStream =
    Pin<Box<dyn Stream<Item = Result<PullMessageResponse, tonic::Status>> + Send>>;

/// Most bytes one pull reads.
const MAX_PULL_BYTES: i32 = 4 * 1024 * 1024;

fn items(list: Vec<PullMessageResponse>) -> PullStream {
    Box::pin(futures_util::stream::iter(list.into_iter().map(Ok)))
}

pub(crate) async fn pull_message(
    svc: &GrpcService,
    ctx: &RequestContext,
    request: PullMessageRequest,
) -> PullStream {
    match pull(svc, ctx, request).await {
        Ok(list) => items(list),
        Err(s) => items(vec![PullMessageResponse {
            content: Some(Content::Status(s)),
        }]),
    }
}

async fn pull(
    svc: &GrpcService,
    ctx: &RequestContext,
    request: PullMessageRequest,
) -> Result<Vec<PullMessageResponse>, Status> {
    let broker = &svc.broker;
    let group = ctx.name_of(request.group.as_ref());
    let queue = request.message_queue.unwrap_or_default();
    let topic = ctx.name_of(queue.topic.as_ref());
    valid_topic(&topic)?;
    valid_group(&group)?;
    let map_err = |e: crate::ops::pop::PopError| from_remoting(e.code, &e.remark);
    readable_topic(&broker.storage.topics, &topic).map_err(map_err)?;
    consuming_group(&broker.consumers, &group, svc.session_channel(ctx).as_ref())
        .map_err(map_err)?;
    if request.offset < 0 {
        return Err(status(Code::IllegalOffset, "offset cannot be negative"));
    }
    let filter = filter_of(&topic, request.filter_expression.as_ref())?;
    let batch = request.batch_size.clamp(1, 32);
    let read = || {
        broker.storage.get_for_consumer_async(
            &topic,
            queue.id,
            request.offset,
            (batch, MAX_PULL_BYTES),
            Some(&filter),
        )
    };
    let mut result = read().await;
    if result.messages.is_empty()
        && matches!(
            result.status,
            GetMessageStatus::OffsetOverflowOne
                | GetMessageStatus::NoMatchedMessage
                | GetMessageStatus::NoMessageInQueue
        )
    {
        let timeout = request
            .long_polling_timeout
            .as_ref()
            .map(millis_of_duration)
            .unwrap_or(0)
            .clamp(0, CONSUMER_LONG_POLLING_MS);
        if timeout > 0 {
            let store = broker.storage.store.clone();
            let (t, q) = (topic.clone(), queue.id);
            broker
                .consumers
                .long_polling
                .hold(
                    &topic,
                    queue.id,
                    result.next_begin_offset.max(request.offset),
                    tag_codes(filter.subscription()),
                    Duration::from_millis(timeout as u64),
                    move || store.max_offset_in_queue(&t, q),
                )
                .await;
            result = read().await;
        }
    }
    broker.observed.count_get(result.messages.len() as u64);
    broker.observed.metrics.record_get(
        &topic,
        &group,
        result.messages.len() as u64,
        result.buffer_total_size as u64,
    );
    broker
        .observed
        .metrics
        .pulled_to(&topic, &group, queue.id, result.next_begin_offset);
    let found = !result.messages.is_empty();
    let mut out = vec![PullMessageResponse {
        content: Some(Content::Status(if found {
            ok()
        } else {
            status(Code::MessageNotFound, format!("{:?}", result.status))
        })),
    }];
    for record in &result.messages {
        if let Ok(msg) = MessageExt::decode(record, false) {
            out.push(PullMessageResponse {
                content: Some(Content::Message(to_proto(ctx, &msg, &Delivery::default()))),
            });
        }
    }
    out.push(PullMessageResponse {
        content: Some(Content::NextOffset(result.next_begin_offset)),
    });
    Ok(out)
}

fn tag_codes(sub: &SubscriptionData) -> Option<BTreeSet<i32>> {
    if sub.sub_string == SUB_ALL || sub.expression_type != EXPRESSION_TYPE_TAG {
        None
    } else {
        Some(sub.code_set.clone())
    }
}

pub(crate) fn update_offset(
    svc: &GrpcService,
    ctx: &RequestContext,
    request: UpdateOffsetRequest,
) -> UpdateOffsetResponse {
    let result = (|| {
        let group = ctx.name_of(request.group.as_ref());
        let queue = request.message_queue.unwrap_or_default();
        let topic = ctx.name_of(queue.topic.as_ref());
        valid_topic(&topic)?;
        valid_group(&group)?;
        if request.offset < 0 {
            return Err(status(Code::IllegalOffset, "offset cannot be negative"));
        }
        let map_err = |e: crate::ops::pop::PopError| from_remoting(e.code, &e.remark);
        let session = svc.session_channel(ctx);
        consuming_group(&svc.broker.consumers, &group, session.as_ref()).map_err(map_err)?;
        let client = Client {
            addr: ctx.remote,
            connection: session.as_ref(),
        };
        let commit = CommitOffset {
            group,
            topic,
            queue_id: queue.id,
            offset: request.offset,
            topic_must_exist: false,
        };
        let broker = &svc.broker;
        commit_offset(&broker.consumers, &broker.storage.topics, client, &commit)
            .map_err(from_refusal)
    })();
    UpdateOffsetResponse {
        status: Some(result.err().unwrap_or_else(ok)),
    }
}

pub(crate) fn get_offset(
    svc: &GrpcService,
    ctx: &RequestContext,
    request: GetOffsetRequest,
) -> GetOffsetResponse {
    let group = ctx.name_of(request.group.as_ref());
    let queue = request.message_queue.unwrap_or_default();
    let topic = ctx.name_of(queue.topic.as_ref());
    let query = QueryOffset {
        group,
        topic,
        queue_id: queue.id,
        // gRPC answers what the group committed, nothing in its place.
        zero_if_not_found: false,
    };
    let broker = &svc.broker;
    match offset::query_offset(&broker.consumers.offsets, &broker.storage.store, &query) {
        Ok(offset) => GetOffsetResponse {
            status: Some(ok()),
            offset,
        },
        Err(_) => GetOffsetResponse {
            status: Some(status(
                Code::OffsetNotFound,
                format!(
                    "no offset of {} for {} queue {}",
                    query.group, query.topic, query.queue_id
                ),
            )),
            offset: 0,
        },
    }
}

/// A search by time may read the tier: with the tier on, it runs on the tier's reader
/// threads (docs/tiered-storage.md#reads-and-the-hot-tail).
pub(crate) async fn query_offset(
    svc: &GrpcService,
    ctx: &RequestContext,
    request: QueryOffsetRequest,
) -> QueryOffsetResponse {
    let queue = request.message_queue.unwrap_or_default();
    let topic = ctx.name_of(queue.topic.as_ref());
    let store = &svc.broker.storage.store;
    let offset = match QueryOffsetPolicy::try_from(request.query_offset_policy) {
        Ok(QueryOffsetPolicy::End) => store.max_offset_in_queue(&topic, queue.id),
        Ok(QueryOffsetPolicy::Timestamp) if store.tier_serves_reads() => {
            let at = request.timestamp.as_ref().map(millis_of).unwrap_or(0);
            let (s, t, q) = (std::sync::Arc::clone(store), topic.clone(), queue.id);
            let found = store
                .on_tier_readers(move || s.offset_in_queue_by_time(&t, q, at))
                .await;
            let Some(offset) = found else {
                return QueryOffsetResponse {
                    status: Some(status(
                        Code::TooManyRequests,
                        "the tiered store's readers are busy; try again",
                    )),
                    offset: 0,
                };
            };
            offset
        }
        Ok(QueryOffsetPolicy::Timestamp) => {
            let at = request.timestamp.as_ref().map(millis_of).unwrap_or(0);
            store.offset_in_queue_by_time(&topic, queue.id, at)
        }
        _ => store.min_offset_in_queue(&topic, queue.id),
    };
    QueryOffsetResponse {
        status: Some(ok()),
        offset,
    }
}
