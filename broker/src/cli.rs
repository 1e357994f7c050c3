//! The `mqbroker` command line: RocketMQ's flags (`-c`, `-n`, `-p`, `-m`) plus `-o
//! key=value` for any `broker.conf` key.
//!
//! Without a name server address (no `-n`, no `namesrvAddr`, no `NAMESRV_ADDR`) the
//! broker runs standalone with an embedded name server on `embeddedNamesrvPort` (9876).

use std::collections::HashMap;
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
    #[arg(
        short = 'c',
        long = "configFile",
        visible_alias = "config",
        value_name = "FILE"
    )]
    config_file: Option<PathBuf>,
    /// Name server address list, `host:port;host:port` (`,` also separates).
    #[arg(short = 'n', long = "namesrvAddr", value_name = "ADDRS")]
    namesrv_addr: Option<String>,
    /// Print the effective configuration and exit.
    #[arg(short = 'p', long = "printConfigItem")]
    print_config: bool,
    /// Print the most important configuration items and exit.
    #[arg(short = 'm', long = "printImportantConfig")]
    print_important: bool,
    /// Set any config key, e.g. `-o listenPort=10921` (repeatable; overrides the file).
    #[arg(
        short = 'o',
        long = "option",
        visible_alias = "set",
        value_name = "KEY=VALUE"
    )]
    options: Vec<String>,
}

/// Where each key set away from its default came from, for error messages.
#[derive(Default)]
struct Origins(HashMap<String, String>);

impl Origins {
    fn set(&mut self, key: &str, origin: String) {
        self.0.insert(key.to_owned(), origin);
    }

    /// `reason` with where the key's value came from and, for `brokerName`, a value
    /// to pass instead.
    fn explain(&self, error: BrokerError, config: &BrokerConfig) -> BrokerError {
        let BrokerError::Config { key, reason } = error else {
            return error;
        };
        let origin = match self.0.get(&key) {
            Some(origin) => origin.clone(),
            None if key == "brokerName" => format!(
                "the default, derived from the host name {:?}",
                crate::config::host_name().unwrap_or_default()
            ),
            None if key == "namesrvAddr" => "the NAMESRV_ADDR environment variable".to_owned(),
            None => "the default".to_owned(),
        };
        let mut reason = format!("{reason} (set by {origin})");
        if key == "brokerName" {
            let fixed = crate::config::broker_name_from_host(&config.broker_name.replace('.', "-"));
            let fixed = if fixed.is_empty() {
                "broker-a".to_owned()
            } else {
                fixed
            };
            reason.push_str(&format!(
                "; pass a valid name instead, e.g. -o brokerName={fixed}"
            ));
        }
        BrokerError::Config { key, reason }
    }
}

fn load_config(args: &Args) -> Result<BrokerConfig, BrokerError> {
    let mut config = BrokerConfig::default();
    let mut origins = Origins::default();
    if let Some(path) = &args.config_file {
        let pairs = vostok_remoting::support::properties::load(path).map_err(|source| {
            BrokerError::ConfigFile {
                path: path.clone(),
                source,
            }
        })?;
        for (k, v) in pairs {
            origins.set(&k, format!("the config file {}", path.display()));
            config
                .apply_property(&k, &v)
                .map_err(|e| origins.explain(e, &config))?;
        }
    }
    for option in &args.options {
        let (k, v) = option.split_once('=').ok_or_else(|| BrokerError::Config {
            key: option.clone(),
            reason: "expected KEY=VALUE".to_owned(),
        })?;
        let k = k.trim();
        origins.set(k, format!("-o {k}={v}"));
        config
            .apply_property(k, v)
            .map_err(|e| origins.explain(e, &config))?;
    }
    if let Some(addr) = &args.namesrv_addr {
        origins.set("namesrvAddr", format!("-n {addr}"));
        config.apply_property("namesrvAddr", addr)?;
    }
    config
        .apply_port_offset()
        .map_err(|e| origins.explain(e, &config))?;
    config.resolve_addresses();
    config.validate().map_err(|e| origins.explain(e, &config))?;
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
        let important = crate::config::KEYS.important_names();
        let mut text = String::new();
        for (k, v) in config.to_properties() {
            if args.print_config || important.contains(&k.as_str()) {
                text.push_str(&format!("{k}={v}\n"));
            }
        }
        return process::print_stdout("mqbroker", &text);
    }
    process::init_logging();
    process::run("mqbroker", async move {
        process::log_configuration(
            &config.to_properties(),
            &BrokerConfig::default().to_properties(),
        );
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
