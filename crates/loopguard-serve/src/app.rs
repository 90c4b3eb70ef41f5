//! The HTTP surface: routes, authentication, body limits, and the calls into the guard.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{MatchedPath, Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use http_body_util::BodyExt;
use loopguard_events::{parse_event, Decision, Event};
use loopguard_guard::{Guard, GuardError};

use crate::error::ApiError;
use crate::metrics::{DecisionLabels, Metrics};
use crate::tokens::Tokens;

/// Everything the handlers share.
pub(crate) struct AppState {
    pub guard: Arc<Guard>,
    /// The same store with the Claude Code tool profile.
    pub claude_code: Arc<Guard>,
    /// `POST /v1/traces`: the same store in observe mode (the traced calls already ran).
    pub traces: Arc<Guard>,
    /// Spans waiting for their trace to be complete (`POST /v1/traces`).
    pub traces_buffer: crate::otlp::TraceBuffer,
    pub tokens: Option<Tokens>,
    pub metrics: Metrics,
    /// The store's blocking calls wait for I/O (SQLite's disk, Redis's network): they run
    /// on tokio's blocking pool. The memory store is a mutex held for microseconds and is
    /// called directly (see docs/benchmarks.md).
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

type Shared = Arc<AppState>;

/// The routes, and the label each gets in the metrics.
pub(crate) const ROUTES: [&str; 11] = [
    "/v1/events",
    "/v1/sessions/{session}",
    "/v1/hooks/claude-code",
    "/v1/hooks/{agent}",
    "/healthz",
    "/readyz",
    "/metrics",
    "/openapi.json",
    "/v1/traces",
    "/v1/logs",
    "/v1/sessions",
];

pub(crate) fn router(state: Shared) -> Router {
    let routes = Router::new()
        .route(ROUTES[0], post(post_events))
        .route(ROUTES[1], get(get_session).delete(delete_session))
        .route(ROUTES[2], post(post_claude_code))
        .route(ROUTES[3], post(post_agent_hook))
        .route(ROUTES[4], get(healthz))
        .route(ROUTES[5], get(readyz))
        .route(ROUTES[6], get(metrics))
        .route(ROUTES[7], get(openapi))
        .route(ROUTES[8], post(crate::otlp::post_traces))
        .route(ROUTES[9], post(crate::otlp::post_logs))
        .route(ROUTES[10], get(list_sessions))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(state.clone(), track))
        .with_state(state);
    // Around the whole router, so axum's own answers (a 405 with its `Allow`) are complete
    // when they are rewritten as JSON.
    Router::new()
        .fallback_service(routes)
        .layer(middleware::from_fn(json_errors))
}

/// Times every request and counts it by route and status.
async fn track(State(state): State<Shared>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .and_then(|m| ROUTES.iter().copied().find(|r| *r == m.as_str()))
        .unwrap_or("other");
    let response = next.run(req).await;
    state
        .metrics
        .request(route, response.status().as_u16(), start.elapsed());
    response
}

/// Every error is JSON (the `Error` schema): answers axum writes itself (405 for another
/// method of a known path, a path parameter it cannot decode) come without a body or as
/// text, and are rewritten here, keeping their status and headers (`Allow`).
async fn json_errors(req: Request, next: Next) -> Response {
    let response = next.run(req).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = match body.collect().await {
        Ok(b) => String::from_utf8_lossy(&b.to_bytes()).trim().to_string(),
        Err(_) => String::new(),
    };
    let error = if status == StatusCode::METHOD_NOT_ALLOWED {
        let allow = parts
            .headers
            .get(header::ALLOW)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        format!("method not allowed for this path (allowed: {allow}); see GET /openapi.json")
    } else if text.is_empty() {
        status
            .canonical_reason()
            .unwrap_or("error")
            .to_ascii_lowercase()
    } else {
        text
    };
    let body = ApiError::new(status, error, None).body();
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(body))
}

async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "no such endpoint; see GET /openapi.json",
        None,
    )
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
    fn awaits(&self) -> bool {
        self.awaitable || !self.blocking
    }

    /// A guard call where it belongs: `awaited` when the store can be awaited or never
    /// blocks (the guard's async methods call such a store in place), else `blocking` on
    /// the blocking pool.
    async fn store_call<T: Send + 'static>(
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
    async fn run<T: Send + 'static>(
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

