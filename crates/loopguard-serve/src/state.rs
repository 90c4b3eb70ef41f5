//! What the handlers share: [`AppState`] (the guards, the metrics, the limits), its calls into
//! the store, and reading request bodies and writing JSON responses.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use http_body_util::BodyExt;
use loopguard_events::Decision;
use loopguard_guard::{Guard, GuardError};

use crate::error::ApiError;
use crate::metrics::{DecisionLabels, Metrics};
use crate::tokens::Tokens;
use crate::trace_buffer::TraceBuffer;

/// Everything the handlers share.
pub(crate) struct AppState {
    pub guard: Arc<Guard>,
    /// The same store with the Claude Code tool profile.
    pub hooks: Arc<Guard>,
    /// `POST /v1/traces`: the same store in observe mode (the traced calls already ran).
    pub traces: Arc<Guard>,
    /// Spans waiting for their trace to be complete (`POST /v1/traces`).
    pub traces_buffer: TraceBuffer,
    pub tokens: Option<Tokens>,
    /// `--metrics-token`: the bearer token that reads every series of `GET /metrics`.
    pub metrics_token: Option<String>,
    pub metrics: Metrics,
    /// One log line per loop event.
    pub loops: crate::loop_log::LoopLog,
    /// The store's blocking calls wait for I/O (SQLite's disk, Redis's network): they run
    /// on tokio's blocking pool. The memory store is a mutex held for microseconds and is
    /// called directly (see docs/serve.md, "Performance").
    pub blocking: bool,
    /// The store can be awaited (Redis): events, sessions and readiness await it on the
    /// async workers, and only the Claude Code endpoint (the hook's blocking code) and
    /// the metrics use the blocking pool.
    pub awaitable: bool,
    pub max_body: usize,
    pub config_source: String,
    pub body_timeout: Duration,
    /// The store's optimistic-concurrency retries so far (0 for stores without them).
    pub retries: Box<dyn Fn() -> u64 + Send + Sync>,
    /// How many sessions the store holds, when it can say.
    pub session_count: Box<dyn Fn() -> Option<u64> + Send + Sync>,
    /// The loop history (`GET /v1/loops`).
    pub history: Arc<crate::history::History>,
    /// Where alerts go (`--alert-webhook`, `loopguard.alerts`), when anywhere.
    pub alerts: Option<loopguard_alerts::Alerts>,
    /// The dashboard's live side: its streams, decisions per minute, the keys' listing.
    pub live: Arc<crate::live::Live>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("guard", &self.guard)
            .field("tenants", &self.tokens.as_ref().map(Tokens::len))
            .field("blocking", &self.blocking)
            .field("awaitable", &self.awaitable)
            .field("max_body", &self.max_body)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// The tenant of the request: `None` without `--tokens`; otherwise the bearer token's
    /// tenant, or 401.
    pub(crate) fn authenticate(&self, headers: &HeaderMap) -> Result<Option<Arc<str>>, ApiError> {
        let Some(tokens) = &self.tokens else {
            return Ok(None);
        };
        let unauthorized =
            |msg: &str| ApiError::new(StatusCode::UNAUTHORIZED, msg, Some("authorization"));
        let value = headers
            .get(header::AUTHORIZATION)
            .ok_or_else(|| unauthorized("missing `Authorization: Bearer TOKEN` header"))?;
        let token = value
            .to_str()
            .ok()
            .and_then(|v| {
                let (scheme, token) = v.trim().split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            })
            .ok_or_else(|| unauthorized("the Authorization header is not `Bearer TOKEN`"))?;
        tokens
            .tenant(token)
            .map(Some)
            .ok_or_else(|| unauthorized("unknown bearer token"))
    }

    pub(crate) fn guard_error(&self, e: GuardError) -> ApiError {
        match e {
            GuardError::Event(e) => ApiError::bad_request(e.to_string(), e.field),
            // The store answered, but with an entry this loopguard cannot read (damaged, or
            // written by a newer version): not an outage.
            GuardError::Store(e @ loopguard_guard::StoreError::Corrupt { .. }) => {
                self.metrics.store_error();
                tracing::warn!(target: "loopguard::serve", "{e}");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("{e}; callers should fail open"),
                    Some("session"),
                )
            }
            // The store failed (unreachable, contended): 503, callers fail open.
            other => {
                self.metrics.store_error();
                tracing::warn!(target: "loopguard::serve", "store unavailable: {other}");
                ApiError::unavailable(format!(
                    "the session store cannot be reached: {other}; callers should fail open"
                ))
            }
        }
    }

    /// Whether guard calls are awaited on the async workers: the store can be awaited, or
    /// never blocks (the guard's async methods call such a store in place).
    pub(crate) fn awaits(&self) -> bool {
        self.awaitable || !self.blocking
    }

    /// A guard call where it belongs: `awaited` when the store can be awaited or never
    /// blocks (the guard's async methods call such a store in place), else `blocking` on
    /// the blocking pool.
    pub(crate) async fn store_call<T: Send + 'static>(
        self: &Arc<Self>,
        blocking: impl FnOnce(&AppState) -> Result<T, GuardError> + Send + 'static,
        awaited: impl std::future::Future<Output = Result<T, GuardError>>,
    ) -> Result<T, ApiError> {
        let result = if self.awaits() {
            awaited.await
        } else {
            self.run(blocking).await?
        };
        result.map_err(|e| self.guard_error(e))
    }

    /// Runs blocking store work where it belongs (see `blocking`).
    pub(crate) async fn run<T: Send + 'static>(
        self: &Arc<Self>,
        work: impl FnOnce(&AppState) -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        if self.blocking {
            let me = self.clone();
            tokio::task::spawn_blocking(move || work(&me))
                .await
                .map_err(|e| {
                    ApiError::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        format!("internal error: {e}"),
                        None,
                    )
                })
        } else {
            Ok(work(self))
        }
    }
}

