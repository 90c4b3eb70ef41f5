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
    /// `POST /v1/traces` (OTLP/HTTP): how long a trace must be quiet (no new span) before its
    /// tool spans are applied; a trace is applied at the latest 12 waits after its first span.
    /// Spans arriving after their trace was applied are applied after it (docs/traces/live.md).
    #[arg(long, value_name = "DURATION", default_value = "5s")]
    trace_wait: String,
    /// How long the loop history (`GET /v1/loops`) keeps a loop after its last call.
    #[arg(long, value_name = "DURATION", default_value = "30d")]
    loop_retention: String,
    /// Send an alert (generic JSON) to this URL when a loop is blocked or ends its run, once
    /// per loop; repeatable. `loopguard.alerts` in the config file sets Slack and PagerDuty
    /// targets too (docs/serve.md, "Alerts").
    #[arg(long, value_name = "URL")]
    alert_webhook: Vec<String>,
}

/// Runs `loopguard serve` until Ctrl-C or SIGTERM.
pub fn run(args: ServeArgs) -> Result<ExitCode> {
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
    server.run(|addr| {
        // A server keeps serving when nobody reads its stderr any more.
        let _ = errln!("{}", says(addr));
    })?;
    errln!("loopguard serve: stopped")?;
    Ok(ExitCode::SUCCESS)
}
