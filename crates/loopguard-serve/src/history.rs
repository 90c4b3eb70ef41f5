//! Loop history: every decision with a finding becomes a [`LoopStep`] folded into its loop's
//! record in the store (`Store::record_loop`), and `GET /v1/loops` lists the records.
//!
//! Recording never delays a decision: with the memory store a step is folded in place (a
//! lock of its own, held for microseconds); with SQLite or Redis it goes to a bounded queue
//! that a background task empties on the blocking pool. A step that finds the queue full is
//! dropped, logged and counted (`loopguard_loop_steps_dropped_total`). The store says which
//! step first blocked a loop, and that one (on whichever replica applied it) is handed to
//! the alerts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use loopguard_guard::{LoopChange, LoopPage, LoopQuery, LoopStep, Store, StoreError};
use tokio::sync::mpsc;

use crate::error::ApiError;
use crate::state::{json_response, AppState};

/// Steps waiting for a store that blocks (SQLite, Redis), at most.
pub(crate) const QUEUE: usize = 10_000;
/// Default `--loop-retention`: 30 days.
pub const DEFAULT_LOOP_RETENTION: Duration = Duration::from_secs(30 * 24 * 3600);
/// How often loops older than the retention are forgotten.
const PRUNE_EVERY: Duration = Duration::from_secs(600);

/// The loop history's side of the server.
pub(crate) struct History {
    store: Arc<dyn Store>,
    /// `None`: steps are folded in place (the memory store).
    queue: Option<mpsc::Sender<LoopStep>>,
    receiver: Mutex<Option<mpsc::Receiver<LoopStep>>>,
    pub retention: Duration,
    pub dropped: AtomicU64,
    pub failed: AtomicU64,
    /// Where the store's verdicts go (the alerts), when anywhere.
    pub on_change: Option<Arc<dyn Fn(&LoopChange) + Send + Sync>>,
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("History")
            .field("queued", &self.queue.is_some())
            .finish_non_exhaustive()
    }
}

impl History {
    pub(crate) fn new(
        store: Arc<dyn Store>,
        in_place: bool,
        retention: Duration,
        on_change: Option<Arc<dyn Fn(&LoopChange) + Send + Sync>>,
    ) -> History {
        let (queue, receiver) = if in_place {
            (None, None)
        } else {
            let (tx, rx) = mpsc::channel(QUEUE);
            (Some(tx), Some(rx))
        };
        History {
            store,
            queue,
            receiver: Mutex::new(receiver),
            retention,
            dropped: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            on_change,
        }
    }

    /// Records a step: in place, or queued (never waiting).
    pub(crate) fn observe(&self, step: LoopStep) {
        match &self.queue {
            None => self.write(&step),
            Some(tx) => {
                if tx.try_send(step).is_err() {
                    let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                    if n.is_power_of_two() {
                        tracing::warn!(target: "loopguard::serve", "loop history: the store is behind; {n} loop steps dropped so far (loopguard_loop_steps_dropped_total)");
                    }
                }
            }
        }
    }

    fn write(&self, step: &LoopStep) {
        match self.store.record_loop(step) {
            Ok(change) => {
                if let Some(f) = &self.on_change {
                    f(&change);
                }
            }
            Err(StoreError::Unsupported(_)) => {}
            Err(e) => {
                let n = self.failed.fetch_add(1, Ordering::Relaxed) + 1;
                if n.is_power_of_two() {
                    tracing::warn!(target: "loopguard::serve", "loop history: {e} ({n} loop steps not recorded so far)");
                }
            }
        }
    }

    /// Empties the queue into the store and forgets loops past the retention, until the
    /// server stops; started by `Server::serve`.
    pub(crate) async fn run(self: Arc<Self>) {
        let receiver = self
            .receiver
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let mut prune = tokio::time::interval(PRUNE_EVERY);
        let Some(mut rx) = receiver else {
            // In place: only the pruning.
            loop {
                prune.tick().await;
                self.prune().await;
            }
        };
        let mut batch = Vec::with_capacity(256);
        loop {
            tokio::select! {
                n = rx.recv_many(&mut batch, 256) => {
                    if n == 0 {
                        return;
                    }
                    let me = self.clone();
                    let steps = std::mem::take(&mut batch);
                    let _ = tokio::task::spawn_blocking(move || {
                        for step in &steps {
                            me.write(step);
                        }
                    })
                    .await;
                }
                _ = prune.tick() => self.prune().await,
            }
        }
    }

    async fn prune(self: &Arc<Self>) {
        let ms = u64::try_from(self.retention.as_millis()).unwrap_or(u64::MAX);
        let before = crate::history::now_ms().saturating_sub(ms);
        let store = self.store.clone();
        match tokio::task::spawn_blocking(move || store.prune_loops(before)).await {
            Ok(Ok(n)) if n > 0 => {
                tracing::info!(target: "loopguard::serve", "loop history: {n} loops older than the retention forgotten");
            }
            Ok(Err(e)) => tracing::warn!(target: "loopguard::serve", "loop history: pruning: {e}"),
            _ => {}
        }
    }

    /// Waits (up to `limit`) until the queue is empty: on shutdown, and for tests.
    pub(crate) async fn drain(&self, limit: Duration) {
        let Some(tx) = &self.queue else { return };
        let start = std::time::Instant::now();
        while tx.capacity() < QUEUE && start.elapsed() < limit {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The parameters of a query string, decoded, last one wins.
pub(crate) fn params(query: Option<&str>) -> std::collections::HashMap<String, String> {
    form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .into_owned()
        .collect()
}

/// `since`: milliseconds since the epoch, an RFC 3339 time, or a duration back from now
/// (`1h`, `7d`).
pub(crate) fn parse_since(text: &str) -> Result<u64, ApiError> {
    let bad = || {
        ApiError::bad_request(
            format!("since {text:?}: expected milliseconds since the epoch, an RFC 3339 time (2026-12-07T10:00:00Z) or a duration back from now (90s, 30m, 1h, 7d)"),
            Some("since"),
        )
    };
    if let Ok(ms) = text.parse::<u64>() {
        return Ok(ms);
    }
    if let Ok(t) = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
    {
        return u64::try_from(t.unix_timestamp_nanos() / 1_000_000).map_err(|_| bad());
    }
    match loopguard_guard::parse_duration(text) {
        Ok(d) => Ok(now_ms().saturating_sub(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))),
        Err(_) => Err(bad()),
    }
}

/// `limit`: 1 to `max`.
pub(crate) fn parse_limit(
    p: &std::collections::HashMap<String, String>,
    max: usize,
) -> Result<Option<usize>, ApiError> {
    match p.get("limit") {
        None => Ok(None),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=max).contains(&n) => Ok(Some(n)),
            _ => Err(ApiError::bad_request(
                format!("limit {v:?}: expected a whole number from 1 to {max}"),
                Some("limit"),
            )),
        },
    }
}

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
    q.cursor = p.get("cursor").cloned();
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
        { "name": "since", "in": "query", "schema": { "type": "string" }, "description": "Loops active at or after this time: milliseconds since 1970, an RFC 3339 time, or a duration back from now (90s, 30m, 1h, 7d)" },
        { "name": "agent", "in": "query", "schema": { "type": "string" }, "description": "Only this agent's loops" },
        { "name": "service", "in": "query", "schema": { "type": "string" }, "description": "Only this service's loops (a trace's service.name)" },
        { "name": "session", "in": "query", "schema": { "type": "string" }, "description": "Only this session's loops" },
        { "name": "cursor", "in": "query", "schema": { "type": "string" }, "description": "The `next` of the previous page" }
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
