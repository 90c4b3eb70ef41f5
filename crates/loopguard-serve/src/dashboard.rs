//! The dashboard: `GET /` (one page, its CSS and script embedded in the binary; nothing is
//! loaded from elsewhere), `GET /v1/dashboard` (the fleet now, as JSON),
//! `GET /v1/dashboard/sessions/{session}` (a session, its loops and their lanes, drawn by
//! `loopguard-lanes` as the replay report draws them), and `GET /v1/dashboard/stream`
//! (server-sent events: the same JSON pushed when decisions happen; see `live.rs`).
//!
//! The page shows the fleet now (live sessions, loops in the last hour, warn and block
//! decisions per minute, the tools and agents that loop most, the calls and tokens spent in
//! loops from their first warning on), the loops and sessions, and a session's timeline.
//! It listens to the stream and polls only while the stream is down. With `--tokens` the
//! page asks for a token once, keeps it in the tab's `sessionStorage` and sends it as
//! `Authorization: Bearer` on every fetch; for the stream, which `EventSource` opens
//! without headers, it first trades the token for a one-stream ticket
//! (`POST /v1/dashboard/ticket`). Every answer holds the token's tenant's sessions and loops
//! only, as every route does.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, LazyLock};
use std::time::Instant;

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use loopguard_guard::{LoopEnd, LoopQuery, LoopRecord};
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::history::{now_ms, params};
use crate::live;
use crate::state::{json_response, AppState};

/// The page, with the lanes' style in it.
static PAGE: LazyLock<String> = LazyLock::new(|| {
    include_str!("dashboard/index.html").replace("/*LANES_CSS*/", loopguard_lanes::CSS)
});

/// Loops the dashboard reads at most (the last hour's).
const MAX_LOOPS: usize = 5000;
/// Sessions listed at most.
const MAX_SESSIONS: usize = 50;

/// `GET /`
pub(crate) async fn page() -> Response {
    let mut r = json_response(PAGE.as_str(), "text/html; charset=utf-8");
    r.headers_mut().insert(
        axum::http::header::CONTENT_SECURITY_POLICY,
        axum::http::HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:",
        ),
    );
    r
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("internal error: {e}"),
        None,
    )
}

/// What a page looks at: the fleet (filtered by agent and service) or one session.
#[derive(Clone, Debug, Default)]
struct View {
    agent: Option<String>,
    service: Option<String>,
    session: Option<String>,
}

impl View {
    fn of(p: &std::collections::HashMap<String, String>) -> View {
        let get = |k: &str| p.get(k).filter(|s| !s.is_empty()).cloned();
        View {
            agent: get("agent"),
            service: get("service"),
            session: get("session"),
        }
    }

    /// The event's name and its JSON.
    async fn render(
        &self,
        state: &Arc<AppState>,
        tenant: Option<Arc<str>>,
    ) -> Result<(&'static str, Value), ApiError> {
        match &self.session {
            Some(id) => Ok(("session", session_view(state, tenant, id.clone()).await?)),
            None => Ok(("fleet", fleet(state, tenant, self.clone()).await?)),
        }
    }
}

/// `GET /v1/dashboard?agent=…&service=…`: the fleet now, for the caller's tenant.
pub(crate) async fn data(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tenant = state.authenticate(&headers)?;
    let mut view = View::of(&params(query.as_deref()));
    view.session = None;
    let body = fleet(&state, tenant, view).await?;
    Ok(json_response(body.to_string(), "application/json"))
}

/// `GET /v1/dashboard/sessions/{session}`: the session (`null` once the store forgot it),
/// its loops, and their lanes as HTML.
pub(crate) async fn session(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tenant = state.authenticate(&headers)?;
    let body = session_view(&state, tenant, id).await?;
    Ok(json_response(body.to_string(), "application/json"))
}

/// `POST /v1/dashboard/ticket`: a ticket for one stream, for the caller's tenant.
pub(crate) async fn ticket(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tenant = state.authenticate(&headers)?;
    let ticket = state.live.ticket(tenant).map_err(internal)?;
    let body = json!({ "ticket": ticket, "expiresInMs": live::TICKET_TTL.as_millis() as u64 });
    Ok(json_response(body.to_string(), "application/json"))
}

