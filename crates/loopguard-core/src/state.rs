//! Snapshots of a [`Session`]: everything it remembers, as bytes, and back.
//!
//! A runtime that cannot keep a session in memory between tool calls (a hook that runs as
//! one process per call, a server that restarts) exports the state after each event and
//! imports it before the next. A restored session makes exactly the decisions the original
//! would have made: it holds the same history records (tool, argument digest, call id, run,
//! outcome hash, unknown-tool name, timestamp), the same warning buckets in the same
//! insertion order, the same post-compaction guards (settings, attempts left, what the window holds)
//! and the same mode.
//!
//! [`Session::export_state_binary`] writes the same content in a compact binary form (about
//! a third of the size, for stores that write a session on every event; `state_binary`,
//! which builds on this module); [`Session::restore`] (`restore`) reads both.
//!
//! The format is JSON written with the crate's own serialiser and read with its own parser
//! (no serde): an object with `format`, `version` ([`STATE_VERSION`]), `id`, `mode`,
//! `history`, `warnings` and `guards`, plus `ledger` when the strict profile's detectors
//! kept outcomes and `shipped` when the `openclaw-2026.9.6` profile was used (its own
//! history, buckets and runs). Names are JavaScript strings (lone surrogates are
//! written as `\udxxx` escapes and read back as they were); digests are 64 hex digits; an
//! error outcome hash is `error:` and its hex. Not saved: the outcome-hashing settings
//! ([`Session::with_hashing`] again after an import if you changed them) and internal
//! caches, which are rebuilt.
//!
//! ```
//! use loopguard_core::{Call, Policy, Session, Value, Verdict};
//! use loopguard_core::Outcome;
//!
//! let policy = Policy::enabled();
//! let args = Value::parse(br#"{"path":"/same.txt"}"#)?;
//! let same = Value::from("same output");
//! let mut session = Session::new("s");
//! for _ in 0..10 {
//!     let call = Call::new("read", &args);
//!     session.before_call(&policy, &call);
//!     session.after_call(&policy, &call, Outcome::Result(&same));
//! }
//! // Save between two tool calls, restore in another process.
//! let bytes = session.export_state();
//! let mut restored = Session::import_state(&bytes, "s")?;
//! let d = restored.before_call(&policy, &Call::new("read", &args));
//! // Ten identical calls before it: the warning is shown, as it would have been without
//! // the round trip.
//! assert!(matches!(d.verdict, Verdict::Warn { emitted: true, .. }));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use indexmap::IndexMap;

use crate::canonical::{self, hex_bytes, Sink};
use crate::compaction_guard::{CompactionGuard, WindowState};
use crate::config::GuardSettings;
use crate::detectors::ledger::{Ledger, LedgerEntry, LoopMark, RunState};
use crate::fingerprint::ArgsDigest;
use crate::history::{name_from_vec, History, Name, Record};
use crate::outcome::{Hashing, ResultHash};
use crate::session::{Mode, Session};
use crate::value::{JsString, Value};
use crate::warnings::WarningBuckets;

/// The version written by [`Session::export_state`]. Version 3 lists the run guards least
/// recently used first (at most [`crate::session::MAX_RUN_GUARDS`]); version 2 listed every
/// run's guard, sorted by run. [`Session::import_state`] reads both (a version-2 snapshot
/// keeps its newest-sorting runs' guards) and names the version of any other.
pub const STATE_VERSION: u32 = 3;

/// The oldest version [`Session::import_state`] still reads.
pub const STATE_VERSION_MIN: u32 = 2;

/// The `format` field of every snapshot.
pub const STATE_FORMAT: &str = "loopguard-session-state";

/// Why a snapshot could not be read.
///
/// ```
/// use loopguard_core::{Session, StateError};
/// let Err(e) = Session::import_state(br#"{"format":"something else"}"#, "s") else {
///     return Err("accepted".into());
/// };
/// assert!(matches!(e, StateError::Field { .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The bytes are not JSON.
    #[error("session state is not valid JSON: {0}")]
    Json(#[from] crate::parse::ParseError),
    /// The snapshot was written by another format version.
    #[error(
        "session state has format version {found}; this loopguard reads versions {STATE_VERSION_MIN} to {STATE_VERSION}"
    )]
    Version {
        /// The version found.
        found: String,
    },
    /// A field is missing or has the wrong type or value.
    #[error("session state field `{path}`: expected {expected}")]
    Field {
        /// Where, e.g. `history[3].args`.
        path: String,
        /// What was expected there.
        expected: &'static str,
    },
}

impl Session {
    /// Serialises everything the session remembers: a JSON document of format
    /// [`STATE_FORMAT`] and version [`STATE_VERSION`] (see [`Session::restore`]).
    pub fn export_state(&self) -> Vec<u8> {
        let p = self.parts();
        let mut out: Vec<u8> = Vec::with_capacity(256 + p.history.len() * 200);
        out.write(b"{\"format\":");
        write_str(&mut out, STATE_FORMAT);
        out.write(b",\"version\":");
        canonical::write_number(&mut out, f64::from(STATE_VERSION));
        out.write(b",\"id\":");
        write_str(&mut out, p.id);
        out.write(b",\"mode\":");
        write_str(
            &mut out,
            match p.mode {
                Mode::Enforce => "enforce",
                Mode::Observe => "observe",
            },
        );
        out.write(b",\"history\":[");
        for (i, r) in p.history.records().iter().enumerate() {
            if i > 0 {
                out.write(b",");
            }
            write_record(&mut out, r);
        }
        out.write(b"],\"warnings\":[");
        for (i, (key, bucket)) in p.buckets.entries().enumerate() {
            if i > 0 {
                out.write(b",");
            }
            out.write(b"[");
            canonical::write_json_string(&mut out, &name_from_vec(key.to_vec()));
            out.write(b",");
            canonical::write_number(&mut out, bucket as f64);
            out.write(b"]");
        }
        out.write(b"],\"guards\":[");
        let mut first = true;
        if let Some(g) = p.unscoped_guard {
            write_guard(&mut out, None, g);
            first = false;
        }
        // Least recently used first: the order decides which guard is evicted next.
        for (run, g) in p.run_guards {
            if !first {
                out.write(b",");
            }
            first = false;
            write_guard(&mut out, Some(run), g);
        }
        out.write(b"]");
        // loopguard's extra detectors (strict profile): written only when used, so a
        // default-profile snapshot is exactly what it was before they existed.
        if !self.ledger().is_empty() {
            out.write(b",\"ledger\":");
            write_ledger(&mut out, self.ledger());
        }
        // The `openclaw-2026.9.6` profile's own state, only when it was used.
        if let Some(shipped) = self.shipped() {
            out.write(b",\"shipped\":");
            shipped.write_json(&mut out);
        }
        out.write(b"}");
        out
    }
}

