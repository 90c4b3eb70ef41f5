//! Streamable HTTP (MCP 2025-03-26 and later): the proxy in front of an HTTP server
//! (`--upstream URL --listen ADDR`), in front of a stdio server (`--listen ADDR -- COMMAND`),
//! and as the stdio client of an HTTP server (`--upstream URL`, what `install` writes for URL
//! entries). A session is one `Mcp-Session-Id`.

use std::collections::HashMap;
use std::ffi::OsString;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncWriteExt, BufReader};

use crate::stdio::{read_line, trim_line};
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;

use crate::guard::GuardLayer;
use crate::relay::{FromClient, Relay};
use crate::sse::{self, SseSplitter};
use crate::{McpError, Naming, ProxyOptions};

const SESSION_ID: &str = "mcp-session-id";
const PROTOCOL_VERSION: &str = "mcp-protocol-version";
const EVENT_STREAM: &str = "text/event-stream";
const JSON: &str = "application/json";
/// Request bodies larger than this are refused (413).
const MAX_BODY: usize = 64 << 20;

/// Headers that belong to one hop and are not forwarded.
fn hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "host"
            | "content-length"
            | "transfer-encoding"
            | "connection"
            | "keep-alive"
            | "upgrade"
            | "te"
            | "trailer"
    )
}

fn http_client() -> Result<reqwest::Client, McpError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    // Small JSON-RPC messages must not wait for an ACK (Nagle + delayed ACK = ~40 ms).
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .build()
        .map_err(|e| McpError::Invalid(format!("cannot build the HTTP client: {e}")))
}

fn parse_url(url: &str) -> Result<reqwest::Url, McpError> {
    reqwest::Url::parse(url).map_err(|e| McpError::Invalid(format!("--upstream {url}: {e}")))
}

/// The relays of the sessions the proxy has seen, by `Mcp-Session-Id`.
#[derive(Debug)]
struct Sessions {
    guard: Arc<GuardLayer>,
    naming: Arc<Naming>,
    by_id: Mutex<HashMap<String, Arc<Relay>>>,
    /// Requests without a session id (the initialize request, stateless servers).
    unsessioned: Arc<Relay>,
}

impl Sessions {
    fn new(guard: Arc<GuardLayer>, naming: Arc<Naming>) -> Self {
        let unsessioned = Arc::new(Relay::new(guard.clone(), naming.clone(), "no-session"));
        Sessions {
            guard,
            naming,
            by_id: Mutex::new(HashMap::new()),
            unsessioned,
        }
    }

    fn relay(&self, id: Option<&str>) -> Arc<Relay> {
        let Some(id) = id else {
            return self.unsessioned.clone();
        };
        let mut map = self.by_id.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(id.to_owned())
            .or_insert_with(|| {
                let relay = Relay::new(self.guard.clone(), self.naming.clone(), id);
                tracing::info!(target: "loopguard::mcp", session = %relay.session(), "HTTP session");
                Arc::new(relay)
            })
            .clone()
    }

