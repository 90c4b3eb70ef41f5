//! Glue between the HTTP layer and the guard: opening the store, the session document,
//! the agents' hook endpoint.

use std::sync::Arc;
use std::time::Duration;

use loopguard_core::{Mode, OpenClawConfig};
use loopguard_guard::{
    is_redis_spec as is_redis, open_store, redact_spec, Guard, RedisOptions, RedisStore,
    SessionInfo, Store, ToolProfile,
};

use crate::error::{ApiError, ServeError};
use crate::state::AppState;

/// The guards over the store `--store` names, and what the metrics read from it.
pub(crate) struct Opened {
    /// `POST /v1/events`: events.md events as they are.
    pub guard: Guard,
    /// `POST /v1/hooks/{agent}`: every agent's hook events, with the tool profile the
    /// agents' protocol maps their tools onto (Claude Code's), over the same store.
    pub hooks: Guard,
    /// `POST /v1/traces`: observe mode (the traced calls already ran).
    pub traces: Guard,
    pub blocking: bool,
    pub awaitable: bool,
    pub retries: Box<dyn Fn() -> u64 + Send + Sync>,
    pub session_count: Box<dyn Fn() -> Option<u64> + Send + Sync>,
    /// Where the config came from, recorded with the hook sessions.
    pub config_source: String,
}

pub(crate) fn open(
    spec: &str,
    config: Option<OpenClawConfig>,
    idle_ttl: Duration,
    redis_ca: Option<Vec<u8>>,
) -> Result<Opened, ServeError> {
    let store_error = |e: loopguard_guard::StoreError| ServeError::Store {
        spec: redact_spec(spec),
        message: e.to_string(),
    };
    let (store, retries): (Arc<dyn Store>, Box<dyn Fn() -> u64 + Send + Sync>) = if is_redis(spec) {
        let redis = Arc::new(
            RedisStore::open(
                spec,
                RedisOptions {
                    idle_ttl,
                    ca_pem: redis_ca,
                    ..RedisOptions::default()
                },
            )
            .map_err(store_error)?,
        );
        let counter = redis.clone();
        (redis, Box::new(move || counter.retries()))
    } else {
        if redis_ca.is_some() {
            return Err(ServeError::Store {
                spec: spec.to_string(),
                message: "--redis-ca is only used with a rediss:// store".to_string(),
            });
        }
        (
            open_store(spec, idle_ttl).map_err(store_error)?,
            Box::new(|| 0),
        )
    };
    let build_in = |profile: ToolProfile, mode: Mode| {
        let mut b = Guard::builder()
            .profile(profile)
            .mode(mode)
            .store(store.clone());
        if let Some(c) = &config {
            b = b.config(c.clone());
        }
        b.build()
    };
    let build = |profile: ToolProfile| build_in(profile, Mode::Enforce);
    // A shared store counts with a scan of its keys: at most every 30 s, whatever the
    // scrape interval.
    let counter = SessionCounter {
        store: store.clone(),
        fresh: if is_redis(spec) {
            Duration::from_secs(30)
        } else {
            Duration::ZERO
        },
        last: std::sync::Mutex::new(None),
        busy: std::sync::atomic::AtomicBool::new(false),
    };
    let config_source = match &config {
        Some(_) => "loopguard serve --config".to_string(),
        None => "built-in (no config file: enabled with defaults)".to_string(),
    };
    Ok(Opened {
        guard: build(ToolProfile::Plain),
        hooks: build(ToolProfile::ClaudeCode),
        traces: build_in(ToolProfile::Plain, Mode::Observe),
        // The memory store is a short critical section: called directly on the async
        // workers. SQLite and Redis's blocking side wait for I/O: run on tokio's blocking
        // pool. Redis's awaitable side runs on the async workers.
        blocking: spec != "memory",
        awaitable: store.as_async().is_some(),
        retries,
        session_count: Box::new(move || counter.count()),
        config_source,
    })
}

/// The session count for `/metrics`: one count at a time (a scrape that finds one running
/// gets the last value instead of waiting), reused while fresh, and the lock is never held
/// while the store counts, so a slow store cannot pile scrapes up on the blocking pool.
struct SessionCounter {
    store: Arc<dyn Store>,
    fresh: Duration,
    last: std::sync::Mutex<Option<(std::time::Instant, u64)>>,
    busy: std::sync::atomic::AtomicBool,
}

