//! A bystander during a flood: every 200 ms a new connection asks the broker for its
//! runtime info and the name server for a topic's route (which it has only while the
//! broker keeps registering). Counts failures and the slowest answer.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use vostok_remoting::protocol::request_code;
use vostok_remoting::RemotingCommand;

use crate::raw::Raw;

#[derive(Debug, Default, Clone)]
pub struct ProbeFigures {
    pub rounds: u64,
    pub broker_failures: u64,
    pub route_failures: u64,
    pub slowest_broker: Duration,
    pub slowest_route: Duration,
}

impl ProbeFigures {
    pub fn ok(&self) -> bool {
        self.rounds > 0 && self.broker_failures == 0 && self.route_failures == 0
    }

    pub fn describe(&self) -> String {
        format!(
            "{} probes, broker failures {}, route failures {}, slowest broker answer {} ms, slowest route {} ms",
            self.rounds,
            self.broker_failures,
            self.route_failures,
            self.slowest_broker.as_millis(),
            self.slowest_route.as_millis()
        )
    }
}

pub struct Probe {
    stop: Arc<AtomicBool>,
    task: JoinHandle<ProbeFigures>,
}

impl Probe {
    pub fn start(broker: &str, namesrv: &str, topic: &str) -> Probe {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let (broker, namesrv, topic) = (broker.to_owned(), namesrv.to_owned(), topic.to_owned());
        let task = tokio::spawn(async move {
            let mut f = ProbeFigures::default();
            while !s.load(Ordering::Relaxed) {
                f.rounds += 1;
                // A fresh client: a new connection each time.
                let raw = Raw::default();
                let t = Instant::now();
                let request = RemotingCommand::request(request_code::GET_BROKER_RUNTIME_INFO);
                if raw.call(&broker, request).await.is_err() {
                    f.broker_failures += 1;
                }
                f.slowest_broker = f.slowest_broker.max(t.elapsed());
                let t = Instant::now();
                if !matches!(raw.route(&namesrv, &topic).await, Ok(Ok(()))) {
                    f.route_failures += 1;
                }
                f.slowest_route = f.slowest_route.max(t.elapsed());
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            f
        });
        Probe { stop, task }
    }

    pub async fn stop(self) -> ProbeFigures {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.unwrap_or_default()
    }
}