/// Reads a JSON snapshot (see [`crate::restore`] for both forms).
pub(crate) fn read(
    bytes: &[u8],
    id: Option<String>,
    mode: Option<Mode>,
    hashing: Hashing,
) -> Result<Session, StateError> {
    let v = crate::parse::parse(bytes)?;
    let root = Path::root();
    let obj = |k: &'static str| root.field(&v, k);
    match obj("format")?.as_js_str() {
        Some(f) if f.as_wtf8() == STATE_FORMAT.as_bytes() => {}
        _ => return Err(root.key("format").err("\"loopguard-session-state\"")),
    }
    let version = obj("version")?;
    let known = (STATE_VERSION_MIN..=STATE_VERSION).map(f64::from);
    if !version
        .as_f64()
        .is_some_and(|v| known.clone().any(|k| k == v))
    {
        let mut found = Vec::new();
        canonical::write_json_value(&mut found, version);
        return Err(StateError::Version {
            found: String::from_utf8_lossy(&found).into_owned(),
        });
    }
    let saved_mode = match obj("mode")?.as_str() {
        Some("enforce") => Mode::Enforce,
        Some("observe") => Mode::Observe,
        _ => return Err(root.key("mode").err("\"enforce\" or \"observe\"")),
    };
    let id = match id {
        Some(id) => id,
        None => root
            .key("id")
            .name(obj("id")?)?
            .to_string_lossy()
            .into_owned(),
    };

    let history_path = root.key("history");
    let mut records = Vec::new();
    for (i, r) in history_path.array(obj("history")?)?.iter().enumerate() {
        records.push(read_record(&history_path.index(i), r)?);
    }

    let warnings_path = root.key("warnings");
    let mut buckets = Vec::new();
    for (i, w) in warnings_path.array(obj("warnings")?)?.iter().enumerate() {
        let p = warnings_path.index(i);
        match w.as_array() {
            Some([Value::String(key), bucket]) => {
                let bucket = p.index(1).uint(bucket)?;
                buckets.push((Box::<[u8]>::from(key.as_wtf8()), bucket));
            }
            _ => return Err(p.err("a [key, bucket] pair")),
        }
    }

    let guards_path = root.key("guards");
    let mut unscoped_guard = None;
    let mut run_guards = IndexMap::new();
    for (i, g) in guards_path.array(obj("guards")?)?.iter().enumerate() {
        let p = guards_path.index(i);
        let (run, guard) = read_guard(&p, g)?;
        match run {
            None => unscoped_guard = Some(guard),
            Some(r) => {
                // A repeated run keeps its last guard, in its last position.
                run_guards.shift_remove(&r);
                run_guards.insert(r, guard);
            }
        }
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
    if let Some(ledger) = v.as_object().and_then(|o| o.get("ledger")) {
        session.set_ledger(read_ledger(&root.key("ledger"), ledger)?);
    }
    if let Some(shipped) = v.as_object().and_then(|o| o.get("shipped")) {
        session.set_shipped(read_shipped(shipped)?);
    }
    Ok(session)
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    canonical::write_json_string(out, &JsString::from(s));
}

fn write_hex(out: &mut Vec<u8>, d: &[u8; 32]) {
    out.write(b"\"");
    out.write(&hex_bytes(d));
    out.write(b"\"");
}

fn write_result(out: &mut Vec<u8>, r: &ResultHash) {
    out.write(b"\"");
    if r.is_error {
        out.write(b"error:");
    }
    out.write(&hex_bytes(&r.digest));
    out.write(b"\"");
}

fn write_opt_name(out: &mut Vec<u8>, n: Option<&Name>) {
    match n {
        Some(n) => canonical::write_json_string(out, n),
        None => out.write(b"null"),
    }
}

fn write_record(out: &mut Vec<u8>, r: &Record) {
    out.write(b"{\"tool\":");
    canonical::write_json_string(out, &r.tool);
    out.write(b",\"args\":");
    write_hex(out, &r.args.0);
    out.write(b",\"callId\":");
    write_opt_name(out, r.call_id.as_ref());
    out.write(b",\"run\":");
    write_opt_name(out, r.run.as_ref());
    out.write(b",\"result\":");
    match &r.result {
        Some(h) => write_result(out, h),
        None => out.write(b"null"),
    }
    out.write(b",\"unknownTool\":");
    match &r.unknown_tool {
        Some(u) => write_str(out, u),
        None => out.write(b"null"),
    }
    out.write(b",\"ts\":");
    canonical::write_number(out, r.timestamp_ms as f64);
    out.write(b"}");
}

fn write_guard(out: &mut Vec<u8>, run: Option<&[u8]>, g: &CompactionGuard) {
    out.write(b"{\"run\":");
    match run {
        Some(r) => canonical::write_json_string(out, &name_from_vec(r.to_vec())),
        None => out.write(b"null"),
    }
    let settings = g.settings();
    out.write(b",\"enabled\":");
    out.write(if settings.enabled { b"true" } else { b"false" });
    out.write(b",\"windowSize\":");
    canonical::write_number(out, f64::from(settings.window_size));
    out.write(b",\"remaining\":");
    canonical::write_number(out, f64::from(g.remaining_attempts()));
    let w = g.window();
    out.write(b",\"first\":");
    match &w.first {
        None => out.write(b"null"),
        Some((tool, args, result)) => {
            out.write(b"{\"tool\":");
            canonical::write_json_string(out, tool);
            out.write(b",\"args\":");
            write_hex(out, &args.0);
            out.write(b",\"result\":");
            write_result(out, result);
            out.write(b"}");
        }
    }
    out.write(b",\"observed\":");
    canonical::write_number(out, f64::from(w.observed));
    out.write(b",\"allEqual\":");
    out.write(if w.all_equal { b"true" } else { b"false" });
    out.write(b"}");
}

/// A field path for error messages (`history[3].args`).
#[derive(Clone)]
struct Path(String);

impl Path {
    fn root() -> Path {
        Path(String::new())
    }

    fn key(&self, k: &str) -> Path {
        if self.0.is_empty() {
            Path(k.to_string())
        } else {
            Path(format!("{}.{k}", self.0))
        }
    }

    fn index(&self, i: usize) -> Path {
        Path(format!("{}[{i}]", self.0))
    }

    fn err(&self, expected: &'static str) -> StateError {
        StateError::Field {
            path: self.0.clone(),
            expected,
        }
    }

    fn field<'v, 'a>(
        &self,
        v: &'v Value<'a>,
        k: &'static str,
    ) -> Result<&'v Value<'a>, StateError> {
        let Some(o) = v.as_object() else {
            return Err(self.err("an object"));
        };
        o.get(k)
            .ok_or_else(|| self.key(k).err("a value (the field is missing)"))
    }

    fn array<'v, 'a>(&self, v: &'v Value<'a>) -> Result<&'v [Value<'a>], StateError> {
        v.as_array().ok_or_else(|| self.err("an array"))
    }

    fn uint(&self, v: &Value<'_>) -> Result<u64, StateError> {
        match v.as_f64() {
            Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= 9_007_199_254_740_992.0 => Ok(n as u64),
            _ => Err(self.err("a non-negative integer")),
        }
    }

    fn name(&self, v: &Value<'_>) -> Result<Name, StateError> {
        match v {
            Value::String(s) => Ok(s.clone().into_owned()),
            _ => Err(self.err("a string")),
        }
    }

    fn opt_name(&self, v: &Value<'_>) -> Result<Option<Name>, StateError> {
        match v {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s.clone().into_owned())),
            _ => Err(self.err("a string or null")),
        }
    }

    fn digest(&self, v: &Value<'_>) -> Result<[u8; 32], StateError> {
        v.as_str()
            .and_then(parse_hex)
            .ok_or_else(|| self.err("64 lowercase hex digits"))
    }

    fn result(&self, v: &Value<'_>) -> Result<ResultHash, StateError> {
        let s = v.as_str().ok_or_else(|| self.err("an outcome hash"))?;
        let (is_error, hex) = match s.strip_prefix("error:") {
            Some(h) => (true, h),
            None => (false, s),
        };
        let digest = parse_hex(hex).ok_or_else(|| self.err("an outcome hash"))?;
        Ok(ResultHash { is_error, digest })
    }
}

