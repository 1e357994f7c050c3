//! The name server's [`RequestProcessor`]: one `match` on the request code, one
//! function per request in [`broker`] (brokers registering), [`client`] (route
//! lookups), [`admin`] (operator tools) and [`kv`] (the KV store).
//!
//! Every handler returns a response; a malformed header or body is answered with
//! SYSTEM_ERROR and a remark naming the field (what Java's name server answers for a
//! `RemotingCommandException`), never with a dropped connection or a panic. Unknown
//! codes get REQUEST_CODE_NOT_SUPPORTED.

mod access;
mod admin;
mod broker;
mod client;
mod kv;
mod scope;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tracing::{debug, debug_span, warn, Instrument};
use vostok_remoting::processor::not_supported;
use vostok_remoting::protocol::header::CommandHeader;
use vostok_remoting::protocol::request_code as code;
use vostok_remoting::protocol::response_code;
use vostok_remoting::{BoxFuture, Channel, RemotingCommand, RequestProcessor};

use crate::config::NamesrvConfig;
use crate::kv_config::KvConfigManager;
use crate::route::RouteInfoManager;

/// A handler's answer: `Err` carries an error response, so that `?` can end a
/// handler at the first bad field.
type Reply = Result<RemotingCommand, RemotingCommand>;

/// State the handlers share; owned by [`crate::NameServer`].
#[derive(Debug)]
pub(crate) struct Shared {
    pub config: NamesrvConfig,
    /// The config as UPDATE_NAMESRV_CONFIG changed it (`admin::RUNTIME_KEYS`); what
    /// the handlers read for those keys and GET_NAMESRV_CONFIG reports.
    pub live: std::sync::RwLock<NamesrvConfig>,
    pub route: Arc<RouteInfoManager>,
    pub kv: Arc<KvConfigManager>,
    /// For `needWaitForService`.
    pub started: Instant,
    /// Open connections; a closed one is uncounted only after its brokers are gone.
    pub connections: AtomicUsize,
    /// ACL, when `aclEnable` is on: every request passes it first.
    pub guard: Option<vostok_auth::Guard>,
    /// `rocketmq_rpc_latency`, when the exporter is on.
    pub rpc: Option<vostok_observe::RpcMetrics>,
}

pub(crate) struct NamesrvProcessor {
    shared: Arc<Shared>,
}

impl NamesrvProcessor {
    pub fn new(shared: Arc<Shared>) -> Self {
        NamesrvProcessor { shared }
    }

    async fn dispatch(&self, channel: &Channel, request: &RemotingCommand) -> RemotingCommand {
        let s = &*self.shared;
        let confinement = match scope::signer(s, request) {
            Some(Ok(confinement)) => confinement,
            Some(Err(refusal)) => return refusal,
            None => {
                if let Some(guard) = &s.guard {
                    if let Err(refusal) = access::check(guard, &s.config, channel, request) {
                        return refusal;
                    }
                }
                None
            }
        };
        let reply = match request.code {
            code::REGISTER_BROKER => broker::register_broker(s, channel, request),
            code::UNREGISTER_BROKER => broker::unregister_broker(s, request),
            code::BROKER_HEARTBEAT => broker::broker_heartbeat(s, request),
            code::QUERY_DATA_VERSION => broker::query_data_version(s, request),
            code::REGISTER_TOPIC_IN_NAMESRV => broker::register_topic(s, request),
            code::GET_ROUTEINFO_BY_TOPIC => client::get_route_info_by_topic(s, request),
            code::GET_BROKER_CLUSTER_INFO => client::get_broker_cluster_info(s),
            code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER => admin::get_all_topic_list(s),
            code::GET_TOPICS_BY_CLUSTER => admin::get_topics_by_cluster(s, request),
            code::GET_SYSTEM_TOPIC_LIST_FROM_NS => admin::get_system_topic_list(s),
            code::GET_UNIT_TOPIC_LIST
            | code::GET_HAS_UNIT_SUB_TOPIC_LIST
            | code::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST => admin::get_unit_topic_list(s, request),
            code::DELETE_TOPIC_IN_NAMESRV => admin::delete_topic(s, request),
            code::WIPE_WRITE_PERM_OF_BROKER => admin::wipe_write_perm(s, channel, request),
            code::ADD_WRITE_PERM_OF_BROKER => admin::add_write_perm(s, channel, request),
            code::GET_NAMESRV_CONFIG => admin::get_namesrv_config(s),
            code::UPDATE_NAMESRV_CONFIG => admin::update_namesrv_config(s, request),
            code::PUT_KV_CONFIG => kv::put_kv_config(s, request).await,
            code::GET_KV_CONFIG => kv::get_kv_config(s, request),
            code::DELETE_KV_CONFIG => kv::delete_kv_config(s, request).await,
            code::GET_KVLIST_BY_NAMESPACE => kv::get_kv_list_by_namespace(s, request),
            _ => Ok(not_supported(request)),
        };
        let response = reply.unwrap_or_else(|error| error);
        let response = match &confinement {
            Some(confinement) => scope::narrow(request, response, confinement),
            None => response,
        };
        debug!(
            response_code = response.code,
            remark = response.remark(),
            "request served"
        );
        response
    }
}

impl RequestProcessor for NamesrvProcessor {
    fn process<'a>(
        &'a self,
        channel: &'a Channel,
        request: RemotingCommand,
    ) -> BoxFuture<'a, Option<RemotingCommand>> {
        let span = debug_span!(
            "request",
            code = request.code,
            name = code::name(request.code),
            opaque = request.opaque,
            peer = %channel.peer_addr(),
        );
        Box::pin(
            async move {
                let started = Instant::now();
                let response = self.dispatch(channel, &request).await;
                if let Some(rpc) = &self.shared.rpc {
                    let answered = (!request.is_oneway()).then_some(response.code);
                    rpc.observe(request.code, answered, false, started.elapsed());
                }
                Some(response)
            }
            .instrument(span),
        )
    }

    fn on_channel_connected(&self, _channel: &Channel) {
        self.shared.connections.fetch_add(1, Ordering::AcqRel);
    }

    fn on_channel_closed(&self, channel: &Channel) {
        self.shared.route.on_channel_destroy(channel.id());
        self.shared.connections.fetch_sub(1, Ordering::AcqRel);
    }
}

/// An error response.
fn error(code: i32, remark: impl Into<String>) -> RemotingCommand {
    RemotingCommand::response(code, Some(remark.into()))
}

/// Decodes the typed header of `request`, or answers which field is wrong.
fn header<H: CommandHeader>(request: &RemotingCommand) -> Result<H, RemotingCommand> {
    request.decode_header::<H>().map_err(|e| {
        warn!(code = request.code, error = %e, "malformed request header");
        error(
            response_code::SYSTEM_ERROR,
            format!("bad {} request: {e}", code::name(request.code)),
        )
    })
}

/// Rejects an empty mandatory field: an empty broker name or address would put
/// unusable entries in every client's route.
fn non_empty(request: &RemotingCommand, field: &str, value: &str) -> Result<(), RemotingCommand> {
    if value.trim().is_empty() {
        warn!(code = request.code, field, "empty mandatory header field");
        return Err(error(
            response_code::SYSTEM_ERROR,
            format!(
                "bad {} request: header field `{field}` is empty",
                code::name(request.code)
            ),
        ));
    }
    Ok(())
}

/// A SUCCESS response carrying a JSON body.
fn json_body<T: serde::Serialize>(value: &T) -> RemotingCommand {
    RemotingCommand::success().with_body(vostok_remoting::protocol::json::to_vec(value))
}
