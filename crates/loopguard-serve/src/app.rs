//! The HTTP surface: routes, authentication, body limits, and the calls into the guard.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{MatchedPath, Path, RawQuery, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use http_body_util::BodyExt;
use loopguard_events::{parse_event, Event};

use crate::error::ApiError;
use crate::state::{json_response, read_body, AppState};

type Shared = Arc<AppState>;

/// The routes, and the label each gets in the metrics.
pub(crate) const ROUTES: [&str; 18] = [
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
    "/v1/loops",
    "/v1/loops/export",
    "/",
    "/v1/dashboard",
    "/v1/dashboard/sessions/{session}",
    "/v1/dashboard/ticket",
    "/v1/dashboard/stream",
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
        .route(ROUTES[11], get(crate::loops_api::list_loops))
        .route(ROUTES[12], get(crate::loops_api::export_loops))
        .route(ROUTES[13], get(crate::dashboard::page))
        .route(ROUTES[14], get(crate::dashboard::data))
        .route(ROUTES[15], get(crate::dashboard::session))
        .route(ROUTES[16], post(crate::dashboard::ticket))
        .route(ROUTES[17], get(crate::dashboard::stream))
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
    // Every POST is a decision route (events, hooks, traces, logs) but the ticket's: the
    // dashboard's streams are told (an atomic swap; see dashboard/live.rs).
    let decided = req.method() == axum::http::Method::POST && route != "/v1/dashboard/ticket";
    let response = next.run(req).await;
    if decided {
        state.live.changed();
    }
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
    if status == StatusCode::METHOD_NOT_ALLOWED {
        // Answered with the body unread: see `not_found`.
        parts
            .headers
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    Response::from_parts(parts, Body::from(body))
}

/// Any other path. The answer goes out with the request's body unread, after which hyper
/// closes the connection; `Connection: close` says so, so a keep-alive client does not send
/// its next request down that socket (it would see an unexpected EOF).
async fn not_found() -> Response {
    let mut r = ApiError::new(
        StatusCode::NOT_FOUND,
        "no such endpoint; see GET /openapi.json",
        None,
    )
    .into_response();
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
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

/// `POST /v1/events`
async fn post_events(
    State(state): State<Shared>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let tenant = state.authenticate(&headers)?;
    // Read before the content type is judged, for the reason given in `post_agent_hook`.
    let bytes = read_body(&state, &headers, body).await?;
    let ndjson = is_ndjson(&headers)?;
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
            .apply_async(tenant, event, |d| d)
            .await
            .map_err(|e| state.guard_error(e))?;
        let agent = event
            .agent
            .as_ref()
            .map(|a| a.to_string_lossy().into_owned());
        state.decided(&state.guard, tenant, &decision, agent);
        decision.write_record(&mut out);
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

/// `GET /v1/sessions`: the caller's sessions (its tenant's, with tokens), each as
/// `GET /v1/sessions/{session}` shows it, most recently used first where the store knows. The
/// store is listed on the blocking pool: with Redis it is a key scan.
///
/// With `limit` (or `cursor`) the answer is one page, `{"sessions": […], "next": cursor}`, in
/// the order of the session ids, and only that page's sessions are loaded from the store;
/// without them it is the whole array, as it always was.
async fn list_sessions(
    State(state): State<Shared>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tenant = state.authenticate(&headers)?;
    let p = crate::history::params(query.as_deref());
    let limit = crate::history::parse_limit(&p, MAX_SESSION_PAGE)?;
    let cursor = p.get("cursor").cloned();
    let me = state.clone();
    let paged = limit.is_some() || cursor.is_some();
    let answer = tokio::task::spawn_blocking(move || {
        if paged {
            sessions_page(
                &me,
                tenant.as_deref(),
                cursor.as_deref(),
                limit.unwrap_or(100),
            )
        } else {
            me.guard.sessions().map(|all| {
                let list: Vec<serde_json::Value> = all
                    .iter()
                    .filter(|info| info.tenant.as_deref() == tenant.as_deref())
                    .map(loopguard_guard::SessionInfo::api_json)
                    .collect();
                serde_json::Value::Array(list)
            })
        }
    })
    .await
    .map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("internal error: {e}"),
            None,
        )
    })?
    .map_err(|e| state.guard_error(e))?;
    Ok(json_response(answer.to_string(), "application/json"))
}

