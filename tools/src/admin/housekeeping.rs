//! `cleanExpiredCQ`, `cleanUnusedTopic` and `deleteExpiredCommitLog`: store
//! housekeeping on request, on one broker (`-b`), the masters of a cluster (`-c`) or
//! of every cluster. Prints `success`, or `false` when a broker refused, as RocketMQ's
//! commands do.

use clap::Args;
use serde::Serialize;
use vostok_client::AdminClient;
use vostok_remoting::protocol::request_code::{
    CLEAN_EXPIRED_CONSUMEQUEUE, CLEAN_UNUSED_TOPIC, DELETE_EXPIRED_COMMITLOG,
};

use super::cluster::{cluster_info, cluster_masters};
use super::error::{during, AdminError};
use super::output::JsonFlag;

#[derive(Args, Debug, Clone)]
pub struct HousekeepingArgs {
    /// One broker.
    #[arg(
        short = 'b',
        long = "brokerAddr",
        value_name = "ADDR",
        conflicts_with = "cluster"
    )]
    pub broker_addr: Option<String>,
    /// The masters of this cluster (neither flag: of every cluster).
    #[arg(short = 'c', long = "cluster", value_name = "CLUSTER")]
    pub cluster: Option<String>,
}

#[derive(Serialize)]
struct Outcome {
    broker: String,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

async fn brokers(admin: &AdminClient, args: &HousekeepingArgs) -> Result<Vec<String>, AdminError> {
    if let Some(addr) = &args.broker_addr {
        return Ok(vec![addr.trim().to_owned()]);
    }
    let info = cluster_info(admin).await?;
    let clusters: Vec<String> = match &args.cluster {
        Some(c) => vec![c.trim().to_owned()],
        None => info.cluster_addr_table.keys().cloned().collect(),
    };
    let mut out = Vec::new();
    for c in clusters {
        out.extend(cluster_masters(&info, &c)?.into_iter().map(|(_, a)| a));
    }
    Ok(out)
}

/// What a housekeeping verb asks of each broker.
#[derive(Debug, Clone, Copy)]
enum Task {
    CleanExpiredCq,
    CleanUnusedTopic,
    DeleteExpiredCommitLog,
}

async fn run(
    admin: &AdminClient,
    args: &HousekeepingArgs,
    task: Task,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let mut outcomes = Vec::new();
    for addr in brokers(admin, args).await? {
        let answer = match task {
            Task::CleanExpiredCq => admin
                .clean_expired_consume_queue(&addr)
                .await
                .map_err(during(CLEAN_EXPIRED_CONSUMEQUEUE)),
            Task::CleanUnusedTopic => admin
                .clean_unused_topic(&addr)
                .await
                .map_err(during(CLEAN_UNUSED_TOPIC)),
            Task::DeleteExpiredCommitLog => admin
                .delete_expired_commit_log(&addr)
                .await
                .map_err(during(DELETE_EXPIRED_COMMITLOG)),
        };
        outcomes.push(Outcome {
            broker: addr,
            ok: answer.is_ok(),
            error: answer.err().map(|e| e.to_string()),
        });
    }
    let all_ok = outcomes.iter().all(|o| o.ok);
    out.render(&outcomes, |_| {
        if all_ok { "success\n" } else { "false\n" }.to_owned()
    })
}

pub async fn clean_expired_cq(
    admin: &AdminClient,
    args: &HousekeepingArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    run(admin, args, Task::CleanExpiredCq, out).await
}

pub async fn clean_unused_topic(
    admin: &AdminClient,
    args: &HousekeepingArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    run(admin, args, Task::CleanUnusedTopic, out).await
}

pub async fn delete_expired_commit_log(
    admin: &AdminClient,
    args: &HousekeepingArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    run(admin, args, Task::DeleteExpiredCommitLog, out).await
}
