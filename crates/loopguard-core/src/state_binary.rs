//! The compact binary form of a session snapshot: the same content as the JSON form of
//! [`crate::state`], about a third of its size, for stores that write a session on
//! every event (Redis, where every byte crosses the network twice).
//!
//! Layout: `LGSB`, a version byte ([`STATE_VERSION`]), then the fields in the JSON form's
//! order. Integers are LEB128 varints; a name is its WTF-8 length and bytes; a digest is
//! its 32 bytes; an optional value is a `0`/`1` tag byte before it; an outcome hash is a
//! tag (`0` none, `1` a result, `2` a thrown error) and its digest.

use indexmap::IndexMap;

use crate::compaction_guard::{CompactionGuard, WindowState};
use crate::config::GuardSettings;
use crate::detectors::ledger::{Ledger, LedgerEntry, LoopMark, RunState};
use crate::fingerprint::ArgsDigest;
use crate::history::{name_from_vec, History, Name, Record};
use crate::outcome::{Hashing, ResultHash};
use crate::session::{Mode, Session};
use crate::state::{StateError, STATE_VERSION};
use crate::warnings::WarningBuckets;

/// The first bytes of a binary snapshot.
pub(crate) const MAGIC: &[u8; 4] = b"LGSB";

/// The first state version with a binary form.
const BINARY_VERSION_MIN: u32 = 3;

impl Session {
    /// Serialises everything the session remembers, like [`Session::export_state`], in
    /// the compact binary form (about a third of the JSON's size). [`Session::restore`]
    /// and [`Session::import_state`] read both forms.
    ///
    /// ```
    /// use loopguard_core::{Call, Policy, Session, Value};
    /// use loopguard_core::Outcome;
    ///
    /// let policy = Policy::enabled();
    /// let args = Value::parse(br#"{"path":"/a.txt"}"#)?;
    /// let mut session = Session::new("s");
    /// for _ in 0..5 {
    ///     let call = Call::new("read", &args);
    ///     session.before_call(&policy, &call);
    ///     session.after_call(&policy, &call, Outcome::Result(&Value::from("same")));
    /// }
    /// let compact = session.export_state_binary();
    /// assert!(compact.len() * 3 < session.export_state().len());
    /// let restored = Session::import_state(&compact, "s")?;
    /// assert_eq!(restored.export_state(), session.export_state());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn export_state_binary(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.export_state_binary_into(&mut out);
        out
    }

    /// Appends [`Session::export_state_binary`]'s bytes to `out`: a caller that writes
    /// something before the state (a store's entry header) encodes it in place, without a
    /// second buffer and a copy.
    ///
    /// ```
    /// use loopguard_core::Session;
    ///
    /// let session = Session::new("s");
    /// let mut out = b"head:".to_vec();
    /// session.export_state_binary_into(&mut out);
    /// assert_eq!(&out[5..], &session.export_state_binary()[..]);
    /// ```
    pub fn export_state_binary_into(&self, out: &mut Vec<u8>) {
        let p = self.parts();
        let mut w = Writer(std::mem::take(out));
        w.0.reserve(64 + p.history.len() * 48);
        w.0.extend_from_slice(MAGIC);
        w.0.push(STATE_VERSION as u8);
        w.bytes(p.id.as_bytes());
        w.0.push(match p.mode {
            Mode::Enforce => 0,
            Mode::Observe => 1,
        });
        let records = p.history.records();
        w.uint(records.len() as u64);
        for r in records {
            w.name(&r.tool);
            w.0.extend_from_slice(&r.args.0);
            w.opt_name(r.call_id.as_ref());
            w.opt_name(r.run.as_ref());
            w.opt_result(r.result.as_ref());
            match &r.unknown_tool {
                Some(u) => {
                    w.0.push(1);
                    w.bytes(u.as_bytes());
                }
                None => w.0.push(0),
            }
            w.uint(r.timestamp_ms);
        }
        w.uint(p.buckets.entries().len() as u64);
        for (key, bucket) in p.buckets.entries() {
            w.bytes(key);
            w.uint(bucket);
        }
        let guards = usize::from(p.unscoped_guard.is_some()) + p.run_guards.len();
        w.uint(guards as u64);
        if let Some(g) = p.unscoped_guard {
            w.guard(None, g);
        }
        for (run, g) in p.run_guards {
            w.guard(Some(run), g);
        }
        let ledger = self.ledger();
        if ledger.is_empty() {
            w.0.push(0);
        } else if ledger.entries().iter().all(|e| e.sketch.is_none()) {
            w.0.push(1);
            w.ledger(ledger);
        } else {
            // 2: the ledger, then every entry's drift sketch (or none).
            w.0.push(2);
            w.ledger(ledger);
            for e in ledger.entries() {
                match &e.sketch {
                    None => w.0.push(0),
                    Some(sk) => {
                        // 1: a sketch; 2: a sketch with its numbers and write target;
                        // 3: those and its outcome's counts hash.
                        let counted = sk.counts != 0;
                        let extended = counted || sk.args.numbers != 0 || sk.args.target != 0;
                        w.0.push(if counted {
                            3
                        } else if extended {
                            2
                        } else {
                            1
                        });
                        w.0.extend_from_slice(&sk.args.shape.to_le_bytes());
                        w.0.extend_from_slice(&sk.outcome.to_le_bytes());
                        w.0.push(sk.flags);
                        w.0.push(sk.args.flags);
                        w.uint(sk.args.tokens.len() as u64);
                        for t in sk.args.tokens.iter() {
                            w.0.extend_from_slice(&t.to_le_bytes());
                        }
                        if extended {
                            w.0.extend_from_slice(&sk.args.numbers.to_le_bytes());
                            w.0.extend_from_slice(&sk.args.target.to_le_bytes());
                        }
                        if counted {
                            w.0.extend_from_slice(&sk.counts.to_le_bytes());
                        }
                    }
                }
            }
        }
        // The `openclaw-2026.9.6` profile's own state, only when it was used: a 1 and its
        // JSON (as in the JSON form's `shipped`).
        if let Some(shipped) = self.shipped() {
            let mut json = Vec::new();
            shipped.write_json(&mut json);
            w.0.push(1);
            w.bytes(&json);
        }
        *out = w.0;
    }
}

