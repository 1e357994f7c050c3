//! The lifecycle every producer and consumer goes through once (RocketMQ
//! `ServiceState`): created, running, shut down.

use std::sync::atomic::{AtomicU8, Ordering};

use crate::error::{ClientError, Result};

const CREATED: u8 = 0;
const RUNNING: u8 = 1;
const SHUT_DOWN: u8 = 2;

#[derive(Debug)]
pub(crate) struct ServiceState(AtomicU8);

impl Default for ServiceState {
    fn default() -> Self {
        ServiceState(AtomicU8::new(CREATED))
    }
}

impl ServiceState {
    /// Created → running; `what` names the client in the error of a second start.
    pub(crate) fn start(&self, what: &str) -> Result<()> {
        self.0
            .compare_exchange(CREATED, RUNNING, Ordering::AcqRel, Ordering::Acquire)
            .map(drop)
            .map_err(|_| {
                ClientError::InvalidArgument(format!("the {what} was already started or shut down"))
            })
    }

    /// Back to created after a failed start, so that it may be started again.
    pub(crate) fn reset(&self) {
        self.0.store(CREATED, Ordering::Release);
    }

    /// Shut down for good, whatever the state was.
    pub(crate) fn mark_shut_down(&self) {
        self.0.store(SHUT_DOWN, Ordering::Release);
    }

    /// Marks it shut down; true if it was running (the caller then releases what it holds).
    pub(crate) fn shut_down(&self) -> bool {
        self.0.swap(SHUT_DOWN, Ordering::AcqRel) == RUNNING
    }

    pub(crate) fn is_running(&self) -> bool {
        self.0.load(Ordering::Acquire) == RUNNING
    }

    /// Ok while running; otherwise the error a call on `what` gets.
    pub(crate) fn check_running(&self, what: &'static str) -> Result<()> {
        match self.0.load(Ordering::Acquire) {
            RUNNING => Ok(()),
            SHUT_DOWN => Err(ClientError::ShutDown(what)),
            _ => Err(ClientError::NotStarted(what)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_once_and_reports_its_state() {
        let s = ServiceState::default();
        assert!(matches!(
            s.check_running("x"),
            Err(ClientError::NotStarted("x"))
        ));
        s.start("producer").unwrap();
        assert!(s.is_running());
        let again = s.start("producer").unwrap_err().to_string();
        assert!(
            again.contains("the producer was already started or shut down"),
            "{again}"
        );
        assert!(s.shut_down());
        assert!(!s.shut_down(), "only the first shutdown finds it running");
        assert!(matches!(
            s.check_running("x"),
            Err(ClientError::ShutDown("x"))
        ));
        assert!(s.start("producer").is_err());
    }

    #[test]
    fn a_failed_start_can_be_retried() {
        let s = ServiceState::default();
        s.start("producer").unwrap();
        s.reset();
        s.start("producer").unwrap();
        s.mark_shut_down();
        assert!(!s.is_running());
    }
}
