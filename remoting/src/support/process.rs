//! What every Vostok server binary (`mqbroker`, `mqnamesrv`, `mqcontroller`) does
//! around its service: logs on stderr, a multi-thread runtime, boot lines on stdout,
//! and a graceful stop on SIGINT or SIGTERM.

use std::fmt::Display;
use std::future::Future;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use tracing_subscriber::EnvFilter;

/// Logs to stderr, filtered by `RUST_LOG` (default `info`).
pub fn init_logging() {
    init_logging_at("info");
}

/// Logs to stderr, filtered by `RUST_LOG` (default `level`), coloured only when
/// stderr is a terminal: a log file or a pipe gets plain text.
pub fn init_logging_at(level: &str) {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level)),
        )
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .init();
}

/// Writes `text` to stdout for a command that prints and exits (`-p`). A reader that
/// went away (`mqbroker -p | head`) ends the output quietly with success; another
/// write error is reported as `program: error` with exit code 1.
pub fn print_stdout(program: &str, text: &str) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{program}: cannot write to stdout: {e}");
            ExitCode::FAILURE
        }
    }
}

/// For command-line tools (`mqadmin`, `mqbench`) that print as they go: a closed
/// stdout ends the process quietly, as it does a Unix filter, instead of a panic in
/// `println!`. Sockets are unaffected: Rust writes to them with `MSG_NOSIGNAL`.
pub fn quiet_on_closed_stdout() {
    #[cfg(unix)]
    // SAFETY: restores the default disposition of SIGPIPE, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The settings of `current` whose value differs from `defaults` (or that `defaults`
/// lacks), in `current`'s order: what the start-up log prints at INFO.
pub fn changed_settings(
    current: &[(String, String)],
    defaults: &[(String, String)],
) -> Vec<(String, String)> {
    let defaults: std::collections::HashMap<&str, &str> = defaults
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    current
        .iter()
        .filter(|(k, v)| defaults.get(k.as_str()) != Some(&v.as_str()))
        .cloned()
        .collect()
}

/// Logs the effective configuration: at INFO the keys that differ from their
/// defaults, at DEBUG every key.
pub fn log_configuration(current: &[(String, String)], defaults: &[(String, String)]) {
    let changed = changed_settings(current, defaults)
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ");
    tracing::info!(changed = %changed, "configuration (keys that differ from the defaults; RUST_LOG=debug lists every key)");
    tracing::debug!(config = ?current, "effective configuration");
}

/// Runs `serve` to its end on a multi-thread runtime whose threads are named after
/// `program`. A runtime that cannot start, or an error `serve` returns, is printed as
/// `program: error` with exit code 1.
pub fn run<E: Display>(program: &str, serve: impl Future<Output = Result<(), E>>) -> ExitCode {
    no_huge_pages();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name(program)
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("{program}: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{program}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Keeps transparent huge pages out of the process's anonymous memory, also where the
/// system uses them for every large mapping (`enabled=always`): a thread's heap that
/// touches one byte of a 2 MiB page would have it resident whole, and the memory
/// ceiling (`maxMemoryBytes`, docs/limits.md#the-ceiling) bounds resident anonymous
/// memory. Best effort; the commitlog's file mappings do not use them in any case.
fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(2) with PR_SET_THP_DISABLE takes integers only; on a kernel without
    // it the call fails and nothing changes.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Prints the boot lines scripts and harnesses wait for. A closed stdout is ignored:
/// nobody reading them must not stop a server.
pub fn announce<I: IntoIterator<Item = String>>(lines: I) {
    let mut stdout = std::io::stdout().lock();
    for line in lines {
        let _ = writeln!(stdout, "{line}");
    }
    let _ = stdout.flush();
}

/// Waits for SIGINT or SIGTERM (Ctrl-C off Unix) and logs which one came. Where no
/// signal handler can be installed it says so and returns at once: the caller then
/// shuts down rather than running unstoppable.
pub async fn shutdown_signal() {
    match wait_for_signal().await {
        Ok(signal) => tracing::info!(signal, "shutting down"),
        Err(e) => tracing::warn!(error = %e, "cannot listen for signals; shutting down"),
    }
}

async fn wait_for_signal() -> std::io::Result<&'static str> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        tokio::select! {
            _ = term.recv() => Ok("SIGTERM"),
            _ = int.recv() => Ok("SIGINT"),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await?;
        Ok("Ctrl-C")
    }
}

/// Applies `-o KEY=VALUE` settings in order through `apply`, which answers whether it
/// knows the key: an unknown key (named with the nearest of `known`), or an item
/// without `=`, is an error.
pub fn apply_settings<E: Display>(
    settings: &[String],
    known: &[&'static str],
    mut apply: impl FnMut(&str, &str) -> Result<bool, E>,
) -> Result<(), String> {
    for item in settings {
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| format!("-o expects KEY=VALUE, got {item:?}"))?;
        let key = key.trim();
        if !apply(key, value).map_err(|e| e.to_string())? {
            return Err(crate::support::keys::unknown_key(
                key,
                known.iter().copied(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_settings_keeps_only_what_differs() {
        let pair = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        let defaults = [pair("a", "1"), pair("b", "2")];
        let current = [pair("a", "1"), pair("b", "3"), pair("c", "")];
        assert_eq!(
            changed_settings(&current, &defaults),
            [pair("b", "3"), pair("c", "")]
        );
    }

    #[test]
    fn settings_apply_in_order_and_unknown_keys_are_errors() {
        let mut seen = Vec::new();
        let known = |k: &str, v: &str, seen: &mut Vec<(String, String)>| {
            seen.push((k.to_owned(), v.to_owned()));
            Ok::<_, String>(k != "nope")
        };
        apply_settings(&["a=1".into(), " b =x=y".into()], &["a", "b"], |k, v| {
            known(k, v, &mut seen)
        })
        .expect("known keys");
        assert_eq!(seen, [("a".into(), "1".into()), ("b".into(), "x=y".into())]);
        let e =
            apply_settings(&["nope=1".into()], &["a"], |k, v| known(k, v, &mut seen)).unwrap_err();
        assert_eq!(e, "unknown key 'nope'");
        let e = apply_settings(&["listenport=1".into()], &["a", "listenPort"], |_, _| {
            Ok::<_, String>(false)
        });
        assert_eq!(
            e.unwrap_err(),
            "unknown key 'listenport' (did you mean 'listenPort'?)"
        );
        let e =
            apply_settings(&["novalue".into()], &["a"], |k, v| known(k, v, &mut seen)).unwrap_err();
        assert!(e.contains("KEY=VALUE"), "{e}");
        let e = apply_settings(&["a=1".into()], &["a"], |_, _| Err::<bool, _>("bad value"))
            .unwrap_err();
        assert_eq!(e, "bad value");
    }
}
