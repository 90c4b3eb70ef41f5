//! Loop history: one [`LoopRecord`] per loop, kept by the [`Store`](crate::Store) beside
//! the sessions, so that a loop is still known after its session was forgotten.
//!
//! A loop is what OpenClaw de-duplicates its warnings by: the `warningKey` of a warn or
//! block (the run, the detector's kind, the tool and the digests it repeats), or, for a
//! detector without one (the global circuit breaker, the post-compaction guard), the
//! detector and the tool. Every decision with a finding is a [`LoopStep`]; a store folds the
//! steps of a loop into its record atomically ([`Store::record_loop`](crate::Store::record_loop)),
//! so replicas sharing a store keep one record per loop, and exactly one of them sees the
//! step that first blocked it ([`LoopChange::blocked`]): the one that sends the alert.
//!
//! ```
//! use loopguard_guard::{LoopAction, LoopQuery, LoopStep, MemoryOptions, MemoryStore, Store};
//! # fn main() -> Result<(), loopguard_guard::StoreError> {
//! let store = MemoryStore::new(MemoryOptions::default());
//! let mut step = LoopStep::new("s1", "read", "generic_repeat", "read:abc", LoopAction::Warn, 1_000);
//! step.count = 10;
//! assert!(store.record_loop(&step)?.new);
//! step.action = LoopAction::Block;
//! step.ts_ms = 2_000;
//! let change = store.record_loop(&step)?;
//! assert!(change.blocked && !change.new);
//! let page = store.loops(&LoopQuery::default())?;
//! assert_eq!(page.loops[0].calls, 2);
//! assert_eq!(page.loops[0].block_ms, Some(2_000));
//! # Ok(())
//! # }
//! ```

use serde::{Deserialize, Serialize};

/// The `format` of every [`LoopRecord`] in JSON: what tells a loop history export
/// (`GET /v1/loops/export`) from an event stream (`loopguard replay --summary` reads both).
pub const LOOP_FORMAT: &str = "loopguard.loop/1";

/// Loops a query returns at most per page.
pub const MAX_LOOP_PAGE: usize = 1000;

/// What a decision did to its loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoopAction {
    /// A warning (emitted or kept back by the de-duplication).
    Warn,
    /// A block: the call did not run.
    Block,
    /// A block in observe mode: the call ran, but would not have in enforce mode.
    WouldBlock,
    /// The run was ended (a block that ends the run, or the post-compaction abort).
    Abort,
}

/// How a loop ended, as far as loopguard saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoopEnd {
    /// Warned, never blocked: the agent stopped by itself, or is still at it.
    Warned,
    /// Blocked by loopguard.
    Blocked,
    /// Observe mode: it would have been blocked.
    WouldBlock,
    /// loopguard ended the run.
    Aborted,
}

impl LoopEnd {
    /// The JSON word (`warned`, `blocked`, `would-block`, `aborted`).
    pub fn as_str(self) -> &'static str {
        match self {
            LoopEnd::Warned => "warned",
            LoopEnd::Blocked => "blocked",
            LoopEnd::WouldBlock => "would-block",
            LoopEnd::Aborted => "aborted",
        }
    }
}

/// One decision with a finding, as the loop history takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoopStep {
    /// The tenant, when there is one.
    pub tenant: Option<String>,
    /// The session id.
    pub session: String,
    /// The run, when the event had one.
    pub run: Option<String>,
    /// The agent (an event's `agent`, a span's `gen_ai.agent.name`), when known.
    pub agent: Option<String>,
    /// The service (a span's `service.name`), when known.
    pub service: Option<String>,
    /// The tool called.
    pub tool: String,
    /// The detector that fired.
    pub detector: String,
    /// The loop's key: the finding's `warningKey`, or `detector:tool` without one.
    pub loop_key: String,
    /// What the decision was.
    pub action: LoopAction,
    /// When (ms since the epoch).
    pub ts_ms: u64,
    /// The detector's count.
    pub count: u64,
    /// Tokens the call cost, when the front end knows them (a trace's usage).
    pub tokens: Option<u64>,
    /// The message given to the model.
    pub message: Option<String>,
}

