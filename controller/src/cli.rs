//! The `mqcontroller` command line: runs one controller of a quorum.
//!
//! Settings: RocketMQ's defaults, then `-c <file>` (a `.properties` file with
//! `ControllerConfig`'s keys; an unknown key is an error), then `-o KEY=VALUE` flags. `-p` prints the effective
//! settings and exits. When serving, prints one line with the bound address to
//! stdout (harnesses wait for it); logs go to stderr, filtered by `RUST_LOG`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use vostok_remoting::support::keys::unknown_key;
use vostok_remoting::support::process;

use crate::{Controller, ControllerConfig, ControllerError};

#[derive(Debug, Parser)]
#[command(
    name = "mqcontroller",
    version,
    about = "Vostok controller (RocketMQ controller mode)"
)]
struct Args {
    /// Controller config properties file.
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
    /// Accepted for compatibility with RocketMQ's launcher; a controller needs no
    /// name server address.
    #[arg(short = 'n', long = "namesrvAddr", value_name = "ADDR", hide = true)]
    namesrv_addr: Option<String>,
    /// Set any config key, e.g. `-o controllerDLegerSelfId=n0` (repeatable; overrides the file).
    #[arg(
        short = 'o',
        long = "option",
        visible_alias = "set",
        value_name = "KEY=VALUE"
    )]
    set: Vec<String>,
}

fn build_config(args: &Args) -> Result<ControllerConfig, String> {
    let mut config = ControllerConfig::default();
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
    config.validate().map_err(|e| e.to_string())?;
    Ok(config)
}

/// Binds this controller's peer port on `bindAddress`.
pub async fn bind(config: &ControllerConfig) -> Result<tokio::net::TcpListener, ControllerError> {
    let addr = config.self_address().unwrap_or_default();
    let port = addr.rsplit_once(':').map_or("", |(_, p)| p);
    let bind = format!("{}:{port}", config.bind_address);
    tokio::net::TcpListener::bind(&bind)
        .await
        .map_err(|source| ControllerError::Bind {
            addr: bind,
            key: "controllerDLegerPeers",
            source,
        })
}

async fn serve(config: ControllerConfig) -> Result<(), ControllerError> {
    let listener = bind(&config).await?;
    let controller = Controller::start(config, listener).await?;
    process::announce([format!(
        "The Controller boot success, address {}",
        controller.local_addr()
    )]);
    process::shutdown_signal().await;
    controller.shutdown().await;
    Ok(())
}

/// Runs `mqcontroller` until SIGINT or SIGTERM.
pub fn main() -> ExitCode {
    let args = Args::parse();
    process::init_logging();
    let config = match build_config(&args) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("mqcontroller: {e}");
            return ExitCode::from(2);
        }
    };
    if args.print_config {
        let text: String = config
            .to_properties()
            .into_iter()
            .map(|(k, v)| format!("{k}={v}\n"))
            .collect();
        return process::print_stdout("mqcontroller", &text);
    }
    process::run("mqcontroller", serve(config))
}
