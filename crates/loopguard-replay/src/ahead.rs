//! Parsing and hashing an event stream on other threads, ahead of the engine.
//!
//! Parse workers take turns at the input: a worker holding the input reads the next chunk
//! of whole lines (about [`CHUNK_BYTES`]), numbers it, counts its lines, and lets go; it
//! then splits the chunk into lines, parses each, and does there everything about an
//! event that does not depend on the sessions: the argument digest, the outcome hash and
//! the known-poll check ([`Prehasher`]). What it hands the engine's thread is a batch: the
//! chunk's bytes, the events' small envelope strings (session, run, agent, call id, tool)
//! copied into one buffer, and per event its hashes. Nothing is allocated per event and
//! nothing a worker allocated is freed on the engine's thread; the engine only applies the
//! hashes to its sessions. A line whose values the engine does need (a compaction, a
//! replayer or policy that needs them, a finding whose arguments the summary keeps) is
//! parsed again there from the batch's copy.
//!
//! Batches are numbered as their chunks are read and the engine applies them in that
//! order whichever worker finishes first, so every session sees its events in input
//! order. When the next batch is not ready, the engine's thread takes a chunk and parses
//! it itself instead of waiting, so the work spreads over the threads whichever side is
//! slower (bench/history/replay-and-serve-redis.md, "Seventh pass"). Applied batches go back to the workers,
//! so their buffers are reused, and no more than [`batches_for`] of them exist at once:
//! memory stays bounded whatever the input's length, and a worker that runs ahead waits
//! for the engine.
//!
//! The decisions, their order, the first bad line and the error an unreadable input gives
//! are the same as reading line by line on one thread ([`for_each_event`] has both).

use std::io::{self, BufRead};
use std::ops::Range;
use std::sync::{mpsc, Condvar, Mutex, MutexGuard};

use loopguard_core::{JsString, Shape};
use loopguard_events::{parse_event, Event, EventError, EventKind};
use loopguard_guard::Prehashed;

use crate::replayer::Prehasher;

/// Input bytes per chunk, about: a chunk ends at the first line end past this size (or at
/// the end of the input), so it may be larger when a line is.
pub(crate) const CHUNK_BYTES: usize = 128 << 10;
/// Parse workers at most, whatever the number of cores: the engine's thread, which applies
/// the events in order, is the bottleneck well before.
pub(crate) const MAX_WORKERS: usize = 8;
/// A worker's stack: as deep a value as the engine's thread accepts must parse there too.
const WORKER_STACK: usize = 16 << 20;

/// Batches in existence with `workers` parse workers: one being filled by each, one being
/// filled or applied by the engine's thread and two waiting for it (so a worker rarely
/// waits for a batch to fill).
pub(crate) fn batches_for(workers: usize) -> usize {
    workers + 3
}

/// The envelope strings of an event, in this order, as ranges of [`Batch::strings`].
const SESSION: usize = 0;
const RUN: usize = 1;
const AGENT: usize = 2;
const CALL_ID: usize = 3;
const TOOL: usize = 4;
const PARENT: usize = 5;

/// An event a worker parsed and hashed.
struct Ready {
    number: u64,
    /// The line, in [`Batch::text`].
    line: Range<usize>,
    kind: EventKind,
    timestamp_ms: u64,
    usage: Option<loopguard_events::Usage>,
    /// Session, run, agent, call id, tool and parent session, in [`Batch::strings`].
    strings: [Option<(Range<usize>, Shape)>; 6],
    /// `None`: the engine parses the line itself.
    pre: Option<Prehashed>,
}

/// A chunk of the input and the events a worker parsed from it; `end` says why the
/// stream stops after it, if it does.
struct Batch {
    /// The chunk: whole lines.
    text: Vec<u8>,
    strings: Vec<u8>,
    events: Vec<Ready>,
    end: Option<Stopped<()>>,
}

impl Batch {
    fn new() -> Batch {
        Batch {
            text: Vec::with_capacity(CHUNK_BYTES + (CHUNK_BYTES >> 2)),
            strings: Vec::with_capacity(CHUNK_BYTES >> 2),
            events: Vec::with_capacity(CHUNK_BYTES >> 7),
            end: None,
        }
    }

    fn clear(&mut self) {
        self.text.clear();
        self.strings.clear();
        self.events.clear();
        self.end = None;
    }

