//! Floods against one broker, each phase with its RssAnon peak and a bystander probe
//! (new connections to the broker, route queries to the name server, which expires a
//! broker silent for 5 s here):
//! 1. a heartbeat listing 10,000 new groups, then the 10,000 groups created in batches
//!    as fast as the heartbeat limits allow;
//! 2. thousands of idle connections;
//! 3. clients that pipeline GET_ALL_TOPIC_CONFIG and never read the answers;
//! 4. slow-loris clients that start a 16 MiB frame and never finish it.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use vostok_remoting::codec::RemotingCodec;
use vostok_remoting::protocol::body::{
    ConsumeFromWhere, ConsumeType, ConsumerData, HeartbeatData, MessageModel,
};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;

use crate::probe::Probe;
use crate::process::{proc_status_bytes, Broker, Namesrv};
use crate::raw::Raw;
use crate::rss::{mib, RssSampler};
use crate::{Env, Outcome};

const TOPIC: &str = "ChaosFlood";
const GROUPS: usize = 10_000;
/// What one heartbeat may list, and create (the broker's limits).
const LISTED_PER_HEARTBEAT: usize = 1024;
const CREATED_PER_HEARTBEAT: usize = 64;
const CONNECTIONS: usize = 4000;
const NON_READERS: usize = 16;
const LORIS: usize = 32;
/// Longer than the broker's `writeStallTimeoutMillis` (30 s).
const NON_READING: Duration = Duration::from_secs(40);

fn heartbeat(client_id: &str, groups: &[String]) -> RemotingCommand {
    let body = HeartbeatData {
        client_id: client_id.into(),
        consumer_data_set: groups
            .iter()
            .map(|g| ConsumerData {
                consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
                consume_type: ConsumeType::ConsumePassively,
                group_name: g.clone(),
                message_model: MessageModel::Clustering,
                subscription_data_set: Vec::new(),
                unit_mode: false,
            })
            .collect(),
        ..Default::default()
    };
    RemotingCommand::request(request_code::HEART_BEAT).with_body(body.encode())
}

async fn heartbeat_flood(
    broker: &str,
    figures: &mut Vec<(String, String)>,
) -> Result<bool, String> {
    let groups: Vec<String> = (0..GROUPS).map(|i| format!("flood_group_{i}")).collect();
    let raw = Raw::default();
    let t = Instant::now();
    let one = raw.call(broker, heartbeat("flood-one", &groups)).await?;
    figures.push((
        format!("one heartbeat of {GROUPS} new groups"),
        format!(
            "answered {} in {} ms",
            response_code::name(one.code),
            t.elapsed().as_millis()
        ),
    ));
    // Batches: each window of groups listed until all of it exists, 4 clients at once.
    let t = Instant::now();
    let windows: Vec<Vec<String>> = groups
        .chunks(LISTED_PER_HEARTBEAT)
        .map(<[String]>::to_vec)
        .collect();
    let mut tasks = Vec::new();
    for (w, window) in windows.into_iter().enumerate() {
        let broker = broker.to_owned();
        tasks.push(tokio::spawn(async move {
            let raw = Raw::default();
            // The broker creates at most 64 groups per heartbeat and answers SYSTEM_BUSY
            // while more wait; the heartbeat that finds them all answers SUCCESS.
            let rounds = window.len().div_ceil(CREATED_PER_HEARTBEAT) + 2;
            let mut sent = 0;
            loop {
                let r = raw
                    .call(&broker, heartbeat(&format!("flood-{w}"), &window))
                    .await?;
                sent += 1;
                match r.code {
                    response_code::SUCCESS => break,
                    response_code::SYSTEM_BUSY if sent < rounds => {}
                    _ => {
                        return Err(format!(
                            "heartbeat {sent} answered {} {}",
                            r.code,
                            r.remark()
                        ))
                    }
                }
            }
            Ok::<usize, String>(sent)
        }));
    }
    let mut heartbeats = 0;
    for t in tasks {
        heartbeats += t.await.map_err(|e| e.to_string())??;
    }
    let batched = t.elapsed();
    let all = raw
        .call(
            broker,
            RemotingCommand::request(request_code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG),
        )
        .await?;
    let body = String::from_utf8_lossy(&all.body);
    let created = (0..GROUPS)
        .filter(|i| body.contains(&format!("\"flood_group_{i}\"")))
        .count();
    figures.push((
        "groups created in batches".into(),
        format!(
            "{created} of {GROUPS} by {heartbeats} heartbeats in {:.1} s",
            batched.as_secs_f64()
        ),
    ));
    Ok(created == GROUPS)
}