struct Writer(Vec<u8>);

impl Writer {
    fn uint(&mut self, mut n: u64) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                self.0.push(byte);
                return;
            }
            self.0.push(byte | 0x80);
        }
    }

    fn bytes(&mut self, b: &[u8]) {
        self.uint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn name(&mut self, n: &Name) {
        self.bytes(n.as_wtf8());
    }

    fn opt_name(&mut self, n: Option<&Name>) {
        match n {
            Some(n) => {
                self.0.push(1);
                self.name(n);
            }
            None => self.0.push(0),
        }
    }

    fn opt_result(&mut self, r: Option<&ResultHash>) {
        match r {
            None => self.0.push(0),
            Some(r) => self.result(r),
        }
    }

    fn result(&mut self, r: &ResultHash) {
        self.0.push(if r.is_error { 2 } else { 1 });
        self.0.extend_from_slice(&r.digest);
    }

    fn flag(&mut self, b: bool) {
        self.0.push(u8::from(b));
    }

    fn guard(&mut self, run: Option<&[u8]>, g: &CompactionGuard) {
        match run {
            Some(r) => {
                self.0.push(1);
                self.bytes(r);
            }
            None => self.0.push(0),
        }
        let s = g.settings();
        self.flag(s.enabled);
        self.uint(u64::from(s.window_size));
        self.uint(u64::from(g.remaining_attempts()));
        let win = g.window();
        match &win.first {
            None => self.0.push(0),
            Some((tool, args, result)) => {
                self.0.push(1);
                self.name(tool);
                self.0.extend_from_slice(&args.0);
                self.result(result);
            }
        }
        self.uint(u64::from(win.observed));
        self.flag(win.all_equal);
    }

    fn ledger(&mut self, l: &Ledger) {
        self.uint(l.entries().len() as u64);
        for e in l.entries() {
            self.opt_name(e.run.as_ref());
            self.name(&e.tool);
            self.0.extend_from_slice(&e.args.0);
            self.result(&e.result);
            match &e.failure {
                Some(f) => {
                    self.0.push(1);
                    self.0.extend_from_slice(f);
                }
                None => self.0.push(0),
            }
            self.uint(u64::from(e.epoch));
        }
        self.uint(l.runs().len() as u64);
        for r in l.runs() {
            self.opt_name(r.run.as_ref());
            self.uint(u64::from(r.compactions));
            self.uint(r.criticals);
            self.flag(r.ended);
            self.uint(r.marks.len() as u64);
            for m in &r.marks {
                self.name(&m.tool);
                self.0.extend_from_slice(&m.args.0);
                self.result(&m.result);
                self.uint(u64::from(m.seen));
            }
        }
    }
}

