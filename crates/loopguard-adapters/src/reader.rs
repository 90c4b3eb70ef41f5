//! Reading a transcript file of any format as a stream of events.
//!
//! Line-based formats are read a line at a time (memory does not grow with the file);
//! document formats are read whole; an SQLite store is read session by session. Problems
//! with single lines come out as [`Item::Diagnostic`]s: the caller skips them, or stops at
//! the first malformed one (`--stop-on-bad-line`) by returning [`Flow::Stop`].

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::events::EventsAdapter;
use crate::{
    detect, Context, Diagnostic, DiagnosticKind, DocumentAdapter, Format, LineAdapter, SourcedEvent,
};

/// Something read from a transcript.
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // events are the common case; boxing them costs more
pub enum Item {
    /// An event to replay.
    Event(SourcedEvent),
    /// A line or record that was not used, and why.
    Diagnostic(Diagnostic),
}

/// What the consumer wants after an item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Keep reading.
    Continue,
    /// Stop now (the reader returns [`ReadError::Stopped`]).
    Stop,
}

/// How to read.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// OpenClaw: replay only the tree's active branch (leaf to root), not every entry.
    pub active_branch: bool,
}

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The file could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The consumer stopped the read.
    #[error("stopped")]
    Stopped,
    /// The whole document was unusable.
    #[error("{}: {diagnostic}", path.display())]
    Document {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        diagnostic: Diagnostic,
    },
    /// The SQLite store could not be read.
    #[error("{}: {message}", path.display())]
    Sqlite {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// This build cannot read the format.
    #[error("{}: reading {} files is not supported", path.display(), format.describe())]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// The format.
        format: Format,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> ReadError + '_ {
    move |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The line adapter for a line-based format. `first_pass` reads the input once more
/// (OpenClaw's active branch needs the whole tree before the first event).
fn line_adapter<'a>(
    format: Format,
    ctx: &Context,
    path: &Path,
    opts: &ReadOptions,
    first_pass: Option<&mut dyn FnMut() -> io::Result<Box<dyn BufRead + 'a>>>,
) -> Result<Option<Box<dyn LineAdapter>>, ReadError> {
    Ok(Some(match format {
        // Event streams name their own sessions (`"default"` when they do not).
        Format::Events => Box::new(EventsAdapter::default()),
        Format::OpenClaw => {
            let adapter = crate::openclaw::OpenClawAdapter::new(ctx.clone());
            match (opts.active_branch, first_pass) {
                (true, Some(open)) => {
                    // A first pass finds the leaf and walks its parents.
                    let input = open().map_err(io_err(path))?;
                    let ids = crate::openclaw::active_branch_ids(input).map_err(io_err(path))?;
                    Box::new(adapter.with_active_branch(ids))
                }
                (true, None) => return Err(ReadError::Io {
                    path: path.to_path_buf(),
                    source: io::Error::other(
                        "--active-branch needs to read the input twice; standard input cannot be",
                    ),
                }),
                (false, _) => Box::new(adapter),
            }
        }
        Format::ClaudeCode => Box::new(crate::claude_code::ClaudeCodeAdapter::new(ctx.clone())),
        Format::CodexRollout => Box::new(crate::responses::CodexRolloutAdapter::new(ctx.clone())),
        Format::OpenHandsEvents => {
            Box::new(crate::openhands::OpenHandsEventsAdapter::new(ctx.clone()))
        }
        Format::OpenHandsEval => Box::new(crate::openhands::OpenHandsEvalAdapter::new(ctx.clone())),
        Format::Gemini => {
            Box::new(crate::gemini_chat::GeminiChatAdapter::new(ctx.clone()).in_file(path))
        }
        Format::Qwen => Box::new(crate::qwen::QwenAdapter::new(ctx.clone())),
        Format::Copilot => Box::new(crate::copilot_session::CopilotSessionAdapter::new(
            ctx.clone(),
        )),
        Format::Factory => Box::new(crate::factory::FactoryAdapter::new(ctx.clone())),
        _ => return Ok(None),
    }))
}

