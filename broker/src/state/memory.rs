//! The broker's tables in the memory account (docs/limits.md#what-is-counted).
//!
//! Frames, queued responses and requests in flight (held pulls and POP requests,
//! pending sends) reserve their bytes in the remoting layer as they come and go. The
//! tables that grow with load are estimated here from their lengths, once a second,
//! and reported as the budget's gauge, so that they squeeze the room left for frames
//! and, past the soft limit, make producers wait:
//!
//! | table | bound | estimate |
//! |---|---|---|
//! | pending timers (heap and delivered set) | [`pending_timer_limit`], then SYSTEM_BUSY | [`TIMER_BYTES`] each |
//! | duplication window | `duplicationWindowMaxEntries` | its entry size and slot |
//! | POP checkpoints | `popCkMaxBufferSize` | [`CHECKPOINT_BYTES`] each |
//! | finished transactions | a handful of ranges | [`RANGE_BYTES`] each |

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use super::dedupe::ENTRY_BYTES;
use super::Broker;

/// A pending timer: 16 bytes in the heap, doubled for its growth, plus a delivered
/// offset waiting for the watermark.
pub(crate) const TIMER_BYTES: usize = 64;
/// A live POP checkpoint with its key, ack bits and index entries.
pub(crate) const CHECKPOINT_BYTES: usize = 512;
/// One range of finished transactions.
pub(crate) const RANGE_BYTES: usize = 64;
/// A duplication-window entry's slot in the table of positions, with its slack.
const DEDUPE_SLOT_BYTES: usize = 16;

/// Pending timers beyond which timer sends are refused: what half the soft limit
/// holds at [`TIMER_BYTES`] each, so that timers alone never press the account.
pub(crate) fn pending_timer_limit(soft_limit: usize) -> usize {
    (soft_limit / 2 / TIMER_BYTES).max(1024)
}

impl Broker {
    /// Estimates the tables and reports them to the budget; returns the estimate.
    pub(crate) fn sample_memory(&self) -> usize {
        let tables = self.deferred.timers.pending() * TIMER_BYTES
            + self.intake.dedupe.len() * (ENTRY_BYTES + DEDUPE_SLOT_BYTES)
            + self.pop.checkpoints().len() * CHECKPOINT_BYTES
            + self.deferred.transactions.finished_ranges() * RANGE_BYTES;
        self.memory.set_gauge(tables);
        tables
    }

    /// The account's figures for GET_BROKER_RUNTIME_INFO, with the registrations
    /// the duties runtime made (both say whether hostile load is being absorbed).
    pub(crate) fn health_info(&self) -> BTreeMap<String, String> {
        let m = &self.memory;
        let registrations = self.observed.stats.registrations.load(Ordering::Relaxed);
        [
            ("memoryUsedBytes", m.used()),
            ("memoryReservedBytes", m.reserved()),
            ("memoryPeakBytes", m.peak()),
            ("memorySoftLimitBytes", m.soft_limit()),
            ("memoryLimitBytes", m.limit()),
            ("memoryRefused", m.refused() as usize),
            ("nameServerRegistrations", registrations as usize),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_string()))
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timers_take_at_most_half_the_soft_limit() {
        let soft = 600 << 20;
        assert_eq!(pending_timer_limit(soft) * TIMER_BYTES, soft / 2);
        assert_eq!(pending_timer_limit(0), 1024, "a floor for tiny budgets");
        assert_eq!(
            pending_timer_limit(usize::MAX),
            usize::MAX / 2 / TIMER_BYTES
        );
    }
}
