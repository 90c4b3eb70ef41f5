//! The cost of checking one tool call: `before_call` + `after_call` on a warm session.
//!
//! Baselines measured in the same run, so the figures can be read as ratios on a noisy
//! machine: SHA-256 of the canonical argument bytes (what hashing the arguments alone costs)
//! and SHA-256 of the result text (the floor for hashing a result of that size).

// `criterion_group!` defines a public function it cannot document.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use loopguard_core::json::to_canonical_string;
use loopguard_core::Outcome;
use loopguard_core::{Call, Policy, Session, Value};
use sha2::{Digest, Sha256};

/// Distinct argument sets, rotated so the history stays full but no loop forms.
const ROTATION: usize = 64;

/// Distinct argument sets. The module names are letters, not numbers: the strict profile
/// reads `module_1` and `module_2` with identical results as one attempt repeated, and the
/// benchmark measures calls that do not loop.
fn args_set() -> Vec<String> {
    (0..ROTATION)
        .map(|i| {
            let name: String = [b'a' + (i / 8) as u8, b'a' + (i % 8) as u8]
                .iter()
                .map(|&b| char::from(b))
                .collect();
            format!(r#"{{"path":"/repo/src/module_{name}.rs","limit":200,"offset":0}}"#)
        })
        .collect()
}

/// Distinct results, rotated with the arguments: consecutive calls get different answers,
/// as reads of different files do (the strict profile counts identical answers to similar
/// calls as a loop).
const RESULTS: usize = 8;

fn result_text(bytes: usize, variant: usize) -> String {
    let line = "test result: ok. 42 passed; 0 failed; finished in 0.12s\\n";
    let mut s = String::with_capacity(bytes + line.len());
    s.push_str(
        [
            "alpha ", "bravo ", "charlie ", "delta ", "echo ", "foxtrot ", "golf ", "hotel ",
        ][variant % RESULTS],
    );
    while s.len() < bytes {
        s.push_str(line);
    }
    s.truncate(bytes);
    while s.ends_with('\\') {
        s.pop();
    }
    format!(r#"{{"content":[{{"type":"text","text":"{s}"}}],"details":{{"ok":true}}}}"#)
}

fn bench_pair(c: &mut Criterion) {
    let policy = Policy::enabled();
    let args_text = args_set();
    let args: Vec<Value<'_>> = args_text
        .iter()
        .map(|t| Value::parse(t.as_bytes()).unwrap())
        .collect();

    let mut group = c.benchmark_group("check");
    for (label, bytes) in [("small", 100usize), ("10KB", 10_000), ("1MB", 1_000_000)] {
        let texts: Vec<String> = (0..RESULTS).map(|v| result_text(bytes, v)).collect();
        let results: Vec<Value<'_>> = texts
            .iter()
            .map(|t| Value::parse(t.as_bytes()).unwrap())
            .collect();
        let text = &texts[0];
        let mut session = Session::new("bench");
        // Warm up: a full history, as in a long session.
        for (k, a) in args.iter().take(40).enumerate() {
            let call = Call::new("read", a).run("run-1");
            let _ = session.before_call(&policy, &call);
            let _ = session.after_call(&policy, &call, Outcome::Result(&results[k % RESULTS]));
        }
        let mut i = 0usize;
        group.throughput(Throughput::Elements(1));
        group.bench_function(BenchmarkId::new("before_after_pair", label), |b| {
            b.iter(|| {
                let a = &args[i % ROTATION];
                i += 1;
                let call = Call::new("read", a).run("run-1").call_id("call-1");
                let d = session.before_call(&policy, black_box(&call));
                let o = session.after_call(
                    &policy,
                    &call,
                    Outcome::Result(black_box(&results[i % RESULTS])),
                );
                black_box((d, o))
            })
        });
        // The same, with the argument digest of `before_call` reused by `after_call`.
        group.bench_function(
            BenchmarkId::new("before_after_pair_reusing_digest", label),
            |b| {
                b.iter(|| {
                    let a = &args[i % ROTATION];
                    i += 1;
                    let call = Call::new("read", a).run("run-1").call_id("call-1");
                    let d = session.before_call(&policy, black_box(&call));
                    let call = call.with_args_digest(d.args);
                    let o = session.after_call(
                        &policy,
                        &call,
                        Outcome::Result(black_box(&results[i % RESULTS])),
                    );
                    black_box((d, o))
                })
            },
        );

        // The strict profile (every extra detector, drift sketches included) on the same
        // calls: its budget (strict-profile.md, "Cost") is under 2x the default's pair.
        let strict = Policy::enabled().with_extra(loopguard_core::ExtraPolicy::strict());
        let mut strict_session = Session::new("bench-strict");
        for (k, a) in args.iter().take(40).enumerate() {
            let call = Call::new("read", a).run("run-1");
            let _ = strict_session.before_call(&strict, &call);
            let _ =
                strict_session.after_call(&strict, &call, Outcome::Result(&results[k % RESULTS]));
        }
        group.bench_function(BenchmarkId::new("before_after_pair_strict", label), |b| {
            b.iter(|| {
                let a = &args[i % ROTATION];
                i += 1;
                let call = Call::new("read", a).run("run-1").call_id("call-1");
                let d = strict_session.before_call(&strict, black_box(&call));
                let o = strict_session.after_call(
                    &strict,
                    &call,
                    Outcome::Result(black_box(&results[i % RESULTS])),
                );
                black_box((d, o))
            })
        });

        // The `openclaw-2026.9.6` profile (the shipped release's detector and wrapper) on
        // the same calls: its budget is the default's pair.
        let mut shipped = loopguard_core::openclaw_2026_9_6::ShippedSession::default();
        let on = loopguard_core::openclaw_2026_9_6::Enabled::True;
        let channels = loopguard_core::openclaw_2026_9_6::Channels::default();
        for (k, a) in args.iter().take(40).enumerate() {
            let _ = shipped.before_call(on, b"read", a, None, Some(b"run-1"));
            let _ = shipped.after_call(
                on,
                b"read",
                a,
                None,
                Some(b"run-1"),
                Outcome::Result(&results[k % RESULTS]),
                channels,
            );
        }
        group.bench_function(
            BenchmarkId::new("before_after_pair_openclaw_2026_9_6", label),
            |b| {
                b.iter(|| {
                    let a = &args[i % ROTATION];
                    i += 1;
                    let d = shipped.before_call(
                        on,
                        b"read",
                        black_box(a),
                        Some(b"call-1"),
                        Some(b"run-1"),
                    );
                    let o = shipped.after_call(
                        on,
                        b"read",
                        a,
                        Some(b"call-1"),
                        Some(b"run-1"),
                        Outcome::Result(black_box(&results[i % RESULTS])),
                        channels,
                    );
                    black_box((d, o))
                })
            },
        );

        // For reference: the strict profile without its drift detectors (the rules that
        // existed before the drift detectors).
        let mut no_drift = loopguard_core::ExtraPolicy::strict();
        no_drift.near_repeat.enabled = false;
        no_drift.cycle.enabled = false;
        no_drift.changing_error.enabled = false;
        let no_drift = Policy::enabled().with_extra(no_drift);
        let mut nd_session = Session::new("bench-strict-no-drift");
        for (k, a) in args.iter().take(40).enumerate() {
            let call = Call::new("read", a).run("run-1");
            let _ = nd_session.before_call(&no_drift, &call);
            let _ = nd_session.after_call(&no_drift, &call, Outcome::Result(&results[k % RESULTS]));
        }
        group.bench_function(
            BenchmarkId::new("before_after_pair_strict_no_drift", label),
            |b| {
                b.iter(|| {
                    let a = &args[i % ROTATION];
                    i += 1;
                    let call = Call::new("read", a).run("run-1").call_id("call-1");
                    let d = nd_session.before_call(&no_drift, black_box(&call));
                    let o = nd_session.after_call(
                        &no_drift,
                        &call,
                        Outcome::Result(black_box(&results[i % RESULTS])),
                    );
                    black_box((d, o))
                })
            },
        );

        // Baseline: hashing the result's text alone.
        let raw = text.clone();
        let _ = &results;
        group.bench_function(
            BenchmarkId::new("baseline_sha256_result_bytes", label),
            |b| b.iter(|| black_box(Sha256::digest(black_box(raw.as_bytes())))),
        );
    }

    // Baseline: hashing the canonical argument bytes alone.
    let canonical: Vec<String> = args.iter().map(to_canonical_string).collect();
    let mut i = 0usize;
    group.bench_function("baseline_sha256_args", |b| {
        b.iter(|| {
            i += 1;
            black_box(Sha256::digest(black_box(
                canonical[i % ROTATION].as_bytes(),
            )))
        })
    });

    // For reference: one argsHash (canonical serialisation streamed into SHA-256).
    let mut i = 0usize;
    group.bench_function("args_hash_only", |b| {
        b.iter(|| {
            i += 1;
            black_box(loopguard_core::hashing::args_digest(
                "read",
                black_box(&args[i % ROTATION]),
            ))
        })
    });
    group.finish();
}

criterion_group!(benches, bench_pair);
criterion_main!(benches);
