//! The guard: a config, a tool profile, a mode and a store, shared by every request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use loopguard_core::normalize_agent_id;
use loopguard_core::Hashing;
use loopguard_core::{JsString, Mode, OpenClawConfig, Policy};
use loopguard_events::{parse_event, Decision, Event, EventError};

use crate::entry::{Applier, Input, LogRow, SessionEntry, Stats};
use crate::logged::LogDecision;
use crate::profile::ToolProfile;
use crate::store::{now_ms, MemoryOptions, MemoryStore, Store, StoreError};

/// Why the guard could not decide.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GuardError {
    /// The event is malformed (the error names the field): the caller's mistake.
    #[error(transparent)]
    Event(#[from] EventError),
    /// The store failed or cannot be reached: front ends fail open on it.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// An [`Input::Prehashed`] the guard cannot decide from digests alone
    /// ([`Input::needs_values`]): nothing was applied; apply the whole event.
    #[error("the event's values are needed (the tool profile maps tools or outcomes, or the policy turns on one of loopguard's extra detectors): apply the whole event")]
    NeedsValues,
}

/// The store key of a session: `"<tenant>/<session>"`, `"-/<session>"` without a tenant.
/// Tenants never share a key, whatever their session ids.
///
/// A session id that is not Unicode text (JSON allows lone surrogates, `"\ud800"`) cannot
/// be a key as it is, and replacing its surrogates would merge distinct sessions: it
/// becomes `~wtf8~` and the hex of its WTF-8 bytes (see [`session_key_wtf8`]), as does any
/// id that itself starts with `~wtf8~`, so no two ids share a key.
///
/// ```
/// assert_eq!(loopguard_guard::session_key(Some("acme"), "s1"), "acme/s1");
/// assert_eq!(loopguard_guard::session_key(None, "s1"), "-/s1");
/// assert_eq!(loopguard_guard::session_key(None, "~wtf8~x"), "-/~wtf8~7e777466387e~78");
/// assert_eq!(loopguard_guard::split_key("acme/a/b"), (Some("acme"), "a/b"));
/// ```
pub fn session_key(tenant: Option<&str>, session: &str) -> String {
    session_key_wtf8(tenant, session.as_bytes())
}

/// [`session_key`] of a session id given as WTF-8 (an events.md string, which may hold
/// lone surrogates).
///
/// ```
/// use loopguard_guard::session_key_wtf8;
/// // "\ud800" and "\ud801" are two sessions, not one "\u{fffd}".
/// let a = session_key_wtf8(None, b"\xed\xa0\x80");
/// let b = session_key_wtf8(None, b"\xed\xa0\x81");
/// assert_ne!(a, b);
/// assert_eq!(a, "-/~wtf8~eda080");
/// assert_eq!(session_key_wtf8(Some("t"), b"plain"), "t/plain");
/// ```
pub fn session_key_wtf8(tenant: Option<&str>, session: &[u8]) -> String {
    let tenant = tenant.unwrap_or("-");
    match std::str::from_utf8(session) {
        Ok(text) if !text.starts_with(ESCAPED) => {
            // Built by hand: this runs on every event (format! costs more than the copy).
            let mut key = String::with_capacity(tenant.len() + 1 + text.len());
            key.push_str(tenant);
            key.push('/');
            key.push_str(text);
            key
        }
        _ => {
            let mut key = format!("{tenant}/{ESCAPED}");
            // The prefix's own bytes are escaped too, so an id that starts with it stays
            // apart from every escaped one: a `~` ends the hex of a literal prefix.
            let rest = match session.strip_prefix(ESCAPED.as_bytes()) {
                Some(rest) => {
                    key.push_str(&hex(ESCAPED.as_bytes()));
                    key.push('~');
                    rest
                }
                None => session,
            };
            key.push_str(&hex(rest));
            key
        }
    }
}

/// The mark of an escaped session id in a store key.
const ESCAPED: &str = "~wtf8~";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The tenant (`None` for `-`) and session of a [`session_key`].
pub fn split_key(key: &str) -> (Option<&str>, &str) {
    match key.split_once('/') {
        Some(("-", s)) => (None, s),
        Some((t, s)) => (Some(t), s),
        None => (None, key),
    }
}

/// What a front end shows about a session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SessionInfo {
    /// The tenant, when there is one.
    pub tenant: Option<String>,
    /// The session id.
    pub session: String,
    /// Counters of every event applied.
    pub stats: Stats,
    /// First event (ms since the epoch).
    pub created_ms: u64,
    /// Last event.
    pub last_seen_ms: u64,
    /// Calls in the rolling history.
    pub history: usize,
    /// The last decisions, oldest first.
    pub recent: Vec<LogRow>,
    /// Labels the front end keeps (`cwd`, `config`, …).
    pub meta: std::collections::BTreeMap<String, String>,
}

