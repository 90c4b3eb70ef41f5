//! The session's rolling history of tool calls (`toolCallHistory`).
//!
//! One history per session, shared by all of its runs: trimming ignores run ids, while
//! detection only looks at the records of the current run ([`History::scoped`]). A call is
//! recorded before it runs; its outcome is attached to that record afterwards, or appended
//! as a new record when no pending record matches (OpenClaw's `recordToolCallOutcome`).

use std::collections::VecDeque;

use crate::fingerprint::ArgsDigest;
use crate::outcome::ResultHash;
use crate::value::JsString;

/// An owned JavaScript string (tool names, run ids and call ids are held as given).
pub type Name = JsString<'static>;

/// One history entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The tool name as given.
    pub tool: Name,
    /// The argument digest (`argsHash` is `tool:hex(args)`).
    pub args: ArgsDigest,
    /// The provider's call id, used to pair the outcome with the call.
    pub call_id: Option<Name>,
    /// The normalised run id (trimmed, never empty).
    pub run: Option<Name>,
    /// Set when the outcome is recorded.
    pub result: Option<ResultHash>,
    /// The missing tool an error named, if any.
    pub unknown_tool: Option<Box<str>>,
    /// Milliseconds since the epoch, as the caller reported it; set once.
    pub timestamp_ms: u64,
    /// Records appended while the same run id was current share a tag, so the run filter
    /// compares integers instead of strings (see [`History::scope`]).
    run_tag: u64,
}

impl Record {
    /// A pending record of a call (no outcome yet).
    pub fn new(
        tool: Name,
        args: ArgsDigest,
        call_id: Option<Name>,
        run: Option<Name>,
        timestamp_ms: u64,
    ) -> Self {
        Record {
            tool,
            args,
            call_id,
            run,
            result: None,
            unknown_tool: None,
            timestamp_ms,
            run_tag: 0,
        }
    }

    /// `true` when the record's `argsHash` string is `tool:hex(args)`.
    #[inline]
    pub fn same_call(&self, tool: &[u8], args: &ArgsDigest) -> bool {
        // The digest differs far more often than the tool, so it is compared first.
        self.args == *args && self.tool.as_wtf8() == tool
    }

    /// `true` when two records have the same `argsHash` string.
    #[inline]
    pub fn same_signature(&self, other: &Record) -> bool {
        self.same_call(other.tool.as_wtf8(), &other.args)
    }

    fn in_run(&self, run: Option<&[u8]>) -> bool {
        self.run.as_ref().map(JsString::as_wtf8) == run
    }
}

/// Normalises a run id as OpenClaw does: trimmed; blank means none.
///
/// ```
/// use loopguard_core::normalize_run;
/// assert_eq!(normalize_run(Some(b" run-1 ")), Some(&b"run-1"[..]));
/// assert_eq!(normalize_run(Some(b"   ")), None);
/// ```
pub fn normalize_run(run: Option<&[u8]>) -> Option<&[u8]> {
    run.map(crate::text::js_trim).filter(|r| !r.is_empty())
}

/// The rolling history of one session.
///
/// ```
/// use loopguard_core::{Call, Policy, Session, Value};
/// let mut session = Session::new("s");
/// let args = Value::parse(br#"{"path":"/a"}"#)?;
/// let _ = session.before_call(&Policy::enabled(), &Call::new("read", &args));
/// assert_eq!(session.history().len(), 1);
/// # Ok::<(), loopguard_core::json::ParseError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct History {
    records: VecDeque<Record>,
    /// The first eight bytes of each record's argument digest, in the records' order: the
    /// no-progress walk compares these (eight records to a cache line) and reads a record only
    /// when its key matches (the records of many sessions are cold, one line each).
    keys: VecDeque<u64>,
    /// The run id of the newest tagged record, and its tag (tags start at 1; 0 is "no run").
    current_run: Option<(Name, u64)>,
    /// The newest record's tool name, shared with the next record of the same tool.
    last_tool: Option<Name>,
    /// Records carrying the current tag, and records without a run: when either equals
    /// the length, a check in that run needs no filtering.
    current_count: usize,
    unscoped_count: usize,
}

