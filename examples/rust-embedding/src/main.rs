//! loopguard embedded in a Rust agent loop: one `Guard`, every tool call reported before it
//! runs (and refused when the guard says `block`), every outcome reported after it ran.
//! The agent reads the same file 25 times and gets the same answer: the 11th call runs with
//! a warning for the model, the 21st and every one after it are refused.
//!
//! Run it: `cargo run -p example-rust-embedding`

use loopguard_guard::Guard;
use serde_json::{json, Value};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Loop detection on with OpenClaw's default thresholds, enforce mode, sessions in memory.
    let guard = Guard::builder().build();
    let args = json!({"path": "/srv/app/config.yaml"});

    for n in 1..=25 {
        // Before the tool runs: the call event (docs/events.md) and its decision record.
        let call = json!({"type": "call", "session": "demo", "callId": format!("call-{n}"),
                          "tool": "read", "args": args});
        let answer = guard.apply_line(None, call.to_string().as_bytes())?;
        let decision: Value = serde_json::from_slice(&answer)?;
        match decision["decision"].as_str() {
            Some("block" | "abort") => {
                // Do not run the tool: the model gets the message as the tool's error.
                println!("call {n}: refused: {}", decision["message"]);
                continue;
            }
            Some("warn") if decision["emitted"] == true => {
                // Run the tool, and add the warning to what the model reads.
                println!("call {n}: runs, warned: {}", decision["message"]);
            }
            // A warning is shown once per ten calls of a loop; the others are kept back.
            Some("warn") => println!("call {n}: runs (warned before)"),
            _ => println!("call {n}: runs"),
        }

        // The tool ran (here it answers the same every time): report its outcome.
        let outcome = json!({"type": "outcome", "session": "demo", "callId": format!("call-{n}"),
                             "tool": "read", "args": args, "result": "port: 8080"});
        guard.apply_line(None, outcome.to_string().as_bytes())?;
    }
    Ok(())
}