/// `GET /v1/dashboard/stream?ticket=…&agent=…&service=…&session=…`: server-sent events,
/// `fleet` (as `GET /v1/dashboard`) or `session` (as `GET /v1/dashboard/sessions/{session}`)
/// at once, then after decisions (debounced) and at least every 15 s.
pub(crate) async fn stream(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let p = params(query.as_deref());
    let tenant = match (&state.tokens, p.get("ticket")) {
        (None, _) => None,
        (Some(_), Some(t)) => state.live.redeem(t).ok_or_else(|| {
            ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unknown, used or expired ticket: POST /v1/dashboard/ticket for one",
                Some("ticket"),
            )
        })?,
        // A client that can send headers (curl) may use its token.
        (Some(_), None) => state.authenticate(&headers)?,
    };
    let permit = state.live.stream_permit().ok_or_else(|| {
        ApiError::unavailable(format!(
            "{} dashboard streams are open, the most there may be; poll GET /v1/dashboard instead",
            live::MAX_STREAMS
        ))
    })?;
    struct Ctx {
        state: Arc<AppState>,
        tenant: Option<Arc<str>>,
        view: View,
        changes: tokio::sync::watch::Receiver<u64>,
        started: Instant,
        first: bool,
        _permit: tokio::sync::OwnedSemaphorePermit,
    }
    let ctx = Ctx {
        changes: state.live.subscribe(),
        state,
        tenant,
        view: View::of(&p),
        started: Instant::now(),
        first: true,
        _permit: permit,
    };
    let events = futures_util::stream::unfold(ctx, |mut c| async move {
        if !c.first {
            let left = live::STREAM_LIFETIME.checked_sub(c.started.elapsed())?;
            tokio::select! {
                changed = c.changes.changed() => changed.ok()?,
                () = tokio::time::sleep(live::REFRESH.min(left)) => {
                    if c.started.elapsed() >= live::STREAM_LIFETIME {
                        return None;
                    }
                }
            }
        }
        c.first = false;
        let event = match c.view.render(&c.state, c.tenant.clone()).await {
            Ok((name, body)) => Event::default().event(name).data(body.to_string()),
            // The store is down: said on the stream, which stays open.
            Err(e) => Event::default().event("problem").data(e.body()),
        };
        Some((Ok::<_, Infallible>(event), c))
    });
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// The fleet now: live sessions, the last hour's loops, decisions per minute.
async fn fleet(
    state: &Arc<AppState>,
    tenant: Option<Arc<str>>,
    view: View,
) -> Result<Value, ApiError> {
    let now = now_ms();
    let mut q = LoopQuery::default();
    q.tenant = Some(tenant.as_deref().map(str::to_string));
    q.since_ms = now.saturating_sub(3_600_000);
    q.agent = view.agent.clone();
    q.service = view.service.clone();
    q.limit = loopguard_guard::MAX_LOOP_PAGE;
    let filtered = q.agent.is_some() || q.service.is_some();
    // A store that lists its keys over I/O (SQLite, Redis): its listing is shared and
    // refreshed at most every few seconds, never made per request.
    let listed = if state.blocking {
        Some(
            state
                .live
                .keys(state.guard.store().clone())
                .await
                .map_err(|e| state.guard_error(loopguard_guard::GuardError::Store(e)))?,
        )
    } else {
        None
    };
    let me = state.clone();
    let (loops, sessions, live) = tokio::task::spawn_blocking(move || {
        let store = me.guard.store();
        let mut loops: Vec<LoopRecord> = Vec::new();
        loop {
            let page = store.loops(&q)?;
            loops.extend(page.loops);
            match page.next {
                Some(next) if loops.len() < MAX_LOOPS => q.cursor = Some(next),
                _ => break,
            }
        }
        let prefix = loopguard_guard::session_key(q.tenant.clone().flatten().as_deref(), "");
        let listed = match listed {
            Some(keys) => keys,
            None => Arc::new(store.keys()?),
        };
        let keys: Vec<&String> = listed.iter().filter(|k| k.starts_with(&prefix)).collect();
        let live = keys.len();
        let looping: std::collections::BTreeSet<&str> =
            loops.iter().map(|l| l.session.as_str()).collect();
        let mut sessions = Vec::new();
        for key in keys {
            if sessions.len() == MAX_SESSIONS {
                break;
            }
            let (_, id) = loopguard_guard::split_key(key);
            if filtered && !looping.contains(id) {
                continue;
            }
            if let Some(e) = store.load(key)? {
                let info = loopguard_guard::SessionInfo::of(key, &e);
                let mut j = info.api_json();
                j["recent"] = json!(null);
                j["looping"] = json!(looping.contains(id));
                sessions.push(j);
            }
        }
        Ok::<_, loopguard_guard::StoreError>((loops, sessions, live))
    })
    .await
    .map_err(internal)?
    .map_err(|e| state.guard_error(loopguard_guard::GuardError::Store(e)))?;
    let per_minute = state.live.per_minute(
        tenant.as_deref(),
        view.agent.as_deref(),
        view.service.as_deref(),
        now,
    );
    Ok(summary(&loops, sessions, live, per_minute, now))
}

