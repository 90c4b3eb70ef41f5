//! Progressions are not loops: the strict profile must never block work whose calls count
//! up, page on, compute with new operands or write to new targets, nor the not-stuck
//! scenarios of the peers' own test suites (described in our own words as event streams).
//! And the "nothing new" shapes it must stop: calls that change while the world's answer
//! does not.
//!
//! Every stream is replayed in observe mode (every call runs); results are 1-based call
//! numbers of the first warning and the first block.

use loopguard_core::{Call, Detector, ExtraPolicy, Mode, Outcome, Policy, Session, Value, Verdict};

fn strict() -> Policy {
    Policy::enabled().with_extra(ExtraPolicy::strict())
}

fn v(json: &str) -> Value<'static> {
    Value::parse(json.as_bytes()).unwrap().into_owned()
}

fn text(s: &str) -> Value<'static> {
    v(&serde_json::json!({ "content": [{ "type": "text", "text": s }] }).to_string())
}

/// Tool, arguments (JSON), outcome text, whether it is an error.
type Step = (String, String, String, bool);

fn ok(tool: &str, args: serde_json::Value, out: &str) -> Step {
    (tool.into(), args.to_string(), out.into(), false)
}

fn fail(tool: &str, args: serde_json::Value, err: &str) -> Step {
    (tool.into(), args.to_string(), err.into(), true)
}

