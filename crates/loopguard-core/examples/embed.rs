//! How an agent runtime embeds loopguard: check every tool call before it runs, record what
//! it returned, and tell the session about compactions.
//!
//! The "agent" here is stuck: it keeps reading a file that never changes. loopguard warns it
//! at the tenth call and blocks the twenty-first.
//!
//! `cargo run -p loopguard-core --example embed`

use loopguard_core::OpenClawConfig;
use loopguard_core::Outcome;
use loopguard_core::{Call, Session, Value, Verdict};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The runtime's config file, with the loop detectors switched on, read as OpenClaw
    // resolves it at run time (a mistyped number falls back to its default, with a warning).
    let loaded = OpenClawConfig::load_for_run(
        "{ tools: { loopDetection: { enabled: true } } } // ~/.openclaw/openclaw.json",
    )?;
    for d in &loaded.diagnostics {
        eprintln!("config: {d}");
    }
    let policy = loaded.config.policy_for(Some("main"));
    let mut session = Session::new("agent:main:main");

    let args = Value::parse(br#"{"path":"/workspace/status.txt"}"#)?;
    let output = Value::parse(br#"{"content":[{"type":"text","text":"status: pending"}]}"#)?;

    for turn in 1..=25 {
        let id = format!("call-{turn}");
        let call = Call::new("read", &args).run("run-1").call_id(id.as_str());
        match session.before_call(&policy, &call).verdict {
            Verdict::Allow => {}
            Verdict::Warn {
                detection, emitted, ..
            } => {
                if emitted {
                    println!(
                        "turn {turn}: warning shown to the model: {}",
                        detection.message
                    );
                }
            }
            Verdict::Block { detection, .. } => {
                // The tool does not run; the message is the tool result the model sees.
                println!("turn {turn}: blocked: {}", detection.message);
                break;
            }
        }
        // ... run the tool, then record what it returned.
        let recorded = session.after_call(&policy, &call, Outcome::Result(&output));
        if let Some(abort) = recorded.abort {
            println!("run aborted: {}", abort.message);
            break;
        }
    }
    Ok(())
}
