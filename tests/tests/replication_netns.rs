//! Master/slave broker groups across hosts (network namespaces, see
//! `vostok_tests::netns`), each process on its own address:
//!
//! * a SYNC_MASTER and its slave under a producer's load, the slave and then the
//!   master killed with SIGKILL: every acknowledged message is in the slave's store,
//!   intact and once, and a new consumer group receives them all from the slave;
//! * the slave cut off (link down) or frozen (SIGSTOP): the SYNC_MASTER answers
//!   FLUSH_SLAVE_TIMEOUT or SLAVE_NOT_AVAILABLE, never SEND_OK; healed, the slave
//!   catches up and SEND_OK returns;
//! * a rolling restart of every process under load loses no acknowledged message.
//!
//! Groups are started with RocketMQ's keys only (`brokerName`, `brokerId`,
//! `brokerRole`, `listenPort`, `haListenPort`, `storePathRootDir`, `namesrvAddr`,
//! `brokerIP1`). Skipped (with a message) without root.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use vostok_client::{
    CommonConsumerConfig, ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, ConsumeFromWhere,
    ConsumerConfig, Message, MessageExt, MessageListener, Producer, ProducerConfig, PushConsumer,
    SendStatus,
};
use vostok_remoting::protocol::body::KvTable;
use vostok_remoting::protocol::{json, request_code, response_code};
use vostok_remoting::RemotingCommand;
use vostok_tests::client::TestClient;
use vostok_tests::freeze::{freeze, thaw};
use vostok_tests::netns::{Host, HostBroker, Network};
use vostok_tests::sdk::{self, eventually, wait_until};
use vostok_tests::BrokerOptions;

const TOPIC: &str = "ReplicationTopic";
const QUEUES: i32 = 4;

/// A master and its slave on two hosts.
struct Group {
    master: HostBroker,
    slave: HostBroker,
}

fn start_group(
    net: &Network,
    namesrv: &str,
    name: &str,
    master_settings: &[(&str, &str)],
    settings: &[(&str, &str)],
) -> Group {
    let options = |id: i64, role: &str, host: &Host| {
        let mut o = BrokerOptions {
            namesrv: Some(namesrv.to_owned()),
            broker_name: name.to_owned(),
            ..Default::default()
        }
        .set("brokerId", id)
        .set("brokerRole", role)
        .set("haListenPort", 10912)
        // 64 MiB commitlog files: several brokers share one disk.
        .set("mappedFileSizeCommitLog", 64 << 20)
        .set("brokerIP1", host.ip());
        for (k, v) in settings {
            o = o.set(k, v);
        }
        if role != "SLAVE" {
            for (k, v) in master_settings {
                o = o.set(k, v);
            }
        }
        o
    };
    let m = net.host(&format!("{name}-m"));
    let s = net.host(&format!("{name}-s"));
    let master = m.spawn_broker(options(0, "SYNC_MASTER", &m));
    let slave = s.spawn_broker(options(1, "SLAVE", &s));
    Group { master, slave }
}

async fn runtime_info(client: &TestClient, addr: &str) -> HashMap<String, String> {
    let response = client
        .call(
            addr,
            RemotingCommand::request(request_code::GET_BROKER_RUNTIME_INFO),
        )
        .await;
    json::from_slice::<KvTable>("runtime info", &response.body)
        .map(|kv| kv.table.into_iter().collect())
        .unwrap_or_default()
}

async fn max_offset_of(client: &TestClient, addr: &str) -> i64 {
    runtime_info(client, addr)
        .await
        .get("commitLogMaxOffset")
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1)
}

