//! The waiting side of a request sent over a [`Channel`].

use tokio::sync::oneshot;

use super::Channel;
use crate::command::RemotingCommand;
use crate::error::{RemotingError, Result};

/// A request on its way: await [`PendingResponse::wait`] for the answer.
pub struct PendingResponse {
    pub(super) channel: Channel,
    pub(super) rx: oneshot::Receiver<RemotingCommand>,
    pub(super) opaque: i32,
    pub(super) code: i32,
    pub(super) deadline: tokio::time::Instant,
    pub(super) started: tokio::time::Instant,
    pub(super) done: bool,
}

impl PendingResponse {
    pub(super) fn timeout_error(&self) -> RemotingError {
        RemotingError::Timeout {
            peer: self.channel.inner.peer,
            code: self.code,
            opaque: self.opaque,
            timeout: self.deadline.saturating_duration_since(self.started),
        }
    }

    /// The response, or a timeout / connection error. The pending slot is freed either way.
    pub async fn wait(mut self) -> Result<RemotingCommand> {
        let outcome = tokio::time::timeout_at(self.deadline, &mut self.rx).await;
        self.done = true;
        match outcome {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(_)) => Err(self.channel.closed_error()),
            Err(_) => {
                self.channel.forget(self.opaque);
                Err(self.timeout_error())
            }
        }
    }
}

impl Drop for PendingResponse {
    fn drop(&mut self) {
        // A caller that gave up (dropped the future) must not leak its slot.
        if !self.done {
            self.channel.forget(self.opaque);
        }
    }
}