fn sh(cmd: &str) -> serde_json::Value {
    serde_json::json!({ "command": cmd })
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
        let call = Call::new(tool.as_str(), &args).run("r");
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

fn strict_block(steps: &[Step]) -> Option<(usize, Detector)> {
    replay(&strict(), steps).first_block
}

// ---- progressions the strict profile used to block ---------------------------------

/// OpenClaw's "does not block a one-shot batch of distinct arguments": one text written to
/// 30 files (was blocked at the 5th write by `near_repeat_no_progress`).
#[test]
fn one_text_written_to_thirty_files_is_a_batch_not_a_loop() {
    let numbered: Vec<Step> = (1..=30)
        .map(|i| {
            ok(
                "write",
                serde_json::json!({ "path": format!("out/file{i}.txt"), "content": "same header\n" }),
                "Successfully wrote 12 bytes",
            )
        })
        .collect();
    assert_eq!(replay(&strict(), &numbered), Seen::default());
    // Named targets, no number to count: still 30 new targets.
    let named: Vec<Step> = (0..30)
        .map(|i| {
            let name: String = (0..3)
                .map(|k| char::from(b'a' + ((i * 7 + k * 3) % 26) as u8))
                .collect();
            ok(
                "Write",
                serde_json::json!({ "file_path": format!("/repo/src/{name}/mod.rs"), "content": "pub mod api;\n" }),
                "File created successfully",
            )
        })
        .collect();
    assert_eq!(strict_block(&named), None);
    // The same batch twice (a retry of the whole batch) is still no loop.
    let twice: Vec<Step> = numbered.iter().chain(numbered.iter()).cloned().collect();
    assert_eq!(strict_block(&twice), None);
}

/// The same text written to the same file again and again is still stopped.
#[test]
fn one_text_written_to_one_file_again_is_still_a_loop() {
    let steps: Vec<Step> = (0..8)
        .map(|_| {
            ok(
                "write",
                serde_json::json!({ "path": "out/file1.txt", "content": "same header\n" }),
                "Successfully wrote 12 bytes",
            )
        })
        .collect();
    assert!(strict_block(&steps).is_some_and(|(n, _)| n <= 8));
}

/// OpenHands' "not stuck with other events": `ls N` and `read fileN.txt` counting up, with
/// context condensations in between (was a period-2 cycle: numbers are masked in shapes).
#[test]
fn counting_ls_and_reads_between_condensations_are_not_stuck() {
    let p = strict();
    let mut s = Session::new("t").with_mode(Mode::Observe);
    let run = Value::from("r");
    for i in 1..=20 {
        for (tool, args) in [
            ("bash", sh(&format!("ls {i}"))),
            (
                "read",
                serde_json::json!({ "path": format!("file{i}.txt") }),
            ),
        ] {
            let args = v(&args.to_string());
            let call = Call::new(tool, &args).run("r");
            let d = s.before_call(&p, &call);
            assert!(!d.is_block(), "call {i} {tool}: {:?}", d.detection());
            let out = if tool == "bash" {
                "total 0"
            } else {
                "(empty file)"
            };
            let _ = s.after_call(&p, &call, Outcome::Result(&text(out)));
        }
        if i % 5 == 0 {
            let _ = s.on_compaction(&p, run.as_js_str());
        }
    }
}

/// Gemini CLI's "should not detect a loop for different tool calls": three different
/// calls, three times round (was blocked at the 9th call). A short cycle of mixed tools
/// earns a warning first.
#[test]
fn three_different_calls_three_times_warn_but_are_not_blocked() {
    let round = [
        ok("testTool", serde_json::json!({ "param": "value1" }), "ok"),
        ok("testTool", serde_json::json!({ "param": "value2" }), "ok"),
        ok(
            "anotherTool",
            serde_json::json!({ "param": "value1" }),
            "ok",
        ),
    ];
    let steps: Vec<Step> = round.iter().cycle().take(9).cloned().collect();
    let seen = replay(&strict(), &steps);
    assert_eq!(seen.first_block, None, "{seen:?}");
}

/// A `calculate` tool with new operands each time (blocked at the 4th in a held-out real
/// run: large and decimal answers normalise to the same text).
#[test]
fn computations_with_new_operands_are_not_repeats() {
    let steps: Vec<Step> = [
        (1234, 5678),
        (2345, 6789),
        (3456, 7890),
        (4567, 8901),
        (5678, 9012),
        (6789, 1234),
    ]
    .iter()
    .map(|(a, b)| {
        ok(
            "calculate",
            serde_json::json!({ "expression": format!("{a} * {b}") }),
            &format!("{}", a * b),
        )
    })
    .collect();
    assert_eq!(replay(&strict(), &steps), Seen::default());
    let decimals: Vec<Step> = (1..=8)
        .map(|i| {
            ok(
                "calculate",
                serde_json::json!({ "a": i, "b": 7, "op": "div" }),
                &format!("{:.4}", f64::from(i) / 7.0),
            )
        })
        .collect();
    assert_eq!(strict_block(&decimals), None);
}

/// Paging through one file with `view --view_range` (blocked at the 9th call in a held-out
/// real run), here with pages whose text normalises alike (numbered blank lines).
#[test]
fn paging_with_view_range_is_a_progression() {
    let steps: Vec<Step> = (0..20)
        .map(|i| {
            let (a, b) = (i * 40 + 1, i * 40 + 40);
            ok(
                "str_replace_editor",
                serde_json::json!({ "command": "view", "path": "/repo/data.csv", "view_range": [a, b] }),
                "Here's the result of running `cat -n` on /repo/data.csv:\n(blank lines)",
            )
        })
        .collect();
    assert_eq!(replay(&strict(), &steps), Seen::default());
}

/// SWE-agent masks nothing, but loopguard's shapes do: `sed -n` windows moving down a file
/// with the same answer shape were a repeat (a held-out SWE-agent run blocked at its 13th
/// call).
#[test]
fn moving_windows_with_alike_answers_are_not_repeats() {
    let mut steps = vec![ok("bash", sh("cd /repo && ls"), "src tests setup.py")];
    for i in 0..14 {
        steps.push(ok(
            "bash",
            sh(&format!(
                "sed -n '{},{}p' src/big_table.py",
                1000 + i * 100,
                1099 + i * 100
            )),
            "    ROW,\n    ROW,\n    ROW,",
        ));
    }
    assert_eq!(strict_block(&steps), None);
}

// ---- the "nothing new" shapes that must still be stopped ---------------------------

/// The same usage error to drifting numbers is still the same answer (failures count
/// across changing numbers).
#[test]
fn a_usage_error_to_drifting_numbers_is_still_stopped() {
    let steps: Vec<Step> = (0..8)
        .map(|i| {
            fail(
                "view",
                serde_json::json!({ "path": "a.py", "view_range": format!("{}-{}", i * 3, i * 5) }),
                "Invalid `view_range`: expected a list of two integers",
            )
        })
        .collect();
    assert!(strict_block(&steps).is_some_and(|(n, _)| n <= 8));
}

/// Three URLs fetched in turn with unchanged answers: a one-tool cycle of three, stopped
/// within 8 calls of its start and warned before.
#[test]
fn three_urls_fetched_in_turn_are_stopped_by_the_eighth_call() {
    let urls = [
        "https://docs.example.com/api/v2/limits",
        "https://docs.example.com/guide/rate-limits",
        "https://status.example.com/incidents",
    ];
    let steps: Vec<Step> = (0..15)
        .map(|i| {
            let u = urls[i % 3];
            ok(
                "web_fetch",
                serde_json::json!({ "url": u }),
                &format!("page {} unchanged", i % 3),
            )
        })
        .collect();
    let seen = replay(&strict(), &steps);
    assert!(seen.first_block.is_some_and(|(n, _)| n <= 8), "{seen:?}");
    assert!(seen
        .first_warn
        .is_some_and(|(n, _)| n < seen.first_block.unwrap().0));
}

// ---- empty_search_sweep -------------------------------------------------------------

/// `find / -name "<guess>*"` with a new guess each time, every answer empty (a held-out
/// real run had 36 in a row): warned, then blocked at the 8th search.
#[test]
fn a_sweep_of_guessed_names_with_empty_answers_is_stopped_at_the_eighth() {
    let guesses = [
        "settings",
        "config",
        "conf",
        "setup",
        "local_settings",
        "prod",
        "base",
        "common",
        "defaults",
        "env",
    ];
    let steps: Vec<Step> = guesses
        .iter()
        .map(|g| {
            ok(
                "bash",
                sh(&format!("find / -name \"{g}*.py\" 2>/dev/null")),
                "",
            )
        })
        .collect();
    let seen = replay(&strict(), &steps);
    assert_eq!(
        seen.first_block,
        Some((8, Detector::EmptySearchSweep)),
        "{seen:?}"
    );
    assert_eq!(seen.first_warn, Some((5, Detector::EmptySearchSweep)));
    // The typo that hides the shell's error (`find.`) is the same sweep.
    let typo: Vec<Step> = guesses
        .iter()
        .map(|g| {
            ok(
                "bash",
                sh(&format!("cd /repo && find. -name '{g}*' 2>/dev/null")),
                "",
            )
        })
        .collect();
    assert_eq!(strict_block(&typo), Some((8, Detector::EmptySearchSweep)));
    // And grep finding nothing (exit 1, no text) with a search tool.
    let greps: Vec<Step> = guesses
        .iter()
        .map(|g| {
            fail(
                "Grep",
                serde_json::json!({ "pattern": format!("def {g}_loader") }),
                "",
            )
        })
        .collect();
    assert!(strict_block(&greps).is_some_and(|(n, _)| n <= 8));
}

/// A sweep broken by a search that finds something, or by progress in another call, starts
/// again: three empty guesses between reads never add up.
#[test]
fn searches_that_find_things_or_progress_between_them_are_no_sweep() {
    let mut steps = Vec::new();
    for i in 0..12 {
        for g in ["alpha", "beta", "gamma"] {
            steps.push(ok("bash", sh(&format!("grep -rn '{g}_{i}' src/")), ""));
        }
        steps.push(ok(
            "bash",
            sh(&format!("cat src/mod{i}.py")),
            &format!("def handler_{i}(): return {i}"),
        ));
    }
    assert_eq!(strict_block(&steps), None);
    // Listings that find something each time.
    let lists: Vec<Step> = (0..20)
        .map(|i| {
            ok(
                "ls",
                serde_json::json!({ "path": format!("pkg/sub{i}") }),
                &format!("mod_{i}.py"),
            )
        })
        .collect();
    assert_eq!(replay(&strict(), &lists), Seen::default());
}

/// 38 empty polls of a background process in a row, while other calls show progress: not a
/// sweep (polls are waiting), not a loop.
#[test]
fn long_empty_polls_while_other_calls_progress_stay_free() {
    let mut steps = Vec::new();
    for i in 0..38 {
        steps.push(ok(
            "BashOutput",
            serde_json::json!({ "bash_id": "build", "filter": format!("step {i}") }),
            "",
        ));
        if i % 4 == 3 {
            steps.push(ok(
                "Edit",
                serde_json::json!({ "file_path": format!("src/part{i}.rs"), "old_string": "a", "new_string": "b" }),
                "The file has been updated.",
            ));
        }
    }
    assert_eq!(strict_block(&steps), None);
    // Byte-identical empty polls are OpenClaw's own poll and repeat rules' (the default
    // profile's, unchanged): no strict detector ever counts a poll.
    let same: Vec<Step> = steps
        .iter()
        .map(|s| {
            if s.0 == "BashOutput" {
                ok("BashOutput", serde_json::json!({ "bash_id": "build" }), "")
            } else {
                s.clone()
            }
        })
        .collect();
    let seen = replay(&strict(), &same);
    for (_, d) in seen.first_warn.iter().chain(seen.first_block.iter()) {
        assert!(!Detector::EXTRA.contains(d), "{seen:?}");
    }
}

// ---- unrunnable_commands ------------------------------------------------------------

/// Prose sent as commands, each answered by one of two bash errors: stopped at the 5th.
#[test]
fn prose_sent_as_commands_is_stopped_at_the_fifth() {
    let prose = [
        "Now I will inspect the settings module to understand the bug",
        "Let me look at how the parser handles empty strings",
        "I should check the tests first, then apply the fix",
        "Next, we open the file and review the function carefully",
        "First we need to understand the failing test's expectations",
        "The fix requires changing the return statement",
    ];
    let steps: Vec<Step> = prose
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let word = p.split(' ').next().unwrap().trim_end_matches(',');
            let err = if i % 2 == 0 {
                format!("bash: line 1: {word}: command not found")
            } else {
                "bash: -c: line 1: syntax error near unexpected token `('".to_string()
            };
            fail("bash", sh(p), &err)
        })
        .collect();
    let seen = replay(&strict(), &steps);
    assert_eq!(
        seen.first_block,
        Some((5, Detector::UnrunnableCommands)),
        "{seen:?}"
    );
    assert_eq!(seen.first_warn, Some((3, Detector::UnrunnableCommands)));
}

