//! The outcome ledger of loopguard's extra detectors (the `strict` profile).
//!
//! OpenClaw's detectors read the session's call history; the extra detectors need two
//! things it does not keep: whether an outcome was a **failure** (and which one, as a
//! normalised identity), and what survives a **compaction**. The ledger keeps them, and
//! is written only when an extra detector that needs it is switched on, so the default
//! profile's state (and its exported bytes) is exactly OpenClaw's.
//!
//! Everything is bounded: at most `historySize` outcomes (and never more than
//! [`MAX_ENTRIES`]), at most [`MAX_RUNS`] runs (least recently used first out), at most
//! [`MAX_MARKS`] loop marks per run. It is saved and restored with the session
//! ([`crate::state`]).

use std::collections::VecDeque;

use sha2::{Digest, Sha256};

use crate::fingerprint::ArgsDigest;
use crate::history::Name;
use crate::outcome::{extract_text, format_error, Outcome, ResultHash};
use crate::value::Value;

/// The most outcomes the ledger keeps, whatever `historySize` says.
pub const MAX_ENTRIES: usize = 1000;
/// The most runs whose compaction count, loop marks and critical count are kept.
pub const MAX_RUNS: usize = 64;
/// The most loop marks one run keeps across compactions.
pub const MAX_MARKS: usize = 16;

/// A normalised failure: 8 bytes of SHA-256 over the failure's identity text.
pub type FailureId = [u8; 8];

/// One outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct LedgerEntry {
    /// The normalised run id.
    pub run: Option<Name>,
    /// The tool.
    pub tool: Name,
    /// The argument digest.
    pub args: ArgsDigest,
    /// The outcome hash.
    pub result: ResultHash,
    /// Set when the outcome was a failure: its normalised identity.
    pub failure: Option<FailureId>,
    /// The run's compaction count when the outcome was recorded.
    pub epoch: u32,
    /// The normalised call and outcome, for the drift detectors (set only when one of
    /// them is on; not saved with the session state).
    pub sketch: Option<Box<super::sketch::Sketch>>,
}

impl LedgerEntry {
    pub(crate) fn same_call(&self, tool: &[u8], args: &ArgsDigest) -> bool {
        self.args == *args && same_bytes(self.tool.as_wtf8(), tool)
    }
}

/// Byte equality of short names (tools, runs) without a call to `memcmp`, which costs more
/// than the comparison itself for a few bytes; the detectors compare a name per entry.
#[inline]
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    if a.len() > 16 {
        return a == b;
    }
    a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// An outcome to record (see [`Ledger::record`]).
pub(crate) struct NewOutcome<'t> {
    /// The tool; the entry shares the allocation of an equal name it already holds.
    pub(crate) tool: &'t crate::value::JsString<'t>,
    pub(crate) args: ArgsDigest,
    pub(crate) result: ResultHash,
    pub(crate) failure: Option<FailureId>,
    pub(crate) sketch: Option<Box<super::sketch::Sketch>>,
}

/// A loop seen repeating before a compaction.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopMark {
    /// The tool.
    pub tool: Name,
    /// The argument digest.
    pub args: ArgsDigest,
    /// The repeated outcome.
    pub result: ResultHash,
    /// How many compactions it was repeating before.
    pub seen: u32,
}

/// Per-run state.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunState {
    /// The normalised run id.
    pub run: Option<Name>,
    /// Compactions seen in this run.
    pub compactions: u32,
    /// Critical detections (blocks) in this run.
    pub criticals: u64,
    /// Set once a second critical ended the run.
    pub ended: bool,
    /// Loops that survived compactions.
    pub marks: Vec<LoopMark>,
}

/// The extra detectors' state of one session.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ledger {
    entries: VecDeque<LedgerEntry>,
    runs: VecDeque<RunState>,
    /// How many of the newest entries belong to the newest entry's run (derived from
    /// `entries`): a walk over that run passes them without comparing their run names.
    run_tail: usize,
}

fn run_eq(a: Option<&Name>, b: Option<&[u8]>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => same_bytes(a.as_wtf8(), b),
        (None, None) => true,
        _ => false,
    }
}

