//! `loopguard replay --profile openclaw-2026.9.6`: the shipped release's decisions through
//! the binary. Two cases of `tests/fixtures/openclaw-2026.9.6` (produced by the
//! `openclaw@2026.9.6` package's own code) are compared record by record (without `shown`,
//! what the release shows the model): the first critical of a run blocks, the next ends it
//! (`abort`), and renamed tools hash under the release's names. The full set runs through a
//! `Guard` in `crates/loopguard-guard/tests/parity_openclaw_2026_9_6.rs`.

mod common;
use common::fixtures;

use std::process::Command;

fn records(bytes: &[u8]) -> Vec<serde_json::Value> {
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_slice(l).expect("a JSON record");
            v.as_object_mut().expect("an object").remove("shown");
            v
        })
        .collect()
}

#[test]
fn replay_with_the_shipped_profile_decides_as_the_release() {
    let dir = fixtures().join("openclaw-2026.9.6");
    for case in ["generic_critical_then_stop", "tool_name_aliases"] {
        let out = Command::new(common::bin())
            .args([
                "replay",
                "--profile",
                "openclaw-2026.9.6",
                "--json",
                "--config",
            ])
            .arg(dir.join(format!("{case}.config.json")))
            .arg(dir.join(format!("{case}.events.jsonl")))
            .output()
            .expect("loopguard runs");
        assert!(
            out.status.success(),
            "{case}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = records(&out.stdout);
        let want =
            records(&std::fs::read(dir.join(format!("{case}.expected.jsonl"))).expect("expected"));
        assert_eq!(got.len(), want.len(), "{case}: number of decisions");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g, w, "{case}: line {}", w["line"]);
        }
        assert!(got
            .iter()
            .any(|r| r["decision"] == "abort" || case != "generic_critical_then_stop"));
    }
}

#[test]
fn the_default_profile_decides_those_streams_differently() {
    let dir = fixtures().join("openclaw-2026.9.6");
    let case = "generic_critical_then_stop";
    let out = Command::new(common::bin())
        .args(["replay", "--json", "--config"])
        .arg(dir.join(format!("{case}.config.json")))
        .arg(dir.join(format!("{case}.events.jsonl")))
        .output()
        .expect("loopguard runs");
    assert!(out.status.success());
    let got = records(&out.stdout);
    let want =
        records(&std::fs::read(dir.join(format!("{case}.expected.jsonl"))).expect("expected"));
    assert_ne!(got, want, "the documented profile is not the shipped one");
    assert!(got.iter().all(|r| r["decision"] != "abort"));
}

/// An OpenClaw SQLite session store holding the `read-loop` transcript, written (its
/// `schema_meta.app_version` says, as OpenClaw 2026.9.6's does) by `release`.
fn store(name: &str, release: Option<&str>) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lg-era-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("openclaw-agent.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE transcript_events(session_id TEXT, seq INTEGER, event_json TEXT, created_at INTEGER, PRIMARY KEY(session_id, seq));
         CREATE TABLE schema_meta(meta_key TEXT PRIMARY KEY, role TEXT, schema_version INTEGER, agent_id TEXT, app_version TEXT, created_at INTEGER, updated_at INTEGER);",
    )
    .unwrap();
    if let Some(r) = release {
        conn.execute(
            "INSERT INTO schema_meta VALUES ('primary', 'agent', 23, 'main', ?1, 1, 1)",
            [r],
        )
        .unwrap();
    }
    let text =
        std::fs::read_to_string(fixtures().join("transcripts/openclaw/read-loop.jsonl")).unwrap();
    for (seq, line) in text.lines().enumerate() {
        conn.execute(
            "INSERT INTO transcript_events VALUES ('s', ?1, ?2, ?3)",
            rusqlite::params![seq as i64, line, 1_788_622_000_000i64 + seq as i64],
        )
        .unwrap();
    }
    db
}

fn replay(args: &[&str], db: &std::path::Path) -> (String, String) {
    let out = Command::new(common::bin())
        .arg("replay")
        .args(args)
        .arg(db)
        .output()
        .expect("loopguard runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn replay_of_an_openclaw_store_picks_the_profile_of_the_release_it_records() {
    let shipped_critical = "CRITICAL: Called read with identical outcomes 20 times.";
    let documented_critical =
        "CRITICAL: Called read with identical arguments and identical outcomes 20 times.";

    // Written by 2026.9.6: that release's profile, and replay says so.
    let db = store("new", Some("2026.9.6"));
    let (out, err) = replay(&["--json"], &db);
    assert!(out.contains(shipped_critical), "{out}");
    assert!(
        out.contains("\"decision\":\"abort\""),
        "the second critical ends the run: {out}"
    );
    assert!(
        err.contains("openclaw-agent.sqlite: written by OpenClaw 2026.9.6: replayed with the profile of that release, openclaw-2026.9.6"),
        "{err}"
    );
    // --profile (or a profile in the config) wins, and nothing is said about the release.
    let (out, err) = replay(&["--json", "--profile", "openclaw"], &db);
    assert!(out.contains(documented_critical), "{out}");
    assert!(!err.contains("written by OpenClaw"), "{err}");

    // Written by an older release: the documented profile.
    let db = store("old", Some("2026.8.30"));
    let (out, err) = replay(&["--json"], &db);
    assert!(out.contains(documented_critical), "{out}");
    assert!(
        err.contains(
            "written by OpenClaw 2026.8.30: replayed with the profile of that release, openclaw"
        ),
        "{err}"
    );

    // No release recorded (and every JSONL session): the documented profile, said.
    let db = store("none", None);
    let (out, err) = replay(&["--json"], &db);
    assert!(out.contains(documented_critical), "{out}");
    assert!(
        err.contains("the session names no OpenClaw release: replayed with the documented profile, openclaw (--profile openclaw-2026.9.6 for a session of that release)"),
        "{err}"
    );
    let jsonl = fixtures().join("transcripts/openclaw/read-loop.jsonl");
    let (_, err) = replay(&["--json"], &jsonl);
    assert!(
        err.contains("read-loop.jsonl: the session names no OpenClaw release"),
        "{err}"
    );
    for name in ["new", "old", "none"] {
        let _ = std::fs::remove_dir_all(
            std::env::temp_dir().join(format!("lg-era-{name}-{}", std::process::id())),
        );
    }
}
