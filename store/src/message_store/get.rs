//! The pull path (RocketMQ `DefaultMessageStore.getMessage`, docs/commands.md#pulling,
//! docs/store.md#read-path), falling through to the tier (docs/tiered-storage.md) for
//! offsets whose local files are gone.

use vostok_remoting::protocol::message::record::{RecordKind, RecordView};

use super::MessageStore;
use crate::config::CQ_UNIT_SIZE;
use crate::message::MessageFilter;
use crate::result::{GetMessageResult, GetMessageStatus};
use crate::stats::Stats;

/// Limits of one pull.
struct Limits {
    max_count: usize,
    max_bytes: usize,
    memory_bytes: usize,
    memory_count: usize,
    disk_bytes: usize,
    disk_count: usize,
}

impl Limits {
    /// RocketMQ `isTheBatchFull`: the first record always fits.
    fn full(&self, size: usize, total: usize, count: usize, in_disk: bool) -> bool {
        if total == 0 || count == 0 {
            return false;
        }
        if count + 1 > self.max_count || total + size > self.max_bytes {
            return true;
        }
        if in_disk {
            total + size > self.disk_bytes || count + 1 > self.disk_count
        } else {
            total + size > self.memory_bytes || count + 1 > self.memory_count
        }
    }
}

/// The record of `size` bytes a consume-queue entry points to at `phy` is intact: it
/// parses, its body CRC matches and it says it is at `phy`. Recovery verifies only
/// the files it walks (docs/store.md#recovery); a damaged older file must not reach a
/// consumer. The lookups by offset and key check the same (`CommitLog::read_record`).
fn intact_record(bytes: &[u8], size: usize, phy: i64) -> bool {
    bytes.len() == size
        && matches!(
            RecordView::parse(bytes, true),
            Ok(RecordKind::Message(view)) if view.physical_offset() == phy
        )
}

impl MessageStore {
    /// Reads up to `max_count` records (and `max_bytes`, ≤ 0 = no byte limit) of a queue
    /// from `offset`, skipping those `filter` rejects. Statuses and `next_begin_offset`
    /// follow docs/commands.md#pulling.
    pub fn get_message(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_count: i32,
        max_bytes: i32,
        filter: Option<&dyn MessageFilter>,
    ) -> GetMessageResult {
        let i = self.inner();
        let result = self.get_inner(topic, queue_id, offset, max_count, max_bytes, filter);
        if result.status == GetMessageStatus::Found {
            Stats::add(&i.stats.get_found, 1);
            Stats::add(&i.stats.get_transferred, result.messages.len() as u64);
        } else {
            Stats::add(&i.stats.get_miss, 1);
        }
        result
    }

    /// Whether a read of `offset` of the queue would be answered by the tier: the
    /// tier holds it and the local store no longer does. Cheap (no I/O): a caller on
    /// an async runtime sends such reads to [`MessageStore::on_tier_readers`].
    pub fn reads_from_tier(&self, topic: &str, queue_id: i32, offset: i64) -> bool {
        let i = self.inner();
        let Some(tier) = i.tier.as_deref().filter(|t| t.serves_reads()) else {
            return false;
        };
        // The local store first: a pull of the hot tail never looks at the tier.
        if let Some(cq) = i.queues.find(topic, queue_id) {
            let (min, max) = (cq.min_offset(), cq.max_offset());
            if max > 0 && offset >= min {
                if offset >= max {
                    return false;
                }
                let local = cq.span(offset).is_some_and(|span| {
                    span.count > 0 && span.get(0).phy >= i.commitlog.min_offset()
                });
                if local {
                    return false;
                }
            }
        }
        tier.queue_range(topic, queue_id)
            .is_some_and(|(_, end)| offset < end)
    }

    /// Whether the tier is on and serves reads: requests that may read it besides
    /// pulls (searches by time, lag, queue entries, lookups by key or offset) then
    /// run on [`MessageStore::on_tier_readers`]. Cheap (no I/O).
    pub fn tier_serves_reads(&self) -> bool {
        self.inner()
            .tier
            .as_deref()
            .is_some_and(|t| t.serves_reads())
    }

