//! What a user meets when starting the programs: the same flags on `mqnamesrv`,
//! `mqbroker` and `mqcontroller`; start-up errors that name the config key and where
//! its value came from; one `portOffset` for a second broker on the same host;
//! malformed name server addresses refused; a read-only broker that says so; no
//! panic on a closed stdout; plain-text logs and a short configuration line.
//! Every case runs the real programs.

use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use vostok_tests::netns::Network;
use vostok_tests::{binary, broker_program, free_port, namesrv_program, Process};

fn controller_program() -> PathBuf {
    binary("vostok-test-controller")
}

fn mqadmin_program() -> PathBuf {
    binary("vostok-test-mqadmin")
}

/// Runs a program that exits by itself (`-p`, a refused start) to its end.
fn run(program: &Path, args: &[&str], dir: &Path) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .env_remove("NAMESRV_ADDR")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `program args` with its stdout a pipe whose reading end is already closed, as in
/// `mqbroker -p | head -0`: every write fails with EPIPE.
fn run_into_closed_pipe(program: &Path, args: &[&str], dir: &Path) -> Output {
    let mut fds = [0i32; 2];
    // SAFETY: pipe(2) fills two descriptors we then own.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe");
    // SAFETY: both descriptors were just created and are owned here only.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .env_remove("NAMESRV_ADDR")
        .stdin(Stdio::null())
        .stdout(Stdio::from(write))
        .stderr(Stdio::piped())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()))
}

#[test]
fn an_invalid_broker_name_says_where_it_came_from_and_what_to_pass() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = run(
        &broker_program(),
        &["-o", "brokerName=dev-laptop.local", "-p"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2), "refused");
    let err = text(&out.stderr);
    assert!(
        err.contains("set by -o brokerName=dev-laptop.local"),
        "{err}"
    );
    assert!(err.contains("-o brokerName=dev-laptop-local"), "{err}");

    let conf = dir.path().join("broker.conf");
    std::fs::write(&conf, "brokerName=a b\n").expect("write conf");
    let out = run(
        &broker_program(),
        &["-c", conf.to_str().expect("utf-8 path"), "-p"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2), "refused");
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("set by the config file {}", conf.display())),
        "{err}"
    );
    assert!(err.contains("-o brokerName=a-b"), "{err}");
}

/// On a host whose name has a dot (any FQDN), the default name is the part before it.
/// Needs root for a UTS namespace of its own; skipped otherwise.
#[test]
fn a_host_name_with_a_dot_gives_a_valid_default_broker_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    let broker = broker_program();
    let out = Command::new("unshare")
        .args([
            "--uts",
            "sh",
            "-c",
            "hostname dev-laptop.local && exec \"$0\" -p",
        ])
        .arg(&broker)
        .current_dir(dir.path())
        .env_remove("NAMESRV_ADDR")
        .output();
    let out = match out {
        Ok(out)
            if !text(&out.stderr).contains("hostname")
                && !text(&out.stderr).contains("unshare") =>
        {
            out
        }
        other => {
            eprintln!("skipped: no UTS namespace here ({other:?})");
            return;
        }
    };
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout)
            .lines()
            .any(|l| l == "brokerName=dev-laptop"),
        "{}",
        text(&out.stdout)
    );
}

