//! Parsing and hashing an event stream on a second thread, ahead of the engine.
//!
//! A reader thread splits the input into lines, parses each, and does there everything
//! about an event that does not depend on the sessions: the argument digest, the outcome
//! hash and the known-poll check ([`Prehasher`]). What crosses to the engine's thread is a
//! batch of lines: their bytes, the events' small envelope strings (session, run, agent,
//! call id, tool) copied into one buffer, and per event its hashes. Nothing is allocated
//! per event and nothing the reader allocated is freed on the engine's thread; the engine
//! only applies the hashes to its sessions. A line whose values the engine does need (a
//! compaction, a replayer or policy that needs them, a finding whose arguments the summary
//! keeps) is parsed again there from the batch's copy.
//!
//! Batches go back to the reader once applied, so their buffers are reused. At most
//! [`DEPTH`] batches wait in between, each of at most [`BATCH_EVENTS`] events or about
//! [`BATCH_BYTES`] of input, so memory stays bounded whatever the input's length.
//!
//! The decisions, their order, the first bad line and the error an unreadable input gives
//! are the same as reading line by line on one thread ([`for_each_event`] has both).

use std::io::{self, BufRead};
use std::ops::Range;
use std::sync::mpsc;

use loopguard_core::{JsString, Shape};
use loopguard_events::{parse_event, Event, EventError, EventKind};
use loopguard_guard::Prehashed;

use crate::replayer::Prehasher;

/// Batches waiting between the reader and the engine.
pub(crate) const DEPTH: usize = 4;
/// Events per batch, at most.
pub(crate) const BATCH_EVENTS: usize = 512;
/// Input bytes per batch, about (a batch closes once it holds this much).
pub(crate) const BATCH_BYTES: usize = 256 << 10;
/// The reader's stack: as deep a value as the engine's thread accepts must parse there too.
const READER_STACK: usize = 16 << 20;

/// The envelope strings of an event, in this order, as ranges of [`Batch::strings`].
const SESSION: usize = 0;
const RUN: usize = 1;
const AGENT: usize = 2;
const CALL_ID: usize = 3;
const TOOL: usize = 4;

/// An event the reader parsed and hashed.
struct Ready {
    number: u64,
    /// The line, in [`Batch::text`].
    line: Range<usize>,
    kind: EventKind,
    timestamp_ms: u64,
    /// Session, run, agent, call id and tool, in [`Batch::strings`].
    strings: [Option<(Range<usize>, Shape)>; 5],
    /// `None`: the engine parses the line itself.
    pre: Option<Prehashed>,
}

/// Lines the reader parsed, with what the engine needs of them; the last batch says why
/// the reader stopped early, if it did.
struct Batch {
    text: Vec<u8>,
    strings: Vec<u8>,
    events: Vec<Ready>,
    end: Option<Stopped<()>>,
}

impl Batch {
    fn new() -> Batch {
        Batch {
            text: Vec::with_capacity(BATCH_BYTES + (BATCH_BYTES >> 2)),
            strings: Vec::with_capacity(BATCH_EVENTS * 64),
            events: Vec::with_capacity(BATCH_EVENTS),
            end: None,
        }
    }

    fn clear(&mut self) {
        self.text.clear();
        self.strings.clear();
        self.events.clear();
    }

    /// Adds a parsed line.
    fn push(&mut self, number: u64, line: &[u8], event: &Event<'_>, pre: Option<Prehashed>) {
        let start = self.text.len();
        self.text.extend_from_slice(line);
        let mut strings: [Option<(Range<usize>, Shape)>; 5] = Default::default();
        let fields = [
            &event.session,
            &event.run,
            &event.agent,
            &event.call_id,
            &event.tool,
        ];
        for (slot, field) in strings.iter_mut().zip(fields) {
            if let Some(s) = field {
                let at = self.strings.len();
                self.strings.extend_from_slice(s.as_wtf8());
                *slot = Some((at..self.strings.len(), s.shape()));
            }
        }
        self.events.push(Ready {
            number,
            line: start..self.text.len(),
            kind: event.kind,
            timestamp_ms: event.timestamp_ms,
            strings,
            pre,
        });
    }
}