/// One mistyped command, then real ones: never counted past one.
#[test]
fn one_typo_then_real_commands_stays_free() {
    let mut steps = Vec::new();
    for i in 0..6 {
        steps.push(fail(
            "bash",
            sh(&format!("pyhton test_{i}.py")),
            "bash: pyhton: command not found",
        ));
        steps.push(ok(
            "bash",
            sh(&format!("python test_{i}.py")),
            &format!("{i} passed"),
        ));
    }
    assert_eq!(replay(&strict(), &steps), Seen::default());
}

// ---- error_cascade ------------------------------------------------------------------

/// Every call failing, across tools: warned after six, blocked at the 11th.
#[test]
fn failures_in_a_row_across_tools_are_a_cascade() {
    let tools = ["read", "bash", "write", "web_fetch", "grep"];
    let steps: Vec<Step> = (0..14)
        .map(|i| {
            let tool = tools[i % tools.len()];
            fail(
                tool,
                serde_json::json!({ "target": format!("item-{}", (b'a' + i as u8) as char) }),
                &format!("{tool}: permission denied ({})", (b'a' + i as u8) as char),
            )
        })
        .collect();
    let seen = replay(&strict(), &steps);
    assert_eq!(
        seen.first_block,
        Some((11, Detector::ErrorCascade)),
        "{seen:?}"
    );
    assert!(seen.first_warn.is_some_and(|(n, _)| n <= 7));
}

