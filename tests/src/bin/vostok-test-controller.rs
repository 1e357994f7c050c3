//! `mqcontroller`'s command line, built as part of this crate so that its flag tests
//! run the current controller code.

fn main() -> std::process::ExitCode {
    vostok_controller::cli::main()
}
