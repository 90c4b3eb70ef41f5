//! # loopguard-alerts
//!
//! Alerts that reach a person when loopguard stops a loop: webhooks in a generic JSON
//! shape, Slack's incoming-webhook shape and PagerDuty Events v2's, delivered from a bounded
//! queue by a background task, retried with backoff.
//!
//! The rules every front end gets from here:
//!
//! - **An alert never delays a decision.** [`Alerts::send`] only puts the alert on a queue
//!   (it never waits); a full queue drops the alert, logs it and counts it
//!   ([`AlertStats::dropped`]).
//! - **One alert per loop and event**, keyed by the loop's id (a loop history id,
//!   [`loopguard_guard::LoopStep::loop_id`], built from OpenClaw's `warningKey`): the same key
//!   and event sent again is ignored ([`AlertStats::duplicates`]).
//! - **A short-lived front end hands its alerts off**: a hook process lives for one tool
//!   call, so it writes its alerts to a [`Spool`] on disk (a durable queue, one file per
//!   delivery) and a detached delivery process empties it ([`Spool::deliver`]); a failed
//!   delivery stays in the spool and is tried again by a later one, a bounded number of
//!   times.
//! - **A desktop notification is opt-in** (`format: "desktop"`): the machine's own
//!   notifier command (`notify-send`, macOS `osascript`); a machine without one gets a
//!   logged warning.
//! - **A receiver that is down costs nothing else**: a delivery that fails (no connection,
//!   a timeout, a 5xx or 429 answer) is tried again after 0.5 s, 1 s, 2 s, … (at most
//!   [`AlertOptions::attempts`] times), while other deliveries go on; a 4xx other than 429 is
//!   not retried (the receiver will not change its mind).
//!
//! ```no_run
//! use loopguard_alerts::{Alert, AlertEvent, AlertOptions, AlertTarget, Alerts};
//! # async fn run() {
//! let alerts = Alerts::new(vec![AlertTarget::webhook("https://hooks.example.com/loopguard")], AlertOptions::default());
//! tokio::spawn(alerts.clone().deliver()); // the background task
//! let mut alert = Alert::new(AlertEvent::Block, "acme/s1#read:abc", "s1");
//! alert.tool = Some("read".into());
//! alerts.send(alert); // returns at once
//! # }
//! ```

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use loopguard_core::AlertConfig;
use loopguard_guard::{LoopChange, LoopEnd};
use serde_json::{json, Value};
use tokio::sync::{mpsc, Semaphore};

mod desktop;
mod spool;

pub use spool::{Spool, SpoolOptions, SpoolOutcome};

/// What an alert is about (`loopguard.alerts[].on`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum AlertEvent {
    /// A loop was blocked (or, in observe mode, would have been): `block`.
    Block,
    /// loopguard ended an agent's run: `end-run`.
    EndRun,
    /// A budget was spent: `budget`.
    Budget,
}

impl AlertEvent {
    /// The config word.
    pub fn as_str(self) -> &'static str {
        match self {
            AlertEvent::Block => "block",
            AlertEvent::EndRun => "end-run",
            AlertEvent::Budget => "budget",
        }
    }

    /// The event a config word names.
    pub fn parse(word: &str) -> Option<AlertEvent> {
        match word {
            "block" => Some(AlertEvent::Block),
            "end-run" => Some(AlertEvent::EndRun),
            "budget" => Some(AlertEvent::Budget),
            _ => None,
        }
    }
}

/// The body a receiver expects (`loopguard.alerts[].format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AlertFormat {
    /// loopguard's own JSON ([`payload`]): `json`.
    Json,
    /// A Slack incoming webhook's `{"text": …, "blocks": […]}`: `slack`.
    Slack,
    /// PagerDuty Events API v2 (`POST https://events.pagerduty.com/v2/enqueue`), the routing
    /// key taken from the URL's `routing_key` query parameter: `pagerduty`.
    PagerDuty,
    /// A desktop notification on this machine, without a URL (`notify-send` on Linux,
    /// `osascript` on macOS): `desktop`.
    Desktop,
}

impl AlertFormat {
    /// The format a config word names.
    pub fn parse(word: &str) -> Option<AlertFormat> {
        match word {
            "json" => Some(AlertFormat::Json),
            "slack" => Some(AlertFormat::Slack),
            "pagerduty" => Some(AlertFormat::PagerDuty),
            "desktop" => Some(AlertFormat::Desktop),
            _ => None,
        }
    }