/// Two standalone brokers on one host, on RocketMQ's default ports (in a network
/// namespace of their own, so nothing else holds them): the second needs only
/// `portOffset`; without it each port that is still taken is named by its key.
#[test]
fn a_second_standalone_broker_is_one_option_and_bind_errors_name_the_key() {
    let Some(network) = Network::new("port-offset") else {
        return;
    };
    let host = network.host("h");
    let dirs: Vec<_> = (0..3)
        .map(|_| tempfile::tempdir().expect("temp dir"))
        .collect();
    let start = |dir: &Path, extra: &[&str]| {
        let mut command = host.command(broker_program());
        command
            .args(["-o", "metricsExporterType=PROM"])
            .args(extra)
            .current_dir(dir)
            .env_remove("NAMESRV_ADDR");
        command
    };
    let first = Process::start(
        start(dirs[0].path(), &[]),
        dirs[0].path().join("first.log"),
        "boot success",
    );
    assert!(first.boot_line.contains(":10911"), "{}", first.boot_line);

    // Each taken port in turn, the others moved by hand as a user would.
    let mut moved: Vec<String> = Vec::new();
    // In the order the broker binds them.
    for (key, port) in [
        ("listenPort", 20911),
        ("grpcServerPort", 18081),
        ("metricsPromExporterPort", 15557),
        ("consolePort", 18082),
        ("embeddedNamesrvPort", 19876),
    ] {
        let mut args: Vec<&str> = Vec::new();
        for m in &moved {
            args.extend(["-o", m.as_str()]);
        }
        let out = start(dirs[1].path(), &args)
            .output()
            .expect("run the second broker");
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{key}: started on a taken port");
        assert!(
            err.contains(&format!("the port is set by `{key}`")),
            "{key}: {err}"
        );
        assert!(err.contains("-o portOffset=N"), "{key}: {err}");
        moved.push(format!("{key}={port}"));
    }

    let second = Process::start(
        start(dirs[2].path(), &["-o", "portOffset=1000"]),
        dirs[2].path().join("second.log"),
        "boot success",
    );
    assert!(second.boot_line.contains(":11911"), "{}", second.boot_line);
    assert!(
        second.early_lines.iter().any(|l| l.contains(":9081")),
        "gRPC moved too: {:?}",
        second.early_lines
    );
    assert!(
        second.early_lines.iter().any(|l| l.contains(":9082")),
        "console moved too: {:?}",
        second.early_lines
    );
    assert!(
        second.early_lines.iter().any(|l| l.contains(":6557")),
        "metrics moved too: {:?}",
        second.early_lines
    );
    assert!(
        second.boot_line.contains("127.0.0.1:10876"),
        "{}",
        second.boot_line
    );
    drop(first);
}

