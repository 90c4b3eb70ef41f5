//! One session as a store holds it, and the one place an event is applied to it.
//!
//! A [`SessionEntry`] is everything loopguard remembers about a session: the engine's
//! [`Session`] (history, warning buckets, post-compaction guards), the blocked calls whose
//! outcomes are still to be absorbed (enforce mode), counters of every event ever applied,
//! a short log of recent decisions, and the bookkeeping live front ends need (the run
//! counter, an aborted run, a few labels). [`SessionEntry::apply`] turns one events.md
//! event into its decision record; `loopguard replay`, the hook, `loopguard serve`, the MCP
//! proxy and the Python package all go through it, so identical events get identical
//! decisions everywhere.

use std::collections::{BTreeMap, VecDeque};

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use loopguard_core::detection::is_known_poll_call;
use loopguard_core::hashing::{args_digest_wtf8, hash_outcome, ArgsDigest, OutcomeHash};
use loopguard_core::{normalize_run, Name};
use loopguard_core::{Call, Detector, JsString, Level, Mode, Policy, Session, Value, Verdict};
use loopguard_core::{Hashing, Outcome};
use loopguard_events::{Action, Decision, Event, EventKind, Finding, Payload};

use crate::escalation::{self, Rung};
use crate::logged::LogDecision;
use crate::profile::{display_message, MappedCall, MappedOutcome, ToolProfile};

/// How events are applied: the same for every session of a front end.
///
/// ```
/// use loopguard_guard::{Applier, ToolProfile};
/// let a = Applier::new(ToolProfile::ClaudeCode).log_size(0);
/// assert_eq!(a.profile, ToolProfile::ClaudeCode);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Applier {
    /// The runtime's tool profile.
    pub profile: ToolProfile,
    /// Enforce (a blocked call does not run) or observe (shadow mode).
    pub mode: Mode,
    /// Decisions kept in [`SessionEntry::recent`] (0: none, as in replay).
    pub log_size: usize,
    /// Blocked calls whose outcome events are still expected, per session; the oldest is
    /// forgotten beyond this (a live runtime never runs, so never reports, a blocked call).
    pub pending_blocks: usize,
}

impl Applier {
    /// Enforce mode, the live defaults: 20 recent decisions, 256 pending blocks.
    pub fn new(profile: ToolProfile) -> Self {
        Applier {
            profile,
            mode: Mode::Enforce,
            log_size: 20,
            pending_blocks: 256,
        }
    }

    /// Sets the mode.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets how many recent decisions each session keeps.
    pub fn log_size(mut self, n: usize) -> Self {
        self.log_size = n;
        self
    }

    /// Sets how many blocked calls per session wait for their outcome events.
    pub fn pending_blocks(mut self, n: usize) -> Self {
        self.pending_blocks = n.max(1);
        self
    }
}

/// Counters of every event applied to a session (not just the history window), so lost
/// updates are visible.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Events applied.
    pub events: u64,
    /// `call` events.
    pub calls: u64,
    /// `outcome` events.
    pub outcomes: u64,
    /// `compaction` events.
    pub compactions: u64,
    /// Calls warned about (emitted or not).
    pub warnings: u64,
    /// Calls blocked.
    pub blocks: u64,
    /// Runs aborted by the post-compaction guard, or ended by the strict profile's
    /// `second_critical_abort`.
    pub aborts: u64,
}

/// One logged decision, for `loopguard status` and `GET /v1/sessions/{id}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogRow {
    /// The session's event number (1 for the first).
    pub seq: u64,
    /// When (ms since the epoch; 0 when unknown).
    pub ts_ms: u64,
    /// What happened: `call`, `outcome`, `compaction`, or the runtime's event name
    /// (`PreToolUse`, …).
    pub event: String,
    /// The run.
    pub run: Option<String>,
    /// The tool (the runtime's name).
    pub tool: Option<String>,
    /// The call id.
    pub call_id: Option<String>,
    /// What loopguard decided (stored and shown as its word: `allow`, `warn`,
    /// `warn-quiet`, `block`, `recorded`, `ignored`, `abort`, `armed`, `would-block`, …).
    pub decision: LogDecision,
    /// The detector that fired.
    pub detector: Option<String>,
    /// Its count.
    pub count: Option<u64>,
    /// The message given to the model.
    pub message: Option<String>,
}

/// What an outcome without a call id is matched on: run, tool and arguments.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct BlockKey {
    run: Option<Box<[u8]>>,
    tool: Box<[u8]>,
    args: [u8; 32],
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct PendingBlock {
    seq: u64,
    call_id: Option<Box<[u8]>>,
    key: BlockKey,
}

/// The blocked calls of one session waiting for their outcome events (enforce mode),
/// oldest first, indexed both ways an outcome can name them, so matching costs the same
/// however many are waiting. At most [`Applier::pending_blocks`] are kept.
#[derive(Debug, Default, Clone)]
struct PendingBlocks {
    next: u64,
    order: VecDeque<PendingBlock>,
    // Sequence numbers in arrival order; the newest is last.
    by_id: FxHashMap<Box<[u8]>, Vec<u64>>,
    by_key: FxHashMap<BlockKey, Vec<u64>>,
}

impl PendingBlocks {
    fn from_list(list: Vec<PendingBlock>) -> Self {
        let mut p = PendingBlocks::default();
        for b in list {
            p.next = p.next.max(b.seq.saturating_add(1));
            p.index(&b);
            p.order.push_back(b);
        }
        p
    }

    fn index(&mut self, b: &PendingBlock) {
        if let Some(id) = &b.call_id {
            self.by_id.entry(id.clone()).or_default().push(b.seq);
        }
        self.by_key.entry(b.key.clone()).or_default().push(b.seq);
    }

    fn push(&mut self, call_id: Option<Box<[u8]>>, key: BlockKey, cap: usize) {
        while self.order.len() >= cap {
            match self.order.pop_front() {
                Some(old) => self.unindex(&old),
                None => break,
            }
        }
        let b = PendingBlock {
            seq: self.next,
            call_id,
            key,
        };
        self.next = self.next.saturating_add(1);
        self.index(&b);
        self.order.push_back(b);
    }

    fn unindex(&mut self, b: &PendingBlock) {
        if let Some(id) = &b.call_id {
            remove_seq(&mut self.by_id, id, b.seq);
        }
        remove_seq(&mut self.by_key, &b.key, b.seq);
    }

    /// Finds and removes the blocked call an outcome belongs to (events.md conventions):
    /// with a call id, the newest blocked call with that id; without one, the newest blocked
    /// call of the same run, tool and arguments.
    fn absorb(&mut self, call_id: Option<&[u8]>, key: impl FnOnce() -> BlockKey) -> bool {
        if self.order.is_empty() {
            return false;
        }
        let seq = match call_id {
            Some(id) => self.by_id.get(id).and_then(|v| v.last()).copied(),
            None => self.by_key.get(&key()).and_then(|v| v.last()).copied(),
        };
        let Some(seq) = seq else {
            return false;
        };
        // Sequence numbers are increasing, so the entry is found by binary search.
        let Ok(i) = self.order.binary_search_by_key(&seq, |b| b.seq) else {
            return false;
        };
        if let Some(b) = self.order.remove(i) {
            self.unindex(&b);
        }
        true
    }
}

fn remove_seq<K, Q>(map: &mut FxHashMap<K, Vec<u64>>, key: &Q, seq: u64)
where
    K: std::hash::Hash + Eq + std::borrow::Borrow<Q>,
    Q: std::hash::Hash + Eq + ?Sized,
{
    if let Some(list) = map.get_mut(key) {
        if let Some(i) = list.iter().rposition(|s| *s == seq) {
            list.remove(i);
        }
        if list.is_empty() {
            map.remove(key);
        }
    }
}

