//! The JSON-RPC relay of one connection: every message passes through as the bytes it came
//! in; only `tools/call` requests and their responses are read.
//!
//! Why not rmcp's typed handlers: rmcp's model types deserialize into structs that drop the
//! fields they do not know (a tool's `execution`, a newer revision's additions, vendor
//! extensions) and re-serialize in their own key order, so a proxy built on them could not
//! hand `tools/list` through byte for byte. The relay reads only what it needs with
//! `serde_json`'s borrowed `RawValue`s and uses rmcp's model for what it writes itself
//! (the block result, the elicitation request) and for what it reads of the client's answers
//! to it (the elicitation result, the client's capabilities).
//!
//! With `loopguard.onCritical: "ask"`, the first critical detection of a run asks the user
//! through MCP elicitation when the client declared the `elicitation` capability (form mode)
//! at initialize: the relay turns the call into a [`FromClient::Ask`], the transport sends
//! its `elicitation/create` request to the client and waits with [`Relay::settle`], and the
//! client's answer (a response to the proxy's own request id, taken by the relay and never
//! forwarded) lets the call through or refuses it with the block message.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use indexmap::IndexMap;
use rmcp::model::{
    CallToolResult, ContentBlock, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, ElicitationSchema,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use crate::guard::{json_string, Before, CallKey, CallOutcome, GuardLayer};
use crate::Naming;

/// What a message from the client turns into.
#[derive(Debug)]
pub(crate) enum FromClient {
    /// Send the bytes to the server unchanged.
    Forward,
    /// Do not send it; answer the client with this message.
    Reply(Vec<u8>),
    /// A `tools/call` to ask the user about: hand it to [`Relay::settle`], which sends the
    /// client the question and says what became of the call (`Forward`: send the client's
    /// message unchanged; `Reply`: the refusal).
    Ask(Ask),
    /// The client's answer to the proxy's own question: nothing to send anywhere.
    Consumed,
}

/// Equality for tests: an ask is equal to nothing.
impl PartialEq for FromClient {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (FromClient::Forward, FromClient::Forward)
            | (FromClient::Consumed, FromClient::Consumed) => true,
            (FromClient::Reply(a), FromClient::Reply(b)) => a == b,
            _ => false,
        }
    }
}

/// A call waiting for the user's answer (see [`Relay::settle`]).
#[derive(Debug)]
pub(crate) struct Ask {
    /// The `elicitation/create` request to send to the client.
    request: Vec<u8>,
    /// The request's id, as a map key.
    key: String,
    answer: oneshot::Receiver<Answer>,
    /// The call's id key and what is tracked once it is forwarded.
    call_key: String,
    call: PendingCall,
    /// The answer to the call when the user does not let it run.
    refusal: Vec<u8>,
}

/// What the user answered.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    /// Run the call.
    Yes,
    /// Do not (why, for the log).
    No(String),
}

/// One client message, decided (see `Relay::step`).
#[derive(Debug)]
enum Step {
    /// Forward it; then wait for the answer to `track` (its id key, and the call when it is
    /// a `tools/call`), and stop waiting for the request `forget` names (a cancellation).
    Forward {
        track: Option<(String, Option<PendingCall>)>,
        forget: Option<String>,
    },
    /// Answer it with this instead (a blocked call).
    Block(Vec<u8>),
    /// Ask the user first.
    Ask(Ask),
    /// The client's answer to the proxy's own request, taken.
    Consumed,
}

/// A `tools/call` the server is answering.
#[derive(Debug)]
struct PendingCall {
    call_id: String,
    tool: String,
    args: String,
    warning: Option<String>,
}

#[derive(Debug, Default)]
struct State {
    /// Client requests waiting for the server's answer, by the raw id; `Some` for tools/call.
    requests: HashMap<String, Option<PendingCall>>,
    /// The proxy's own questions waiting for the client's answer, by the raw id.
    asks: HashMap<String, oneshot::Sender<Answer>>,
}

/// One client connection (a run of the guard's session).
#[derive(Debug)]
pub(crate) struct Relay {
    guard: Arc<GuardLayer>,
    naming: Arc<Naming>,
    connection: String,
    /// The session's name; it changes once, when the server says its name.
    session: Mutex<Arc<str>>,
    run: String,
    /// Still waiting for the server's name (`serverInfo.name`).
    unnamed: AtomicBool,
    /// The client declared form elicitation at initialize: it can be asked.
    can_ask: AtomicBool,
    state: Mutex<State>,
}

#[derive(Deserialize)]
struct InitializeResult {
    #[serde(rename = "serverInfo")]
    server_info: ServerInfo,
}

#[derive(Deserialize)]
struct ServerInfo {
    name: String,
}

#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct CallParams<'a> {
    name: String,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct CancelParams<'a> {
    #[serde(borrow, rename = "requestId")]
    request_id: &'a RawValue,
}