    /// Adds a parsed line of [`Batch::text`].
    fn push(&mut self, number: u64, line: Range<usize>, event: &Event<'_>, pre: Option<Prehashed>) {
        let mut strings: [Option<(Range<usize>, Shape)>; 6] = Default::default();
        let fields = [
            &event.session,
            &event.run,
            &event.agent,
            &event.call_id,
            &event.tool,
            &event.parent_session,
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
            line,
            kind: event.kind,
            timestamp_ms: event.timestamp_ms,
            usage: event.usage,
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

/// How to read ahead: what to hash and on how many worker threads.
pub(crate) struct Ahead {
    /// Hashes the events as the engine would.
    pub prehasher: Prehasher,
    /// Parse workers beside the engine's thread, which parses chunks too whenever none
    /// is ready for it (with none, it parses every chunk itself: the tests' way to check
    /// that path alone).
    pub workers: usize,
}

/// Calls `each` with every event of an events.md stream, with its 1-based line number, in
/// order; blank lines are passed over and a byte-order mark before the first line is
/// ignored. With `ahead`, the lines are read, parsed and hashed on worker threads while
/// `each` runs ([`Item::Hashed`]); without, parsed on this thread ([`Item::Parsed`]).
/// Stops at the first line that is not a valid event, the first read error or the first
/// error of `each`.
pub(crate) fn for_each_event<R, E>(
    input: R,
    ahead: Option<Ahead>,
    mut each: impl FnMut(u64, Item<'_>) -> Result<(), E>,
) -> Result<(), Stopped<E>>
where
    R: BufRead + Send,
{
    let Some(ahead) = ahead else {
        return read_lines(input, |number, text| {
            let event = parse_event(text, number).map_err(Stopped::Bad)?;
            each(number, Item::Parsed(&event)).map_err(Stopped::Caller)
        });
    };
    let workers = ahead.workers.min(MAX_WORKERS);
    let limit = batches_for(workers);
    let shared = Shared {
        state: Mutex::new(State {
            input,
            next: 0,
            lines: 0,
            pool: Vec::new(),
            made: 0,
            limit,
            over: false,
        }),
        returned: Condvar::new(),
    };
    let prehasher = &ahead.prehasher;
    let shared = &shared;
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel::<(u64, Batch)>();
        let mut handles = Vec::with_capacity(workers);
        for i in 0..workers {
            let tx = tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("loopguard-parse-{i}"))
                .stack_size(WORKER_STACK)
                .spawn_scoped(scope, move || work(shared, prehasher, &tx));
            // Fewer workers than asked for (even none) give the same events: the engine's
            // thread parses what no worker takes.
            match spawned {
                Ok(h) => handles.push(h),
                Err(_) => break,
            }
        }
        drop(tx);
        // Should `each` panic, the workers waiting for a batch must still stop, or the
        // scope would wait for them forever.
        let stop_on_panic = StopOnPanic(shared);
        let result = apply_in_order(shared, prehasher, &rx, limit, &mut each);
        // Stops the workers still reading, and wakes those waiting for a batch.
        drop(stop_on_panic);
        shared.stop();
        drop(rx);
        for h in handles {
            if let Err(panic) = h.join() {
                std::panic::resume_unwind(panic);
            }
        }
        result
    })
}

/// The engine's side: batches in the order their chunks were read, each event to `each`.
///
/// When the next batch is not ready, the engine's thread does not wait idle: it takes the
/// next chunk of the input itself, if a batch is free, and parses it as a worker would
/// (its turn to be applied comes when every chunk before it is). So the two sides balance
/// themselves: when parsing is the slower side, the engine's thread parses part of the
/// input; when applying is, it never finds the channel empty and only applies.
fn apply_in_order<R: BufRead, E>(
    shared: &Shared<R>,
    prehasher: &Prehasher,
    rx: &mpsc::Receiver<(u64, Batch)>,
    limit: usize,
    each: &mut impl FnMut(u64, Item<'_>) -> Result<(), E>,
) -> Result<(), Stopped<E>> {
    // Batches that came before their turn, by number modulo `limit`: no more than
    // `limit` batches exist and none before `next` is left, so two waiting ones never
    // share a slot.
    let mut early: Vec<Option<Batch>> = (0..limit).map(|_| None).collect();
    let mut next = 0u64;
    loop {
        let slot = (next % limit as u64) as usize;
        if let Some(b) = early[slot].take() {
            next += 1;
            apply_batch(shared, b, each)?;
            continue;
        }
        let received = match rx.try_recv() {
            Ok(sent) => Some(sent),
            Err(waiting) => match take_chunk(shared, false) {
                // Nothing ready: parse the next chunk here rather than wait.
                Some((mut chunk, mut batch)) => {
                    parse_chunk(&mut chunk, &mut batch, prehasher);
                    if batch.end.is_some() {
                        shared.stop();
                    }
                    Some((chunk.seq, batch))
                }
                // The input is over or every batch is taken: wait for the workers',
                // unless every worker has finished (then every batch was applied).
                None => match waiting {
                    mpsc::TryRecvError::Empty => rx.recv().ok(),
                    mpsc::TryRecvError::Disconnected => None,
                },
            },
        };
        match received {
            Some((seq, b)) if seq == next => {
                next += 1;
                apply_batch(shared, b, each)?;
            }
            Some((seq, b)) => early[(seq % limit as u64) as usize] = Some(b),
            None => return Ok(()),
        }
    }
}

/// Applies one batch's events in order, then gives the batch back for reuse.
fn apply_batch<R, E>(
    shared: &Shared<R>,
    mut batch: Batch,
    each: &mut impl FnMut(u64, Item<'_>) -> Result<(), E>,
) -> Result<(), Stopped<E>> {
    for ready in &batch.events {
        apply_ready(&batch, ready, each)?;
    }
    match batch.end.take() {
        None | Some(Stopped::Caller(())) => {}
        Some(Stopped::Bad(e)) => return Err(Stopped::Bad(e)),
        Some(Stopped::Io(e)) => return Err(Stopped::Io(e)),
    }
    shared.give_back(batch);
    Ok(())
}

/// What the workers share: the input and the batches not in use.
struct Shared<R> {
    state: Mutex<State<R>>,
    /// Signalled when a batch comes back or the stream is over.
    returned: Condvar,
}

struct State<R> {
    input: R,
    /// The number of the next chunk.
    next: u64,
    /// Lines read so far.
    lines: u64,
    /// Applied batches, for reuse.
    pool: Vec<Batch>,
    /// Batches made so far, at most `limit`.
    made: usize,
    limit: usize,
    /// The input ended or failed, or the engine stopped: no more chunks.
    over: bool,
}

impl<R> Shared<R> {
    fn lock(&self) -> MutexGuard<'_, State<R>> {
        // A worker that panicked holding the lock is reported by its join; the state it
        // left is only read to stop.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn give_back(&self, mut batch: Batch) {
        batch.clear();
        self.lock().pool.push(batch);
        self.returned.notify_one();
    }

    fn stop(&self) {
        self.lock().over = true;
        self.returned.notify_all();
    }
}

/// A chunk taken from the input.
struct Chunk {
    seq: u64,
    /// The number of its first line.
    first: u64,
    /// Why the input stops after it, if it does: `Ok` at its end, `Err` when it failed.
    last: Option<io::Result<()>>,
}

/// A worker: takes chunks and hands their parsed batches to the engine until the input
/// is over.
fn work<R: BufRead>(shared: &Shared<R>, prehasher: &Prehasher, tx: &mpsc::Sender<(u64, Batch)>) {
    let _stop = StopOnPanic(shared);
    while let Some((mut chunk, mut batch)) = take_chunk(shared, true) {
        parse_chunk(&mut chunk, &mut batch, prehasher);
        // A stream that stops here (a bad line, an unreadable input) stops for everyone.
        if batch.end.is_some() {
            shared.stop();
        }
        if tx.send((chunk.seq, batch)).is_err() {
            return;
        }
    }
}

/// Stops the stream when a worker panics, so the others and the engine do not wait for
/// its batch (the panic itself reaches the caller through the worker's join), or when the
/// engine's function panics, so the workers do not wait for a batch back.
struct StopOnPanic<'a, R>(&'a Shared<R>);

impl<R> Drop for StopOnPanic<'_, R> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.stop();
        }
    }
}

