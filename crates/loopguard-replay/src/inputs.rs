//! Turning command-line paths (files, directories, glob patterns, `-`) into the inputs to
//! replay, and naming every file a directory search passed over.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Component, Path, PathBuf};

/// One input.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Input {
    /// Standard input (`-`).
    Stdin,
    /// A file.
    File(PathBuf),
}

impl Input {
    /// How the input is named in messages: its path, or `stdin`.
    ///
    /// ```
    /// use loopguard_replay::Input;
    /// assert_eq!(Input::Stdin.display(), "stdin");
    /// assert_eq!(Input::File("a/b.jsonl".into()).display(), "a/b.jsonl");
    /// ```
    pub fn display(&self) -> String {
        match self {
            Input::Stdin => "stdin".to_string(),
            Input::File(p) => p.display().to_string(),
        }
    }

    /// The path used for session naming (`stdin` for standard input).
    pub fn path(&self) -> &Path {
        match self {
            Input::Stdin => Path::new("stdin"),
            Input::File(p) => p,
        }
    }
}

/// Extensions of files a directory search picks up.
pub const EXTENSIONS: &[&str] = &["jsonl", "json", "traj", "sqlite", "sqlite3", "db"];

/// Why a file found by a directory search (or a glob) is not replayed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipReason {
    /// Its extension is not one of [`EXTENSIONS`].
    Extension,
    /// A hidden file or directory (its name starts with a dot).
    Hidden,
    /// A file next to sessions that is not a session itself (the reason says which kind).
    NotASession(&'static str),
    /// It could not be read (a directory that cannot be listed, a file that cannot be
    /// opened, a broken link).
    Unreadable(String),
    /// Its content is in no format loopguard knows.
    Unrecognised,
}

impl SkipReason {
    /// `true` when the file may hold data that was not replayed: an unreadable or
    /// unrecognised file makes the replay's exit status non-zero, a file skipped for its
    /// name does not.
    pub fn loses_data(&self) -> bool {
        matches!(self, SkipReason::Unreadable(_) | SkipReason::Unrecognised)
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::Extension => write!(
                f,
                "not a transcript extension (looked for *.{})",
                EXTENSIONS.join(", *.")
            ),
            SkipReason::Hidden => f.write_str("hidden"),
            SkipReason::NotASession(what) => write!(f, "{what}, not a session"),
            SkipReason::Unreadable(why) => write!(f, "cannot be read: {why}"),
            SkipReason::Unrecognised => {
                f.write_str("not a transcript format loopguard knows (use --format to choose one)")
            }
        }
    }
}

/// A file that is not replayed, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// The file (or directory).
    pub path: PathBuf,
    /// Why.
    pub reason: SkipReason,
}

/// Why the command-line paths cannot be resolved at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// A path that is neither a file, a directory nor a pattern.
    #[error("{0}: no such file or directory")]
    NotFound(PathBuf),
    /// A pattern that matches nothing.
    #[error("{0}: no files match")]
    NoMatch(String),
    /// A malformed pattern.
    #[error("bad pattern {pattern}: {message}")]
    BadPattern {
        /// The pattern.
        pattern: String,
        /// What is wrong.
        message: String,
    },
    /// A directory given by name that cannot be listed.
    #[error("cannot read directory {path}: {source}")]
    Directory {
        /// The directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A directory given by name in which nothing can be replayed.
    /// Every file it skipped is named, with why.
    #[error("{}: no transcript files found (looked for *.{}){}", .0.display(), EXTENSIONS.join(", *."), skipped_list(.1))]
    EmptyDirectory(PathBuf, Vec<Skipped>),
    /// `-` together with other inputs.
    #[error("`-` (standard input) cannot be mixed with other inputs")]
    StdinMixed,
}

fn skipped_list(skipped: &[Skipped]) -> String {
    let mut out = match skipped.len() {
        0 => return String::new(),
        1 => "; 1 file skipped:".to_string(),
        n => format!("; {n} files skipped:"),
    };
    for s in skipped {
        out.push_str(&format!("\n  {}: {}", s.path.display(), s.reason));
    }
    out
}

/// The inputs to replay, in order, each once, and what the search passed over.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    /// Inputs in the order given (directories sorted, recursively).
    pub inputs: Vec<Input>,
    /// Files of directories (and globs) that are not replayed, in the order met.
    pub skipped: Vec<Skipped>,
}

