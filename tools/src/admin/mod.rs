//! `mqadmin`: RocketMQ's operator CLI over the classic remoting protocol, for Vostok and
//! any RocketMQ-protocol cluster, on the SDK's admin layer
//! ([`AdminClient`](vostok_client::AdminClient), RocketMQ's `MQAdminExt`).
//!
//! * [`args`]: the command line (RocketMQ's sub-command names and flags); each verb
//!   family's own flags live with it.
//! * The verbs, one file per family: [`cluster`] (`clusterList`, `brokerStatus`),
//!   [`topic`] (`topicList`, `topicRoute`, `updateTopic`, `deleteTopic`,
//!   `topicStatus`), [`allocate`] (`allocateMQ`), [`subgroup`] (`updateSubGroup`,
//!   `deleteSubGroup`), [`consumer`] (`consumerProgress`), [`connection`]
//!   (`consumerConnection`), [`producer`] (`producerConnection`), [`consumer_status`]
//!   (`consumerStatus`), [`offset`] (`resetOffsetByTime`, `skipAccumulatedMessage`),
//!   [`stats`] (`statsAll`), [`broker_config`] (`getBrokerConfig`,
//!   `updateBrokerConfig`), [`namesrv`] (`getNamesrvConfig`, `updateNamesrvConfig`,
//!   `updateKvConfig`, `deleteKvConfig`, `wipeWritePerm`, `addWritePerm`),
//!   [`housekeeping`] (`cleanExpiredCQ`, `deleteExpiredCommitLog`), [`send`]
//!   (`sendMessage`, `checkMsgSendRT`, `clusterRT`), [`message`] (`queryMsgByKey`,
//!   `queryMsgById`), [`read`] (`queryMsgByOffset`, `queryMsgByUniqueKey`),
//!   [`print`] (`printMsg`, `printMsgByQueue`, `consumeMessage`), [`trace`]
//!   (`queryMsgTraceById`), [`auth`] (ACL 2.0: `createUser` … `listAcl`).
//! * [`table`]: aligned text tables and timestamps; [`output`]: `--json`;
//!   [`target`]: `-b ADDR` / `-c CLUSTER`; [`error`]: [`AdminError`], naming the
//!   request that failed.
//!
//! Each sub-command returns its whole output as text; the binary prints it, or the
//! error on one line with exit code 1. A failed request names its request code and
//! peer in front of the SDK's error.

pub mod allocate;
pub mod args;
pub mod auth;
pub mod broker_config;
pub mod cluster;
pub mod connection;
pub mod consumer;
pub mod consumer_status;
pub mod controller;
pub mod error;
pub mod housekeeping;
pub mod message;
pub mod namesrv;
pub mod offset;
pub mod ops;
pub mod output;
pub mod print;
pub mod producer;
pub mod read;
pub mod send;
pub mod stats;
pub mod subgroup;
pub mod table;
pub mod target;
pub mod topic;
pub mod trace;

use std::time::Duration;

use vostok_client::instance::parse_namesrv_addr;
use vostok_client::{AdminClient, ClientConfig};

use args::Command;
pub use error::{during, unless_answered, AdminError};
use output::JsonFlag;

/// The admin client for `namesrv` (`host:port;host:port`), each request bounded by
/// `timeout`, connecting included.
pub fn connect(
    namesrv: &str,
    timeout: Duration,
    security: &crate::security::SecurityArgs,
) -> Result<AdminClient, AdminError> {
    let namesrv_addr = parse_namesrv_addr(namesrv);
    if namesrv_addr.is_empty() {
        return Err(AdminError::Invalid(
            "no name server address (-n or NAMESRV_ADDR)".into(),
        ));
    }
    let mut config = ClientConfig {
        namesrv_addr,
        mq_client_api_timeout: timeout,
        remoting: vostok_remoting::ClientConfig {
            connect_timeout: timeout,
            ..vostok_remoting::ClientConfig::default()
        },
        ..ClientConfig::default()
    };
    security.apply(&mut config).map_err(AdminError::Invalid)?;
    AdminClient::new(&config).map_err(|e| AdminError::Invalid(e.to_string()))
}

