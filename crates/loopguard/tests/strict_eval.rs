//! The strict profile's evaluation: the 58 real mini-swe-agent transcripts of the
//! calibration set replayed with both profiles through the real binary.
//!
//! `tests/fixtures/real-transcripts/labels.csv` gives each run's verdict and, for stuck
//! runs, the call where the loop starts (as a careful reader judges it). The strict profile's
//! goals are checked on decisions read from `--json` replays: every stuck run blocked by
//! the strict profile within 6 calls of its loop's start, no healthy or self-recovering run
//! blocked by either profile, and the strict profile never later than OpenClaw's. The
//! quality table `loopguard replay --summary --labels labels.csv` prints for each profile is
//! kept in `tests/fixtures/real-transcripts/evaluation.md` (quoted in
//! `docs/strict-profile.md`); `LOOPGUARD_BLESS=1 cargo test -p loopguard --test
//! strict_eval` rewrites it after a deliberate change.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn dir() -> PathBuf {
    common::fixtures().join("real-transcripts")
}

/// The strict profile must block a stuck run at most this many calls after its loop starts.
const MAX_CALLS_AFTER_LOOP_START: u64 = 6;

struct Case {
    file: String,
    verdict: String,
    loop_start: Option<u64>,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(dir().join("labels.csv")).expect("labels.csv");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty() && !l.starts_with("file,"))
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(
                f.len(),
                5,
                "labels.csv: bad line {l:?} (file,verdict,loop-start,family,agent)"
            );
            Case {
                file: f[0].to_string(),
                verdict: f[1].to_string(),
                loop_start: f[2].parse().ok(),
            }
        })
        .collect()
}

/// Calls, and the first warning and first block (call index, detector).
#[derive(Debug)]
struct Run {
    calls: u64,
    first_block: Option<(u64, String)>,
}

fn replay(file: &str, profile: &str) -> Run {
    replay_path(&dir().join(file), Some("mini-swe-agent"), profile)
}

/// The call decisions of one file replayed with `profile` (`--json`), its format given or
/// detected.
fn replay_path(path: &Path, format: Option<&str>, profile: &str) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_loopguard"));
    cmd.arg("replay");
    if let Some(format) = format {
        cmd.args(["--format", format]);
    }
    let out = cmd
        .args(["--mode", "observe", "--json", "--profile", profile])
        .arg(path)
        .output()
        .expect("run loopguard");
    assert!(
        out.status.success(),
        "{} ({profile}): {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut run = Run {
        calls: 0,
        first_block: None,
    };
    for line in String::from_utf8(out.stdout).expect("utf-8").lines() {
        let d: serde_json::Value = serde_json::from_str(line).expect("decision JSON");
        if d["type"] != "call" {
            continue;
        }
        run.calls += 1;
        if d["decision"] == "block" && run.first_block.is_none() {
            let det = d["detector"].as_str().unwrap_or("").to_string();
            run.first_block = Some((run.calls, det));
        }
    }
    run
}

/// The same append run again and again, each a success, the file one line longer each
/// time (`tests/fixtures/strict/`, a shape none of the calibration runs has): the strict
/// profile stops its 6th run (`same_call_changing_counts`), five calls after its start;
/// OpenClaw's profile lets all 12 run.
#[test]
fn the_same_edit_applied_again_is_stopped_by_the_strict_profile_end_to_end() {
    let file = common::fixtures().join("strict/same-edit-again.traj.json");
    let strict = replay_path(&file, Some("mini-swe-agent"), "strict");
    assert_eq!(strict.calls, 12);
    assert_eq!(
        strict.first_block,
        Some((6, "same_call_changing_counts".to_string()))
    );
    let openclaw = replay_path(&file, Some("mini-swe-agent"), "openclaw");
    assert_eq!((openclaw.calls, openclaw.first_block), (12, None));
}

