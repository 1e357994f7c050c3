//! Store configuration: RocketMQ's `MessageStoreConfig` keys and defaults.
//!
//! Fields are snake_case; [`StoreConfig::apply_property`] takes RocketMQ's camelCase
//! `.properties` keys with RocketMQ's units (milliseconds, hours for
//! `fileReservedTime`, percent for ratios), and [`StoreConfig::to_properties`] prints
//! them back the same way.

use std::path::PathBuf;
use std::time::Duration;

use vostok_remoting::support::keys::{num, Codec, Flag, Key, Millis, Num, Path, Section, Table};
use vostok_remoting::{config_key, config_within};

use crate::error::{Result, StoreError};
use crate::ha::HaConfig;
use crate::tier::TierConfig;

/// When a put is acknowledged relative to the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushDiskType {
    /// Acknowledge once the record is in the page cache; flush every
    /// `flush_interval_commit_log`.
    AsyncFlush,
    /// Acknowledge once the record is on disk (group commit).
    SyncFlush,
}

impl FlushDiskType {
    pub fn as_str(self) -> &'static str {
        match self {
            FlushDiskType::AsyncFlush => "ASYNC_FLUSH",
            FlushDiskType::SyncFlush => "SYNC_FLUSH",
        }
    }
}

/// RocketMQ's default `messageDelayLevel`.
pub const DEFAULT_DELAY_LEVELS: &str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h";

/// Size of one consume-queue entry (docs/store.md#consume-queue).
pub const CQ_UNIT_SIZE: usize = 20;

