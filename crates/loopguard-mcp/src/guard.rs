//! The proxy's side of the guard: turns a `tools/call` and its result into events.md events,
//! applies them, logs each decision (tracing and `--log`), and tells the relay what to do.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use loopguard_core::Mode;
use loopguard_events::{parse_event, Action, Decision, Effect};
use loopguard_guard::{open_store, Guard, LoopStep, ToolProfile};

use crate::options::ProxyOptions;

/// Who made a call: the session and run the proxy assigned to the connection, the
/// JSON-RPC id of the request (as `callId`) and the tool's name.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallKey<'a> {
    pub session: &'a str,
    pub run: &'a str,
    pub call_id: &'a str,
    pub tool: &'a str,
}

/// What to do with a `tools/call` before it reaches the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Before {
    /// Forward it unchanged.
    Allow,
    /// Forward it; append this message to its result (an emitted warning).
    Warn(String),
    /// Do not forward it; answer with this message as an error result.
    Block(String),
    /// Ask the user whether it may run (`loopguard.onCritical: "ask"`, the run's first
    /// critical): forward it if they say yes, else answer with `message` as a block.
    Ask {
        /// The decision's message (the block message).
        message: String,
        /// The detector that found the loop.
        detector: &'static str,
        /// Its count.
        count: u64,
    },
}

/// The outcome of a forwarded call, as raw JSON.
#[derive(Debug)]
pub(crate) enum CallOutcome {
    /// The server's `CallToolResult` (the MCP profile hashes its `content`,
    /// `structuredContent` and `isError`).
    Result(String),
    /// The JSON-RPC error's message.
    Error(String),
}

/// How long an idle session is kept in the store.
const IDLE_TTL: Duration = Duration::from_secs(24 * 3600);

/// The guard shared by all connections of one proxy process.
pub(crate) struct GuardLayer {
    guard: Guard,
    mode: Mode,
    ask_timeout: Duration,
    line: AtomicU64,
    log: Option<Mutex<BufWriter<File>>>,
    /// `loopguard.alerts`: one per loop, queued (never waited for) and delivered by a task
    /// on the proxy's runtime.
    alerts: Option<loopguard_alerts::Alerts>,
}

impl std::fmt::Debug for GuardLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardLayer")
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl GuardLayer {
    pub(crate) fn new(options: &ProxyOptions) -> Result<Self, crate::McpError> {
        let log = match &options.log {
            Some(path) => {
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| {
                        crate::McpError::Io(format!("cannot open --log {}", path.display()), e)
                    })?;
                Some(Mutex::new(BufWriter::new(file)))
            }
            None => None,
        };
        let store = open_store(&options.store, IDLE_TTL)
            .map_err(|e| crate::McpError::Invalid(format!("--store {}: {e}", options.store)))?;
        let guard = Guard::builder()
            .config(options.config.clone())
            .profile(ToolProfile::Mcp)
            .mode(options.mode)
            .store(Arc::clone(&store))
            .build();
        let targets = options
            .config
            .loopguard
            .as_ref()
            .and_then(|l| l.alerts.as_deref())
            .map(loopguard_alerts::AlertTarget::from_configs)
            .unwrap_or_default();
        let alerts = (!targets.is_empty()).then(|| {
            loopguard_alerts::Alerts::new(targets, loopguard_alerts::AlertOptions::default())
        });
        Ok(GuardLayer {
            guard,
            mode: options.mode,
            ask_timeout: options.ask_timeout,
            line: AtomicU64::new(0),
            log,
            alerts,
        })
    }

    /// How long the user has to answer an ask (`--ask-timeout`).
    pub(crate) fn ask_timeout(&self) -> Duration {
        self.ask_timeout
    }

    /// The alerts' queue, when `loopguard.alerts` names targets.
    pub(crate) fn alerts(&self) -> Option<&loopguard_alerts::Alerts> {
        self.alerts.as_ref()
    }

    /// Queues the alerts a decision calls for: its loop step folded into the store's loop
    /// history, once per loop (`Alert::of_step`, as every front end does).
    fn alert(&self, alerts: &loopguard_alerts::Alerts, d: &Decision<'_>) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        let Some(step) = LoopStep::of(None, d, self.mode == Mode::Observe, now) else {
            return;
        };
        match loopguard_alerts::Alert::of_step(self.guard.store().as_ref(), &step) {
            Ok(list) => {
                for alert in list {
                    alerts.send(alert);
                }
            }
            Err(e) => {
                tracing::warn!(target: "loopguard::mcp", error = %e, "loop history (for alerts): the step is not recorded");
            }
        }
    }

    /// The before-call step for a `tools/call` request.
    pub(crate) fn before(&self, key: CallKey<'_>, args: &str) -> Before {
        let line = event_line("call", key, args, None);
        let mut action = Before::Allow;
        self.apply(&line, |d| {
            // Observe mode (shadow): decisions are logged, the model sees nothing of them
            // (every effect is `Proceed`). A call that ends the run is refused: the proxy has
            // no run to stop, and the engine refuses the run's later calls too.
            let Some(f) = &d.finding else { return };
            match Effect::of(d, self.mode) {
                // The relay asks through MCP elicitation when the client can be asked,
                // and refuses otherwise (docs/mcp.md).
                Effect::Ask => {
                    action = Before::Ask {
                        message: f.message.to_string(),
                        detector: f.detector.as_str(),
                        count: f.count,
                    }
                }
                Effect::Refuse | Effect::EndRun => action = Before::Block(f.message.to_string()),
                Effect::Notice => action = Before::Warn(f.message.to_string()),
                Effect::Proceed => {}
            }
        });
        action
    }

    /// The after-call step with the server's answer.
    pub(crate) fn after(&self, key: CallKey<'_>, args: &str, outcome: &CallOutcome) {
        let payload = match outcome {
            CallOutcome::Result(raw) => ("result", raw.clone()),
            CallOutcome::Error(message) => ("error", json_string(message)),
        };
        let line = event_line("outcome", key, args, Some((payload.0, &payload.1)));
        self.apply(&line, |_| {});
    }

    fn apply(&self, line: &[u8], inspect: impl FnOnce(&Decision<'_>)) {
        let n = self.line.fetch_add(1, Ordering::Relaxed) + 1; // for error messages
        let event = match parse_event(line, n) {
            Ok(event) => event,
            Err(e) => {
                // Fail open: the call goes on, loudly.
                tracing::error!(target: "loopguard::mcp", error = %e, "event not applied; the call is forwarded");
                return;
            }
        };
        let mut record = Vec::new();
        match self.guard.apply(None, &event, |d| d) {
            Ok(decision) => {
                trace_decision(&decision);
                if self.log.is_some() {
                    decision.write_record(&mut record);
                }
                if let Some(alerts) = &self.alerts {
                    self.alert(alerts, &decision);
                }
                inspect(&decision);
            }
            Err(e) => {
                // Fail open: a store that cannot be reached must not stop the tools.
                tracing::error!(target: "loopguard::mcp", error = %e, "the guard could not decide; the call is forwarded");
                return;
            }
        }
        if let Some(log) = &self.log {
            let mut log = log.lock().unwrap_or_else(|p| p.into_inner());
            if let Err(e) = log.write_all(&record).and_then(|()| log.flush()) {
                tracing::error!(target: "loopguard::mcp", error = %e, "cannot write the --log file");
            }
        }
    }
}

