//! The human summary of a replay: per session, counts and each loop found.
//!
//! A *loop* gathers the decisions about one repeated thing in one run: the same call
//! (`argsHash`) for the generic, poll and global detectors and the post-compaction guard,
//! the same pair for ping-pong, the same missing tool for unknown-tool repeats.

use std::collections::HashMap;
use std::fmt::Write as _;

use loopguard_core::detectors::Detector;
use loopguard_core::history::normalize_run;
use loopguard_core::JsString;

use crate::decision::{Action, Decision};
use crate::event::EventKind;

/// One loop in one session.
#[derive(Clone, Debug, PartialEq)]
pub struct Loop {
    /// The run it happened in.
    pub run: Option<String>,
    /// The tool that repeated (for ping-pong, the tool seen first).
    pub tool: String,
    /// The other tool of a ping-pong pair.
    pub paired_tool: Option<String>,
    /// Detectors that fired, in the order they first did.
    pub detectors: Vec<Detector>,
    /// The highest count reached.
    pub max_count: u64,
    /// First and last line of the loop's decisions.
    pub first_line: u64,
    /// Last line.
    pub last_line: u64,
    /// The first warning (line, count).
    pub first_warning: Option<(u64, u64)>,
    /// The first block (line, count).
    pub first_block: Option<(u64, u64)>,
    /// The first abort (line, count).
    pub first_abort: Option<(u64, u64)>,
    /// Warnings, emitted warnings, blocks and aborts.
    pub warnings: u64,
    /// Warnings that passed the de-duplication.
    pub warnings_emitted: u64,
    /// Blocks.
    pub blocks: u64,
    /// Aborts.
    pub aborts: u64,
}

/// Counts for one session.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionSummary {
    /// The session name.
    pub name: String,
    /// `call` events.
    pub calls: u64,
    /// `outcome` events.
    pub outcomes: u64,
    /// `compaction` events.
    pub compactions: u64,
    /// Warn decisions.
    pub warnings: u64,
    /// Warn decisions with `emitted: true`.
    pub warnings_emitted: u64,
    /// Block decisions.
    pub blocks: u64,
    /// Abort decisions.
    pub aborts: u64,
    /// Loops, in the order they started.
    pub loops: Vec<Loop>,
    loop_index: HashMap<(Option<String>, String), usize>,
}

/// What a replay found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Events processed (blank lines excluded).
    pub events: u64,
    /// Sessions in the order they first appeared.
    pub sessions: Vec<SessionSummary>,
    index: HashMap<Vec<u8>, usize>,
}

impl Summary {
    /// Adds one decision.
    pub fn observe(&mut self, d: &Decision<'_>) {
        self.events += 1;
        let i = match self.index.get(d.session.as_wtf8()) {
            Some(&i) => i,
            None => {
                self.sessions.push(SessionSummary {
                    name: d.session.to_string_lossy().into_owned(),
                    ..Default::default()
                });
                self.index
                    .insert(d.session.as_wtf8().to_vec(), self.sessions.len() - 1);
                self.sessions.len() - 1
            }
        };
        let s = &mut self.sessions[i];
        match d.kind {
            EventKind::Call => s.calls += 1,
            EventKind::Outcome => s.outcomes += 1,
            EventKind::Compaction => s.compactions += 1,
        }
        let Some(f) = &d.finding else { return };
        match d.action {
            Action::Warn => {
                s.warnings += 1;
                if f.emitted == Some(true) {
                    s.warnings_emitted += 1;
                }
            }
            Action::Block => s.blocks += 1,
            Action::Abort => s.aborts += 1,
            _ => {}
        }
        let run = normalize_run(d.run.as_ref().map(JsString::as_wtf8))
            .map(|r| String::from_utf8_lossy(r).into_owned());
        let tool = d
            .tool
            .as_ref()
            .map(|t| t.to_string_lossy().into_owned())
            .unwrap_or_default();
        let subject = match f.detector {
            Detector::PingPong | Detector::UnknownToolRepeat => {
                let key = f
                    .warning_key
                    .as_ref()
                    .map(|k| k.to_string_lossy().into_owned())
                    .unwrap_or_default();
                // Strip the run prefix so both sides of a pair share one loop.
                match (
                    &run,
                    key.find("pingpong:").or_else(|| key.find("unknown-tool:")),
                ) {
                    (Some(_), Some(at)) => key[at..].to_string(),
                    _ => key,
                }
            }
            _ => d.args_hash().unwrap_or_default(),
        };
        let slot = (run.clone(), subject);
        let li = match s.loop_index.get(&slot) {
            Some(&li) => li,
            None => {
                s.loops.push(Loop {
                    run,
                    tool,
                    paired_tool: f
                        .paired_tool
                        .as_ref()
                        .map(|p| p.to_string_lossy().into_owned()),
                    detectors: Vec::new(),
                    max_count: 0,
                    first_line: d.line,
                    last_line: d.line,
                    first_warning: None,
                    first_block: None,
                    first_abort: None,
                    warnings: 0,
                    warnings_emitted: 0,
                    blocks: 0,
                    aborts: 0,
                });
                s.loop_index.insert(slot, s.loops.len() - 1);
                s.loops.len() - 1
            }
        };
        let l = &mut s.loops[li];
        if !l.detectors.contains(&f.detector) {
            l.detectors.push(f.detector);
        }
        l.max_count = l.max_count.max(f.count);
        l.last_line = d.line;
        match d.action {
            Action::Warn => {
                l.warnings += 1;
                if f.emitted == Some(true) {
                    l.warnings_emitted += 1;
                }
                l.first_warning.get_or_insert((d.line, f.count));
            }
            Action::Block => {
                l.blocks += 1;
                l.first_block.get_or_insert((d.line, f.count));
            }
            Action::Abort => {
                l.aborts += 1;
                l.first_abort.get_or_insert((d.line, f.count));
            }
            _ => {}
        }
    }

