//! # loopguard-lanes
//!
//! A session's timeline as HTML: an axis, optionally a row of all its calls, and one lane
//! per loop with a mark per warning, block and abort and the loop's cost beside it. One
//! renderer for both pages that draw loops: `loopguard replay --html` (its x axis counts
//! the calls it replayed) and the session page of `loopguard serve`'s dashboard (its x
//! axis is the loop history's time). Each builds a [`Timeline`] from what it knows and gets
//! the same markup, styled by [`CSS`] and explained by [`LEGEND`].
//!
//! Positions are fractions of the axis (0 at its start, 1 at its end); every text is
//! escaped here, so callers pass plain text.
//!
//! ```
//! use loopguard_lanes::{render, Lane, Mark, MarkKind, Tick, Timeline};
//! let mut t = Timeline::default();
//! t.ticks = vec![Tick::new(0.0, "0"), Tick::new(1.0, "40")];
//! let mut lane = Lane::new(1, "read", MarkKind::Block);
//! lane.detectors = "generic_repeat".into();
//! lane.marks = vec![
//!     Mark { at: 0.25, kind: MarkKind::Warn, tip: "call 10 · warn".into() },
//!     Mark { at: 0.5, kind: MarkKind::Block, tip: "call 20 · block".into() },
//! ];
//! lane.cost = "10 calls".into();
//! t.lanes.push(lane);
//! let mut html = String::new();
//! render(&mut html, &t);
//! assert!(html.starts_with("<div class=\"lanes\">"));
//! assert!(html.contains("<rect class=\"block\" x=\"497.5\""));
//! ```

use std::fmt::Write as _;

/// Width of a track in SVG units (the SVG stretches to the row's width).
pub const WIDTH: f64 = 1000.0;

/// What a mark on a lane stands for; its CSS class is [`MarkKind::class`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MarkKind {
    /// A warning.
    Warn,
    /// A block (or, in observe mode, a would-block).
    Block,
    /// The run was ended.
    Abort,
}

impl MarkKind {
    /// The CSS class (`warn`, `block`, `abort`), also a lane's severity class.
    pub fn class(self) -> &'static str {
        match self {
            MarkKind::Warn => "warn",
            MarkKind::Block => "block",
            MarkKind::Abort => "abort",
        }
    }
}

/// One mark on a lane.
#[derive(Clone, Debug, PartialEq)]
pub struct Mark {
    /// Where, as a fraction of the axis.
    pub at: f64,
    /// What it stands for.
    pub kind: MarkKind,
    /// Its tooltip (plain text; lines separated by `\n`).
    pub tip: String,
}

/// A label under the axis.
#[derive(Clone, Debug, PartialEq)]
pub struct Tick {
    /// Where, as a fraction of the axis.
    pub at: f64,
    /// The label (a call number, a time).
    pub label: String,
    /// A second line (the time of that call), when known.
    pub sub: Option<String>,
}

impl Tick {
    /// A tick with one line.
    pub fn new(at: f64, label: impl Into<String>) -> Tick {
        Tick {
            at,
            label: label.into(),
            sub: None,
        }
    }
}

/// A bar of the row of all calls.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// Where it starts, as a fraction of the axis.
    pub from: f64,
    /// Where it ends.
    pub to: f64,
    /// Its height as a fraction of the highest bar's.
    pub height: f64,
    /// Its tooltip.
    pub tip: String,
}

/// The row of all calls: a histogram, with compactions as lines across it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Activity {
    /// How many calls, as shown beside the row.
    pub count: String,
    /// The histogram's bars.
    pub bars: Vec<Bar>,
    /// Compactions: where (a fraction of the axis) and their tooltip.
    pub compactions: Vec<(f64, String)>,
}

/// One loop's lane.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Lane {
    /// Its number in the session (1 for the first loop).
    pub number: usize,
    /// The tool, or the pair of tools of a ping-pong.
    pub tools: String,
    /// A preview of the repeated arguments, when known.
    pub args: Option<String>,
    /// The detectors that fired, as shown.
    pub detectors: String,
    /// The detector's highest count.
    pub max_count: u64,
    /// The run, when known.
    pub run: Option<String>,
    /// The worst decision of the loop: the colour of its label.
    pub severity: MarkKind,
    /// How the loop ended (`warned`, `blocked`, …), written as the label's `data-end`
    /// when given.
    pub end: Option<String>,
    /// The marks, in order along the axis.
    pub marks: Vec<Mark>,
    /// Its cost after its first warning, as shown beside the lane.
    pub cost: String,
}

impl Lane {
    /// A lane without marks, detectors or cost.
    pub fn new(number: usize, tools: impl Into<String>, severity: MarkKind) -> Lane {
        Lane {
            number,
            tools: tools.into(),
            args: None,
            detectors: String::new(),
            max_count: 0,
            run: None,
            severity,
            end: None,
            marks: Vec::new(),
            cost: String::new(),
        }
    }
}

