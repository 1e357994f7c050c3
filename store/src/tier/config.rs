//! Tiered-storage keys: Apache's `tieredstore` `MessageStoreConfig` names and defaults
//! where Apache has them, Vostok's where it does not (docs/tiered-storage.md#keys).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Result, StoreError};

/// Apache's plug-in class names that turn the tier on.
const PLUG_INS: [&str; 2] = [
    "org.apache.rocketmq.tieredstore.TieredMessageStore",
    "org.apache.rocketmq.tieredstore.MessageStoreExtend",
];

/// Apache's keys that Vostok accepts (so an Apache `broker.conf` starts) and prints back
/// but does not act on: its tier is organised differently (docs/tiered-storage.md).
const ACCEPTED_ONLY: [&str; 19] = [
    "tieredMetadataServiceProvider",
    "tieredStoreConsumeQueueMaxSize",
    "tieredStoreIndexFileMaxHashSlotNum",
    "tieredStoreIndexFileMaxIndexNum",
    "tieredStoreIndexFileRollingIdleInterval",
    "commitLogRollingInterval",
    "commitLogRollingMinimumSize",
    "maxCommitJitter",
    "tieredStoreGroupCommit",
    "tieredStoreGroupCommitCount",
    "tieredStoreGroupCommitSize",
    "tieredStoreMaxGroupCommitCount",
    "tieredStoreMaxFallBehindSize",
    "readAheadCacheEnable",
    "readAheadMessageCountThreshold",
    "readAheadMessageSizeThreshold",
    "readAheadCacheExpireDuration",
    "readAheadCacheSizeThresholdRate",
    "tieredStoreMaxPendingLimit",
];

/// Where the tier keeps its objects (`tieredBackendServiceProvider`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TierProvider {
    /// Apache's default `...provider.MemoryFileSegment`: in memory, gone at restart.
    Memory,
    /// `...provider.PosixFileSegment` (or `posix`): a directory, `tieredStoreFilePath`.
    FileSystem,
    /// `s3` (Vostok): an S3-compatible object store.
    S3,
}

impl TierProvider {
    fn parse(v: &str) -> Option<Self> {
        match v {
            "org.apache.rocketmq.tieredstore.provider.MemoryFileSegment" | "memory" => {
                Some(TierProvider::Memory)
            }
            "org.apache.rocketmq.tieredstore.provider.PosixFileSegment" | "posix" => {
                Some(TierProvider::FileSystem)
            }
            "s3" => Some(TierProvider::S3),
            _ => None,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            TierProvider::Memory => "org.apache.rocketmq.tieredstore.provider.MemoryFileSegment",
            TierProvider::FileSystem => "org.apache.rocketmq.tieredstore.provider.PosixFileSegment",
            TierProvider::S3 => "s3",
        }
    }
}

/// Which reads the tier serves (`tieredStorageLevel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StorageLevel {
    /// 0: none.
    Disable,
    /// 1: offsets no longer on the local disk.
    NotInDisk,
    /// 2: Apache serves offsets out of the page cache from the tier; Vostok as 1.
    NotInMem,
    /// 3: Apache serves every read from the tier; Vostok as 1.
    Force,
}

impl StorageLevel {
    fn parse(v: &str) -> Option<Self> {
        match v.to_ascii_uppercase().as_str() {
            "DISABLE" | "0" => Some(StorageLevel::Disable),
            "NOT_IN_DISK" | "1" => Some(StorageLevel::NotInDisk),
            "NOT_IN_MEM" | "2" => Some(StorageLevel::NotInMem),
            "FORCE" | "3" => Some(StorageLevel::Force),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            StorageLevel::Disable => "DISABLE",
            StorageLevel::NotInDisk => "NOT_IN_DISK",
            StorageLevel::NotInMem => "NOT_IN_MEM",
            StorageLevel::Force => "FORCE",
        }
    }
}

