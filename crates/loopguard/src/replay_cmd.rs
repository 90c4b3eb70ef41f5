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
use loopguard_core::config::OpenClawConfig;
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
    /// Write one JSON decision per event instead of the report.
    #[arg(long)]
    json: bool,
    /// The input format, or `auto` to recognise it from the content. One of: auto, events,
    /// openclaw, openclaw-sqlite, call-stream, claude-code, chat-completions, responses,
    /// codex, swe-agent, mini-swe-agent.
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
    let config = match &args.config {
        Some(p) => load_config_for_run(p)?,
        None => OpenClawConfig::default(),
    };
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

    let files = inputs::expand(&args.inputs)?;
    // A single event stream (a file or standard input) keeps the events.md contract
    // exactly: every line must be a valid event.
    if files.len() == 1 && args.html.is_none() {
        let only = &files[0];
        let is_events = match (only, forced) {
            (Input::Stdin, None | Some(Format::Events)) => true,
            (Input::Stdin, Some(f)) => bail!(
                "standard input can only carry an event stream, not {}",
                f.describe()
            ),
            (Input::File(_), Some(f)) => f == Format::Events,
            (Input::File(p), None) => inputs::sniff(p)? == Some(Format::Events),
        };
        if is_events {
            let mode = match args.mode {
                Some(ModeArg::Observe) => Mode::Observe,
                _ => Mode::Enforce,
            };
            return replay_event_stream(only, config, mode, args.json, style);
        }
    }
    // Transcripts record what happened, so nothing was blocked: observe by default. Event
    // streams keep their contract's default, enforce.
    let all_events = files.iter().all(|f| match (f, forced) {
        (_, Some(format)) => format == Format::Events,
        (Input::Stdin, None) => true,
        (Input::File(p), None) => matches!(inputs::sniff(p), Ok(Some(Format::Events))),
    });
    let mode = match args.mode {
        Some(ModeArg::Enforce) => Mode::Enforce,
        Some(ModeArg::Observe) => Mode::Observe,
        None if all_events => Mode::Enforce,
        None => Mode::Observe,
    };
    // OpenClaw ships with the rolling detectors off; someone replaying transcripts to find
    // loops wants them on. An explicit --config is used as it is.
    let config = if args.config.is_none() && !all_events {
        eprintln!(
            "loopguard: no --config given: replaying with loop detection enabled and OpenClaw's default thresholds"
        );
        OpenClawConfig {
            loop_detection: Some(loopguard_core::LoopDetectionConfig {
                enabled: Some(true),
                ..Default::default()
            }),
            agents: Vec::new(),
        }
    } else {
        config
    };
    replay_transcripts(&files, forced, config, mode, &args, style)
}

fn replay_event_stream(
    input: &Input,
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
            let file = File::open(path).with_context(|| format!("cannot open {name}"))?;
            let r = replay(
                BufReader::with_capacity(1 << 20, file),
                stdout.lock(),
                &mut replayer,
                output,
            );
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
    files: &[Input],
    forced: Option<Format>,
    config: OpenClawConfig,
    mode: Mode,
    args: &ReplayArgs,
    style: Style,
) -> Result<ExitCode> {
    let paths: Vec<&Path> = files
        .iter()
        .map(|f| match f {
            Input::File(p) => Ok(p.as_path()),
            Input::Stdin => Err(anyhow::anyhow!(
                "`-` (standard input) cannot be mixed with other inputs"
            )),
        })
        .collect::<Result<_>>()?;
    let several = paths.len() > 1;
    let names = inputs::session_names(&paths);
    let mut replayer = Replayer::new(config, mode);
    let mut summary = Summary::default();
    let mut timeline = args.html.as_ref().map(|_| Timeline::default());
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut json = Vec::with_capacity(1024);
    let progress = inputs::progress(paths.len() as u64);
    let opts = ReadOptions {
        active_branch: args.active_branch,
    };
    let mut skipped_files = 0usize;

    for (path, session) in paths.iter().zip(&names) {
        progress.set_message(path.display().to_string());
        let format = match forced {
            Some(f) => f,
            None => match inputs::sniff(path)? {
                Some(f) => {
                    progress.suspend(|| {
                        eprintln!(
                            "{}: reading as {} ({})",
                            path.display(),
                            f.name(),
                            f.describe()
                        )
                    });
                    f
                }
                None if several => {
                    progress.suspend(|| {
                        eprintln!(
                            "{}: skipped: not a transcript format loopguard knows (use --format to choose one)",
                            path.display()
                        )
                    });
                    skipped_files += 1;
                    progress.inc(1);
                    continue;
                }
                None => bail!(
                    "{}: cannot tell which format this is. Choose one with --format NAME:\n{}",
                    path.display(),
                    inputs::format_list()
                ),
            },
        };
        let ctx = Context {
            session: session.clone(),
            agent: reader::agent_from_path(path),
        };
        let mut shown = 0usize;
        let mut unanswered = 0usize;
        let mut orphans = 0usize;
        let mut fatal: Option<Diagnostic> = None;
        let mut write_error: Option<io::Error> = None;
        let mut sources_set = Vec::<Vec<u8>>::new();
        let result = reader::read_file(path, format, &ctx, &opts, &mut |item| match item {
            Item::Event(sourced) => {
                let d = replayer.process(&sourced.event, sourced.line);
                let session_key = d.session.as_wtf8().to_vec();
                if !sources_set.contains(&session_key) {
                    summary.set_source(&session_key, &path.display().to_string());
                    sources_set.push(session_key);
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
                if args.strict && diag.kind.is_malformed() {
                    fatal = Some(diag);
                    return Flow::Stop;
                }
                match diag.kind {
                    loopguard_adapters::DiagnosticKind::Unanswered => unanswered += 1,
                    loopguard_adapters::DiagnosticKind::Orphan => orphans += 1,
                    _ => {
                        if shown < SHOWN_DIAGNOSTICS {
                            progress.suspend(|| {
                                eprintln!(
                                    "{}:{}: skipped: {}",
                                    path.display(),
                                    diag.line,
                                    diag.message
                                )
                            });
                        }
                        shown += 1;
                    }
                }
                Flow::Continue
            }
        });
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
                    eprintln!(
                        "error: {}:{}: {} (--strict stops at malformed lines)",
                        path.display(),
                        d.line,
                        d.message
                    );
                    return Ok(ExitCode::FAILURE);
                }
            }
            Err(e) if several => {
                progress.suspend(|| eprintln!("{}: skipped: {e}", path.display()));
                skipped_files += 1;
            }
            Err(e) => return Err(e.into()),
        }
        if shown > SHOWN_DIAGNOSTICS {
            progress.suspend(|| {
                eprintln!(
                    "{}: … {} more lines skipped",
                    path.display(),
                    shown - SHOWN_DIAGNOSTICS
                )
            });
        }
        if unanswered + orphans > 0 {
            let mut parts = Vec::new();
            if unanswered > 0 {
                parts.push(match unanswered {
                    1 => "1 call never got a result".to_string(),
                    n => format!("{n} calls never got a result"),
                });
            }
            if orphans > 0 {
                parts.push(match orphans {
                    1 => "1 result had no call".to_string(),
                    n => format!("{n} results had no call"),
                });
            }
            progress
                .suspend(|| eprintln!("{}: {} (not replayed)", path.display(), parts.join(", ")));
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
