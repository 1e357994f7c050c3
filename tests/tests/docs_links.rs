//! Every reference a reader can follow resolves: relative links and their anchors in the
//! README and every Markdown page, repository paths named in backticks on those pages,
//! and the `docs/<page>.md#<anchor>` pointers in source comments. A page renamed, a
//! heading reworded or a file moved without its references fails here, naming each
//! reference that broke.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Component, Path, PathBuf};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// Folders never read: build output, installed clients, fuzzing corpora.
const SKIPPED_DIRS: &[&str] = &["target", "node_modules", ".git", "corpus", "artifacts"];

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if !SKIPPED_DIRS.contains(&name.as_ref()) && !name.starts_with('.') {
                walk(&path, out);
            }
        } else {
            out.push(path);
        }
    }
}

fn files_with_extension(root: &Path, ext: &str) -> Vec<PathBuf> {
    let mut all = Vec::new();
    walk(root, &mut all);
    all.retain(|p| p.extension().is_some_and(|e| e == ext));
    all.sort();
    all
}

/// GitHub's anchor for a heading: lower case, every character that is not a letter,
/// digit, `-`, `_` or space dropped, spaces turned into `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// What one Markdown page offers and refers to.
#[derive(Default)]
struct Page {
    anchors: BTreeSet<String>,
    links: Vec<String>,
    code_spans: Vec<String>,
}

fn parse_page(text: &str) -> Page {
    let mut page = Page::default();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut heading: Option<String> = None;
    let mut in_code_block = false;
    for event in Parser::new_ext(text, Options::all()) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::End(TagEnd::Heading(_)) => {
                let text = heading.take().unwrap_or_default();
                let base = slug(&text);
                let n = seen.entry(base.clone()).or_insert(0);
                let anchor = if *n == 0 {
                    base.clone()
                } else {
                    format!("{base}-{n}")
                };
                *n += 1;
                page.anchors.insert(anchor);
            }
            Event::Start(Tag::CodeBlock(_)) => in_code_block = true,
            Event::End(TagEnd::CodeBlock) => in_code_block = false,
            Event::Text(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
                if !in_code_block {
                    page.code_spans.push(t.to_string());
                }
            }
            Event::Start(Tag::Link { dest_url, .. }) => page.links.push(dest_url.to_string()),
            Event::Start(Tag::Image { dest_url, .. }) => page.links.push(dest_url.to_string()),
            _ => {}
        }
    }
    page
}

/// `a/b/../c` without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

struct Docs {
    root: PathBuf,
    pages: HashMap<PathBuf, Page>,
}

impl Docs {
    fn load(root: &Path) -> Docs {
        let pages = files_with_extension(root, "md")
            .into_iter()
            .map(|p| {
                let text = fs::read_to_string(&p).unwrap_or_default();
                (normalize(&p), parse_page(&text))
            })
            .collect();
        Docs {
            root: root.to_path_buf(),
            pages,
        }
    }

    /// Why `target` (a path with an optional `#anchor`) does not resolve from `from`'s
    /// folder, or `None` when it does.
    fn broken(&self, from: &Path, target: &str) -> Option<String> {
        let (path, anchor) = match target.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (target, None),
        };
        let file = if path.is_empty() {
            from.to_path_buf()
        } else if let Some(abs) = path.strip_prefix('/') {
            self.root.join(abs)
        } else {
            from.parent().unwrap_or(&self.root).join(path)
        };
        let file = normalize(&file);
        if !file.exists() {
            return Some(format!("no such file {}", file.display()));
        }
        let anchor = anchor.filter(|a| !a.is_empty())?;
        // Line anchors into source files (`#L10`) are GitHub's, not checked.
        let page = self.pages.get(&file)?;
        if page.anchors.contains(anchor) {
            None
        } else {
            Some(format!(
                "no heading with anchor #{anchor} in {}",
                file.display()
            ))
        }
    }
}

fn is_external(link: &str) -> bool {
    link.contains("://") || link.starts_with("mailto:")
}

/// Top-level folders whose paths, named in backticks on a page, must exist.
const REPO_DIRS: &[&str] = &[
    "remoting/",
    "store/",
    "auth/",
    "observe/",
    "controller/",
    "namesrv/",
    "broker/",
    "client/",
    "tools/",
    "tests/",
    "deploy/",
    "docs/",
    ".ci/",
];

