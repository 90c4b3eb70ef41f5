//! What a replay tells its user besides the report: the mode line, the notes of a
//! [`Plan`], a line for each [`Notice`] worth one, and the count of inputs that could not
//! be replayed; and the lines `loopguard convert` writes about the transcript it reads.
//! Text only; the caller prints it where it belongs (stderr, the report's end).

use std::collections::HashMap;
use std::path::Path;

use loopguard_adapters::{Diagnostic, Format};
use loopguard_core::Mode;

use crate::plan::{Chosen, Plan, PlanNote, Source};
use crate::run::{Notice, RunReport};

/// `DISPLAY: reading as FORMAT (WHAT IT IS)`: the format recognised from an input's content.
pub fn reading_as(display: &str, format: Format) -> String {
    format!(
        "{display}: reading as {} ({})",
        format.name(),
        format.describe()
    )
}

/// `DISPLAY:LINE: skipped: WHY` for a malformed line of a transcript (`note` for a line that
/// was read), as `loopguard convert` says it; a message ending in `; skipped` does not say
/// it twice.
pub fn diagnostic_line(display: &str, d: &Diagnostic) -> String {
    let what = if d.kind.is_malformed() {
        "skipped"
    } else {
        "note"
    };
    // Some adapters' messages already end in "; skipped".
    let message = d.message.strip_suffix("; skipped").unwrap_or(&d.message);
    format!("{display}:{}: {what}: {message}", d.line)
}

/// The error that ends a conversion at a malformed line (`--stop-on-bad-line`).
pub fn stopped_line(display: &str, d: &Diagnostic) -> String {
    format!(
        "error: {display}:{}: {}; stopped here because of --stop-on-bad-line",
        d.line, d.message
    )
}

/// How many skipped lines of one input get a line before they are only counted.
pub const SHOWN_SKIPPED_LINES: u64 = 10;

impl Plan {
    /// The mode the report's first line names: `enforce`, `observe`, or which inputs got
    /// which (`enforce for 1 event stream, observe for 2 transcripts`).
    pub fn modes_text(&self) -> String {
        let enforce = self
            .sources
            .iter()
            .filter(|s| s.mode == Mode::Enforce)
            .count();
        match (enforce, self.sources.len() - enforce) {
            (_, 0) if enforce > 0 => "enforce".to_string(),
            (0, _) => "observe".to_string(),
            (e, o) => format!(
                "enforce for {e} event {}, observe for {o} {}",
                if e == 1 { "stream" } else { "streams" },
                if o == 1 { "transcript" } else { "transcripts" }
            ),
        }
    }
}

impl PlanNote {
    /// The line that tells the user, with `config` the config file given (`--config`).
    pub fn message(&self, config: Option<&Path>) -> String {
        match self {
            PlanNote::DetectorsEnabledForTranscripts => "loopguard: no --config given: transcripts replay with loop detection enabled and OpenClaw's default thresholds".to_string(),
            PlanNote::ConfigLeavesDetectorsOff => format!(
                "loopguard: {} does not set tools.loopDetection.enabled: true, so transcripts get only the post-compaction guard (as in OpenClaw); leave out --config to replay them with the detectors on",
                config.unwrap_or(Path::new("the config")).display()
            ),
            PlanNote::DetectorsOffForEventStreams => format!(
                "loopguard: {}: event streams replay with loop detection off (tools.loopDetection.enabled is not true); only the post-compaction guard runs. Give --config with enabled: true (e.g. examples/openclaw.json5) to find loops",
                match config {
                    Some(p) => p.display().to_string(),
                    None => "no --config given, so OpenClaw's defaults apply".to_string(),
                }
            ),
        }
    }
}

impl RunReport {
    /// Inputs that could not be replayed: failed while read, or skipped with their data.
    pub fn unreplayed(&self) -> usize {
        self.failures().count()
            + self
                .skipped
                .iter()
                .filter(|s| s.reason.loses_data())
                .count()
    }

    /// The paragraph that ends the report when some inputs could not be replayed (with a
    /// blank line before it), else nothing.
    pub fn unreplayed_text(&self) -> Option<String> {
        match self.unreplayed() {
            0 => None,
            n => Some(format!(
                "\n{n} {} could not be replayed (see above)\n",
                if n == 1 { "file" } else { "files" }
            )),
        }
    }
}

/// Which profile an OpenClaw session replays with, and why: the release it records, or
/// none recorded (OpenClaw's JSONL sessions never record one; its SQLite store does).
fn openclaw_profile_line(source: &Source, release: Option<&str>) -> String {
    let d = &source.display;
    match (release, source.openclaw_profile()) {
        (Some(r), Some(p)) => format!(
            "{d}: written by OpenClaw {r}: replayed with the profile of that release, {}",
            p.as_str()
        ),
        (Some(r), None) => format!(
            "{d}: written by OpenClaw {r:?}, not a release version: replayed with the documented profile, openclaw (--profile openclaw-2026.9.6 for a session of that release)"
        ),
        (None, _) => format!(
            "{d}: the session names no OpenClaw release: replayed with the documented profile, openclaw (--profile openclaw-2026.9.6 for a session of that release)"
        ),
    }
}

/// The lines a replay's [`Notice`]s give, in order: an input's detected format, its skipped
/// lines (the first [`SHOWN_SKIPPED_LINES`] of each input, then how many more), its notes,
/// its calls without results and results without calls, and why it failed.
#[derive(Debug, Default)]
pub struct NoticeLines {
    /// Skipped lines seen per input.
    shown: HashMap<String, u64>,
}

