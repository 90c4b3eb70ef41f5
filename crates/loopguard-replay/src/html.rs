//! The HTML report (`loopguard replay --html`): a self-contained page of a [`RunReport`],
//! next to the text report ([`Summary::render`](crate::Summary::render)).
//!
//! At the top, a table across sessions, most expensive loops first. Then per session (in
//! the same order) a timeline whose x axis counts the session's calls, labelled with the
//! call number and, when the input records times, the time: one row shows all calls as a
//! histogram with compactions as blue lines, then one lane per loop (its tool and
//! arguments) with a mark per warning, block and abort, and the loop's cost (calls, wall
//! time and tokens after its first warning) beside it. Every mark has a tooltip (line,
//! time, tool, arguments, decision, detector, count, message). The page has no scripts,
//! loads nothing from the network, and reflows to one column on a narrow (phone) screen.
//!
//! The page stays small however long a session is: calls are counted into at most
//! [`BUCKETS`] histogram buckets, each loop lane keeps an even sample of at most
//! [`MAX_MARKS`] marks, and a session draws the lanes of its [`MAX_LANES`] most expensive
//! loops (the page says when it thinned or left out anything; the text report at its end
//! lists every loop).

use std::fmt::Write as _;

use std::path::Path;

use loopguard_events::EventKind;

use crate::report::{duration, plural, thousands, time_span, utc};
use crate::summary::{args_preview, EventMeta, Loop, Observed, SessionSummary};
use crate::{Action, Decision, InputKind, Plan, RunReport};

/// Marks kept per loop lane. Past the cap a lane keeps an even sample (every second mark,
/// then every fourth, …), so the page stays small and every part of a long loop stays
/// visible; a lane is about 1000 pixels wide at most, so more would overlap anyway.
pub const MAX_MARKS: usize = 128;

/// Compaction marks kept per session.
const MAX_COMPACTIONS: usize = 1024;

/// Loop lanes drawn per session: its most expensive loops.
pub const MAX_LANES: usize = 40;

/// Histogram buckets of a session's calls.
pub const BUCKETS: usize = 256;

/// Time samples kept per session for labelling the axis.
const MAX_TIMES: usize = 512;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Warn,
    Block,
    Abort,
    Compaction,
}

#[derive(Debug)]
struct Mark {
    /// Calls of the session before this event: its x position.
    pos: u64,
    kind: Kind,
    tip: String,
}

/// An even sample of at most `cap` items: every `stride`-th one seen.
#[derive(Debug)]
struct Sampled<T> {
    seen: u64,
    stride: u64,
    cap: usize,
    kept: Vec<T>,
}

impl<T> Sampled<T> {
    fn new(cap: usize) -> Self {
        Sampled {
            seen: 0,
            stride: 1,
            cap,
            kept: Vec::new(),
        }
    }

    /// Adds the next item (built only when it is kept).
    fn push(&mut self, item: impl FnOnce() -> T) {
        if self.seen.is_multiple_of(self.stride) {
            if self.kept.len() == self.cap {
                // Keep items 0, 2s, 4s, …: the sample stays even at twice the stride.
                let mut i = 0;
                self.kept.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.stride *= 2;
            }
            if self.seen.is_multiple_of(self.stride) {
                self.kept.push(item());
            }
        }
        self.seen += 1;
    }
}

/// Calls counted into at most [`BUCKETS`] buckets of `width` calls each; when they would
/// overflow, neighbours merge and the width doubles.
#[derive(Debug)]
struct Histogram {
    width: u64,
    counts: Vec<u64>,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            width: 1,
            counts: Vec::new(),
        }
    }
}

impl Histogram {
    fn add(&mut self, pos: u64) {
        let mut b = (pos / self.width) as usize;
        while b >= BUCKETS {
            self.counts = self.counts.chunks(2).map(|c| c.iter().sum()).collect();
            self.width *= 2;
            b = (pos / self.width) as usize;
        }
        if self.counts.len() <= b {
            self.counts.resize(b + 1, 0);
        }
        self.counts[b] += 1;
    }
}

