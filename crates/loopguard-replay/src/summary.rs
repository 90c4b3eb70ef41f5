//! The human report of a replay: per session, counts and each loop found.
//!
//! A *loop* gathers the decisions about one repeated thing in one run: the same call
//! (`argsHash`) for the generic, poll and global detectors and the post-compaction guard,
//! the same pair for ping-pong, the same missing tool for unknown-tool repeats. For each
//! loop the report gives its first warning and first block (line, count, time), and what
//! was spent inside it after the first warning: calls, wall time and tokens, when the
//! transcript records them.

use std::collections::HashMap;
use std::fmt::Write as _;

use loopguard_core::detectors::Detector;
use loopguard_core::history::normalize_run;
use loopguard_core::JsString;

use loopguard_events::EventKind;
use loopguard_events::{Action, Decision};

/// Where and when a loop reached a milestone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    /// Line (or record) of the decision.
    pub line: u64,
    /// The detector's count then.
    pub count: u64,
    /// Milliseconds since the epoch, when known.
    pub ts_ms: Option<u64>,
}

/// One loop in one session.
#[derive(Clone, Debug, PartialEq)]
pub struct Loop {
    /// The run it happened in.
    pub run: Option<String>,
    /// The tool that repeated (for ping-pong, the tool seen first).
    pub tool: String,
    /// The other tool of a ping-pong pair.
    pub paired_tool: Option<String>,
    /// A short rendering of the repeated arguments, when known.
    pub args_preview: Option<String>,
    /// Detectors that fired, in the order they first did.
    pub detectors: Vec<Detector>,
    /// The highest count reached.
    pub max_count: u64,
    /// First line of the loop's decisions.
    pub first_line: u64,
    /// Last line of the loop's decisions.
    pub last_line: u64,
    /// The first warning.
    pub first_warning: Option<Mark>,
    /// The first block.
    pub first_block: Option<Mark>,
    /// The first abort.
    pub first_abort: Option<Mark>,
    /// Warn decisions.
    pub warnings: u64,
    /// Warnings that passed the de-duplication.
    pub warnings_emitted: u64,
    /// Blocks.
    pub blocks: u64,
    /// Aborts.
    pub aborts: u64,
    /// Calls made inside the loop from its first warning on.
    pub calls_after_warning: u64,
    /// Time of the latest call inside the loop.
    pub last_ts_ms: Option<u64>,
    /// Tokens spent on calls inside the loop from its first warning on, when known.
    pub tokens_after_warning: Option<u64>,
}

impl Loop {
    /// Wall time from the first warning to the latest call of the loop.
    pub fn wall_ms_after_warning(&self) -> Option<u64> {
        let start = self.first_warning.and_then(|m| m.ts_ms)?;
        Some(self.last_ts_ms?.saturating_sub(start))
    }
}

/// Counts for one session.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionSummary {
    /// The session name.
    pub name: String,
    /// Where it came from (a file), when the caller says.
    pub source: Option<String>,
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
    /// Tokens of all calls, when known.
    pub tokens: Option<u64>,
    /// Loops, in the order they started.
    pub loops: Vec<Loop>,
    loop_index: HashMap<(Option<String>, String), usize>,
}

impl SessionSummary {
    /// Calls made inside loops after their first warning.
    pub fn calls_in_loops(&self) -> u64 {
        self.loops.iter().map(|l| l.calls_after_warning).sum()
    }

    /// Loops whose strongest detector is `d` (the first that fired).
    pub fn loops_by(&self, d: Detector) -> usize {
        self.loops
            .iter()
            .filter(|l| l.detectors.first() == Some(&d))
            .count()
    }
}

/// What the transcript says about an event beyond the event itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventMeta<'a> {
    /// Milliseconds since the epoch.
    pub ts_ms: Option<u64>,
    /// Tokens the model spent making this call.
    pub tokens: Option<u64>,
    /// A short rendering of the call's arguments.
    pub args_preview: Option<&'a str>,
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

