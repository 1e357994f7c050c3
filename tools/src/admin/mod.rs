//! `mqadmin`: RocketMQ's operator CLI over the classic remoting protocol, for Vostok and
//! any RocketMQ-protocol cluster, on the SDK's admin layer
//! ([`AdminClient`](vostok_client::AdminClient), RocketMQ's `MQAdminExt`).
//!
//! * [`args`]: the command line (RocketMQ's sub-command names and flags); each verb
//!   family's own flags live with it.
//! * The verbs, one file per family: [`cluster`] (`clusterList`, `brokerStatus`),
//!   [`topic`] (`topicList`, `topicRoute`, `updateTopic`, `deleteTopic`,
//!   `topicStatus`), [`topic_admin`] (`updateTopicPerm`, `topicClusterList`,
//!   `updateOrderConf`), [`allocate`] (`allocateMQ`), [`subgroup`] (`updateSubGroup`,
//!   `deleteSubGroup`), [`group_config`] (`getConsumerConfig`, `setConsumeMode`),
//!   [`consumer`] (`consumerProgress`), [`connection`] (`consumerConnection`),
//!   [`producer`] (`producerConnection`), [`consumer_status`] (`consumerStatus`),
//!   [`offset`] (`resetOffsetByTime`, `skipAccumulatedMessage`), [`group_offset`]
//!   (`cloneGroupOffset`, `getConsumerStatus`), [`stats`] (`statsAll`),
//!   [`broker_stats`] (`brokerConsumeStats`), [`broker_config`] (`getBrokerConfig`,
//!   `updateBrokerConfig`), [`namesrv`] (`getNamesrvConfig`, `updateNamesrvConfig`,
//!   `updateKvConfig`, `deleteKvConfig`, `wipeWritePerm`, `addWritePerm`),
//!   [`housekeeping`] (`cleanExpiredCQ`, `cleanUnusedTopic`, `deleteExpiredCommitLog`),
//!   [`ha`] (`haStatus`, `getBrokerEpoch`, `resetMasterFlushOffset`), [`send`]
//!   (`sendMessage`, `sendMsgStatus`, `checkMsgSendRT`, `clusterRT`), [`message`]
//!   (`queryMsgByKey`, `queryMsgById`, `decodeMessageId`), [`read`]
//!   (`queryMsgByOffset`, `queryMsgByUniqueKey`), [`print`] (`printMsg`,
//!   `printMsgByQueue`, `consumeMessage`), [`queue`] (`queryCq`), [`trace`]
//!   (`queryMsgTraceById`), [`ops`] (Vostok's `messageStatus` … `connectedClients`),
//!   [`export`] (`exportMetadata`, `exportConfigs`, `exportMetrics`), [`controller`]
//!   (controller mode), [`auth`] and [`auth_copy`] (ACL 2.0: `createUser` …
//!   `copyAcl`), [`plain_acl`] (ACL 1.0: `updateAclConfig` …
//!   `clusterAclConfigVersion`).
//! * [`table`]: aligned text tables and timestamps; [`output`]: `--json`, which every
//!   verb honours;
//!   [`target`]: `-b ADDR` / `-c CLUSTER`; [`error`]: [`AdminError`], naming the
//!   request that failed.
//!
//! Each sub-command returns its whole output as text; the binary prints it, or the
//! error on one line with exit code 1. A failed request names its request code and
//! peer in front of the SDK's error.

pub mod allocate;
pub mod args;
pub mod auth;
pub mod auth_copy;
pub mod broker_config;
pub mod broker_stats;
pub mod cluster;
pub mod connection;
pub mod consumer;
pub mod consumer_status;
pub mod controller;
pub mod error;
pub mod export;
pub mod group_config;
pub mod group_offset;
pub mod ha;
pub mod housekeeping;
pub mod message;
pub mod namesrv;
pub mod offset;
pub mod ops;
pub mod output;
pub mod plain_acl;
pub mod print;
pub mod producer;
pub mod queue;
pub mod read;
pub mod send;
pub mod stats;
pub mod subgroup;
pub mod table;
pub mod target;
pub mod topic;
pub mod topic_admin;
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
        Command::TopicList(a) => topic::topic_list(admin, &a, out).await,
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
        Command::GetControllerConfig(a) => controller::get_controller_config(admin, &a, out).await,
        Command::UpdateControllerConfig(a) => {
            controller::update_controller_config(admin, &a, out).await
        }
        Command::CleanBrokerMetadata(a) => controller::clean_broker_metadata(admin, &a, out).await,
        Command::BrokerConsumeStats(a) => broker_stats::broker_consume_stats(admin, &a, out).await,
        Command::UpdateTopicPerm(a) => topic_admin::update_topic_perm(admin, &a, out).await,
        Command::UpdateOrderConf(a) => topic_admin::update_order_conf(admin, &a, out).await,
        Command::TopicClusterList(a) => topic_admin::topic_cluster_list(admin, &a, out).await,
        Command::CloneGroupOffset(a) => group_offset::clone_group_offset(admin, &a, out).await,
        Command::GetConsumerStatus(a) => group_offset::get_consumer_status(admin, &a, out).await,
        Command::GetConsumerConfig(a) => group_config::get_consumer_config(admin, &a, out).await,
        Command::SetConsumeMode(a) => group_config::set_consume_mode(admin, &a, out).await,
        Command::CleanUnusedTopic(a) => housekeeping::clean_unused_topic(admin, &a, out).await,
        Command::HaStatus(a) => ha::ha_status(admin, &a, out).await,
        Command::GetBrokerEpoch(a) => ha::get_broker_epoch(admin, &a, out).await,
        Command::ResetMasterFlushOffset(a) => ha::reset_master_flush_offset(admin, &a, out).await,
        Command::QueryCq(a) => queue::query_cq(admin, &a, out).await,
        Command::DecodeMessageId(a) => message::decode_message_id(admin, &a, out).await,
        Command::SendMsgStatus(a) => send::send_msg_status(admin, &a, out).await,
        Command::ExportMetadata(a) => export::export_metadata(admin, &a, out).await,
        Command::ExportConfigs(a) => export::export_configs(admin, &a, out).await,
        Command::ExportMetrics(a) => export::export_metrics(admin, &a, out).await,
        Command::GetUser(a) => auth_copy::get_user(admin, &a, out).await,
        Command::GetAcl(a) => auth_copy::get_acl(admin, &a, out).await,
        Command::CopyUser(a) => auth_copy::copy_user(admin, &a, out).await,
        Command::CopyAcl(a) => auth_copy::copy_acl(admin, &a, out).await,
        Command::UpdateAclConfig(a) => plain_acl::update_acl_config(admin, &a, out).await,
        Command::DeleteAclConfig(a) => plain_acl::delete_acl_config(admin, &a, out).await,
        Command::UpdateGlobalWhiteAddr(a) => {
            plain_acl::update_global_white_addr(admin, &a, out).await
        }
        Command::ClusterAclConfigVersion(a) => {
            plain_acl::cluster_acl_config_version(admin, &a, out).await
        }
    }
}
