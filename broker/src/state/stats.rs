//! Message counters and per-second rates for GET_BROKER_RUNTIME_INFO.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use vostok_remoting::support::sync::MutexExt;

#[derive(Default)]
pub struct BrokerStats {
    /// Messages stored since start.
    pub put: AtomicU64,
    /// Messages returned by pulls since start.
    pub get: AtomicU64,
    /// Successful registrations with a name server since start.
    pub registrations: AtomicU64,
    rates: Mutex<Rates>,
}

#[derive(Default)]
struct Rates {
    last_put: u64,
    last_get: u64,
    put_tps: f64,
    get_tps: f64,
}

impl BrokerStats {
    /// Called once a second: turns counter deltas into rates.
    pub fn sample(&self) {
        let put = self.put.load(Ordering::Relaxed);
        let get = self.get.load(Ordering::Relaxed);
        let mut r = self.rates.locked();
        r.put_tps = (put - r.last_put) as f64;
        r.get_tps = (get - r.last_get) as f64;
        r.last_put = put;
        r.last_get = get;
    }

    /// `(putTps, getTransferedTps)` over the last second.
    pub fn tps(&self) -> (f64, f64) {
        let r = self.rates.locked();
        (r.put_tps, r.get_tps)
    }
}
