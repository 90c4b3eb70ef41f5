//! The strict profile through the guard: chosen in the config (`loopguard` block), it
//! reaches every front end built on the guard, and its state survives the store (a real
//! SQLite file, loaded and saved around every event).

use std::time::Duration;

use loopguard_core::OpenClawConfig;
use loopguard_guard::{open_store, Guard};

fn decisions(guard: &Guard, session: &str) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..9 {
        let call = format!(
            r#"{{"type":"call","session":"{session}","run":"r","callId":"c{i}","tool":"read","args":{{"path":"/missing.txt"}}}}"#
        );
        let d: serde_json::Value =
            serde_json::from_slice(&guard.apply_line(None, call.as_bytes()).unwrap()).unwrap();
        let decision = d["decision"].as_str().unwrap().to_string();
        let detector = d["detector"].as_str().unwrap_or("-").to_string();
        out.push(format!("{decision}:{detector}"));
        let outcome = format!(
            r#"{{"type":"outcome","session":"{session}","run":"r","callId":"c{i}","tool":"read","args":{{"path":"/missing.txt"}},"error":"ENOENT: no such file or directory"}}"#
        );
        guard.apply_line(None, outcome.as_bytes()).unwrap();
    }
    out
}

#[test]
fn strict_profile_from_the_config_survives_a_sqlite_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.sqlite3");
    let store = open_store(
        &format!("sqlite:{}", db.display()),
        Duration::from_secs(3600),
    )
    .unwrap();
    let config = OpenClawConfig::from_json5(
        r#"{tools:{loopDetection:{enabled:true}},loopguard:{profile:"strict"}}"#,
    )
    .unwrap()
    .config;
    let guard = Guard::builder().config(config).store(store).build();
    let got = decisions(&guard, "s1");
    assert_eq!(
        got,
        [
            "allow:-",
            "allow:-",
            "allow:-",
            "warn:identical_failure_streak",
            "warn:identical_failure_streak",
            "warn:identical_failure_streak",
            "block:identical_failure_streak",
            "abort:second_critical_abort",
            "abort:second_critical_abort",
        ]
    );
    let info = guard.session(None, "s1").unwrap().unwrap();
    assert_eq!((info.stats.blocks, info.stats.aborts), (3, 1));

    // The default profile, same store kind: OpenClaw's decisions only.
    let store = open_store(
        &format!("sqlite:{}", dir.path().join("b.sqlite3").display()),
        Duration::from_secs(3600),
    )
    .unwrap();
    let guard = Guard::builder()
        .config(
            OpenClawConfig::from_json5("{tools:{loopDetection:{enabled:true}}}")
                .unwrap()
                .config,
        )
        .store(store)
        .build();
    assert!(decisions(&guard, "s2").iter().all(|d| d == "allow:-"));
}
