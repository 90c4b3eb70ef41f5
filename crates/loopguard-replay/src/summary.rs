//! The human report of a replay: per session, counts and each loop found.
//!
//! A *loop* gathers the decisions about one repeated thing in one run: the same call
//! (`argsHash`) for the generic, poll and global detectors and the post-compaction guard,
//! the same pair for ping-pong, the same missing tool for unknown-tool repeats. For each
//! loop the report gives its first warning and first block (line, count, time), and what
//! was spent inside it after the first warning: calls, wall time and tokens, when the
//! transcript records them.

use std::borrow::Cow;

use rustc_hash::FxHashMap;

use loopguard_core::normalize_run;
use loopguard_core::Detector;
use loopguard_core::{JsString, Value};

use loopguard_events::EventKind;
use loopguard_events::{Action, Decision};

/// Where and when a loop reached a milestone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    /// Line (or record) of the decision.
    pub line: u64,
    /// The detector's count then.
    pub count: u64,
    /// Milliseconds since the epoch, when known.
    pub ts_ms: Option<u64>,
}

/// One loop in one session.
#[derive(Clone, Debug, PartialEq)]
pub struct Loop {
    /// The run it happened in.
    pub run: Option<String>,
    /// The tool that repeated (for ping-pong, the tool seen first).
    pub tool: String,
    /// The other tool of a ping-pong pair.
    pub paired_tool: Option<String>,
    /// A short rendering of the repeated arguments, when known.
    pub args_preview: Option<String>,
    /// Detectors that fired, in the order they first did.
    pub detectors: Vec<Detector>,
    /// The highest count reached.
    pub max_count: u64,
    /// First line of the loop's decisions.
    pub first_line: u64,
    /// Last line of the loop's decisions.
    pub last_line: u64,
    /// The first warning.
    pub first_warning: Option<Mark>,
    /// The first block.
    pub first_block: Option<Mark>,
    /// The first abort.
    pub first_abort: Option<Mark>,
    /// Warn decisions.
    pub warnings: u64,
    /// Warnings that passed the de-duplication.
    pub warnings_emitted: u64,
    /// Blocks.
    pub blocks: u64,
    /// Aborts.
    pub aborts: u64,
    /// Calls made inside the loop from its first warning on.
    pub calls_after_warning: u64,
    /// Time of the latest call inside the loop.
    pub last_ts_ms: Option<u64>,
    /// Tokens spent on calls inside the loop from its first warning on, when known.
    pub tokens_after_warning: Option<u64>,
}

impl Loop {
    /// Wall time from the first warning to the latest call of the loop.
    pub fn wall_ms_after_warning(&self) -> Option<u64> {
        let start = self.first_warning.and_then(|m| m.ts_ms)?;
        Some(self.last_ts_ms?.saturating_sub(start))
    }
}

/// Counts for one session.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionSummary {
    /// The session name.
    pub name: String,
    /// Where it came from (a file), when the caller says.
    pub source: Option<String>,
    /// `call` events.
    pub calls: u64,
    /// `outcome` events.
    pub outcomes: u64,
    /// `compaction` events.
    pub compactions: u64,
    /// Warn decisions.
    pub warnings: u64,
    /// Warn decisions with `emitted: true`.
    pub warnings_emitted: u64,
    /// Block decisions.
    pub blocks: u64,
    /// Abort decisions.
    pub aborts: u64,
    /// Tokens of all calls, when known.
    pub tokens: Option<u64>,
    /// Time of the earliest event, when the input records times (`ts`).
    pub first_ts_ms: Option<u64>,
    /// Time of the latest event, when recorded.
    pub last_ts_ms: Option<u64>,
    /// Loops, in the order they started.
    pub loops: Vec<Loop>,
    loop_index: FxHashMap<(Option<String>, String), usize>,
    /// The key and index of the loop the last finding went to: the findings of one loop
    /// come in a row, and these find it without building its key.
    last_loop: Option<(LoopKey, usize)>,
}

/// A loop's run and subject (its arguments' hash, or its warning key).
type LoopKey = (Option<String>, String);