/// One tracing event per decision. A warning, block or abort the model is shown (or, in
/// observe mode, would be shown) is one `WARN`/`ERROR` line, the default of `loopguard mcp`'s
/// stderr; everything else (allowed calls, warnings the de-duplication kept back, outcomes)
/// is `INFO`/`DEBUG`, shown with `-v`.
fn trace_decision(d: &Decision<'_>) {
    let session = d.session.to_string();
    let tool = d.tool.as_ref().map(|t| t.to_string()).unwrap_or_default();
    let Some(f) = &d.finding else {
        tracing::debug!(
            target: "loopguard::mcp",
            session = %session,
            call_id = d.call_id.as_ref().map(|c| c.to_string()).as_deref(),
            tool = %tool,
            decision = d.action.as_str(),
            "tools/call"
        );
        return;
    };
    // What the model is shown in enforce mode (in observe mode, would be shown).
    let shown = Effect::of(d, Mode::Enforce) != Effect::Proceed;
    let (action, detector, count) = (d.decision_str(), f.detector.as_str(), f.count);
    let message = &f.message;
    if !shown {
        tracing::info!(
            target: "loopguard::mcp",
            "{action} (not shown: {}) {tool} in {session} ({detector}, count {count}): {message}",
            if d.action == Action::Warn { "already warned" } else { "recorded" }
        );
    } else if d.action == Action::Warn {
        tracing::warn!(target: "loopguard::mcp", "{action} {tool} in {session} ({detector}, count {count}): {message}");
    } else {
        tracing::error!(target: "loopguard::mcp", "{action} {tool} in {session} ({detector}, count {count}): {message}");
    }
}

/// A JSON string literal.
pub(crate) fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// One events.md line. `args` and the payload are raw JSON taken from valid messages.
fn event_line(kind: &str, key: CallKey<'_>, args: &str, payload: Option<(&str, &str)>) -> Vec<u8> {
    let mut out = String::with_capacity(96 + args.len() + payload.map_or(0, |p| p.1.len()));
    out.push_str("{\"type\":\"");
    out.push_str(kind);
    out.push_str("\",\"session\":");
    out.push_str(&json_string(key.session));
    out.push_str(",\"run\":");
    out.push_str(&json_string(key.run));
    out.push_str(",\"callId\":");
    out.push_str(&json_string(key.call_id));
    out.push_str(",\"tool\":");
    out.push_str(&json_string(key.tool));
    out.push_str(",\"args\":");
    out.push_str(args);
    if let Some((field, raw)) = payload {
        out.push_str(",\"");
        out.push_str(field);
        out.push_str("\":");
        out.push_str(raw);
    }
    out.push('}');
    out.into_bytes()
}
