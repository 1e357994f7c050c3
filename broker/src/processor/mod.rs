//! Request processors: one function per request code, grouped by area as RocketMQ groups
//! them. [`BrokerProcessor`] routes each request by code; business outcomes are responses
//! with RocketMQ codes, never errors. Work that another front end needs too lives in
//! `crate::ops`: the processor decodes the header into its typed request, calls it and
//! maps the outcome ([`refused`] for a refusal).

mod access;
mod ack;
mod assignment;
mod auth_admin;
mod broker_admin;
mod broker_config;
mod broker_inspect;
mod client_manage;
mod client_relay;
mod consumer_manage;
mod group_admin;
mod notification;
mod offset_reset;
mod ops_admin;
mod plain_acl_admin;
mod pop;
mod pull;
mod put_response;
mod query;
mod reply;
mod role;
mod role_notify;
mod scope;
mod send;
mod send_back;
mod store_admin;
mod tier_reads;
pub(crate) mod topic_admin;
mod topic_consumers;
mod transaction;

use std::sync::Arc;

use tracing::debug;
use vostok_remoting::protocol::header::CommandHeader;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::{BoxFuture, Channel, HeaderError, RemotingCommand, RequestProcessor};

use crate::state::Broker;

/// Serves every broker request code.
pub struct BrokerProcessor {
    broker: Arc<Broker>,
}

impl BrokerProcessor {
    pub fn new(broker: Arc<Broker>) -> Self {
        BrokerProcessor { broker }
    }
}