#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// `storePathRootDir`: consume queues, index, checkpoint, abort and lock live here.
    pub store_path_root_dir: PathBuf,
    /// `storePathCommitLog`; `None` = `<root>/commitlog`.
    pub store_path_commit_log: Option<PathBuf>,
    /// `mappedFileSizeCommitLog`, bytes per commitlog file.
    pub mapped_file_size_commit_log: usize,
    /// `mappedFileSizeConsumeQueue`, bytes per consume-queue file (a multiple of 20).
    pub mapped_file_size_consume_queue: usize,
    /// `flushDiskType`.
    pub flush_disk_type: FlushDiskType,
    /// `transientStorePoolEnable`: appends go to a bounded in-memory write buffer and
    /// a commit thread writes them to the commitlog files with `pwrite`, many appends
    /// at a time; readers see only what it has written. ASYNC_FLUSH masters only: an
    /// acknowledged message not yet written to the file is lost if the process dies.
    pub transient_store_pool_enable: bool,
    /// Bytes of that write buffer; 0 (the default): twice `maxMessageSize`, at least
    /// 8 MiB. Not a RocketMQ key; tests set it small.
    pub transient_store_buffer_bytes: usize,
    /// `flushIntervalCommitLog`: period of the asynchronous commitlog flush.
    pub flush_interval_commit_log: Duration,
    /// `flushCommitLogLeastPages`: an asynchronous flush waits for this many dirty pages...
    pub flush_commit_log_least_pages: usize,
    /// `flushCommitLogThoroughInterval`: ...unless this long passed since the last flush.
    pub flush_commit_log_thorough_interval: Duration,
    /// `syncFlushTimeout`: a SYNC_FLUSH put answers FLUSH_DISK_TIMEOUT after this.
    pub sync_flush_timeout: Duration,
    /// `flushIntervalConsumeQueue`: period of the consume-queue and index flush.
    pub flush_interval_consume_queue: Duration,
    /// `maxMessageSize`: the largest record (and batch) accepted.
    pub max_message_size: usize,
    /// `fileReservedTime` (hours in the properties file).
    pub file_reserved_time: Duration,
    /// `deleteWhen`: local hours (`"04"`, or `"04;16"`) when expired files are deleted.
    pub delete_when: String,
    /// `diskMaxUsedSpaceRatio` (%): above it expired files are deleted at once.
    pub disk_max_used_space_ratio: u32,
    /// `diskSpaceCleanForciblyRatio` (%): above it the oldest files go even if not
    /// expired, as far as every consumer group has consumed them.
    pub disk_space_clean_forcibly_ratio: u32,
    /// `diskSpaceWarningLevelRatio` (%): above it puts are refused with DISK_FULL.
    pub disk_space_warning_level_ratio: u32,
    /// `cleanFileForciblyEnable`: let a forced, space-driven deletion drop messages
    /// that a consumer group has not consumed. Off by default (RocketMQ: on): without
    /// it a full disk refuses sends instead of deleting unconsumed messages.
    pub clean_file_forcibly_enable: bool,
    /// `cleanResourceInterval`: how often retention runs.
    pub clean_resource_interval: Duration,
    /// `messageIndexEnable`.
    pub message_index_enable: bool,
    /// `maxHashSlotNum`.
    pub max_hash_slot_num: u32,
    /// `maxIndexNum`: entries per index file.
    pub max_index_num: u32,
    /// `maxMsgsNumBatch`: most offsets one index query returns.
    pub max_msgs_num_batch: usize,
    /// `checkCRCOnRecover`.
    pub check_crc_on_recover: bool,
    /// `recoveryProgressInterval` (Vostok): at most this long between two lines of a
    /// recovery's progress.
    pub recovery_progress_interval: Duration,
    /// `messageDelayLevel`.
    pub message_delay_level: String,
    /// `maxTransferBytesOnMessageInMemory`.
    pub max_transfer_bytes_on_message_in_memory: usize,
    /// `maxTransferCountOnMessageInMemory`.
    pub max_transfer_count_on_message_in_memory: usize,
    /// `maxTransferBytesOnMessageInDisk`.
    pub max_transfer_bytes_on_message_in_disk: usize,
    /// `maxTransferCountOnMessageInDisk`.
    pub max_transfer_count_on_message_in_disk: usize,
    /// `accessMessageInMemoryMaxRatio` (% of physical memory).
    pub access_message_in_memory_max_ratio: u32,
    /// `defaultQueryMaxNum`.
    pub default_query_max_num: usize,
    /// `osPageCacheBusyTimeOutMills`: the append lock held longer than this = busy.
    pub os_page_cache_busy_timeout: Duration,
    /// Replication (`haSendHeartbeatInterval`, `haMaxGapNotInSync`, ...).
    pub ha: HaConfig,
    /// Tiered storage (`messageStorePlugIn`, `tiered*`, `objectStore*`).
    pub tier: TierConfig,
}

impl Default for StoreConfig {
    fn default() -> Self {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        StoreConfig {
            store_path_root_dir: home.join("store"),
            store_path_commit_log: None,
            mapped_file_size_commit_log: 1024 * 1024 * 1024,
            mapped_file_size_consume_queue: 300_000 * CQ_UNIT_SIZE,
            flush_disk_type: FlushDiskType::AsyncFlush,
            transient_store_pool_enable: false,
            transient_store_buffer_bytes: 0,
            flush_interval_commit_log: Duration::from_millis(500),
            flush_commit_log_least_pages: 4,
            flush_commit_log_thorough_interval: Duration::from_secs(10),
            sync_flush_timeout: Duration::from_millis(5000),
            flush_interval_consume_queue: Duration::from_millis(1000),
            max_message_size: 4 * 1024 * 1024,
            file_reserved_time: Duration::from_secs(72 * 3600),
            delete_when: "04".to_owned(),
            disk_max_used_space_ratio: 75,
            disk_space_clean_forcibly_ratio: 85,
            disk_space_warning_level_ratio: 90,
            clean_file_forcibly_enable: false,
            clean_resource_interval: Duration::from_millis(10_000),
            message_index_enable: true,
            max_hash_slot_num: 5_000_000,
            max_index_num: 20_000_000,
            max_msgs_num_batch: 64,
            check_crc_on_recover: true,
            recovery_progress_interval: Duration::from_secs(5),
            message_delay_level: DEFAULT_DELAY_LEVELS.to_owned(),
            max_transfer_bytes_on_message_in_memory: 256 * 1024,
            max_transfer_count_on_message_in_memory: 32,
            max_transfer_bytes_on_message_in_disk: 64 * 1024,
            max_transfer_count_on_message_in_disk: 8,
            access_message_in_memory_max_ratio: 40,
            default_query_max_num: 32,
            os_page_cache_busy_timeout: Duration::from_millis(1000),
            ha: HaConfig::default(),
            tier: TierConfig::default(),
        }
    }
}