/// Takes a free batch (waiting for one when `wait` says so) and fills it with the next
/// chunk of whole lines; `None` when the input is over, or no batch is free and `wait`
/// is `false`.
fn take_chunk<R: BufRead>(shared: &Shared<R>, wait: bool) -> Option<(Chunk, Batch)> {
    let mut state = shared.lock();
    let mut batch = loop {
        if state.over {
            return None;
        }
        if let Some(b) = state.pool.pop() {
            break b;
        }
        if state.made < state.limit {
            state.made += 1;
            break Batch::new();
        }
        if !wait {
            return None;
        }
        state = shared
            .returned
            .wait(state)
            .unwrap_or_else(|p| p.into_inner());
    };
    let state = &mut *state;
    let last = read_chunk(&mut state.input, &mut batch.text);
    if batch.text.is_empty() && matches!(last, Some(Ok(()))) {
        state.over = true;
        state.pool.push(batch);
        return None;
    }
    let chunk = Chunk {
        seq: state.next,
        first: state.lines + 1,
        last,
    };
    state.next += 1;
    state.lines += memchr::memchr_iter(b'\n', &batch.text).count() as u64;
    if chunk.last.is_some() {
        state.over = true;
    }
    Some((chunk, batch))
}

/// Appends to `text` whole lines of `input`, at least [`CHUNK_BYTES`] of them unless the
/// input ends first: `None` when more follows, `Some(Ok(()))` at the end of the input
/// (then the last line may have no line end), `Some(Err(_))` when it could not be read
/// (then a line begun is dropped, as reading line by line does).
fn read_chunk(input: &mut impl BufRead, text: &mut Vec<u8>) -> Option<io::Result<()>> {
    loop {
        let buf = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let whole = memchr::memrchr(b'\n', text).map_or(0, |k| k + 1);
                text.truncate(whole);
                return Some(Err(e));
            }
        };
        if buf.is_empty() {
            return Some(Ok(()));
        }
        let n = buf.len();
        // The chunk ends at the first line end at or past its size.
        let from = CHUNK_BYTES.saturating_sub(text.len() + 1);
        if from < n {
            if let Some(k) = memchr::memchr(b'\n', &buf[from..]) {
                let k = from + k;
                text.extend_from_slice(&buf[..=k]);
                input.consume(k + 1);
                return None;
            }
        }
        text.extend_from_slice(buf);
        input.consume(n);
    }
}