impl LoopStep {
    /// A step with the fields every step has; the rest empty.
    pub fn new(
        session: impl Into<String>,
        tool: impl Into<String>,
        detector: impl Into<String>,
        loop_key: impl Into<String>,
        action: LoopAction,
        ts_ms: u64,
    ) -> LoopStep {
        LoopStep {
            tenant: None,
            session: session.into(),
            run: None,
            agent: None,
            service: None,
            tool: tool.into(),
            detector: detector.into(),
            loop_key: loop_key.into(),
            action,
            ts_ms,
            count: 0,
            tokens: None,
            message: None,
        }
    }

    /// The step of a decision, `None` when it has no finding (no loop). `observe`: the
    /// guard that decided runs in observe mode, so a block is a would-block. The agent,
    /// service and tokens are the front end's to fill in.
    ///
    /// ```
    /// use loopguard_guard::{Guard, LoopAction, LoopStep};
    /// use loopguard_events::parse_event;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let guard = Guard::builder().build();
    /// let call = parse_event(br#"{"type":"call","session":"s","tool":"read","args":{"p":1}}"#, 1)?;
    /// let outcome = parse_event(br#"{"type":"outcome","session":"s","tool":"read","args":{"p":1},"result":1}"#, 1)?;
    /// let mut steps = Vec::new();
    /// for _ in 0..11 {
    ///     steps.push(guard.apply(Some("acme"), &call, |d| LoopStep::of(Some("acme"), &d, false, 5))?);
    ///     guard.apply(Some("acme"), &outcome, |_| ())?;
    /// }
    /// // Ten identical calls before it: the 11th is warned.
    /// let step = steps[10].clone().ok_or("no loop at the 11th call")?;
    /// assert_eq!((step.action, step.tenant.as_deref(), step.count), (LoopAction::Warn, Some("acme"), 10));
    /// assert!(steps[9].is_none());
    /// # Ok(())
    /// # }
    /// ```
    pub fn of(
        tenant: Option<&str>,
        decision: &loopguard_events::Decision<'_>,
        observe: bool,
        now_ms: u64,
    ) -> Option<LoopStep> {
        use loopguard_events::Action;
        let finding = decision.finding.as_ref()?;
        let action = if decision.ends_run() || decision.action == Action::Abort {
            LoopAction::Abort
        } else {
            match decision.action {
                Action::Warn => LoopAction::Warn,
                Action::Block if observe => LoopAction::WouldBlock,
                Action::Block => LoopAction::Block,
                _ => return None,
            }
        };
        let tool = decision
            .tool
            .as_ref()
            .map(|t| t.to_string_lossy().into_owned())
            .unwrap_or_default();
        let detector = finding.detector.as_str();
        let run = decision
            .run
            .as_ref()
            .map(|r| r.to_string_lossy().into_owned());
        let loop_key = loop_key(
            finding.warning_key.as_ref().map(|k| k.to_string_lossy()),
            run.as_deref(),
            decision.args_hash().as_deref(),
            detector,
            &tool,
        );
        Some(LoopStep {
            tenant: tenant.map(str::to_string),
            session: decision.session.to_string_lossy().into_owned(),
            run,
            agent: None,
            service: None,
            tool,
            detector: detector.to_string(),
            loop_key,
            action,
            ts_ms: now_ms,
            count: finding.count,
            tokens: None,
            message: Some(finding.message.to_string_lossy().into_owned()),
        })
    }

    /// The id of the loop this step belongs to: its session's [`session_key`](crate::session_key), `#`, and
    /// the loop key.
    pub fn loop_id(&self) -> String {
        format!(
            "{}#{}",
            crate::session_key(self.tenant.as_deref(), &self.session),
            self.loop_key
        )
    }
}

