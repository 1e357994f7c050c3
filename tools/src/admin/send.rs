//! The verbs that send: `sendMessage` (one message, optionally to one queue),
//! `sendMsgStatus` (sends to one broker's own topic, each with its result),
//! `checkMsgSendRT` (round trips to each queue of a topic) and `clusterRT` (round trips
//! to each broker of a cluster, through the broker-name topic), with a producer built
//! from the admin client's name servers and credentials.

use std::time::Instant;

use clap::Args;
use serde::Serialize;
use vostok_client::{AdminClient, Message, MessageQueue, Producer, ProducerConfig, TraceConfig};

use super::cluster::cluster_info;
use super::error::AdminError;
use super::output::JsonFlag;

#[derive(Args, Debug, Clone)]
pub struct SendMessageArgs {
    /// Topic.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// The body, as UTF-8 text.
    #[arg(short = 'p', long = "body")]
    pub body: String,
    /// Message keys, space-separated.
    #[arg(short = 'k', long = "key")]
    pub keys: Option<String>,
    /// Message tag.
    #[arg(short = 'c', long = "tags")]
    pub tags: Option<String>,
    /// Send to this broker (with -i).
    #[arg(short = 'b', long = "broker", value_name = "BROKER_NAME")]
    pub broker_name: Option<String>,
    /// Send to this queue of the broker.
    #[arg(
        short = 'i',
        long = "qid",
        value_name = "QUEUE_ID",
        requires = "broker_name"
    )]
    pub queue_id: Option<i32>,
    /// Write a Pub trace record.
    #[arg(
        short = 'm',
        long = "msgTraceEnable",
        value_name = "BOOL", default_value_t = false, action = clap::ArgAction::Set
    )]
    pub msg_trace_enable: bool,
}

#[derive(Args, Debug, Clone)]
pub struct CheckMsgSendRtArgs {
    /// Topic.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Messages to send.
    #[arg(short = 'a', long = "amount", default_value_t = 100)]
    pub amount: u32,
    /// Body size in bytes.
    #[arg(short = 's', long = "size", default_value_t = 128)]
    pub size: usize,
}

#[derive(Args, Debug, Clone)]
pub struct ClusterRtArgs {
    /// Messages to send to each broker.
    #[arg(short = 'a', long = "amount", default_value_t = 100)]
    pub amount: u32,
    /// Body size in bytes.
    #[arg(short = 's', long = "size", default_value_t = 128)]
    pub size: usize,
    /// Only this cluster (else every cluster).
    #[arg(short = 'c', long = "cluster")]
    pub cluster: Option<String>,
    /// Print as `time|machineRoom|cluster|broker|rt` lines.
    #[arg(
        short = 'p',
        long = "printAsTlog",
        value_name = "BOOL", default_value_t = false, action = clap::ArgAction::Set
    )]
    pub print_as_tlog: bool,
    /// Machine room name in those lines.
    #[arg(short = 'm', long = "machineRoom", default_value = "noname")]
    pub machine_room: String,
    /// Seconds between rounds.
    #[arg(short = 'i', long = "interval", default_value_t = 10)]
    pub interval: u64,
    /// Rounds to run; 0 runs until interrupted, as RocketMQ's command does (one round
    /// with --json).
    #[arg(long = "rounds", default_value_t = 0)]
    pub rounds: u64,
}

/// A producer in `group` on the admin client's name servers and credentials.
async fn producer(admin: &AdminClient, group: &str, trace: bool) -> Result<Producer, AdminError> {
    let mut client = admin.client_config().clone();
    client.instance_name = format!("mqadmin-{}", std::process::id());
    let producer = Producer::new(ProducerConfig {
        client,
        producer_group: group.to_owned(),
        trace: if trace {
            TraceConfig::enabled()
        } else {
            TraceConfig::default()
        },
        ..ProducerConfig::default()
    });
    producer
        .start()
        .await
        .map_err(|e| AdminError::Invalid(format!("producer did not start: {e}")))?;
    Ok(producer)
}

#[derive(Args, Debug, Clone)]
pub struct SendMsgStatusArgs {
    /// The broker name: the sends go to its own topic (every broker serves a topic
    /// named after it).
    #[arg(short = 'b', long = "brokerName", value_name = "NAME")]
    pub broker_name: String,
    /// Body size in bytes.
    #[arg(
        short = 's',
        long = "messageSize",
        value_name = "BYTES",
        default_value_t = 128
    )]
    pub size: usize,
    /// Number of sends.
    #[arg(short = 'c', long = "count", default_value_t = 50)]
    pub count: u32,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Sent {
    broker_name: String,
    queue_id: i32,
    send_status: String,
    msg_id: String,
    offset_msg_id: String,
    queue_offset: i64,
}

