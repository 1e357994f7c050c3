//! Thread `store-tier`: copies each sealed commitlog file (one the writer has left,
//! flushed and dispatched) to the tier with its queue index, records it durably, and
//! deletes tier segments older than `tieredStoreFileReservedTime`. It never takes the
//! append lock, so puts never wait for it; a failed upload is retried with backoff
//! (1 s doubling to 60 s) while local retention keeps the file (`retention`). Before
//! its first upload it adds to the record the tier's segments it lacks
//! (`rebuild::catch_up`) and checks the recorded segments still on the local disk
//! against the tier (`verify_recorded`).

use std::sync::atomic::Ordering;
use std::time::Duration;

use vostok_remoting::protocol::message::property;
use vostok_remoting::support::sync::{MutexExt, RwLockExt};
use vostok_remoting::support::time::now_millis;

use super::{data_key, index_key, IndexEntry, SegmentIndex, SegmentMeta, Tier, TierError};
use crate::commitlog::append::gets_queue_offset;
use crate::commitlog::scan::{scan, Scanned};
use crate::mapped_file::MappedFile;
use crate::store_inner::StoreInner;

/// Pause between two passes when there is nothing to do.
const IDLE: Duration = Duration::from_millis(200);
const BACKOFF_MIN: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(60);

pub(crate) fn run(inner: &StoreInner) {
    let Some(tier) = inner.tier.as_deref() else {
        return;
    };
    let mut backoff = BACKOFF_MIN;
    let mut verified = false;
    loop {
        let mut wait = IDLE;
        let pass = if verified {
            upload_pending(inner, tier)
        } else {
            super::rebuild::catch_up(inner, tier)
                .and_then(|_| verify_recorded(inner, tier))
                .and_then(|_| {
                    verified = true;
                    upload_pending(inner, tier)
                })
        };
        if let Err(TierError::Shutdown) = pass {
            break;
        }
        tier.stats.failing.store(pass.is_err(), Ordering::Relaxed);
        if let Err(e) = pass {
            let said = without_secrets(&e.to_string(), &tier.config);
            *tier.stats.last_upload_error.locked() = Some((now_millis(), said));
            tier.stats.upload_failures.fetch_add(1, Ordering::Relaxed);
            tier.notify_progress();
            tracing::warn!(
                error = %e,
                retry_in_ms = backoff.as_millis() as u64,
                "tier upload failed; local files are kept until it succeeds"
            );
            wait = backoff;
            backoff = (backoff * 2).min(BACKOFF_MAX);
        } else {
            backoff = BACKOFF_MIN;
        }
        if let Err(e) = expire(inner, tier, now_millis()) {
            tracing::warn!(error = %e, "deleting expired tier segments failed");
        }
        if inner.stopper.wait(wait) {
            break;
        }
    }
}

/// `message` (an upload error, kept for `mqadmin brokerStatus` and the console) with
/// the object store's credentials, configured or from the environment, as `***`.
fn without_secrets(message: &str, config: &super::TierConfig) -> String {
    let from_env = [
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_ACCESS_KEY_ID",
    ]
    .map(|k| std::env::var(k).unwrap_or_default());
    let mut out = message.to_owned();
    for secret in [&config.secret_key, &config.access_key]
        .into_iter()
        .chain(from_env.iter())
    {
        if !secret.is_empty() {
            out = out.replace(secret.as_str(), "***");
        }
    }
    out
}

/// At start: checks that every recorded segment whose local file is still here is
/// whole in the tier, and forgets those that are not (an object deleted or damaged
/// behind the broker's back), so that they are uploaded again. Segments whose local
/// file is gone cannot be uploaded again and are left recorded. Returns how many
/// were forgotten.
pub(crate) fn verify_recorded(inner: &StoreInner, tier: &Tier) -> Result<usize, TierError> {
    let local: Vec<i64> = inner
        .commitlog
        .files()
        .files()
        .iter()
        .map(|f| f.base())
        .collect();
    let recorded: Vec<(i64, u64)> = {
        let state = tier.state.read_locked();
        local
            .iter()
            .filter_map(|b| state.segments.get(b).map(|m| (*b, m.size)))
            .collect()
    };
    let mut missing = Vec::new();
    for (base, size) in recorded {
        let data = tier.backend.size(&data_key(base))?;
        let index = tier.backend.size(&index_key(base))?;
        if data != Some(size) || index.is_none() {
            tracing::warn!(
                base,
                data_bytes = ?data,
                index_found = index.is_some(),
                "a recorded tier segment is missing or incomplete in the tier; it is uploaded again"
            );
            missing.push(base);
        }
    }
    if missing.is_empty() {
        return Ok(0);
    }
    let mut state = tier.state.write_locked();
    let before = state.segments.clone();
    for base in &missing {
        state.segments.remove(base);
    }
    if let Err(e) = tier.meta.save(&mut state) {
        state.segments = before;
        return Err(e);
    }
    drop(state);
    for base in &missing {
        tier.forget_cached(*base);
    }
    tier.notify_progress();
    Ok(missing.len())
}

/// Uploads every sealed file not yet in the tier, oldest first.
pub(crate) fn upload_pending(inner: &StoreInner, tier: &Tier) -> Result<usize, TierError> {
    let files = inner.commitlog.files().files();
    let flushed = inner.commitlog.flushed_offset();
    let dispatched = inner.dispatch.reput_from();
    let mut uploaded = 0;
    // The last file is the writer's.
    for f in files.iter().take(files.len().saturating_sub(1)) {
        if tier.holds(f.base()) {
            continue;
        }
        if f.end() > flushed || f.end() > dispatched || inner.stopper.is_stopped() {
            break;
        }
        upload_one(inner, tier, f)?;
        uploaded += 1;
    }
    Ok(uploaded)
}

