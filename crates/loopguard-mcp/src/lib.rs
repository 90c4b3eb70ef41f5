//! `loopguard mcp`: OpenClaw's tool-loop detection for every MCP client, as a transparent
//! proxy between the client and the server.
//!
//! Everything passes through as the bytes it came in (initialize, `tools/list`, resources,
//! prompts, completions, logging, progress, cancellation, list-changed notifications and the
//! server's own requests); only `tools/call` is read. Before a call, the guard decides: a
//! block is answered by the proxy with a `CallToolResult` whose `isError` is `true` and whose
//! text is the block message, and the server never sees the call; an emitted warning is
//! appended to the server's result as one more text item. After the call, the result's
//! `content`, `structuredContent` and `isError` are the outcome.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::ffi::OsString;
//! let options = loopguard_mcp::ProxyOptions::builder().name("files").build();
//! let command: Vec<OsString> = vec!["npx".into(), "-y".into(), "@modelcontextprotocol/server-filesystem".into()];
//! let exit_code = loopguard_mcp::run_stdio(&options, &command)?;
//! std::process::exit(exit_code);
//! # }
//! ```

mod guard;
mod http;
mod options;
mod relay;
mod sse;
mod stdio;

use std::ffi::OsString;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

pub use options::{
    ProxyOptions, ProxyOptionsBuilder, DEFAULT_ASK_TIMEOUT, DEFAULT_IDLE_TTL, DEFAULT_MAX_SESSIONS,
};

use guard::GuardLayer;
use relay::Relay;

/// Why the proxy could not run. Each message states its cause once (the I/O error is part of
/// the message, not a separate `source`, so `{:#}` chains do not repeat it).
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// No server command after `--`.
    #[error("no server command given (loopguard mcp [OPTIONS] -- COMMAND [ARGS...])")]
    NoCommand,
    /// The server command could not be started.
    #[error("cannot start the MCP server `{0}`: {1}")]
    Spawn(String, std::io::Error),
    /// A pipe to the server was not set up.
    #[error("the MCP server's {0} is not piped")]
    Pipe(&'static str),
    /// Waiting for the server failed.
    #[error("cannot wait for the MCP server: {0}")]
    Wait(std::io::Error),
    /// Another I/O failure, with what was being done.
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    /// An option's value is not usable.
    #[error("{0}")]
    Invalid(String),
    /// Both `--upstream` and a server command.
    #[error("give either --upstream URL or a server COMMAND after --, not both")]
    TwoServers,
    /// Neither `--upstream` nor a server command.
    #[error("no MCP server: give a COMMAND after -- (e.g. loopguard mcp -- npx -y SERVER) or --upstream URL")]
    NoServer,
}

/// Where `loopguard mcp` meets its client and its server: the command line's `--upstream`,
/// `--listen`, `--header` and the server command after `--`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Endpoints<'a> {
    /// A streamable HTTP server to forward to (`--upstream URL`).
    pub upstream: Option<&'a str>,
    /// Serve streamable HTTP on this address (`--listen ADDR`) instead of stdio.
    pub listen: Option<&'a str>,
    /// The stdio server's command and arguments.
    pub command: &'a [OsString],
    /// Headers sent to the upstream (`Name: value`), for a stdio client.
    pub headers: &'a [String],
}

/// Runs the proxy the endpoints describe: [`run_stdio`] (a command), [`run_http_command`]
/// (a command and `listen`), [`run_stdio_upstream`] (`upstream`), [`run_http_upstream`]
/// (`upstream` and `listen`). Exactly one server is needed: an upstream or a command.
///
/// ```
/// use loopguard_mcp::{run, Endpoints, McpError, ProxyOptions};
/// let options = ProxyOptions::builder().build();
/// assert!(matches!(run(&options, Endpoints::default()), Err(McpError::NoServer)));
/// let both = Endpoints { upstream: Some("http://127.0.0.1:1/mcp"), command: &["true".into()], ..Endpoints::default() };
/// assert!(matches!(run(&options, both), Err(McpError::TwoServers)));
/// ```
pub fn run(options: &ProxyOptions, at: Endpoints<'_>) -> Result<i32, McpError> {
    match (at.upstream, at.listen, at.command.is_empty()) {
        (None, None, false) => run_stdio(options, at.command),
        (Some(url), Some(addr), true) => run_http_upstream(options, url, addr),
        (None, Some(addr), false) => run_http_command(options, addr, at.command),
        (Some(url), None, true) => run_stdio_upstream(options, url, at.headers),
        (Some(_), _, false) => Err(McpError::TwoServers),
        (None, _, true) => Err(McpError::NoServer),
    }
}