impl SessionCounter {
    fn count(&self) -> Option<u64> {
        use std::sync::atomic::Ordering;
        let last = *self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((at, n)) = last {
            if at.elapsed() < self.fresh {
                return Some(n);
            }
        }
        if self.busy.swap(true, Ordering::AcqRel) {
            return last.map(|(_, n)| n);
        }
        // A failed count is remembered too (as the last value), so a store that is down
        // is not scanned again on every scrape.
        let counted = self.store.count().ok();
        let n = counted.or(last.map(|(_, n)| n));
        if let Some(n) = n {
            *self
                .last
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) =
                Some((std::time::Instant::now(), n));
        }
        self.busy.store(false, Ordering::Release);
        counted
    }
}

/// `GET /v1/sessions/{session}`'s body: the guard's one description of a session
/// ([`SessionInfo::api_json`], also what the Python package's `Guard.session()` returns).
pub(crate) fn session_json(info: &SessionInfo) -> String {
    info.api_json().to_string()
}

/// The agent of `POST /v1/hooks/{agent}`: one whose answer is JSON (Windsurf and Kiro block
/// only through the hook's exit status, which an HTTP answer cannot give).
pub(crate) fn hook_agent(name: &str) -> Result<loopguard_agents::Agent, ApiError> {
    match name.parse::<loopguard_agents::Agent>() {
        Ok(a) if !a.protocol().answers_in_json() => Err(ApiError::new(
            axum::http::StatusCode::NOT_FOUND,
            format!("{name} hooks block only through their exit status: run `loopguard hook {name}` as the command hook"),
            Some("agent"),
        )),
        Ok(a) => Ok(a),
        Err(e) => Err(ApiError::new(axum::http::StatusCode::NOT_FOUND, e.to_string(), Some("agent"))),
    }
}

/// `POST /v1/hooks/{agent}`: the agents layer's one run path for `agent` over the server's
/// hook guard and the tenant's sessions, so the answer is what `loopguard hook AGENT`
/// prints for the same input (`{}` when that is nothing, [`AgentReply::http_body`]).
///
/// [`AgentReply::http_body`]: loopguard_agents::AgentReply::http_body
pub(crate) fn agent_hook(
    state: &AppState,
    agent: loopguard_agents::Agent,
    tenant: Option<&str>,
    bytes: &[u8],
) -> Result<Vec<u8>, ApiError> {
    use loopguard_agents::{Agent, RunError};
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    let mut notes = Vec::new();
    // Claude Code's sessions are labelled with the server's config source alone, as they
    // always were; the other agents' name the agent (as `loopguard hook AGENT` does).
    let config = match agent {
        Agent::ClaudeCode => state.config_source.clone(),
        _ => format!("{} ({agent})", state.config_source),
    };
    let result =
        loopguard_agents::answer(agent, &state.hooks, tenant, bytes, &config, now, &mut notes);
    for n in &notes {
        tracing::warn!(target: "loopguard::serve", "{n}");
    }
    match result {
        Ok(reply) => {
            for row in &reply.logged {
                state.loops.hook_row(tenant, agent.as_str(), row);
                state.metrics.decision(tenant, hook_labels(row));
            }
            // The loop history (and so the alerts), as for `POST /v1/events`.
            for step in &reply.loops {
                let mut step = step.clone();
                step.agent.get_or_insert_with(|| agent.as_str().to_string());
                state.history.observe(step);
            }
            Ok(reply.http_body().as_bytes().to_vec())
        }
        Err(e @ RunError::Payload(_)) => Err(ApiError::bad_request(e.to_string(), e.field())),
        Err(RunError::Guard(loopguard_guard::GuardError::Event(e))) => {
            Err(ApiError::bad_request(e.to_string(), e.field))
        }
        Err(RunError::Guard(e)) => Err(state.guard_error(e)),
    }
}

/// The metric labels of a decision the hook endpoint logged: the kind of the logged
/// decision ([`LogDecision::kind`](loopguard_guard::LogDecision::kind): `allow`, `warn`,
/// `block`, `deny-aborted`, `new-run`, `duplicate`, `batch`, …; a warning not shown again is
/// a warning, as `/v1/events` counts it), the detector, and the level its decision implies.
fn hook_labels(row: &loopguard_guard::LogRow) -> crate::metrics::DecisionLabels {
    let decision = row.decision.kind();
    let detector = match row.detector.as_deref() {
        None => "",
        Some(name) => loopguard_core::Detector::from_name(name).map_or("other", |d| d.as_str()),
    };
    let level = if detector.is_empty() {
        ""
    } else if row.decision.is_critical() {
        "critical"
    } else {
        "warning"
    };
    crate::metrics::DecisionLabels {
        decision,
        detector,
        level,
    }
}
