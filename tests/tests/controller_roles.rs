//! Controller mode: the services only a master runs (delay levels, timers,
//! transaction checks, POP revive) follow the role, across hosts (network namespaces,
//! see `vostok_tests::controller`). A master demoted by hand stops them and a delayed
//! and a timer message it took are delivered by the new master, once; promoted again,
//! it starts them afresh and delivers what it received by replication while it was a
//! slave, once. A message popped (POP) on a master that is then demoted comes back on
//! the new master once its invisible time is over: the new master took the old one's
//! checkpoints from the revive queues. Skipped (with a message) without root.

use std::time::{Duration, Instant};

use vostok_remoting::protocol::header::PopMessageRequestHeader;
use vostok_remoting::protocol::message::property::{self, push_pair};
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::support::time::now_millis;
use vostok_remoting::{RemotingClient, RemotingCommand};
use vostok_tests::client::TestClient;
use vostok_tests::controller::{
    elect_by_hand, master_with_full_set, ready, runtime_info, stored_bodies, Cluster, QUEUES, TOPIC,
};
use vostok_tests::netns::Network;
use vostok_tests::sdk::eventually;

/// Level 3 is 10 s, level 4 is 30 s: long enough for the elections in between.
const DELAY_LEVELS: &str = "1s 5s 10s 30s";

/// Longest wait for a delivery (the longest delay plus elections).
const DELIVERY_WAIT: Duration = Duration::from_secs(90);

fn delayed(level: u32) -> String {
    let mut props = TestClient::properties(None, None);
    push_pair(&mut props, property::DELAY_TIME_LEVEL, &level.to_string());
    props
}

fn timer(in_ms: i64) -> String {
    let mut props = TestClient::properties(None, None);
    push_pair(
        &mut props,
        property::TIMER_DELIVER_MS,
        &(now_millis() + in_ms).to_string(),
    );
    props
}

/// Waits until broker `i` holds `role` with its master-only services running (or not).
async fn await_role(rpc: &RemotingClient, c: &Cluster, i: usize, role: &str, running: bool) {
    let addr = c.addr(i);
    eventually(&format!("broker {i} to be {role}"), || {
        let addr = addr.clone();
        async move {
            let info = runtime_info(rpc, &addr).await;
            info.get("brokerRole").map(String::as_str) == Some(role)
                && info.get("masterServicesRunning") == Some(&running.to_string())
        }
    })
    .await;
}

/// The messages of [`TOPIC`] at `addr` whose body is `body`.
async fn copies(admin: &TestClient, addr: &str, body: &str) -> Vec<MessageExt> {
    let mut out = Vec::new();
    for q in 0..QUEUES {
        for m in admin.drain(addr, "roles-audit", TOPIC, q, 0).await {
            if &m.body[..] == body.as_bytes() {
                out.push(m);
            }
        }
    }
    out
}

