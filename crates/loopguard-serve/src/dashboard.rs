//! The dashboard: `GET /` (one page, its CSS and script embedded in the binary; nothing is
//! loaded from elsewhere) and `GET /v1/dashboard` (the JSON it polls every two seconds).
//!
//! The page shows the fleet now (live sessions, loops in the last hour, loops warned and
//! blocked per minute, the tools and agents that loop most, the calls and tokens spent in
//! loops from their first warning on), the loops and sessions, and a session's timeline
//! (one lane per loop). With `--tokens` the page asks for a token once, keeps it in the
//! tab's `sessionStorage` and sends it as `Authorization: Bearer` on every fetch: the data
//! answers with the token's tenant's sessions and loops only, as every route does.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use loopguard_guard::{LoopQuery, LoopRecord};
use serde_json::json;

use crate::error::ApiError;
use crate::history::{now_ms, params};
use crate::state::{json_response, AppState};

/// The page.
const PAGE: &str = include_str!("dashboard/index.html");

/// Loops the dashboard reads at most (the last hour's).
const MAX_LOOPS: usize = 5000;
/// Sessions listed at most.
const MAX_SESSIONS: usize = 50;

/// `GET /`
pub(crate) async fn page() -> Response {
    let mut r = json_response(PAGE, "text/html; charset=utf-8");
    r.headers_mut().insert(
        axum::http::header::CONTENT_SECURITY_POLICY,
        axum::http::HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:",
        ),
    );
    r
}

/// `GET /v1/dashboard?agent=…&service=…`: the fleet now, for the caller's tenant.
pub(crate) async fn data(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tenant = state.authenticate(&headers)?;
    let p = params(query.as_deref());
    let now = now_ms();
    let hour_ago = now.saturating_sub(3_600_000);
    let mut q = LoopQuery::default();
    q.tenant = Some(tenant.as_deref().map(str::to_string));
    q.since_ms = hour_ago;
    q.agent = p.get("agent").filter(|s| !s.is_empty()).cloned();
    q.service = p.get("service").filter(|s| !s.is_empty()).cloned();
    q.limit = loopguard_guard::MAX_LOOP_PAGE;
    let filtered = q.agent.is_some() || q.service.is_some();
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
        let keys: Vec<String> = store
            .keys()?
            .into_iter()
            .filter(|k| k.starts_with(&prefix))
            .collect();
        let live = keys.len();
        let looping: std::collections::BTreeSet<&str> =
            loops.iter().map(|l| l.session.as_str()).collect();
        let mut sessions = Vec::new();
        for key in &keys {
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
    .map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("internal error: {e}"),
            None,
        )
    })?
    .map_err(|e| state.guard_error(loopguard_guard::GuardError::Store(e)))?;
    Ok(json_response(
        summary(&loops, sessions, live, now).to_string(),
        "application/json",
    ))
}

/// The dashboard's numbers from the last hour's loops.
fn summary(
    loops: &[LoopRecord],
    sessions: Vec<serde_json::Value>,
    live: usize,
    now: u64,
) -> serde_json::Value {
    let minute = |ms: u64| (now.saturating_sub(ms) / 60_000) as usize;
    let mut warned = [0u64; 60];
    let mut blocked = [0u64; 60];
    let mut tools: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    let mut agents: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for l in loops {
        if let Some(i) = l.first_warning_ms.map(minute).filter(|i| *i < 60) {
            warned[59 - i] += 1;
        }
        if let Some(i) = l.block_ms.map(minute).filter(|i| *i < 60) {
            blocked[59 - i] += 1;
        }
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
        "perMinute": { "warned": warned.to_vec(), "blocked": blocked.to_vec() },
        "topTools": top(tools),
        "topAgents": top(agents),
        "callsInLoops": loops.iter().map(|l| l.calls).sum::<u64>(),
        "tokensInLoops": loops.iter().filter_map(|l| l.tokens).sum::<u64>(),
        "loops": recent,
        "sessions": sessions,
    })
}

/// The dashboard's part of `GET /openapi.json`.
pub(crate) fn openapi(doc: &mut serde_json::Value) {
    let err = |d: &str| json!({ "description": d, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } });
    doc["paths"]["/"] = json!({ "get": {
        "operationId": "dashboard",
        "summary": "The dashboard: one HTML page (its CSS and script embedded), polling /v1/dashboard",
        "responses": { "200": { "description": "The page", "content": { "text/html": { "schema": { "type": "string" } } } } }
    } });
    doc["paths"]["/v1/dashboard"] = json!({ "get": {
        "operationId": "dashboardData",
        "summary": "The fleet now, for the caller's tenant: live sessions, the last hour's loops, loops warned and blocked per minute, the tools and agents that loop most, calls and tokens in loops, the sessions",
        "parameters": [
            { "name": "agent", "in": "query", "schema": { "type": "string" }, "description": "Only this agent's loops (and the sessions they are in)" },
            { "name": "service", "in": "query", "schema": { "type": "string" }, "description": "Only this service's loops (and the sessions they are in)" }
        ],
        "responses": {
            "200": { "description": "The numbers", "content": { "application/json": { "schema": {
                "type": "object",
                "required": ["now", "liveSessions", "loopsLastHour", "blockedLastHour", "perMinute", "topTools", "topAgents", "callsInLoops", "tokensInLoops", "loops", "sessions"],
                "properties": {
                    "now": { "type": "integer" },
                    "liveSessions": { "type": "integer" },
                    "loopsLastHour": { "type": "integer" },
                    "blockedLastHour": { "type": "integer" },
                    "perMinute": { "type": "object", "description": "60 counts each, oldest minute first: loops first warned, loops first blocked",
                        "properties": { "warned": { "type": "array", "items": { "type": "integer" } }, "blocked": { "type": "array", "items": { "type": "integer" } } } },
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
}