impl RequestProcessor for BrokerProcessor {
    fn process<'a>(
        &'a self,
        channel: &'a Channel,
        request: RemotingCommand,
    ) -> BoxFuture<'a, Option<RemotingCommand>> {
        Box::pin(async move {
            let b = &*self.broker;
            let mut confinement = None;
            if let Some(guard) = &b.guard {
                let checked = guard
                    .check(channel.peer_addr().ip(), &request, || {
                        access::access(b, &request)
                    })
                    .and_then(|principal| {
                        if let Some(c) = principal.confinement() {
                            let user = principal.access_key().unwrap_or("-");
                            scope::check_heartbeat(&request, user, c)?;
                        }
                        Ok(principal)
                    });
                match checked {
                    Ok(principal) => confinement = principal.confinement().cloned(),
                    Err(denied) => return refuse(channel, &request, denied),
                }
            }
            if let Some(refusal) = role::slave_refusal(b, request.code) {
                return Some(refusal);
            }
            let started = b
                .observed
                .metrics
                .is_enabled()
                .then(std::time::Instant::now);
            let (code, oneway) = (request.code, request.is_oneway());
            let response = match request.code {
                request_code::SEND_MESSAGE
                | request_code::SEND_MESSAGE_V2
                | request_code::SEND_BATCH_MESSAGE => send::send_message(b, channel, request).await,
                request_code::SEND_REPLY_MESSAGE | request_code::SEND_REPLY_MESSAGE_V2 => {
                    reply::send_reply_message(b, channel, request).await
                }
                request_code::CONSUMER_SEND_MSG_BACK => {
                    send_back::consumer_send_msg_back(b, channel, request).await
                }
                request_code::PULL_MESSAGE | request_code::LITE_PULL_MESSAGE => {
                    // `None`: held; the pull answers (and records its metrics) itself.
                    match pull::pull_message(&self.broker, channel, request).await {
                        Some(response) => response,
                        None => return None,
                    }
                }
                request_code::HEART_BEAT => client_manage::heart_beat(b, channel, request).await,
                request_code::UNREGISTER_CLIENT => {
                    client_manage::unregister_client(b, channel, request).await
                }
                request_code::CHECK_CLIENT_CONFIG => client_manage::check_client_config(b, request),
                request_code::GET_CONSUMER_LIST_BY_GROUP => {
                    consumer_manage::get_consumer_list_by_group(b, request)
                }
                request_code::UPDATE_CONSUMER_OFFSET => {
                    consumer_manage::update_consumer_offset(b, channel, request)
                }
                request_code::QUERY_CONSUMER_OFFSET => {
                    consumer_manage::query_consumer_offset(b, request)
                }
                request_code::GET_MAX_OFFSET => consumer_manage::get_max_offset(b, request),
                request_code::GET_MIN_OFFSET => consumer_manage::get_min_offset(b, request),
                request_code::SEARCH_OFFSET_BY_TIMESTAMP => {
                    let handler = consumer_manage::search_offset_by_timestamp;
                    tier_reads::run(&self.broker, request, handler).await
                }
                request_code::GET_EARLIEST_MSG_STORETIME => {
                    let handler = consumer_manage::get_earliest_msg_storetime;
                    tier_reads::run(&self.broker, request, handler).await
                }
                request_code::LOCK_BATCH_MQ => consumer_manage::lock_batch_mq(b, request),
                request_code::UNLOCK_BATCH_MQ => consumer_manage::unlock_batch_mq(b, request),
                request_code::GET_ALL_CONSUMER_OFFSET => {
                    consumer_manage::get_all_consumer_offset(b)
                }
                request_code::QUERY_MESSAGE => {
                    tier_reads::run(&self.broker, request, query::query_message).await
                }
                request_code::VIEW_MESSAGE_BY_ID => {
                    tier_reads::run(&self.broker, request, query::view_message_by_id).await
                }
                request_code::END_TRANSACTION => {
                    transaction::end_transaction(b, channel, request).await
                }
                request_code::UPDATE_AND_CREATE_TOPIC => {
                    let started = std::time::Instant::now();
                    let name = request.ext_fields.get("topic").unwrap_or("").to_owned();
                    let response =
                        topic_admin::update_and_create_topic(&self.broker, request).await;
                    b.observed.metrics.events.topic_created(
                        &name,
                        response.code == response_code::SUCCESS,
                        started.elapsed().as_millis() as u64,
                    );
                    response
                }
                request_code::DELETE_TOPIC_IN_BROKER => {
                    topic_admin::delete_topic(&self.broker, request).await
                }
                request_code::GET_ALL_TOPIC_CONFIG => topic_admin::get_all_topic_config(b),
                request_code::GET_TOPIC_CONFIG => topic_admin::get_topic_config(b, request),
                request_code::GET_BROKER_RUNTIME_INFO => broker_admin::get_broker_runtime_info(b),
                request_code::VIEW_BROKER_STATS_DATA => {
                    broker_admin::view_broker_stats_data(b, request)
                }
                request_code::GET_BROKER_EPOCH_CACHE => broker_admin::get_broker_epoch_cache(b),
                request_code::NOTIFY_BROKER_ROLE_CHANGED => {
                    role_notify::notify_broker_role_changed(b, channel, &request)
                }
                request_code::GET_BROKER_CONFIG => broker_admin::get_broker_config(b),
                request_code::UPDATE_BROKER_CONFIG => {
                    broker_config::update_broker_config(b, request)
                }
                request_code::INVOKE_BROKER_TO_RESET_OFFSET => {
                    let handler = offset_reset::invoke_broker_to_reset_offset;
                    tier_reads::run(&self.broker, request, handler).await
                }
                request_code::CLEAN_EXPIRED_CONSUMEQUEUE | request_code::CLEAN_UNUSED_TOPIC => {
                    store_admin::clean_unused_topics(&self.broker).await
                }
                request_code::GET_BROKER_CONSUME_STATS => {
                    let handler = broker_inspect::get_broker_consume_stats;
                    tier_reads::run(&self.broker, request, handler).await
                }
                request_code::QUERY_CONSUME_QUEUE => {
                    let handler = broker_inspect::query_consume_queue;
                    tier_reads::run(&self.broker, request, handler).await
                }
                request_code::GET_BROKER_HA_STATUS => broker_inspect::get_broker_ha_status(b),
                request_code::RESET_MASTER_FLUSH_OFFSET => {
                    broker_inspect::reset_master_flush_offset(b, request).await
                }
                request_code::SET_MESSAGE_REQUEST_MODE => {
                    assignment::set_message_request_mode(&self.broker, request).await
                }
                request_code::GET_ALL_MESSAGE_REQUEST_MODE => {
                    assignment::get_all_message_request_mode(b)
                }
                request_code::QUERY_ASSIGNMENT => assignment::query_assignment(b, request).await,
                request_code::GET_SUBSCRIPTIONGROUP_CONFIG => {
                    group_admin::get_subscription_group_config(b, request)
                }
                request_code::INVOKE_BROKER_TO_GET_CONSUMER_STATUS => {
                    client_relay::get_consumer_status(b, request).await
                }
                request_code::DELETE_EXPIRED_COMMITLOG => store_admin::delete_expired_commit_log(b),
                request_code::GET_TOPIC_STATS_INFO => {
                    let handler = topic_admin::get_topic_stats_info;
                    tier_reads::run(&self.broker, request, handler).await
                }
                request_code::GET_CONSUME_STATS => {
                    let handler = group_admin::get_consume_stats;
                    tier_reads::run(&self.broker, request, handler).await
                }
                request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP => {
                    let started = std::time::Instant::now();
                    let response =
                        group_admin::update_and_create_subscription_group(&self.broker, request)
                            .await;
                    b.observed.metrics.events.group_created(
                        response.code == response_code::SUCCESS,
                        started.elapsed().as_millis() as u64,
                    );
                    response
                }
                request_code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG => {
                    group_admin::get_all_subscription_group_config(b)
                }
                request_code::DELETE_SUBSCRIPTIONGROUP => {
                    group_admin::delete_subscription_group(&self.broker, request).await
                }
                request_code::GET_CONSUMER_CONNECTION_LIST => {
                    group_admin::get_consumer_connection_list(b, request)
                }
                request_code::QUERY_TOPIC_CONSUME_BY_WHO => {
                    topic_consumers::query_topic_consume_by_who(b, request)
                }
                request_code::GET_CONSUMER_RUNNING_INFO => {
                    client_relay::get_consumer_running_info(b, request).await
                }
                request_code::CONSUME_MESSAGE_DIRECTLY => {
                    client_relay::consume_message_directly(b, request).await
                }
                request_code::GET_PRODUCER_CONNECTION_LIST => {
                    group_admin::get_producer_connection_list(b, request)
                }
                request_code::GET_ALL_DELAY_OFFSET => broker_admin::get_all_delay_offset(b),
                request_code::POP_MESSAGE | request_code::POP_MESSAGE_SHORT => {
                    pop::pop_message(b, channel, request).await
                }
                request_code::PEEK_MESSAGE | request_code::PEEK_MESSAGE_SHORT => {
                    pop::peek_message(b, channel, request)
                }
                request_code::ACK_MESSAGE | request_code::ACK_MESSAGE_SHORT => {
                    ack::ack_message(b, request).await
                }
                request_code::BATCH_ACK_MESSAGE | request_code::BATCH_ACK_MESSAGE_SHORT => {
                    ack::batch_ack_message(b, request).await
                }
                request_code::CHANGE_MESSAGE_INVISIBLETIME
                | request_code::CHANGE_MESSAGE_INVISIBLETIME_SHORT => {
                    ack::change_message_invisible_time(b, request).await
                }
                request_code::NOTIFICATION | request_code::NOTIFICATION_SHORT => {
                    notification::notification(b, channel, request).await
                }
                request_code::POLLING_INFO | request_code::POLLING_INFO_SHORT => {
                    notification::polling_info(b, channel, request)
                }
                request_code::VOSTOK_MESSAGE_STATUS => {
                    tier_reads::run(&self.broker, request, ops_admin::message_status).await
                }
                request_code::VOSTOK_BROWSE_MESSAGES => {
                    tier_reads::run(&self.broker, request, ops_admin::browse_messages).await
                }
                request_code::VOSTOK_REMOVE_MESSAGE => {
                    ops_admin::remove_message(b, channel, request).await
                }
                request_code::VOSTOK_RESEND_DLQ_MESSAGE => {
                    ops_admin::resend_dlq_message(b, channel, request).await
                }
                request_code::VOSTOK_GET_GROUP_LAG => {
                    tier_reads::run(&self.broker, request, ops_admin::group_lag).await
                }
                request_code::VOSTOK_GET_CONNECTED_CLIENTS => ops_admin::connected_clients(b),
                request_code::UPDATE_AND_CREATE_ACL_CONFIG
                | request_code::DELETE_ACL_CONFIG
                | request_code::GET_BROKER_CLUSTER_ACL_INFO
                | request_code::UPDATE_GLOBAL_WHITE_ADDRS_CONFIG => {
                    plain_acl_admin::process(b, request).await
                }
                request_code::AUTH_CREATE_USER..=request_code::AUTH_LIST_ACL => {
                    auth_admin::process(&self.broker, request).await
                }
                _ => {
                    debug!(code = request.code, peer = %channel.peer_addr(), "request code not supported");
                    vostok_remoting::processor::not_supported(&request)
                }
            };
            let response = match &confinement {
                Some(confinement) => scope::narrow(code, response, confinement),
                None => response,
            };
            if let Some(started) = started {
                let answered = (!oneway).then_some(response.code);
                b.observed
                    .metrics
                    .rpc
                    .observe(code, answered, false, started.elapsed());
            }
            Some(response)
        })
    }

    fn on_channel_closed(&self, channel: &Channel) {
        let b = &self.broker;
        b.consumers.long_polling.forget_channel(channel.id());
        crate::ops::clients::on_channel_closed(&b.consumers, &b.config, &b.life, channel);
    }
}

