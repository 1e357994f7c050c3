//! The `mqnamesrv` binary as a process: config file, ready line, requests, signals.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::*;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use vostok_remoting::protocol::header::PutKvConfigRequestHeader;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;

const BIN: &str = env!("CARGO_BIN_EXE_mqnamesrv");

/// A running `mqnamesrv`; killed on drop, and its log printed if the test failed.
struct Process {
    child: Child,
    log: PathBuf,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        if std::thread::panicking() {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            eprintln!("--- mqnamesrv log ---\n{log}");
        }
    }
}

fn command(dir: &Path, args: &[&str]) -> Command {
    let log = std::fs::File::create(dir.join("mqnamesrv.log")).unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env("HOME", dir)
        .env("RUST_LOG", "debug")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .kill_on_drop(true);
    cmd
}

/// Starts the binary and waits for its ready line; returns it and the address.
async fn spawn(dir: &Path, args: &[&str]) -> (Process, String) {
    let mut child = command(dir, args).spawn().expect("mqnamesrv starts");
    let stdout = child.stdout.take().unwrap();
    let process = Process {
        child,
        log: dir.join("mqnamesrv.log"),
    };
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(T, lines.next_line())
        .await
        .expect("ready line in time")
        .unwrap()
        .expect("a ready line");
    assert!(line.starts_with("The Name Server boot success."), "{line}");
    let addr = line.rsplit("address ").next().unwrap().trim().to_owned();
    (process, addr)
}

fn terminate(process: &Process) {
    let pid = process.child.id().expect("still running") as libc::pid_t;
    // SAFETY: plain kill(2) of our own child process.
    let rc = unsafe { libc::kill(pid, libc::SIGTERM) };
    assert_eq!(rc, 0);
}

#[tokio::test]
async fn serves_from_a_config_file_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let kv_path = dir.path().join("kv").join("kvConfig.json");
    let conf = dir.path().join("namesrv.conf");
    std::fs::write(
        &conf,
        format!(
            "# test\nlistenPort=0\nbindAddress=127.0.0.1\nkvConfigPath={}\n",
            kv_path.display()
        ),
    )
    .unwrap();
    let (mut process, addr) = spawn(dir.path(), &["-c", conf.to_str().unwrap()]).await;
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    assert_ne!(addr, "127.0.0.1:0", "the real port is printed");

    let (conn, client) = (client(), client());
    Broker::new("c", "b", 0, "b:1", &["T"])
        .register(&conn, &addr)
        .await;
    assert!(route(&client, &addr, "T").await.is_ok());
    let put = RemotingCommand::request_with_header(
        request_code::PUT_KV_CONFIG,
        &PutKvConfigRequestHeader {
            namespace: "ns".into(),
            key: "k".into(),
            value: "v".into(),
        },
    );
    assert_eq!(call(&client, &addr, put).await.code, response_code::SUCCESS);

    terminate(&process);
    let status = tokio::time::timeout(T, process.child.wait())
        .await
        .expect("exits in time")
        .unwrap();
    assert!(status.success(), "{status}");
    assert!(std::fs::read_to_string(&kv_path).unwrap().contains("\"k\""));
    let log = std::fs::read_to_string(dir.path().join("mqnamesrv.log")).unwrap();
    assert!(log.contains("name server stopped"), "{log}");
}

#[tokio::test]
async fn flags_override_the_file_and_p_prints_the_effective_config() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("namesrv.conf");
    std::fs::write(&conf, "listenPort=1234\nwaitSecondsForService=7\n").unwrap();
    let output = command(
        dir.path(),
        &[
            "-c",
            conf.to_str().unwrap(),
            "--listen-port",
            "0",
            "--set",
            "orderMessageEnable=true",
            "-p",
        ],
    )
    .output();
    let output = tokio::time::timeout(T, output).await.unwrap().unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    for line in [
        "listenPort=0",
        "waitSecondsForService=7",
        "orderMessageEnable=true",
        "scanNotActiveBrokerInterval=5000",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "{line} missing from:\n{text}"
        );
    }
    let home_kv = dir.path().join("namesrv").join("kvConfig.json");
    assert!(
        text.contains(&format!("kvConfigPath={}", home_kv.display())),
        "{text}"
    );
}

#[tokio::test]
async fn bad_settings_exit_with_an_error_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("namesrv.conf");
    // A key of Apache's name server that Vostok has no use for is refused as well: a
    // setting silently ignored is a misconfigured server.
    std::fs::write(&conf, "listenPort=0\nserverWorkerThreads=8\n").unwrap();
    for args in [
        vec!["--set", "listenPort=notaport"],
        vec!["--set", "noSuchKey=1"],
        vec!["-c", "/nonexistent/namesrv.conf"],
        vec!["-c", conf.to_str().unwrap()],
    ] {
        let output = tokio::time::timeout(T, command(dir.path(), &args).output())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        let expected = [
            "listenPort",
            "noSuchKey",
            "namesrv.conf",
            "serverWorkerThreads",
        ];
        assert!(
            expected.iter().any(|k| stderr.contains(k)),
            "{args:?}: {stderr}"
        );
    }
}

#[tokio::test]
async fn sigint_also_stops_it_and_a_taken_port_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (mut process, addr) = spawn(
        dir.path(),
        &["--listen-port", "0", "--bind-address", "127.0.0.1"],
    )
    .await;
    let port = addr.rsplit(':').next().unwrap();

    // A second name server on the same port fails to start.
    let other = tempfile::tempdir().unwrap();
    let output = tokio::time::timeout(
        T,
        command(
            other.path(),
            &["--listen-port", port, "--bind-address", "127.0.0.1"],
        )
        .output(),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot bind"));

    let pid = process.child.id().unwrap() as libc::pid_t;
    // SAFETY: plain kill(2) of our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let status = tokio::time::timeout(T, process.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status}");
}