/// How to render the report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Style {
    /// ANSI colours.
    pub color: bool,
}

impl Summary {
    /// The summary of the session with this name (its exact bytes, as in
    /// [`Decision::session`]).
    ///
    /// ```
    /// use loopguard_replay::Summary;
    /// assert!(Summary::default().session(b"default").is_none());
    /// ```
    pub fn session(&self, name: &[u8]) -> Option<&SessionSummary> {
        self.index.get(name).map(|&i| &self.sessions[i])
    }

    /// Adds one decision.
    pub fn observe(&mut self, d: &Decision<'_>) {
        self.observe_with(d, EventMeta::default());
    }

    /// Notes where a session came from (shown in the report).
    pub fn set_source(&mut self, session: &[u8], source: &str) {
        let i = self.session_index(session);
        self.sessions[i].source = Some(source.to_string());
    }

    fn session_index(&mut self, session: &[u8]) -> usize {
        match self.index.get(session) {
            Some(&i) => i,
            None => {
                self.sessions.push(SessionSummary {
                    name: String::from_utf8_lossy(session).into_owned(),
                    ..Default::default()
                });
                self.index.insert(session.to_vec(), self.sessions.len() - 1);
                self.sessions.len() - 1
            }
        }
    }

    /// Adds one decision with what the transcript recorded about its event.
    pub fn observe_with(&mut self, d: &Decision<'_>, meta: EventMeta<'_>) {
        self.events += 1;
        let i = self.session_index(d.session.as_wtf8());
        let s = &mut self.sessions[i];
        match d.kind {
            EventKind::Call => {
                s.calls += 1;
                if let Some(t) = meta.tokens {
                    let sum = s.tokens.get_or_insert(0);
                    *sum = sum.saturating_add(t);
                }
            }
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
        let run_bytes = normalize_run(d.run.as_ref().map(JsString::as_wtf8));
        let run = run_bytes.map(|r| String::from_utf8_lossy(r).into_owned());
        let tool = d
            .tool
            .as_ref()
            .map(|t| t.to_string_lossy().into_owned())
            .unwrap_or_default();
        let subject = match f.detector {
            // A run ended by the strict profile is one loop, whatever its later calls are.
            Detector::PingPong | Detector::UnknownToolRepeat | Detector::SecondCriticalAbort => {
                let key = f.warning_key.as_ref().map(JsString::as_wtf8).unwrap_or(b"");
                // The session scopes warning keys as `<run>:<key>`; without the run prefix
                // both sides of a pair share one loop.
                let unscoped = run_bytes
                    .and_then(|r| key.strip_prefix(r))
                    .and_then(|k| k.strip_prefix(b":"))
                    .unwrap_or(key);
                String::from_utf8_lossy(unscoped).into_owned()
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
                    args_preview: meta.args_preview.map(str::to_string),
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
                    calls_after_warning: 0,
                    last_ts_ms: None,
                    tokens_after_warning: None,
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
        let mark = Mark {
            line: d.line,
            count: f.count,
            ts_ms: meta.ts_ms,
        };
        match d.action {
            Action::Warn => {
                l.warnings += 1;
                if f.emitted == Some(true) {
                    l.warnings_emitted += 1;
                }
                l.first_warning.get_or_insert(mark);
            }
            Action::Block => {
                l.blocks += 1;
                l.first_block.get_or_insert(mark);
                // A loop that blocks at once (no warning first) starts here.
                l.first_warning.get_or_insert(mark);
            }
            Action::Abort => {
                l.aborts += 1;
                l.first_abort.get_or_insert(mark);
            }
            _ => {}
        }
        if d.kind == EventKind::Call && l.first_warning.is_some() {
            l.calls_after_warning += 1;
            if let Some(ts) = meta.ts_ms {
                l.last_ts_ms = Some(ts);
            }
            if let Some(t) = meta.tokens {
                let sum = l.tokens_after_warning.get_or_insert(0);
                *sum = sum.saturating_add(t);
            }
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
        self.render_styled(mode, Style::default())
    }

    /// The report, coloured when `style.color` is set.
    pub fn render_styled(&self, mode: &str, style: Style) -> String {
        let p = Paint(style.color);
        let mut out = String::new();
        let n_loops: usize = self.sessions.iter().map(|s| s.loops.len()).sum();
        let _ = writeln!(
            out,
            "loopguard replay: {} events, {} {}, {} {} found (mode: {mode})",
            self.events,
            self.sessions.len(),
            plural(self.sessions.len() as u64, "session", "sessions"),
            p.bold(&n_loops.to_string()),
            plural(n_loops as u64, "loop", "loops"),
        );
        for s in &self.sessions {
            let source = s
                .source
                .as_ref()
                .map(|src| format!(" ({src})"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "\nsession {}{source}: {} {}, {} {} ({} shown to the model), {} {}, {} {}",
                p.bold(&s.name),
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
                render_loop(&mut out, n + 1, l, p);
            }
        }
        out
    }

    /// The table across sessions that ends a replay of several files.
    pub fn render_table(&self, style: Style) -> String {
        let p = Paint(style.color);
        let columns = [
            ("generic", Detector::GenericRepeat),
            ("poll", Detector::KnownPollNoProgress),
            ("pingpong", Detector::PingPong),
            ("unknown", Detector::UnknownToolRepeat),
            ("breaker", Detector::GlobalCircuitBreaker),
            ("compaction", Detector::CompactionLoopPersisted),
        ];
        let name_w = self
            .sessions
            .iter()
            .map(|s| s.name.chars().count())
            .max()
            .unwrap_or(7)
            .clamp(7, 40);
        let mut out = String::new();
        let _ = write!(out, "{:<name_w$} {:>8} {:>6}", "session", "calls", "loops");
        for (c, _) in columns {
            let _ = write!(out, " {c:>10}");
        }
        // The strict profile's detectors get one column, shown only when one of them fired,
        // so the default profile's table is unchanged.
        let strict_loops = |s: &SessionSummary| {
            s.loops
                .iter()
                .filter(|l| {
                    l.detectors
                        .first()
                        .is_some_and(|d| Detector::EXTRA.contains(d))
                })
                .count() as u64
        };
        let strict = self.sessions.iter().any(|s| strict_loops(s) > 0);
        if strict {
            let _ = write!(out, " {:>10}", "strict");
        }
        let _ = writeln!(out, " {:>14}", "calls in loops");
        let mut total = [0u64; 9];
        let mut strict_total = 0;
        for s in &self.sessions {
            let name: String = s.name.chars().take(name_w).collect();
            let loops = s.loops.len() as u64;
            let _ = write!(out, "{name:<name_w$} {:>8} {:>6}", s.calls, loops);
            total[0] += s.calls;
            total[1] += loops;
            for (i, (_, d)) in columns.iter().enumerate() {
                let n = s.loops_by(*d) as u64;
                total[2 + i] += n;
                let cell = format!("{n:>10}");
                let _ = write!(out, " {}", if n > 0 { p.warn(&cell) } else { cell });
            }
            if strict {
                let n = strict_loops(s);
                strict_total += n;
                let cell = format!("{n:>10}");
                let _ = write!(out, " {}", if n > 0 { p.warn(&cell) } else { cell });
            }
            let in_loops = s.calls_in_loops();
            total[8] += in_loops;
            let _ = writeln!(out, " {in_loops:>14}");
        }
        let _ = write!(
            out,
            "{:<name_w$} {:>8} {:>6}",
            format!("total ({})", self.sessions.len()),
            total[0],
            total[1]
        );
        for t in &total[2..8] {
            let _ = write!(out, " {t:>10}");
        }
        if strict {
            let _ = write!(out, " {strict_total:>10}");
        }
        let _ = writeln!(out, " {:>14}", total[8]);
        out
    }
}

fn render_loop(out: &mut String, n: usize, l: &Loop, p: Paint) {
    let tools = match &l.paired_tool {
        Some(pt) if *pt != l.tool => format!("{} <-> {}", l.tool, pt),
        _ => l.tool.clone(),
    };
    let args = l
        .args_preview
        .as_ref()
        .map(|a| format!(" {a}"))
        .unwrap_or_default();
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
    let detector_text = detectors.join(" + ");
    let detector_text = if l.blocks > 0 || l.aborts > 0 {
        p.crit(&detector_text)
    } else {
        p.warn(&detector_text)
    };
    let _ = writeln!(
        out,
        "  {n}. {}{args}{run}: {detector_text}, count up to {}, {lines}",
        p.bold(&tools),
        l.max_count,
    );
    let mut parts = Vec::new();
    if let (Some(m), true) = (l.first_warning, l.warnings > 0) {
        parts.push(format!(
            "first warning at line {} (count {}){}; {} {} ({} shown)",
            m.line,
            m.count,
            at(m.ts_ms),
            l.warnings,
            plural(l.warnings, "warning", "warnings"),
            l.warnings_emitted
        ));
    }
    if let Some(m) = l.first_block {
        parts.push(format!(
            "first block at line {} (count {}){}; {} {}",
            m.line,
            m.count,
            at(m.ts_ms),
            l.blocks,
            plural(l.blocks, "block", "blocks")
        ));
    }
    if let Some(m) = l.first_abort {
        parts.push(format!(
            "run aborted at line {} (count {}){}",
            m.line,
            m.count,
            at(m.ts_ms)
        ));
    }
    let _ = writeln!(out, "     {}", parts.join("; "));
    if l.calls_after_warning > 0 {
        let mut spent = vec![format!(
            "{} {}",
            l.calls_after_warning,
            plural(l.calls_after_warning, "call", "calls")
        )];
        if let Some(ms) = l.wall_ms_after_warning() {
            spent.push(duration(ms));
        }
        if let Some(t) = l.tokens_after_warning {
            spent.push(format!("{} tokens", thousands(t)));
        }
        let _ = writeln!(
            out,
            "     spent in the loop after the first warning: {}",
            spent.join(", ")
        );
    }
}

/// ` at 2026-09-05 15:30:12Z` when the time is known.
fn at(ts_ms: Option<u64>) -> String {
    match ts_ms {
        Some(ms) => format!(" at {}", utc(ms)),
        None => String::new(),
    }
}

/// `YYYY-MM-DD HH:MM:SSZ` for milliseconds since the epoch.
pub fn utc(ms: u64) -> String {
    let secs = (ms / 1000) as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `1h 02m`, `3m 07s`, `12.4s`.
pub fn duration(ms: u64) -> String {
    let s = ms / 1000;
    if s >= 3600 {
        format!("{}h {:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m {:02}s", s / 60, s % 60)
    } else {
        format!("{:.1}s", ms as f64 / 1000.0)
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn plural(n: u64, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// ANSI styling, or none.
#[derive(Clone, Copy)]
struct Paint(bool);

impl Paint {
    fn wrap(self, code: &str, s: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn bold(self, s: &str) -> String {
        self.wrap("1", s)
    }
    fn warn(self, s: &str) -> String {
        self.wrap("33", s)
    }
    fn crit(self, s: &str) -> String {
        self.wrap("1;31", s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_durations_and_numbers() {
        assert_eq!(utc(1_788_622_018_101), "2026-09-05 15:26:58Z");
        assert_eq!(utc(0), "1970-01-01 00:00:00Z");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00Z");
        assert_eq!(duration(12_400), "12.4s");
        assert_eq!(duration(187_000), "3m 07s");
        assert_eq!(duration(3_720_000), "1h 02m");
        assert_eq!(thousands(23_400), "23,400");
        assert_eq!(thousands(7), "7");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }
}
