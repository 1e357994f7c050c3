//! `mqbench`'s command line: RocketMQ benchmark-like flags.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(
    name = "mqbench",
    version,
    about = "Benchmark producer/consumer for Vostok and any RocketMQ-protocol broker",
    long_about = "Measures throughput and latency the same way every time: `produce` sends, \
                  `consume` drains a topic (e.g. a backlog), `e2e` does both at once and checks \
                  every message's sequence number (lost, duplicates) and its end-to-end latency."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Send messages and measure send throughput and latency.
    Produce(ProduceCmd),
    /// Consume a topic (from its first offset by default: a backlog) and measure the rate.
    Consume(ConsumeCmd),
    /// Produce and consume at once: throughput, end-to-end latency, lost and duplicates.
    E2e(E2eCmd),
}

#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Name server address list, `host:port;host:port`.
    #[arg(
        short = 'n',
        long = "namesrv",
        value_name = "ADDR",
        env = "NAMESRV_ADDR",
        default_value = "127.0.0.1:9876",
        value_parser = vostok_remoting::support::namesrv_addr::parse_arg
    )]
    pub namesrv: String,
    /// ACL credentials and TLS.
    #[command(flatten)]
    pub security: crate::security::SecurityArgs,
    #[arg(short = 't', long, default_value = "BenchmarkTest")]
    pub topic: String,
    /// Message body size in bytes.
    #[arg(short = 's', long, value_name = "BYTES", default_value_t = 1024)]
    pub size: usize,
    /// Stop after this many messages (sent, or received for `consume`), warm-up excluded.
    #[arg(short = 'c', long, value_name = "N")]
    pub count: Option<u64>,
    /// Stop after this many seconds (after the warm-up); 10 when neither -c nor -d.
    #[arg(short = 'd', long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Run this long before measuring.
    #[arg(long, value_name = "SECS", default_value_t = 0.0)]
    pub warmup: f64,
    /// Write the summary as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// The broker's pid for its memory/CPU figures (found by its port when it listens on
    /// this machine).
    #[arg(long, value_name = "PID")]
    pub broker_pid: Option<u32>,
    /// Async runtime worker threads (default: one per core).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// No progress line.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Header serialisation of the requests the SDK sends (the broker answers in kind);
    /// the SDK's default (binary, or `ROCKETMQ_SERIALIZE_TYPE`) when not given.
    #[arg(long, value_enum)]
    pub serialize_type: Option<Serialize>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Serialize {
    /// JSON headers, the default of Java's and the C++ clients.
    Json,
    /// Binary (`ROCKETMQ`) headers, the SDK's default.
    Rocketmq,
}

impl CommonArgs {
    /// Credentials, TLS and header serialisation of an SDK client.
    pub fn configure(&self, client: &mut vostok_client::ClientConfig) -> Result<(), String> {
        self.security.apply(client)?;
        if let Some(serialize) = self.serialize_type {
            client.remoting.connection.serialize_type = match serialize {
                Serialize::Json => vostok_remoting::SerializeType::Json,
                Serialize::Rocketmq => vostok_remoting::SerializeType::RocketMq,
            };
        }
        Ok(())
    }

    /// The measured duration limit: `-d`, or 10 s when no count was given.
    pub fn duration_limit(&self) -> Option<Duration> {
        match (self.duration, self.count) {
            (Some(d), _) => Some(Duration::from_secs_f64(d.max(0.0))),
            (None, None) => Some(Duration::from_secs(10)),
            (None, Some(_)) => None,
        }
    }

