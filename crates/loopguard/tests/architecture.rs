//! ARCHITECTURE.md's statements about dependencies, held to the code:
//!
//! - its dependency table ("| crate | depends on |") lists every workspace crate with exactly
//!   the workspace crates it has as normal dependencies, as `cargo metadata` reports them, and
//!   each crate depends only on crates above it in the table;
//! - inside each crate, no module imports (through `crate::` paths, outside test modules and
//!   comments) a module that imports it, but for the cycles the page lists as known.
//!
//! The table and the list are parsed from the page, so the page and this test cannot drift.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn architecture() -> String {
    let path = root().join("ARCHITECTURE.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text between backticks, in order.
fn code_spans(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The dependency table: each crate with what it depends on, in the table's order.
fn documented_dependencies(page: &str) -> Vec<(String, BTreeSet<String>)> {
    let mut lines = page
        .lines()
        .skip_while(|l| !l.starts_with("| crate | depends on |"));
    assert!(
        lines.next().is_some(),
        "ARCHITECTURE.md has no \"| crate | depends on |\" table"
    );
    assert!(lines.next().is_some_and(|l| l.starts_with("|--")));
    lines
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l
                .trim()
                .trim_matches('|')
                .split('|')
                .map(str::trim)
                .collect();
            assert_eq!(cells.len(), 2, "{l}");
            let name = code_spans(cells[0]);
            assert_eq!(name.len(), 1, "one crate per row: {l}");
            let deps: BTreeSet<String> = code_spans(cells[1]).into_iter().collect();
            if deps.is_empty() {
                assert_eq!(cells[1], "none", "{l}");
            }
            (name[0].clone(), deps)
        })
        .collect()
}

struct Package {
    name: String,
    /// Normal (not dev, not build) dependencies among the workspace's crates.
    deps: BTreeSet<String>,
    /// The folder of its library (or binary) target's root file.
    src: PathBuf,
}

fn workspace() -> Vec<Package> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .arg("--manifest-path")
        .arg(root().join("Cargo.toml"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let names: BTreeSet<String> = packages
        .iter()
        .map(|p| p["name"].as_str().expect("name").to_string())
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().expect("name").to_string())
                .filter(|n| names.contains(n))
                .collect();
            let targets = p["targets"].as_array().expect("targets");
            let is = |t: &serde_json::Value, kind: &str| {
                t["kind"]
                    .as_array()
                    .is_some_and(|k| k.iter().any(|k| k == kind))
            };
            let main = targets
                .iter()
                .find(|t| ["lib", "rlib", "cdylib"].iter().any(|k| is(t, k)))
                .or_else(|| targets.iter().find(|t| is(t, "bin")))
                .expect("a library or binary target");
            let src = Path::new(main["src_path"].as_str().expect("src_path"))
                .parent()
                .expect("src folder")
                .to_path_buf();
            Package {
                name: p["name"].as_str().expect("name").to_string(),
                deps,
                src,
            }
        })
        .collect()
}

#[test]
fn the_dependency_table_is_the_manifests() {
    let documented = documented_dependencies(&architecture());
    let packages = workspace();
    let actual: BTreeMap<&str, &BTreeSet<String>> = packages
        .iter()
        .map(|p| (p.name.as_str(), &p.deps))
        .collect();
    let listed: BTreeSet<&str> = documented.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        listed,
        actual.keys().copied().collect::<BTreeSet<_>>(),
        "ARCHITECTURE.md's dependency table lists every workspace crate, and only those"
    );
    for (name, deps) in &documented {
        assert_eq!(
            deps,
            actual[name.as_str()],
            "ARCHITECTURE.md: what {name} depends on (normal dependencies among workspace crates)"
        );
    }
    // "Dependencies point up this table, never down".
    for (i, (name, deps)) in documented.iter().enumerate() {
        let above: BTreeSet<&String> = documented[..i].iter().map(|(n, _)| n).collect();
        for dep in deps {
            assert!(
                above.contains(dep),
                "ARCHITECTURE.md: {name} depends on {dep}, which is not above it in the table"
            );
        }
    }
}

/// The top-level modules of a crate's source folder and the top-level modules each imports
/// through `crate::` paths (`crate::a::…`, `crate::{a, b::…}`), outside comments and outside
/// what follows a file's first `#[cfg(test)]`.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    fn files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    fn ident(s: &str) -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    }
    let mut all = Vec::new();
    files(src, &mut all);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in all {
        let rel = path.strip_prefix(src).expect("under src");
        let first = rel.components().next().expect("a component");
        let top = first.as_os_str().to_string_lossy();
        let top = top.strip_suffix(".rs").unwrap_or(&top).to_string();
        if top == "lib" || top == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("source");
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let code: String = code
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let uses = graph.entry(top.clone()).or_default();
        for (i, _) in code.match_indices("crate::") {
            let rest = &code[i + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let mut depth = 0;
                let mut segment_start = true;
                for (j, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => segment_start = true,
                        c if segment_start && !c.is_whitespace() => {
                            uses.insert(ident(&group[j..]));
                            segment_start = false;
                        }
                        _ => {}
                    }
                }
            } else {
                uses.insert(ident(rest));
            }
        }
    }
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for (module, uses) in graph.iter_mut() {
        uses.retain(|u| modules.contains(u) && u != module);
    }
    graph
}

/// Pairs of modules that reach each other.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<(String, String)> {
    let reaches = |from: &str, to: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_string()];
        while let Some(m) = stack.pop() {
            if m == to {
                return true;
            }
            for next in graph.get(&m).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        false
    };
    let mut out = BTreeSet::new();
    for (a, uses) in graph {
        for b in uses {
            if reaches(b, a) {
                let pair = if a < b { (a, b) } else { (b, a) };
                out.insert((pair.0.clone(), pair.1.clone()));
            }
        }
    }
    out
}

/// The known cycles ARCHITECTURE.md lists: lines "- `CRATE`: `a` ↔ `b` …".
fn documented_cycles(page: &str) -> BTreeSet<(String, String, String)> {
    page.lines()
        .filter(|l| l.trim_start().starts_with("- `") && l.contains('↔'))
        .map(|l| {
            let spans = code_spans(l);
            assert!(spans.len() >= 3, "{l}");
            let (a, b) = if spans[1] < spans[2] {
                (&spans[1], &spans[2])
            } else {
                (&spans[2], &spans[1])
            };
            (spans[0].clone(), a.clone(), b.clone())
        })
        .collect()
}

#[test]
fn modules_depend_one_way_but_for_the_listed_cycles() {
    let mut found = BTreeSet::new();
    let packages = workspace();
    for p in &packages {
        let graph = module_graph(&p.src);
        for (a, b) in cycles(&graph) {
            found.insert((p.name.clone(), a, b));
        }
    }
    assert_eq!(
        found,
        documented_cycles(&architecture()),
        "module cycles in the code against those ARCHITECTURE.md lists"
    );
    // The scan itself sees imports: the binary's `cmd` uses `progress`.
    let binary = packages
        .iter()
        .find(|p| p.name == "loopguard")
        .expect("the binary");
    assert!(module_graph(&binary.src)["cmd"].contains("progress"));
}