impl SessionInfo {
    /// The session as the front ends describe it to programs: the body of `loopguard
    /// serve`'s `GET /v1/sessions/{id}` (its `Session` schema) and what the Python
    /// package's `Guard.session()` returns, one shape for both. `recent[]` items speak the
    /// words of `/v1/events`: a warning the de-duplication kept back is `warn` with
    /// `"emitted": false` (an emitted one `"emitted": true`); fields without a value are
    /// left out, except `run` and `callId` (`null`, as in a decision record).
    ///
    /// ```
    /// use loopguard_guard::{Guard, ToolProfile};
    /// use loopguard_events::parse_event;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let guard = Guard::builder().profile(ToolProfile::Plain).build();
    /// guard.apply(None, &parse_event(br#"{"type":"call","session":"s","tool":"read"}"#, 1)?, |_| ())?;
    /// let info = guard.session(None, "s")?.ok_or("no session")?;
    /// let json = info.api_json();
    /// assert_eq!((json["calls"].as_u64(), json["recent"][0]["decision"].as_str()), (Some(1), Some("allow")));
    /// # Ok(())
    /// # }
    /// ```
    pub fn api_json(&self) -> serde_json::Value {
        serde_json::json!({
            "session": self.session,
            "calls": self.stats.calls,
            "outcomes": self.stats.outcomes,
            "warnings": self.stats.warnings,
            "blocks": self.stats.blocks,
            "aborts": self.stats.aborts,
            "lastSeen": self.last_seen_ms,
            "recent": self.recent.iter().map(recent_json).collect::<Vec<_>>(),
        })
    }

    /// The info of a stored entry.
    pub fn of(key: &str, entry: &SessionEntry) -> SessionInfo {
        let (tenant, session) = split_key(key);
        SessionInfo {
            tenant: tenant.map(str::to_string),
            session: session.to_string(),
            stats: entry.stats,
            created_ms: entry.created_ms,
            last_seen_ms: entry.last_seen_ms,
            history: entry.session.history().len(),
            recent: entry.recent.iter().cloned().collect(),
            meta: entry.meta.clone(),
        }
    }
}

/// One `recent[]` item of [`SessionInfo::api_json`].
fn recent_json(r: &LogRow) -> serde_json::Value {
    let (decision, emitted) = match &r.decision {
        LogDecision::WarnQuiet => ("warn".into(), Some(false)),
        LogDecision::Warn => ("warn".into(), Some(true)),
        d => (d.text(), None),
    };
    let mut item = serde_json::Map::new();
    item.insert("seq".into(), r.seq.into());
    item.insert("ts".into(), r.ts_ms.into());
    item.insert("type".into(), r.event.clone().into());
    item.insert("run".into(), r.run.clone().into());
    item.insert("callId".into(), r.call_id.clone().into());
    if let Some(tool) = &r.tool {
        item.insert("tool".into(), tool.clone().into());
    }
    item.insert("decision".into(), decision.into_owned().into());
    if let Some(d) = &r.detector {
        item.insert("detector".into(), d.clone().into());
    }
    if let Some(c) = r.count {
        item.insert("count".into(), c.into());
    }
    if let Some(m) = &r.message {
        item.insert("message".into(), m.clone().into());
    }
    if let Some(e) = emitted {
        item.insert("emitted".into(), e.into());
    }
    serde_json::Value::Object(item)
}

/// Builds a [`Guard`].
///
/// ```
/// use loopguard_guard::{Guard, ToolProfile};
/// use loopguard_core::Mode;
/// let guard = Guard::builder().profile(ToolProfile::Mcp).mode(Mode::Observe).build();
/// assert_eq!(guard.applier().profile, ToolProfile::Mcp);
/// ```
#[derive(Debug)]
pub struct GuardBuilder {
    config: Option<OpenClawConfig>,
    applier: Applier,
    store: Option<Arc<dyn Store>>,
    hashing: Hashing,
}

impl GuardBuilder {
    /// The OpenClaw config (default: `tools.loopDetection: { enabled: true }`, what
    /// installing a live guard means).
    pub fn config(mut self, config: OpenClawConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// The runtime's tool profile (default [`ToolProfile::Plain`]).
    pub fn profile(mut self, profile: ToolProfile) -> Self {
        self.applier.profile = profile;
        self
    }

    /// Enforce (default) or observe.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.applier.mode = mode;
        self
    }

    /// Decisions kept per session for status (default 20).
    pub fn log_size(mut self, n: usize) -> Self {
        self.applier.log_size = n;
        self
    }

    /// Blocked calls per session whose outcome events are still expected (default 256).
    pub fn pending_blocks(mut self, n: usize) -> Self {
        self.applier = self.applier.pending_blocks(n);
        self
    }