/// Waits until `body` reached [`TOPIC`] at broker `i`; asserts it did so once and
/// was stored by broker `by` (its STOREHOST).
async fn await_delivered(admin: &TestClient, c: &Cluster, i: usize, body: &str, by: usize) {
    let deadline = Instant::now() + DELIVERY_WAIT;
    let found = loop {
        let found = copies(admin, &c.addr(i), body).await;
        if !found.is_empty() {
            break found;
        }
        assert!(Instant::now() < deadline, "{body} never delivered");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(found.len(), 1, "{body} delivered more than once");
    assert_eq!(
        found[0].store_host.to_string(),
        c.addr(by),
        "{body} delivered by another broker"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn master_only_services_follow_the_role() {
    let Some(net) = Network::new("ctl-roles") else {
        return;
    };
    let (c, admin, rpc, old) = ready(&net, "cs", &[("messageDelayLevel", DELAY_LEVELS)]).await;
    let new = (old + 1) % 3;
    await_role(&rpc, &c, old, "SYNC_MASTER", true).await;
    await_role(&rpc, &c, new, "SLAVE", false).await;
    // Due in 10 s; acknowledged, so every replica holds them.
    let old_addr = c.addr(old);
    admin.send(&old_addr, TOPIC, 0, "d1", delayed(3)).await;
    admin.send(&old_addr, TOPIC, 1, "t1", timer(10_000)).await;

    // Demoted before they are due: the old master stops its master-only services,
    // the new master delivers both, once.
    elect_by_hand(&rpc, &c, new).await;
    await_role(&rpc, &c, old, "SLAVE", false).await;
    await_role(&rpc, &c, new, "SYNC_MASTER", true).await;
    // Due in 30 s, sent to the new master: the old one gets them only by replication.
    let new_addr = c.addr(new);
    admin.send(&new_addr, TOPIC, 2, "d2", delayed(4)).await;
    admin.send(&new_addr, TOPIC, 3, "t2", timer(30_000)).await;
    for body in ["d1", "t1"] {
        await_delivered(&admin, &c, new, body, new).await;
    }

    // Promoted again (once it is back in the SyncStateSet, so it holds d2 and t2): the
    // old master starts its services afresh and delivers what it only replicated.
    eventually("the old master back in the SyncStateSet", || {
        let (rpc, c) = (&rpc, &c);
        async move { master_with_full_set(rpc, c).await == Some(new) }
    })
    .await;
    elect_by_hand(&rpc, &c, old).await;
    await_role(&rpc, &c, old, "SYNC_MASTER", true).await;
    await_role(&rpc, &c, new, "SLAVE", false).await;
    for body in ["d2", "t2"] {
        await_delivered(&admin, &c, old, body, old).await;
    }

    // Every broker ends with the same log: each message once, nothing else.
    let end = runtime_info(&rpc, &old_addr).await["commitLogMaxOffset"].clone();
    for i in 0..3 {
        let (addr, end) = (c.addr(i), end.clone());
        eventually("every broker to hold the master's log", || {
            let (rpc, addr, end) = (&rpc, addr.clone(), end.clone());
            async move { runtime_info(rpc, &addr).await.get("commitLogMaxOffset") == Some(&end) }
        })
        .await;
        let stored = stored_bodies(&admin, &c.addr(i)).await;
        let expected = ["d1", "d2", "t1", "t2"].map(|b| (b.to_owned(), 1)).into();
        assert_eq!(stored, expected, "broker {i}");
    }
}

const POP_GROUP: &str = "roles-pop";

/// POP_MESSAGE of every queue of [`TOPIC`] (and the group's retry topic), no hold.
async fn pop(admin: &TestClient, addr: &str, invisible_ms: i64) -> Vec<MessageExt> {
    let header = PopMessageRequestHeader {
        consumer_group: POP_GROUP.into(),
        topic: TOPIC.into(),
        queue_id: -1,
        max_msg_nums: 32,
        invisible_time: invisible_ms,
        poll_time: 0,
        init_mode: Some(0),
        ..Default::default()
    };
    let request = RemotingCommand::request_with_header(request_code::POP_MESSAGE, &header);
    let response = admin.call(addr, request).await;
    match response.code {
        response_code::SUCCESS => MessageExt::decode_all(&response.body),
        _ => Vec::new(),
    }
}

/// Pops until a message comes (at most [`DELIVERY_WAIT`]); asserts it is the only one.
async fn await_pop(admin: &TestClient, addr: &str, invisible_ms: i64) -> MessageExt {
    let deadline = Instant::now() + DELIVERY_WAIT;
    loop {
        let mut got = pop(admin, addr, invisible_ms).await;
        if !got.is_empty() {
            assert_eq!(got.len(), 1, "one message expected");
            return got.remove(0);
        }
        assert!(Instant::now() < deadline, "nothing to pop at {addr}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_popped_on_a_demoted_master_comes_back_on_the_new_one() {
    let Some(net) = Network::new("ctl-pop") else {
        return;
    };
    let (c, admin, rpc, old) = ready(&net, "cq", &[("reviveInterval", "200")]).await;
    let new = (old + 1) % 3;
    let old_addr = c.addr(old);
    admin.send(&old_addr, TOPIC, 0, "p1", String::new()).await;
    let log_end = |addr: String| {
        let rpc = &rpc;
        async move {
            runtime_info(rpc, &addr).await["commitLogMaxOffset"]
                .parse::<i64>()
                .expect("an offset")
        }
    };
    let before = log_end(old_addr.clone()).await;
    // Invisible for longer than the metadata sync below may take, so that the old
    // master cannot revive it itself before it is demoted.
    let popped = await_pop(&admin, &old_addr, 30_000).await;
    assert_eq!(&popped.body[..], b"p1");
    // Not acked. Its checkpoint is stored after the answer; then the new master-to-be
    // holds the checkpoint (replicated) and the group's offset past the message
    // (metadata sync), so only a revive can bring it back.
    eventually("the pop's checkpoint stored", || {
        let end = log_end(old_addr.clone());
        async move { end.await > before }
    })
    .await;
    let end = log_end(old_addr.clone()).await;
    let new_addr = c.addr(new);
    eventually("the checkpoint and the offset on the next master", || {
        let (admin, addr) = (&admin, new_addr.clone());
        let slave_end = log_end(addr.clone());
        async move {
            slave_end.await == end
                && admin.query_offset(&addr, POP_GROUP, TOPIC, 0).await == Some(1)
        }
    })
    .await;

    elect_by_hand(&rpc, &c, new).await;
    await_role(&rpc, &c, new, "SYNC_MASTER", true).await;
    let back = await_pop(&admin, &new_addr, 60_000).await;
    assert_eq!(&back.body[..], b"p1");
    assert_eq!(back.reconsume_times, 1, "revived once");
}
