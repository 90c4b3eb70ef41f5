//! Identical decisions for identical events: every parity case (decision streams produced by
//! OpenClaw's own code) posted event by event to a `Guard` gives exactly the fixture's
//! records without `line`, with the in-memory store and with the SQLite store (every event
//! a load, an apply and a save of the encoded session).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use loopguard_core::OpenClawConfig;
use loopguard_guard::{Guard, MemoryOptions, MemoryStore, SqliteOptions, SqliteStore, Store};
use serde_json::Value;

fn parity_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/parity")
}

fn cases() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(parity_dir())
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".events.jsonl").map(str::to_string)
        })
        .collect();
    names.sort();
    assert_eq!(names.len(), 15, "parity fixtures missing");
    names
}

fn without_line(line: &str) -> Value {
    let mut v: Value = serde_json::from_str(line).unwrap();
    v.as_object_mut().unwrap().remove("line");
    v
}

fn check(store: impl Fn() -> Arc<dyn Store>) -> usize {
    check_with(store, |text| text)
}

/// [`check`] with each case's config rewritten by `edit`; the number of decisions checked.
fn check_with(store: impl Fn() -> Arc<dyn Store>, edit: impl Fn(String) -> String) -> usize {
    let mut checked = 0;
    for name in cases() {
        let dir = parity_dir();
        let text = std::fs::read_to_string(dir.join(format!("{name}.config.json"))).unwrap();
        let text = edit(text);
        let config = OpenClawConfig::from_json5(&text).unwrap().config;
        let guard = Guard::builder().config(config).store(store()).build();
        let events = std::fs::read_to_string(dir.join(format!("{name}.events.jsonl"))).unwrap();
        let expected = std::fs::read_to_string(dir.join(format!("{name}.expected.jsonl"))).unwrap();
        let lines: Vec<&str> = events.lines().filter(|l| !l.trim().is_empty()).collect();
        let want: Vec<&str> = expected.lines().collect();
        assert_eq!(lines.len(), want.len(), "{name}");
        for (i, (event, want)) in lines.iter().zip(want).enumerate() {
            let got = guard.apply_line(None, event.as_bytes()).unwrap();
            let got: Value = serde_json::from_slice(&got).unwrap();
            assert_eq!(got, without_line(want), "{name}, event {}", i + 1);
            checked += 1;
        }
    }
    checked
}

/// The escalation settings at their defaults, and budgets no case reaches, take the
/// guard's escalation path (the ladder and the budget counts run on every call) and leave
/// every decision OpenClaw's.
#[test]
fn parity_cases_with_on_critical_block_and_unreached_budgets() {
    let checked = check_with(
        || Arc::new(MemoryStore::new(MemoryOptions::default())),
        |text| {
            let mut v: Value = serde_json::from_str(&text).unwrap();
            assert!(v.get("loopguard").is_none());
            v["loopguard"] = serde_json::json!({
                "onCritical": "block",
                "budgets": {"callsPerRun": 1_000_000, "callsPerSession": 1_000_000}
            });
            v.to_string()
        },
    );
    let plain = check(|| Arc::new(MemoryStore::new(MemoryOptions::default())));
    assert_eq!(checked, plain);
}

#[test]
fn parity_cases_through_a_guard_in_memory() {
    check(|| Arc::new(MemoryStore::new(MemoryOptions::default())));
}

#[test]
fn parity_cases_through_a_guard_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let n = std::cell::Cell::new(0);
    check(|| {
        n.set(n.get() + 1);
        let path = dir.path().join(format!("case{}.sqlite3", n.get()));
        Arc::new(SqliteStore::open(&path, &SqliteOptions::default()).unwrap())
    });
}
