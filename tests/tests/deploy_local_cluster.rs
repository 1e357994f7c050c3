//! `deploy/local-cluster.sh` keeps the local cluster on loopback unless asked
//! otherwise. The script runs for real, in a copy of the repository's layout whose
//! `cargo` and `target/release/*` record the command lines they are given (no port is
//! bound, so the test runs beside anything); each recorded command line is then given
//! to the real binary with `-p`, which prints the address it would bind.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use vostok_remoting::support::properties;
use vostok_tests::binary;

const SEPARATOR: char = '\u{1f}';

fn script(path: &Path, text: &str) {
    fs::write(path, text).expect("write script");
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// Runs the script with `env`; the command line of each program it starts.
fn started(env: &[(&str, &str)]) -> Vec<(String, Vec<String>)> {
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy");
    let root = tempfile::tempdir().expect("temp dir");
    let dir = root.path();
    for sub in ["deploy", "target/release", "bin"] {
        fs::create_dir_all(dir.join(sub)).expect("mkdir");
    }
    for name in [
        "local-cluster.sh",
        "namesrv.conf",
        "broker-a.conf",
        "broker-b.conf",
    ] {
        fs::copy(deploy.join(name), dir.join("deploy").join(name)).expect("copy deploy/");
    }
    let calls = dir.join("calls");
    script(&dir.join("bin/cargo"), "#!/usr/bin/env bash\nexit 0\n");
    for program in ["mqnamesrv", "mqbroker"] {
        script(
            &dir.join("target/release").join(program),
            &format!(
                "#!/usr/bin/env bash\n(IFS=$'\\x1f'; echo \"{program}$IFS$*\") >> {}\necho boot success\n",
                calls.display()
            ),
        );
    }
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("bash")
        .arg(dir.join("deploy/local-cluster.sh"))
        .current_dir(dir)
        .env("PATH", path)
        .env_remove("VOSTOK_BIND")
        .envs(env.iter().copied())
        .output()
        .expect("run local-cluster.sh");
    assert!(
        output.status.success(),
        "local-cluster.sh: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let calls = fs::read_to_string(&calls).expect("the programs ran");
    calls
        .lines()
        .map(|line| {
            let mut words = line.split(SEPARATOR).map(str::to_owned);
            let program = words.next().expect("program name");
            let argv: Vec<String> = words.collect();
            let config = effective(dir, &program, &argv);
            (
                program,
                vec![config["bindAddress"].clone(), config_ip(&config)],
            )
        })
        .collect()
}

/// The address a broker advertises (`brokerIP1`); empty for a name server.
fn config_ip(config: &BTreeMap<String, String>) -> String {
    config.get("brokerIP1").cloned().unwrap_or_default()
}

/// The settings `program` runs with for `argv`, run from `dir`, as it prints them.
fn effective(dir: &Path, program: &str, argv: &[String]) -> BTreeMap<String, String> {
    let test_program = match program {
        "mqnamesrv" => "vostok-test-namesrv",
        _ => "vostok-test-broker",
    };
    let output = Command::new(binary(test_program))
        .args(argv)
        .arg("-p")
        .current_dir(dir)
        .output()
        .expect("run the binary");
    assert!(
        output.status.success(),
        "{program} {argv:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    properties::parse(&String::from_utf8_lossy(&output.stdout))
        .into_iter()
        .collect()
}

#[test]
fn the_local_cluster_binds_loopback_by_default() {
    let programs = started(&[]);
    assert_eq!(
        programs.len(),
        3,
        "a name server and two brokers: {programs:?}"
    );
    for (program, addresses) in &programs {
        assert_eq!(addresses[0], "127.0.0.1", "{program} binds loopback");
        if program == "mqbroker" {
            assert_eq!(addresses[1], "127.0.0.1", "{program} advertises loopback");
        }
    }
}

#[test]
fn the_local_cluster_binds_every_address_when_asked() {
    let programs = started(&[("VOSTOK_BIND", "0.0.0.0")]);
    assert_eq!(programs.len(), 3, "{programs:?}");
    for (program, addresses) in &programs {
        assert_eq!(addresses[0], "0.0.0.0", "{program} binds every address");
        if program == "mqbroker" {
            assert_eq!(addresses[1], "127.0.0.1", "{program} advertises loopback");
        }
    }
}
