//! Every shell command README.md and docs/ tell a user to run, run as written.
//!
//! Each ` ```sh ` block runs in order, file by file, as one `bash -e` script in a
//! working directory laid out as a clone after `cargo build --release`:
//! `target/release/` holds this build's `mqbroker`, `mqnamesrv` and `mqadmin`, `deploy/`
//! the repository's files, and a `cargo` first on `PATH` maps `cargo run --release` (the
//! standalone broker) and `cargo run --release -p vostok-client --example NAME` to their
//! builds, and `cargo build` to nothing. A command that serves until stopped (a server, the
//! push consumer, the local cluster) is started in the background and the block goes on
//! once it says it is ready; a block that starts servers first stops those of the blocks
//! before it. Every other command must exit with 0.
//!
//! A block that cannot run here says why in an HTML comment on the line before its
//! fence: `<!-- not run: REASON -->`; the reason names the test that covers it, if any.
//! Placeholders (addresses of other hosts, message ids) belong in ` ```text ` blocks.
//!
//! The blocks run in a network namespace of their own, where the documented default
//! ports are free; without root the test says so and passes without running them.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag};
use vostok_tests::netns::Network;

/// How long one block may run (the transaction example waits for a check-back).
const BLOCK_LIMIT: Duration = Duration::from_secs(180);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// The pages a user reads, README first.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![repo().join("README.md")];
    let mut docs: Vec<_> = fs::read_dir(repo().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("a docs entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// A shell block of a page: its first line, its text, and the reason it is not run.
#[derive(Debug)]
struct Block {
    page: String,
    line: usize,
    script: String,
    not_run: Option<String>,
}

fn shell_blocks(page: &Path) -> Vec<Block> {
    let text = fs::read_to_string(page).expect("a page");
    let name = page
        .strip_prefix(repo())
        .unwrap_or(page)
        .display()
        .to_string();
    let mut blocks = Vec::new();
    let mut current: Option<Block> = None;
    for (event, range) in Parser::new(&text).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(lang)))
                if matches!(&*lang, "sh" | "bash" | "shell" | "console") =>
            {
                let before = &text[..range.start];
                let previous = before.trim_end().lines().last().unwrap_or("").trim();
                let not_run = previous
                    .strip_prefix("<!-- not run:")
                    .and_then(|r| r.strip_suffix("-->"))
                    .map(|r| r.trim().to_owned());
                current = Some(Block {
                    page: name.clone(),
                    line: before.lines().count() + 1,
                    script: String::new(),
                    not_run,
                });
            }
            Event::Text(t) => {
                if let Some(block) = current.as_mut() {
                    block.script.push_str(&t);
                }
            }
            Event::End(pulldown_cmark::TagEnd::CodeBlock) => {
                if let Some(block) = current.take() {
                    blocks.push(block);
                }
            }
            _ => {}
        }
    }
    blocks
}

/// Whether `script` starts something that serves until stopped.
fn starts_servers(script: &str) -> bool {
    script.lines().any(|line| {
        let line = line.split(" #").next().unwrap_or("").trim();
        let words: Vec<&str> = line.split_whitespace().collect();
        let prints_only = words.iter().any(|w| matches!(*w, "-p" | "-h" | "--help"));
        line == "cargo run --release"
            || line.contains("local-cluster.sh")
            || words.first().is_some_and(|w| {
                (w.ends_with("/mqbroker") || w.ends_with("/mqnamesrv")) && !prints_only
            })
    })
}

/// The working directory of the walkthrough: a clone's layout over this build.
struct Workdir {
    root: tempfile::TempDir,
}