/// Test reruns after each patch fail (the test ran; the command succeeded), edits succeed:
/// no cascade, no loop. `sleep N && tail log` restart cycles and heartbeat re-reads with
/// changing answers are free too.
#[test]
fn test_reruns_restart_cycles_and_heartbeats_stay_free() {
    let mut steps = Vec::new();
    for i in 0..10 {
        steps.push(ok(
            "Edit",
            serde_json::json!({ "file_path": "src/lib.rs", "old_string": format!("v{i}"), "new_string": format!("v{}", i + 1) }),
            "The file has been updated.",
        ));
        steps.push(fail(
            "bash",
            sh("cargo test -q"),
            &format!("test result: FAILED. {} passed; {} failed", 10 + i, 10 - i),
        ));
    }
    for i in 0..8 {
        steps.push(ok("bash", sh("systemctl restart app"), ""));
        steps.push(ok(
            "bash",
            sh(&format!("sleep {} && tail -n 5 app.log", 5 * (i + 1))),
            &format!("started worker {i}; ready"),
        ));
    }
    for i in 0..12 {
        steps.push(ok(
            "read",
            serde_json::json!({ "path": "HEARTBEAT.md" }),
            &format!("last beat: step {i}"),
        ));
        steps.push(ok(
            "bash",
            sh(&format!("make step{i}")),
            &format!("step {i} done"),
        ));
    }
    assert_eq!(strict_block(&steps), None);
}