    fn remove(&self, id: &str) {
        self.by_id
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    (status, [(axum::http::header::CONTENT_TYPE, JSON)], body).into_response()
}

/// An HTTP error as a JSON-RPC error object (`id` null: it answers no request in particular).
fn json_error(status: StatusCode, message: &str) -> Response {
    let body = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{{\"code\":-32000,\"message\":{}}}}}",
        crate::guard::json_string(message)
    );
    json_response(status, body.into_bytes())
}

/// The relay applied to a response body: a JSON message, or an SSE stream event by event.
fn relay_body(relay: Arc<Relay>, content_type: &str, upstream: reqwest::Response) -> Body {
    if content_type.starts_with(EVENT_STREAM) {
        let state = (
            Box::pin(upstream.bytes_stream()),
            SseSplitter::default(),
            relay,
            false,
        );
        let stream =
            futures_util::stream::unfold(state, |(mut s, mut splitter, relay, done)| async move {
                if done {
                    return None;
                }
                match s.next().await {
                    Some(Ok(chunk)) => {
                        let mut out = Vec::with_capacity(chunk.len());
                        for event in splitter.feed(&chunk) {
                            match sse::data(&event).and_then(|d| relay.server_message(&d)) {
                                Some(rewritten) => {
                                    out.extend_from_slice(&sse::with_data(&event, &rewritten))
                                }
                                None => out.extend_from_slice(&event),
                            }
                        }
                        Some((Ok(Bytes::from(out)), (s, splitter, relay, false)))
                    }
                    Some(Err(e)) => Some((Err(e), (s, splitter, relay, true))),
                    // An event the server left without its blank line goes out as it came.
                    None => splitter
                        .finish()
                        .map(|rest| (Ok(Bytes::from(rest)), (s, splitter, relay, true))),
                }
            });
        Body::from_stream(stream)
    } else if content_type.starts_with(JSON) {
        let stream = futures_util::stream::once(async move {
            let body = upstream.bytes().await?;
            Ok::<_, reqwest::Error>(match relay.server_message(&body) {
                Some(rewritten) => Bytes::from(rewritten),
                None => body,
            })
        });
        Body::from_stream(stream)
    } else {
        Body::from_stream(upstream.bytes_stream())
    }
}

// ---------------------------------------------------------------------------------------
// --upstream URL --listen ADDR

struct UpstreamProxy {
    http: reqwest::Client,
    url: reqwest::Url,
    sessions: Sessions,
}

async fn serve_upstream(State(proxy): State<Arc<UpstreamProxy>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(e) => {
            return (StatusCode::PAYLOAD_TOO_LARGE, format!("request body: {e}")).into_response()
        }
    };
    let session_id = header_str(&parts.headers, SESSION_ID).map(str::to_owned);
    let relay = proxy.sessions.relay(session_id.as_deref());
    let mut initialize = None;
    if parts.method == Method::POST {
        initialize = crate::relay::initialize_can_ask(&body);
        match relay.client_message(&body) {
            FromClient::Forward => {}
            FromClient::Reply(reply) => return json_response(StatusCode::OK, reply),
            FromClient::Consumed => return StatusCode::ACCEPTED.into_response(),
            FromClient::Ask(ask) => return ask_upstream(proxy, relay, parts, body, ask),
        }
    }
    let response = match send_upstream(&proxy, &parts, body).await {
        Ok(r) => r,
        Err(reason) => return (StatusCode::BAD_GATEWAY, reason).into_response(),
    };
    // The initialize request reached the session-less relay; the session it starts is
    // told whether its client can be asked.
    if let (Some(can_ask), Some(id)) = (initialize, header_str(response.headers(), SESSION_ID)) {
        proxy.sessions.relay(Some(id)).set_can_ask(can_ask);
    }
    if parts.method == Method::DELETE && response.status().is_success() {
        if let Some(id) = &session_id {
            proxy.sessions.remove(id);
        }
    }
    let status = response.status();
    let mut builder = Response::builder().status(status);
    for (name, value) in response.headers() {
        if !hop_by_hop(name) {
            builder = builder.header(name, value);
        }
    }
    let content_type = header_str(response.headers(), "content-type")
        .unwrap_or("")
        .to_owned();
    builder
        .body(relay_body(relay, &content_type, response))
        .unwrap_or_else(|e| (StatusCode::BAD_GATEWAY, e.to_string()).into_response())
}

/// The client's request, sent on to the upstream with its headers; the error says why it
/// could not be.
async fn send_upstream(
    proxy: &UpstreamProxy,
    parts: &axum::http::request::Parts,
    body: Bytes,
) -> Result<reqwest::Response, String> {
    let mut upstream = proxy.http.request(parts.method.clone(), proxy.url.clone());
    for (name, value) in &parts.headers {
        if !hop_by_hop(name) {
            upstream = upstream.header(name, value);
        }
    }
    upstream.body(body).send().await.map_err(|e| {
        tracing::error!(target: "loopguard::mcp", error = %e, "upstream request failed");
        format!(
            "loopguard: the MCP server at {} is unreachable: {e}",
            proxy.url
        )
    })
}

/// A `tools/call` to ask the user about, answered as an SSE stream: the question first
/// (the client answers it with another POST, which the relay takes), then the call's answer:
/// the refusal, or the upstream's answer to the call sent on once the user said yes.
fn ask_upstream(
    proxy: Arc<UpstreamProxy>,
    relay: Arc<Relay>,
    parts: axum::http::request::Parts,
    body: Bytes,
    ask: crate::relay::Ask,
) -> Response {
    let (tx, rx) = mpsc::unbounded_channel::<Vec<u8>>();
    tokio::spawn(async move {
        let send = {
            let tx = tx.clone();
            move |m: Vec<u8>| {
                let _ = tx.send(sse::message_event(&m));
            }
        };
        let reply = match relay.settle(ask, &send).await {
            FromClient::Forward => match send_upstream(&proxy, &parts, body.clone()).await {
                Ok(response) if response.status().is_success() => {
                    let content_type = header_str(response.headers(), "content-type")
                        .unwrap_or("")
                        .to_owned();
                    let mut events =
                        relay_body(relay.clone(), &content_type, response).into_data_stream();
                    if content_type.starts_with(EVENT_STREAM) {
                        while let Some(Ok(chunk)) = events.next().await {
                            let _ = tx.send(chunk.to_vec());
                        }
                    } else {
                        let mut message = Vec::new();
                        while let Some(Ok(chunk)) = events.next().await {
                            message.extend_from_slice(&chunk);
                        }
                        let _ = tx.send(sse::message_event(&message));
                    }
                    None
                }
                Ok(response) => Some(format!(
                    "the MCP server answered HTTP {}",
                    response.status()
                )),
                Err(reason) => Some(reason),
            },
            FromClient::Reply(reply) => {
                send(reply);
                None
            }
            FromClient::Ask(_) | FromClient::Consumed => None,
        };
        if let (Some(reason), Some((Some(id), _))) = (reply, peek(&body)) {
            let error = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":-32000,\"message\":{}}}}}",
                crate::guard::json_string(&reason)
            );
            let _ = relay.server_message(error.as_bytes());
            send(error.into_bytes());
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|m| (Ok::<_, std::convert::Infallible>(Bytes::from(m)), rx))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", EVENT_STREAM)
        .header("cache-control", "no-cache")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response())
}

/// The listener every HTTP transport serves on: accepted connections get `TCP_NODELAY`, so a
/// streamed answer's small writes are not held back by Nagle's algorithm until the client's
/// delayed ACK (~40 ms per request on a kept-alive connection).
type NoDelayListener = axum::serve::TapIo<tokio::net::TcpListener, fn(&mut tokio::net::TcpStream)>;

fn no_delay(stream: &mut tokio::net::TcpStream) {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!(target: "loopguard::mcp", error = %e, "cannot set TCP_NODELAY");
    }
}