    pub fn warmup(&self) -> Duration {
        Duration::from_secs_f64(self.warmup.max(0.0))
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// One send at a time per task, waiting for the answer.
    Sync,
    /// Up to --window sends in flight per task.
    Async,
    /// Fire and forget.
    Oneway,
    /// --batch messages per SEND_BATCH_MESSAGE, one at a time per task.
    Batch,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Sync => "sync",
            Mode::Async => "async",
            Mode::Oneway => "oneway",
            Mode::Batch => "batch",
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct ProducerArgs {
    /// Producer tasks.
    #[arg(short = 'w', long, value_name = "N", default_value_t = 1)]
    pub tasks: usize,
    #[arg(long, value_enum, default_value_t = Mode::Sync)]
    pub mode: Mode,
    /// Async sends in flight per task.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub window: usize,
    /// Messages per batch (--mode batch).
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub batch: usize,
    /// Compress bodies (LZ4); otherwise bodies are never compressed, whatever their size.
    #[arg(long)]
    pub compress: bool,
    /// Total messages per second over all tasks (no limit by default).
    #[arg(long, value_name = "N")]
    pub rate: Option<f64>,
    /// Queues asked for when the topic is auto-created.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub queues: i32,
    /// Send timeout, milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 3000)]
    pub send_timeout: u64,
    /// Tags cycled over the messages, comma-separated; each message also gets the
    /// property `k`, its tag's index in the list (for SQL92 filters).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub tags: Vec<String>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum From {
    First,
    Last,
}

#[derive(Args, Debug, Clone)]
pub struct ConsumerArgs {
    /// Use the lite pull consumer (a poll loop) instead of the push consumer.
    #[arg(long, conflicts_with = "pop")]
    pub lite_pull: bool,
    /// Use the simple consumer (POP receive, then one batch ack per receive) instead of
    /// the push consumer; `--pull-batch` is the receive batch (default 32).
    #[arg(long)]
    pub pop: bool,
    /// `--pop`: receive loops at once.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub pop_receivers: usize,
    /// `--pop`: invisible duration of received messages, milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    pub invisible_ms: u64,
    /// Messages per pull request (SDK default: 32 push, 10 lite pull).
    #[arg(long, value_name = "N")]
    pub pull_batch: Option<i32>,
    /// Messages per listener call (`consumeMessageBatchMaxSize`, default 1).
    #[arg(long, value_name = "N")]
    pub consume_batch: Option<usize>,
    /// Listener calls at once (`consumeThreadMax`, default 20).
    #[arg(long, value_name = "N")]
    pub consume_threads: Option<usize>,
    /// Subscribe with this tag expression (default `*`).
    #[arg(long, value_name = "EXPR", conflicts_with_all = ["sql", "routing_key"])]
    pub tag: Option<String>,
    /// Subscribe with this SQL92 expression (the broker needs enablePropertyFilter=true).
    #[arg(long, value_name = "EXPR", conflicts_with = "routing_key")]
    pub sql: Option<String>,
    /// Bind with this routing key (`orders.*.eu`, docs/amqp.md), filtered by the broker;
    /// a message's routing key is its tag (`--tags`).
    #[arg(long, value_name = "BINDING")]
    pub routing_key: Option<String>,
    /// With `--routing-key`: subscribe to everything and match here, as against a
    /// broker without routing keys, to compare the bytes received.
    #[arg(long, requires = "routing_key")]
    pub routing_on_client: bool,
}

impl ConsumerArgs {
    /// What the consumer subscribes with.
    pub fn selector(&self) -> vostok_client::MessageSelector {
        if let Some(key) = &self.routing_key {
            return if self.routing_on_client {
                vostok_client::MessageSelector::by_tag("*")
            } else {
                vostok_client::MessageSelector::by_routing_key(key.clone())
            };
        }
        match (&self.sql, &self.tag) {
            (Some(sql), _) => vostok_client::MessageSelector::by_sql(sql.clone()),
            (None, Some(tag)) => vostok_client::MessageSelector::by_tag(tag.clone()),
            (None, None) => vostok_client::MessageSelector::by_tag("*"),
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct ProduceCmd {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub producer: ProducerArgs,
    /// Producer group.
    #[arg(long, default_value = "mqbench_producer")]
    pub group: String,
}

#[derive(Args, Debug, Clone)]
pub struct ConsumeCmd {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub consumer: ConsumerArgs,
    /// Consumer group (default: a new one per run, so a backlog is read from its start).
    #[arg(long)]
    pub group: Option<String>,
    /// Where a group without committed offsets starts.
    #[arg(long, value_enum, default_value_t = From::First)]
    pub from: From,
    /// Consumer groups reading the topic at once, one consumer each (`GROUP_0`,
    /// `GROUP_1`, ...); the rates and `-c` count every group's deliveries.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub groups: usize,
}

#[derive(Args, Debug, Clone)]
pub struct E2eCmd {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub producer: ProducerArgs,
    #[command(flatten)]
    pub consumer: ConsumerArgs,
    /// Consumer group (default: a new one per run).
    #[arg(long)]
    pub group: Option<String>,
    /// After the producers stop, wait at most this long for the last messages.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub drain_timeout: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rocketmq_like_flags_parse() {
        let cli = Cli::try_parse_from([
            "mqbench",
            "produce",
            "-n",
            "127.0.0.1:9876",
            "-t",
            "T",
            "-s",
            "2048",
            "-w",
            "8",
            "--mode",
            "async",
            "--window",
            "512",
            "-d",
            "5",
            "--warmup",
            "1",
            "--json",
            "/tmp/x.json",
        ])
        .unwrap();
        let Command::Produce(p) = cli.command else {
            panic!("not produce");
        };
        assert_eq!(p.common.size, 2048);
        assert_eq!(p.producer.tasks, 8);
        assert_eq!(p.producer.mode, Mode::Async);
        assert_eq!(p.producer.window, 512);
        assert_eq!(p.common.duration_limit(), Some(Duration::from_secs(5)));
        assert_eq!(p.common.warmup(), Duration::from_secs(1));
    }

    #[test]
    fn count_alone_has_no_time_limit_and_nothing_defaults_to_ten_seconds() {
        let cli = Cli::try_parse_from(["mqbench", "consume", "-c", "1000", "--lite-pull"]).unwrap();
        let Command::Consume(c) = cli.command else {
            panic!("not consume");
        };
        assert_eq!(c.common.count, Some(1000));
        assert_eq!(c.common.duration_limit(), None);
        assert!(c.consumer.lite_pull);
        assert_eq!(c.from, From::First);
        let cli = Cli::try_parse_from(["mqbench", "e2e", "--rate", "50000"]).unwrap();
        let Command::E2e(e) = cli.command else {
            panic!("not e2e");
        };
        assert_eq!(e.common.duration_limit(), Some(Duration::from_secs(10)));
        assert_eq!(e.producer.rate, Some(50_000.0));
        let cli = Cli::try_parse_from(["mqbench", "e2e", "--tags", "TagA,TagB", "--sql", "k < 1"])
            .unwrap();
        let Command::E2e(e) = cli.command else {
            panic!("not e2e");
        };
        assert_eq!(e.producer.tags, ["TagA", "TagB"]);
        assert_eq!(
            e.consumer.selector(),
            vostok_client::MessageSelector::by_sql("k < 1")
        );
        assert!(
            Cli::try_parse_from(["mqbench", "consume", "--routing-on-client"]).is_err(),
            "--routing-on-client needs a binding"
        );
        assert!(
            Cli::try_parse_from(["mqbench", "consume", "--tag", "A", "--sql", "k < 1"]).is_err()
        );
    }
}