/// The answer to a request the guard refused: NO_PERMISSION, which Java producers do
/// not retry (Apache answers ACL 1.0 refusals with SYSTEM_ERROR, which they do), with
/// the guard's remark. A oneway request gets nothing; the connection stays open.
fn refuse(
    channel: &Channel,
    request: &RemotingCommand,
    denied: vostok_auth::Denied,
) -> Option<RemotingCommand> {
    debug!(code = request.code, peer = %channel.peer_addr(), reason = %denied, "request refused by ACL");
    if request.is_oneway() {
        return None;
    }
    Some(error(response_code::NO_PERMISSION, denied.reason))
}

/// The response for an operation's refusal: its RocketMQ code and the remark.
pub(crate) fn refused(refusal: crate::ops::Refusal) -> RemotingCommand {
    use crate::ops::Refused;
    let code = match refusal.kind {
        Refused::Busy => response_code::SYSTEM_BUSY,
        Refused::NotAvailable => response_code::SERVICE_NOT_AVAILABLE,
        Refused::NotMaster => response_code::SLAVE_NOT_AVAILABLE,
        Refused::NoPermission => response_code::NO_PERMISSION,
        Refused::InvalidParameter => response_code::INVALID_PARAMETER,
        Refused::TopicNotExist => response_code::TOPIC_NOT_EXIST,
        Refused::GroupNotExist => response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
        Refused::NotOnline => response_code::CONSUMER_NOT_ONLINE,
        Refused::OffsetNotFound => response_code::QUERY_NOT_FOUND,
        Refused::MessageIllegal => response_code::MESSAGE_ILLEGAL,
        Refused::SystemError => response_code::SYSTEM_ERROR,
    };
    error(code, refusal.remark)
}

