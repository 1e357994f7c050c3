//! Tiered-storage keys: Apache's `tieredstore` `MessageStoreConfig` names and defaults
//! where Apache has them, Vostok's where it does not (docs/tiered-storage.md#keys).

use std::path::PathBuf;
use std::time::Duration;

use vostok_remoting::config_key;
use vostok_remoting::support::keys::{
    num, AtLeast, Codec, Flag, Key, Millis, Num, Path, Table, Text,
};

use crate::error::{Result, StoreError};

/// Apache's plug-in class names that turn the tier on.
const PLUG_INS: [&str; 2] = [
    "org.apache.rocketmq.tieredstore.TieredMessageStore",
    "org.apache.rocketmq.tieredstore.MessageStoreExtend",
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
    /// `tieredStoreReadTimeout` (Vostok, ms): how long a request (a pull, a query)
    /// may wait for the tier, one deadline for every object it reads; past it the
    /// pull answers what it read by then, or "not found" (the consumer asks again).
    pub read_timeout: Duration,
    /// `tieredStoreReadConcurrency` (Vostok): object-store reads at once, and the
    /// threads that serve reads of cold data.
    pub read_concurrency: usize,
    /// `tieredStoreReadBandwidth` (Vostok): bytes a second read from the object store;
    /// 0: no bound.
    pub read_bandwidth: u64,
    /// `tieredStoreMaxPendingLimit`: reads of cold data waiting for a reader thread
    /// before new ones are refused (answered "not found" at the same offset).
    pub max_pending_limit: usize,
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
            read_concurrency: 4,
            read_bandwidth: 64 * 1024 * 1024,
            max_pending_limit: 10_000,
        }
    }
}