#[derive(Debug)]
struct SessionMarks {
    calls: u64,
    histogram: Histogram,
    times: Sampled<(u64, u64)>,
    compactions: Sampled<Mark>,
    loops: Vec<Sampled<Mark>>,
}

impl Default for SessionMarks {
    fn default() -> Self {
        SessionMarks {
            calls: 0,
            histogram: Histogram::default(),
            times: Sampled::new(MAX_TIMES),
            compactions: Sampled::new(MAX_COMPACTIONS),
            loops: Vec::new(),
        }
    }
}

/// The marks of every session, gathered while replaying (indexed like the summary's
/// sessions).
#[derive(Default, Debug)]
pub struct Timeline {
    sessions: Vec<SessionMarks>,
    settings: Vec<Setting>,
}

/// The configuration one kind of input replayed with, as the page shows it.
#[derive(Clone, Debug)]
pub struct Setting {
    /// `event streams` or `transcripts`.
    pub inputs: &'static str,
    /// Where the config came from and the thresholds and detectors used.
    pub text: String,
    /// Loop detection was off (`enabled` not true): the page says so prominently.
    pub detection_off: bool,
}

impl Timeline {
    /// The configurations to show in the page's header.
    pub fn set_settings(&mut self, settings: Vec<Setting>) {
        self.settings = settings;
    }

    /// Adds one decision, placed where the summary put it.
    pub fn observe(&mut self, d: &Decision<'_>, meta: &EventMeta<'_>, at: Observed) {
        if self.sessions.len() <= at.session {
            self.sessions
                .resize_with(at.session + 1, SessionMarks::default);
        }
        let s = &mut self.sessions[at.session];
        let pos = s.calls;
        if d.kind == EventKind::Call {
            s.histogram.add(pos);
            s.calls += 1;
        }
        if let Some(ts) = meta.ts_ms {
            s.times.push(|| (pos, ts));
        }
        if d.kind == EventKind::Compaction {
            s.compactions.push(|| Mark {
                pos,
                kind: Kind::Compaction,
                tip: tooltip(d, meta, "compaction"),
            });
            return;
        }
        let (Some(li), Some(_)) = (at.loop_index, &d.finding) else {
            return;
        };
        let kind = match d.action {
            Action::Warn => Kind::Warn,
            Action::Block if d.ends_run() => Kind::Abort,
            Action::Block => Kind::Block,
            Action::Abort => Kind::Abort,
            _ => return,
        };
        if s.loops.len() <= li {
            s.loops.resize_with(li + 1, || Sampled::new(MAX_MARKS));
        }
        s.loops[li].push(|| Mark {
            pos,
            kind,
            tip: tooltip(d, meta, d.decision_str()),
        });
    }