impl NoticeLines {
    /// The lines `notice` gives (often none).
    pub fn lines(&mut self, notice: Notice<'_>) -> Vec<String> {
        let mut out = Vec::new();
        match notice {
            Notice::Start(source) => {
                if source.chosen == Chosen::Detected && source.format != Format::Events {
                    out.push(reading_as(&source.display, source.format));
                }
                if let Some(release) = &source.openclaw_release {
                    out.push(openclaw_profile_line(source, release.as_deref()));
                }
            }
            Notice::LineSkipped(source, diag) => {
                let shown = self.shown.entry(source.display.clone()).or_default();
                *shown += 1;
                if *shown <= SHOWN_SKIPPED_LINES {
                    // Some adapters' messages already end in "; skipped".
                    let message = diag
                        .message
                        .strip_suffix("; skipped")
                        .unwrap_or(&diag.message);
                    out.push(format!(
                        "{}:{}: skipped: {message}",
                        source.display, diag.line
                    ));
                }
            }
            Notice::Note(source, diag) => {
                out.push(if diag.line > 0 {
                    format!("{}:{}: note: {}", source.display, diag.line, diag.message)
                } else {
                    format!("{}: note: {}", source.display, diag.message)
                });
            }
            Notice::Finished(source, file) => {
                if file.skipped_lines > SHOWN_SKIPPED_LINES {
                    out.push(format!(
                        "{}: … {} more lines skipped",
                        source.display,
                        file.skipped_lines - SHOWN_SKIPPED_LINES
                    ));
                }
                let mut parts = Vec::new();
                if file.unanswered > 0 {
                    parts.push(match file.unanswered {
                        1 => "1 call never got a result (replayed without an outcome)".to_string(),
                        n => format!("{n} calls never got a result (replayed without an outcome)"),
                    });
                }
                if file.orphans > 0 {
                    parts.push(match file.orphans {
                        1 => "1 result had no call (not replayed)".to_string(),
                        n => format!("{n} results had no call (not replayed)"),
                    });
                }
                if !parts.is_empty() {
                    out.push(format!("{}: {}", source.display, parts.join(", ")));
                }
                if let Some(message) = file.failure_message() {
                    out.push(format!("error: {message}"));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::Input;
    use crate::plan::Source;
    use crate::run::FileReport;
    use loopguard_adapters::{Diagnostic, DiagnosticKind};

    fn source(format: Format, chosen: Chosen) -> Source {
        Source {
            input: Input::File("t.jsonl".into()),
            display: "t.jsonl".to_string(),
            session: "t".to_string(),
            agent: None,
            format,
            chosen,
            mode: Mode::Observe,
            config_given: false,
            openclaw_release: None,
        }
    }

    /// The first ten skipped lines of an input get a line each, the rest a count when it
    /// is finished; a detected transcript format is named, an event stream's is not.
    #[test]
    fn skipped_lines_are_shown_up_to_ten_then_counted() {
        let s = source(Format::ClaudeCode, Chosen::Detected);
        let mut lines = NoticeLines::default();
        let start = lines.lines(Notice::Start(&s));
        assert_eq!(start.len(), 1);
        assert!(start[0].starts_with("t.jsonl: reading as "), "{start:?}");
        let events = source(Format::Events, Chosen::Detected);
        assert!(lines.lines(Notice::Start(&events)).is_empty());
        let mut shown = Vec::new();
        for line in 1..=14 {
            let d = Diagnostic {
                line,
                kind: DiagnosticKind::NotJson,
                message: "not JSON; skipped".to_string(),
            };
            shown.extend(lines.lines(Notice::LineSkipped(&s, &d)));
        }
        assert_eq!(shown.len(), 10);
        assert_eq!(shown[0], "t.jsonl:1: skipped: not JSON");
        let file = FileReport {
            display: "t.jsonl".to_string(),
            format: s.format,
            chosen: s.chosen,
            mode: s.mode,
            events: 3,
            calls: 2,
            skipped_lines: 14,
            unanswered: 1,
            orphans: 2,
            failure: None,
        };
        assert_eq!(
            lines.lines(Notice::Finished(&s, &file)),
            [
                "t.jsonl: … 4 more lines skipped",
                "t.jsonl: 1 call never got a result (replayed without an outcome), 2 results had no call (not replayed)",
            ]
        );
    }

    /// `loopguard convert`'s lines: a malformed line is skipped (its message not saying so
    /// twice), any other is a note, and the stop names the line.
    #[test]
    fn conversion_lines_say_what_became_of_a_line() {
        let d = |kind, message: &str| Diagnostic {
            line: 7,
            kind,
            message: message.to_string(),
        };
        let bad = d(
            DiagnosticKind::UnknownEntry,
            "unknown line type \"x\"; skipped",
        );
        assert_eq!(
            diagnostic_line("t.jsonl", &bad),
            "t.jsonl:7: skipped: unknown line type \"x\""
        );
        let joined = d(DiagnosticKind::JoinedLine, "two JSON values on one line");
        assert_eq!(
            diagnostic_line("t.jsonl", &joined),
            "t.jsonl:7: note: two JSON values on one line"
        );
        assert_eq!(
            stopped_line("t.jsonl", &bad),
            "error: t.jsonl:7: unknown line type \"x\"; skipped; stopped here because of --stop-on-bad-line"
        );
    }

    #[test]
    fn plan_notes_name_the_config() {
        let off = PlanNote::ConfigLeavesDetectorsOff.message(Some(Path::new("c.json5")));
        assert!(off.starts_with("loopguard: c.json5 does not set"), "{off}");
        let streams = PlanNote::DetectorsOffForEventStreams.message(None);
        assert!(
            streams.starts_with("loopguard: no --config given, so OpenClaw's defaults apply: "),
            "{streams}"
        );
    }
}
