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

use loopguard_guard::{LoopChange, LoopStep, Store, StoreError};
use tokio::sync::mpsc;

use crate::error::ApiError;

/// Steps waiting for a store that blocks (SQLite, Redis), at most.
pub(crate) const QUEUE: usize = 10_000;
/// Default `--loop-retention`: 30 days.
pub const DEFAULT_LOOP_RETENTION: Duration = Duration::from_secs(30 * 24 * 3600);
/// How often loops older than the retention are forgotten.
const PRUNE_EVERY: Duration = Duration::from_secs(600);

/// What is told of each change the store made (the alerts).
pub(crate) type OnChange = Arc<dyn Fn(&LoopChange) + Send + Sync>;

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
    pub on_change: Option<OnChange>,
    /// Told of every step as it comes (the dashboard's decisions per minute).
    tap: Option<Tap>,
}

/// What is told of each step before it is recorded (the dashboard).
pub(crate) type Tap = Arc<dyn Fn(&LoopStep) + Send + Sync>;

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
        on_change: Option<OnChange>,
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
            tap: None,
        }
    }

    /// Tells `tap` of every step, before it is recorded.
    pub(crate) fn with_tap(mut self, tap: Tap) -> History {
        self.tap = Some(tap);
        self
    }

    /// Records a step: in place, or queued (never waiting).
    pub(crate) fn observe(&self, step: LoopStep) {
        if let Some(tap) = &self.tap {
            tap(&step);
        }
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
        // A time before 1970 asks for every loop there is.
        return Ok(u64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(0));
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

/// A counter that mirrors a running total kept elsewhere (the history's and the alerts'
/// own counters), brought up to date when `/metrics` is scraped.
#[derive(Debug, Default)]
struct Mirror {
    counter: prometheus_client::metrics::counter::Counter,
    seen: AtomicU64,
}

impl Mirror {
    fn sync(&self, total: u64) {
        let seen = self.seen.swap(total, Ordering::Relaxed);
        if total > seen {
            self.counter.inc_by(total - seen);
        }
    }
}

/// The loop history's and the alerts' metrics.
#[derive(Debug, Default)]
pub(crate) struct BackgroundMetrics {
    steps_dropped: Mirror,
    steps_failed: Mirror,
    alerts_delivered: Mirror,
    alerts_failed: Mirror,
    alerts_dropped: Mirror,
    alerts_retries: Mirror,
}

impl BackgroundMetrics {
    pub(crate) fn register(
        registry: &mut prometheus_client::registry::Registry,
    ) -> BackgroundMetrics {
        let m = BackgroundMetrics::default();
        for (name, help, mirror) in [
            (
                "loopguard_loop_steps_dropped",
                "Loop history steps dropped because the store's queue was full",
                &m.steps_dropped,
            ),
            (
                "loopguard_loop_steps_failed",
                "Loop history steps the store failed to record",
                &m.steps_failed,
            ),
            (
                "loopguard_alerts_delivered",
                "Alerts a receiver accepted (2xx)",
                &m.alerts_delivered,
            ),
            (
                "loopguard_alerts_failed",
                "Alerts given up on (out of attempts, or a 4xx answer)",
                &m.alerts_failed,
            ),
            (
                "loopguard_alerts_dropped",
                "Alerts dropped because the alert queue was full",
                &m.alerts_dropped,
            ),
            (
                "loopguard_alerts_retries",
                "Alert deliveries tried again (no answer, 5xx or 429)",
                &m.alerts_retries,
            ),
        ] {
            registry.register(name, help, mirror.counter.clone());
        }
        m
    }

    /// Brings the counters up to date (before a scrape is rendered).
    pub(crate) fn sync(&self, history: &History, alerts: Option<&loopguard_alerts::Alerts>) {
        self.steps_dropped
            .sync(history.dropped.load(Ordering::Relaxed));
        self.steps_failed
            .sync(history.failed.load(Ordering::Relaxed));
        if let Some(a) = alerts {
            let s = a.stats();
            self.alerts_delivered.sync(s.delivered);
            self.alerts_failed.sync(s.failed);
            self.alerts_dropped.sync(s.dropped);
            self.alerts_retries.sync(s.retries);
        }
    }
}
