//! `loopguard replay`: replay recorded sessions (event streams or agent transcripts) and
//! explain every loop in them.

use std::fs::File;
use std::io::{self, BufReader, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};
use clap::ValueEnum;
use loopguard_adapters::reader::{self, Flow, Item, ReadError, ReadOptions};
use loopguard_adapters::{Context, Diagnostic, Format};
use loopguard_core::config::{OpenClawConfig, Profile};
use loopguard_core::Mode;
use loopguard_replay::summary::{EventMeta, Style};
use loopguard_replay::{replay, Output, ReplayError, Replayer, Summary};

use crate::html::Timeline;
use crate::inputs::{self, Input};

/// Arguments of `loopguard replay`.
#[derive(clap::Args)]
pub struct ReplayArgs {
    /// An OpenClaw config file (JSON5 or JSON) with `tools.loopDetection`. Without it, event
    /// streams get OpenClaw's defaults (detectors off, post-compaction guard on) and agent
    /// transcripts get the defaults with `enabled: true`.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// `enforce`: blocked calls do not run; `observe`: report only, as if every call ran.
    /// Default: enforce for event streams, observe for agent transcripts (nothing was
    /// actually blocked when they were recorded).
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// The detector profile: `openclaw` (OpenClaw's detectors only) or `strict` (plus
    /// loopguard's extra detectors). Overrides the config file's `loopguard.profile`.
    #[arg(long, value_enum)]
    profile: Option<ProfileArg>,
    /// Write one JSON decision per event instead of the report.
    #[arg(long)]
    json: bool,
    /// The input format, or `auto` to recognise it from the content. One of: auto, events,
    /// openclaw, openclaw-sqlite, call-stream, claude-code, chat-completions, responses,
    /// codex, swe-agent, mini-swe-agent, openhands, openhands-events, openhands-eval,
    /// anthropic, chat-log.
    #[arg(long, default_value = "auto", value_name = "FORMAT")]
    format: String,
    /// Stop at the first malformed line of a transcript instead of skipping it.
    #[arg(long)]
    strict: bool,
    /// OpenClaw transcripts: replay only the tree's active branch, not every entry in file
    /// order.
    #[arg(long)]
    active_branch: bool,
    /// Also write a self-contained HTML page with a timeline per session.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Colour the report: auto (when writing to a terminal), always, never.
    #[arg(long, value_enum, default_value_t = ColorArg::Auto)]
    color: ColorArg,
    /// Event streams, transcripts, directories (searched recursively) or glob patterns;
    /// `-` reads an event stream from standard input.
    #[arg(value_name = "PATH", required = true)]
    inputs: Vec<PathBuf>,
}

/// Replay mode.
#[derive(Clone, Copy, ValueEnum)]
pub enum ModeArg {
    /// Blocked calls do not run.
    Enforce,
    /// Report only.
    Observe,
}

/// Detector profile.
#[derive(Clone, Copy, ValueEnum)]
pub enum ProfileArg {
    /// OpenClaw's detectors only, byte for byte.
    Openclaw,
    /// OpenClaw's detectors plus loopguard's extra detectors.
    Strict,
}

impl From<ProfileArg> for Profile {
    fn from(p: ProfileArg) -> Profile {
        match p {
            ProfileArg::Openclaw => Profile::OpenClaw,
            ProfileArg::Strict => Profile::Strict,
        }
    }
}

/// When to colour.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorArg {
    /// When standard output is a terminal and `NO_COLOR` is unset.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// Loads a config file for running (not checking): fatal problems stop, the rest is
/// reported on stderr and the runtime fallbacks apply.
pub(crate) fn load_config_for_run(path: &Path) -> Result<OpenClawConfig> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read config {}", path.display()))?;
    let loaded = OpenClawConfig::from_json5(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let fatal: Vec<_> = loaded
        .diagnostics
        .iter()
        .filter(|d| d.is_fatal_at_runtime())
        .collect();
    for d in &loaded.diagnostics {
        if !d.is_fatal_at_runtime() {
            eprintln!("{}: {d}", path.display());
        }
    }
    if !fatal.is_empty() {
        for d in &fatal {
            eprintln!("{}: {d}", path.display());
        }
        bail!(
            "{}: OpenClaw would reject this config; run `loopguard config check {}` for details",
            path.display(),
            path.display()
        );
    }
    Ok(loaded.config)
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Enforce => "enforce",
        Mode::Observe => "observe",
    }
}