fn parse_hex(s: &str) -> Option<[u8; 32]> {
    let b = s.as_bytes();
    if b.len() != 64 {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (i, pair) in b.chunks_exact(2).enumerate() {
        out[i] = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

fn read_record(p: &Path, v: &Value<'_>) -> Result<Record, StateError> {
    let f = |k: &'static str| p.field(v, k);
    let tool = p.key("tool").name(f("tool")?)?;
    let args = ArgsDigest(p.key("args").digest(f("args")?)?);
    let call_id = p.key("callId").opt_name(f("callId")?)?;
    let run = p.key("run").opt_name(f("run")?)?;
    let result = match f("result")? {
        Value::Null => None,
        r => Some(p.key("result").result(r)?),
    };
    let unknown_tool = match f("unknownTool")? {
        Value::Null => None,
        Value::String(s) => Some(s.to_string_lossy().into_owned().into_boxed_str()),
        _ => return Err(p.key("unknownTool").err("a string or null")),
    };
    let ts = p.key("ts").uint(f("ts")?)?;
    if run
        .as_ref()
        .is_some_and(|r| crate::history::normalize_run(Some(r.as_wtf8())) != Some(r.as_wtf8()))
    {
        return Err(p.key("run").err("a trimmed, non-blank run id or null"));
    }
    let mut record = Record::new(tool, args, call_id, run, ts);
    record.result = result;
    record.unknown_tool = unknown_tool;
    Ok(record)
}

type GuardEntry = (Option<Box<[u8]>>, CompactionGuard);

/// The ledger: `{"entries":[{run, tool, args, result, failure, epoch}],
/// "runs":[{run, compactions, criticals, ended, marks:[{tool, args, result, seen}]}]}`.
fn write_ledger(out: &mut Vec<u8>, l: &Ledger) {
    out.write(b"{\"entries\":[");
    for (i, e) in l.entries().iter().enumerate() {
        if i > 0 {
            out.write(b",");
        }
        out.write(b"{\"run\":");
        write_opt_name(out, e.run.as_ref());
        out.write(b",\"tool\":");
        canonical::write_json_string(out, &e.tool);
        out.write(b",\"args\":");
        write_hex(out, &e.args.0);
        out.write(b",\"result\":");
        write_result(out, &e.result);
        out.write(b",\"failure\":");
        match &e.failure {
            Some(f) => {
                let hex: String = f.iter().map(|b| format!("{b:02x}")).collect();
                write_str(out, &hex);
            }
            None => out.write(b"null"),
        }
        out.write(b",\"epoch\":");
        canonical::write_number(out, f64::from(e.epoch));
        if let Some(sk) = &e.sketch {
            out.write(b",\"sketch\":{\"shape\":");
            write_str(out, &format!("{:016x}", sk.args.shape));
            out.write(b",\"outcome\":");
            write_str(out, &format!("{:016x}", sk.outcome));
            out.write(b",\"flags\":");
            canonical::write_number(out, f64::from(sk.flags));
            out.write(b",\"argsFlags\":");
            canonical::write_number(out, f64::from(sk.args.flags));
            // Written only when set, so a state without them reads back the same.
            if sk.args.numbers != 0 {
                out.write(b",\"numbers\":");
                write_str(out, &format!("{:016x}", sk.args.numbers));
            }
            if sk.args.target != 0 {
                out.write(b",\"target\":");
                write_str(out, &format!("{:016x}", sk.args.target));
            }
            if sk.counts != 0 {
                out.write(b",\"counts\":");
                write_str(out, &format!("{:016x}", sk.counts));
            }
            out.write(b",\"tokens\":[");
            for (i, t) in sk.args.tokens.iter().enumerate() {
                if i > 0 {
                    out.write(b",");
                }
                canonical::write_number(out, f64::from(*t));
            }
            out.write(b"]}");
        }
        out.write(b"}");
    }
    out.write(b"],\"runs\":[");
    for (i, r) in l.runs().iter().enumerate() {
        if i > 0 {
            out.write(b",");
        }
        out.write(b"{\"run\":");
        write_opt_name(out, r.run.as_ref());
        out.write(b",\"compactions\":");
        canonical::write_number(out, f64::from(r.compactions));
        out.write(b",\"criticals\":");
        canonical::write_number(out, r.criticals as f64);
        out.write(b",\"ended\":");
        out.write(if r.ended { b"true" } else { b"false" });
        out.write(b",\"marks\":[");
        for (j, m) in r.marks.iter().enumerate() {
            if j > 0 {
                out.write(b",");
            }
            out.write(b"{\"tool\":");
            canonical::write_json_string(out, &m.tool);
            out.write(b",\"args\":");
            write_hex(out, &m.args.0);
            out.write(b",\"result\":");
            write_result(out, &m.result);
            out.write(b",\"seen\":");
            canonical::write_number(out, f64::from(m.seen));
            out.write(b"}");
        }
        out.write(b"]}");
    }
    out.write(b"]}");
}

fn parse_hex8(s: &str) -> Option<[u8; 8]> {
    let b = s.as_bytes();
    if b.len() != 16 || !b.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let mut out = [0u8; 8];
    for (i, pair) in b.chunks_exact(2).enumerate() {
        out[i] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}

/// A drift sketch: `{shape, outcome, flags, argsFlags, tokens}`, optionally `numbers`,
/// `target` and `counts` (absent in states of earlier versions: 0) (hashes as 16 hex
/// digits).
fn read_sketch(p: &Path, v: &Value<'_>) -> Result<crate::detectors::sketch::Sketch, StateError> {
    use crate::detectors::sketch::{ArgsSketch, Sketch};
    let hex64 = |k: &'static str| -> Result<u64, StateError> {
        p.field(v, k)?
            .as_str()
            .filter(|s| s.len() == 16)
            .and_then(|s| u64::from_str_radix(s, 16).ok())
            .ok_or_else(|| p.key(k).err("16 lowercase hex digits"))
    };
    let byte = |k: &'static str| -> Result<u8, StateError> {
        u8::try_from(p.key(k).uint(p.field(v, k)?)?).map_err(|_| p.key(k).err("a byte"))
    };
    let opt_hex64 = |k: &'static str| -> Result<u64, StateError> {
        match v.get(k) {
            None => Ok(0),
            Some(_) => hex64(k),
        }
    };
    let tp = p.key("tokens");
    let mut tokens = Vec::new();
    for (i, t) in tp.array(p.field(v, "tokens")?)?.iter().enumerate() {
        let ip = tp.index(i);
        tokens.push(u32::try_from(ip.uint(t)?).map_err(|_| ip.err("an integer below 2^32"))?);
    }
    Ok(Sketch {
        args: ArgsSketch {
            shape: hex64("shape")?,
            tokens,
            flags: byte("argsFlags")?,
            numbers: opt_hex64("numbers")?,
            target: opt_hex64("target")?,
        },
        outcome: hex64("outcome")?,
        flags: byte("flags")?,
        counts: opt_hex64("counts")?,
    })
}

fn read_ledger(p: &Path, v: &Value<'_>) -> Result<Ledger, StateError> {
    let u32_of = |p: &Path, v: &Value<'_>| -> Result<u32, StateError> {
        u32::try_from(p.uint(v)?).map_err(|_| p.err("an integer below 2^32"))
    };
    let bool_of = |p: &Path, v: &Value<'_>| v.as_bool().ok_or_else(|| p.err("a boolean"));
    let entries_path = p.key("entries");
    let mut entries = Vec::new();
    for (i, e) in entries_path
        .array(p.field(v, "entries")?)?
        .iter()
        .enumerate()
    {
        let ep = entries_path.index(i);
        let f = |k: &'static str| ep.field(e, k);
        let failure = match f("failure")? {
            Value::Null => None,
            other => Some(
                other
                    .as_str()
                    .and_then(parse_hex8)
                    .ok_or_else(|| ep.key("failure").err("16 lowercase hex digits or null"))?,
            ),
        };
        entries.push(LedgerEntry {
            run: ep.key("run").opt_name(f("run")?)?,
            tool: ep.key("tool").name(f("tool")?)?,
            args: ArgsDigest(ep.key("args").digest(f("args")?)?),
            result: ep.key("result").result(f("result")?)?,
            failure,
            epoch: u32_of(&ep.key("epoch"), f("epoch")?)?,
            sketch: match e.as_object().and_then(|o| o.get("sketch")) {
                None | Some(Value::Null) => None,
                Some(sk) => Some(Box::new(read_sketch(&ep.key("sketch"), sk)?)),
            },
        });
    }
    let runs_path = p.key("runs");
    let mut runs = Vec::new();
    for (i, r) in runs_path.array(p.field(v, "runs")?)?.iter().enumerate() {
        let rp = runs_path.index(i);
        let f = |k: &'static str| rp.field(r, k);
        let marks_path = rp.key("marks");
        let mut marks = Vec::new();
        for (j, m) in marks_path.array(f("marks")?)?.iter().enumerate() {
            let mp = marks_path.index(j);
            let g = |k: &'static str| mp.field(m, k);
            marks.push(LoopMark {
                tool: mp.key("tool").name(g("tool")?)?,
                args: ArgsDigest(mp.key("args").digest(g("args")?)?),
                result: mp.key("result").result(g("result")?)?,
                seen: u32_of(&mp.key("seen"), g("seen")?)?,
            });
        }
        runs.push(RunState {
            run: rp.key("run").opt_name(f("run")?)?,
            compactions: u32_of(&rp.key("compactions"), f("compactions")?)?,
            criticals: rp.key("criticals").uint(f("criticals")?)?,
            ended: bool_of(&rp.key("ended"), f("ended")?)?,
            marks,
        });
    }
    Ok(Ledger::from_parts(entries, runs))
}