    /// Every loop of every session.
    pub fn loops(&self) -> impl Iterator<Item = (&SessionSummary, &Loop)> {
        self.sessions
            .iter()
            .flat_map(|s| s.loops.iter().map(move |l| (s, l)))
    }

    /// The plain-text report.
    pub fn render(&self, mode: &str) -> String {
        let mut out = String::new();
        let n_loops: usize = self.sessions.iter().map(|s| s.loops.len()).sum();
        let _ = writeln!(
            out,
            "loopguard replay: {} events, {} {}, {} {} found (mode: {mode})",
            self.events,
            self.sessions.len(),
            plural(self.sessions.len() as u64, "session", "sessions"),
            n_loops,
            plural(n_loops as u64, "loop", "loops"),
        );
        for s in &self.sessions {
            let _ = writeln!(
                out,
                "\nsession {}: {} {}, {} {} ({} shown to the model), {} {}, {} {}",
                s.name,
                s.calls,
                plural(s.calls, "call", "calls"),
                s.warnings,
                plural(s.warnings, "warning", "warnings"),
                s.warnings_emitted,
                s.blocks,
                plural(s.blocks, "block", "blocks"),
                s.aborts,
                plural(s.aborts, "abort", "aborts"),
            );
            if s.loops.is_empty() {
                let _ = writeln!(out, "  no loops");
            }
            for (n, l) in s.loops.iter().enumerate() {
                let tools = match &l.paired_tool {
                    Some(p) if *p != l.tool => format!("{} <-> {}", l.tool, p),
                    _ => l.tool.clone(),
                };
                let detectors: Vec<_> = l.detectors.iter().map(|d| d.as_str()).collect();
                let run = l
                    .run
                    .as_ref()
                    .map(|r| format!(" in run {r}"))
                    .unwrap_or_default();
                let lines = if l.first_line == l.last_line {
                    format!("line {}", l.first_line)
                } else {
                    format!("lines {}-{}", l.first_line, l.last_line)
                };
                let _ = writeln!(
                    out,
                    "  {}. {tools}{run}: {}, count up to {}, {lines}",
                    n + 1,
                    detectors.join(" + "),
                    l.max_count,
                );
                let mut parts = Vec::new();
                if let Some((line, count)) = l.first_warning {
                    parts.push(format!(
                        "first warning at line {line} (count {count}); {} {} ({} shown)",
                        l.warnings,
                        plural(l.warnings, "warning", "warnings"),
                        l.warnings_emitted
                    ));
                }
                if let Some((line, count)) = l.first_block {
                    parts.push(format!(
                        "first block at line {line} (count {count}); {} {}",
                        l.blocks,
                        plural(l.blocks, "block", "blocks")
                    ));
                }
                if let Some((line, count)) = l.first_abort {
                    parts.push(format!("run aborted at line {line} (count {count})"));
                }
                let _ = writeln!(out, "     {}", parts.join("; "));
            }
        }
        out
    }
}

fn plural(n: u64, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 {
        one
    } else {
        many
    }
}