/// An event's values hashed ahead of applying it ([`Input::Prehashed`]): the argument
/// digest, whether the call is a known poll, and an outcome's hash. Pure functions of the
/// event, the tool profile and the hashing settings, so they can be computed on another
/// thread than the one applying the event.
#[derive(Clone, Debug, PartialEq)]
pub struct Prehashed {
    /// The argument digest (`argsHash` without the tool).
    pub args: ArgsDigest,
    /// [`is_known_poll_call`] of the tool and arguments.
    pub known_poll: bool,
    /// The outcome's hash, for an outcome event.
    pub outcome: Option<OutcomeHash>,
}

impl Prehashed {
    /// Hashes a call or outcome event as [`SessionEntry::apply`] would with `profile` and
    /// `hashing`; `None` for a compaction, or a profile that maps tools or outcomes (all but
    /// [`ToolProfile::Plain`]).
    pub fn of(event: &Event<'_>, profile: ToolProfile, hashing: &Hashing) -> Option<Prehashed> {
        if profile != ToolProfile::Plain {
            return None;
        }
        let tool = event.tool.as_ref()?.as_wtf8();
        let outcome = match (event.kind, &event.payload) {
            (EventKind::Call, _) => None,
            (EventKind::Outcome, payload) => {
                let outcome = match payload {
                    Some(Payload::Result(r)) => Outcome::Result(r),
                    Some(Payload::Error(e)) => Outcome::Error(e),
                    None => Outcome::Undefined,
                };
                Some(hash_outcome(tool, &event.args, outcome, hashing))
            }
            (EventKind::Compaction, _) => return None,
        };
        Some(Prehashed {
            args: args_digest_wtf8(tool, &event.args),
            known_poll: is_known_poll_call(tool, &event.args),
            outcome,
        })
    }
}

/// What is applied to a session ([`SessionEntry::apply_input`], `Guard::apply`): an
/// event, and what the caller already knows of its values. Every form is decided as
/// [`Input::Event`] is; the others spare the work of hashing what the caller holds.
///
/// An `&Event` converts into [`Input::Event`].
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Input<'e> {
    /// An event, hashed here with the front end's tool profile.
    Event(&'e Event<'e>),
    /// An event applied with this tool profile instead of the front end's: for front ends
    /// whose events come from several runtimes, each named by its source (trace spans from
    /// Claude Code's telemetry get [`ToolProfile::ClaudeCode`]).
    Profiled(&'e Event<'e>, ToolProfile),
    /// An outcome whose arguments' digest the caller holds from the decision of a call with
    /// the same tool and arguments ([`Decision::args`]): they are not canonicalised and
    /// hashed again (the npm package passes it when `afterCall` gets the tool and arguments,
    /// as JSON text, of the `beforeCall` it decided last). Any other event is applied as
    /// [`Input::Event`].
    WithArgsDigest(&'e Event<'e>, ArgsDigest),
    /// An event whose values the caller has already hashed ([`Prehashed::of`], with the
    /// front end's tool profile and hashing settings), so that it needs only its envelope:
    /// its `args` and `payload` are not looked at (`loopguard replay` hashes on its reader
    /// thread; the npm package takes the digests straight from the JSON text). Declined,
    /// with nothing applied, when the values are needed after all
    /// ([`Input::needs_values`]).
    Prehashed(&'e Event<'e>, &'e Prehashed),
}

impl<'e> Input<'e> {
    /// An event with another tool profile than the front end's, when there is one
    /// ([`Input::Profiled`]); `None`: [`Input::Event`].
    pub fn with_profile(event: &'e Event<'e>, profile: Option<ToolProfile>) -> Input<'e> {
        match profile {
            Some(p) => Input::Profiled(event, p),
            None => Input::Event(event),
        }
    }

    /// The event.
    pub fn event(&self) -> &'e Event<'e> {
        match *self {
            Input::Event(e)
            | Input::Profiled(e, _)
            | Input::WithArgsDigest(e, _)
            | Input::Prehashed(e, _) => e,
        }
    }

    /// `true` when this input cannot be applied with `profile` and `policy` as it is: an
    /// [`Input::Prehashed`] under a tool profile that maps calls or outcomes (all but
    /// [`ToolProfile::Plain`]), or a policy with one of loopguard's extra detectors on or the
    /// `openclaw-2026.9.6` profile, which read the values themselves.
    pub fn needs_values(&self, profile: ToolProfile, policy: &Policy) -> bool {
        let spend = &policy.escalation.budgets;
        matches!(self, Input::Prehashed(..))
            && (profile != ToolProfile::Plain
                || policy.extra.any()
                || shipped(policy)
                // A spend budget reads the event's `usage`, which a caller hashing
                // ahead may not have kept (the npm package's digests of JSON text).
                || spend.tokens_per_run.is_some()
                || spend.cost_per_run.is_some())
    }
}

impl<'a, 'e: 'a> From<&'a Event<'e>> for Input<'a> {
    fn from(event: &'a Event<'e>) -> Input<'a> {
        Input::Event(event)
    }
}

/// A run stopped by the post-compaction guard (live front ends deny its further calls).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbortedRun {
    /// The run.
    pub run: String,
    /// The stop message.
    pub message: String,
}

/// Everything loopguard remembers about one session.
///
/// ```
/// use loopguard_guard::{Applier, ToolProfile, SessionEntry};
/// use loopguard_core::Policy;
/// use loopguard_events::parse_event;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut entry = SessionEntry::new("s1");
/// let applier = Applier::new(ToolProfile::Plain);
/// let policy = Policy::enabled();
/// let call = parse_event(br#"{"type":"call","tool":"read","args":{"path":"/a"}}"#, 1)?;
/// let d = entry.apply(&policy, &applier, &call, 1, 0);
/// assert_eq!(d.action.as_str(), "allow");
/// assert_eq!(entry.stats.calls, 1);
/// let copy = SessionEntry::decode(&entry.encode())?;
/// assert_eq!(copy.stats, entry.stats);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Default)]
pub struct SessionEntry {
    /// The engine state.
    pub session: Session,
    blocks: PendingBlocks,
    /// Counters of every event applied.
    pub stats: Stats,
    /// When the entry was created (ms since the epoch).
    pub created_ms: u64,
    /// When an event was last applied.
    pub last_seen_ms: u64,
    /// The last decisions, oldest first (at most [`Applier::log_size`]).
    pub recent: VecDeque<LogRow>,
    /// Runs started by the front end (the Claude Code hook counts prompts).
    pub run_seq: u64,
    /// The run the post-compaction guard stopped, while it lasts.
    pub aborted: Option<AbortedRun>,
    /// Labels a front end keeps with the session (`cwd`, `agent`, `config`, …).
    pub meta: BTreeMap<String, String>,
    /// The escalation ladder's and the budgets' state (empty unless they are configured).
    escalation: escalation::State,
}

