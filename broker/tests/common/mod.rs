//! What the broker's in-process tests share.

use std::path::PathBuf;

use vostok_broker::BrokerConfig;

/// A standalone broker named `name` for one test: loopback addresses, every port
/// (remoting, gRPC, the embedded name server's) picked by the system, its store under
/// `store`, 16 MiB commitlog files. Tests add their own keys before starting it.
pub fn broker_config(name: &str, store: PathBuf) -> BrokerConfig {
    let mut config = BrokerConfig {
        broker_name: name.into(),
        broker_ip1: "127.0.0.1".into(),
        broker_ip2: "127.0.0.1".into(),
        listen_port: 0,
        fast_listen_enable: false,
        namesrv_addr: None,
        embedded_namesrv_port: 0,
        ..BrokerConfig::default()
    };
    config.grpc.grpc_server_port = 0;
    config.store.store_path_root_dir = store;
    config.store.mapped_file_size_commit_log = 16 * 1024 * 1024;
    config
}
