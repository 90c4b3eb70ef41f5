//! No input makes the event parser or the replayer panic.

use loopguard_core::Mode;
use loopguard_core::OpenClawConfig;
use loopguard_replay::{parse_event, replay, Output, Replayer};
use proptest::prelude::*;

fn event_line() -> impl Strategy<Value = String> {
    let tool = prop_oneof![
        Just("\"read\""),
        Just("\"exec\""),
        Just("\"process\""),
        Just("\"message\""),
        Just("\"update_plan\""),
        Just("\"\""),
        Just("\"\\ud800\""),
        Just("5"),
        Just("null"),
    ];
    let kind = prop_oneof![
        Just("\"call\""),
        Just("\"outcome\""),
        Just("\"compaction\""),
        Just("\"x\""),
        Just("1")
    ];
    let value = prop_oneof![
        Just("{}"), Just("null"), Just("[1,2]"), Just("\"Unknown tool: x\""), Just("1e400"),
        Just("{\"action\":\"poll\"}"), Just("{\"details\":{\"status\":\"blocked\",\"deniedReason\":\"tool-loop\"}}"),
        Just("{\"content\":[{\"type\":\"text\",\"text\":\" a \\ud83d\"}],\"details\":{\"status\":\"running\"}}"),
        Just("{\"plan\":[{\"step\":\"x\",\"status\":\"pending\"}]}"),
    ];
    let run = prop_oneof![
        Just(""),
        Just(",\"run\":\" r1 \""),
        Just(",\"run\":\"\""),
        Just(",\"run\":7")
    ];
    let id = prop_oneof![
        Just(""),
        Just(",\"callId\":\"c1\""),
        Just(",\"callId\":\"\"")
    ];
    let payload = prop_oneof![Just(""), Just(",\"result\":"), Just(",\"error\":")];
    (kind, tool, value.clone(), run, id, payload, value, "[a-z]{0,3}").prop_map(
        |(k, t, a, r, i, p, v, session)| {
            let payload = if p.is_empty() { String::new() } else { format!("{p}{v}") };
            format!("{{\"type\":{k},\"tool\":{t},\"args\":{a}{r}{i}{payload},\"session\":\"{session}\"}}")
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn parse_event_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = parse_event(&bytes, 1);
    }

    #[test]
    fn replay_never_panics(lines in prop::collection::vec(event_line(), 1..60), observe in any::<bool>()) {
        let cfg = OpenClawConfig::from_json5(
            "{tools:{loopDetection:{enabled:true,warningThreshold:2,criticalThreshold:3,globalCircuitBreakerThreshold:4,unknownToolThreshold:2,historySize:5,postCompactionGuard:{windowSize:2}}}}",
        ).unwrap().config;
        let mode = if observe { Mode::Observe } else { Mode::Enforce };
        for line in &lines {
            // Each line alone (errors are fine), then all of them as one stream.
            let mut r = Replayer::new(cfg.clone(), mode);
            if let Ok(ev) = parse_event(line.as_bytes(), 1) {
                let mut out = Vec::new();
                r.process(&ev, 1).write_json(&mut out);
            }
        }
        let good: Vec<_> = lines.iter().filter(|l| parse_event(l.as_bytes(), 1).is_ok()).cloned().collect();
        let text = good.join("\n");
        let mut r = Replayer::new(cfg, mode);
        let mut out = Vec::new();
        let summary = replay(text.as_bytes(), &mut out, &mut r, Output::Json).unwrap();
        prop_assert_eq!(summary.events as usize, good.len());
        let _ = summary.render("enforce");
    }
}