/// The key of a loop: a `warningKey` cut after the repeated call's `argsHash` (a warning
/// says `generic:read:<argsHash>`, the block of the same loop adds the result's hash, and a
/// later circuit breaker starts `global:`: one loop, the repeated call, whatever the
/// detector), kept whole when it does not hold it (a ping-pong names its pair), and
/// `detector:tool` without one; the run's prefix kept.
fn loop_key(
    warning_key: Option<std::borrow::Cow<'_, str>>,
    run: Option<&str>,
    args_hash: Option<&str>,
    detector: &str,
    tool: &str,
) -> String {
    let prefix = run.map(|r| format!("{r}:")).unwrap_or_default();
    let Some(key) = warning_key else {
        return format!("{prefix}{detector}:{tool}");
    };
    if let Some(hash) = args_hash.filter(|h| !h.is_empty()) {
        if key.contains(hash) && !key.contains('|') {
            return format!("{prefix}{hash}");
        }
    }
    key.into_owned()
}

/// One loop, as the history keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LoopRecord {
    /// Always [`LOOP_FORMAT`].
    pub format: String,
    /// The loop's id ([`LoopStep::loop_id`]).
    pub id: String,
    /// The tenant, when there is one.
    pub tenant: Option<String>,
    /// The session id.
    pub session: String,
    /// The run, when known.
    pub run: Option<String>,
    /// The agent, when known.
    pub agent: Option<String>,
    /// The service, when known.
    pub service: Option<String>,
    /// The tool.
    pub tool: String,
    /// The detector (the last one that fired for this loop).
    pub detector: String,
    /// The loop key (`warningKey`).
    pub loop_key: String,
    /// The first step (ms since the epoch).
    pub first_ms: u64,
    /// The first warning, when the loop warned before it blocked.
    pub first_warning_ms: Option<u64>,
    /// The first block (or would-block, or abort).
    pub block_ms: Option<u64>,
    /// The last step.
    pub last_ms: u64,
    /// Calls of the loop from its first warning on (each step is one call).
    pub calls: u64,
    /// Warnings (emitted or not).
    pub warnings: u64,
    /// Blocks, would-blocks and aborts.
    pub blocks: u64,
    /// Tokens those calls cost, when the front end knew any.
    pub tokens: Option<u64>,
    /// The detector's highest count.
    pub max_count: u64,
    /// How it ended.
    pub end: LoopEnd,
    /// The last message given to the model.
    pub message: Option<String>,
}

/// What a [`LoopStep`] changed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoopChange {
    /// The record after the step.
    pub record: LoopRecord,
    /// The step started the record.
    pub new: bool,
    /// The step was the loop's first block (or would-block, or abort).
    pub blocked: bool,
    /// The step ended the run (an abort), and none of the loop's earlier steps had.
    pub ended_run: bool,
}

impl LoopRecord {
    /// The record a loop's first step starts.
    pub fn start(step: &LoopStep) -> LoopRecord {
        LoopRecord {
            format: LOOP_FORMAT.to_string(),
            id: step.loop_id(),
            tenant: step.tenant.clone(),
            session: step.session.clone(),
            run: step.run.clone(),
            agent: step.agent.clone(),
            service: step.service.clone(),
            tool: step.tool.clone(),
            detector: step.detector.clone(),
            loop_key: step.loop_key.clone(),
            first_ms: step.ts_ms,
            first_warning_ms: None,
            block_ms: None,
            last_ms: step.ts_ms,
            calls: 0,
            warnings: 0,
            blocks: 0,
            tokens: None,
            max_count: 0,
            end: LoopEnd::Warned,
            message: None,
        }
    }