/// Expands files, directories (recursively, sorted) and glob patterns into inputs; a file
/// reached twice (a directory and a glob) is kept once, where it was first met. A file
/// named on the command line is always an input, whatever its extension; files found in a
/// directory are inputs when their extension is one of [`EXTENSIONS`], and every other
/// file is listed in [`Resolved::skipped`] with its reason.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use loopguard_replay::inputs::{resolve, Input};
/// let dir = std::env::temp_dir().join(format!("lg-doc-resolve-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join("a.jsonl"), "")?;
/// std::fs::write(dir.join("notes.txt"), "")?;
/// let found = resolve(&[dir.clone()])?;
/// assert_eq!(found.inputs, [Input::File(dir.join("a.jsonl"))]);
/// assert_eq!(found.skipped[0].path, dir.join("notes.txt"));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(()) }
/// ```
pub fn resolve(paths: &[PathBuf]) -> Result<Resolved, InputError> {
    let mut out = Resolved::default();
    for p in paths {
        if p.as_os_str() == "-" {
            out.inputs.push(Input::Stdin);
            continue;
        }
        if p.is_dir() {
            let before = out.inputs.len();
            let skipped_before = out.skipped.len();
            let entries = std::fs::read_dir(p).map_err(|source| InputError::Directory {
                path: p.clone(),
                source,
            })?;
            walk_entries(entries, p, &mut out);
            if out.inputs.len() == before {
                return Err(InputError::EmptyDirectory(
                    p.clone(),
                    out.skipped.split_off(skipped_before),
                ));
            }
            continue;
        }
        if p.exists() {
            out.inputs.push(Input::File(p.clone()));
            continue;
        }
        let pattern = p.to_string_lossy();
        if pattern.contains(['*', '?', '[']) {
            let entries = glob::glob(&pattern).map_err(|e| InputError::BadPattern {
                pattern: pattern.to_string(),
                message: e.to_string(),
            })?;
            let mut matched = 0;
            for entry in entries {
                matched += 1;
                match entry {
                    Ok(path) if path.is_dir() => walk(&path, &mut out),
                    Ok(path) => out.inputs.push(Input::File(path)),
                    Err(e) => out.skipped.push(Skipped {
                        path: e.path().to_path_buf(),
                        reason: SkipReason::Unreadable(e.error().to_string()),
                    }),
                }
            }
            if matched == 0 {
                return Err(InputError::NoMatch(pattern.into_owned()));
            }
            continue;
        }
        return Err(InputError::NotFound(p.clone()));
    }
    if out.inputs.len() > 1 && out.inputs.contains(&Input::Stdin) {
        return Err(InputError::StdinMixed);
    }
    out.inputs = dedupe(std::mem::take(&mut out.inputs));
    Ok(out)
}

/// Files in a directory that look like transcripts but are not sessions: OpenClaw's
/// session store metadata, trajectory sidecars and legacy compaction checkpoints (whose
/// content the session file already holds).
fn not_a_session(name: &str) -> Option<&'static str> {
    if name == "sessions.json" {
        Some("OpenClaw's session index")
    } else if name.ends_with(".trajectory.jsonl") || name.ends_with(".trajectory-path.json") {
        Some("an OpenClaw trajectory sidecar")
    } else if name.contains(".checkpoint.") {
        Some("an OpenClaw compaction checkpoint")
    } else {
        None
    }
}

/// Files another input reads with it: a Cline or Roo Code panel log beside its task
/// history (which reads its token and cost figures), and the records of opencode's older
/// JSON storage other than sessions (a session file reads its messages and parts).
fn read_with_another(path: &Path) -> Option<&'static str> {
    let dir = path.parent()?;
    if path.file_name()? == "ui_messages.json"
        && dir.join("api_conversation_history.json").is_file()
    {
        return Some(
            "a Cline / Roo Code panel log, read with the api_conversation_history.json beside it",
        );
    }
    // `<storage>/message/<session>/<id>.json`, `<storage>/part/<message>/<id>.json`, …
    let root = path
        .ancestors()
        .skip(2)
        .take(2)
        .find(|r| is_opencode_storage(r))?;
    (!path.strip_prefix(root).ok()?.starts_with("session"))
        .then_some("a record of opencode's JSON storage, read with its session file")
}

/// `true` for opencode's older JSON storage folder (it has `session`, `message` and `part`).
fn is_opencode_storage(dir: &Path) -> bool {
    ["session", "message", "part"]
        .iter()
        .all(|d| dir.join(d).is_dir())
}

fn walk(dir: &Path, out: &mut Resolved) {
    match std::fs::read_dir(dir) {
        Ok(entries) => walk_entries(entries, dir, out),
        Err(e) => out.skipped.push(Skipped {
            path: dir.to_path_buf(),
            reason: SkipReason::Unreadable(e.to_string()),
        }),
    }
}

fn walk_entries(entries: std::fs::ReadDir, dir: &Path, out: &mut Resolved) {
    let mut paths = Vec::new();
    for entry in entries {
        match entry {
            Ok(e) => paths.push(e.path()),
            Err(e) => out.skipped.push(Skipped {
                path: dir.to_path_buf(),
                reason: SkipReason::Unreadable(format!("an entry cannot be listed: {e}")),
            }),
        }
    }
    paths.sort();
    for path in paths {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let skip = |reason| Skipped {
            path: path.clone(),
            reason,
        };
        if name.starts_with('.') {
            out.skipped.push(skip(SkipReason::Hidden));
            continue;
        }
        // `metadata` follows links: a broken link is unreadable, a link to a directory is
        // walked.
        match std::fs::metadata(&path) {
            Err(e) => out
                .skipped
                .push(skip(SkipReason::Unreadable(e.to_string()))),
            // opencode's storage: its other folders (messages, parts, diffs) are read with
            // the session files, listed once rather than file by file.
            Ok(m) if m.is_dir() && name != "session" && is_opencode_storage(dir) => {
                out.skipped.push(skip(SkipReason::NotASession(
                    "records of opencode's JSON storage, read with its session files",
                )))
            }
            Ok(m) if m.is_dir() => walk(&path, out),
            Ok(_) => {
                let known = path
                    .extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| EXTENSIONS.contains(&e));
                if !known {
                    out.skipped.push(skip(SkipReason::Extension));
                } else if let Some(what) = not_a_session(&name).or_else(|| read_with_another(&path))
                {
                    out.skipped.push(skip(SkipReason::NotASession(what)));
                } else {
                    out.inputs.push(Input::File(path));
                }
            }
        }
    }
}

