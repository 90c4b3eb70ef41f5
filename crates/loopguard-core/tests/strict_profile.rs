//! The `strict` profile: each extra detector at its thresholds (just below, at, just
//! above), the profile's configuration, state round trips, and properties.

use loopguard_core::Outcome;
use loopguard_core::{Call, Detector, Level, Session, Value, Verdict};
use loopguard_core::{DetectorProfile, ExtraPolicy, OpenClawConfig, Policy, Severity};
use proptest::prelude::*;

fn strict() -> Policy {
    Policy::enabled().with_extra(ExtraPolicy::strict())
}

/// Only one extra detector on (profile `openclaw` plus a switch), so each rule is seen alone.
fn only(key: &str, extra_fields: &str) -> Policy {
    only_with("", key, extra_fields)
}

/// [`only`] with more of OpenClaw's block (`block` starts with a comma).
fn only_with(block: &str, key: &str, extra_fields: &str) -> Policy {
    let text = format!(
        r#"{{tools:{{loopDetection:{{enabled:true{block}}}}},loopguard:{{detectors:{{{key}:{{enabled:true{extra_fields}}}}}}}}}"#
    );
    let loaded = OpenClawConfig::from_json5(&text).unwrap();
    assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
    loaded.config.policy_for(None)
}

fn v(json: &str) -> Value<'static> {
    Value::parse(json.as_bytes()).unwrap().into_owned()
}

/// Runs `n` calls of `tool` with `args`, each answered with `outcome`; returns the verdict
/// of the call after them.
fn after_n(
    s: &mut Session,
    p: &Policy,
    tool: &str,
    args: &Value<'_>,
    outcome: Outcome<'_, '_>,
    n: usize,
) -> Verdict {
    for _ in 0..n {
        let call = Call::new(tool, args);
        let _ = s.before_call(p, &call);
        let _ = s.after_call(p, &call, outcome);
    }
    s.before_call(p, &Call::new(tool, args)).verdict
}

fn detector(v: &Verdict) -> Option<(Detector, Level, u64)> {
    match v {
        Verdict::Allow => None,
        Verdict::Warn { detection, .. } | Verdict::Block { detection, .. } => {
            Some((detection.detector, detection.level, detection.count))
        }
    }
}

