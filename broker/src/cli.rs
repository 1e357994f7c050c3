//! The `mqbroker` command line: RocketMQ's flags (`-c`, `-n`, `-p`, `-m`) plus `-o
//! key=value` for any `broker.conf` key.
//!
//! Without a name server address (no `-n`, no `namesrvAddr`, no `NAMESRV_ADDR`) the
//! broker runs standalone with an embedded name server on `embeddedNamesrvPort` (9876).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use vostok_remoting::support::process;

use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::Broker;

#[derive(Parser, Debug)]
#[command(
    name = "mqbroker",
    version,
    about = "Vostok broker: a RocketMQ-compatible message broker",
    long_about = "Serves RocketMQ's broker protocol. Without a name server address it runs \
                  standalone with an embedded name server on 127.0.0.1:9876."
)]
struct Args {
    /// Broker config file (RocketMQ broker.conf keys).
    #[arg(short = 'c', long = "configFile", value_name = "FILE")]
    config_file: Option<PathBuf>,
    /// Name server address list, `host:port;host:port`.
    #[arg(short = 'n', long = "namesrvAddr", value_name = "ADDRS")]
    namesrv_addr: Option<String>,
    /// Print the effective configuration and exit.
    #[arg(short = 'p', long = "printConfigItem")]
    print_config: bool,
    /// Print the most important configuration items and exit.
    #[arg(short = 'm', long = "printImportantConfig")]
    print_important: bool,
    /// Set any config key, e.g. `-o listenPort=10921` (repeatable; overrides the file).
    #[arg(short = 'o', long = "option", value_name = "KEY=VALUE")]
    options: Vec<String>,
}

const IMPORTANT: &[&str] = &[
    "brokerClusterName",
    "brokerName",
    "brokerId",
    "brokerIP1",
    "listenPort",
    "namesrvAddr",
    "brokerRole",
    "flushDiskType",
    "storePathRootDir",
    "autoCreateTopicEnable",
];

fn load_config(args: &Args) -> Result<BrokerConfig, BrokerError> {
    let mut config = BrokerConfig::default();
    if let Some(path) = &args.config_file {
        let pairs = vostok_remoting::support::properties::load(path).map_err(|source| {
            BrokerError::ConfigFile {
                path: path.clone(),
                source,
            }
        })?;
        for (k, v) in pairs {
            config.apply_property(&k, &v)?;
        }
    }
    for option in &args.options {
        let (k, v) = option.split_once('=').ok_or_else(|| BrokerError::Config {
            key: option.clone(),
            reason: "expected KEY=VALUE".to_owned(),
        })?;
        config.apply_property(k.trim(), v)?;
    }
    if let Some(addr) = &args.namesrv_addr {
        config.apply_property("namesrvAddr", addr)?;
    }
    config.resolve_addresses();
    config.validate()?;
    Ok(config)
}

/// Runs `mqbroker` until SIGINT or SIGTERM.
pub fn main() -> ExitCode {
    let args = Args::parse();
    let mut config = match load_config(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mqbroker: {e}");
            return ExitCode::from(2);
        }
    };
    // `mqbroker` alone (standalone mode) serves the web console unless told not to.
    if config.ops.console_enable.is_none() {
        config.ops.console_enable = Some(config.is_standalone());
    }
    if args.print_config || args.print_important {
        for (k, v) in config.to_properties() {
            if args.print_config || IMPORTANT.contains(&k.as_str()) {
                println!("{k}={v}");
            }
        }
        return ExitCode::SUCCESS;
    }
    process::init_logging();
    process::run("mqbroker", async move {
        tracing::info!(config = ?config.to_properties(), "effective configuration");
        let handle = Broker::start(config)
            .await
            .inspect_err(|e| tracing::error!(error = %e, "broker failed to start"))?;
        let mut lines = Vec::new();
        if let Some(grpc) = handle.grpc_addr() {
            // Before the boot line, so whoever waits for that one has seen it.
            lines.push(format!(
                "gRPC endpoint {grpc} (MessagingService, TLS and plaintext)"
            ));
        }
        if let Some(metrics) = handle.metrics_addr() {
            lines.push(format!("Prometheus metrics on http://{metrics}/metrics"));
        }
        if let Some(console) = handle.console_addr() {
            lines.push(format!("Web console on http://{console}/"));
        }
        // The line RocketMQ prints; scripts and tests wait for it.
        lines.push(format!(
            "The broker[{}, {}] boot success. serializeType=JSON and name server is {}",
            handle.broker().config().broker_name,
            handle.addr(),
            handle.namesrv_addr()
        ));
        process::announce(lines);
        process::shutdown_signal().await;
        handle.shutdown().await;
        Ok::<(), BrokerError>(())
    })
}
