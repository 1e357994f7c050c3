//! `mqadmin`'s command line: RocketMQ's sub-command names and flags.

use std::time::Duration;

use clap::{ArgGroup, Args, Parser, Subcommand};

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
    /// List every topic the name server knows.
    TopicList,
    /// Print a topic's route (brokers and queues) as JSON.
    TopicRoute(TopicArgs),
    /// Create or update a topic on one broker or on every master of a cluster.
    UpdateTopic(UpdateTopicArgs),
    /// Delete a topic from every master of a cluster, then from the name servers.
    DeleteTopic(DeleteTopicArgs),
    /// Min and max offset of each queue of a topic.
    TopicStatus(TopicArgs),
    /// A broker's runtime figures.
    BrokerStatus(BrokerStatusArgs),
    /// A consumer group's offsets against the brokers' on each queue.
    ConsumerProgress(ConsumerProgressArgs),
    /// The clients online in a consumer group (remoting and gRPC), and its subscriptions.
    ConsumerConnection(ConsumerConnectionArgs),
    /// Find messages by key (the `KEYS` property) through the brokers' index.
    QueryMsgByKey(QueryMsgByKeyArgs),
    /// Show messages by offset message id (or by unique key with -t).
    QueryMsgById(QueryMsgByIdArgs),
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
    CreateUser(UserArgs),
    /// ACL 2.0: change a user's password, type or status.
    UpdateUser(UserArgs),
    /// ACL 2.0: delete a user (and its ACL).
    DeleteUser(DeleteUserArgs),
    /// ACL 2.0: list users (passwords are not shown).
    ListUser(ListUserArgs),
    /// ACL 2.0: add policy entries to a subject's ACL.
    CreateAcl(AclArgs),
    /// ACL 2.0: add or replace policy entries of a subject's ACL.
    UpdateAcl(AclArgs),
    /// ACL 2.0: delete a subject's ACL, or one resource's entry.
    DeleteAcl(DeleteAclArgs),
    /// ACL 2.0: list ACLs.
    ListAcl(ListAclArgs),
    /// Controller mode: the controller quorum and its Raft leader.
    GetControllerMetaData(ControllerArgs),
    /// Controller mode: each broker group's master, epoch and SyncStateSet.
    GetSyncStateSet(SyncStateSetArgs),
    /// Controller mode: make a broker of a group its master (it must be alive and,
    /// unless the controllers allow unclean elections, in the SyncStateSet).
    ElectMaster(ElectMasterArgs),
}

#[derive(Args, Debug, Clone)]
pub struct ControllerArgs {
    /// A controller's address (any of the quorum).
    #[arg(short = 'a', long = "controllerAddress", value_name = "ADDR")]
    pub controller: String,
}

#[derive(Args, Debug, Clone)]
pub struct SyncStateSetArgs {
    /// A controller's address (any of the quorum).
    #[arg(short = 'a', long = "controllerAddress", value_name = "ADDR")]
    pub controller: String,
    /// Broker names, comma-separated; every group when absent.
    #[arg(short = 'b', long = "brokerName", value_name = "NAMES")]
    pub broker_names: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct ElectMasterArgs {
    /// A controller's address (any of the quorum).
    #[arg(short = 'a', long = "controllerAddress", value_name = "ADDR")]
    pub controller: String,
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    pub cluster_name: String,
    #[arg(short = 'b', long = "brokerName", value_name = "NAME")]
    pub broker_name: String,
    /// The controller-assigned id of the broker to elect.
    #[arg(short = 'i', long = "brokerId", value_name = "ID")]
    pub broker_id: i64,
}

#[derive(Args, Debug, Clone)]
pub struct TopicArgs {
    /// Topic name.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
}

#[derive(Args, Debug, Clone)]
#[command(group(ArgGroup::new("target").required(true).args(["broker_addr", "cluster_name"])))]
pub struct UpdateTopicArgs {
    /// Topic name: `[%|a-zA-Z0-9_-]`, at most 127 characters.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Create the topic on this broker.
    #[arg(short = 'b', long = "brokerAddr", value_name = "ADDR")]
    pub broker_addr: Option<String>,
    /// Create the topic on every master of this cluster.
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    pub cluster_name: Option<String>,
    /// Queues consumers read.
    #[arg(
        short = 'r',
        long = "readQueueNums",
        value_name = "N",
        default_value_t = 8
    )]
    pub read_queue_nums: i32,
    /// Queues producers write.
    #[arg(
        short = 'w',
        long = "writeQueueNums",
        value_name = "N",
        default_value_t = 8
    )]
    pub write_queue_nums: i32,
    /// Permission bits: 2 write, 4 read, 6 both.
    #[arg(short = 'p', long = "perm", default_value_t = 6)]
    pub perm: i32,
    /// Topic attributes in Apache's form, comma-separated: `+key=value` sets, `-key`
    /// removes; e.g. `+duplication.window.seconds=60`.
    #[arg(short = 'a', long = "attributes", value_name = "ATTRS")]
    pub attributes: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct DeleteTopicArgs {
    /// Topic name.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Delete the topic from every master of this cluster.
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    pub cluster_name: String,
}

