//! `mqbroker`'s command line, built as part of this crate so that `cargo test` always
//! runs the current broker code in its cross-process tests.

/// `mqbroker`'s allocator: memory tests measure what ships.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    vostok_broker::cli::main()
}
