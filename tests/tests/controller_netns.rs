//! Controller mode across hosts (network namespaces, see `vostok_tests::netns`):
//! three name servers each running a controller (`enableControllerInNamesrv`, one
//! Raft quorum) and one broker group of three (`enableControllerMode`,
//! `allAckInSyncStateSet`), each process on its own address:
//!
//! * (a) the master killed with SIGKILL under a producer's load: a new master takes
//!   sends within 10 s, and every acknowledged message is on it exactly once;
//! * (b) the master cut off (link down) under load, then healed: a new master takes
//!   over, the old one never acknowledges while cut off, rejoins as a slave with its
//!   unacknowledged tail cut, and no acknowledged message is missing or doubled;
//! * (c) the controller leading the Raft quorum killed, then the master: the two
//!   controllers left still elect;
//! * (d) an election by hand is pushed to the brokers (NOTIFY_BROKER_ROLE_CHANGED):
//!   each one reports the new epoch as notified, and the new master takes sends;
//! * (e) a group of two: the slave, frozen until it leaves the SyncStateSet, catches
//!   up and is cut off at once, before its master's next SyncStateSet check; the
//!   master dies and the slave, elected, holds every acknowledged message;
//! * (f) two of the three controllers killed: the master refuses sends once its
//!   lease ran out, and takes them again when one controller is back (the figures
//!   in docs/controller.md come from this test).
//!
//! Skipped (with a message) without root.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use vostok_client::{Message, Producer, ProducerConfig, SendStatus};
use vostok_remoting::protocol::response_code;
use vostok_tests::client::TestClient;
use vostok_tests::controller::{
    alive_at_leader, await_new_master, controller_leader, elect_by_hand, new_master, ready,
    ready_with, runtime_info, stored_bodies, CONTROLLER_PORT, TOPIC,
};
use vostok_tests::freeze::{freeze, thaw};
use vostok_tests::netns::Network;
use vostok_tests::sdk::{self, eventually, wait_until};

fn body(n: u64) -> String {
    format!("m{n:07}-{}", "x".repeat((n % 200) as usize))
}

#[derive(Default)]
struct Sends {
    ok: Mutex<Vec<String>>,
    other: Mutex<usize>,
}

