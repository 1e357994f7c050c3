//! The `mqcontroller` command line: runs one controller of a quorum.
//!
//! Settings: RocketMQ's defaults, then `-c <file>` (a `.properties` file with
//! `ControllerConfig`'s keys), then `-o KEY=VALUE` flags. `-p` prints the effective
//! settings and exits. When serving, prints one line with the bound address to
//! stdout (harnesses wait for it); logs go to stderr, filtered by `RUST_LOG`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use tracing::{info, warn};
use tracing_subscriber::EnvFilter;

use crate::{Controller, ControllerConfig, ControllerError};

#[derive(Debug, Parser)]
#[command(
    name = "mqcontroller",
    version,
    about = "Vostok controller (RocketMQ controller mode)"
)]
struct Args {
    /// Controller config properties file.
    #[arg(short = 'c', long = "configFile", value_name = "FILE")]
    config_file: Option<PathBuf>,
    /// Print all config items and exit.
    #[arg(short = 'p', long = "printConfigItem")]
    print_config: bool,
    /// Any config key, as in the properties file; repeatable.
    #[arg(short = 'o', long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

fn build_config(args: &Args) -> Result<ControllerConfig, String> {
    let mut config = ControllerConfig::default();
    if let Some(file) = &args.config_file {
        for key in config
            .load_properties_file(file)
            .map_err(|e| e.to_string())?
        {
            warn!(key, file = %file.display(), "unknown or unsupported config key ignored");
        }
    }
    for item in &args.set {
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| format!("--set expects KEY=VALUE, got {item:?}"))?;
        if !config
            .apply_property(key.trim(), value)
            .map_err(|e| e.to_string())?
        {
            return Err(format!("unknown config key {key:?}"));
        }
    }
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
        .map_err(|source| ControllerError::Bind { addr: bind, source })
}

async fn serve(config: ControllerConfig) -> Result<(), ControllerError> {
    let listener = bind(&config).await?;
    let controller = Controller::start(config, listener).await?;
    let mut stdout = std::io::stdout().lock();
    // Harnesses wait for this line; a closed stdout must not stop the controller.
    let _ = writeln!(
        stdout,
        "The Controller boot success, address {}",
        controller.local_addr()
    );
    let _ = stdout.flush();
    drop(stdout);
    let signal = async {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let mut term = signal(SignalKind::terminate())?;
            let mut int = signal(SignalKind::interrupt())?;
            tokio::select! {
                _ = term.recv() => Ok::<_, std::io::Error>("SIGTERM"),
                _ = int.recv() => Ok("SIGINT"),
            }
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c().await?;
            Ok("Ctrl-C")
        }
    };
    match signal.await {
        Ok(signal) => info!(signal, "shutting down"),
        Err(e) => warn!(error = %e, "cannot listen for signals; shutting down"),
    }
    controller.shutdown().await;
    Ok(())
}

/// Runs `mqcontroller` until SIGINT or SIGTERM.
pub fn main() -> ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let config = match build_config(&args) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("mqcontroller: {e}");
            return ExitCode::from(2);
        }
    };
    if args.print_config {
        for (k, v) in config.to_properties() {
            println!("{k}={v}");
        }
        return ExitCode::SUCCESS;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("mqcontroller")
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mqcontroller: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mqcontroller: {e}");
            ExitCode::FAILURE
        }
    }
}
