//! Cline's and Roo Code's task history (`api_conversation_history.json`).
//!
//! Both VS Code extensions keep each task in a folder of their global storage
//! (`…/globalStorage/saoudrizwan.claude-dev/tasks/<taskId>/` for Cline,
//! `…/rooveterinaryinc.roo-cline/tasks/<taskId>/` for Roo Code): `api_conversation_history.json`
//! is the conversation as the model saw it, one JSON array of Anthropic-style messages
//! `{role, content: [blocks], ts?, modelInfo?, metrics?}`; `ui_messages.json` is the panel's
//! copy of the same task (`{ts, type: "say" | "ask", …}`). Read beside the history
//! ([`adapt_task`]), the panel log's `api_req_started` records give the calls their
//! `usage`: the `n`-th request produced the `n`-th assistant message (the sum of
//! `tokensIn`, `tokensOut`, `cacheWrites`, `cacheReads`, and `cost`, shared among its
//! calls), attached only when the counts agree. On its own the panel log is refused: it words calls as the panel shows them
//! (its own tool names, no file tool results), not as the model made them and the hook saw
//! them. The history is recognised by its shape: a user message opening with Cline's `<task>` block or its
//! `<environment_details>`, or a tool result in Cline's words (`[NAME for '…'] Result:`).
//!
//! | block | becomes |
//! |-------|---------|
//! | assistant `tool_use` `{id, name, input}` (native tool calls) | a call |
//! | assistant text holding a tool in Cline's XML form (`<execute_command><command>…</command>…</execute_command>`, for the tools Cline and Roo Code define) | a call, the tags as arguments |
//! | user `tool_result` `{tool_use_id, content, is_error}` (Roo Code) | the outcome of that call (`is_error`: a failure) |
//! | user text `[NAME for '…'] Result:` / `[NAME] Result:` | the outcome of the oldest waiting call: the text after the header as the result, or a failure when it says `The tool execution failed` or starts `Error`; loopguard's own deny is a refusal |
//! | user text `Tool [NAME] was not executed because a tool has already been used in this message…` | a failure of the oldest waiting call (Cline runs one tool per message) |
//! | any other user message (the task, feedback, `[TASK RESUMPTION]`: a resumed task goes on in the same file, one session) | a run boundary |
//! | thinking, reasoning, plain text | ignored |
//!
//! Tools are mapped by Cline's row of the agents' tool table (`execute_command` is `Bash`
//! without `requires_approval`; Roo Code, a fork of Cline, shares the row) and judged with
//! the `claude-code` profile, as `loopguard hook cline` judges them. `line` is the message's
//! index (1 for the first); timestamps come from Roo Code's `ts`. Tokens: Cline's
//! `metrics.tokens` (`prompt + completion`), shared among the message's calls.

use loopguard_core::{JsString, Object, Value};

use crate::agent_log::{tokens_per_call, AgentLog, Ended};
use crate::common::{document_error, str_field};
use crate::{Adapted, Context, Diagnostic, DiagnosticKind, DocumentAdapter};

/// The tools Cline and Roo Code define, as their XML tags.
const XML_TOOLS: &[&str] = &[
    "execute_command",
    "read_file",
    "write_to_file",
    "replace_in_file",
    "apply_diff",
    "insert_content",
    "search_and_replace",
    "search_files",
    "list_files",
    "list_code_definition_names",
    "codebase_search",
    "browser_action",
    "use_mcp_tool",
    "access_mcp_resource",
    "ask_followup_question",
    "attempt_completion",
    "new_task",
    "switch_mode",
    "plan_mode_respond",
    "load_mcp_documentation",
    "fetch_instructions",
    "web_fetch",
    "update_todo_list",
];