/// How much of an over-long streamed body is read and dropped before answering 413.
const DRAIN_LIMIT: usize = 16 << 20;

/// Reads the body under the size limit (413) and the body timeout (408).
pub(crate) async fn read_body(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
) -> Result<Bytes, ApiError> {
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the body is larger than the limit of {} bytes (--max-body)",
                state.max_body
            ),
            None,
        )
    };
    if let Some(len) = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    {
        // Far over the limit: answer at once (the connection closes). Moderately over:
        // read and drop the body below, so the client sees the 413 rather than a reset.
        if len > state.max_body.saturating_add(DRAIN_LIMIT) as u64 {
            return Err(too_large());
        }
    }
    let limit = state.max_body;
    let read = async move {
        let mut body = body;
        let mut buf = Vec::new();
        let mut seen = 0usize;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                ApiError::bad_request(format!("the body could not be read: {e}"), None)
            })?;
            if let Ok(data) = frame.into_data() {
                seen = seen.saturating_add(data.len());
                if seen > limit {
                    // A streamed body without a Content-Length: read (and drop) a bounded
                    // amount more, so that a client still sending gets to see the 413
                    // instead of a reset connection.
                    if seen > limit.saturating_add(DRAIN_LIMIT) {
                        break;
                    }
                    continue;
                }
                buf.extend_from_slice(&data);
            }
        }
        if seen > limit {
            return Err(too_large());
        }
        Ok(Bytes::from(buf))
    };
    match tokio::time::timeout(state.body_timeout, read).await {
        Ok(r) => r,
        Err(_) => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the body did not arrive within {} s",
                state.body_timeout.as_secs_f64()
            ),
            None,
        )),
    }
}

pub(crate) fn json_response(body: impl Into<Body>, content_type: &'static str) -> Response {
    let mut r = Response::new(body.into());
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

impl AppState {
    /// What becomes of every decision a route makes for a call, the same for
    /// `POST /v1/events` and the hook routes (`POST /v1/hooks/{agent}`): it is counted in
    /// `loopguard_decisions_total`, logged when it is a loop event (one line per loop
    /// event, [`crate::loop_log`]), and, with a finding, recorded in the loop history,
    /// which tells the alerts of the loop's first block and is what the dashboard counts.
    /// `guard` is the guard that decided (its mode tells a block from a would-block);
    /// `agent` labels the loop.
    pub(crate) fn decided(
        &self,
        guard: &Guard,
        tenant: Option<&str>,
        decision: &Decision<'_>,
        agent: Option<String>,
    ) {
        let finding = decision.finding.as_ref();
        self.metrics.decision(
            tenant,
            DecisionLabels {
                decision: decision.decision_str(),
                detector: finding.map_or("", |f| f.detector.as_str()),
                level: finding.map_or("", |f| f.level.as_str()),
            },
        );
        self.loops
            .decision(tenant, agent.as_deref(), decision, decision.decision_str());
        if let Some(step) = self.loop_step(guard, tenant, decision, agent, None, None) {
            self.history.observe(step);
        }
    }
}

impl AppState {
    /// The loop history's step of a decision (`None` without a finding); `guard` is the
    /// guard that decided (its mode tells a block from a would-block).
    pub(crate) fn loop_step(
        &self,
        guard: &Guard,
        tenant: Option<&str>,
        decision: &Decision<'_>,
        agent: Option<String>,
        service: Option<&str>,
        tokens: Option<u64>,
    ) -> Option<loopguard_guard::LoopStep> {
        decision.finding.as_ref()?;
        let observe = guard.applier().mode == loopguard_core::Mode::Observe;
        let mut step =
            loopguard_guard::LoopStep::of(tenant, decision, observe, crate::history::now_ms())?;
        step.agent = agent;
        step.service = service.map(str::to_string);
        step.tokens = tokens;
        Some(step)
    }
}
