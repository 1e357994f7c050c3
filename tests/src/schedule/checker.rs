//! After the last heal: every queue of the topic read whole from every replica, and
//! compared with the producers' log of SEND_OKs and with each other.
//!
//! Replication copies the commitlog byte for byte, so every replica holds every
//! message at the same queue offset. An acknowledged message must be on every
//! replica, at the queue offset its SEND_OK named; a key (sent once: the producer does
//! not retry) appears once per replica; two replicas never hold different messages
//! at one queue offset.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use vostok_remoting::protocol::header::{PullMessageRequestHeader, PullMessageResponseHeader};
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::{RemotingClient, RemotingCommand};

use super::producer::{key_of, Ack};

/// How many examples each finding keeps.
const EXAMPLES: usize = 5;

/// What one broker stores of the topic: per queue, offset to key.
#[derive(Debug, Default)]
pub struct Replica {
    pub name: String,
    pub queues: BTreeMap<i32, BTreeMap<i64, String>>,
}

impl Replica {
    pub fn len(&self) -> usize {
        self.queues.values().map(BTreeMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What the comparison found.
#[derive(Debug, Default)]
pub struct Check {
    pub acked: usize,
    /// Messages per replica.
    pub stored: Vec<(String, usize)>,
    /// Acknowledged and on no replica at all.
    pub lost: usize,
    /// Acknowledged and not on this replica, by replica.
    pub missing: Vec<(String, usize)>,
    /// Acknowledged, on a replica, but at another queue offset than acknowledged.
    pub misplaced: usize,
    /// Extra copies of a key within one replica, summed over the replicas.
    pub duplicates: usize,
    /// Queue offsets where two replicas hold different messages.
    pub divergent: usize,
    /// Queue offsets some replicas hold and others do not.
    pub uneven: usize,
    /// When each acknowledged message missing or misplaced on some replica was
    /// acknowledged: it tells which episodes to replay.
    pub flagged: Vec<Duration>,
    pub examples: Vec<String>,
}

impl Check {
    pub fn passed(&self) -> bool {
        self.lost == 0
            && self.missing.iter().all(|(_, n)| *n == 0)
            && self.misplaced == 0
            && self.duplicates == 0
            && self.divergent == 0
            && self.uneven == 0
    }

    fn example(&mut self, text: String) {
        if self.examples.len() < EXAMPLES * 4 {
            self.examples.push(text);
        }
    }
}

/// Compares the acknowledged sends with the replicas.
pub fn compare(acks: &[Ack], replicas: &[Replica]) -> Check {
    let mut check = Check {
        acked: acks.len(),
        stored: replicas.iter().map(|r| (r.name.clone(), r.len())).collect(),
        ..Default::default()
    };
    // Per replica: key -> every (queue, offset) holding it.
    let places: Vec<HashMap<&str, Vec<(i32, i64)>>> = replicas
        .iter()
        .map(|r| {
            let mut places: HashMap<&str, Vec<(i32, i64)>> = HashMap::new();
            for (&q, entries) in &r.queues {
                for (&offset, key) in entries {
                    places.entry(key.as_str()).or_default().push((q, offset));
                }
            }
            places
        })
        .collect();
    let mut missing = vec![0usize; replicas.len()];
    let mut lost_examples = 0;
    for ack in acks {
        let mut anywhere = false;
        let mut flagged = false;
        for (r, replica) in replicas.iter().enumerate() {
            let at = replica
                .queues
                .get(&ack.queue)
                .and_then(|q| q.get(&ack.offset));
            if at == Some(&ack.key) {
                anywhere = true;
                continue;
            }
            match places[r].get(ack.key.as_str()) {
                Some(elsewhere) => {
                    anywhere = true;
                    flagged = true;
                    check.misplaced += 1;
                    check.example(format!(
                        "{} acknowledged at queue {} offset {} is at {elsewhere:?} on {}",
                        ack.key, ack.queue, ack.offset, replica.name
                    ));
                }
                None => {
                    flagged = true;
                    missing[r] += 1;
                }
            }
        }
        if flagged {
            check.flagged.push(ack.at);
        }
        if !anywhere {
            check.lost += 1;
            if lost_examples < EXAMPLES {
                lost_examples += 1;
                check.example(format!(
                    "lost: {} acknowledged at {:.3} s, queue {} offset {}",
                    ack.key,
                    ack.at.as_secs_f64(),
                    ack.queue,
                    ack.offset
                ));
            }
        }
    }
    check.missing = replicas
        .iter()
        .zip(missing)
        .map(|(r, n)| (r.name.clone(), n))
        .collect();
    for (r, replica) in replicas.iter().enumerate() {
        for (key, at) in &places[r] {
            if at.len() > 1 {
                check.duplicates += at.len() - 1;
                check.example(format!(
                    "{key} {} times on {}: {at:?}",
                    at.len(),
                    replica.name
                ));
            }
        }
    }
    compare_replicas(replicas, &mut check);
    check
}

/// Offsets where the replicas disagree, or that some of them lack.
fn compare_replicas(replicas: &[Replica], check: &mut Check) {
    let queues: std::collections::BTreeSet<i32> = replicas
        .iter()
        .flat_map(|r| r.queues.keys().copied())
        .collect();
    for q in queues {
        let mut offsets: BTreeMap<i64, Vec<(&str, &str)>> = BTreeMap::new();
        for r in replicas {
            for (&offset, key) in r.queues.get(&q).into_iter().flatten() {
                offsets
                    .entry(offset)
                    .or_default()
                    .push((r.name.as_str(), key.as_str()));
            }
        }
        for (offset, held) in offsets {
            if held.len() < replicas.len() {
                check.uneven += 1;
                if check.uneven <= EXAMPLES {
                    check.example(format!(
                        "queue {q} offset {offset} only on {:?}",
                        held.iter().map(|(r, _)| *r).collect::<Vec<_>>()
                    ));
                }
            }
            if held.iter().any(|(_, key)| *key != held[0].1) {
                check.divergent += 1;
                if check.divergent <= EXAMPLES {
                    check.example(format!("queue {q} offset {offset} differs: {held:?}"));
                }
            }
        }
    }
}

/// Reads every queue of `topic` whole from the broker at `addr`.
pub async fn read_replica(
    rpc: &RemotingClient,
    name: &str,
    addr: &str,
    topic: &str,
    queues: i32,
) -> Result<Replica, String> {
    let mut replica = Replica {
        name: name.to_owned(),
        ..Default::default()
    };
    for q in 0..queues {
        let entries = replica.queues.entry(q).or_default();
        let mut offset = 0;
        // Bounded: each round either moves on or ends.
        loop {
            let (code, header, messages) = pull(rpc, addr, topic, q, offset).await?;
            match code {
                response_code::SUCCESS => {
                    for m in messages {
                        entries.insert(m.queue_offset, key_of(&m.body));
                    }
                }
                response_code::PULL_NOT_FOUND => break,
                response_code::PULL_RETRY_IMMEDIATELY | response_code::PULL_OFFSET_MOVED => {}
                other => {
                    return Err(format!(
                        "{name} ({addr}): pull of queue {q} at {offset} answered {}",
                        response_code::name(other)
                    ))
                }
            }
            let next = header.map_or(offset, |h| h.next_begin_offset);
            if next <= offset {
                break;
            }
            offset = next;
        }
    }
    Ok(replica)
}

async fn pull(
    rpc: &RemotingClient,
    addr: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
) -> Result<(i32, Option<PullMessageResponseHeader>, Vec<MessageExt>), String> {
    let header = PullMessageRequestHeader {
        consumer_group: "schedule-checker".into(),
        topic: topic.into(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: 256,
        sys_flag: vostok_remoting::protocol::header::PULL_FLAG_SUBSCRIPTION,
        commit_offset: 0,
        suspend_timeout_millis: 0,
        subscription: Some("*".into()),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        max_msg_bytes: None,
        broker_name: None,
    };
    let request = RemotingCommand::request_with_header(request_code::PULL_MESSAGE, &header);
    let response = rpc
        .invoke_sync(addr, request, Duration::from_secs(10))
        .await
        .map_err(|e| format!("pull from {addr}: {e}"))?;
    Ok((
        response.code,
        response.decode_header().ok(),
        MessageExt::decode_all(&response.body),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(key: &str, queue: i32, offset: i64) -> Ack {
        Ack {
            key: key.into(),
            broker: "broker-a".into(),
            queue,
            offset,
            at: Duration::from_millis(offset as u64),
        }
    }

    fn replica(name: &str, entries: &[(i32, i64, &str)]) -> Replica {
        let mut r = Replica {
            name: name.into(),
            ..Default::default()
        };
        for &(q, offset, key) in entries {
            r.queues.entry(q).or_default().insert(offset, key.into());
        }
        r
    }

    #[test]
    fn identical_replicas_holding_every_ack_pass() {
        let acks = [ack("a", 0, 0), ack("b", 0, 1), ack("c", 1, 0)];
        let all = [(0, 0, "a"), (0, 1, "b"), (1, 0, "c"), (1, 1, "unacked")];
        let check = compare(&acks, &[replica("b0", &all), replica("b1", &all)]);
        assert!(check.passed(), "{check:?}");
        assert_eq!(check.stored, vec![("b0".into(), 4), ("b1".into(), 4)]);
    }

    #[test]
    fn each_kind_of_finding_is_counted() {
        let acks = [
            ack("a", 0, 0),
            ack("lost", 0, 1),
            ack("moved", 0, 2),
            ack("half", 1, 0),
        ];
        let b0 = replica(
            "b0",
            &[(0, 0, "a"), (0, 3, "moved"), (1, 0, "half"), (1, 1, "a")],
        );
        let b1 = replica("b1", &[(0, 0, "a"), (0, 2, "moved"), (1, 1, "other")]);
        let check = compare(&acks, &[b0, b1]);
        assert_eq!(check.lost, 1);
        // b0 lacks "lost"; b1 lacks "lost" and "half".
        assert_eq!(check.missing, vec![("b0".into(), 1), ("b1".into(), 2)]);
        assert_eq!(check.misplaced, 1, "moved, on b0");
        assert_eq!(check.duplicates, 1, "a twice on b0");
        // Queue 1 offset 1 holds a on b0 and other on b1.
        assert_eq!(check.divergent, 1);
        // 0/2 and 0/3 and 1/0 are on one replica only.
        assert_eq!(check.uneven, 3);
        assert!(!check.passed());
    }
}
