//! The text report of a replay: per session, counts and each loop found, and the table
//! across sessions. Printing only: what it prints is decided in [`crate::summary`].

use std::fmt::Write as _;

use loopguard_core::Detector;

use crate::summary::{Loop, SessionSummary, Summary};

/// How to render the report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Style {
    /// ANSI colours.
    pub color: bool,
}

impl Summary {
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
            if let Some(span) = time_span(s) {
                let _ = writeln!(out, "  {span}");
            }
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

/// `from 2026-09-05 15:26:58Z to 2026-09-05 15:40:02Z (13m 04s)` when the input records
/// times (a transcript's timestamps, an event stream's `ts`).
pub(crate) fn time_span(s: &SessionSummary) -> Option<String> {
    let (first, last) = (s.first_ts_ms?, s.last_ts_ms?);
    Some(format!(
        "from {} to {} ({})",
        utc(first),
        utc(last),
        duration(last.saturating_sub(first))
    ))
}

/// ` at 2026-09-05 15:30:12Z` when the time is known.
fn at(ts_ms: Option<u64>) -> String {
    match ts_ms {
        Some(ms) => format!(" at {}", utc(ms)),
        None => String::new(),
    }
}

/// `YYYY-MM-DD HH:MM:SSZ` for milliseconds since the epoch.
pub(crate) fn utc(ms: u64) -> String {
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
pub(crate) fn duration(ms: u64) -> String {
    let s = ms / 1000;
    if s >= 3600 {
        format!("{}h {:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m {:02}s", s / 60, s % 60)
    } else {
        format!("{:.1}s", ms as f64 / 1000.0)
    }
}

/// `23,400`.
pub(crate) fn thousands(n: u64) -> String {
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

/// `one` for 1, else `many`.
pub(crate) fn plural(n: u64, one: &'static str, many: &'static str) -> &'static str {
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