fn row4(a: &str, b: &str, c: &str, d: &str) -> String {
    format!("{a:<32}  {b:<4}  {c:<20}    {d}\n")
}

pub async fn send_message(
    admin: &AdminClient,
    args: &SendMessageArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let mut msg = Message::new(args.topic.trim(), args.body.trim().as_bytes().to_vec());
    if let Some(tags) = &args.tags {
        msg.set_tags(tags.trim());
    }
    if let Some(keys) = &args.keys {
        msg.set_keys(keys.trim());
    }
    let producer = producer(admin, "PID_SMSC", args.msg_trace_enable).await?;
    let result = match (&args.broker_name, args.queue_id) {
        (Some(broker), Some(queue_id)) => {
            let mq = MessageQueue::new(args.topic.trim(), broker.trim(), queue_id);
            producer.send_to_queue(msg, &mq).await
        }
        _ => producer.send(msg).await,
    };
    producer.shutdown().await;
    let result = result.map_err(|e| AdminError::Invalid(format!("send failed: {e}")))?;
    let sent = Sent {
        broker_name: result.message_queue.broker_name.clone(),
        queue_id: result.message_queue.queue_id,
        send_status: result.send_status.name().to_owned(),
        msg_id: result.msg_id.clone(),
        offset_msg_id: result.offset_msg_id.clone(),
        queue_offset: result.queue_offset,
    };
    out.render(&sent, |s| {
        row4("#Broker Name", "#QID", "#Send Result", "#MsgId")
            + &row4(
                &s.broker_name,
                &s.queue_id.to_string(),
                &s.send_status,
                &s.msg_id,
            )
    })
}

/// One send of `sendMsgStatus`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusSend {
    rt_ms: u128,
    #[serde(flatten)]
    sent: Sent,
}

