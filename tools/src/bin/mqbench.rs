//! `mqbench`: parses flags, sets up logging and the runtime, runs one command, prints
//! the summary and writes `--json`.

use std::process::ExitCode;

// The SDK allocates per message; with the system allocator that alone can make the
// client the bottleneck of a row. The broker uses the same allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::Parser;
use vostok_tools::bench::args::{Cli, Command};
use vostok_tools::bench::{run, BenchError};

fn main() -> ExitCode {
    let cli = Cli::parse();
    vostok_remoting::support::process::quiet_on_closed_stdout();
    vostok_remoting::support::process::init_logging_at("warn");
    let common = match &cli.command {
        Command::Produce(c) => &c.common,
        Command::Consume(c) => &c.common,
        Command::E2e(c) => &c.common,
    };
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = common.threads {
        builder.worker_threads(n.max(1));
    }
    let runtime = match builder.enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mqbench: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let json_path = common.json.clone();
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Produce(c) => run::produce(c).await,
            Command::Consume(c) => run::consume(c).await,
            Command::E2e(c) => run::e2e(c).await,
        }
    });
    let outcome = result.and_then(|summary| {
        println!("{}", summary.text());
        if let Some(path) = json_path {
            let text =
                serde_json::to_string_pretty(&summary.to_json()).expect("a JSON value serialises");
            std::fs::write(&path, text + "\n")
                .map_err(|source| BenchError::Write { path, source })?;
        }
        Ok(())
    });
    // Background SDK tasks (timers, connections) must not hold the exit.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mqbench: {e}");
            ExitCode::FAILURE
        }
    }
}