/// Why [`for_each_event`] stopped before the end of its input.
#[derive(Debug)]
pub(crate) enum Stopped<E> {
    /// A line is not a valid event.
    Bad(EventError),
    /// The input could not be read.
    Io(io::Error),
    /// The caller's function failed.
    Caller(E),
}

/// One event handed to [`for_each_event`]'s function.
pub(crate) enum Item<'a> {
    /// Parsed on this thread.
    Parsed(&'a Event<'a>),
    /// Read ahead: the event's envelope only (no `args`, no payload), its values hashed,
    /// and its line, to parse when the values are needed after all.
    Hashed {
        event: &'a Event<'a>,
        pre: &'a Prehashed,
        line: &'a [u8],
    },
}

/// Calls `each` with every event of an events.md stream, with its 1-based line number, in
/// order; blank lines are passed over and a byte-order mark before the first line is
/// ignored. With `ahead`, the lines are read, parsed and hashed on a second thread while
/// `each` runs ([`Item::Hashed`]); without, parsed on this thread ([`Item::Parsed`]).
/// Stops at the first line that is not a valid event, the first read error or the first
/// error of `each`.
pub(crate) fn for_each_event<R, E>(
    input: R,
    ahead: Option<Prehasher>,
    mut each: impl FnMut(u64, Item<'_>) -> Result<(), E>,
) -> Result<(), Stopped<E>>
where
    R: BufRead + Send,
{
    let Some(prehasher) = ahead else {
        return read_lines(input, |number, text| {
            let event = parse_event(text, number).map_err(Stopped::Bad)?;
            each(number, Item::Parsed(&event)).map_err(Stopped::Caller)
        });
    };
    std::thread::scope(|scope| {
        let (full_tx, full_rx) = mpsc::sync_channel::<Batch>(DEPTH);
        let (empty_tx, empty_rx) = mpsc::channel::<Batch>();
        let reader = std::thread::Builder::new()
            .name("loopguard-parse".into())
            .stack_size(READER_STACK)
            .spawn_scoped(scope, move || {
                read_ahead(input, &prehasher, &full_tx, &empty_rx)
            });
        let reader = reader.map_err(|e| {
            Stopped::Io(io::Error::other(format!(
                "cannot start the reader thread: {e}"
            )))
        })?;
        let mut result = Ok(());
        'batches: for mut batch in full_rx.iter() {
            for ready in &batch.events {
                if let Err(e) = apply_ready(&batch, ready, &mut each) {
                    result = Err(e);
                    break 'batches;
                }
            }
            match batch.end.take() {
                None | Some(Stopped::Caller(())) => {}
                Some(Stopped::Bad(e)) => {
                    result = Err(Stopped::Bad(e));
                    break;
                }
                Some(Stopped::Io(e)) => {
                    result = Err(Stopped::Io(e));
                    break;
                }
            }
            // Refilled by the reader; a reader that finished no longer wants it.
            let _ = empty_tx.send(batch);
        }
        // Dropping the receiver stops a reader that is still reading.
        drop(full_rx);
        drop(empty_tx);
        if let Err(panic) = reader.join() {
            std::panic::resume_unwind(panic);
        }
        result
    })
}