async fn listen(addr: &str) -> Result<NoDelayListener, McpError> {
    use axum::serve::ListenerExt;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| McpError::Io(format!("cannot listen on {addr}"), e))?;
    if let Ok(local) = listener.local_addr() {
        // Tests and scripts read the real port from this line when ADDR ends with :0.
        eprintln!("loopguard mcp: listening on http://{local}");
    }
    Ok(listener.tap_io(no_delay as fn(&mut tokio::net::TcpStream)))
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = ctrl_c.await;
        }
    }
}

pub(crate) async fn run_upstream(
    guard: Arc<GuardLayer>,
    options: ProxyOptions,
    url: &str,
    addr: &str,
) -> Result<i32, McpError> {
    let url = parse_url(url)?;
    let naming = Naming::new(&options, url.host_str().unwrap_or("upstream").to_owned());
    let proxy = Arc::new(UpstreamProxy {
        http: http_client()?,
        url,
        sessions: Sessions::new(guard, naming),
    });
    let app = axum::Router::new()
        .fallback(serve_upstream)
        .with_state(proxy);
    let listener = listen(addr).await?;
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown_signal())
        .await
        .map_err(|e| McpError::Io("HTTP server".to_owned(), e))?;
    Ok(0)
}

// ---------------------------------------------------------------------------------------
// --listen ADDR -- COMMAND: one server process per session.

#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<std::borrow::Cow<'a, str>>,
}

