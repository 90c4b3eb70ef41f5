//! The strict profile's drift detectors (strict-profile.md): `near_repeat_no_progress`,
//! `no_progress_cycle` and `same_call_changing_error`, at their boundaries and on what they
//! must never match; then the stuck and not-stuck scenarios of other agents' loop
//! detectors, described in our own words as event streams; then the property that the
//! default profile never depends on strict-only settings.
//!
//! Every stream is replayed in observe mode (every call runs), and the result is the first
//! warning and the first block, as 1-based call numbers.

use loopguard_core::{Call, Detector, Mode, Outcome, Session, Value, Verdict};
use loopguard_core::{ExtraPolicy, OpenClawConfig, Policy};
use proptest::prelude::*;

/// Words that make file contents differ.
const WORDS: [&str; 12] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima",
];

fn strict() -> Policy {
    Policy::enabled().with_extra(ExtraPolicy::strict())
}

fn v(json: &str) -> Value<'static> {
    Value::parse(json.as_bytes()).unwrap().into_owned()
}

/// A text result as tools give it (`content[].text`).
fn text(s: &str) -> Value<'static> {
    let mut o = serde_json::Map::new();
    o.insert(
        "content".into(),
        serde_json::json!([{ "type": "text", "text": s }]),
    );
    v(&serde_json::Value::Object(o).to_string())
}

/// One step: tool, arguments (JSON), outcome text, whether it is an error.
type Step = (&'static str, String, String, bool);

fn ok(tool: &'static str, args: &str, out: &str) -> Step {
    (tool, args.to_string(), out.to_string(), false)
}

fn fail(tool: &'static str, args: &str, err: &str) -> Step {
    (tool, args.to_string(), err.to_string(), true)
}

fn sh(cmd: &str) -> String {
    serde_json::json!({ "command": cmd }).to_string()
}

#[derive(Debug, Default, PartialEq)]
struct Seen {
    first_warn: Option<(usize, Detector)>,
    first_block: Option<(usize, Detector)>,
}

fn replay(p: &Policy, steps: &[Step]) -> Seen {
    let mut s = Session::new("t").with_mode(Mode::Observe);
    let mut seen = Seen::default();
    for (i, (tool, args, out, is_err)) in steps.iter().enumerate() {
        let args = v(args);
        let call = Call::new(*tool, &args).run("r");
        match s.before_call(p, &call).verdict {
            Verdict::Warn { detection, .. } => {
                seen.first_warn.get_or_insert((i + 1, detection.detector));
            }
            Verdict::Block { detection, .. } => {
                seen.first_block.get_or_insert((i + 1, detection.detector));
            }
            Verdict::Allow => {}
        }
        let (res, err) = (text(out), Value::from(out.clone()));
        let outcome = if *is_err {
            Outcome::Error(&err)
        } else {
            Outcome::Result(&res)
        };
        let _ = s.after_call(p, &call, outcome);
    }
    seen
}

fn blocked_at(steps: &[Step]) -> Option<usize> {
    replay(&strict(), steps).first_block.map(|b| b.0)
}

// ---- near_repeat_no_progress ------------------------------------------------------

#[test]
fn confirmations_in_changing_words_warn_after_two_and_block_the_fifth() {
    let words = [
        "All checks passed.",
        "Verification complete: all checks passed",
        "Final: all checks passed; no changes required",
        "Done. Nothing left to do.",
        "Task complete.",
        "Submitting now.",
    ];
    let steps: Vec<Step> = words
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let cmd = if i % 2 == 0 {
                format!("echo '{w}'")
            } else {
                format!("printf '{w}\\n'")
            };
            ok("bash", &sh(&cmd), w)
        })
        .collect();
    let seen = replay(&strict(), &steps);
    assert_eq!(seen.first_warn, Some((3, Detector::NearRepeat)));
    assert_eq!(seen.first_block, Some((5, Detector::NearRepeat)));
    // Four confirmations are still allowed (the calibration set's recovering agents stop
    // by then).
    assert_eq!(blocked_at(&steps[..4]), None);
}