/// Creates the topic on the master and waits until the name server routes it and
/// the slave has copied it (slave sync), with the slave in the route too.
async fn create_topic(admin: &TestClient, namesrv: &str, group: &Group) {
    let response = admin.create_topic(&group.master.addr, TOPIC, QUEUES).await;
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{}",
        response.remark()
    );
    admin
        .wait_for_route(namesrv, TOPIC, |r| {
            r.broker_datas.iter().any(|b| b.broker_addrs.len() == 2)
        })
        .await;
    let slave = group.slave.addr.clone();
    eventually("the slave to copy the topic", || {
        let (admin, slave) = (admin, slave.clone());
        async move {
            let request = RemotingCommand::request_with_header(
                request_code::GET_TOPIC_CONFIG,
                &vostok_remoting::protocol::header::TopicRequestHeader {
                    topic: TOPIC.into(),
                },
            );
            admin.call(&slave, request).await.code == response_code::SUCCESS
        }
    })
    .await;
}

/// A body that says its own number and can be checked for damage.
fn body(n: u64) -> String {
    format!("m{n:07}-{}", "x".repeat((n % 200) as usize))
}

fn intact(body: &str) -> bool {
    body.get(1..8)
        .and_then(|n| n.parse::<u64>().ok())
        .is_some_and(|n| body == self::body(n))
}

#[derive(Default)]
struct Sends {
    /// Bodies answered SEND_OK.
    ok: Mutex<Vec<String>>,
    /// Bodies answered otherwise (stored, not acknowledged) or failed.
    other: Mutex<Vec<String>>,
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
                    Ok(r) => sends
                        .other
                        .lock()
                        .unwrap()
                        .push(format!("{b}: {}", r.send_status.name())),
                    Err(e) => {
                        sends.other.lock().unwrap().push(format!("{b}: {e}"));
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        });
    }
}

fn client_config(namesrv: &str, instance: &str) -> vostok_client::ClientConfig {
    vostok_client::ClientConfig {
        poll_name_server_interval: Duration::from_secs(1),
        heartbeat_broker_interval: Duration::from_secs(1),
        ..sdk::client(namesrv, instance)
    }
}

fn producer(namesrv: &str, instance: &str) -> Producer {
    Producer::new(ProducerConfig {
        client: client_config(namesrv, instance),
        producer_group: format!("{instance}-producers"),
        ..Default::default()
    })
}

/// A push consumer of a new group counting every body it receives.
async fn counting_consumer(
    namesrv: &str,
    group: &str,
) -> (PushConsumer, Arc<Mutex<HashMap<String, usize>>>) {
    let seen: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let consumer = PushConsumer::new(ConsumerConfig {
        common: CommonConsumerConfig {
            client: client_config(namesrv, group),
            consumer_group: group.into(),
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            pull_time_delay_when_exception: Duration::from_millis(300),
            ..CommonConsumerConfig::push_defaults()
        },
        ..Default::default()
    });
    consumer.subscribe(TOPIC, "*").unwrap();
    let s = seen.clone();
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            let mut seen = s.lock().unwrap();
            for m in msgs {
                *seen
                    .entry(String::from_utf8_lossy(&m.body).into_owned())
                    .or_default() += 1;
            }
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer.start().await.unwrap();
    (consumer, seen)
}