/// Why stored bytes are not a session entry.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EntryError {
    /// Not an entry written by this loopguard.
    #[error("not a loopguard session entry (bad header)")]
    Header,
    /// The bookkeeping part is damaged.
    #[error("session entry: {0}")]
    Meta(#[from] serde_json::Error),
    /// The bookkeeping part (binary form) is damaged.
    #[error("session entry: {0}")]
    Binary(#[from] postcard::Error),
    /// The engine state is damaged or of another version.
    #[error("session state: {0}")]
    State(#[from] loopguard_core::StateError),
}

/// The bookkeeping part of an encoded entry.
#[derive(Serialize, Deserialize)]
struct Header {
    stats: Stats,
    created_ms: u64,
    last_seen_ms: u64,
    recent: VecDeque<LogRow>,
    run_seq: u64,
    aborted: Option<AbortedRun>,
    meta: BTreeMap<String, String>,
    blocks: Vec<PendingBlock>,
}

/// The [`SessionEntry::meta`] key of a session's sub-agents ([`SessionEntry::subagents`]):
/// their sessions, one per line, the newest last.
pub const SUBAGENTS: &str = "subagents";

/// Sub-agents a session remembers ([`SessionEntry::adopt_subagent`]).
const MAX_SUBAGENTS: usize = 256;

/// The [`SessionEntry::meta`] key under which a store notes that it found the session's
/// stored entry unreadable and started it afresh; the front end reports it and removes it.
pub const RESTARTED: &str = "loopguard.restarted";

/// The first bytes of an encoded entry: the compact form written now.
const MAGIC: &[u8; 4] = b"LGE2";
/// The first bytes of the compact form with escalation state (`loopguard.onCritical`,
/// `loopguard.budgets`): written only by sessions that have some, so every other entry
/// keeps the bytes it always had.
const MAGIC_ESCALATION: &[u8; 4] = b"LGE3";
/// The first bytes of an entry written by an earlier loopguard (JSON), still read.
const MAGIC_JSON: &[u8; 4] = b"LGE1";

/// Postcard's output straight into a `Vec` (its `to_extend` goes through `Extend` a byte
/// at a time, which made the header most of an entry's encoding time); same bytes.
struct VecOut(Vec<u8>);

impl postcard::ser_flavors::Flavor for VecOut {
    type Output = Vec<u8>;

    #[inline]
    fn try_push(&mut self, byte: u8) -> postcard::Result<()> {
        self.0.push(byte);
        Ok(())
    }

    #[inline]
    fn try_extend(&mut self, bytes: &[u8]) -> postcard::Result<()> {
        self.0.extend_from_slice(bytes);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<Vec<u8>> {
        Ok(self.0)
    }
}

/// Writes the decision log as postcard writes a `VecDeque<LogRow>`: the row count, then
/// each row's fields in order (integers as LEB128 varints, strings as their length and
/// bytes, options as 0, or 1 and the value).
fn write_log(out: &mut Vec<u8>, rows: &VecDeque<LogRow>) {
    fn uint(out: &mut Vec<u8>, mut n: u64) {
        while n >= 0x80 {
            out.push((n as u8) | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
    }
    fn text(out: &mut Vec<u8>, s: &str) {
        uint(out, s.len() as u64);
        out.extend_from_slice(s.as_bytes());
    }
    fn opt_text(out: &mut Vec<u8>, s: Option<&String>) {
        match s {
            None => out.push(0),
            Some(s) => {
                out.push(1);
                text(out, s);
            }
        }
    }
    uint(out, rows.len() as u64);
    for r in rows {
        uint(out, r.seq);
        uint(out, r.ts_ms);
        text(out, &r.event);
        opt_text(out, r.run.as_ref());
        opt_text(out, r.tool.as_ref());
        opt_text(out, r.call_id.as_ref());
        text(out, &r.decision.text());
        opt_text(out, r.detector.as_ref());
        match r.count {
            None => out.push(0),
            Some(n) => {
                out.push(1);
                uint(out, n);
            }
        }
        opt_text(out, r.message.as_ref());
    }
}

impl SessionEntry {
    /// A new, empty session; `id` labels diagnostics.
    pub fn new(id: impl Into<String>) -> Self {
        SessionEntry {
            session: Session::new(id),
            ..SessionEntry::default()
        }
    }

    /// The entry as bytes: `LGE2`, the length of the bookkeeping part (4 bytes, big
    /// endian), that part (counters, recent decisions, labels, pending blocks; postcard),
    /// then the engine state ([`Session::export_state_binary`]). About a third of the JSON
    /// form's size: stores write it on every event.
    pub fn encode(&self) -> Vec<u8> {
        // A full session (30 calls, 20 decisions) takes about 1.9 KB.
        let mut out = Vec::with_capacity(2048);
        self.encode_into(&mut out);
        out
    }

    /// Appends [`SessionEntry::encode`]'s bytes to `out` (a store that writes something
    /// before the entry, such as a version token, encodes it in place, without a copy).
    ///
    /// ```
    /// use loopguard_guard::SessionEntry;
    /// let entry = SessionEntry::new("s1");
    /// let mut out = b"token:".to_vec();
    /// entry.encode_into(&mut out);
    /// assert_eq!(&out[6..], &entry.encode()[..]);
    /// ```
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let with_state = !self.escalation.is_empty();
        out.extend_from_slice(if with_state { MAGIC_ESCALATION } else { MAGIC });
        out.extend_from_slice(&[0; 4]);
        // The header is `Header` in postcard's bytes. Postcard writes a struct as its fields
        // one after the other, so it is written in three parts: the fields before the
        // decision log and those after it through postcard, the log (20 rows of short
        // strings: most of the header's encoding time through serde) by hand, in the same
        // bytes (`the_borrowed_header_writes_the_owned_bytes`, `log_rows_encode_as_postcard`).
        // Writing to a Vec cannot fail; an empty header would be caught by `decode`.
        let before = (&self.stats, self.created_ms, self.last_seen_ms);
        let mut written = postcard::serialize_with_flavor(&before, VecOut(std::mem::take(out)))
            .unwrap_or_default();
        write_log(&mut written, &self.recent);
        let after = (self.run_seq, &self.aborted, &self.meta, &self.blocks.order);
        let mut written =
            postcard::serialize_with_flavor(&after, VecOut(written)).unwrap_or_default();
        if with_state {
            written = postcard::serialize_with_flavor(&self.escalation, VecOut(written))
                .unwrap_or_default();
        }
        let len = u32::try_from(written.len().saturating_sub(start + 8)).unwrap_or(u32::MAX);
        if let Some(slot) = written.get_mut(start + 4..start + 8) {
            slot.copy_from_slice(&len.to_be_bytes());
        }
        self.session.export_state_binary_into(&mut written);
        *out = written;
    }

    /// Reads [`SessionEntry::encode`]'s bytes, and the JSON form (`LGE1`) earlier versions
    /// wrote. The session's hashing settings are the defaults: the guard sets its own
    /// before applying an event.
    pub fn decode(bytes: &[u8]) -> Result<SessionEntry, EntryError> {
        /// The three forms, by their magic.
        enum Form {
            Json,
            Binary,
            /// `LGE2`'s header followed by the escalation state: postcard writes a struct
            /// as its fields one after the other, so the header reads as `(Header, State)`.
            WithEscalation,
        }
        let (form, rest) = if let Some(rest) = bytes.strip_prefix(MAGIC) {
            (Form::Binary, rest)
        } else if let Some(rest) = bytes.strip_prefix(MAGIC_ESCALATION) {
            (Form::WithEscalation, rest)
        } else if let Some(rest) = bytes.strip_prefix(MAGIC_JSON) {
            (Form::Json, rest)
        } else {
            return Err(EntryError::Header);
        };
        let (len, rest) = rest.split_first_chunk::<4>().ok_or(EntryError::Header)?;
        let len = u32::from_be_bytes(*len) as usize;
        if rest.len() < len {
            return Err(EntryError::Header);
        }
        let (head, state) = rest.split_at(len);
        let (h, escalation): (Header, escalation::State) = match form {
            Form::Binary => (postcard::from_bytes(head)?, escalation::State::default()),
            Form::Json => (serde_json::from_slice(head)?, escalation::State::default()),
            Form::WithEscalation => postcard::from_bytes(head)?,
        };
        let session = Session::import_state(state, String::new())?;
        Ok(SessionEntry {
            session,
            blocks: PendingBlocks::from_list(h.blocks),
            stats: h.stats,
            created_ms: h.created_ms,
            last_seen_ms: h.last_seen_ms,
            recent: h.recent,
            run_seq: h.run_seq,
            aborted: h.aborted,
            meta: h.meta,
            escalation,
        })
    }

    #[cfg(test)]
    fn header(&self) -> Header {
        Header {
            stats: self.stats,
            created_ms: self.created_ms,
            last_seen_ms: self.last_seen_ms,
            recent: self.recent.clone(),
            run_seq: self.run_seq,
            aborted: self.aborted.clone(),
            meta: self.meta.clone(),
            blocks: self.blocks.order.iter().cloned().collect(),
        }
    }

    /// The JSON form (`LGE1`) earlier versions wrote, for the test that it is still read.
    #[cfg(test)]
    pub(crate) fn encode_json(&self) -> Vec<u8> {
        let header = self.header();
        let json = serde_json::to_vec(&header).unwrap_or_default();
        let state = self.session.export_state();
        let mut out = Vec::with_capacity(8 + json.len() + state.len());
        out.extend_from_slice(MAGIC_JSON);
        out.extend_from_slice(&u32::try_from(json.len()).unwrap_or(u32::MAX).to_be_bytes());
        out.extend_from_slice(&json);
        out.extend_from_slice(&state);
        out
    }

    /// Counts a call its sub-agent ran toward this (the parent's) session's
    /// `loopguard.budgets.callsPerSession`; returns the session's count. A sub-agent keeps
    /// its own session (its own loop state), so its calls reach the parent only this way.
    pub fn attribute_subagent_call(&mut self) -> u64 {
        self.escalation.count_call(None, "", true);
        self.escalation.session_calls()
    }

    /// Starts a sub-agent's session from its parent's count of calls
    /// ([`SessionEntry::attribute_subagent_call`]), so its budget check sees the whole
    /// session's.
    pub fn inherit_parent_calls(&mut self, parent_calls: u64) {
        self.escalation.inherit_session_calls(parent_calls);
    }

    /// Whether a decision of a sub-agent's session, taken under `policy`, is a call its
    /// parent counts ([`SessionEntry::attribute_subagent_call`]): a call that may run,
    /// when the policy sets a budget (without one nothing is counted, and the parent's
    /// entry is left as it was).
    pub fn parent_counts(policy: &Policy, d: &Decision<'_>) -> bool {
        d.kind == EventKind::Call
            && matches!(d.action, Action::Allow | Action::Warn | Action::Ask)
            && !policy.escalation.budgets.is_empty()
    }

    /// The sessions of this session's sub-agents: those whose events named it as their
    /// parent (`parentSession`), the newest last. They are forgotten with it.
    pub fn subagents(&self) -> impl Iterator<Item = &str> {
        self.meta
            .get(SUBAGENTS)
            .map(String::as_str)
            .unwrap_or_default()
            .split('\n')
            .filter(|s| !s.is_empty())
    }

    /// Remembers `child` as one of this session's sub-agents; `false` when it already was.
    /// Bounded: beyond 256 the oldest is dropped from the list (its session is
    /// then left to the store's idle expiry).
    pub fn adopt_subagent(&mut self, child: &str) -> bool {
        if self.subagents().any(|s| s == child) {
            return false;
        }
        let mut ids: Vec<&str> = self.subagents().collect();
        ids.push(child);
        let keep = ids.len().saturating_sub(MAX_SUBAGENTS);
        let list = ids[keep..].join("\n");
        self.meta.insert(SUBAGENTS.into(), list);
        true
    }

    /// Calls that ran in the session and its sub-agents, as the budgets count them (0 when
    /// no budget is set).
    pub fn budgeted_calls(&self) -> u64 {
        self.escalation.session_calls()
    }

    /// Blocked calls still waiting for their outcome events.
    pub fn pending_blocks(&self) -> usize {
        self.blocks.order.len()
    }

    /// Appends a row to the recent-decisions log, keeping at most `keep` rows.
    pub fn log(&mut self, row: LogRow, keep: usize) {
        if keep == 0 {
            return;
        }
        while self.recent.len() >= keep {
            self.recent.pop_front();
        }
        self.recent.push_back(row);
    }

    /// Applies one events.md event and returns its decision record (`line` is echoed in
    /// [`Decision::line`]; `now_ms` stamps the log and is the call time when the event has
    /// no `ts`). The policy is the one of the event's agent.
    pub fn apply<'e>(
        &mut self,
        policy: &Policy,
        applier: &Applier,
        event: &'e Event<'e>,
        line: u64,
        now_ms: u64,
    ) -> Decision<'e> {
        self.apply_inner(policy, applier, event, None, line, now_ms)
    }

    /// [`SessionEntry::apply`] of any [`Input`]: an event, an event with another tool
    /// profile, an outcome with its arguments' digest, or an event whose values are
    /// already hashed. [`Input::Event`] is decided exactly as [`SessionEntry::apply`]
    /// decides it, and so are the others (they only spare hashing what is known).
    ///
    /// `None`, with nothing changed, only for an [`Input::Prehashed`] whose values are
    /// needed after all ([`Input::needs_values`]): then apply the whole event.
    ///
    /// ```
    /// use loopguard_guard::{Applier, Input, Prehashed, SessionEntry, ToolProfile};
    /// use loopguard_core::{Hashing, Policy};
    /// use loopguard_events::parse_event;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (policy, applier) = (Policy::enabled(), Applier::new(ToolProfile::Plain));
    /// let call = parse_event(br#"{"type":"call","tool":"read","args":{"path":"/a"}}"#, 1)?;
    /// let outcome = parse_event(br#"{"type":"outcome","tool":"read","args":{"path":"/a"},"result":"x"}"#, 2)?;
    /// let (mut a, mut b, mut c) = (SessionEntry::new("a"), SessionEntry::new("b"), SessionEntry::new("c"));
    /// let digest = a.apply(&policy, &applier, &call, 1, 0).args.ok_or("no digest")?;
    /// b.apply(&policy, &applier, &call, 1, 0);
    /// c.apply(&policy, &applier, &call, 1, 0);
    /// let direct = a.apply(&policy, &applier, &outcome, 2, 0);
    /// // The outcome with its call's digest: its arguments are not hashed again.
    /// let reused = b.apply_input(&policy, &applier, Input::WithArgsDigest(&outcome, digest), 2, 0);
    /// assert_eq!(reused.as_ref(), Some(&direct));
    /// // The outcome hashed ahead (on another thread, say): only its envelope is read.
    /// let pre = Prehashed::of(&outcome, ToolProfile::Plain, &Hashing::default()).ok_or("mapped")?;
    /// assert_eq!(c.apply_input(&policy, &applier, Input::Prehashed(&outcome, &pre), 2, 0), Some(direct));
    /// # Ok(())
    /// # }
    /// ```
    pub fn apply_input<'e>(
        &mut self,
        policy: &Policy,
        applier: &Applier,
        input: Input<'e>,
        line: u64,
        now_ms: u64,
    ) -> Option<Decision<'e>> {
        if input.needs_values(applier.profile, policy) {
            return None;
        }
        Some(self.apply_accepted(policy, applier, input, line, now_ms))
    }

    /// [`SessionEntry::apply_input`] of an input whose caller has checked
    /// [`Input::needs_values`] (the guard, before it touches the store): the decision is
    /// returned as it is made, not moved through an `Option`.
    #[inline]
    pub(crate) fn apply_accepted<'e>(
        &mut self,
        policy: &Policy,
        applier: &Applier,
        input: Input<'e>,
        line: u64,
        now_ms: u64,
    ) -> Decision<'e> {
        match input {
            Input::Event(event) => self.apply_inner(policy, applier, event, None, line, now_ms),
            Input::Profiled(event, profile) => {
                let applier = Applier {
                    profile,
                    ..*applier
                };
                self.apply_inner(policy, &applier, event, None, line, now_ms)
            }
            // The digest is a function of the tool and the arguments alone (the tool
            // profile's mapping is too), so an outcome's arguments are not canonicalised
            // and hashed again; the caller vouches that they are the call's.
            Input::WithArgsDigest(event, _) if event.kind != EventKind::Outcome => {
                self.apply_inner(policy, applier, event, None, line, now_ms)
            }
            Input::WithArgsDigest(event, args) => {
                // Only `args` is read for an outcome; without `outcome` the result is
                // hashed as usual.
                let pre = Prehashed {
                    args,
                    known_poll: false,
                    outcome: None,
                };
                self.apply_inner(policy, applier, event, Some(&pre), line, now_ms)
            }
            Input::Prehashed(event, pre) => {
                self.apply_inner(policy, applier, event, Some(pre), line, now_ms)
            }
        }
    }

    fn apply_inner<'e>(
        &mut self,
        policy: &Policy,
        applier: &Applier,
        event: &'e Event<'e>,
        pre: Option<&Prehashed>,
        line: u64,
        now_ms: u64,
    ) -> Decision<'e> {
        let session_name = event
            .session
            .as_ref()
            .map(JsString::reborrow)
            .unwrap_or_else(|| JsString::from("default"));
        if self.session.mode() != applier.mode {
            self.session = std::mem::take(&mut self.session).with_mode(applier.mode);
        }
        if self.created_ms == 0 {
            self.created_ms = now_ms;
        }
        self.last_seen_ms = now_ms.max(self.last_seen_ms);
        self.stats.events += 1;

        let mut decision = Decision {
            line,
            kind: event.kind,
            session: session_name,
            run: event.run.as_ref().map(JsString::reborrow),
            call_id: event.call_id.as_ref().map(JsString::reborrow),
            tool: event.tool.as_ref().map(JsString::reborrow),
            engine_tool: None,
            args: None,
            result: None,
            action: Action::Allow,
            finding: None,
            ends_run: false,
        };

        match (event.kind, &event.tool) {
            (EventKind::Compaction, _) => {
                self.stats.compactions += 1;
                let d = self.session.on_compaction(policy, event.run.as_ref());
                decision.action = if d.armed {
                    Action::Armed
                } else {
                    Action::GuardDisabled
                };
            }
            // `parse_event` guarantees a tool for calls and outcomes.
            (_, None) => {}
            (EventKind::Call, Some(tool)) => {
                self.stats.calls += 1;
                if let (Some(u), false) = (&event.usage, policy.escalation.is_default()) {
                    let run = event.run.as_ref().map(|r| r.to_string_lossy().into_owned());
                    self.escalation.add_usage(run.as_deref(), u.tokens, u.cost);
                }
                if policy.escalation.is_default() {
                    self.call(policy, applier, event, tool, pre, &mut decision);
                } else {
                    self.escalated_call(policy, applier, event, tool, pre, &mut decision);
                }
            }
            (EventKind::Outcome, Some(tool)) => {
                self.stats.outcomes += 1;
                self.outcome(policy, applier, event, tool, pre, &mut decision);
            }
        }
        if applier.log_size > 0 {
            // The oldest row and its strings are reused when the log is full: a live guard
            // logs every event, and this keeps the steady state free of allocations.
            let seq = self.stats.events;
            if let Some(row) = self.next_log_row(applier.log_size) {
                fill_log_row(row, seq, &decision, applier.mode, event, now_ms);
            }
        }
        decision
    }

    fn call<'e>(
        &mut self,
        policy: &Policy,
        applier: &Applier,
        event: &'e Event<'e>,
        tool: &'e JsString<'e>,
        pre: Option<&Prehashed>,
        decision: &mut Decision<'e>,
    ) {
        let mapped = applier.profile.map_call(tool, &event.args);
        let (engine_tool, args) = engine_view(&mapped, tool, &event.args, decision);
        let mut call = engine_call(event, engine_tool, args);
        if let Some(p) = pre {
            call = call.with_args_digest(p.args).with_known_poll(p.known_poll);
        }
        let d = self.session.before_call(policy, &call);
        decision.args = Some(d.args);
        // The `openclaw-2026.9.6` profile hashes the release's normalised tool name, and
        // a critical after the run's first ends the run.
        let shipped_tool = shipped(policy).then(|| shipped_name(engine_tool));
        if let Some(t) = &shipped_tool {
            decision.engine_tool = Some(t.clone());
            decision.ends_run = d.ends_run;
        }
        let engine_tool = shipped_tool.as_ref().unwrap_or(engine_tool);
        match d.verdict {
            Verdict::Allow => decision.action = Action::Allow,
            Verdict::Warn {
                detection,
                key,
                emitted,
            } => {
                self.stats.warnings += 1;
                decision.action = Action::Warn;
                decision.finding = Some(finding(detection, Some(key), Some(emitted)));
            }
            Verdict::Block { detection, key } => {
                self.stats.blocks += 1;
                if d.ends_run {
                    // The strict profile's second critical ended the run.
                    self.stats.aborts += 1;
                }
                decision.action = Action::Block;
                decision.finding = Some(finding(detection, Some(key), Some(true)));
                if applier.mode == Mode::Enforce {
                    self.blocks.push(
                        nonempty(event.call_id.as_ref()).map(Into::into),
                        BlockKey {
                            run: run_key(event),
                            tool: engine_tool.as_wtf8().into(),
                            args: d.args.0,
                        },
                        applier.pending_blocks,
                    );
                }
            }
        }
        if shipped_tool.is_none() {
            rename_message(decision, engine_tool, tool);
        }
    }

    /// A call under `loopguard.onCritical` or `loopguard.budgets` (the `escalation`
    /// module): a call of a run the ladder ended is refused, ending the run again; a budget
    /// reached refuses it; else the engine decides, and its critical decision climbs the
    /// ladder. A call that may run is counted, and warned about at 80% of a budget when the
    /// engine has nothing to say.
    fn escalated_call<'e>(
        &mut self,
        policy: &Policy,
        applier: &Applier,
        event: &'e Event<'e>,
        tool: &'e JsString<'e>,
        pre: Option<&Prehashed>,
        decision: &mut Decision<'e>,
    ) {
        let run_name = event.run.as_ref().map(|r| r.to_string_lossy().into_owned());
        let run = run_name.as_deref();
        let tool_name = tool.to_string_lossy().into_owned();
        let refusal = match self.escalation.ended(run) {
            Some((name, count)) => {
                let detector = detector_named(name);
                Some((
                    detector,
                    count,
                    escalation::ended_message(name),
                    Name::from(format!("run-ended:{}", run.unwrap_or("none"))),
                    true,
                ))
            }
            None => None,
        };
        let budget = match refusal {
            Some(_) => None,
            None => self
                .escalation
                .check(&policy.escalation.budgets, run, &tool_name),
        };
        let refusal = refusal.or_else(|| {
            budget
                .as_ref()
                .filter(|b| b.level == Level::Critical)
                .map(|b| {
                    let (m, k) = (b.message.clone(), b.key.clone());
                    (Detector::Budget, b.count, m, k, false)
                })
        });
        if let Some((detector, count, message, key, ends_run)) = refusal {
            // Refused before the engine: the call does not run and is not recorded.
            let mapped = applier.profile.map_call(tool, &event.args);
            let (engine_tool, args) = engine_view(&mapped, tool, &event.args, decision);
            let digest = args_digest_wtf8(engine_tool.as_wtf8(), args);
            decision.args = Some(digest);
            decision.action = Action::Block;
            decision.ends_run = ends_run;
            decision.finding = Some(Finding {
                detector,
                level: Level::Critical,
                count,
                message,
                warning_key: Some(key),
                paired_tool: None,
                emitted: Some(true),
            });
            self.stats.blocks += 1;
            if ends_run {
                self.stats.aborts += 1;
            }
            if applier.mode == Mode::Enforce {
                self.blocks.push(
                    nonempty(event.call_id.as_ref()).map(Into::into),
                    BlockKey {
                        run: run_key(event),
                        tool: engine_tool.as_wtf8().into(),
                        args: digest.0,
                    },
                    applier.pending_blocks,
                );
            }
            return;
        }
        self.call(policy, applier, event, tool, pre, decision);
        if decision.action == Action::Block && !decision.ends_run() {
            if let Some(f) = &decision.finding {
                let on_critical = policy.escalation.on_critical;
                match self
                    .escalation
                    .escalate(on_critical, run, f.detector, f.count)
                {
                    Rung::Block => {}
                    Rung::Ask => {
                        // The engine took the call as blocked, and its outcome, if one comes,
                        // is absorbed as a blocked call's: a host that refuses (Claude Code
                        // headless reports the reason as the call's error) or a user who lets
                        // it run leaves the loop's streak as it was, so the loop going on
                        // meets the next critical at once.
                        decision.action = Action::Ask;
                    }
                    Rung::EndRun => {
                        decision.ends_run = true;
                        self.stats.aborts += 1;
                    }
                }
            }
        }
        if matches!(decision.action, Action::Allow | Action::Warn | Action::Ask) {
            self.escalation.count_call(run, &tool_name, false);
            if let Some(b) = budget.filter(|_| decision.action == Action::Allow) {
                self.escalation.note_warning(run, &b.key.to_string_lossy());
                self.stats.warnings += 1;
                decision.action = Action::Warn;
                decision.finding = Some(Finding {
                    detector: Detector::Budget,
                    level: Level::Warning,
                    count: b.count,
                    message: b.message,
                    warning_key: Some(b.key),
                    paired_tool: None,
                    emitted: Some(true),
                });
            }
        }
    }

    fn outcome<'e>(
        &mut self,
        policy: &Policy,
        applier: &Applier,
        event: &'e Event<'e>,
        tool: &'e JsString<'e>,
        pre: Option<&Prehashed>,
        decision: &mut Decision<'e>,
    ) {
        let mapped = applier.profile.map_call(tool, &event.args);
        let (engine_tool, args) = engine_view(&mapped, tool, &event.args, decision);
        let shipped_tool = shipped(policy).then(|| shipped_name(engine_tool));
        if let Some(t) = &shipped_tool {
            decision.engine_tool = Some(t.clone());
        }
        let engine_tool = shipped_tool.as_ref().unwrap_or(engine_tool);
        // Hashed once here (or ahead), reused by the session below.
        let digest = match pre {
            _ if shipped_tool.is_some() => {
                ArgsDigest(loopguard_core::openclaw_2026_9_6::args_digest(args))
            }
            Some(p) => p.args,
            None => args_digest_wtf8(engine_tool.as_wtf8(), args),
        };
        decision.args = Some(digest);
        if applier.mode == Mode::Enforce
            && self
                .blocks
                .absorb(nonempty(event.call_id.as_ref()), || BlockKey {
                    run: run_key(event),
                    tool: engine_tool.as_wtf8().into(),
                    args: digest.0,
                })
        {
            decision.action = Action::Ignored;
            return;
        }
        let call = engine_call(event, engine_tool, args).with_args_digest(digest);
        let hashed = match pre.and_then(|p| p.outcome.as_ref()) {
            Some(h) => self.session.after_call_hashed(policy, &call, h),
            None => None,
        };
        let d = match hashed {
            Some(d) => d,
            None => self.after_call(policy, applier, event, tool, &call),
        };
        decision.result = d.result;
        decision.action = Action::Recorded;
        if let Some(abort) = d.abort {
            self.stats.aborts += 1;
            decision.action = Action::Abort;
            decision.finding = Some(Finding {
                detector: Detector::CompactionLoopPersisted,
                level: Level::Critical,
                count: abort.count,
                message: abort.message,
                warning_key: None,
                paired_tool: None,
                emitted: None,
            });
            if shipped_tool.is_none() {
                rename_message(decision, engine_tool, tool);
            }
        }
    }

    /// The session's after-call step with the event's own result or error (mapped by the
    /// tool profile).
    fn after_call(
        &mut self,
        policy: &Policy,
        applier: &Applier,
        event: &Event<'_>,
        tool: &JsString<'_>,
        call: &Call<'_>,
    ) -> loopguard_core::OutcomeDecision {
        let result;
        let error;
        let outcome = match &event.payload {
            Some(Payload::Result(r)) => match applier.profile.map_result(tool, r) {
                Some(m) => {
                    result = m;
                    Outcome::Result(&result)
                }
                None => Outcome::Result(r),
            },
            Some(Payload::Error(e)) => match applier.profile.map_error(tool, e) {
                Some(MappedOutcome::Result(m)) => {
                    result = m;
                    Outcome::Result(&result)
                }
                Some(MappedOutcome::Error(m)) => {
                    error = m;
                    Outcome::Error(&error)
                }
                None => Outcome::Error(e),
            },
            None => Outcome::Undefined,
        };
        self.session.after_call(policy, call, outcome)
    }

    /// The row the next decision is written in, at the back of the log: a new one while the
    /// log holds fewer than `keep` rows, else the oldest, turned to the back in place. A full
    /// log is kept at exactly `keep` rows of capacity, so the ring turns by moving its start,
    /// not by copying the 200-byte row into another slot (with many sessions the
    /// rows are cold, and a second slot is more cache lines to fetch). `None` when `keep` is 0.
    fn next_log_row(&mut self, keep: usize) -> Option<&mut LogRow> {
        if self.recent.len() < keep {
            self.recent.push_back(LogRow::default());
        } else if keep > 0 {
            while self.recent.len() > keep {
                self.recent.pop_front();
            }
            if self.recent.capacity() > keep {
                self.recent.shrink_to_fit();
            }
            self.recent.rotate_left(1);
        }
        self.recent.back_mut()
    }
}