impl TierConfig {
    /// Whether `messageStorePlugIn` turns the tier on.
    pub fn enabled(&self) -> bool {
        !self.plug_in.is_empty()
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

/// The tier's keys: Apache's `tieredstore` names and units, Vostok's `objectStore*`.
pub static KEYS: Table<TierConfig> = Table {
    keys: &[
        Key::new(
            "messageStorePlugIn",
            "`org.apache.rocketmq.tieredstore.TieredMessageStore` (or `...MessageStoreExtend`) turns the tier on; any other plug-in is refused",
            |c: &mut TierConfig, v| {
                let v = v.trim();
                if !v.is_empty() && !PLUG_INS.contains(&v) {
                    return Err(format!(
                        "the only store plug-in is the tiered store ({}), got {v:?}",
                        PLUG_INS[0]
                    ));
                }
                c.plug_in = v.to_owned();
                Ok(())
            },
            |c| c.plug_in.clone(),
        ),
        Key::new(
            "tieredBackendServiceProvider",
            "where the tier keeps its objects: Apache's `...provider.PosixFileSegment` (a directory) or `...MemoryFileSegment`, or `s3`",
            |c: &mut TierConfig, v| {
                c.provider = TierProvider::parse(v.trim()).ok_or_else(|| {
                    format!(
                        "expected org.apache.rocketmq.tieredstore.provider.PosixFileSegment, \
                         ...MemoryFileSegment or s3, got {v:?}"
                    )
                })?;
                Ok(())
            },
            |c| c.provider.name().to_owned(),
        ),
        config_key!("tieredStoreFilePath", file_path: Path, "the file-system tier's directory"),
        Key::new(
            "tieredStorageLevel",
            "which reads the tier serves: `DISABLE`, `NOT_IN_DISK`, `NOT_IN_MEM`, `FORCE` (or 0-3)",
            |c: &mut TierConfig, v| {
                c.storage_level = StorageLevel::parse(v.trim()).ok_or_else(|| {
                    format!("expected DISABLE, NOT_IN_DISK, NOT_IN_MEM or FORCE, got {v:?}")
                })?;
                Ok(())
            },
            |c| c.storage_level.name().to_owned(),
        ),
        config_key!("tieredStoreFileReservedTime", file_reserved_time: Hours, "hours a tier segment is kept, counted from its newest message"),
        config_key!("tieredStoreCommitLogMaxSize", commit_log_max_size: Num, "bytes of one tier segment"),
        config_key!("tieredStoreCrcCheckEnable", crc_check_enable: Flag, "check each record's CRC when the tier serves it"),
        config_key!("objectStoreEndpoint", endpoint: Text, "the S3-compatible store's URL (`http://` allowed); empty: `AWS_ENDPOINT` or AWS"),
        config_key!("objectStoreBucket", bucket: Text, "the bucket, which must exist; empty: `AWS_BUCKET`"),
        config_key!("objectStoreRegion", region: Text, "the S3 region; empty: `AWS_REGION`"),
        config_key!("objectStoreAccessKey", access_key: Text, "the access key; empty: `AWS_ACCESS_KEY_ID`"),
        Key::new(
            "objectStoreSecretKey",
            "the secret key; empty: `AWS_SECRET_ACCESS_KEY`; printed as `***`",
            |c: &mut TierConfig, v| {
                // `***` is how it is printed back: written back, it keeps the secret.
                if v.trim() != "***" {
                    c.secret_key = v.trim().to_owned();
                }
                Ok(())
            },
            |c| {
                if c.secret_key.is_empty() {
                    String::new()
                } else {
                    "***".to_owned()
                }
            },
        ),
        Key::new(
            "tieredStorePathPrefix",
            "a prefix of every object's name",
            |c: &mut TierConfig, v| {
                c.path_prefix = v.trim().trim_matches('/').to_owned();
                Ok(())
            },
            |c| c.path_prefix.clone(),
        ),
        config_key!("tieredStoreReadCacheMaxSize", read_cache_max_size: Num, "bytes of tier data kept in memory for reads"),
        config_key!("tieredStoreReadBlockSize", read_block_size: AtLeast(4096u64), "the unit of a tier read (a segment no larger is read whole), at least 4096"),
        config_key!("tieredStoreUploadTimeout", op_timeout: Millis, "ms one upload, delete or page of the tier's listing may take before it is abandoned and retried"),
        config_key!("tieredStoreReadTimeout", read_timeout: Millis, "ms a request may wait for the tier, one deadline for all the objects it reads; past it a pull answers what it read, or \"not found\", and the consumer asks again"),
        config_key!("tieredStoreReadConcurrency", read_concurrency: AtLeast(1usize), "object-store reads at once, and threads serving reads of cold data, at least 1"),
        config_key!("tieredStoreReadBandwidth", read_bandwidth: Num, "bytes a second read from the object store; 0: no bound"),
        config_key!("tieredStoreMaxPendingLimit", max_pending_limit: Num, "reads of cold data waiting for a reader thread; past it a pull answers \"not found\" and the consumer asks again"),
        Key::ignored("tieredMetadataServiceProvider"),
        Key::ignored("tieredStoreConsumeQueueMaxSize"),
        Key::ignored("tieredStoreIndexFileMaxHashSlotNum"),
        Key::ignored("tieredStoreIndexFileMaxIndexNum"),
        Key::ignored("tieredStoreIndexFileRollingIdleInterval"),
        Key::ignored("commitLogRollingInterval"),
        Key::ignored("commitLogRollingMinimumSize"),
        Key::ignored("maxCommitJitter"),
        Key::ignored("tieredStoreGroupCommit"),
        Key::ignored("tieredStoreGroupCommitCount"),
        Key::ignored("tieredStoreGroupCommitSize"),
        Key::ignored("tieredStoreMaxGroupCommitCount"),
        Key::ignored("tieredStoreMaxFallBehindSize"),
        Key::ignored("readAheadCacheEnable"),
        Key::ignored("readAheadMessageCountThreshold"),
        Key::ignored("readAheadMessageSizeThreshold"),
        Key::ignored("readAheadCacheExpireDuration"),
        Key::ignored("readAheadCacheSizeThresholdRate"),
    ],
    nested: &[],
};

#[cfg(test)]
mod tests {
    use super::*;
    use vostok_remoting::support::keys::Kind;

    /// The table as the store applies and prints it.
    trait Keyed {
        fn apply_property(&mut self, key: &str, v: &str) -> std::result::Result<bool, String>;
        fn to_properties(&self) -> Vec<(String, String)>;
    }

    impl Keyed for TierConfig {
        fn apply_property(&mut self, key: &str, v: &str) -> std::result::Result<bool, String> {
            KEYS.apply(self, key, v)
                .map_or(Ok(false), |r| r.map(|()| true))
        }
        fn to_properties(&self) -> Vec<(String, String)> {
            KEYS.print(self)
        }
    }

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
        // Printed back, the keys that act read the same; the others are accepted only.
        let printed = c.to_properties();
        let ignored: Vec<&str> = KEYS
            .describe()
            .into_iter()
            .filter(|k| k.kind == Kind::Ignored)
            .map(|k| k.name)
            .collect();
        assert_eq!(ignored.len(), 18);
        for (k, v) in vostok_remoting::support::properties::parse(APACHE_CONF) {
            if ignored.contains(&k.as_str()) {
                continue;
            }
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
                assert!(back.apply_property(&k, &v).unwrap(), "{k}");
            }
        }
    }

    #[test]
    fn every_key_read_is_printed_once() {
        vostok_remoting::support::keys::check_printed_keys(
            &KEYS,
            &TierConfig::default(),
            TierConfig::default(),
        )
        .unwrap();
    }

    #[test]
    fn a_tier_on_without_its_place_is_refused() {
        let mut c = TierConfig::default();
        c.apply_property("messageStorePlugIn", PLUG_INS[0]).unwrap();
        c.apply_property("tieredBackendServiceProvider", "posix")
            .unwrap();
        assert!(c.validate().is_err());
    }

    #[test]
    fn read_sizes_below_their_floor_are_refused() {
        let mut c = TierConfig::default();
        let e = c
            .apply_property("tieredStoreReadBlockSize", "4095")
            .unwrap_err();
        assert!(e.contains("at least 4096"), "{e}");
        c.apply_property("tieredStoreReadBlockSize", "4096")
            .unwrap();
        assert_eq!(c.read_block_size, 4096);
        let e = c
            .apply_property("tieredStoreReadConcurrency", "0")
            .unwrap_err();
        assert!(e.contains("at least 1"), "{e}");
    }
}