impl SessionSummary {
    /// Calls made inside loops after their first warning.
    pub fn calls_in_loops(&self) -> u64 {
        self.loops.iter().map(|l| l.calls_after_warning).sum()
    }

    /// Wall time from the earliest to the latest event, when the input records times.
    ///
    /// ```
    /// use loopguard_replay::summary::SessionSummary;
    /// let mut s = SessionSummary::default();
    /// assert_eq!(s.wall_ms(), None);
    /// s.first_ts_ms = Some(1_000);
    /// s.last_ts_ms = Some(61_000);
    /// assert_eq!(s.wall_ms(), Some(60_000));
    /// ```
    pub fn wall_ms(&self) -> Option<u64> {
        Some(self.last_ts_ms?.saturating_sub(self.first_ts_ms?))
    }

    /// What the session's loops cost, for ranking sessions: calls made inside loops after
    /// their first warning, then tokens spent there, then wall time.
    pub fn cost(&self) -> (u64, u64, u64) {
        let tokens = self
            .loops
            .iter()
            .filter_map(|l| l.tokens_after_warning)
            .sum();
        let wall = self
            .loops
            .iter()
            .filter_map(Loop::wall_ms_after_warning)
            .sum();
        (self.calls_in_loops(), tokens, wall)
    }

    /// Loops whose strongest detector is `d` (the first that fired).
    pub fn loops_by(&self, d: Detector) -> usize {
        self.loops
            .iter()
            .filter(|l| l.detectors.first() == Some(&d))
            .count()
    }
}

/// What the transcript says about an event beyond the event itself.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EventMeta<'a> {
    /// Milliseconds since the epoch.
    pub ts_ms: Option<u64>,
    /// Tokens the model spent making this call.
    pub tokens: Option<u64>,
    /// The call's arguments; the summary keeps a short rendering ([`Loop::args_preview`]) of
    /// those of each loop's first decision, rendered only then.
    pub args: Option<&'a Value<'a>>,
}

/// What a loop is about: its arguments' hash (`tool:hex`), or a warning key.
enum Subject<'a> {
    Args(Cow<'a, str>, &'a [u8; 64]),
    Text(Cow<'a, str>),
}

impl Subject<'_> {
    /// `true` when `text` is this subject written out.
    fn is(&self, text: &str) -> bool {
        match self {
            Subject::Args(tool, hex) => text
                .strip_prefix(&**tool)
                .and_then(|t| t.strip_prefix(':'))
                .is_some_and(|h| h.as_bytes() == &hex[..]),
            Subject::Text(t) => text == t,
        }
    }
}

impl std::fmt::Display for Subject<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Subject::Args(tool, hex) => {
                f.write_str(tool)?;
                f.write_str(":")?;
                f.write_str(std::str::from_utf8(&hex[..]).unwrap_or_default())
            }
            Subject::Text(t) => f.write_str(t),
        }
    }
}

impl SessionSummary {
    /// The loop of `key` (`Ok`, and it becomes the last loop), or the key back to start one.
    fn find_loop(&mut self, key: LoopKey) -> Result<usize, LoopKey> {
        match self.loop_index.get(&key) {
            Some(&li) => {
                self.last_loop = Some((key, li));
                Ok(li)
            }
            None => Err(key),
        }
    }
}

/// The arguments of a call, shortened for the report (at most 60 characters of their
/// canonical JSON).
pub(crate) fn args_preview(args: &Value<'_>) -> String {
    const MAX: usize = 60;
    let text = loopguard_core::json::to_canonical_string(args);
    if text.chars().count() <= MAX {
        text
    } else {
        let cut: String = text.chars().take(MAX - 1).collect();
        format!("{cut}…")
    }
}

/// Where [`Summary::observe_with`] put a decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observed {
    /// Index of its session in [`Summary::sessions`].
    pub session: usize,
    /// Index of its loop in that session's [`SessionSummary::loops`], for a decision with
    /// a finding.
    pub loop_index: Option<usize>,
}

/// What a replay found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Events processed (blank lines excluded).
    pub events: u64,
    /// Sessions in the order they first appeared.
    pub sessions: Vec<SessionSummary>,
    index: FxHashMap<Vec<u8>, usize>,
}