fn peek(message: &[u8]) -> Option<(Option<String>, bool)> {
    let p = serde_json::from_slice::<Peek<'_>>(message).ok()?;
    Some((p.id.map(|i| i.get().trim().to_owned()), p.method.is_some()))
}

type Outbox = mpsc::UnboundedSender<Vec<u8>>;

#[derive(Default)]
struct Routes {
    /// Requests waiting for their response, by raw id, in the order they were sent.
    waiting: Vec<(String, Outbox)>,
    /// The GET stream, if the client opened one.
    standalone: Option<Outbox>,
    /// Server messages that had no stream to go to.
    queued: Vec<Vec<u8>>,
}

struct ChildSession {
    relay: Arc<Relay>,
    stdin: tokio::sync::Mutex<ChildStdin>,
    routes: Mutex<Routes>,
    child: tokio::sync::Mutex<Child>,
    /// The last request from the client or answer to it.
    last_active: Mutex<Instant>,
}

impl ChildSession {
    fn routes(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn touch(&self) {
        *self.last_active.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }

    /// Since when the session is idle: no request waits for its answer and no GET stream
    /// is open. `None` while busy.
    fn idle_since(&self) -> Option<Instant> {
        let routes = self.routes();
        let busy = routes.waiting.iter().any(|(_, o)| !o.is_closed())
            || routes.standalone.as_ref().is_some_and(|o| !o.is_closed());
        drop(routes);
        (!busy).then(|| *self.last_active.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// A message from the server goes to the stream of the request it answers; anything
    /// else (notifications, the server's requests) to the newest open request stream, else
    /// the GET stream, else it waits for one.
    fn route(&self, message: Vec<u8>) {
        let mut routes = self.routes();
        if let Some((Some(id), false)) = peek(&message) {
            if let Some(i) = routes.waiting.iter().position(|(w, _)| *w == id) {
                let (_, outbox) = routes.waiting.remove(i);
                let _ = outbox.send(message);
                drop(routes);
                self.touch();
                return; // dropping the sender ends that response stream
            }
        }
        if let Some((_, outbox)) = routes.waiting.last() {
            if outbox.send(message.clone()).is_ok() {
                return;
            }
        }
        if let Some(outbox) = &routes.standalone {
            if outbox.send(message.clone()).is_ok() {
                return;
            }
        }
        routes.queued.push(message);
    }

    async fn write(&self, message: &[u8]) -> std::io::Result<()> {
        let mut stdin = self.stdin.lock().await;
        stdin.write_all(message).await?;
        stdin.write_all(b"\n").await?;
        stdin.flush().await
    }
}

struct CommandProxy {
    command: Vec<OsString>,
    sessions: Sessions,
    children: Mutex<HashMap<String, Arc<ChildSession>>>,
    idle_ttl: Duration,
    max_sessions: usize,
}

impl CommandProxy {
    /// Ends a session: forgets it and ends its server process.
    fn end(&self, id: &str, why: &str) -> bool {
        let Some(session) = self
            .children
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id)
        else {
            return false;
        };
        self.sessions.remove(id);
        tracing::info!(target: "loopguard::mcp", session = %session.relay.session(), "session ended: {why}");
        tokio::spawn(async move {
            let _ = session.child.lock().await.start_kill();
        });
        true
    }

    /// Ends every session idle for `idle_ttl` or longer.
    fn reap(&self) {
        let now = Instant::now();
        let expired: Vec<String> = self
            .children
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(_, s)| {
                s.idle_since()
                    .is_some_and(|t| now.saturating_duration_since(t) >= self.idle_ttl)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            self.end(&id, &format!("idle for {:?} (--idle-ttl)", self.idle_ttl));
        }
    }

    /// Room for one more session: at the cap, the session idle the longest is ended.
    /// `false` when every session is busy.
    fn make_room(&self) -> bool {
        let oldest = {
            let children = self.children.lock().unwrap_or_else(|p| p.into_inner());
            if children.len() < self.max_sessions {
                return true;
            }
            children
                .iter()
                .filter_map(|(id, s)| s.idle_since().map(|t| (t, id.clone())))
                .min()
        };
        match oldest {
            Some((_, id)) => {
                self.end(&id, "the oldest idle session, at --max-sessions");
                true
            }
            None => false,
        }
    }

    fn child(&self, id: &str) -> Option<Arc<ChildSession>> {
        self.children
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    fn new_session_id() -> String {
        let random = || {
            std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish()
        };
        format!("{:016x}{:016x}", random(), random())
    }

    /// Starts the server for a new session and the task that routes its output.
    fn start(self: &Arc<Self>) -> Result<(String, Arc<ChildSession>), McpError> {
        let mut child = crate::stdio::spawn_server(&self.command)?;
        let stdin = child.stdin.take().ok_or(McpError::Pipe("stdin"))?;
        let stdout = child.stdout.take().ok_or(McpError::Pipe("stdout"))?;
        let id = Self::new_session_id();
        let session = Arc::new(ChildSession {
            relay: self.sessions.relay(Some(&id)),
            stdin: tokio::sync::Mutex::new(stdin),
            routes: Mutex::new(Routes::default()),
            child: tokio::sync::Mutex::new(child),
            last_active: Mutex::new(Instant::now()),
        });
        self.children
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), session.clone());
        let (proxy, s, sid) = (self.clone(), session.clone(), id.clone());
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout);
            let mut line = Vec::new();
            while read_line(&mut lines, &mut line, "the server").await {
                let message = trim_line(&line);
                if message.is_empty() {
                    continue;
                }
                let out = s
                    .relay
                    .server_message(message)
                    .unwrap_or_else(|| message.to_vec());
                s.route(out);
            }
            let status = s.child.lock().await.wait().await;
            let reason = match &status {
                Ok(st) => format!("the MCP server exited ({st}) before answering"),
                Err(e) => format!("the MCP server is gone: {e}"),
            };
            tracing::warn!(target: "loopguard::mcp", session = %sid, "{reason}");
            for error in s.relay.abandon(&reason) {
                s.route(error);
            }
            let mut routes = s.routes();
            routes.waiting.clear();
            routes.standalone = None;
            drop(routes);
            proxy
                .children
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&sid);
            proxy.sessions.remove(&sid);
        });
        Ok((id, session))
    }
}

