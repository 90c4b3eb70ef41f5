//! `loopguard serve`: the guard as an HTTP service (the work is in `loopguard-serve`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use loopguard_serve::{Server, Tokens};

/// Options of `loopguard serve`.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// The address to listen on. A non-loopback address needs --tokens.
    #[arg(long, value_name = "ADDR", default_value = loopguard_serve::DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// An OpenClaw config file (per-agent overrides through the event's `agent`). Without
    /// one, detection runs with every default and `enabled: true`. A config with errors
    /// stops the server from starting.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Where sessions live: memory, sqlite:PATH, redis://HOST:PORT/DB (shared by replicas;
    /// with a password redis://:PASSWORD@HOST:PORT/DB; rediss:// for TLS), or
    /// redis-cluster://HOST:PORT,HOST:PORT (some nodes of a Redis Cluster;
    /// rediss-cluster:// for TLS).
    #[arg(long, value_name = "STORE", default_value = "memory")]
    store: String,
    /// With rediss://: trust the certificate authorities in this PEM file instead of the
    /// system's.
    #[arg(long, value_name = "FILE")]
    redis_ca: Option<PathBuf>,
    /// Bearer tokens, one `TENANT TOKEN` pair a line: requests need a token, and each
    /// tenant sees only its own sessions.
    #[arg(long, value_name = "FILE")]
    tokens: Option<PathBuf>,
    /// Forget sessions idle for longer than this (e.g. 30m, 24h, 7d).
    #[arg(long, value_name = "DURATION", default_value = "24h")]
    idle_ttl: String,
    /// The largest request body (bytes; K, M suffixes for KiB, MiB).
    #[arg(long, value_name = "BYTES", default_value = "4M")]
    max_body: String,
    /// Answer 408 to a client that takes longer than this to send its body.
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    body_timeout: String,
    /// `POST /v1/traces` (OTLP/HTTP): how long a trace must be quiet (no new span, and no
    /// parent span still missing) before its tool spans are applied; a trace is applied at the
    /// latest 12 waits after its first span.
    /// Spans arriving after their trace was applied are applied after it (docs/traces/live.md).
    #[arg(long, value_name = "DURATION", default_value = "5s")]
    trace_wait: String,
    /// Close a connection whose client takes longer than this to send a request's line and
    /// headers (a new connection's first request, or the next one on a kept-alive one).
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    header_timeout: String,
    /// At most this many connections open at once; at the cap new clients wait until one
    /// closes (logged, and counted in loopguard_http_connection_cap_reached_total). Keep it
    /// below the process's file-descriptor limit (ulimit -n).
    #[arg(long, value_name = "N", default_value_t = loopguard_serve::DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// A file holding the bearer token that reads all of GET /metrics (for Prometheus).
    /// With it, /metrics needs a token; with --tokens, a tenant's token reads only that
    /// tenant's series.
    #[arg(long, value_name = "FILE")]
    metrics_token: Option<PathBuf>,
    /// The log on stderr: `text` lines, or `json` (one JSON object a line, with the loop
    /// events' fields: tenant, session, tool, detector, loop_level, decision, count).
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Serve HTTPS: the certificate chain (PEM) of the listener. Needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// How long the loop history (`GET /v1/loops`) keeps a loop after its last call.
    #[arg(long, value_name = "DURATION", default_value = "30d")]
    loop_retention: String,
    /// Send an alert (generic JSON) to this URL when a loop is blocked or ends its run, once
    /// per loop; repeatable. `loopguard.alerts` in the config file sets Slack and PagerDuty
    /// targets too (docs/alerts.md).
    #[arg(long, value_name = "URL")]
    alert_webhook: Vec<String>,
}

/// `--log-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One line of text per event.
    Text,
    /// One JSON object per event.
    Json,
}

impl ServeArgs {
    /// Whether the log is JSON (`--log-format json`); read before the log is set up.
    pub fn json_logs(&self) -> bool {
        self.log_format == LogFormat::Json
    }
}

/// Runs `loopguard serve` until Ctrl-C or SIGTERM.
pub fn run(args: ServeArgs) -> Result<ExitCode> {
    let json = args.json_logs();
    let mut builder = Server::builder()
        .listen(args.listen)
        .store(args.store)
        .idle_ttl(
            loopguard_guard::parse_duration(&args.idle_ttl)
                .map_err(|e| anyhow::anyhow!("--idle-ttl {:?}: {e}", args.idle_ttl))?,
        )
        .max_body(loopguard_serve::parse_max_body(&args.max_body)?)
        .body_timeout(
            loopguard_guard::parse_duration(&args.body_timeout)
                .map_err(|e| anyhow::anyhow!("--body-timeout {:?}: {e}", args.body_timeout))?,
        )
        .trace_wait(
            loopguard_guard::parse_duration(&args.trace_wait)
                .map_err(|e| anyhow::anyhow!("--trace-wait {:?}: {e}", args.trace_wait))?,
        )
        .loop_retention(
            loopguard_guard::parse_duration(&args.loop_retention)
                .map_err(|e| anyhow::anyhow!("--loop-retention {:?}: {e}", args.loop_retention))?,
        );
    let header_timeout = loopguard_guard::parse_duration(&args.header_timeout)
        .map_err(|e| anyhow::anyhow!("--header-timeout {:?}: {e}", args.header_timeout))?;
    if header_timeout.is_zero() {
        anyhow::bail!("--header-timeout 0: every connection would be closed at once");
    }
    if args.max_connections == 0 {
        anyhow::bail!("--max-connections 0: the server could accept nobody");
    }
    builder = builder
        .header_timeout(header_timeout)
        .max_connections(args.max_connections);
    if let Some(path) = &args.metrics_token {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("--metrics-token {}: cannot read the file", path.display()))?;
        let token = text.trim();
        if token.is_empty() || token.contains(char::is_whitespace) {
            anyhow::bail!(
                "--metrics-token {}: the file must hold one token (no spaces)",
                path.display()
            );
        }
        builder = builder.metrics_token(token);
    }
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        let read = |flag: &str, path: &PathBuf| {
            std::fs::read(path)
                .with_context(|| format!("{flag} {}: cannot read the file", path.display()))
        };
        builder = builder.tls(read("--tls-cert", cert)?, read("--tls-key", key)?);
    }
    for url in &args.alert_webhook {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            anyhow::bail!("--alert-webhook {url:?}: expected an http:// or https:// URL");
        }
        builder = builder.alert_target(loopguard_alerts::AlertTarget::webhook(url));
    }
    if let Some(path) = &args.config {
        builder = builder.config(crate::cmd::replay::load_config_for_run(path)?);
    }
    if let Some(path) = &args.redis_ca {
        let pem = std::fs::read(path)
            .with_context(|| format!("--redis-ca {}: cannot read the file", path.display()))?;
        builder = builder.redis_ca(pem);
    }
    if let Some(path) = &args.tokens {
        builder = builder.tokens(Tokens::load(path)?);
    }
    let server = builder.build()?;
    let says = server.listening_line();
    // With --log-format json every line of stderr is a JSON object, these two included.
    let say = move |message: &str| {
        if json {
            errln!(
                "{}",
                serde_json::json!({ "level": "INFO", "target": "loopguard::serve", "message": message })
            )
        } else {
            errln!("{message}")
        }
    };
    server.run(|addr| {
        // A server keeps serving when nobody reads its stderr any more.
        let _ = say(&says(addr));
    })?;
    say("loopguard serve: stopped")?;
    Ok(ExitCode::SUCCESS)
}
