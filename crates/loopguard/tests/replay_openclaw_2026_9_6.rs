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