/// The document adapter for a whole-document format.
fn document_adapter(format: Format) -> Option<Box<dyn DocumentAdapter>> {
    Some(match format {
        Format::CallStream => Box::new(crate::call_stream::CallStream),
        Format::Cline => Box::new(crate::cline::ClineHistory),
        Format::ChatCompletions => Box::new(crate::chat_completions::ChatCompletions),
        Format::Responses => Box::new(crate::responses::Responses),
        Format::SweAgent => Box::new(crate::swe_agent::SweAgent),
        Format::MiniSweAgent => Box::new(crate::swe_agent::MiniSweAgent),
        Format::OpenHands => Box::new(crate::openhands::OpenHands),
        Format::Anthropic => Box::new(crate::anthropic::AnthropicMessages),
        Format::ChatLog => Box::new(crate::chat_log::ChatLog),
        Format::Otlp => Box::new(crate::otlp::OtlpJson),
        Format::Langfuse => Box::new(crate::langfuse::Langfuse),
        Format::LangSmith => Box::new(crate::langsmith::LangSmith),
        Format::Atif => Box::new(crate::atif::Atif),
        Format::OpenAiAgents => Box::new(crate::openai_agents::OpenAiAgents),
        Format::ManagedAgents => Box::new(crate::managed_agents::ManagedAgents),
        Format::GeminiJson => Box::new(crate::gemini_chat::GeminiChatFile),
        _ => return None,
    })
}

/// Reads `path` as `format`, handing every item to `sink`. Returns the number of lines
/// (or records) read. Pipes, FIFOs and `/dev/fd/N` work too (see [`Source`]).
///
/// Besides the diagnostics of single lines, two notes come out as
/// [`Item::Diagnostic`]s: [`DiagnosticKind::JoinedLine`] (a line held several JSON values,
/// each was read) and, at the end, [`DiagnosticKind::NoCalls`] (line 0) when a transcript
/// with content gave no call at all, so the caller can say that the format was probably
/// the wrong one.
pub fn read_file(
    path: &Path,
    format: Format,
    ctx: &Context,
    opts: &ReadOptions,
    sink: &mut dyn FnMut(Item) -> Flow,
) -> Result<u64, ReadError> {
    Source::open(path)?.read(format, ctx, opts, sink)
}

/// How much of an input [`Source::detect`] reads before it decides a line-based format:
/// the first 64 KiB, or to the end of the first line when that is longer (at most 16 MiB).
const SNIFF_CHUNK: usize = 1 << 16;
const SNIFF_LIMIT: usize = 16 << 20;

/// What [`Source::detect`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Detected {
    /// A known format.
    Format(Format),
    /// The input is empty or holds only whitespace.
    Blank,
    /// Not a format loopguard knows.
    Unknown,
}

/// An input being read: a file, a pipe or a FIFO. Detection reads a prefix of it and keeps
/// what it read, so reading afterwards starts at the first byte, also when the input cannot
/// be read twice (`loopguard replay <(cat x.jsonl)`, a FIFO, `/dev/fd/N`, standard input).
///
/// ```
/// use loopguard_adapters::reader::{Detected, Flow, Item, ReadOptions, Source};
/// use loopguard_adapters::{Context, Format};
/// let text = b"{\"type\":\"call\",\"tool\":\"read\"}\n".to_vec();
/// let mut source = Source::from_reader("pipe", std::io::Cursor::new(text));
/// assert_eq!(source.detect()?, Detected::Format(Format::Events));
/// let mut events = 0;
/// source.read(Format::Events, &Context::default(), &ReadOptions::default(), &mut |i| {
///     if matches!(i, Item::Event(_)) { events += 1; }
///     Flow::Continue
/// })?;
/// assert_eq!(events, 1); // detection consumed nothing
/// # Ok::<(), loopguard_adapters::reader::ReadError>(())
/// ```
pub struct Source {
    path: PathBuf,
    /// A regular file: it can be opened again (SQLite, a second pass).
    regular: bool,
    /// What was read so far.
    head: Vec<u8>,
    /// The rest of the input; `None` once it is all in `head`.
    rest: Option<Box<dyn Read + Send>>,
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source")
            .field("path", &self.path)
            .field("regular", &self.regular)
            .field("buffered", &self.head.len())
            .finish()
    }
}