fn sse_response(session_id: Option<&str>, rx: mpsc::UnboundedReceiver<Vec<u8>>) -> Response {
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|m| {
            (
                Ok::<_, std::convert::Infallible>(Bytes::from(sse::message_event(&m))),
                rx,
            )
        })
    });
    let mut builder = Response::builder()
        .status(StatusCode::OK)
        .header("content-type", EVENT_STREAM)
        .header("cache-control", "no-cache");
    if let Some(id) = session_id {
        builder = builder.header(SESSION_ID, id);
    }
    builder
        .body(Body::from_stream(stream))
        .unwrap_or_else(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response())
}

async fn serve_command(State(proxy): State<Arc<CommandProxy>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let session_id = header_str(&parts.headers, SESSION_ID).map(str::to_owned);
    match parts.method {
        Method::GET => {
            let Some(session) = session_id.as_deref().and_then(|id| proxy.child(id)) else {
                return json_error(StatusCode::NOT_FOUND, "unknown or missing Mcp-Session-Id");
            };
            session.touch();
            let (tx, rx) = mpsc::unbounded_channel();
            {
                let mut routes = session.routes();
                for m in routes.queued.drain(..) {
                    let _ = tx.send(m);
                }
                routes.standalone = Some(tx);
            }
            sse_response(None, rx)
        }
        Method::DELETE => {
            let Some(id) = session_id else {
                return json_error(StatusCode::BAD_REQUEST, "missing Mcp-Session-Id");
            };
            if !proxy.end(&id, "DELETE from the client") {
                return json_error(StatusCode::NOT_FOUND, "unknown Mcp-Session-Id");
            }
            StatusCode::OK.into_response()
        }
        Method::POST => {
            let body = match axum::body::to_bytes(body, MAX_BODY).await {
                Ok(b) => b,
                Err(e) => {
                    return (StatusCode::PAYLOAD_TOO_LARGE, format!("request body: {e}"))
                        .into_response()
                }
            };
            let Some((id, is_request_or_notification)) = peek(&body) else {
                return json_response(
                    StatusCode::BAD_REQUEST,
                    br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: one JSON-RPC message per POST"}}"#.to_vec(),
                );
            };
            let (session, new_id) = match session_id.as_deref() {
                Some(sid) => match proxy.child(sid) {
                    Some(s) => {
                        s.touch();
                        (s, None)
                    }
                    None => return json_error(StatusCode::NOT_FOUND, "unknown Mcp-Session-Id"),
                },
                None if !proxy.make_room() => {
                    let message = format!(
                        "loopguard: every session is busy (--max-sessions {}); retry later",
                        proxy.max_sessions
                    );
                    tracing::warn!(target: "loopguard::mcp", "{message}");
                    return json_error(StatusCode::SERVICE_UNAVAILABLE, &message);
                }
                None => match proxy.start() {
                    Ok((sid, s)) => (s, Some(sid)),
                    Err(e) => {
                        tracing::error!(target: "loopguard::mcp", error = %e, "cannot start the server");
                        return json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string());
                    }
                },
            };
            match session.relay.client_message(&body) {
                FromClient::Forward => {}
                FromClient::Reply(reply) => return json_response(StatusCode::OK, reply),
                FromClient::Consumed => return StatusCode::ACCEPTED.into_response(),
                FromClient::Ask(ask) => {
                    // The question on this request's stream, then the call's answer: the
                    // server's, once the user said yes, or the refusal.
                    let (tx, rx) = mpsc::unbounded_channel();
                    let call_id = id.clone().unwrap_or_default();
                    tokio::spawn(async move {
                        let send = |m: Vec<u8>| {
                            let _ = tx.send(m);
                        };
                        match session.relay.settle(ask, send).await {
                            FromClient::Forward => {
                                session.routes().waiting.push((call_id, tx.clone()));
                                if let Err(e) = session.write(&body).await {
                                    tracing::error!(target: "loopguard::mcp", error = %e, "cannot forward the call the user let run");
                                }
                            }
                            FromClient::Reply(reply) => {
                                let _ = tx.send(reply);
                            }
                            FromClient::Ask(_) | FromClient::Consumed => {}
                        }
                    });
                    return sse_response(new_id.as_deref(), rx);
                }
            }
            let rx = match (&id, is_request_or_notification) {
                (Some(id), true) => {
                    let (tx, rx) = mpsc::unbounded_channel();
                    session.routes().waiting.push((id.clone(), tx));
                    Some(rx)
                }
                _ => None,
            };
            if let Err(e) = session.write(&body).await {
                return (
                    StatusCode::BAD_GATEWAY,
                    format!("the MCP server's stdin is closed: {e}"),
                )
                    .into_response();
            }
            match rx {
                Some(rx) => sse_response(new_id.as_deref(), rx),
                None => StatusCode::ACCEPTED.into_response(),
            }
        }
        _ => {
            let mut r = json_error(StatusCode::METHOD_NOT_ALLOWED, "GET, POST or DELETE");
            r.headers_mut().insert(
                axum::http::header::ALLOW,
                HeaderValue::from_static("GET, POST, DELETE"),
            );
            r
        }
    }
}