/// A Cline or Roo Code task history.
///
/// ```
/// use loopguard_adapters::{cline::ClineHistory, Context, DocumentAdapter};
/// let doc = br#"[{"role":"user","content":[{"type":"text","text":"<task>\nfix it\n</task>"}]},
///  {"role":"assistant","content":[{"type":"text","text":"<execute_command>\n<command>make</command>\n<requires_approval>false</requires_approval>\n</execute_command>"}]},
///  {"role":"user","content":[{"type":"text","text":"[execute_command for 'make'] Result:\nCommand executed.\nOutput:\nok"}]}]"#;
/// let a = ClineHistory.adapt(doc, &Context::default()).unwrap();
/// assert!(a.diagnostics.is_empty());
/// assert_eq!(a.events[0].event.tool.as_ref().and_then(|t| t.as_str()), Some("Bash"));
/// assert!(a.events[0].event.args.get("requires_approval").is_none());
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct ClineHistory;

/// `true` for a Cline or Roo Code task history: an array of `{role, content}` messages with
/// Cline's task or environment block in a user message, or a result in Cline's words.
pub(crate) fn is_task_history(v: &Value<'_>) -> bool {
    let Value::Array(items) = v else {
        return false;
    };
    items.iter().take(4).any(|m| {
        str_field(m, "role") == Some("user")
            && user_texts(m).iter().any(|t| {
                t.starts_with("<task>")
                    || t.contains("<environment_details>")
                    || result_header(t).is_some()
            })
    })
}

/// The text blocks of a message (a string content is one block).
fn user_texts<'v>(m: &'v Value<'_>) -> Vec<&'v str> {
    match m.get("content") {
        Some(Value::String(s)) => s.as_str().into_iter().collect(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| str_field(b, "type") == Some("text"))
            .filter_map(|b| str_field(b, "text"))
            .collect(),
        _ => Vec::new(),
    }
}

/// The tool named by a result's header (`[NAME for '…'] Result:` or `[NAME] Result:`) and
/// the text after the header's line.
fn result_header(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix('[')?;
    let (first, body) = rest.split_once('\n').unwrap_or((rest, ""));
    let head = first.strip_suffix("] Result:")?;
    let name = head.split(" for ").next()?;
    name.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        .then_some((name, body))
}

/// The calls written in Cline's XML form in an assistant's text: `<tool>` blocks of the
/// known tools, each child tag an argument.
fn xml_calls(text: &str) -> Vec<(String, Value<'static>)> {
    let mut calls = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find('<') {
        let after = &rest[at + 1..];
        let Some(name_end) = after.find('>') else {
            break;
        };
        let name = &after[..name_end];
        if !XML_TOOLS.contains(&name) {
            rest = after;
            continue;
        }
        let close = format!("</{name}>");
        let inner = &after[name_end + 1..];
        let Some(end) = inner.find(&close) else {
            break;
        };
        calls.push((name.to_string(), xml_args(&inner[..end])));
        rest = &inner[end + close.len()..];
    }
    calls
}

/// The child tags of a tool block as arguments (`<command>make</command>` →
/// `{"command": "make"}`), their text trimmed of the line breaks around it.
fn xml_args(body: &str) -> Value<'static> {
    let mut entries: Vec<(JsString<'static>, Value<'static>)> = Vec::new();
    let mut rest = body;
    while let Some(at) = rest.find('<') {
        let after = &rest[at + 1..];
        let Some(name_end) = after.find('>') else {
            break;
        };
        let name = &after[..name_end];
        if name.is_empty() || name.starts_with('/') || name.contains(' ') {
            rest = after;
            continue;
        }
        let close = format!("</{name}>");
        let inner = &after[name_end + 1..];
        let Some(end) = inner.find(&close) else {
            rest = after;
            continue;
        };
        let value = inner[..end].trim_start_matches('\n').trim_end_matches('\n');
        entries.push((
            JsString::from(name.to_string()),
            Value::from(value.to_string()),
        ));
        rest = &inner[end + close.len()..];
    }
    Value::Object(Object::from_entries(entries))
}

/// A result's text as an outcome: a failure when Cline says the tool failed.
fn ended(body: &str) -> Ended {
    let t = body.trim_start();
    if t.starts_with("The tool execution failed") || t.starts_with("Error") {
        Ended::Failed(body.to_string())
    } else {
        Ended::Result(Value::from(body.to_string()))
    }
}

