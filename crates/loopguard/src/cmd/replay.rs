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
use loopguard_core::{DetectorProfile, OpenClawConfig};
use loopguard_guard::config_check::config_for_run;
use loopguard_replay::html::Timeline;
use loopguard_replay::summary::{EventMeta, Observed};
use loopguard_replay::{
    Decision, Notice, NoticeLines, Observer, Plan, PlanNote, ReplayOptions, RunError, Source, Style,
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
#[derive(clap::Args, Clone)]
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
    /// beside what the peers' published loop rules (Roo Code, Cline, Gemini CLI,
    /// OpenHands, opencode, goose) would do.
    #[arg(long)]
    summary: bool,
    /// With `--summary` (implied): a labels file of `file,verdict,loop-start[,family[,agent]]`
    /// lines (verdict healthy, self-recovering or stuck) to add stuck runs caught, calls
    /// after the loop's start and healthy runs stopped, per agent and model family when
    /// the labels name them. Repeat it to measure several labelled corpora in one replay.
    #[arg(long, value_name = "FILE")]
    labels: Vec<PathBuf>,
    /// Compare detector profiles on the inputs: the `--summary` table of each profile
    /// named (comma-separated, e.g. `openclaw,strict`), one after the other, from the
    /// same replay settings. Takes `--labels`; not with `--profile`, `--json` or `--html`.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "PROFILES")]
    compare: Vec<ProfileArg>,
    /// Colour the report: auto (when writing to a terminal), always, never.
    #[arg(long, value_enum, default_value_t = ColorArg::Auto)]
    pub color: ColorArg,
    /// Also replay the session logs a coding agent keeps on this machine (its default
    /// folders, honouring `CODEX_HOME`, `CLAUDE_CONFIG_DIR` and `XDG_DATA_HOME`):
    /// `claude-code`, `codex`, `gemini`, `qwen`, `copilot`, `factory`, `opencode`, `cline`,
    /// `roo-code`, or `all`.
    #[arg(long, value_name = "AGENT", value_parser = agent_parser())]
    agent: Option<String>,
    /// With `--agent`: only the logs modified in the last DURATION (`90s`, `30m`, `24h`,
    /// `7d`).
    #[arg(long, value_name = "DURATION", requires = "agent", value_parser = since_parser)]
    since: Option<std::time::Duration>,
    /// Event streams, transcripts, directories (searched recursively) or glob patterns;
    /// `-` reads an event stream (or a line-based `--format`) from standard input.
    #[arg(value_name = "PATH", required_unless_present = "agent")]
    inputs: Vec<PathBuf>,
}

/// The `--agent` parser: the agents whose logs are known, and `all`.
fn agent_parser() -> impl TypedValueParser<Value = String> {
    PossibleValuesParser::new(
        loopguard_replay::agent_logs::AGENTS
            .iter()
            .copied()
            .chain(std::iter::once("all")),
    )
}

fn since_parser(s: &str) -> Result<std::time::Duration, String> {
    loopguard_guard::parse_duration(s)
}

/// The inputs of `--agent`: each agent's session logs (with the agent), said on stderr.
fn agent_inputs(
    agent: &str,
    since: Option<std::time::Duration>,
) -> Result<Vec<(PathBuf, &'static str)>> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .context("--agent needs HOME to find the agents' folders")?;
    let since = since.and_then(|d| std::time::SystemTime::now().checked_sub(d));
    let found = loopguard_replay::agent_logs::find(agent, &home, &|v| std::env::var(v).ok(), since)
        .with_context(|| format!("--agent {agent}: not an agent whose logs loopguard knows"))?;
    let mut files = Vec::new();
    for f in found {
        if !f.files.is_empty() {
            errln!(
                "loopguard: {}: {} session {} in {}",
                f.agent,
                f.files.len(),
                if f.files.len() == 1 { "log" } else { "logs" },
                f.dir.display()
            )?;
        }
        files.extend(f.files.into_iter().map(|p| (p, f.agent)));
    }
    Ok(files)
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

/// Loads a config file for running (not checking): `loopguard_guard::config_check`'s
/// `config_for_run` says what to print about it and whether it runs.
pub(crate) fn load_config_for_run(path: &Path) -> Result<OpenClawConfig> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read config {}", path.display()))?;
    let run = config_for_run(&path.display().to_string(), &text);
    match run.result {
        Ok(config) => {
            for line in &run.notes {
                errln!("{line}")?;
            }
            Ok(config)
        }
        Err(refused) => {
            // Failing anyway: a closed stderr must not turn this into a quiet success.
            for line in &run.notes {
                let _ = errln!("{line}");
            }
            Err(refused.into())
        }
    }
}