    /// The config word.
    pub fn as_str(self) -> &'static str {
        match self {
            AlertFormat::Json => "json",
            AlertFormat::Slack => "slack",
            AlertFormat::PagerDuty => "pagerduty",
            AlertFormat::Desktop => "desktop",
        }
    }
}

/// Where alerts go, in which shape, for which events.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AlertTarget {
    /// The URL posted to.
    pub url: String,
    /// The body's shape.
    pub format: AlertFormat,
    /// The events sent there.
    pub on: Vec<AlertEvent>,
}

impl AlertTarget {
    /// A generic JSON webhook for every event (`serve --alert-webhook URL`).
    pub fn webhook(url: impl Into<String>) -> AlertTarget {
        AlertTarget {
            url: url.into(),
            format: AlertFormat::Json,
            on: vec![AlertEvent::Block, AlertEvent::EndRun, AlertEvent::Budget],
        }
    }

    /// A desktop notification on this machine for every event.
    pub fn desktop() -> AlertTarget {
        AlertTarget {
            url: String::new(),
            format: AlertFormat::Desktop,
            on: vec![AlertEvent::Block, AlertEvent::EndRun, AlertEvent::Budget],
        }
    }

    /// Where it goes, for a log line: the URL, or `desktop`.
    pub fn destination(&self) -> &str {
        if self.format == AlertFormat::Desktop {
            "desktop"
        } else {
            &self.url
        }
    }

    /// A target of the config file's `loopguard.alerts` (checked by the config loader, so
    /// its words are known; an unknown one is skipped with a warning all the same).
    pub fn from_config(c: &AlertConfig) -> AlertTarget {
        let format = AlertFormat::parse(&c.format).unwrap_or_else(|| {
            tracing::warn!(target: "loopguard::alerts", "alert format {:?} unknown: json used", c.format);
            AlertFormat::Json
        });
        let on = if c.on.is_empty() {
            vec![AlertEvent::Block, AlertEvent::EndRun, AlertEvent::Budget]
        } else {
            c.on.iter().filter_map(|w| AlertEvent::parse(w)).collect()
        };
        AlertTarget {
            url: c.url.clone(),
            format,
            on,
        }
    }

    /// The targets of a config's `loopguard.alerts`.
    pub fn from_configs(c: &[AlertConfig]) -> Vec<AlertTarget> {
        c.iter().map(AlertTarget::from_config).collect()
    }
}

/// One alert: what happened, to which loop, in a person's words.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Alert {
    /// What happened.
    pub event: AlertEvent,
    /// The loop's id (or the budget's subject): an alert per key and event.
    pub key: String,
    /// The tenant, when there is one.
    pub tenant: Option<String>,
    /// The session.
    pub session: String,
    /// The agent, when known.
    pub agent: Option<String>,
    /// The service, when known.
    pub service: Option<String>,
    /// The tool that looped.
    pub tool: Option<String>,
    /// The detector that fired.
    pub detector: Option<String>,
    /// The message the model was given.
    pub message: Option<String>,
    /// Calls of the loop from its first warning on.
    pub calls: u64,
    /// Tokens spent on them, when known.
    pub tokens: Option<u64>,
    /// When (ms since the epoch).
    pub ts_ms: u64,
    /// `true` for observe mode (the call ran; loopguard would have blocked it).
    pub observe: bool,
}

impl Alert {
    /// An alert with only its event, key and session.
    pub fn new(event: AlertEvent, key: impl Into<String>, session: impl Into<String>) -> Alert {
        Alert {
            event,
            key: key.into(),
            tenant: None,
            session: session.into(),
            agent: None,
            service: None,
            tool: None,
            detector: None,
            message: None,
            calls: 0,
            tokens: None,
            ts_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                .unwrap_or(0),
            observe: false,
        }
    }