#[derive(Deserialize)]
struct InitializeParams {
    #[serde(default)]
    capabilities: Option<Capabilities>,
}

#[derive(Deserialize)]
struct Capabilities {
    #[serde(default)]
    elicitation: Option<ElicitationCapability>,
}

/// Whether an `initialize` request's params declare form elicitation: `elicitation: {}`
/// (2025-06-18, where form was the only mode) or `elicitation: {form: {}}`; a client that
/// declares only `url` cannot answer a form.
fn declares_form_elicitation(params: Option<&RawValue>) -> bool {
    let Some(params) = params else { return false };
    let Ok(p) = serde_json::from_str::<InitializeParams>(params.get()) else {
        return false;
    };
    match p.capabilities.and_then(|c| c.elicitation) {
        Some(e) => e.form.is_some() || e.url.is_none(),
        None => false,
    }
}

/// `Some(can ask)` when `message` is an `initialize` request (for a transport whose
/// initialize request and later requests reach different relays).
pub(crate) fn initialize_can_ask(message: &[u8]) -> Option<bool> {
    let peek = serde_json::from_slice::<Peek<'_>>(message).ok()?;
    (peek.method.as_deref() == Some("initialize") && peek.id.is_some())
        .then(|| declares_form_elicitation(peek.params))
}

#[derive(Deserialize)]
struct ErrorPeek {
    #[serde(default)]
    message: Option<String>,
}

/// The id as a map key: its JSON text without surrounding whitespace.
fn id_key(id: &RawValue) -> String {
    id.get().trim().to_owned()
}

/// The id as a `callId`: a string id's value, a number's digits.
fn call_id(id: &RawValue) -> String {
    serde_json::from_str::<String>(id.get()).unwrap_or_else(|_| id.get().trim().to_owned())
}

impl Relay {
    /// The relay of one connection (`connection` is its run and the end of its session
    /// name).
    pub(crate) fn new(guard: Arc<GuardLayer>, naming: Arc<Naming>, connection: &str) -> Self {
        let (session, run) = naming.session_and_run(connection);
        Relay {
            guard,
            unnamed: AtomicBool::new(naming.wants_server_name()),
            can_ask: AtomicBool::new(false),
            naming,
            connection: connection.to_owned(),
            session: Mutex::new(session.into()),
            run,
            state: Mutex::new(State::default()),
        }
    }

