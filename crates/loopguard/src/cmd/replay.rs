//! `loopguard replay`: clap arguments -> [`loopguard_replay::Plan`] -> printing.
//!
//! Everything decided about a replay (inputs, formats, modes, configs, session names, the
//! summary) is the library's; this module only prints: notices on stderr (under the
//! progress bar), JSON decisions or the text report on stdout, the HTML page.

use crate::cmd::ModeArg;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::ValueEnum;
use indicatif::ProgressBar;
use loopguard_adapters::Format;
use loopguard_core::Mode;
use loopguard_core::{DetectorProfile, OpenClawConfig, RunConfigError};
use loopguard_replay::html::Timeline;
use loopguard_replay::summary::{EventMeta, Observed};
use loopguard_replay::{
    Chosen, Decision, Notice, Observer, Plan, PlanNote, ReplayOptions, RunError, Source, Style,
};

use crate::progress;

/// A `--format` value: `auto` or one of the library's formats.
#[derive(Clone, Copy, Debug)]
pub struct FormatArg(pub Option<Format>);

/// The `--format` parser: `auto` and every name of [`Format::ALL`], each with its
/// description in `--help`.
pub fn format_parser() -> impl TypedValueParser<Value = FormatArg> {
    let values =
        std::iter::once(PossibleValue::new("auto").help("recognise the format from the content"))
            .chain(
                Format::ALL
                    .iter()
                    .map(|f| PossibleValue::new(f.name()).help(f.describe())),
            );
    PossibleValuesParser::new(values).map(|name| FormatArg(Format::from_name(&name)))
}

/// Arguments of `loopguard replay`.
#[derive(clap::Args)]
pub struct ReplayArgs {
    /// An OpenClaw config file (JSON5 or JSON) with `tools.loopDetection`, for every
    /// input. Without it, event streams get OpenClaw's defaults (detectors off,
    /// post-compaction guard on) and agent transcripts get the defaults with
    /// `enabled: true`.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// `enforce`: blocked calls do not run; `observe`: report only, as if every call ran.
    /// Default, per input: enforce for event streams, observe for agent transcripts
    /// (nothing was actually blocked when they were recorded).
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// The detector profile: `openclaw` (OpenClaw's detectors only) or `strict` (plus
    /// loopguard's extra detectors). Overrides the config file's `loopguard.profile`.
    #[arg(long, value_enum)]
    profile: Option<ProfileArg>,
    /// Write one JSON decision per event instead of the report.
    #[arg(long)]
    json: bool,
    /// The input format, or `auto` to recognise it from the content.
    #[arg(long, default_value = "auto", value_name = "FORMAT", value_parser = format_parser())]
    format: FormatArg,
    /// Stop at the first malformed line of a transcript instead of skipping it.
    #[arg(long)]
    stop_on_bad_line: bool,
    /// OpenClaw transcripts: replay only the tree's active branch, not every entry in file
    /// order.
    #[arg(long)]
    active_branch: bool,
    /// Event streams: always read, parse and hash the lines on worker threads, ahead of
    /// the engine (the same decisions). By default this is done for files of 1 MB or more
    /// of small events (lines under 4 KB on average) when there are two cores or more,
    /// unless --html, --summary or the strict profile needs every event's values on the
    /// engine's thread (docs/replay.md).
    #[arg(long, conflicts_with = "no_parse_ahead")]
    parse_ahead: bool,
    /// Event streams: read, parse and apply each line in turn on one thread.
    #[arg(long)]
    no_parse_ahead: bool,
    /// Worker threads that parse event streams ahead, 1 to 8 (default: one per core beside the engine's, at
    /// most 4); the engine's thread also parses a chunk whenever none is ready for it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=8))]
    parse_threads: Option<u16>,
    /// Also write a self-contained HTML report: a summary table, then per session a
    /// timeline with one lane per loop.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Print detection quality over the inputs instead of the report: per detector the
    /// runs warned and stopped, at which call, and the calls and tokens a stop saves,
    /// beside what a counter of 4 or 5 consecutive identical calls would do.
    #[arg(long)]
    summary: bool,
    /// With `--summary` (implied): a labels file of `file,verdict,loop-start` lines
    /// (verdict healthy, self-recovering or stuck) to add stuck runs caught, calls after
    /// the loop's start and healthy runs stopped.
    #[arg(long, value_name = "FILE")]
    labels: Option<PathBuf>,
    /// Colour the report: auto (when writing to a terminal), always, never.
    #[arg(long, value_enum, default_value_t = ColorArg::Auto)]
    pub color: ColorArg,
    /// Event streams, transcripts, directories (searched recursively) or glob patterns;
    /// `-` reads an event stream (or a line-based `--format`) from standard input.
    #[arg(value_name = "PATH", required = true)]
    inputs: Vec<PathBuf>,
}

