//! A slave serves a topic its master created moments before dying: it knows every
//! topic it holds data of from the replicated commitlog, without waiting for the
//! metadata sync (every 10 s) to copy the master's topic table.
//!
//! Real `mqnamesrv` and `mqbroker` processes on 127.0.0.1: a SYNC_MASTER and its SLAVE.
//! Right after the slave's metadata sync, a producer auto-creates a topic with 2,000
//! sends (all SEND_OK, so all on the slave), the master is killed with SIGKILL, and
//! every message is pulled from the slave.

use std::collections::BTreeSet;
use std::sync::Arc;

use vostok_remoting::protocol::response_code;
use vostok_tests::client::TestClient;
use vostok_tests::sdk::eventually;
use vostok_tests::{Broker, BrokerOptions, Namesrv};

const TOPIC: &str = "BornBeforeTheCrash";
const GROUP: &str = "ReadsTheSlave";
const MESSAGES: usize = 2000;
const SENDERS: usize = 8;
/// Queues of the auto-created topic (the send header's `defaultTopicQueueNums`).
const QUEUES: i32 = 8;

fn member(namesrv: &str, id: i64, role: &str) -> Broker {
    Broker::start(
        BrokerOptions {
            namesrv: Some(namesrv.to_owned()),
            broker_name: "born-a".to_owned(),
            ..Default::default()
        }
        .set("brokerId", id)
        .set("brokerRole", role)
        .set("haListenPort", vostok_tests::free_port()),
    )
}

/// Every message of a queue on `addr` from offset 0, or the code of the first pull
/// that is neither a message list nor the end.
async fn read_queue(client: &TestClient, addr: &str, queue_id: i32) -> Result<Vec<String>, i32> {
    let mut offset = 0;
    let mut bodies = Vec::new();
    loop {
        let pulled = client
            .pull(addr, GROUP, TOPIC, queue_id, offset, 32, None, "*")
            .await;
        match pulled.code {
            response_code::SUCCESS => {
                offset = pulled.header.expect("pull header").next_begin_offset;
                bodies.extend(
                    pulled
                        .messages
                        .iter()
                        .map(|m| String::from_utf8_lossy(&m.body).into_owned()),
                );
            }
            response_code::PULL_NOT_FOUND => return Ok(bodies),
            other => return Err(other),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_serves_a_topic_created_just_before_its_master_died() {
    let ns = Namesrv::start();
    let mut master = member(&ns.addr, 0, "SYNC_MASTER");
    let slave = member(&ns.addr, 1, "SLAVE");
    // The slave has copied its master's tables once; the next copy is 10 s away.
    eventually("the slave's first metadata sync", || async {
        slave
            .process
            .log()
            .contains("topic configs copied from the master")
    })
    .await;

    // 2,000 sends from 8 tasks auto-create the topic on the master.
    let producer = Arc::new(TestClient::new("born-producer"));
    let tasks: Vec<_> = (0..SENDERS)
        .map(|t| {
            let (producer, addr) = (producer.clone(), master.addr.clone());
            tokio::spawn(async move {
                let mut acked = Vec::new();
                for i in (t..MESSAGES).step_by(SENDERS) {
                    let body = format!("born-{i}");
                    let r = producer
                        .send_raw(
                            &addr,
                            TOPIC,
                            i as i32 % QUEUES,
                            body.clone(),
                            TestClient::properties(None, None),
                        )
                        .await;
                    assert_eq!(r.code, response_code::SUCCESS, "send {i}: {}", r.remark());
                    acked.push(body);
                }
                acked
            })
        })
        .collect();
    let mut acked = BTreeSet::new();
    for t in tasks {
        acked.extend(t.await.expect("sender"));
    }
    master.kill9();
    assert_eq!(acked.len(), MESSAGES);

    let consumer = TestClient::new("born-consumer");
    consumer.wait_dispatched(&slave.addr).await;
    let mut read = BTreeSet::new();
    for q in 0..QUEUES {
        match read_queue(&consumer, &slave.addr, q).await {
            Ok(bodies) => read.extend(bodies),
            Err(code) => panic!(
                "queue {q}: the slave answered code {code} to a pull; slave log:\n{}",
                slave.process.log()
            ),
        }
    }
    let missing: Vec<_> = acked.difference(&read).take(5).collect();
    assert!(
        missing.is_empty(),
        "{} of {MESSAGES} acknowledged messages not served by the slave, e.g. {missing:?}",
        acked.difference(&read).count()
    );
    assert_eq!(read.len(), MESSAGES);
    // Not a lucky sync: the slave knew the topic from its data.
    assert!(
        slave
            .process
            .log()
            .contains("topic known from replicated data"),
        "the slave derived the topic"
    );
}
