//! The spans of `POST /v1/traces` waiting for their trace to be complete (see
//! [`crate::otlp`] for when a trace is applied), and the limits on that wait.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use loopguard_adapters::spans::Span;

/// Default `--trace-wait`: how long a trace must be quiet before its spans are applied.
pub const DEFAULT_TRACE_WAIT: Duration = Duration::from_secs(5);
/// A trace is applied at the latest this many waits after its first span arrived, even if
/// spans keep coming.
pub const MAX_HOLD_FACTOR: u32 = 12;
/// At most this many spans wait in the buffer (all tenants); beyond, the oldest traces are
/// applied at once.
pub const MAX_BUFFERED_SPANS: usize = 200_000;
/// Applied traces are remembered this long, to recognise late spans.
const REMEMBER_APPLIED: Duration = Duration::from_secs(600);

type Key = (Option<Arc<str>>, String);

struct Pending {
    spans: Vec<Span>,
    first: Instant,
    last: Instant,
}

#[derive(Default)]
struct Inner {
    traces: HashMap<Key, Pending>,
    spans: usize,
    applied: HashMap<Key, Instant>,
}

/// Spans waiting for their trace to be complete.
pub(crate) struct TraceBuffer {
    wait: Duration,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for TraceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceBuffer")
            .field("wait", &self.wait)
            .finish_non_exhaustive()
    }
}

impl TraceBuffer {
    pub(crate) fn new(wait: Duration) -> TraceBuffer {
        TraceBuffer {
            wait,
            inner: Mutex::new(Inner::default()),
        }
    }

    pub(crate) fn wait(&self) -> Duration {
        self.wait
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Buffers spans; returns how many were late (their trace was already applied).
    pub(crate) fn add(&self, tenant: Option<Arc<str>>, spans: Vec<Span>, now: Instant) -> u64 {
        let mut inner = self.lock();
        let mut late = 0;
        for span in spans {
            let key = (tenant.clone(), buffer_key(&span));
            if inner.applied.contains_key(&key) {
                late += 1;
            }
            inner.spans += 1;
            let p = inner.traces.entry(key).or_insert_with(|| Pending {
                spans: Vec::new(),
                first: now,
                last: now,
            });
            p.last = now;
            p.spans.push(span);
        }
        late
    }

    /// Takes the traces that are ready (quiet for the wait, held for the longest, or the
    /// oldest when the buffer is over its bound); all of them with `all`.
    pub(crate) fn take_ready(&self, now: Instant, all: bool) -> Vec<(Option<Arc<str>>, Vec<Span>)> {
        let mut inner = self.lock();
        let wait = self.wait;
        let hold = wait * MAX_HOLD_FACTOR;
        let mut ready: Vec<Key> = inner
            .traces
            .iter()
            .filter(|(k, p)| {
                all || now.duration_since(p.first) >= hold
                    || (now.duration_since(p.last) >= wait
                        && (inner.applied.contains_key(*k) || !awaits_parent(&p.spans)))
            })
            .map(|(k, _)| k.clone())
            .collect();
        if inner.spans > MAX_BUFFERED_SPANS {
            let mut by_age: Vec<(Instant, Key)> = inner
                .traces
                .iter()
                .map(|(k, p)| (p.first, k.clone()))
                .collect();
            by_age.sort_by_key(|(t, _)| *t);
            let mut left = inner.spans;
            for (_, k) in by_age {
                if left <= MAX_BUFFERED_SPANS / 2 {
                    break;
                }
                if let Some(p) = inner.traces.get(&k) {
                    left -= p.spans.len();
                }
                if !ready.contains(&k) {
                    ready.push(k);
                }
            }
        }
        let mut out = Vec::new();
        for k in ready {
            if let Some(p) = inner.traces.remove(&k) {
                inner.spans -= p.spans.len();
                inner.applied.insert(k.clone(), now);
                out.push((k.0, p.spans));
            }
        }
        inner
            .applied
            .retain(|_, t| now.duration_since(*t) < REMEMBER_APPLIED);
        out
    }

    /// Traces waiting.
    pub(crate) fn traces(&self) -> usize {
        self.lock().traces.len()
    }
}

/// Whether a span of the trace names a parent that has not arrived. Spans are exported
/// when they end, so an agent's span (which names the agent and often the conversation)
/// arrives after all of its tool calls: a trace quiet for the wait because the agent is
/// waiting for a long model turn is held for its parent, up to the longest hold, so that
/// every call of a loop is judged and labelled with the same agent. (A late piece of a
/// trace already applied is not held: its first piece decided already.)
fn awaits_parent(spans: &[Span]) -> bool {
    let ids: std::collections::HashSet<&str> = spans
        .iter()
        .filter(|s| !s.span_id.is_empty())
        .map(|s| s.span_id.as_str())
        .collect();
    spans.iter().any(|s| {
        s.parent_id
            .as_deref()
            .is_some_and(|p| !p.is_empty() && !ids.contains(p))
    })
}

/// The trace a span is buffered with: its trace id, or for a log record outside any trace
/// its conversation (Codex's `conversation.id`).
fn buffer_key(span: &Span) -> String {
    if !span.trace_id.is_empty() {
        return span.trace_id.clone();
    }
    span.attr_str("conversation.id")
        .or_else(|| span.attr_str("gen_ai.conversation.id"))
        .map(|c| format!("conversation:{c}"))
        .unwrap_or_default()
}
