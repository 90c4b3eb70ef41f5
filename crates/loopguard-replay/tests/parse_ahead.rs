//! Parsing on a second thread ([`ReplayOptions::parse_ahead`]) changes nothing but the
//! thread: the same decision bytes, the same summary, the same first bad line and the same
//! report as reading, parsing and applying each line in turn.

use std::io;
use std::path::{Path, PathBuf};

use loopguard_core::OpenClawConfig;
use loopguard_replay::summary::{EventMeta, Observed};
use loopguard_replay::synthetic::{write_stream, StreamSpec};
use loopguard_replay::{Decision, Observer, Plan, ReplayOptions, RunError, Source};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// Every decision line, as `loopguard replay --json` writes it, and the arguments the
/// observer was given when it asks for every event's (`wants_args`).
#[derive(Default)]
struct Lines {
    out: Vec<u8>,
    wants_args: bool,
}

impl Observer for Lines {
    fn decision(
        &mut self,
        _source: &Source,
        d: &Decision<'_>,
        meta: &EventMeta<'_>,
        _at: Observed,
    ) -> io::Result<()> {
        d.write_json(&mut self.out);
        if self.wants_args {
            let args = meta.args.ok_or_else(|| io::Error::other("no args"))?;
            self.out.extend_from_slice(b"args ");
            loopguard_core::json::write_json_value(&mut self.out, args);
            self.out.push(b'\n');
        }
        Ok(())
    }

    fn wants_args(&self) -> bool {
        self.wants_args
    }
}

/// What one replay gave: the decision bytes, then the report (with the whole summary) or
/// the error, as text. `ahead`: parsed ahead by the default number of workers.
fn replay(paths: &[PathBuf], config: Option<&Path>, ahead: bool) -> (Vec<u8>, String) {
    replay_with(paths, config, ahead.then_some(0), false)
}

/// `workers`: `None` parses on the engine's thread, `Some(0)` ahead on the default number
/// of workers (one per core beside the engine's, at least 1, at most 4), `Some(n)` on `n`.
fn replay_with(
    paths: &[PathBuf],
    config: Option<&Path>,
    workers: Option<usize>,
    wants_args: bool,
) -> (Vec<u8>, String) {
    let mut options = ReplayOptions::new()
        .parse_ahead(workers.is_some())
        .parse_threads(workers.unwrap_or(0));
    if let Some(path) = config {
        let text = std::fs::read_to_string(path).unwrap();
        options = options.config(OpenClawConfig::load_for_run(&text).unwrap().config);
    }
    let plan = Plan::new(paths, options).unwrap();
    let mut lines = Lines {
        out: Vec::new(),
        wants_args,
    };
    let end = match plan.run(&mut lines) {
        Ok(report) => format!(
            "{:?} {:?} {} loops {:?}",
            report.files,
            report.summary.events,
            report
                .summary
                .sessions_by_cost()
                .iter()
                .map(|s| s.loops.len())
                .sum::<usize>(),
            report.summary.sessions,
        ),
        Err(e) => format!("error: {e}"),
    };
    (lines.out, end)
}

/// Replays on one thread and parsed ahead by one, two and three workers (for an observer
/// that wants every event's arguments, and for one that does not): everything the caller
/// sees is the same.
fn same_both_ways(paths: &[PathBuf], config: Option<&Path>) -> Vec<u8> {
    let one = replay(paths, config, false);
    for workers in [1, 2, 3] {
        let ahead = replay_with(paths, config, Some(workers), false);
        assert_same(paths, &one, &ahead, &format!("{workers} workers"));
    }
    let one = replay_with(paths, config, None, true);
    let ahead = replay_with(paths, config, Some(2), true);
    assert_same(paths, &one, &ahead, "2 workers, every event's arguments");
    replay(paths, config, false).0
}

/// One thread's `(decision stream, report)` and a parsed-ahead replay's are the same.
fn assert_same(paths: &[PathBuf], one: &(Vec<u8>, String), ahead: &(Vec<u8>, String), how: &str) {
    assert_eq!(one.1, ahead.1, "{paths:?}: reports differ ({how})");
    assert!(
        one.0 == ahead.0,
        "{paths:?}: decision streams differ (one thread: {} bytes, {how}: {} bytes)",
        one.0.len(),
        ahead.0.len()
    );
}

/// Every parity case: both paths write exactly the bytes OpenClaw's decisions serialise to.
#[test]
fn parity_fixtures_are_byte_identical_both_ways() {
    let dir = fixtures().join("parity");
    let mut cases: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".events.jsonl").map(str::to_string)
        })
        .collect();
    cases.sort();
    assert!(cases.len() >= 15, "parity fixtures missing: {cases:?}");
    for case in cases {
        let config = dir.join(format!("{case}.config.json"));
        let events = dir.join(format!("{case}.events.jsonl"));
        let got = same_both_ways(&[events], Some(&config));
        let want = std::fs::read(dir.join(format!("{case}.expected.jsonl"))).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want),
            "{case}"
        );
    }
}