/// Every body of the topic in a broker's store, with how often it is there.
async fn stored_bodies(client: &TestClient, addr: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for q in 0..QUEUES {
        for m in client.drain(addr, "replication-audit", TOPIC, q, 0).await {
            *out.entry(String::from_utf8_lossy(&m.body).into_owned())
                .or_default() += 1;
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_messages_survive_a_master_kill_on_the_slave() {
    let Some(net) = Network::new("repl-kill") else {
        return;
    };
    let ns = net.host("namesrv").spawn_namesrv();
    let mut group = start_group(
        &net,
        &ns.addr,
        "broker-a",
        &[("flushDiskType", "SYNC_FLUSH")],
        &[],
    );
    let admin = TestClient::default();
    create_topic(&admin, &ns.addr, &group).await;

    let producer = producer(&ns.addr, "repl-kill");
    producer.start().await.unwrap();
    let (sends, stop) = (Arc::new(Sends::default()), Arc::new(AtomicBool::new(false)));
    start_senders(&producer, &sends, &stop, 8);
    let acked = |sends: &Sends| sends.ok.lock().unwrap().len();
    wait_until("acknowledged sends", || acked(&sends) >= 500).await;
    // The slave crashes under load and comes back: it recovers its store and resumes
    // from its own end (meanwhile the master answers SLAVE_NOT_AVAILABLE).
    group.slave = group.slave.restart(true);
    wait_until("acknowledged sends after the slave's restart", || {
        acked(&sends) >= 1500
    })
    .await;
    // Killed under load: sends in flight now are not acknowledged.
    group.master.kill9();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::SeqCst);
    let acked = sends.ok.lock().unwrap().clone();

    // In the slave's store: each acknowledged body, intact, once.
    let stored = stored_bodies(&admin, &group.slave.addr).await;
    let missing: Vec<_> = acked.iter().filter(|b| !stored.contains_key(*b)).collect();
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged messages are not on the slave: {:?}",
        missing.len(),
        acked.len(),
        &missing[..missing.len().min(10)]
    );
    let twice: Vec<_> = stored.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "stored more than once: {twice:?}");
    let damaged: Vec<_> = stored.keys().filter(|b| !intact(b)).collect();
    assert!(damaged.is_empty(), "damaged bodies: {damaged:?}");

    // A consumer group that never consumed before reads them all from the slave
    // (the name server dropped the dead master from the route).
    let (consumer, seen) = counting_consumer(&ns.addr, "repl-kill-fresh").await;
    wait_until(
        "the new group to receive every acknowledged message",
        || {
            let seen = seen.lock().unwrap();
            acked.iter().all(|b| seen.contains_key(b))
        },
    )
    .await;
    eprintln!(
        "replication_netns kill: {} acknowledged, {} stored on the slave, {} not acknowledged",
        acked.len(),
        stored.len(),
        sends.other.lock().unwrap().len()
    );
    consumer.shutdown().await;
    producer.shutdown().await;
}