/// `application/json` (or no type): one event; `application/x-ndjson` (or
/// `application/jsonl`): JSON Lines.
fn is_ndjson(headers: &HeaderMap) -> Result<bool, ApiError> {
    let Some(ct) = headers.get(header::CONTENT_TYPE) else {
        return Ok(false);
    };
    let ct = ct.to_str().unwrap_or("");
    let mime = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match mime.as_str() {
        "application/json" | "" => Ok(false),
        "application/x-ndjson" | "application/jsonl" | "application/jsonlines" => Ok(true),
        _ => Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("content type {ct:?}: send application/json (one event) or application/x-ndjson (JSON Lines)"),
            Some("content-type"),
        )),
    }
}

pub(crate) fn json_response(body: impl Into<Body>, content_type: &'static str) -> Response {
    let mut r = Response::new(body.into());
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// `POST /v1/events`
async fn post_events(
    State(state): State<Shared>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let tenant = state.authenticate(&headers)?;
    let ndjson = is_ndjson(&headers)?;
    let bytes = read_body(&state, &headers, body).await?;
    let mut out = if state.awaits() {
        apply_events(&state, tenant.as_deref(), &bytes, ndjson).await?
    } else {
        // A blocking store (SQLite): the same work, on the blocking pool, where waiting
        // for the disk ties up no async worker.
        state
            .run(move |s| {
                tokio::runtime::Handle::current().block_on(apply_events(
                    s,
                    tenant.as_deref(),
                    &bytes,
                    ndjson,
                ))
            })
            .await??
    };
    if !ndjson && out.last() == Some(&b'\n') {
        out.pop();
    }
    Ok(json_response(
        out,
        if ndjson {
            "application/x-ndjson"
        } else {
            "application/json"
        },
    ))
}

/// Applies a body's events in order and writes their records (the guard's async methods
/// call a store without an awaitable side in place).
async fn apply_events(
    state: &AppState,
    tenant: Option<&str>,
    bytes: &[u8],
    ndjson: bool,
) -> Result<Vec<u8>, ApiError> {
    let events = parse_events(bytes, ndjson)?;
    let mut out = Vec::with_capacity(256 * events.len());
    for event in &events {
        let decision = state
            .guard
            .apply_async(tenant, event)
            .await
            .map_err(|e| state.guard_error(e))?;
        state.record(&decision, &mut out);
    }
    Ok(out)
}

/// Parses every event of a body first, so a malformed one rejects the request before
/// anything is applied.
fn parse_events(bytes: &[u8], ndjson: bool) -> Result<Vec<Event<'_>>, ApiError> {
    let mut events = Vec::new();
    if ndjson {
        for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
            let line = line.trim_ascii();
            if line.is_empty() {
                continue;
            }
            let event = parse_event(line, i as u64 + 1)
                .map_err(|e| ApiError::bad_request(e.to_string(), e.field))?;
            events.push(event);
        }
    } else {
        let body = bytes.trim_ascii();
        if !body.is_empty() {
            let event =
                parse_event(body, 1).map_err(|e| ApiError::bad_request(e.to_string(), e.field))?;
            events.push(event);
        }
    }
    if events.is_empty() {
        return Err(ApiError::bad_request(
            "the body holds no event (send one events.md event as JSON, or JSON Lines)",
            None,
        ));
    }
    Ok(events)
}

impl AppState {
    /// Counts a decision in the metrics and writes its record (a line) to `out`.
    pub(crate) fn record(&self, decision: &Decision<'_>, out: &mut Vec<u8>) {
        let finding = decision.finding.as_ref();
        self.metrics.decision(DecisionLabels {
            decision: decision.decision_str(),
            detector: finding.map_or("", |f| f.detector.as_str()),
            level: finding.map_or("", |f| f.level.as_str()),
        });
        decision.write_record(out);
    }
}