pub(crate) async fn run_command(
    guard: Arc<GuardLayer>,
    options: &ProxyOptions,
    addr: &str,
    command: &[OsString],
    naming: Arc<Naming>,
) -> Result<i32, McpError> {
    let (idle_ttl, max_sessions) = (options.idle_ttl, options.max_sessions);
    let proxy = Arc::new(CommandProxy {
        command: command.to_vec(),
        sessions: Sessions::new(guard, naming),
        children: Mutex::new(HashMap::new()),
        idle_ttl,
        max_sessions,
    });
    let reaper = {
        let proxy = Arc::downgrade(&proxy);
        let every = (idle_ttl / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                match proxy.upgrade() {
                    Some(p) => p.reap(),
                    None => break,
                }
            }
        })
    };
    let app = axum::Router::new()
        .fallback(serve_command)
        .with_state(proxy.clone());
    let listener = listen(addr).await?;
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown_signal())
        .await
        .map_err(|e| McpError::Io("HTTP server".to_owned(), e))?;
    reaper.abort();
    let children: Vec<_> = proxy
        .children
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .drain()
        .collect();
    for (_, session) in children {
        let _ = session.child.lock().await.start_kill();
    }
    Ok(0)
}

// ---------------------------------------------------------------------------------------
// --upstream URL (stdio to the client)