fn streak_verdict(
    p: &Policy,
    n: usize,
    outcome: Outcome<'_, '_>,
) -> Option<(Detector, Level, u64)> {
    let mut s = Session::new("t");
    let args = v(r#"{"path":"/missing.txt"}"#);
    detector(&after_n(&mut s, p, "read", &args, outcome, n))
}

#[test]
fn identical_failure_streak_warns_at_3_blocks_at_6() {
    let p = only("identicalFailureStreak", "");
    let err = v(r#""ENOENT: no such file or directory, open '/missing.txt'""#);
    let e = Outcome::Error(&err);
    let f = Detector::IdenticalFailureStreak;
    assert_eq!(streak_verdict(&p, 2, e), None);
    assert_eq!(streak_verdict(&p, 3, e), Some((f, Level::Warning, 3)));
    assert_eq!(streak_verdict(&p, 4, e), Some((f, Level::Warning, 4)));
    assert_eq!(streak_verdict(&p, 5, e), Some((f, Level::Warning, 5)));
    assert_eq!(streak_verdict(&p, 6, e), Some((f, Level::Critical, 6)));
    assert_eq!(streak_verdict(&p, 7, e), Some((f, Level::Critical, 7)));
    // A success is not a failure: this detector stays silent.
    let ok = v(r#""contents""#);
    assert_eq!(streak_verdict(&p, 7, Outcome::Result(&ok)), None);
    // An exec with a non-zero exit is a failure.
    let failed = v(r#"{"details":{"status":"failed","exitCode":1,"aggregated":"boom"}}"#);
    assert_eq!(
        streak_verdict(&p, 6, Outcome::Result(&failed)).map(|d| d.1),
        Some(Level::Critical)
    );
}

#[test]
fn identical_failure_streak_needs_the_failures_in_a_row() {
    let p = only("identicalFailureStreak", "");
    let err = v(r#""boom""#);
    let other = v(r#"{"x":1}"#);
    let args = v(r#"{"a":1}"#);
    let mut s = Session::new("t");
    for i in 0..12 {
        let call = Call::new("read", &args);
        let _ = s.before_call(&p, &call);
        let _ = s.after_call(&p, &call, Outcome::Error(&err));
        if i % 5 == 4 {
            // Something else happens every fifth call: the streak starts again.
            let c = Call::new("edit", &other);
            let _ = s.before_call(&p, &c);
            let _ = s.after_call(&p, &c, Outcome::Result(&other));
        }
    }
    let d = s.before_call(&p, &Call::new("read", &args));
    assert_eq!(
        detector(&d.verdict).map(|x| x.1),
        Some(Level::Warning),
        "{d:?}"
    );
}

#[test]
fn identical_outcome_streak_warns_at_5_blocks_at_8() {
    let p = only("identicalOutcomeStreak", "");
    let ok = v(r#"{"content":[{"type":"text","text":"same"}]}"#);
    let r = Outcome::Result(&ok);
    let o = Detector::IdenticalOutcomeStreak;
    assert_eq!(streak_verdict(&p, 4, r), None);
    assert_eq!(streak_verdict(&p, 5, r), Some((o, Level::Warning, 5)));
    assert_eq!(streak_verdict(&p, 7, r), Some((o, Level::Warning, 7)));
    assert_eq!(streak_verdict(&p, 8, r), Some((o, Level::Critical, 8)));
    assert_eq!(streak_verdict(&p, 9, r), Some((o, Level::Critical, 9)));
}

#[test]
fn outcome_streak_leaves_known_polls_to_openclaw() {
    let p = only("identicalOutcomeStreak", "");
    let args = v(r#"{"action":"poll","sessionId":"s1"}"#);
    let running = v(
        r#"{"content":[{"type":"text","text":"(no new output)"}],"details":{"status":"running"}}"#,
    );
    let mut s = Session::new("t");
    let verdict = after_n(&mut s, &p, "process", &args, Outcome::Result(&running), 9);
    assert_eq!(detector(&verdict), None);
}

fn error_args_verdict(p: &Policy, variants: usize) -> Option<(Detector, Level, u64)> {
    let mut s = Session::new("t");
    for i in 0..variants {
        let args = v(&format!(r#"{{"path":"/tmp/attempt-{i}.txt"}}"#));
        let err = v(&format!(
            r#""FileNotFoundError: [Errno 2] No such file or directory: '/tmp/attempt-{i}.txt'""#
        ));
        let call = Call::new("read", &args);
        let _ = s.before_call(p, &call);
        let _ = s.after_call(p, &call, Outcome::Error(&err));
    }
    let next = v(r#"{"path":"/tmp/yet-another.txt"}"#);
    detector(&s.before_call(p, &Call::new("read", &next)).verdict)
}

#[test]
fn error_despite_changing_args_warns_at_4_variants_blocks_at_8() {
    let p = only("errorDespiteChangingArgs", "");
    let e = Detector::ErrorDespiteChangingArgs;
    assert_eq!(error_args_verdict(&p, 3), None);
    assert_eq!(error_args_verdict(&p, 4), Some((e, Level::Warning, 4)));
    assert_eq!(error_args_verdict(&p, 7), Some((e, Level::Warning, 7)));
    assert_eq!(error_args_verdict(&p, 8), Some((e, Level::Critical, 8)));
    assert_eq!(error_args_verdict(&p, 9), Some((e, Level::Critical, 9)));
    // `blockAt: 0`: warning only.
    let warn_only = only("errorDespiteChangingArgs", ",blockAt:0");
    assert_eq!(
        error_args_verdict(&warn_only, 20),
        Some((e, Level::Warning, 20))
    );
}

/// A tool result with one text part, as tools answer.
fn text_result(text: &str) -> Value<'static> {
    v(&serde_json::json!({ "content": [{ "type": "text", "text": text }] }).to_string())
}

/// `n` runs of one append, the file one line longer each time (the answer: its new line
/// count), then the verdict of the next run.
fn counts_verdict(p: &Policy, n: usize) -> Option<(Detector, Level, u64)> {
    let mut s = Session::new("t");
    let args = v(r#"{"command":"echo 'import os' >> app.py && wc -l app.py"}"#);
    for i in 0..n {
        let call = Call::new("bash", &args);
        let _ = s.before_call(p, &call);
        let out = text_result(&format!("{} app.py", 40 + i));
        let _ = s.after_call(p, &call, Outcome::Result(&out));
    }
    detector(&s.before_call(p, &Call::new("bash", &args)).verdict)
}

#[test]
fn same_call_changing_counts_warns_at_3_blocks_at_5() {
    let p = only("changingCountsSameCall", "");
    let d = Detector::ChangingCountsSameCall;
    assert_eq!(counts_verdict(&p, 1), None);
    assert_eq!(counts_verdict(&p, 2), None);
    assert_eq!(counts_verdict(&p, 3), Some((d, Level::Warning, 3)));
    assert_eq!(counts_verdict(&p, 4), Some((d, Level::Warning, 4)));
    assert_eq!(counts_verdict(&p, 5), Some((d, Level::Critical, 5)));
    assert_eq!(counts_verdict(&p, 6), Some((d, Level::Critical, 6)));
    // `blockAt: 0`: warning only; other numbers are read.
    let warn_only = only("changingCountsSameCall", ",blockAt:0");
    // (From the 10th identical call OpenClaw's `generic_repeat` warns, and its warning is
    // named first.)
    assert_eq!(counts_verdict(&warn_only, 9), Some((d, Level::Warning, 9)));
    let late = only("changingCountsSameCall", ",warnAt:5,blockAt:9");
    assert_eq!(counts_verdict(&late, 4), None);
    assert_eq!(counts_verdict(&late, 8), Some((d, Level::Warning, 8)));
    assert_eq!(counts_verdict(&late, 9), Some((d, Level::Critical, 9)));
    // Off unless switched on in the openclaw profile; on in strict.
    assert_eq!(counts_verdict(&Policy::enabled(), 9), None);
    assert_eq!(counts_verdict(&strict(), 5), Some((d, Level::Critical, 5)));
}

#[test]
fn same_call_changing_counts_needs_a_mutating_call_a_success_and_numbers_only() {
    let p = only("changingCountsSameCall", "");
    let run = |tool: &str, args: &str, outs: &dyn Fn(usize) -> (String, bool)| {
        let mut s = Session::new("t");
        let args = v(args);
        for i in 0..8 {
            let call = Call::new(tool, &args);
            let _ = s.before_call(&p, &call);
            let (text, failed) = outs(i);
            let (err, out) = (Value::from(text.clone()), text_result(&text));
            let o = if failed {
                Outcome::Error(&err)
            } else {
                Outcome::Result(&out)
            };
            let _ = s.after_call(&p, &call, o);
        }
        detector(&s.before_call(&p, &Call::new(tool, &args)).verdict)
    };
    let append = r#"{"command":"echo x >> log.txt && wc -l log.txt"}"#;
    // A read whose answer counts up (a growing log re-read) is not counted.
    assert_eq!(
        run("bash", r#"{"command":"wc -l log.txt"}"#, &|i| (
            format!("{i} log.txt"),
            false
        )),
        None
    );
    // Failures are not successes.
    assert_eq!(
        run("bash", append, &|i| (format!("error {i}: disk full"), true)),
        None
    );
    // Answers that differ in more than numbers are not counts.
    let words = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
    ];
    assert_eq!(
        run("bash", append, &|i| (format!("{} {i}", words[i]), false)),
        None
    );
    // The same answer every time is the outcome streak's, not this detector's.
    assert_eq!(run("bash", append, &|_| ("".to_string(), false)), None);
    // A write tool (content key and target) is counted like an append.
    assert_eq!(
        run(
            "str_replace_editor",
            r#"{"command":"insert","path":"/repo/a.py","insert_line":3,"new_str":"import os"}"#,
            &|i| (
                format!(
                    "The file /repo/a.py has been edited; it now has {} lines.",
                    90 + i
                ),
                false
            ),
        ),
        Some((Detector::ChangingCountsSameCall, Level::Critical, 8))
    );
}

#[test]
fn different_errors_for_different_args_are_not_one_error() {
    let p = only("errorDespiteChangingArgs", "");
    let mut s = Session::new("t");
    for (i, msg) in [
        "permission denied",
        "not found",
        "is a directory",
        "timed out",
        "disk full",
    ]
    .iter()
    .enumerate()
    {
        let args = v(&format!(r#"{{"path":"/p{i}"}}"#));
        let err = Value::from(*msg);
        let call = Call::new("read", &args);
        let _ = s.before_call(&p, &call);
        let _ = s.after_call(&p, &call, Outcome::Error(&err));
    }
    let next = v(r#"{"path":"/q"}"#);
    assert_eq!(
        detector(&s.before_call(&p, &Call::new("read", &next)).verdict),
        None
    );
}

fn churn_verdict(p: &Policy, calls: usize, variants: usize) -> Option<(Detector, Level, u64)> {
    let mut s = Session::new("t");
    for i in 0..calls {
        let k = i % variants;
        let args = v(&format!(r#"{{"path":"/tmp/{k}.md"}}"#));
        let res = v(&format!(r#""wrote {k}""#));
        let call = Call::new("write", &args);
        let _ = s.before_call(p, &call);
        let _ = s.after_call(p, &call, Outcome::Result(&res));
    }
    let args = v(r#"{"path":"/tmp/0.md"}"#);
    detector(&s.before_call(p, &Call::new("write", &args)).verdict)
}

#[test]
fn argument_churn_warns_over_a_full_window_of_few_variants_and_blocks_at_14() {
    // OpenClaw's ping-pong and generic warnings would answer first; switched off to see the rule alone.
    let p = only_with(
        ",detectors:{pingPong:false,genericRepeat:false}",
        "argumentChurn",
        "",
    );
    let c = Detector::ArgumentChurn;
    assert_eq!(churn_verdict(&p, 9, 2), None, "window not full");
    assert_eq!(churn_verdict(&p, 10, 2), Some((c, Level::Warning, 10)));
    assert_eq!(churn_verdict(&p, 11, 3), Some((c, Level::Warning, 10)));
    assert_eq!(churn_verdict(&p, 13, 3), Some((c, Level::Warning, 10)));
    // The strict profile blocks a churn that goes on for `blockAt` (14) outcomes.
    assert_eq!(churn_verdict(&p, 14, 3), Some((c, Level::Critical, 14)));
    assert_eq!(churn_verdict(&p, 40, 3), Some((c, Level::Critical, 14)));
    assert_eq!(
        churn_verdict(&p, 40, 4),
        None,
        "more variants than maxVariants"
    );
    assert_eq!(
        churn_verdict(&p, 12, 1),
        None,
        "one variant is a repeat, not churn"
    );
}

#[test]
fn argument_churn_needs_stable_results_per_variant() {
    let p = only_with(
        ",detectors:{pingPong:false,genericRepeat:false}",
        "argumentChurn",
        "",
    );
    let mut s = Session::new("t");
    for i in 0..20 {
        let args = v(&format!(r#"{{"path":"/tmp/{}.md"}}"#, i % 2));
        let res = v(&format!(r#""revision {i}""#));
        let call = Call::new("write", &args);
        let _ = s.before_call(&p, &call);
        let _ = s.after_call(&p, &call, Outcome::Result(&res));
    }
    let args = v(r#"{"path":"/tmp/0.md"}"#);
    assert_eq!(
        detector(&s.before_call(&p, &Call::new("write", &args)).verdict),
        None
    );
}

/// `compactions` compactions, each preceded by two identical outcomes of the same call,
/// then `after` more after the last one; the verdict of the next call.
fn compaction_verdict(
    p: &Policy,
    compactions: usize,
    after: usize,
) -> Option<(Detector, Level, u64)> {
    let mut s = Session::new("t");
    let args = v(r#"{"url":"http://localhost/health"}"#);
    let res = v(r#""503 Service Unavailable""#);
    let other = v(r#"{"x":1}"#);
    for _ in 0..compactions {
        for _ in 0..2 {
            let call = Call::new("fetch", &args).run("r");
            let _ = s.before_call(p, &call);
            let _ = s.after_call(p, &call, Outcome::Result(&res));
        }
        // Something else in between, so no streak detector is involved.
        let c = Call::new("think", &other).run("r");
        let _ = s.before_call(p, &c);
        let _ = s.after_call(p, &c, Outcome::Result(&other));
        let _ = s.on_compaction(p, Some(&"r".into()));
    }
    for _ in 0..after {
        let call = Call::new("fetch", &args).run("r");
        let _ = s.before_call(p, &call);
        let _ = s.after_call(p, &call, Outcome::Result(&res));
    }
    detector(
        &s.before_call(p, &Call::new("fetch", &args).run("r"))
            .verdict,
    )
}

#[test]
fn loop_across_compactions_blocks_when_the_loop_resumes_after_the_second() {
    let p = only("loopAcrossCompactions", "");
    let l = Detector::LoopAcrossCompactions;
    assert_eq!(
        compaction_verdict(&p, 1, 1),
        None,
        "one compaction: the guard's job"
    );
    assert_eq!(compaction_verdict(&p, 2, 0), None, "not resumed yet");
    assert_eq!(compaction_verdict(&p, 2, 1), Some((l, Level::Critical, 2)));
    assert_eq!(compaction_verdict(&p, 3, 1), Some((l, Level::Critical, 3)));
    let three = only("loopAcrossCompactions", ",blockAt:3");
    assert_eq!(compaction_verdict(&three, 2, 1), None);
    assert_eq!(
        compaction_verdict(&three, 3, 1),
        Some((l, Level::Critical, 3))
    );
}

#[test]
fn second_critical_ends_the_run_and_only_that_run() {
    let p = strict();
    let args = v(r#"{"path":"/missing"}"#);
    let err = v(r#""ENOENT""#);
    let mut s = Session::new("t");
    let mut first_block = None;
    for i in 1..=12 {
        let call = Call::new("read", &args).run("r1");
        let d = s.before_call(&p, &call);
        if d.is_block() {
            let det = d.detection().unwrap().detector;
            match first_block {
                None => {
                    assert_eq!(det, Detector::IdenticalFailureStreak);
                    assert!(!d.ends_run);
                    first_block = Some(i);
                }
                Some(_) => {
                    assert_eq!(det, Detector::SecondCriticalAbort);
                    assert!(d.ends_run);
                    break;
                }
            }
        } else {
            let _ = s.after_call(&p, &call, Outcome::Error(&err));
        }
    }
    assert_eq!(first_block, Some(7));
    // The run is over: an unrelated call is blocked too, without ending it again.
    let other = v(r#"{"q":1}"#);
    let d = s.before_call(&p, &Call::new("search", &other).run("r1"));
    assert_eq!(
        d.detection().map(|d| d.detector),
        Some(Detector::SecondCriticalAbort)
    );
    assert!(!d.ends_run);
    // Another run is not affected.
    let d = s.before_call(&p, &Call::new("search", &other).run("r2"));
    assert!(matches!(d.verdict, Verdict::Allow), "{d:?}");
    // Without the switch, the second block is just a block.
    let off = strict().with_extra(ExtraPolicy {
        second_critical: loopguard_core::ExtraDetector {
            enabled: false,
            ..ExtraPolicy::strict().second_critical
        },
        ..ExtraPolicy::strict()
    });
    let mut s = Session::new("t");
    let mut blocks = Vec::new();
    for _ in 0..10 {
        let call = Call::new("read", &args).run("r1");
        let d = s.before_call(&off, &call);
        if let Some(det) = d.detection().filter(|_| d.is_block()) {
            blocks.push(det.detector);
        } else {
            let _ = s.after_call(&off, &call, Outcome::Error(&err));
        }
    }
    assert!(
        blocks
            .iter()
            .all(|d| *d == Detector::IdenticalFailureStreak),
        "{blocks:?}"
    );
    assert!(blocks.len() >= 2);
}

#[test]
fn extra_detectors_follow_enabled_and_the_openclaw_profile_changes_nothing() {
    let args = v(r#"{"p":1}"#);
    let err = v(r#""boom""#);
    // `enabled` off: nothing detects, nothing is written to the ledger.
    let off = Policy::default().with_extra(ExtraPolicy::strict());
    let mut s = Session::new("t");
    assert_eq!(
        detector(&after_n(
            &mut s,
            &off,
            "read",
            &args,
            Outcome::Error(&err),
            30
        )),
        None
    );
    assert!(s.ledger().is_empty());
    // The openclaw profile (explicitly chosen): the same state bytes as no block at all.
    let plain = Policy::enabled();
    let chosen = OpenClawConfig::from_json5(
        r#"{tools:{loopDetection:{enabled:true}},loopguard:{profile:"openclaw"}}"#,
    )
    .unwrap()
    .config
    .policy_for(None);
    assert_eq!(plain, chosen);
    let (mut a, mut b) = (Session::new("t"), Session::new("t"));
    let va = after_n(&mut a, &plain, "read", &args, Outcome::Error(&err), 25);
    let vb = after_n(&mut b, &chosen, "read", &args, Outcome::Error(&err), 25);
    assert_eq!(va, vb);
    assert_eq!(a.export_state(), b.export_state());
    assert!(a.ledger().is_empty());
}

#[test]
fn ledger_survives_export_and_import() {
    let p = strict();
    let args = v(r#"{"p":1}"#);
    let err = v(r#""boom""#);
    let mut s = Session::new("t");
    for _ in 0..5 {
        let call = Call::new("read", &args).run("r");
        let _ = s.before_call(&p, &call);
        let _ = s.after_call(&p, &call, Outcome::Error(&err));
        let _ = s.on_compaction(&p, Some(&"r".into()));
    }
    let bytes = s.export_state();
    assert!(String::from_utf8_lossy(&bytes).contains("\"ledger\""));
    let mut restored = Session::import_state(&bytes, "t").unwrap();
    assert_eq!(restored.ledger(), s.ledger());
    assert_eq!(restored.export_state(), bytes);
    // The binary form holds the same ledger.
    let binary = Session::import_state(&s.export_state_binary(), "t").unwrap();
    assert_eq!(binary.ledger(), s.ledger());
    assert_eq!(binary.export_state(), bytes);
    // The restored session decides as the original does (block at the 6th failure).
    let mut original = s;
    for _ in 0..3 {
        let call = Call::new("read", &args).run("r");
        let a = original.before_call(&p, &call);
        let b = restored.before_call(&p, &call);
        assert_eq!(a, b);
        let _ = original.after_call(&p, &call, Outcome::Error(&err));
        let _ = restored.after_call(&p, &call, Outcome::Error(&err));
    }
    // A damaged ledger is an error naming the field.
    let text = String::from_utf8(bytes)
        .unwrap()
        .replacen("\"epoch\":0", "\"epoch\":\"zero\"", 1);
    let e = Session::import_state(text.as_bytes(), "t")
        .unwrap_err()
        .to_string();
    assert!(e.contains("ledger.entries[0].epoch"), "{e}");
}

#[test]
fn config_block_is_validated_with_suggestions() {
    let text = r#"{
      tools: { loopDetection: { enabled: true } },
      loopguard: {
        profile: "strikt",
        detectors: {
          identicalFailureStreek: true,
          argumentChurn: { window: 0, maxVariant: 2 },
          secondCriticalAbort: "yes",
        },
        thresholds: 3,
      },
      agents: { list: [ { id: "a", loopguard: { profile: 3 } } ] },
    }"#;
    let l = OpenClawConfig::from_json5(text).unwrap();
    let d: Vec<(Severity, &str, &str)> = l
        .diagnostics
        .iter()
        .map(|d| (d.severity, d.path.as_str(), d.message.as_str()))
        .collect();
    let has = |path: &str, needle: &str| {
        d.iter()
            .any(|(s, p, m)| *s == Severity::Error && *p == path && m.contains(needle))
    };
    assert!(
        has("loopguard.profile", "did you mean \"strict\""),
        "{d:#?}"
    );
    assert!(
        has(
            "loopguard.detectors.identicalFailureStreek",
            "identicalFailureStreak"
        ),
        "{d:#?}"
    );
    assert!(
        has(
            "loopguard.detectors.argumentChurn.window",
            "positive integer"
        ),
        "{d:#?}"
    );
    assert!(
        has(
            "loopguard.detectors.argumentChurn.maxVariant",
            "maxVariants"
        ),
        "{d:#?}"
    );
    assert!(
        has(
            "loopguard.detectors.secondCriticalAbort",
            "boolean or an object"
        ),
        "{d:#?}"
    );
    assert!(has("loopguard.thresholds", "unknown key"), "{d:#?}");
    assert!(
        has("agents.list[0].loopguard.profile", "expected"),
        "{d:#?}"
    );
    // Nothing of this lands in OpenClaw's block.
    assert_eq!(
        l.config.loop_detection.as_ref().unwrap().enabled,
        Some(true)
    );
}

#[test]
fn per_agent_overrides_and_the_profile_override() {
    let text = r#"{
      tools: { loopDetection: { enabled: true } },
      loopguard: { profile: "strict", detectors: { identicalFailureStreak: { blockAt: 9 } } },
      agents: { list: [
        { id: "Ops", loopguard: { profile: "openclaw", detectors: { identicalFailureStreak: { enabled: true } } } },
        { id: "tight", loopguard: { detectors: { identicalFailureStreak: { warnAt: 2 } } } },
      ] },
    }"#;
    let l = OpenClawConfig::from_json5(text).unwrap();
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
    let mut cfg = l.config;
    let ops = cfg.policy_for(Some(" ops ")).extra;
    assert_eq!(ops.profile, DetectorProfile::OpenClaw);
    assert!(ops.failure_streak.enabled && !ops.outcome_streak.enabled);
    assert_eq!(ops.failure_streak.block_at, 9);
    let tight = cfg.policy_for(Some("tight")).extra;
    assert_eq!(
        (tight.failure_streak.warn_at, tight.failure_streak.block_at),
        (2, 9)
    );
    assert!(tight.outcome_streak.enabled);
    cfg.set_profile(DetectorProfile::Strict);
    assert!(cfg.policy_for(Some("ops")).extra.outcome_streak.enabled);
    cfg.set_profile(DetectorProfile::OpenClaw);
    let g = cfg.policy_for(None).extra;
    assert!(!g.failure_streak.enabled && !g.second_critical.enabled);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A call whose result changes every time never gets blocked by an extra detector,
    /// however its arguments, tools and errors are mixed (errors carry the attempt number
    /// in a way normalisation keeps: a different word each time), except for the two loops
    /// made of changing errors: the same call failing differently, and a cascade of
    /// failures across tools.
    #[test]
    fn changing_results_never_block_by_an_extra_detector(
        steps in proptest::collection::vec((0u8..3, 0u8..3, any::<bool>()), 1..80),
    ) {
        let p = strict();
        let mut s = Session::new("t");
        let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"];
        let mut past: Vec<(u8, u8, bool)> = Vec::new();
        let mut blocked_before = false;
        for (i, (tool_i, arg, is_error)) in steps.into_iter().enumerate() {
            let tool = ["read", "exec", "write"][tool_i as usize];
            let args = v(&format!(r#"{{"a":{arg}}}"#));
            let call = Call::new(tool, &args);
            let d = s.before_call(&p, &call);
            if d.is_block() {
                let det = d.detection().unwrap().detector;
                // The one exception: the same call failing three times in a row with a
                // different error each time is a loop (`same_call_changing_error`).
                let same_failing = past.len() >= 3
                    && past[past.len() - 3..].iter().all(|&(t, a, e)| t == tool_i && a == arg && e);
                // And ten failures in a row across tools, whatever their errors, are an
                // error cascade (`error_cascade`).
                let cascade = past.len() >= 10
                    && past[past.len() - 10..].iter().all(|&(_, _, e)| e)
                    && past[past.len() - 10..].iter().chain([&(tool_i, arg, true)]).any(|&(t, _, _)| t != tool_i);
                // After that block, the next critical of the run ends it
                // (`second_critical_abort`), whatever the call.
                prop_assert!(
                    !Detector::EXTRA.contains(&det)
                        || (det == Detector::ChangingErrorSameCall && same_failing)
                        || (det == Detector::ErrorCascade && cascade)
                        || (det == Detector::SecondCriticalAbort && blocked_before),
                    "blocked by {det} at step {i}"
                );
                blocked_before = true;
            }
            past.push((tool_i, arg, is_error));
            let text = format!("result {} {}", words[i % words.len()], words[(i / words.len()) % words.len()]);
            let out = Value::from(text);
            let outcome = if is_error { Outcome::Error(&out) } else { Outcome::Result(&out) };
            let _ = s.after_call(&p, &call, outcome);
        }
    }

    /// Key order in arguments and results never changes a decision of the strict profile.
    #[test]
    fn key_order_never_matters(n in 1usize..16, fail in any::<bool>(), swap in proptest::collection::vec(any::<bool>(), 16)) {
        let p = strict();
        let (mut a, mut b) = (Session::new("t"), Session::new("t"));
        let args_ab = v(r#"{"path":"/x","mode":"r"}"#);
        let args_ba = v(r#"{"mode":"r","path":"/x"}"#);
        let res_ab = v(r#"{"details":{"status":"failed","exitCode":1,"aggregated":"no"}}"#);
        let res_ba = v(r#"{"details":{"aggregated":"no","exitCode":1,"status":"failed"}}"#);
        let ok_ab = v(r#"{"k":1,"j":2}"#);
        let ok_ba = v(r#"{"j":2,"k":1}"#);
        for &swapped in swap.iter().take(n) {
            let (args_b, res_b, ok_b) = if swapped { (&args_ba, &res_ba, &ok_ba) } else { (&args_ab, &res_ab, &ok_ab) };
            let ca = Call::new("exec", &args_ab);
            let cb = Call::new("exec", args_b);
            prop_assert_eq!(a.before_call(&p, &ca), b.before_call(&p, &cb));
            let (oa, ob) = if fail { (Outcome::Result(&res_ab), Outcome::Result(res_b)) } else { (Outcome::Result(&ok_ab), Outcome::Result(ok_b)) };
            prop_assert_eq!(a.after_call(&p, &ca, oa), b.after_call(&p, &cb, ob));
        }
        prop_assert_eq!(a.export_state(), b.export_state());
    }
}

/// `loopguard.countVetoes`: on in strict, off in openclaw, a boolean, merged per agent.
#[test]
fn count_vetoes_follows_the_profile_and_the_key() {
    let load = |t: &str| OpenClawConfig::from_json5(t).unwrap();
    let l = load(r#"{tools:{loopDetection:{enabled:true}},loopguard:{profile:"strict"}}"#);
    assert!(l.config.policy_for(None).extra.count_vetoes);
    let l = load(r#"{tools:{loopDetection:{enabled:true}}}"#);
    assert!(!l.config.policy_for(None).extra.count_vetoes);
    let l = load(
        r#"{loopguard:{profile:"strict",countVetoes:false},
            agents:{list:[{id:"a",loopguard:{countVetoes:true}}]}}"#,
    );
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
    assert!(!l.config.policy_for(None).extra.count_vetoes);
    assert!(l.config.policy_for(Some("a")).extra.count_vetoes);
    let l = load(r#"{loopguard:{countVetoes:"yes"}}"#);
    assert!(
        l.diagnostics
            .iter()
            .any(|d| d.path == "loopguard.countVetoes"),
        "{:?}",
        l.diagnostics
    );
}