/// The dashboard's numbers from the last hour's loops and decisions.
fn summary(
    loops: &[LoopRecord],
    sessions: Vec<Value>,
    live: usize,
    (warnings, blocks): (Vec<u64>, Vec<u64>),
    now: u64,
) -> Value {
    let mut tools: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    let mut agents: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for l in loops {
        for (map, k) in [
            (&mut tools, l.tool.as_str()),
            (&mut agents, l.agent.as_deref().unwrap_or("-")),
        ] {
            let e = map.entry(k).or_default();
            e.0 += 1;
            e.1 += l.calls;
        }
    }
    let top = |m: BTreeMap<&str, (u64, u64)>| {
        let mut v: Vec<_> = m.into_iter().collect();
        v.sort_by_key(|(_, (n, calls))| std::cmp::Reverse((*calls, *n)));
        v.into_iter()
            .take(10)
            .map(|(name, (n, calls))| json!({ "name": name, "loops": n, "calls": calls }))
            .collect::<Vec<_>>()
    };
    let mut recent: Vec<&LoopRecord> = loops.iter().collect();
    recent.sort_by_key(|l| std::cmp::Reverse(l.last_ms));
    recent.truncate(100);
    json!({
        "now": now,
        "liveSessions": live,
        "loopsLastHour": loops.len(),
        "blockedLastHour": loops.iter().filter(|l| l.block_ms.is_some()).count(),
        "perMinute": { "warnings": warnings, "blocks": blocks },
        "topTools": top(tools),
        "topAgents": top(agents),
        "callsInLoops": loops.iter().map(|l| l.calls).sum::<u64>(),
        "tokensInLoops": loops.iter().filter_map(|l| l.tokens).sum::<u64>(),
        "loops": recent,
        "sessions": sessions,
    })
}

/// A session, its loops and their lanes.
async fn session_view(
    state: &Arc<AppState>,
    tenant: Option<Arc<str>>,
    id: String,
) -> Result<Value, ApiError> {
    let me = state.clone();
    let (info, loops) = tokio::task::spawn_blocking(move || {
        let info = me.guard.session(tenant.as_deref(), &id)?;
        let mut q = LoopQuery::default();
        q.tenant = Some(tenant.as_deref().map(str::to_string));
        q.session = Some(id);
        q.limit = loopguard_guard::MAX_LOOP_PAGE;
        let loops = me
            .guard
            .store()
            .loops(&q)
            .map_err(loopguard_guard::GuardError::Store)?
            .loops;
        Ok::<_, loopguard_guard::GuardError>((info.map(|i| i.api_json()), loops))
    })
    .await
    .map_err(internal)?
    .map_err(|e| state.guard_error(e))?;
    let lanes = lanes(&loops, info.as_ref());
    Ok(json!({ "session": info, "loops": loops, "lanes": lanes }))
}

/// `HH:MM:SS` (UTC) of a time in ms since the epoch.
fn clock(ms: u64) -> String {
    let s = ms / 1000 % 86_400;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// `12s`, `3m 05s`, `2h 01m`.
fn span(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, s / 60 % 60),
    }
}