/// Writes the log row of `d`, the session's event number `seq`, into `row`, reusing its
/// strings.
fn fill_log_row(
    row: &mut LogRow,
    seq: u64,
    d: &Decision<'_>,
    mode: Mode,
    event: &Event<'_>,
    now_ms: u64,
) {
    row.seq = seq;
    row.ts_ms = if event.timestamp_ms > 0 {
        event.timestamp_ms
    } else {
        now_ms
    };
    set_text(&mut row.event, event.kind.as_str());
    set_js(&mut row.run, d.run.as_ref());
    set_js(&mut row.tool, d.tool.as_ref());
    set_js(&mut row.call_id, d.call_id.as_ref());
    row.decision = LogDecision::of(d, mode);
    match &d.finding {
        Some(f) => {
            set_opt(&mut row.detector, Some(f.detector.as_str()));
            row.count = Some(f.count);
            set_js(&mut row.message, Some(&f.message));
        }
        None => {
            row.detector = None;
            row.count = None;
            row.message = None;
        }
    }
}

/// `slot = text`, keeping the allocation of `slot`.
fn set_text(slot: &mut String, text: &str) {
    slot.clear();
    slot.push_str(text);
}

/// `slot = text.map(to_string)`, keeping the allocation of `slot` when there is one.
fn set_opt(slot: &mut Option<String>, text: Option<&str>) {
    match (slot.as_mut(), text) {
        (Some(s), Some(t)) => set_text(s, t),
        (None, Some(t)) => *slot = Some(t.to_string()),
        (_, None) => *slot = None,
    }
}

