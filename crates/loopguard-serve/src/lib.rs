//! # loopguard-serve
//!
//! `loopguard serve`: OpenClaw's tool-call loop detection as an HTTP service, for agent
//! runtimes that cannot link a Rust crate (Python, TypeScript, Go, Java) and for fleets of
//! gateways that must share one loop state per session.
//!
//! The server is a thin HTTP layer over [`loopguard_guard::Guard`]: each `POST /v1/events`
//! event is applied to its session in the store (memory, SQLite or Redis) and answered with
//! the decision record `loopguard replay --json` writes for the same stream (without
//! `line`). The routes, their shapes and errors are in [`openapi.json`](Server::router)
//! (`GET /openapi.json`) and in the README's "Run it as a service".
//!
//! ```
//! use loopguard_serve::Server;
//! # fn main() -> Result<(), loopguard_serve::ServeError> {
//! let server = Server::builder()
//!     .listen("127.0.0.1:0".parse().expect("an address"))
//!     .store("memory")
//!     .max_body(1 << 20)
//!     .build()?;
//! let router = server.router(); // an axum Router: serve it, or call it in tests
//! # drop(router);
//! // server.run(|addr| eprintln!("listening on {addr}"))?; blocks until Ctrl-C / SIGTERM
//! # Ok(())
//! # }
//! ```

mod app;
mod dashboard;
mod error;
mod exposition;
mod history;
mod listener;
mod live;
mod loop_log;
mod loops_api;
mod metrics;
mod openapi;
mod otlp;
mod protocol_errors;
mod size;
mod state;
mod tls;
mod tokens;
mod trace_buffer;
mod wiring;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use loopguard_core::OpenClawConfig;
use loopguard_guard::Guard;

pub use error::{ApiError, ServeError};
pub use history::DEFAULT_LOOP_RETENTION;
pub use size::{parse_max_body, MaxBodyError};
pub use tokens::{Tokens, TokensError};
pub use trace_buffer::{DEFAULT_TRACE_WAIT, MAX_BUFFERED_SPANS, MAX_HOLD_FACTOR};

/// Default `--listen`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7878";
/// Default `--max-body`: 4 MiB.
pub const DEFAULT_MAX_BODY: usize = 4 << 20;
/// Default `--idle-ttl`: one day.
pub const DEFAULT_IDLE_TTL: Duration = Duration::from_secs(24 * 3600);
/// Threads for blocking store calls.
const BLOCKING_THREADS: usize = 8;

/// How long a client may take to send its body before it is answered 408.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// Default `--header-timeout`: how long a client may take to send a request's head (its
/// request line and headers), on a new connection or a kept-alive one, before the
/// connection is closed.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Default `--max-connections`: connections open at once. Below the usual file-descriptor
/// limit of 1024, with room for the store's connections and files.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// Configures a [`Server`].
#[derive(Debug)]
pub struct ServerBuilder {
    listen: SocketAddr,
    config: Option<OpenClawConfig>,
    store: String,
    tokens: Option<Tokens>,
    metrics_token: Option<String>,
    idle_ttl: Duration,
    max_body: usize,
    body_timeout: Duration,
    redis_ca: Option<Vec<u8>>,
    trace_wait: Duration,
    header_timeout: Duration,
    max_connections: usize,
    tls: Option<(Vec<u8>, Vec<u8>)>,
    loop_retention: Duration,
    alert_targets: Vec<loopguard_alerts::AlertTarget>,
    alert_options: loopguard_alerts::AlertOptions,
}

impl Default for ServerBuilder {
    fn default() -> Self {
        ServerBuilder {
            listen: DEFAULT_LISTEN.parse().expect("the default address parses"),
            config: None,
            store: "memory".to_string(),
            tokens: None,
            metrics_token: None,
            idle_ttl: DEFAULT_IDLE_TTL,
            max_body: DEFAULT_MAX_BODY,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            redis_ca: None,
            trace_wait: DEFAULT_TRACE_WAIT,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            tls: None,
            loop_retention: history::DEFAULT_LOOP_RETENTION,
            alert_targets: Vec::new(),
            alert_options: loopguard_alerts::AlertOptions::default(),
        }
    }
}

