//! The engine's part of the npm package's `beforeCall` + `afterCall` pair
//! (`scripts/bench-node.sh`), in Rust alone, for instruction counts: the same events the
//! package writes for the benchmark's small arguments and result, 64 sessions, each line
//! decided as the addon's `decide` does. Timing is not a test.
//!
//! ```text
//! cargo build --release -p loopguard-node --example node_pair
//! valgrind --tool=callgrind --toggle-collect='*node_pair*measure*' \
//!     target/release/examples/node_pair 5000 [whole|apply]
//! ```
//!
//! By default each line is read as the addon reads it: its digests taken straight from the
//! JSON text (the addon's `digest_line`, `src/digested.rs`, included here by path) and the
//! envelope applied ([`Input::Prehashed`]), the outcome with its call's arguments. `whole`
//! parses each line and applies it, the outcome with its call's digest
//! ([`Input::WithArgsDigest`], the addon's path for a line `digest_line` does not read);
//! `apply` also hashes every outcome's arguments again, as front ends other than the npm
//! package do.
//!
//! The instructions of `measure` divided by its pairs are the engine's cost per pair.

use loopguard_events::parse_event;
use loopguard_guard::{Guard, Input};

#[path = "../src/digested.rs"]
mod digested;
use digested::digest_line;

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

/// How the lines are decided (see the top of the file).
#[derive(Clone, Copy, PartialEq)]
enum Way {
    Digests,
    Whole,
    Apply,
}

/// Applies the pairs as the addon's `decide` does (see [`Way`]), and takes the digests' hex.
#[inline(never)]
fn measure(
    guard: &Guard,
    pairs: &[(String, String)],
    way: Way,
) -> Result<usize, Box<dyn std::error::Error>> {
    let mut sink = 0;
    if way == Way::Digests {
        for (call, outcome) in pairs {
            let read = digest_line(call.as_bytes(), None).ok_or("the call is read")?;
            let digest = guard
                .apply(None, Input::Prehashed(&read.event, &read.pre), |d| d.args)?
                .ok_or("a call's decision has its digest")?;
            sink += loopguard_core::hashing::hex_bytes(&digest.0)[0] as usize;
            let read = digest_line(outcome.as_bytes(), Some((digest, read.args)))
                .ok_or("the outcome is read")?;
            let result =
                guard.apply(None, Input::Prehashed(&read.event, &read.pre), |d| d.result)?;
            if let Some(h) = result {
                sink += loopguard_core::hashing::hex_bytes(&h.digest)[0] as usize;
            }
        }
        return Ok(sink);
    }
    let reuse = way == Way::Whole;
    for (call, outcome) in pairs {
        let call = parse_event(call.as_bytes(), 1)?;
        let d = guard.apply(None, &call, |d| d)?;
        let digest = d.args.ok_or("a call's decision has its digest")?;
        sink += loopguard_core::hashing::hex_bytes(&digest.0)[0] as usize;
        let outcome = parse_event(outcome.as_bytes(), 2)?;
        let d = if reuse {
            guard.apply(None, Input::WithArgsDigest(&outcome, digest), |d| d)?
        } else {
            guard.apply(None, &outcome, |d| d)?
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
    let way = match std::env::args().nth(2).as_deref() {
        None => Way::Digests,
        Some("whole") => Way::Whole,
        Some("apply") => Way::Apply,
        Some(other) => return Err(format!("unknown way {other:?}: whole or apply").into()),
    };
    let guard = Guard::builder().build();
    // Every session's history full first (30 calls each), as in a long benchmark.
    let warm: Vec<_> = (0..64 * 40).map(lines).collect();
    measure(&guard, &warm, way)?;
    let pairs: Vec<_> = (64 * 40..64 * 40 + n).map(lines).collect();
    let start = std::time::Instant::now();
    let sink = measure(&guard, &pairs, way)?;
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    println!("{n} pairs, {ns:.0} ns a pair (wall clock), sink {sink}");
    Ok(())
}
