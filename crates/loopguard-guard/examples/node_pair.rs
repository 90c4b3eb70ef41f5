//! The engine's part of the npm package's `beforeCall` + `afterCall` pair
//! (`scripts/bench-node.sh`), in Rust alone, for instruction counts: the same events the
//! package writes for the benchmark's small arguments and result, 64 sessions, each line
//! parsed and applied as the addon's `decide` does. Timing is not a test.
//!
//! ```text
//! cargo build --release -p loopguard-guard --example node_pair
//! valgrind --tool=callgrind --toggle-collect='*node_pair*measure*' \
//!     target/release/examples/node_pair 5000 [apply]
//! ```
//!
//! `apply` hashes every outcome's arguments again, as front ends other than the npm package
//! do; by default the outcome reuses its call's digest, as the package's `afterCall` does.
//!
//! The instructions of `measure` divided by its pairs are the engine's cost per pair.

use loopguard_events::parse_event;
use loopguard_guard::Guard;

/// The two lines of pair `i`, as the package writes them.
fn lines(i: usize) -> (String, String) {
    let session = format!("s{}", i % 64);
    let args = format!(
        r#"{{"path":"/src/module_{}.ts","offset":{},"limit":200}}"#,
        i % 997,
        i % 50
    );
    let text = format!("line {i}\\n").repeat(4);
    let call = format!(r#"{{"type":"call","session":"{session}","tool":"read","args":{args}}}"#);
    let outcome = format!(
        r#"{{"type":"outcome","session":"{session}","tool":"read","args":{args},"result":{{"content":[{{"type":"text","text":"{text}"}}],"details":{{"ok":true,"bytes":40}}}}}}"#
    );
    (call, outcome)
}

/// Applies the pairs as the addon's `decide` does: parse, apply (the outcome with its call's
/// argument digest when `reuse`, as the package's `afterCall` asks when the arguments are the
/// call's), the digests' hex.
#[inline(never)]
fn measure(
    guard: &Guard,
    pairs: &[(String, String)],
    reuse: bool,
) -> Result<usize, Box<dyn std::error::Error>> {
    let mut sink = 0;
    for (call, outcome) in pairs {
        let call = parse_event(call.as_bytes(), 1)?;
        let d = guard.apply(None, &call)?;
        let digest = d.args.ok_or("a call's decision has its digest")?;
        sink += loopguard_core::hashing::hex_bytes(&digest.0)[0] as usize;
        let outcome = parse_event(outcome.as_bytes(), 2)?;
        let d = if reuse {
            guard.apply_with_args_digest(None, &outcome, digest)?
        } else {
            guard.apply(None, &outcome)?
        };
        if let Some(h) = d.result {
            sink += loopguard_core::hashing::hex_bytes(&h.digest)[0] as usize;
        }
    }
    Ok(sink)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = match std::env::args().nth(1) {
        Some(a) => a.parse()?,
        None => 5000,
    };
    // `apply`: every outcome's arguments hashed again (what other front ends do).
    let reuse = std::env::args().nth(2).as_deref() != Some("apply");
    let guard = Guard::builder().build();
    // Every session's history full first (30 calls each), as in a long benchmark.
    let warm: Vec<_> = (0..64 * 40).map(lines).collect();
    measure(&guard, &warm, reuse)?;
    let pairs: Vec<_> = (64 * 40..64 * 40 + n).map(lines).collect();
    let start = std::time::Instant::now();
    let sink = measure(&guard, &pairs, reuse)?;
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    println!("{n} pairs, {ns:.0} ns a pair (wall clock), sink {sink}");
    Ok(())
}
