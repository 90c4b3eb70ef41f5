//! Helpers shared by the adapter integration tests: reading fixtures, feeding a file
//! through an adapter as the reader does, replaying the events through loopguard, small
//! string and diagnostic helpers, and the proptest strategies the adapters share.
//!
//! Each test file includes this module with `mod support;` (with `#[allow(dead_code)]`,
//! since no file uses all of it).

use std::path::PathBuf;

use loopguard_adapters::{
    detect, Adapted, Context, Diagnostic, DiagnosticKind, DocumentAdapter, Format, LineAdapter,
    SourcedEvent,
};
use loopguard_core::OpenClawConfig;
use loopguard_core::{Detector, JsString, Mode, Value};
use loopguard_events::{EventKind, Payload};
use loopguard_guard::ToolProfile;
use loopguard_replay::{Action, Replayer};
use proptest::prelude::*;

// ---- fixtures ----------------------------------------------------------------------

/// The path of `file` in `tests/fixtures/transcripts/<dir>/` at the workspace root.
pub fn fixture_path(dir: &str, file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/transcripts")
        .join(dir)
        .join(file)
}

/// The bytes of the fixture `file` in `tests/fixtures/transcripts/<dir>/`; panics naming
/// the file when it cannot be read.
pub fn fixture(dir: &str, file: &str) -> Vec<u8> {
    let path = fixture_path(dir, file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The first `at` bytes of `bytes` (all of them when `at` is past the end): a file cut
/// off while it was being written.
pub fn cut_at(bytes: &[u8], at: usize) -> &[u8] {
    &bytes[..at.min(bytes.len())]
}

/// The format [`detect`] recognises in the fixture `file` of
/// `tests/fixtures/transcripts/<dir>/`, from its path and bytes.
pub fn detect_fixture(dir: &str, file: &str) -> Option<Format> {
    detect(
        &fixture_path(dir, file).to_string_lossy(),
        &fixture(dir, file),
    )
}

// ---- adapters ----------------------------------------------------------------------

/// Feeds a file to a line adapter line by line as the reader does: lines are numbered
/// from 1, blank lines are skipped but counted, and a last line without a newline that is
/// not JSON is reported as `Truncated`. Returns the events and the diagnostics, those of
/// the lines first, then those of [`LineAdapter::finish`].
pub fn feed(adapter: &mut dyn LineAdapter, bytes: &[u8]) -> (Vec<SourcedEvent>, Vec<Diagnostic>) {
    let mut events = Vec::new();
    let mut diagnostics = Vec::new();
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim_ascii().is_empty() {
            continue;
        }
        if let Err(mut d) = adapter.line(i as u64 + 1, line, &mut events) {
            if i + 1 == lines.len() && d.kind == DiagnosticKind::NotJson {
                d.kind = DiagnosticKind::Truncated;
            }
            diagnostics.push(d);
        }
    }
    diagnostics.extend(adapter.finish(&mut events));
    (events, diagnostics)
}

/// The fixture `file` of `tests/fixtures/transcripts/<dir>/` through a document adapter;
/// panics when the adapter rejects the document.
pub fn adapt_fixture(
    adapter: &dyn DocumentAdapter,
    dir: &str,
    file: &str,
    ctx: &Context,
) -> Adapted {
    adapter
        .adapt(&fixture(dir, file), ctx)
        .unwrap_or_else(|d| panic!("{dir}/{file}: {d}"))
}

// ---- replay ------------------------------------------------------------------------

/// A replayer in `mode` with the default config and loop detection on.
fn replayer(mode: Mode) -> Replayer {
    let cfg = OpenClawConfig::from_json5("{tools:{loopDetection:{enabled:true}}}")
        .unwrap()
        .config;
    Replayer::new(cfg, mode)
}

/// Replays events in observe mode with detection on: `(line, kind, decision, detector)`
/// of each event, the line being the event's own.
pub fn replay_observe(events: &[SourcedEvent]) -> Vec<(u64, EventKind, Action, Option<Detector>)> {
    replay_observe_as(events, ToolProfile::Plain)
}

/// [`replay_observe`] through the tool profile of the runtime that wrote the transcript.
pub fn replay_observe_as(
    events: &[SourcedEvent],
    profile: ToolProfile,
) -> Vec<(u64, EventKind, Action, Option<Detector>)> {
    let mut r = replayer(Mode::Observe).with_profile(profile);
    events
        .iter()
        .map(|e| {
            let d = r.process(&e.event, e.line);
            (
                e.line,
                e.event.kind,
                d.action,
                d.finding.as_ref().map(|f| f.detector),
            )
        })
        .collect()
}

/// [`replay_observe`] as `loopguard replay` does it: each event through the profile its
/// source named (`SourcedEvent::profile`), else `format_profile`.
pub fn replay_observe_by_source(
    events: &[SourcedEvent],
    format_profile: ToolProfile,
) -> Vec<(u64, EventKind, Action, Option<Detector>)> {
    let mut r = replayer(Mode::Observe).with_profile(format_profile);
    events
        .iter()
        .map(|e| {
            r.set_profile(loopguard_replay::plan::profile_of(e, format_profile));
            let d = r.process(&e.event, e.line);
            (
                e.line,
                e.event.kind,
                d.action,
                d.finding.as_ref().map(|f| f.detector),
            )
        })
        .collect()
}

/// What the default loop detection decides on the `n`th (1-based) of a run of identical
/// calls: allowed up to the 10th, warned from the 11th, blocked from the 21st.
pub fn repeat_decision(n: usize) -> (Action, Option<Detector>) {
    match n {
        1..=10 => (Action::Allow, None),
        11..=20 => (Action::Warn, Some(Detector::GenericRepeat)),
        _ => (Action::Block, Some(Detector::GenericRepeat)),
    }
}

/// One decision: `(line, action, detector, count)`.
pub type Decided = (u64, Action, Option<&'static str>, Option<u64>);

/// Replays events in `mode` with detection on: the decision on each event, with the line
/// the decision names and the finding's detector and count.
pub fn replay_decided(events: &[SourcedEvent], mode: Mode) -> Vec<Decided> {
    let mut r = replayer(mode);
    events
        .iter()
        .map(|e| {
            let d = r.process(&e.event, e.line);
            (
                d.line,
                d.action,
                d.finding.as_ref().map(|f| f.detector.as_str()),
                d.finding.as_ref().map(|f| f.count),
            )
        })
        .collect()
}

/// The decisions that are not quiet: neither allowed, recorded nor armed.
pub fn not_quiet(decisions: &[Decided]) -> Vec<Decided> {
    decisions
        .iter()
        .filter(|d| !matches!(d.1, Action::Allow | Action::Recorded | Action::Armed))
        .cloned()
        .collect()
}

// ---- strings and diagnostics -------------------------------------------------------

/// An event's string field as a `String`, if it has one.
pub fn opt_string(v: &Option<JsString<'static>>) -> Option<String> {
    v.as_ref().map(|s| s.to_string())
}

/// An event's string field as a `String`, empty when absent.
pub fn s(v: &Option<JsString<'static>>) -> String {
    opt_string(v).unwrap_or_default()
}

/// `kind line run callId tool` of an event, `-` for what it does not have.
pub fn brief(e: &SourcedEvent) -> String {
    let ev = &e.event;
    let or_dash = |v: &Option<JsString<'static>>| opt_string(v).unwrap_or_else(|| "-".into());
    format!(
        "{} {} {} {} {}",
        ev.kind.as_str(),
        e.line,
        or_dash(&ev.run),
        or_dash(&ev.call_id),
        or_dash(&ev.tool),
    )
}

/// `(line, kind)` of each diagnostic.
pub fn kinds(d: &[Diagnostic]) -> Vec<(u64, DiagnosticKind)> {
    d.iter().map(|d| (d.line, d.kind)).collect()
}

/// A JSON text as a value; panics when it is not JSON.
pub fn json(text: &str) -> Value<'static> {
    Value::parse(text.as_bytes()).unwrap().into_owned()
}

/// `s` as a JSON string literal.
pub fn quote(s: &str) -> String {
    let mut out = Vec::new();
    loopguard_core::json::write_json_string(&mut out, &s.into());
    String::from_utf8(out).unwrap()
}

/// The result payload of a tool that answered `text`: `{"content":[{"type":"text",
/// "text":…}]}`, built from JSON text (independently of the adapters' own helper).
pub fn text_payload(text: &str) -> Payload<'static> {
    let doc = format!(
        r#"{{"content":[{{"type":"text","text":{}}}]}}"#,
        quote(text)
    );
    Payload::Result(json(&doc))
}

