//! `mqadmin`'s command line: RocketMQ's sub-command names and flags.

use std::time::Duration;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "mqadmin",
    version,
    about = "Operator CLI for Vostok and any RocketMQ-protocol cluster",
    long_about = "RocketMQ's mqadmin sub-commands over the classic remoting protocol: \
                  clusters, topics, queue offsets, consumer progress and message lookups."
)]
pub struct Cli {
    /// Name server address list, `host:port;host:port` (the first that answers is used).
    #[arg(
        short = 'n',
        long = "namesrvAddr",
        value_name = "ADDR",
        env = "NAMESRV_ADDR",
        default_value = "127.0.0.1:9876",
        value_parser = vostok_remoting::support::namesrv_addr::parse_arg,
        global = true
    )]
    pub namesrv: String,
    /// Timeout of each request, connecting included.
    #[arg(
        long = "timeout-ms",
        value_name = "MS",
        default_value_t = 3000,
        global = true
    )]
    pub timeout_ms: u64,
    /// ACL credentials and TLS.
    #[command(flatten)]
    pub security: crate::security::SecurityArgs,
    /// `--json`, taken by every sub-command.
    #[command(flatten)]
    pub output: super::output::JsonFlag,
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.max(1))
    }
}

#[derive(Subcommand, Debug)]
#[command(rename_all = "camelCase")]
pub enum Command {
    /// List the brokers of every cluster with their version and TPS.
    ClusterList,
    /// List every topic the name server knows (with --namespace, only that namespace's).
    TopicList(super::topic::TopicListArgs),
    /// Print a topic's route (brokers and queues) as JSON.
    TopicRoute(super::topic::TopicArgs),
    /// Create or update a topic on one broker or on every master of a cluster.
    UpdateTopic(super::topic::UpdateTopicArgs),
    /// Delete a topic from every master of a cluster, then from the name servers.
    DeleteTopic(super::topic::DeleteTopicArgs),
    /// Min and max offset of each queue of a topic.
    TopicStatus(super::topic::TopicArgs),
    /// A broker's runtime figures.
    BrokerStatus(super::cluster::BrokerStatusArgs),
    /// A consumer group's offsets against the brokers' on each queue.
    ConsumerProgress(super::consumer::ConsumerProgressArgs),
    /// The clients online in a consumer group (remoting and gRPC), and its subscriptions.
    ConsumerConnection(super::connection::ConsumerConnectionArgs),
    /// Find messages by key (the `KEYS` property) through the brokers' index.
    QueryMsgByKey(super::message::QueryMsgByKeyArgs),
    /// Show messages by offset message id (or by unique key with -t).
    QueryMsgById(super::message::QueryMsgByIdArgs),
    /// A message's trace records (Pub, then each consumer group's Sub).
    QueryMsgTraceById(super::trace::QueryMsgTraceByIdArgs),
    /// Create or update a consumer group's settings on a broker or a cluster.
    UpdateSubGroup(super::subgroup::UpdateSubGroupArgs),
    /// Delete a consumer group's settings (with -c, its retry and DLQ topics too).
    DeleteSubGroup(super::subgroup::DeleteSubGroupArgs),
    /// The clients online in a producer group.
    ProducerConnection(super::producer::ProducerConnectionArgs),
    /// A broker's effective configuration (or every broker of a cluster).
    GetBrokerConfig(super::broker_config::GetBrokerConfigArgs),
    /// Change one key of a broker's configuration at run time.
    UpdateBrokerConfig(super::broker_config::UpdateBrokerConfigArgs),
    /// Each name server's effective configuration.
    GetNamesrvConfig(super::namesrv::GetNamesrvConfigArgs),
    /// Change one key of each name server's configuration at run time.
    UpdateNamesrvConfig(super::namesrv::UpdateNamesrvConfigArgs),
    /// Create or update a KV config entry on each name server.
    UpdateKvConfig(super::namesrv::UpdateKvConfigArgs),
    /// Delete a KV config entry from each name server.
    DeleteKvConfig(super::namesrv::DeleteKvConfigArgs),
    /// Take write permission away from a broker name's topics on each name server.
    WipeWritePerm(super::namesrv::WritePermArgs),
    /// Give a broker name's topics their write permission back on each name server.
    AddWritePerm(super::namesrv::WritePermArgs),
    /// Each online client of a consumer group describes its state.
    ConsumerStatus(super::consumer_status::ConsumerStatusArgs),
    /// Backlog, rates and 24-hour counts of every topic and group.
    StatsAll(super::stats::StatsAllArgs),
    /// Move a consumer group's offsets of a topic to a time.
    ResetOffsetByTime(super::offset::ResetOffsetByTimeArgs),
    /// Move a consumer group's offsets of a topic to the queues' ends.
    SkipAccumulatedMessage(super::offset::SkipAccumulatedMessageArgs),
    /// Remove the consume queues of topics a broker no longer has.
    #[command(name = "cleanExpiredCQ")]
    CleanExpiredCq(super::housekeeping::HousekeepingArgs),
    /// Have a broker delete its expired commitlog files now.
    DeleteExpiredCommitLog(super::housekeeping::HousekeepingArgs),
    /// Send one message.
    SendMessage(super::send::SendMessageArgs),
    /// Round trips of sends to each queue of a topic.
    #[command(name = "checkMsgSendRT")]
    CheckMsgSendRt(super::send::CheckMsgSendRtArgs),
    /// Round trips of sends to each broker of a cluster.
    #[command(name = "clusterRT")]
    ClusterRt(super::send::ClusterRtArgs),
    /// How the default strategy would share a topic's queues among consumer ids.
    #[command(name = "allocateMQ")]
    AllocateMq(super::allocate::AllocateMqArgs),
    /// One message by queue and offset.
    QueryMsgByOffset(super::read::QueryMsgByOffsetArgs),
    /// Messages by unique key (the msgId a send returns).
    QueryMsgByUniqueKey(super::read::QueryMsgByUniqueKeyArgs),
    /// Every message of a topic (or of a time range), queue by queue.
    PrintMsg(super::print::PrintMsgArgs),
    /// The messages of one queue, and their count by tag.
    PrintMsgByQueue(super::print::PrintMsgByQueueArgs),
    /// Pull up to a number of messages of a topic or a queue.
    ConsumeMessage(super::print::ConsumeMessageArgs),
    /// Where is my message: stored where, and for each group filtered, consumed, retried, dead-lettered or removed.
    MessageStatus(super::ops::MessageStatusArgs),
    /// Waiting messages of a topic (after a group's offsets), without consuming them.
    BrowseMessage(super::ops::BrowseMessageArgs),
    /// Remove one waiting message so that no group receives it.
    RemoveMessage(super::ops::RemoveMessageArgs),
    /// Send a dead-lettered message of a group back to its topic.
    ResendDlqMessage(super::ops::ResendDlqMessageArgs),
    /// Producers and consumers connected to each master broker.
    ConnectedClients(super::ops::ConnectedClientsArgs),
    /// ACL 2.0: create a user.
    CreateUser(super::auth::UserArgs),
    /// ACL 2.0: change a user's password, type or status.
    UpdateUser(super::auth::UserArgs),
    /// ACL 2.0: delete a user (and its ACL).
    DeleteUser(super::auth::DeleteUserArgs),
    /// ACL 2.0: list users (passwords are not shown).
    ListUser(super::auth::ListUserArgs),
    /// ACL 2.0: add policy entries to a subject's ACL.
    CreateAcl(super::auth::AclArgs),
    /// ACL 2.0: add or replace policy entries of a subject's ACL.
    UpdateAcl(super::auth::AclArgs),
    /// ACL 2.0: delete a subject's ACL, or one resource's entry.
    DeleteAcl(super::auth::DeleteAclArgs),
    /// ACL 2.0: list ACLs.
    ListAcl(super::auth::ListAclArgs),
    /// Controller mode: the controller quorum and its Raft leader.
    GetControllerMetaData(super::controller::ControllerArgs),
    /// Controller mode: each broker group's master, epoch and SyncStateSet.
    GetSyncStateSet(super::controller::SyncStateSetArgs),
    /// Controller mode: make a broker of a group its master (it must be alive and,
    /// unless the controllers allow unclean elections, in the SyncStateSet).
    ElectMaster(super::controller::ElectMasterArgs),
    /// Controller mode: each controller's effective configuration.
    GetControllerConfig(super::controller::GetControllerConfigArgs),
    /// Controller mode: change a key each controller reads at every election.
    UpdateControllerConfig(super::controller::UpdateControllerConfigArgs),
    /// Controller mode: make the controllers forget brokers of a group.
    CleanBrokerMetadata(super::controller::CleanBrokerMetadataArgs),
    /// Every subscription group's backlog on one broker, queue by queue.
    BrokerConsumeStats(super::broker_stats::BrokerConsumeStatsArgs),
    /// Change a topic's permission on its brokers (its queues stay as they are).
    UpdateTopicPerm(super::topic_admin::UpdateTopicPermArgs),
    /// Get, put or delete an ordered topic's queue layout in the name servers.
    UpdateOrderConf(super::topic_admin::UpdateOrderConfArgs),
    /// The clusters whose brokers serve a topic.
    TopicClusterList(super::topic_admin::TopicClusterListArgs),
    /// Copy one group's committed offsets of a topic to another group.
    CloneGroupOffset(super::group_offset::CloneGroupOffsetArgs),
    /// The offsets each online consumer of a group holds for a topic.
    GetConsumerStatus(super::group_offset::GetConsumerStatusArgs),
    /// A subscription group's settings on each broker that has it.
    GetConsumerConfig(super::group_config::GetConsumerConfigArgs),
    /// How a group's consumers get a topic's messages: PULL or POP.
    SetConsumeMode(super::group_config::SetConsumeModeArgs),
    /// Remove the consume queues of topics a broker no longer has.
    CleanUnusedTopic(super::housekeeping::HousekeepingArgs),
    /// Replication status: a master's slaves, or a slave's link to its master.
    HaStatus(super::ha::HaStatusArgs),
    /// Controller mode: each broker's epoch entries.
    GetBrokerEpoch(super::ha::GetBrokerEpochArgs),
    /// Record on a slave its master's flushed offset.
    ResetMasterFlushOffset(super::ha::ResetMasterFlushOffsetArgs),
    /// The entries of one consume queue.
    #[command(name = "queryCq")]
    QueryCq(super::queue::QueryCqArgs),
    /// What a unique message id tells: the sender's address and process, and when.
    #[command(alias = "DecodeMessageId")]
    DecodeMessageId(super::message::DecodeMessageIdArgs),
    /// Send messages to a broker's own topic and show each round trip.
    SendMsgStatus(super::send::SendMsgStatusArgs),
    /// Write a cluster's (or a broker's) topics and subscription groups to a JSON file.
    ExportMetadata(super::export::ExportMetadataArgs),
    /// Write a cluster's brokers' main settings and its size to a JSON file.
    ExportConfigs(super::export::ExportClusterArgs),
    /// Write a summary of a cluster's load to a JSON file.
    ExportMetrics(super::export::ExportClusterArgs),
    /// ACL 2.0: one user (without its password).
    GetUser(super::auth_copy::GetUserArgs),
    /// ACL 2.0: one subject's ACL.
    GetAcl(super::auth_copy::GetAclArgs),
    /// ACL 2.0: copy users from one broker to another.
    CopyUser(super::auth_copy::CopyUserArgs),
    /// ACL 2.0: copy ACLs from one broker to another.
    CopyAcl(super::auth_copy::CopyAclArgs),
    /// ACL 1.0: create an account of plain_acl.yml, or change the fields given.
    UpdateAclConfig(super::plain_acl::UpdateAclConfigArgs),
    /// ACL 1.0: delete an account.
    #[command(alias = "deleteAccessConfig")]
    DeleteAclConfig(super::plain_acl::DeleteAclConfigArgs),
    /// ACL 1.0: replace the global white addresses of an ACL file.
    UpdateGlobalWhiteAddr(super::plain_acl::UpdateGlobalWhiteAddrArgs),
    /// ACL 1.0: the version of each ACL file of each broker.
    ClusterAclConfigVersion(super::plain_acl::ClusterAclConfigVersionArgs),
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn no_verb_hides_a_global_flag() {
        // A verb's argument with the id of a global one (`access_key`, `json`, ...)
        // would take its place on that verb's command line.
        let cli = Cli::command();
        let global: Vec<&str> = cli
            .get_arguments()
            .filter(|a| a.is_global_set())
            .map(|a| a.get_id().as_str())
            .collect();
        for verb in cli.get_subcommands() {
            for arg in verb.get_arguments() {
                assert!(
                    !global.contains(&arg.get_id().as_str()) || arg.is_global_set(),
                    "{} has its own {}",
                    verb.get_name(),
                    arg.get_id()
                );
            }
        }
        let cli = Cli::try_parse_from([
            "mqadmin",
            "updateAclConfig",
            "-b",
            "1.2.3.4:10911",
            "-a",
            "account01",
            "--access-key",
            "admin",
        ])
        .unwrap();
        assert_eq!(cli.security.access_key.as_deref(), Some("admin"));
    }

    #[test]
    fn rocketmq_names_and_defaults() {
        let cli = Cli::try_parse_from([
            "mqadmin",
            "updateTopic",
            "-n",
            "10.0.0.1:9876",
            "-t",
            "T",
            "-c",
            "DefaultCluster",
        ])
        .unwrap();
        assert_eq!(cli.namesrv, "10.0.0.1:9876");
        assert_eq!(cli.timeout(), Duration::from_secs(3));
        let Command::UpdateTopic(args) = cli.command else {
            panic!("updateTopic parsed as {:?}", cli.command);
        };
        assert_eq!(
            (args.read_queue_nums, args.write_queue_nums, args.perm),
            (8, 8, 6)
        );
        assert!(
            Cli::try_parse_from(["mqadmin", "updateTopic", "-t", "T"]).is_err(),
            "-b or -c is required"
        );
        let cli =
            Cli::try_parse_from(["mqadmin", "--timeout-ms", "500", "queryMsgById", "-i", "X"])
                .unwrap();
        assert_eq!(cli.timeout(), Duration::from_millis(500));
        assert!(matches!(cli.command, Command::QueryMsgById(_)));
    }
}