// ---- same_call_changing_counts -------------------------------------------------------

/// The stuck shape of a held-out real run: the same edit applied 20 times, each reported
/// as a success, the file one line longer each time; the answers differ only in counts and
/// line numbers. Warned at the 4th application, blocked at the 6th (five calls after the
/// first), in every form the edit takes.
#[test]
fn the_same_edit_applied_again_and_again_is_stopped_by_the_sixth() {
    let snippet = |i: usize| {
        format!(
            "The file /repo/app/settings.py has been edited. Here's the result of running `cat -n` on a snippet of /repo/app/settings.py:\n    {}\timport os\n    {}\timport os\n    {}\tDEBUG = False\nThe file now has {} lines. Review the changes and make sure they are as expected.",
            12 + i,
            13 + i,
            14 + i,
            210 + i
        )
    };
    let insert: Vec<Step> = (0..20)
        .map(|i| {
            ok(
                "str_replace_editor",
                serde_json::json!({ "command": "insert", "path": "/repo/app/settings.py", "insert_line": 12, "new_str": "import os" }),
                &snippet(i),
            )
        })
        .collect();
    let seen = replay(&strict(), &insert);
    assert_eq!(
        seen.first_block,
        Some((6, Detector::ChangingCountsSameCall)),
        "{seen:?}"
    );
    assert_eq!(seen.first_warn, Some((4, Detector::ChangingCountsSameCall)));
    // The same append through the shell, answered by the new line count.
    let append: Vec<Step> = (0..20)
        .map(|i| {
            ok(
                "bash",
                sh("echo 'from .base import *' >> app/settings.py && wc -l app/settings.py"),
                &format!("{} app/settings.py", 210 + i),
            )
        })
        .collect();
    assert_eq!(
        strict_block(&append),
        Some((6, Detector::ChangingCountsSameCall))
    );
    // An in-place insert, answered by how many copies there are now; mini-swe-agent's
    // observation shape.
    let sed: Vec<Step> = (0..20)
        .map(|i| {
            ok(
                "bash",
                sh("cd /repo && sed -i '12i import os' app/settings.py && grep -c 'import os' app/settings.py"),
                &format!("<returncode>0</returncode>\n<output>\n{}\n</output>", i + 1),
            )
        })
        .collect();
    assert_eq!(
        strict_block(&sed),
        Some((6, Detector::ChangingCountsSameCall))
    );
    // Claude Code's Edit whose new text holds the old one: every run succeeds and grows
    // the file.
    let edit: Vec<Step> = (0..20)
        .map(|i| {
            ok(
                "Edit",
                serde_json::json!({ "file_path": "/repo/src/db.rs", "old_string": "use crate::meta; // tagged types", "new_string": "use crate::meta; // tagged types // tagged types" }),
                &format!("The file /repo/src/db.rs has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n    {}\tuse crate::meta; // tagged types // tagged types", 7 + i % 2),
            )
        })
        .collect();
    assert!(
        strict_block(&edit).is_some_and(|(n, _)| n <= 8),
        "{:?}",
        replay(&strict(), &edit)
    );
}