/// `GET /v1/sessions`: the caller's sessions (its tenant's, with tokens), each as
/// `GET /v1/sessions/{session}` shows it, most recently used first where the store knows. The
/// store is listed on the blocking pool: with Redis it is a key scan.
async fn list_sessions(
    State(state): State<Shared>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tenant = state.authenticate(&headers)?;
    let me = state.clone();
    let all = tokio::task::spawn_blocking(move || me.guard.sessions())
        .await
        .map_err(|e| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("internal error: {e}"),
                None,
            )
        })?
        .map_err(|e| state.guard_error(e))?;
    let list: Vec<serde_json::Value> = all
        .iter()
        .filter(|info| info.tenant.as_deref() == tenant.as_deref())
        .map(loopguard_guard::SessionInfo::api_json)
        .collect();
    Ok(json_response(
        serde_json::Value::Array(list).to_string(),
        "application/json",
    ))
}

/// `GET /v1/sessions/{session}`
async fn get_session(
    State(state): State<Shared>,
    Path(session): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tenant = state.authenticate(&headers)?;
    let (t, name) = (tenant.clone(), session.clone());
    let info = state
        .store_call(
            move |s| s.guard.session(t.as_deref(), &name),
            state.guard.session_async(tenant.as_deref(), &session),
        )
        .await?;
    let Some(info) = info else {
        return Err(no_session(&session));
    };
    Ok(json_response(
        crate::wiring::session_json(&info),
        "application/json",
    ))
}

fn no_session(session: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!(
            "no session {session:?} (never seen, forgotten, or idle for longer than the idle TTL)"
        ),
        Some("session"),
    )
}

/// `DELETE /v1/sessions/{session}`
async fn delete_session(
    State(state): State<Shared>,
    Path(session): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tenant = state.authenticate(&headers)?;
    let (t, name) = (tenant.clone(), session.clone());
    let existed = state
        .store_call(
            move |s| s.guard.forget(t.as_deref(), &name),
            state.guard.forget_async(tenant.as_deref(), &session),
        )
        .await?;
    if existed {
        Ok(StatusCode::NO_CONTENT.into_response())
    } else {
        Err(no_session(&session))
    }
}

/// `POST /v1/hooks/claude-code`
async fn post_claude_code(
    State(state): State<Shared>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let tenant = state.authenticate(&headers)?;
    let bytes = read_body(&state, &headers, body).await?;
    let out = state
        .run(move |s| {
            crate::wiring::agent_hook(
                s,
                loopguard_agents::Agent::ClaudeCode,
                tenant.as_deref(),
                &bytes,
            )
        })
        .await??;
    // Nothing to say is `{}` (Claude Code reads it as no output): a JSON body, as declared.
    let out = if out.iter().all(u8::is_ascii_whitespace) {
        b"{}".to_vec()
    } else {
        out
    };
    Ok(json_response(out, "application/json"))
}

/// `POST /v1/hooks/{agent}`: another coding agent's hook payload (Qwen Code's
/// `type: "http"` hooks, or a command hook that posts its stdin); the answer is what
/// `loopguard hook AGENT` prints for the same input. Claude Code has its own route above
/// (the same protocol, with `{}` for nothing to say).
async fn post_agent_hook(
    State(state): State<Shared>,
    Path(agent): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let tenant = state.authenticate(&headers)?;
    let agent = crate::wiring::hook_agent(&agent)?;
    let bytes = read_body(&state, &headers, body).await?;
    let out = state
        .run(move |s| crate::wiring::agent_hook(s, agent, tenant.as_deref(), &bytes))
        .await??;
    // `/v1/hooks/claude` answers as `/v1/hooks/claude-code` does.
    let out = if agent == loopguard_agents::Agent::ClaudeCode && out.is_empty() {
        b"{}".to_vec()
    } else {
        out
    };
    Ok(json_response(out, "application/json"))
}

async fn healthz() -> Response {
    json_response(r#"{"status":"ok"}"#, "application/json")
}

async fn readyz(State(state): State<Shared>) -> Result<Response, ApiError> {
    state
        .store_call(|s| s.guard.ping(), state.guard.ping_async())
        .await?;
    Ok(json_response(r#"{"status":"ready"}"#, "application/json"))
}

async fn metrics(State(state): State<Shared>) -> Result<Response, ApiError> {
    let text = state
        .run(|s| s.metrics.render((s.retries)(), (s.session_count)()))
        .await?;
    Ok(json_response(
        text,
        "application/openmetrics-text; version=1.0.0; charset=utf-8",
    ))
}

async fn openapi() -> Response {
    json_response(crate::openapi::document(), "application/json")
}
