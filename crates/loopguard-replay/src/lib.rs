//! # loopguard-replay
//!
//! Replays a stream of tool-call events (the JSON Lines format of loopguard's `events.md`)
//! through [`loopguard_core`] and produces one decision per event, exactly as OpenClaw's
//! before-tool-call wrapper would have decided.
//!
//! * events and decisions are [`loopguard_events`]' (the events.md contract);
//! * [`Replayer`]: sessions, per-agent config, enforce/observe mode, and matching the
//!   outcomes of blocked calls;
//! * [`summary`]: what a replay found (sessions, loops, their cost), rendered as text
//!   ([`Summary::render`], [`Summary::render_table`]) or as a self-contained HTML page
//!   ([`html`]);
//! * replay as a library, for any front end: [`inputs`] resolves files, directories, globs
//!   and `-` (naming every file it passes over), [`Plan`] decides each input's format, mode,
//!   config and session name, and [`Plan::run`] replays them all into one [`Summary`],
//!   telling an [`Observer`] each decision and notice;
//! * [`synthetic`]: generated streams for benchmarks.
//!
//! [`replay`] replays one event stream over any reader and writer, streaming: memory does
//! not grow with the input's length.
//!
//! ```
//! use loopguard_replay::{replay, Output, Replayer};
//! use loopguard_core::{OpenClawConfig, Mode};
//!
//! let input = br#"{"type":"call","tool":"read","args":{"path":"/a"}}
//! {"type":"outcome","tool":"read","args":{"path":"/a"},"result":"same"}
//! "#;
//! let mut out = Vec::new();
//! let mut r = Replayer::new(OpenClawConfig::default(), Mode::Enforce);
//! let summary = replay(&input[..], &mut out, &mut r, Output::Json).unwrap();
//! assert_eq!(summary.events, 2);
//! assert!(String::from_utf8(out).unwrap().contains(r#""decision":"recorded""#));
//! ```

pub mod agent_logs;
mod ahead;
pub mod html;
pub mod inputs;
pub mod loop_history;
mod messages;
mod peers;
pub mod plan;
pub mod quality;
mod replayer;
mod report;
pub mod run;
pub mod summary;
pub mod synthetic;

use std::io::{self, BufRead, Write};

pub use inputs::Input;
pub use loopguard_events::{parse_event, Action, Decision, Event, EventError, EventKind, Payload};
pub use loopguard_guard::Prehashed;
pub use messages::{diagnostic_line, reading_as, stopped_line, NoticeLines, SHOWN_SKIPPED_LINES};
pub use plan::{Chosen, InputKind, Plan, PlanError, PlanNote, ReplayOptions, Source};
pub use replayer::{Prehasher, Replayer};
pub use report::Style;
pub use run::{FileReport, Notice, Observer, RunError, RunReport};
pub use summary::Summary;

/// What [`replay`] writes while it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// One JSON decision per event.
    Json,
    /// Nothing; the caller renders the [`Summary`].
    SummaryOnly,
}

/// Why a replay stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// A line is not a valid event.
    #[error(transparent)]
    Event(#[from] EventError),
    /// Reading or writing failed.
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
}

/// Replays every event of `input`, writing decisions to `out` when `output` is
/// [`Output::Json`]. Stops at the first bad line; decisions already written stay written.
pub fn replay<R: BufRead, W: Write>(
    mut input: R,
    out: W,
    replayer: &mut Replayer,
    output: Output,
) -> Result<Summary, ReplayError> {
    let mut out = io::BufWriter::with_capacity(1 << 16, out);
    let mut summary = Summary::default();
    let mut line = Vec::with_capacity(1 << 12);
    let mut json = Vec::with_capacity(1 << 10);
    let mut number = 0u64;
    let result = loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) => break Ok(()),
            Ok(_) => {}
            Err(e) => break Err(ReplayError::Io(e)),
        }
        number += 1;
        let mut text = &line[..];
        if number == 1 {
            text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
        }
        // Blank means nothing but (JavaScript) whitespace.
        if loopguard_core::json::js_trim(text).is_empty() {
            continue;
        }
        let event = match parse_event(text, number) {
            Ok(e) => e,
            Err(e) => break Err(ReplayError::Event(e)),
        };
        let decision = replayer.process(&event, number);
        summary.observe(&decision);
        if output == Output::Json {
            json.clear();
            decision.write_json(&mut json);
            if let Err(e) = out.write_all(&json) {
                break Err(ReplayError::Io(e));
            }
        }
    };
    out.flush()?;
    result.map(|()| summary)
}
