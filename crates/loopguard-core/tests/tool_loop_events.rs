//! Detections are reported as `tracing` events with the fields of OpenClaw's `tool.loop`.

use std::sync::{Arc, Mutex};

use loopguard_core::Outcome;
use loopguard_core::{Call, Policy, Session, Value};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

/// The fields of one captured event, in order.
type EventFields = Vec<(String, String)>;

#[derive(Default, Clone)]
struct Captured(Arc<Mutex<Vec<EventFields>>>);

struct Fields(Vec<(String, String)>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((
            field.name().to_string(),
            format!("{value:?}").trim_matches('"').to_string(),
        ));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_string(), value.to_string()));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.push((field.name().to_string(), value.to_string()));
    }
}

impl<S: tracing::Subscriber> Layer<S> for Captured {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() == "loopguard::tool_loop" {
            let mut f = Fields(Vec::new());
            event.record(&mut f);
            self.0.lock().unwrap().push(f.0);
        }
    }
}

fn field<'a>(event: &'a [(String, String)], name: &str) -> &'a str {
    event
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no field {name} in {event:?}"))
}

/// Scenario 85 through tracing: 21 identical reads give exactly a warning at 10 and a block
/// at 20; counts 11-19 are de-duplicated.
#[test]
fn tool_loop_events_carry_openclaw_fields() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::registry().with(captured.clone());
    tracing::subscriber::with_default(subscriber, || {
        let policy = Policy::enabled();
        let mut s = Session::new("agent:main:main");
        let args = Value::parse(br#"{"path":"/same.txt"}"#).unwrap();
        let out = Value::parse(br#"{"content":[{"type":"text","text":"same output"}]}"#).unwrap();
        for i in 0..21 {
            let id = format!("read-{i}");
            let call = Call::new("read", &args)
                .run("run-1")
                .agent("main")
                .call_id(id.as_str());
            if s.before_call(&policy, &call).is_block() {
                break;
            }
            let _ = s.after_call(&policy, &call, Outcome::Result(&out));
        }
    });
    let events = captured.0.lock().unwrap().clone();
    assert_eq!(events.len(), 2, "{events:?}");
    let (warn, block) = (&events[0], &events[1]);
    for (e, level, action, count) in [
        (warn, "warning", "warn", "10"),
        (block, "critical", "block", "20"),
    ] {
        assert_eq!(field(e, "session"), "agent:main:main");
        assert_eq!(field(e, "run"), "run-1");
        assert_eq!(field(e, "agent"), "main");
        assert_eq!(field(e, "tool"), "read");
        assert_eq!(field(e, "level"), level);
        assert_eq!(field(e, "action"), action);
        assert_eq!(field(e, "detector"), "generic_repeat");
        assert_eq!(field(e, "count"), count);
        assert!(field(e, "message").contains(&format!("{count} times")));
    }
    assert!(field(block, "message").contains("identical outcomes"));
}

/// The strict profile's detectors report under their own names: a warning at 3 identical
/// failures (emitted once for its bucket), a block at 6, and the retry that ends the run.
#[test]
fn strict_detectors_report_their_own_names() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::registry().with(captured.clone());
    tracing::subscriber::with_default(subscriber, || {
        let policy = Policy::enabled().with_extra(loopguard_core::ExtraPolicy::strict());
        let mut s = Session::new("s");
        let args = Value::parse(br#"{"path":"/missing.txt"}"#).unwrap();
        let err = Value::from("ENOENT: no such file or directory");
        for _ in 0..9 {
            let call = Call::new("read", &args).run("run-1");
            if !s.before_call(&policy, &call).is_block() {
                let _ = s.after_call(&policy, &call, Outcome::Error(&err));
            }
        }
    });
    let events = captured.0.lock().unwrap().clone();
    let got: Vec<(&str, &str, &str)> = events
        .iter()
        .map(|e| (field(e, "action"), field(e, "detector"), field(e, "count")))
        .collect();
    assert_eq!(
        got,
        [
            ("warn", "identical_failure_streak", "3"),
            ("block", "identical_failure_streak", "6"),
            ("block", "second_critical_abort", "2"),
            ("block", "second_critical_abort", "3"),
        ]
    );
}