/// A percentage, at most 100.
struct Ratio;

impl Codec<u32> for Ratio {
    fn parse(&self, text: &str) -> std::result::Result<u32, String> {
        match num::<u32>(text)? {
            ratio if ratio > 100 => Err(format!("{text:?}: a percentage is at most 100")),
            ratio => Ok(ratio),
        }
    }
    fn print(&self, value: &u32) -> String {
        value.to_string()
    }
}

/// Whole hours.
struct Hours;

impl Codec<Duration> for Hours {
    fn parse(&self, text: &str) -> std::result::Result<Duration, String> {
        Ok(Duration::from_secs(num::<u64>(text)?.saturating_mul(3600)))
    }
    fn print(&self, value: &Duration) -> String {
        (value.as_secs() / 3600).to_string()
    }
}

/// The store keys, RocketMQ's `MessageStoreConfig` names and units.
pub static KEYS: Table<StoreConfig> = Table {
    keys: &[
        config_key!("storePathRootDir", store_path_root_dir: Path, "where the store keeps its files (RocketMQ: `~/store`)", important),
        Key::new(
            "storePathCommitLog",
            "the commitlog's directory",
            |c: &mut StoreConfig, v| {
                let v = v.trim();
                c.store_path_commit_log = (!v.is_empty()).then(|| PathBuf::from(v));
                Ok(())
            },
            |c| c.commit_log_dir().display().to_string(),
        )
        .default_text("`<storePathRootDir>/commitlog`"),
        config_key!("mappedFileSizeCommitLog", mapped_file_size_commit_log: Num, "bytes of one commitlog file"),
        config_key!("mappedFileSizeConsumeQueue", mapped_file_size_consume_queue: Num, "bytes of one consume queue file"),
        Key::new(
            "flushDiskType",
            "`ASYNC_FLUSH`, or `SYNC_FLUSH`: a send is acknowledged after fdatasync (group commit)",
            |c: &mut StoreConfig, v| {
                c.flush_disk_type = match v.trim() {
                    "ASYNC_FLUSH" => FlushDiskType::AsyncFlush,
                    "SYNC_FLUSH" => FlushDiskType::SyncFlush,
                    _ => return Err(format!("expected ASYNC_FLUSH or SYNC_FLUSH, got {v:?}")),
                };
                Ok(())
            },
            |c| c.flush_disk_type.as_str().to_owned(),
        )
        .important(),
        config_key!("transientStorePoolEnable", transient_store_pool_enable: Flag, "masters only (refused on a SLAVE): appends go to an 8 MiB write buffer that a commit thread writes to the commitlog with `pwrite`; readers see only written bytes; with ASYNC_FLUSH a sent message still in the buffer is lost if the process dies (kill -9, crash), not only on a power failure; with SYNC_FLUSH a send is answered once written and flushed, as without it"),
        config_key!("flushIntervalCommitLog", flush_interval_commit_log: Millis, "ms between two flushes of an ASYNC_FLUSH commitlog"),
        config_key!("flushCommitLogLeastPages", flush_commit_log_least_pages: Num, "pages a flush waits for, unless the thorough interval passed"),
        config_key!("flushCommitLogThoroughInterval", flush_commit_log_thorough_interval: Millis, "ms after which a flush goes ahead with any number of pages"),
        config_key!("syncFlushTimeout", sync_flush_timeout: Millis, "how long a SYNC_FLUSH send waits for the disk"),
        config_key!("flushIntervalConsumeQueue", flush_interval_consume_queue: Millis, "ms between two flushes of the consume queues"),
        config_key!("maxMessageSize", max_message_size: Num, "larger bodies get MESSAGE_ILLEGAL"),
        config_key!("fileReservedTime", file_reserved_time: Hours, "hours before a commitlog file may be deleted"),
        Key::new(
            "deleteWhen",
            "hours of day for deletion, `;` separated",
            |c, v| {
                let v = v.trim();
                parse_delete_hours(v)
                    .ok_or_else(|| format!("expected hours 00-23 separated by ';', got {v:?}"))?;
                c.delete_when = v.to_owned();
                Ok(())
            },
            |c| c.delete_when.clone(),
        ),
        config_key!("diskMaxUsedSpaceRatio", disk_max_used_space_ratio: Ratio, "above this % files are deleted at once, not at `deleteWhen`"),
        config_key!("diskSpaceCleanForciblyRatio", disk_space_clean_forcibly_ratio: Ratio, "above this % the oldest consumed files go even if not expired"),
        config_key!("diskSpaceWarningLevelRatio", disk_space_warning_level_ratio: Ratio, "above this % sends are refused until space is freed"),
        config_key!("cleanFileForciblyEnable", clean_file_forcibly_enable: Flag, "forced deletion may drop messages a group has not consumed"),
        config_key!("cleanResourceInterval", clean_resource_interval: Millis, "ms between two looks for files to delete"),
        config_key!("messageIndexEnable", message_index_enable: Flag, "keep the key and unique-id index"),
        config_key!("maxHashSlotNum", max_hash_slot_num: Num, "hash slots of one index file"),
        config_key!("maxIndexNum", max_index_num: Num, "entries of one index file"),
        config_key!("maxMsgsNumBatch", max_msgs_num_batch: Num, "most messages one query answers"),
        config_key!("checkCRCOnRecover", check_crc_on_recover: Flag, "check each record's CRC when recovering"),
        config_key!("recoveryProgressInterval", recovery_progress_interval: Millis, "ms between two progress lines of a start-up recovery"),
        Key::new(
            "messageDelayLevel",
            "delay levels (units s, m, h, d)",
            |c, v| {
                let v = v.trim();
                parse_delay_levels(v).map_err(|item| format!("bad delay level {item:?}"))?;
                c.message_delay_level = v.to_owned();
                Ok(())
            },
            |c| c.message_delay_level.clone(),
        ),
        config_key!("maxTransferBytesOnMessageInMemory", max_transfer_bytes_on_message_in_memory: Num, "bytes one pull returns from memory"),
        config_key!("maxTransferCountOnMessageInMemory", max_transfer_count_on_message_in_memory: Num, "messages one pull returns from memory"),
        config_key!("maxTransferBytesOnMessageInDisk", max_transfer_bytes_on_message_in_disk: Num, "bytes one pull returns from disk"),
        config_key!("maxTransferCountOnMessageInDisk", max_transfer_count_on_message_in_disk: Num, "messages one pull returns from disk"),
        config_key!("accessMessageInMemoryMaxRatio", access_message_in_memory_max_ratio: Ratio, "% of memory beyond which a read counts as from disk"),
        config_key!("defaultQueryMaxNum", default_query_max_num: Num, "messages a key query returns unless told"),
        config_key!("osPageCacheBusyTimeOutMills", os_page_cache_busy_timeout: Millis, "a put holding the commitlog lock longer than this makes sends SYSTEM_BUSY"),
    ],
    nested: &[
        config_within!(StoreConfig, ha, crate::ha::config::KEYS),
        config_within!(StoreConfig, tier, crate::tier::config::KEYS),
    ],
};

