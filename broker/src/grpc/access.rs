//! ACL for gRPC calls (docs/security.md#grpc): each RPC stands for the remoting request
//! it does, needs the same permissions on the same topics and groups, and is checked by
//! the same [`Guard`](vostok_auth::Guard) with the call's `authorization` metadata as
//! proof. A call that cannot be authenticated gets UNAUTHORIZED, one that lacks a
//! permission FORBIDDEN, as Apache's proxy answers.

use vostok_auth::{Access, GrpcProof, Need, Resource};
use vostok_remoting::protocol::message::id::decode_offset_msg_id;
use vostok_remoting::protocol::request_code as code;

use super::context::RequestContext;
use super::proto::{
    AckMessageRequest, ChangeInvisibleDurationRequest, Code, EndTransactionRequest,
    ForwardMessageToDeadLetterQueueRequest, GetOffsetRequest, HeartbeatRequest, MessageQueue,
    NotifyClientTerminationRequest, PullMessageRequest, QueryAssignmentRequest, QueryOffsetRequest,
    QueryRouteRequest, RecallMessageRequest, ReceiveMessageRequest, Resource as ProtoResource,
    SendMessageRequest, Status, SyncLiteSubscriptionRequest, UpdateOffsetRequest,
};
use super::status::status;
use crate::ops::stored_access::stored_message_resources;
use crate::state::Broker;

/// What a call needs: the remoting request it stands for and its resources (read from
/// the store for the calls that point at a stored message).
pub(crate) trait Needs {
    fn needs(&self, broker: &Broker, ctx: &RequestContext) -> (i32, Access<'static>);
}

fn topic(ctx: &RequestContext, r: Option<&ProtoResource>) -> Resource<'static> {
    Resource::topic(&ctx.name_of(r)).into_owned()
}

fn group(ctx: &RequestContext, r: Option<&ProtoResource>) -> Resource<'static> {
    Resource::group(&ctx.name_of(r)).into_owned()
}

fn queue_topic(ctx: &RequestContext, q: Option<&MessageQueue>) -> Resource<'static> {
    topic(ctx, q.and_then(|q| q.topic.as_ref()))
}