/// Reads a binary snapshot; errors name the field as the JSON form's do
/// (`history[3].args`).
pub(crate) fn read(
    bytes: &[u8],
    id: Option<String>,
    mode: Option<Mode>,
    hashing: Hashing,
) -> Result<Session, StateError> {
    let mut r = Reader {
        rest: bytes.strip_prefix(MAGIC).unwrap_or(bytes),
    };
    let version = r.byte().ok_or_else(|| err("version", "a version byte"))?;
    // The binary form exists from version 3 on; a later version keeps reading it.
    if !(BINARY_VERSION_MIN..=STATE_VERSION).contains(&u32::from(version)) {
        return Err(StateError::Version {
            found: version.to_string(),
        });
    }
    let saved_id = r.bytes().ok_or_else(|| err("id", "a string"))?;
    let saved_mode = match r.byte() {
        Some(0) => Mode::Enforce,
        Some(1) => Mode::Observe,
        _ => return Err(err("mode", "\"enforce\" or \"observe\"")),
    };
    let id = id.unwrap_or_else(|| String::from_utf8_lossy(saved_id).into_owned());

    let n = r.count("history")?;
    let mut records = Vec::with_capacity(n.min(4096));
    for i in 0..n {
        let at = |f: &str, expected| err(&format!("history[{i}].{f}"), expected);
        let tool = r.name().ok_or_else(|| at("tool", "a string"))?;
        let args = r.digest().ok_or_else(|| at("args", "a 32-byte digest"))?;
        let call_id = r
            .opt_name()
            .ok_or_else(|| at("callId", "a string or null"))?;
        let run = r.opt_name().ok_or_else(|| at("run", "a string or null"))?;
        if run
            .as_ref()
            .is_some_and(|x| crate::history::normalize_run(Some(x.as_wtf8())) != Some(x.as_wtf8()))
        {
            return Err(at("run", "a trimmed, non-blank run id or null"));
        }
        let result = r
            .opt_result()
            .ok_or_else(|| at("result", "an outcome hash or null"))?;
        let unknown_tool = match r.byte() {
            Some(0) => None,
            Some(1) => Some(
                String::from_utf8_lossy(r.bytes().ok_or_else(|| at("unknownTool", "a string"))?)
                    .into_owned()
                    .into_boxed_str(),
            ),
            _ => return Err(at("unknownTool", "a string or null")),
        };
        let ts = r.uint().ok_or_else(|| at("ts", "a non-negative integer"))?;
        let mut record = Record::new(tool, ArgsDigest(args), call_id, run, ts);
        record.result = result;
        record.unknown_tool = unknown_tool;
        records.push(record);
    }

    let n = r.count("warnings")?;
    let mut buckets = Vec::with_capacity(n.min(4096));
    for i in 0..n {
        let key = r
            .bytes()
            .ok_or_else(|| err(&format!("warnings[{i}]"), "a [key, bucket] pair"))?;
        let bucket = r
            .uint()
            .ok_or_else(|| err(&format!("warnings[{i}][1]"), "a non-negative integer"))?;
        buckets.push((Box::<[u8]>::from(key), bucket));
    }

    let n = r.count("guards")?;
    let mut unscoped_guard = None;
    let mut run_guards = IndexMap::new();
    for i in 0..n {
        let (run, guard) = r
            .guard()
            .ok_or_else(|| err(&format!("guards[{i}]"), "a guard"))?;
        match run {
            None => unscoped_guard = Some(guard),
            Some(run) => {
                run_guards.shift_remove(&run);
                run_guards.insert(run, guard);
            }
        }
    }

    let ledger = match r.byte() {
        Some(0) => None,
        Some(1) => Some(r.ledger().ok_or_else(|| err("ledger", "a ledger"))?),
        Some(2) => {
            let mut l = r.ledger().ok_or_else(|| err("ledger", "a ledger"))?;
            let sketches = (0..l.entries().len())
                .map(|_| r.sketch())
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| err("ledger", "the ledger's sketches"))?;
            l.set_sketches(sketches);
            Some(l)
        }
        _ => return Err(err("ledger", "a ledger or none")),
    };
    let shipped = match r.byte() {
        None => None,
        Some(1) => {
            let json = r
                .bytes()
                .ok_or_else(|| err("shipped", "the shipped state"))?;
            let v = crate::parse::parse(json)?;
            Some(crate::state::read_shipped(&v)?)
        }
        Some(_) => return Err(err("", "the end of the snapshot (bytes follow it)")),
    };
    if !r.rest.is_empty() {
        return Err(err("", "the end of the snapshot (bytes follow it)"));
    }
    let mut session = Session::from_parts(
        id,
        mode.unwrap_or(saved_mode),
        hashing,
        History::from_records(records),
        WarningBuckets::from_entries(buckets),
        unscoped_guard,
        run_guards,
    );
    if let Some(l) = ledger {
        session.set_ledger(l);
    }
    if let Some(s) = shipped {
        session.set_shipped(s);
    }
    Ok(session)
}