impl Section for StoreConfig {
    fn table() -> &'static Table<Self> {
        &KEYS
    }
}

/// Parses one `messageDelayLevel` item such as `5s`, `2m`, `1h`, `1d`.
fn parse_delay(item: &str) -> Option<Duration> {
    let unit = item.chars().last()?;
    let n: u64 = item[..item.len() - unit.len_utf8()].parse().ok()?;
    let secs = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return None,
    };
    n.checked_mul(secs).map(Duration::from_secs)
}

impl StoreConfig {
    /// `<root>/commitlog` unless `storePathCommitLog` is set.
    pub fn commit_log_dir(&self) -> PathBuf {
        self.store_path_commit_log
            .clone()
            .unwrap_or_else(|| self.store_path_root_dir.join("commitlog"))
    }

    pub fn consume_queue_dir(&self) -> PathBuf {
        self.store_path_root_dir.join("consumequeue")
    }

    pub fn index_dir(&self) -> PathBuf {
        self.store_path_root_dir.join("index")
    }

    pub fn checkpoint_path(&self) -> PathBuf {
        self.store_path_root_dir.join("checkpoint")
    }

    pub fn abort_path(&self) -> PathBuf {
        self.store_path_root_dir.join("abort")
    }

    pub fn lock_path(&self) -> PathBuf {
        self.store_path_root_dir.join("lock")
    }