    /// Where sessions live (default: a [`MemoryStore`] with [`MemoryOptions::default`]).
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Outcome-hashing settings (for example a runtime's own channel-send predicate,
    /// decisions.md item 6), applied to every session, restored ones included.
    pub fn hashing(mut self, hashing: Hashing) -> Self {
        self.hashing = hashing;
        self
    }

    /// The guard.
    pub fn build(self) -> Guard {
        let config = self.config.unwrap_or_else(enabled_config);
        let default_policy = Arc::new(config.policy_for(None));
        Guard {
            config,
            default_policy,
            policies: Mutex::new(HashMap::new()),
            applier: self.applier,
            store: self
                .store
                .unwrap_or_else(|| Arc::new(MemoryStore::new(MemoryOptions::default()))),
            hashing: self.hashing,
        }
    }
}

/// `tools.loopDetection: { enabled: true }`.
pub fn enabled_config() -> OpenClawConfig {
    OpenClawConfig {
        loop_detection: Some(loopguard_core::LoopDetectionConfig {
            enabled: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Loop protection for many sessions: every front end's engine.
///
/// A guard applies events.md events to the sessions in its [`Store`] with one config, one
/// tool profile and one mode, and answers each with its decision record. It is `Send +
/// Sync`: share it behind an `Arc`. Identical events get identical decisions from every
/// front end (`loopguard replay`, the hook, `loopguard serve`, the MCP proxy, Python).
///
/// ```
/// use loopguard_guard::Guard;
///
/// # fn main() -> Result<(), loopguard_guard::GuardError> {
/// let guard = Guard::builder().build(); // enabled, enforce, in memory
/// let call = br#"{"type":"call","session":"s1","tool":"read","args":{"path":"/a"}}"#;
/// let outcome = br#"{"type":"outcome","session":"s1","tool":"read","args":{"path":"/a"},"result":"same"}"#;
/// let mut last = Vec::new();
/// for _ in 0..21 {
///     last = guard.apply_line(None, call)?;
///     if last.windows(7).any(|w| w == b"\"block\"") {
///         break;
///     }
///     guard.apply_line(None, outcome)?;
/// }
/// let text = String::from_utf8_lossy(&last);
/// assert!(text.contains(r#""decision":"block""#), "{text}");
/// assert_eq!(guard.session(None, "s1")?.map(|s| s.stats.blocks), Some(1));
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Guard {
    config: OpenClawConfig,
    default_policy: Arc<Policy>,
    policies: Mutex<HashMap<String, Arc<Policy>>>,
    applier: Applier,
    store: Arc<dyn Store>,
    hashing: Hashing,
}

impl Guard {
    /// A builder with the defaults.
    pub fn builder() -> GuardBuilder {
        GuardBuilder {
            config: None,
            applier: Applier::new(ToolProfile::Plain),
            store: None,
            hashing: Hashing::default(),
        }
    }

    /// How events are applied.
    pub fn applier(&self) -> &Applier {
        &self.applier
    }

    /// The config.
    pub fn config(&self) -> &OpenClawConfig {
        &self.config
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The resolved policy of an agent (`None`: the global block).
    pub fn policy(&self, agent: Option<&JsString<'_>>) -> Arc<Policy> {
        let Some(agent) = agent else {
            return self.default_policy.clone();
        };
        let id = normalize_agent_id(&agent.to_string_lossy());
        let mut cache = self.policies.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() > 4096 {
            // Agent ids come from callers: keep the cache bounded.
            cache.clear();
        }
        cache
            .entry(id)
            .or_insert_with_key(|id| Arc::new(self.config.policy_for(Some(id))))
            .clone()
    }

    /// Applies one event to its session (named by the event's `session`, `"default"` when
    /// absent, inside `tenant`) and hands its decision record to `answer`, whose result it
    /// returns: `|d| d` for the decision itself; a front end that turns each decision into
    /// an answer at once (the npm package) makes it in place, sparing moving the record
    /// out. The input is an event or what [`Input`] says the caller knows of its values; an
    /// `&Event` converts into one.
    ///
    /// `answer` runs inside the store's update: a store that applies the event again (a
    /// shared store whose session changed meanwhile) calls it again, and the last answer
    /// is returned. An [`Input::Prehashed`] this guard cannot apply from digests alone
    /// ([`Input::needs_values`]) is declined with [`GuardError::NeedsValues`], checked before
    /// the store is touched.
    ///
    /// ```
    /// use loopguard_core::Hashing;
    /// use loopguard_events::parse_event;
    /// use loopguard_guard::{Guard, Input, Prehashed, ToolProfile};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let guard = Guard::builder().build();
    /// let call = parse_event(br#"{"type":"call","session":"s","tool":"read","args":{"p":1}}"#, 1)?;
    /// let decision = guard.apply(None, &call, |d| d)?;
    /// assert_eq!(decision.action.as_str(), "allow");
    /// let digest = decision.args.ok_or("no digest")?;
    ///
    /// // An outcome with its call's digest: its arguments are not hashed again.
    /// let outcome = parse_event(br#"{"type":"outcome","session":"s","tool":"read","args":{"p":1},"result":2}"#, 2)?;
    /// let args = guard.apply(None, Input::WithArgsDigest(&outcome, digest), |d| d.args)?;
    /// assert_eq!(args, Some(digest));
    ///
    /// // A call hashed ahead: only its envelope is read.
    /// let pre = Prehashed::of(&call, ToolProfile::Plain, &Hashing::default()).ok_or("mapped")?;
    /// let action = guard.apply(None, Input::Prehashed(&call, &pre), |d| d.action.as_str())?;
    /// assert_eq!(action, "allow");
    /// # Ok(())
    /// # }
    /// ```
    pub fn apply<'e, R>(
        &self,
        tenant: Option<&str>,
        input: impl Into<Input<'e>>,
        mut answer: impl FnMut(Decision<'e>) -> R,
    ) -> Result<R, GuardError> {
        let input = input.into();
        let mut job = self.job(tenant, input.event());
        // Checked before the update, so that a declined event leaves the session untouched.
        if input.needs_values(self.applier.profile, &job.policy) {
            return Err(GuardError::NeedsValues);
        }
        let parent = parent_of(input.event());
        if let Some((parent, child)) = &parent {
            job.parent_calls = Some(self.link_parent(tenant, parent, child)?.calls);
        }
        let mut out = None;
        let mut counted = false;
        self.store.update_at(
            &job.key,
            job.now,
            &mut self.applying(&job, input, &mut answer, &mut out, &mut counted),
        )?;
        if let (Some((parent, _)), true) = (&parent, counted) {
            self.count_at_parent(tenant, parent)?;
        }
        job.done(out)
    }

    /// [`Guard::apply`] for async front ends: awaits the store when it has an awaitable
    /// side ([`Store::as_async`], Redis), and calls it in place otherwise (the memory
    /// store's critical section is microseconds; a blocking store such as SQLite belongs
    /// on a blocking pool, with [`Guard::apply`]).
    ///
    /// ```
    /// use loopguard_guard::Guard;
    /// use loopguard_events::parse_event;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let guard = Guard::builder().build();
    /// let event = parse_event(br#"{"type":"call","session":"s","tool":"read"}"#, 1)?;
    /// // Inside an async fn: `guard.apply_async(None, &event, |d| d).await?`.
    /// let decision = poll_once(guard.apply_async(None, &event, |d| d))?;
    /// assert_eq!(decision.action.as_str(), "allow");
    /// # Ok(())
    /// # }
    /// # fn poll_once<T>(f: impl std::future::Future<Output = T>) -> T {
    /// #     let mut f = std::pin::pin!(f);
    /// #     let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    /// #     match f.as_mut().poll(&mut cx) { std::task::Poll::Ready(v) => v, _ => panic!("pending") }
    /// # }
    /// ```
    pub async fn apply_async<'e, R: Send>(
        &self,
        tenant: Option<&str>,
        input: impl Into<Input<'e>>,
        mut answer: impl FnMut(Decision<'e>) -> R + Send,
    ) -> Result<R, GuardError> {
        let Some(store) = self.store.as_async() else {
            return self.apply(tenant, input, answer);
        };
        let input = input.into();
        let mut job = self.job(tenant, input.event());
        if input.needs_values(self.applier.profile, &job.policy) {
            return Err(GuardError::NeedsValues);
        }
        let parent = parent_of(input.event());
        if let Some((parent, child)) = &parent {
            let key = session_key(tenant, parent);
            let entry = store.load(&key).await?;
            let link = ParentLink::of(entry.as_ref());
            if !entry.is_some_and(|e| e.subagents().any(|s| s == child)) {
                store
                    .update(&key, &mut |e| {
                        self.prepare(e, &key);
                        e.adopt_subagent(child);
                    })
                    .await?;
            }
            job.parent_calls = Some(link.calls);
        }
        let mut out = None;
        let mut counted = false;
        store
            .update(
                &job.key,
                &mut self.applying(&job, input, &mut answer, &mut out, &mut counted),
            )
            .await?;
        if let (Some((parent, _)), true) = (&parent, counted) {
            let key = session_key(tenant, parent);
            store
                .update(&key, &mut |e| {
                    self.prepare(e, &key);
                    e.attribute_subagent_call();
                })
                .await?;
        }
        job.done(out)
    }

    /// The session key, policy and time of one event.
    fn job(&self, tenant: Option<&str>, event: &Event<'_>) -> Job<'_> {
        let session = event
            .session
            .as_ref()
            .map_or(&b"default"[..], JsString::as_wtf8);
        Job {
            key: session_key_wtf8(tenant, session),
            // Borrowed for the events of no agent (most): no reference count to update.
            policy: match event.agent {
                None => JobPolicy::Global(&self.default_policy),
                Some(_) => JobPolicy::Agent(self.policy(event.agent.as_ref())),
            },
            now: now_ms(),
            parent_calls: None,
        }
    }

    /// The store update that applies `input` and leaves what `answer` made of its decision
    /// in `out`.
    fn applying<'a, 'e, R, F>(
        &'a self,
        job: &'a Job<'a>,
        input: Input<'e>,
        answer: &'a mut F,
        out: &'a mut Option<R>,
        counted: &'a mut bool,
    ) -> impl FnMut(&mut SessionEntry) + 'a + use<'a, 'e, R, F>
    where
        'e: 'a,
        F: FnMut(Decision<'e>) -> R,
    {
        move |entry| {
            self.begin(entry, &job.key);
            if let Some(calls) = job.parent_calls {
                // A sub-agent's budget check sees its parent's whole count.
                entry.inherit_parent_calls(calls);
            }
            // A prehashed input that needs its values was turned away before the update.
            let d = entry.apply_accepted(&job.policy, &self.applier, input, 0, job.now);
            *counted = job.parent_calls.is_some() && SessionEntry::parent_counts(&job.policy, &d);
            *out = Some(answer(d));
        }
    }

    /// Links a sub-agent's session (`child`) to its parent's, the one way every front end
    /// does it (an event's `parentSession`, a hook's sub-agent): the parent remembers the
    /// child, to forget it with itself ([`Guard::forget`]), and the link returned is what
    /// the child's session starts from. The child keeps its own loop state; after each of
    /// its calls that runs, [`Guard::count_at_parent`] counts it at the parent when
    /// [`SessionEntry::parent_counts`] says so.
    ///
    /// ```
    /// use loopguard_events::parse_event;
    /// use loopguard_guard::Guard;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let guard = Guard::builder().build();
    /// let call = parse_event(br#"{"type":"call","session":"task/a1","parentSession":"task","tool":"read"}"#, 1)?;
    /// guard.apply(None, &call, |d| d.session.to_string())?;
    /// // Applying the event linked the sub-agent's session to its parent's: forgetting the
    /// // parent forgets the sub-agent too.
    /// assert!(guard.forget(None, "task")?);
    /// assert!(guard.session(None, "task/a1")?.is_none());
    /// # Ok(())
    /// # }
    /// ```
    pub fn link_parent(
        &self,
        tenant: Option<&str>,
        parent: &str,
        child: &str,
    ) -> Result<ParentLink, GuardError> {
        let key = session_key(tenant, parent);
        let entry = self.store.load(&key)?;
        let link = ParentLink::of(entry.as_ref());
        if !entry.is_some_and(|e| e.subagents().any(|s| s == child)) {
            self.update(tenant, parent, |e| e.adopt_subagent(child))?;
        }
        Ok(link)
    }

    /// Counts a call a sub-agent ran at its parent's session, for the parent's
    /// `callsPerSession` budget ([`SessionEntry::attribute_subagent_call`]).
    pub fn count_at_parent(&self, tenant: Option<&str>, parent: &str) -> Result<(), GuardError> {
        self.update(tenant, parent, |e| {
            e.attribute_subagent_call();
        })
    }

    /// Parses one events.md line, applies it, and returns its decision record as JSON
    /// (without `line`, with a trailing newline): [`Guard::apply`] for front ends that speak
    /// JSONL, text in and text out (the Python package, the tests).
    pub fn apply_line(&self, tenant: Option<&str>, line: &[u8]) -> Result<Vec<u8>, GuardError> {
        let event = parse_event(line, 1)?;
        self.apply(tenant, &event, |d| {
            let mut out = Vec::with_capacity(256);
            d.write_record(&mut out);
            out
        })
    }

    /// Runs `f` on a session's entry inside one atomic store update, for front ends with
    /// bookkeeping of their own (the Claude Code hook counts prompts as runs and denies
    /// the calls of an aborted run). `f` gets the entry, ready to [`SessionEntry::apply`]
    /// events with [`Guard::applier`], and may run more than once with an optimistic store.
    pub fn update<R>(
        &self,
        tenant: Option<&str>,
        session: &str,
        mut f: impl FnMut(&mut SessionEntry) -> R,
    ) -> Result<R, GuardError> {
        let key = session_key(tenant, session);
        let mut out = None;
        self.store.update(&key, &mut |entry| {
            self.prepare(entry, &key);
            out = Some(f(entry));
        })?;
        out.ok_or_else(|| {
            GuardError::Store(StoreError::Remote(format!(
                "session {key}: the store did not apply the update"
            )))
        })
    }

    /// [`Guard::prepare`] for an event, and the note of a session the store restarted.
    fn begin(&self, entry: &mut SessionEntry, key: &str) {
        self.prepare(entry, key);
        if let Some(note) = entry.meta.remove(crate::entry::RESTARTED) {
            // The store found the session unreadable and started it afresh: say so
            // once (the hook, which updates entries itself, reports it its own way).
            tracing::warn!(target: "loopguard::guard", "{note}");
        }
    }

    fn prepare(&self, entry: &mut SessionEntry, key: &str) {
        if entry.session.id() != key {
            entry.session.set_id(key);
        }
        // Compared first: replacing it on every event costs two atomic updates.
        if !Arc::ptr_eq(&entry.session.hashing().sends, &self.hashing.sends) {
            entry.session.set_hashing(self.hashing.clone());
        }
    }

    /// What is known about a session, if it exists.
    pub fn session(
        &self,
        tenant: Option<&str>,
        session: &str,
    ) -> Result<Option<SessionInfo>, GuardError> {
        let key = session_key(tenant, session);
        Ok(self.store.load(&key)?.map(|e| SessionInfo::of(&key, &e)))
    }

    /// Forgets a session, and with it the sessions of its sub-agents
    /// ([`SessionEntry::subagents`], theirs too); `true` when it existed.
    pub fn forget(&self, tenant: Option<&str>, session: &str) -> Result<bool, GuardError> {
        self.forget_nested(tenant, session, 0)
    }

    fn forget_nested(
        &self,
        tenant: Option<&str>,
        session: &str,
        depth: usize,
    ) -> Result<bool, GuardError> {
        let key = session_key(tenant, session);
        // Bounded: sub-agents of sub-agents, but a cycle of parents must not recurse forever.
        if depth < MAX_NESTING {
            if let Some(entry) = self.store.load(&key)? {
                for child in entry.subagents().filter(|c| *c != session) {
                    self.forget_nested(tenant, child, depth + 1)?;
                }
            }
        }
        Ok(self.store.delete(&key)?)
    }

    /// Every session of the store (all tenants), most recently used first where the store
    /// knows.
    pub fn sessions(&self) -> Result<Vec<SessionInfo>, GuardError> {
        let mut out = Vec::new();
        for key in self.store.keys()? {
            if let Some(e) = self.store.load(&key)? {
                out.push(SessionInfo::of(&key, &e));
            }
        }
        Ok(out)
    }

    /// `Ok` when the store answers.
    pub fn ping(&self) -> Result<(), GuardError> {
        Ok(self.store.ping()?)
    }

    /// [`Guard::session`], awaiting the store when it has an awaitable side (see
    /// [`Guard::apply_async`]).
    pub async fn session_async(
        &self,
        tenant: Option<&str>,
        session: &str,
    ) -> Result<Option<SessionInfo>, GuardError> {
        let Some(store) = self.store.as_async() else {
            return self.session(tenant, session);
        };
        let key = session_key(tenant, session);
        Ok(store.load(&key).await?.map(|e| SessionInfo::of(&key, &e)))
    }

    /// [`Guard::forget`], awaiting the store when it has an awaitable side.
    pub async fn forget_async(
        &self,
        tenant: Option<&str>,
        session: &str,
    ) -> Result<bool, GuardError> {
        let Some(store) = self.store.as_async() else {
            return self.forget(tenant, session);
        };
        // The sessions to delete, the sub-agents' found level by level (bounded as in
        // `forget`), then deleted.
        let mut level = vec![session.to_string()];
        let mut all: Vec<String> = Vec::new();
        for _ in 0..MAX_NESTING {
            let mut next = Vec::new();
            for s in &level {
                if let Some(entry) = store.load(&session_key(tenant, s)).await? {
                    next.extend(
                        entry
                            .subagents()
                            .filter(|c| !all.iter().any(|a| a == c))
                            .map(String::from),
                    );
                }
            }
            all.append(&mut level);
            if next.is_empty() {
                break;
            }
            level = next;
        }
        let mut existed = false;
        for (i, s) in all.iter().enumerate() {
            let deleted = store.delete(&session_key(tenant, s)).await?;
            if i == 0 {
                existed = deleted;
            }
        }
        Ok(existed)
    }

    /// [`Guard::ping`], awaiting the store when it has an awaitable side.
    pub async fn ping_async(&self) -> Result<(), GuardError> {
        match self.store.as_async() {
            Some(store) => Ok(store.ping().await?),
            None => self.ping(),
        }
    }
}

/// What [`Guard::apply`] works out before it touches the store.
struct Job<'g> {
    key: String,
    policy: JobPolicy<'g>,
    now: u64,
    /// A sub-agent's event: its parent's count of calls ([`ParentLink::calls`]).
    parent_calls: Option<u64>,
}

/// Levels of sub-agents [`Guard::forget`] follows.
const MAX_NESTING: usize = 16;

/// What a sub-agent's session takes from its parent's ([`Guard::link_parent`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParentLink {
    /// The parent's run counter ([`SessionEntry::run_seq`]: the hooks number their prompts
    /// with it, and a sub-agent's calls belong to its parent's prompt).
    pub run_seq: u64,
    /// The calls the parent's budgets counted, its sub-agents' included
    /// ([`SessionEntry::budgeted_calls`]).
    pub calls: u64,
}

impl ParentLink {
    fn of(parent: Option<&SessionEntry>) -> ParentLink {
        parent.map_or_else(ParentLink::default, |p| ParentLink {
            run_seq: p.run_seq,
            calls: p.budgeted_calls(),
        })
    }
}

/// The parent and the child session of a sub-agent's event ([`Event::linked_parent`]).
fn parent_of(event: &Event<'_>) -> Option<(String, String)> {
    let parent = event.linked_parent()?.to_string_lossy().into_owned();
    let child = event
        .session
        .as_ref()
        .map_or_else(|| "default".into(), JsString::to_string_lossy);
    Some((parent, child.into_owned()))
}

/// The policy of a [`Job`]: the guard's global one, borrowed, or an agent's.
enum JobPolicy<'g> {
    Global(&'g Policy),
    Agent(Arc<Policy>),
}

impl std::ops::Deref for JobPolicy<'_> {
    type Target = Policy;

    fn deref(&self) -> &Policy {
        match self {
            JobPolicy::Global(p) => p,
            JobPolicy::Agent(p) => p,
        }
    }
}

impl Job<'_> {
    fn done<T>(&self, decision: Option<T>) -> Result<T, GuardError> {
        decision.ok_or_else(|| {
            GuardError::Store(StoreError::Remote(format!(
                "session {}: the store did not apply the event",
                self.key
            )))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    /// An outcome with its call's digest (the npm package's `afterCall` with the arguments
    /// of the call it just had decided) gives the records and the session the event alone
    /// gives, through a loop's warnings, blocks and the ignored outcomes of blocked calls,
    /// with and without a tool profile that maps the call; an answer made inside the update
    /// is made of the same decisions.
    #[test]
    fn an_outcome_with_its_calls_digest_is_decided_as_when_hashed_again() {
        let record = |d: &Decision<'_>| {
            let mut out = Vec::new();
            d.write_record(&mut out);
            String::from_utf8(out).unwrap()
        };
        for profile in [ToolProfile::Plain, ToolProfile::ClaudeCode] {
            let a = Guard::builder().profile(profile).build();
            let b = Guard::builder().profile(profile).build();
            let c = Guard::builder().profile(profile).build();
            let mut actions = std::collections::BTreeSet::new();
            for i in 0..40 {
                let args = if i % 7 == 6 {
                    format!(r#"{{"command":"ls {i}"}}"#)
                } else {
                    r#"{"command":"ls"}"#.to_string()
                };
                let call =
                    format!(r#"{{"type":"call","session":"s","tool":"Bash","args":{args}}}"#);
                let outcome = format!(
                    r#"{{"type":"outcome","session":"s","tool":"Bash","args":{args},"result":"same"}}"#
                );
                let call = parse_event(call.as_bytes(), 1).unwrap();
                let outcome = parse_event(outcome.as_bytes(), 2).unwrap();
                let (ca, cb) = (
                    a.apply(None, &call, |d| d).unwrap(),
                    b.apply(None, &call, |d| d).unwrap(),
                );
                assert_eq!(record(&ca), record(&cb));
                let digest = cb.args.unwrap();
                let oa = a.apply(None, &outcome, |d| d).unwrap();
                let ob = b
                    .apply(None, Input::WithArgsDigest(&outcome, digest), |d| d)
                    .unwrap();
                assert_eq!(record(&oa), record(&ob), "{profile:?}, pair {i}");
                // A call event is applied as the event alone, whatever digest comes with it.
                let cc = c
                    .apply(None, Input::WithArgsDigest(&call, digest), |d| record(&d))
                    .unwrap();
                let oc = c
                    .apply(None, Input::WithArgsDigest(&outcome, digest), |d| {
                        record(&d)
                    })
                    .unwrap();
                assert_eq!((cc, oc), (record(&ca), record(&oa)), "in place, pair {i}");
                actions.insert(ca.action.as_str());
                actions.insert(oa.action.as_str());
            }
            assert!(
                ["warn", "block", "ignored", "recorded"]
                    .iter()
                    .all(|a| actions.contains(a)),
                "{actions:?}"
            );
            let (ia, ib) = (
                a.session(None, "s").unwrap().unwrap(),
                b.session(None, "s").unwrap().unwrap(),
            );
            assert_eq!((ia.stats, ia.history), (ib.stats, ib.history));
            let rows = |i: &SessionInfo| {
                i.recent
                    .iter()
                    .map(|r| (r.decision.clone(), r.detector.clone(), r.count))
                    .collect::<Vec<_>>()
            };
            assert_eq!(rows(&ia), rows(&ib));
        }
    }

    /// A prehashed event is declined, with the session untouched, by a guard whose profile
    /// maps tools or whose policy reads the values; accepted and decided as the event alone
    /// otherwise.
    #[test]
    fn a_prehashed_event_is_declined_when_its_values_are_needed() {
        use loopguard_core::Hashing;
        let call = parse_event(
            br#"{"type":"call","session":"s","tool":"read","args":{"p":1}}"#,
            1,
        )
        .unwrap();
        let pre = crate::Prehashed::of(&call, ToolProfile::Plain, &Hashing::default()).unwrap();
        let mapping = Guard::builder().profile(ToolProfile::ClaudeCode).build();
        let e = mapping
            .apply(None, Input::Prehashed(&call, &pre), |d| d.action)
            .unwrap_err();
        assert!(matches!(e, GuardError::NeedsValues), "{e}");
        assert!(mapping.session(None, "s").unwrap().is_none());
        let strict = OpenClawConfig::from_json5(
            r#"{tools:{loopDetection:{enabled:true}},loopguard:{profile:"strict"}}"#,
        )
        .unwrap()
        .config;
        let strict = Guard::builder().config(strict).build();
        assert!(matches!(
            strict.apply(None, Input::Prehashed(&call, &pre), |d| d.action),
            Err(GuardError::NeedsValues)
        ));
        let plain = Guard::builder().build();
        let direct = Guard::builder().build();
        assert_eq!(
            plain
                .apply(None, Input::Prehashed(&call, &pre), |d| d.args)
                .unwrap(),
            direct.apply(None, &call, |d| d.args).unwrap()
        );
    }

    /// An event with another tool profile is decided as by a guard with that profile.
    #[test]
    fn a_profiled_event_is_decided_with_its_profile() {
        let plain = Guard::builder().build();
        let claude = Guard::builder().profile(ToolProfile::ClaudeCode).build();
        let line = br#"{"type":"call","session":"s","tool":"Bash","args":{"command":"ls","description":"x"}}"#;
        let call = parse_event(line, 1).unwrap();
        let record = |d: Decision<'_>| {
            let mut out = Vec::new();
            d.write_record(&mut out);
            String::from_utf8(out).unwrap()
        };
        let profiled = plain
            .apply(
                None,
                Input::with_profile(&call, Some(ToolProfile::ClaudeCode)),
                record,
            )
            .unwrap();
        assert!(profiled.contains(r#""argsHash":"exec:"#), "{profiled}");
        assert_eq!(profiled, claude.apply(None, &call, record).unwrap());
        let unmapped = plain
            .apply(None, Input::with_profile(&call, None), record)
            .unwrap();
        assert!(unmapped.contains(r#""argsHash":"Bash:"#), "{unmapped}");
    }

    #[test]
    fn a_guard_is_shared_between_threads() {
        assert_send_sync::<Guard>();
        let guard = Arc::new(Guard::builder().build());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let g = guard.clone();
                std::thread::spawn(move || {
                    for i in 0..200 {
                        let line = format!(
                            r#"{{"type":"call","session":"shared","tool":"t{t}","args":{{"i":{i}}}}}"#
                        );
                        g.apply_line(None, line.as_bytes()).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let s = guard.session(None, "shared").unwrap().unwrap();
        assert_eq!((s.stats.calls, s.stats.events), (800, 800));
    }

    #[test]
    fn tenants_never_share_a_session() {
        let guard = Guard::builder().build();
        let line = br#"{"type":"call","session":"s","tool":"read"}"#;
        guard.apply_line(Some("a"), line).unwrap();
        guard.apply_line(Some("a"), line).unwrap();
        guard.apply_line(Some("b"), line).unwrap();
        let calls = |t| guard.session(t, "s").unwrap().map(|s| s.stats.calls);
        assert_eq!(
            (calls(Some("a")), calls(Some("b")), calls(None)),
            (Some(2), Some(1), None)
        );
        assert!(guard.forget(Some("b"), "s").unwrap());
        assert_eq!(calls(Some("a")), Some(2));
    }

    #[test]
    fn sessions_that_differ_only_in_lone_surrogates_stay_apart() {
        let guard = Guard::builder().build();
        for (session, n) in [
            (r"\ud800", 1),
            (r"\ud801", 2),
            ("\u{fffd}", 3),
            ("~wtf8~eda080", 4),
        ] {
            for _ in 0..n {
                let line = format!(r#"{{"type":"call","session":"{session}","tool":"read"}}"#);
                guard.apply_line(None, line.as_bytes()).unwrap();
            }
        }
        let mut calls: Vec<(String, u64)> = guard
            .sessions()
            .unwrap()
            .into_iter()
            .map(|s| (s.session, s.stats.calls))
            .collect();
        calls.sort();
        assert_eq!(
            calls,
            vec![
                ("~wtf8~7e777466387e~656461303830".to_string(), 4),
                ("~wtf8~eda080".to_string(), 1),
                ("~wtf8~eda081".to_string(), 2),
                ("\u{fffd}".to_string(), 3),
            ]
        );
        // An id that starts with the mark is the session literally named so.
        assert_eq!(
            guard
                .session(None, "~wtf8~eda080")
                .unwrap()
                .map(|s| s.stats.calls),
            Some(4)
        );
    }

    #[test]
    fn bad_events_name_the_field() {
        let guard = Guard::builder().build();
        let e = guard.apply_line(None, br#"{"type":"call"}"#).unwrap_err();
        match e {
            GuardError::Event(e) => assert_eq!(e.field, Some("tool")),
            other => panic!("{other}"),
        }
    }
}
