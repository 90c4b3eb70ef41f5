//! A session saved and restored between any two events (what the SQLite and Redis stores
//! do on every event) decides exactly as one that stayed in memory, whatever the stream.

use loopguard_core::{Mode, Policy};
use loopguard_events::parse_event;
use loopguard_guard::{Applier, SessionEntry, ToolProfile};
use proptest::prelude::*;

fn event() -> impl Strategy<Value = String> {
    let tool = prop::sample::select(vec!["read", "exec", "process", "Bash", "message"]);
    let run = prop::sample::select(vec!["", "r1", "r2"]);
    let arg = 0u8..3;
    let result = 0u8..3;
    (0u8..10, tool, run, arg, result).prop_map(|(kind, tool, run, arg, result)| match kind {
        0 => format!(r#"{{"type":"compaction","run":"{run}"}}"#),
        1..=4 => format!(
            r#"{{"type":"call","run":"{run}","tool":"{tool}","callId":"c{arg}","args":{{"a":{arg},"action":"poll"}}}}"#
        ),
        5 => format!(
            r#"{{"type":"outcome","run":"{run}","tool":"{tool}","args":{{"a":{arg},"action":"poll"}},"error":"Exit code 1\nno {result}"}}"#
        ),
        _ => format!(
            r#"{{"type":"outcome","run":"{run}","tool":"{tool}","callId":"c{arg}","args":{{"a":{arg},"action":"poll"}},"result":{{"content":[{{"type":"text","text":"r{result}"}}]}}}}"#
        ),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn restoring_between_events_changes_no_decision(
        stream in prop::collection::vec(event(), 1..120),
        profile in prop::sample::select(vec![ToolProfile::Plain, ToolProfile::ClaudeCode, ToolProfile::Mcp]),
        observe in any::<bool>(),
    ) {
        let mode = if observe { Mode::Observe } else { Mode::Enforce };
        let applier = Applier::new(profile).mode(mode).pending_blocks(8);
        let mut policy = Policy::enabled();
        // Small thresholds so that short streams reach warnings, blocks and aborts.
        policy.resolved.warning_threshold = 2.0;
        policy.resolved.critical_threshold = 4.0;
        policy.resolved.global_circuit_breaker_threshold = 6.0;
        let mut kept = SessionEntry::new("s");
        let mut restored = SessionEntry::new("s");
        for (i, line) in stream.iter().enumerate() {
            let e = parse_event(line.as_bytes(), i as u64 + 1).unwrap();
            let a = kept.apply(&policy, &applier, &e, i as u64, 1000 + i as u64);
            restored = SessionEntry::decode(&restored.encode()).unwrap();
            let b = restored.apply(&policy, &applier, &e, i as u64, 1000 + i as u64);
            let (mut ja, mut jb) = (Vec::new(), Vec::new());
            a.write_json(&mut ja);
            b.write_json(&mut jb);
            prop_assert_eq!(String::from_utf8_lossy(&ja), String::from_utf8_lossy(&jb));
        }
        prop_assert_eq!(kept.stats, restored.stats);
        prop_assert_eq!(&kept.recent, &restored.recent);
        prop_assert!(kept.pending_blocks() <= 8);
    }
}
