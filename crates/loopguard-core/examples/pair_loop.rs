//! Runs N before/after pairs on a warm session; used to profile the per-call path.
//!
//! `cargo run --release -p loopguard-core --example pair_loop -- 100000`

use loopguard_core::Outcome;
use loopguard_core::{Call, Policy, Session, Value};

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let policy = Policy::enabled();
    let texts: Vec<String> = (0..64)
        .map(|i| format!(r#"{{"path":"/repo/src/module_{i}.rs","limit":200,"offset":0}}"#))
        .collect();
    let args: Vec<Value<'_>> = texts
        .iter()
        .map(|t| Value::parse(t.as_bytes()).unwrap())
        .collect();
    let result = Value::parse(
        br#"{"content":[{"type":"text","text":"fn main() {}\n"}],"details":{"ok":true}}"#,
    )
    .unwrap();
    let mut session = Session::new("profile");
    let mut blocks = 0;
    for i in 0..n {
        let call = Call::new("read", &args[i % 64])
            .run("run-1")
            .call_id("call-1");
        if session.before_call(&policy, &call).is_block() {
            blocks += 1;
        }
        let _ = session.after_call(&policy, &call, Outcome::Result(&result));
    }
    println!("{n} pairs, {blocks} blocks");
}