    /// Sets one field from a RocketMQ `.properties` key. `Ok(true)`: the key is a store
    /// key and was applied; `Ok(false)`: not a store key; `Err`: a store key with a bad value.
    pub fn apply_property(&mut self, key: &str, value: &str) -> Result<bool> {
        self.set_key(key, value)
            .map_err(|reason| StoreError::config(key, value, reason))
    }

    /// The effective configuration as RocketMQ key/value pairs, in RocketMQ's units.
    pub fn to_properties(&self) -> Vec<(String, String)> {
        self.key_values()
    }

    /// The parsed `messageDelayLevel`: entry `i` is the delay of level `i + 1`.
    pub fn delay_levels(&self) -> Result<Vec<Duration>> {
        parse_delay_levels(&self.message_delay_level).map_err(|item| {
            StoreError::config(
                "messageDelayLevel",
                &self.message_delay_level,
                format!("bad delay level {item:?}"),
            )
        })
    }

    /// Checks the values that the store cannot work with.
    pub fn validate(&self) -> Result<()> {
        let min_commit_log = 4096;
        if self.mapped_file_size_commit_log < min_commit_log
            || self.mapped_file_size_commit_log > i32::MAX as usize
        {
            return Err(StoreError::config(
                "mappedFileSizeCommitLog",
                &self.mapped_file_size_commit_log.to_string(),
                format!("must be between {min_commit_log} and {}", i32::MAX),
            ));
        }
        if self.mapped_file_size_consume_queue < CQ_UNIT_SIZE
            || self.mapped_file_size_consume_queue % CQ_UNIT_SIZE != 0
        {
            return Err(StoreError::config(
                "mappedFileSizeConsumeQueue",
                &self.mapped_file_size_consume_queue.to_string(),
                "must be a positive multiple of 20",
            ));
        }
        if self.max_message_size == 0 {
            return Err(StoreError::config(
                "maxMessageSize",
                "0",
                "must be positive",
            ));
        }
        if self.max_hash_slot_num == 0 || self.max_index_num < 2 {
            return Err(StoreError::config(
                "maxIndexNum",
                &self.max_index_num.to_string(),
                "maxHashSlotNum must be positive and maxIndexNum at least 2",
            ));
        }
        let index_size = 40u64 + self.max_hash_slot_num as u64 * 4 + self.max_index_num as u64 * 20;
        if index_size > i32::MAX as u64 * 4 {
            return Err(StoreError::config(
                "maxIndexNum",
                &self.max_index_num.to_string(),
                "index file would exceed 8 GiB",
            ));
        }
        if self.transient_store_pool_enable && self.ha.replica && !self.ha.controller_mode {
            return Err(StoreError::config(
                "transientStorePoolEnable",
                "true",
                "needs a master: a SLAVE writes what it receives straight to its commitlog",
            ));
        }
        parse_delete_hours(&self.delete_when).ok_or_else(|| {
            StoreError::config("deleteWhen", &self.delete_when, "expected hours 00-23")
        })?;
        self.delay_levels()?;
        self.tier.validate()?;
        self.ha.validate()
    }