/// A response with `code` and `remark`.
pub(crate) fn error(code: i32, remark: impl Into<String>) -> RemotingCommand {
    RemotingCommand::response(code, remark.into())
}

/// The response to a request whose header is missing a field or has a malformed one:
/// INVALID_PARAMETER naming the field.
pub(crate) fn header_error(request: &RemotingCommand, e: HeaderError) -> RemotingCommand {
    debug!(code = request.code, field = e.field(), "bad request header");
    // Apache answers SYSTEM_ERROR, which producers retry; a request that lacks a field
    // will lack it on every retry, so it gets a code clients do not retry.
    error(
        response_code::INVALID_PARAMETER,
        format!("bad request header: {e}"),
    )
}

/// Decodes a typed header or answers with [`header_error`].
macro_rules! decode_header {
    ($request:expr, $ty:ty) => {
        match <$ty as vostok_remoting::protocol::header::CommandHeader>::read_from(
            &$request.ext_fields,
        ) {
            Ok(h) => h,
            Err(e) => return $crate::processor::header_error(&$request, e),
        }
    };
}
pub(crate) use decode_header;

/// Decodes a JSON body or answers SYSTEM_ERROR naming what could not be read.
macro_rules! decode_body {
    ($request:expr, $ty:ty, $what:literal) => {
        match vostok_remoting::protocol::json::from_slice::<$ty>($what, &$request.body) {
            Ok(body) => body,
            Err(e) => {
                return $crate::processor::error(
                    vostok_remoting::protocol::response_code::SYSTEM_ERROR,
                    format!("bad request body: {e}"),
                )
            }
        }
    };
}
pub(crate) use decode_body;

/// A SUCCESS response with a typed header.
pub(crate) fn success_with<H: CommandHeader>(header: &H) -> RemotingCommand {
    RemotingCommand::success().with_header(header)
}
