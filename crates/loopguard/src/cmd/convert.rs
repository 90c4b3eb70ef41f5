//! `loopguard convert`: write a transcript as loopguard's event stream, so any format can be
//! inspected, edited and replayed.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use loopguard_adapters::reader::{self, Flow, Item, ReadError, ReadOptions};
use loopguard_adapters::{Context, Diagnostic, Format};

use loopguard_replay::inputs::session_names;
use loopguard_replay::plan::{format_list, sniff, Sniffed};
use loopguard_replay::{diagnostic_line, reading_as, stopped_line};

use crate::cmd::replay::{format_parser, FormatArg};

/// Arguments of `loopguard convert`.
#[derive(clap::Args)]
pub struct ConvertArgs {
    /// The input format, or `auto` to recognise it from the content.
    #[arg(long, default_value = "auto", value_name = "FORMAT", value_parser = format_parser())]
    format: FormatArg,
    /// Stop at the first malformed line instead of skipping it.
    #[arg(long)]
    stop_on_bad_line: bool,
    /// OpenClaw transcripts: only the tree's active branch.
    #[arg(long)]
    active_branch: bool,
    /// Session name for the events (default: the file name). For an OpenClaw SQLite store:
    /// the stored session to convert (default: all of them, named `<file>/<id>`).
    #[arg(long, value_name = "NAME")]
    session: Option<String>,
    /// The transcript.
    #[arg(value_name = "FILE")]
    input: PathBuf,
}

/// Runs `loopguard convert`.
pub fn run(args: ConvertArgs) -> Result<ExitCode> {
    let path = &args.input;
    if !path.exists() {
        bail!("{}: no such file", path.display());
    }
    // A pipe (`/dev/fd/N`) is read once: the source detection read from is kept.
    let mut kept = None;
    let format = match args.format {
        FormatArg(Some(f)) => f,
        FormatArg(None) => match sniff(path)
            .map(|(found, pipe)| {
                kept = pipe;
                found
            })
            .map_err(|e| anyhow::anyhow!("{e}"))?
        {
            Sniffed::Format(f) => {
                errln!("{}", reading_as(&path.display().to_string(), f))?;
                f
            }
            Sniffed::Blank => bail!("{}: the file is empty", path.display()),
            Sniffed::Unknown => bail!(
                "{}: cannot tell which format this is. Choose one with --format NAME:\n{}",
                path.display(),
                format_list()
            ),
        },
    };
    let session = args
        .session
        .clone()
        .unwrap_or_else(|| session_names(&[path.as_path()]).remove(0));
    let ctx = Context {
        session,
        agent: reader::agent_from_path(path),
    };
    if let (Format::OpenClawSqlite, Some(id)) = (format, &args.session) {
        return convert_sqlite_session(path, id, &ctx);
    }
    let display = path.display().to_string();
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut buf = Vec::with_capacity(1024);
    let mut fatal: Option<Diagnostic> = None;
    let mut write_error: Option<io::Error> = None;
    let opts = ReadOptions {
        active_branch: args.active_branch,
    };
    let mut sink = |item: Item| match item {
        Item::Event(e) => {
            buf.clear();
            e.event.write_json(&mut buf);
            if let Err(err) = out.write_all(&buf) {
                write_error = Some(err);
                return Flow::Stop;
            }
            Flow::Continue
        }
        Item::Diagnostic(d) => {
            if args.stop_on_bad_line && d.kind.is_malformed() {
                fatal = Some(d);
                return Flow::Stop;
            }
            if let Err(err) = errln!("{}", diagnostic_line(&display, &d)) {
                write_error = Some(err);
                return Flow::Stop;
            }
            Flow::Continue
        }
    };
    let result = match kept {
        Some(source) => source.read(format, &ctx, &opts, &mut sink),
        None => reader::read_file(path, format, &ctx, &opts, &mut sink),
    };
    let flushed = out.flush();
    match result {
        Ok(_) => {}
        Err(ReadError::Stopped) => {
            if let Some(d) = fatal {
                // Failing anyway: a closed stderr must not turn this into a quiet success.
                let _ = errln!("{}", stopped_line(&display, &d));
                return Ok(ExitCode::FAILURE);
            }
            if let Some(e) = write_error {
                return Err(e.into());
            }
        }
        Err(e) => return Err(e.into()),
    }
    flushed?;
    Ok(ExitCode::SUCCESS)
}

/// `convert --session ID` of an OpenClaw SQLite store: that stored session only.
fn convert_sqlite_session(path: &std::path::Path, id: &str, ctx: &Context) -> Result<ExitCode> {
    use loopguard_adapters::openclaw_sqlite::{read_session_with, session_ids};
    let ids =
        session_ids(path).map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.reason()))?;
    let Some(found) = ids.iter().find(|s| s.name() == id) else {
        let known: Vec<String> = ids.iter().map(|s| s.name()).collect();
        bail!(
            "{}: no session {id:?} in this store; it holds: {}",
            path.display(),
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        );
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut buf = Vec::with_capacity(1024);
    let mut write_error: Option<io::Error> = None;
    let diagnostics = read_session_with(path, found.clone(), ctx.clone(), &mut |e| {
        buf.clear();
        e.event.write_json(&mut buf);
        match out.write_all(&buf) {
            Ok(()) => true,
            Err(err) => {
                write_error = Some(err);
                false
            }
        }
    })
    .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.reason()))?;
    for d in diagnostics {
        errln!("{}:{id}:{}: skipped: {}", path.display(), d.line, d.message)?;
    }
    write_error.map_or_else(|| out.flush(), Err)?;
    Ok(ExitCode::SUCCESS)
}
