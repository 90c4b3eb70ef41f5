//! Reading a transcript file of any format as a stream of events.
//!
//! Line-based formats are read a line at a time (memory does not grow with the file);
//! document formats are read whole; an SQLite store is read session by session. Problems
//! with single lines come out as [`Item::Diagnostic`]s: the caller skips them, or stops at
//! the first malformed one (`--strict`) by returning [`Flow::Stop`].

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::events::EventsAdapter;
use crate::{
    Context, Diagnostic, DiagnosticKind, DocumentAdapter, Format, LineAdapter, SourcedEvent,
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

/// The line adapter for a line-based format.
fn line_adapter(
    format: Format,
    ctx: &Context,
    path: &Path,
    opts: &ReadOptions,
) -> Result<Option<Box<dyn LineAdapter>>, ReadError> {
    Ok(Some(match format {
        // Event streams name their own sessions (`"default"` when they do not).
        Format::Events => Box::new(EventsAdapter::default()),
        Format::OpenClaw => {
            let adapter = crate::openclaw::OpenClawAdapter::new(ctx.clone());
            if opts.active_branch {
                // A first pass finds the leaf and walks its parents.
                let file = File::open(path).map_err(io_err(path))?;
                let ids = crate::openclaw::active_branch_ids(BufReader::new(file))
                    .map_err(io_err(path))?;
                Box::new(adapter.with_active_branch(ids))
            } else {
                Box::new(adapter)
            }
        }
        Format::ClaudeCode => Box::new(crate::claude_code::ClaudeCodeAdapter::new(ctx.clone())),
        Format::CodexRollout => Box::new(crate::responses::CodexRolloutAdapter::new(ctx.clone())),
        _ => return Ok(None),
    }))
}

/// The document adapter for a whole-document format.
fn document_adapter(format: Format) -> Option<Box<dyn DocumentAdapter>> {
    Some(match format {
        Format::CallStream => Box::new(crate::call_stream::CallStream),
        Format::ChatCompletions => Box::new(crate::chat_completions::ChatCompletions),
        Format::Responses => Box::new(crate::responses::Responses),
        Format::SweAgent => Box::new(crate::swe_agent::SweAgent),
        Format::MiniSweAgent => Box::new(crate::swe_agent::MiniSweAgent),
        _ => return None,
    })
}

/// Reads `path` as `format`, handing every item to `sink`. Returns the number of lines
/// (or records) read.
pub fn read_file(
    path: &Path,
    format: Format,
    ctx: &Context,
    opts: &ReadOptions,
    sink: &mut dyn FnMut(Item) -> Flow,
) -> Result<u64, ReadError> {
    if format == Format::OpenClawSqlite {
        return read_sqlite(path, ctx, sink);
    }
    if let Some(adapter) = line_adapter(format, ctx, path, opts)? {
        let file = File::open(path).map_err(io_err(path))?;
        return read_lines(BufReader::with_capacity(1 << 20, file), adapter, sink).map_err(|e| {
            match e {
                LinesError::Io(source) => ReadError::Io {
                    path: path.to_path_buf(),
                    source,
                },
                LinesError::Stopped => ReadError::Stopped,
            }
        });
    }
    let Some(adapter) = document_adapter(format) else {
        return Err(ReadError::Unsupported {
            path: path.to_path_buf(),
            format,
        });
    };
    let mut doc = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut doc))
        .map_err(io_err(path))?;
    let adapted = adapter
        .adapt(&doc, ctx)
        .map_err(|diagnostic| ReadError::Document {
            path: path.to_path_buf(),
            diagnostic,
        })?;
    let records = adapted.events.len() as u64;
    for d in adapted.diagnostics {
        if sink(Item::Diagnostic(d)) == Flow::Stop {
            return Err(ReadError::Stopped);
        }
    }
    for e in adapted.events {
        if sink(Item::Event(e)) == Flow::Stop {
            return Err(ReadError::Stopped);
        }
    }
    Ok(records)
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
    let Some(adapter) = line_adapter(format, ctx, path, opts)? else {
        return Err(ReadError::Unsupported {
            path: path.to_path_buf(),
            format,
        });
    };
    read_lines(input, adapter, sink).map_err(|e| match e {
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

/// Feeds every line of `input` to `adapter`.
fn read_lines(
    mut input: impl BufRead,
    mut adapter: Box<dyn LineAdapter>,
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
        if let Err(mut d) = adapter.line(no, text, &mut out) {
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