/// The session's loops as the replay report's lanes, on a time axis: a mark at each
/// loop's first warning, first block and last step, and at each of the session's recent
/// decisions (the store keeps the last 20) that warned or blocked its tool.
fn lanes(loops: &[LoopRecord], session: Option<&Value>) -> String {
    use loopguard_lanes::{Lane, Mark, MarkKind, Tick, Timeline};
    let mut loops: Vec<&LoopRecord> = loops.iter().collect();
    loops.sort_by_key(|l| (l.first_ms, l.id.clone()));
    let recent: Vec<&Value> = session
        .and_then(|s| s["recent"].as_array())
        .map(|r| r.iter().collect())
        .unwrap_or_default();
    let t0 = loops.iter().map(|l| l.first_ms).min().unwrap_or(0);
    let last_seen = session.and_then(|s| s["lastSeen"].as_u64()).unwrap_or(0);
    let t1 = loops
        .iter()
        .map(|l| l.last_ms)
        .chain([last_seen])
        .max()
        .unwrap_or(0)
        .max(t0 + 1000);
    let at = |ms: u64| (ms.clamp(t0, t1) - t0) as f64 / (t1 - t0) as f64;
    let mut t = Timeline {
        axis: "time (UTC)".to_string(),
        ticks: (0..=4u64)
            .map(|k| Tick::new(k as f64 / 4.0, clock(t0 + (t1 - t0) * k / 4)))
            .collect(),
        ..Timeline::default()
    };
    for (i, l) in loops.iter().enumerate() {
        let severity = match l.end {
            LoopEnd::Aborted => MarkKind::Abort,
            LoopEnd::Blocked | LoopEnd::WouldBlock => MarkKind::Block,
            LoopEnd::Warned => MarkKind::Warn,
        };
        let mut lane = Lane::new(i + 1, l.tool.clone(), severity);
        lane.detectors.clone_from(&l.detector);
        lane.max_count = l.max_count;
        lane.run.clone_from(&l.run);
        lane.end = Some(l.end.as_str().to_string());
        let mark = |ms: u64, kind: MarkKind, what: &str| Mark {
            at: at(ms),
            kind,
            tip: format!("{} · {what}\n{} · {}", clock(ms), l.tool, l.detector),
        };
        if let Some(ms) = l.first_warning_ms {
            lane.marks.push(mark(ms, MarkKind::Warn, "first warning"));
        }
        if let Some(ms) = l.block_ms {
            let what = if severity == MarkKind::Abort {
                "run ended"
            } else {
                "first block"
            };
            lane.marks.push(mark(ms, severity, what));
        }
        for r in &recent {
            let (Some(ts), Some(decision)) = (r["ts"].as_u64(), r["decision"].as_str()) else {
                continue;
            };
            let kind = match decision {
                "warn" => MarkKind::Warn,
                "block" | "would-block" => MarkKind::Block,
                "abort" => MarkKind::Abort,
                _ => continue,
            };
            if r["tool"].as_str() == Some(l.tool.as_str()) && (l.first_ms..=l.last_ms).contains(&ts)
            {
                lane.marks.push(mark(ts, kind, decision));
            }
        }
        let last = if l.block_ms.is_some() {
            severity
        } else {
            MarkKind::Warn
        };
        lane.marks.push(mark(l.last_ms, last, "last step"));
        lane.marks.sort_by(|a, b| a.at.total_cmp(&b.at));
        lane.marks.dedup_by(|a, b| a.at == b.at && a.kind == b.kind);
        let mut cost = vec![format!(
            "{} {}",
            l.calls,
            if l.calls == 1 { "call" } else { "calls" }
        )];
        cost.push(span(
            l.last_ms - l.first_warning_ms.unwrap_or(l.first_ms).min(l.last_ms),
        ));
        if let Some(tokens) = l.tokens {
            cost.push(format!("{tokens} tokens"));
        }
        lane.cost = cost.join(" · ");
        t.lanes.push(lane);
    }
    let mut html = String::new();
    loopguard_lanes::render(&mut html, &t);
    html
}

