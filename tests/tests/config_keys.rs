//! The servers' configuration keys as a user meets them, all produced from the key
//! tables: `-p` of `mqbroker`, `mqnamesrv` and `mqcontroller` prints every key the
//! program reads and nothing else; a misspelt key is refused naming the key meant;
//! docs/keys.md is the tables as Markdown (`VOSTOK_WRITE_DOCS=1` rewrites it) and the
//! key tables of docs/configuration.md name real keys with their real defaults.
#![cfg(feature = "programs")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use vostok_remoting::support::keys::{Kind, Table};
use vostok_tests::{binary, broker_program, namesrv_program};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

fn page() -> String {
    let broker = vostok_broker::config::KEYS.markdown(&vostok_broker::BrokerConfig::default());
    // With the embedded controller on, so that its keys show their defaults too.
    let namesrv = vostok_namesrv::config::KEYS.markdown(&vostok_namesrv::NamesrvConfig {
        enable_controller_in_namesrv: true,
        ..Default::default()
    });
    let controller =
        vostok_controller::config::KEYS.markdown(&vostok_controller::ControllerConfig::default());
    format!(
        "# Configuration keys\n\n\
         <!-- Generated from the key tables by tests/tests/config_keys.rs: do not edit. -->\n\n\
         Every key the servers read, with its default and what it does, in the order\n\
         `-p` prints them. [configuration.md](configuration.md) explains the ones most\n\
         set. A key not listed is refused with the nearest listed key as a suggestion;\n\
         another name is read, never printed; a key accepted for RocketMQ's files is\n\
         read and has no effect.\n\n\
         ## `broker.conf`\n\n{broker}\n\
         ## `namesrv.conf`\n\n{namesrv}\n\
         ## `controller.conf`\n\n{controller}"
    )
}

#[test]
fn the_key_reference_is_the_key_tables() {
    let path = repo_root().join("docs/keys.md");
    let want = page();
    if std::env::var_os("VOSTOK_WRITE_DOCS").is_some() {
        std::fs::write(&path, &want).expect("write docs/keys.md");
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/keys.md is not what the key tables say; rerun with VOSTOK_WRITE_DOCS=1 \
         (cargo test -p vostok-tests --test config_keys) and commit it"
    );
}

/// The key tables of docs/configuration.md: every key a row names is one `mqbroker`
/// reads, and a default written as a value (`8`, `ASYNC_FLUSH`, `1024`, `100000`) is
/// what `-p` prints for that key in a broker left at its defaults.
#[test]
fn the_configuration_page_names_real_keys_with_their_defaults() {
    let text = std::fs::read_to_string(repo_root().join("docs/configuration.md"))
        .expect("docs/configuration.md");
    let keys = &vostok_broker::config::KEYS;
    let known = keys.names();
    let printed = keys.values(&vostok_broker::BrokerConfig::default());
    let mut in_key_table = false;
    let mut rows = 0;
    for line in text.lines() {
        if line.starts_with("| key | default |") {
            in_key_table = true;
            continue;
        }
        if !line.starts_with('|') {
            in_key_table = false;
            continue;
        }
        if !in_key_table || line.starts_with("|---") {
            continue;
        }
        let cells: Vec<&str> = line.split(" | ").collect();
        let names: Vec<&str> = code_spans(cells[0]);
        assert!(!names.is_empty(), "a row without a key: {line}");
        for name in &names {
            assert!(
                known.contains(name),
                "docs/configuration.md names `{name}`, which mqbroker does not read: {line}"
            );
        }
        rows += 1;
        // A default cell of one value per key, each a code span, is checked; a default
        // in words ("on in standalone mode", "`bindAddress`") is not.
        let Some(defaults) = cells.get(1) else {
            continue;
        };
        let values: Vec<&str> = defaults.split(", ").collect();
        let all_values = values.len() == names.len()
            && values.iter().all(|v| {
                v.len() >= 2
                    && v.starts_with('`')
                    && v.ends_with('`')
                    && !v[1..v.len() - 1].contains('`')
                    && !known.contains(&&v[1..v.len() - 1])
            });
        if !all_values {
            continue;
        }
        for (name, value) in names.iter().zip(&values) {
            let want = &value[1..value.len() - 1];
            let have = printed
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str());
            assert_eq!(
                have,
                Some(want),
                "docs/configuration.md gives `{name}` the default `{want}`"
            );
        }
    }
    assert!(
        rows > 50,
        "only {rows} key rows found in docs/configuration.md"
    );
}

/// The `code spans` of a table cell.
fn code_spans(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

/// Runs a program that exits by itself (`-p`, a refused start) in a temp directory.
fn run(program: &Path, args: &[&str]) -> Output {
    let dir = tempfile::tempdir().expect("temp dir");
    Command::new(program)
        .args(args)
        .current_dir(dir.path())
        .env_remove("NAMESRV_ADDR")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()))
}

/// The keys a table reads and prints: other names and keys accepted for RocketMQ's
/// files (read, no effect) are never printed.
fn printed_keys<C>(table: &Table<C>) -> Vec<&'static str> {
    table
        .describe()
        .into_iter()
        .filter(|k| k.kind == Kind::Plain)
        .map(|k| k.name)
        .collect()
}

/// `program -p` with `args`: the keys it prints, in order, each checked to be read
/// back by the same program.
fn keys_of_p(program: &Path, args: &[&str]) -> Vec<String> {
    let mut all = args.to_vec();
    all.push("-p");
    let out = run(program, &all);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{} -p: {}",
        program.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| {
            l.split_once('=')
                .unwrap_or_else(|| panic!("not KEY=VALUE: {l:?}"))
                .0
                .to_owned()
        })
        .collect()
}

#[test]
fn p_prints_every_key_a_program_reads_and_nothing_else() {
    let broker = keys_of_p(&broker_program(), &["-o", "listenPort=0"]);
    assert_eq!(broker, printed_keys(&vostok_broker::config::KEYS));

    let namesrv = keys_of_p(
        &namesrv_program(),
        &["-o", "enableControllerInNamesrv=true"],
    );
    assert_eq!(namesrv, printed_keys(&vostok_namesrv::config::KEYS));

    let controller = keys_of_p(&binary("vostok-test-controller"), &[]);
    assert_eq!(controller, printed_keys(&vostok_controller::config::KEYS));
}

/// `mqbroker -m` prints the keys the table marks important, and only those.
#[test]
fn m_prints_the_important_keys() {
    let out = run(&broker_program(), &["-o", "listenPort=0", "-m"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "mqbroker -m: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut printed: Vec<&str> = stdout
        .lines()
        .map(|l| l.split_once('=').map_or(l, |(k, _)| k))
        .collect();
    printed.sort_unstable();
    let mut important = vostok_broker::config::KEYS.important_names();
    important.sort_unstable();
    assert_eq!(printed, important);
    assert!(printed.contains(&"listenPort"), "{stdout}");
}

#[test]
fn a_misspelt_key_is_refused_naming_the_key_meant() {
    for (program, option, meant) in [
        (broker_program(), "brokerClustername=C", "brokerClusterName"),
        (broker_program(), "flushDiskTyp=SYNC_FLUSH", "flushDiskType"),
        (namesrv_program(), "listenPrt=9876", "listenPort"),
        (
            binary("vostok-test-controller"),
            "controllerDLegerGrup=g",
            "controllerDLegerGroup",
        ),
    ] {
        let out = run(&program, &["-o", option, "-p"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{option}: {err}");
        assert!(
            err.contains(&format!("(did you mean '{meant}'?)")),
            "{option}: {err}"
        );
    }
}