/// Sessions a page of `GET /v1/sessions` holds at most.
const MAX_SESSION_PAGE: usize = 1000;

/// One page of the tenant's sessions, in the order of their keys, after `cursor` (the last
/// session id of the previous page).
fn sessions_page(
    state: &AppState,
    tenant: Option<&str>,
    cursor: Option<&str>,
    limit: usize,
) -> Result<serde_json::Value, loopguard_guard::GuardError> {
    let store = state.guard.store();
    let prefix = loopguard_guard::session_key(tenant, "");
    let after = cursor.map(|c| loopguard_guard::session_key(tenant, c));
    let mut keys: Vec<String> = store
        .keys()?
        .into_iter()
        .filter(|k| k.starts_with(&prefix))
        .filter(|k| after.as_ref().is_none_or(|a| k > a))
        .collect();
    keys.sort();
    let mut sessions = Vec::new();
    let mut last = None;
    let mut more = false;
    for key in keys {
        if sessions.len() == limit {
            more = true;
            break;
        }
        if let Some(entry) = store.load(&key)? {
            let info = loopguard_guard::SessionInfo::of(&key, &entry);
            last = Some(info.session.clone());
            sessions.push(info.api_json());
        }
    }
    Ok(serde_json::json!({
        "sessions": sessions,
        "next": if more { last } else { None },
    }))
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

/// `POST /v1/hooks/{agent}` (and `POST /v1/hooks/claude-code`, the same route named for
/// Claude Code's plugin docs): a coding agent's hook payload (Claude Code's and Qwen
/// Code's `type: "http"` hooks, or a command hook that posts its stdin); the answer is what
/// `loopguard hook AGENT` prints for the same input, or `{}` when that is nothing.
async fn post_agent_hook(
    State(state): State<Shared>,
    Path(agent): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    hook(state, &agent, headers, body).await
}

/// `POST /v1/hooks/claude-code`: [`post_agent_hook`] for Claude Code.
async fn post_claude_code(
    State(state): State<Shared>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    hook(state, "claude-code", headers, body).await
}

async fn hook(
    state: Shared,
    agent: &str,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let tenant = state.authenticate(&headers)?;
    // The body is read before the agent is judged: an answer sent with the body unread
    // makes hyper close the connection, and a keep-alive client that already reused it
    // sees an unexpected EOF on its next request (CI caught exactly that).
    let bytes = read_body(&state, &headers, body).await?;
    let agent = crate::wiring::hook_agent(agent)?;
    let out = state
        .run(move |s| crate::wiring::agent_hook(s, agent, tenant.as_deref(), &bytes))
        .await??;
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

/// `GET /metrics`: see [`crate::exposition`] for who reads what, in which format.
async fn metrics(State(state): State<Shared>, headers: HeaderMap) -> Result<Response, ApiError> {
    let view = crate::exposition::view(&state, &headers)?;
    let openmetrics = crate::exposition::wants_openmetrics(&headers);
    let text = state
        .run(|s| {
            s.metrics.background.sync(&s.history, s.alerts.as_ref());
            s.metrics.render((s.retries)(), (s.session_count)())
        })
        .await?;
    let text = crate::exposition::render(&text, &view, openmetrics);
    Ok(json_response(
        text,
        if openmetrics {
            crate::exposition::OPENMETRICS
        } else {
            crate::exposition::TEXT_004
        },
    ))
}

async fn openapi() -> Response {
    json_response(crate::openapi::document(), "application/json")
}