async fn connection_flood(broker: &str) -> Result<(usize, usize), String> {
    let mut held = Vec::new();
    let mut refused = 0;
    for _ in 0..CONNECTIONS {
        match tokio::time::timeout(Duration::from_secs(2), TcpStream::connect(broker)).await {
            Ok(Ok(s)) => held.push(s),
            _ => refused += 1,
        }
    }
    // Hold them while the probe runs, then see how many the broker closed.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut closed = 0;
    for s in &mut held {
        let mut b = [0u8; 1];
        if let Ok(Ok(0) | Err(_)) =
            tokio::time::timeout(Duration::from_millis(1), s.read(&mut b)).await
        {
            closed += 1;
        }
    }
    Ok((held.len() - closed, refused + closed))
}

/// Pipelines GET_ALL_TOPIC_CONFIG for `for_how_long` without reading; returns the frames
/// written and whether the broker closed the connection.
async fn non_reader(broker: String, for_how_long: Duration) -> (u64, bool) {
    let Ok(mut s) = TcpStream::connect(&broker).await else {
        return (0, true);
    };
    let frame = RemotingCodec::default()
        .encode_to_bytes(&RemotingCommand::request(
            request_code::GET_ALL_TOPIC_CONFIG,
        ))
        .expect("a small request encodes");
    let batch: Vec<u8> = frame
        .iter()
        .copied()
        .cycle()
        .take(frame.len() * 64)
        .collect();
    let deadline = Instant::now() + for_how_long;
    let mut frames = 0;
    while Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_secs(1), s.write_all(&batch)).await {
            Ok(Ok(())) => frames += 64,
            Ok(Err(_)) => return (frames, true),
            Err(_) => {} // the broker stopped reading: backpressure
        }
    }
    (frames, false)
}

/// Sends the first bytes of a 16 MiB frame and nothing more; returns how long the
/// broker took to close the connection (None: still open after `limit`).
async fn slow_loris(broker: String, limit: Duration) -> Option<Duration> {
    let mut s = TcpStream::connect(&broker).await.ok()?;
    let length: u32 = 16 * 1024 * 1024 - 16;
    let mut start = length.to_be_bytes().to_vec();
    start.extend_from_slice(&(64u32).to_be_bytes()); // JSON header of 64 bytes
    start.extend(std::iter::repeat_n(b' ', 60 * 1024));
    let t = Instant::now();
    s.write_all(&start).await.ok()?;
    let mut b = [0u8; 64];
    loop {
        match tokio::time::timeout(Duration::from_secs(1), s.read(&mut b)).await {
            Ok(Ok(0) | Err(_)) => return Some(t.elapsed()),
            Ok(Ok(_)) => {}
            Err(_) => {
                if t.elapsed() > limit {
                    return None;
                }
                // A trickle: one byte a second keeps an idle timer from firing.
                if s.write_all(b" ").await.is_err() {
                    return Some(t.elapsed());
                }
            }
        }
    }
}