#[test]
fn the_block_message_names_the_repeat_and_says_to_finish() {
    let p = strict();
    let mut s = Session::new("t").with_mode(Mode::Observe);
    for i in 0..4 {
        let args = v(&sh(&format!("echo 'checked {i} times'")));
        let call = Call::new("bash", &args);
        let _ = s.before_call(&p, &call);
        let out = text(&format!("checked {i} times"));
        let _ = s.after_call(&p, &call, Outcome::Result(&out));
    }
    let args = v(&sh("echo 'all good'"));
    let d = s.before_call(&p, &Call::new("bash", &args));
    let msg = d.detection().unwrap().message.to_string();
    assert!(d.is_block(), "{msg}");
    assert!(msg.contains("echo 'all good'"), "{msg}");
    assert!(msg.contains("finish or submit"), "{msg}");
}

#[test]
fn a_check_rerun_with_a_flag_changed_and_the_same_result_is_blocked_the_fifth_time() {
    let runs = [
        "pytest tests/test_dates.py -q",
        "pytest tests/test_dates.py",
        "pytest -q tests/test_dates.py -x",
        "python -m pytest tests/test_dates.py -q",
        "pytest tests/test_dates.py -q --tb=short",
    ];
    let steps: Vec<Step> = runs
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let out = format!("FAILED tests/test_dates.py::test_parse - 1 failed in 0.{i}3s");
            ok("bash", &sh(c), &out)
        })
        .collect();
    assert_eq!(blocked_at(&steps), Some(5));
}

#[test]
fn the_same_edit_again_with_the_same_result_is_no_progress() {
    let edit = r#"{"path":"src/a.py","old":"retrun x","new":"return x"}"#;
    let steps: Vec<Step> = (0..5)
        .map(|_| ok("str_replace", edit, "Replaced 1 occurrence in src/a.py"))
        .collect();
    assert_eq!(
        replay(&strict(), &steps).first_block,
        Some((5, Detector::NearRepeat))
    );
}