/// [`set_opt`] of a JavaScript string (lone surrogates become U+FFFD, as the log always did).
fn set_js(slot: &mut Option<String>, text: Option<&JsString<'_>>) {
    match text {
        Some(t) => set_opt(slot, Some(&t.to_string_lossy())),
        None => *slot = None,
    }
}

/// The detector of a name written by [`Detector::as_str`] (the ladder keeps the name of the
/// detector that ended a run). A name this version does not know (written by a later one)
/// reads as `generic_repeat`: the run stays ended either way, only the record's detector
/// differs.
fn detector_named(name: &str) -> Detector {
    Detector::ALL
        .into_iter()
        .chain(Detector::EXTRA)
        .chain([Detector::Budget])
        .find(|d| d.as_str() == name)
        .unwrap_or(Detector::GenericRepeat)
}

fn finding(d: loopguard_core::Detection, key: Option<Name>, emitted: Option<bool>) -> Finding {
    Finding {
        detector: d.detector,
        level: d.level,
        count: d.count,
        message: d.message,
        warning_key: key,
        paired_tool: d.paired_tool,
        emitted,
    }
}

/// Messages name the runtime's tool, not the engine's (`Bash`, not `exec`).
fn rename_message(decision: &mut Decision<'_>, engine_tool: &JsString<'_>, tool: &JsString<'_>) {
    if engine_tool.as_wtf8() == tool.as_wtf8() {
        return;
    }
    if let Some(f) = &mut decision.finding {
        let shown = display_message(
            &f.message.to_string_lossy(),
            &engine_tool.to_string_lossy(),
            &tool.to_string_lossy(),
        );
        f.message = JsString::from(shown);
    }
}