    /// Folds a step into the record; what it changed. Every store folds with this, so
    /// their records agree.
    pub fn fold(&mut self, step: &LoopStep) -> (bool, bool) {
        let was_blocked = self.block_ms.is_some();
        let was_aborted = self.end == LoopEnd::Aborted;
        self.calls += 1;
        self.last_ms = self.last_ms.max(step.ts_ms);
        self.max_count = self.max_count.max(step.count);
        self.detector.clone_from(&step.detector);
        if let Some(t) = step.tokens {
            self.tokens = Some(self.tokens.unwrap_or(0).saturating_add(t));
        }
        // A label learnt later (a trace's agent span ends last) fills the gap.
        for (mine, theirs) in [
            (&mut self.agent, &step.agent),
            (&mut self.service, &step.service),
            (&mut self.run, &step.run),
        ] {
            if mine.is_none() {
                mine.clone_from(theirs);
            }
        }
        if step.message.is_some() {
            self.message.clone_from(&step.message);
        }
        match step.action {
            LoopAction::Warn => {
                self.warnings += 1;
                self.first_warning_ms.get_or_insert(step.ts_ms);
            }
            LoopAction::Block | LoopAction::WouldBlock | LoopAction::Abort => {
                self.blocks += 1;
                self.block_ms.get_or_insert(step.ts_ms);
                let end = match step.action {
                    LoopAction::Abort => LoopEnd::Aborted,
                    LoopAction::WouldBlock => LoopEnd::WouldBlock,
                    _ => LoopEnd::Blocked,
                };
                // An abort is the last word; a block replaces a would-block.
                if self.end != LoopEnd::Aborted {
                    self.end = end;
                }
            }
        }
        (
            !was_blocked && self.block_ms.is_some(),
            !was_aborted && self.end == LoopEnd::Aborted,
        )
    }

    /// [`LoopRecord::fold`] into `existing` (or a new record), as a [`LoopChange`].
    pub fn apply(existing: Option<LoopRecord>, step: &LoopStep) -> LoopChange {
        let new = existing.is_none();
        let mut record = existing.unwrap_or_else(|| LoopRecord::start(step));
        let (blocked, ended_run) = record.fold(step);
        LoopChange {
            record,
            new,
            blocked,
            ended_run,
        }
    }

    /// The cursor that continues a listing after this record.
    pub fn cursor(&self) -> String {
        format!("{}:{}", self.first_ms, self.id)
    }

    /// The record as one line of JSON (no newline).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads one line of a loop history export; the error says what is wrong.
    ///
    /// ```
    /// use loopguard_guard::{LoopAction, LoopRecord, LoopStep};
    /// let step = LoopStep::new("s", "read", "generic_repeat", "k", LoopAction::Block, 5);
    /// let record = LoopRecord::apply(None, &step).record;
    /// assert_eq!(LoopRecord::from_json(&record.to_json()).unwrap(), record);
    /// assert!(LoopRecord::from_json(r#"{"type":"call"}"#).is_err());
    /// ```
    pub fn from_json(line: &str) -> Result<LoopRecord, String> {
        let record: LoopRecord = serde_json::from_str(line).map_err(|e| e.to_string())?;
        if record.format != LOOP_FORMAT {
            return Err(format!(
                "format {:?}: this loopguard reads {LOOP_FORMAT:?}",
                record.format
            ));
        }
        Ok(record)
    }

    /// Whether the record passes a query's filters (not its cursor or limit).
    pub fn matches(&self, q: &LoopQuery) -> bool {
        let eq = |want: &Option<String>, have: &Option<String>| {
            want.as_ref().is_none_or(|w| have.as_deref() == Some(w))
        };
        q.tenant.as_ref().is_none_or(|t| &self.tenant == t)
            && self.last_ms >= q.since_ms
            && eq(&q.agent, &self.agent)
            && eq(&q.service, &self.service)
            && q.session.as_ref().is_none_or(|s| &self.session == s)
    }
}

