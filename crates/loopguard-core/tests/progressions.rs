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
            ("read", serde_json::json!({ "path": format!("file{i}.txt") })),
        ] {
            let args = v(&args.to_string());
            let call = Call::new(tool, &args).run("r");
            let d = s.before_call(&p, &call);
            assert!(!d.is_block(), "call {i} {tool}: {:?}", d.detection());
            let out = if tool == "bash" { "total 0" } else { "(empty file)" };
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
        ok("anotherTool", serde_json::json!({ "param": "value1" }), "ok"),
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
            sh(&format!("sed -n '{},{}p' src/big_table.py", 1000 + i * 100, 1099 + i * 100)),
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
    assert!(
        seen.first_block.is_some_and(|(n, _)| n <= 8),
        "{seen:?}"
    );
    assert!(seen.first_warn.is_some_and(|(n, _)| n < seen.first_block.unwrap().0));
}