/// Detector profile.
#[derive(Clone, Copy, ValueEnum)]
pub enum ProfileArg {
    /// OpenClaw's detectors only, byte for byte.
    Openclaw,
    /// OpenClaw's detectors plus loopguard's extra detectors.
    Strict,
    /// The detector and tool wrapper of the `openclaw` npm release 2026.9.6, byte for byte.
    #[value(name = "openclaw-2026.9.6")]
    Openclaw2026_9_6,
}

impl From<ProfileArg> for DetectorProfile {
    fn from(p: ProfileArg) -> DetectorProfile {
        match p {
            ProfileArg::Openclaw => DetectorProfile::OpenClaw,
            ProfileArg::Strict => DetectorProfile::Strict,
            ProfileArg::Openclaw2026_9_6 => DetectorProfile::OpenClaw2026_9_6,
        }
    }
}

/// When to colour.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorArg {
    /// When the output is a terminal and `NO_COLOR` is unset.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

impl ColorArg {
    /// Whether to colour what goes to a stream that `is_terminal` or not.
    pub fn enabled(self, is_terminal: bool) -> bool {
        match self {
            ColorArg::Always => true,
            ColorArg::Never => false,
            ColorArg::Auto => is_terminal && std::env::var_os("NO_COLOR").is_none(),
        }
    }
}

/// Loads a config file for running (not checking) with the engine's run-time loader
/// ([`OpenClawConfig::load_for_run`]): unknown keys and files that are not JSON5 stop, a
/// numeric value that is not a positive integer falls back to its default and, like the
/// auto-raised thresholds, is reported on stderr.
pub(crate) fn load_config_for_run(path: &Path) -> Result<OpenClawConfig> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read config {}", path.display()))?;
    match OpenClawConfig::load_for_run(&text) {
        Ok(loaded) => {
            for d in &loaded.diagnostics {
                errln!("{}: {d}", path.display())?;
            }
            Ok(loaded.config)
        }
        Err(RunConfigError::Rejected(fatal)) => {
            // Failing anyway: a closed stderr must not turn this into a quiet success.
            for d in &fatal {
                let _ = errln!("{}: {d}", path.display());
            }
            bail!(
                "{}: OpenClaw would reject this config; run `loopguard config check {}` for details",
                path.display(),
                path.display()
            )
        }
        Err(e) => bail!("{}: {e}", path.display()),
    }
}

/// The mode line of the report: one mode, or which inputs got which.
fn modes_text(plan: &Plan) -> String {
    let enforce = plan
        .sources
        .iter()
        .filter(|s| s.mode == Mode::Enforce)
        .count();
    match (enforce, plan.sources.len() - enforce) {
        (_, 0) if enforce > 0 => "enforce".to_string(),
        (0, _) => "observe".to_string(),
        (e, o) => format!(
            "enforce for {e} event {}, observe for {o} {}",
            if e == 1 { "stream" } else { "streams" },
            if o == 1 { "transcript" } else { "transcripts" }
        ),
    }
}

/// How many skipped lines of one file are printed before they are only counted.
const SHOWN_DIAGNOSTICS: u64 = 10;

/// Prints a replay as it runs.
struct Printer {
    progress: ProgressBar,
    json: Option<io::BufWriter<io::StdoutLock<'static>>>,
    buf: Vec<u8>,
    timeline: Option<Timeline>,
    quality: Option<loopguard_replay::quality::Quality>,
    shown: HashMap<String, u64>,
    /// The first message that could not be written (a closed stderr); the next decision
    /// stops the replay with it.
    said: Option<io::Error>,
}

impl Printer {
    fn say(&mut self, line: String) {
        if self.said.is_none() {
            if let Err(e) = self.progress.suspend(|| errln!("{line}")) {
                self.said = Some(e);
            }
        }
    }
}

