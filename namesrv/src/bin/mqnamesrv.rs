//! `mqnamesrv`: runs the name server's command line from the library.

fn main() -> std::process::ExitCode {
    vostok_namesrv::cli::main()
}
