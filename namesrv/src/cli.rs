//! The `mqnamesrv` command line: runs a Vostok name server.
//!
//! Settings: RocketMQ's defaults, then `-c <file>` (a `.properties` file with
//! RocketMQ's keys; an unknown key is an error), then flags. `-p` prints the effective settings and exits. When
//! serving, prints one line with the bound address to stdout (harnesses wait for
//! it); logs go to stderr, filtered by `RUST_LOG` (default `info`). SIGINT or SIGTERM
//! stops it gracefully.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use vostok_remoting::support::keys::unknown_key;
use vostok_remoting::support::process;

use crate::{NameServer, NamesrvConfig, NamesrvError};

#[derive(Debug, Parser)]
#[command(
    name = "mqnamesrv",
    version,
    about = "Vostok name server (RocketMQ-compatible)"
)]
struct Args {
    /// Name server config properties file.
    #[arg(
        short = 'c',
        long = "configFile",
        visible_alias = "config",
        value_name = "FILE"
    )]
    config_file: Option<PathBuf>,
    /// Print all config items and exit.
    #[arg(short = 'p', long = "printConfigItem")]
    print_config: bool,
    /// Accepted for compatibility with RocketMQ's launcher; a name server needs no
    /// name server address.
    #[arg(short = 'n', long = "namesrvAddr", value_name = "ADDR", hide = true)]
    namesrv_addr: Option<String>,
    /// Port to listen on (same as `-o listenPort=PORT`); 0 picks a free one.
    #[arg(long = "listen-port", value_name = "PORT", hide = true)]
    listen_port: Option<u16>,
    /// Address to bind (same as `-o bindAddress=ADDR`).
    #[arg(long = "bind-address", value_name = "ADDR", hide = true)]
    bind_address: Option<String>,
    /// Where the KV store lives (same as `-o kvConfigPath=FILE`).
    #[arg(long = "kv-config-path", value_name = "FILE", hide = true)]
    kv_config_path: Option<PathBuf>,
    /// Set any config key, e.g. `-o listenPort=9877` (repeatable; overrides the file).
    #[arg(
        short = 'o',
        long = "option",
        visible_alias = "set",
        value_name = "KEY=VALUE"
    )]
    set: Vec<String>,
}

fn build_config(args: &Args) -> Result<NamesrvConfig, String> {
    let mut config = NamesrvConfig::default();
    if let Some(file) = &args.config_file {
        let unknown = config
            .load_properties_file(file)
            .map_err(|e| e.to_string())?;
        if let Some(key) = unknown.first() {
            let reason = unknown_key(key, crate::config::KEYS.names());
            return Err(format!("{reason} in {}", file.display()));
        }
    }
    process::apply_settings(&args.set, &crate::config::KEYS.names(), |k, v| {
        config.apply_property(k, v)
    })?;
    if let Some(port) = args.listen_port {
        config.listen_port = port;
    }
    if let Some(addr) = &args.bind_address {
        config.bind_address = addr.clone();
    }
    if let Some(path) = &args.kv_config_path {
        config.kv_config_path = path.clone();
    }
    config.validate().map_err(|e| e.to_string())?;
    Ok(config)
}

async fn serve(config: NamesrvConfig) -> Result<(), NamesrvError> {
    let listener =
        tokio::net::TcpListener::bind((config.bind_address.as_str(), config.listen_port))
            .await
            .map_err(|source| NamesrvError::Bind {
                addr: format!("{}:{}", config.bind_address, config.listen_port),
                key: "listenPort",
                source,
            })?;
    let namesrv = NameServer::start(config, listener).await?;
    let metrics = namesrv
        .metrics_addr()
        .map(|m| format!("Prometheus metrics on http://{m}/metrics"));
    process::announce(metrics.into_iter().chain([format!(
        "The Name Server boot success. serializeType=JSON, address {}",
        namesrv.local_addr()
    )]));
    process::shutdown_signal().await;
    namesrv.shutdown().await;
    Ok(())
}

/// Runs `mqnamesrv` until SIGINT or SIGTERM.
pub fn main() -> ExitCode {
    let args = Args::parse();
    process::init_logging();
    let config = match build_config(&args) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("mqnamesrv: {e}");
            return ExitCode::from(2);
        }
    };
    if args.print_config {
        return process::print_stdout("mqnamesrv", &config.to_properties_text());
    }
    process::run("mqnamesrv", serve(config))
}
