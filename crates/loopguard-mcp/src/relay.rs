//! The JSON-RPC relay of one connection: every message passes through as the bytes it came
//! in; only `tools/call` requests and their responses are read.
//!
//! Why not rmcp's typed handlers: rmcp's model types deserialize into structs that drop the
//! fields they do not know (a tool's `execution`, a newer revision's additions, vendor
//! extensions) and re-serialize in their own key order, so a proxy built on them could not
//! hand `tools/list` through byte for byte. The relay reads only what it needs with
//! `serde_json`'s borrowed `RawValue`s and uses rmcp's model for what it writes itself
//! (the block result).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use indexmap::IndexMap;
use rmcp::model::{CallToolResult, ContentBlock};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::guard::{json_string, Before, CallKey, CallOutcome, GuardLayer};

/// What a message from the client turns into.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FromClient {
    /// Send the bytes to the server unchanged.
    Forward,
    /// Do not send it; answer the client with this message.
    Reply(Vec<u8>),
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
}

/// One client connection (a run of the guard's session).
#[derive(Debug)]
pub(crate) struct Relay {
    guard: Arc<GuardLayer>,
    session: String,
    run: String,
    state: Mutex<State>,
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
struct ErrorPeek {
    #[serde(default)]
    message: Option<String>,
}

/// How many `tools/call` requests a JSON-RPC batch (an array) holds; 0 for anything else.
fn batch_calls(message: &[u8]) -> usize {
    serde_json::from_slice::<Vec<&RawValue>>(message)
        .map(|items| {
            items
                .iter()
                .filter_map(|m| serde_json::from_str::<Peek<'_>>(m.get()).ok())
                .filter(|p| p.id.is_some() && p.method.as_deref() == Some("tools/call"))
                .count()
        })
        .unwrap_or(0)
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
    pub(crate) fn new(guard: Arc<GuardLayer>, session: String, run: String) -> Self {
        Relay {
            guard,
            session,
            run,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A message from the client. Bytes that are not a JSON-RPC object are forwarded for the
    /// server to answer (transparency includes its parse errors).
    pub(crate) fn client_message(&self, message: &[u8]) -> FromClient {
        let Ok(peek) = serde_json::from_slice::<Peek<'_>>(message) else {
            let calls = batch_calls(message);
            if calls > 0 {
                // Not silently: the calls in a batch reach the server unguarded.
                tracing::warn!(
                    target: "loopguard::mcp",
                    calls,
                    "a JSON-RPC batch (MCP 2025-03-26) with {calls} tools/call request(s) is forwarded without loop detection: batches are not inspected"
                );
            }
            return FromClient::Forward;
        };
        let Some(method) = peek.method.as_deref() else {
            return FromClient::Forward; // a response to a server-to-client request
        };
        let Some(id) = peek.id else {
            if method == "notifications/cancelled" {
                if let Some(p) = peek
                    .params
                    .and_then(|p| serde_json::from_str::<CancelParams<'_>>(p.get()).ok())
                {
                    // The server may never answer a cancelled request: its call has no outcome.
                    self.state().requests.remove(&id_key(p.request_id));
                }
            }
            return FromClient::Forward;
        };
        if method != "tools/call" {
            self.state().requests.insert(id_key(id), None);
            return FromClient::Forward;
        }
        let Some(params) = peek
            .params
            .and_then(|p| serde_json::from_str::<CallParams<'_>>(p.get()).ok())
        else {
            // A malformed call is the server's to reject.
            self.state().requests.insert(id_key(id), None);
            return FromClient::Forward;
        };
        let args = params
            .arguments
            .map_or_else(|| "{}".to_owned(), |a| a.get().to_owned());
        let call_id = call_id(id);
        let key = CallKey {
            session: &self.session,
            run: &self.run,
            call_id: &call_id,
            tool: &params.name,
        };
        let warning = match self.guard.before(key, &args) {
            Before::Block(message) => return FromClient::Reply(block_response(id, &message)),
            Before::Warn(message) => Some(message),
            Before::Allow => None,
        };
        self.state().requests.insert(
            id_key(id),
            Some(PendingCall {
                call_id,
                tool: params.name,
                args,
                warning,
            }),
        );
        FromClient::Forward
    }

    /// A message from the server: `None` to forward it unchanged, or the bytes to send instead.
    pub(crate) fn server_message(&self, message: &[u8]) -> Option<Vec<u8>> {
        if self.state().requests.is_empty() {
            return None;
        }
        let peek = serde_json::from_slice::<Peek<'_>>(message).ok()?;
        if peek.method.is_some() {
            return None; // a notification or a server-to-client request
        }
        let id = peek.id?;
        let call = self.state().requests.remove(&id_key(id))??;
        let key = CallKey {
            session: &self.session,
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
        Relay::new(guard, "s".to_owned(), "r".to_owned())
    }

    fn call(id: &str, tool: &str) -> Vec<u8> {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"q":1}}}}}}"#)
            .into_bytes()
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
            FromClient::Forward => panic!("the 11th unknown-tool call is blocked"),
        }
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
        // A batch passes through too, and its tools/call requests are counted for the
        // warning that says they were not guarded.
        let batch = format!(
            "[{},{},{}]",
            String::from_utf8(call("3", "t")).expect("utf-8"),
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
            String::from_utf8(call("\"x\"", "u")).expect("utf-8")
        );
        assert_eq!(batch_calls(batch.as_bytes()), 2);
        assert_eq!(batch_calls(b"[1,2]"), 0);
        assert_eq!(batch_calls(&call("4", "t")), 0);
        assert_eq!(r.client_message(batch.as_bytes()), FromClient::Forward);
    }
}