impl Observer for Printer {
    fn decision(
        &mut self,
        source: &Source,
        d: &Decision<'_>,
        meta: &EventMeta<'_>,
        at: Observed,
    ) -> io::Result<()> {
        if let Some(e) = self.said.take() {
            return Err(e);
        }
        if let Some(t) = self.timeline.as_mut() {
            t.observe(d, meta, at);
        }
        if let Some(q) = self.quality.as_mut() {
            q.observe(source, d, meta);
        }
        if let Some(out) = self.json.as_mut() {
            self.buf.clear();
            d.write_json(&mut self.buf);
            out.write_all(&self.buf)?;
        }
        Ok(())
    }

    fn wants_args(&self) -> bool {
        // The HTML timeline shows every call's arguments; the rest only a loop's first.
        self.timeline.is_some() || self.quality.is_some()
    }

    fn notice(&mut self, notice: Notice<'_>) {
        match notice {
            Notice::Start(source) => {
                self.progress.set_message(source.display.clone());
                if source.chosen == Chosen::Detected && source.format != Format::Events {
                    self.say(format!(
                        "{}: reading as {} ({})",
                        source.display,
                        source.format.name(),
                        source.format.describe()
                    ));
                }
            }
            Notice::LineSkipped(source, diag) => {
                let shown = self.shown.entry(source.display.clone()).or_default();
                *shown += 1;
                if *shown <= SHOWN_DIAGNOSTICS {
                    // Some adapters' messages already end in "; skipped".
                    let message = diag
                        .message
                        .strip_suffix("; skipped")
                        .unwrap_or(&diag.message);
                    let line = format!("{}:{}: skipped: {message}", source.display, diag.line);
                    self.say(line);
                }
            }
            Notice::Note(source, diag) => {
                let line = if diag.line > 0 {
                    format!("{}:{}: note: {}", source.display, diag.line, diag.message)
                } else {
                    format!("{}: note: {}", source.display, diag.message)
                };
                self.say(line);
            }
            Notice::Finished(source, file) => {
                if file.skipped_lines > SHOWN_DIAGNOSTICS {
                    self.say(format!(
                        "{}: … {} more lines skipped",
                        source.display,
                        file.skipped_lines - SHOWN_DIAGNOSTICS
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
                    self.say(format!("{}: {}", source.display, parts.join(", ")));
                }
                if let Some(message) = file.failure_message() {
                    self.say(format!("error: {message}"));
                }
                self.progress.inc(1);
            }
            _ => {}
        }
    }
}

fn write_stdout(text: &str) -> Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Runs `loopguard replay`.
pub fn run(args: ReplayArgs) -> Result<ExitCode> {
    let mut options = ReplayOptions::new()
        .stop_on_bad_line(args.stop_on_bad_line)
        .active_branch(args.active_branch)
        .parse_threads(args.parse_threads.map_or(0, usize::from));
    if args.parse_ahead || args.no_parse_ahead {
        options = options.parse_ahead(args.parse_ahead);
    }
    if let Some(path) = &args.config {
        options = options.config(load_config_for_run(path)?);
    }
    if let Some(m) = args.mode {
        options = options.mode(Mode::from(m));
    }
    if let Some(p) = args.profile {
        options = options.detectors(p.into());
    }
    if let FormatArg(Some(f)) = args.format {
        options = options.format(f);
    }
    let style = Style {
        color: args.color.enabled(io::stdout().is_terminal()),
    };
    // The page is opened before the replay, so a path that cannot be written fails now,
    // not after replaying everything.
    let html = match &args.html {
        Some(path) => {
            Some(File::create(path).with_context(|| format!("cannot write {}", path.display()))?)
        }
        None => None,
    };

    let labels = match &args.labels {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            Some(
                loopguard_replay::quality::Labels::parse(&text)
                    .with_context(|| format!("{}: not a labels file", path.display()))?,
            )
        }
        None => None,
    };
    let summary = args.summary || labels.is_some();
    if summary && args.json {
        bail!("--summary and --json are two different outputs: choose one");
    }
    let plan = Plan::new(&args.inputs, options)?;
    let mut printer_timeline = html.as_ref().map(|_| Timeline::default());
    for s in &plan.skipped {
        errln!("{}: skipped: {}", s.path.display(), s.reason)?;
    }
    for note in &plan.notes {
        match note {
            PlanNote::DetectorsEnabledForTranscripts => errln!(
                "loopguard: no --config given: transcripts replay with loop detection enabled and OpenClaw's default thresholds"
            ),
            PlanNote::ConfigLeavesDetectorsOff => errln!(
                "loopguard: {} does not set tools.loopDetection.enabled: true, so transcripts get only the post-compaction guard (as in OpenClaw); leave out --config to replay them with the detectors on",
                args.config.as_deref().unwrap_or(Path::new("the config")).display()
            ),
            // A closed stderr must not end the replay before it says how it went (its
            // status): the note is best effort.
            PlanNote::DetectorsOffForEventStreams => {
                let _ = errln!(
                "loopguard: {}: event streams replay with loop detection off (tools.loopDetection.enabled is not true); only the post-compaction guard runs. Give --config with enabled: true (e.g. examples/openclaw.json5) to find loops",
                match &args.config {
                    Some(p) => p.display().to_string(),
                    None => "no --config given, so OpenClaw's defaults apply".to_string(),
                }
                );
                Ok(())
            }
            _ => Ok(()),
        }?;
    }
    if let Some(t) = printer_timeline.as_mut() {
        t.set_settings(loopguard_replay::html::settings(
            &plan,
            args.config.as_deref(),
        ));
    }

    let mut printer = Printer {
        progress: progress::bar(plan.sources.len() as u64),
        json: args
            .json
            .then(|| io::BufWriter::with_capacity(1 << 16, io::stdout().lock())),
        buf: Vec::with_capacity(1024),
        timeline: printer_timeline,
        quality: summary.then(loopguard_replay::quality::Quality::default),
        shown: HashMap::new(),
        said: None,
    };
    let result = plan.run(&mut printer);
    printer.progress.finish_and_clear();
    let flushed = printer.json.as_mut().map_or(Ok(()), Write::flush);
    let report = match result {
        Ok(r) => r,
        Err(RunError::Output(e)) => return Err(e).context("cannot write the output"),
        Err(e) => {
            // Failing anyway: a closed stderr must not turn this into a quiet success.
            let _ = errln!("error: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    flushed.context("cannot write the output")?;
    if let Some(e) = printer.said.take() {
        return Err(e).context("cannot write to stderr");
    }
    drop(printer.json.take());

    let failed = report.failures().count();
    let unread = report
        .skipped
        .iter()
        .filter(|s| s.reason.loses_data())
        .count();
    // One input that could not be read: its error says it all.
    let nothing_read = report.summary.events == 0 && plan.sources.len() <= 1 && failed > 0;
    let modes = modes_text(&plan);
    if let Some(q) = &printer.quality {
        let profile = args
            .profile
            .map_or("configured", |p| DetectorProfile::from(p).as_str());
        let mut text = q.render(profile, labels.as_ref());
        if failed + unread > 0 {
            let n = failed + unread;
            text.push_str(&format!(
                "\n{n} {} could not be replayed (see above)\n",
                if n == 1 { "file" } else { "files" }
            ));
        }
        write_stdout(&text)?;
    } else if !args.json && !nothing_read {
        let mut text = report.summary.render_styled(&modes, style);
        if plan.sources.len() > 1 {
            text.push('\n');
            text.push_str(&report.summary.render_table(style));
        }
        if failed + unread > 0 {
            let n = failed + unread;
            text.push_str(&format!(
                "\n{n} {} could not be replayed (see above)\n",
                if n == 1 { "file" } else { "files" }
            ));
        }
        write_stdout(&text)?;
    }
    if let (Some(mut file), Some(path), Some(t)) = (html, &args.html, &printer.timeline) {
        let page = t.render(&report, &modes);
        file.write_all(page.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        errln!("wrote {}", path.display())?;
    }
    Ok(if report.lost_data() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_library_format_is_a_format_value() {
        use clap::builder::TypedValueParser as _;
        let parser = format_parser();
        let cmd = clap::Command::new("t");
        let names: Vec<String> = parser
            .possible_values()
            .unwrap()
            .map(|v| v.get_name().to_string())
            .collect();
        assert_eq!(names[0], "auto");
        assert_eq!(names.len(), Format::ALL.len() + 1);
        for f in Format::ALL {
            let got = parser
                .parse_ref(&cmd, None, std::ffi::OsStr::new(f.name()))
                .unwrap();
            assert_eq!(got.0, Some(f));
        }
        assert!(parser
            .parse_ref(&cmd, None, std::ffi::OsStr::new("nope"))
            .is_err());
    }
}