/// Parses and hashes the lines of a chunk into its batch, stopping at the first bad one.
fn parse_chunk(chunk: &mut Chunk, batch: &mut Batch, prehasher: &Prehasher) {
    let text = std::mem::take(&mut batch.text);
    let mut number = chunk.first;
    let mut at = 0;
    while at < text.len() {
        let end = memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |k| at + k + 1);
        let mut start = at;
        if number == 1 && text[at..end].starts_with(b"\xEF\xBB\xBF") {
            start += 3;
        }
        let line = &text[start..end];
        if !is_blank(line) {
            match parse_event(line, number) {
                Ok(event) => {
                    let pre = prehasher.hash(&event);
                    batch.push(number, start..end, &event, pre);
                }
                Err(e) => {
                    batch.end = Some(Stopped::Bad(e));
                    break;
                }
            }
        }
        number += 1;
        at = end;
    }
    batch.text = text;
    if batch.end.is_none() {
        if let Some(Err(e)) = chunk.last.take() {
            batch.end = Some(Stopped::Io(e));
        }
    }
}

/// Blank means nothing but (JavaScript) whitespace; a line that starts an object is not.
fn is_blank(text: &[u8]) -> bool {
    text.first() != Some(&b'{') && loopguard_core::json::js_trim(text).is_empty()
}

