//! The engine behind `loopguard.Guard`.

use std::sync::Mutex;

use loopguard_core::config::OpenClawConfig;
use loopguard_core::Mode;
use loopguard_events::parse_event;
use loopguard_replay::Replayer;

use crate::decision::Applied;

/// The config `Guard(config=None)` uses: loop detection on, OpenClaw's defaults.
const ENABLED: &str = r#"{"tools":{"loopDetection":{"enabled":true}}}"#;

/// Why an event was not applied.
pub(crate) enum BackendError {
    /// Bad input, naming the field.
    Event {
        field: Option<&'static str>,
        message: String,
    },
    /// The store cannot be reached.
    #[allow(dead_code)]
    Store(String),
}

/// Sessions and their engine state.
pub(crate) struct Backend {
    replayer: Mutex<Replayer>,
    origin: String,
}

impl Backend {
    /// A backend for an OpenClaw config text (`None`: enabled with defaults). Returns the
    /// config's non-fatal diagnostics, or the error message and every diagnostic.
    pub(crate) fn new(
        text: Option<&str>,
        origin: &str,
    ) -> Result<(Backend, Vec<String>), (String, Vec<String>)> {
        let text = text.unwrap_or(ENABLED);
        let loaded =
            OpenClawConfig::from_json5(text).map_err(|e| (format!("{origin}: {e}"), Vec::new()))?;
        let all: Vec<String> = loaded
            .diagnostics
            .iter()
            .map(|d| format!("{origin}: {d}"))
            .collect();
        if loaded.diagnostics.iter().any(|d| d.is_fatal_at_runtime()) {
            let fatal: Vec<String> = loaded
                .diagnostics
                .iter()
                .filter(|d| d.is_fatal_at_runtime())
                .map(|d| format!("{origin}: {d}"))
                .collect();
            return Err((
                format!(
                    "{}\n{origin}: OpenClaw would reject this config; run `loopguard config check` for details",
                    fatal.join("\n")
                ),
                all,
            ));
        }
        Ok((
            Backend {
                replayer: Mutex::new(Replayer::new(loaded.config, Mode::Enforce)),
                origin: origin.to_string(),
            },
            all,
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
        let mut replayer = self
            .replayer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        Ok(f(replayer.process(&event, 1)))
    }

    /// What `repr(guard)` shows.
    pub(crate) fn describe(&self) -> String {
        format!("config={}", self.origin)
    }
}