/// The queue index of a sealed file and the store time of its newest message.
fn scan_file(inner: &StoreInner, f: &MappedFile) -> (SegmentIndex, i64) {
    let (base, size) = (f.base(), f.size());
    let mut index = SegmentIndex::new(base);
    let mut last_ts = 0;
    let mut pos = 0;
    while pos < size {
        match scan(f.read(pos, size - pos), base, pos, size, false) {
            Scanned::Message(view) => {
                let phy = base + pos as i64;
                let total = view.total_size();
                if gets_queue_offset(view.sys_flag()) && !inner.tombstones.hides(view.topic(), phy)
                {
                    let props = view.properties();
                    let keys = [
                        property::find(props, property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
                        property::find(props, property::KEYS),
                    ];
                    let keys = keys.into_iter().flatten().collect::<Vec<_>>().join(" ");
                    index.push(
                        view.topic(),
                        view.queue_id(),
                        IndexEntry {
                            queue_offset: view.queue_offset(),
                            phy,
                            size: total as i32,
                            tags_code: inner.queue_tags_code(&view),
                            store_timestamp: view.store_timestamp(),
                        },
                        &keys,
                    );
                }
                last_ts = last_ts.max(view.store_timestamp());
                pos += total;
            }
            Scanned::Blank => break,
            Scanned::Partial | Scanned::Invalid(_) => {
                tracing::error!(
                    path = %f.path().display(),
                    position = pos,
                    "a sealed commitlog file is damaged here; the tier gets the records before it"
                );
                break;
            }
        }
    }
    index.data_len = pos as u64;
    (index, last_ts)
}

/// Uploads one file (unless the tier already has it whole) and records it.
fn upload_one(inner: &StoreInner, tier: &Tier, f: &MappedFile) -> Result<(), TierError> {
    let base = f.base();
    let (index, last_ts) = scan_file(inner, f);
    let data_len = index.data_len;
    let (dkey, ikey) = (data_key(base), index_key(base));
    let encoded = index.encode();
    let mut reused = true;
    if tier.backend.size(&dkey)? != Some(data_len) {
        tier.backend.put(&dkey, f.read(0, data_len as usize))?;
        reused = false;
    }
    if tier.backend.size(&ikey)? != Some(encoded.len() as u64) {
        tier.backend.put(&ikey, &encoded)?;
        reused = false;
    }
    {
        let mut state = tier.state.write_locked();
        // A topic deleted since the scan (`Tier::forget_topic` ran before this lock).
        let last = base + data_len as i64 - 1;
        let mut queues = index.ranges();
        queues.retain(|(t, ..)| !inner.tombstones.hides(t, last));
        state.segments.insert(
            base,
            SegmentMeta {
                base,
                size: data_len,
                last_store_timestamp: last_ts,
                queues,
            },
        );
        if let Err(e) = tier.meta.save(&mut state) {
            state.segments.remove(&base);
            return Err(e);
        }
    }
    tier.warned.locked().remove(&base);
    if !reused {
        tier.stats.segments_uploaded.fetch_add(1, Ordering::Relaxed);
        tier.stats
            .last_upload_ms
            .store(now_millis(), Ordering::Relaxed);
        tier.stats
            .bytes_uploaded
            .fetch_add(data_len, Ordering::Relaxed);
    }
    tier.notify_progress();
    tracing::info!(
        base,
        bytes = data_len,
        messages = index.len(),
        already_there = reused,
        "commitlog file in the tier"
    );
    Ok(())
}

/// Deletes tier segments whose local file is gone and whose newest message is older
/// than `tieredStoreFileReservedTime`, or that no longer hold any queue (every topic
/// in them was deleted).
pub(crate) fn expire(inner: &StoreInner, tier: &Tier, now_ms: i64) -> Result<usize, TierError> {
    let keep = tier.config.file_reserved_time.as_millis() as i64;
    let local_min = inner.commitlog.min_offset();
    let expired: Vec<i64> = tier
        .state
        .read_locked()
        .segments
        .values()
        .filter(|s| {
            s.base < local_min
                && (s.last_store_timestamp.saturating_add(keep) <= now_ms
                    // Every queue it held was of deleted topics.
                    || (s.queues.is_empty() && s.size > 0))
        })
        .map(|s| s.base)
        .collect();
    if expired.is_empty() {
        return Ok(0);
    }
    {
        let mut state = tier.state.write_locked();
        let before = state.segments.clone();
        for base in &expired {
            state.segments.remove(base);
        }
        if let Err(e) = tier.meta.save(&mut state) {
            state.segments = before;
            return Err(e);
        }
    }
    for base in &expired {
        tier.forget_cached(*base);
        for key in [data_key(*base), index_key(*base)] {
            if let Err(e) = tier.backend.delete(&key) {
                tracing::warn!(key = %key, error = %e, "an expired tier object could not be deleted; it is left behind");
            }
        }
        tier.stats.segments_expired.fetch_add(1, Ordering::Relaxed);
        tracing::info!(base, "deleted an expired tier segment");
    }
    tier.notify_progress();
    Ok(expired.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upload_error_is_kept_without_the_credentials() {
        let c = super::super::TierConfig {
            access_key: "the-access-key".into(),
            secret_key: "the-secret-key".into(),
            ..Default::default()
        };
        let said = without_secrets("denied for the-access-key (the-secret-key) at bucket b", &c);
        assert_eq!(said, "denied for *** (***) at bucket b");
    }
}