impl ServerBuilder {
    /// The address to listen on (`--listen`).
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.listen = addr;
        self
    }
    /// The OpenClaw config (`--config`, already loaded and checked); without one,
    /// detection runs with every default and `enabled: true`.
    pub fn config(mut self, config: OpenClawConfig) -> Self {
        self.config = Some(config);
        self
    }
    /// The store (`--store`): `memory`, `sqlite:PATH`, `redis://HOST:PORT[/DB]`,
    /// `rediss://…` or `redis-cluster://HOST:PORT[,HOST:PORT…]`.
    pub fn store(mut self, spec: impl Into<String>) -> Self {
        self.store = spec.into();
        self
    }
    /// Bearer tokens (`--tokens`): requests need one, and sessions are namespaced by the
    /// token's tenant.
    pub fn tokens(mut self, tokens: Tokens) -> Self {
        self.tokens = Some(tokens);
        self
    }
    /// The bearer token that reads every series of `GET /metrics` (`--metrics-token`).
    /// With it, `/metrics` needs a token: this one, or with [`tokens`](Self::tokens) a
    /// tenant's, which reads only that tenant's series.
    pub fn metrics_token(mut self, token: impl Into<String>) -> Self {
        self.metrics_token = Some(token.into());
        self
    }
    /// Sessions idle for longer are forgotten (`--idle-ttl`).
    pub fn idle_ttl(mut self, ttl: Duration) -> Self {
        self.idle_ttl = ttl;
        self
    }
    /// The largest request body, in bytes (`--max-body`).
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }
    /// How long a client may take to send a body.
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout;
        self
    }
    /// With `rediss://`: the certificate authorities (PEM) trusted instead of the system's
    /// (`--redis-ca`).
    pub fn redis_ca(mut self, pem: Vec<u8>) -> Self {
        self.redis_ca = Some(pem);
        self
    }

    /// `POST /v1/traces`: how long a trace must be quiet before its spans are applied
    /// (`--trace-wait`; see [`DEFAULT_TRACE_WAIT`]).
    pub fn trace_wait(mut self, wait: Duration) -> Self {
        self.trace_wait = wait;
        self
    }

    /// How long a client may take to send a request's head before its connection is
    /// closed (`--header-timeout`; see [`DEFAULT_HEADER_TIMEOUT`]).
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.header_timeout = timeout;
        self
    }

    /// At most this many connections open at once (`--max-connections`; see
    /// [`DEFAULT_MAX_CONNECTIONS`]): at the cap, new clients wait until one closes.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n;
        self
    }

    /// TLS on the listener: the certificate chain and its private key, PEM (`--tls-cert`,
    /// `--tls-key`). Checked by [`build`](Self::build).
    pub fn tls(mut self, cert_pem: Vec<u8>, key_pem: Vec<u8>) -> Self {
        self.tls = Some((cert_pem, key_pem));
        self
    }

    /// How long the loop history keeps a loop after its last step (`--loop-retention`).
    pub fn loop_retention(mut self, retention: Duration) -> Self {
        self.loop_retention = retention;
        self
    }

    /// Also send alerts here (`--alert-webhook`), beside the config's `loopguard.alerts`.
    pub fn alert_target(mut self, target: loopguard_alerts::AlertTarget) -> Self {
        self.alert_targets.push(target);
        self
    }

    /// How alerts are queued and retried.
    pub fn alert_options(mut self, options: loopguard_alerts::AlertOptions) -> Self {
        self.alert_options = options;
        self
    }

    /// Opens the store and builds the guard. Fails on a non-loopback address without
    /// tokens, or a store that cannot be opened.
    pub fn build(self) -> Result<Server, ServeError> {
        if !self.listen.ip().is_loopback() && self.tokens.is_none() {
            return Err(ServeError::OpenWithoutTokens(self.listen));
        }
        let tls = match &self.tls {
            Some((cert, key)) => Some(tokio_rustls::TlsAcceptor::from(tls::server_config(
                cert, key,
            )?)),
            None => None,
        };
        let mut targets = self
            .config
            .as_ref()
            .and_then(|c| c.loopguard.as_ref())
            .and_then(|l| l.alerts.as_deref())
            .map(loopguard_alerts::AlertTarget::from_configs)
            .unwrap_or_default();
        targets.extend(self.alert_targets);
        let alerts = (!targets.is_empty())
            .then(|| loopguard_alerts::Alerts::new(targets, self.alert_options));
        let on_change = alerts.clone().map(|alerts| {
            Arc::new(move |change: &loopguard_guard::LoopChange| {
                for alert in loopguard_alerts::Alert::of_change(change) {
                    alerts.send(alert);
                }
            }) as history::OnChange
        });
        let opened = wiring::open(&self.store, self.config, self.idle_ttl, self.redis_ca)?;
        let live = Arc::new(live::Live::default());
        let counted = live.clone();
        let history = Arc::new(
            history::History::new(
                opened.guard.store().clone(),
                !opened.blocking,
                self.loop_retention,
                on_change,
            )
            .with_tap(Arc::new(move |step| counted.step(step))),
        );
        let state = state::AppState {
            history,
            alerts,
            live,
            guard: Arc::new(opened.guard),
            hooks: Arc::new(opened.hooks),
            traces: Arc::new(opened.traces),
            traces_buffer: trace_buffer::TraceBuffer::new(self.trace_wait),
            tokens: self.tokens,
            metrics_token: self.metrics_token,
            metrics: metrics::Metrics::new(),
            loops: loop_log::LoopLog::default(),
            blocking: opened.blocking,
            awaitable: opened.awaitable,
            max_body: self.max_body,
            config_source: opened.config_source,
            body_timeout: self.body_timeout,
            retries: opened.retries,
            session_count: opened.session_count,
        };
        Ok(Server {
            listen: self.listen,
            store: self.store,
            limits: listener::Limits {
                header_timeout: self.header_timeout,
                max_connections: self.max_connections,
                tls,
            },
            state: Arc::new(state),
        })
    }
}

