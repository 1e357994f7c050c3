//! `mqadmin`: parses flags, sets up logging and the runtime, runs one sub-command and
//! prints its output, or the error on one line with exit code 1.

use std::process::ExitCode;

use clap::Parser;
use vostok_tools::admin::args::Cli;

fn main() -> ExitCode {
    let cli = Cli::parse();
    vostok_remoting::support::process::quiet_on_closed_stdout();
    vostok_remoting::support::process::init_logging_at("warn");
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mqadmin: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let timeout = cli.timeout();
    let output = cli.output;
    let result = runtime.block_on(async move {
        let admin = vostok_tools::admin::connect(&cli.namesrv, timeout, &cli.security)?;
        let result = vostok_tools::admin::run(&admin, cli.command, output).await;
        admin.shutdown().await;
        result
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match result {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            // Broker remarks may span lines (Java appends a FAQ link); keep one line.
            let message = e.to_string().replace(['\r', '\n'], " ");
            eprintln!("mqadmin: {message}");
            ExitCode::FAILURE
        }
    }
}