/// `true` for a Cline or Roo Code panel log (`ui_messages.json`): an array of
/// `{ts, type: "say" | "ask", say | ask, …}` records.
pub(crate) fn is_panel_log(v: &Value<'_>) -> bool {
    let Value::Array(items) = v else {
        return false;
    };
    !items.is_empty()
        && items.iter().take(8).all(|m| {
            m.get("ts").and_then(Value::as_f64).is_some()
                && match str_field(m, "type") {
                    Some(kind @ ("say" | "ask")) => str_field(m, kind).is_some(),
                    _ => false,
                }
        })
}

/// Why a panel log alone is not replayed.
const PANEL_ALONE: &str = "this is a Cline / Roo Code panel log (ui_messages.json): it shows \
the calls as the panel words them (`ask: \"tool\"` under the panel's own tool names, no result \
of a file tool), not as the model made them; replay api_conversation_history.json from the \
same task folder instead (its token and cost figures are then read from this file)";

/// The usage of one API request of a panel log (`say: "api_req_started"`).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Request {
    /// All tokens of the request: `tokensIn + tokensOut + cacheWrites + cacheReads`.
    tokens: u64,
    /// `cost`, in the provider's currency (0 when not given).
    cost: f64,
}

/// The API requests of a panel log, in order. `Err` when the document is not a panel log;
/// a request whose `text` is not Cline's JSON is counted without figures, with a
/// diagnostic (line 0: the history's lines are numbered, not the panel's records).
fn panel_requests(doc: &[u8], diags: &mut Vec<Diagnostic>) -> Result<Vec<Request>, String> {
    let value = loopguard_core::json::parse(doc).map_err(|e| {
        format!(
            "not JSON ({}): its token and cost figures are not read",
            document_error(doc, &e)
        )
    })?;
    if !is_panel_log(&value) && value.as_array().is_none_or(|a| !a.is_empty()) {
        return Err("not a Cline panel log: its token and cost figures are not read".into());
    }
    let Value::Array(records) = &value else {
        return Err("not an array".into());
    };
    let mut requests = Vec::new();
    for (i, r) in records.iter().enumerate() {
        if str_field(r, "say") != Some("api_req_started") {
            continue;
        }
        let info = str_field(r, "text")
            .and_then(|t| loopguard_core::json::parse(t.as_bytes()).ok())
            .filter(|v| v.as_object().is_some());
        let Some(info) = info else {
            diags.push(Diagnostic::new(
                0,
                DiagnosticKind::BadField,
                format!(
                    "ui_messages.json record {}: `text` of an api_req_started is not a JSON object; the request counts without tokens or cost",
                    i + 1
                ),
            ));
            requests.push(Request {
                tokens: 0,
                cost: 0.0,
            });
            continue;
        };
        let num = |k: &str| {
            info.get(k)
                .and_then(Value::as_f64)
                .filter(|x| x.is_finite() && *x >= 0.0)
                .unwrap_or(0.0)
        };
        let tokens = ["tokensIn", "tokensOut", "cacheWrites", "cacheReads"]
            .iter()
            .map(|k| num(k))
            .sum::<f64>();
        requests.push(Request {
            tokens: tokens as u64,
            cost: num("cost"),
        });
    }
    Ok(requests)
}

