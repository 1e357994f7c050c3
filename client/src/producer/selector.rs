//! Queue selectors for orderly sends (Java `MessageQueueSelector`).

use vostok_remoting::protocol::body::MessageQueue;
use vostok_remoting::protocol::filter::java_hash;

use crate::message::Message;

/// Chooses the index of the queue a message goes to. `arg` is the caller's key
/// (an order id, a user id).
pub trait MessageQueueSelector: Send + Sync {
    fn select(&self, queues: &[MessageQueue], msg: &Message, arg: &str) -> Option<usize>;
}

impl<F> MessageQueueSelector for F
where
    F: Fn(&[MessageQueue], &Message, &str) -> Option<usize> + Send + Sync,
{
    fn select(&self, queues: &[MessageQueue], msg: &Message, arg: &str) -> Option<usize> {
        self(queues, msg, arg)
    }
}

/// `abs(arg.hashCode()) % queues` with Java's `String.hashCode`, so Rust and Java
/// producers put the same key on the same queue.
pub struct SelectMessageQueueByHash;

impl MessageQueueSelector for SelectMessageQueueByHash {
    fn select(&self, queues: &[MessageQueue], _msg: &Message, arg: &str) -> Option<usize> {
        if queues.is_empty() {
            return None;
        }
        let n = queues.len() as i64;
        // Java: Math.abs(hash) % size, then abs again (Math.abs(MIN_VALUE) is negative).
        let value = (java_hash(arg) as i64).abs() % n;
        Some(value.unsigned_abs() as usize)
    }
}

pub struct SelectMessageQueueByRandom;

impl MessageQueueSelector for SelectMessageQueueByRandom {
    fn select(&self, queues: &[MessageQueue], _msg: &Message, _arg: &str) -> Option<usize> {
        if queues.is_empty() {
            None
        } else {
            Some(rand::random::<u32>() as usize % queues.len())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_selector_matches_java() {
        let queues: Vec<MessageQueue> = (0..8).map(|i| MessageQueue::new("T", "b", i)).collect();
        let msg = Message::new("T", "x");
        let h = java_hash("order-1") as i64;
        assert_eq!(
            SelectMessageQueueByHash.select(&queues, &msg, "order-1"),
            Some((h.abs() % 8) as usize)
        );
        assert_eq!(
            SelectMessageQueueByHash.select(&queues, &msg, "order-1"),
            SelectMessageQueueByHash.select(&queues, &msg, "order-1")
        );
        assert!(SelectMessageQueueByHash.select(&[], &msg, "a").is_none());
        let closure = |q: &[MessageQueue], _: &Message, _: &str| Some(q.len() - 1);
        assert_eq!(closure.select(&queues, &msg, ""), Some(7));
    }
}
