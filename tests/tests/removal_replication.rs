//! A message removed on a master is removed on its slave too (issue 19: removal
//! "replicated once replication exists"). A removal is a record of the system topic
//! `rmq_sys_REMOVED_MESSAGE` in the master's commitlog, so classic HA copies it like
//! any record, and the slave learns it as the record is dispatched: a consumer reading
//! from the slave no longer gets the message, without a restart.
//!
//! Real `mqnamesrv` and `mqbroker` processes on 127.0.0.1: an ASYNC_MASTER and its
//! SLAVE, each with its own HA port.

use vostok_remoting::protocol::header::RemoveMessageRequestHeader;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;
use vostok_tests::client::TestClient;
use vostok_tests::sdk::eventually;
use vostok_tests::{Broker, BrokerOptions, Namesrv};

const TOPIC: &str = "RemovedOnSlaveTopic";
const GROUP: &str = "RemovedOnSlaveGroup";

fn member(namesrv: &str, id: i64, role: &str) -> Broker {
    Broker::start(
        BrokerOptions {
            namesrv: Some(namesrv.to_owned()),
            broker_name: "removal-a".to_owned(),
            ..Default::default()
        }
        .set("brokerId", id)
        .set("brokerRole", role)
        .set("haListenPort", vostok_tests::free_port()),
    )
}

/// The queue offsets a pull from `addr` returns, from offset 0.
async fn offsets_on(client: &TestClient, addr: &str) -> Option<Vec<i64>> {
    let pulled = client.pull(addr, GROUP, TOPIC, 0, 0, 32, None, "*").await;
    (pulled.code == response_code::SUCCESS)
        .then(|| pulled.messages.iter().map(|m| m.queue_offset).collect())
}

async fn max_offset(client: &TestClient, addr: &str) -> i64 {
    client
        .runtime_info(addr)
        .await
        .get("commitLogMaxOffset")
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removal_on_the_master_reaches_the_slave() {
    let ns = Namesrv::start();
    let master = member(&ns.addr, 0, "ASYNC_MASTER");
    let slave = member(&ns.addr, 1, "SLAVE");
    let client = TestClient::new("removal-replication");
    let created = client.create_topic(&master.addr, TOPIC, 1).await;
    assert_eq!(created.code, response_code::SUCCESS, "{}", created.remark());
    for i in 0..3 {
        client
            .send(
                &master.addr,
                TOPIC,
                0,
                format!("m{i}"),
                TestClient::properties(None, None),
            )
            .await;
    }

    // The slave has the topic (slave sync) and all three messages (HA).
    eventually("the slave serves the three messages", || async {
        offsets_on(&client, &slave.addr).await.as_deref() == Some(&[0, 1, 2])
    })
    .await;

    let header = RemoveMessageRequestHeader {
        topic: TOPIC.to_owned(),
        queue_id: 0,
        queue_offset: 1,
    };
    let removed = client
        .call(
            &master.addr,
            RemotingCommand::request_with_header(request_code::VOSTOK_REMOVE_MESSAGE, &header),
        )
        .await;
    assert_eq!(removed.code, response_code::SUCCESS, "{}", removed.remark());
    assert_eq!(
        offsets_on(&client, &master.addr).await.as_deref(),
        Some(&[0, 2][..]),
        "the master skips the removed message"
    );

    // Once the slave holds the master's whole commitlog, the removal record included,
    // and has dispatched it, it skips the message too.
    let master_max = max_offset(&client, &master.addr).await;
    eventually("the slave caught up with the removal record", || async {
        max_offset(&client, &slave.addr).await >= master_max
    })
    .await;
    client.wait_dispatched(&slave.addr).await;
    assert_eq!(
        offsets_on(&client, &slave.addr).await.as_deref(),
        Some(&[0, 2][..]),
        "the slave still serves the removed message"
    );
}