impl Ledger {
    /// `true` when nothing was ever recorded.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.runs.is_empty()
    }

    /// Every outcome kept, oldest first.
    pub fn entries(&self) -> &VecDeque<LedgerEntry> {
        &self.entries
    }

    /// Every run kept, least recently used first.
    pub fn runs(&self) -> &VecDeque<RunState> {
        &self.runs
    }

    /// A ledger rebuilt from its parts (for [`crate::Session::restore`]); the bounds are
    /// applied.
    pub fn from_parts(
        entries: impl IntoIterator<Item = LedgerEntry>,
        runs: impl IntoIterator<Item = RunState>,
    ) -> Ledger {
        let mut l = Ledger {
            entries: entries.into_iter().collect(),
            runs: runs.into_iter().collect(),
            run_tail: 0,
        };
        while l.entries.len() > MAX_ENTRIES {
            l.entries.pop_front();
        }
        let newest = l.entries.back().map(|e| e.run.clone());
        l.run_tail = newest.map_or(0, |run| {
            l.entries.iter().rev().take_while(|e| e.run == run).count()
        });
        while l.runs.len() > MAX_RUNS {
            l.runs.pop_front();
        }
        for r in &mut l.runs {
            r.marks.truncate(MAX_MARKS);
        }
        l
    }

    /// Sets every entry's sketch, oldest first (for [`crate::state`]; extra items are
    /// ignored).
    pub(crate) fn set_sketches(&mut self, sketches: Vec<Option<Box<super::sketch::Sketch>>>) {
        for (e, s) in self.entries.iter_mut().zip(sketches) {
            e.sketch = s;
        }
    }

    /// The outcomes of one run, oldest first.
    #[inline]
    pub(crate) fn scoped<'l>(&'l self, run: Option<&'l [u8]>) -> Scoped<'l> {
        // The newest entries of the newest entry's run pass without a comparison (a walk
        // over the current run, newest first, usually ends before the older ones).
        let newest_matches = self
            .entries
            .back()
            .is_some_and(|e| run_eq(e.run.as_ref(), run));
        let len = self.entries.len();
        let plain = if newest_matches {
            self.run_tail.min(len)
        } else {
            0
        };
        Scoped {
            iter: self.entries.iter(),
            checked: len - plain,
            plain,
            run,
        }
    }

    /// The state of a run, if kept.
    pub fn run(&self, run: Option<&[u8]>) -> Option<&RunState> {
        self.runs.iter().find(|r| run_eq(r.run.as_ref(), run))
    }

    /// The state of a run, created (and moved to the most recent place) on demand.
    fn run_mut(&mut self, run: Option<&[u8]>) -> &mut RunState {
        let pos = self.runs.iter().position(|r| run_eq(r.run.as_ref(), run));
        let state = match pos {
            Some(i) => self.runs.remove(i).unwrap_or_default(),
            None => RunState {
                run: run.map(|r| crate::history::name_from_vec(r.to_vec())),
                ..Default::default()
            },
        };
        if self.runs.len() >= MAX_RUNS {
            self.runs.pop_front();
        }
        self.runs.push_back(state);
        self.runs.back_mut().expect("just pushed")
    }

    /// A tool name for a new entry: the newest entry's of the same tool shares its
    /// allocation (most calls repeat a tool of the last few).
    pub(crate) fn tool_name(&self, tool: &crate::value::JsString<'_>) -> Name {
        self.entries
            .iter()
            .rev()
            .take(8)
            .find(|e| same_bytes(e.tool.as_wtf8(), tool.as_wtf8()))
            .map_or_else(|| tool.to_shared(), |e| e.tool.clone())
    }

    /// Records an outcome; keeps at most `cap` outcomes (and [`MAX_ENTRIES`]). Returns the
    /// sketch of an outcome let go, if any, for its allocations to be used again.
    pub(crate) fn record(
        &mut self,
        run: Option<&[u8]>,
        o: NewOutcome<'_>,
        cap: usize,
    ) -> Option<Box<super::sketch::Sketch>> {
        let epoch = self.run(run).map_or(0, |r| r.compactions);
        // Room first: the outcome let go hands its names to the new one when they are the
        // same (the usual case), instead of one more reference taken and one let go.
        let cap = cap.clamp(1, MAX_ENTRIES);
        let mut spare = None;
        let mut freed = None;
        while self.entries.len() >= cap {
            let Some(e) = self.entries.pop_front() else {
                break;
            };
            spare = e.sketch.or(spare);
            freed = Some((e.tool, e.run));
        }
        let (freed_tool, freed_run) = freed.unzip();
        // The run name, shared with the newest entry's when it is the same run.
        let newest = self.entries.back().map(|e| e.run.as_ref());
        let same_run = newest.is_some_and(|r| run_eq(r, run));
        self.run_tail = if same_run { self.run_tail + 1 } else { 1 };
        let run = match freed_run {
            Some(r) if run_eq(r.as_ref(), run) => r,
            _ if same_run => newest.flatten().cloned(),
            _ => run.map(|run| {
                let lone = std::str::from_utf8(run).is_err();
                crate::value::JsString::from_wtf8(run.into(), lone).to_shared()
            }),
        };
        let tool = match freed_tool {
            Some(t) if same_bytes(t.as_wtf8(), o.tool.as_wtf8()) => t,
            _ => self.tool_name(o.tool),
        };
        self.entries.push_back(LedgerEntry {
            run,
            tool,
            args: o.args,
            result: o.result,
            failure: o.failure,
            epoch,
            sketch: o.sketch,
        });
        self.run_tail = self.run_tail.min(self.entries.len());
        spare
    }

    /// A call blocked in enforce mode (`countVetoes`, strict profile): it never ran, but
    /// it counts toward the streak it was blocked for, so a model that retries a blocked
    /// call escalates (OpenClaw's newest rule records the veto too). It is recorded as one
    /// more repeat of the newest outcome it repeats: of the same call if there is one, else
    /// of the same tool with the same [shape](super::sketch) of arguments, else of the same
    /// tool. Its sketch, when the drift detectors keep sketches, is the proposed call's
    /// with that outcome, flagged [`super::sketch::VETOED`] (cycles look through it). A
    /// call whose tool has no outcome in the run (a missing tool, a run ended by a second
    /// critical) has nothing to repeat and is not recorded. Returns whether it was.
    pub(crate) fn record_veto(
        &mut self,
        run: Option<&[u8]>,
        tool: &Name,
        args: ArgsDigest,
        proposed: Option<&super::sketch::ArgsSketch>,
        cap: usize,
    ) -> bool {
        let (mut same_shape, mut same_tool) = (None, None);
        let mut evidence = None;
        for e in self.scoped(run).rev() {
            if e.tool != *tool {
                continue;
            }
            if e.args == args {
                evidence = Some(e);
                break;
            }
            let shape = e.sketch.as_ref().map(|s| s.args.shape);
            if same_shape.is_none() && proposed.is_some_and(|p| Some(p.shape) == shape) {
                same_shape = Some(e);
            }
            same_tool = same_tool.or(Some(e));
        }
        let Some(e) = evidence.or(same_shape).or(same_tool) else {
            return false;
        };
        let (result, failure) = (e.result, e.failure);
        let sketch = e.sketch.as_ref().map(|s| {
            let args = proposed.cloned().unwrap_or_else(|| s.args.clone());
            Box::new(super::sketch::Sketch {
                flags: args.flags
                    | (s.flags & (super::sketch::EMPTY_OUTCOME | super::sketch::SHELL_ERROR))
                    | super::sketch::VETOED,
                args,
                outcome: s.outcome,
                counts: s.counts,
            })
        });
        let o = NewOutcome {
            tool,
            args,
            result,
            failure,
            sketch,
        };
        let _ = self.record(run, o, cap);
        true
    }

    /// A compaction finished: the loops repeating since the previous one are marked (a
    /// mark seen before counts one more compaction), and the run's epoch moves on.
    pub(crate) fn compaction(&mut self, run: Option<&[u8]>) {
        let epoch = self.run(run).map_or(0, |r| r.compactions);
        let mut repeated: Vec<(Name, ArgsDigest, ResultHash, u32)> = Vec::new();
        for e in self.scoped(run).filter(|e| e.epoch == epoch) {
            match repeated
                .iter_mut()
                .find(|(t, a, r, _)| *a == e.args && *r == e.result && t == &e.tool)
            {
                Some(x) => x.3 += 1,
                None => repeated.push((e.tool.clone(), e.args, e.result, 1)),
            }
        }
        let state = self.run_mut(run);
        for (tool, args, result, n) in repeated {
            if n < 2 {
                continue;
            }
            match state
                .marks
                .iter_mut()
                .find(|m| m.args == args && m.result == result && m.tool == tool)
            {
                Some(m) => m.seen = m.seen.saturating_add(1),
                None => {
                    if state.marks.len() >= MAX_MARKS {
                        state.marks.remove(0);
                    }
                    state.marks.push(LoopMark {
                        tool,
                        args,
                        result,
                        seen: 1,
                    });
                }
            }
        }
        state.compactions = state.compactions.saturating_add(1);
    }

    /// Counts a critical detection in `run`; returns the run's count.
    pub(crate) fn note_critical(&mut self, run: Option<&[u8]>) -> u64 {
        let state = self.run_mut(run);
        state.criticals = state.criticals.saturating_add(1);
        state.criticals
    }

    /// Marks `run` as ended.
    pub(crate) fn end_run(&mut self, run: Option<&[u8]>) {
        self.run_mut(run).ended = true;
    }
}