/// A code span that names a repository path: starts with a top-level folder and holds
/// no pattern, placeholder or spaces. A trailing `:line` or `#anchor` is cut.
fn repo_path(span: &str) -> Option<&str> {
    if !REPO_DIRS.iter().any(|d| span.starts_with(d)) {
        return None;
    }
    // Apache's Java sources, named by their own path on a page about the protocol.
    if span.contains("/src/main/java/") || span.ends_with(".java") {
        return None;
    }
    if span
        .chars()
        .any(|c| c.is_whitespace() || "*{}<>$|,=".contains(c))
        || span.contains("...")
        || span.contains('…')
    {
        return None;
    }
    let span = span.split('#').next().unwrap_or(span);
    let span = match span.rsplit_once(':') {
        Some((p, line)) if line.chars().all(|c| c.is_ascii_digit()) => p,
        _ => span,
    };
    Some(span)
}

#[test]
fn every_link_and_anchor_in_the_markdown_resolves() {
    let root = repo_root();
    let docs = Docs::load(&root);
    assert!(
        docs.pages.len() > 10,
        "found only {} Markdown pages under {}",
        docs.pages.len(),
        root.display()
    );
    let mut broken = Vec::new();
    let mut checked = 0;
    for (file, page) in &docs.pages {
        for link in &page.links {
            if is_external(link) {
                continue;
            }
            checked += 1;
            if let Some(why) = docs.broken(file, link) {
                broken.push(format!("{}: link ({link}): {why}", file.display()));
            }
        }
        for span in &page.code_spans {
            let Some(path) = repo_path(span) else {
                continue;
            };
            checked += 1;
            // A crate's own README names its files from the crate's folder.
            let page_dir = file.parent().unwrap_or(&root);
            if !root.join(path).exists() && !page_dir.join(path).exists() {
                broken.push(format!(
                    "{}: names `{span}`, which does not exist",
                    file.display()
                ));
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} references found: parser broken?"
    );
    assert!(
        broken.is_empty(),
        "{} broken references:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

/// `docs/<page>.md` and `docs/<page>.md#<anchor>` in a line of source.
fn doc_pointers(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("docs/") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_alphanumeric() || "/._-#".contains(c)))
            .unwrap_or(tail.len());
        let pointer = tail[..end].trim_end_matches(['.', ',']);
        // Only pages of the repository's docs/ folder (not e.g. `apache/docs/...`).
        let preceded_by_path = rest[..i].ends_with(|c: char| c.is_alphanumeric() || c == '/');
        if !preceded_by_path
            && pointer
                .split('#')
                .next()
                .is_some_and(|p| p.ends_with(".md"))
        {
            out.push(pointer);
        }
        rest = &tail[end.max(1)..];
    }
    out
}

#[test]
fn every_docs_pointer_in_source_comments_resolves() {
    let root = repo_root();
    let docs = Docs::load(&root);
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in files_with_extension(&root, "rs") {
        // This file's own examples of pointers are not pointers.
        if file.ends_with(file!().rsplit('/').next().unwrap_or_default()) {
            continue;
        }
        let Ok(text) = fs::read_to_string(&file) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            for pointer in doc_pointers(line) {
                checked += 1;
                if let Some(why) = docs.broken(&root.join("README.md"), pointer) {
                    broken.push(format!(
                        "{}:{}: {pointer}: {why}",
                        file.strip_prefix(&root).unwrap_or(&file).display(),
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} docs pointers found: scanner broken?"
    );
    assert!(
        broken.is_empty(),
        "{} broken docs pointers in source:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn slugs_follow_githubs_rules() {
    assert_eq!(
        slug("Master/slave groups and failover"),
        "masterslave-groups-and-failover"
    );
    assert_eq!(slug("`broker.conf` keys"), "brokerconf-keys");
    assert_eq!(
        slug("The whole matrix (2026-12-02 08:05–08:22 UTC, commit 55d177f)"),
        "the-whole-matrix-2026-12-02-08050822-utc-commit-55d177f"
    );
    assert_eq!(slug("SyncStateSet"), "syncstateset");
    assert_eq!(slug("POP_MESSAGE codes"), "pop_message-codes");
}

#[test]
fn repo_paths_are_recognised_in_code_spans() {
    assert_eq!(repo_path("broker/src/lib.rs"), Some("broker/src/lib.rs"));
    assert_eq!(
        repo_path("store/src/commitlog.rs:42"),
        Some("store/src/commitlog.rs")
    );
    assert_eq!(repo_path("docs/store.md#read-path"), Some("docs/store.md"));
    assert_eq!(repo_path("broker/src/*.rs"), None);
    assert_eq!(repo_path("tests/chaos/run --only x"), None);
    assert_eq!(repo_path("mqbroker -p"), None);
    assert_eq!(
        doc_pointers("// see docs/x.md#some-anchor, and docs/y.md."),
        vec!["docs/x.md#some-anchor", "docs/y.md"]
    );
    assert!(doc_pointers("apache/docs/cn/x.md").is_empty());
}