struct Bridge {
    http: reqwest::Client,
    url: reqwest::Url,
    headers: Vec<(HeaderName, HeaderValue)>,
    relay: Arc<Relay>,
    session_id: Mutex<Option<String>>,
    protocol: Mutex<Option<String>>,
    out: Outbox,
    get_opened: std::sync::atomic::AtomicBool,
}

impl Bridge {
    fn request(&self, method: Method) -> reqwest::RequestBuilder {
        let mut r = self
            .http
            .request(method, self.url.clone())
            .header("accept", format!("{JSON}, {EVENT_STREAM}"));
        for (n, v) in &self.headers {
            r = r.header(n, v);
        }
        if let Some(id) = self
            .session_id
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_deref()
        {
            r = r.header(SESSION_ID, id);
        }
        if let Some(v) = self
            .protocol
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_deref()
        {
            r = r.header(PROTOCOL_VERSION, v);
        }
        r
    }

    fn emit(&self, message: &[u8]) {
        let mut m = self
            .relay
            .server_message(message)
            .unwrap_or_else(|| message.to_vec());
        // The negotiated revision goes into every later request's MCP-Protocol-Version.
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&m) {
            if let Some(p) = v
                .pointer("/result/protocolVersion")
                .and_then(|p| p.as_str())
            {
                if v.pointer("/result/serverInfo").is_some() {
                    *self.protocol.lock().unwrap_or_else(|p| p.into_inner()) = Some(p.to_owned());
                }
            }
        }
        m.push(b'\n');
        let _ = self.out.send(m);
    }

    async fn relay_response(&self, response: reqwest::Response) -> Result<(), reqwest::Error> {
        let content_type = header_str(response.headers(), "content-type")
            .unwrap_or("")
            .to_owned();
        if content_type.starts_with(EVENT_STREAM) {
            let mut splitter = SseSplitter::default();
            let mut stream = response.bytes_stream();
            while let Some(chunk) = stream.next().await {
                for event in splitter.feed(&chunk?) {
                    if let Some(data) = sse::data(&event) {
                        self.emit(&data);
                    }
                }
            }
        } else if content_type.starts_with(JSON) {
            let body = response.bytes().await?;
            if !body.is_empty() {
                self.emit(&body);
            }
        }
        Ok(())
    }

    async fn post(self: Arc<Self>, message: Vec<u8>) {
        let id = peek(&message).and_then(|(id, is_request)| if is_request { id } else { None });
        let result = self
            .request(Method::POST)
            .header("content-type", JSON)
            .body(message)
            .send()
            .await;
        let failure = match result {
            Ok(response) => {
                if let Some(sid) = header_str(response.headers(), SESSION_ID) {
                    *self.session_id.lock().unwrap_or_else(|p| p.into_inner()) =
                        Some(sid.to_owned());
                }
                let status = response.status();
                if status.is_success() {
                    let opened = status == StatusCode::ACCEPTED
                        && self
                            .session_id
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .is_some()
                        && !self
                            .get_opened
                            .swap(true, std::sync::atomic::Ordering::SeqCst);
                    if opened {
                        tokio::spawn(self.clone().listen_get());
                    }
                    match self.relay_response(response).await {
                        Ok(()) => None,
                        Err(e) => Some(format!("the MCP server's response broke off: {e}")),
                    }
                } else {
                    let text = response.text().await.unwrap_or_default();
                    Some(format!(
                        "the MCP server answered HTTP {status}: {}",
                        text.trim()
                    ))
                }
            }
            Err(e) => Some(format!(
                "the MCP server at {} is unreachable: {e}",
                self.url
            )),
        };
        if let (Some(reason), Some(id)) = (failure, id) {
            tracing::error!(target: "loopguard::mcp", "{reason}");
            let error = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":-32000,\"message\":{}}}}}",
                crate::guard::json_string(&reason)
            );
            let _ = self.relay.server_message(error.as_bytes());
            let _ = self.out.send([error.as_bytes(), b"\n"].concat());
        }
    }

    /// The GET stream for the server's own messages (405: the server has none).
    async fn listen_get(self: Arc<Self>) {
        let response = match self
            .request(Method::GET)
            .header("accept", EVENT_STREAM)
            .send()
            .await
        {
            Ok(r) if r.status().is_success() => r,
            _ => return,
        };
        let _ = self.relay_response(response).await;
    }
}