impl Summary {
    /// The summary of the session with this name (its exact bytes, as in
    /// [`Decision::session`]).
    ///
    /// ```
    /// use loopguard_replay::Summary;
    /// assert!(Summary::default().session(b"default").is_none());
    /// ```
    pub fn session(&self, name: &[u8]) -> Option<&SessionSummary> {
        self.index.get(name).map(|&i| &self.sessions[i])
    }

    /// Adds one decision.
    pub fn observe(&mut self, d: &Decision<'_>) {
        self.observe_with(d, EventMeta::default());
    }

    /// The sessions ordered by what their loops cost ([`SessionSummary::cost`]), most
    /// expensive first; equal costs keep their order of appearance.
    pub fn sessions_by_cost(&self) -> Vec<&SessionSummary> {
        self.order_by_cost()
            .into_iter()
            .map(|i| &self.sessions[i])
            .collect()
    }

    /// Indices into [`Summary::sessions`] in the order of [`Summary::sessions_by_cost`].
    pub fn order_by_cost(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.sessions.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(self.sessions[i].cost()));
        order
    }

    /// Notes where a session came from (shown in the report).
    pub fn set_source(&mut self, session: &[u8], source: &str) {
        let i = self.session_index(session);
        self.sessions[i].source = Some(source.to_string());
    }

    fn session_index(&mut self, session: &[u8]) -> usize {
        match self.index.get(session) {
            Some(&i) => i,
            None => {
                self.sessions.push(SessionSummary {
                    name: String::from_utf8_lossy(session).into_owned(),
                    ..Default::default()
                });
                self.index.insert(session.to_vec(), self.sessions.len() - 1);
                self.sessions.len() - 1
            }
        }
    }

    /// Adds one decision with what the transcript recorded about its event, and says
    /// where it went.
    pub fn observe_with(&mut self, d: &Decision<'_>, meta: EventMeta<'_>) -> Observed {
        let args = meta.args;
        self.observe_lazy(d, meta, || args.map(args_preview))
    }

    /// [`Summary::observe_with`] with the arguments' preview made by `preview`, called only
    /// when the decision starts a loop (the replay's reader thread does not hand the
    /// engine every event's arguments; it parses them again for these few).
    pub(crate) fn observe_lazy(
        &mut self,
        d: &Decision<'_>,
        meta: EventMeta<'_>,
        preview: impl FnOnce() -> Option<String>,
    ) -> Observed {
        self.events += 1;
        let i = self.session_index(d.session.as_wtf8());
        let s = &mut self.sessions[i];
        if let Some(ts) = meta.ts_ms {
            s.first_ts_ms = Some(s.first_ts_ms.map_or(ts, |f| f.min(ts)));
            s.last_ts_ms = Some(s.last_ts_ms.map_or(ts, |l| l.max(ts)));
        }
        let mut observed = Observed {
            session: i,
            loop_index: None,
        };
        match d.kind {
            EventKind::Call => {
                s.calls += 1;
                if let Some(t) = meta.tokens {
                    let sum = s.tokens.get_or_insert(0);
                    *sum = sum.saturating_add(t);
                }
            }
            EventKind::Outcome => s.outcomes += 1,
            EventKind::Compaction => s.compactions += 1,
        }
        let Some(f) = &d.finding else {
            return observed;
        };
        match d.action {
            Action::Warn => {
                s.warnings += 1;
                if f.emitted == Some(true) {
                    s.warnings_emitted += 1;
                }
            }
            Action::Block => s.blocks += 1,
            Action::Abort => s.aborts += 1,
            _ => {}
        }
        let run_bytes = normalize_run(d.run.as_ref().map(JsString::as_wtf8));
        let run = run_bytes.map(String::from_utf8_lossy);
        let args_hash: [u8; 64];
        let subject = match f.detector {
            // A run ended by the strict profile is one loop, whatever its later calls are.
            Detector::PingPong | Detector::UnknownToolRepeat | Detector::SecondCriticalAbort => {
                let key = f.warning_key.as_ref().map(JsString::as_wtf8).unwrap_or(b"");
                // The session scopes warning keys as `<run>:<key>`; without the run prefix
                // both sides of a pair share one loop.
                let unscoped = run_bytes
                    .and_then(|r| key.strip_prefix(r))
                    .and_then(|k| k.strip_prefix(b":"))
                    .unwrap_or(key);
                Subject::Text(String::from_utf8_lossy(unscoped))
            }
            _ => match (d.engine_tool.as_ref().or(d.tool.as_ref()), &d.args) {
                (Some(tool), Some(args)) => {
                    args_hash = loopguard_core::hashing::hex_bytes(&args.0);
                    // As `Decision::args_hash` writes it (lossy over the bytes).
                    Subject::Args(String::from_utf8_lossy(tool.as_wtf8()), &args_hash)
                }
                _ => Subject::Text("".into()),
            },
        };
        let last = s
            .last_loop
            .as_ref()
            .filter(|((r, subj), _)| r.as_deref() == run.as_deref() && subject.is(subj))
            .map(|(_, li)| *li);
        let li = match last {
            Some(li) => Ok(li),
            None => s.find_loop((run.map(Cow::into_owned), subject.to_string())),
        };
        let li = match li {
            Ok(li) => li,
            Err(slot) => {
                let run = slot.0.clone();
                let tool = d
                    .tool
                    .as_ref()
                    .map(|t| t.to_string_lossy().into_owned())
                    .unwrap_or_default();
                s.loops.push(Loop {
                    run,
                    tool,
                    paired_tool: f
                        .paired_tool
                        .as_ref()
                        .map(|p| p.to_string_lossy().into_owned()),
                    args_preview: preview(),
                    detectors: Vec::new(),
                    max_count: 0,
                    first_line: d.line,
                    last_line: d.line,
                    first_warning: None,
                    first_block: None,
                    first_abort: None,
                    warnings: 0,
                    warnings_emitted: 0,
                    blocks: 0,
                    aborts: 0,
                    calls_after_warning: 0,
                    last_ts_ms: None,
                    tokens_after_warning: None,
                });
                s.loop_index.insert(slot.clone(), s.loops.len() - 1);
                s.last_loop = Some((slot, s.loops.len() - 1));
                s.loops.len() - 1
            }
        };
        observed.loop_index = Some(li);
        let l = &mut s.loops[li];
        if !l.detectors.contains(&f.detector) {
            l.detectors.push(f.detector);
        }
        l.max_count = l.max_count.max(f.count);
        l.last_line = d.line;
        let mark = Mark {
            line: d.line,
            count: f.count,
            ts_ms: meta.ts_ms,
        };
        match d.action {
            Action::Warn => {
                l.warnings += 1;
                if f.emitted == Some(true) {
                    l.warnings_emitted += 1;
                }
                l.first_warning.get_or_insert(mark);
            }
            Action::Block => {
                l.blocks += 1;
                l.first_block.get_or_insert(mark);
                // A loop that blocks at once (no warning first) starts here.
                l.first_warning.get_or_insert(mark);
            }
            Action::Abort => {
                l.aborts += 1;
                l.first_abort.get_or_insert(mark);
            }
            _ => {}
        }
        if d.kind == EventKind::Call && l.first_warning.is_some() {
            l.calls_after_warning += 1;
            if let Some(ts) = meta.ts_ms {
                l.last_ts_ms = Some(ts);
            }
            if let Some(t) = meta.tokens {
                let sum = l.tokens_after_warning.get_or_insert(0);
                *sum = sum.saturating_add(t);
            }
        }
        observed
    }

    /// Every loop of every session.
    pub fn loops(&self) -> impl Iterator<Item = (&SessionSummary, &Loop)> {
        self.sessions
            .iter()
            .flat_map(|s| s.loops.iter().map(move |l| (s, l)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_preview_is_canonical_and_cut_at_sixty_characters() {
        let short = Value::parse(br#"{"path":"/a"}"#).unwrap();
        assert_eq!(args_preview(&short), r#"{"path":"/a"}"#);
        let text = format!(r#"{{"path":"{}"}}"#, "é".repeat(100));
        let long = Value::parse(text.as_bytes()).unwrap();
        let preview = args_preview(&long);
        assert_eq!(preview.chars().count(), 60);
        assert!(preview.ends_with('…'));
    }
}