/// The positions of one run's records in the history, found once per check so the
/// detectors' several passes compare run ids only once. When every record belongs to the
/// run (the usual case) no positions are needed at all.
pub(crate) struct Scope<'h> {
    records: &'h VecDeque<Record>,
    keys: &'h VecDeque<u64>,
    all: bool,
    stack: [u32; 64],
    heap: Vec<u32>,
    len: usize,
}

impl<'h> Scope<'h> {
    fn indices(&self) -> &[u32] {
        if self.len <= self.stack.len() && self.heap.is_empty() {
            &self.stack[..self.len]
        } else {
            &self.heap
        }
    }

    /// The records and their digest keys ([`History`]'s `keys`) when every record of the
    /// history is in the run (the usual case), else `None`.
    pub(crate) fn keyed(&self) -> Option<Keyed<'h>> {
        self.all.then_some(Keyed {
            records: self.records,
            keys: self.keys,
        })
    }

    /// The run's records, oldest first.
    pub(crate) fn iter(&self) -> ScopeIter<'h, '_> {
        let (front, back) = self.records.as_slices();
        if self.all {
            ScopeIter::All(front.iter().chain(back.iter()))
        } else {
            ScopeIter::Some {
                idx: self.indices().iter(),
                front,
                back,
            }
        }
    }
}

/// A whole history's records with the first eight bytes of each one's argument digest, in
/// the same order (see [`Scope::keyed`]).
#[derive(Clone, Copy)]
pub(crate) struct Keyed<'h> {
    pub records: &'h VecDeque<Record>,
    pub keys: &'h VecDeque<u64>,
}

/// Iterator over the records of a [`Scope`].
#[derive(Clone)]
pub(crate) enum ScopeIter<'h, 's> {
    All(std::iter::Chain<std::slice::Iter<'h, Record>, std::slice::Iter<'h, Record>>),
    Some {
        idx: std::slice::Iter<'s, u32>,
        front: &'h [Record],
        back: &'h [Record],
    },
}

impl<'h> ScopeIter<'h, '_> {
    #[inline]
    fn at(front: &'h [Record], back: &'h [Record], i: u32) -> &'h Record {
        let i = i as usize;
        if i < front.len() {
            &front[i]
        } else {
            &back[i - front.len()]
        }
    }
}

impl<'h> Iterator for ScopeIter<'h, '_> {
    type Item = &'h Record;
    #[inline]
    fn next(&mut self) -> Option<&'h Record> {
        match self {
            ScopeIter::All(it) => it.next(),
            ScopeIter::Some { idx, front, back } => idx.next().map(|&i| Self::at(front, back, i)),
        }
    }
}

impl<'h> DoubleEndedIterator for ScopeIter<'h, '_> {
    #[inline]
    fn next_back(&mut self) -> Option<&'h Record> {
        match self {
            ScopeIter::All(it) => it.next_back(),
            ScopeIter::Some { idx, front, back } => {
                idx.next_back().map(|&i| Self::at(front, back, i))
            }
        }
    }
}

impl History {
    /// All records, oldest first, across runs.
    pub fn records(&self) -> &VecDeque<Record> {
        &self.records
    }