/// Test reruns after each patch: the same command, its counts changing, with an edit in
/// between every time.
#[test]
fn test_reruns_after_each_patch_are_not_changing_counts() {
    let mut steps = Vec::new();
    for i in 0..15 {
        steps.push(ok(
            "str_replace_editor",
            serde_json::json!({ "command": "str_replace", "path": "/repo/lib.py", "old_str": format!("x = {i}"), "new_str": format!("x = {}", i + 1) }),
            &format!("The file /repo/lib.py has been edited. Line {} changed.", 40 + i),
        ));
        steps.push(ok(
            "bash",
            sh("python -m pytest tests/ -q > /tmp/out.txt; tail -n 1 /tmp/out.txt"),
            &format!("{} passed, {} failed in 0.{}s", 20 + i, 15 - i, 30 + i),
        ));
    }
    // OpenClaw's own `generic_repeat` warns from the 10th identical rerun (the default
    // profile's rule, unchanged); no strict detector says a word.
    assert_no_strict_detection(&replay(&strict(), &steps));
}

/// Neither a block nor a strict detector's warning (OpenClaw's own warnings may come).
fn assert_no_strict_detection(seen: &Seen) {
    assert_eq!(seen.first_block, None, "{seen:?}");
    for (_, d) in seen.first_warn.iter() {
        assert!(!Detector::EXTRA.contains(d), "{seen:?}");
    }
}

/// Waiting on something that moves by itself: a growing log polled while other calls
/// progress, `sleep N && tail log` cycles back to back, heartbeat re-reads, and `wc -l`
/// after appends between writes. Their answers differ only in numbers too, but none of
/// the calls changes anything itself.
#[test]
fn polls_sleep_tail_cycles_heartbeats_and_line_counts_stay_free() {
    let mut polls = Vec::new();
    for i in 0..30 {
        polls.push(ok(
            "bash",
            sh("tail -n 1 target/build.log"),
            &format!("Compiling crate {} of 300 ({}%)", i * 10, i * 3),
        ));
        if i % 3 == 2 {
            polls.push(ok(
                "Write",
                serde_json::json!({ "file_path": format!("/repo/docs/part{i}.md"), "content": format!("# Part {i}\n") }),
                "File created successfully",
            ));
        }
    }
    assert_no_strict_detection(&replay(&strict(), &polls));
    // Back to back, nothing in between: the training job moves, the agent waits.
    let sleeps: Vec<Step> = (0..25)
        .map(|i| {
            ok(
                "bash",
                sh("sleep 60 && tail -n 2 train.log"),
                &format!("epoch {i} step {} loss 0.{}", i * 500, 900 - i * 7),
            )
        })
        .collect();
    assert_no_strict_detection(&replay(&strict(), &sleeps));
    let beats: Vec<Step> = (0..25)
        .map(|i| {
            ok(
                "heartbeat",
                serde_json::json!({ "agent": "worker-2" }),
                &format!("alive; uptime {}s; {} tasks queued", 60 * i, 30 - i),
            )
        })
        .collect();
    assert_no_strict_detection(&replay(&strict(), &beats));
    let mut rows = Vec::new();
    for i in 0..20 {
        rows.push(ok(
            "bash",
            sh(&format!("printf 'row {i},ok\\n' >> data.csv")),
            "",
        ));
        rows.push(ok(
            "bash",
            sh("wc -l data.csv"),
            &format!("{} data.csv", i + 1),
        ));
        rows.push(ok(
            "write",
            serde_json::json!({ "path": format!("out/report{i}.txt"), "content": format!("rows: {}", i + 1) }),
            &format!("Successfully wrote {} bytes", 7 + i / 10),
        ));
    }
    assert_no_strict_detection(&replay(&strict(), &rows));
}

