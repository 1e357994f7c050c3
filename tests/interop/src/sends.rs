//! Scenarios 1-4: the producer's four ways of sending, each judged by what the client
//! reports back. Delivery is judged later, by the consumers.

use std::time::Duration;

use rocketmq_client_rust::DefaultMQProducer;
use rocketmq_model::result::{SendResult, SendStatus};
use tokio::sync::mpsc;

use crate::bounded;
use crate::corpus::{Expected, Stored};

pub async fn sync_sends(
    producer: &DefaultMQProducer,
    batch: &mut [Expected],
    send_ms: u64,
) -> (bool, String) {
    let mut failures = Vec::new();
    let limit = Duration::from_millis(send_ms * 2);
    for e in batch.iter_mut() {
        let outcome = bounded(
            "send",
            limit,
            producer.send_with_timeout(e.to_message(), send_ms),
        )
        .await
        .and_then(|r| r.map_err(|err| err.to_string()));
        match outcome.and_then(|r| r.ok_or_else(|| "no send result".into())) {
            Ok(r) => match accepted(&r) {
                Ok((msg_id, stored)) => {
                    e.msg_id = Some(msg_id);
                    e.stored = Some(stored);
                }
                Err(err) => failures.push(format!("{}: {err}", e.id)),
            },
            Err(err) => failures.push(format!("{}: {err}", e.id)),
        }
    }
    verdict_of_sends(
        batch.len(),
        &failures,
        "SEND_OK with msgId, offsetMsgId, queue",
    )
}

pub async fn async_sends(
    producer: &DefaultMQProducer,
    batch: &mut [Expected],
    send_timeout: Duration,
) -> (bool, String) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(usize, Result<(String, Stored), String>)>();
    let mut failures = Vec::new();
    let mut pending = 0;
    for (i, e) in batch.iter().enumerate() {
        let tx = tx.clone();
        let callback =
            move |result: Option<&SendResult>,
                  error: Option<&rocketmq_client_rust::ClientError>| {
                let outcome = match (result, error) {
                    (Some(r), _) => accepted(r),
                    (None, Some(err)) => Err(err.to_string()),
                    (None, None) => Err("callback with neither result nor error".into()),
                };
                // The receiver is gone only once the scenario stopped waiting.
                let _ = tx.send((i, outcome));
            };
        let call = producer.send_with_callback_timeout(
            e.to_message(),
            callback,
            send_timeout.as_millis() as u64,
        );
        match bounded("async send", send_timeout, call).await {
            Ok(Ok(())) => pending += 1,
            Ok(Err(err)) => failures.push(format!("{}: {err}", e.id)),
            Err(err) => failures.push(format!("{}: {err}", e.id)),
        }
    }
    drop(tx);
    let deadline = tokio::time::Instant::now() + send_timeout * 2;
    let mut acknowledged = 0;
    while acknowledged < pending {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some((i, Ok((msg_id, stored))))) => {
                acknowledged += 1;
                batch[i].msg_id = Some(msg_id);
                batch[i].stored = Some(stored);
            }
            Ok(Some((i, Err(err)))) => {
                acknowledged += 1;
                failures.push(format!("{}: {err}", batch[i].id));
            }
            Ok(None) => break,
            Err(_) => {
                failures.push(format!(
                    "{} callbacks missing after {:?}",
                    pending - acknowledged,
                    send_timeout * 2
                ));
                break;
            }
        }
    }
    verdict_of_sends(
        batch.len(),
        &failures,
        "callbacks reported SEND_OK with msgId, offsetMsgId, queue",
    )
}

pub async fn oneway_sends(
    producer: &DefaultMQProducer,
    batch: &[Expected],
    send_timeout: Duration,
) -> (bool, String) {
    let mut failures = Vec::new();
    for e in batch {
        match bounded(
            "oneway send",
            send_timeout,
            producer.send_oneway(e.to_message()),
        )
        .await
        {
            Ok(Ok(())) => {}
            Ok(Err(err)) => failures.push(format!("{}: {err}", e.id)),
            Err(err) => failures.push(format!("{}: {err}", e.id)),
        }
    }
    verdict_of_sends(batch.len(), &failures, "handed to the broker")
}