    /// The session's name in the guard.
    pub(crate) fn session(&self) -> Arc<str> {
        self.session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// An initialize answer names the server: the session is named after it.
    fn learn_name(&self, result: &RawValue) {
        if !result.get().contains("\"serverInfo\"") {
            return;
        }
        if let Ok(init) = serde_json::from_str::<InitializeResult>(result.get()) {
            self.naming.learn(&init.server_info.name);
            let (session, _) = self.naming.session_and_run(&self.connection);
            tracing::info!(target: "loopguard::mcp", session = %session, "the server names the session");
            *self.session.lock().unwrap_or_else(|p| p.into_inner()) = session.into();
            self.unnamed.store(false, Ordering::Relaxed);
        }
    }

    /// The client can (or cannot) be asked: what its initialize request declared, when
    /// another relay saw it.
    pub(crate) fn set_can_ask(&self, can_ask: bool) {
        self.can_ask.store(can_ask, Ordering::Relaxed);
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A message from the client. Bytes that are not JSON-RPC are forwarded for the server
    /// to answer (transparency includes its parse errors).
    ///
    /// A batch (a JSON array, MCP 2025-03-26) is guarded call by call. When no call in it
    /// is blocked it is forwarded unchanged. When one is, the whole batch is answered here
    /// and nothing of it reaches the server: each blocked call gets its block result, every
    /// other request a JSON-RPC error saying it was not sent (send it again on its own),
    /// and its notifications are dropped with a warning. So no call of a batch runs
    /// unguarded, and nothing a client sent runs without it being told.
    pub(crate) fn client_message(&self, message: &[u8]) -> FromClient {
        if let Ok(items) = serde_json::from_slice::<Vec<&RawValue>>(message) {
            if !items.is_empty() {
                return self.client_batch(&items);
            }
        }
        match self.step(message, true) {
            Step::Block(reply) => FromClient::Reply(reply),
            Step::Ask(ask) => FromClient::Ask(ask),
            Step::Consumed => FromClient::Consumed,
            forward => {
                self.commit(forward);
                FromClient::Forward
            }
        }
    }

    /// Asks the user about a call: sends the question with `send` (one JSON-RPC message,
    /// without framing), waits for the answer (at most `--ask-timeout`; no answer in time
    /// cancels the question), and says what to do with the call: `Forward` the client's
    /// message (the user said yes; the call is tracked as any forwarded call) or `Reply`
    /// with the refusal (no, decline, cancel, an error, no answer). If the loop goes on
    /// after a yes, the guard's next critical decision of the run ends it.
    pub(crate) async fn settle(&self, ask: Ask, send: impl Fn(Vec<u8>)) -> FromClient {
        let Ask {
            request,
            key,
            answer,
            call_key,
            call,
            refusal,
        } = ask;
        send(request);
        let timeout = self.guard.ask_timeout();
        let answer = match tokio::time::timeout(timeout, answer).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Answer::No("the connection closed before the answer".to_owned()),
            Err(_) => {
                // The question stays known, so a late answer is still taken here rather
                // than sent on to the server as a response to a request it never made.
                send(
                    format!(
                        "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{{\"requestId\":{key},\"reason\":\"loopguard: no answer within {timeout:?}; the call was refused\"}}}}"
                    )
                    .into_bytes(),
                );
                Answer::No(format!("no answer within {timeout:?} (--ask-timeout)"))
            }
        };
        let session = self.session();
        match answer {
            Answer::Yes => {
                tracing::warn!(target: "loopguard::mcp", "ask {} in {session}: the user let it run; if the loop goes on, the next critical ends the run", call.tool);
                self.state().requests.insert(call_key, Some(call));
                FromClient::Forward
            }
            Answer::No(why) => {
                tracing::warn!(target: "loopguard::mcp", "ask {} in {session}: refused ({why})", call.tool);
                FromClient::Reply(refusal)
            }
        }
    }

    /// The question of an ask: the tool, the loop, and "run it anyway?" as one required
    /// boolean (a form every elicitation client can render).
    fn ask(
        &self,
        tool: &str,
        message: &str,
        detector: &str,
        count: u64,
        id: &RawValue,
        call: PendingCall,
    ) -> Ask {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let key = format!("\"loopguard-ask-{}\"", NEXT.fetch_add(1, Ordering::Relaxed));
        let text = format!(
            "loopguard stopped a call to the tool `{tool}`: it looks like a loop ({detector}, count {count}).\n\n{message}\n\nRun it anyway? If you let it run and the loop goes on, the next loop detected ends the run."
        );
        let schema = ElicitationSchema::builder()
            .required_bool_property("run", |b| {
                b.title("Run it anyway?")
                    .description(format!(
                        "Yes runs this call of `{tool}` once more; no refuses it."
                    ))
                    .with_default(false)
            })
            .build_unchecked();
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: text,
            requested_schema: schema,
        };
        let params = serde_json::to_string(&params).unwrap_or_else(|_| "{}".to_owned());
        let request = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{key},\"method\":\"elicitation/create\",\"params\":{params}}}"
        )
        .into_bytes();
        let (tx, rx) = oneshot::channel();
        self.state().asks.insert(key.clone(), tx);
        Ask {
            request,
            key,
            answer: rx,
            call_key: id_key(id),
            call,
            refusal: block_response(id, message),
        }
    }

    /// The client's answer to one of the proxy's questions: `true` when `id` was one.
    fn take_answer(
        &self,
        id: &RawValue,
        result: Option<&RawValue>,
        error: Option<&RawValue>,
    ) -> bool {
        let Some(tx) = self.state().asks.remove(&id_key(id)) else {
            return false;
        };
        let answer = match (result, error) {
            (Some(result), _) => match serde_json::from_str::<ElicitResult>(result.get()) {
                Ok(r) => match r.action {
                    ElicitationAction::Accept => {
                        let yes = r
                            .content
                            .as_ref()
                            .and_then(|c| c.get("run"))
                            .and_then(serde_json::Value::as_bool)
                            == Some(true);
                        if yes {
                            Answer::Yes
                        } else {
                            Answer::No("the user answered no".to_owned())
                        }
                    }
                    ElicitationAction::Decline => Answer::No("the user declined".to_owned()),
                    _ => Answer::No("the user cancelled".to_owned()),
                },
                Err(e) => Answer::No(format!(
                    "the client's answer is not an elicitation result: {e}"
                )),
            },
            (None, Some(error)) => Answer::No(format!(
                "the client answered with an error: {}",
                error.get()
            )),
            (None, None) => {
                Answer::No("the client's answer has neither result nor error".to_owned())
            }
        };
        let _ = tx.send(answer);
        true
    }

    fn client_batch(&self, items: &[&RawValue]) -> FromClient {
        let steps: Vec<Step> = items
            .iter()
            .map(|m| self.step(m.get().as_bytes(), false))
            .collect();
        if !steps.iter().any(|s| matches!(s, Step::Block(_))) {
            for step in steps {
                self.commit(step);
            }
            return FromClient::Forward;
        }
        let mut replies = Vec::new();
        let mut dropped = 0usize;
        for step in steps {
            match step {
                Step::Block(reply) => replies.push(reply),
                Step::Forward {
                    track: Some((id, _)),
                    ..
                } => replies.push(not_sent(&id)),
                Step::Forward { track: None, .. } | Step::Consumed => dropped += 1,
                // `step` never asks inside a batch.
                Step::Ask(_) => {}
            }
        }
        tracing::warn!(
            target: "loopguard::mcp",
            requests = replies.len(),
            dropped,
            "a JSON-RPC batch held a blocked tools/call: loopguard answered the whole batch and sent none of it to the server ({dropped} notification(s) or response(s) in it dropped)"
        );
        let mut out = Vec::with_capacity(replies.iter().map(|r| r.len() + 1).sum::<usize>() + 2);
        out.push(b'[');
        for (i, r) in replies.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(r);
        }
        out.push(b']');
        FromClient::Reply(out)
    }

    /// What one client message means, before anything is recorded about it in the
    /// relay's state (a batch answered here must leave no pending request behind). The
    /// guard has seen the call already: a call it allowed but that is never sent stays in
    /// the history without an outcome, as a call whose result never came.
    ///
    /// `can_wait`: the message can wait for the user's answer to an ask. A batch cannot
    /// (its calls are answered together), so an ask in it is refused. Batches were removed
    /// by the MCP revision that brought elicitation (2025-06-18), so a client that can be
    /// asked does not send them; an answer to the proxy's question inside a batch is still
    /// taken (and left in the batch, which the server ignores as an unknown response).
    fn step(&self, message: &[u8], can_wait: bool) -> Step {
        let forward = |track, forget| Step::Forward { track, forget };
        let Ok(peek) = serde_json::from_slice::<Peek<'_>>(message) else {
            return forward(None, None);
        };
        let Some(method) = peek.method.as_deref() else {
            if let Some(id) = peek.id {
                if self.take_answer(id, peek.result, peek.error) {
                    return Step::Consumed;
                }
            }
            return forward(None, None); // a response to a server-to-client request
        };
        let Some(id) = peek.id else {
            let cancelled = (method == "notifications/cancelled")
                .then(|| {
                    peek.params
                        .and_then(|p| serde_json::from_str::<CancelParams<'_>>(p.get()).ok())
                })
                .flatten()
                // The server may never answer a cancelled request: its call has no outcome.
                .map(|p| id_key(p.request_id));
            return forward(None, cancelled);
        };
        if method == "initialize" {
            self.can_ask
                .store(declares_form_elicitation(peek.params), Ordering::Relaxed);
        }
        if method != "tools/call" {
            return forward(Some((id_key(id), None)), None);
        }
        let Some(params) = peek
            .params
            .and_then(|p| serde_json::from_str::<CallParams<'_>>(p.get()).ok())
        else {
            // A malformed call is the server's to reject.
            return forward(Some((id_key(id), None)), None);
        };
        let args = params
            .arguments
            .map_or_else(|| "{}".to_owned(), |a| a.get().to_owned());
        let call_id = call_id(id);
        let session = self.session();
        let key = CallKey {
            session: &session,
            run: &self.run,
            call_id: &call_id,
            tool: &params.name,
        };
        let warning = match self.guard.before(key, &args) {
            Before::Block(message) => return Step::Block(block_response(id, &message)),
            Before::Ask {
                message,
                detector,
                count,
            } => {
                if !can_wait || !self.can_ask.load(Ordering::Relaxed) {
                    // Nobody to ask: refused, as where a host cannot ask.
                    return Step::Block(block_response(id, &message));
                }
                let call = PendingCall {
                    call_id,
                    tool: params.name.clone(),
                    args,
                    warning: None,
                };
                return Step::Ask(self.ask(&params.name, &message, detector, count, id, call));
            }
            Before::Warn(message) => Some(message),
            Before::Allow => None,
        };
        forward(
            Some((
                id_key(id),
                Some(PendingCall {
                    call_id,
                    tool: params.name,
                    args,
                    warning,
                }),
            )),
            None,
        )
    }

    /// Records what a forwarded message leaves pending.
    fn commit(&self, step: Step) {
        if let Step::Forward { track, forget } = step {
            let mut state = self.state();
            if let Some(id) = forget {
                state.requests.remove(&id);
            }
            if let Some((id, call)) = track {
                state.requests.insert(id, call);
            }
        }
    }

    /// A message from the server: `None` to forward it unchanged, or the bytes to send instead.
    /// A batch of responses is read element by element; only the elements that change
    /// (a warning appended) are rewritten, the others keep their bytes.
    pub(crate) fn server_message(&self, message: &[u8]) -> Option<Vec<u8>> {
        if self.state().requests.is_empty() {
            return None;
        }
        if let Ok(items) = serde_json::from_slice::<Vec<&RawValue>>(message) {
            let rewritten: Vec<Option<Vec<u8>>> = items
                .iter()
                .map(|m| self.server_one(m.get().as_bytes()))
                .collect();
            if rewritten.iter().all(Option::is_none) {
                return None;
            }
            let mut out = Vec::with_capacity(message.len() + 256);
            out.push(b'[');
            for (i, (item, new)) in items.iter().zip(&rewritten).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                match new {
                    Some(bytes) => out.extend_from_slice(bytes),
                    None => out.extend_from_slice(item.get().as_bytes()),
                }
            }
            out.push(b']');
            return Some(out);
        }
        self.server_one(message)
    }

    fn server_one(&self, message: &[u8]) -> Option<Vec<u8>> {
        let peek = serde_json::from_slice::<Peek<'_>>(message).ok()?;
        if peek.method.is_some() {
            return None; // a notification or a server-to-client request
        }
        if self.unnamed.load(Ordering::Relaxed) {
            if let Some(result) = peek.result {
                self.learn_name(result);
            }
        }
        let id = peek.id?;
        let call = self.state().requests.remove(&id_key(id))??;
        let session = self.session();
        let key = CallKey {
            session: &session,
            run: &self.run,
            call_id: &call.call_id,
            tool: &call.tool,
        };
        if let Some(result) = peek.result {
            // The MCP profile hashes the result's content, structuredContent and isError.
            let outcome = CallOutcome::Result(result.get().to_owned());
            self.guard.after(key, &call.args, &outcome);
            if let Some(warning) = &call.warning {
                return append_warning(message, warning);
            }
        } else if let Some(error) = peek.error {
            let message = serde_json::from_str::<ErrorPeek>(error.get())
                .ok()
                .and_then(|e| e.message)
                .unwrap_or_else(|| error.get().to_owned());
            self.guard
                .after(key, &call.args, &CallOutcome::Error(message));
        }
        None
    }

    /// JSON-RPC errors for the requests the server will never answer (it exited).
    pub(crate) fn abandon(&self, reason: &str) -> Vec<Vec<u8>> {
        let requests = std::mem::take(&mut self.state().requests);
        requests
            .into_keys()
            .map(|id| {
                format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":-32000,\"message\":{}}}}}",
                    json_string(reason)
                )
                .into_bytes()
            })
            .collect()
    }
}

