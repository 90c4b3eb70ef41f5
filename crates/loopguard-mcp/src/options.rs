//! How a proxy is configured: [`ProxyOptions`] and its builder.

use std::path::PathBuf;

use loopguard_core::{Mode, OpenClawConfig};

/// The options every transport of `loopguard mcp` shares.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let options = loopguard_mcp::ProxyOptions::builder()
///     .name("files")
///     .session_key("alice")
///     .build();
/// assert_eq!(options.name(), Some("files"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ProxyOptions {
    pub(crate) config: OpenClawConfig,
    pub(crate) mode: Mode,
    pub(crate) store: String,
    pub(crate) name: Option<String>,
    pub(crate) session_key: Option<String>,
    pub(crate) log: Option<PathBuf>,
}

impl ProxyOptions {
    /// A builder with the defaults: `enabled: true`, enforce mode, in-memory state.
    pub fn builder() -> ProxyOptionsBuilder {
        ProxyOptionsBuilder {
            options: ProxyOptions {
                config: loopguard_guard::enabled_config(),
                mode: Mode::Enforce,
                store: "memory".to_owned(),
                name: None,
                session_key: None,
                log: None,
            },
        }
    }

    /// The server's name (used in session names and logs).
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
}

/// Builds [`ProxyOptions`].
#[derive(Debug, Clone)]
pub struct ProxyOptionsBuilder {
    options: ProxyOptions,
}

impl ProxyOptionsBuilder {
    /// The OpenClaw config (default: `enabled: true`, as for the hook and `serve`).
    pub fn config(mut self, config: OpenClawConfig) -> Self {
        self.options.config = config;
        self
    }

    /// Enforce (blocks answer for the server) or observe (decisions are only logged).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.options.mode = mode;
        self
    }

    /// Where sessions live: `memory`, `sqlite:PATH` or `redis://HOST:PORT/DB`.
    pub fn store(mut self, store: impl Into<String>) -> Self {
        self.options.store = store.into();
        self
    }

    /// The server's name, part of each session's name (`mcp:NAME:…`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.options.name = Some(name.into());
        self
    }

    /// One session (and run) for every connection with this key, instead of one per
    /// connection: loops are then seen across reconnections.
    pub fn session_key(mut self, key: impl Into<String>) -> Self {
        self.options.session_key = Some(key.into());
        self
    }

    /// Append every decision to this file as JSON Lines.
    pub fn log_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.options.log = Some(path.into());
        self
    }

    /// The options.
    pub fn build(self) -> ProxyOptions {
        self.options
    }
}