#[test]
fn a_usage_message_to_drifting_line_numbers_is_no_progress() {
    let steps: Vec<Step> = [(10, 20), (12, 30), (40, 41), (7, 90), (100, 120)]
        .iter()
        .map(|(a, b)| {
            fail(
                "view",
                &format!(r#"{{"path":"a.py","view_range":"{a}-{b}"}}"#),
                &format!("Invalid `view_range` {a}-{b}: expected a list of two integers"),
            )
        })
        .collect();
    assert_eq!(
        replay(&strict(), &steps).first_block,
        Some((5, Detector::NearRepeat))
    );
}

#[test]
fn bookkeeping_arguments_do_not_make_calls_different() {
    let steps: Vec<Step> = (0..5)
        .map(|i| {
            ok(
                "read_file",
                &format!(
                    r#"{{"path":"src/app.ts","task_progress":"- [x] step {i}\n- [ ] step {}","description":"attempt {i}"}}"#,
                    i + 1
                ),
                "export const app = 1;",
            )
        })
        .collect();
    assert_eq!(
        replay(&strict(), &steps).first_block,
        Some((5, Detector::NearRepeat))
    );
    // OpenClaw's default sees five different calls.
    assert_eq!(replay(&Policy::enabled(), &steps), Seen::default());
}

#[test]
fn near_repeat_never_matches_pagination_changing_polls_or_edits_of_different_files() {
    let pages: Vec<Step> = (0..12)
        .map(|i| {
            ok(
                "bash",
                &sh(&format!("sed -n '{},{}p' big.py", i * 50 + 1, i * 50 + 50)),
                &format!("line {} of big.py: def f{i}(): pass", i * 50 + 1),
            )
        })
        .collect();
    assert_eq!(replay(&strict(), &pages).first_block, None);
    let polls: Vec<Step> = (0..15)
        .map(|i| {
            ok(
                "process",
                r#"{"action":"poll","sessionId":"build"}"#,
                &format!("compiling crate {i} of 15"),
            )
        })
        .collect();
    assert_eq!(replay(&strict(), &polls), Seen::default());
    let edits: Vec<Step> = ["a", "b", "c", "d", "e", "f", "g"]
        .iter()
        .map(|f| ok("bash", &sh(&format!("sed -i 's/old/new/' src/{f}.py")), ""))
        .collect();
    assert_eq!(replay(&strict(), &edits), Seen::default());
    // Different contents written to one file, each printing nothing: progress.
    let writes: Vec<Step> = (0..7)
        .map(|i| {
            ok(
                "write",
                &format!(
                    r#"{{"path":"notes.md","content":"draft {i}: {}"}}"#,
                    "x".repeat(i)
                ),
                "",
            )
        })
        .collect();
    assert_eq!(replay(&strict(), &writes).first_block, None);
}

#[test]
fn test_reruns_after_edits_are_never_a_loop() {
    let mut steps = Vec::new();
    for i in 0..8 {
        steps.push(ok(
            "bash",
            &sh(&format!("sed -i 's/v{i}/v{}/' src/lib.py", i + 1)),
            "",
        ));
        steps.push(ok("bash", &sh("pytest -q"), "1 failed, 9 passed in 0.41s"));
    }
    assert_eq!(replay(&strict(), &steps).first_block, None);
}

// ---- no_progress_cycle ------------------------------------------------------------

#[test]
fn two_failing_spellings_in_turn_are_stopped_well_before_openclaw() {
    let steps: Vec<Step> = (0..20)
        .map(|i| {
            let path = if i % 2 == 0 {
                "/src/conf/settings.py"
            } else {
                "/src/config/settings.py"
            };
            fail(
                "read",
                &format!(r#"{{"path":"{path}"}}"#),
                &format!("ENOENT: no such file or directory, open '{path}'"),
            )
        })
        .collect();
    let seen = replay(&strict(), &steps);
    assert!(seen.first_block.is_some_and(|(n, _)| n <= 8), "{seen:?}");
    let openclaw = replay(&Policy::enabled(), &steps);
    assert!(
        openclaw.first_block.is_none_or(|(n, _)| n > 8),
        "{openclaw:?}"
    );
}

#[test]
fn a_three_call_round_with_unchanged_results_blocks_on_the_third_round() {
    let round = [
        ok("open", r#"{"url":"https://a.example/docs"}"#, "Docs home"),
        ok("search", r#"{"query":"rate limit header"}"#, "no results"),
        ok("list", r#"{"dir":"docs/"}"#, "index.md api.md"),
    ];
    let steps: Vec<Step> = round.iter().cycle().take(14).cloned().collect();
    let seen = replay(&strict(), &steps);
    // Three tools: warned after two rounds, blocked after four (a round of one tool, three
    // URLs fetched in turn, is blocked at its 8th call: `tests/progressions.rs`).
    assert_eq!(seen.first_block, Some((12, Detector::NoProgressCycle)));
    assert_eq!(seen.first_warn, Some((6, Detector::NoProgressCycle)));
}

#[test]
fn a_near_alternation_with_drifting_spelling_is_a_cycle() {
    // A, B, A', B', ...: the same two calls, quoting and spacing drifting, results
    // unchanged. (Numbers counting up would be a progression: `tests/progressions.rs`.)
    let steps: Vec<Step> = (0..10)
        .map(|i| {
            if i % 2 == 0 {
                let q = if i % 4 == 0 { "'" } else { "\"" };
                ok(
                    "bash",
                    &sh(&format!("grep -n {q}def parse{q} src/p1.py")),
                    "src/p1.py:12:def parse(s):",
                )
            } else {
                let gap = if i % 4 == 1 { " " } else { "  " };
                ok(
                    "bash",
                    &sh(&format!("sed -n{gap}'10,20p' src/p1.py")),
                    "def parse(s):\n    return s",
                )
            }
        })
        .collect();
    let seen = replay(&strict(), &steps);
    assert!(seen.first_block.is_some_and(|(n, _)| n <= 8), "{seen:?}");
}

#[test]
fn a_cycle_whose_results_change_is_never_blocked() {
    let steps: Vec<Step> = (0..16)
        .map(|i| match i % 2 {
            0 => ok("bash", &sh("make"), &format!("{} errors", 16 - i)),
            _ => ok(
                "bash",
                &sh("git diff --stat"),
                &format!("{i} files changed"),
            ),
        })
        .collect();
    assert_eq!(replay(&strict(), &steps).first_block, None);
}

// ---- same_call_changing_error -----------------------------------------------------

#[test]
fn the_same_call_failing_differently_each_time_is_blocked_the_fourth_time() {
    let errors = [
        "ConnectionResetError: peer reset",
        "TimeoutError: read timed out",
        "SSLError: unexpected EOF",
        "HTTP 502 Bad Gateway",
    ];
    let steps: Vec<Step> = errors
        .iter()
        .map(|e| fail("fetch", r#"{"url":"https://pypi.example/simple/x"}"#, e))
        .collect();
    let seen = replay(&strict(), &steps);
    assert_eq!(seen.first_warn, Some((3, Detector::ChangingErrorSameCall)));
    assert_eq!(seen.first_block, Some((4, Detector::ChangingErrorSameCall)));
    // With an edit in between each attempt, it is not the same attempt again.
    let mut edited = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        edited.push(ok("bash", &sh(&format!("sed -i 's/{i}/x/' cfg.toml")), ""));
        edited.push(s.clone());
    }
    assert_eq!(replay(&strict(), &edited).first_block, None);
}

// ---- waiting is not looping -------------------------------------------------------

#[test]
fn polls_in_every_format_are_never_counted_by_the_strict_detectors() {
    let formats: [(&str, &str); 5] = [
        ("write_stdin", r#"{"session_id":7,"chars":""}"#),
        (
            "exec",
            r#"{"code":"const r = await tools.write_stdin({session_id: 7, chars: \"\"}); text(r)"}"#,
        ),
        ("process", r#"{"action":"poll","sessionId":"s1"}"#),
        ("BashOutput", r#"{"bash_id":"b1"}"#),
        ("TaskOutput", r#"{"task_id":"t1","block":false}"#),
    ];
    for (tool, args) in formats {
        // A build still running: the same "still running" answer, 15 times.
        let steps: Vec<Step> = (0..15)
            .map(|_| ok(tool, args, "Process running, no new output"))
            .collect();
        let seen = replay(&strict(), &steps);
        for (n, d) in seen.first_warn.iter().chain(seen.first_block.iter()) {
            assert!(
                !Detector::EXTRA.contains(d),
                "{tool}: {d} at call {n} on a poll"
            );
        }
    }
}

// ---- other agents' scenarios, continued -------------------------------------------
//
// Each peer's stuck shapes are continued past the call where that peer flags them; the
// strict profile must block within 8 calls of that point. Their not-stuck shapes must
// never be blocked.

/// OpenHands' StuckDetector: four identical action/observation pairs are stuck (flagged
/// at the 4th).
#[test]
fn openhands_repeating_action_observation() {
    let steps: Vec<Step> = (0..12)
        .map(|_| ok("execute_bash", &sh("ls -la /workspace"), "total 0"))
        .collect();
    let n = blocked_at(&steps).expect("blocked");
    assert!(n <= 4 + 8, "{n}");
}

/// OpenHands: the same action answered by an error three times is stuck (flagged at the
/// 3rd), whether the error texts match or not.
#[test]
fn openhands_repeating_action_error() {
    let same: Vec<Step> = (0..12)
        .map(|_| {
            fail(
                "execute_bash",
                &sh("python run.py"),
                "ModuleNotFoundError: foo",
            )
        })
        .collect();
    assert!(blocked_at(&same).is_some_and(|n| n <= 3 + 8));
    let differing: Vec<Step> = (0..12)
        .map(|i| {
            fail(
                "execute_bash",
                &sh("python run.py"),
                &format!("error kind {}", ["a", "b", "c"][i % 3]),
            )
        })
        .collect();
    assert!(blocked_at(&differing).is_some_and(|n| n <= 3 + 8));
}

/// OpenHands: A, B, A, B, A, B with the same observations is stuck (flagged at the 6th).
#[test]
fn openhands_alternating_pattern() {
    let steps: Vec<Step> = (0..16)
        .map(|i| {
            if i % 2 == 0 {
                ok("execute_bash", &sh("cat setup.cfg"), "[metadata]\nname = x")
            } else {
                ok(
                    "str_replace_editor",
                    r#"{"command":"view","path":"/w/setup.py"}"#,
                    "from setuptools import setup",
                )
            }
        })
        .collect();
    assert!(blocked_at(&steps).is_some_and(|n| n <= 6 + 8));
}

/// OpenHands' not-stuck cases: the same action with observations that differ, and an
/// alternation whose observations differ.
#[test]
fn openhands_not_stuck() {
    let changing: Vec<Step> = (0..10)
        .map(|i| ok("execute_bash", &sh("ls"), &format!("file{i}.txt")))
        .collect();
    assert_eq!(blocked_at(&changing), None);
    let alternating: Vec<Step> = (0..12)
        .map(|i| {
            if i % 2 == 0 {
                ok("execute_bash", &sh("pytest -x"), &format!("{} failed", 12 - i))
            } else {
                ok("str_replace_editor", &format!(r#"{{"command":"str_replace","path":"a.py","old_str":"v{i}","new_str":"w{i}"}}"#), "edited")
            }
        })
        .collect();
    assert_eq!(blocked_at(&alternating), None);
}

/// Gemini CLI's tool-call loop check: the same tool with the same arguments 5 times in a
/// row is a loop (flagged at the 5th); a different call in between resets it.
#[test]
fn gemini_cli_consecutive_identical_calls() {
    let steps: Vec<Step> = (0..12)
        .map(|_| {
            ok(
                "read_file",
                r#"{"absolute_path":"/p/README.md"}"#,
                "# Project",
            )
        })
        .collect();
    assert!(blocked_at(&steps).is_some_and(|n| n <= 5 + 8));
    let different: Vec<Step> = (0..12)
        .map(|i| {
            ok(
                "read_file",
                &format!(r#"{{"absolute_path":"/p/src/m{i}.ts"}}"#),
                &format!("export const {} = true;", WORDS[i % WORDS.len()]),
            )
        })
        .collect();
    assert_eq!(blocked_at(&different), None);
    let interleaved: Vec<Step> = (0..12)
        .map(|i| {
            if i % 4 == 3 {
                ok(
                    "replace",
                    &format!(
                        r#"{{"file_path":"/p/a.ts","old_string":"{i}","new_string":"{}"}}"#,
                        i + 1
                    ),
                    "ok",
                )
            } else {
                ok(
                    "read_file",
                    r#"{"absolute_path":"/p/a.ts"}"#,
                    &format!("version {}", i / 4),
                )
            }
        })
        .collect();
    assert_eq!(blocked_at(&interleaved), None);
}

/// Roo Code's ToolRepetitionDetector (limit 3): the 4th identical consecutive call is
/// refused; key order does not matter; scrolling a page is never counted.
#[test]
fn roo_code_tool_repetition() {
    let steps: Vec<Step> = (0..12)
        .map(|i| {
            let args = if i % 2 == 0 {
                r#"{"path":"src/a.ts","regex":"TODO"}"#
            } else {
                r#"{"regex":"TODO","path":"src/a.ts"}"#
            };
            ok("search_files", args, "Found 0 results.")
        })
        .collect();
    assert!(blocked_at(&steps).is_some_and(|n| n <= 4 + 8));
    let scrolling: Vec<Step> = (0..15)
        .map(|i| {
            ok(
                "browser_action",
                r#"{"action":"scroll_down"}"#,
                &format!("viewport at {}px: section {i}", i * 600),
            )
        })
        .collect();
    assert_eq!(blocked_at(&scrolling), None);
}

/// Cline's loop check: identical calls, `task_progress` ignored; a soft warning at 3 and a
/// hard stop at 5. Different files are different calls.
#[test]
fn cline_repetition_ignoring_task_progress() {
    let steps: Vec<Step> = (0..10)
        .map(|i| {
            ok(
                "read_file",
                &format!(r#"{{"path":"src/index.ts","task_progress":"- [x] read {i} files"}}"#),
                "import x from 'y'",
            )
        })
        .collect();
    let seen = replay(&strict(), &steps);
    assert!(
        seen.first_block.is_some_and(|(n, _)| n <= 5 + 8),
        "{seen:?}"
    );
    assert!(seen.first_warn.is_some_and(|(n, _)| n <= 3), "{seen:?}");
    let files: Vec<Step> = (0..10)
        .map(|i| {
            ok(
                "read_file",
                &format!(r#"{{"path":"src/f{i}.ts","task_progress":"x"}}"#),
                &format!("import {{ {} }} from './lib'", WORDS[i % WORDS.len()]),
            )
        })
        .collect();
    assert_eq!(blocked_at(&files), None);
}

// ---- a vetoed call counts toward its streak (strict, enforce mode) ------------------

/// Enforce mode: each step's call is checked and, when allowed, runs with its outcome;
/// a blocked call does not run. Returns each call's (level, detector, count).
fn enforce(p: &Policy, steps: &[Step]) -> Vec<Option<(bool, Detector, u64)>> {
    let mut s = Session::new("t");
    let mut out = Vec::new();
    for (tool, args, res, is_err) in steps {
        let args = v(args);
        let call = Call::new(*tool, &args).run("r");
        let d = s.before_call(p, &call);
        let (ran, seen) = match d.verdict {
            Verdict::Allow => (true, None),
            Verdict::Warn { detection, .. } => {
                (true, Some((false, detection.detector, detection.count)))
            }
            Verdict::Block { detection, .. } => {
                (false, Some((true, detection.detector, detection.count)))
            }
        };
        out.push(seen);
        if ran {
            let (r, e) = (text(res), Value::from(res.clone()));
            let o = if *is_err {
                Outcome::Error(&e)
            } else {
                Outcome::Result(&r)
            };
            let _ = s.after_call(p, &call, o);
        }
    }
    out
}

fn strict_without_second_critical(count_vetoes: bool) -> Policy {
    let mut extra = ExtraPolicy::strict();
    extra.second_critical.enabled = false;
    extra.count_vetoes = count_vetoes;
    Policy::enabled().with_extra(extra)
}

#[test]
fn a_vetoed_call_counts_toward_its_streak() {
    // Confirmations reworded every time, then the blocked one retried three times.
    let mut steps: Vec<Step> = (0..5)
        .map(|i| {
            ok(
                "bash",
                &sh(&format!("echo 'check {} passed'", WORDS[i])),
                "ok",
            )
        })
        .collect();
    let retry = steps[4].clone();
    steps.extend([retry.clone(), retry.clone(), retry]);
    let counted = enforce(&strict_without_second_critical(true), &steps);
    let sticky = enforce(&strict_without_second_critical(false), &steps);
    assert_eq!(
        counted[4],
        Some((true, Detector::NearRepeat, 4)),
        "{counted:?}"
    );
    // Each retry of the blocked call counts: the streak grows.
    let counts: Vec<u64> = counted[4..].iter().map(|d| d.unwrap().2).collect();
    assert_eq!(counts, [4, 5, 6, 7], "{counted:?}");
    // Without countVetoes the block is only sticky (OpenClaw's Era C rule).
    let counts: Vec<u64> = sticky[4..].iter().map(|d| d.unwrap().2).collect();
    assert_eq!(counts, [4, 4, 4, 4], "{sticky:?}");
    // With the strict profile as shipped, retrying a blocked call ends the run.
    let shipped = enforce(&strict(), &steps);
    assert_eq!(shipped[5].map(|d| d.1), Some(Detector::SecondCriticalAbort));
}

#[test]
fn a_vetoed_call_of_a_failing_streak_and_of_a_cycle_still_counts() {
    // The same call failing the same way: blocked at the 7th, retries count on.
    let steps: Vec<Step> = (0..9)
        .map(|_| fail("read", r#"{"path":"/missing.txt"}"#, "ENOENT: no such file"))
        .collect();
    let got = enforce(&strict_without_second_critical(true), &steps);
    let blocks: Vec<(Detector, u64)> = got
        .iter()
        .flatten()
        .filter(|d| d.0)
        .map(|d| (d.1, d.2))
        .collect();
    assert_eq!(
        blocks.first(),
        Some(&(Detector::IdenticalFailureStreak, 6)),
        "{got:?}"
    );
    assert!(blocks.windows(2).all(|w| w[1].1 == w[0].1 + 1), "{got:?}");
    // A ping-pong of two failing spellings: the retried blocked side stays blocked, and
    // its count grows (the veto is looked through, not a break in the cycle).
    let mut steps: Vec<Step> = (0..8)
        .map(|i| {
            let path = if i % 2 == 0 {
                "/tmp/out.txt"
            } else {
                "/tmp/out .txt"
            };
            fail(
                "read",
                &format!(r#"{{"path":"{path}"}}"#),
                "ENOENT: no such file or directory",
            )
        })
        .collect();
    let last = steps[7].clone();
    steps.extend([last.clone(), last]);
    let got = enforce(&strict_without_second_critical(true), &steps);
    let first = got
        .iter()
        .position(|d| d.is_some_and(|d| d.0))
        .expect("blocked");
    assert!(first < 8, "{got:?}");
    let tail: Vec<u64> = got[first..]
        .iter()
        .map(|d| d.expect("still blocked").2)
        .collect();
    assert!(tail.windows(2).all(|w| w[1] > w[0]), "{got:?}");
}

// ---- a failed command's identity ignores timestamps, durations, pids, attempts -------

#[test]
fn a_tail_of_one_failure_counts_across_changing_arguments_and_timestamps() {
    // The same connection failure, reported with a new timestamp, attempt number, pid and
    // duration each time, for commands whose flags keep changing.
    let steps: Vec<Step> = (0..9)
        .map(|i| {
            fail(
                "exec",
                &sh(&format!("psql -h localhost --connect-timeout={} -c 'select 1'", i + 2)),
                &format!(
                    "[2026-12-01T10:{:02}:{:02}Z] attempt {}: connection refused (pid {}) after {}.{}s",
                    10 + i,
                    7 * i % 60,
                    i + 1,
                    4000 + 37 * i,
                    i + 1,
                    i * 3
                ),
            )
        })
        .collect();
    let seen = replay(&strict(), &steps);
    assert_eq!(
        seen.first_warn,
        Some((5, Detector::ErrorDespiteChangingArgs)),
        "{seen:?}"
    );
    assert!(seen.first_block.is_some_and(|(n, _)| n <= 9), "{seen:?}");
    // The default profile: arguments differ, so nothing.
    assert_eq!(replay(&Policy::enabled(), &steps), Seen::default());
}

// ---- the default profile does not depend on strict-only settings --------------------

fn decisions(p: &Policy, steps: &[(u8, u8, bool)]) -> Vec<String> {
    let mut s = Session::new("t");
    let mut out = Vec::new();
    for (tool, arg, err) in steps {
        let tool = ["read", "exec", "process"][*tool as usize % 3];
        let args = v(&format!(r#"{{"path":"/f{arg}","action":"poll"}}"#));
        let call = Call::new(tool, &args);
        let d = s.before_call(p, &call);
        out.push(format!("{:?}", d.verdict));
        let res = text(&format!("r{}", arg % 2));
        let e = Value::from("boom");
        let outcome = if *err {
            Outcome::Error(&e)
        } else {
            Outcome::Result(&res)
        };
        let _ = s.after_call(p, &call, outcome);
    }
    out.push(String::from_utf8_lossy(&s.export_state()).into_owned());
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever the strict-only settings say (thresholds, similarity), a config whose
    /// profile is `openclaw` and that switches no extra detector on decides exactly as
    /// OpenClaw's block alone, and exports the same state.
    #[test]
    fn default_profile_ignores_strict_only_settings(
        steps in proptest::collection::vec((0u8..3, 0u8..3, any::<bool>()), 1..60),
        warn in 1u32..10, block in 1u32..12, sim in 1u32..100, window in 2u32..20,
        vetoes in any::<bool>(),
    ) {
        let plain = Policy::enabled();
        let text = format!(
            r#"{{tools:{{loopDetection:{{enabled:true}}}},loopguard:{{profile:"openclaw",countVetoes:{vetoes},detectors:{{
                nearRepeat:{{warnAt:{warn},blockAt:{block},similarity:{}}},
                noProgressCycle:{{warnAt:{warn},blockAt:{block}}},
                changingErrorSameCall:{{warnAt:{warn},blockAt:{block}}},
                argumentChurn:{{window:{window},maxVariants:{warn},blockAt:{block}}},
                identicalOutcomeStreak:{{warnAt:{warn},blockAt:{block}}}}}}}}}"#,
            f64::from(sim) / 100.0
        );
        let loaded = OpenClawConfig::from_json5(&text).unwrap();
        prop_assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        let tuned = loaded.config.policy_for(None);
        prop_assert_eq!(decisions(&plain, &steps), decisions(&tuned, &steps));
    }
}
