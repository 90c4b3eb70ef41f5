//! Turning command-line paths into the files to replay.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use loopguard_adapters::reader::{Detected, Source};
use loopguard_adapters::Format;
use loopguard_core::Value;

/// One input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// Standard input (`-`).
    Stdin,
    /// A file.
    File(PathBuf),
}

/// Extensions of files a directory search picks up.
const EXTENSIONS: &[&str] = &["jsonl", "json", "traj", "sqlite", "sqlite3", "db"];

/// Files in a directory that look like transcripts but are not sessions: OpenClaw's
/// session store metadata, trajectory sidecars and legacy compaction checkpoints (whose
/// content the session file already holds).
fn is_excluded(name: &str) -> bool {
    name == "sessions.json"
        || name.ends_with(".trajectory.jsonl")
        || name.ends_with(".trajectory-path.json")
        || name.contains(".checkpoint.")
}

/// Expands files, directories (recursively, sorted) and glob patterns.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<Input>> {
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            out.push(Input::Stdin);
            continue;
        }
        if p.is_dir() {
            let before = out.len();
            walk(p, &mut out).with_context(|| format!("cannot read directory {}", p.display()))?;
            if out.len() == before {
                bail!(
                    "{}: no transcript files found (looked for *.{})",
                    p.display(),
                    EXTENSIONS.join(", *.")
                );
            }
            continue;
        }
        if p.exists() {
            out.push(Input::File(p.clone()));
            continue;
        }
        let pattern = p.to_string_lossy();
        if pattern.contains(['*', '?', '[']) {
            let mut matched = Vec::new();
            for entry in glob::glob(&pattern).with_context(|| format!("bad pattern {pattern}"))? {
                let entry = entry?;
                if entry.is_dir() {
                    walk(&entry, &mut matched)?;
                } else {
                    matched.push(Input::File(entry));
                }
            }
            if matched.is_empty() {
                bail!("{pattern}: no files match");
            }
            out.extend(matched);
            continue;
        }
        bail!("{}: no such file or directory", p.display());
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<Input>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            walk(&path, out)?;
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| EXTENSIONS.contains(&e))
            && !is_excluded(&name)
        {
            out.push(Input::File(path));
        }
    }
    Ok(())
}

/// What [`sniff`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sniffed {
    /// A known format.
    Format(Format),
    /// The file is empty or holds only whitespace.
    Blank,
    /// Not a format loopguard knows.
    Unknown,
}

/// Recognises a file's format from its structure (the adapters' [`Source::detect`]). The
/// source is returned when the file cannot be opened twice (a pipe, a FIFO, `/dev/fd/N`):
/// it holds what detection read, and must be the one read afterwards.
pub fn sniff(path: &Path) -> Result<(Sniffed, Option<Source>)> {
    let mut source =
        Source::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let found = match source
        .detect()
        .with_context(|| format!("cannot read {}", path.display()))?
    {
        Detected::Format(f) => Sniffed::Format(f),
        Detected::Blank => Sniffed::Blank,
        _ => Sniffed::Unknown,
    };
    Ok((found, (!source.is_regular_file()).then_some(source)))
}

/// Drops inputs named twice (the same file reached through two arguments, e.g. a
/// directory and a glob), keeping the first.
pub fn dedupe(inputs: Vec<Input>) -> Vec<Input> {
    let mut seen = std::collections::HashSet::new();
    inputs
        .into_iter()
        .filter(|i| match i {
            Input::Stdin => seen.insert(PathBuf::from("-")),
            Input::File(p) => seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())),
        })
        .collect()
}