/// The peers' not-stuck scenarios whose answers change only in numbers: Roo Code's page
/// scrolled down, OpenHands' `ls` listing a new file each time. No call changes anything,
/// so `same_call_changing_counts` never even warns.
#[test]
fn peers_not_stuck_scenarios_with_counting_answers_are_never_changing_counts() {
    let scrolling: Vec<Step> = (0..15)
        .map(|i| {
            ok(
                "browser_action",
                serde_json::json!({ "action": "scroll_down" }),
                &format!("viewport at {}px: section {i}", i * 600),
            )
        })
        .collect();
    let listing: Vec<Step> = (0..10)
        .map(|i| ok("execute_bash", sh("ls"), &format!("file{i}.txt")))
        .collect();
    for steps in [scrolling, listing] {
        let seen = replay(&strict(), &steps);
        for (_, d) in seen.first_warn.iter().chain(seen.first_block.iter()) {
            assert_ne!(*d, Detector::ChangingCountsSameCall, "{seen:?}");
        }
        assert_eq!(seen.first_block, None);
    }
}

/// The counts hash is saved with the session (JSON and binary): a restored session goes on
/// counting the same streak, and a state saved without it still loads.
#[test]
fn counts_survive_export_and_import() {
    let p = strict();
    let args = v(&sh("echo x >> a.txt && wc -l a.txt").to_string());
    let mut s = Session::new("t");
    for i in 0..4 {
        let call = Call::new("bash", &args).run("r");
        let _ = s.before_call(&p, &call);
        let _ = s.after_call(&p, &call, Outcome::Result(&text(&format!("{i} a.txt"))));
    }
    let json = s.export_state();
    assert!(String::from_utf8_lossy(&json).contains("\"counts\""));
    for bytes in [json.clone(), s.export_state_binary()] {
        let mut restored = Session::import_state(&bytes, "t").unwrap();
        assert_eq!(restored.ledger(), s.ledger());
        let call = Call::new("bash", &args).run("r");
        let _ = restored.before_call(&p, &call);
        let _ = restored.after_call(&p, &call, Outcome::Result(&text("4 a.txt")));
        let d = restored.before_call(&p, &Call::new("bash", &args).run("r"));
        assert!(d.is_block(), "{:?}", d.detection());
        assert_eq!(
            d.detection().map(|d| d.detector),
            Some(Detector::ChangingCountsSameCall)
        );
    }
    let old = String::from_utf8(json).unwrap();
    let old: serde_json::Value = serde_json::from_str(&old).unwrap();
    let mut old = old;
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(o) => {
                o.remove("counts");
                o.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut old);
    let restored = Session::import_state(old.to_string().as_bytes(), "t").unwrap();
    assert!(restored
        .ledger()
        .entries()
        .iter()
        .all(|e| e.sketch.as_ref().is_some_and(|s| s.counts == 0)));
}