/// A session's timeline.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    /// What the axis counts (`call`, `time`); `call` when empty.
    pub axis: String,
    /// The labels under the axis, in order.
    pub ticks: Vec<Tick>,
    /// The row of all calls, when the caller counted them.
    pub activity: Option<Activity>,
    /// The lanes drawn.
    pub lanes: Vec<Lane>,
    /// Loops not drawn: the row's label and its text.
    pub more: Option<(String, String)>,
}

/// Appends the timeline's `<div class="lanes">…</div>` to `out`.
pub fn render(out: &mut String, t: &Timeline) {
    out.push_str("<div class=\"lanes\">\n");
    render_axis(out, t);
    if let Some(a) = &t.activity {
        render_activity(out, a);
    }
    for lane in &t.lanes {
        render_lane(out, lane);
    }
    if let Some((label, text)) = &t.more {
        let _ = writeln!(
            out,
            "<div class=\"label more\">{}</div><div class=\"track more\">{}</div><div class=\"cost\"></div>",
            escape(label),
            escape(text)
        );
    } else if t.lanes.is_empty() {
        out.push_str("<div class=\"label none\">no loops</div><div class=\"track\"></div><div class=\"cost\"></div>\n");
    }
    out.push_str("</div>\n");
}

fn render_axis(out: &mut String, t: &Timeline) {
    let axis = if t.axis.is_empty() { "call" } else { &t.axis };
    let _ = write!(
        out,
        "<div class=\"label axis-label\">{}</div><div class=\"track axis\">",
        escape(axis)
    );
    let last = t.ticks.len().saturating_sub(1);
    for (k, tick) in t.ticks.iter().enumerate() {
        let align = match k {
            0 => "first",
            k if k == last => "last",
            _ => "mid",
        };
        let pct = tick.at * 100.0;
        let sub = tick
            .sub
            .as_ref()
            .map(|s| format!("<br>{}", escape(s)))
            .unwrap_or_default();
        let _ = write!(
            out,
            "<span class=\"tick {align}\" style=\"left:{pct:.2}%\">{}{sub}</span>",
            escape(&tick.label)
        );
    }
    out.push_str("</div><div class=\"cost axis-label\">cost after the first warning</div>\n");
}

fn render_activity(out: &mut String, a: &Activity) {
    let _ = write!(
        out,
        "<div class=\"label\">all calls <span class=\"n\">{}</span></div><div class=\"track\"><svg class=\"activity\" viewBox=\"0 0 {WIDTH} 40\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"calls over the session\">",
        escape(&a.count)
    );
    for b in &a.bars {
        let (x0, x1) = (b.from * WIDTH, b.to * WIDTH);
        let h = 4.0 + 36.0 * b.height;
        // A gap between wide bars, so single calls read as calls.
        let w = x1 - x0;
        let w = if w > 4.0 { w * 0.8 } else { w.max(1.0) };
        let _ = write!(
            out,
            "<rect class=\"calls\" x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\"><title>{}</title></rect>",
            40.0 - h,
            w,
            escape(&b.tip)
        );
    }
    for (at, tip) in &a.compactions {
        let _ = write!(
            out,
            "<rect class=\"compaction\" x=\"{:.1}\" y=\"0\" width=\"4\" height=\"40\"><title>{}</title></rect>",
            (at * WIDTH - 2.0).max(0.0),
            escape(tip)
        );
    }
    out.push_str("</svg></div><div class=\"cost\"></div>\n");
}

fn render_lane(out: &mut String, l: &Lane) {
    let n = l.number;
    let args = l
        .args
        .as_ref()
        .map(|a| format!(" <code>{}</code>", escape(a)))
        .unwrap_or_default();
    let run = l
        .run
        .as_ref()
        .map(|r| format!(" · run {}", escape(r)))
        .unwrap_or_default();
    let end = l
        .end
        .as_ref()
        .map(|e| format!(" data-end=\"{}\"", escape(e)))
        .unwrap_or_default();
    let _ = write!(
        out,
        "<div class=\"label loop {}\"{end}><b>{n}. {}</b>{args}<br><span class=\"det\">{}</span> · count up to {}{run}</div><div class=\"track\"><svg class=\"lane\" viewBox=\"0 0 {WIDTH} 24\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"loop {n}\">",
        l.severity.class(),
        escape(&l.tools),
        escape(&l.detectors),
        l.max_count,
    );
    if let (Some(first), Some(last)) = (l.marks.first(), l.marks.last()) {
        let (x0, x1) = (first.at * WIDTH, last.at * WIDTH);
        let _ = write!(
            out,
            "<rect class=\"span\" x=\"{x0:.1}\" y=\"10\" width=\"{:.1}\" height=\"4\"/>",
            (x1 - x0).max(1.0)
        );
    }
    // Warnings first, so blocks and aborts are drawn on top.
    for kind in [MarkKind::Warn, MarkKind::Block, MarkKind::Abort] {
        for mk in l.marks.iter().filter(|mk| mk.kind == kind) {
            let (y, h) = match kind {
                MarkKind::Warn => (4.0, 16.0),
                _ => (0.0, 24.0),
            };
            let _ = write!(
                out,
                "<rect class=\"{}\" x=\"{:.1}\" y=\"{y}\" width=\"5\" height=\"{h}\"><title>{}</title></rect>",
                kind.class(),
                (mk.at * WIDTH - 2.5).max(0.0),
                escape(&mk.tip)
            );
        }
    }
    let _ = writeln!(
        out,
        "</svg></div><div class=\"cost\">{}</div>",
        escape(&l.cost)
    );
}