    /// The number of records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// `true` when there are no records.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The records of one (normalised) run, oldest first.
    pub fn scoped<'h>(
        &'h self,
        run: Option<&'h [u8]>,
    ) -> impl DoubleEndedIterator<Item = &'h Record> + Clone + 'h {
        self.records.iter().filter(move |r| r.in_run(run))
    }

    /// The tag records of `run` carry when `run` is the current run.
    fn current_tag(&self, run: Option<&[u8]>) -> Option<u64> {
        match (run, &self.current_run) {
            (Some(r), Some((cur, tag))) if cur.as_wtf8() == r => Some(*tag),
            _ => None,
        }
    }

    /// Tags a new record: the current run's tag, or a fresh one when the run changed.
    /// Also makes the record share the current run's and the last tool's allocations.
    fn tag(&mut self, record: &mut Record) {
        record.run_tag = match record.run.as_ref().map(JsString::as_wtf8) {
            None => 0,
            Some(r) => match self.current_tag(Some(r)) {
                Some(t) => {
                    if let Some((cur, _)) = &self.current_run {
                        record.run = Some(cur.clone());
                    }
                    t
                }
                None => {
                    let next = self
                        .current_run
                        .as_ref()
                        .map_or(1, |(_, t)| t.wrapping_add(1).max(1));
                    let shared = record.run.as_ref().map(JsString::to_shared);
                    if let Some(run) = shared {
                        record.run = Some(run.clone());
                        self.current_run = Some((run, next));
                    }
                    self.current_count = 0;
                    next
                }
            },
        };
        match &self.last_tool {
            Some(t) if t.as_wtf8() == record.tool.as_wtf8() => record.tool = t.clone(),
            _ => {
                record.tool = record.tool.to_shared();
                self.last_tool = Some(record.tool.clone());
            }
        }
    }

    /// Appends the pending record of a call, sharing tool and run names with earlier
    /// records where they repeat.
    pub fn push_call(
        &mut self,
        tool: &JsString<'_>,
        args: ArgsDigest,
        call_id: Option<&JsString<'_>>,
        run: Option<&[u8]>,
        timestamp_ms: u64,
        limit: usize,
    ) {
        let tool = match &self.last_tool {
            Some(t) if t.as_wtf8() == tool.as_wtf8() => t.clone(),
            _ => tool.to_shared(),
        };
        let run = match (&self.current_run, run) {
            (Some((cur, _)), Some(r)) if cur.as_wtf8() == r => Some(cur.clone()),
            (_, r) => r.map(owned_name),
        };
        let record = Record::new(
            tool,
            args,
            call_id.map(|c| c.clone().into_owned()),
            run,
            timestamp_ms,
        );
        self.push(record, limit);
    }

    /// Appends a tagged record and keeps the counters.
    fn push_tagged(&mut self, mut record: Record) {
        self.tag(&mut record);
        match record.run_tag {
            0 => self.unscoped_count += 1,
            _ => self.current_count += 1,
        }
        self.keys.push_back(record.args.key());
        self.records.push_back(record);
    }

    /// Drops the oldest records until at most `limit` remain; returns how many.
    fn trim(&mut self, limit: usize) -> usize {
        self.trim_keeping(limit, usize::MAX).0
    }

    /// [`History::trim`], handing back the record that was at position `keep` if it goes.
    fn trim_keeping(&mut self, limit: usize, keep: usize) -> (usize, Option<Record>) {
        let mut removed = 0;
        let mut kept = None;
        while self.records.len() > limit {
            let Some(r) = self.records.pop_front() else {
                break;
            };
            self.keys.pop_front();
            if r.run_tag == 0 {
                self.unscoped_count -= 1;
            } else if self.current_run.as_ref().map(|(_, t)| *t) == Some(r.run_tag) {
                self.current_count -= 1;
            }
            if removed == keep {
                kept = Some(r);
            }
            removed += 1;
        }
        (removed, kept)
    }

    /// A history holding `records` (oldest first), as if they had been appended one by
    /// one; nothing is trimmed. Used by [`crate::state`] to restore a snapshot.
    pub(crate) fn from_records(records: impl IntoIterator<Item = Record>) -> History {
        let mut h = History::default();
        for r in records {
            h.push_tagged(r);
        }
        h
    }

    pub(crate) fn scope(&self, run: Option<&[u8]>) -> Scope<'_> {
        let tag = self.current_tag(run);
        let all = match run {
            None => self.unscoped_count == self.records.len(),
            Some(_) => tag.is_some() && self.current_count == self.records.len(),
        };
        let mut scope = Scope {
            records: &self.records,
            keys: &self.keys,
            all,
            stack: [0; 64],
            heap: Vec::new(),
            len: 0,
        };
        if all {
            return scope;
        }
        // Iterating the ring buffer's two halves as slices is much cheaper than its iterator.
        let (front, back) = self.records.as_slices();
        let matching = front
            .iter()
            .chain(back)
            .enumerate()
            // Equal tags mean equal runs; different tags may still be the same run (runs
            // that interleave get new tags), so those compare the strings.
            .filter(|(_, r)| (tag.is_some() && Some(r.run_tag) == tag) || r.in_run(run))
            .map(|(i, _)| i as u32);
        if self.records.len() <= scope.stack.len() {
            for i in matching {
                scope.stack[scope.len] = i;
                scope.len += 1;
            }
        } else {
            scope.heap.extend(matching);
            scope.len = scope.heap.len();
        }
        scope
    }

    /// Appends a record, then drops the oldest until at most `limit` remain.
    pub fn push(&mut self, record: Record, limit: usize) {
        if limit > 0 && self.records.len() >= limit {
            // A full history drops its oldest records first, which comes to the same records
            // and counters (trimming and tagging touch different counts), and keeps a capacity
            // of exactly `limit`: the new record then takes the slot just freed, instead of
            // being copied into another (cold) slot of the ring.
            self.trim(limit - 1);
            self.records.shrink_to(limit);
            self.push_tagged(record);
            return;
        }
        self.push_tagged(record);
        self.trim(limit);
    }

    /// Attaches an outcome to the newest matching pending record, or appends one.
    ///
    /// A record matches when its run, tool and arguments are equal, it has no outcome yet,
    /// and (when `call_id` is non-empty) its call id is equal. Returns the updated record.
    #[allow(clippy::too_many_arguments)]
    pub fn record_outcome(
        &mut self,
        run: Option<&[u8]>,
        call_id: Option<&JsString<'_>>,
        tool: &JsString<'_>,
        args: ArgsDigest,
        result: ResultHash,
        unknown_tool: Option<String>,
        timestamp_ms: u64,
        limit: usize,
    ) -> RecordRef<'_> {
        let call_id = call_id.filter(|c| !c.is_empty());
        let found = self.records.iter().rposition(|r| {
            r.in_run(run)
                && call_id
                    .is_none_or(|c| r.call_id.as_ref().map(JsString::as_wtf8) == Some(c.as_wtf8()))
                && r.same_call(tool.as_wtf8(), &args)
                && r.result.is_none()
        });
        let index = match found {
            Some(i) => {
                let r = &mut self.records[i];
                r.result = Some(result);
                r.unknown_tool = unknown_tool.map(String::into_boxed_str);
                i
            }
            None => {
                let record = Record {
                    tool: tool.clone().into_owned(),
                    args,
                    call_id: call_id.map(|c| c.clone().into_owned()),
                    run: run.map(owned_name),
                    result: Some(result),
                    unknown_tool: unknown_tool.map(String::into_boxed_str),
                    timestamp_ms,
                    run_tag: 0,
                };
                self.push_tagged(record);
                self.records.len() - 1
            }
        };
        // Like OpenClaw, return the record even when trimming removed it (a smaller
        // `historySize` of another agent's config can do that).
        match self.trim_keeping(limit, index) {
            (_, Some(gone)) => RecordRef::Trimmed(gone),
            (excess, None) => RecordRef::Kept(&self.records[index - excess]),
        }
    }
}

