//! Every relative link in the repository's Markdown resolves: the file exists, and a `#anchor`
//! names a heading of the page it points at (GitHub's heading slugs). A newcomer following the
//! README into `docs/` never meets a dead link, and a page that is renamed or merged (as
//! the Claude Code hook's supplementary page was into `docs/claude-code.md`) fails here until
//! its links follow.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Folders that hold no documentation of ours: build output, installed packages, fixtures
/// copied from other projects (their links point into those projects).
const SKIP_DIRS: &[&str] = &[
    "target",
    "node_modules",
    ".git",
    "fixtures",
    ".venv",
    "sandbox",
];

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !SKIP_DIRS.contains(&name) {
                markdown_files(&path, out);
            }
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// GitHub's anchor for a heading: lower case, spaces become hyphens, and every character
/// that is not a letter, a digit, `-` or `_` is dropped (backticks, dots, parentheses, …).
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors a page offers: one per heading outside fenced code, with GitHub's `-1`, `-2`
/// suffixes for repeated headings.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let hashes = line.bytes().take_while(|&b| b == b'#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let base = slug(&line[hashes..]);
            let mut anchor = base.clone();
            let mut n = 0;
            while seen.contains(&anchor) {
                n += 1;
                anchor = format!("{base}-{n}");
            }
            seen.insert(anchor);
        }
    }
    seen
}

/// `(line, target)` of every inline link `[text](target)` outside fenced code and code spans.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop code spans so `[a](b)` shown as code is not taken for a link.
        let mut plain = String::new();
        for (k, part) in line.split('`').enumerate() {
            if k % 2 == 0 {
                plain.push_str(part);
            }
        }
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split_whitespace().next().unwrap_or("");
            out.push((i + 1, target.to_string()));
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_in_the_markdown_resolves() {
    let root = common::root();
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    assert!(
        files.iter().any(|f| f.ends_with("README.md")) && files.len() > 20,
        "found only {} Markdown files under {}",
        files.len(),
        root.display()
    );
    let mut dead = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for (line, target) in links(&text) {
            if target.is_empty()
                || target.contains("://")
                || target.starts_with("mailto:")
                || target.starts_with('<')
            {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let dest = if path.is_empty() {
                file.clone()
            } else {
                file.parent().expect("a file has a folder").join(path)
            };
            let shown = format!(
                "{}:{line}: {target}",
                file.strip_prefix(&root).unwrap_or(file).display()
            );
            if !dest.exists() {
                dead.push(format!("{shown} (no such file)"));
                continue;
            }
            if let Some(anchor) = anchor {
                if dest.extension().is_some_and(|e| e == "md") {
                    let page = std::fs::read_to_string(&dest).unwrap_or_default();
                    if !anchors(&page).contains(anchor) {
                        dead.push(format!("{shown} (no heading with that anchor)"));
                    }
                }
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} relative links found: is the link scanner broken?"
    );
    assert!(dead.is_empty(), "dead links:\n{}", dead.join("\n"));
}

#[test]
fn slugs_follow_github() {
    assert_eq!(
        slug(" Latency over streamable HTTP (one kept-alive connection)"),
        "latency-over-streamable-http-one-kept-alive-connection"
    );
    assert_eq!(
        slug(" Sessions of `--listen ADDR -- COMMAND`"),
        "sessions-of---listen-addr----command"
    );
    assert_eq!(
        slug(" What stays after a session ends (observe mode too)"),
        "what-stays-after-a-session-ends-observe-mode-too"
    );
    let page = "# A\n```\n# not a heading\n```\n## A\n";
    assert_eq!(
        anchors(page),
        ["a", "a-1"].into_iter().map(String::from).collect()
    );
    assert_eq!(
        links("see [x](a.md#b) and `[y](docs/mcp.md)`"),
        vec![(1, "a.md#b".to_string())]
    );
}