/// Gives each call the usage of the API request that produced it: the `n`-th request of
/// the panel log answered the `n`-th assistant message of the history (`assistants`, by
/// message number), shared evenly among that message's calls. When the counts differ the
/// requests cannot be placed: nothing is attached and a diagnostic says why.
fn attach_usage(adapted: &mut Adapted, assistants: &[u64], panel: &[u8]) {
    let mut diags = Vec::new();
    let requests = match panel_requests(panel, &mut diags) {
        Ok(r) => r,
        Err(why) => {
            adapted.diagnostics.push(Diagnostic::new(
                0,
                DiagnosticKind::BadField,
                format!("ui_messages.json beside it: {why}"),
            ));
            return;
        }
    };
    adapted.diagnostics.extend(diags);
    // An empty panel log (`[]`, a task opened but never sent) has no figures to give.
    if requests.is_empty() && panel.trim_ascii() == b"[]" {
        return;
    }
    if requests.len() != assistants.len() {
        adapted.diagnostics.push(Diagnostic::new(
            0,
            DiagnosticKind::Partial,
            format!(
                "ui_messages.json beside it records {} API requests, the history {} answers: a request cannot be matched to its answer, so no call gets its tokens or cost from it",
                requests.len(),
                assistants.len()
            ),
        ));
        return;
    }
    let calls_of = |line: u64, events: &[crate::SourcedEvent]| {
        events
            .iter()
            .filter(|e| e.line == line && e.event.kind == loopguard_events::EventKind::Call)
            .count() as u64
    };
    let per_line: Vec<(u64, u64, Request)> = assistants
        .iter()
        .zip(&requests)
        .map(|(line, r)| (*line, calls_of(*line, &adapted.events), *r))
        .filter(|(_, n, _)| *n > 0)
        .collect();
    for e in &mut adapted.events {
        if e.event.kind != loopguard_events::EventKind::Call {
            continue;
        }
        if let Some((_, n, r)) = per_line.iter().find(|(line, _, _)| *line == e.line) {
            let tokens = r.tokens / n;
            e.tokens = Some(tokens);
            e.event.usage = Some(loopguard_events::Usage {
                tokens,
                cost: r.cost / *n as f64,
            });
        }
    }
}

impl DocumentAdapter for ClineHistory {
    fn adapt(&self, doc: &[u8], ctx: &Context) -> Result<Adapted, Diagnostic> {
        adapt_task(doc, None, ctx)
    }
}