/// The record an outcome was attached to: still in the history, or trimmed out of it.
#[derive(Debug)]
pub enum RecordRef<'h> {
    /// Still in the history.
    Kept(&'h Record),
    /// Removed by the trim that followed the update.
    Trimmed(Record),
}

impl std::ops::Deref for RecordRef<'_> {
    type Target = Record;
    fn deref(&self) -> &Record {
        match self {
            RecordRef::Kept(r) => r,
            RecordRef::Trimmed(r) => r,
        }
    }
}

/// Copies WTF-8 bytes into a [`Name`].
pub(crate) fn owned_name(bytes: &[u8]) -> Name {
    name_from_vec(bytes.to_vec())
}

/// Wraps WTF-8 bytes in a [`Name`] without copying them.
pub(crate) fn name_from_vec(bytes: Vec<u8>) -> Name {
    // The usual key or message: ASCII that `JSON.stringify` writes as it is, found in one
    // pass without branches (a warning builds two keys).
    let special = bytes.iter().fold(false, |acc, &b| {
        acc | !(0x20..0x80).contains(&b) | (b == b'"') | (b == b'\\')
    });
    if !special {
        return JsString::from_parts_simple(bytes);
    }
    // WTF-8 that is not UTF-8 holds surrogate code points.
    let lone = std::str::from_utf8(&bytes).is_err();
    JsString::from_wtf8(std::borrow::Cow::Owned(bytes), lone)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One step of a random history: a call or an outcome of tool `t` with arguments `a`
    /// (an index into `digests`), in run `run`, result `res`, keeping at most `limit`.
    type Step = (bool, u8, u8, u8, u8, usize);

    /// The digests of the random histories: two share their first eight bytes (the key),
    /// so a key that matches does not always mean the same arguments.
    fn digests() -> [ArgsDigest; 4] {
        let mut shared = [7u8; 32];
        shared[31] = 8;
        [
            ArgsDigest([1; 32]),
            ArgsDigest([2; 32]),
            ArgsDigest([7; 32]),
            ArgsDigest(shared),
        ]
    }

    /// The history of `steps`; with `append_first`, every call is pushed as appending then
    /// trimming (the order [`History::push`] used before a full history dropped first).
    fn build(steps: &[Step], append_first: bool) -> History {
        let tools = [JsString::from("read"), JsString::from("exec")];
        let runs: [Option<&[u8]>; 3] = [None, Some(b"r1"), Some(b"r2")];
        let mut h = History::default();
        for &(outcome, t, a, run, res, limit) in steps {
            let tool = &tools[usize::from(t % 2)];
            let args = digests()[usize::from(a % 4)];
            let run = runs[usize::from(run % 3)];
            if outcome {
                let result = ResultHash {
                    is_error: res % 3 == 0,
                    digest: [res % 2; 32],
                };
                h.record_outcome(run, None, tool, args, result, None, 0, limit);
            } else if append_first {
                let record = Record::new(
                    tool.clone().into_owned(),
                    args,
                    None,
                    run.map(owned_name),
                    0,
                );
                h.push_tagged(record);
                h.trim(limit);
            } else {
                h.push_call(tool, args, None, run, 0, limit);
            }
        }
        h
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// The keys beside the records stay the records' digest keys, and the no-progress
        /// streak read through them equals the plain walk over the records, for
        /// every call of the alphabet, in every run's scope that covers the whole history.
        #[test]
        fn the_keyed_streak_is_the_plain_walk(
            steps in proptest::collection::vec(
                (
                    proptest::prelude::any::<bool>(),
                    0u8..2,
                    0u8..4,
                    0u8..3,
                    0u8..6,
                    1usize..12,
                ),
                0..80,
            )
        ) {
            let h = build(&steps, false);
            // A full history's push drops the oldest first (`push`): the same records,
            // counters and scopes as appending first.
            let reference = build(&steps, true);
            proptest::prop_assert_eq!(&h.records, &reference.records);
            proptest::prop_assert_eq!(&h.keys, &reference.keys);
            proptest::prop_assert_eq!(
                (h.current_count, h.unscoped_count, &h.current_run),
                (reference.current_count, reference.unscoped_count, &reference.current_run)
            );
            for run in [None, Some(&b"r1"[..]), Some(&b"r2"[..])] {
                proptest::prop_assert_eq!(h.scope(run).keyed().is_some(), reference.scope(run).keyed().is_some());
                proptest::prop_assert_eq!(
                    h.scope(run).iter().collect::<Vec<_>>(),
                    reference.scope(run).iter().collect::<Vec<_>>()
                );
            }
            proptest::prop_assert_eq!(h.keys.len(), h.records.len());
            for (k, r) in h.keys.iter().zip(&h.records) {
                proptest::prop_assert_eq!(*k, r.args.key());
            }
            for run in [None, Some(&b"r1"[..]), Some(&b"r2"[..])] {
                let scope = h.scope(run);
                let Some(keyed) = scope.keyed() else { continue };
                for tool in [&b"read"[..], b"exec"] {
                    for args in digests() {
                        let plain = crate::detectors::no_progress::streak(scope.iter(), tool, &args);
                        let fast = crate::detectors::no_progress::streak_keyed(keyed, tool, &args);
                        proptest::prop_assert_eq!(plain, fast);
                    }
                }
            }
        }
    }

    fn rec(tool: &str, n: u8, run: Option<&str>) -> Record {
        Record {
            tool: JsString::from(tool.to_string()),
            args: ArgsDigest([n; 32]),
            call_id: None,
            run: run.map(|r| JsString::from(r.to_string())),
            result: None,
            unknown_tool: None,
            timestamp_ms: 0,
            run_tag: 0,
        }
    }

    #[test]
    fn trims_to_limit_oldest_first() {
        let mut h = History::default();
        for i in 0..40 {
            h.push(rec("tool", i, None), 30);
        }
        assert_eq!(h.len(), 30);
        assert_eq!(h.records()[0].args, ArgsDigest([10; 32]));
    }

    #[test]
    fn scope_isolates_runs() {
        let mut h = History::default();
        h.push(rec("a", 1, Some("r1")), 30);
        h.push(rec("a", 2, None), 30);
        h.push(rec("a", 3, Some("r2")), 30);
        assert_eq!(h.scoped(Some(b"r1")).count(), 1);
        assert_eq!(h.scoped(None).count(), 1);
        assert_eq!(h.scoped(Some(b"r3")).count(), 0);
    }

    #[test]
    fn interleaved_runs_still_scope_correctly() {
        let mut h = History::default();
        for (i, run) in ["a", "b", "a", "a", "b", "c", "a"].iter().enumerate() {
            h.push(rec("t", i as u8, Some(run)), 30);
        }
        fn ids(h: &History, run: &[u8]) -> Vec<u8> {
            h.scope(Some(run)).iter().map(|r| r.args.0[0]).collect()
        }
        assert_eq!(ids(&h, b"a"), [0, 2, 3, 6]);
        assert_eq!(ids(&h, b"b"), [1, 4]);
        assert_eq!(ids(&h, b"c"), [5]);
        assert_eq!(ids(&h, b"d"), Vec::<u8>::new());
        assert_eq!(h.scope(None).iter().count(), 0);
        // Trimmed down to one run: the unfiltered path.
        for i in 0..3 {
            h.push(rec("t", 10 + i, Some("z")), 3);
        }
        assert!(h.scope(Some(b"z")).all);
        assert_eq!(ids(&h, b"z"), [10, 11, 12]);
        assert_eq!(ids(&h, b"a"), Vec::<u8>::new());
        h.push(rec("t", 13, None), 3);
        assert!(!h.scope(Some(b"z")).all);
        assert_eq!(ids(&h, b"z"), [11, 12]);
        assert_eq!(
            h.scope(None)
                .iter()
                .map(|r| r.args.0[0])
                .collect::<Vec<_>>(),
            [13]
        );
    }

    #[test]
    fn outcome_in_another_run_is_appended() {
        let mut h = History::default();
        let mut r = rec("read", 1, Some("run-1"));
        r.call_id = Some(JsString::from("call-1".to_string()));
        h.push(r, 30);
        let res = ResultHash {
            is_error: false,
            digest: [9; 32],
        };
        let tool = JsString::from("read");
        let id = JsString::from("call-1");
        let got = h.record_outcome(
            Some(b"run-2"),
            Some(&id),
            &tool,
            ArgsDigest([1; 32]),
            res,
            None,
            5,
            30,
        );
        assert_eq!(got.run.as_ref().unwrap().as_wtf8(), b"run-2");
        assert_eq!(h.len(), 2);
        assert!(h.records()[0].result.is_none());
    }
}