/// The tool and arguments the engine sees: the profile's mapping when there is one (the
/// decision then names the engine's tool for `argsHash`), else the event's own.
fn engine_view<'a, 'e>(
    mapped: &'a Option<MappedCall<'e>>,
    tool: &'a JsString<'e>,
    args: &'a Value<'e>,
    decision: &mut Decision<'_>,
) -> (&'a JsString<'e>, &'a Value<'e>) {
    match mapped {
        Some(m) => {
            decision.engine_tool = Some(m.tool.clone().into_owned());
            (&m.tool, &m.args)
        }
        None => (tool, args),
    }
}

fn engine_call<'c>(event: &'c Event<'c>, tool: &'c JsString<'c>, args: &'c Value<'c>) -> Call<'c> {
    let mut call = Call::new(tool.reborrow(), args).at(event.timestamp_ms);
    call.run = event.run.as_ref().map(JsString::reborrow);
    call.call_id = event.call_id.as_ref().map(JsString::reborrow);
    call.agent = event.agent.as_ref().map(JsString::reborrow);
    call
}

/// `true` under the `openclaw-2026.9.6` profile (the shipped release's engine).
fn shipped(policy: &Policy) -> bool {
    policy.extra.profile == loopguard_core::DetectorProfile::OpenClaw2026_9_6
}