fn err(path: &str, expected: &'static str) -> StateError {
    StateError::Field {
        path: path.to_string(),
        expected,
    }
}

struct Reader<'b> {
    rest: &'b [u8],
}

impl<'b> Reader<'b> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.rest.split_first()?;
        self.rest = rest;
        Some(b)
    }

    fn uint(&mut self) -> Option<u64> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            let bits = u64::from(b & 0x7f);
            // The tenth byte holds bit 63 only: anything more does not fit.
            if shift == 63 && bits > 1 {
                return None;
            }
            n |= bits << shift;
            if b & 0x80 == 0 {
                return Some(n);
            }
        }
        None
    }

    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.uint()?).ok()
    }

    /// A count of items that follow; each takes at least one byte, so a count beyond the
    /// bytes left is damage, not a reason to allocate.
    fn count(&mut self, field: &str) -> Result<usize, StateError> {
        self.uint()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| *n <= self.rest.len())
            .ok_or_else(|| err(field, "a list"))
    }

    fn take(&mut self, n: usize) -> Option<&'b [u8]> {
        if self.rest.len() < n {
            return None;
        }
        let (a, b) = self.rest.split_at(n);
        self.rest = b;
        Some(a)
    }

    fn bytes(&mut self) -> Option<&'b [u8]> {
        let n = usize::try_from(self.uint()?).ok()?;
        self.take(n)
    }

    fn name(&mut self) -> Option<Name> {
        self.bytes().map(|b| name_from_vec(b.to_vec()))
    }

    fn opt_name(&mut self) -> Option<Option<Name>> {
        match self.byte()? {
            0 => Some(None),
            1 => self.name().map(Some),
            _ => None,
        }
    }

    fn digest(&mut self) -> Option<[u8; 32]> {
        self.take(32)?.try_into().ok()
    }

    fn opt_result(&mut self) -> Option<Option<ResultHash>> {
        let tag = self.byte()?;
        if tag == 0 {
            return Some(None);
        }
        self.result_after(tag).map(Some)
    }

    fn result(&mut self) -> Option<ResultHash> {
        let tag = self.byte()?;
        self.result_after(tag)
    }

    fn result_after(&mut self, tag: u8) -> Option<ResultHash> {
        let is_error = match tag {
            1 => false,
            2 => true,
            _ => return None,
        };
        Some(ResultHash {
            is_error,
            digest: self.digest()?,
        })
    }

    fn flag(&mut self) -> Option<bool> {
        match self.byte()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }

    fn guard(&mut self) -> Option<(Option<Box<[u8]>>, CompactionGuard)> {
        let run = match self.byte()? {
            0 => None,
            1 => Some(Box::<[u8]>::from(self.bytes()?)),
            _ => return None,
        };
        let enabled = self.flag()?;
        let window_size = self.u32()?;
        let remaining = self.u32()?;
        let first = match self.byte()? {
            0 => None,
            1 => Some((self.name()?, ArgsDigest(self.digest()?), self.result()?)),
            _ => return None,
        };
        let observed = self.u32()?;
        let all_equal = self.flag()?;
        Some((
            run,
            CompactionGuard::restore(
                GuardSettings {
                    enabled,
                    window_size,
                },
                remaining,
                WindowState {
                    first,
                    observed,
                    all_equal,
                },
            ),
        ))
    }

    fn sketch(&mut self) -> Option<Option<Box<crate::detectors::sketch::Sketch>>> {
        use crate::detectors::sketch::{ArgsSketch, Sketch};
        match self.byte()? {
            0 => Some(None),
            tag @ (1..=3) => {
                let shape = u64::from_le_bytes(self.take(8)?.try_into().ok()?);
                let outcome = u64::from_le_bytes(self.take(8)?.try_into().ok()?);
                let flags = self.byte()?;
                let args_flags = self.byte()?;
                let n = usize::try_from(self.uint()?).ok()?;
                if n > 4096 {
                    return None;
                }
                let mut tokens = Vec::with_capacity(n);
                for _ in 0..n {
                    tokens.push(u32::from_le_bytes(self.take(4)?.try_into().ok()?));
                }
                let (numbers, target) = if tag >= 2 {
                    (
                        u64::from_le_bytes(self.take(8)?.try_into().ok()?),
                        u64::from_le_bytes(self.take(8)?.try_into().ok()?),
                    )
                } else {
                    (0, 0)
                };
                let counts = if tag == 3 {
                    u64::from_le_bytes(self.take(8)?.try_into().ok()?)
                } else {
                    0
                };
                Some(Some(Box::new(Sketch {
                    args: ArgsSketch {
                        shape,
                        tokens,
                        flags: args_flags,
                        numbers,
                        target,
                    },
                    outcome,
                    flags,
                    counts,
                })))
            }
            _ => None,
        }
    }

    fn ledger(&mut self) -> Option<Ledger> {
        let n = usize::try_from(self.uint()?).ok()?;
        let mut entries = Vec::with_capacity(n.min(self.rest.len()).min(4096));
        for _ in 0..n {
            entries.push(LedgerEntry {
                run: self.opt_name()?,
                tool: self.name()?,
                args: ArgsDigest(self.digest()?),
                result: self.result()?,
                failure: match self.byte()? {
                    0 => None,
                    1 => Some(self.take(8)?.try_into().ok()?),
                    _ => return None,
                },
                epoch: self.u32()?,
                sketch: None,
            });
        }
        let n = usize::try_from(self.uint()?).ok()?;
        let mut runs = Vec::with_capacity(n.min(self.rest.len()).min(4096));
        for _ in 0..n {
            let run = self.opt_name()?;
            let compactions = self.u32()?;
            let criticals = self.uint()?;
            let ended = self.flag()?;
            let m = usize::try_from(self.uint()?).ok()?;
            let mut marks = Vec::with_capacity(m.min(self.rest.len()).min(4096));
            for _ in 0..m {
                marks.push(LoopMark {
                    tool: self.name()?,
                    args: ArgsDigest(self.digest()?),
                    result: self.result()?,
                    seen: self.u32()?,
                });
            }
            runs.push(RunState {
                run,
                compactions,
                criticals,
                ended,
                marks,
            });
        }
        Some(Ledger::from_parts(entries, runs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_reject_overflow() {
        for n in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut w = Writer(Vec::new());
            w.uint(n);
            assert_eq!(Reader { rest: &w.0 }.uint(), Some(n), "{n}");
        }
        // Ten bytes whose last carries more than bit 63.
        let too_big = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert_eq!(Reader { rest: &too_big }.uint(), None);
        // Eleven bytes: never ends.
        assert_eq!(Reader { rest: &[0x80; 11] }.uint(), None);
    }
}
