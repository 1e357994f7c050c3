//! Requests waiting for their reply (Java `RequestFutureHolder`): a producer's
//! `request` registers its correlation id here, and the PUSH_REPLY_MESSAGE_TO_CLIENT
//! that carries the same `CORRELATION_ID` completes it.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::oneshot;
use vostok_remoting::protocol::message::{property, MessageExt};
use vostok_remoting::support::sync::MutexExt;

/// correlation id → the request waiting for its reply.
#[derive(Default)]
pub(crate) struct ReplyWaiters(Mutex<HashMap<String, oneshot::Sender<MessageExt>>>);

impl ReplyWaiters {
    pub(crate) fn register(&self, correlation_id: &str) -> oneshot::Receiver<MessageExt> {
        let (tx, rx) = oneshot::channel();
        self.0.locked().insert(correlation_id.to_owned(), tx);
        rx
    }

    pub(crate) fn remove(&self, correlation_id: &str) {
        self.0.locked().remove(correlation_id);
    }

    /// Hands a reply to its request; false if no request waits for it any more.
    pub(crate) fn complete(&self, msg: MessageExt) -> bool {
        let Some(id) = msg.property(property::CORRELATION_ID).map(str::to_owned) else {
            return false;
        };
        let waiter = self.0.locked().remove(&id);
        match waiter {
            Some(tx) => tx.send(msg).is_ok(),
            None => false,
        }
    }
}
