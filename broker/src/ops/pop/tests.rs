//! POP's operations called directly: pop, ack and change of invisible time on a
//! standalone broker, without a client or a socket.

use std::time::Duration;

use vostok_remoting::protocol::header::INIT_MODE_MIN;
use vostok_remoting::protocol::response_code;

use super::ack::ack;
use super::invisible::change_invisible_time;
use super::receive::{pop, pop_once, PopRequest};
use super::PopTables;
use crate::ops::browse::tests::stored;
use crate::ops::testing::broker;

const GROUP: &str = "ops-pop-group";

fn request(topic: &str) -> PopRequest {
    PopRequest {
        group: GROUP.to_owned(),
        topic: topic.to_owned(),
        queue_id: 0,
        max_msgs: 32,
        invisible_time: 60_000,
        poll_time: Duration::ZERO,
        init_mode: INIT_MODE_MIN,
        filter: None,
        order: false,
        attempt_id: None,
        client: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_popped_message_stays_invisible_until_acked() {
    let dir = tempfile::tempdir().unwrap();
    let handle = broker(dir.path()).await;
    let b = handle.broker();
    stored(b, "ops-pop", 2).await;
    let first = pop(
        PopTables::of(b),
        &request("ops-pop"),
        std::future::pending(),
    )
    .await
    .unwrap();
    let offsets: Vec<Option<i64>> = first
        .messages
        .iter()
        .map(|m| m.extra_info.queue_offset)
        .collect();
    assert_eq!(offsets, [Some(0), Some(1)]);
    assert_eq!(b.pop.checkpoints().len(), 1, "one checkpoint for the batch");
    // Invisible: a second pop finds nothing, and a held one gives up at its poll time.
    let mut held = request("ops-pop");
    held.poll_time = Duration::from_millis(50);
    let again = pop(PopTables::of(b), &held, std::future::pending())
        .await
        .unwrap();
    assert!(again.messages.is_empty());
    for m in &first.messages {
        let offset = m.extra_info.queue_offset.unwrap();
        ack(PopTables::of(b), GROUP, "ops-pop", 0, offset, &m.extra_info)
            .await
            .unwrap();
    }
    assert_eq!(b.pop.checkpoints().len(), 0, "a fully acked batch is gone");
    // An ack naming an offset the queue never had is refused.
    let stray = ack(
        PopTables::of(b),
        GROUP,
        "ops-pop",
        0,
        99,
        &first.messages[0].extra_info,
    )
    .await
    .unwrap_err();
    assert_eq!(stray.code, response_code::NO_MESSAGE);
    handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_invisible_time_gives_a_new_handle_and_retires_the_old() {
    let dir = tempfile::tempdir().unwrap();
    let handle = broker(dir.path()).await;
    let b = handle.broker();
    stored(b, "ops-invisible", 1).await;
    let popped = pop_once(PopTables::of(b), &request("ops-invisible"))
        .await
        .unwrap();
    let old = popped.messages[0].extra_info.clone();
    let changed =
        change_invisible_time(PopTables::of(b), GROUP, "ops-invisible", 0, 0, &old, 5_000)
            .await
            .unwrap();
    assert_eq!(changed.invisible_time, 5_000);
    assert!(changed.pop_time >= old.pop_time);
    // The old handle names a checkpoint where the message is no longer pending.
    let gone = change_invisible_time(PopTables::of(b), GROUP, "ops-invisible", 0, 0, &old, 5_000)
        .await
        .unwrap_err();
    assert_eq!(gone.code, response_code::NO_MESSAGE);
    // The new handle acks it.
    let mut new = old.clone();
    new.ck_queue_offset = 0;
    new.pop_time = changed.pop_time;
    new.invisible_time = changed.invisible_time;
    ack(PopTables::of(b), GROUP, "ops-invisible", 0, 0, &new)
        .await
        .unwrap();
    assert_eq!(b.pop.checkpoints().len(), 0);
    handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn popping_an_unknown_topic_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let handle = broker(dir.path()).await;
    let b = handle.broker();
    let refused = pop_once(PopTables::of(b), &request("ops-pop-none"))
        .await
        .unwrap_err();
    assert_eq!(refused.code, response_code::TOPIC_NOT_EXIST);
    handle.shutdown().await;
}
