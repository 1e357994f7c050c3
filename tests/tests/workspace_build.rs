//! Every third-party crate is built with one set of features, whichever package a
//! command builds: after `cargo build --release` (the broker), `cargo build --release
//! -p vostok-tools` or `cargo run --release -p vostok-client --example producer`
//! compiles only what is new to it, never tokio, serde or hyper again with other
//! features (and everything above them with it).
//!
//! Cargo resolves features per command, so each command a user may run is resolved
//! here with `cargo tree` (offline, from Cargo.lock: no build, a few seconds): the
//! default members, each package on its own, and each package with examples with its
//! dev-dependencies (which examples link). A crate that two of them resolve with
//! different features, in the same role (a dependency of the code, or of build
//! scripts and procedural macros, which Cargo resolves apart), fails the test.
//! The remedy is an entry in workspace-hack/Cargo.toml with the union of the features.
//!
//! And what `cargo build --release` ships is a small binary: at most line tables of
//! debug info, with a `profiling` profile that keeps full debug info for perf work.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Packages no user command builds on their own: the cross-process test harness
/// (built by `cargo test`, in the test profile) and the feature pin itself.
const NOT_BUILT_ALONE: [&str; 2] = ["vostok-tests", "vostok-workspace-hack"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

fn cargo(args: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(&cargo)
        .args(args)
        .current_dir(root())
        .output()
        .unwrap_or_else(|e| panic!("{cargo}: {e}"));
    assert!(
        output.status.success(),
        "cargo {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A third-party crate in one role: (name, version, built for build scripts and
/// procedural macros).
type Unit = (String, String, bool);

/// The features of every third-party crate `cargo tree` prints for `args`.
fn resolve(args: &[&str]) -> BTreeMap<Unit, BTreeSet<String>> {
    let mut command = vec!["tree", "--offline", "--locked", "-f", "{p} [{f}]"];
    command.extend_from_slice(args);
    let text = cargo(&command);
    let mut out: BTreeMap<Unit, BTreeSet<String>> = BTreeMap::new();
    // Per depth: whether the node there is built for the host, and whether it is a
    // procedural macro; and the `[build-dependencies]` sections open at each depth.
    let mut stack: Vec<(bool, bool)> = Vec::new();
    let mut build_section: BTreeSet<usize> = BTreeSet::new();
    for line in text.lines() {
        let Some(start) = line.find(|c: char| c.is_ascii_alphanumeric() || c == '[') else {
            continue;
        };
        let depth = line[..start].chars().count() / 4;
        let node = &line[start..];
        if node.starts_with('[') {
            // A section of the node above: its entries are one level deeper.
            build_section.retain(|d| *d <= depth);
            if node == "[build-dependencies]" {
                build_section.insert(depth + 1);
            } else {
                build_section.remove(&(depth + 1));
            }
            continue;
        }
        build_section.retain(|d| *d <= depth);
        stack.truncate(depth);
        let parent_host = stack.last().is_some_and(|(host, macro_)| *host || *macro_);
        let proc_macro = node.contains("(proc-macro)");
        let host = parent_host || build_section.contains(&depth) || proc_macro;
        stack.push((host, proc_macro));
        let mut words = node.split(' ');
        let (Some(name), Some(version)) = (words.next(), words.next()) else {
            panic!("cargo tree line {line:?}");
        };
        // Workspace packages name their directory; they have no features.
        if depth == 0 || node.contains(" (/") {
            continue;
        }
        let features = node
            .rsplit_once('[')
            .and_then(|(_, f)| f.split_once(']'))
            .map(|(f, _)| f)
            .unwrap_or_else(|| panic!("features in {line:?}"));
        let features = features
            .split(',')
            .filter(|f| !f.is_empty())
            .map(str::to_owned)
            .collect();
        let unit = (name.to_owned(), version.to_owned(), host);
        if let Some(seen) = out.get(&unit) {
            assert_eq!(seen, &features, "one command resolves {unit:?} twice");
        }
        out.insert(unit, features);
    }
    out
}

/// The workspace's packages and whether each has examples.
fn members() -> Vec<(String, bool)> {
    let metadata: serde_json::Value = serde_json::from_str(&cargo(&[
        "metadata",
        "--offline",
        "--locked",
        "--no-deps",
        "--format-version",
        "1",
    ]))
    .expect("cargo metadata JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    packages
        .iter()
        .map(|p| {
            let name = p["name"].as_str().expect("name").to_owned();
            let targets = p["targets"].as_array().into_iter().flatten();
            let examples = targets
                .flat_map(|t| t["kind"].as_array().into_iter().flatten())
                .any(|k| k == "example");
            (name, examples)
        })
        .filter(|(name, _)| !NOT_BUILT_ALONE.contains(&name.as_str()))
        .collect()
}

#[test]
fn every_command_builds_each_crate_with_the_same_features() {
    let members = members();
    assert!(members.len() >= 9, "{members:?}");
    let mut commands: Vec<(String, Vec<String>)> = vec![(
        "cargo build".to_owned(),
        vec!["-e".into(), "normal,build".into()],
    )];
    for (name, examples) in &members {
        commands.push((
            format!("cargo build -p {name}"),
            vec![
                "-p".into(),
                name.clone(),
                "-e".into(),
                "normal,build".into(),
            ],
        ));
        if *examples {
            commands.push((
                format!("cargo run -p {name} --example ..."),
                vec![
                    "-p".into(),
                    name.clone(),
                    "-e".into(),
                    "normal,build,dev".into(),
                ],
            ));
        }
    }
    let resolved: Vec<(String, BTreeMap<Unit, BTreeSet<String>>)> = std::thread::scope(|s| {
        let handles: Vec<_> = commands
            .iter()
            .map(|(label, args)| {
                s.spawn(move || {
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    (label.clone(), resolve(&args))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("cargo tree thread"))
            .collect()
    });
    assert!(
        resolved[0].1.keys().any(|u| u.0 == "tokio" && !u.2),
        "the broker's build resolves tokio"
    );

    let mut first_seen: BTreeMap<&Unit, (&str, &BTreeSet<String>)> = BTreeMap::new();
    let mut differences = Vec::new();
    for (label, units) in &resolved {
        for (unit, features) in units {
            match first_seen.get(unit) {
                None => {
                    first_seen.insert(unit, (label, features));
                }
                Some((other, theirs)) if *theirs != features => differences.push(format!(
                    "{} {}{}: `{other}` {theirs:?}, `{label}` {features:?}",
                    unit.0,
                    unit.1,
                    if unit.2 {
                        " (build scripts, macros)"
                    } else {
                        ""
                    },
                )),
                Some(_) => {}
            }
        }
    }
    assert!(
        differences.is_empty(),
        "crates built with different features by different commands (add the union \
         to workspace-hack/Cargo.toml):\n{}",
        differences.join("\n")
    );
}

/// The `key = value` entries of section `[name]` of the workspace manifest.
fn manifest_section(name: &str) -> BTreeMap<String, String> {
    let path = root().join("Cargo.toml");
    let text = std::fs::read_to_string(&path).expect("Cargo.toml");
    let header = format!("[{name}]");
    text.lines()
        .skip_while(|l| l.trim() != header)
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with('['))
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().trim_matches('"').to_owned()))
        .collect()
}

#[test]
fn release_builds_are_small_and_the_profiling_profile_keeps_symbols() {
    let release = manifest_section("profile.release");
    let debug = release.get("debug").map(String::as_str).unwrap_or("false");
    assert!(
        matches!(
            debug,
            "false" | "0" | "none" | "line-tables-only" | "line-directives-only"
        ),
        "[profile.release] debug = {debug}: full debug info makes mqbroker over 100 MB"
    );
    let profiling = manifest_section("profile.profiling");
    assert_eq!(
        profiling.get("inherits").map(String::as_str),
        Some("release"),
        "[profile.profiling] is the release build"
    );
    assert!(
        matches!(
            profiling.get("debug").map(String::as_str),
            Some("true" | "2" | "full")
        ),
        "[profile.profiling] keeps full debug info: {profiling:?}"
    );
    assert_ne!(
        profiling.get("strip").map(String::as_str),
        Some("debuginfo"),
        "[profile.profiling] is not stripped"
    );
}