    /// `deleteWhen` as a list of hours.
    pub(crate) fn delete_hours(&self) -> Vec<u32> {
        parse_delete_hours(&self.delete_when).unwrap_or_else(|| vec![4])
    }
}

fn parse_delete_hours(text: &str) -> Option<Vec<u32>> {
    text.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|h| h.parse::<u32>().ok().filter(|h| *h < 24))
        .collect()
}

fn parse_delay_levels(text: &str) -> std::result::Result<Vec<Duration>, String> {
    text.split_whitespace()
        .map(|item| parse_delay(item).ok_or_else(|| item.to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_rocketmq_defaults() {
        let c = StoreConfig::default();
        assert_eq!(c.mapped_file_size_commit_log, 1 << 30);
        assert_eq!(c.mapped_file_size_consume_queue, 6_000_000);
        assert_eq!(c.flush_disk_type, FlushDiskType::AsyncFlush);
        assert_eq!(c.max_message_size, 4 << 20);
        assert_eq!(c.file_reserved_time, Duration::from_secs(72 * 3600));
        assert!(c.commit_log_dir().ends_with("store/commitlog"));
        let levels = c.delay_levels().unwrap();
        assert_eq!(levels.len(), 18);
        assert_eq!(levels[0], Duration::from_secs(1));
        assert_eq!(levels[17], Duration::from_secs(7200));
        c.validate().unwrap();
    }

    #[test]
    fn applies_and_prints_rocketmq_keys() {
        let mut c = StoreConfig::default();
        assert!(c.apply_property("flushDiskType", "SYNC_FLUSH").unwrap());
        assert!(c.apply_property("fileReservedTime", "48").unwrap());
        assert!(c
            .apply_property("mappedFileSizeCommitLog", "65536")
            .unwrap());
        assert!(c.apply_property("messageDelayLevel", "1s 2d").unwrap());
        assert!(c.apply_property("deleteWhen", "03;15").unwrap());
        assert!(!c.apply_property("listenPort", "10911").unwrap());
        assert!(c.apply_property("flushDiskType", "SOMETIMES").is_err());
        assert!(c.apply_property("maxMessageSize", "big").is_err());
        assert!(c.apply_property("messageDelayLevel", "1x").is_err());
        assert!(c.apply_property("deleteWhen", "25").is_err());
        assert!(c.apply_property("diskMaxUsedSpaceRatio", "101").is_err());
        assert_eq!(c.flush_disk_type, FlushDiskType::SyncFlush);
        assert_eq!(c.file_reserved_time, Duration::from_secs(48 * 3600));
        assert_eq!(c.delete_hours(), vec![3, 15]);
        assert_eq!(
            c.delay_levels().unwrap(),
            vec![Duration::from_secs(1), Duration::from_secs(2 * 86_400)]
        );
        let props = c.to_properties();
        let get = |k: &str| {
            props
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(get("flushDiskType").as_deref(), Some("SYNC_FLUSH"));
        assert_eq!(get("fileReservedTime").as_deref(), Some("48"));
        assert_eq!(get("flushIntervalCommitLog").as_deref(), Some("500"));
        // Every printed key is accepted back.
        let mut again = StoreConfig::default();
        for (k, v) in &props {
            assert!(again.apply_property(k, v).unwrap(), "{k}");
        }
        assert_eq!(again.mapped_file_size_commit_log, 65536);
    }

    #[test]
    fn validate_rejects_unusable_sizes() {
        let c = StoreConfig {
            mapped_file_size_consume_queue: 30,
            ..Default::default()
        };
        assert!(c.validate().is_err());
        let c = StoreConfig {
            mapped_file_size_commit_log: 100,
            ..Default::default()
        };
        assert!(c.validate().is_err());
    }
}