#[derive(Args, Debug, Clone)]
#[command(group(ArgGroup::new("target").required(true).args(["broker_addr", "cluster_name"])))]
pub struct BrokerStatusArgs {
    /// One broker.
    #[arg(short = 'b', long = "brokerAddr", value_name = "ADDR")]
    pub broker_addr: Option<String>,
    /// Every broker of this cluster, masters and slaves.
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    pub cluster_name: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct ConsumerProgressArgs {
    /// Consumer group.
    #[arg(short = 'g', long = "groupName", value_name = "GROUP")]
    pub group: String,
    /// Only this topic; needed when no broker can tell the group's topics (the group is
    /// offline and the broker serves no GET_CONSUME_STATS).
    #[arg(short = 't', long = "topic")]
    pub topic: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct ConsumerConnectionArgs {
    /// Consumer group.
    #[arg(short = 'g', long = "consumerGroup", value_name = "GROUP")]
    pub group: String,
    #[command(flatten)]
    pub output: super::output::JsonFlag,
}

#[derive(Args, Debug, Clone)]
pub struct QueryMsgByKeyArgs {
    /// Topic name.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// One of the message's keys.
    #[arg(short = 'k', long = "msgKey", value_name = "KEY")]
    pub key: String,
    /// Most messages asked of each broker.
    #[arg(short = 'c', long = "maxNum", value_name = "N", default_value_t = 64)]
    pub max_num: i32,
    /// Earliest store time, in ms since the epoch.
    #[arg(
        short = 'b',
        long = "beginTimestamp",
        value_name = "MS",
        default_value_t = 0
    )]
    pub begin_timestamp: i64,
    /// Latest store time, in ms since the epoch.
    #[arg(short = 'e', long = "endTimestamp", value_name = "MS", default_value_t = i64::MAX)]
    pub end_timestamp: i64,
}

#[derive(Args, Debug, Clone)]
pub struct QueryMsgByIdArgs {
    /// Offset message id(s), comma-separated.
    #[arg(short = 'i', long = "msgId", value_name = "ID")]
    pub msg_id: String,
    /// Look ids that are not offset ids up as unique keys (`UNIQ_KEY`) in this topic.
    #[arg(short = 't', long = "topic")]
    pub topic: Option<String>,
}

// ACL 2.0 sub-commands (`auth.rs`).

#[derive(Args, Debug, Clone)]
#[command(group(ArgGroup::new("target").required(true).args(["broker_addr", "cluster_name"])))]
/// The brokers an ACL 2.0 sub-command acts on.
pub struct Target {
    /// One broker.
    #[arg(short = 'b', long = "brokerAddr", value_name = "ADDR")]
    pub broker_addr: Option<String>,
    /// Every master of this cluster.
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    pub cluster_name: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct UserArgs {
    #[command(flatten)]
    pub target: Target,
    /// User name.
    #[arg(short = 'u', long = "username")]
    pub username: String,
    /// Password (the secret key clients sign with).
    #[arg(short = 'p', long = "password")]
    pub password: Option<String>,
    /// `Super` or `Normal`.
    #[arg(short = 't', long = "userType")]
    pub user_type: Option<String>,
    /// `enable` or `disable` (updateUser).
    #[arg(short = 's', long = "userStatus")]
    pub user_status: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct DeleteUserArgs {
    #[command(flatten)]
    pub target: Target,
    #[arg(short = 'u', long = "username")]
    pub username: String,
}

#[derive(Args, Debug, Clone)]
pub struct ListUserArgs {
    #[command(flatten)]
    pub target: Target,
    /// Only users whose name contains this.
    #[arg(short = 'f', long = "filter")]
    pub filter: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct AclArgs {
    #[command(flatten)]
    pub target: Target,
    /// Subject, `User:<name>`.
    #[arg(short = 's', long = "subject")]
    pub subject: String,
    /// Resources, comma-separated: `Topic:orders`, `Group:g*`, `Topic:*`, `*`.
    #[arg(short = 'r', long = "resources", value_delimiter = ',')]
    pub resources: Vec<String>,
    /// Actions, comma-separated: `Pub`, `Sub`, `All`, ...
    #[arg(short = 'a', long = "actions", value_delimiter = ',')]
    pub actions: Vec<String>,
    /// Source addresses or CIDR blocks, comma-separated.
    #[arg(short = 'i', long = "sourceIp", value_delimiter = ',')]
    pub source_ips: Vec<String>,
    /// `Allow` or `Deny`.
    #[arg(short = 'd', long = "decision")]
    pub decision: String,
}

#[derive(Args, Debug, Clone)]
pub struct DeleteAclArgs {
    #[command(flatten)]
    pub target: Target,
    #[arg(short = 's', long = "subject")]
    pub subject: String,
    /// Only this resource's entry (else the whole ACL).
    #[arg(short = 'r', long = "resource")]
    pub resource: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct ListAclArgs {
    #[command(flatten)]
    pub target: Target,
    #[arg(short = 's', long = "subject")]
    pub subject: Option<String>,
    #[arg(short = 'r', long = "resource")]
    pub resource: Option<String>,
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