#[test]
fn malformed_name_server_addresses_are_refused_with_the_accepted_form() {
    let dir = tempfile::tempdir().expect("temp dir");
    let form = "host:port, several separated by `;`";
    for bad in ["127.0.0.1", "127.0.0.1:9876;10.0.0.2", "a:98765"] {
        let out = run(&broker_program(), &["-n", bad, "-p"], dir.path());
        assert_eq!(out.status.code(), Some(2), "{bad} refused");
        let err = text(&out.stderr);
        assert!(err.contains(form), "{bad}: {err}");
        assert!(err.contains(&format!("set by -n {bad}")), "{bad}: {err}");
        let out = run(
            &broker_program(),
            &["-o", &format!("namesrvAddr={bad}"), "-p"],
            dir.path(),
        );
        assert_eq!(out.status.code(), Some(2), "{bad} refused in -o");

        let out = run(&mqadmin_program(), &["-n", bad, "clusterList"], dir.path());
        assert!(!out.status.success(), "mqadmin {bad}");
        assert!(
            text(&out.stderr).contains(form),
            "mqadmin {bad}: {}",
            text(&out.stderr)
        );
    }
    // A comma separates too, as some clients accept.
    let out = run(
        &broker_program(),
        &["-n", "a:9876,b:9876", "-p"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn a_read_only_broker_says_so_when_mqadmin_sends() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (port, ns_port) = (free_port(), free_port());
    let mut command = Command::new(broker_program());
    command
        .args(["-o", &format!("listenPort={port}")])
        .args(["-o", &format!("embeddedNamesrvPort={ns_port}")])
        .args(["-o", "grpcServerEnable=false", "-o", "consoleEnable=false"])
        .args(["-o", "fastListenEnable=false", "-o", "haListenPort=0"])
        .args(["-o", "brokerPermission=4"])
        .current_dir(dir.path())
        .env_remove("NAMESRV_ADDR");
    let _broker = Process::start(command, dir.path().join("broker.log"), "boot success");
    let namesrv = format!("127.0.0.1:{ns_port}");
    let out = run(
        &mqadmin_program(),
        &[
            "-n",
            &namesrv,
            "sendMessage",
            "-t",
            "ReadOnlyTopic",
            "-p",
            "hello",
        ],
        dir.path(),
    );
    let err = text(&out.stderr);
    assert!(!out.status.success(), "a read-only broker stored a message");
    assert!(err.contains("is read-only"), "{err}");
    assert!(!err.contains("no route info"), "{err}");

    // The verbs that print go quietly into a closed pipe too.
    let out = run_into_closed_pipe(
        &mqadmin_program(),
        &["-n", &namesrv, "clusterList"],
        dir.path(),
    );
    let err = text(&out.stderr);
    assert!(!err.contains("panicked"), "mqadmin: {err}");
}

#[test]
fn no_program_panics_on_a_closed_stdout() {
    let dir = tempfile::tempdir().expect("temp dir");
    for program in [broker_program(), namesrv_program(), controller_program()] {
        let out = run_into_closed_pipe(&program, &["-p"], dir.path());
        let err = text(&out.stderr);
        assert!(!err.contains("panicked"), "{}: {err}", program.display());
        assert!(
            out.status.success(),
            "{}: {:?} {err}",
            program.display(),
            out.status
        );
    }
}

/// `-c FILE`, `-o KEY=VALUE` (also `--option` and `--set`) and `-p` mean the same on
/// the three servers; `-n` is accepted by each, and used by the broker.
#[test]
fn the_three_servers_take_the_same_flags() {
    let dir = tempfile::tempdir().expect("temp dir");
    let conf = dir.path().join("server.conf");
    for (program, file_key, option_key) in [
        (
            broker_program(),
            "brokerClusterName=FromFile",
            "listenPort=10999",
        ),
        (
            namesrv_program(),
            "productEnvName=FromFile",
            "listenPort=9999",
        ),
        (
            controller_program(),
            "controllerDLegerGroup=FromFile",
            "scanNotActiveBrokerInterval=7000",
        ),
    ] {
        std::fs::write(&conf, format!("{file_key}\n")).expect("write conf");
        let conf = conf.to_str().expect("utf-8 path");
        for (short_c, short_o) in [
            ("-c", "-o"),
            ("--configFile", "--option"),
            ("--config", "--set"),
        ] {
            let out = run(
                &program,
                &[
                    short_c,
                    conf,
                    short_o,
                    option_key,
                    "-n",
                    "127.0.0.1:9876",
                    "-p",
                ],
                dir.path(),
            );
            let stdout = text(&out.stdout);
            let what = format!("{} {short_c} {short_o}", program.display());
            assert!(out.status.success(), "{what}: {}", text(&out.stderr));
            assert!(stdout.lines().any(|l| l == file_key), "{what}: {stdout}");
            assert!(stdout.lines().any(|l| l == option_key), "{what}: {stdout}");
        }
    }
}

/// Logs written to a file hold no colour codes, and the configuration line at start
/// lists what differs from the defaults, not every key.
#[test]
fn logs_in_a_file_are_plain_and_list_only_changed_keys() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (port, ns_port) = (free_port(), free_port());
    let mut command = Command::new(broker_program());
    command
        .args(["-o", &format!("listenPort={port}")])
        .args(["-o", &format!("embeddedNamesrvPort={ns_port}")])
        .args(["-o", "grpcServerEnable=false", "-o", "consoleEnable=false"])
        .args(["-o", "fastListenEnable=false", "-o", "haListenPort=0"])
        .current_dir(dir.path())
        .env_remove("NAMESRV_ADDR");
    let broker = Process::start(command, dir.path().join("broker.log"), "boot success");
    let log = broker.log();
    assert!(
        !log.contains('\u{1b}'),
        "colour codes in a log file:\n{log}"
    );
    let line = log
        .lines()
        .find(|l| l.contains("configuration"))
        .unwrap_or_else(|| panic!("no configuration line:\n{log}"));
    assert!(line.contains(&format!("listenPort={port}")), "{line}");
    assert!(
        !line.contains("transactionCheckMax"),
        "every key at INFO: {line}"
    );

    let mut command = Command::new(namesrv_program());
    command
        .args(["-o", "listenPort=0", "-o", "bindAddress=127.0.0.1"])
        .args([
            "-o",
            &format!("kvConfigPath={}", dir.path().join("kv.json").display()),
        ]);
    let namesrv = Process::start(command, dir.path().join("namesrv.log"), "boot success");
    let log = namesrv.log();
    assert!(
        !log.contains('\u{1b}'),
        "colour codes in a log file:\n{log}"
    );
    assert!(
        log.contains("changed=") && log.contains(" listenPort=0"),
        "{log}"
    );
    assert!(
        !log.contains("brokerChannelExpiredTime"),
        "every key at INFO: {log}"
    );
}