fn read_guard(p: &Path, v: &Value<'_>) -> Result<GuardEntry, StateError> {
    let f = |k: &'static str| p.field(v, k);
    let run = p
        .key("run")
        .opt_name(f("run")?)?
        .map(|r| Box::<[u8]>::from(r.as_wtf8()));
    let enabled = f("enabled")?
        .as_bool()
        .ok_or_else(|| p.key("enabled").err("a boolean"))?;
    let window = p.key("windowSize").uint(f("windowSize")?)?;
    let remaining = p.key("remaining").uint(f("remaining")?)?;
    let window_size =
        u32::try_from(window).map_err(|_| p.key("windowSize").err("an integer below 2^32"))?;
    let remaining =
        u32::try_from(remaining).map_err(|_| p.key("remaining").err("an integer below 2^32"))?;
    let first_path = p.key("first");
    let first = match f("first")? {
        Value::Null => None,
        o => {
            let g = |k: &'static str| first_path.field(o, k);
            Some((
                first_path.key("tool").name(g("tool")?)?,
                ArgsDigest(first_path.key("args").digest(g("args")?)?),
                first_path.key("result").result(g("result")?)?,
            ))
        }
    };
    let observed = p.key("observed").uint(f("observed")?)?;
    let observed =
        u32::try_from(observed).map_err(|_| p.key("observed").err("an integer below 2^32"))?;
    let all_equal = f("allEqual")?
        .as_bool()
        .ok_or_else(|| p.key("allEqual").err("a boolean"))?;
    let window = WindowState {
        first,
        observed,
        all_equal,
    };
    Ok((
        run,
        CompactionGuard::restore(
            GuardSettings {
                enabled,
                window_size,
            },
            remaining,
            window,
        ),
    ))
}

