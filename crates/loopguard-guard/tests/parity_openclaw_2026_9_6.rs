//! The `openclaw-2026.9.6` profile through a `Guard`: every case of
//! `tests/fixtures/openclaw-2026.9.6` (decisions of the shipped `openclaw@2026.9.6`,
//! computed by its own code; see that directory's README) posted event by event, with the
//! profile selected in the config, gives the fixture's records without `line` and without
//! `shown` (what the wrapper shows the model, which front ends render), in memory and on
//! SQLite (every event a load, an apply and a save of the encoded session).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use loopguard_core::{DetectorProfile, OpenClawConfig};
use loopguard_guard::{Guard, MemoryOptions, MemoryStore, SqliteOptions, SqliteStore, Store};
use serde_json::Value;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/openclaw-2026.9.6")
}

fn cases() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .expect("the fixtures directory")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".events.jsonl").map(str::to_string)
        })
        .collect();
    names.sort();
    assert!(names.len() >= 80, "openclaw-2026.9.6 fixtures missing");
    names
}

fn without(line: &str) -> Value {
    let mut v: Value = serde_json::from_str(line).expect("expected JSON");
    let o = v.as_object_mut().expect("a record");
    o.remove("line");
    o.remove("shown");
    v
}

fn check(store: impl Fn() -> Arc<dyn Store>) {
    let mut failures = Vec::new();
    for name in cases() {
        let text =
            std::fs::read_to_string(dir().join(format!("{name}.config.json"))).expect("config");
        let mut config = OpenClawConfig::from_json5(&text)
            .expect("config loads")
            .config;
        config.set_profile(DetectorProfile::OpenClaw2026_9_6);
        let guard = Guard::builder().config(config).store(store()).build();
        let events =
            std::fs::read_to_string(dir().join(format!("{name}.events.jsonl"))).expect("events");
        let expected = std::fs::read_to_string(dir().join(format!("{name}.expected.jsonl")))
            .expect("expected");
        let lines: Vec<&str> = events.lines().filter(|l| !l.trim().is_empty()).collect();
        let want: Vec<&str> = expected.lines().collect();
        assert_eq!(lines.len(), want.len(), "{name}");
        let mut differs = None::<String>;
        for (i, (event, want)) in lines.iter().zip(want).enumerate() {
            let got = guard.apply_line(None, event.as_bytes()).expect("applies");
            let got: Value = serde_json::from_slice(&got).expect("a JSON record");
            let want = without(want);
            if got != want && differs.is_none() {
                differs = Some(format!(
                    "{name}, event {}:\n  got      {got}\n  expected {want}",
                    i + 1
                ));
            }
        }
        failures.extend(differs);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn shipped_cases_through_a_guard_in_memory() {
    check(|| Arc::new(MemoryStore::new(MemoryOptions::default())));
}

#[test]
fn shipped_cases_through_a_guard_on_sqlite() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let n = std::cell::Cell::new(0);
    check(|| {
        n.set(n.get() + 1);
        let path = dir.path().join(format!("case{}.sqlite3", n.get()));
        Arc::new(SqliteStore::open(&path, &SqliteOptions::default()).expect("sqlite"))
    });
}