/// A sketch's numbers and write target are saved with the session (JSON and binary), so a
/// restored session still sees a batch of writes as progress; a state saved without them
/// (an earlier version) still loads.
#[test]
fn numbers_and_write_targets_survive_export_and_import() {
    let p = strict();
    let mut s = Session::new("t");
    for i in 1..=4 {
        let args =
            v(&serde_json::json!({ "path": format!("out/f{i}.txt"), "content": "x" }).to_string());
        let call = Call::new("write", &args).run("r");
        let _ = s.before_call(&p, &call);
        let _ = s.after_call(&p, &call, Outcome::Result(&text("ok")));
    }
    let json = s.export_state();
    let text_state = String::from_utf8(json.clone()).unwrap();
    assert!(text_state.contains("\"numbers\"") && text_state.contains("\"target\""));
    let restored = Session::import_state(&json, "t").unwrap();
    assert_eq!(restored.ledger(), s.ledger());
    let binary = Session::import_state(&s.export_state_binary(), "t").unwrap();
    assert_eq!(binary.ledger(), s.ledger());
    // The same batch goes on after the restore without a block.
    let mut restored = restored;
    for i in 5..=30 {
        let args =
            v(&serde_json::json!({ "path": format!("out/f{i}.txt"), "content": "x" }).to_string());
        let call = Call::new("write", &args).run("r");
        assert!(!restored.before_call(&p, &call).is_block(), "write {i}");
        let _ = restored.after_call(&p, &call, Outcome::Result(&text("ok")));
    }
    // Without the two fields: loads, both read as 0.
    let old: serde_json::Value = serde_json::from_str(&text_state).unwrap();
    let mut old = old;
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(o) => {
                o.remove("numbers");
                o.remove("target");
                o.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut old);
    assert!(Session::import_state(old.to_string().as_bytes(), "t").is_ok());
}

/// Each new detector switches on alone in the `openclaw` profile, off or warn-only in the
/// strict one, from the config file's `loopguard.detectors` block.
#[test]
fn the_new_detectors_switch_on_alone_and_off_from_the_config() {
    let load = |t: &str| {
        let l = loopguard_core::OpenClawConfig::from_json5(t).unwrap();
        assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
        l.config.policy_for(None)
    };
    let sweep: Vec<Step> = (0..10)
        .map(|i| {
            ok(
                "bash",
                sh(&format!("find / -name 'guess{}*'", (b'a' + i) as char)),
                "",
            )
        })
        .collect();
    let alone = load(
        r#"{tools:{loopDetection:{enabled:true}},loopguard:{detectors:{emptySearchSweep:true}}}"#,
    );
    assert!(alone.extra.empty_search_sweep.enabled && !alone.extra.near_repeat.enabled);
    assert_eq!(
        replay(&alone, &sweep).first_block,
        Some((8, Detector::EmptySearchSweep))
    );
    let default = load(r#"{tools:{loopDetection:{enabled:true}}}"#);
    assert_eq!(replay(&default, &sweep), Seen::default());
    let warn_only = load(
        r#"{tools:{loopDetection:{enabled:true}},loopguard:{profile:"strict",detectors:{emptySearchSweep:{warnAt:2,blockAt:0},unrunnableCommands:false,errorCascade:{blockAt:12}}}}"#,
    );
    let seen = replay(&warn_only, &sweep);
    assert_eq!(seen.first_warn, Some((3, Detector::EmptySearchSweep)));
    assert_eq!(seen.first_block, None);
    assert!(!warn_only.extra.unrunnable_commands.enabled);
    assert_eq!(warn_only.extra.error_cascade.block_at, 12);
    let counts = load(
        r#"{tools:{loopDetection:{enabled:true}},loopguard:{detectors:{changingCountsSameCall:{enabled:true,warnAt:2,blockAt:4}}}}"#,
    );
    assert!(counts.extra.changing_counts.enabled && !counts.extra.near_repeat.enabled);
    let appends: Vec<Step> = (0..8)
        .map(|i| {
            ok(
                "bash",
                sh("echo x >> a.txt && wc -l a.txt"),
                &format!("{i} a.txt"),
            )
        })
        .collect();
    let seen = replay(&counts, &appends);
    assert_eq!(seen.first_warn, Some((3, Detector::ChangingCountsSameCall)));
    assert_eq!(
        seen.first_block,
        Some((5, Detector::ChangingCountsSameCall))
    );
    assert_eq!(replay(&default, &appends), Seen::default());
    let off = load(
        r#"{tools:{loopDetection:{enabled:true}},loopguard:{profile:"strict",detectors:{changingCountsSameCall:false}}}"#,
    );
    assert!(!off.extra.changing_counts.enabled);
    let seen = replay(&off, &appends);
    for (_, d) in seen.first_warn.iter().chain(seen.first_block.iter()) {
        assert_ne!(*d, Detector::ChangingCountsSameCall, "{seen:?}");
    }
}
