//! `mqcontroller`: runs the controller's command line from the library.

fn main() -> std::process::ExitCode {
    vostok_controller::cli::main()
}