/// Prints a replay as it runs.
struct Printer {
    progress: ProgressBar,
    json: Option<io::BufWriter<io::StdoutLock<'static>>>,
    buf: Vec<u8>,
    timeline: Option<Timeline>,
    quality: Option<loopguard_replay::quality::Quality>,
    lines: NoticeLines,
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
        if let Notice::Start(source) = notice {
            self.progress.set_message(source.display.clone());
        }
        for line in self.lines.lines(notice) {
            self.say(line);
        }
        if let Notice::Finished(..) = notice {
            self.progress.inc(1);
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
    if !args.compare.is_empty() {
        return compare(args);
    }
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

    let mut labels: Option<loopguard_replay::quality::Labels> = None;
    for path in &args.labels {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let read = loopguard_replay::quality::Labels::parse(&text)
            .with_context(|| format!("{}: not a labels file", path.display()))?;
        match labels.as_mut() {
            Some(all) => all.extend(read),
            None => labels = Some(read),
        }
    }
    let summary = args.summary || labels.is_some();
    if summary && args.json {
        bail!("--summary and --json are two different outputs: choose one");
    }
    let mut inputs = args.inputs.clone();
    // Each `--agent` log's agent, by the name its report uses.
    let mut agent_of: HashMap<String, &'static str> = HashMap::new();
    if let Some(agent) = &args.agent {
        let found = agent_inputs(agent, args.since)?;
        if found.is_empty() && inputs.is_empty() {
            bail!(
                "--agent {agent}: no session log found{} (docs/replay.md lists where each agent keeps them)",
                if args.since.is_some() { " in that time" } else { "" }
            );
        }
        for (path, a) in found {
            agent_of.insert(path.display().to_string(), a);
            inputs.push(path);
        }
    }
    // Loop history exports (`serve`'s GET /v1/loops/export) are loops already found: with
    // --summary they are summed beside the replayed inputs, never replayed.
    let mut loop_records = Vec::new();
    let mut exports = 0usize;
    let mut replayed = Vec::with_capacity(inputs.len());
    for path in inputs {
        if loopguard_replay::loop_history::is_export(&path) {
            if !summary {
                bail!(
                    "{}: a loop history export (GET /v1/loops/export): read it with `loopguard replay --summary`",
                    path.display()
                );
            }
            loop_records.extend(
                loopguard_replay::loop_history::read(&path).map_err(|e| anyhow::anyhow!(e))?,
            );
            exports += 1;
        } else {
            replayed.push(path);
        }
    }
    let inputs = replayed;
    if exports > 0 && inputs.is_empty() {
        write_stdout(&loopguard_replay::loop_history::render(&loop_records))?;
        return Ok(ExitCode::SUCCESS);
    }
    let plan = Plan::new(&inputs, options)?;
    let mut printer_timeline = html.as_ref().map(|_| Timeline::default());
    for s in &plan.skipped {
        errln!("{}: skipped: {}", s.path.display(), s.reason)?;
    }
    for note in &plan.notes {
        let line = note.message(args.config.as_deref());
        match note {
            // A closed stderr must not end the replay before it says how it went (its
            // status): this note is best effort.
            PlanNote::DetectorsOffForEventStreams => {
                let _ = errln!("{line}");
            }
            _ => errln!("{line}")?,
        }
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
        lines: NoticeLines::default(),
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
    // One input that could not be read: its error says it all.
    let nothing_read = report.summary.events == 0 && plan.sources.len() <= 1 && failed > 0;
    let modes = plan.modes_text();
    if let Some(q) = &printer.quality {
        let profile = args
            .profile
            .map_or("configured", |p| DetectorProfile::from(p).as_str());
        let mut text = q.render(profile, labels.as_ref());
        if let Some(unreplayed) = report.unreplayed_text() {
            text.push_str(&unreplayed);
        }
        if exports > 0 {
            text.push('\n');
            text.push_str(&loopguard_replay::loop_history::render(&loop_records));
        }
        write_stdout(&text)?;
    } else if !args.json && !nothing_read {
        let mut text = report.summary.render_styled(&modes, style);
        if plan.sources.len() > 1 {
            text.push('\n');
            text.push_str(&report.summary.render_table(style));
        }
        let by_agent = loopguard_replay::agent_logs::by_agent(&report.summary, |source| {
            agent_of.get(source).copied()
        });
        if !by_agent.is_empty() {
            text.push('\n');
            text.push_str(&loopguard_replay::agent_logs::render_by_agent(&by_agent));
        }
        if let Some(unreplayed) = report.unreplayed_text() {
            text.push_str(&unreplayed);
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

/// `--compare`: each profile's detection-quality table, in the order given.
fn compare(args: ReplayArgs) -> Result<ExitCode> {
    if args.profile.is_some() || args.json || args.html.is_some() {
        bail!("--compare prints one --summary table per profile: not with --profile, --json or --html");
    }
    let mut failed = false;
    for (i, p) in args.compare.iter().enumerate() {
        if i > 0 {
            write_stdout("\n")?;
        }
        let mut one = args.clone();
        one.compare.clear();
        one.profile = Some(*p);
        one.summary = true;
        // Any profile's failure (an input that could not be read) fails the whole
        // comparison; the others still print.
        failed |= run(one)? == ExitCode::FAILURE;
    }
    Ok(if failed {
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
