//! Store configuration: RocketMQ's `MessageStoreConfig` keys and defaults.
//!
//! Fields are snake_case; [`StoreConfig::apply_property`] takes RocketMQ's camelCase
//! `.properties` keys with RocketMQ's units (milliseconds, hours for
//! `fileReservedTime`, percent for ratios), and [`StoreConfig::to_properties`] prints
//! them back the same way.

use std::path::PathBuf;
use std::time::Duration;

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

fn parse_num<T: std::str::FromStr>(key: &str, value: &str) -> Result<T> {
    value
        .trim()
        .parse()
        .map_err(|_| StoreError::config(key, value, "not a number"))
}

fn parse_bool(key: &str, value: &str) -> Result<bool> {
    match value.trim() {
        v if v.eq_ignore_ascii_case("true") => Ok(true),
        v if v.eq_ignore_ascii_case("false") => Ok(false),
        _ => Err(StoreError::config(key, value, "expected true or false")),
    }
}

fn parse_ratio(key: &str, value: &str) -> Result<u32> {
    let ratio: u32 = parse_num(key, value)?;
    if ratio > 100 {
        return Err(StoreError::config(
            key,
            value,
            "a percentage is at most 100",
        ));
    }
    Ok(ratio)
}

fn millis(key: &str, value: &str) -> Result<Duration> {
    Ok(Duration::from_millis(parse_num(key, value)?))
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
        let v = value.trim();
        match key {
            "storePathRootDir" => self.store_path_root_dir = PathBuf::from(v),
            "storePathCommitLog" => {
                self.store_path_commit_log = (!v.is_empty()).then(|| PathBuf::from(v))
            }
            "mappedFileSizeCommitLog" => self.mapped_file_size_commit_log = parse_num(key, v)?,
            "mappedFileSizeConsumeQueue" => {
                self.mapped_file_size_consume_queue = parse_num(key, v)?
            }
            "flushDiskType" => {
                self.flush_disk_type = match v {
                    "ASYNC_FLUSH" => FlushDiskType::AsyncFlush,
                    "SYNC_FLUSH" => FlushDiskType::SyncFlush,
                    _ => {
                        return Err(StoreError::config(
                            key,
                            value,
                            "expected ASYNC_FLUSH or SYNC_FLUSH",
                        ))
                    }
                }
            }
            "flushIntervalCommitLog" => self.flush_interval_commit_log = millis(key, v)?,
            "flushCommitLogLeastPages" => self.flush_commit_log_least_pages = parse_num(key, v)?,
            "flushCommitLogThoroughInterval" => {
                self.flush_commit_log_thorough_interval = millis(key, v)?
            }
            "syncFlushTimeout" => self.sync_flush_timeout = millis(key, v)?,
            "flushIntervalConsumeQueue" => self.flush_interval_consume_queue = millis(key, v)?,
            "maxMessageSize" => self.max_message_size = parse_num(key, v)?,
            "fileReservedTime" => {
                let hours: u64 = parse_num(key, v)?;
                self.file_reserved_time = Duration::from_secs(hours.saturating_mul(3600));
            }
            "deleteWhen" => {
                parse_delete_hours(v).ok_or_else(|| {
                    StoreError::config(key, value, "expected hours 00-23 separated by ';'")
                })?;
                self.delete_when = v.to_owned();
            }
            "diskMaxUsedSpaceRatio" => self.disk_max_used_space_ratio = parse_ratio(key, v)?,
            "diskSpaceCleanForciblyRatio" => {
                self.disk_space_clean_forcibly_ratio = parse_ratio(key, v)?
            }
            "diskSpaceWarningLevelRatio" => {
                self.disk_space_warning_level_ratio = parse_ratio(key, v)?
            }
            "cleanFileForciblyEnable" => self.clean_file_forcibly_enable = parse_bool(key, v)?,
            "cleanResourceInterval" => self.clean_resource_interval = millis(key, v)?,
            "messageIndexEnable" => self.message_index_enable = parse_bool(key, v)?,
            "maxHashSlotNum" => self.max_hash_slot_num = parse_num(key, v)?,
            "maxIndexNum" => self.max_index_num = parse_num(key, v)?,
            "maxMsgsNumBatch" => self.max_msgs_num_batch = parse_num(key, v)?,
            "checkCRCOnRecover" => self.check_crc_on_recover = parse_bool(key, v)?,
            "recoveryProgressInterval" => self.recovery_progress_interval = millis(key, v)?,
            "messageDelayLevel" => {
                parse_delay_levels(v).map_err(|item| {
                    StoreError::config(key, value, format!("bad delay level {item:?}"))
                })?;
                self.message_delay_level = v.to_owned();
            }
            "maxTransferBytesOnMessageInMemory" => {
                self.max_transfer_bytes_on_message_in_memory = parse_num(key, v)?
            }
            "maxTransferCountOnMessageInMemory" => {
                self.max_transfer_count_on_message_in_memory = parse_num(key, v)?
            }
            "maxTransferBytesOnMessageInDisk" => {
                self.max_transfer_bytes_on_message_in_disk = parse_num(key, v)?
            }
            "maxTransferCountOnMessageInDisk" => {
                self.max_transfer_count_on_message_in_disk = parse_num(key, v)?
            }
            "accessMessageInMemoryMaxRatio" => {
                self.access_message_in_memory_max_ratio = parse_ratio(key, v)?
            }
            "defaultQueryMaxNum" => self.default_query_max_num = parse_num(key, v)?,
            "osPageCacheBusyTimeOutMills" => self.os_page_cache_busy_timeout = millis(key, v)?,
            _ if self.tier.apply_property(key, v)? => {}
            _ => return self.ha.apply_property(key, v),
        }
        Ok(true)
    }

    /// The effective configuration as RocketMQ key/value pairs, in RocketMQ's units.
    pub fn to_properties(&self) -> Vec<(String, String)> {
        let ms = |d: Duration| d.as_millis().to_string();
        let pairs: Vec<(&str, String)> = vec![
            (
                "storePathRootDir",
                self.store_path_root_dir.display().to_string(),
            ),
            (
                "storePathCommitLog",
                self.commit_log_dir().display().to_string(),
            ),
            (
                "mappedFileSizeCommitLog",
                self.mapped_file_size_commit_log.to_string(),
            ),
            (
                "mappedFileSizeConsumeQueue",
                self.mapped_file_size_consume_queue.to_string(),
            ),
            ("flushDiskType", self.flush_disk_type.as_str().to_owned()),
            ("flushIntervalCommitLog", ms(self.flush_interval_commit_log)),
            (
                "flushCommitLogLeastPages",
                self.flush_commit_log_least_pages.to_string(),
            ),
            (
                "flushCommitLogThoroughInterval",
                ms(self.flush_commit_log_thorough_interval),
            ),
            ("syncFlushTimeout", ms(self.sync_flush_timeout)),
            (
                "flushIntervalConsumeQueue",
                ms(self.flush_interval_consume_queue),
            ),
            ("maxMessageSize", self.max_message_size.to_string()),
            (
                "fileReservedTime",
                (self.file_reserved_time.as_secs() / 3600).to_string(),
            ),
            ("deleteWhen", self.delete_when.clone()),
            (
                "diskMaxUsedSpaceRatio",
                self.disk_max_used_space_ratio.to_string(),
            ),
            (
                "diskSpaceCleanForciblyRatio",
                self.disk_space_clean_forcibly_ratio.to_string(),
            ),
            (
                "diskSpaceWarningLevelRatio",
                self.disk_space_warning_level_ratio.to_string(),
            ),
            (
                "cleanFileForciblyEnable",
                self.clean_file_forcibly_enable.to_string(),
            ),
            ("cleanResourceInterval", ms(self.clean_resource_interval)),
            ("messageIndexEnable", self.message_index_enable.to_string()),
            ("maxHashSlotNum", self.max_hash_slot_num.to_string()),
            ("maxIndexNum", self.max_index_num.to_string()),
            ("maxMsgsNumBatch", self.max_msgs_num_batch.to_string()),
            ("checkCRCOnRecover", self.check_crc_on_recover.to_string()),
            (
                "recoveryProgressInterval",
                ms(self.recovery_progress_interval),
            ),
            ("messageDelayLevel", self.message_delay_level.clone()),
            (
                "maxTransferBytesOnMessageInMemory",
                self.max_transfer_bytes_on_message_in_memory.to_string(),
            ),
            (
                "maxTransferCountOnMessageInMemory",
                self.max_transfer_count_on_message_in_memory.to_string(),
            ),
            (
                "maxTransferBytesOnMessageInDisk",
                self.max_transfer_bytes_on_message_in_disk.to_string(),
            ),
            (
                "maxTransferCountOnMessageInDisk",
                self.max_transfer_count_on_message_in_disk.to_string(),
            ),
            (
                "accessMessageInMemoryMaxRatio",
                self.access_message_in_memory_max_ratio.to_string(),
            ),
            ("defaultQueryMaxNum", self.default_query_max_num.to_string()),
            (
                "osPageCacheBusyTimeOutMills",
                ms(self.os_page_cache_busy_timeout),
            ),
        ];
        pairs
            .into_iter()
            .chain(self.ha.to_properties())
            .chain(self.tier.to_properties())
            .map(|(k, v)| (k.to_owned(), v))
            .collect()
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