/// The tier's configuration. Off unless `messageStorePlugIn` names Apache's tiered store.
#[derive(Clone)]
pub struct TierConfig {
    /// `messageStorePlugIn`: `""` (off) or Apache's tiered-store class.
    pub plug_in: String,
    /// `tieredBackendServiceProvider`.
    pub provider: TierProvider,
    /// `tieredStoreFilePath`: root directory of the file-system provider.
    pub file_path: PathBuf,
    /// `tieredStorageLevel`.
    pub storage_level: StorageLevel,
    /// `tieredStoreFileReservedTime` (hours in the properties file): age after which a
    /// tier segment is deleted.
    pub file_reserved_time: Duration,
    /// `tieredStoreCommitLogMaxSize`: accepted; Vostok's tier segments are the local
    /// commitlog files (`mappedFileSizeCommitLog`).
    pub commit_log_max_size: u64,
    /// `tieredStoreCrcCheckEnable`: verify body CRCs of records read from the tier.
    pub crc_check_enable: bool,
    /// `objectStoreEndpoint`: e.g. `http://127.0.0.1:9000`; empty = AWS (or `AWS_ENDPOINT`).
    pub endpoint: String,
    /// `objectStoreBucket` (or `AWS_BUCKET`).
    pub bucket: String,
    /// `objectStoreRegion` (Vostok; or `AWS_REGION` / `AWS_DEFAULT_REGION`).
    pub region: String,
    /// `objectStoreAccessKey` (or `AWS_ACCESS_KEY_ID`).
    pub access_key: String,
    /// `objectStoreSecretKey` (or `AWS_SECRET_ACCESS_KEY`); never printed or logged.
    pub secret_key: String,
    /// `tieredStorePathPrefix` (Vostok): prepended to every object name, so that
    /// brokers can share a bucket or directory (one prefix per broker).
    pub path_prefix: String,
    /// `tieredStoreReadCacheMaxSize` (Vostok): bytes of tier data kept in memory for reads.
    pub read_cache_max_size: u64,
    /// `tieredStoreReadBlockSize` (Vostok): the unit of a tier read; a segment no larger
    /// is read whole.
    pub read_block_size: u64,
    /// `tieredStoreUploadTimeout` (Vostok, ms): one object operation is abandoned after this.
    pub op_timeout: Duration,
    /// `tieredStoreReadTimeout` (Vostok, ms): a read from the tier is given up after
    /// this (the consumer asks again); a pull waits for it.
    pub read_timeout: Duration,
    /// Apache keys accepted and printed back, without effect.
    pub accepted_only: BTreeMap<String, String>,
}

impl std::fmt::Debug for TierConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret key stays out of every Debug print.
        f.debug_struct("TierConfig")
            .field("plug_in", &self.plug_in)
            .field("provider", &self.provider)
            .field("file_path", &self.file_path)
            .field("storage_level", &self.storage_level)
            .field("bucket", &self.bucket)
            .field("endpoint", &self.endpoint)
            .field("path_prefix", &self.path_prefix)
            .finish_non_exhaustive()
    }
}

impl Default for TierConfig {
    fn default() -> Self {
        TierConfig {
            plug_in: String::new(),
            provider: TierProvider::Memory,
            file_path: PathBuf::new(),
            storage_level: StorageLevel::NotInDisk,
            file_reserved_time: Duration::from_secs(72 * 3600),
            commit_log_max_size: 1024 * 1024 * 1024,
            crc_check_enable: false,
            endpoint: String::new(),
            bucket: String::new(),
            region: String::new(),
            access_key: String::new(),
            secret_key: String::new(),
            path_prefix: String::new(),
            read_cache_max_size: 256 * 1024 * 1024,
            read_block_size: 16 * 1024 * 1024,
            op_timeout: Duration::from_secs(60),
            read_timeout: Duration::from_secs(3),
            accepted_only: BTreeMap::new(),
        }
    }
}

fn num<T: std::str::FromStr>(key: &str, value: &str) -> Result<T> {
    value
        .parse()
        .map_err(|_| StoreError::config(key, value, "not a number"))
}

impl TierConfig {
    /// Whether `messageStorePlugIn` turns the tier on.
    pub fn enabled(&self) -> bool {
        !self.plug_in.is_empty()
    }

