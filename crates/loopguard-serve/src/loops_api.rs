//! The loop history's routes: `GET /v1/loops` (one page) and `GET /v1/loops/export` (JSON
//! Lines), and their part of the OpenAPI document.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use loopguard_guard::{LoopPage, LoopQuery, StoreError};

use crate::error::ApiError;
use crate::history::{params, parse_limit, parse_since};
use crate::state::{json_response, AppState};

fn query_of(
    tenant: Option<&str>,
    p: &std::collections::HashMap<String, String>,
) -> Result<LoopQuery, ApiError> {
    let mut q = LoopQuery::default();
    q.tenant = Some(tenant.map(str::to_string));
    if let Some(s) = p.get("since") {
        q.since_ms = parse_since(s)?;
    }
    q.agent = p.get("agent").cloned();
    q.service = p.get("service").cloned();
    q.session = p.get("session").cloned();
    // An empty cursor is the first page, as an absent one (a client that keeps `next` in a
    // form field sends `cursor=` before its first page).
    q.cursor = p.get("cursor").filter(|c| !c.is_empty()).cloned();
    q.limit = parse_limit(p, loopguard_guard::MAX_LOOP_PAGE)?.unwrap_or(100);
    Ok(q)
}

async fn page(state: &Arc<AppState>, q: LoopQuery) -> Result<LoopPage, ApiError> {
    let store = state.guard.store().clone();
    let result = tokio::task::spawn_blocking(move || store.loops(&q))
        .await
        .map_err(|e| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("internal error: {e}"),
                None,
            )
        })?;
    result.map_err(|e| match e {
        StoreError::BadQuery(m) => ApiError::bad_request(m, Some("cursor")),
        StoreError::Unsupported(m) => ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            format!("this store keeps no {m}"),
            None,
        ),
        other => state.guard_error(loopguard_guard::GuardError::Store(other)),
    })
}

/// `GET /v1/loops`: one page of the caller's loops.
pub(crate) async fn list_loops(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tenant = state.authenticate(&headers)?;
    let q = query_of(tenant.as_deref(), &params(query.as_deref()))?;
    let page = page(&state, q).await?;
    let body = serde_json::json!({ "loops": page.loops, "next": page.next });
    Ok(json_response(body.to_string(), "application/json"))
}

/// `GET /v1/loops/export`: every loop the filters select, as JSON Lines (one
/// `loopguard.loop/1` record a line), what `loopguard replay --summary` reads.
pub(crate) async fn export_loops(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tenant = state.authenticate(&headers)?;
    let mut p = params(query.as_deref());
    p.remove("limit");
    let mut q = query_of(tenant.as_deref(), &p)?;
    q.limit = loopguard_guard::MAX_LOOP_PAGE;
    let mut out = String::new();
    loop {
        let page = page(&state, q.clone()).await?;
        for r in &page.loops {
            out.push_str(&r.to_json());
            out.push('\n');
        }
        match page.next {
            Some(next) => q.cursor = Some(next),
            None => break,
        }
    }
    Ok(json_response(out, "application/x-ndjson"))
}