    /// The alerts a loop history change calls for: a block when the step first blocked
    /// the loop, an end-run when it ended the run; nothing otherwise (a warning, a loop's
    /// later blocked calls).
    pub fn of_change(change: &LoopChange) -> Vec<Alert> {
        let r = &change.record;
        let make = |event| Alert {
            event,
            key: r.id.clone(),
            tenant: r.tenant.clone(),
            session: r.session.clone(),
            agent: r.agent.clone(),
            service: r.service.clone(),
            tool: Some(r.tool.clone()),
            detector: Some(r.detector.clone()),
            message: r.message.clone(),
            calls: r.calls,
            tokens: r.tokens,
            ts_ms: r.last_ms,
            observe: r.end == LoopEnd::WouldBlock,
        };
        let mut out = Vec::new();
        if change.blocked {
            // A spent budget is its own event (`on: ["budget"]`), not a loop's block.
            out.push(make(if r.detector == "budget" {
                AlertEvent::Budget
            } else {
                AlertEvent::Block
            }));
        }
        if change.ended_run {
            out.push(make(AlertEvent::EndRun));
        }
        out
    }

    /// The alerts a decision's loop step calls for, once per loop: the step is folded into
    /// `store`'s loop history (atomically, so front ends sharing a store agree on which
    /// step first blocked a loop), and the change read with [`Alert::of_change`]. Every
    /// front end that alerts (the hooks, the MCP proxy, the packages) goes through here.
    ///
    /// ```
    /// use loopguard_alerts::{Alert, AlertEvent};
    /// use loopguard_guard::{LoopAction, LoopStep, MemoryOptions, MemoryStore};
    /// # fn main() -> Result<(), loopguard_guard::StoreError> {
    /// let store = MemoryStore::new(MemoryOptions::default());
    /// let step = LoopStep::new("s1", "read", "generic_repeat", "read:abc", LoopAction::Block, 1_000);
    /// let first = Alert::of_step(&store, &step)?;
    /// assert_eq!(first.len(), 1);
    /// assert_eq!(first[0].event, AlertEvent::Block);
    /// // The loop's second blocked call: nothing more to say.
    /// assert!(Alert::of_step(&store, &step)?.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    pub fn of_step(
        store: &dyn loopguard_guard::Store,
        step: &loopguard_guard::LoopStep,
    ) -> Result<Vec<Alert>, loopguard_guard::StoreError> {
        Ok(Alert::of_change(&store.record_loop(step)?))
    }

    /// One line for a person.
    pub fn summary(&self) -> String {
        let who = match (&self.agent, &self.service) {
            (Some(a), _) => format!("agent {a}"),
            (None, Some(s)) => format!("service {s}"),
            (None, None) => "an agent".to_string(),
        };
        let tool = self.tool.as_deref().unwrap_or("a tool");
        let what = match (self.event, self.observe) {
            (AlertEvent::Block, false) => "loopguard blocked a loop",
            (AlertEvent::Block, true) => "loopguard would have blocked a loop (observe mode)",
            (AlertEvent::EndRun, _) => "loopguard ended a run",
            (AlertEvent::Budget, _) => "a loopguard budget was spent",
        };
        let tenant = self
            .tenant
            .as_deref()
            .map(|t| format!(" (tenant {t})"))
            .unwrap_or_default();
        format!(
            "{what}: {who} called {tool} in session {}{tenant}; {} calls since the first warning{}",
            self.session,
            self.calls,
            self.tokens
                .map(|t| format!(", {t} tokens"))
                .unwrap_or_default()
        )
    }
}

