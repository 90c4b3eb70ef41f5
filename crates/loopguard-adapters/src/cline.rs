//! Cline's and Roo Code's task history (`api_conversation_history.json`).
//!
//! Both VS Code extensions keep each task in a folder of their global storage
//! (`…/globalStorage/saoudrizwan.claude-dev/tasks/<taskId>/` for Cline,
//! `…/rooveterinaryinc.roo-cline/tasks/<taskId>/` for Roo Code): `api_conversation_history.json`
//! is the conversation as the model saw it, one JSON array of Anthropic-style messages
//! `{role, content: [blocks], ts?, modelInfo?, metrics?}`; `ui_messages.json` is the panel's
//! copy of the same task (`{ts, type: "say" | "ask", …}`) and is not read. The history is
//! recognised by its shape: a user message opening with Cline's `<task>` block or its
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

impl DocumentAdapter for ClineHistory {
    fn adapt(&self, doc: &[u8], ctx: &Context) -> Result<Adapted, Diagnostic> {
        let value = loopguard_core::json::parse(doc).map_err(|e| document_error(doc, &e))?;
        let Value::Array(messages) = &value else {
            return Err(Diagnostic::new(
                1,
                DiagnosticKind::BadField,
                "expected an array of messages",
            ));
        };
        let mut log = AgentLog::new("cline", ctx);
        let mut adapted = Adapted::default();
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
                    let mut calls: Vec<(Option<String>, String, Value<'static>)> = Vec::new();
                    match m.get("content") {
                        Some(Value::Array(blocks)) => {
                            for (j, b) in blocks.iter().enumerate() {
                                match str_field(b, "type") {
                                    Some("tool_use") => match str_field(b, "name") {
                                        Some(name) => calls.push((
                                            str_field(b, "id").map(str::to_string),
                                            name.to_string(),
                                            b.get("input")
                                                .cloned()
                                                .unwrap_or(Value::Null)
                                                .into_owned(),
                                        )),
                                        None => adapted.diagnostics.push(Diagnostic::new(
                                            no,
                                            DiagnosticKind::BadField,
                                            format!(
                                                "content[{j}]: a tool_use without `name`; skipped"
                                            ),
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
                            let text = crate::common::content_text(
                                b.get("content").unwrap_or(&Value::Null),
                            );
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
        adapted.diagnostics.sort_by_key(|d| d.line);
        Ok(adapted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