fn summary(profile: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .args([
            "replay",
            "--format",
            "mini-swe-agent",
            "--mode",
            "observe",
            "--color",
            "never",
            "--profile",
            profile,
            "--summary",
            "--labels",
        ])
        .arg(dir().join("labels.csv"))
        .arg(dir())
        .output()
        .expect("run loopguard");
    assert!(
        out.status.success(),
        "summary ({profile}): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn strict_profile_blocks_stuck_runs_early_and_never_a_run_that_recovers() {
    let cases = cases();
    assert_eq!(cases.len(), 58, "the calibration set lost its transcripts");
    assert_eq!(cases.iter().filter(|c| c.verdict == "stuck").count(), 4);
    let mut failures = Vec::new();
    let strict_summary = summary("strict");
    for c in &cases {
        let default = replay(&c.file, "openclaw");
        let strict = replay(&c.file, "strict");
        assert_eq!(default.calls, strict.calls, "{}", c.file);
        if c.verdict != "stuck" {
            for (profile, run) in [("openclaw", &default), ("strict", &strict)] {
                if let Some((n, d)) = &run.first_block {
                    failures.push(format!(
                        "{}: {} run blocked by {profile} at call {n} ({d})",
                        c.file, c.verdict
                    ));
                }
            }
            continue;
        }
        let start = c.loop_start.expect("a stuck run has a loop start");
        match &strict.first_block {
            Some((n, _)) if *n >= start && *n <= start + MAX_CALLS_AFTER_LOOP_START => {}
            got => failures.push(format!(
                "{}: stuck from call {start}, must be blocked by call {}, got {got:?}",
                c.file,
                start + MAX_CALLS_AFTER_LOOP_START
            )),
        }
        if let (Some((s, _)), Some((d, _))) = (&strict.first_block, &default.first_block) {
            assert!(
                s <= d,
                "{}: strict blocks later ({s}) than openclaw ({d})",
                c.file
            );
        }
        // The summary reports the same first stop as the decisions.
        if let Some((n, d)) = &strict.first_block {
            let name = c.file.rsplit('/').next().unwrap();
            let want = format!("| `{name}` | {} | {start} | {n} (`{d}`) |", strict.calls);
            assert!(strict_summary.contains(&want), "{want}\n{strict_summary}");
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        strict_summary.contains("| **strict** | 4 of 4 | +6 | +6 | 0 | 0 of 54 |"),
        "{strict_summary}"
    );

    let table = format!("{strict_summary}\n{}", summary("openclaw"));
    let golden = dir().join("evaluation.md");
    if std::env::var_os("LOOPGUARD_BLESS").is_some() {
        std::fs::write(&golden, &table).expect("write evaluation.md");
    }
    let want = std::fs::read_to_string(&golden).unwrap_or_default();
    assert_eq!(
        want, table,
        "the evaluation table changed; rerun with LOOPGUARD_BLESS=1 and update docs/strict-profile.md"
    );
}

/// `--compare openclaw,strict` prints each profile's table, the same as `--summary` with
/// that `--profile`, one after the other. Like `scripts/detection-benchmark.sh`, it lets
/// each file's format be detected: the tables equal those of the files read as
/// mini-swe-agent's.
#[test]
fn compare_prints_each_profiles_table_in_turn() {
    let out = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .args([
            "replay",
            "--mode",
            "observe",
            "--color",
            "never",
            "--compare",
            "strict,openclaw",
            "--labels",
        ])
        .arg(dir().join("labels.csv"))
        .arg(dir())
        .output()
        .expect("run loopguard");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = String::from_utf8(out.stdout).expect("utf-8");
    assert_eq!(
        got,
        format!("{}\n{}", summary("strict"), summary("openclaw"))
    );
    let refused = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .args(["replay", "--compare", "openclaw,strict", "--json"])
        .arg(dir())
        .output()
        .expect("run loopguard");
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--compare"));
    // The published benchmark page is this comparison, as `scripts/detection-benchmark.sh`
    // writes it: regenerate it after a change.
    let page_path = common::fixtures().join("../../docs/detection-benchmark.md");
    let page = std::fs::read_to_string(&page_path).expect("docs/detection-benchmark.md");
    assert!(
        page.ends_with(&format!("\n{got}")),
        "docs/detection-benchmark.md is out of date: run scripts/detection-benchmark.sh"
    );
}

/// A labels file with a mistake is refused, naming the file and the line.
#[test]
fn summary_refuses_a_bad_labels_file() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("labels.csv");
    std::fs::write(&bad, "file,verdict,loop-start\na.json,stuck,\n").unwrap();
    let out = loopguard(&[
        "replay".as_ref(),
        "--summary".as_ref(),
        "--labels".as_ref(),
        bad.as_os_str(),
        dir().join("labels.csv").as_os_str(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("labels.csv") && stderr.contains("line 2") && stderr.contains("loop-start"),
        "{stderr}"
    );
}

fn loopguard(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .args(args)
        .output()
        .expect("run loopguard")
}

/// The default profile is OpenClaw's byte for byte: every parity fixture replays to the
/// same bytes with no `loopguard` block, with `profile: "openclaw"` written in the config
/// file, and with `--profile openclaw`.
#[test]
fn parity_fixtures_are_unchanged_by_the_openclaw_profile() {
    let parity = dir().join("../parity");
    let tmp = tempfile::tempdir().unwrap();
    let mut cases = 0;
    for entry in std::fs::read_dir(&parity).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(case) = name.strip_suffix(".events.jsonl") else {
            continue;
        };
        cases += 1;
        let config = parity.join(format!("{case}.config.json"));
        let events = parity.join(&name);
        let text = std::fs::read_to_string(&config).unwrap();
        let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        doc["loopguard"] = serde_json::json!({ "profile": "openclaw" });
        let with_block = tmp.path().join(format!("{case}.json"));
        std::fs::write(&with_block, doc.to_string()).unwrap();
        let run = |cfg: &Path, profile: Option<&str>| {
            let mut args: Vec<&std::ffi::OsStr> =
                vec!["replay".as_ref(), "--json".as_ref(), "--config".as_ref()];
            args.push(cfg.as_os_str());
            if let Some(p) = profile {
                args.push("--profile".as_ref());
                args.push(p.as_ref());
            }
            args.push(events.as_os_str());
            let out = loopguard(&args);
            assert!(
                out.status.success(),
                "{case}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            out.stdout
        };
        let plain = run(&config, None);
        assert_eq!(plain, run(&with_block, None), "{case}: loopguard block");
        assert_eq!(
            plain,
            run(&config, Some("openclaw")),
            "{case}: --profile openclaw"
        );
        let want: Vec<serde_json::Value> =
            std::fs::read_to_string(parity.join(format!("{case}.expected.jsonl")))
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
        let got: Vec<serde_json::Value> = String::from_utf8(plain)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(got, want, "{case}");
    }
    assert_eq!(cases, 15, "parity fixtures missing");
}

/// `--profile strict` overrides the file's `profile: "openclaw"`, and the strict detectors'
/// names appear in the decisions.
#[test]
fn profile_flag_overrides_the_file_and_names_the_detector() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("cfg.json5");
    std::fs::write(
        &cfg,
        r#"{tools:{loopDetection:{enabled:true}},loopguard:{profile:"openclaw"}}"#,
    )
    .unwrap();
    let mut events = String::new();
    for i in 0..8 {
        events.push_str(&format!(
            "{{\"type\":\"call\",\"run\":\"r\",\"callId\":\"c{i}\",\"tool\":\"read\",\"args\":{{\"path\":\"/missing\"}}}}\n{{\"type\":\"outcome\",\"run\":\"r\",\"callId\":\"c{i}\",\"tool\":\"read\",\"args\":{{\"path\":\"/missing\"}},\"error\":\"ENOENT: no such file or directory\"}}\n"
        ));
    }
    let file = tmp.path().join("events.jsonl");
    std::fs::write(&file, events).unwrap();
    let decisions = |profile: Option<&str>| {
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "replay".as_ref(),
            "--json".as_ref(),
            "--config".as_ref(),
            cfg.as_os_str(),
        ];
        if let Some(p) = profile {
            args.push("--profile".as_ref());
            args.push(p.as_ref());
        }
        args.push(file.as_os_str());
        let out = loopguard(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|d| d["type"] == "call")
            .map(|d| {
                format!(
                    "{}:{}",
                    d["decision"].as_str().unwrap(),
                    d["detector"].as_str().unwrap_or("-")
                )
            })
            .collect::<Vec<_>>()
    };
    assert!(decisions(None).iter().all(|d| d == "allow:-"));
    let strict = decisions(Some("strict"));
    assert_eq!(strict[3], "warn:identical_failure_streak", "{strict:?}");
    assert_eq!(strict[6], "block:identical_failure_streak", "{strict:?}");
    // Enforce mode: the blocked call's outcome is ignored, the retry is the second critical.
    assert_eq!(strict[7], "abort:second_critical_abort", "{strict:?}");
}

/// `config check` validates the `loopguard` block and shows what each agent gets.
#[test]
fn config_check_validates_and_shows_the_loopguard_block() {
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("good.json5");
    std::fs::write(
        &good,
        r#"{tools:{loopDetection:{enabled:true}},loopguard:{profile:"strict",detectors:{argumentChurn:false}},
           agents:{list:[{id:"ops",loopguard:{profile:"openclaw"}}]}}"#,
    )
    .unwrap();
    let out = loopguard(&["config".as_ref(), "check".as_ref(), good.as_os_str()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("loopguard profile: strict  (global)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("identicalFailureStreak=on (warnAt=3, blockAt=6)"),
        "{stdout}"
    );
    assert!(stdout.contains("argumentChurn=off"), "{stdout}");
    assert!(
        stdout.contains("loopguard profile: openclaw  (agent)"),
        "{stdout}"
    );

    let bad = tmp.path().join("bad.json5");
    std::fs::write(
        &bad,
        "{\n  loopguard: {\n    detectors: { identicalFailureStreak: { blokAt: 4 } },\n  },\n}\n",
    )
    .unwrap();
    let out = loopguard(&["config".as_ref(), "check".as_ref(), bad.as_os_str()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(":3:")
            && stderr.contains("loopguard.detectors.identicalFailureStreak.blokAt")
            && stderr.contains("did you mean `blockAt`"),
        "{stderr}"
    );
    // replay refuses it like an unknown key in OpenClaw's block.
    let out = loopguard(&[
        "replay".as_ref(),
        "--config".as_ref(),
        bad.as_os_str(),
        "-".as_ref(),
    ]);
    assert!(!out.status.success());
}

/// The report: a run ended by the strict profile is one loop, and the table across sessions
/// gets a `strict` column only when a strict detector fired.
#[test]
fn report_groups_an_ended_run_and_adds_a_strict_column_only_when_used() {
    let file =
        dir().join("wudi-alex-mini-swe-agent-CaM/nano-output.sphinx-doc__sphinx-7757.traj.json");
    let healthy = dir().join("gruckion-mini-swe-agent/django__django-11163.traj.json");
    let report = |profile: &str| {
        let out = loopguard(&[
            "replay".as_ref(),
            "--format".as_ref(),
            "mini-swe-agent".as_ref(),
            "--color".as_ref(),
            "never".as_ref(),
            "--profile".as_ref(),
            profile.as_ref(),
            file.as_os_str(),
            healthy.as_os_str(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let strict = report("strict");
    assert!(
        strict.contains("1. format_error {} in run run-1: identical_failure_streak, count up to 6"),
        "{strict}"
    );
    assert!(
        strict.contains("2. format_error {} in run run-1: second_critical_abort"),
        "{strict}"
    );
    assert!(!strict.contains("  3. "), "{strict}");
    let header = strict
        .lines()
        .find(|l| l.starts_with("session ") && l.contains("calls in loops"))
        .unwrap();
    assert!(header.contains(" strict "), "{header}");
    let default = report("openclaw");
    let header = default
        .lines()
        .find(|l| l.starts_with("session ") && l.contains("calls in loops"))
        .unwrap();
    assert!(!header.contains("strict"), "{header}");
}

/// Labels that name the model family and the agent split the labelled measures per agent
/// and family, each folder's labels given with its own `--labels`; every cell agrees with
/// the decisions of the same files replayed one by one.
#[test]
fn labels_split_the_measures_per_agent_and_family() {
    let transcripts = common::fixtures().join("transcripts");
    let stuck = transcripts.join("swe-agent/loop.traj");
    let healthy = transcripts.join("openhands/trajectory.json");
    let tmp = tempfile::tempdir().unwrap();
    // `loop.traj` runs `python reproduce.py` from its 2nd call to the end, the same answer
    // every time.
    let swe = tmp.path().join("swe.csv");
    std::fs::write(
        &swe,
        "file,verdict,loop-start,family,agent\nswe-agent/loop.traj,stuck,2,gpt-4,swe-agent\n",
    )
    .unwrap();
    let oh = tmp.path().join("oh.csv");
    std::fs::write(
        &oh,
        "openhands/trajectory.json,healthy,,claude-sonnet,openhands\nopenhands/missing.json,healthy,,claude-sonnet,openhands\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .args(["replay", "--mode", "observe", "--color", "never"])
        .args(["--profile", "strict", "--summary", "--labels"])
        .arg(&swe)
        .arg("--labels")
        .arg(&oh)
        .arg(&stuck)
        .arg(&healthy)
        .output()
        .expect("run loopguard");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).expect("utf-8");
    // The label of a file not replayed is not counted, and said.
    assert!(
        table.contains(
            "labelled: 2 runs (1 stuck, 1 healthy or self-recovering), 1 label naming no input"
        ),
        "{table}"
    );
    assert!(
        table.contains(
            "| rule | openhands · claude-sonnet (0 stuck, 1 other) | swe-agent · gpt-4 (1 stuck, 0 other) |"
        ),
        "{table}"
    );
    let stop = replay_path(&stuck, None, "strict")
        .first_block
        .expect("the strict profile stops the loop")
        .0;
    assert!(stop >= 2, "stopped at {stop}, before the loop's start");
    let false_stops = u64::from(replay_path(&healthy, None, "strict").first_block.is_some());
    let want = format!("| **strict** | 0 / {false_stops} | 1 (+{}) / 0 |", stop - 2);
    assert!(table.contains(&want), "{want}\n{table}");
}

/// A label line with a field too many is refused, naming the line and the fields.
#[test]
fn labels_refuse_a_sixth_field() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("labels.csv");
    std::fs::write(&bad, "a.traj,healthy,,gpt-4,swe-agent,extra\n").unwrap();
    let out = loopguard(&[
        "replay".as_ref(),
        "--summary".as_ref(),
        "--labels".as_ref(),
        bad.as_os_str(),
        dir().join("labels.csv").as_os_str(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("labels.csv") && stderr.contains("line 1") && stderr.contains("agent"),
        "{stderr}"
    );
}