    /// The whole page.
    pub fn render(&self, report: &RunReport, mode: &str) -> String {
        let summary = &report.summary;
        let mut page = String::with_capacity(64 * 1024);
        page.push_str(HEAD_START);
        page.push_str(loopguard_lanes::CSS);
        page.push_str(HEAD_END);
        let n_loops: usize = summary.sessions.iter().map(|s| s.loops.len()).sum();
        let _ = writeln!(
            page,
            "<header><h1>loopguard replay</h1><p class=\"meta\">{} {}, {} {}, {} {} found · mode: {}</p>",
            thousands(summary.events),
            plural(summary.events, "event", "events"),
            summary.sessions.len(),
            plural(summary.sessions.len() as u64, "session", "sessions"),
            n_loops,
            plural(n_loops as u64, "loop", "loops"),
            esc(mode)
        );
        for setting in &self.settings {
            let _ = writeln!(
                page,
                "<p class=\"{}\"><b>config for {}:</b> {}</p>",
                if setting.detection_off {
                    "failed"
                } else {
                    "meta"
                },
                setting.inputs,
                esc(&setting.text)
            );
        }
        let failed: Vec<String> = report
            .failures()
            .filter_map(|f| f.failure_message())
            .chain(
                report
                    .skipped
                    .iter()
                    .filter(|s| s.reason.loses_data())
                    .map(|s| format!("{}: {}", s.path.display(), s.reason)),
            )
            .collect();
        if !failed.is_empty() {
            let _ = write!(
                page,
                "<div class=\"failed\"><b>{} {} could not be replayed:</b><ul>",
                failed.len(),
                plural(failed.len() as u64, "file", "files")
            );
            for f in &failed {
                let _ = write!(page, "<li>{}</li>", esc(f));
            }
            page.push_str("</ul></div>\n");
        }
        page.push_str("</header>\n");
        // Sessions by cost; `order` holds indices into `summary.sessions`.
        let order = summary.order_by_cost();
        render_table(&mut page, summary, &order);
        page.push_str(loopguard_lanes::LEGEND);
        let empty = SessionMarks::default();
        for &i in &order {
            let stats = &summary.sessions[i];
            let marks = self.sessions.get(i).unwrap_or(&empty);
            render_session(&mut page, i, stats, marks);
        }
        let _ = writeln!(
            page,
            "<details class=\"text\"><summary>Text report</summary><pre>{}</pre></details>",
            esc(&summary.render(mode))
        );
        page.push_str("</body></html>\n");
        page
    }
}