pub async fn run(env: &Env) -> Result<Outcome, String> {
    let dir = env.scratch("floods")?;
    let ns = Namesrv::start_with(
        &env.bins,
        dir.path(),
        &[
            ("brokerChannelExpiredTime", "5000"),
            ("scanNotActiveBrokerInterval", "500"),
        ],
    )?;
    let mut settings = vec![
        ("brokerName", "chaos-flood".to_owned()),
        ("registerNameServerPeriod", "1000".to_owned()),
        ("mappedFileSizeCommitLog", env.commitlog_file.to_string()),
    ];
    if let Some(ceiling) = env.memory_ceiling {
        settings.push(("maxMemoryBytes", ceiling.to_string()));
    }
    let broker = Broker::start(&env.bins, dir.path(), &ns.addr, &settings)?;
    let raw = Raw::default();
    raw.create_topic(&broker.addr, TOPIC, 4).await?;
    raw.wait_route(&ns.addr, TOPIC, Duration::from_secs(30))
        .await?;
    let pid = broker.pid();
    let baseline = proc_status_bytes(pid, "RssAnon:").unwrap_or(0);
    let rss = RssSampler::start(pid);
    let mut figures = vec![("RssAnon at start".to_owned(), mib(baseline))];
    let mut passed = true;
    let mut peaks = Vec::new();

    // 1. Heartbeats.
    let probe = Probe::start(&broker.addr, &ns.addr, TOPIC);
    let created_all = heartbeat_flood(&broker.addr, &mut figures).await?;
    let p = probe.stop().await;
    peaks.push(rss.take_peak());
    figures.push(("heartbeat flood: bystander".into(), p.describe()));
    figures.push((
        "heartbeat flood: RssAnon peak".into(),
        mib(*peaks.last().expect("pushed")),
    ));
    passed &= created_all && p.ok();

    // 2. Connections.
    let probe = Probe::start(&broker.addr, &ns.addr, TOPIC);
    let t = Instant::now();
    let (open, refused_or_closed) = connection_flood(&broker.addr).await?;
    let p = probe.stop().await;
    peaks.push(rss.take_peak());
    figures.push((
        format!("{CONNECTIONS} connections"),
        format!(
            "{open} held open, {refused_or_closed} refused or closed by the broker, in {:.1} s; bystander: {}",
            t.elapsed().as_secs_f64(),
            p.describe()
        ),
    ));
    figures.push((
        "connection flood: RssAnon peak".into(),
        mib(*peaks.last().expect("pushed")),
    ));
    passed &= p.ok();
    // The held connections are closed by now; let the broker notice.
    tokio::time::sleep(Duration::from_secs(2)).await;

    // 3. Clients that never read.
    let probe = Probe::start(&broker.addr, &ns.addr, TOPIC);
    let tasks: Vec<_> = (0..NON_READERS)
        .map(|_| tokio::spawn(non_reader(broker.addr.clone(), NON_READING)))
        .collect();
    let (mut frames, mut dropped) = (0, 0);
    for t in tasks {
        let (f, d) = t.await.unwrap_or((0, false));
        frames += f;
        dropped += usize::from(d);
    }
    let p = probe.stop().await;
    peaks.push(rss.take_peak());
    figures.push((
        format!(
            "{NON_READERS} clients pipelining GET_ALL_TOPIC_CONFIG without reading, {} s",
            NON_READING.as_secs()
        ),
        format!(
            "{frames} requests written, {dropped} disconnected by the broker; bystander: {}",
            p.describe()
        ),
    ));
    figures.push((
        "non-readers: RssAnon peak".into(),
        mib(*peaks.last().expect("pushed")),
    ));
    passed &= p.ok();

    // 4. Slow loris.
    let probe = Probe::start(&broker.addr, &ns.addr, TOPIC);
    let limit = Duration::from_secs(150);
    let tasks: Vec<_> = (0..LORIS)
        .map(|_| tokio::spawn(slow_loris(broker.addr.clone(), limit)))
        .collect();
    let mut closed_after = Vec::new();
    for t in tasks {
        if let Ok(Some(d)) = t.await {
            closed_after.push(d);
        }
    }
    let p = probe.stop().await;
    peaks.push(rss.take_peak());
    closed_after.sort();
    figures.push((
        format!("{LORIS} slow-loris frames (16 MiB announced, 60 KiB sent, then a byte a second)"),
        format!(
            "{} of {LORIS} closed by the broker (median after {:.1} s); bystander: {}",
            closed_after.len(),
            closed_after
                .get(closed_after.len() / 2)
                .map_or(0.0, |d| d.as_secs_f64()),
            p.describe()
        ),
    ));
    figures.push((
        "slow loris: RssAnon peak".into(),
        mib(*peaks.last().expect("pushed")),
    ));
    passed &= p.ok();

    let peak = peaks.iter().copied().max().unwrap_or(0);
    // The ceiling as the broker applies it (its own default when none was given).
    let info = raw.runtime_info(&broker.addr).await.unwrap_or_default();
    let number = |k: &str| info.get(k).and_then(|v| v.parse::<u64>().ok());
    let ceiling = env.memory_ceiling.or(number("memoryLimitBytes"));
    figures.push((
        "broker's own account".into(),
        format!(
            "memoryLimitBytes {}, memoryPeakBytes {}",
            number("memoryLimitBytes").map_or("?".into(), mib),
            number("memoryPeakBytes").map_or("?".into(), mib)
        ),
    ));
    let alive = proc_status_bytes(pid, "RssAnon:").is_some();
    figures.push((
        "RssAnon peak over all floods".into(),
        match ceiling {
            Some(c) => format!("{} (ceiling maxMemoryBytes {})", mib(peak), mib(c)),
            None => format!("{} (no memory ceiling known)", mib(peak)),
        },
    ));
    figures.push(("broker alive at the end".into(), alive.to_string()));
    passed &= alive && ceiling.is_some_and(|c| peak < c);
    Ok(Outcome {
        name: "floods",
        checked: "a 10,000-group heartbeat, connection, non-reading and slow-loris floods: registration and route queries keep working, RssAnon bounded".into(),
        figures,
        passed,
    })
}