/// `s` with `<`, `>`, `&`, `"` and `'` escaped for HTML text and attributes.
pub fn escape(s: &str) -> String {
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

/// The lanes' style: every rule under `.lanes` or `.legend`, so a page that embeds them
/// keeps its own.
pub const CSS: &str = r#".legend { font-size: 13px; margin: 14px 0 0; }
.legend span { display: inline-block; margin-right: 14px; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: -1px; }
.lanes { display: grid; grid-template-columns: minmax(11em, 24%) 1fr minmax(8em, 15%); gap: 2px 10px; align-items: center; }
.lanes .label { font-size: 12px; overflow-wrap: anywhere; }
.lanes .label code { font-size: 11px; color: #444; }
.lanes .label.loop { border-left: 4px solid #f5a623; padding-left: 6px; }
.lanes .label.loop.block { border-left-color: #d0021b; } .lanes .label.loop.abort { border-left-color: #7b2cbf; }
.lanes .det, .lanes .n, .lanes .none { color: #555; }
.lanes .cost { font-size: 12px; color: #333; }
.lanes .more { font-size: 12px; color: #555; }
.lanes .axis-label { color: #777; font-size: 11px; }
.lanes .track { position: relative; min-width: 0; }
.lanes .track svg { display: block; width: 100%; background: #fafafa; border: 1px solid #e3e3e6; }
.lanes svg.activity { height: 40px; } .lanes svg.lane { height: 24px; }
.lanes .track.axis { height: 30px; border-bottom: 1px solid #999; }
.lanes .tick { position: absolute; bottom: 2px; font-size: 10px; color: #555; transform: translateX(-50%); text-align: center; line-height: 1.2; white-space: nowrap; }
.lanes .tick.first { transform: none; text-align: left; } .lanes .tick.last { transform: translateX(-100%); text-align: right; }
.lanes rect.calls { fill: #a9a9ae; } .lanes rect.span { fill: #e0c9a6; }
.lanes rect.warn { fill: #f5a623; } .lanes rect.block { fill: #d0021b; } .lanes rect.abort { fill: #7b2cbf; }
.lanes rect.compaction { fill: #2f80ed; opacity: 0.7; }
.legend i.calls { background: #a9a9ae; } .legend i.warn { background: #f5a623; } .legend i.block { background: #d0021b; }
.legend i.abort { background: #7b2cbf; } .legend i.compaction { background: #2f80ed; }
@media (max-width: 700px) {
  .lanes { grid-template-columns: 1fr; gap: 2px; }
  .lanes .cost:empty, .lanes .cost.axis-label, .lanes .label.axis-label { display: none; }
  .lanes .label { margin-top: 8px; }
  .lanes .cost { margin-bottom: 4px; }
}
"#;

/// The legend of the marks.
pub const LEGEND: &str = r#"<p class="legend"><span><i class="calls"></i>calls</span><span><i class="warn"></i>warning</span><span><i class="block"></i>block</span><span><i class="abort"></i>abort</span><span><i class="compaction"></i>compaction</span> · hover a mark for its line, time, call and message</p>
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_marks_are_drawn_blocks_over_warnings() {
        let mut lane = Lane::new(2, "<b>", MarkKind::Abort);
        lane.end = Some("aborted".into());
        lane.marks = vec![
            Mark {
                at: 0.0,
                kind: MarkKind::Abort,
                tip: "a".into(),
            },
            Mark {
                at: 1.0,
                kind: MarkKind::Warn,
                tip: "\"w\"".into(),
            },
        ];
        let t = Timeline {
            lanes: vec![lane],
            ..Timeline::default()
        };
        let mut html = String::new();
        render(&mut html, &t);
        assert!(html.contains("<b>2. &lt;b&gt;</b>"), "{html}");
        assert!(html.contains("data-end=\"aborted\""), "{html}");
        assert!(html.contains("&quot;w&quot;"), "{html}");
        let (warn, abort) = (
            html.find("class=\"warn\"").unwrap(),
            html.find("class=\"abort\"").unwrap(),
        );
        assert!(warn < abort, "{html}");
        assert!(!html.contains("no loops"));
    }

    #[test]
    fn a_timeline_without_loops_says_so() {
        let mut html = String::new();
        render(&mut html, &Timeline::default());
        assert!(html.contains("no loops"), "{html}");
    }
}