/// A configured server: [`Server::run`] serves it, [`Server::router`] gives its routes.
#[derive(Debug)]
pub struct Server {
    listen: SocketAddr,
    store: String,
    limits: listener::Limits,
    state: Arc<state::AppState>,
}

impl Server {
    /// A builder with the defaults of `loopguard serve`.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// The routes, as an axum `Router`.
    pub fn router(&self) -> axum::Router {
        app::router(self.state.clone())
    }

    /// The guard behind the routes.
    pub fn guard(&self) -> &Arc<Guard> {
        &self.state.guard
    }

    /// The `--store` value, with any password replaced by `***`.
    pub fn store_spec(&self) -> String {
        loopguard_guard::redact_spec(&self.store)
    }

    /// What `loopguard serve` says once it listens: given the bound address, one line naming
    /// it, the store (any password hidden) and the authentication (how many bearer tokens,
    /// or none). Taken before [`Server::run`], which consumes the server.
    ///
    /// ```
    /// use loopguard_serve::Server;
    /// let server = Server::builder().store("memory").build()?;
    /// let says = server.listening_line();
    /// assert_eq!(
    ///     says("127.0.0.1:7878".parse().expect("an address")),
    ///     "loopguard serve: listening on http://127.0.0.1:7878 (store: memory; no authentication)"
    /// );
    /// # Ok::<(), loopguard_serve::ServeError>(())
    /// ```
    pub fn listening_line(&self) -> impl Fn(SocketAddr) -> String {
        let store = self.store_spec();
        let auth = match self.state.tokens.as_ref().map(Tokens::len) {
            Some(n) => format!("{n} bearer tokens"),
            None => "no authentication".to_string(),
        };
        let scheme = if self.limits.tls.is_some() {
            "https"
        } else {
            "http"
        };
        move |addr| {
            format!("loopguard serve: listening on {scheme}://{addr} (store: {store}; {auth})")
        }
    }

    /// Serves on `listener` until `shutdown` completes (in-flight requests are finished).
    pub async fn serve(
        &self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        // `POST /v1/traces`: buffered traces are applied once quiet, and all of them when
        // the server stops.
        let flusher = tokio::spawn(otlp::flush_loop(self.state.clone()));
        // The loop history's queue (SQLite, Redis) and its pruning.
        let historian = tokio::spawn(self.state.history.clone().run());
        // Alerts leave from their own queue, on their own tasks.
        let alerting = self.state.alerts.clone().map(|a| tokio::spawn(a.deliver()));
        // The dashboard's streams are told of decisions, debounced.
        let debouncer = tokio::spawn(self.state.live.clone().debounce());
        let state = self.state.clone();
        listener::serve(
            listener,
            self.router(),
            self.limits.clone(),
            move || state.metrics.connection_cap(),
            shutdown,
        )
        .await;
        flusher.abort();
        otlp::flush(&self.state, true).await;
        self.state.history.drain(Duration::from_secs(5)).await;
        historian.abort();
        debouncer.abort();
        if let Some(a) = alerting {
            a.abort();
        }
        Ok(())
    }

    /// Binds the address, calls `on_listening` with the bound address (the port is chosen
    /// by the system for port 0), and serves until Ctrl-C or SIGTERM. Blocks; starts its
    /// own tokio runtime.
    pub fn run(self, on_listening: impl FnOnce(SocketAddr)) -> Result<(), ServeError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            // Store calls (SQLite, Redis) run on the blocking pool; Redis answers one
            // command at a time, so a few threads keep it busy, and more only add context
            // switches (scripts/bench-serve.sh).
            .max_blocking_threads(BLOCKING_THREADS)
            .build()
            .map_err(|source| ServeError::Io {
                context: "starting the runtime".to_string(),
                source,
            })?;
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind(self.listen)
                .await
                .map_err(|source| ServeError::Io {
                    context: format!("cannot listen on {}", self.listen),
                    source,
                })?;
            let addr = listener.local_addr().map_err(|source| ServeError::Io {
                context: "local address".to_string(),
                source,
            })?;
            on_listening(addr);
            self.serve(listener, shutdown_signal()).await
        })
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
