//! How a proxy is configured: [`ProxyOptions`] and its builder.

use std::path::PathBuf;
use std::time::Duration;

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
    pub(crate) idle_ttl: Duration,
    pub(crate) max_sessions: usize,
    pub(crate) ask_timeout: Duration,
}

/// How long an HTTP session of `--listen ADDR -- COMMAND` may stay idle before its server
/// process is ended (10 minutes).
pub const DEFAULT_IDLE_TTL: Duration = Duration::from_secs(600);

/// How many HTTP sessions (server processes) `--listen ADDR -- COMMAND` keeps at most (64).
pub const DEFAULT_MAX_SESSIONS: usize = 64;

/// How long the user has to answer the proxy's question about a looping call
/// (`loopguard.onCritical: "ask"`, asked through MCP elicitation) before the call is refused
/// (5 minutes).
pub const DEFAULT_ASK_TIMEOUT: Duration = Duration::from_secs(300);

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
                idle_ttl: DEFAULT_IDLE_TTL,
                max_sessions: DEFAULT_MAX_SESSIONS,
                ask_timeout: DEFAULT_ASK_TIMEOUT,
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

    /// `--listen ADDR -- COMMAND`: a session that has had no request and no open stream for
    /// this long is ended with its server process (default [`DEFAULT_IDLE_TTL`]; clients
    /// that never send `DELETE` would otherwise keep one process each forever).
    pub fn idle_ttl(mut self, ttl: Duration) -> Self {
        self.options.idle_ttl = ttl;
        self
    }

    /// `--listen ADDR -- COMMAND`: at most this many sessions (server processes) at once
    /// (default [`DEFAULT_MAX_SESSIONS`], at least 1). A new session beyond it ends the
    /// session idle the longest; when none is idle, it is refused with HTTP 503.
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.options.max_sessions = max.max(1);
        self
    }

    /// With `loopguard.onCritical: "ask"`: how long the user has to answer the proxy's
    /// elicitation about a looping call (default [`DEFAULT_ASK_TIMEOUT`]); no answer in time
    /// refuses the call, as a "no" does.
    pub fn ask_timeout(mut self, timeout: Duration) -> Self {
        self.options.ask_timeout = timeout;
        self
    }

    /// The options.
    pub fn build(self) -> ProxyOptions {
        self.options
    }
}