/// The outcomes of one run ([`Ledger::scoped`]), either way: the newest entries known to be
/// in the run pass as they are, the older ones are compared.
#[derive(Clone)]
pub(crate) struct Scoped<'l> {
    iter: std::collections::vec_deque::Iter<'l, LedgerEntry>,
    /// How many of the entries left, from the oldest, need their run compared.
    checked: usize,
    /// How many of the entries left, from the newest, are known to be in the run.
    plain: usize,
    run: Option<&'l [u8]>,
}

impl<'l> Iterator for Scoped<'l> {
    type Item = &'l LedgerEntry;

    #[inline]
    fn next(&mut self) -> Option<&'l LedgerEntry> {
        while self.checked > 0 {
            self.checked -= 1;
            let e = self.iter.next()?;
            if run_eq(e.run.as_ref(), self.run) {
                return Some(e);
            }
        }
        if self.plain == 0 {
            return None;
        }
        self.plain -= 1;
        self.iter.next()
    }
}

impl<'l> DoubleEndedIterator for Scoped<'l> {
    #[inline]
    fn next_back(&mut self) -> Option<&'l LedgerEntry> {
        if self.plain > 0 {
            self.plain -= 1;
            return self.iter.next_back();
        }
        while self.checked > 0 {
            self.checked -= 1;
            let e = self.iter.next_back()?;
            if run_eq(e.run.as_ref(), self.run) {
                return Some(e);
            }
        }
        None
    }
}

