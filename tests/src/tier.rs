//! Brokers with a tiered store on a local directory, as the tiered-storage tests start
//! them, and what those tests read off them.

use std::path::Path;

use crate::{Broker, BrokerOptions};

/// A broker whose tier is the directory `tier`, with 64 KiB commitlog files so that a
/// few hundred messages seal several, flushed every 50 ms.
pub fn tiered(tier: &Path) -> BrokerOptions {
    BrokerOptions::default()
        .set(
            "messageStorePlugIn",
            "org.apache.rocketmq.tieredstore.TieredMessageStore",
        )
        .set("tieredBackendServiceProvider", "posix")
        .set("tieredStoreFilePath", tier.display())
        .set("mappedFileSizeCommitLog", 64 * 1024)
        .set("flushCommitLogThoroughInterval", 50)
}

/// `options` with local files deleted as soon as retention may: no reserved time,
/// every hour a deletion hour, a check every 200 ms.
pub fn expiring(options: BrokerOptions) -> BrokerOptions {
    options
        .set("fileReservedTime", 0)
        .set("deleteWhen", every_hour())
        .set("cleanResourceInterval", 200)
}

/// `deleteWhen` naming every hour of the day.
pub fn every_hour() -> String {
    (0..24)
        .map(|h| format!("{h:02}"))
        .collect::<Vec<_>>()
        .join(";")
}

/// Names of the broker's local commitlog files, sorted.
pub fn local_files(broker: &Broker) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(broker.store_dir.join("commitlog"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The commitlog offset an offset message id names (its last 16 hex digits).
pub fn phy_of_id(offset_msg_id: &str) -> i64 {
    i64::from_str_radix(&offset_msg_id[offset_msg_id.len() - 16..], 16).expect("offset id")
}
