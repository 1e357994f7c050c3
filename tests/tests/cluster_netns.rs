//! A cluster spread over hosts (network namespaces, see `vostok_tests::netns`): two
//! name servers and two broker groups of a SYNC_MASTER and a slave, each process on its
//! own address. One name server and then one master are killed with SIGKILL while the
//! SDK's producer keeps sending; the sends go on succeeding on the other group, and an
//! SDK push consumer receives every acknowledged message: the dead master's from its
//! slave before the master is back.
//! Skipped (with a message) without root.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use vostok_client::{
    CommonConsumerConfig, ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, ConsumeFromWhere,
    ConsumerConfig, Message, MessageExt, MessageListener, Producer, ProducerConfig, PushConsumer,
};
use vostok_remoting::protocol::response_code;
use vostok_tests::client::TestClient;
use vostok_tests::netns::{HostBroker, Network};
use vostok_tests::sdk::{self, eventually, wait_until};
use vostok_tests::BrokerOptions;

const TOPIC: &str = "ClusterNetnsTopic";
const QUEUES: i32 = 4;
const SENDERS: usize = 4;
/// Acknowledged sends each phase waits for before the next failure.
const PER_PHASE: usize = 300;

/// One acknowledged send.
struct Ack {
    body: String,
    broker: String,
    queue_id: i32,
    /// The send started after broker-a was dead.
    after_kill: bool,
}

#[derive(Default)]
struct Ledger {
    acks: Mutex<Vec<Ack>>,
    errors: Mutex<Vec<String>>,
    /// Bodies the consumer received, with how often.
    consumed: Mutex<HashMap<String, usize>>,
}

impl Ledger {
    fn acked(&self, filter: impl Fn(&Ack) -> bool) -> usize {
        self.acks
            .lock()
            .unwrap()
            .iter()
            .filter(|a| filter(a))
            .count()
    }

    /// Acknowledged bodies (those of `broker` only, if given) not consumed yet.
    fn missing(&self, broker: Option<&str>) -> Vec<String> {
        let consumed = self.consumed.lock().unwrap();
        self.acks
            .lock()
            .unwrap()
            .iter()
            .filter(|a| broker.is_none_or(|b| a.broker == b))
            .filter(|a| !consumed.contains_key(&a.body))
            .map(|a| a.body.clone())
            .collect()
    }

