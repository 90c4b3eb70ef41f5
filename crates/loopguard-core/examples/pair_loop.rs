//! Runs N before/after pairs on a warm session; used to profile the per-call path, under the
//! default profile or the `openclaw-2026.9.6` one, with a result of about BYTES bytes.
//!
//! `cargo run --release -p loopguard-core --example pair_loop -- 100000 [default|shipped] [BYTES]`
//! (under `valgrind --tool=callgrind` for where the time goes).

use loopguard_core::openclaw_2026_9_6::{Channels, Enabled, ShippedSession};
use loopguard_core::Outcome;
use loopguard_core::{Call, Policy, Session, Value};

fn main() {
    let mut argv = std::env::args().skip(1);
    let n: usize = argv.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let shipped = argv.next().as_deref() == Some("shipped");
    let bytes: usize = argv.next().and_then(|a| a.parse().ok()).unwrap_or(13);
    let policy = Policy::enabled();
    let texts: Vec<String> = (0..64)
        .map(|i| format!(r#"{{"path":"/repo/src/module_{i}.rs","limit":200,"offset":0}}"#))
        .collect();
    let args: Vec<Value<'_>> = texts
        .iter()
        .map(|t| Value::parse(t.as_bytes()).unwrap())
        .collect();
    let body = "fn main() {}\\n".repeat(bytes.div_ceil(14));
    let result_text =
        format!(r#"{{"content":[{{"type":"text","text":"{body}"}}],"details":{{"ok":true}}}}"#);
    let result = Value::parse(result_text.as_bytes()).unwrap();
    let mut blocks = 0;
    if shipped {
        let mut session = ShippedSession::default();
        for i in 0..n {
            let a = &args[i % 64];
            let d = session.before_call(Enabled::True, b"read", a, Some(b"call-1"), Some(b"run-1"));
            if !matches!(
                d.verdict,
                loopguard_core::openclaw_2026_9_6::ShippedVerdict::Allow
            ) {
                blocks += 1;
            }
            let _ = session.after_call(
                Enabled::True,
                b"read",
                a,
                Some(b"call-1"),
                Some(b"run-1"),
                Outcome::Result(&result),
                Channels::default(),
            );
        }
    } else {
        let mut session = Session::new("profile");
        for i in 0..n {
            let call = Call::new("read", &args[i % 64])
                .run("run-1")
                .call_id("call-1");
            if session.before_call(&policy, &call).is_block() {
                blocks += 1;
            }
            let _ = session.after_call(&policy, &call, Outcome::Result(&result));
        }
    }
    println!("{n} pairs, {blocks} non-allow");
}
