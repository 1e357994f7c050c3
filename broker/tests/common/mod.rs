//! What the broker's in-process tests share.

use std::path::PathBuf;

use vostok_broker::BrokerConfig;

/// A standalone broker named `name` for one test: loopback addresses, every port
/// (remoting, gRPC, the embedded name server's) picked by the system, its store under
/// `store`, 16 MiB commitlog files. Tests add their own keys before starting it.
pub fn broker_config(name: &str, store: PathBuf) -> BrokerConfig {
    let mut config = BrokerConfig::loopback(name, store);
    config.store.mapped_file_size_commit_log = 16 * 1024 * 1024;
    config
}