/// The body of `alert` in `format`.
///
/// ```
/// use loopguard_alerts::{payload, Alert, AlertEvent, AlertFormat};
/// let alert = Alert::new(AlertEvent::Block, "-/s#read:1", "s");
/// assert_eq!(payload(&alert, AlertFormat::Json, "")["event"], "block");
/// assert!(payload(&alert, AlertFormat::Slack, "")["text"].as_str().unwrap().contains("blocked a loop"));
/// let pd = payload(&alert, AlertFormat::PagerDuty, "https://events.pagerduty.com/v2/enqueue?routing_key=R");
/// assert_eq!((pd["routing_key"].as_str(), pd["event_action"].as_str(), pd["dedup_key"].as_str()), (Some("R"), Some("trigger"), Some("loopguard:block:-/s#read:1")));
/// ```
pub fn payload(alert: &Alert, format: AlertFormat, url: &str) -> Value {
    let summary = alert.summary();
    match format {
        AlertFormat::Json => json!({
            "source": "loopguard",
            "event": alert.event.as_str(),
            "key": alert.key,
            "summary": summary,
            "tenant": alert.tenant,
            "session": alert.session,
            "agent": alert.agent,
            "service": alert.service,
            "tool": alert.tool,
            "detector": alert.detector,
            "message": alert.message,
            "calls": alert.calls,
            "tokens": alert.tokens,
            "observe": alert.observe,
            "ts": alert.ts_ms,
        }),
        AlertFormat::Slack => {
            let mut fields =
                vec![json!({"type": "mrkdwn", "text": format!("*Session*\n{}", alert.session)})];
            for (name, v) in [
                ("Agent", &alert.agent),
                ("Service", &alert.service),
                ("Tool", &alert.tool),
                ("Detector", &alert.detector),
                ("Tenant", &alert.tenant),
            ] {
                if let Some(v) = v {
                    fields.push(json!({"type": "mrkdwn", "text": format!("*{name}*\n{v}")}));
                }
            }
            let mut blocks = vec![
                json!({"type": "section", "text": {"type": "mrkdwn", "text": format!(":rotating_light: {summary}")}}),
                json!({"type": "section", "fields": fields}),
            ];
            if let Some(m) = &alert.message {
                blocks
                    .push(json!({"type": "context", "elements": [{"type": "mrkdwn", "text": m}]}));
            }
            json!({ "text": summary, "blocks": blocks })
        }
        AlertFormat::PagerDuty => {
            let routing_key = reqwest::Url::parse(url)
                .ok()
                .and_then(|u| {
                    u.query_pairs()
                        .find(|(k, _)| k == "routing_key")
                        .map(|(_, v)| v.into_owned())
                })
                .unwrap_or_default();
            json!({
                "routing_key": routing_key,
                "event_action": "trigger",
                "dedup_key": format!("loopguard:{}:{}", alert.event.as_str(), alert.key),
                "payload": {
                    "summary": summary,
                    "source": alert.service.clone().or_else(|| alert.agent.clone()).unwrap_or_else(|| "loopguard".to_string()),
                    "severity": if alert.observe { "warning" } else { "error" },
                    "component": alert.tool,
                    "group": alert.agent,
                    "class": alert.detector,
                    "custom_details": {
                        "session": alert.session, "tenant": alert.tenant, "calls": alert.calls,
                        "tokens": alert.tokens, "message": alert.message, "key": alert.key
                    }
                }
            })
        }
        AlertFormat::Desktop => json!({ "title": desktop::title(alert), "body": summary }),
    }
}

/// How the queue and the deliveries behave.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AlertOptions {
    /// Alerts waiting at most; more are dropped (default 1,000).
    pub queue: usize,
    /// Deliveries in flight at most (default 16).
    pub in_flight: usize,
    /// Tries per delivery (default 6: over about 15 s of backoff).
    pub attempts: u32,
    /// The first pause before a retry, doubled each time (default 500 ms).
    pub backoff: Duration,
    /// The longest pause (default 30 s).
    pub max_backoff: Duration,
    /// One try's time limit, connection included (default 10 s).
    pub timeout: Duration,
}

impl Default for AlertOptions {
    fn default() -> Self {
        AlertOptions {
            queue: 1000,
            in_flight: 16,
            attempts: 6,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            timeout: Duration::from_secs(10),
        }
    }
}

/// Counters of an [`Alerts`] queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AlertStats {
    /// Deliveries a receiver accepted (2xx).
    pub delivered: u64,
    /// Deliveries given up on (out of attempts, or a 4xx).
    pub failed: u64,
    /// Tries that failed and were tried again.
    pub retries: u64,
    /// Alerts dropped because the queue was full.
    pub dropped: u64,
    /// Alerts ignored as already sent (the same key and event).
    pub duplicates: u64,
}

/// Why one delivery failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeliveryError {
    /// No answer: refused, reset, timed out.
    #[error("{url}: {message}")]
    Transport {
        /// The URL.
        url: String,
        /// What happened.
        message: String,
    },
    /// The receiver answered with a status that is not 2xx.
    #[error("{url}: answered {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status.
        status: u16,
    },
    /// The desktop notifier is missing or failed (not retried: the machine has no
    /// desktop to show it on).
    #[error("desktop notification: {command}: {message}")]
    Notifier {
        /// The command (`notify-send`, `osascript`).
        command: String,
        /// What happened.
        message: String,
    },
}