pub async fn batch_send(
    producer: &DefaultMQProducer,
    batch: &mut [Expected],
    send_ms: u64,
) -> (bool, String) {
    let messages: Vec<_> = batch.iter().map(Expected::to_message).collect();
    let limit = Duration::from_millis(send_ms * 2);
    let outcome = bounded(
        "batch send",
        limit,
        producer.send_batch_with_timeout(messages, send_ms),
    )
    .await
    .and_then(|r| r.map_err(|err| err.to_string()));
    match outcome {
        Ok(r) if r.send_status == SendStatus::SendOk => {
            // A batch's ids come joined by commas, in batch order: the client's UNIQ_KEYs
            // as msgId, the broker's offset ids as offsetMsgId (docs/commands.md#sending).
            // The records take consecutive offsets of one queue from queueOffset on.
            let split = |ids: Option<&str>| -> Vec<String> {
                ids.map(|ids| ids.split(',').map(str::to_string).collect())
                    .unwrap_or_default()
            };
            let ids = split(r.msg_id.as_ref().map(|id| id.as_str()));
            let offset_ids = split(r.offset_msg_id.as_deref());
            let Some(queue_id) = r.message_queue.as_ref().map(|q| q.queue_id()) else {
                return (false, "SEND_OK without a message queue".into());
            };
            if ids.len() != batch.len() || offset_ids.len() != batch.len() {
                return (
                    false,
                    format!(
                        "SEND_OK but {} msgIds and {} offsetMsgIds for {} messages: {:?} / {:?}",
                        ids.len(),
                        offset_ids.len(),
                        batch.len(),
                        r.msg_id,
                        r.offset_msg_id
                    ),
                );
            }
            for (i, (e, (id, offset_id))) in batch
                .iter_mut()
                .zip(ids.into_iter().zip(offset_ids))
                .enumerate()
            {
                e.msg_id = Some(id);
                e.stored = Some(Stored {
                    queue_id,
                    queue_offset: r.queue_offset as i64 + i as i64,
                    offset_msg_id: offset_id,
                });
            }
            (
                true,
                format!(
                    "1 batch of {} SEND_OK, {} msgIds and offsetMsgIds, queue {queue_id} from offset {}",
                    batch.len(),
                    batch.len(),
                    r.queue_offset
                ),
            )
        }
        Ok(r) => (false, format!("status {:?}", r.send_status)),
        Err(err) => (false, err),
    }
}

/// A single send's result as RocketMQ reports success: SEND_OK, the client's message id,
/// the broker's offset message id and the queue and offset written.
fn accepted(r: &SendResult) -> Result<(String, Stored), String> {
    if r.send_status != SendStatus::SendOk {
        return Err(format!("status {:?}", r.send_status));
    }
    let msg_id = r.msg_id.as_ref().ok_or("SEND_OK without a msgId")?;
    let offset_msg_id = r
        .offset_msg_id
        .clone()
        .ok_or("SEND_OK without an offsetMsgId")?;
    let queue = r
        .message_queue
        .as_ref()
        .ok_or("SEND_OK without a message queue")?;
    Ok((
        msg_id.to_string(),
        Stored {
            queue_id: queue.queue_id(),
            queue_offset: r.queue_offset as i64,
            offset_msg_id,
        },
    ))
}

fn verdict_of_sends(total: usize, failures: &[String], what: &str) -> (bool, String) {
    if failures.is_empty() {
        (true, format!("{total}/{total} {what}"))
    } else {
        let shown: Vec<&str> = failures.iter().take(3).map(String::as_str).collect();
        (
            false,
            format!(
                "{} of {total} failed; first: {}",
                failures.len(),
                shown.join(" | ")
            ),
        )
    }
}