impl Source {
    /// Opens `path` (a regular file, a FIFO, `/dev/fd/N`, …).
    pub fn open(path: &Path) -> Result<Source, ReadError> {
        let file = File::open(path).map_err(io_err(path))?;
        let regular = file.metadata().map(|m| m.is_file()).unwrap_or(false);
        Ok(Source {
            path: path.to_path_buf(),
            regular,
            head: Vec::new(),
            rest: Some(Box::new(file)),
        })
    }

    /// A source reading from `reader` (standard input, say), named `name` in messages.
    pub fn from_reader(name: impl Into<PathBuf>, reader: impl Read + Send + 'static) -> Source {
        Source {
            path: name.into(),
            regular: false,
            head: Vec::new(),
            rest: Some(Box::new(reader)),
        }
    }

    /// The path (or name) of the input.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `true` when the input is a regular file, which can be opened again.
    pub fn is_regular_file(&self) -> bool {
        self.regular
    }

    /// Reads up to `n` more bytes into the buffer; `false` at the end of the input.
    fn fill(&mut self, n: usize) -> io::Result<bool> {
        let Some(rest) = self.rest.as_mut() else {
            return Ok(false);
        };
        let before = self.head.len();
        rest.take(n as u64).read_to_end(&mut self.head)?;
        if self.head.len() - before < n {
            self.rest = None;
            return Ok(false);
        }
        Ok(true)
    }

    /// Recognises the format from the structure of the input, however large: line-based
    /// formats from their first lines, whole documents from their parsed top level (a
    /// pretty-printed SWE-agent `.traj` whose `environment` key comes last, a mini-swe-agent
    /// file whose `trajectory_format` comes last). What is read is kept for [`Source::read`].
    pub fn detect(&mut self) -> Result<Detected, ReadError> {
        let path = self.path.clone();
        let err = |source| ReadError::Io {
            path: path.clone(),
            source,
        };
        // The first 64 KiB, or up to the end of the first line (at most 16 MiB).
        let mut more = self.fill(SNIFF_CHUNK).map_err(err)?;
        while more && !self.head.contains(&b'\n') && self.head.len() < SNIFF_LIMIT {
            more = self
                .fill(self.head.len().min(SNIFF_LIMIT - self.head.len()))
                .map_err(err)?;
        }
        if self.head.iter().all(u8::is_ascii_whitespace) && !more {
            return Ok(Detected::Blank);
        }
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // An SQLite database: its tables decide (opencode's `session`, `message`, `part`,
        // else OpenClaw's store).
        if self.head.starts_with(b"SQLite format 3\0")
            && self.regular
            && crate::opencode::is_opencode_db(&self.path)
        {
            return Ok(Detected::Format(Format::Opencode));
        }
        if self.head.starts_with(b"SQLite format 3\0") || first_line_is_a_value(&self.head) {
            return Ok(detect(&name, &self.head).map_or(Detected::Unknown, Detected::Format));
        }
        // A document spanning lines: its structure decides, so it is read whole (the
        // document adapters read it whole anyway; it is kept for them).
        let text = self.head.trim_ascii_start();
        if matches!(text.first(), Some(b'{' | b'[')) {
            while self.fill(1 << 20).map_err(err)? {}
        }
        Ok(detect(&name, &self.head).map_or(Detected::Unknown, Detected::Format))
    }

    /// The whole input from its first byte, as a buffered reader.
    pub fn into_reader(self) -> Box<dyn BufRead + Send> {
        let head = io::Cursor::new(self.head);
        match self.rest {
            Some(rest) => Box::new(BufReader::with_capacity(1 << 20, head.chain(rest))),
            None => Box::new(head),
        }
    }