/// The dashboard's part of `GET /openapi.json`.
pub(crate) fn openapi(doc: &mut Value) {
    let err = |d: &str| json!({ "description": d, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } });
    let filters = json!([
        { "name": "agent", "in": "query", "schema": { "type": "string" }, "description": "Only this agent's loops and decisions (and the sessions they are in)" },
        { "name": "service", "in": "query", "schema": { "type": "string" }, "description": "Only this service's loops and decisions (and the sessions they are in)" }
    ]);
    let session_schema = json!({
        "type": "object",
        "required": ["session", "loops", "lanes"],
        "properties": {
            "session": { "type": ["object", "null"], "description": "As GET /v1/sessions/{session} answers; null once the store forgot the session (its loops are kept)" },
            "loops": { "type": "array", "items": { "$ref": "#/components/schemas/Loop" } },
            "lanes": { "type": "string", "description": "The loops' lanes as HTML (the replay report's), one per loop" }
        }
    });
    doc["paths"]["/"] = json!({ "get": {
        "operationId": "dashboard",
        "summary": "The dashboard: one HTML page (its CSS and script embedded), updated by /v1/dashboard/stream",
        "responses": { "200": { "description": "The page", "content": { "text/html": { "schema": { "type": "string" } } } } }
    } });
    doc["paths"]["/v1/dashboard"] = json!({ "get": {
        "operationId": "dashboardData",
        "summary": "The fleet now, for the caller's tenant: live sessions, the last hour's loops, warn and block decisions per minute, the tools and agents that loop most, calls and tokens in loops, the sessions",
        "parameters": filters,
        "responses": {
            "200": { "description": "The numbers", "content": { "application/json": { "schema": {
                "type": "object",
                "required": ["now", "liveSessions", "loopsLastHour", "blockedLastHour", "perMinute", "topTools", "topAgents", "callsInLoops", "tokensInLoops", "loops", "sessions"],
                "properties": {
                    "now": { "type": "integer" },
                    "liveSessions": { "type": "integer", "description": "Sessions the store holds; with SQLite or Redis as listed at most 5 s ago" },
                    "loopsLastHour": { "type": "integer" },
                    "blockedLastHour": { "type": "integer" },
                    "perMinute": { "type": "object", "description": "60 counts each, oldest minute first, the last the current minute: warn decisions, and block decisions (would-blocks and aborts included), made by this server process",
                        "required": ["warnings", "blocks"],
                        "properties": { "warnings": { "type": "array", "items": { "type": "integer" } }, "blocks": { "type": "array", "items": { "type": "integer" } } } },
                    "topTools": { "type": "array", "items": { "type": "object" } },
                    "topAgents": { "type": "array", "items": { "type": "object" } },
                    "callsInLoops": { "type": "integer" },
                    "tokensInLoops": { "type": "integer" },
                    "loops": { "type": "array", "items": { "$ref": "#/components/schemas/Loop" } },
                    "sessions": { "type": "array", "items": { "type": "object" } }
                }
            } } } },
            "401": err("Missing or unknown bearer token (only when the server runs with --tokens)"),
            "503": err("The session store cannot be reached")
        }
    } });
    doc["paths"]["/v1/dashboard/sessions/{session}"] = json!({ "get": {
        "operationId": "dashboardSession",
        "summary": "A session for the dashboard's session page: the session, its loops, and their lanes as HTML",
        "parameters": [ { "name": "session", "in": "path", "required": true, "schema": { "type": "string", "minLength": 1 } } ],
        "responses": {
            "200": { "description": "The session", "content": { "application/json": { "schema": session_schema } } },
            "404": err("No such path: the session id is empty"),
            "401": err("Missing or unknown bearer token (only when the server runs with --tokens)"),
            "503": err("The session store cannot be reached")
        }
    } });
    doc["paths"]["/v1/dashboard/ticket"] = json!({ "post": {
        "operationId": "dashboardTicket",
        "summary": "A ticket for one GET /v1/dashboard/stream, for the caller's tenant (EventSource cannot send an Authorization header); valid for 60 s",
        "responses": {
            "200": { "description": "The ticket", "content": { "application/json": { "schema": {
                "type": "object", "required": ["ticket", "expiresInMs"],
                "properties": { "ticket": { "type": "string" }, "expiresInMs": { "type": "integer" } }
            } } } },
            "401": err("Missing or unknown bearer token (only when the server runs with --tokens)")
        }
    } });
    let mut stream_params = filters;
    if let Some(p) = stream_params.as_array_mut() {
        p.push(json!({ "name": "session", "in": "query", "schema": { "type": "string" }, "description": "Push this session's page (`session` events) instead of the fleet's" }));
        p.push(json!({ "name": "ticket", "in": "query", "schema": { "type": "string" }, "description": "With --tokens: a ticket from POST /v1/dashboard/ticket (used up by this stream); a client that can send headers may send its bearer token instead" }));
    }
    doc["paths"]["/v1/dashboard/stream"] = json!({ "get": {
        "operationId": "dashboardStream",
        "summary": "Server-sent events for the dashboard: `fleet` (the body of GET /v1/dashboard) or, with `session`, `session` (the body of GET /v1/dashboard/sessions/{session}), at once, after decisions (at most every 0.5 s) and at least every 15 s; `problem` (an Error body) when the store cannot be read. A stream ends after 10 minutes; 64 at most are open at once. It never ends by itself sooner, so Schemathesis leaves it out (tests/serve_schemathesis.rs)",
        "x-streaming": true,
        "parameters": stream_params,
        "responses": {
            "200": { "description": "The events", "content": { "text/event-stream": { "schema": { "type": "string" } } } },
            "401": err("With --tokens: no ticket and no bearer token, or an unknown, used or expired ticket"),
            "503": err("Too many streams are open: poll GET /v1/dashboard")
        }
    } });
}
