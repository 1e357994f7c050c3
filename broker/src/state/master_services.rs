//! Keeps the current run of the services only a master runs (delay levels, timers,
//! transaction checks, POP revive): their stop signal and tasks, so that they start and
//! stop together. A classic master starts them once; in controller mode they start on
//! each promotion and stop on each demotion (RocketMQ `BrokerController.changeToMaster`
//! / `changeToSlave`), so that a slave never runs them and a new master starts them
//! from what its store holds then (docs/controller.md#role-changes).

use std::future::Future;
use std::sync::Mutex;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use vostok_remoting::support::sync::MutexExt;

/// Where one run of the master-only services lives: their stop signal and tasks.
#[derive(Clone)]
pub(crate) struct ServiceScope {
    stop: CancellationToken,
    tasks: TaskTracker,
    /// The broker's own tracker, so that shutdown waits for these tasks too.
    broker_tasks: TaskTracker,
}

impl ServiceScope {
    /// Cancelled on demotion and at shutdown.
    pub(crate) fn stop(&self) -> &CancellationToken {
        &self.stop
    }

    pub(crate) fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.broker_tasks.spawn(self.tasks.track_future(task));
    }
}

/// The running scope, if the services run.
#[derive(Default)]
pub(crate) struct MasterServices {
    running: Mutex<Option<ServiceScope>>,
}

impl MasterServices {
    /// A new scope for the services to be spawned in, or `None` when they run
    /// already. `shutdown` is the broker's: cancelling it stops them too.
    pub(crate) fn begin(
        &self,
        shutdown: &CancellationToken,
        broker_tasks: &TaskTracker,
    ) -> Option<ServiceScope> {
        let mut running = self.running.locked();
        if running.is_some() {
            return None;
        }
        let scope = ServiceScope {
            stop: shutdown.child_token(),
            tasks: TaskTracker::new(),
            broker_tasks: broker_tasks.clone(),
        };
        *running = Some(scope.clone());
        Some(scope)
    }

    /// Tells the running services to stop; their tracker (closed) to wait on, or
    /// `None` when none ran.
    pub(crate) fn end(&self) -> Option<TaskTracker> {
        let scope = self.running.locked().take()?;
        scope.stop.cancel();
        scope.tasks.close();
        Some(scope.tasks)
    }

    pub(crate) fn is_running(&self) -> bool {
        self.running.locked().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn services_stop_on_end_and_start_again_on_begin() {
        let (shutdown, broker_tasks) = (CancellationToken::new(), TaskTracker::new());
        let services = MasterServices::default();
        let scope = services.begin(&shutdown, &broker_tasks).unwrap();
        assert!(
            services.begin(&shutdown, &broker_tasks).is_none(),
            "already running"
        );
        let stop = scope.stop().clone();
        scope.spawn(async move { stop.cancelled().await });
        let tracker = services.end().unwrap();
        tracker.wait().await;
        assert!(!services.is_running());
        assert!(services.end().is_none());
        let again = services.begin(&shutdown, &broker_tasks).unwrap();
        assert!(!again.stop().is_cancelled());
        shutdown.cancel();
        assert!(again.stop().is_cancelled(), "shutdown stops them too");
        broker_tasks.close();
        broker_tasks.wait().await;
    }
}
