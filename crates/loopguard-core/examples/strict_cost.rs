//! What the strict profile costs per call, against the default profile, on a loaded machine:
//! the two profiles' `before_call` + `after_call` pairs timed in alternating batches in one
//! process, on the per-call benchmark's calls (64 argument sets and 8 results rotating, a warm
//! 30-call history, no loop forming). Each batch's time per pair is kept; the minimum and the
//! quartile of the batches estimate the cost with other processes' interruptions left out,
//! and their ratios are printed. Budget: a strict pair under 2x the default's.
//!
//! ```sh
//! cargo run --release -p loopguard-core --example strict_cost -- [ROUNDS]
//! ```
//!
//! With `profile default|strict BYTES N` instead, it runs N pairs of one profile only (for
//! `valgrind --tool=callgrind`: the difference of two N gives the instructions per pair).

use std::error::Error;
use std::hint::black_box;
use std::time::Instant;

use loopguard_core::{Call, ExtraPolicy, Outcome, Policy, Session, Value};

/// The per-call benchmark's argument sets (`benches/per_call.rs`).
fn args_set() -> Vec<String> {
    (0..64u8)
        .map(|i| {
            let name: String = [char::from(b'a' + i / 8), char::from(b'a' + i % 8)]
                .iter()
                .collect();
            format!(r#"{{"path":"/repo/src/module_{name}.rs","limit":200,"offset":0}}"#)
        })
        .collect()
}

/// The per-call benchmark's results of about `bytes` bytes (`benches/per_call.rs`).
fn result_text(bytes: usize, variant: usize) -> String {
    let line = "test result: ok. 42 passed; 0 failed; finished in 0.12s\\n";
    let first = [
        "alpha ", "bravo ", "charlie ", "delta ", "echo ", "foxtrot ", "golf ", "hotel ",
    ][variant % 8];
    let mut s = String::from(first);
    while s.len() < bytes {
        s.push_str(line);
    }
    s.truncate(bytes);
    while s.ends_with('\\') {
        s.pop();
    }
    format!(r#"{{"content":[{{"type":"text","text":"{s}"}}],"details":{{"ok":true}}}}"#)
}

struct Bench<'a> {
    args: Vec<Value<'a>>,
    results: Vec<Value<'a>>,
}

impl Bench<'_> {
    /// A session of `policy` with a full history.
    fn warm(&self, policy: &Policy) -> Session {
        let mut session = Session::new("bench");
        for (k, a) in self.args.iter().take(40).enumerate() {
            let call = Call::new("read", a).run("run-1");
            let _ = session.before_call(policy, &call);
            let _ = session.after_call(policy, &call, Outcome::Result(&self.results[k % 8]));
        }
        session
    }

    /// Runs `n` pairs from rotation position `i`.
    fn pairs(&self, policy: &Policy, session: &mut Session, i: &mut usize, n: usize) {
        for _ in 0..n {
            let a = &self.args[*i % 64];
            *i += 1;
            let call = Call::new("read", a).run("run-1").call_id("call-1");
            let d = session.before_call(policy, black_box(&call));
            let result = black_box(&self.results[*i % 8]);
            let o = session.after_call(policy, &call, Outcome::Result(result));
            let _ = black_box((d, o));
        }
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args_text = args_set();
    let policies = [
        Policy::enabled(),
        Policy::enabled().with_extra(ExtraPolicy::strict()),
    ];
    if argv.first().map(String::as_str) == Some("profile") {
        let strict = argv.get(1).map(String::as_str) == Some("strict");
        let bytes: usize = argv.get(2).map_or(Ok(100), |s| s.parse())?;
        let n: usize = argv.get(3).map_or(Ok(10_000), |s| s.parse())?;
        let texts: Vec<String> = (0..8).map(|v| result_text(bytes, v)).collect();
        let bench = Bench {
            args: parse_all(&args_text)?,
            results: parse_all(&texts)?,
        };
        let policy = &policies[usize::from(strict)];
        let mut session = bench.warm(policy);
        bench.pairs(policy, &mut session, &mut 0, n);
        return Ok(());
    }
    let rounds: usize = argv.first().map_or(Ok(300), |s| s.parse())?;
    for (label, bytes, batch) in [("small", 100, 500), ("10KB", 10_000, 50)] {
        let texts: Vec<String> = (0..8).map(|v| result_text(bytes, v)).collect();
        let bench = Bench {
            args: parse_all(&args_text)?,
            results: parse_all(&texts)?,
        };
        let mut sessions = [bench.warm(&policies[0]), bench.warm(&policies[1])];
        let mut times: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        let mut at = [0usize; 2];
        for _ in 0..rounds {
            for p in 0..2 {
                let start = Instant::now();
                bench.pairs(&policies[p], &mut sessions[p], &mut at[p], batch);
                times[p].push(start.elapsed().as_nanos() as f64 / batch as f64);
            }
        }
        for t in &mut times {
            t.sort_by(f64::total_cmp);
        }
        let q = |t: &[f64], f: f64| t[((t.len() - 1) as f64 * f) as usize];
        let (d, s) = (&times[0], &times[1]);
        println!(
            "{label}: default {:.0} ns (quartile {:.0}), strict {:.0} ns (quartile {:.0}): \
             strict/default {:.2} (quartiles {:.2})",
            q(d, 0.0),
            q(d, 0.25),
            q(s, 0.0),
            q(s, 0.25),
            q(s, 0.0) / q(d, 0.0),
            q(s, 0.25) / q(d, 0.25),
        );
    }
    Ok(())
}

fn parse_all(texts: &[String]) -> Result<Vec<Value<'_>>, loopguard_core::json::ParseError> {
    texts.iter().map(|t| Value::parse(t.as_bytes())).collect()
}