// ---- proptest strategies -----------------------------------------------------------

/// A JSON text built from a format's vocabulary: object keys drawn from `keys`, strings
/// from `words`, with `null`, booleans and numbers; nested `depth` levels deep, about
/// `size` nodes in all, arrays of fewer than `max_array` items and objects of fewer than
/// six entries.
pub fn json_text<K>(
    keys: K,
    words: Vec<&'static str>,
    depth: u32,
    size: u32,
    max_array: usize,
) -> impl Strategy<Value = String>
where
    K: Strategy<Value = &'static str> + Clone + 'static,
{
    let words = prop::sample::select(words);
    let leaf = prop_oneof![
        Just("null".to_string()),
        any::<bool>().prop_map(|b| b.to_string()),
        (-5.0e3f64..5.0e12).prop_map(|n| n.to_string()),
        words.prop_map(|w| format!("{w:?}")),
    ];
    leaf.prop_recursive(depth, size, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..max_array)
                .prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec((keys.clone(), inner), 0..6).prop_map(|kv| {
                let body: Vec<String> = kv.iter().map(|(k, v)| format!("{k:?}:{v}")).collect();
                format!("{{{}}}", body.join(","))
            }),
        ]
    })
}

/// A JSON Lines file of up to 23 lines, each a text from `json` or up to 63 random bytes,
/// every line ending with a newline.
pub fn json_lines(json: impl Strategy<Value = String> + 'static) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            json.prop_map(String::into_bytes),
            prop::collection::vec(any::<u8>(), 0..64)
        ],
        0..24,
    )
    .prop_map(|lines| {
        let mut bytes = Vec::new();
        for l in &lines {
            bytes.extend_from_slice(l);
            bytes.push(b'\n');
        }
        bytes
    })
}