    /// Bodies consumed more than once, with their counts.
    fn duplicates(&self) -> BTreeMap<String, usize> {
        let consumed = self.consumed.lock().unwrap();
        consumed
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(b, n)| (b.clone(), *n))
            .collect()
    }

    /// Waits until every body acknowledged (by `broker`, if given) was consumed; the
    /// panic lists what is missing and what came twice.
    async fn wait_consumed(&self, broker: Option<&str>) {
        let deadline = Instant::now() + sdk::WAIT;
        loop {
            let missing = self.missing(broker);
            if missing.is_empty() {
                return;
            }
            if Instant::now() > deadline {
                let duplicates = self.duplicates();
                panic!(
                    "{} acknowledged messages ({}) not consumed within {:?}: {:?}...; \
                     {} duplicates: {:?}",
                    missing.len(),
                    broker.unwrap_or("all brokers"),
                    sdk::WAIT,
                    &missing[..missing.len().min(20)],
                    duplicates.len(),
                    duplicates
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn client_config(namesrv: &str, instance: &str) -> vostok_client::ClientConfig {
    vostok_client::ClientConfig {
        // Routes follow the name servers within a second, and a restarted broker
        // learns the consumer's subscription within a second (until a heartbeat
        // does, it refuses the consumer's pulls).
        poll_name_server_interval: Duration::from_secs(1),
        heartbeat_broker_interval: Duration::from_secs(1),
        ..sdk::client(namesrv, instance)
    }
}

async fn create_topic(admin: &TestClient, broker: &HostBroker, queues: i32) {
    let response = admin.create_topic(&broker.addr, TOPIC, queues).await;
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{}",
        response.remark()
    );
}

/// `SENDERS` tasks sending numbered messages until `stop`.
fn start_senders(
    producer: &Producer,
    ledger: &Arc<Ledger>,
    a_dead: &Arc<AtomicBool>,
    stop: &Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let next = Arc::new(AtomicU64::new(0));
    (0..SENDERS)
        .map(|_| {
            let (producer, ledger) = (producer.clone(), ledger.clone());
            let (a_dead, stop, next) = (a_dead.clone(), stop.clone(), next.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    let body = format!("m{:06}", next.fetch_add(1, Ordering::Relaxed));
                    let after_kill = a_dead.load(Ordering::SeqCst);
                    match producer.send(Message::new(TOPIC, body.clone())).await {
                        Ok(r) => ledger.acks.lock().unwrap().push(Ack {
                            body,
                            broker: r.message_queue.broker_name,
                            queue_id: r.message_queue.queue_id,
                            after_kill,
                        }),
                        Err(e) => ledger.errors.lock().unwrap().push(format!("{body}: {e}")),
                    }
                }
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_and_consumption_go_on_when_a_name_server_and_a_master_are_killed() {
    let Some(net) = Network::new("cluster") else {
        return;
    };
    let mut namesrvs: Vec<_> = ["namesrv-1", "namesrv-2"]
        .iter()
        .map(|name| net.host(name).spawn_namesrv())
        .collect();
    let namesrv_addr = format!("{};{}", namesrvs[0].addr, namesrvs[1].addr);
    let broker = |name: &str, id: i64| {
        let role = if id == 0 { "SYNC_MASTER" } else { "SLAVE" };
        net.host(&format!("{name}-{id}")).spawn_broker(
            BrokerOptions {
                namesrv: Some(namesrv_addr.clone()),
                broker_name: name.to_owned(),
                ..Default::default()
            }
            .set("brokerId", id)
            .set("brokerRole", role)
            // 64 MiB commitlog files: four brokers share one disk.
            .set("mappedFileSizeCommitLog", 64 << 20),
        )
    };
    let mut broker_a = broker("broker-a", 0);
    let slave_a = broker("broker-a", 1);
    let broker_b = broker("broker-b", 0);
    let slave_b = broker("broker-b", 1);
    let admin = TestClient::default();
    create_topic(&admin, &broker_a, QUEUES).await;
    create_topic(&admin, &broker_b, QUEUES).await;
    for namesrv in &namesrvs {
        admin
            .wait_for_route(&namesrv.addr, TOPIC, |r| {
                r.broker_datas.len() == 2
                    && r.broker_datas.iter().all(|b| b.broker_addrs.len() == 2)
            })
            .await;
    }
    // The slaves copy the topic from their masters (metadata sync).
    for slave in [&slave_a, &slave_b] {
        let addr = slave.addr.clone();
        eventually("a slave to copy the topic", || {
            let (admin, addr) = (&admin, addr.clone());
            async move { slave_has_topic(admin, &addr).await }
        })
        .await;
    }

    let ledger = Arc::new(Ledger::default());
    let consumer = PushConsumer::new(ConsumerConfig {
        common: CommonConsumerConfig {
            client: client_config(&namesrv_addr, "cluster-consumer"),
            consumer_group: "cluster-consumers".into(),
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            pull_time_delay_when_exception: Duration::from_millis(500),
            ..CommonConsumerConfig::push_defaults()
        },
        ..Default::default()
    });
    consumer.subscribe(TOPIC, "*").unwrap();
    let seen = ledger.clone();
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            let mut consumed = seen.consumed.lock().unwrap();
            for m in msgs {
                *consumed
                    .entry(String::from_utf8_lossy(&m.body).into_owned())
                    .or_default() += 1;
            }
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer.start().await.unwrap();
    let producer = Producer::new(ProducerConfig {
        client: client_config(&namesrv_addr, "cluster-producer"),
        producer_group: "cluster-producers".into(),
        ..Default::default()
    });
    producer.start().await.unwrap();

    let (a_dead, stop) = (Arc::new(AtomicBool::new(false)), Arc::default());
    let senders = start_senders(&producer, &ledger, &a_dead, &stop);
    let on = |broker: &'static str| move |a: &Ack| a.broker == broker;
    wait_until("sends to both groups", || {
        ledger.acked(on("broker-a")) >= PER_PHASE / 2
            && ledger.acked(on("broker-b")) >= PER_PHASE / 2
    })
    .await;

    // One name server dies. broker-b then doubles its queues, which only the live
    // name server learns: sends reaching them show the producer's routes come from it;
    // the consumer must find them there too to consume everything below.
    namesrvs[0].kill9();
    create_topic(&admin, &broker_b, 2 * QUEUES).await;
    let a0 = ledger.acked(on("broker-a"));
    wait_until(
        "sends to both groups, routed by the live name server",
        || {
            ledger.acked(|a| a.broker == "broker-b" && a.queue_id >= QUEUES) >= PER_PHASE / 2
                && ledger.acked(on("broker-a")) >= a0 + PER_PHASE / 2
        },
    )
    .await;

    // One master dies: every send that starts afterwards lands on the other group.
    broker_a.kill9();
    a_dead.store(true, Ordering::SeqCst);
    wait_until("sends after broker-a died", || {
        ledger.acked(|a| a.after_kill) >= PER_PHASE
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    for sender in senders {
        sender.await.unwrap();
    }
    let misplaced: Vec<String> = ledger
        .acks
        .lock()
        .unwrap()
        .iter()
        .filter(|a| a.after_kill && a.broker != "broker-b")
        .map(|a| format!("{} on {}", a.body, a.broker))
        .collect();
    assert!(
        misplaced.is_empty(),
        "acked by a dead broker: {misplaced:?}"
    );
    let errors = ledger.errors.lock().unwrap().clone();
    assert!(
        errors.is_empty(),
        "{} sends failed: {errors:?}",
        errors.len()
    );

    // While broker-a's master is down its slave serves its queues: the consumer
    // receives everything acknowledged, broker-a's messages from the slave.
    ledger.wait_consumed(None).await;
    let queues = consumer.assigned_queues();
    assert!(
        queues.iter().any(|q| q.broker_name == "broker-a"),
        "broker-a's queues stay assigned while its slave serves them: {queues:?}"
    );
    // broker-a comes back (recovering from SIGKILL) and registers with the live name
    // server; its slave replicates from it again, and sends reach it.
    let broker_a = broker_a.restart(true);
    admin
        .wait_for_route(&namesrvs[1].addr, TOPIC, |r| {
            r.broker_datas
                .iter()
                .all(|b| b.broker_addrs.contains_key(&0))
        })
        .await;
    ledger.wait_consumed(None).await;

    let duplicates = ledger.duplicates();
    let (acked, consumed, per_broker) = {
        let acks = ledger.acks.lock().unwrap();
        let on = |b: &str| acks.iter().filter(|a| a.broker == b).count();
        let per_broker = (on("broker-a"), on("broker-b"));
        (
            acks.len(),
            ledger.consumed.lock().unwrap().len(),
            per_broker,
        )
    };
    eprintln!(
        "cluster_netns: {acked} acked (broker-a {}, broker-b {}), {consumed} consumed, {} \
         of them more than once: {:?}",
        per_broker.0,
        per_broker.1,
        duplicates.len(),
        duplicates.iter().take(20).collect::<Vec<_>>()
    );
    // Nothing consumed that was not sent: every send was acknowledged (none failed
    // above), so the bodies consumed are the bodies acknowledged.
    assert_eq!(
        consumed,
        acked,
        "consumed bodies beyond the acknowledged ones ({} duplicates: {duplicates:?})",
        duplicates.len()
    );
    consumer.shutdown().await;
    producer.shutdown().await;
    drop((broker_a, slave_a, slave_b));
}

async fn slave_has_topic(admin: &TestClient, addr: &str) -> bool {
    let request = vostok_remoting::RemotingCommand::request_with_header(
        vostok_remoting::protocol::request_code::GET_TOPIC_CONFIG,
        &vostok_remoting::protocol::header::TopicRequestHeader {
            topic: TOPIC.into(),
        },
    );
    admin.call(addr, request).await.code == response_code::SUCCESS
}