pub(crate) async fn run_bridge(
    guard: Arc<GuardLayer>,
    options: ProxyOptions,
    url: &str,
    headers: &[String],
) -> Result<i32, McpError> {
    let url = parse_url(url)?;
    let mut parsed = Vec::new();
    for h in headers {
        let (n, v) = h
            .split_once(':')
            .ok_or_else(|| McpError::Invalid(format!("--header {h:?}: expected `Name: value`")))?;
        let n = HeaderName::from_bytes(n.trim().as_bytes())
            .map_err(|e| McpError::Invalid(format!("--header {h:?}: {e}")))?;
        let v = HeaderValue::from_str(v.trim())
            .map_err(|e| McpError::Invalid(format!("--header {h:?}: {e}")))?;
        parsed.push((n, v));
    }
    let naming = Naming::new(&options, url.host_str().unwrap_or("upstream").to_owned());
    let relay = Arc::new(Relay::new(guard, naming, &crate::connection_id()));
    let (out, mut outbox) = mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(m) = outbox.recv().await {
            if stdout.write_all(&m).await.is_err() {
                break;
            }
            if outbox.is_empty() && stdout.flush().await.is_err() {
                break;
            }
        }
        let _ = stdout.flush().await;
    });
    let bridge = Arc::new(Bridge {
        http: http_client()?,
        url,
        headers: parsed,
        relay: relay.clone(),
        session_id: Mutex::new(None),
        protocol: Mutex::new(None),
        out: out.clone(),
        get_opened: std::sync::atomic::AtomicBool::new(false),
    });
    let mut lines = BufReader::new(tokio::io::stdin());
    let mut line = Vec::new();
    let mut in_flight = tokio::task::JoinSet::new();
    while read_line(&mut lines, &mut line, "the client").await {
        let message = trim_line(&line);
        if message.is_empty() {
            continue;
        }
        match relay.client_message(message) {
            FromClient::Reply(mut reply) => {
                reply.push(b'\n');
                let _ = out.send(reply);
            }
            FromClient::Consumed => {}
            FromClient::Ask(ask) => {
                let (bridge, relay, out, message) =
                    (bridge.clone(), relay.clone(), out.clone(), message.to_vec());
                in_flight.spawn(async move {
                    let send = |mut m: Vec<u8>| {
                        m.push(b'\n');
                        let _ = out.send(m);
                    };
                    match relay.settle(ask, &send).await {
                        FromClient::Forward => bridge.post(message).await,
                        FromClient::Reply(reply) => send(reply),
                        FromClient::Ask(_) | FromClient::Consumed => {}
                    }
                });
            }
            FromClient::Forward => {
                let message = message.to_vec();
                // The initialize request must finish before anything else is sent, so the
                // session id is known.
                let is_initialize = serde_json::from_slice::<Peek<'_>>(&message)
                    .ok()
                    .and_then(|p| p.method.map(|m| m == "initialize"))
                    .unwrap_or(false);
                if is_initialize {
                    bridge.clone().post(message).await;
                } else {
                    in_flight.spawn(bridge.clone().post(message));
                }
            }
        }
    }
    // The client went away: end the session on the server.
    in_flight.abort_all();
    if bridge
        .session_id
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .is_some()
    {
        let _ = bridge.request(Method::DELETE).send().await;
    }
    drop(bridge);
    drop(out);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), writer).await;
    Ok(0)
}
