//! `--html`: a self-contained page with a timeline per session.
//!
//! Every call is a tick on its session's timeline; warnings, blocks and aborts are taller,
//! coloured ticks; compactions are vertical lines. Hovering a tick shows its line, tool
//! and decision. The page has no scripts and loads nothing from the network.

use std::collections::HashMap;
use std::fmt::Write as _;

use loopguard_replay::event::EventKind;
use loopguard_replay::{Action, Decision, Summary};

/// Calls kept per session for drawing; warnings, blocks, aborts and compactions are
/// always kept.
const MAX_PLAIN_MARKS: usize = 50_000;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Call,
    Warn,
    Block,
    Abort,
    Compaction,
}

impl Kind {
    fn class(self) -> &'static str {
        match self {
            Kind::Call => "call",
            Kind::Warn => "warn",
            Kind::Block => "block",
            Kind::Abort => "abort",
            Kind::Compaction => "compaction",
        }
    }
}

struct Mark {
    seq: u64,
    line: u64,
    ts_ms: Option<u64>,
    kind: Kind,
    label: String,
}

#[derive(Default)]
struct SessionMarks {
    name: String,
    events: u64,
    plain: usize,
    marks: Vec<Mark>,
}

/// The marks of every session, gathered while replaying.
#[derive(Default)]
pub struct Timeline {
    sessions: Vec<SessionMarks>,
    index: HashMap<Vec<u8>, usize>,
}

impl Timeline {
    /// Adds one decision.
    pub fn observe(&mut self, d: &Decision<'_>, ts_ms: Option<u64>) {
        let key = d.session.as_wtf8();
        let i = match self.index.get(key) {
            Some(&i) => i,
            None => {
                self.sessions.push(SessionMarks {
                    name: d.session.to_string_lossy().into_owned(),
                    ..Default::default()
                });
                self.index.insert(key.to_vec(), self.sessions.len() - 1);
                self.sessions.len() - 1
            }
        };
        let s = &mut self.sessions[i];
        let seq = s.events;
        s.events += 1;
        let tool = d
            .tool
            .as_ref()
            .map(|t| t.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (kind, label) = match (d.kind, d.action, &d.finding) {
            (EventKind::Compaction, _, _) => (Kind::Compaction, "compaction".to_string()),
            (_, Action::Abort, Some(f)) => (
                Kind::Abort,
                format!("{tool}: run aborted, {} (count {})", f.detector, f.count),
            ),
            (EventKind::Call, Action::Block, Some(f)) => (
                Kind::Block,
                format!("{tool}: blocked, {} (count {})", f.detector, f.count),
            ),
            (EventKind::Call, Action::Warn, Some(f)) => (
                Kind::Warn,
                format!(
                    "{tool}: warning, {} (count {}){}",
                    f.detector,
                    f.count,
                    if f.emitted == Some(true) {
                        ", shown to the model"
                    } else {
                        ""
                    }
                ),
            ),
            (EventKind::Call, _, _) => {
                if s.plain >= MAX_PLAIN_MARKS {
                    return;
                }
                s.plain += 1;
                (Kind::Call, format!("{tool}: allowed"))
            }
            _ => return,
        };
        s.marks.push(Mark {
            seq,
            line: d.line,
            ts_ms,
            kind,
            label,
        });
    }

    /// The whole page.
    pub fn render(&self, summary: &Summary, mode: &str) -> String {
        let mut page = String::with_capacity(64 * 1024);
        page.push_str(HEAD);
        let _ = writeln!(
            page,
            "<h1>loopguard replay</h1><p class=\"meta\">{} events, {} sessions, mode {}</p>",
            summary.events,
            summary.sessions.len(),
            esc(mode)
        );
        page.push_str(LEGEND);
        for (s, stats) in self.sessions.iter().zip(&summary.sessions) {
            let _ = writeln!(
                page,
                "<section class=\"session\" data-session=\"{}\"><h2>{}</h2><p class=\"meta\">{} calls, {} warnings, {} blocks, {} aborts, {} loops</p>",
                esc(&s.name),
                esc(&s.name),
                stats.calls,
                stats.warnings,
                stats.blocks,
                stats.aborts,
                stats.loops.len()
            );
            render_svg(&mut page, s);
            page.push_str("</section>\n");
        }
        let _ = writeln!(
            page,
            "<h2>Report</h2><pre class=\"report\">{}</pre>",
            esc(&summary.render(mode))
        );
        page.push_str("</body></html>\n");
        page
    }
}

const WIDTH: f64 = 1000.0;
const HEIGHT: f64 = 70.0;

fn render_svg(page: &mut String, s: &SessionMarks) {
    let n = s.events.max(1) as f64;
    let _ = write!(
        page,
        "<svg class=\"timeline\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" height=\"{HEIGHT}\" role=\"img\"><line class=\"axis\" x1=\"0\" y1=\"{y}\" x2=\"{WIDTH}\" y2=\"{y}\"/>",
        y = HEIGHT - 5.0
    );
    // Plain calls first, so coloured marks are drawn on top.
    let order = [
        Kind::Call,
        Kind::Compaction,
        Kind::Warn,
        Kind::Block,
        Kind::Abort,
    ];
    for kind in order {
        for m in s.marks.iter().filter(|m| m.kind == kind) {
            let x = 2.0 + (m.seq as f64 / n) * (WIDTH - 4.0);
            let h = match kind {
                Kind::Call => 12.0,
                Kind::Warn => 30.0,
                Kind::Block => 48.0,
                Kind::Abort => 60.0,
                Kind::Compaction => HEIGHT,
            };
            let width = match kind {
                Kind::Call => 1.0,
                _ => 3.0,
            };
            let when = m
                .ts_ms
                .map(|t| format!(" at {}", loopguard_replay::summary::utc(t)))
                .unwrap_or_default();
            let _ = write!(
                page,
                "<rect class=\"{}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{width}\" height=\"{h:.1}\"><title>line {}{when}: {}</title></rect>",
                kind.class(),
                x - width / 2.0,
                HEIGHT - 5.0 - h.min(HEIGHT - 5.0),
                m.line,
                esc(&m.label)
            );
        }
    }
    page.push_str("</svg>\n");
}

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const HEAD: &str = r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>loopguard replay</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body { font-family: system-ui, sans-serif; margin: 24px; color: #1d1d1f; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 18px 0 4px; }
.meta { color: #555; margin: 0 0 8px; font-size: 13px; }
.legend span { display: inline-block; margin-right: 14px; font-size: 13px; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: -1px; }
svg.timeline { background: #fafafa; border: 1px solid #ddd; display: block; }
.axis { stroke: #999; stroke-width: 1; }
rect.call { fill: #8e8e93; } rect.warn { fill: #f5a623; } rect.block { fill: #d0021b; }
rect.abort { fill: #7b2cbf; } rect.compaction { fill: #2f80ed; opacity: 0.55; }
i.call { background: #8e8e93; } i.warn { background: #f5a623; } i.block { background: #d0021b; }
i.abort { background: #7b2cbf; } i.compaction { background: #2f80ed; }
pre.report { background: #f4f4f6; padding: 12px; font-size: 12px; overflow-x: auto; }
</style></head><body>
"#;

const LEGEND: &str = r#"<p class="legend"><span><i class="call"></i>call</span><span><i class="warn"></i>warning</span><span><i class="block"></i>block</span><span><i class="abort"></i>abort</span><span><i class="compaction"></i>compaction</span></p>
"#;