/// Hands one event of a batch to `each`: its envelope with its hashes, or parsed again
/// from its line when the worker left it to the engine.
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
        parent_session: string(PARENT),
        run: string(RUN),
        agent: string(AGENT),
        call_id: string(CALL_ID),
        tool: string(TOOL),
        args: loopguard_core::Value::Null,
        payload: None,
        timestamp_ms: ready.timestamp_ms,
        usage: ready.usage,
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
        if is_blank(text) {
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

    /// Chunks hold whole lines, end at the first line end at or past their size, and
    /// together give back the input, whatever the reader's buffer size; a line longer than
    /// a chunk makes a chunk of its own.
    #[test]
    fn chunks_are_whole_lines_and_give_back_the_input() {
        let mut text = Vec::new();
        for n in 0..50_000u32 {
            text.extend_from_slice(format!("{{\"n\":{n}}}\n").as_bytes());
            if n == 20_000 {
                text.extend(std::iter::repeat_n(b'x', CHUNK_BYTES * 2));
                text.push(b'\n');
            }
        }
        text.extend_from_slice(b"{\"last\":1}");
        for capacity in [7, 4096, 1 << 20] {
            let mut input = io::BufReader::with_capacity(capacity, &text[..]);
            let mut back = Vec::new();
            let mut chunks = 0;
            loop {
                let mut chunk = Vec::new();
                let last = read_chunk(&mut input, &mut chunk);
                chunks += 1;
                if last.is_none() {
                    assert_eq!(chunk.last(), Some(&b'\n'), "capacity {capacity}");
                    assert!(chunk.len() >= CHUNK_BYTES, "capacity {capacity}");
                    let before = &chunk[..chunk.len() - 1];
                    let first_end = memchr::memchr(b'\n', &chunk[CHUNK_BYTES - 1..]);
                    assert_eq!(
                        first_end.map(|k| k + CHUNK_BYTES),
                        Some(chunk.len()),
                        "capacity {capacity}: {} bytes",
                        before.len()
                    );
                }
                back.extend_from_slice(&chunk);
                if let Some(end) = last {
                    end.unwrap();
                    break;
                }
            }
            assert_eq!(back, text, "capacity {capacity}");
            assert!(chunks > 3, "capacity {capacity}: {chunks} chunks");
        }
    }

    /// Reads `data`, then fails (once `at` bytes were given).
    struct FailAfter {
        data: Vec<u8>,
        at: usize,
        given: usize,
    }

    impl io::Read for FailAfter {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.given >= self.at {
                return Err(io::Error::other("disk gone"));
            }
            let n = buf.len().min(self.at - self.given).min(1000);
            buf[..n].copy_from_slice(&self.data[self.given..self.given + n]);
            self.given += n;
            Ok(n)
        }
    }

    /// An input that fails part way: both paths hand over the same whole lines before the
    /// failure (the line it cut is dropped) and then stop with the read error; and with
    /// many workers, the events come in input order.
    #[test]
    fn a_read_error_stops_both_paths_after_the_same_lines() {
        use loopguard_core::{Mode, OpenClawConfig};
        let mut data = Vec::new();
        for n in 0..20_000u32 {
            let line = format!(
                "{{\"type\":\"call\",\"session\":\"s{}\",\"tool\":\"t\",\"args\":{{\"n\":{n}}}}}\n",
                n % 17
            );
            data.extend_from_slice(line.as_bytes());
        }
        let at = data.len() * 3 / 4 + 11;
        let replayer = crate::Replayer::new(OpenClawConfig::default(), Mode::Enforce);
        for workers in [None, Some(0), Some(1), Some(2), Some(5)] {
            let input = io::BufReader::with_capacity(
                4096,
                FailAfter {
                    data: data.clone(),
                    at,
                    given: 0,
                },
            );
            let ahead = workers.map(|workers| Ahead {
                prehasher: replayer.prehasher(),
                workers,
            });
            let mut seen = Vec::new();
            let end = for_each_event::<_, ()>(input, ahead, |number, item| {
                let session = match item {
                    Item::Parsed(e) | Item::Hashed { event: e, .. } => e.session.clone(),
                };
                let session = session.map(|s| s.to_string_lossy().into_owned());
                seen.push((number, session));
                Ok(())
            });
            let Err(Stopped::Io(e)) = end else {
                panic!("{workers:?}: {end:?}");
            };
            assert_eq!(e.to_string(), "disk gone");
            let whole = data[..at].iter().filter(|&&b| b == b'\n').count();
            assert_eq!(seen.len(), whole, "{workers:?}");
            for (i, (number, session)) in seen.iter().enumerate() {
                assert_eq!(*number, i as u64 + 1, "{workers:?}");
                assert_eq!(session.as_deref(), Some(format!("s{}", i % 17).as_str()));
            }
        }
    }

    /// A panic of the engine's function reaches the caller, and the workers (waiting for
    /// batches that will not come back) stop instead of keeping the replay from ending.
    #[test]
    fn a_panic_of_the_caller_ends_the_workers_too() {
        use loopguard_core::{Mode, OpenClawConfig};
        let line = "{\"type\":\"call\",\"tool\":\"t\",\"args\":{}}\n";
        let data = line.repeat(200_000);
        let replayer = crate::Replayer::new(OpenClawConfig::default(), Mode::Enforce);
        let ahead = Ahead {
            prehasher: replayer.prehasher(),
            workers: 3,
        };
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let input = io::BufReader::new(data.as_bytes());
            for_each_event::<_, ()>(input, Some(ahead), |number, _| {
                assert!(number < 10, "stop here");
                Ok(())
            })
        }));
        assert!(caught.is_err());
    }
}
