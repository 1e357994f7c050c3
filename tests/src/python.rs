//! Running the scripts of `tests/python/` and `tests/node/` with the real Apache clients
//! they import: the official 5.x Python client (`rocketmq-python-client`, gRPC), the C++
//! client (`librocketmq.so` in the `rocketmq` package, remoting) and the official 5.x
//! Node.js client (`rocketmq-client-nodejs`, gRPC).
//!
//! `.ci/run` installs each into a virtual environment of its own (both packages are
//! named `rocketmq` inside) and names their interpreters in `VOSTOK_PYTHON` and
//! `VOSTOK_PYTHON_CPP`; without them the well-known paths `target/pyenv/{v5,cpp}` are
//! tried. A test whose client is not installed prints why and passes without running,
//! so `cargo test --workspace` on a machine without them still passes.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Which Apache client a script needs.
#[derive(Debug, Clone, Copy)]
pub enum PyClient {
    /// `rocketmq-python-client` 5.x over gRPC.
    V5,
    /// `rocketmq` 0.4.4: the C++ client over remoting.
    Cpp,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the workspace")
        .to_path_buf()
}

/// The interpreter of `client`'s virtual environment, or `None` (and a line saying
/// why on stderr) when it is not installed.
pub fn interpreter(client: PyClient) -> Option<PathBuf> {
    let (var, dir, module) = match client {
        PyClient::V5 => ("VOSTOK_PYTHON", "v5", "rocketmq.v5"),
        PyClient::Cpp => ("VOSTOK_PYTHON_CPP", "cpp", "rocketmq.client"),
    };
    let path = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        workspace()
            .join("target/pyenv")
            .join(dir)
            .join("bin/python")
    });
    let importable = path.exists()
        && Command::new(&path)
            .args(["-c", &format!("import {module}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if !importable {
        eprintln!(
            "SKIPPED: the {client:?} Python client is not installed ({} cannot import {module}); \
             .ci/run installs it, or set {var}",
            path.display()
        );
        return None;
    }
    Some(path)
}

fn script(name: &str) -> PathBuf {
    workspace().join("tests/python").join(name)
}

/// The JSON of the `RESULT` line of a script's output.
fn parse_result(stdout: &str) -> Option<serde_json::Value> {
    stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("RESULT "))
        .and_then(|j| serde_json::from_str(j).ok())
}

/// Runs `tests/python/<name> args...` with `python` and returns its `RESULT`; panics
/// with the script's output when it fails, prints no result, or outlives `timeout`.
pub fn run(python: &Path, name: &str, args: &[&str], timeout: Duration) -> serde_json::Value {
    let mut command = Command::new(python);
    command
        .arg(script(name))
        .args(args)
        .env("PYTHONUNBUFFERED", "1");
    run_command(command, &format!("{name} {args:?}"), timeout)
}

/// Runs a prepared command that prints a `RESULT` line (see [`run`]).
pub fn run_command(mut command: Command, label: &str, timeout: Duration) -> serde_json::Value {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {label}: {e}"));
    let out = drain(child.stdout.take().expect("piped stdout"));
    let err = drain(child.stderr.take().expect("piped stderr"));
    let deadline = std::time::Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the script") {
            break Some(status);
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = out.recv().unwrap_or_default();
    let stderr = err.recv().unwrap_or_default();
    let report = format!("{label}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}");
    match status {
        None => panic!("{label} did not finish within {timeout:?}\n{report}"),
        Some(s) if !s.success() => panic!("{label} failed ({s})\n{report}"),
        Some(_) => parse_result(&stdout).unwrap_or_else(|| panic!("no RESULT line\n{report}")),
    }
}

/// Node.js and the directory holding the official 5.x Node.js client
/// (`rocketmq-client-nodejs`, installed by `.ci/run` under `target/nodeclient`, or
/// `VOSTOK_NODE_MODULES`), or `None` with a line saying why.
pub fn node_client() -> Option<(PathBuf, PathBuf)> {
    let modules = std::env::var_os("VOSTOK_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/nodeclient/node_modules"));
    let installed = modules.join("rocketmq-client-nodejs/package.json").exists()
        && Command::new("node")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if !installed {
        eprintln!(
            "SKIPPED: node or the rocketmq-client-nodejs package is not installed (looked in {}); \
             .ci/run installs it, or set VOSTOK_NODE_MODULES",
            modules.display()
        );
        return None;
    }
    Some((PathBuf::from("node"), modules))
}

/// Runs `tests/node/<name> args...` with the Node.js client (see [`run`]).
pub fn run_node(
    node: &(PathBuf, PathBuf),
    name: &str,
    args: &[&str],
    timeout: Duration,
) -> serde_json::Value {
    let mut command = Command::new(&node.0);
    command
        .arg(workspace().join("tests/node").join(name))
        .args(args)
        .env("NODE_PATH", &node.1);
    run_command(command, &format!("{name} {args:?}"), timeout)
}

fn drain(mut from: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = from.read_to_string(&mut text);
        let _ = tx.send(text);
    });
    rx
}

/// A script kept running until [`Held::finish`]: it prints `READY` once set up and
/// waits for its stdin to close.
pub struct Held {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Held {
    /// Starts the script and waits (at most `timeout`) for its `READY` line.
    pub fn start(python: &Path, name: &str, args: &[&str], timeout: Duration) -> Held {
        let mut child = Command::new(python)
            .arg(script(name))
            .args(args)
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.trim() == "READY" {
                    let _ = tx.send(());
                }
            }
        });
        let stdin = child.stdin.take();
        let mut held = Held { child, stdin };
        if rx.recv_timeout(timeout).is_err() {
            held.kill();
            panic!("{name} {args:?} was not READY within {timeout:?}");
        }
        held
    }

    /// Closes its stdin and waits for it to exit (killing it after `timeout`).
    pub fn finish(mut self, timeout: Duration) -> bool {
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + timeout;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.kill();
        false
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_result_line_is_read() {
        let out = "x\nRESULT {\"a\": 1}\nmore\nRESULT {\"a\": 2}\n";
        assert_eq!(parse_result(out).unwrap()["a"], 2);
        assert!(parse_result("nothing").is_none());
    }
}