/// Drops inputs named twice (the same file reached through two arguments, e.g. a
/// directory and a glob), keeping the first.
pub fn dedupe(inputs: Vec<Input>) -> Vec<Input> {
    let mut seen = HashSet::new();
    inputs
        .into_iter()
        .filter(|i| match i {
            Input::Stdin => seen.insert(PathBuf::from("-")),
            Input::File(p) => seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())),
        })
        .collect()
}

/// A session name per file: the file name without its extensions, with as many parent
/// directories added as it takes to tell apart files that would otherwise share a name.
///
/// ```
/// use loopguard_replay::inputs::session_names;
/// use std::path::Path;
/// let a = Path::new("/x/agents/main/sessions/abc.jsonl");
/// let b = Path::new("/x/agents/ops/sessions/abc.jsonl");
/// assert_eq!(session_names(&[a, b]), ["main/sessions/abc", "ops/sessions/abc"]);
/// ```
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
                        Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_read_with_another_are_listed_not_replayed() {
        let dir = std::env::temp_dir().join(format!("lg-inputs-with-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let task = dir.join("tasks/1");
        let lone = dir.join("tasks/2");
        let storage = dir.join("storage");
        for d in [
            &task,
            &lone,
            &storage.join("session/prj"),
            &storage.join("message/ses_1"),
            &storage.join("part/msg_1"),
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        for f in [
            task.join("api_conversation_history.json"),
            task.join("ui_messages.json"),
            lone.join("ui_messages.json"),
            storage.join("session/prj/ses_1.json"),
            storage.join("message/ses_1/msg_1.json"),
            storage.join("part/msg_1/prt_1.json"),
        ] {
            std::fs::write(f, "{}").unwrap();
        }
        let found = resolve(std::slice::from_ref(&dir)).unwrap();
        assert_eq!(
            found.inputs,
            [
                Input::File(storage.join("session/prj/ses_1.json")),
                Input::File(task.join("api_conversation_history.json")),
                // Alone, the panel log is read, and its reader says what to read instead.
                Input::File(lone.join("ui_messages.json")),
            ]
        );
        let skipped: Vec<_> = found.skipped.iter().map(|s| s.path.clone()).collect();
        assert_eq!(
            skipped,
            [
                storage.join("message"),
                storage.join("part"),
                task.join("ui_messages.json"),
            ]
        );
        // A part file named in a walk of its own folder is still not a session.
        let found = resolve(&[storage.join("part")]);
        assert!(found.is_err(), "{found:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

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
    fn directories_are_walked_in_order_and_every_skip_is_named() {
        let dir = std::env::temp_dir().join(format!("lg-inputs-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::create_dir_all(dir.join(".git")).unwrap();
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
        let got = resolve(std::slice::from_ref(&dir)).unwrap();
        let rel = |p: &Path| p.strip_prefix(&dir).unwrap().display().to_string();
        let names: Vec<_> = got.inputs.iter().map(|i| rel(i.path())).collect();
        assert_eq!(names, ["a.json", "b.jsonl", "sub/c.traj"]);
        let skipped: Vec<_> = got
            .skipped
            .iter()
            .map(|s| (rel(&s.path), s.reason.clone()))
            .collect();
        assert_eq!(
            skipped,
            [
                (".git".to_string(), SkipReason::Hidden),
                ("notes.txt".to_string(), SkipReason::Extension),
                (
                    "sessions.json".to_string(),
                    SkipReason::NotASession("OpenClaw's session index")
                ),
                (
                    "x.trajectory.jsonl".to_string(),
                    SkipReason::NotASession("an OpenClaw trajectory sidecar")
                ),
            ]
        );
        let globbed = resolve(&[dir.join("*.json*")]).unwrap();
        assert_eq!(globbed.inputs.len(), 4); // a.json, b.jsonl, sessions.json, x.trajectory.jsonl
        assert!(matches!(
            resolve(&[dir.join("nothing-*.jsonl")]),
            Err(InputError::NoMatch(_))
        ));
        assert!(matches!(
            resolve(&[dir.join("missing.jsonl")]),
            Err(InputError::NotFound(_))
        ));
        assert!(matches!(
            resolve(&[dir.join("b.jsonl"), "-".into()]),
            Err(InputError::StdinMixed)
        ));
        // Reached twice, kept once.
        let twice = resolve(&[dir.join("b.jsonl"), dir.clone()]).unwrap();
        assert_eq!(twice.inputs.len(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