impl DeliveryError {
    /// Whether trying again may help: no answer, a 5xx, a 429.
    pub fn is_retryable(&self) -> bool {
        match self {
            DeliveryError::Transport { .. } => true,
            DeliveryError::Status { status, .. } => *status >= 500 || *status == 429,
            DeliveryError::Notifier { .. } => false,
        }
    }
}

/// Keys remembered for de-duplication, at most.
const REMEMBERED: usize = 100_000;

/// The alerts already queued, by key and event, and the order they came in (the oldest are
/// forgotten first).
#[derive(Default)]
struct Sent {
    keys: HashSet<(String, AlertEvent)>,
    order: VecDeque<(String, AlertEvent)>,
}

#[derive(Default)]
struct Counters {
    delivered: AtomicU64,
    failed: AtomicU64,
    retries: AtomicU64,
    dropped: AtomicU64,
    duplicates: AtomicU64,
}

struct Inner {
    targets: Vec<AlertTarget>,
    opts: AlertOptions,
    client: reqwest::Client,
    tx: mpsc::Sender<Alert>,
    rx: Mutex<Option<mpsc::Receiver<Alert>>>,
    sent: Mutex<Sent>,
    counters: Counters,
    in_flight: Arc<Semaphore>,
}

/// A queue of alerts and its delivery: cheap to clone (a handle), `Send + Sync`.
#[derive(Clone)]
pub struct Alerts {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Alerts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Alerts")
            .field("targets", &self.inner.targets.len())
            .field("stats", &self.stats())
            .finish()
    }
}

impl Alerts {
    /// A queue for `targets`. Nothing is delivered until [`Alerts::deliver`] runs (spawn
    /// it on a tokio runtime).
    pub fn new(targets: Vec<AlertTarget>, opts: AlertOptions) -> Alerts {
        let (tx, rx) = mpsc::channel(opts.queue.max(1));
        // https:// receivers: rustls with ring, as the rest of loopguard uses (a provider
        // the process installed first is kept).
        let client = client(opts.timeout);
        Alerts {
            inner: Arc::new(Inner {
                in_flight: Arc::new(Semaphore::new(opts.in_flight.max(1))),
                targets,
                opts,
                client,
                tx,
                rx: Mutex::new(Some(rx)),
                sent: Mutex::new(Sent::default()),
                counters: Counters::default(),
            }),
        }
    }

    /// The targets.
    pub fn targets(&self) -> &[AlertTarget] {
        &self.inner.targets
    }

