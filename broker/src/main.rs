//! `mqbroker`: parses flags, sets up logging and runs the broker library.

fn main() -> std::process::ExitCode {
    vostok_broker::cli::main()
}