/// Sends one message straight to the master; the response code.
async fn send_code(client: &TestClient, master: &str, n: u64) -> i32 {
    client
        .send_raw(
            master,
            TOPIC,
            (n % QUEUES as u64) as i32,
            body(n),
            String::new(),
        )
        .await
        .code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_master_without_its_slave_never_answers_send_ok() {
    let Some(net) = Network::new("repl-cut") else {
        return;
    };
    let ns = net.host("namesrv").spawn_namesrv();
    // Quick answers: a put waits 1 s for the slave, a silent slave is dropped after 4 s.
    let group = start_group(
        &net,
        &ns.addr,
        "broker-b",
        &[
            ("syncFlushTimeout", "1000"),
            ("haHousekeepingInterval", "4000"),
        ],
        &[],
    );
    let admin = TestClient::default();
    create_topic(&admin, &ns.addr, &group).await;
    let master = group.master.addr.clone();
    let mut n = 0u64;
    let mut next = || {
        n += 1;
        n
    };
    eventually("SEND_OK with the slave connected", || {
        let (admin, master, n) = (&admin, master.clone(), next());
        async move { send_code(admin, &master, n).await == response_code::SUCCESS }
    })
    .await;

    // Cut off: every answer is "stored, but not on a slave" until the slave is back.
    group.slave.host().link_down();
    let mut codes = BTreeMap::new();
    while !codes.contains_key(&response_code::SLAVE_NOT_AVAILABLE) {
        let code = send_code(&admin, &master, next()).await;
        assert_ne!(code, response_code::SUCCESS, "SEND_OK without a slave");
        *codes.entry(code).or_insert(0) += 1;
        assert!(
            codes.values().sum::<i32>() < 200,
            "no SLAVE_NOT_AVAILABLE: {codes:?}"
        );
    }
    assert!(
        codes.contains_key(&response_code::FLUSH_SLAVE_TIMEOUT),
        "{codes:?}"
    );
    assert_eq!(codes.len(), 2, "{codes:?}");

    // Healed: the slave reconnects, catches up, and SEND_OK returns.
    group.slave.host().link_up();
    eventually("SEND_OK after the heal", || {
        let (admin, master, n) = (&admin, master.clone(), next());
        async move { send_code(admin, &master, n).await == response_code::SUCCESS }
    })
    .await;
    let end = max_offset_of(&admin, &master).await;
    let slave = group.slave.addr.clone();
    eventually("the slave to hold everything", || {
        let (admin, slave) = (&admin, slave.clone());
        async move { max_offset_of(admin, &slave).await >= end }
    })
    .await;

    // Frozen (SIGSTOP): no SEND_OK either; thawed, SEND_OK again.
    freeze(group.slave.process.pid());
    for _ in 0..3 {
        let code = send_code(&admin, &master, next()).await;
        assert_eq!(code, response_code::FLUSH_SLAVE_TIMEOUT, "frozen slave");
    }
    thaw(group.slave.process.pid());
    eventually("SEND_OK after the thaw", || {
        let (admin, master, n) = (&admin, master.clone(), next());
        async move { send_code(admin, &master, n).await == response_code::SUCCESS }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_under_load_loses_no_acknowledged_message() {
    let Some(net) = Network::new("repl-roll") else {
        return;
    };
    let mut namesrvs: Vec<_> = ["ns-1", "ns-2"]
        .iter()
        .map(|h| net.host(h).spawn_namesrv())
        .collect();
    let namesrv = format!("{};{}", namesrvs[0].addr, namesrvs[1].addr);
    // Brokers register every 10 s (RocketMQ's floor), so that a restarted name server
    // learns them soon.
    let group = start_group(
        &net,
        &namesrv,
        "broker-c",
        &[],
        &[("registerNameServerPeriod", "10000")],
    );
    let admin = TestClient::default();
    create_topic(&admin, &namesrvs[0].addr, &group).await;
    admin
        .wait_for_route(&namesrvs[1].addr, TOPIC, |r| !r.broker_datas.is_empty())
        .await;

    let (consumer, seen) = counting_consumer(&namesrv, "repl-roll-consumers").await;
    let producer = producer(&namesrv, "repl-roll");
    producer.start().await.unwrap();
    let (sends, stop) = (Arc::new(Sends::default()), Arc::new(AtomicBool::new(false)));
    start_senders(&producer, &sends, &stop, 4);
    let acked = |sends: &Sends| sends.ok.lock().unwrap().len();
    let mut target = 300;
    wait_until("sends before the restarts", || acked(&sends) >= target).await;

    // Name servers one after the other, each back in service (both brokers registered
    // again) before the next; then the slave, then the master. Sends go on between
    // the steps.
    for i in 0..namesrvs.len() {
        let ns = namesrvs.remove(i).restart(false);
        admin
            .wait_for_route(&ns.addr, TOPIC, |r| {
                r.broker_datas.iter().any(|b| b.broker_addrs.len() == 2)
            })
            .await;
        namesrvs.insert(i, ns);
        target += 200;
        wait_until("sends after a name server restart", || {
            acked(&sends) >= target
        })
        .await;
    }
    let Group { master, slave } = group;
    let slave = slave.restart(false);
    target += 200;
    wait_until("sends after the slave restart", || acked(&sends) >= target).await;
    let master = master.restart(false);
    target += 200;
    wait_until("sends after the master restart", || acked(&sends) >= target).await;
    stop.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(500)).await;

    let acked_bodies = sends.ok.lock().unwrap().clone();
    wait_until("every acknowledged message consumed", || {
        let seen = seen.lock().unwrap();
        acked_bodies.iter().all(|b| seen.contains_key(b))
    })
    .await;
    let duplicates = seen.lock().unwrap().values().filter(|n| **n > 1).count();
    eprintln!(
        "replication_netns rolling restart: {} acknowledged, {} not, {} consumed, {duplicates} more than once",
        acked_bodies.len(),
        sends.other.lock().unwrap().len(),
        seen.lock().unwrap().len()
    );
    consumer.shutdown().await;
    producer.shutdown().await;
    drop((master, slave));
}