/// Whether an outcome is a failure, and its normalised identity.
///
/// A failure is a thrown error; a result whose `details` say `status: "failed"` or a
/// non-zero `exitCode` (OpenClaw's `exec` shape, which the Claude Code profile also uses);
/// or a text result that starts with `<returncode>N</returncode>`, N not 0
/// (mini-swe-agent's observation). The identity is the error text, or the exit code and
/// the output, [normalised](normalize_failure_text) so that the same error about a
/// different file is the same failure.
pub fn failure_identity(outcome: Outcome<'_, '_>) -> Option<FailureId> {
    let text = match outcome {
        Outcome::Undefined => return None,
        Outcome::Error(e) => {
            let msg = format_error(e);
            format!("error:{}", normalize_failure_text(&msg.to_string_lossy()))
        }
        Outcome::Result(r) => result_failure(r)?.text,
    };
    let digest = Sha256::digest(text.as_bytes());
    let mut id = [0u8; 8];
    id.copy_from_slice(&digest[..8]);
    Some(id)
}

/// The identity of a failure in a call of `tool` with `args`, for the ledger: the
/// [`failure_identity`] of a failure whose output says what went wrong, so the same
/// failure counts across changing arguments (timestamps, clock times, durations, pids and
/// attempt numbers are blanked by [`normalize_failure_text`]). A failed command whose
/// output says nothing (empty, only "(Command exited with code N)", or timed out) is
/// identified with its call: two different commands that both fail silently (a `grep`
/// that finds nothing) are not one failure (OpenClaw's newest `failureIdentityHash` is
/// likewise only taken for a terminal failure with output).
pub(crate) fn call_failure_identity(
    outcome: Outcome<'_, '_>,
    tool: &[u8],
    args: &ArgsDigest,
) -> Option<FailureId> {
    let id = failure_identity(outcome)?;
    let silent = match outcome {
        Outcome::Result(r) => result_failure(r).is_some_and(|f| f.silent),
        _ => false,
    };
    if !silent {
        return Some(id);
    }
    let mut h = Sha256::new();
    h.update(b"call:");
    h.update(id);
    h.update(tool);
    h.update(b":");
    h.update(args.0);
    let digest = h.finalize();
    let mut out = [0u8; 8];
    out.copy_from_slice(&digest[..8]);
    Some(out)
}