/// The `--format` names with descriptions, one per line.
pub fn format_list() -> String {
    Format::ALL
        .iter()
        .map(|f| format!("  {:<18} {}", f.name(), f.describe()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A session name per file: the file name without its extensions, with as many parent
/// directories added as it takes to tell apart files that would otherwise share a name.
pub fn session_names(paths: &[&Path]) -> Vec<String> {
    let stem = |p: &Path| {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let cut = [
            "traj.json",
            "jsonl",
            "json",
            "traj",
            "sqlite3",
            "sqlite",
            "db",
        ]
        .iter()
        .find_map(|ext| name.strip_suffix(&format!(".{ext}")).map(str::to_string));
        cut.unwrap_or(name)
    };
    // Each path as its name parts from the file outwards: [stem, parent, grandparent, …].
    let parts: Vec<Vec<String>> = paths
        .iter()
        .map(|p| {
            let mut v = vec![stem(p)];
            v.extend(
                p.parent()
                    .into_iter()
                    .flat_map(Path::components)
                    .rev()
                    .filter_map(|c| match c {
                        std::path::Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                        _ => None,
                    }),
            );
            v
        })
        .collect();
    let name = |parts: &[String], depth: usize| {
        let take = depth.min(parts.len());
        let mut picked: Vec<&str> = parts[..take].iter().map(String::as_str).collect();
        picked.reverse();
        picked.join("/")
    };
    let mut depth = vec![1usize; paths.len()];
    // Lengthen every clashing name by one directory until no name clashes or nothing is
    // left to add (the same path given twice).
    loop {
        let names: Vec<String> = parts.iter().zip(&depth).map(|(p, d)| name(p, *d)).collect();
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for n in &names {
            *counts.entry(n.as_str()).or_default() += 1;
        }
        let mut grew = false;
        for (i, n) in names.iter().enumerate() {
            if counts[n.as_str()] > 1 && depth[i] < parts[i].len() {
                depth[i] += 1;
                grew = true;
            }
        }
        if !grew {
            return names;
        }
    }
}

/// A progress bar on stderr for more than one file (hidden when stderr is not a
/// terminal).
pub fn progress(files: u64) -> ProgressBar {
    if files <= 1 {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(files), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} files {wide_msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// The arguments of a call, shortened for the report.
pub fn args_preview(args: &Value<'_>) -> String {
    const MAX: usize = 60;
    let text = loopguard_core::canonical::to_canonical_string(args);
    if text.chars().count() <= MAX {
        text
    } else {
        let cut: String = text.chars().take(MAX - 1).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_are_unique() {
        let a = Path::new("/x/agents/main/sessions/abc.jsonl");
        let b = Path::new("/x/agents/ops/sessions/abc.jsonl");
        let c = Path::new("/x/run.traj.json");
        assert_eq!(
            session_names(&[a, b, c]),
            ["main/sessions/abc", "ops/sessions/abc", "run"]
        );
        assert_eq!(session_names(&[a, c]), ["abc", "run"]);
        let d = Path::new("runs/one/x.jsonl");
        let e = Path::new("runs/two/x.jsonl");
        let f = Path::new("other/x.jsonl");
        assert_eq!(session_names(&[d, e, f]), ["one/x", "two/x", "other/x"]);
    }

    #[test]
    fn directories_are_walked_in_order_with_exclusions() {
        let dir = std::env::temp_dir().join(format!("lg-inputs-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        for f in [
            "b.jsonl",
            "a.json",
            "sessions.json",
            "x.trajectory.jsonl",
            "notes.txt",
            "sub/c.traj",
        ] {
            std::fs::write(dir.join(f), "{}").unwrap();
        }
        let got = expand(std::slice::from_ref(&dir)).unwrap();
        let names: Vec<_> = got
            .iter()
            .map(|i| match i {
                Input::File(p) => p.strip_prefix(&dir).unwrap().display().to_string(),
                Input::Stdin => "-".into(),
            })
            .collect();
        assert_eq!(names, ["a.json", "b.jsonl", "sub/c.traj"]);
        let globbed = expand(&[dir.join("*.json*")]).unwrap();
        assert_eq!(globbed.len(), 4); // a.json, b.jsonl, sessions.json, x.trajectory.jsonl
        assert!(expand(&[dir.join("nothing-*.jsonl")]).is_err());
        assert!(expand(&[dir.join("missing.jsonl")]).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