/// Runs `loopguard replay`.
pub fn run(args: ReplayArgs) -> Result<ExitCode> {
    let mut config = match &args.config {
        Some(p) => load_config_for_run(p)?,
        None => OpenClawConfig::default(),
    };
    if let Some(p) = args.profile {
        config.set_profile(p.into());
    }
    let forced = match args.format.as_str() {
        "auto" => None,
        name => Some(Format::from_name(name).ok_or_else(|| {
            anyhow::anyhow!(
                "unknown --format {name:?}; use auto or one of:\n{}",
                inputs::format_list()
            )
        })?),
    };
    let color = match args.color {
        ColorArg::Always => true,
        ColorArg::Never => false,
        ColorArg::Auto => io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    let style = Style { color };

    let files = inputs::dedupe(inputs::expand(&args.inputs)?);
    if files.len() > 1 && files.contains(&Input::Stdin) {
        bail!("`-` (standard input) cannot be mixed with other inputs");
    }
    // Each input's format, decided once: forced, or recognised from the content. `None`
    // marks a file in no known format; an empty file is an empty event stream.
    let mut sources = Vec::with_capacity(files.len());
    // Inputs that cannot be opened twice (pipes), kept as detection left them.
    let mut kept: Vec<Option<reader::Source>> = Vec::with_capacity(files.len());
    for input in files {
        let mut source = None;
        let format = match (&input, forced) {
            (_, Some(f)) => Some(f),
            (Input::Stdin, None) => Some(Format::Events),
            (Input::File(p), None) => {
                let (found, pipe) = inputs::sniff(p)?;
                source = pipe;
                match found {
                    inputs::Sniffed::Format(f) => Some(f),
                    inputs::Sniffed::Blank => Some(Format::Events),
                    inputs::Sniffed::Unknown => None,
                }
            }
        };
        kept.push(source);
        if let (Input::Stdin, Some(f)) = (&input, format) {
            if !f.is_line_based() {
                bail!(
                    "standard input can carry a line-based format, not {}",
                    f.describe()
                );
            }
        }
        sources.push((input, format));
    }
    let all_events = sources.iter().all(|(_, f)| *f == Some(Format::Events));
    // A single event stream without extras keeps the events.md contract exactly, with the
    // streaming replay of the contract (every line must be a valid event).
    if sources.len() == 1 && all_events && args.html.is_none() {
        let mode = match args.mode {
            Some(ModeArg::Observe) => Mode::Observe,
            _ => Mode::Enforce,
        };
        return replay_event_stream(
            &sources[0].0,
            kept.remove(0),
            config,
            mode,
            args.json,
            style,
        );
    }
    // Transcripts record what happened, so nothing was blocked: observe by default. Event
    // streams keep their contract's default, enforce.
    let mode = match args.mode {
        Some(ModeArg::Enforce) => Mode::Enforce,
        Some(ModeArg::Observe) => Mode::Observe,
        None if all_events => Mode::Enforce,
        None => Mode::Observe,
    };
    // OpenClaw ships with the rolling detectors off; someone replaying transcripts to find
    // loops wants them on. An explicit --config is used as it is, with a notice when it
    // leaves them off (the report would otherwise be silently empty).
    let config = match &args.config {
        None if !all_events => {
            eprintln!(
                "loopguard: no --config given: replaying with loop detection enabled and OpenClaw's default thresholds"
            );
            OpenClawConfig {
                loop_detection: Some(loopguard_core::LoopDetectionConfig {
                    enabled: Some(true),
                    ..Default::default()
                }),
                agents: Vec::new(),
                loopguard: config.loopguard.clone(),
            }
        }
        Some(path) if !all_events && !config.policy_for(None).resolved.enabled => {
            eprintln!(
                "loopguard: {} does not set tools.loopDetection.enabled: true, so only the post-compaction guard runs (as in OpenClaw); leave out --config to replay with the detectors on",
                path.display()
            );
            config
        }
        _ => config,
    };
    replay_transcripts(&sources, kept, config, mode, &args, style)
}

fn replay_event_stream(
    input: &Input,
    kept: Option<reader::Source>,
    config: OpenClawConfig,
    mode: Mode,
    json: bool,
    style: Style,
) -> Result<ExitCode> {
    let mut replayer = Replayer::new(config, mode);
    let output = if json {
        Output::Json
    } else {
        Output::SummaryOnly
    };
    let stdout = io::stdout();
    let (name, result) = match input {
        Input::Stdin => (
            "-".to_string(),
            replay(io::stdin().lock(), stdout.lock(), &mut replayer, output),
        ),
        Input::File(path) => {
            let name = path.display().to_string();
            let input: Box<dyn io::BufRead> = match kept {
                Some(source) => source.into_reader(),
                None => {
                    let file = File::open(path).with_context(|| format!("cannot open {name}"))?;
                    Box::new(BufReader::with_capacity(1 << 20, file))
                }
            };
            let r = replay(input, stdout.lock(), &mut replayer, output);
            (name, r)
        }
    };
    match result {
        Ok(summary) => {
            if !json {
                write_stdout(&summary.render_styled(mode_name(mode), style))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(ReplayError::Event(e)) => {
            eprintln!("error: {name}: {e}");
            Ok(ExitCode::FAILURE)
        }
        Err(ReplayError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(ReplayError::Io(e)) => Err(e).with_context(|| format!("while replaying {name}")),
    }
}

fn write_stdout(text: &str) -> Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// How many diagnostics of one file are printed before they are only counted.
const SHOWN_DIAGNOSTICS: usize = 10;

fn replay_transcripts(
    sources: &[(Input, Option<Format>)],
    mut kept: Vec<Option<reader::Source>>,
    config: OpenClawConfig,
    mode: Mode,
    args: &ReplayArgs,
    style: Style,
) -> Result<ExitCode> {
    let several = sources.len() > 1;
    let paths: Vec<&Path> = sources
        .iter()
        .map(|(input, _)| match input {
            Input::File(p) => p.as_path(),
            Input::Stdin => Path::new("stdin"),
        })
        .collect();
    let names = inputs::session_names(&paths);
    let mut replayer = Replayer::new(config, mode);
    let mut summary = Summary::default();
    let mut timeline = args.html.as_ref().map(|_| Timeline::default());
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut json = Vec::with_capacity(1024);
    let progress = inputs::progress(sources.len() as u64);
    let opts = ReadOptions {
        active_branch: args.active_branch,
    };
    let forced = args.format != "auto";
    let mut skipped_files = 0usize;

    for ((((input, format), path), session), kept) in
        sources.iter().zip(&paths).zip(&names).zip(kept.iter_mut())
    {
        let shown_path = match input {
            Input::File(p) => p.display().to_string(),
            Input::Stdin => "-".to_string(),
        };
        progress.set_message(shown_path.clone());
        let format = match format {
            Some(f) => *f,
            None if several => {
                progress.suspend(|| {
                    eprintln!(
                        "{shown_path}: skipped: not a transcript format loopguard knows (use --format to choose one)"
                    )
                });
                skipped_files += 1;
                progress.inc(1);
                continue;
            }
            None => bail!(
                "{shown_path}: cannot tell which format this is. Choose one with --format NAME:\n{}",
                inputs::format_list()
            ),
        };
        if !forced && format != Format::Events {
            progress.suspend(|| {
                eprintln!(
                    "{shown_path}: reading as {} ({})",
                    format.name(),
                    format.describe()
                )
            });
        }
        // Event streams name their sessions themselves (`default` when they do not), as
        // events.md fixes; transcripts are named after their files.
        let ctx = Context {
            session: session.clone(),
            agent: reader::agent_from_path(path),
        };
        let events = format == Format::Events;
        // Replay a transcript through the tool profile of the runtime that wrote it, so it
        // finds exactly what that runtime's live guard finds (Claude Code: the hook).
        replayer.set_profile(match format {
            Format::ClaudeCode => loopguard_guard::Profile::ClaudeCode,
            _ => loopguard_guard::Profile::Plain,
        });
        let mut shown = 0usize;
        let mut unanswered = 0usize;
        let mut orphans = 0usize;
        let mut fatal: Option<Diagnostic> = None;
        let mut write_error: Option<io::Error> = None;
        // Sessions of this file whose source is already set: the last one seen is
        // remembered, so a file of one session costs one comparison per event.
        let mut last_session: Option<Vec<u8>> = None;
        let mut seen_sessions: std::collections::HashSet<Vec<u8>> = Default::default();
        let mut sink = |item: Item| match item {
            Item::Event(sourced) => {
                let d = replayer.process(&sourced.event, sourced.line);
                let key = d.session.as_wtf8();
                if last_session.as_deref() != Some(key) {
                    if seen_sessions.insert(key.to_vec()) {
                        summary.set_source(key, &shown_path);
                    }
                    last_session = Some(key.to_vec());
                }
                let preview = d
                    .finding
                    .as_ref()
                    .map(|_| inputs::args_preview(&sourced.event.args));
                let ts = Some(sourced.event.timestamp_ms).filter(|t| *t > 0);
                summary.observe_with(
                    &d,
                    EventMeta {
                        ts_ms: ts,
                        tokens: sourced.tokens,
                        args_preview: preview.as_deref(),
                    },
                );
                if let Some(t) = timeline.as_mut() {
                    t.observe(&d, ts);
                }
                if args.json {
                    json.clear();
                    d.write_json(&mut json);
                    if let Err(e) = out.write_all(&json) {
                        write_error = Some(e);
                        return Flow::Stop;
                    }
                }
                Flow::Continue
            }
            Item::Diagnostic(diag) => {
                // An event stream is a contract: a bad line is an error, not noise.
                if (events || args.strict) && diag.kind.is_malformed() {
                    fatal = Some(diag);
                    return Flow::Stop;
                }
                match diag.kind {
                    loopguard_adapters::DiagnosticKind::Unanswered => unanswered += 1,
                    loopguard_adapters::DiagnosticKind::Orphan => orphans += 1,
                    loopguard_adapters::DiagnosticKind::JoinedLine
                    | loopguard_adapters::DiagnosticKind::NoCalls => {
                        progress.suspend(|| {
                            eprintln!("{shown_path}:{}: note: {}", diag.line, diag.message)
                        });
                    }
                    _ => {
                        if shown < SHOWN_DIAGNOSTICS {
                            progress.suspend(|| {
                                eprintln!("{shown_path}:{}: skipped: {}", diag.line, diag.message)
                            });
                        }
                        shown += 1;
                    }
                }
                Flow::Continue
            }
        };
        let result = match input {
            Input::File(p) => match kept.take() {
                Some(source) => source.read(format, &ctx, &opts, &mut sink),
                None => reader::read_file(p, format, &ctx, &opts, &mut sink),
            },
            Input::Stdin => reader::read_stream(io::stdin().lock(), format, &ctx, &opts, &mut sink),
        };
        match result {
            Ok(_) => {}
            Err(ReadError::Stopped) => {
                if let Some(e) = write_error {
                    if e.kind() == io::ErrorKind::BrokenPipe {
                        return Ok(ExitCode::SUCCESS);
                    }
                    return Err(e.into());
                }
                if let Some(d) = fatal {
                    progress.finish_and_clear();
                    let _ = out.flush();
                    let why = if events {
                        "every line of an event stream must be a valid event"
                    } else {
                        "--strict stops at malformed lines"
                    };
                    eprintln!("error: {shown_path}:{}: {} ({why})", d.line, d.message);
                    return Ok(ExitCode::FAILURE);
                }
            }
            Err(e) if several => {
                progress.suspend(|| eprintln!("{shown_path}: skipped: {e}"));
                skipped_files += 1;
            }
            Err(e) => return Err(e.into()),
        }
        if shown > SHOWN_DIAGNOSTICS {
            progress.suspend(|| {
                eprintln!(
                    "{shown_path}: … {} more lines skipped",
                    shown - SHOWN_DIAGNOSTICS
                )
            });
        }
        if unanswered + orphans > 0 {
            let mut parts = Vec::new();
            if unanswered > 0 {
                parts.push(match unanswered {
                    1 => "1 call never got a result (replayed without an outcome)".to_string(),
                    n => format!("{n} calls never got a result (replayed without an outcome)"),
                });
            }
            if orphans > 0 {
                parts.push(match orphans {
                    1 => "1 result had no call (not replayed)".to_string(),
                    n => format!("{n} results had no call (not replayed)"),
                });
            }
            progress.suspend(|| eprintln!("{shown_path}: {}", parts.join(", ")));
        }
        progress.inc(1);
    }
    progress.finish_and_clear();
    if let Err(e) = out.flush() {
        if e.kind() != io::ErrorKind::BrokenPipe {
            return Err(e.into());
        }
    }
    drop(out);
    if !args.json {
        let mut text = summary.render_styled(mode_name(mode), style);
        if several {
            text.push('\n');
            text.push_str(&summary.render_table(style));
        }
        if skipped_files > 0 {
            text.push_str(&format!("\n{skipped_files} files skipped (see above)\n"));
        }
        write_stdout(&text)?;
    }
    if let (Some(path), Some(t)) = (&args.html, &timeline) {
        let page = t.render(&summary, mode_name(mode));
        std::fs::write(path, page).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
