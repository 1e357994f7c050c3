//! `mqbroker`: parses flags, sets up logging and runs the broker library.

/// Message handling allocates many small, short-lived buffers; mimalloc serves them
/// several times faster than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    vostok_broker::cli::main()
}