/// Reads a Cline or Roo Code task history, with the task's panel log (`ui_messages.json`
/// of the same folder) when there is one: each call then carries the `usage` (tokens and
/// cost) of the API request that produced it. A panel log given as the history is
/// refused with an error that says to read the history instead.
///
/// ```
/// use loopguard_adapters::{cline::adapt_task, Context};
/// let history = br#"[{"role":"user","content":[{"type":"text","text":"<task>\nfix it\n</task>"}]},
///  {"role":"assistant","content":[{"type":"text","text":"<execute_command>\n<command>make</command>\n</execute_command>"}]},
///  {"role":"user","content":[{"type":"text","text":"[execute_command for 'make'] Result:\nok"}]}]"#;
/// let panel = br#"[{"ts":1,"type":"say","say":"task","text":"fix it"},
///  {"ts":2,"type":"say","say":"api_req_started","text":"{\"tokensIn\":90,\"tokensOut\":10,\"cost\":0.5}"},
///  {"ts":3,"type":"ask","ask":"command","text":"make"}]"#;
/// let a = adapt_task(history, Some(panel), &Context::default()).unwrap();
/// let usage = a.events[0].event.usage.unwrap();
/// assert_eq!((usage.tokens, usage.cost), (100, 0.5));
/// assert!(adapt_task(panel, None, &Context::default()).is_err());
/// ```
pub fn adapt_task(doc: &[u8], panel: Option<&[u8]>, ctx: &Context) -> Result<Adapted, Diagnostic> {
    let value = loopguard_core::json::parse(doc).map_err(|e| document_error(doc, &e))?;
    if is_panel_log(&value) {
        return Err(Diagnostic::new(1, DiagnosticKind::BadField, PANEL_ALONE));
    }
    let Value::Array(messages) = &value else {
        return Err(Diagnostic::new(
            1,
            DiagnosticKind::BadField,
            "expected an array of messages",
        ));
    };
    let mut log = AgentLog::new("cline", ctx);
    let mut adapted = Adapted::default();
    let mut assistants = Vec::new();
    let out = &mut adapted.events;
    for (i, m) in messages.iter().enumerate() {
        let no = i as u64 + 1;
        let ts = m
            .get("ts")
            .and_then(Value::as_f64)
            .filter(|t| *t >= 0.0)
            .map_or(0, |t| t as u64);
        match str_field(m, "role") {
            Some("assistant") => {
                assistants.push(no);
                let mut calls: Vec<(Option<String>, String, Value<'static>)> = Vec::new();
                match m.get("content") {
                    Some(Value::Array(blocks)) => {
                        for (j, b) in blocks.iter().enumerate() {
                            match str_field(b, "type") {
                                Some("tool_use") => match str_field(b, "name") {
                                    Some(name) => calls.push((
                                        str_field(b, "id").map(str::to_string),
                                        name.to_string(),
                                        b.get("input").cloned().unwrap_or(Value::Null).into_owned(),
                                    )),
                                    None => adapted.diagnostics.push(Diagnostic::new(
                                        no,
                                        DiagnosticKind::BadField,
                                        format!("content[{j}]: a tool_use without `name`; skipped"),
                                    )),
                                },
                                Some("text") => {
                                    let text = str_field(b, "text").unwrap_or("");
                                    calls.extend(
                                        xml_calls(text).into_iter().map(|(n, a)| (None, n, a)),
                                    );
                                }
                                _ => {}
                            }
                        }
                    }
                    Some(Value::String(s)) => {
                        let text = s.to_string_lossy();
                        calls.extend(xml_calls(&text).into_iter().map(|(n, a)| (None, n, a)));
                    }
                    _ => {}
                }
                let total = m.get("metrics").and_then(|x| x.get("tokens")).map(|t| {
                    ["prompt", "completion"]
                        .iter()
                        .filter_map(|k| t.get(k).and_then(Value::as_f64))
                        .sum::<f64>()
                });
                let tokens = tokens_per_call(total, calls.len());
                for (id, name, args) in calls {
                    log.call(no, id, &name, &args, ts, tokens, out);
                }
            }
            Some("user") => {
                let mut results = false;
                if let Some(Value::Array(blocks)) = m.get("content") {
                    for b in blocks {
                        if str_field(b, "type") != Some("tool_result") {
                            continue;
                        }
                        results = true;
                        let text =
                            crate::common::content_text(b.get("content").unwrap_or(&Value::Null));
                        let end = if b.get("is_error").and_then(Value::as_bool) == Some(true) {
                            Ended::Failed(text)
                        } else {
                            ended(&text)
                        };
                        let id = str_field(b, "tool_use_id");
                        log.ended(no, id, end, ts, out);
                    }
                }
                for t in user_texts(m) {
                    if let Some((_, body)) = result_header(t) {
                        results = true;
                        log.ended(no, None, ended(body), ts, out);
                    } else if t.starts_with("Tool [") && t.contains("] was not executed") {
                        // A second call in one message, which Cline refuses to run.
                        results = true;
                        log.ended(no, None, Ended::Failed(t.to_string()), ts, out);
                    }
                }
                if !results {
                    log.prompt(out);
                }
            }
            _ => adapted.diagnostics.push(Diagnostic::new(
                no,
                DiagnosticKind::BadField,
                "field `role`: missing or neither `user` nor `assistant`; skipped",
            )),
        }
    }
    let diags = log.finish(out);
    adapted.diagnostics.extend(diags);
    if let Some(panel) = panel {
        attach_usage(&mut adapted, &assistants, panel);
    }
    adapted.diagnostics.sort_by_key(|d| d.line);
    Ok(adapted)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HISTORY: &[u8] = br#"[{"role":"user","content":[{"type":"text","text":"<task>\nrun\n</task>"}]},
        {"role":"assistant","content":[{"type":"text","text":"<execute_command>\n<command>make</command>\n</execute_command>"}]},
        {"role":"user","content":[{"type":"text","text":"[execute_command for 'make'] Result:\nok"}]},
        {"role":"assistant","content":[{"type":"text","text":"<execute_command>\n<command>make</command>\n</execute_command>"}]},
        {"role":"user","content":[{"type":"text","text":"[execute_command for 'make'] Result:\nok"}]}]"#;

    fn panel(requests: &[&str]) -> Vec<u8> {
        let mut records = vec![r#"{"ts":1,"type":"say","say":"task","text":"run"}"#.to_string()];
        for (i, text) in requests.iter().enumerate() {
            records.push(format!(
                r#"{{"ts":{},"type":"say","say":"api_req_started","text":{}}}"#,
                i + 2,
                serde_json_string(text)
            ));
        }
        format!("[{}]", records.join(",")).into_bytes()
    }

    fn serde_json_string(s: &str) -> String {
        let mut out = Vec::new();
        crate::common::write_value(&mut out, &Value::from(s.to_string()));
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn usage_is_attached_only_when_requests_and_answers_match() {
        let ctx = Context::default();
        let both = panel(&[
            r#"{"tokensIn":10,"tokensOut":5,"cacheReads":100,"cost":0.25}"#,
            r#"{"tokensIn":20,"tokensOut":5,"cost":0.5}"#,
        ]);
        let a = adapt_task(HISTORY, Some(&both), &ctx).unwrap();
        assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
        let usage: Vec<_> = a
            .events
            .iter()
            .filter_map(|e| e.event.usage)
            .map(|u| (u.tokens, u.cost))
            .collect();
        assert_eq!(usage, [(115, 0.25), (25, 0.5)]);
        // One request fewer than answers: nothing attached, and it says so.
        let short = panel(&[r#"{"tokensIn":10,"tokensOut":5}"#]);
        let a = adapt_task(HISTORY, Some(&short), &ctx).unwrap();
        assert!(a.events.iter().all(|e| e.event.usage.is_none()));
        assert_eq!(a.diagnostics.len(), 1);
        assert_eq!(a.diagnostics[0].kind, DiagnosticKind::Partial);
        assert!(a.diagnostics[0]
            .message
            .contains("1 API requests, the history 2"));
        // A request whose text is not JSON counts, without figures, named by its record.
        let bad = panel(&[r#"{"tokensIn":10}"#, "not json"]);
        let a = adapt_task(HISTORY, Some(&bad), &ctx).unwrap();
        assert_eq!(a.diagnostics.len(), 1, "{:?}", a.diagnostics);
        assert_eq!(a.diagnostics[0].kind, DiagnosticKind::BadField);
        assert!(
            a.diagnostics[0].message.contains("record 3"),
            "{}",
            a.diagnostics[0].message
        );
        let usage: Vec<_> = a.events.iter().filter_map(|e| e.event.usage).collect();
        assert_eq!(usage.len(), 2);
        assert_eq!(usage[1].tokens, 0);
        // A panel log that is not one: the history is read, the panel's problem reported.
        let a = adapt_task(HISTORY, Some(b"{\"nope\":1}"), &ctx).unwrap();
        assert_eq!(a.events.len(), 4);
        assert!(a.diagnostics[0].message.contains("not a Cline panel log"));
        let a = adapt_task(HISTORY, Some(b"[{\"ts\":1,"), &ctx).unwrap();
        assert!(
            a.diagnostics[0].message.contains("not JSON"),
            "{}",
            a.diagnostics[0].message
        );
        // The panel log read as the history: refused, naming the file to read instead.
        let e = adapt_task(&both, None, &ctx).unwrap_err();
        assert!(e.message.contains("api_conversation_history.json"));
        assert!(is_panel_log(&Value::parse(&both).unwrap()));
        assert!(!is_panel_log(&Value::parse(HISTORY).unwrap()));
    }

    #[test]
    fn headers_and_xml_calls() {
        assert_eq!(
            result_header("[read_file for 'a.rs'] Result:\nfn main"),
            Some(("read_file", "fn main"))
        );
        assert_eq!(
            result_header("[attempt_completion] Result:"),
            Some(("attempt_completion", ""))
        );
        assert_eq!(result_header("[not a header]"), None);
        let calls = xml_calls(
            "I'll run it.\n<thinking>x</thinking>\n<execute_command>\n<command>npm test</command>\n<requires_approval>false</requires_approval>\n</execute_command>",
        );
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].0, "execute_command");
        assert_eq!(
            calls[0].1,
            Value::parse(br#"{"command":"npm test","requires_approval":"false"}"#).unwrap()
        );
        // A tool block cut off at the end is not a call.
        assert!(xml_calls("<read_file><path>a</path>").is_empty());
        assert!(xml_calls("text <read_file").is_empty());
        assert_eq!(
            xml_args("<a<b>x</a<b> <path>p</path"),
            Value::parse(br#"{"a<b":"x"}"#).unwrap()
        );
    }
}
