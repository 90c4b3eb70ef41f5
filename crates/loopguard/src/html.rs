//! `--html`: a self-contained page with a timeline per session.
//!
//! Every call is a tick on its session's timeline; warnings, blocks and aborts are taller,
//! coloured ticks; compactions are vertical lines. Hovering a tick shows its line, tool
//! and decision. The page has no scripts and loads nothing from the network.

use std::collections::HashMap;
use std::fmt::Write as _;

use loopguard_events::EventKind;
use loopguard_replay::{Action, Decision, Summary};

/// Marks kept per session and kind for drawing. The timeline is 1000 pixels wide, so more
/// would not show; past the cap a kind keeps an even sample (every second mark, then every
/// fourth, …), so the page stays small and every part of a long session stays visible.
const MAX_MARKS_PER_KIND: usize = 4096;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Call,
    Warn,
    Block,
    Abort,
    Compaction,
}

impl Kind {
    const ALL: [Kind; 5] = [
        Kind::Call,
        Kind::Compaction,
        Kind::Warn,
        Kind::Block,
        Kind::Abort,
    ];

    fn index(self) -> usize {
        match self {
            Kind::Call => 0,
            Kind::Compaction => 1,
            Kind::Warn => 2,
            Kind::Block => 3,
            Kind::Abort => 4,
        }
    }

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
    label: String,
}

/// The marks of one kind: every `stride`-th one seen, at most [`MAX_MARKS_PER_KIND`].
struct Lane {
    seen: u64,
    stride: u64,
    kept: Vec<Mark>,
}

impl Default for Lane {
    fn default() -> Self {
        Lane {
            seen: 0,
            stride: 1,
            kept: Vec::new(),
        }
    }
}

impl Lane {
    /// Whether the next mark will be kept (so its label is only built when it is).
    fn wants_next(&self) -> bool {
        self.seen.is_multiple_of(self.stride)
    }

    fn push(&mut self, mark: impl FnOnce() -> Mark) {
        if self.wants_next() {
            if self.kept.len() == MAX_MARKS_PER_KIND {
                // Keep marks 0, 2s, 4s, …: the sample stays even at twice the stride.
                let mut i = 0;
                self.kept.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.stride *= 2;
            }
            if self.wants_next() {
                self.kept.push(mark());
            }
        }
        self.seen += 1;
    }
}

#[derive(Default)]
struct SessionMarks {
    key: Vec<u8>,
    name: String,
    events: u64,
    lanes: [Lane; 5],
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
                    key: key.to_vec(),
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
        let kind = match (d.kind, d.action, &d.finding) {
            (EventKind::Compaction, _, _) => Kind::Compaction,
            (_, Action::Abort, Some(_)) => Kind::Abort,
            (EventKind::Call, Action::Block, Some(_)) => Kind::Block,
            (EventKind::Call, Action::Warn, Some(_)) => Kind::Warn,
            (EventKind::Call, _, _) => Kind::Call,
            _ => return,
        };
        let line = d.line;
        s.lanes[kind.index()].push(|| Mark {
            seq,
            line,
            ts_ms,
            label: label(d, kind),
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
        for s in &self.sessions {
            let Some(stats) = summary.session(&s.key) else {
                continue;
            };
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
            let thinned: Vec<String> = Kind::ALL
                .iter()
                .map(|k| (k, &s.lanes[k.index()]))
                .filter(|(_, lane)| lane.stride > 1)
                .map(|(k, lane)| {
                    format!(
                        "{} of {} {} marks (every {}th)",
                        lane.kept.len(),
                        lane.seen,
                        k.class(),
                        lane.stride
                    )
                })
                .collect();
            if !thinned.is_empty() {
                let _ = writeln!(
                    page,
                    "<p class=\"meta thinned\">Drawn: {}.</p>",
                    esc(&thinned.join(", "))
                );
            }
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

/// The tooltip of a mark.
fn label(d: &Decision<'_>, kind: Kind) -> String {
    let tool = d
        .tool
        .as_ref()
        .map(|t| t.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some(f) = &d.finding else {
        return match kind {
            Kind::Compaction => "compaction".to_string(),
            _ => format!("{tool}: allowed"),
        };
    };
    match kind {
        Kind::Compaction => "compaction".to_string(),
        Kind::Abort => format!("{tool}: run aborted, {} (count {})", f.detector, f.count),
        Kind::Block => format!("{tool}: blocked, {} (count {})", f.detector, f.count),
        Kind::Warn => format!(
            "{tool}: warning, {} (count {}){}",
            f.detector,
            f.count,
            if f.emitted == Some(true) {
                ", shown to the model"
            } else {
                ""
            }
        ),
        Kind::Call => format!("{tool}: allowed"),
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
    for kind in Kind::ALL {
        for m in &s.lanes[kind.index()].kept {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(seq: u64) -> Mark {
        Mark {
            seq,
            line: seq + 1,
            ts_ms: None,
            label: String::new(),
        }
    }

    #[test]
    fn a_lane_keeps_an_even_sample_under_its_cap() {
        let mut lane = Lane::default();
        for seq in 0..MAX_MARKS_PER_KIND as u64 {
            lane.push(|| mark(seq));
        }
        assert_eq!((lane.kept.len(), lane.stride), (MAX_MARKS_PER_KIND, 1));
        let total = 10_000u64;
        for seq in MAX_MARKS_PER_KIND as u64..total {
            lane.push(|| mark(seq));
        }
        // 10,000 marks: past 2 × 4096, so every fourth is kept.
        assert_eq!(lane.stride, 4);
        assert_eq!(lane.seen, total);
        let seqs: Vec<u64> = lane.kept.iter().map(|m| m.seq).collect();
        assert_eq!(seqs, (0..total).step_by(4).collect::<Vec<_>>());
        assert!(lane.kept.len() <= MAX_MARKS_PER_KIND);
    }
}