/// A failed result: its identity text, and whether its output says nothing.
struct ResultFailure {
    text: String,
    silent: bool,
}

/// Whether a failed command's output says nothing about the failure.
fn says_nothing(output: &str, timed_out: bool) -> bool {
    let t = output.trim();
    if timed_out || t.is_empty() {
        return true;
    }
    // OpenClaw's placeholder for a command without output.
    t.strip_prefix("(Command exited with code ")
        .and_then(|rest| rest.strip_suffix(')'))
        .is_some_and(|n| {
            n.trim_start_matches('-')
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
}

/// The field `key` of an object (as [`Value::get`], comparing the few bytes of each key
/// in place).
fn field<'v>(v: &'v Value<'_>, key: &[u8]) -> Option<&'v Value<'v>> {
    let Value::Object(o) = v else { return None };
    o.iter()
        .find(|(k, _)| same_bytes(k.as_wtf8(), key))
        .map(|(_, v)| v)
}

fn result_failure(r: &Value<'_>) -> Option<ResultFailure> {
    if let Some(details) = field(r, b"details") {
        let status = field(details, b"status").and_then(Value::as_str);
        let code = field(details, b"exitCode").and_then(Value::as_f64);
        let failed = status == Some("failed") || code.is_some_and(|c| c != 0.0);
        if failed {
            let output = details
                .get("aggregated")
                .and_then(Value::as_str)
                .filter(|s| !s.trim().is_empty())
                .map(str::to_string)
                .unwrap_or_else(|| extract_text(r).to_string_lossy().into_owned());
            let timed_out = details.get("timedOut").and_then(Value::as_bool) == Some(true);
            return Some(ResultFailure {
                text: format!(
                    "exit:{}:{}",
                    code.map_or_else(|| "?".to_string(), |c| c.to_string()),
                    normalize_failure_text(&output)
                ),
                silent: says_nothing(&output, timed_out),
            });
        }
        return None;
    }
    let text = extract_text(r);
    let text = text.to_string_lossy();
    let rest = text.strip_prefix("<returncode>")?;
    let (code, output) = rest.split_once("</returncode>")?;
    let code: i64 = code.trim().parse().ok()?;
    let bare = output.replace("<output>", "").replace("</output>", "");
    (code != 0).then(|| ResultFailure {
        text: format!("exit:{code}:{}", normalize_failure_text(output)),
        silent: says_nothing(&bare, false),
    })
}

/// Normalises a failure's text: lowercase, whitespace collapsed, numbers replaced by `#`,
/// quoted strings and path-like words (with `/`, `\` or a dotted file name) by `<v>`, and
/// at most 2,000 characters kept.
pub fn normalize_failure_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(2000));
    for word in text.split_whitespace() {
        if out.len() >= 2000 {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        let quoted = word.len() >= 2
            && matches!(word.as_bytes()[0], b'\'' | b'"' | b'`')
            && word.trim_end_matches([',', '.', ':', ';', ')']).len() >= 2
            && word
                .trim_end_matches([',', '.', ':', ';', ')'])
                .ends_with(['\'', '"', '`']);
        let trimmed = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '/' && c != '\\');
        let pathlike = trimmed.contains('/')
            || trimmed.contains('\\')
            || trimmed
                .split_once('.')
                .is_some_and(|(a, b)| !a.is_empty() && b.starts_with(char::is_alphabetic));
        if quoted || pathlike {
            out.push_str("<v>");
            continue;
        }
        let mut in_number = false;
        for c in word.chars() {
            if c.is_ascii_digit() {
                if !in_number {
                    out.push('#');
                }
                in_number = true;
            } else {
                in_number = false;
                out.extend(c.to_lowercase());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Outcome, Value};

    #[test]
    /// The example that documented `failure_identity` before it became crate-private.
    fn example_failure_identity() -> Result<(), crate::json::ParseError> {
        let a = Value::from("ENOENT: no such file or directory, open '/tmp/a.txt'");
        let b = Value::from("ENOENT: no such file or directory, open '/tmp/b/c.txt'");
        assert_eq!(
            failure_identity(Outcome::Error(&a)),
            failure_identity(Outcome::Error(&b))
        );
        let ok = Value::parse(br#"{"details":{"status":"completed","exitCode":0}}"#)?;
        assert_eq!(failure_identity(Outcome::Result(&ok)), None);
        Ok(())
    }

    #[test]
    /// The example that documented `normalize_failure_text` before it became crate-private.
    fn example_normalize_failure_text() {
        assert_eq!(
            normalize_failure_text("FileNotFoundError: [Errno 2] No such file: 'a.py'"),
            normalize_failure_text("FileNotFoundError: [Errno 2] No such file: 'src/b.py'"),
        );
        assert_ne!(
            normalize_failure_text("permission denied"),
            normalize_failure_text("not found")
        );
    }

    fn name(s: &str) -> Name {
        crate::history::name_from_vec(s.as_bytes().to_vec())
    }

    #[test]
    fn mini_swe_agent_return_codes_and_exec_details() {
        let text = |t: &str| {
            Value::parse(format!(r#"{{"content":[{{"type":"text","text":{t:?}}}]}}"#).as_bytes())
                .unwrap()
                .into_owned()
        };
        let ok = text("<returncode>0</returncode>\n<output>fine</output>");
        let bad = text("<returncode>1</returncode>\n<output>boom</output>");
        assert_eq!(failure_identity(Outcome::Result(&ok)), None);
        assert!(failure_identity(Outcome::Result(&bad)).is_some());
        let plain = text("just text");
        assert_eq!(failure_identity(Outcome::Result(&plain)), None);
        let failed = Value::parse(
            br#"{"details":{"status":"failed","exitCode":2,"aggregated":"ls: x: No such file"}}"#,
        )
        .unwrap();
        assert!(failure_identity(Outcome::Result(&failed)).is_some());
    }

    fn exec_failed(code: i64, aggregated: &str, timed_out: bool) -> Value<'static> {
        Value::parse(
            format!(
                r#"{{"content":[{{"type":"text","text":"(Command exited with code {code})"}}],"details":{{"status":"failed","exitCode":{code},"timedOut":{timed_out},"aggregated":{aggregated:?}}}}}"#
            )
            .as_bytes(),
        )
        .unwrap()
        .into_owned()
    }

    #[test]
    fn failed_exec_identity_strips_timestamps_durations_pids_and_attempts() {
        let a = exec_failed(
            1,
            "[2026-11-30T09:14:02.113Z] attempt 1/5: connect ECONNREFUSED 127.0.0.1:5432 (pid 4411) after 1.52s",
            false,
        );
        let b = exec_failed(
            1,
            "[2026-12-01T17:40:55.902Z] attempt 4/5: connect ECONNREFUSED 127.0.0.1:5432 (pid 9020) after 12.07s",
            false,
        );
        let (x, y) = (ArgsDigest([1; 32]), ArgsDigest([2; 32]));
        // Different arguments, the same failure: one identity, so the tail counts.
        let ia = call_failure_identity(Outcome::Result(&a), b"exec", &x);
        let ib = call_failure_identity(Outcome::Result(&b), b"exec", &y);
        assert!(ia.is_some());
        assert_eq!(ia, ib);
        // Another failure is another identity.
        let c = exec_failed(1, "permission denied: /etc/shadow", false);
        assert_ne!(ia, call_failure_identity(Outcome::Result(&c), b"exec", &x));
        // A mini-swe-agent observation, with a clock time and a duration.
        let text = |t: &str| {
            Value::parse(format!(r#"{{"content":[{{"type":"text","text":{t:?}}}]}}"#).as_bytes())
                .unwrap()
                .into_owned()
        };
        let m1 =
            text("<returncode>2</returncode><output>12:01:07 retry 2 failed in 340ms</output>");
        let m2 =
            text("<returncode>2</returncode><output>12:09:55 retry 7 failed in 1210ms</output>");
        assert_eq!(
            call_failure_identity(Outcome::Result(&m1), b"bash", &x),
            call_failure_identity(Outcome::Result(&m2), b"bash", &y)
        );
    }

    #[test]
    fn a_failure_that_says_nothing_is_identified_with_its_call() {
        let (x, y) = (ArgsDigest([1; 32]), ArgsDigest([2; 32]));
        for silent in [
            exec_failed(1, "", false),
            exec_failed(1, "(Command exited with code 1)", false),
            exec_failed(124, "still compiling...", true),
        ] {
            let a = call_failure_identity(Outcome::Result(&silent), b"exec", &x);
            let b = call_failure_identity(Outcome::Result(&silent), b"exec", &y);
            assert!(a.is_some());
            // Two different commands failing silently are two failures...
            assert_ne!(a, b);
            // ...and the same command failing silently again is the same one.
            assert_eq!(
                a,
                call_failure_identity(Outcome::Result(&silent), b"exec", &x)
            );
        }
        let text = Value::parse(
            br#"{"content":[{"type":"text","text":"<returncode>1</returncode>\n<output>\n</output>"}]}"#,
        )
        .unwrap();
        assert_ne!(
            call_failure_identity(Outcome::Result(&text), b"bash", &x),
            call_failure_identity(Outcome::Result(&text), b"bash", &y)
        );
        // A thrown error keeps its own identity across arguments.
        let e = Value::from("ENOENT: no such file or directory, open '/tmp/a'");
        assert_eq!(
            call_failure_identity(Outcome::Error(&e), b"read", &x),
            call_failure_identity(Outcome::Error(&e), b"read", &y)
        );
    }

    #[test]
    fn bounded_runs_and_entries() {
        let mut l = Ledger::default();
        let h = ResultHash {
            is_error: false,
            digest: [0; 32],
        };
        for i in 0..(MAX_RUNS * 2) {
            let run = format!("r{i}");
            let t = name("t");
            let o = NewOutcome {
                tool: &t,
                args: ArgsDigest([0; 32]),
                result: h,
                failure: None,
                sketch: None,
            };
            l.record(Some(run.as_bytes()), o, 30);
            l.note_critical(Some(run.as_bytes()));
        }
        assert_eq!(l.entries().len(), 30);
        assert_eq!(l.runs().len(), MAX_RUNS);
        // A new loop before every compaction: the oldest marks make room.
        for k in 0..(MAX_MARKS * 3) {
            for _ in 0..2 {
                let t = name("t");
                let o = NewOutcome {
                    tool: &t,
                    args: ArgsDigest([k as u8; 32]),
                    result: h,
                    failure: None,
                    sketch: None,
                };
                l.record(None, o, 30);
            }
            l.compaction(None);
        }
        let run = l.run(None).unwrap();
        assert_eq!(run.marks.len(), MAX_MARKS);
        assert_eq!(
            run.marks.last().unwrap().args,
            ArgsDigest([(MAX_MARKS * 3 - 1) as u8; 32])
        );
        assert_eq!(run.compactions, (MAX_MARKS * 3) as u32);
    }
}