/// A generated stream long enough for hundreds of batches, with loops (warnings, blocks)
/// in several interleaved sessions, and one with results larger than a batch's byte budget.
#[test]
fn large_generated_streams_are_byte_identical_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let config = fixtures().join("../../examples/openclaw.json5");
    for (name, spec) in [
        (
            "small.jsonl",
            StreamSpec {
                events: 60_000,
                result_bytes: 100,
                sessions: 8,
                seed: 7,
            },
        ),
        (
            "many.jsonl",
            StreamSpec {
                events: 30_000,
                result_bytes: 60,
                sessions: 300,
                seed: 5,
            },
        ),
        (
            "big.jsonl",
            StreamSpec {
                events: 400,
                result_bytes: 300_000,
                sessions: 1,
                seed: 9,
            },
        ),
    ] {
        let path = dir.path().join(name);
        write_stream(std::fs::File::create(&path).unwrap(), spec).unwrap();
        let out = same_both_ways(std::slice::from_ref(&path), Some(&config));
        assert_eq!(
            out.iter().filter(|&&b| b == b'\n').count() as u64,
            spec.events,
            "{name}"
        );
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains(r#""decision":"block""#),
            "{name}: no loop found"
        );
    }
}

/// With the strict profile the engine needs the values themselves (its ledger keeps
/// outcomes): the events hashed ahead are parsed again on the engine's thread, and the
/// decisions, warnings of the extra detectors included, are the same.
#[test]
fn the_strict_profile_parses_again_and_decides_alike() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("strict.jsonl");
    write_stream(
        std::fs::File::create(&path).unwrap(),
        StreamSpec {
            events: 6_000,
            result_bytes: 80,
            sessions: 3,
            seed: 11,
        },
    )
    .unwrap();
    let config = fixtures().join("../../examples/openclaw.json5");
    let config = std::fs::read_to_string(config).unwrap();
    let run = |ahead: bool| {
        let options = ReplayOptions::new()
            .parse_ahead(ahead)
            .config(OpenClawConfig::load_for_run(&config).unwrap().config)
            .detectors(loopguard_core::DetectorProfile::Strict);
        let plan = Plan::new(std::slice::from_ref(&path), options).unwrap();
        let mut lines = Lines::default();
        let report = plan.run(&mut lines).unwrap();
        (lines.out, format!("{:?}", report.summary.sessions))
    };
    let (one, two) = (run(false), run(true));
    assert_eq!(one.1, two.1, "summaries differ");
    assert!(one.0 == two.0, "decision streams differ");
    let text = String::from_utf8(one.0).unwrap();
    assert!(
        loopguard_core::Detector::EXTRA
            .iter()
            .any(|d| text.contains(&format!(r#""detector":"{}""#, d.as_str()))),
        "no finding of a strict-only detector"
    );
}

/// Several files share their sessions in order; a byte-order mark, blank lines and a bad
/// line stop both paths at the same line with the same decisions before it.
#[test]
fn several_files_blank_lines_and_a_bad_line_behave_alike() {
    let dir = tempfile::tempdir().unwrap();
    let call = |n: u32| {
        format!(
            r#"{{"type":"call","session":"s","tool":"read","args":{{"p":{}}},"ts":{n}}}"#,
            n % 3
        )
    };
    let mut first = String::from("\u{feff}");
    for n in 0..2_000 {
        first.push_str(&call(n));
        first.push_str(if n % 7 == 0 { "\n \r\n\n" } else { "\n" });
    }
    let a = dir.path().join("a.jsonl");
    std::fs::write(&a, &first).unwrap();
    let mut second = String::new();
    for n in 0..1_500 {
        second.push_str(&call(n));
        second.push('\n');
    }
    second.push_str("{\"type\":\"call\",\"tool\":\n");
    second.push_str(&call(1));
    let b = dir.path().join("b.jsonl");
    std::fs::write(&b, &second).unwrap();

    let ok = same_both_ways(std::slice::from_ref(&a), None);
    assert_eq!(ok.iter().filter(|&&b| b == b'\n').count(), 2_000);
    let both = same_both_ways(&[a.clone(), b.clone()], None);
    assert_eq!(both.iter().filter(|&&b| b == b'\n').count(), 3_500);
    let (_, end) = replay(&[a, b], None, true);
    assert!(
        end.starts_with("error: ") && end.contains("b.jsonl:1501:"),
        "{end}"
    );
}

/// An observer error stops both paths after the same decision, and the reader thread
/// does not outlive the replay.
#[test]
fn an_observer_error_stops_the_replay_on_both_paths() {
    struct FailAt(u64, u64);
    impl Observer for FailAt {
        fn decision(
            &mut self,
            _source: &Source,
            _d: &Decision<'_>,
            _meta: &EventMeta<'_>,
            _at: Observed,
        ) -> io::Result<()> {
            self.0 += 1;
            if self.0 == self.1 {
                return Err(io::Error::other("disk full"));
            }
            Ok(())
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.jsonl");
    write_stream(
        std::fs::File::create(&path).unwrap(),
        StreamSpec {
            events: 20_000,
            result_bytes: 50,
            sessions: 2,
            seed: 3,
        },
    )
    .unwrap();
    for ahead in [false, true] {
        let plan = Plan::new(
            std::slice::from_ref(&path),
            ReplayOptions::new().parse_ahead(ahead),
        )
        .unwrap();
        let mut fail = FailAt(0, 5_000);
        let err = plan.run(&mut fail).unwrap_err();
        assert!(matches!(err, RunError::Output(_)), "{err}");
        assert_eq!(fail.0, 5_000, "ahead: {ahead}");
    }
}