    /// Reads the input as `format`, handing every item to `sink` (see [`read_file`]).
    pub fn read(
        mut self,
        format: Format,
        ctx: &Context,
        opts: &ReadOptions,
        sink: &mut dyn FnMut(Item) -> Flow,
    ) -> Result<u64, ReadError> {
        let path = self.path.clone();
        if format == Format::OpencodeStorage {
            if !self.regular {
                return Err(ReadError::Sqlite {
                    path,
                    message: "an opencode session file must be a regular file in its storage folder, not a pipe".into(),
                });
            }
            return read_opencode_storage(&path, ctx, sink);
        }
        if matches!(format, Format::OpenClawSqlite | Format::Opencode) {
            if !self.regular {
                return Err(ReadError::Sqlite {
                    path,
                    message: "an SQLite store must be a regular file, not a pipe".into(),
                });
            }
            if format == Format::Opencode {
                return read_opencode(&path, ctx, sink);
            }
            return read_sqlite(&path, ctx, sink);
        }
        let mut calls = 0u64;
        let mut counting = |item: Item| {
            if let Item::Event(e) = &item {
                calls += u64::from(e.event.kind == loopguard_events::EventKind::Call);
            }
            sink(item)
        };
        if format.is_line_based() {
            // The active branch needs a first pass: a regular file is opened again; any
            // other input is kept in memory.
            let twice = opts.active_branch && format == Format::OpenClaw;
            if twice && !self.regular {
                while self.fill(1 << 20).map_err(io_err(&path))? {}
            }
            let regular = self.regular;
            let head = &self.head;
            let mut open = || -> io::Result<Box<dyn BufRead + '_>> {
                if regular {
                    Ok(Box::new(BufReader::new(File::open(&path)?)))
                } else {
                    Ok(Box::new(&head[..]))
                }
            };
            let adapter = line_adapter(format, ctx, &path, opts, Some(&mut open))?.ok_or(
                ReadError::Unsupported {
                    path: path.clone(),
                    format,
                },
            )?;
            let lines = read_lines(
                self.into_reader(),
                adapter,
                format != Format::Events,
                &mut counting,
            )
            .map_err(|e| match e {
                LinesError::Io(source) => ReadError::Io {
                    path: path.clone(),
                    source,
                },
                LinesError::Stopped => ReadError::Stopped,
            })?;
            if calls == 0 && lines > 0 && format != Format::Events {
                no_calls(format, lines, sink)?;
            }
            return Ok(lines);
        }
        let Some(adapter) = document_adapter(format) else {
            return Err(ReadError::Unsupported { path, format });
        };
        while self.fill(1 << 20).map_err(io_err(&path))? {}
        let doc = std::mem::take(&mut self.head);
        let mut notes = Vec::new();
        let adapted = if format == Format::Cline && self.regular {
            // A task folder's panel log gives the calls their tokens and cost.
            let panel_path = path.with_file_name("ui_messages.json");
            let panel = match std::fs::read(&panel_path) {
                Ok(bytes) if panel_path != path => Some(bytes),
                Ok(_) => None,
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(e) => {
                    notes.push(Diagnostic::new(
                        0,
                        DiagnosticKind::Partial,
                        format!(
                            "{}: {e}; no call gets its tokens or cost from it",
                            panel_path.display()
                        ),
                    ));
                    None
                }
            };
            crate::cline::adapt_task(&doc, panel.as_deref(), ctx)
        } else {
            adapter.adapt(&doc, ctx)
        }
        .map_err(|diagnostic| ReadError::Document {
            path: path.clone(),
            diagnostic,
        })?;
        let records = adapted.events.len() as u64;
        for d in notes.into_iter().chain(adapted.diagnostics) {
            if counting(Item::Diagnostic(d)) == Flow::Stop {
                return Err(ReadError::Stopped);
            }
        }
        for e in adapted.events {
            if counting(Item::Event(e)) == Flow::Stop {
                return Err(ReadError::Stopped);
            }
        }
        if calls == 0 && !doc.trim_ascii().is_empty() {
            no_calls(format, records, sink)?;
        }
        Ok(records)
    }
}

/// The [`DiagnosticKind::NoCalls`] note.
fn no_calls(
    format: Format,
    read: u64,
    sink: &mut dyn FnMut(Item) -> Flow,
) -> Result<(), ReadError> {
    let d = Diagnostic::new(
        0,
        DiagnosticKind::NoCalls,
        format!(
            "no tool call found reading it as {} ({}; {read} lines or records read): probably not this format",
            format.name(),
            format.describe()
        ),
    );
    if sink(Item::Diagnostic(d)) == Flow::Stop {
        return Err(ReadError::Stopped);
    }
    Ok(())
}