fn sub(resources: impl IntoIterator<Item = Resource<'static>>) -> Access<'static> {
    Access::Needs(resources.into_iter().map(Need::subscribe).collect())
}

fn publish(resources: impl IntoIterator<Item = Resource<'static>>) -> Access<'static> {
    Access::Needs(resources.into_iter().map(Need::publish).collect())
}

impl Needs for QueryRouteRequest {
    fn needs(&self, _: &Broker, ctx: &RequestContext) -> (i32, Access<'static>) {
        let named = vec![topic(ctx, self.topic.as_ref())];
        (code::GET_ROUTEINFO_BY_TOPIC, Access::Names(named))
    }
}

/// The group a client call names, if any: nothing more is needed, but a user confined
/// to a namespace may name only its own.
fn names_group(ctx: &RequestContext, r: Option<&ProtoResource>) -> Access<'static> {
    match r.filter(|r| !r.name.is_empty()) {
        Some(r) => Access::Names(vec![group(ctx, Some(r))]),
        None => Access::Open,
    }
}

impl Needs for HeartbeatRequest {
    fn needs(&self, _: &Broker, ctx: &RequestContext) -> (i32, Access<'static>) {
        (code::HEART_BEAT, names_group(ctx, self.group.as_ref()))
    }
}

impl Needs for NotifyClientTerminationRequest {
    fn needs(&self, _: &Broker, ctx: &RequestContext) -> (i32, Access<'static>) {
        (
            code::UNREGISTER_CLIENT,
            names_group(ctx, self.group.as_ref()),
        )
    }
}

impl Needs for SendMessageRequest {
    fn needs(&self, _: &Broker, ctx: &RequestContext) -> (i32, Access<'static>) {
        let topics = self.messages.iter().map(|m| topic(ctx, m.topic.as_ref()));
        (code::SEND_MESSAGE_V2, publish(topics))
    }
}

impl Needs for RecallMessageRequest {
    fn needs(&self, _: &Broker, ctx: &RequestContext) -> (i32, Access<'static>) {
        let t = topic(ctx, self.topic.as_ref());
        (code::RECALL_MESSAGE, publish([t]))
    }
}

/// The resources of the message stored at `offset`, or the refusal naming `what`.
fn stored(
    broker: &Broker,
    offset: Option<i64>,
    group: Option<&str>,
    what: &str,
) -> Result<Vec<Resource<'static>>, Access<'static>> {
    offset
        .and_then(|o| stored_message_resources(&broker.storage.store, o, group))
        .ok_or_else(|| Access::Unresolved(format!("names no stored message ({what})").into()))
}

impl Needs for EndTransactionRequest {
    /// PUB on the half message's real topic, as END_TRANSACTION: the transaction id
    /// is its offset message id. The request's topic is not what decides.
    fn needs(&self, broker: &Broker, _: &RequestContext) -> (i32, Access<'static>) {
        let offset = decode_offset_msg_id(self.transaction_id.trim())
            .ok()
            .map(|(_, offset)| offset);
        let access = match stored(broker, offset, None, "transaction id") {
            Ok(resources) => publish(resources),
            Err(refused) => refused,
        };
        (code::END_TRANSACTION, access)
    }
}

impl Needs for QueryAssignmentRequest {
    fn needs(&self, _: &Broker, ctx: &RequestContext) -> (i32, Access<'static>) {
        let needs = [
            topic(ctx, self.topic.as_ref()),
            group(ctx, self.group.as_ref()),
        ];
        (code::QUERY_ASSIGNMENT, sub(needs))
    }
}

impl Needs for ReceiveMessageRequest {
    fn needs(&self, _: &Broker, ctx: &RequestContext) -> (i32, Access<'static>) {
        let needs = [
            queue_topic(ctx, self.message_queue.as_ref()),
            group(ctx, self.group.as_ref()),
        ];
        (code::POP_MESSAGE, sub(needs))
    }
}

impl Needs for AckMessageRequest {
    fn needs(&self, _: &Broker, ctx: &RequestContext) -> (i32, Access<'static>) {
        let needs = [
            topic(ctx, self.topic.as_ref()),
            group(ctx, self.group.as_ref()),
        ];
        (code::ACK_MESSAGE, sub(needs))
    }
}

impl Needs for ChangeInvisibleDurationRequest {
    fn needs(&self, _: &Broker, ctx: &RequestContext) -> (i32, Access<'static>) {
        let needs = [
            topic(ctx, self.topic.as_ref()),
            group(ctx, self.group.as_ref()),
        ];
        (code::CHANGE_MESSAGE_INVISIBLETIME, sub(needs))
    }
}

impl Needs for ForwardMessageToDeadLetterQueueRequest {
    /// SUB on the topic and group, as the ack that follows, and on what the message
    /// the receipt handle points at belongs to, as CONSUMER_SEND_MSG_BACK.
    fn needs(&self, broker: &Broker, ctx: &RequestContext) -> (i32, Access<'static>) {
        let group_name = ctx.name_of(self.group.as_ref());
        let offset = super::ack::commit_log_offset_of(&self.receipt_handle);
        let access = match stored(broker, offset, Some(&group_name), "receipt handle") {
            Ok(resources) => sub([
                topic(ctx, self.topic.as_ref()),
                Resource::group(&group_name).into_owned(),
            ]
            .into_iter()
            .chain(resources)),
            Err(refused) => refused,
        };
        (code::CONSUMER_SEND_MSG_BACK, access)
    }
}

impl Needs for PullMessageRequest {
    fn needs(&self, _: &Broker, ctx: &RequestContext) -> (i32, Access<'static>) {
        let needs = [
            queue_topic(ctx, self.message_queue.as_ref()),
            group(ctx, self.group.as_ref()),
        ];
        (code::PULL_MESSAGE, sub(needs))
    }
}

impl Needs for UpdateOffsetRequest {
    fn needs(&self, _: &Broker, ctx: &RequestContext) -> (i32, Access<'static>) {
        let needs = [
            queue_topic(ctx, self.message_queue.as_ref()),
            group(ctx, self.group.as_ref()),
        ];
        (code::UPDATE_CONSUMER_OFFSET, sub(needs))
    }
}

impl Needs for GetOffsetRequest {
    fn needs(&self, _: &Broker, ctx: &RequestContext) -> (i32, Access<'static>) {
        let needs = [
            queue_topic(ctx, self.message_queue.as_ref()),
            group(ctx, self.group.as_ref()),
        ];
        (code::QUERY_CONSUMER_OFFSET, sub(needs))
    }
}

impl Needs for QueryOffsetRequest {
    fn needs(&self, _: &Broker, ctx: &RequestContext) -> (i32, Access<'static>) {
        let t = queue_topic(ctx, self.message_queue.as_ref());
        (code::SEARCH_OFFSET_BY_TIMESTAMP, sub([t]))
    }
}

impl Needs for SyncLiteSubscriptionRequest {
    fn needs(&self, _: &Broker, _: &RequestContext) -> (i32, Access<'static>) {
        (code::HEART_BEAT, Access::Open)
    }
}

/// Checks a call against the broker's guard; `None` when it may run (or ACL is off).
pub(crate) fn refusal(
    broker: &Broker,
    ctx: &RequestContext,
    needs: (i32, Access<'_>),
) -> Option<Status> {
    admitted(broker, ctx, needs).err()
}

/// Checks a call against the broker's guard: who made it (`None` when ACL is off),
/// or the refusal.
pub(crate) fn admitted(
    broker: &Broker,
    ctx: &RequestContext,
    needs: (i32, Access<'_>),
) -> Result<Option<vostok_auth::Principal>, Status> {
    let Some(guard) = broker.guard.as_ref() else {
        return Ok(None);
    };
    let (code, access) = needs;
    let proof = GrpcProof {
        code,
        authorization: ctx.authorization.as_ref(),
        date_time: &ctx.date_time,
    };
    match guard.check(ctx.remote.ip(), &proof, || access) {
        Ok(principal) => Ok(Some(principal)),
        Err(denied) => {
            tracing::debug!(client = %ctx.client_id, peer = %ctx.remote, reason = %denied.reason, "gRPC call refused");
            let code = if denied.unauthenticated {
                Code::Unauthorized
            } else {
                Code::Forbidden
            };
            Err(status(code, denied.reason))
        }
    }
}

/// The topics and group a telemetry stream's settings name: what a producer publishes
/// to, what a consumer group subscribes to. Each later call needs its permissions;
/// the settings only have to stay inside a confined user's namespaces.
pub(crate) fn settings_names(
    ctx: &RequestContext,
    settings: &super::proto::Settings,
) -> Vec<Resource<'static>> {
    use super::proto::settings::PubSub;
    match &settings.pub_sub {
        Some(PubSub::Publishing(p)) => p.topics.iter().map(|t| topic(ctx, Some(t))).collect(),
        Some(PubSub::Subscription(s)) => std::iter::once(group(ctx, s.group.as_ref()))
            .chain(s.subscriptions.iter().map(|e| topic(ctx, e.topic.as_ref())))
            .collect(),
        None => vec![],
    }
}
