//! What the live-guard layer costs on top of the engine: a call/outcome pair through the
//! core `Session` alone (the baseline, measured in the same run), through
//! `SessionEntry::apply` (profile, counters, decision log), and through a `Guard` with the
//! in-memory store (session lookup, LRU bookkeeping, locks) from parsed events and from
//! JSON lines. Then what a shared store (SQLite, Redis) does to a session on every event:
//! encode and decode its entry, against the core's JSON snapshot alone as the baseline.

// `criterion_group!` defines a public function it cannot document.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use loopguard_core::Outcome;
use loopguard_core::{Call, Policy, Session, Value};
use loopguard_events::parse_event;
use loopguard_guard::{Applier, Guard, SessionEntry, ToolProfile};

const CALL: &[u8] = br#"{"type":"call","session":"s1","run":"r1","tool":"read","args":{"path":"/src/main.rs","limit":200}}"#;
const OUTCOME: &[u8] = br#"{"type":"outcome","session":"s1","run":"r1","tool":"read","args":{"path":"/src/main.rs","limit":200},"result":{"content":[{"type":"text","text":"fn main() {}"}]}}"#;

fn pairs(c: &mut Criterion) {
    let mut g = c.benchmark_group("call+outcome pair");
    let policy = Policy::enabled();
    let call_ev = parse_event(CALL, 1).expect("call");
    let outcome_ev = parse_event(OUTCOME, 2).expect("outcome");

    let args = Value::parse(br#"{"path":"/src/main.rs","limit":200}"#).expect("args");
    let result =
        Value::parse(br#"{"content":[{"type":"text","text":"fn main() {}"}]}"#).expect("result");
    let mut session = Session::new("s1");
    g.bench_function("baseline: core Session", |b| {
        b.iter(|| {
            let call = Call::new("read", &args).run("r1");
            let d = session.before_call(&policy, &call);
            let o = session.after_call(&policy, &call, Outcome::Result(&result));
            (d, o)
        })
    });

    let mut entry = SessionEntry::new("s1");
    let applier = Applier::new(ToolProfile::Plain);
    g.bench_function("SessionEntry::apply", |b| {
        b.iter(|| {
            let d = entry.apply(&policy, &applier, &call_ev, 1, 0).action;
            let o = entry.apply(&policy, &applier, &outcome_ev, 2, 0).action;
            (d, o)
        })
    });

    let guard = Guard::builder().build();
    g.bench_function("Guard::apply, memory store", |b| {
        b.iter(|| {
            let d = guard.apply(None, &call_ev, |d| d.action);
            let o = guard.apply(None, &outcome_ev, |d| d.action);
            (d, o)
        })
    });
    g.bench_function("Guard::apply_line, memory store", |b| {
        b.iter(|| {
            (
                guard.apply_line(None, CALL),
                guard.apply_line(None, OUTCOME),
            )
        })
    });
    g.finish();
}

/// A session with a full 30-call history (distinct reads with results) and 20 logged
/// decisions, as a busy session is stored.
fn busy_entry() -> SessionEntry {
    let policy = Policy::enabled();
    let applier = Applier::new(ToolProfile::Plain);
    let mut entry = SessionEntry::default();
    for i in 0..40 {
        let call = format!(
            r#"{{"type":"call","session":"s","tool":"read","args":{{"path":"/src/file-{i}.rs"}}}}"#
        );
        let outcome = format!(
            r#"{{"type":"outcome","session":"s","tool":"read","args":{{"path":"/src/file-{i}.rs"}},"result":"contents of file {i}"}}"#
        );
        for line in [call, outcome] {
            let e = parse_event(line.as_bytes(), 1).expect("event");
            let _ = entry.apply(&policy, &applier, &e, 1, 1_796_000_000_000 + i);
        }
    }
    entry
}

fn entries(c: &mut Criterion) {
    let mut g = c.benchmark_group("stored entry, 30-call session");
    let entry = busy_entry();
    g.bench_function("baseline: core JSON snapshot, export + import", |b| {
        b.iter(|| {
            let bytes = entry.session.export_state();
            Session::import_state(&bytes, "s").map(|s| s.history().len())
        })
    });
    g.bench_function("SessionEntry::encode", |b| b.iter(|| entry.encode().len()));
    let bytes = entry.encode();
    g.bench_function("SessionEntry::decode", |b| {
        b.iter(|| SessionEntry::decode(&bytes).map(|e| e.stats.events))
    });
    g.finish();
}

criterion_group!(benches, pairs, entries);
criterion_main!(benches);