/// `true` when the first non-blank line of `head` is a complete JSON value (JSON Lines, or
/// a whole document on one line).
fn first_line_is_a_value(head: &[u8]) -> bool {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    head.split(|b| *b == b'\n')
        .map(<[u8]>::trim_ascii)
        .find(|l| !l.is_empty())
        .is_some_and(|l| loopguard_core::json::parse(l).is_ok())
}

/// Reads a line-based format from any reader (standard input, say).
pub fn read_stream(
    input: impl BufRead,
    format: Format,
    ctx: &Context,
    opts: &ReadOptions,
    sink: &mut dyn FnMut(Item) -> Flow,
) -> Result<u64, ReadError> {
    let path = Path::new("-");
    let Some(adapter) = line_adapter(format, ctx, path, opts, None)? else {
        return Err(ReadError::Unsupported {
            path: path.to_path_buf(),
            format,
        });
    };
    read_lines(input, adapter, format != Format::Events, sink).map_err(|e| match e {
        LinesError::Io(source) => ReadError::Io {
            path: path.to_path_buf(),
            source,
        },
        LinesError::Stopped => ReadError::Stopped,
    })
}

enum LinesError {
    Io(io::Error),
    Stopped,
}

/// Feeds every line of `input` to `adapter`. With `split`, a line that is not JSON but
/// holds several JSON values one after the other (a lost newline) is read value by value,
/// with a [`DiagnosticKind::JoinedLine`] note.
fn read_lines(
    mut input: impl BufRead,
    mut adapter: Box<dyn LineAdapter>,
    split: bool,
    sink: &mut dyn FnMut(Item) -> Flow,
) -> Result<u64, LinesError> {
    let mut line = Vec::with_capacity(1 << 12);
    let mut out = Vec::new();
    let mut no = 0u64;
    loop {
        line.clear();
        let n = input.read_until(b'\n', &mut line).map_err(LinesError::Io)?;
        if n == 0 {
            break;
        }
        no += 1;
        let terminated = line.last() == Some(&b'\n');
        let mut text = &line[..];
        if no == 1 {
            text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
        }
        let text = trim_line(text);
        if text.is_empty() {
            continue;
        }
        let result = adapter.line(no, text, &mut out);
        // A line that is not JSON may be two values on one line (a lost newline): a failed
        // line changed nothing, so its values are fed one by one.
        let parts = match &result {
            Err(d) if split && d.kind == DiagnosticKind::NotJson => split_values(text),
            _ => None,
        };
        if let Some(parts) = parts {
            let note = Diagnostic::new(
                no,
                DiagnosticKind::JoinedLine,
                format!(
                    "{} JSON values on one line (a lost newline); each was read",
                    parts.len()
                ),
            );
            if sink(Item::Diagnostic(note)) == Flow::Stop {
                return Err(LinesError::Stopped);
            }
            for part in parts {
                if let Err(d) = adapter.line(no, part, &mut out) {
                    if sink(Item::Diagnostic(d)) == Flow::Stop {
                        return Err(LinesError::Stopped);
                    }
                }
                for e in out.drain(..) {
                    if sink(Item::Event(e)) == Flow::Stop {
                        return Err(LinesError::Stopped);
                    }
                }
            }
            continue;
        }
        if let Err(mut d) = result {
            if !terminated && d.kind == DiagnosticKind::NotJson {
                d.kind = DiagnosticKind::Truncated;
                d.message = format!("the last line is cut off ({})", d.message);
            }
            if sink(Item::Diagnostic(d)) == Flow::Stop {
                return Err(LinesError::Stopped);
            }
        }
        for e in out.drain(..) {
            if sink(Item::Event(e)) == Flow::Stop {
                return Err(LinesError::Stopped);
            }
        }
    }
    let diagnostics = adapter.finish(&mut out);
    for e in out.drain(..) {
        if sink(Item::Event(e)) == Flow::Stop {
            return Err(LinesError::Stopped);
        }
    }
    for d in diagnostics {
        if sink(Item::Diagnostic(d)) == Flow::Stop {
            return Err(LinesError::Stopped);
        }
    }
    Ok(no)
}

