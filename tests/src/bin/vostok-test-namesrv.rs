//! `mqnamesrv`'s command line, built as part of this crate so that `cargo test` always
//! runs the current name server code in its cross-process tests.

fn main() -> std::process::ExitCode {
    vostok_namesrv::cli::main()
}