    /// Queues an alert for every target that takes its event, without waiting. `false`
    /// when it was not queued: no target takes it, it was sent before (the same key and
    /// event), or the queue is full (logged, and counted in [`AlertStats::dropped`]).
    pub fn send(&self, alert: Alert) -> bool {
        let inner = &self.inner;
        if !inner.targets.iter().any(|t| t.on.contains(&alert.event)) {
            return false;
        }
        let id = (alert.key.clone(), alert.event);
        {
            let mut sent = inner.sent.lock().unwrap_or_else(PoisonError::into_inner);
            if sent.keys.contains(&id) {
                inner.counters.duplicates.fetch_add(1, Ordering::Relaxed);
                return false;
            }
            sent.keys.insert(id.clone());
            sent.order.push_back(id.clone());
            while sent.order.len() > REMEMBERED {
                if let Some(old) = sent.order.pop_front() {
                    sent.keys.remove(&old);
                }
            }
        }
        match inner.tx.try_send(alert) {
            Ok(()) => true,
            Err(e) => {
                let n = inner.counters.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                let alert = e.into_inner();
                tracing::warn!(
                    target: "loopguard::alerts",
                    "alert queue full ({} waiting): dropped the {} alert of {} ({n} dropped so far; loopguard_alerts_dropped_total)",
                    inner.opts.queue, alert.event.as_str(), alert.key
                );
                false
            }
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> AlertStats {
        let c = &self.inner.counters;
        AlertStats {
            delivered: c.delivered.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
            retries: c.retries.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
            duplicates: c.duplicates.load(Ordering::Relaxed),
        }
    }

    /// Alerts queued and not yet picked up.
    pub fn waiting(&self) -> usize {
        self.inner.opts.queue.max(1) - self.inner.tx.capacity()
    }

    /// Waits until every alert queued so far is delivered or given up, at most `limit`: for
    /// a front end that is about to exit (the MCP proxy when its client leaves). Retries
    /// still pausing when the limit comes are dropped with the process.
    pub async fn flush(&self, limit: Duration) {
        let start = tokio::time::Instant::now();
        let all = self.inner.opts.in_flight.max(1);
        while start.elapsed() < limit {
            if self.waiting() == 0 && self.inner.in_flight.available_permits() == all {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tracing::warn!(target: "loopguard::alerts", "{} alerts still queued or in flight after {limit:?}: not delivered", self.waiting());
    }

    /// The background delivery: takes alerts off the queue and delivers each to its
    /// targets (at most [`AlertOptions::in_flight`] at a time, each retried on its own),
    /// until every handle is dropped. Runs once per queue; a second call returns at once.
    pub async fn deliver(self) {
        let rx = self
            .inner
            .rx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(mut rx) = rx else { return };
        let inner = self.inner.clone();
        // The handle this task holds must not keep the queue open.
        drop(self);
        while let Some(alert) = rx.recv().await {
            for target in inner.targets.iter().filter(|t| t.on.contains(&alert.event)) {
                let Ok(permit) = inner.in_flight.clone().acquire_owned().await else {
                    return;
                };
                let (inner, target, alert) = (inner.clone(), target.clone(), alert.clone());
                tokio::spawn(async move {
                    deliver_with_retries(&inner, &target, &alert).await;
                    drop(permit);
                });
            }
        }
    }

    /// Delivers one alert to one target now (one try, no queue): for short-lived front
    /// ends (a hook process) that cannot keep a background task.
    pub async fn deliver_once(
        &self,
        target: &AlertTarget,
        alert: &Alert,
    ) -> Result<(), DeliveryError> {
        post(&self.inner.client, target, alert).await
    }
}

/// The HTTP client of the deliveries: one try's time limit, connection included.
fn client(timeout: Duration) -> reqwest::Client {
    // https:// receivers: rustls with ring, as the rest of loopguard uses (a provider
    // the process installed first is kept).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .user_agent(concat!("loopguard/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_default()
}

async fn deliver_with_retries(inner: &Inner, target: &AlertTarget, alert: &Alert) {
    let mut pause = inner.opts.backoff;
    for attempt in 1..=inner.opts.attempts.max(1) {
        match post(&inner.client, target, alert).await {
            Ok(()) => {
                inner.counters.delivered.fetch_add(1, Ordering::Relaxed);
                return;
            }
            Err(e) if e.is_retryable() && attempt < inner.opts.attempts => {
                inner.counters.retries.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(target: "loopguard::alerts", "alert {}: {e}; trying again in {pause:?}", alert.key);
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(inner.opts.max_backoff);
            }
            Err(e) => {
                inner.counters.failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(target: "loopguard::alerts", "the {} alert of {} was not delivered after {attempt} tries: {e}", alert.event.as_str(), alert.key);
                return;
            }
        }
    }
}

/// An error with its causes (`error sending request: client error (Connect): tcp connect
/// error: Connection refused`): reqwest's own message does not say why.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// One try of one delivery: a POST, or the desktop notifier run.
async fn post(
    client: &reqwest::Client,
    target: &AlertTarget,
    alert: &Alert,
) -> Result<(), DeliveryError> {
    if target.format == AlertFormat::Desktop {
        let alert = alert.clone();
        return tokio::task::spawn_blocking(move || desktop::notify(&alert))
            .await
            .unwrap_or_else(|e| {
                Err(DeliveryError::Notifier {
                    command: "notifier".to_string(),
                    message: e.to_string(),
                })
            });
    }
    let body = payload(alert, target.format, &target.url).to_string();
    let answer = client
        .post(&target.url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| DeliveryError::Transport {
            url: target.url.clone(),
            message: with_causes(&e),
        })?;
    let status = answer.status().as_u16();
    if (200..300).contains(&status) {
        Ok(())
    } else {
        Err(DeliveryError::Status {
            url: target.url.clone(),
            status,
        })
    }
}
