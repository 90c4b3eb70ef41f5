//! The accept loop: HTTP/1 connections served by hyper with a header read timeout, under a
//! cap on open connections.
//!
//! `axum::serve` gives hyper no timer, so a client that sends part of a request head and
//! then nothing holds its connection (and a file descriptor) for ever; enough of them and
//! the process cannot accept `/healthz`. Here every connection gets hyper's own
//! `header_read_timeout` (the head of each request, the first one and every kept-alive
//! one, must arrive within it, or hyper closes the connection), and at most
//! `max_connections` are open at once: at the cap the loop stops accepting (new clients
//! wait in the kernel's backlog) until one closes, and says so in the log.

use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tower::ServiceExt;

use crate::protocol_errors::JsonProtocolErrors;

/// How the listener treats connections.
#[derive(Clone)]
pub(crate) struct Limits {
    /// The head of a request must arrive within this (and a TLS handshake too).
    pub header_timeout: Duration,
    /// At most this many connections are open at once.
    pub max_connections: usize,
    /// TLS on every connection (`--tls-cert`, `--tls-key`).
    pub tls: Option<tokio_rustls::TlsAcceptor>,
}

impl std::fmt::Debug for Limits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limits")
            .field("header_timeout", &self.header_timeout)
            .field("max_connections", &self.max_connections)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// Serves `router` on `listener` until `shutdown` completes, then lets open connections
/// finish their request in flight (hyper's graceful shutdown) and returns once all closed.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    on_cap: impl Fn() + Send + Sync + 'static,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let max = limits.max_connections.clamp(1, Semaphore::MAX_PERMITS);
    let permits = Arc::new(Semaphore::new(max));
    let (stop, stopped) = watch::channel(false);
    // Logged once each time the cap is reached, not for every client that waits.
    let at_cap = Arc::new(AtomicBool::new(false));
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let permit = match permits.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                if !at_cap.swap(true, Ordering::Relaxed) {
                    on_cap();
                    tracing::warn!(
                        target: "loopguard::serve",
                        max_connections = max,
                        "connection cap reached: {max} connections are open (--max-connections); new connections wait until one closes (clients idle before sending a request head are closed after --header-timeout)"
                    );
                }
                tokio::select! {
                    p = permits.clone().acquire_owned() => match p {
                        Ok(p) => p,
                        Err(_) => break,
                    },
                    () = &mut shutdown => break,
                }
            }
        };
        let (stream, _peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    drop(permit);
                    accept_error(e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        if permits.available_permits() > 0 && at_cap.swap(false, Ordering::Relaxed) {
            tracing::info!(target: "loopguard::serve", "below the connection cap again");
        }
        // Answers leave at once: no Nagle delay behind a client's delayed ACK when a
        // kept-alive connection has an answer still unacknowledged (bench/history/
        // replay-and-serve-redis.md, "Fifth pass: serve with Redis").
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(target: "loopguard::serve", error = %e, "cannot set TCP_NODELAY");
        }
        let (router, stopped, timeout) = (router.clone(), stopped.clone(), limits.header_timeout);
        match limits.tls.clone() {
            None => {
                tokio::spawn(connection(stream, router, timeout, stopped, permit));
            }
            Some(acceptor) => {
                tokio::spawn(async move {
                    // The handshake is bounded like a request head.
                    match tokio::time::timeout(timeout, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => connection(tls, router, timeout, stopped, permit).await,
                        Ok(Err(e)) => {
                            tracing::debug!(target: "loopguard::serve", "TLS handshake failed: {e}");
                        }
                        Err(_) => {
                            tracing::debug!(target: "loopguard::serve", "TLS handshake timed out");
                        }
                    }
                });
            }
        }
    }
    let _ = stop.send(true);
    // Every connection holds a permit until it closes.
    let _ = permits.acquire_many(max as u32).await;
}

async fn connection<I>(
    stream: I,
    router: Router,
    header_timeout: Duration,
    mut stopped: watch::Receiver<bool>,
    _permit: tokio::sync::OwnedSemaphorePermit,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let io = TokioIo::new(JsonProtocolErrors::new(stream));
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let router = router.clone();
        async move {
            let response = router
                .oneshot(req.map(Body::new))
                .await
                .unwrap_or_else(|never: Infallible| match never {});
            Ok::<_, Infallible>(response)
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    let conn = builder.serve_connection(io, service);
    let mut conn = std::pin::pin!(conn);
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    // A client that went away, a malformed request (answered 4xx), a head
                    // that did not arrive in time: the connection's own business.
                    tracing::debug!(target: "loopguard::serve", "connection closed: {e}");
                }
                break;
            }
            changed = stopped.changed() => {
                if changed.is_err() || *stopped.borrow() {
                    conn.as_mut().graceful_shutdown();
                    // Wait for the connection to finish its request in flight.
                    if let Err(e) = conn.as_mut().await {
                        tracing::debug!(target: "loopguard::serve", "connection closed: {e}");
                    }
                    break;
                }
            }
        }
    }
}

/// An accept that failed: a connection reset before it was accepted is the client's
/// business; running out of file descriptors is logged, then retried after a pause (the
/// backlog keeps the waiting clients).
async fn accept_error(e: std::io::Error) {
    use std::io::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::ConnectionRefused
    ) {
        return;
    }
    tracing::warn!(target: "loopguard::serve", "cannot accept a connection: {e}; retrying in 1 s (lower --max-connections below the process's file descriptor limit)");
    tokio::time::sleep(Duration::from_secs(1)).await;
}
