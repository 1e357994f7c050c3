//! A single-threaded Tokio runtime on a thread of its own, for work that must keep
//! its pace whatever the request runtime is doing: the broker's duties
//! (registration with the name servers, client expiry, offset flushes) and the
//! embedded name server of standalone mode. A flood of requests, or a request that
//! blocks a worker, can delay them only by the CPU it takes, never by a queue.

use std::thread::JoinHandle;
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::oneshot;

/// How long stopping waits for the runtime's tasks to notice.
const STOP_TIMEOUT: Duration = Duration::from_secs(2);

pub(crate) struct SideRuntime {
    handle: Handle,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl SideRuntime {
    /// Starts the thread `name` running a runtime until [`SideRuntime`] is dropped.
    pub(crate) fn start(name: &str) -> std::io::Result<SideRuntime> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .thread_name(name)
            .build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                });
                runtime.shutdown_timeout(STOP_TIMEOUT);
            })?;
        Ok(SideRuntime {
            handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    pub(crate) fn handle(&self) -> &Handle {
        &self.handle
    }
}

impl Drop for SideRuntime {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // Not joined: the caller may be a runtime thread, which must not block; the
        // thread ends on its own within STOP_TIMEOUT.
        drop(self.thread.take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn runs_tasks_while_the_callers_thread_is_blocked() {
        let side = SideRuntime::start("test-side").unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        side.handle().spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            let _ = tx.send(std::thread::current().name().map(str::to_owned));
        });
        // Blocking this runtime's only thread does not stop the side runtime.
        let name = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(name.as_deref(), Some("test-side"));
    }
}