/// The tooltip of a mark: line, time, tool, arguments, decision, detector, count, message.
/// What the page says about the configuration: per kind of input present, where its config
/// came from (`config`: the file given with `--config`, if any), whether loop detection was
/// on, and the thresholds and detectors used.
pub fn settings(plan: &Plan, config: Option<&Path>) -> Vec<Setting> {
    let mut out = Vec::new();
    for (kind, label) in [
        (InputKind::EventStream, "event streams"),
        (InputKind::Transcript, "transcripts"),
    ] {
        let Some(source) = plan.sources.iter().find(|s| s.kind() == kind) else {
            continue;
        };
        let policy = plan.config_for(source).policy_for(None);
        let r = &policy.resolved;
        let origin = match (config, kind) {
            (Some(p), _) => format!("--config {}", p.display()),
            (None, InputKind::EventStream) => {
                "no --config: OpenClaw's defaults (enabled: false)".to_string()
            }
            (None, _) => "no --config: OpenClaw's defaults with enabled: true".to_string(),
        };
        let detectors: Vec<&str> = [
            (r.generic_repeat, "generic_repeat"),
            (r.known_poll_no_progress, "known_poll_no_progress"),
            (r.ping_pong, "ping_pong"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| *n)
        .collect();
        let text = if r.enabled {
            format!(
                "{origin} · profile {} · history {} · warning at {} · critical at {} · unknown tool at {} · global circuit breaker at {} · detectors: {}",
                policy.extra.profile.as_str(),
                r.history_size,
                r.warning_threshold,
                r.critical_threshold,
                r.unknown_tool_threshold,
                r.global_circuit_breaker_threshold,
                if detectors.is_empty() { "none".to_string() } else { detectors.join(", ") }
            )
        } else {
            format!(
                "{origin} · loop detection OFF: only the post-compaction guard ran, so repeated calls were not looked for"
            )
        };
        out.push(Setting {
            inputs: label,
            text,
            detection_off: !r.enabled,
        });
    }
    out
}

fn tooltip(d: &Decision<'_>, meta: &EventMeta<'_>, what: &str) -> String {
    let mut t = format!("line {}", d.line);
    if let Some(ts) = meta.ts_ms {
        let _ = write!(t, " · {}", utc(ts));
    }
    if let Some(tool) = &d.tool {
        let _ = write!(t, "\n{}", tool.to_string_lossy());
        if let Some(a) = meta.args {
            let _ = write!(t, " {}", args_preview(a));
        }
    }
    let _ = write!(t, "\n{what}");
    if let Some(f) = &d.finding {
        let _ = write!(t, " · {} · count {}", f.detector, f.count);
        if f.emitted == Some(true) && d.action == Action::Warn {
            t.push_str(" · shown to the model");
        }
        let _ = write!(t, "\n{}", f.message);
    }
    t
}

fn render_table(page: &mut String, summary: &crate::Summary, order: &[usize]) {
    page.push_str(
        "<section class=\"overview\"><h2>Sessions, most expensive loops first</h2><div class=\"scroll\"><table class=\"summary\"><thead><tr><th>session</th><th>calls</th><th>loops</th><th>warnings</th><th>blocks</th><th>aborts</th><th>calls in loops</th><th>time in loops</th><th>tokens in loops</th><th>duration</th></tr></thead><tbody>\n",
    );
    for &i in order {
        let s = &summary.sessions[i];
        let (calls_in, tokens_in, wall_in) = s.cost();
        let has_tokens = s.loops.iter().any(|l| l.tokens_after_warning.is_some());
        let has_wall = s.loops.iter().any(|l| l.wall_ms_after_warning().is_some());
        let class = if s.blocks + s.aborts > 0 {
            " class=\"crit\""
        } else if s.warnings > 0 {
            " class=\"warned\""
        } else {
            ""
        };
        let _ = writeln!(
            page,
            "<tr{class}><td><a href=\"#s{i}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&s.name),
            thousands(s.calls),
            s.loops.len(),
            thousands(s.warnings),
            thousands(s.blocks),
            thousands(s.aborts),
            thousands(calls_in),
            if has_wall { duration(wall_in) } else { "–".into() },
            if has_tokens { thousands(tokens_in) } else { "–".into() },
            s.wall_ms().map(duration).unwrap_or_else(|| "–".into()),
        );
    }
    page.push_str("</tbody></table></div></section>\n");
}

fn render_session(page: &mut String, index: usize, s: &SessionSummary, m: &SessionMarks) {
    let source = s
        .source
        .as_ref()
        .map(|src| format!(" <span class=\"src\">{}</span>", esc(src)))
        .unwrap_or_default();
    let _ = write!(
        page,
        "<section class=\"session\" id=\"s{index}\" data-session=\"{}\"><h2>{}{source}</h2><p class=\"meta\">{} {}, {} {} ({} shown to the model), {} {}, {} {}, {} {}",
        esc(&s.name),
        esc(&s.name),
        thousands(s.calls),
        plural(s.calls, "call", "calls"),
        thousands(s.warnings),
        plural(s.warnings, "warning", "warnings"),
        thousands(s.warnings_emitted),
        thousands(s.blocks),
        plural(s.blocks, "block", "blocks"),
        thousands(s.aborts),
        plural(s.aborts, "abort", "aborts"),
        s.loops.len(),
        plural(s.loops.len() as u64, "loop", "loops"),
    );
    if let Some(span) = time_span(s) {
        let _ = write!(page, "; {}", esc(&span));
    }
    page.push_str("</p>\n");
    let calls = m.calls;
    let at = |pos: u64| pos.min(calls) as f64 / calls.max(1) as f64;
    let mut t = loopguard_lanes::Timeline {
        ticks: axis(m),
        ..Default::default()
    };
    // All calls, as a histogram, with compactions as lines across it.
    let peak = m.histogram.counts.iter().copied().max().unwrap_or(0).max(1) as f64;
    let mut activity = loopguard_lanes::Activity {
        count: thousands(calls),
        ..Default::default()
    };
    for (b, &c) in m.histogram.counts.iter().enumerate() {
        if c == 0 {
            continue;
        }
        let start = b as u64 * m.histogram.width;
        let end = (start + m.histogram.width).min(calls.max(1));
        activity.bars.push(loopguard_lanes::Bar {
            from: at(start),
            to: at(end),
            height: c as f64 / peak,
            tip: if end == start + 1 {
                format!("call {end}")
            } else {
                format!("calls {}–{end}: {c}", start + 1)
            },
        });
    }
    activity.compactions = m
        .compactions
        .kept
        .iter()
        .map(|c| (at(c.pos), c.tip.clone()))
        .collect();
    t.activity = Some(activity);
    // The most expensive loops get lanes, drawn in the order they started.
    let mut drawn: Vec<usize> = (0..s.loops.len()).collect();
    drawn.sort_by_key(|&n| std::cmp::Reverse(loop_cost(&s.loops[n])));
    drawn.truncate(MAX_LANES);
    drawn.sort_unstable();
    let empty = Sampled::new(0);
    for &n in &drawn {
        let marks = m.loops.get(n).unwrap_or(&empty);
        t.lanes.push(lane(n + 1, &s.loops[n], marks, calls));
    }
    let left_out = s.loops.len() - drawn.len();
    if left_out > 0 {
        let calls_left: u64 = (0..s.loops.len())
            .filter(|n| drawn.binary_search(n).is_err())
            .map(|n| s.loops[n].calls_after_warning)
            .sum();
        t.more = Some((
            format!(
                "{left_out} more {} not drawn",
                plural(left_out as u64, "loop", "loops")
            ),
            format!(
                "{} {} in them after their first warning; the text report below lists every loop",
                thousands(calls_left),
                plural(calls_left, "call", "calls"),
            ),
        ));
    }
    loopguard_lanes::render(page, &t);
    let thinned: Vec<String> = m
        .loops
        .iter()
        .enumerate()
        .filter(|(n, lane)| lane.stride > 1 && drawn.binary_search(n).is_ok())
        .map(|(n, lane)| {
            format!(
                "loop {}: {} of {} marks (every {}th)",
                n + 1,
                lane.kept.len(),
                lane.seen,
                lane.stride
            )
        })
        .chain((m.compactions.stride > 1).then(|| {
            format!(
                "compactions: {} of {} (every {}th)",
                m.compactions.kept.len(),
                m.compactions.seen,
                m.compactions.stride
            )
        }))
        .collect();
    if !thinned.is_empty() {
        let _ = writeln!(
            page,
            "<p class=\"meta thinned\">Drawn from an even sample: {}.</p>",
            esc(&thinned.join("; "))
        );
    }
    page.push_str("</section>\n");
}

/// A loop's cost, for choosing which loops get lanes.
fn loop_cost(l: &Loop) -> (u64, u64, u64, u64) {
    (
        l.calls_after_warning,
        l.tokens_after_warning.unwrap_or(0),
        l.wall_ms_after_warning().unwrap_or(0),
        l.blocks + l.aborts,
    )
}

/// Tick labels under the session's title: call numbers, and times when recorded.
fn axis(m: &SessionMarks) -> Vec<loopguard_lanes::Tick> {
    let calls = m.calls.max(1);
    (0..=4u64)
        .map(|k| {
            let pos = calls * k / 4;
            let sub = m
                .times
                .kept
                .iter()
                .min_by_key(|(p, _)| p.abs_diff(pos))
                .map(|(_, ts)| utc(*ts)[11..19].to_string());
            loopguard_lanes::Tick {
                at: pos as f64 / calls as f64,
                label: thousands(pos.min(m.calls)),
                sub,
            }
        })
        .collect()
}

/// A loop's lane: its label, its marks (an even sample) and its cost.
fn lane(n: usize, l: &Loop, marks: &Sampled<Mark>, calls: u64) -> loopguard_lanes::Lane {
    use loopguard_lanes::MarkKind;
    let tools = match &l.paired_tool {
        Some(pt) if *pt != l.tool => format!("{} ↔ {}", l.tool, pt),
        _ => l.tool.clone(),
    };
    let detectors: Vec<&str> = l.detectors.iter().map(|d| d.as_str()).collect();
    let severity = if l.aborts > 0 {
        MarkKind::Abort
    } else if l.blocks > 0 {
        MarkKind::Block
    } else {
        MarkKind::Warn
    };
    let mut lane = loopguard_lanes::Lane::new(n, tools, severity);
    lane.args.clone_from(&l.args_preview);
    lane.detectors = detectors.join(" + ");
    lane.max_count = l.max_count;
    lane.run.clone_from(&l.run);
    lane.marks = marks
        .kept
        .iter()
        .filter_map(|mk| {
            let kind = match mk.kind {
                Kind::Warn => MarkKind::Warn,
                Kind::Block => MarkKind::Block,
                Kind::Abort => MarkKind::Abort,
                Kind::Compaction => return None,
            };
            Some(loopguard_lanes::Mark {
                at: mk.pos.min(calls) as f64 / calls.max(1) as f64,
                kind,
                tip: mk.tip.clone(),
            })
        })
        .collect();
    let mut cost = vec![if l.calls_after_warning == 0 && l.aborts > 0 {
        "run aborted at once".to_string()
    } else {
        format!(
            "{} {}",
            thousands(l.calls_after_warning),
            plural(l.calls_after_warning, "call", "calls")
        )
    }];
    if let Some(ms) = l.wall_ms_after_warning() {
        cost.push(duration(ms));
    }
    if let Some(t) = l.tokens_after_warning {
        cost.push(format!("{} tokens", thousands(t)));
    }
    lane.cost = cost.join(" · ");
    lane
}

fn esc(s: &str) -> String {
    loopguard_lanes::escape(s)
}

const HEAD_START: &str = r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>loopguard replay</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
* { box-sizing: border-box; }
body { font-family: system-ui, sans-serif; margin: 0 auto; padding: 16px; max-width: 1280px; color: #1d1d1f; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 22px 0 4px; overflow-wrap: anywhere; }
.meta { color: #555; margin: 0 0 8px; font-size: 13px; }
.src { font-weight: normal; color: #666; font-size: 13px; }
.failed { border-left: 4px solid #d0021b; background: #fff4f4; padding: 6px 10px; font-size: 13px; }
.failed ul { margin: 4px 0 0; padding-left: 18px; }
.scroll { overflow-x: auto; }
table.summary { border-collapse: collapse; font-size: 13px; width: 100%; }
table.summary th, table.summary td { padding: 4px 8px; border-bottom: 1px solid #e3e3e6; text-align: right; white-space: nowrap; }
table.summary th:first-child, table.summary td:first-child { text-align: left; white-space: normal; overflow-wrap: anywhere; min-width: 10em; }
table.summary thead th { background: #f4f4f6; font-weight: 600; }
tr.crit td:first-child { border-left: 4px solid #d0021b; } tr.warned td:first-child { border-left: 4px solid #f5a623; }
"#;

const HEAD_END: &str = r#"details.text { margin-top: 24px; } details.text pre { background: #f4f4f6; padding: 12px; font-size: 12px; overflow-x: auto; }
@media (max-width: 700px) { body { padding: 10px; } }
</style></head><body>
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lane_keeps_an_even_sample_under_its_cap() {
        let mut lane = Sampled::new(MAX_MARKS);
        for seq in 0..MAX_MARKS as u64 {
            lane.push(|| seq);
        }
        assert_eq!((lane.kept.len(), lane.stride), (MAX_MARKS, 1));
        let total = 300u64;
        for seq in MAX_MARKS as u64..total {
            lane.push(|| seq);
        }
        // 300 marks: past 2 × 128, so every fourth is kept.
        assert_eq!(lane.stride, 4);
        assert_eq!(lane.seen, total);
        assert_eq!(lane.kept, (0..total).step_by(4).collect::<Vec<_>>());
    }

    #[test]
    fn the_histogram_stays_within_its_buckets_and_counts_every_call() {
        let mut h = Histogram::default();
        for pos in 0..100_000u64 {
            h.add(pos);
        }
        assert!(h.counts.len() <= BUCKETS);
        assert_eq!(h.counts.iter().sum::<u64>(), 100_000);
        assert_eq!(h.width, 512); // 100,000 / 256 rounded up to a power of two
        assert!(h.counts[..h.counts.len() - 1].iter().all(|&c| c == 512));
    }
}