impl Workdir {
    fn new() -> Workdir {
        let root = tempfile::tempdir().expect("a temp dir");
        let dir = root.path();
        for sub in ["target/release", "bin", "home", "rocketmq", "walk"] {
            fs::create_dir_all(dir.join(sub)).expect("a work dir");
        }
        // deploy/ as in the repository; scripts are copied so that their own
        // `$(dirname "$0")/..` is this directory.
        fs::create_dir(dir.join("deploy")).expect("deploy/");
        for entry in fs::read_dir(repo().join("deploy")).expect("deploy/") {
            let path = entry.expect("a deploy entry").path();
            let target = dir.join("deploy").join(path.file_name().expect("a name"));
            if path.extension().is_some_and(|e| e == "sh") {
                fs::copy(&path, &target).expect("a deploy script");
            } else {
                symlink(&path, &target).expect("a deploy link");
            }
        }
        let programs: BTreeMap<&str, &str> = [
            ("mqbroker", env!("CARGO_BIN_EXE_vostok-test-broker")),
            ("mqnamesrv", env!("CARGO_BIN_EXE_vostok-test-namesrv")),
            ("mqadmin", env!("CARGO_BIN_EXE_vostok-test-mqadmin")),
            ("producer", env!("CARGO_BIN_EXE_vostok-example-producer")),
            (
                "push_consumer",
                env!("CARGO_BIN_EXE_vostok-example-push_consumer"),
            ),
            ("lite_pull", env!("CARGO_BIN_EXE_vostok-example-lite_pull")),
            (
                "transaction",
                env!("CARGO_BIN_EXE_vostok-example-transaction"),
            ),
        ]
        .into();
        let walk = dir.join("walk");
        let script = |path: &Path, text: String| {
            fs::write(path, text).expect("a script");
            fs::set_permissions(path, fs::Permissions::from_mode(0o755)).expect("chmod");
        };
        // `background PATTERN PROGRAM ARGS...`: starts the program, records its pid,
        // and returns once its output matches PATTERN (or fails when it exits first).
        script(
            &dir.join("bin/walk-background"),
            format!(
                r#"#!/usr/bin/env bash
pattern=$1; shift
out=$(mktemp -p {walk} out.XXXXXX)
"$@" > "$out" 2> "$out.err" &
pid=$!
echo "$pid" >> {walk}/pids
for _ in $(seq 1 600); do
  if grep -q -- "$pattern" "$out"; then cat "$out"; exit 0; fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "walkthrough: $* exited before it was ready" >&2; cat "$out" "$out.err" >&2; exit 1
  fi
  sleep 0.05
done
echo "walkthrough: $* not ready after 30 s" >&2; cat "$out" "$out.err" >&2; exit 1
"#,
                walk = walk.display()
            ),
        );
        for server in ["mqbroker", "mqnamesrv"] {
            script(
                &dir.join("target/release").join(server),
                format!(
                    r#"#!/usr/bin/env bash
for arg in "$@"; do
  case "$arg" in -p|--printConfigItem|-h|--help|-V|--version) exec {real} "$@";; esac
done
exec walk-background "boot success" {real} "$@"
"#,
                    real = programs[server]
                ),
            );
        }
        symlink(programs["mqadmin"], dir.join("target/release/mqadmin")).expect("mqadmin");
        // The local cluster serves until Ctrl-C: started like a server.
        let cluster = dir.join("deploy/local-cluster.sh");
        fs::rename(&cluster, dir.join("deploy/.local-cluster.sh")).expect("local-cluster.sh");
        script(
            &cluster,
            "#!/usr/bin/env bash\nexec walk-background \"cluster up\" \"$(dirname \"$0\")/.local-cluster.sh\" \"$@\"\n"
                .to_owned(),
        );
        let examples: String = ["producer", "lite_pull", "transaction"]
            .iter()
            .map(|e| format!("    {e}) exec {} \"$@\";;\n", programs[e]))
            .collect();
        script(
            &dir.join("bin/cargo"),
            format!(
                r#"#!/usr/bin/env bash
# The walkthrough's cargo: the commands the docs name, mapped to this build.
case "$1" in
  build) exit 0;;
  run)
    shift
    [ "$1" = --release ] && shift
    if [ $# -eq 0 ]; then exec {root}/target/release/mqbroker; fi
    if [ "$1 $2 $3" = "-p vostok-client --example" ]; then
      example=$4; shift 4; [ "$1" = -- ] && shift
      case "$example" in
{examples}    push_consumer) exec walk-background . {push} "$@";;
      esac
    fi;;
esac
echo "walkthrough: cargo $* is not one the docs may name" >&2
exit 1
"#,
                root = dir.display(),
                push = programs["push_consumer"],
            ),
        );
        Workdir { root }
    }

    fn path(&self) -> &Path {
        self.root.path()
    }

    /// Stops what earlier blocks started: SIGTERM, then SIGKILL after 10 s.
    fn stop_servers(&self) {
        let pids_file = self.path().join("walk/pids");
        let pids: Vec<i32> = fs::read_to_string(&pids_file)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        for pid in &pids {
            // SAFETY: kill(2) with a pid this walkthrough started.
            unsafe { libc::kill(*pid, libc::SIGTERM) };
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        for pid in &pids {
            // SAFETY: signal 0 only checks that the process exists.
            while unsafe { libc::kill(*pid, 0) } == 0 {
                if Instant::now() > deadline {
                    // SAFETY: as above.
                    unsafe { libc::kill(*pid, libc::SIGKILL) };
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let _ = fs::remove_file(pids_file);
    }
}

impl Drop for Workdir {
    fn drop(&mut self) {
        self.stop_servers();
    }
}

/// Runs `block` with bash in the walkthrough's namespace; its output, or why it failed.
fn run(block: &Block, work: &Workdir, host: &vostok_tests::netns::Host) -> Result<String, String> {
    let dir = work.path();
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = host.command("bash");
    command
        .args(["-e", "-o", "pipefail", "-c", &block.script])
        .current_dir(dir)
        .env("PATH", path)
        .env("HOME", dir.join("home"))
        .env("ROCKETMQ_HOME", dir.join("rocketmq"))
        .env_remove("NAMESRV_ADDR")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let child = command.spawn().map_err(|e| format!("bash: {e}"))?;
    let pid = child.id() as i32;
    let started = Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let output = match rx.recv_timeout(BLOCK_LIMIT) {
        Ok(output) => output.map_err(|e| format!("bash: {e}"))?,
        Err(_) => {
            // SAFETY: kill(2) of the block's own process group.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            return Err(format!("still running after {BLOCK_LIMIT:?}"));
        }
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if output.status.success() {
        Ok(format!("{text}({:.1} s)", started.elapsed().as_secs_f64()))
    } else {
        Err(format!("{}\n{text}", output.status))
    }
}

#[test]
fn every_shell_block_of_the_readme_and_docs_runs_as_written() {
    let blocks: Vec<Block> = pages().iter().flat_map(|p| shell_blocks(p)).collect();
    assert!(
        blocks
            .iter()
            .any(|b| b.page == "README.md" && b.not_run.is_none()),
        "no runnable block found in README.md: the parser is wrong"
    );
    for block in blocks.iter().filter(|b| b.not_run.is_some()) {
        let reason = block.not_run.as_deref().unwrap_or_default();
        assert!(
            reason.len() >= 10,
            "{}:{}: a block not run says why",
            block.page,
            block.line
        );
        eprintln!("not run: {}:{} ({reason})", block.page, block.line);
    }
    let Some(network) = Network::new("walkthrough") else {
        eprintln!("docs walkthrough skipped: it runs the documented commands on their default ports in a network namespace of its own, which needs root");
        return;
    };
    let host = network.host("user");
    let work = Workdir::new();
    let mut failures = Vec::new();
    for block in blocks.iter().filter(|b| b.not_run.is_none()) {
        if starts_servers(&block.script) {
            work.stop_servers();
        }
        match run(block, &work, &host) {
            Ok(output) => eprintln!("ran {}:{}:\n{output}", block.page, block.line),
            Err(why) => failures.push(format!(
                "{}:{}:\n{}\n--- failed: {why}",
                block.page, block.line, block.script
            )),
        }
    }
    work.stop_servers();
    assert!(
        failures.is_empty(),
        "{} documented block(s) fail as written:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn server_starts_are_told_from_commands_that_end() {
    assert!(starts_servers("cargo run --release\n"));
    assert!(starts_servers(
        "target/release/mqnamesrv\ntarget/release/mqbroker -n 127.0.0.1:9876"
    ));
    assert!(starts_servers("deploy/local-cluster.sh"));
    assert!(!starts_servers(
        "target/release/mqbroker -c deploy/broker-a.conf -p        # print"
    ));
    assert!(!starts_servers(
        "cargo run --release -p vostok-client --example producer -- 127.0.0.1:9876 T"
    ));
    assert!(!starts_servers("target/release/mqadmin clusterList"));
}