/// A connection's id: unique per process and time.
pub(crate) fn connection_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    format!(
        "{ms:x}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// How a proxy names its sessions: `--session-key KEY` (one session and run for every
/// connection), else `mcp:NAME:CONNECTION` where NAME is `--name`, else the server's own name
/// from its `initialize` answer (`serverInfo.name`) once it is known, else `fallback` (the
/// command's file name or the upstream's host).
#[derive(Debug)]
pub(crate) struct Naming {
    key: Option<String>,
    given: Option<String>,
    fallback: String,
    learned: std::sync::Mutex<Option<String>>,
}

impl Naming {
    pub(crate) fn new(options: &ProxyOptions, fallback: String) -> Arc<Self> {
        Arc::new(Naming {
            key: options.session_key.clone(),
            given: options.name.clone(),
            fallback,
            learned: std::sync::Mutex::new(None),
        })
    }

    /// `true` when the server's name would change the session names.
    pub(crate) fn wants_server_name(&self) -> bool {
        self.key.is_none() && self.given.is_none()
    }

    /// The server said its name (`serverInfo.name` of an initialize answer).
    pub(crate) fn learn(&self, server_name: &str) {
        let name = server_name.trim();
        if self.wants_server_name() && !name.is_empty() {
            *self.learned.lock().unwrap_or_else(|p| p.into_inner()) = Some(name.to_owned());
        }
    }

    /// The session and run of a connection.
    pub(crate) fn session_and_run(&self, connection: &str) -> (String, String) {
        if let Some(key) = &self.key {
            return (key.clone(), key.clone());
        }
        let learned = self.learned.lock().unwrap_or_else(|p| p.into_inner());
        let name = self
            .given
            .as_deref()
            .or(learned.as_deref())
            .unwrap_or(&self.fallback);
        (format!("mcp:{name}:{connection}"), connection.to_owned())
    }
}

/// A server's name from its command: the program's file name.
fn name_from_command(command: &[OsString]) -> String {
    command
        .first()
        .map(|p| {
            std::path::Path::new(p)
                .file_name()
                .unwrap_or(p.as_os_str())
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_else(|| "server".to_owned())
}

/// Starts the delivery of `loopguard.alerts` on the proxy's runtime.
fn start_alerts(
    rt: &tokio::runtime::Runtime,
    guard: &GuardLayer,
) -> Option<loopguard_alerts::Alerts> {
    let alerts = guard.alerts()?.clone();
    rt.spawn(alerts.clone().deliver());
    Some(alerts)
}

/// Gives the alerts of a proxy that is exiting (its client left) a few seconds to be
/// delivered.
fn finish_alerts(rt: &tokio::runtime::Runtime, alerts: Option<loopguard_alerts::Alerts>) {
    if let Some(alerts) = alerts {
        rt.block_on(alerts.flush(std::time::Duration::from_secs(5)));
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, McpError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| McpError::Io("cannot start the async runtime".to_owned(), e))
}

/// Runs `COMMAND` as an MCP server behind the proxy, the client being this process's stdin
/// and stdout. Returns the exit code to exit with: the server's (128 + signal when a signal
/// ended it), or 0 when the client left and the proxy closed the server.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let options = loopguard_mcp::ProxyOptions::builder().build();
/// let code = loopguard_mcp::run_stdio(&options, &["python3".into(), "server.py".into()])?;
/// # let _ = code; Ok(()) }
/// ```
pub fn run_stdio(options: &ProxyOptions, command: &[OsString]) -> Result<i32, McpError> {
    if command.is_empty() {
        return Err(McpError::NoCommand);
    }
    let guard = Arc::new(GuardLayer::new(options)?);
    let naming = Naming::new(options, name_from_command(command));
    let rt = runtime()?;
    let alerts = start_alerts(&rt, &guard);
    let relay = Relay::new(guard, naming, &connection_id());
    tracing::info!(target: "loopguard::mcp", session = %relay.session(), "stdio connection");
    let result = rt.block_on(stdio::run(relay, command));
    // Reading stdin may still block a runtime thread; do not wait for it.
    finish_alerts(&rt, alerts);
    rt.shutdown_background();
    result
}

/// `--upstream URL --listen ADDR`: a streamable HTTP proxy in front of the MCP server at
/// `url`. Serves until interrupted (SIGINT or SIGTERM); returns 0.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let options = loopguard_mcp::ProxyOptions::builder().build();
/// loopguard_mcp::run_http_upstream(&options, "https://mcp.example.com/mcp", "127.0.0.1:8931")?;
/// # Ok(()) }
/// ```
pub fn run_http_upstream(options: &ProxyOptions, url: &str, addr: &str) -> Result<i32, McpError> {
    let guard = Arc::new(GuardLayer::new(options)?);
    let rt = runtime()?;
    let alerts = start_alerts(&rt, &guard);
    let result = rt.block_on(http::run_upstream(guard, options.clone(), url, addr));
    finish_alerts(&rt, alerts);
    rt.shutdown_background();
    result
}

/// `--listen ADDR -- COMMAND`: a streamable HTTP server in front of a stdio server; each
/// HTTP session gets its own server process. Serves until interrupted; returns 0.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let options = loopguard_mcp::ProxyOptions::builder().build();
/// loopguard_mcp::run_http_command(&options, "127.0.0.1:8931", &["python3".into(), "server.py".into()])?;
/// # Ok(()) }
/// ```
pub fn run_http_command(
    options: &ProxyOptions,
    addr: &str,
    command: &[OsString],
) -> Result<i32, McpError> {
    if command.is_empty() {
        return Err(McpError::NoCommand);
    }
    let guard = Arc::new(GuardLayer::new(options)?);
    let naming = Naming::new(options, name_from_command(command));
    let rt = runtime()?;
    let alerts = start_alerts(&rt, &guard);
    let result = rt.block_on(http::run_command(guard, options, addr, command, naming));
    finish_alerts(&rt, alerts);
    rt.shutdown_background();
    result
}

/// `--upstream URL` without `--listen`: the client speaks stdio to the proxy, which speaks
/// streamable HTTP to the server (what `install` writes for URL entries). `headers` are
/// `Name: value` strings sent with every request.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let options = loopguard_mcp::ProxyOptions::builder().build();
/// let code = loopguard_mcp::run_stdio_upstream(&options, "http://127.0.0.1:8000/mcp", &[])?;
/// # let _ = code; Ok(()) }
/// ```
pub fn run_stdio_upstream(
    options: &ProxyOptions,
    url: &str,
    headers: &[String],
) -> Result<i32, McpError> {
    let guard = Arc::new(GuardLayer::new(options)?);
    let rt = runtime()?;
    let alerts = start_alerts(&rt, &guard);
    let result = rt.block_on(http::run_bridge(guard, options.clone(), url, headers));
    finish_alerts(&rt, alerts);
    rt.shutdown_background();
    result
}
