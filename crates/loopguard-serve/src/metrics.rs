//! `GET /metrics`: Prometheus text exposition, through the `prometheus-client` crate.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// What a decision is counted by in `loopguard_decisions_total` (with its tenant).
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(crate) struct DecisionLabels {
    pub decision: &'static str,
    pub detector: &'static str,
    pub level: &'static str,
}

/// The families whose series carry a `tenant` label (always their first label, which
/// [`crate::exposition`] relies on to show a tenant only its own series).
pub(crate) const PER_TENANT: [&str; 3] = [
    "loopguard_decisions",
    "loopguard_trace_loops",
    "loopguard_trace_spans",
];

/// Labels of `loopguard_decisions_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TenantDecisionLabels {
    /// The bearer token's tenant (empty without `--tokens`). First: see [`PER_TENANT`].
    tenant: String,
    decision: &'static str,
    detector: &'static str,
    level: &'static str,
}

/// Labels of `loopguard_trace_loops_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TraceLoopLabels {
    /// First: see [`PER_TENANT`].
    tenant: String,
    detector: &'static str,
    level: &'static str,
    service: String,
    agent: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SpanLabels {
    /// First: see [`PER_TENANT`].
    tenant: String,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    route: &'static str,
    status: u16,
}

/// Request latency buckets, in seconds: 50 µs to 2.5 s.
const BUCKETS: [f64; 14] = [
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5,
];

fn latency_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// Every metric the server exports.
pub(crate) struct Metrics {
    registry: Registry,
    decisions: Family<TenantDecisionLabels, Counter>,
    latency: Family<RouteLabels, Histogram, fn() -> Histogram>,
    requests: Family<StatusLabels, Counter>,
    store_errors: Counter,
    store_retries: Counter,
    sessions: Gauge,
    trace_loops: Family<TraceLoopLabels, Counter>,
    trace_spans: Family<SpanLabels, Counter>,
    late_spans: Counter,
    traces_buffered: Gauge,
    connection_cap: Counter,
    /// The loop history's and the alerts' counters.
    pub background: crate::history::BackgroundMetrics,
    /// What `store_retries` last saw from the store's own counter.
    retries_seen: AtomicU64,
    render_lock: Mutex<()>,
}

impl Metrics {
    pub(crate) fn new() -> Metrics {
        let mut registry = Registry::default();
        let decisions = Family::<TenantDecisionLabels, Counter>::default();
        registry.register(
            "loopguard_decisions",
            "Decisions made, by tenant, decision, detector and level (tenant empty without --tokens; detector and level empty when none fired)",
            decisions.clone(),
        );
        let latency: Family<RouteLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(latency_histogram);
        registry.register(
            "loopguard_http_request_duration_seconds",
            "Time from request to response, by route",
            latency.clone(),
        );
        let requests = Family::<StatusLabels, Counter>::default();
        registry.register(
            "loopguard_http_requests",
            "Requests answered, by route and status",
            requests.clone(),
        );
        let store_errors = Counter::default();
        registry.register(
            "loopguard_store_errors",
            "Store operations that failed (the request was answered 503)",
            store_errors.clone(),
        );
        let store_retries = Counter::default();
        registry.register(
            "loopguard_store_retries",
            "Optimistic-concurrency retries of the store (a concurrent writer changed the session first)",
            store_retries.clone(),
        );
        let sessions = Gauge::default();
        registry.register(
            "loopguard_sessions",
            "Sessions held by the store (all tenants), counted when scraped (with Redis, a scan of its keys at most every 30 s)",
            sessions.clone(),
        );
        let trace_loops = Family::<TraceLoopLabels, Counter>::default();
        registry.register(
            "loopguard_trace_loops",
            "Tool calls from OTLP traces (POST /v1/traces) found in a loop (warned or blocked in observe mode), by tenant, detector, level, service (service.name) and agent (gen_ai.agent.name)",
            trace_loops.clone(),
        );
        let trace_spans = Family::<SpanLabels, Counter>::default();
        registry.register(
            "loopguard_trace_spans",
            "Spans received on POST /v1/traces, by tenant and kind (tool: a tool execution; other)",
            trace_spans.clone(),
        );
        let late_spans = Counter::default();
        registry.register(
            "loopguard_trace_late_spans",
            "Spans received after their trace was applied (applied after the spans already applied)",
            late_spans.clone(),
        );
        let traces_buffered = Gauge::default();
        registry.register(
            "loopguard_traces_buffered",
            "Traces received on POST /v1/traces waiting for their spans to stop arriving (--trace-wait)",
            traces_buffered.clone(),
        );
        let connection_cap = Counter::default();
        registry.register(
            "loopguard_http_connection_cap_reached",
            "Times the listener reached --max-connections and stopped accepting until a connection closed",
            connection_cap.clone(),
        );
        let background = crate::history::BackgroundMetrics::register(&mut registry);
        Metrics {
            connection_cap,
            background,
            traces_buffered,
            trace_loops,
            trace_spans,
            late_spans,
            registry,
            decisions,
            latency,
            requests,
            store_errors,
            store_retries,
            sessions,
            retries_seen: AtomicU64::new(0),
            render_lock: Mutex::new(()),
        }
    }