/// Which loops a listing returns: those whose last step is at `since_ms` or later and that
/// match every filter given, in the order of their first step (then their id), after the
/// `cursor`, at most `limit` of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoopQuery {
    /// `Some(t)`: only the loops of tenant `t` (`Some(None)`: of no tenant). `None`: all.
    pub tenant: Option<Option<String>>,
    /// Only loops active at or after this time (ms since the epoch).
    pub since_ms: u64,
    /// Only this agent's.
    pub agent: Option<String>,
    /// Only this service's.
    pub service: Option<String>,
    /// Only this session's.
    pub session: Option<String>,
    /// Continue after this cursor ([`LoopPage::next`]).
    pub cursor: Option<String>,
    /// At most this many (0: [`MAX_LOOP_PAGE`]; more is capped to it).
    pub limit: usize,
}

impl LoopQuery {
    /// The page size this query asks for.
    pub fn page_size(&self) -> usize {
        if self.limit == 0 {
            MAX_LOOP_PAGE
        } else {
            self.limit.min(MAX_LOOP_PAGE)
        }
    }

    /// The position after which the page starts: `(first_ms, id)`.
    pub fn after(&self) -> Result<Option<(u64, String)>, String> {
        let Some(c) = &self.cursor else {
            return Ok(None);
        };
        let (ms, id) = c
            .split_once(':')
            .ok_or_else(|| format!("cursor {c:?} is not one a listing returned"))?;
        let ms = ms
            .parse()
            .map_err(|_| format!("cursor {c:?} is not one a listing returned"))?;
        Ok(Some((ms, id.to_string())))
    }
}

/// One page of a loop listing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoopPage {
    /// The loops, oldest first.
    pub loops: Vec<LoopRecord>,
    /// The cursor of the next page, when there may be one.
    pub next: Option<String>,
}

impl LoopPage {
    /// A page of `records` (sorted, filtered, after the cursor), cut at `limit`.
    pub(crate) fn cut(mut records: Vec<LoopRecord>, limit: usize) -> LoopPage {
        let next = if records.len() > limit {
            records.truncate(limit);
            records.last().map(LoopRecord::cursor)
        } else {
            None
        };
        LoopPage {
            loops: records,
            next,
        }
    }
}

/// Loops kept at most by a process's memory (the oldest go first).
pub(crate) const MEMORY_LOOPS: usize = 100_000;

/// A loop history in memory (the memory store's).
#[derive(Debug, Default)]
pub(crate) struct LoopBook {
    records: std::collections::HashMap<String, LoopRecord>,
    /// `(first_ms, id)`, the listing order.
    order: std::collections::BTreeSet<(u64, String)>,
}

impl LoopBook {
    pub(crate) fn record(&mut self, step: &LoopStep) -> LoopChange {
        let id = step.loop_id();
        let change = LoopRecord::apply(self.records.remove(&id), step);
        if change.new {
            self.order.insert((change.record.first_ms, id.clone()));
            while self.order.len() > MEMORY_LOOPS {
                if let Some((_, oldest)) = self.order.pop_first() {
                    self.records.remove(&oldest);
                }
            }
        }
        self.records.insert(id, change.record.clone());
        change
    }

    pub(crate) fn page(&self, q: &LoopQuery) -> Result<LoopPage, String> {
        use std::ops::Bound;
        let start = match q.after()? {
            Some(after) => Bound::Excluded(after),
            None => Bound::Unbounded,
        };
        let limit = q.page_size();
        let records: Vec<LoopRecord> = self
            .order
            .range((start, Bound::Unbounded))
            .filter_map(|(_, id)| self.records.get(id))
            .filter(|r| r.matches(q))
            .take(limit + 1)
            .cloned()
            .collect();
        Ok(LoopPage::cut(records, limit))
    }

    pub(crate) fn prune(&mut self, before_ms: u64) -> u64 {
        let old: Vec<String> = self
            .records
            .values()
            .filter(|r| r.last_ms < before_ms)
            .map(|r| r.id.clone())
            .collect();
        for id in &old {
            if let Some(r) = self.records.remove(id) {
                self.order.remove(&(r.first_ms, r.id));
            }
        }
        old.len() as u64
    }
}
