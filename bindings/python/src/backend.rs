//! The engine behind `loopguard.Guard`: [`loopguard_guard::Guard`] with the plain profile
//! (tools are OpenClaw's, as the event stream names them) in enforce mode.

use std::time::Duration;

use loopguard_core::Mode;
use loopguard_core::OpenClawConfig;
use loopguard_events::parse_event;
use loopguard_guard::{open_store, Guard, GuardError, SessionInfo, ToolProfile};

use crate::decision::Applied;

/// Why an event was not applied.
pub(crate) enum BackendError {
    /// Bad input, naming the field.
    Event {
        field: Option<&'static str>,
        message: String,
    },
    /// The store cannot be reached.
    Store(String),
}

impl From<GuardError> for BackendError {
    fn from(e: GuardError) -> Self {
        match e {
            GuardError::Event(e) => BackendError::Event {
                field: e.field,
                message: e.message,
            },
            other => BackendError::Store(other.to_string()),
        }
    }
}

/// Sessions and their engine state.
pub(crate) struct Backend {
    guard: Guard,
    origin: String,
    store: String,
}

/// A config that could not be used: the message and every diagnostic.
pub(crate) type ConfigFailure = (String, Vec<String>);

impl Backend {
    /// A backend for an OpenClaw config text (`None`: enabled with OpenClaw's defaults) and a
    /// store (`memory`, `sqlite:PATH`). Returns the config's non-fatal diagnostics too.
    pub(crate) fn new(
        text: Option<&str>,
        origin: &str,
        store: &str,
        idle_ttl: Duration,
    ) -> Result<(Backend, Vec<String>), BackendFailure> {
        let (config, diagnostics) = match text {
            None => (loopguard_guard::enabled_config(), Vec::new()),
            Some(text) => load_config(text, origin).map_err(BackendFailure::Config)?,
        };
        let store_impl =
            open_store(store, idle_ttl).map_err(|e| BackendFailure::Store(e.opening(store)))?;
        let guard = Guard::builder()
            .config(config)
            .profile(ToolProfile::Plain)
            .mode(Mode::Enforce)
            .store(store_impl)
            .build();
        Ok((
            Backend {
                guard,
                origin: origin.to_string(),
                store: store.to_string(),
            },
            diagnostics,
        ))
    }

    /// Parses and applies one event line; `f` sees the decision.
    pub(crate) fn apply_line<T>(
        &self,
        line: &[u8],
        f: impl FnOnce(Applied<'_>) -> T,
    ) -> Result<T, BackendError> {
        let event = parse_event(line, 1).map_err(|e| BackendError::Event {
            field: e.field,
            message: e.message,
        })?;
        Ok(f(self.guard.apply(None, &event, |d| d)?))
    }

    /// What is known about a session.
    pub(crate) fn session(&self, session: &str) -> Result<Option<SessionInfo>, BackendError> {
        Ok(self.guard.session(None, session)?)
    }

    /// Every session.
    pub(crate) fn sessions(&self) -> Result<Vec<SessionInfo>, BackendError> {
        Ok(self.guard.sessions()?)
    }

    /// Forgets a session.
    pub(crate) fn forget(&self, session: &str) -> Result<bool, BackendError> {
        Ok(self.guard.forget(None, session)?)
    }

    /// What `repr(guard)` shows.
    pub(crate) fn describe(&self) -> String {
        format!("config={} store={}", self.origin, self.store)
    }
}

/// Why a backend could not be built.
pub(crate) enum BackendFailure {
    Config(ConfigFailure),
    Store(String),
}

/// Reads a config as `loopguard replay --config` does: what OpenClaw would reject (unknown
/// keys, wrong types) is an error; out-of-range numbers fall back, and are reported as
/// warnings (`"file: warning: line L, column C: key.path: message …"`), since the config
/// runs. A file that is not JSON5 is an error whose one diagnostic says where
/// (`"file: error: line L, column C: message"`).
fn load_config(text: &str, origin: &str) -> Result<(OpenClawConfig, Vec<String>), ConfigFailure> {
    let loaded = OpenClawConfig::from_json5(text).map_err(|e| {
        let diagnostic = match &e {
            loopguard_core::LoadError::Syntax(s) => format!(
                "{origin}: error: line {}, column {}: {}",
                s.pos.line, s.pos.col, s.message
            ),
            other => format!("{origin}: error: {other}"),
        };
        (format!("{origin}: {e}"), vec![diagnostic])
    })?;
    let shown = |d: &loopguard_core::Diagnostic| {
        if d.is_fatal_at_runtime() {
            format!("{origin}: {d}")
        } else {
            format!(
                "{origin}: warning: line {}, column {}: {}: {}",
                d.pos.line, d.pos.col, d.path, d.message
            )
        }
    };
    // A value that only falls back at run time comes with a warning saying so; the
    // validator's error about the same key is left out (the config runs).
    let warned: std::collections::BTreeSet<&str> = loaded
        .diagnostics
        .iter()
        .filter(|d| d.severity == loopguard_core::Severity::Warning)
        .map(|d| d.path.as_str())
        .collect();
    let all: Vec<String> = loaded
        .diagnostics
        .iter()
        .filter(|d| {
            d.is_fatal_at_runtime()
                || d.severity == loopguard_core::Severity::Warning
                || !warned.contains(d.path.as_str())
        })
        .map(shown)
        .collect();
    let fatal: Vec<String> = loaded
        .diagnostics
        .iter()
        .filter(|d| d.is_fatal_at_runtime())
        .map(shown)
        .collect();
    if !fatal.is_empty() {
        return Err((
            format!(
                "{}\n{origin}: OpenClaw would reject this config; run `loopguard config check` for details",
                fatal.join("\n")
            ),
            all,
        ));
    }
    let mut all = all;
    // Detection a given config leaves off, or warnings it hides, said once where the user looks.
    all.extend(loopguard_guard::advice::config_notes(
        origin,
        &loaded.config,
    ));
    Ok((loaded.config, all))
}