/// The tool name as the `openclaw-2026.9.6` profile hashes it.
fn shipped_name(tool: &JsString<'_>) -> JsString<'static> {
    let name = loopguard_core::openclaw_2026_9_6::normalize_tool_name(tool.as_wtf8());
    JsString::from(String::from_utf8_lossy(&name).into_owned())
}

fn nonempty<'a>(id: Option<&'a JsString<'_>>) -> Option<&'a [u8]> {
    id.map(JsString::as_wtf8).filter(|c| !c.is_empty())
}

fn run_key(event: &Event<'_>) -> Option<Box<[u8]>> {
    normalize_run(event.run.as_ref().map(JsString::as_wtf8)).map(Into::into)
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopguard_events::parse_event;

    fn busy_entry() -> SessionEntry {
        // The id is not part of what a store keeps (the guard sets it from the key).
        let mut entry = SessionEntry::default();
        let applier = Applier::new(ToolProfile::Plain);
        let policy = Policy::enabled();
        for i in 0..40u64 {
            let line = format!(
                r#"{{"type":"call","session":"s","tool":"read","callId":"c{i}","args":{{"path":"/src/file-{i}.rs"}}}}"#
            );
            let e = parse_event(line.as_bytes(), i + 1).unwrap();
            let _ = entry.apply(&policy, &applier, &e, i + 1, 1_796_000_000_000 + i);
            let line = format!(
                r#"{{"type":"outcome","session":"s","tool":"read","callId":"c{i}","args":{{"path":"/src/file-{i}.rs"}},"result":"contents {i}"}}"#
            );
            let e = parse_event(line.as_bytes(), i + 1).unwrap();
            let _ = entry.apply(&policy, &applier, &e, i + 1, 1_796_000_000_000 + i);
        }
        entry.meta.insert("cwd".into(), "/work".into());
        entry
    }

    /// The full log turns in place (`next_log_row`) and holds what popping the oldest row
    /// and pushing a new one held: the newest rows in order, fewer when the log shrinks,
    /// and the same after a store round trip (whose deque has spare capacity).
    #[test]
    fn the_full_log_keeps_the_newest_rows_in_order() {
        let mut entry = busy_entry();
        let seqs = |e: &SessionEntry| e.recent.iter().map(|r| r.seq).collect::<Vec<_>>();
        assert_eq!(seqs(&entry), (61..=80).collect::<Vec<_>>());
        let last = entry.recent.back().cloned().unwrap();
        assert_eq!(
            (last.event.as_str(), last.call_id.as_deref(), last.decision),
            ("outcome", Some("c39"), LogDecision::Recorded)
        );
        assert_eq!(entry.recent[0].call_id.as_deref(), Some("c30"));
        let policy = Policy::enabled();
        let apply = |entry: &mut SessionEntry, applier: &Applier, i: u64| {
            let line = format!(r#"{{"type":"call","session":"s","tool":"t{i}","args":{{}}}}"#);
            let e = parse_event(line.as_bytes(), i).unwrap();
            let _ = entry.apply(&policy, applier, &e, i, 1_796_000_000_000 + i);
        };
        let small = Applier::new(ToolProfile::Plain).log_size(5);
        for i in 0..7 {
            apply(&mut entry, &small, i);
        }
        assert_eq!(seqs(&entry), (83..=87).collect::<Vec<_>>());
        let tools = |e: &SessionEntry| {
            e.recent
                .iter()
                .map(|r| r.tool.clone().unwrap_or_default())
                .collect::<Vec<_>>()
        };
        assert_eq!(tools(&entry), ["t2", "t3", "t4", "t5", "t6"]);
        let mut back = SessionEntry::decode(&entry.encode()).unwrap();
        assert_eq!(back.recent, entry.recent);
        for i in 7..10 {
            apply(&mut back, &small, i);
            apply(&mut entry, &small, i);
        }
        assert_eq!(back.recent, entry.recent);
        assert_eq!(tools(&back), ["t5", "t6", "t7", "t8", "t9"]);
    }

    #[test]
    fn the_compact_form_is_a_third_of_the_json_one_and_both_are_read() {
        let entry = busy_entry();
        let compact = entry.encode();
        let json = entry.encode_json();
        assert!(compact.starts_with(b"LGE2") && json.starts_with(b"LGE1"));
        assert!(
            compact.len() * 3 < json.len(),
            "{} vs {} bytes",
            compact.len(),
            json.len()
        );
        for bytes in [&compact, &json] {
            let back = SessionEntry::decode(bytes).unwrap();
            assert_eq!(back.stats, entry.stats);
            assert_eq!(back.recent, entry.recent);
            assert_eq!(back.meta, entry.meta);
            assert!(back.session.export_state() == entry.session.export_state());
            assert!(back.encode() == compact);
        }
    }

    /// `encode` writes the bookkeeping part from borrowed fields: the same bytes as the
    /// owned header, pending blocks and an aborted run included.
    #[test]
    fn the_borrowed_header_writes_the_owned_bytes() {
        let mut entry = busy_entry();
        let applier = Applier::new(ToolProfile::Plain);
        let policy = Policy::enabled();
        // The same call answered the same way until it is blocked.
        let call = br#"{"type":"call","session":"s","run":"r","callId":"x","tool":"read","args":{"path":"/same"}}"#;
        let outcome = br#"{"type":"outcome","session":"s","run":"r","callId":"x","tool":"read","args":{"path":"/same"},"result":"same"}"#;
        for i in 0..40u64 {
            // The last calls' outcomes never come: they stay pending.
            let lines = if i < 30 {
                &[&call[..], &outcome[..]][..]
            } else {
                &[&call[..]][..]
            };
            for &line in lines {
                let e = parse_event(line, i + 1).unwrap();
                let _ = entry.apply(&policy, &applier, &e, i + 1, 1_796_000_000_000 + i);
            }
        }
        entry.aborted = Some(AbortedRun {
            run: "r".into(),
            message: "stop".into(),
        });
        assert!(entry.pending_blocks() > 0);
        let owned = postcard::to_stdvec(&entry.header()).unwrap();
        let compact = entry.encode();
        assert_eq!(&compact[8..8 + owned.len()], &owned[..]);
        assert_eq!(
            u32::from_be_bytes(compact[4..8].try_into().unwrap()) as usize,
            owned.len()
        );
    }

    /// The hand-written decision log has postcard's bytes for every shape of row: absent
    /// and present options, empty and long strings (lengths over one varint byte), and
    /// integers at the varint boundaries.
    #[test]
    fn log_rows_encode_as_postcard() {
        let long = "é".repeat(200);
        let mut rows = VecDeque::new();
        for (i, n) in [0u64, 1, 127, 128, 16_383, 16_384, u64::MAX]
            .into_iter()
            .enumerate()
        {
            let some = |s: &str| (i % 2 == 0).then(|| s.to_string());
            rows.push_back(LogRow {
                seq: n,
                ts_ms: n ^ 0x5555,
                event: if i == 3 { long.clone() } else { "call".into() },
                run: some("run-1"),
                tool: some(&long),
                call_id: (i % 3 == 0).then(String::new),
                decision: LogDecision::Allow,
                detector: some("generic_repeat"),
                count: (i % 2 == 1).then_some(n),
                message: some(&long[..(i * 37) & !1]),
            });
        }
        for keep in [0, 1, rows.len()] {
            let part: VecDeque<LogRow> = rows.iter().take(keep).cloned().collect();
            let mut hand = vec![9u8];
            write_log(&mut hand, &part);
            assert_eq!(hand[0], 9, "appends");
            assert_eq!(
                &hand[1..],
                &postcard::to_stdvec(&part).unwrap()[..],
                "{keep} rows"
            );
        }
    }

    /// Entries stored before the log's decision was an enum kept its word as a string:
    /// every word the code of that time wrote reads back as its variant, in the compact form
    /// (`LGE2`, postcard) and the JSON form (`LGE1`), and is written back as the same word.
    #[test]
    fn entries_stored_with_decision_words_still_decode() {
        #[derive(Serialize)]
        struct OldRow {
            seq: u64,
            ts_ms: u64,
            event: String,
            run: Option<String>,
            tool: Option<String>,
            call_id: Option<String>,
            decision: String,
            detector: Option<String>,
            count: Option<u64>,
            message: Option<String>,
        }
        #[derive(Serialize)]
        struct OldHeader {
            stats: Stats,
            created_ms: u64,
            last_seen_ms: u64,
            recent: Vec<OldRow>,
            run_seq: u64,
            aborted: Option<AbortedRun>,
            meta: BTreeMap<String, String>,
            blocks: Vec<PendingBlock>,
        }
        let words = [
            ("allow", LogDecision::Allow),
            ("warn", LogDecision::Warn),
            ("warn-quiet", LogDecision::WarnQuiet),
            ("block", LogDecision::Block),
            ("recorded", LogDecision::Recorded),
            ("ignored", LogDecision::Ignored),
            ("abort", LogDecision::Abort),
            ("armed", LogDecision::Armed),
            ("would-warn", LogDecision::WouldWarn),
            ("would-block", LogDecision::WouldBlock),
            ("would-abort", LogDecision::WouldAbort),
            ("new-run", LogDecision::NewRun),
            ("duplicate", LogDecision::Duplicate),
            ("deny-aborted", LogDecision::DenyAborted),
            ("already-armed", LogDecision::AlreadyArmed),
            (
                "batch: 2 recorded, 1 already recorded",
                LogDecision::Batch {
                    recorded: 2,
                    skipped: 1,
                },
            ),
        ];
        let source = busy_entry();
        let header = OldHeader {
            stats: source.stats,
            created_ms: 7,
            last_seen_ms: 9,
            recent: words
                .iter()
                .enumerate()
                .map(|(i, (word, _))| OldRow {
                    seq: i as u64 + 1,
                    ts_ms: 1_796_000_000_000,
                    event: "PreToolUse".into(),
                    run: Some("prompt-1".into()),
                    tool: Some("Bash".into()),
                    call_id: None,
                    decision: word.to_string(),
                    detector: None,
                    count: None,
                    message: None,
                })
                .collect(),
            run_seq: 1,
            aborted: None,
            meta: BTreeMap::new(),
            blocks: Vec::new(),
        };
        let stored = |magic: &[u8], head: Vec<u8>, state: Vec<u8>| {
            let mut out = magic.to_vec();
            out.extend_from_slice(&(head.len() as u32).to_be_bytes());
            out.extend_from_slice(&head);
            out.extend_from_slice(&state);
            out
        };
        let mut binary_state = Vec::new();
        source.session.export_state_binary_into(&mut binary_state);
        let compact = stored(MAGIC, postcard::to_stdvec(&header).unwrap(), binary_state);
        let json = stored(
            MAGIC_JSON,
            serde_json::to_vec(&header).unwrap(),
            source.session.export_state(),
        );
        for bytes in [compact.clone(), json] {
            let entry = SessionEntry::decode(&bytes).unwrap();
            let read: Vec<_> = entry.recent.iter().map(|r| r.decision.clone()).collect();
            let expected: Vec<_> = words.iter().map(|(_, d)| d.clone()).collect();
            assert_eq!(read, expected);
            assert_eq!(entry.stats, source.stats);
        }
        // Written back, the header has the old bytes: the word, as before.
        let entry = SessionEntry::decode(&compact).unwrap();
        assert_eq!(entry.encode(), compact);
    }

    /// The `LGE2` layout is pinned: stores keep entries for days and replicas of two
    /// versions may share them, so a change here needs a new magic (and `decode` reading
    /// the old one), not a silent reinterpretation.
    #[test]
    fn the_compact_layout_is_pinned() {
        let mut entry = SessionEntry::default();
        let applier = Applier::new(ToolProfile::Plain);
        let policy = Policy::enabled();
        let call = parse_event(
            br#"{"type":"call","session":"s","run":"r","callId":"c1","tool":"read","args":{"path":"/a"}}"#,
            1,
        )
        .unwrap();
        let _ = entry.apply(&policy, &applier, &call, 1, 1_796_000_000_000);
        entry.meta.insert("cwd".into(), "/w".into());
        let hex: String = entry.encode().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, GOLDEN_LGE2);
    }

    const GOLDEN_LGE2: &str = "4c474532000000410101000000000080d0c4cfa23480d0c4cfa234010180d0c4cfa2340463616c6c0101720104726561640102633105616c6c6f7700000000000103637764022f77004c475342030000010472656164b755d9a3d6caddc4f07594cbcbe6b07990d8787d03ff3ebb01c91899f8bddd5f01026331010172000000000101017201030000000000";

    #[test]
    fn damaged_entries_are_errors() {
        let compact = busy_entry().encode();
        assert!(matches!(
            SessionEntry::decode(b"LGE9...."),
            Err(EntryError::Header)
        ));
        for cut in [3, 7, 9, 40, compact.len() - 1] {
            assert!(SessionEntry::decode(&compact[..cut]).is_err(), "cut {cut}");
        }
        let mut bad = compact.clone();
        bad[8] = 0xff; // the first varint of the counters
        bad[9] = 0xff;
        let _ = SessionEntry::decode(&bad); // an error or an entry, never a panic
    }
}