    /// A decision for `tenant` (`None` without `--tokens`).
    pub(crate) fn decision(&self, tenant: Option<&str>, labels: DecisionLabels) {
        self.decisions
            .get_or_create(&TenantDecisionLabels {
                tenant: tenant.unwrap_or_default().to_string(),
                decision: labels.decision,
                detector: labels.detector,
                level: labels.level,
            })
            .inc();
    }

    pub(crate) fn request(&self, route: &'static str, status: u16, elapsed: Duration) {
        self.latency
            .get_or_create(&RouteLabels { route })
            .observe(elapsed.as_secs_f64());
        self.requests
            .get_or_create(&StatusLabels { route, status })
            .inc();
    }

    /// A trace tool call warned or blocked.
    pub(crate) fn trace_loop(
        &self,
        tenant: Option<&str>,
        detector: &'static str,
        level: &'static str,
        service: &str,
        agent: &str,
    ) {
        self.trace_loops
            .get_or_create(&TraceLoopLabels {
                tenant: tenant.unwrap_or_default().to_string(),
                detector,
                level,
                service: service.to_string(),
                agent: agent.to_string(),
            })
            .inc();
    }

    /// Spans received: `tools` tool executions and `other` spans.
    pub(crate) fn trace_spans(&self, tenant: Option<&str>, tools: u64, other: u64) {
        let tenant = tenant.unwrap_or_default().to_string();
        self.trace_spans
            .get_or_create(&SpanLabels {
                tenant: tenant.clone(),
                kind: "tool",
            })
            .inc_by(tools);
        self.trace_spans
            .get_or_create(&SpanLabels {
                tenant,
                kind: "other",
            })
            .inc_by(other);
    }

    /// Traces waiting in the buffer.
    pub(crate) fn traces_buffered(&self, n: usize) {
        self.traces_buffered
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// Spans that arrived after their trace was applied.
    pub(crate) fn late_spans(&self, n: u64) {
        self.late_spans.inc_by(n);
    }

    /// The listener reached its connection cap.
    pub(crate) fn connection_cap(&self) {
        self.connection_cap.inc();
    }

    pub(crate) fn store_error(&self) {
        self.store_errors.inc();
    }

    /// Renders OpenMetrics 1.0 text; `retries_total` is the store's own retry counter and
    /// `sessions` the session count (when the store could count them).
    /// [`crate::exposition`] turns it into what the scraper asked for.
    pub(crate) fn render(&self, retries_total: u64, sessions: Option<u64>) -> String {
        let _guard = self.render_lock.lock().unwrap_or_else(|e| e.into_inner());
        let seen = self.retries_seen.swap(retries_total, Ordering::Relaxed);
        if retries_total > seen {
            self.store_retries.inc_by(retries_total - seen);
        }
        if let Some(n) = sessions {
            self.sessions.set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}