/// A send to warm the route up, then `-c` sends to the broker's own topic, each with
/// its round trip and result (`rt=...ms, SendResult [...]`, as RocketMQ prints them).
pub async fn send_msg_status(
    admin: &AdminClient,
    args: &SendMsgStatusArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let topic = args.broker_name.trim().to_owned();
    let producer = producer(admin, "PID_SMSC", false).await?;
    let body = |size: usize| -> Vec<u8> {
        b"hello jodie"
            .iter()
            .copied()
            .cycle()
            .take(size.max(1))
            .collect()
    };
    let mut sends = Vec::new();
    let mut failure = None;
    if let Err(e) = producer.send(Message::new(&topic, body(16))).await {
        failure = Some(e);
    }
    for _ in 0..args.count {
        if failure.is_some() {
            break;
        }
        let started = Instant::now();
        match producer.send(Message::new(&topic, body(args.size))).await {
            Ok(r) => sends.push(StatusSend {
                rt_ms: started.elapsed().as_millis(),
                sent: Sent {
                    broker_name: r.message_queue.broker_name.clone(),
                    queue_id: r.message_queue.queue_id,
                    send_status: r.send_status.name().to_owned(),
                    msg_id: r.msg_id.clone(),
                    offset_msg_id: r.offset_msg_id.clone(),
                    queue_offset: r.queue_offset,
                },
            }),
            Err(e) => failure = Some(e),
        }
    }
    producer.shutdown().await;
    if let Some(e) = failure {
        return Err(AdminError::Invalid(format!(
            "send to topic {topic} (the broker's own) failed: {e}"
        )));
    }
    out.render(&sends, |sends| {
        sends
            .iter()
            .map(|s| {
                format!(
                    "rt={}ms, SendResult [sendStatus={}, msgId={}, offsetMsgId={}, messageQueue=MessageQueue [topic={topic}, brokerName={}, queueId={}], queueOffset={}]\n",
                    s.rt_ms,
                    s.sent.send_status,
                    s.sent.msg_id,
                    s.sent.offset_msg_id,
                    s.sent.broker_name,
                    s.sent.queue_id,
                    s.sent.queue_offset
                )
            })
            .collect()
    })
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RoundTrip {
    broker_name: String,
    queue_id: i32,
    success: bool,
    rt_ms: u128,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SendRt {
    sends: Vec<RoundTrip>,
    /// Mean of every send but the first (which also connects), as RocketMQ computes it.
    avg_rt_ms: f64,
}

/// The mean of all round trips but the first.
fn avg_after_first(rts: &[u128]) -> f64 {
    if rts.len() < 2 {
        return rts.first().map(|v| *v as f64).unwrap_or(0.0);
    }
    rts[1..].iter().sum::<u128>() as f64 / (rts.len() - 1) as f64
}

pub async fn check_msg_send_rt(
    admin: &AdminClient,
    args: &CheckMsgSendRtArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let topic = args.topic.trim();
    let group = format!("CheckMsgSendRT_{}", std::process::id());
    let producer = producer(admin, &group, false).await?;
    let queues = match producer.fetch_publish_message_queues(topic).await {
        Ok(q) if !q.is_empty() => q,
        Ok(_) | Err(_) => {
            producer.shutdown().await;
            return Err(AdminError::NotFound(format!(
                "topic {topic} has no queue to send to"
            )));
        }
    };
    let body = vec![b'a'; args.size];
    let mut sends = Vec::new();
    for i in 0..args.amount as usize {
        let mq = &queues[i % queues.len()];
        let started = Instant::now();
        let ok = producer
            .send_to_queue(Message::new(topic, body.clone()), mq)
            .await
            .is_ok();
        sends.push(RoundTrip {
            broker_name: mq.broker_name.clone(),
            queue_id: mq.queue_id,
            success: ok,
            rt_ms: started.elapsed().as_millis(),
        });
    }
    producer.shutdown().await;
    let rts: Vec<u128> = sends.iter().map(|s| s.rt_ms).collect();
    let report = SendRt {
        avg_rt_ms: avg_after_first(&rts),
        sends,
    };
    out.render(&report, |r| {
        let mut out = row4("#Broker Name", "#QID", "#Send Result", "#RT");
        for s in &r.sends {
            out.push_str(&row4(
                &s.broker_name,
                &s.queue_id.to_string(),
                &s.success.to_string(),
                &s.rt_ms.to_string(),
            ));
        }
        out.push_str(&format!("Avg RT: {:.2}\n", r.avg_rt_ms));
        out
    })
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BrokerRt {
    cluster_name: String,
    broker_name: String,
    rt_ms: f64,
    success_count: u32,
    fail_count: u32,
}

pub async fn cluster_rt(
    admin: &AdminClient,
    args: &ClusterRtArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let info = cluster_info(admin).await?;
    let clusters: Vec<(String, Vec<String>)> = match &args.cluster {
        Some(c) => {
            let names = info
                .cluster_addr_table
                .get(c.trim())
                .ok_or_else(|| AdminError::NotFound(format!("cluster [{}] not exist", c.trim())))?;
            vec![(c.trim().to_owned(), names.iter().cloned().collect())]
        }
        None => info
            .cluster_addr_table
            .iter()
            .map(|(c, names)| (c.clone(), names.iter().cloned().collect()))
            .collect(),
    };
    let group = format!("PID-tools-{}", std::process::id());
    let producer = producer(admin, &group, false).await?;
    let body = vec![b'a'; args.size];
    let mut rows = Vec::new();
    let mut text = String::new();
    if !args.print_as_tlog {
        text.push_str(&format!(
            "{:<24}  {:<24}  {:<4}  {:<8}  {:<8}\n",
            "#Cluster Name", "#Broker Name", "#RT", "#successCount", "#failCount"
        ));
    }
    let mut round = 0;
    loop {
        round += 1;
        for (cluster, brokers) in &clusters {
            for broker in brokers {
                let mut rts = Vec::new();
                let (mut ok, mut failed) = (0, 0);
                for _ in 0..args.amount {
                    let started = Instant::now();
                    match producer.send(Message::new(broker, body.clone())).await {
                        Ok(_) => ok += 1,
                        Err(_) => failed += 1,
                    }
                    rts.push(started.elapsed().as_millis());
                }
                let rt = avg_after_first(&rts);
                if args.print_as_tlog {
                    text.push_str(&format!(
                        "{}|{}|{cluster}|{broker}|{}\n",
                        super::output::format_seconds(vostok_remoting::support::time::now_millis()),
                        args.machine_room,
                        rt.round()
                    ));
                } else {
                    text.push_str(&format!(
                        "{cluster:<24}  {broker:<24}  {:<8}  {ok:<16}  {failed:<16}\n",
                        format!("{rt:.2}")
                    ));
                }
                rows.push(BrokerRt {
                    cluster_name: cluster.clone(),
                    broker_name: broker.clone(),
                    rt_ms: rt,
                    success_count: ok,
                    fail_count: failed,
                });
            }
        }
        // With --json an unbounded run would never print: it runs one round.
        if (args.rounds != 0 && round >= args.rounds) || (args.rounds == 0 && out.json) {
            break;
        }
        if !out.json {
            // Unbounded runs print each round as it ends.
            print!("{}", std::mem::take(&mut text));
        }
        tokio::time::sleep(std::time::Duration::from_secs(args.interval)).await;
    }
    producer.shutdown().await;
    out.render(&rows, |_| text)
}
