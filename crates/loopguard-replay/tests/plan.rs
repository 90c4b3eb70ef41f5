//! Replay as a library: a plan over mixed inputs, each with its own defaults, and a run
//! that reports what it could not read.

use std::path::{Path, PathBuf};

use loopguard_adapters::Format;
use loopguard_core::Mode;
use loopguard_replay::run::{Failure, Quiet};
use loopguard_replay::{Chosen, InputKind, Plan, PlanError, PlanNote, ReplayOptions};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/transcripts")
        .join(rel)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lg-plan-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn each_input_gets_the_defaults_of_its_kind() {
    let dir = scratch("kinds");
    let events = dir.join("a.jsonl");
    std::fs::write(&events, "{\"type\":\"call\",\"tool\":\"read\"}\n").unwrap();
    let empty = dir.join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let paths = [
        events.clone(),
        fixture("claude-code/loop.jsonl"),
        empty.clone(),
    ];
    let plan = Plan::new(&paths, ReplayOptions::new()).unwrap();
    let got: Vec<(Format, Chosen, Mode, InputKind)> = plan
        .sources
        .iter()
        .map(|s| (s.format, s.chosen, s.mode, s.kind()))
        .collect();
    assert_eq!(
        got,
        [
            (
                Format::Events,
                Chosen::Detected,
                Mode::Enforce,
                InputKind::EventStream
            ),
            (
                Format::ClaudeCode,
                Chosen::Detected,
                Mode::Observe,
                InputKind::Transcript
            ),
            (
                Format::Events,
                Chosen::Blank,
                Mode::Enforce,
                InputKind::EventStream
            ),
        ]
    );
    assert_eq!(
        plan.notes,
        [
            PlanNote::DetectorsEnabledForTranscripts,
            PlanNote::DetectorsOffForEventStreams
        ]
    );
    assert!(
        plan.config_for(&plan.sources[1])
            .policy_for(None)
            .resolved
            .enabled
    );
    assert!(
        !plan
            .config_for(&plan.sources[0])
            .policy_for(None)
            .resolved
            .enabled
    );
    // A mode given applies to every input.
    let observe = Plan::new(&paths, ReplayOptions::new().mode(Mode::Observe)).unwrap();
    assert!(observe.sources.iter().all(|s| s.mode == Mode::Observe));

    let report = plan.run(&mut Quiet).unwrap();
    assert!(!report.lost_data());
    assert_eq!(report.files.len(), 3);
    assert_eq!(report.files[1].calls, 25);
    let sessions: Vec<&str> = report
        .summary
        .sessions
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(sessions, ["default", "loop"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_wrong_format_is_a_failure_not_an_empty_session() {
    let paths = [
        fixture("claude-code/loop.jsonl"),
        fixture("openclaw/read-loop.jsonl"),
    ];
    let plan = Plan::new(&paths, ReplayOptions::new().format(Format::OpenClaw)).unwrap();
    let report = plan.run(&mut Quiet).unwrap();
    assert!(report.lost_data());
    assert!(matches!(
        report.files[0].failure,
        Some(Failure::NoCalls { skipped_lines }) if skipped_lines > 0
    ));
    assert_eq!(report.files[1].failure, None);
    assert_eq!(report.files[1].calls, 25);
}

#[test]
fn one_unrecognised_input_is_an_error_several_are_skipped() {
    let dir = scratch("unknown");
    let odd = dir.join("odd.json");
    std::fs::write(&odd, "{\"hello\":1}\n").unwrap();
    assert!(matches!(
        Plan::new(std::slice::from_ref(&odd), ReplayOptions::new()),
        Err(PlanError::Unrecognised { .. })
    ));
    let plan = Plan::new(
        &[odd.clone(), fixture("openclaw/read-loop.jsonl")],
        ReplayOptions::new(),
    )
    .unwrap();
    assert_eq!(plan.sources.len(), 1);
    assert_eq!(plan.skipped.len(), 1);
    assert!(plan.skipped[0].reason.loses_data());
    assert!(plan.run(&mut Quiet).unwrap().lost_data());
    std::fs::remove_dir_all(&dir).unwrap();
}