/// The loop history's part of `GET /openapi.json`: its paths, the paged form of
/// `GET /v1/sessions`, and the `Loop` schema.
pub(crate) fn openapi(doc: &mut serde_json::Value) {
    use serde_json::json;
    let err = |d: &str| json!({ "description": d, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } });
    let filters = json!([
        { "name": "since", "in": "query", "schema": { "anyOf": [ { "type": "string", "pattern": "^[0-9]{1,15}$" }, { "type": "string", "pattern": "^[0-9]{1,9}(ms|s|m|h|d)$" }, { "type": "string", "format": "date-time" } ] }, "description": "Loops active at or after this time: milliseconds since 1970, an RFC 3339 time, or a duration back from now (90s, 30m, 1h, 7d)" },
        { "name": "agent", "in": "query", "schema": { "type": "string" }, "description": "Only this agent's loops" },
        { "name": "service", "in": "query", "schema": { "type": "string" }, "description": "Only this service's loops (a trace's service.name)" },
        { "name": "session", "in": "query", "schema": { "type": "string" }, "description": "Only this session's loops" },
        { "name": "cursor", "in": "query", "schema": { "type": "string", "pattern": "^$|^[0-9]{1,19}:" }, "description": "The `next` of the previous page (`MS:ID`); empty or absent: the first page" }
    ]);
    let mut list_params = filters.as_array().cloned().unwrap_or_default();
    list_params.push(json!({ "name": "limit", "in": "query", "schema": { "type": "integer", "minimum": 1, "maximum": loopguard_guard::MAX_LOOP_PAGE }, "description": "Loops per page (default 100)" }));
    doc["paths"]["/v1/loops"] = json!({ "get": {
        "operationId": "listLoops",
        "summary": "The caller's loops (its tenant's, with tokens), one record per loop, in the order they started; paginated",
        "parameters": list_params,
        "responses": {
            "200": { "description": "One page", "content": { "application/json": { "schema": {
                "type": "object", "required": ["loops", "next"],
                "properties": {
                    "loops": { "type": "array", "items": { "$ref": "#/components/schemas/Loop" } },
                    "next": { "type": ["string", "null"], "description": "The cursor of the next page; null on the last" }
                }
            } } } },
            "400": err("A parameter is malformed (`field` names it)"),
            "401": err("Missing or unknown bearer token (only when the server runs with --tokens)"),
            "503": err("The session store cannot be reached")
        }
    } });
    doc["paths"]["/v1/loops/export"] = json!({ "get": {
        "operationId": "exportLoops",
        "summary": "Every loop the filters select, as JSON Lines (one Loop a line): what `loopguard replay --summary` reads",
        "parameters": filters,
        "responses": {
            "200": { "description": "JSON Lines", "content": { "application/x-ndjson": { "schema": { "type": "string" } } } },
            "400": err("A parameter is malformed (`field` names it)"),
            "401": err("Missing or unknown bearer token (only when the server runs with --tokens)"),
            "503": err("The session store cannot be reached")
        }
    } });
    let sessions = &mut doc["paths"]["/v1/sessions"]["get"];
    sessions["parameters"] = json!([
        { "name": "limit", "in": "query", "schema": { "type": "integer", "minimum": 1, "maximum": 1000 }, "description": "Page the listing: at most this many sessions, in the order of their ids" },
        { "name": "cursor", "in": "query", "schema": { "type": "string" }, "description": "The `next` of the previous page (implies paging)" }
    ]);
    sessions["responses"]["200"]["content"]["application/json"]["schema"] = json!({ "oneOf": [
        { "type": "array", "items": { "$ref": "#/components/schemas/Session" }, "description": "Without limit or cursor: every session" },
        { "type": "object", "required": ["sessions", "next"], "description": "With limit or cursor: one page", "properties": {
            "sessions": { "type": "array", "items": { "$ref": "#/components/schemas/Session" } },
            "next": { "type": ["string", "null"] }
        } }
    ] });
    sessions["responses"]["400"] = err("`limit` is not a whole number from 1 to 1000");
    let opt_str = json!({ "type": ["string", "null"] });
    let opt_int = json!({ "type": ["integer", "null"] });
    doc["components"]["schemas"]["Loop"] = json!({
        "type": "object",
        "description": "One loop: the steps of one warningKey (or, without one, detector and tool) in one session, folded together",
        "required": ["format", "id", "tenant", "session", "run", "agent", "service", "tool", "detector", "loopKey", "firstMs", "firstWarningMs", "blockMs", "lastMs", "calls", "warnings", "blocks", "tokens", "maxCount", "end", "message"],
        "properties": {
            "format": { "const": loopguard_guard::LOOP_FORMAT },
            "id": { "type": "string" },
            "tenant": opt_str, "session": { "type": "string" }, "run": opt_str,
            "agent": opt_str, "service": opt_str,
            "tool": { "type": "string" }, "detector": { "type": "string" },
            "loopKey": { "type": "string", "description": "The warningKey" },
            "firstMs": { "type": "integer" }, "firstWarningMs": opt_int, "blockMs": opt_int, "lastMs": { "type": "integer" },
            "calls": { "type": "integer", "description": "calls of the loop from its first warning on" },
            "warnings": { "type": "integer" }, "blocks": { "type": "integer" },
            "tokens": opt_int, "maxCount": { "type": "integer" },
            "end": { "enum": ["warned", "blocked", "would-block", "aborted"] },
            "message": opt_str
        }
    });
}