    /// Runs `f` (a read [`MessageStore::reads_from_tier`] says the tier answers) on
    /// the tier's reader threads, `store-tier-read`, within the tier's I/O budget
    /// (docs/tiered-storage.md#reads-and-the-hot-tail), so that it holds up none of the
    /// threads serving the hot tail. `None` when the tier is off, more than
    /// `tieredStoreMaxPendingLimit` reads wait, or `f` waited past
    /// `tieredStoreReadTimeout` for a thread (then it never ran): the caller answers
    /// "not found" at the same offset.
    pub fn on_tier_readers<T, F>(&self, f: F) -> impl std::future::Future<Output = Option<T>>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let run = self.inner().tier.as_deref().map(|t| t.on_readers(f));
        async move {
            match run {
                Some(run) => run.await,
                None => None,
            }
        }
    }

    fn get_inner(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_count: i32,
        max_bytes: i32,
        filter: Option<&dyn MessageFilter>,
    ) -> GetMessageResult {
        use GetMessageStatus::*;
        let i = self.inner();
        if i.state.shutdown.load(std::sync::atomic::Ordering::Acquire) {
            return GetMessageResult::empty(OffsetFoundNull, offset, 0, 0);
        }
        let c = &i.config;
        let max_count = if max_count > 0 { max_count as usize } else { 1 };
        let limits = Limits {
            max_count,
            max_bytes: if max_bytes > 0 {
                max_bytes as usize
            } else {
                usize::MAX
            },
            memory_bytes: c.max_transfer_bytes_on_message_in_memory,
            memory_count: c.max_transfer_count_on_message_in_memory,
            disk_bytes: c.max_transfer_bytes_on_message_in_disk,
            disk_count: c.max_transfer_count_on_message_in_disk,
        };
        // What the local store no longer has, the tier may.
        let from_tier = |min: i64, max: i64| {
            self.get_from_tier(topic, queue_id, offset, &limits, filter, min, max)
        };
        let Some(cq) = i.queues.find(topic, queue_id) else {
            if let Some(r) = from_tier(0, 0) {
                return r;
            }
            // A queue only the tier holds (a new disk), asked at or past its end.
            let tier = i.tier.as_deref().filter(|t| t.serves_reads());
            return match tier.and_then(|t| t.queue_range(topic, queue_id)) {
                Some((min, max)) if offset == max => {
                    GetMessageResult::empty(OffsetOverflowOne, offset, min, max)
                }
                Some((min, max)) => GetMessageResult::empty(OffsetOverflowBadly, max, min, max),
                None => GetMessageResult::empty(NoMatchedLogicQueue, 0, 0, 0),
            };
        };
        let (min, max) = (cq.min_offset(), cq.max_offset());
        if max == 0 {
            return from_tier(min, max)
                .unwrap_or_else(|| GetMessageResult::empty(NoMessageInQueue, 0, min, max));
        }
        if offset < min {
            return from_tier(min, max)
                .unwrap_or_else(|| GetMessageResult::empty(OffsetTooSmall, min, min, max));
        }
        if offset == max {
            return GetMessageResult::empty(OffsetOverflowOne, offset, min, max);
        }
        if offset > max {
            let next = if min == 0 { min } else { max };
            return GetMessageResult::empty(OffsetOverflowBadly, next, min, max);
        }
        let Some(span) = cq.span(offset) else {
            return from_tier(min, max).unwrap_or_else(|| {
                GetMessageResult::empty(OffsetFoundNull, cq.roll_next_file(offset), min, max)
            });
        };
        let max_phy = i.commitlog.max_offset();
        let window = i.memory_window();
        let examine = span.count.min((16_000 / CQ_UNIT_SIZE).max(max_count));

        let mut result = GetMessageResult::empty(NoMatchedMessage, offset, min, max);
        let mut next_phy_file_start = i64::MIN;
        let mut max_phy_pulling = 0;
        let mut k = 0;
        while k < examine {
            let e = span.get(k);
            if e.is_blank() || e.size <= 0 || e.phy < next_phy_file_start {
                k += 1;
                continue;
            }
            max_phy_pulling = e.phy;
            let size = e.size as usize;
            let in_disk = max_phy - e.phy > window;
            if limits.full(
                size,
                result.buffer_total_size,
                result.messages.len(),
                in_disk,
            ) {
                break;
            }
            k += 1;
            if let Some(f) = filter {
                if f.skips_queue_offset(offset + k as i64 - 1)
                    || !f.is_matched_by_consume_queue(e.tags_code)
                {
                    continue;
                }
            }
            let Some(bytes) = i.commitlog.read(e.phy, size) else {
                if result.messages.is_empty() && k == 1 {
                    if let Some(r) = from_tier(min, max) {
                        return r;
                    }
                }
                if result.messages.is_empty() {
                    result.status = MessageWasRemoving;
                }
                next_phy_file_start = i.commitlog.roll_next_file(e.phy);
                continue;
            };
            if !intact_record(&bytes, size, e.phy) {
                // Damaged on disk: skipped (the consumer moves past it), never served.
                tracing::error!(
                    topic,
                    queue_id,
                    queue_offset = offset + k as i64 - 1,
                    commit_log_offset = e.phy,
                    size,
                    "skipping a corrupt commitlog record"
                );
                continue;
            }
            if let Some(f) = filter {
                let props = RecordView::parse_message(&bytes, false)
                    .map(|v| v.properties())
                    .unwrap_or("");
                if !f.is_matched_by_commit_log(props) {
                    if result.messages.is_empty() {
                        result.status = NoMatchedMessage;
                    }
                    continue;
                }
            }
            result.buffer_total_size += size;
            result.messages.push(bytes);
            result.status = Found;
            next_phy_file_start = i64::MIN;
        }
        result.next_begin_offset = offset + k as i64;
        result.suggest_pulling_from_slave = max_phy - max_phy_pulling > window;
        result
    }

    /// Serves a pull from the tier: `None` when the tier is off or does not hold
    /// `offset` of the queue (the local answer stands). `min`/`max` are the local
    /// queue's; the answer's min offset is the tier's when it goes further back.
    #[allow(clippy::too_many_arguments)]
    fn get_from_tier(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        limits: &Limits,
        filter: Option<&dyn MessageFilter>,
        min: i64,
        max: i64,
    ) -> Option<GetMessageResult> {
        use GetMessageStatus::*;
        let tier = self.inner().tier.as_deref().filter(|t| t.serves_reads())?;
        let (tier_min, tier_end) = tier.queue_range(topic, queue_id)?;
        let max = max.max(tier_end);
        let min = if min > 0 || max > 0 {
            min.min(tier_min)
        } else {
            tier_min
        };
        let examine = (16_000 / CQ_UNIT_SIZE).max(limits.max_count);
        // One deadline for the whole pull: its queue index and every block it reads.
        let deadline = tier.deadline();
        let found = match tier.entries_from(topic, queue_id, offset, examine, deadline) {
            Ok(Some(found)) => found,
            Ok(None) => return None,
            Err(e) => {
                // Unreachable or damaged: the consumer asks again from the same offset.
                tracing::warn!(topic, queue_id, offset, error = %e, "tier read failed");
                return Some(GetMessageResult::empty(OffsetFoundNull, offset, min, max));
            }
        };
        let (base, entries) = found;
        let first = entries.first()?.queue_offset;
        let mut result = GetMessageResult::empty(NoMatchedMessage, first, min, max);
        for e in &entries {
            let size = e.size.max(0) as usize;
            if limits.full(size, result.buffer_total_size, result.messages.len(), true) {
                break;
            }
            result.next_begin_offset = e.queue_offset + 1;
            if let Some(f) = filter {
                if f.skips_queue_offset(e.queue_offset)
                    || !f.is_matched_by_consume_queue(e.tags_code)
                {
                    continue;
                }
            }
            let bytes = match tier.read(base, e.phy, size, deadline) {
                Ok(b) => b,
                Err(err) => {
                    tracing::warn!(topic, queue_id, offset = e.queue_offset, error = %err, "tier read failed");
                    if result.messages.is_empty() {
                        result.status = OffsetFoundNull;
                        result.next_begin_offset = e.queue_offset;
                    } else {
                        result.next_begin_offset = e.queue_offset;
                    }
                    break;
                }
            };
            let intact = if tier.config.crc_check_enable {
                intact_record(&bytes, size, e.phy)
            } else {
                matches!(
                    RecordView::parse(&bytes, false),
                    Ok(RecordKind::Message(v)) if v.physical_offset() == e.phy && bytes.len() == size
                )
            };
            if !intact {
                tracing::error!(
                    topic,
                    queue_id,
                    queue_offset = e.queue_offset,
                    commit_log_offset = e.phy,
                    "skipping a corrupt tier record"
                );
                continue;
            }
            if let Some(f) = filter {
                let props = RecordView::parse_message(&bytes, false)
                    .map(|v| v.properties())
                    .unwrap_or("");
                if !f.is_matched_by_commit_log(props) {
                    continue;
                }
            }
            result.buffer_total_size += size;
            result.messages.push(bytes);
            result.status = Found;
        }
        Some(result)
    }
}