/// The JSON values of a line holding two or more of them back to back (`{…}{…}` or
/// `{…} {…}`), when every one parses; `None` otherwise.
fn split_values(text: &[u8]) -> Option<Vec<&[u8]>> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut start: Option<usize> = None;
    for (i, &b) in text.iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                if depth == 0 {
                    start = Some(i);
                }
                depth += 1;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    parts.push(&text[start.take()?..=i]);
                }
            }
            b' ' | b'\t' | b'\r' => {}
            _ if depth == 0 => return None,
            _ => {}
        }
    }
    if depth != 0
        || parts.len() < 2
        || parts
            .iter()
            .any(|p| loopguard_core::json::parse(p).is_err())
    {
        return None;
    }
    Some(parts)
}

/// Strips the line ending and surrounding JSON whitespace.
fn trim_line(mut t: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = t {
        if matches!(first, b' ' | b'\t' | b'\r' | b'\n') {
            t = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = t {
        if matches!(last, b' ' | b'\t' | b'\r' | b'\n') {
            t = rest;
        } else {
            break;
        }
    }
    t
}

/// Every session of an OpenClaw SQLite store, one after the other, streamed row by row.
/// Sessions are named by id; when `ctx` names a session (`loopguard convert --session
/// NAME`), by that name if the store holds one session, else `<name>/<id>`
/// ([`session_name`](crate::openclaw_sqlite::session_name)). A session that cannot be read
/// is a diagnostic (line 0) and the next one is read; only a store that cannot be read at
/// all is an error.
fn read_sqlite(
    path: &Path,
    ctx: &Context,
    sink: &mut dyn FnMut(Item) -> Flow,
) -> Result<u64, ReadError> {
    use crate::openclaw_sqlite::{read_session_with, session_ids, session_name};
    // `ReadError::Sqlite` names the file: the message must not name it again.
    let ids = session_ids(path).map_err(|e| ReadError::Sqlite {
        path: path.to_path_buf(),
        message: e.reason(),
    })?;
    let mut records = 0;
    for id in &ids {
        let session_ctx = Context {
            session: session_name(&ctx.session, id, ids.len()),
            agent: ctx.agent.clone(),
        };
        let mut stopped = false;
        let result = read_session_with(path, id, session_ctx, &mut |e| {
            records += 1;
            stopped = sink(Item::Event(e)) == Flow::Stop;
            !stopped
        });
        if stopped {
            return Err(ReadError::Stopped);
        }
        let diagnostics = result.unwrap_or_else(|e| {
            vec![Diagnostic::new(
                0,
                DiagnosticKind::BadField,
                format!("session {id} could not be read: {}", e.reason()),
            )]
        });
        for d in diagnostics {
            if sink(Item::Diagnostic(d)) == Flow::Stop {
                return Err(ReadError::Stopped);
            }
        }
    }
    Ok(records)
}

/// Every session of an opencode database, one after the other, part by part, named
/// `<name>/<session id>` (the session id alone when `ctx` names none). A session that
/// cannot be read is a diagnostic (line 0) and the next one is read.
fn read_opencode(
    path: &Path,
    ctx: &Context,
    sink: &mut dyn FnMut(Item) -> Flow,
) -> Result<u64, ReadError> {
    let ids = crate::opencode::session_ids(path).map_err(|message| ReadError::Sqlite {
        path: path.to_path_buf(),
        message,
    })?;
    let mut records = 0;
    for id in &ids {
        let session = match ctx.session.as_str() {
            "" => id.clone(),
            name => format!("{name}/{id}"),
        };
        let session_ctx = Context {
            session,
            agent: ctx.agent.clone(),
        };
        let mut stopped = false;
        let result = crate::opencode::read_session_with(path, id, session_ctx, &mut |e| {
            records += 1;
            stopped = sink(Item::Event(e)) == Flow::Stop;
            !stopped
        });
        if stopped {
            return Err(ReadError::Stopped);
        }
        let diagnostics = result.unwrap_or_else(|e| {
            vec![Diagnostic::new(
                0,
                DiagnosticKind::BadField,
                format!("session {id} could not be read: {e}"),
            )]
        });
        for d in diagnostics {
            if sink(Item::Diagnostic(d)) == Flow::Stop {
                return Err(ReadError::Stopped);
            }
        }
    }
    Ok(records)
}

/// One session of opencode's older JSON storage, from its session file, part by part, named
/// as `ctx` names it (the session id when it names none). A message or part file that
/// cannot be read is a diagnostic naming it; a session file outside the storage layout is
/// an error.
fn read_opencode_storage(
    path: &Path,
    ctx: &Context,
    sink: &mut dyn FnMut(Item) -> Flow,
) -> Result<u64, ReadError> {
    let fail = |message| ReadError::Sqlite {
        path: path.to_path_buf(),
        message,
    };
    let (id, _) = crate::opencode::storage_session(path).map_err(fail)?;
    let session_ctx = Context {
        session: if ctx.session.is_empty() {
            id
        } else {
            ctx.session.clone()
        },
        agent: ctx.agent.clone(),
    };
    let mut records = 0;
    let mut stopped = false;
    let diagnostics = crate::opencode::read_storage_session_with(path, session_ctx, &mut |e| {
        records += 1;
        stopped = sink(Item::Event(e)) == Flow::Stop;
        !stopped
    })
    .map_err(fail)?;
    if stopped {
        return Err(ReadError::Stopped);
    }
    for d in diagnostics {
        if sink(Item::Diagnostic(d)) == Flow::Stop {
            return Err(ReadError::Stopped);
        }
    }
    Ok(records)
}

/// The agent id of an OpenClaw session file, from its path
/// (`…/agents/<agentId>/sessions/<file>`).
///
/// ```
/// use loopguard_adapters::reader::agent_from_path;
/// use std::path::Path;
/// assert_eq!(agent_from_path(Path::new("/h/.openclaw/agents/main/sessions/x.jsonl")).as_deref(), Some("main"));
/// assert_eq!(agent_from_path(Path::new("/tmp/x.jsonl")), None);
/// ```
pub fn agent_from_path(path: &Path) -> Option<String> {
    let parts: Vec<_> = path
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts
        .windows(3)
        .rev()
        .find(|w| w[0] == "agents" && (w[2] == "sessions" || w[2] == "agent"))
        .map(|w| w[1].clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_files_stream_with_diagnostics_and_truncation() {
        let dir = std::env::temp_dir().join(format!("lg-reader-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("e.jsonl");
        std::fs::write(
            &path,
            "{\"type\":\"call\",\"tool\":\"read\"}\n\nnot json\n{\"type\":\"call\",\"tool\":\"re",
        )
        .unwrap();
        let ctx = Context {
            session: "s".into(),
            agent: None,
        };
        let mut items = Vec::new();
        let n = read_file(
            &path,
            Format::Events,
            &ctx,
            &ReadOptions::default(),
            &mut |i| {
                items.push(i);
                Flow::Continue
            },
        )
        .unwrap();
        assert_eq!(n, 4);
        assert_eq!(items.len(), 3);
        assert!(matches!(&items[0], Item::Event(e) if e.line == 1 && e.event.session.is_none()));
        assert!(
            matches!(&items[1], Item::Diagnostic(d) if d.line == 3 && d.kind == DiagnosticKind::NotJson)
        );
        assert!(
            matches!(&items[2], Item::Diagnostic(d) if d.line == 4 && d.kind == DiagnosticKind::Truncated)
        );
        // Stopping at the first diagnostic.
        let r = read_file(
            &path,
            Format::Events,
            &ctx,
            &ReadOptions::default(),
            &mut |i| match i {
                Item::Diagnostic(_) => Flow::Stop,
                _ => Flow::Continue,
            },
        );
        assert!(matches!(r, Err(ReadError::Stopped)));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