fn start_senders(producer: &Producer, sends: &Arc<Sends>, stop: &Arc<AtomicBool>, tasks: usize) {
    let next = Arc::new(AtomicU64::new(0));
    for _ in 0..tasks {
        let (producer, sends, stop, next) =
            (producer.clone(), sends.clone(), stop.clone(), next.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let b = body(next.fetch_add(1, Ordering::Relaxed));
                match producer.send(Message::new(TOPIC, b.clone())).await {
                    Ok(r) if r.send_status == SendStatus::SendOk => {
                        sends.ok.lock().unwrap().push(b)
                    }
                    Ok(_) => *sends.other.lock().unwrap() += 1,
                    Err(_) => {
                        *sends.other.lock().unwrap() += 1;
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        });
    }
}

fn producer(namesrv: &str, instance: &str) -> Producer {
    Producer::new(ProducerConfig {
        client: vostok_client::ClientConfig {
            poll_name_server_interval: Duration::from_millis(500),
            heartbeat_broker_interval: Duration::from_secs(1),
            ..sdk::client(namesrv, instance)
        },
        producer_group: format!("{instance}-producers"),
        // A retried send may be stored twice; each attempt here is its own body.
        retry_times_when_send_failed: 0,
        send_msg_timeout: Duration::from_secs(3),
        ..Default::default()
    })
}

/// Every acknowledged body is stored at `addr` exactly once.
async fn assert_exactly_once(admin: &TestClient, addr: &str, acked: &[String], what: &str) {
    let stored = stored_bodies(admin, addr).await;
    let missing: Vec<_> = acked.iter().filter(|b| !stored.contains_key(*b)).collect();
    assert!(
        missing.is_empty(),
        "{what}: {} of {} acknowledged messages missing: {:?}",
        missing.len(),
        acked.len(),
        &missing[..missing.len().min(5)]
    );
    let twice: Vec<_> = stored
        .iter()
        .filter(|(b, n)| **n > 1 && *b != "probe")
        .collect();
    assert!(twice.is_empty(), "{what}: stored more than once: {twice:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_master_is_replaced_without_losing_acknowledged_messages() {
    let Some(net) = Network::new("ctl-kill") else {
        return;
    };
    let (mut c, admin, rpc, master) = ready(&net, "ck", &[]).await;
    let producer = producer(&c.namesrv, "ctl-kill");
    producer.start().await.unwrap();
    let (sends, stop) = (Arc::new(Sends::default()), Arc::new(AtomicBool::new(false)));
    start_senders(&producer, &sends, &stop, 8);
    let acked = |s: &Sends| s.ok.lock().unwrap().len();
    wait_until("acknowledged sends", || acked(&sends) >= 300).await;

    c.brokers[master].as_mut().unwrap().kill9();
    let killed = Instant::now();
    let before = acked(&sends);
    let new = await_new_master(&c, &admin, &rpc, master, killed).await;
    wait_until("sends acknowledged by the new master", || {
        acked(&sends) >= before + 200
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let acked_bodies = sends.ok.lock().unwrap().clone();
    let addr = c.brokers[new].as_ref().unwrap().addr.clone();
    assert_exactly_once(&admin, &addr, &acked_bodies, "new master").await;
    eprintln!(
        "controller_netns kill: {} acknowledged, {} not",
        acked_bodies.len(),
        sends.other.lock().unwrap()
    );
    producer.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_master_is_fenced_and_rejoins_with_its_tail_cut() {
    let Some(net) = Network::new("ctl-cut") else {
        return;
    };
    let (c, admin, rpc, master) = ready(&net, "cc", &[]).await;
    let producer = producer(&c.namesrv, "ctl-cut");
    producer.start().await.unwrap();
    let (sends, stop) = (Arc::new(Sends::default()), Arc::new(AtomicBool::new(false)));
    start_senders(&producer, &sends, &stop, 8);
    let acked = |s: &Sends| s.ok.lock().unwrap().len();
    wait_until("acknowledged sends", || acked(&sends) >= 300).await;

    let old = c.brokers[master].as_ref().unwrap();
    old.host().link_down();
    let cut = Instant::now();
    let before = acked(&sends);
    let new = await_new_master(&c, &admin, &rpc, master, cut).await;
    wait_until("sends acknowledged by the new master", || {
        acked(&sends) >= before + 200
    })
    .await;
    old.host().link_up();
    // Healed: the old master learns the new epoch and follows the new master.
    let old_addr = old.addr.clone();
    eventually("the old master to become a slave", || {
        let (rpc, addr) = (&rpc, old_addr.clone());
        async move {
            runtime_info(rpc, &addr)
                .await
                .get("brokerRole")
                .map(String::as_str)
                == Some("SLAVE")
        }
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let acked_bodies = sends.ok.lock().unwrap().clone();
    let new_addr = c.brokers[new].as_ref().unwrap().addr.clone();
    assert_exactly_once(&admin, &new_addr, &acked_bodies, "new master").await;
    // The old master cut its unacknowledged tail and copied the new master's log.
    let end = runtime_info(&rpc, &new_addr).await["commitLogMaxOffset"].clone();
    eventually("the old master to hold the new master's log", || {
        let (rpc, addr, end) = (&rpc, old_addr.clone(), end.clone());
        async move { runtime_info(rpc, &addr).await.get("commitLogMaxOffset") == Some(&end) }
    })
    .await;
    assert_exactly_once(&admin, &old_addr, &acked_bodies, "old master, rejoined").await;
    assert_eq!(
        stored_bodies(&admin, &old_addr).await,
        stored_bodies(&admin, &new_addr).await,
        "the two logs differ"
    );
    eprintln!(
        "controller_netns cut: {} acknowledged, {} not",
        acked_bodies.len(),
        sends.other.lock().unwrap()
    );
    producer.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elections_go_on_without_the_raft_leader() {
    let Some(net) = Network::new("ctl-raft") else {
        return;
    };
    let (mut c, admin, rpc, master) = ready(&net, "cr", &[]).await;
    // The controller leading the Raft quorum, killed with its name server.
    let leader = controller_leader(&rpc, &c).await;
    let li = c
        .namesrvs
        .iter()
        .position(|n| n.as_ref().unwrap().host().addr(CONTROLLER_PORT) == leader)
        .unwrap();
    c.namesrvs[li].as_mut().unwrap().kill9();
    c.namesrvs[li] = None;
    // Then the master: the two controllers left elect another.
    c.brokers[master].as_mut().unwrap().kill9();
    let killed = Instant::now();
    let new = await_new_master(&c, &admin, &rpc, master, killed).await;
    assert_ne!(new, master);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_election_is_pushed_to_the_brokers() {
    let Some(net) = Network::new("ctl-push") else {
        return;
    };
    let (c, admin, rpc, master) = ready(&net, "cp", &[]).await;
    let next = (master + 1) % 3;
    let elected = elect_by_hand(&rpc, &c, next).await;
    let epoch = elected
        .master_epoch
        .expect("the new master epoch")
        .to_string();
    // Every broker (all alive) was told the new epoch by the controller leader, not
    // only by its own poll: the notice is what `notifiedMasterEpoch` counts.
    for i in 0..3 {
        let (addr, epoch) = (c.addr(i), epoch.clone());
        eventually("each broker to be notified of the new epoch", || {
            let (rpc, addr, epoch) = (&rpc, addr.clone(), epoch.clone());
            async move {
                let info = runtime_info(rpc, &addr).await;
                info.get("notifiedMasterEpoch") == Some(&epoch)
                    && info.get("masterEpoch") == Some(&epoch)
            }
        })
        .await;
    }
    let role = |i| {
        let (rpc, addr) = (&rpc, c.addr(i));
        async move { runtime_info(rpc, &addr).await.get("brokerRole").cloned() }
    };
    assert_eq!(role(next).await.as_deref(), Some("SYNC_MASTER"));
    assert_eq!(role(master).await.as_deref(), Some("SLAVE"));
    let addr = c.addr(next);
    eventually("the new master to take a send", || {
        let (admin, addr) = (&admin, addr.clone());
        async move {
            admin
                .send_raw(&addr, TOPIC, 0, "after the push".to_string(), String::new())
                .await
                .code
                == response_code::SUCCESS
        }
    })
    .await;
}

/// Senders that together send about `rate` messages a second (fewer while sends
/// wait), each body unique, logging every SEND_OK; they end when `stop` is set.
fn start_paced_senders(
    producer: &Producer,
    sends: &Arc<Sends>,
    stop: &Arc<AtomicBool>,
    rate: u64,
    tasks: u64,
) -> Vec<tokio::task::JoinHandle<()>> {
    let next = Arc::new(AtomicU64::new(0));
    let period = Duration::from_micros(1_000_000 * tasks / rate);
    (0..tasks)
        .map(|_| {
            let (producer, sends, stop, next) =
                (producer.clone(), sends.clone(), stop.clone(), next.clone());
            tokio::spawn(async move {
                let mut ticks = tokio::time::interval(period);
                ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                while !stop.load(Ordering::SeqCst) {
                    ticks.tick().await;
                    let b = body(next.fetch_add(1, Ordering::Relaxed));
                    match producer.send(Message::new(TOPIC, b.clone())).await {
                        Ok(r) if r.send_status == SendStatus::SendOk => {
                            sends.ok.lock().unwrap().push(b)
                        }
                        _ => *sends.other.lock().unwrap() += 1,
                    }
                }
            })
        })
        .collect()
}

/// The master's SyncStateSet as it reports it (`1,2`).
async fn sync_state_set_of(rpc: &vostok_remoting::RemotingClient, addr: &str) -> String {
    runtime_info(rpc, addr)
        .await
        .get("syncStateSet")
        .cloned()
        .unwrap_or_default()
}

/// How far behind the master at `addr` the slave connected from `slave_ip` is, in
/// bytes (`haSlaves`: `ip:port:ackOffset:behindBytes:inSync;...`).
async fn behind_bytes(
    rpc: &vostok_remoting::RemotingClient,
    addr: &str,
    slave_ip: &str,
) -> Option<i64> {
    let info = runtime_info(rpc, addr).await;
    info.get("haSlaves")?.split(';').find_map(|slave| {
        let fields: Vec<&str> = slave.split(':').collect();
        match fields.as_slice() {
            [ip, _port, _ack, behind, _in_sync] if *ip == slave_ip => behind.parse().ok(),
            _ => None,
        }
    })
}

/// The interleaving that lost acknowledged messages when a slave was admitted to the
/// SyncStateSet for having caught up some time ago, and sends waited for it only once
/// the controller agreed: `allAckInSyncStateSet`, ~300 messages a second; the slave
/// is frozen until the master drops it from the set, resumes, and is cut off as soon
/// as its master sees it 0 bytes behind, before the master's next check. Whatever the
/// master does at that check, the master then dies and the slave, elected, must hold
/// every send the master acknowledged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_joins_the_sync_state_set_only_holding_every_acknowledged_message() {
    let Some(net) = Network::new("ctl-join") else {
        return;
    };
    // Timed so that the cut always lands inside one check period: the cut comes about
    // 1 s after the check that dropped the slave, the next check 4 s after that one.
    // The slave still counts as caught up (6 s) and alive (heartbeat timeout 6 s, also
    // the master's lease) at that next check. The master keeps the frozen slave's
    // connection (no housekeeping close), so that it resumes at once.
    let settings = [
        ("checkSyncStateSetPeriod", "4000"),
        ("haMaxTimeSlaveNotCatchup", "6000"),
        ("controllerHeartBeatTimeoutMills", "6000"),
        ("haHousekeepingInterval", "60000"),
    ];
    let (mut c, admin, rpc, a) = ready_with(&net, "cj", 2, &settings).await;
    let b = 1 - a;
    let (a_addr, b_addr) = (c.addr(a), c.addr(b));
    let b_broker = c.brokers[b].as_ref().unwrap();
    let (b_host, b_pid) = (b_broker.host().clone(), b_broker.process.pid());
    let b_ip = b_host.ip().to_string();
    let a_id = runtime_info(&rpc, &a_addr).await["controllerBrokerId"].clone();
    let b_id: i64 = runtime_info(&rpc, &b_addr).await["controllerBrokerId"]
        .parse()
        .expect("a controller-mode broker id");

    let producer = producer(&c.namesrv, "ctl-join");
    producer.start().await.unwrap();
    let (sends, stop) = (Arc::new(Sends::default()), Arc::new(AtomicBool::new(false)));
    let senders = start_paced_senders(&producer, &sends, &stop, 300, 8);
    let acked = |s: &Sends| s.ok.lock().unwrap().len();
    wait_until("acknowledged sends", || acked(&sends) >= 300).await;

    // The slave frozen until its master's set is the master alone.
    freeze(b_pid);
    eventually(
        "the master to drop the frozen slave from its SyncStateSet",
        || {
            let (rpc, addr, a_id) = (&rpc, a_addr.clone(), a_id.clone());
            async move { sync_state_set_of(rpc, &addr).await == a_id }
        },
    )
    .await;
    // Resumed, alive for the controller again, caught up: cut off at once.
    thaw(b_pid);
    eventually("the controller to count the slave alive again", || {
        alive_at_leader(&rpc, &c, b_id)
    })
    .await;
    eventually("the master to see the slave 0 bytes behind", || {
        let (rpc, addr, ip) = (&rpc, a_addr.clone(), b_ip.clone());
        async move { behind_bytes(rpc, &addr, &ip).await == Some(0) }
    })
    .await;
    b_host.link_down();
    let acked_at_cut = acked(&sends);
    // The slave back in the master's set: at once (it had everything acknowledged
    // when it caught up), or, without that rule, at the next check.
    eventually(
        "the cut-off slave back in the master's SyncStateSet",
        || {
            let (rpc, addr, b_id) = (&rpc, a_addr.clone(), b_id.to_string());
            async move {
                sync_state_set_of(rpc, &addr)
                    .await
                    .split(',')
                    .any(|id| id == b_id)
            }
        },
    )
    .await;
    let acked_while_cut = acked(&sends) - acked_at_cut;
    // The master dies; the slave, healed, is elected from the set.
    c.brokers[a].as_mut().unwrap().kill9();
    b_host.link_up();
    eventually("the slave to be elected and take sends", || {
        let (admin, rpc, c) = (&admin, &rpc, &c);
        async move { new_master(admin, rpc, c, a).await == Some(b) }
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    for sender in senders {
        sender.await.unwrap();
    }
    let acked_bodies = sends.ok.lock().unwrap().clone();
    let stored = stored_bodies(&admin, &b_addr).await;
    let missing = acked_bodies
        .iter()
        .filter(|b| !stored.contains_key(*b))
        .count();
    eprintln!(
        "controller_netns join: {} acknowledged ({acked_while_cut} while the slave was cut \
         off), {} not, {missing} missing on the elected slave",
        acked_bodies.len(),
        sends.other.lock().unwrap()
    );
    assert_eq!(
        missing,
        0,
        "{missing} of {} acknowledged messages are not on the elected slave",
        acked_bodies.len()
    );
    producer.shutdown().await;
}

/// With two of three controllers gone no controller answers for the group: the
/// master refuses sends once its lease (`controllerHeartBeatTimeoutMills`, renewed
/// by each `syncBrokerMetadataPeriod` poll) ran out, and takes them again once a
/// controller returned and the two elected a Raft leader. Default lease and polls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_controller_quorum_a_master_refuses_sends_until_one_returns() {
    quorum_loss("ctl-quorum", "cl", 10_000, 5_000).await;
}

/// The same with a 3 s lease renewed every 300 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_short_lease_a_master_without_quorum_refuses_sends_sooner() {
    quorum_loss("ctl-quorum-short", "cx", 3_000, 300).await;
}

async fn quorum_loss(network: &str, name: &str, lease_ms: u64, poll_ms: u64) {
    let Some(net) = Network::new(network) else {
        return;
    };
    let settings = [
        ("controllerHeartBeatTimeoutMills", lease_ms.to_string()),
        ("syncBrokerMetadataPeriod", poll_ms.to_string()),
        ("brokerHeartbeatInterval", "1000".to_string()),
    ];
    let settings: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (mut c, admin, rpc, master) = ready(&net, name, &settings).await;
    let addr = c.addr(master);
    let mut sent = 0;
    let mut send = || {
        sent += 1;
        let body = format!("quorum-{sent}");
        let (admin, addr) = (&admin, addr.clone());
        async move { admin.send_raw(&addr, TOPIC, 0, body, String::new()).await }
    };
    assert_eq!(send().await.code, response_code::SUCCESS);

    // The Raft leader and one more controller die with their name servers.
    let leader = controller_leader(&rpc, &c).await;
    let dead: Vec<usize> = {
        let li = c
            .namesrvs
            .iter()
            .position(|n| n.as_ref().unwrap().host().addr(CONTROLLER_PORT) == leader)
            .unwrap();
        vec![li, (li + 1) % 3]
    };
    for &i in &dead {
        c.namesrvs[i].as_mut().unwrap().kill9();
    }
    let lost = Instant::now();
    let refused_after = loop {
        let response = send().await;
        if response.code != response_code::SUCCESS {
            assert_eq!(
                response.code,
                response_code::SERVICE_NOT_AVAILABLE,
                "{}",
                response.remark()
            );
            assert!(response
                .remark()
                .contains("lost contact with its controllers"));
            break lost.elapsed();
        }
        assert!(
            lost.elapsed() < sdk::WAIT,
            "sends still taken {:?} after the quorum was lost",
            sdk::WAIT
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // Refused for as long as no quorum answers.
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(send().await.code, response_code::SERVICE_NOT_AVAILABLE);
    }

    // One controller back (its Raft log kept): two of three elect a leader.
    let returning = dead[1];
    let restarted = c.namesrvs[returning].take().unwrap().restart(true);
    c.namesrvs[returning] = Some(restarted);
    let back = Instant::now();
    let recovered_after = loop {
        if send().await.code == response_code::SUCCESS {
            break back.elapsed();
        }
        assert!(
            back.elapsed() < sdk::WAIT,
            "sends still refused {:?} after a controller came back",
            sdk::WAIT
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    eprintln!(
        "controller_netns quorum (lease {lease_ms} ms, polls every {poll_ms} ms): first send \
         refused {} ms after 2 of 3 controllers died; sends taken again {} ms after one was \
         back up",
        refused_after.as_millis(),
        recovered_after.as_millis()
    );
}