/// Runs one sub-command and returns what it prints: text, or one JSON document when
/// `out.json` (`--json`, which every sub-command takes).
pub async fn run(
    admin: &AdminClient,
    command: Command,
    out: JsonFlag,
) -> Result<String, AdminError> {
    match command {
        Command::ClusterList => cluster::cluster_list(admin, out).await,
        Command::BrokerStatus(a) => cluster::broker_status(admin, &a, out).await,
        Command::TopicList => topic::topic_list(admin, out).await,
        Command::TopicRoute(a) => topic::topic_route(admin, &a.topic, out).await,
        Command::UpdateTopic(a) => topic::update_topic(admin, &a, out).await,
        Command::DeleteTopic(a) => topic::delete_topic(admin, &a, out).await,
        Command::TopicStatus(a) => topic::topic_status(admin, &a.topic, out).await,
        Command::ConsumerProgress(a) => consumer::consumer_progress(admin, &a, out).await,
        Command::ConsumerConnection(a) => connection::consumer_connection(admin, &a, out).await,
        Command::QueryMsgByKey(a) => message::query_msg_by_key(admin, &a, out).await,
        Command::QueryMsgById(a) => message::query_msg_by_id(admin, &a, out).await,
        Command::QueryMsgTraceById(a) => trace::query_msg_trace_by_id(admin, &a, out).await,
        Command::UpdateSubGroup(a) => subgroup::update_sub_group(admin, &a, out).await,
        Command::DeleteSubGroup(a) => subgroup::delete_sub_group(admin, &a, out).await,
        Command::ProducerConnection(a) => producer::producer_connection(admin, &a, out).await,
        Command::GetBrokerConfig(a) => broker_config::get_broker_config(admin, &a, out).await,
        Command::UpdateBrokerConfig(a) => broker_config::update_broker_config(admin, &a, out).await,
        Command::GetNamesrvConfig(a) => namesrv::get_namesrv_config(admin, &a, out).await,
        Command::UpdateNamesrvConfig(a) => namesrv::update_namesrv_config(admin, &a, out).await,
        Command::UpdateKvConfig(a) => namesrv::update_kv_config(admin, &a, out).await,
        Command::DeleteKvConfig(a) => namesrv::delete_kv_config(admin, &a, out).await,
        Command::WipeWritePerm(a) => namesrv::write_perm(admin, &a, false, out).await,
        Command::AddWritePerm(a) => namesrv::write_perm(admin, &a, true, out).await,
        Command::ConsumerStatus(a) => consumer_status::consumer_status(admin, &a, out).await,
        Command::StatsAll(a) => stats::stats_all(admin, &a, out).await,
        Command::ResetOffsetByTime(a) => offset::reset_offset_by_time(admin, &a, out).await,
        Command::SkipAccumulatedMessage(a) => {
            offset::skip_accumulated_message(admin, &a, out).await
        }
        Command::CleanExpiredCq(a) => housekeeping::clean_expired_cq(admin, &a, out).await,
        Command::DeleteExpiredCommitLog(a) => {
            housekeeping::delete_expired_commit_log(admin, &a, out).await
        }
        Command::SendMessage(a) => send::send_message(admin, &a, out).await,
        Command::CheckMsgSendRt(a) => send::check_msg_send_rt(admin, &a, out).await,
        Command::ClusterRt(a) => send::cluster_rt(admin, &a, out).await,
        Command::AllocateMq(a) => allocate::allocate_mq(admin, &a, out).await,
        Command::QueryMsgByOffset(a) => read::query_msg_by_offset(admin, &a, out).await,
        Command::QueryMsgByUniqueKey(a) => read::query_msg_by_unique_key(admin, &a, out).await,
        Command::PrintMsg(a) => print::print_msg(admin, &a, out).await,
        Command::PrintMsgByQueue(a) => print::print_msg_by_queue(admin, &a, out).await,
        Command::ConsumeMessage(a) => print::consume_message(admin, &a, out).await,
        Command::MessageStatus(a) => ops::message_status(admin, &a, out).await,
        Command::BrowseMessage(a) => ops::browse_message(admin, &a, out).await,
        Command::RemoveMessage(a) => ops::remove_message(admin, &a, out).await,
        Command::ResendDlqMessage(a) => ops::resend_dlq_message(admin, &a, out).await,
        Command::ConnectedClients(a) => ops::connected_clients(admin, &a, out).await,
        Command::CreateUser(a) => auth::create_user(admin, &a, false, out).await,
        Command::UpdateUser(a) => auth::create_user(admin, &a, true, out).await,
        Command::DeleteUser(a) => auth::delete_user(admin, &a, out).await,
        Command::ListUser(a) => auth::list_users(admin, &a, out).await,
        Command::CreateAcl(a) => auth::create_acl(admin, &a, false, out).await,
        Command::UpdateAcl(a) => auth::create_acl(admin, &a, true, out).await,
        Command::DeleteAcl(a) => auth::delete_acl(admin, &a, out).await,
        Command::ListAcl(a) => auth::list_acls(admin, &a, out).await,
        Command::GetControllerMetaData(a) => controller::metadata(admin, &a, out).await,
        Command::GetSyncStateSet(a) => controller::sync_state_set(admin, &a, out).await,
        Command::ElectMaster(a) => controller::elect_master(admin, &a, out).await,
    }
}