/// Hands one event of a batch to `each`: its envelope with its hashes, or parsed again
/// from its line when the reader left it to the engine.
fn apply_ready<E>(
    batch: &Batch,
    ready: &Ready,
    each: &mut impl FnMut(u64, Item<'_>) -> Result<(), E>,
) -> Result<(), Stopped<E>> {
    let line = &batch.text[ready.line.clone()];
    let Some(pre) = &ready.pre else {
        let event = parse_event(line, ready.number).map_err(Stopped::Bad)?;
        return each(ready.number, Item::Parsed(&event)).map_err(Stopped::Caller);
    };
    let string = |i: usize| {
        ready.strings[i]
            .clone()
            .map(|(r, shape)| JsString::from_wtf8_shaped(&batch.strings[r], shape))
    };
    let event = Event {
        kind: ready.kind,
        session: string(SESSION),
        run: string(RUN),
        agent: string(AGENT),
        call_id: string(CALL_ID),
        tool: string(TOOL),
        args: loopguard_core::Value::Null,
        payload: None,
        timestamp_ms: ready.timestamp_ms,
    };
    each(
        ready.number,
        Item::Hashed {
            event: &event,
            pre,
            line,
        },
    )
    .map_err(Stopped::Caller)
}

/// Reads `input` line by line, handing `each` every non-blank line (without its BOM).
///
/// A line that lies whole in the reader's buffer is handed over from there, without a copy
/// (the usual case: the buffer holds many lines); only a line split across two fills is
/// gathered in a buffer of its own first.
fn read_lines<E>(
    mut input: impl BufRead,
    mut each: impl FnMut(u64, &[u8]) -> Result<(), Stopped<E>>,
) -> Result<(), Stopped<E>> {
    let mut line = Vec::new();
    let mut number = 0u64;
    let mut one = |number: u64, text: &[u8]| -> Result<(), Stopped<E>> {
        let mut text = text;
        if number == 1 {
            text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
        }
        // Blank means nothing but (JavaScript) whitespace; a line that starts an object
        // is not.
        if text.first() != Some(&b'{') && loopguard_core::json::js_trim(text).is_empty() {
            return Ok(());
        }
        each(number, text)
    };
    loop {
        let buf = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Stopped::Io(e)),
        };
        if buf.is_empty() {
            // The last line, without a newline.
            if !line.is_empty() {
                number += 1;
                one(number, &line)?;
            }
            return Ok(());
        }
        match memchr::memchr(b'\n', buf) {
            Some(k) if line.is_empty() => {
                number += 1;
                one(number, &buf[..=k])?;
                input.consume(k + 1);
            }
            Some(k) => {
                line.extend_from_slice(&buf[..=k]);
                input.consume(k + 1);
                number += 1;
                one(number, &line)?;
                line.clear();
            }
            None => {
                let used = buf.len();
                line.extend_from_slice(buf);
                input.consume(used);
            }
        }
    }
}

/// The reader thread: fills batches and sends them until the input ends, a line fails or
/// the engine stops listening.
fn read_ahead(
    input: impl BufRead,
    prehasher: &Prehasher,
    full: &mpsc::SyncSender<Batch>,
    empty: &mpsc::Receiver<Batch>,
) {
    let mut batch = Batch::new();
    let result = read_lines(input, |number, text| {
        match parse_event(text, number) {
            Ok(event) => {
                let pre = prehasher.hash(&event);
                batch.push(number, text, &event, pre);
            }
            Err(e) => return Err(Stopped::<()>::Bad(e)),
        }
        if batch.events.len() >= BATCH_EVENTS || batch.text.len() >= BATCH_BYTES {
            let next = match empty.try_recv() {
                Ok(mut used) => {
                    used.clear();
                    used
                }
                Err(_) => Batch::new(),
            };
            if full.send(std::mem::replace(&mut batch, next)).is_err() {
                return Err(Stopped::Caller(()));
            }
        }
        Ok(())
    });
    match result {
        Err(Stopped::Caller(())) => {}
        Ok(()) => {
            if !batch.events.is_empty() {
                let _ = full.send(batch);
            }
        }
        Err(end) => {
            batch.end = Some(end);
            let _ = full.send(batch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `read_lines` hands over what `read_until(b'\n')` gives (with line numbers, blank
    /// lines and the BOM passed over), whatever the buffer size: lines longer than the
    /// buffer, `\r\n`, an empty line, a last line without a newline.
    #[test]
    fn read_lines_match_read_until_across_buffer_boundaries() {
        let text =
            b"\xEF\xBB\xBF{\"a\":1}\r\n\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n \n{\"b\":2}";
        let mut want = Vec::new();
        let mut std = io::BufReader::new(&text[..]);
        let mut number = 0u64;
        loop {
            let mut b = Vec::new();
            if std.read_until(b'\n', &mut b).unwrap() == 0 {
                break;
            }
            number += 1;
            if number == 1 {
                b.drain(..3);
            }
            if b.first() == Some(&b'{') || !loopguard_core::json::js_trim(&b).is_empty() {
                want.push((number, b));
            }
        }
        assert_eq!(want.len(), 3);
        for capacity in [1, 2, 3, 7, 64, 1 << 16] {
            let mut got = Vec::new();
            let ours = io::BufReader::with_capacity(capacity, &text[..]);
            read_lines::<()>(ours, |n, t| {
                got.push((n, t.to_vec()));
                Ok(())
            })
            .unwrap();
            assert_eq!(got, want, "capacity {capacity}");
        }
    }
}
