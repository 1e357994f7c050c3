//! The README stays a new user's page, and the pages users read carry no words of the
//! project's internal bookkeeping (issue numbers, work rounds): what a reader cannot
//! look up is noise to them.

use std::fs;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// About 300 lines: what it is, set-up, quick starts, the map of the code and links.
const README_MAX_LINES: usize = 320;

#[test]
fn the_readme_is_short() {
    let text = fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let lines = text.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines (at most {README_MAX_LINES}): move details to docs/ and \
         results to deploy/bench/results.md"
    );
}

/// The set-up commands a fresh machine needs, and no others, in the README's set-up.
#[test]
fn the_readme_sets_up_with_two_commands() {
    let text = fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let setup = text
        .split("\n## ")
        .find(|s| s.starts_with("Set-up"))
        .expect("a Set-up section");
    let commands: Vec<&str> = setup
        .split("```sh\n")
        .skip(1)
        .filter_map(|block| block.split("```").next())
        .flat_map(|block| block.lines())
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(commands, ["cargo run --release", "cargo test --workspace"]);
}

/// `issue 12`, `(issue 21)`, `wave 2`: words of the tracker, not of the product.
fn internal_words(line: &str) -> Option<&'static str> {
    let lower = line.to_lowercase();
    let numbered = |word: &str| {
        lower.match_indices(word).any(|(i, _)| {
            let before_ok = i == 0 || !lower.as_bytes()[i - 1].is_ascii_alphanumeric();
            let rest = &lower[i + word.len()..];
            before_ok
                && rest.starts_with(' ')
                && rest[1..].starts_with(|c: char| c.is_ascii_digit())
        })
    };
    if numbered("issue") {
        Some("an issue number")
    } else if numbered("wave") {
        Some("a work round")
    } else {
        None
    }
}

#[test]
fn user_pages_carry_no_internal_words() {
    let root = repo_root();
    let mut pages = vec![root.join("README.md")];
    for dir in ["docs", "deploy", "deploy/bench"] {
        if let Ok(entries) = fs::read_dir(root.join(dir)) {
            pages.extend(
                entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|e| e == "md")),
            );
        }
    }
    for krate in [
        "remoting",
        "store",
        "namesrv",
        "client",
        "broker",
        "tools",
        "controller",
    ] {
        let readme = root.join(krate).join("README.md");
        if readme.exists() {
            pages.push(readme);
        }
    }
    let mut found = Vec::new();
    for page in &pages {
        let text = fs::read_to_string(page).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            if let Some(what) = internal_words(line) {
                found.push(format!("{}:{}: {what}: {line}", page.display(), n + 1));
            }
        }
    }
    assert!(pages.len() > 15, "only {} pages read", pages.len());
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn internal_words_are_recognised() {
    assert!(internal_words("targets from issue 7").is_some());
    assert!(internal_words("Round two (Issue 21)").is_some());
    assert!(internal_words("as in wave 1").is_some());
    assert!(internal_words("a known issue with clients").is_none());
    assert!(internal_words("microwave 3").is_none());
    assert!(internal_words("tissue 4").is_none());
}