    /// As `StoreConfig::apply_property`: `Ok(false)` for a key that is not a tier key.
    pub fn apply_property(&mut self, key: &str, v: &str) -> Result<bool> {
        match key {
            "messageStorePlugIn" => {
                if !v.is_empty() && !PLUG_INS.contains(&v) {
                    return Err(StoreError::config(
                        key,
                        v,
                        format!(
                            "the only store plug-in is the tiered store ({})",
                            PLUG_INS[0]
                        ),
                    ));
                }
                self.plug_in = v.to_owned();
            }
            "tieredBackendServiceProvider" => {
                self.provider = TierProvider::parse(v).ok_or_else(|| {
                    StoreError::config(
                        key,
                        v,
                        "expected org.apache.rocketmq.tieredstore.provider.PosixFileSegment, \
                         ...MemoryFileSegment or s3",
                    )
                })?
            }
            "tieredStoreFilePath" => self.file_path = PathBuf::from(v),
            "tieredStorageLevel" => {
                self.storage_level = StorageLevel::parse(v).ok_or_else(|| {
                    StoreError::config(key, v, "expected DISABLE, NOT_IN_DISK, NOT_IN_MEM or FORCE")
                })?
            }
            "tieredStoreFileReservedTime" => {
                let hours: u64 = num(key, v)?;
                self.file_reserved_time = Duration::from_secs(hours.saturating_mul(3600));
            }
            "tieredStoreCommitLogMaxSize" => self.commit_log_max_size = num(key, v)?,
            "tieredStoreCrcCheckEnable" => {
                self.crc_check_enable = match v.to_ascii_lowercase().as_str() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(StoreError::config(key, v, "expected true or false")),
                }
            }
            "objectStoreEndpoint" => self.endpoint = v.to_owned(),
            "objectStoreBucket" => self.bucket = v.to_owned(),
            "objectStoreRegion" => self.region = v.to_owned(),
            "objectStoreAccessKey" => self.access_key = v.to_owned(),
            // `***` is how it is printed back: written back, it keeps the secret.
            "objectStoreSecretKey" if v == "***" => {}
            "objectStoreSecretKey" => self.secret_key = v.to_owned(),
            "tieredStorePathPrefix" => self.path_prefix = v.trim_matches('/').to_owned(),
            "tieredStoreReadCacheMaxSize" => self.read_cache_max_size = num(key, v)?,
            "tieredStoreReadBlockSize" => {
                self.read_block_size = num(key, v)?;
                if self.read_block_size < 4096 {
                    return Err(StoreError::config(key, v, "at least 4096 bytes"));
                }
            }
            "tieredStoreUploadTimeout" => self.op_timeout = Duration::from_millis(num(key, v)?),
            "tieredStoreReadTimeout" => self.read_timeout = Duration::from_millis(num(key, v)?),
            k if ACCEPTED_ONLY.contains(&k) => {
                self.accepted_only.insert(k.to_owned(), v.to_owned());
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The keys in RocketMQ's units; a set secret key prints as `***`.
    pub fn to_properties(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![
            ("messageStorePlugIn", self.plug_in.clone()),
            (
                "tieredBackendServiceProvider",
                self.provider.name().to_owned(),
            ),
            ("tieredStoreFilePath", self.file_path.display().to_string()),
            ("tieredStorageLevel", self.storage_level.name().to_owned()),
            (
                "tieredStoreFileReservedTime",
                (self.file_reserved_time.as_secs() / 3600).to_string(),
            ),
            (
                "tieredStoreCommitLogMaxSize",
                self.commit_log_max_size.to_string(),
            ),
            (
                "tieredStoreCrcCheckEnable",
                self.crc_check_enable.to_string(),
            ),
            ("objectStoreEndpoint", self.endpoint.clone()),
            ("objectStoreBucket", self.bucket.clone()),
            ("objectStoreRegion", self.region.clone()),
            ("objectStoreAccessKey", self.access_key.clone()),
            (
                "objectStoreSecretKey",
                if self.secret_key.is_empty() {
                    String::new()
                } else {
                    "***".to_owned()
                },
            ),
            ("tieredStorePathPrefix", self.path_prefix.clone()),
            (
                "tieredStoreReadCacheMaxSize",
                self.read_cache_max_size.to_string(),
            ),
            ("tieredStoreReadBlockSize", self.read_block_size.to_string()),
            (
                "tieredStoreUploadTimeout",
                self.op_timeout.as_millis().to_string(),
            ),
            (
                "tieredStoreReadTimeout",
                self.read_timeout.as_millis().to_string(),
            ),
        ];
        for key in ACCEPTED_ONLY {
            if let Some(v) = self.accepted_only.get(key) {
                out.push((key, v.clone()));
            }
        }
        out
    }

    /// Values the tier cannot work with, when it is on.
    pub fn validate(&self) -> Result<()> {
        if !self.enabled() {
            return Ok(());
        }
        match self.provider {
            TierProvider::FileSystem if self.file_path.as_os_str().is_empty() => {
                Err(StoreError::config(
                    "tieredStoreFilePath",
                    "",
                    "the file-system tier needs a directory",
                ))
            }
            TierProvider::S3
                if self.bucket.is_empty() && std::env::var_os("AWS_BUCKET").is_none() =>
            {
                Err(StoreError::config(
                    "objectStoreBucket",
                    "",
                    "the S3 tier needs a bucket (objectStoreBucket or AWS_BUCKET)",
                ))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_apache_tiered_broker_conf_is_accepted() {
        let mut c = TierConfig::default();
        assert!(!c.enabled());
        for (k, v) in [
            (
                "messageStorePlugIn",
                "org.apache.rocketmq.tieredstore.TieredMessageStore",
            ),
            (
                "tieredBackendServiceProvider",
                "org.apache.rocketmq.tieredstore.provider.PosixFileSegment",
            ),
            ("tieredStoreFilePath", "/data/tier"),
            ("tieredStorageLevel", "NOT_IN_DISK"),
            ("tieredStoreFileReservedTime", "720"),
            ("tieredStoreGroupCommitCount", "2048"),
        ] {
            assert!(c.apply_property(k, v).unwrap(), "{k}");
        }
        assert!(c.enabled());
        assert_eq!(c.provider, TierProvider::FileSystem);
        assert_eq!(c.file_reserved_time, Duration::from_secs(720 * 3600));
        c.validate().unwrap();
        assert!(!c.apply_property("tieredStoreNoSuchKey", "1").unwrap());
        assert!(c
            .apply_property("messageStorePlugIn", "com.example.Other")
            .is_err());
        assert!(c.apply_property("tieredStorageLevel", "2").is_ok());
        assert_eq!(c.storage_level, StorageLevel::NotInMem);
    }

    /// A `broker.conf` for Apache's tiered store, every key of its `MessageStoreConfig`.
    const APACHE_CONF: &str = "\
messageStorePlugIn=org.apache.rocketmq.tieredstore.TieredMessageStore
tieredBackendServiceProvider=org.apache.rocketmq.tieredstore.provider.PosixFileSegment
tieredMetadataServiceProvider=org.apache.rocketmq.tieredstore.metadata.DefaultMetadataStore
tieredStoreFilePath=/data/tier
tieredStorageLevel=NOT_IN_DISK
tieredStoreFileReservedTime=720
tieredStoreCommitLogMaxSize=1073741824
tieredStoreConsumeQueueMaxSize=104857600
tieredStoreIndexFileMaxHashSlotNum=5000000
tieredStoreIndexFileMaxIndexNum=20000000
tieredStoreIndexFileRollingIdleInterval=10800000
commitLogRollingInterval=24
commitLogRollingMinimumSize=134217728
maxCommitJitter=100
tieredStoreGroupCommit=true
tieredStoreGroupCommitCount=4096
tieredStoreGroupCommitSize=4194304
tieredStoreMaxGroupCommitCount=10000
tieredStoreMaxFallBehindSize=134217728
readAheadCacheEnable=true
readAheadMessageCountThreshold=4096
readAheadMessageSizeThreshold=16777216
readAheadCacheExpireDuration=15000
readAheadCacheSizeThresholdRate=0.3
tieredStoreMaxPendingLimit=10000
tieredStoreCrcCheckEnable=false
objectStoreEndpoint=
objectStoreBucket=
objectStoreAccessKey=
objectStoreSecretKey=
";

    #[test]
    fn every_key_of_apaches_tiered_store_is_accepted_and_unknown_ones_are_not() {
        let mut c = crate::StoreConfig::default();
        for (k, v) in vostok_remoting::support::properties::parse(APACHE_CONF) {
            assert!(c.apply_property(&k, &v).unwrap(), "{k}");
        }
        c.validate().unwrap();
        assert!(c.tier.enabled());
        assert_eq!(c.tier.provider, TierProvider::FileSystem);
        assert_eq!(c.tier.file_path, PathBuf::from("/data/tier"));
        assert_eq!(c.tier.storage_level, StorageLevel::NotInDisk);
        assert_eq!(c.tier.file_reserved_time, Duration::from_secs(720 * 3600));
        // Printed back, they read the same.
        let printed = c.to_properties();
        for (k, v) in vostok_remoting::support::properties::parse(APACHE_CONF) {
            assert!(
                printed.iter().any(|(pk, pv)| *pk == k && *pv == v),
                "{k}={v} not printed back"
            );
        }
        // A misspelt tier key is unknown to the store (the broker refuses it).
        for key in [
            "tieredStoreFileReserveTime",
            "tieredStorageLvl",
            "objectStoreBucketName",
        ] {
            assert!(!c.apply_property(key, "1").unwrap(), "{key}");
        }
        assert!(c.apply_property("tieredStorageLevel", "SOMETIMES").is_err());
        assert!(c
            .apply_property("tieredStoreFileReservedTime", "-1")
            .is_err());
    }

    #[test]
    fn the_secret_key_is_never_printed() {
        let mut c = TierConfig::default();
        c.apply_property("objectStoreSecretKey", "very-secret")
            .unwrap();
        let printed = format!("{:?} {:?}", c, c.to_properties());
        assert!(!printed.contains("very-secret"), "{printed}");
        let mut back = TierConfig::default();
        for (k, v) in c.to_properties() {
            if k != "objectStoreSecretKey" {
                assert!(back.apply_property(k, &v).unwrap(), "{k}");
            }
        }
    }

    #[test]
    fn a_tier_on_without_its_place_is_refused() {
        let mut c = TierConfig::default();
        c.apply_property("messageStorePlugIn", PLUG_INS[0]).unwrap();
        c.apply_property("tieredBackendServiceProvider", "posix")
            .unwrap();
        assert!(c.validate().is_err());
    }
}