/// The answer to a request of a batch that was not sent because a call in the batch was
/// blocked.
fn not_sent(id: &str) -> Vec<u8> {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":-32000,\"message\":\"not sent: loopguard blocked a tools/call in the same batch; send this request again on its own\"}}}}"
    )
    .into_bytes()
}

/// The answer to a blocked call: a `CallToolResult` with `isError: true` whose text is the
/// block message, as the MCP spec asks for tool-level failures.
fn block_response(id: &RawValue, message: &str) -> Vec<u8> {
    let mut result = CallToolResult::error(vec![ContentBlock::text(message.to_owned())]);
    // `resultType` belongs to the 2026-07-28 revision; older clients do not expect it.
    result.result_type = None;
    let result = serde_json::to_string(&result).unwrap_or_else(|_| {
        format!(
            "{{\"content\":[{{\"type\":\"text\",\"text\":{}}}],\"isError\":true}}",
            json_string(message)
        )
    });
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{result}}}",
        id.get().trim()
    )
    .into_bytes()
}

/// The server's response with one more text item at the end of `result.content`; every other
/// member keeps its bytes and its place.
fn append_warning(message: &[u8], warning: &str) -> Option<Vec<u8>> {
    let mut outer: IndexMap<String, &RawValue> = serde_json::from_slice(message).ok()?;
    let result = outer.get("result")?;
    let mut inner: IndexMap<String, &RawValue> = serde_json::from_str(result.get()).ok()?;
    let mut content: Vec<&RawValue> = match inner.get("content") {
        Some(c) => serde_json::from_str(c.get()).ok()?,
        None => Vec::new(),
    };
    let item = serde_json::to_string(&ContentBlock::text(warning.to_owned())).ok()?;
    let item = RawValue::from_string(item).ok()?;
    content.push(&item);
    let content = RawValue::from_string(serde_json::to_string(&content).ok()?).ok()?;
    inner.insert("content".to_owned(), &content);
    let inner = RawValue::from_string(serde_json::to_string(&inner).ok()?).ok()?;
    outer.insert("result".to_owned(), &inner);
    serde_json::to_vec(&outer).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_warning_keeps_other_members_and_order() {
        let msg = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"same"}],"structuredContent":{"b":1,"a":2},"isError":false}}"#;
        let out = append_warning(msg, "WARNING: x").expect("rewritten");
        assert_eq!(
            String::from_utf8(out).expect("utf-8"),
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"same"},{"type":"text","text":"WARNING: x"}],"structuredContent":{"b":1,"a":2},"isError":false}}"#
        );
    }

    #[test]
    fn block_response_is_an_error_result() {
        let id = RawValue::from_string("\"a-1\"".to_owned()).expect("raw");
        let out = String::from_utf8(block_response(&id, "CRITICAL: stop")).expect("utf-8");
        let v: serde_json::Value = serde_json::from_str(&out).expect("json");
        assert_eq!(v["id"], "a-1");
        assert_eq!(v["result"]["isError"], true);
        assert_eq!(v["result"]["content"][0]["type"], "text");
        assert_eq!(v["result"]["content"][0]["text"], "CRITICAL: stop");
        assert!(v["result"].get("resultType").is_none());
    }

    fn relay(options: crate::ProxyOptions) -> Relay {
        let guard = Arc::new(GuardLayer::new(&options).expect("guard"));
        let naming = crate::Naming::new(
            &crate::ProxyOptions::builder().session_key("s").build(),
            "x".to_owned(),
        );
        Relay::new(guard, naming, "r")
    }

    fn call(id: &str, tool: &str) -> Vec<u8> {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"q":1}}}}}}"#)
            .into_bytes()
    }

    /// Strict profile: identical failing results are blocked, and the retry (the run's
    /// second critical) ends the run; the proxy refuses it and its `--log` record says
    /// `abort`, as replay and serve do.
    #[test]
    fn an_ended_run_is_refused_and_logged_as_abort() {
        let dir = std::env::temp_dir().join(format!("lg-mcp-abort-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let config = loopguard_core::OpenClawConfig::from_json5(
            r#"{tools:{loopDetection:{enabled:true}},loopguard:{profile:"strict"}}"#,
        )
        .expect("config")
        .config;
        let r = relay(
            crate::ProxyOptions::builder()
                .config(config)
                .log_file(&dir)
                .build(),
        );
        let mut refused = Vec::new();
        for i in 0..12 {
            match r.client_message(&call(&i.to_string(), "read")) {
                FromClient::Forward => {
                    let answer = format!(
                        r#"{{"jsonrpc":"2.0","id":{i},"result":{{"content":[{{"type":"text","text":"ENOENT"}}],"isError":true}}}}"#
                    );
                    let _ = r.server_message(answer.as_bytes());
                }
                FromClient::Reply(_) => refused.push(i),
                other => panic!("call {i}: {other:?}"),
            }
        }
        let log = std::fs::read_to_string(&dir).expect("the --log file");
        let _ = std::fs::remove_file(&dir);
        let words: Vec<String> = log
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON record"))
            .filter(|v| v["type"] == "call")
            .map(|v| {
                format!(
                    "{}:{}",
                    v["decision"].as_str().unwrap_or(""),
                    v["detector"].as_str().unwrap_or("-")
                )
            })
            .collect();
        let ended: Vec<usize> = (0..words.len())
            .filter(|&i| words[i].ends_with(":second_critical_abort"))
            .collect();
        assert!(!ended.is_empty(), "the run is ended: {words:?}");
        for &i in &ended {
            assert_eq!(words[i], "abort:second_critical_abort", "{words:?}");
            assert!(refused.contains(&i), "call {i} is refused: {refused:?}");
        }
        assert!(
            words[..ended[0]].iter().any(|w| w.starts_with("block:")),
            "a block came first: {words:?}"
        );
    }

    #[test]
    fn string_and_number_ids_unknown_tool_errors_block_at_the_threshold() {
        let r = relay(crate::ProxyOptions::builder().build());
        // A JSON-RPC error answer is the outcome's error: "Unknown tool" feeds
        // unknown_tool_repeat (threshold 10), which blocks whatever the arguments.
        for i in 0..10 {
            let id = if i % 2 == 0 {
                format!("\"c{i}\"")
            } else {
                i.to_string()
            };
            assert_eq!(
                r.client_message(&call(&id, "nope")),
                FromClient::Forward,
                "call {i}"
            );
            let answer = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32602,"message":"Unknown tool: nope"}}}}"#
            );
            assert_eq!(r.server_message(answer.as_bytes()), None);
        }
        match r.client_message(&call("\"last\"", "nope")) {
            FromClient::Reply(reply) => {
                let v: serde_json::Value = serde_json::from_slice(&reply).expect("json");
                assert_eq!(v["id"], "last");
                assert_eq!(v["result"]["isError"], true);
                assert!(v["result"]["content"][0]["text"]
                    .as_str()
                    .expect("text")
                    .contains("nope"));
            }
            other => panic!("the 11th unknown-tool call is blocked: {other:?}"),
        }
    }

    fn batch(items: &[Vec<u8>]) -> Vec<u8> {
        let parts: Vec<String> = items
            .iter()
            .map(|i| String::from_utf8(i.clone()).expect("utf-8"))
            .collect();
        format!("[{}]", parts.join(",")).into_bytes()
    }

    /// Batches (MCP 2025-03-26) are guarded call by call: their outcomes are recorded
    /// from the server's batch answer, and a batch holding a call to block is answered
    /// whole by the proxy, nothing of it sent.
    #[test]
    fn batches_are_guarded_call_by_call() {
        let r = relay(crate::ProxyOptions::builder().build());
        let progress =
            br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#.to_vec();
        // Ten batches of [unknown-tool call, resources/list, a notification]: forwarded;
        // the server's batch answers record ten "Unknown tool" errors.
        for i in 0..10 {
            let list = format!(r#"{{"jsonrpc":"2.0","id":"l{i}","method":"resources/list"}}"#);
            let b = batch(&[
                call(&i.to_string(), "nope"),
                list.into_bytes(),
                progress.clone(),
            ]);
            assert_eq!(r.client_message(&b), FromClient::Forward, "batch {i}");
            let answer = format!(
                r#"[{{"jsonrpc":"2.0","id":"l{i}","result":{{"resources":[]}}}},{{"jsonrpc":"2.0","id":{i},"error":{{"code":-32602,"message":"Unknown tool: nope"}}}}]"#
            );
            assert_eq!(r.server_message(answer.as_bytes()), None, "answer {i}");
        }
        assert!(r.state().requests.is_empty(), "every request was answered");
        // The 11th unknown-tool call, in a batch: the whole batch is answered here.
        let b = batch(&[
            call("\"last\"", "nope"),
            br#"{"jsonrpc":"2.0","id":"other","method":"tools/call","params":{"name":"fine","arguments":{}}}"#.to_vec(),
            progress,
        ]);
        let reply = match r.client_message(&b) {
            FromClient::Reply(reply) => reply,
            other => panic!("a batch with a call to block was answered: {other:?}"),
        };
        let v: serde_json::Value = serde_json::from_slice(&reply).expect("json");
        let items = v.as_array().expect("a batch answer");
        assert_eq!(
            items.len(),
            2,
            "one answer per request, none for the notification: {v}"
        );
        assert_eq!(items[0]["id"], "last");
        assert_eq!(items[0]["result"]["isError"], true);
        assert_eq!(items[1]["id"], "other");
        assert!(items[1]["error"]["message"]
            .as_str()
            .expect("message")
            .starts_with("not sent"));
        assert!(r.state().requests.is_empty(), "nothing of it is pending");
    }

    /// A warned call in a batch gets its warning appended in the server's batch answer;
    /// the answer's other elements keep their bytes.
    #[test]
    fn a_warning_is_appended_inside_a_batch_answer() {
        let r = relay(crate::ProxyOptions::builder().build());
        let same = r#"{"content":[{"type":"text","text":"same"}]}"#;
        let mut last = None;
        for i in 0..11 {
            let b = batch(&[call(&i.to_string(), "t")]);
            assert_eq!(r.client_message(&b), FromClient::Forward, "batch {i}");
            let answer = format!(
                r#"[{{"jsonrpc":"2.0","id":{i},"result":{same}}},{{"jsonrpc":"2.0","id":"unrelated","result":{{}}}}]"#
            );
            last = r.server_message(answer.as_bytes()).map(|b| (i, b));
            if last.is_some() {
                break;
            }
        }
        let (i, out) = last.expect("the 11th identical call is warned");
        assert_eq!(i, 10);
        let out = String::from_utf8(out).expect("utf-8");
        assert!(out.starts_with(r#"[{"jsonrpc":"2.0","id":10,"result":{"content":[{"type":"text","text":"same"},{"type":"text","text":"#), "{out}");
        assert!(
            out.ends_with(r#",{"jsonrpc":"2.0","id":"unrelated","result":{}}]"#),
            "{out}"
        );
    }

    #[test]
    fn form_elicitation_is_what_an_initialize_declares() {
        let init = |caps: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{caps},"clientInfo":{{"name":"c","version":"1"}}}}}}"#
            )
        };
        for (caps, can) in [
            (r#"{"elicitation":{}}"#, true),
            (r#"{"elicitation":{"form":{},"url":{}}}"#, true),
            (r#"{"elicitation":{"url":{}}}"#, false),
            (r#"{"sampling":{}}"#, false),
            ("{}", false),
        ] {
            assert_eq!(
                initialize_can_ask(init(caps).as_bytes()),
                Some(can),
                "{caps}"
            );
        }
        assert_eq!(initialize_can_ask(&call("1", "t")), None);
    }

    fn ask_relay() -> Relay {
        let config = loopguard_core::OpenClawConfig::from_json5(
            r#"{tools:{loopDetection:{enabled:true}},loopguard:{onCritical:"ask"}}"#,
        )
        .expect("config")
        .config;
        relay(crate::ProxyOptions::builder().config(config).build())
    }

    /// Twenty identical calls with identical answers: the next one is the run's first critical.
    fn loop_to_the_critical(r: &Relay) {
        for i in 0..20 {
            assert_eq!(
                r.client_message(&call(&i.to_string(), "t")),
                FromClient::Forward
            );
            let answer = format!(
                r#"{{"jsonrpc":"2.0","id":{i},"result":{{"content":[{{"type":"text","text":"same"}}]}}}}"#
            );
            let _ = r.server_message(answer.as_bytes());
        }
    }

    /// A client that declared elicitation is asked; its yes (a response to the proxy's id)
    /// is taken, the call goes on and its answer is tracked; the next critical ends the run.
    #[tokio::test]
    async fn an_ask_is_put_to_the_client_and_its_yes_forwards_the_call() {
        let r = Arc::new(ask_relay());
        let init = br#"{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"capabilities":{"elicitation":{}}}}"#;
        assert_eq!(r.client_message(init), FromClient::Forward);
        loop_to_the_critical(&r);
        let FromClient::Ask(ask) = r.client_message(&call("20", "t")) else {
            panic!("the 21st call is asked about")
        };
        let sent = Arc::new(Mutex::new(Vec::new()));
        let settled = {
            let (r, sent) = (r.clone(), sent.clone());
            tokio::spawn(async move { r.settle(ask, |m| sent.lock().expect("lock").push(m)).await })
        };
        let request = loop {
            if let Some(m) = sent.lock().expect("lock").first().cloned() {
                break m;
            }
            tokio::task::yield_now().await;
        };
        let request: serde_json::Value = serde_json::from_slice(&request).expect("json");
        assert_eq!(request["method"], "elicitation/create");
        assert_eq!(request["params"]["mode"], "form");
        assert_eq!(
            request["params"]["requestedSchema"]["required"],
            serde_json::json!(["run"])
        );
        let answer = format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"action":"accept","content":{{"run":true}}}}}}"#,
            request["id"]
        );
        assert_eq!(r.client_message(answer.as_bytes()), FromClient::Consumed);
        assert_eq!(settled.await.expect("settled"), FromClient::Forward);
        assert!(
            r.state().requests.contains_key("20"),
            "the call's answer is awaited"
        );
        // The loop goes on: the next critical ends the run, without a question.
        match r.client_message(&call("21", "t")) {
            FromClient::Reply(reply) => {
                let v: serde_json::Value = serde_json::from_slice(&reply).expect("json");
                assert_eq!(v["result"]["isError"], true);
            }
            other => panic!("the next critical is refused: {other:?}"),
        }
    }

    /// Without the capability, or inside a batch, nobody is asked: the call is refused.
    #[test]
    fn an_ask_without_elicitation_or_in_a_batch_is_refused() {
        let r = ask_relay();
        loop_to_the_critical(&r);
        assert!(matches!(
            r.client_message(&call("20", "t")),
            FromClient::Reply(_)
        ));
        let r = ask_relay();
        let init = br#"{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"capabilities":{"elicitation":{"form":{}}}}}"#;
        assert_eq!(r.client_message(init), FromClient::Forward);
        loop_to_the_critical(&r);
        assert!(matches!(
            r.client_message(&batch(&[call("20", "t")])),
            FromClient::Reply(_)
        ));
    }

    #[test]
    fn observe_mode_never_answers_for_the_server() {
        let r = relay(
            crate::ProxyOptions::builder()
                .mode(loopguard_core::Mode::Observe)
                .build(),
        );
        for i in 0..25 {
            assert_eq!(
                r.client_message(&call(&i.to_string(), "t")),
                FromClient::Forward,
                "call {i}"
            );
            let answer = format!(
                r#"{{"jsonrpc":"2.0","id":{i},"result":{{"content":[{{"type":"text","text":"same"}}]}}}}"#
            );
            // Shadow mode: what the model sees is never changed, warnings included.
            assert_eq!(r.server_message(answer.as_bytes()), None, "call {i}");
        }
    }

    #[test]
    fn a_cancelled_call_is_forgotten_and_a_crash_answers_pending_requests() {
        let r = relay(crate::ProxyOptions::builder().build());
        assert_eq!(r.client_message(&call("1", "t")), FromClient::Forward);
        assert_eq!(
            r.client_message(br#"{"jsonrpc":"2.0","id":2,"method":"resources/list"}"#),
            FromClient::Forward
        );
        let cancel =
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#;
        assert_eq!(r.client_message(cancel), FromClient::Forward);
        let errors = r.abandon("gone");
        assert_eq!(
            errors.len(),
            1,
            "only the resources/list request is still pending"
        );
        let v: serde_json::Value = serde_json::from_slice(&errors[0]).expect("json");
        assert_eq!(v["id"], 2);
        assert_eq!(v["error"]["message"], "gone");
        // Messages that are not JSON-RPC objects pass through for the server to answer.
        assert_eq!(r.client_message(b"not json"), FromClient::Forward);
        assert_eq!(r.client_message(b"[1,2]"), FromClient::Forward);
    }
}