/// The `openclaw-2026.9.6` profile's state in a snapshot (`shipped`).
pub(crate) fn read_shipped(
    v: &Value<'_>,
) -> Result<crate::openclaw_2026_9_6::ShippedSession, StateError> {
    crate::openclaw_2026_9_6::ShippedSession::from_json(v)
        .map_err(|(path, expected)| StateError::Field { path, expected })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LoopDetectionConfig;
    use crate::outcome::Outcome;
    use crate::session::{Call, Verdict};

    /// One step of a scripted session.
    #[derive(Clone, Debug)]
    enum Step {
        Call {
            tool: &'static str,
            args: &'static str,
            run: Option<&'static str>,
            id: Option<&'static str>,
        },
        Outcome {
            tool: &'static str,
            args: &'static str,
            run: Option<&'static str>,
            id: Option<&'static str>,
            result: &'static str,
            error: bool,
        },
        Compaction {
            run: Option<&'static str>,
        },
    }

    /// Runs one step and describes the decision.
    fn apply(s: &mut Session, policy: &crate::Policy, step: &Step) -> String {
        match step {
            Step::Call {
                tool,
                args,
                run,
                id,
            } => {
                let a = Value::parse(args.as_bytes()).unwrap();
                let mut c = Call::new(*tool, &a);
                if let Some(r) = run {
                    c = c.run(*r);
                }
                if let Some(i) = id {
                    c = c.call_id(*i);
                }
                let d = s.before_call(policy, &c);
                match d.verdict {
                    Verdict::Allow => "allow".into(),
                    Verdict::Warn {
                        detection,
                        key,
                        emitted,
                    } => format!(
                        "warn {} {} {} {key} {emitted}",
                        detection.detector, detection.count, detection.message
                    ),
                    Verdict::Block { detection, key } => format!(
                        "block {} {} {} {key}",
                        detection.detector, detection.count, detection.message
                    ),
                }
            }
            Step::Outcome {
                tool,
                args,
                run,
                id,
                result,
                error,
            } => {
                let a = Value::parse(args.as_bytes()).unwrap();
                let r = Value::parse(result.as_bytes()).unwrap();
                let mut c = Call::new(*tool, &a);
                if let Some(rn) = run {
                    c = c.run(*rn);
                }
                if let Some(i) = id {
                    c = c.call_id(*i);
                }
                let o = if *error {
                    Outcome::Error(&r)
                } else {
                    Outcome::Result(&r)
                };
                let d = s.after_call(policy, &c, o);
                format!(
                    "{:?} {:?}",
                    d.result,
                    d.abort.map(|a| (a.count, a.message.to_string()))
                )
            }
            Step::Compaction { run } => {
                let r = run.map(JsString::from);
                format!("{:?}", s.on_compaction(policy, r.as_ref()))
            }
        }
    }

    fn call(tool: &'static str, args: &'static str, run: Option<&'static str>) -> Step {
        Step::Call {
            tool,
            args,
            run,
            id: None,
        }
    }

    fn out(
        tool: &'static str,
        args: &'static str,
        run: Option<&'static str>,
        result: &'static str,
    ) -> Step {
        Step::Outcome {
            tool,
            args,
            run,
            id: None,
            result,
            error: false,
        }
    }

    /// A script with every kind of state: a generic loop that warns and blocks, a poll loop,
    /// ping-pong, call ids, errors, unknown tools, two runs, unscoped calls and compaction
    /// guards that abort.
    fn script() -> Vec<Step> {
        let mut v = Vec::new();
        for i in 0..22 {
            v.push(Step::Call {
                tool: "read",
                args: r#"{"path":"/a"}"#,
                run: Some("run-1"),
                id: Some(["c1", "c2", "c3"][i % 3]),
            });
            v.push(Step::Outcome {
                tool: "read",
                args: r#"{"path":"/a"}"#,
                run: Some("run-1"),
                id: Some(["c1", "c2", "c3"][i % 3]),
                result: r#""same""#,
                error: false,
            });
        }
        for _ in 0..12 {
            v.push(call(
                "process",
                r#"{"action":"poll","sessionId":"s"}"#,
                Some("run-2"),
            ));
            v.push(out(
                "process",
                r#"{"action":"poll","sessionId":"s"}"#,
                Some("run-2"),
                r#"{"details":{"status":"running"},"content":[{"type":"text","text":"..."}]}"#,
            ));
            v.push(call("a", "{}", None));
            v.push(out("a", "{}", None, "1"));
            v.push(call("b", "{}", None));
            v.push(out("b", "{}", None, "2"));
        }
        for _ in 0..4 {
            v.push(call("ghost", r#"{"x":"\ud800"}"#, Some(" run-2 ")));
            v.push(Step::Outcome {
                tool: "ghost",
                args: r#"{"x":"\ud800"}"#,
                run: Some("run-2"),
                id: None,
                result: r#""Unknown tool: ghost""#,
                error: true,
            });
        }
        v.push(Step::Compaction { run: Some("run-2") });
        v.push(Step::Compaction { run: None });
        for _ in 0..4 {
            v.push(call("gateway", r#"{"q":1}"#, Some("run-2")));
            v.push(out(
                "gateway",
                r#"{"q":1}"#,
                Some("run-2"),
                r#"{"ok":true}"#,
            ));
            v.push(call("gateway", r#"{"q":1}"#, None));
            v.push(out("gateway", r#"{"q":1}"#, None, r#"{"ok":true}"#));
        }
        // An outcome without a pending call, and a pending call without an outcome.
        v.push(out("late", "{}", Some("run-3"), "3"));
        v.push(call("pending", "{}", Some("run-3")));
        v
    }

    fn policy() -> crate::Policy {
        crate::Policy::from_block(Some(LoopDetectionConfig {
            enabled: Some(true),
            history_size: Some(40.0),
            ..Default::default()
        }))
    }

    #[test]
    fn a_restored_session_decides_exactly_as_the_original_at_every_split() {
        let policy = policy();
        let steps = script();
        let mut original = Session::new("s");
        let expected: Vec<String> = steps
            .iter()
            .map(|s| apply(&mut original, &policy, s))
            .collect();
        assert!(expected.iter().any(|d| d.starts_with("warn")));
        assert!(expected.iter().any(|d| d.starts_with("block")));
        assert!(expected.iter().any(|d| d.contains("Some((3,")));
        for split in 0..=steps.len() {
            let mut s = Session::new("s");
            for step in &steps[..split] {
                apply(&mut s, &policy, step);
            }
            let bytes = s.export_state();
            let mut restored = Session::import_state(&bytes, "s").unwrap();
            assert_eq!(restored.export_state(), bytes, "re-export at {split}");
            let mut binary = Session::import_state(&s.export_state_binary(), "s").unwrap();
            assert_eq!(binary.export_state(), bytes, "binary re-export at {split}");
            for (i, step) in steps.iter().enumerate().skip(split) {
                assert_eq!(
                    apply(&mut restored, &policy, step),
                    expected[i],
                    "split {split}, step {i}"
                );
                assert_eq!(
                    apply(&mut binary, &policy, step),
                    expected[i],
                    "binary, split {split}, step {i}"
                );
            }
        }
    }

    fn random_step(k: u8) -> Step {
        const ARGS: [&str; 2] = [r#"{"a":1}"#, r#"{"a":2}"#];
        const RUNS: [Option<&str>; 3] = [None, Some("r1"), Some("r2")];
        const TOOLS: [&str; 3] = ["read", "process", "exec"];
        const RESULTS: [&str; 3] = [
            r#""x""#,
            r#"{"details":{"status":"running"}}"#,
            r#"{"details":{"status":"completed","exitCode":0,"aggregated":"ok"}}"#,
        ];
        let tool = TOOLS[(k % 3) as usize];
        let args = ARGS[((k / 3) % 2) as usize];
        let run = RUNS[((k / 6) % 3) as usize];
        match (k / 18) % 5 {
            0 | 1 => call(tool, args, run),
            2 | 3 => out(tool, args, run, RESULTS[((k / 90) % 3) as usize]),
            _ => Step::Compaction { run },
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Random sequences, split at a random point: the restored session's decisions are
        /// the original's.
        #[test]
        fn random_sequences_survive_a_restore(
            keys in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..120),
            split in 0usize..120,
            small in proptest::prelude::any::<bool>(),
        ) {
            let policy = crate::Policy::from_block(Some(LoopDetectionConfig {
                enabled: Some(true),
                history_size: Some(if small { 7.0 } else { 30.0 }),
                warning_threshold: Some(3.0),
                critical_threshold: Some(5.0),
                ..Default::default()
            }));
            let steps: Vec<Step> = keys.iter().map(|k| random_step(*k)).collect();
            let split = split.min(steps.len());
            let mut a = Session::new("s");
            let mut b = Session::new("s");
            for step in &steps[..split] {
                let x = apply(&mut a, &policy, step);
                proptest::prop_assert_eq!(x, apply(&mut b, &policy, step));
            }
            let mut c = Session::import_state(&b.export_state_binary(), "s").unwrap();
            let mut b = Session::import_state(&b.export_state(), "s").unwrap();
            for step in &steps[split..] {
                let x = apply(&mut a, &policy, step);
                proptest::prop_assert_eq!(&x, &apply(&mut b, &policy, step));
                proptest::prop_assert_eq!(&x, &apply(&mut c, &policy, step));
            }
            proptest::prop_assert_eq!(a.export_state(), b.export_state());
            proptest::prop_assert_eq!(a.export_state(), c.export_state());
        }

        /// No bytes make the importer panic.
        #[test]
        fn import_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            let _ = Session::import_state(&bytes, "s");
            let mut binary = b"LGSB\x03".to_vec();
            binary.extend_from_slice(&bytes);
            let _ = Session::import_state(&binary, "s");
        }

        /// A binary snapshot cut short, or with a byte changed, is an error or a session;
        /// never a panic.
        #[test]
        fn damaged_binary_snapshots_never_panic(cut in 0usize..2000, at in 0usize..2000, byte in proptest::prelude::any::<u8>()) {
            let policy = policy();
            let mut s = Session::new("s");
            for step in script() {
                apply(&mut s, &policy, &step);
            }
            let bytes = s.export_state_binary();
            let cut = cut % bytes.len();
            proptest::prop_assert!(Session::import_state(&bytes[..cut], "s").is_err());
            let mut changed = bytes.clone();
            let at = at % changed.len();
            changed[at] = byte;
            let _ = Session::import_state(&changed, "s");
        }
    }

    #[test]
    fn restoring_after_every_step_changes_nothing() {
        let policy = policy();
        let steps = script();
        let mut original = Session::new("s");
        let mut hopping = Session::new("s");
        for (i, step) in steps.iter().enumerate() {
            let a = apply(&mut original, &policy, step);
            hopping = if i % 2 == 0 {
                Session::import_state(&hopping.export_state(), "s").unwrap()
            } else {
                Session::import_state(&hopping.export_state_binary(), "s").unwrap()
            };
            assert_eq!(apply(&mut hopping, &policy, step), a, "step {i}");
        }
        assert_eq!(hopping.export_state(), original.export_state());
    }

    #[test]
    fn binary_errors_name_the_field() {
        let policy = policy();
        let mut s = Session::new("s");
        for step in script() {
            apply(&mut s, &policy, &step);
        }
        let bytes = s.export_state_binary();
        assert!(
            bytes.len() * 2 < s.export_state().len(),
            "{} vs {} bytes",
            bytes.len(),
            s.export_state().len()
        );
        let mut paths = std::collections::BTreeSet::new();
        for cut in 5..bytes.len() {
            match Session::import_state(&bytes[..cut], "s") {
                Err(StateError::Field { path, .. }) => {
                    paths.insert(path.split('.').next().unwrap_or("").to_string());
                }
                other => panic!("cut at {cut}: {other:?}"),
            }
        }
        for field in ["id", "history[0]", "history[1]", "guards[0]"] {
            assert!(paths.contains(field), "{field} not in {paths:?}");
        }
        let mut v4 = bytes.clone();
        v4[4] = 4;
        assert_eq!(
            Session::import_state(&v4, "s").unwrap_err(),
            StateError::Version { found: "4".into() }
        );
        let mut trailing = bytes;
        trailing.push(0);
        assert!(Session::import_state(&trailing, "s").is_err());
    }

    #[test]
    fn mode_and_id_round_trip() {
        let s = Session::new("old").with_mode(Mode::Observe);
        let r = Session::import_state(&s.export_state(), "new").unwrap();
        assert_eq!(r.id(), "new");
        assert!(String::from_utf8(r.export_state())
            .unwrap()
            .contains(r#""mode":"observe""#));
    }

    #[test]
    fn errors_name_the_field() {
        let ok = Session::new("s").export_state();
        let text = String::from_utf8(ok).unwrap();
        for (v, found) in [("1", "1"), ("4", "4"), (r#""3""#, r#""3""#)] {
            let bad = text.replace(r#""version":3"#, &format!(r#""version":{v}"#));
            assert_ne!(bad, text);
            let e = Session::import_state(bad.as_bytes(), "s").unwrap_err();
            assert_eq!(
                e,
                StateError::Version {
                    found: found.into()
                }
            );
            assert_eq!(
                e.to_string(),
                format!("session state has format version {found}; this loopguard reads versions 2 to 3")
            );
        }
        let bad = text.replace(r#""history":[]"#, r#""history":[{"tool":"t"}]"#);
        let e = Session::import_state(bad.as_bytes(), "s").unwrap_err();
        assert_eq!(
            e.to_string(),
            "session state field `history[0].args`: expected a value (the field is missing)"
        );
        let bad = text.replace(r#""guards":[]"#, r#""guards":{}"#);
        let e = Session::import_state(bad.as_bytes(), "s").unwrap_err();
        assert_eq!(
            e.to_string(),
            "session state field `guards`: expected an array"
        );
        assert!(matches!(
            Session::import_state(b"{", "s"),
            Err(StateError::Json(_))
        ));
        assert!(Session::import_state(b"[]", "s").is_err());
    }

    #[test]
    fn a_blocked_loop_stays_blocked_after_restore() {
        let policy = crate::Policy::enabled();
        let args = Value::parse(br#"{"path":"/x"}"#).unwrap();
        let res = Value::from("same");
        let mut s = Session::new("s");
        for _ in 0..20 {
            let c = Call::new("read", &args);
            let _ = s.before_call(&policy, &c);
            let _ = s.after_call(&policy, &c, Outcome::Result(&res));
        }
        let mut r = Session::import_state(&s.export_state(), "s").unwrap();
        for _ in 0..3 {
            assert!(r.before_call(&policy, &Call::new("read", &args)).is_block());
            r = Session::import_state(&r.export_state(), "s").unwrap();
        }
    }

    /// Drives `runs` one-call runs, run `run-<i>` for each `i` in `order`.
    fn one_call_runs(
        s: &mut Session,
        policy: &crate::Policy,
        order: impl IntoIterator<Item = usize>,
    ) {
        let args = Value::parse(br#"{"path":"/x"}"#).unwrap();
        let res = Value::from("same");
        for i in order {
            let run = format!("run-{i}");
            let c = Call::new("read", &args).run(run.as_str());
            let _ = s.before_call(policy, &c);
            let _ = s.after_call(policy, &c, Outcome::Result(&res));
        }
    }

    /// A version-2 snapshot (guards sorted by run, every run's guard) is still read, and
    /// the restored session decides as the one that wrote it: its armed guard aborts.
    #[test]
    fn a_version_2_snapshot_is_read() {
        let policy = policy();
        let mut s = Session::new("s");
        let _ = s.on_compaction(&policy, Some(&"b".into()));
        let _ = s.on_compaction(&policy, Some(&"a".into()));
        let v3 = String::from_utf8(s.export_state()).unwrap();
        // Version 3 lists "b" first (least recently used); version 2 sorted by run.
        assert!(v3.find(r#""run":"b""#) < v3.find(r#""run":"a""#), "{v3}");
        let guard = |run: &str| {
            format!(
                r#"{{"run":"{run}","enabled":true,"windowSize":3,"remaining":3,"first":null,"observed":0,"allEqual":false}}"#
            )
        };
        let v2 = format!(
            r#"{{"format":"loopguard-session-state","version":2,"id":"s","mode":"enforce","history":[],"warnings":[],"guards":[{},{}]}}"#,
            guard("a"),
            guard("b")
        );
        let mut r = Session::import_state(v2.as_bytes(), "s").unwrap();
        assert_eq!(r.run_guard_count(), 2);
        let args = Value::parse(br#"{"q":1}"#).unwrap();
        let res = Value::from("503");
        let mut aborts = Vec::new();
        for _ in 0..3 {
            let c = Call::new("gateway", &args).run("a");
            let _ = r.before_call(&policy, &c);
            aborts.push(
                r.after_call(&policy, &c, Outcome::Result(&res))
                    .abort
                    .map(|a| a.count),
            );
        }
        assert_eq!(aborts, [None, None, Some(3)]);
    }

    /// A session keeps the guards of its [`MAX_RUN_GUARDS`] most recently used runs,
    /// whatever the number of runs it has seen (bounded state).
    #[test]
    fn run_guards_are_capped_least_recently_used_first() {
        use crate::session::MAX_RUN_GUARDS;
        let policy = policy();
        let mut s = Session::new("s");
        one_call_runs(&mut s, &policy, 0..10_000);
        assert_eq!(s.run_guard_count(), MAX_RUN_GUARDS);
        assert!(s.guard(Some("run-9999")).is_some());
        assert!(s
            .guard(Some(&format!("run-{}", 10_000 - MAX_RUN_GUARDS)))
            .is_some());
        assert!(s
            .guard(Some(&format!("run-{}", 9_999 - MAX_RUN_GUARDS)))
            .is_none());
        let small = s.export_state().len();
        assert!(small < 20_000, "{small} bytes");

        // A run in use is never the least recently used: armed before 1,000 other runs and
        // touched between them, its guard survives and aborts the loop.
        let mut s = Session::new("s");
        let _ = s.on_compaction(&policy, Some(&"long".into()));
        let args = Value::parse(br#"{"q":1}"#).unwrap();
        let res = Value::from("503");
        let mut aborts = Vec::new();
        for round in 0..3 {
            one_call_runs(&mut s, &policy, round * 40..round * 40 + 40);
            let c = Call::new("gateway", &args).run("long");
            let _ = s.before_call(&policy, &c);
            aborts.push(
                s.after_call(&policy, &c, Outcome::Result(&res))
                    .abort
                    .map(|a| a.count),
            );
        }
        assert_eq!(aborts, [None, None, Some(3)]);

        // Left alone while more than MAX_RUN_GUARDS other runs ran, it is evicted.
        let _ = s.on_compaction(&policy, Some(&"long".into()));
        one_call_runs(&mut s, &policy, 1_000..1_000 + MAX_RUN_GUARDS);
        assert!(s.guard(Some("long")).is_none());
    }

    /// Eviction order survives a restore: random interleavings of 100 runs decide the same
    /// with and without a round trip through the snapshot.
    #[test]
    fn the_eviction_order_survives_a_restore() {
        use proptest::prelude::*;
        let policy = policy();
        proptest!(ProptestConfig::with_cases(32), |(
            runs in proptest::collection::vec(0usize..100, 1..400),
            compact in proptest::collection::vec(0usize..100, 0..40),
            split in 0usize..400,
        )| {
            let split = split.min(runs.len());
            let mut a = Session::new("s");
            for r in &compact {
                let _ = a.on_compaction(&policy, Some(&format!("run-{r}").as_str().into()));
            }
            one_call_runs(&mut a, &policy, runs[..split].iter().copied());
            let mut b = Session::import_state(&a.export_state(), "s").unwrap();
            prop_assert_eq!(b.export_state(), a.export_state());
            one_call_runs(&mut a, &policy, runs[split..].iter().copied());
            one_call_runs(&mut b, &policy, runs[split..].iter().copied());
            prop_assert_eq!(a.export_state(), b.export_state());
        });
    }

    /// `Session::restore` keeps a custom send classifier, which `import_state` cannot:
    /// with it, twenty sends whose results differ only in their message id are a loop.
    #[test]
    fn restore_keeps_the_hashing_settings() {
        use crate::outcome::{Hashing, SendClassifier};
        use crate::value::Object;
        use std::sync::Arc;

        struct Sms;
        impl SendClassifier for Sms {
            fn is_channel_send(&self, tool: &[u8], _args: &Object<'_>) -> bool {
                tool == b"sms"
            }
        }
        let hashing = Hashing {
            sends: Arc::new(Sms),
        };
        let policy = crate::Policy::enabled();
        let args = Value::parse(br#"{"to":"+15550100","text":"hello"}"#).unwrap();
        let send = |s: &mut Session, i: u32| {
            let c = Call::new("sms", &args);
            let d = s.before_call(&policy, &c);
            let res = Value::parse(
                format!(r#"{{"details":{{"ok":true,"messageId":"m{i}"}}}}"#).as_bytes(),
            )
            .unwrap()
            .into_owned();
            let _ = s.after_call(&policy, &c, Outcome::Result(&res));
            d.is_block()
        };
        let mut s = Session::new("s").with_hashing(hashing.clone());
        for i in 0..15 {
            assert!(!send(&mut s, i));
        }
        let bytes = s.export_state();
        let first_block = |mut s: Session| (15..30).find(|i| send(&mut s, *i));

        let restored = Session::restore(&bytes).hashing(hashing).build().unwrap();
        assert_eq!(restored.id(), "s");
        assert_eq!(first_block(restored), Some(20));
        // Without it the ids count as progress and the sends are never blocked.
        assert_eq!(
            first_block(Session::import_state(&bytes, "s").unwrap()),
            None
        );
    }

    #[test]
    fn restore_overrides_the_mode_and_keeps_the_saved_id() {
        let bytes = Session::new("saved").export_state();
        let r = Session::restore(&bytes)
            .mode(Mode::Observe)
            .build()
            .unwrap();
        assert_eq!((r.id(), r.mode()), ("saved", Mode::Observe));
        let r = Session::restore(&bytes).build().unwrap();
        assert_eq!(r.mode(), Mode::Enforce);
    }
}
