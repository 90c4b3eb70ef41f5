//! Anthropic's Claude Code (and VS Code's agent running the hooks of
//! `.claude/settings.json`).
//!
//! Every event carries `session_id`, `transcript_path`, `cwd` and `hook_event_name`; the
//! tool events add `tool_name`, `tool_input` and `tool_use_id`, `PostToolUse` adds
//! `tool_response`, `PostToolUseFailure` adds `error` and `is_interrupt`, `SessionStart`
//! adds `source` (`startup`, `resume`, `clear`, `compact`), `PreCompact` and `PostCompact`
//! add `trigger`, `SessionEnd` adds `reason`, and `PostToolBatch` adds `tool_calls` (each
//! with `tool_name`, `tool_input`, `tool_use_id` and `tool_response`, the serialized
//! result the model saw). Most events carry `permission_mode`. Calls made inside a
//! subagent carry `agent_id` and `agent_type`. The field names follow Claude Code's hooks
//! reference (code.claude.com/docs/en/hooks, as of Claude Code 2.1.240).
//!
//! VS Code's agent runs the hooks of `.claude/settings.json` too, with `sessionId` and
//! `hookEventName` in place of `session_id` and `hook_event_name` (VS Code's agent hooks
//! reference, "Common input fields"): every field is read in both spellings, snake_case
//! first, so one install protects Claude Code and VS Code. Unknown fields are ignored, and
//! an event loopguard does not know is ignored without reading anything else, so newer
//! Claude Code versions keep working.
//!
//! | event | what loopguard does | what Claude Code is told |
//! |-------|---------------------|--------------------------|
//! | `PreToolUse` | the before-call check | a block: `permissionDecision: "deny"` with the detection message as the reason the model sees; an emitted warning: `additionalContext` |
//! | `PostToolUse`, `PostToolUseFailure` | records the outcome | a post-compaction abort: `continue: false` with a `stopReason` |
//! | `PostToolBatch` | records the outcome of each call no single outcome event recorded | a post-compaction abort, as above |
//! | `PostCompact`, `SessionStart` with `source: "compact"` | arms the post-compaction guard, once per compaction | nothing |
//! | `UserPromptSubmit` | starts a new run | nothing |
//! | `SessionEnd` | forgets the session | nothing |
//! | `PreCompact` (another hook may still block the compaction), `SubagentStart`, `SubagentStop`, anything else | nothing | nothing |
//!
//! The answer: `hookSpecificOutput.permissionDecision: "deny"` with
//! `permissionDecisionReason` stops a call (the reason is shown to the model);
//! `permissionDecision: "ask"` (`loopguard.onCritical: "ask"`) puts the call to the user
//! in Claude Code's permission prompt, with the reason;
//! `hookSpecificOutput.additionalContext` adds a warning to the model's context;
//! `continue: false` with `stopReason` stops the agent (after a call that ran, also
//! `decision: "block"` with `reason`); `systemMessage` is a notice for the user. Nothing to
//! say prints nothing, which lets the call go through Claude Code's own permission flow
//! (the hook never answers `allow`, which would skip the user's permission prompts).

use loopguard_core::{JsString, Value};
use serde_json::{json, Map};

use crate::protocol::{
    AgentError, AgentEvent, Answer, CallOutcome, Fields, Kind, Protocol, Rendered, ToolUse,
};

/// Claude Code's protocol.
pub struct ClaudeCode;

/// The camelCase spelling of a field, as VS Code's agent writes the fields of the Claude
/// Code hooks it runs.
fn camel(k: &str) -> Option<&'static str> {
    Some(match k {
        "session_id" => "sessionId",
        "hook_event_name" => "hookEventName",
        "permission_mode" => "permissionMode",
        "agent_id" => "agentId",
        "agent_type" => "agentType",
        "tool_name" => "toolName",
        "tool_input" => "toolInput",
        "tool_use_id" => "toolUseId",
        "tool_response" => "toolResponse",
        "tool_calls" => "toolCalls",
        "is_interrupt" => "isInterrupt",
        "error_message" => "errorMessage",
        _ => return None,
    })
}

/// A payload's fields in both spellings.
struct Both<'f, 'o, 'a>(&'f Fields<'o, 'a>);

impl<'o, 'a> Both<'_, 'o, 'a> {
    fn get(&self, k: &'static str) -> Option<&'o Value<'a>> {
        self.0
            .get(k)
            .or_else(|| camel(k).and_then(|c| self.0.get(c)))
    }

    fn string(&self, k: &'static str) -> Result<String, AgentError> {
        match self.get(k) {
            None => Err(AgentError::Missing(k)),
            Some(Value::String(s)) => Ok(s.to_string_lossy().into_owned()),
            Some(_) => Err(AgentError::Type(k, "a string")),
        }
    }

    fn opt_string(&self, k: &'static str) -> Result<Option<String>, AgentError> {
        match self.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.to_string_lossy().into_owned())),
            Some(_) => Err(AgentError::Type(k, "a string")),
        }
    }

    fn tool(&self) -> Result<ToolUse<'a>, AgentError> {
        let name = match self.get("tool_name") {
            Some(Value::String(s)) => s.clone(),
            None => return Err(AgentError::Missing("tool_name")),
            Some(_) => return Err(AgentError::Type("tool_name", "a string")),
        };
        let input = self
            .get("tool_input")
            .ok_or(AgentError::Missing("tool_input"))?
            .clone();
        let id = match self.get("tool_use_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(AgentError::Type("tool_use_id", "a string")),
        };
        Ok(ToolUse { name, input, id })
    }

    /// `tool_calls` of a `PostToolBatch`.
    fn batch(&self) -> Result<Vec<(ToolUse<'a>, Option<Value<'a>>)>, AgentError> {
        let Some(Value::Array(calls)) = self.get("tool_calls") else {
            return Err(match self.get("tool_calls") {
                None => AgentError::Missing("tool_calls"),
                Some(_) => AgentError::Type("tool_calls", "an array"),
            });
        };
        calls
            .iter()
            .map(|c| match c {
                Value::Object(o) => {
                    let f = Fields(o);
                    let b = Both(&f);
                    Ok((b.tool()?, b.get("tool_response").cloned()))
                }
                _ => Err(AgentError::Type("tool_calls", "an array of objects")),
            })
            .collect()
    }
}

impl Protocol for ClaudeCode {
    fn name(&self) -> &'static str {
        "claude-code"
    }

    fn keeps_session_ids(&self) -> bool {
        true
    }

    fn asks(&self) -> bool {
        true
    }

    fn read<'a>(&self, payload: &Fields<'_, 'a>) -> Result<AgentEvent<'a>, AgentError> {
        let f = Both(payload);
        let session = f.string("session_id")?;
        let name = f.string("hook_event_name")?;
        let kind = match name.as_str() {
            "PreToolUse" => Kind::Pre,
            "PostToolUse" | "PostToolUseFailure" => Kind::Post,
            "PostToolBatch" => Kind::Batch,
            "UserPromptSubmit" => Kind::Prompt,
            "PostCompact" => Kind::Compact,
            "SessionStart" => match f.opt_string("source")?.as_deref() {
                Some("compact") => Kind::Compact,
                _ => Kind::Ignore,
            },
            "SessionEnd" => Kind::End,
            _ => Kind::Ignore,
        };
        let mut ev = AgentEvent::new(kind, &name, &session);
        ev.claude_shaped = true;
        ev.logs_own_name = true;
        if kind == Kind::Ignore {
            return Ok(ev);
        }
        ev.cwd = f.opt_string("cwd")?;
        ev.subagent = f.opt_string("agent_id")?;
        ev.agent_type = f.opt_string("agent_type")?;
        ev.permission_mode = f.opt_string("permission_mode")?;
        f.opt_string("transcript_path")?;
        match name.as_str() {
            "PreToolUse" => ev.tool = Some(f.tool()?),
            "PostToolUse" => {
                ev.tool = Some(f.tool()?);
                let response = f
                    .get("tool_response")
                    .ok_or(AgentError::Missing("tool_response"))?;
                ev.outcome = Some(CallOutcome::Result(response.clone()));
            }
            "PostToolUseFailure" => {
                ev.tool = Some(f.tool()?);
                // `error` in Claude Code's hook reference; `error_message` in some
                // descriptions of it, accepted too.
                let text = match f.get("error").or_else(|| f.get("error_message")) {
                    None | Some(Value::Null) => JsString::from(""),
                    Some(Value::String(s)) => s.clone(),
                    Some(_) => return Err(AgentError::Type("error", "a string")),
                };
                let interrupt = match f.get("is_interrupt") {
                    None | Some(Value::Null) => false,
                    Some(Value::Bool(b)) => *b,
                    Some(_) => return Err(AgentError::Type("is_interrupt", "a boolean")),
                };
                ev.outcome = Some(CallOutcome::Error { text, interrupt });
            }
            "PostToolBatch" => ev.batch = f.batch()?,
            "SessionEnd" => {
                f.opt_string("reason")?;
            }
            _ => {}
        }
        Ok(ev)
    }

    fn render(&self, event: &AgentEvent<'_>, answer: &Answer) -> Rendered {
        render(&event.event, answer)
    }
}

/// Claude Code's answer JSON for an event named `event`: one line, or nothing when there
/// is nothing to say. Codex, Qwen Code, Factory Droid and Copilot's Claude-shaped events
/// read the same answer.
///
/// ```
/// use loopguard_agents::{claude_code, Answer};
/// let a = Answer { deny: Some("CRITICAL: …".into()), ..Answer::default() };
/// let json: serde_json::Value = serde_json::from_str(&claude_code::render("PreToolUse", &a).stdout).unwrap();
/// assert_eq!(json["hookSpecificOutput"]["permissionDecision"], "deny");
/// assert_eq!(claude_code::render("PreToolUse", &Answer::default()).stdout, "");
/// ```
pub fn render(event: &str, answer: &Answer) -> Rendered {
    if answer.is_empty() {
        return Rendered::default();
    }
    let mut out = Map::new();
    if let Some(stop) = &answer.stop {
        out.insert("continue".into(), json!(false));
        out.insert("stopReason".into(), json!(stop));
        if event == "PostToolUse" || event == "PostToolUseFailure" {
            out.insert("decision".into(), json!("block"));
            out.insert("reason".into(), json!(stop));
        }
    }
    // hookEventName first, as in Claude Code's documentation.
    let mut specific = Map::new();
    if let Some(reason) = &answer.deny {
        specific.insert("permissionDecision".into(), json!("deny"));
        specific.insert("permissionDecisionReason".into(), json!(reason));
    } else if let Some(reason) = &answer.ask {
        // Claude Code shows the reason to the user in its permission prompt.
        specific.insert("permissionDecision".into(), json!("ask"));
        specific.insert("permissionDecisionReason".into(), json!(reason));
    }
    if let Some(ctx) = &answer.context {
        specific.insert("additionalContext".into(), json!(ctx));
    }
    if !specific.is_empty() {
        let mut ordered = Map::new();
        ordered.insert("hookEventName".into(), json!(event));
        ordered.extend(specific);
        out.insert(
            "hookSpecificOutput".into(),
            serde_json::Value::Object(ordered),
        );
    }
    if let Some(n) = &answer.notice {
        out.insert("systemMessage".into(), json!(n));
    }
    Rendered::json(serde_json::Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value as Json;

    fn read(json: &str) -> Result<AgentEvent<'static>, AgentError> {
        let v = Fields::parse(json.as_bytes())?.into_owned();
        let Value::Object(o) = &v else { unreachable!() };
        ClaudeCode.read(&Fields(o)).map(|e| owned(e))
    }

    fn owned(e: AgentEvent<'_>) -> AgentEvent<'static> {
        AgentEvent {
            tool: e.tool.map(|t| ToolUse {
                name: t.name.into_owned(),
                input: t.input.into_owned(),
                id: t.id.map(JsString::into_owned),
            }),
            outcome: e.outcome.map(|o| match o {
                CallOutcome::Result(v) => CallOutcome::Result(v.into_owned()),
                CallOutcome::Error { text, interrupt } => CallOutcome::Error {
                    text: text.into_owned(),
                    interrupt,
                },
            }),
            batch: e
                .batch
                .into_iter()
                .map(|(t, r)| {
                    (
                        ToolUse {
                            name: t.name.into_owned(),
                            input: t.input.into_owned(),
                            id: t.id.map(JsString::into_owned),
                        },
                        r.map(Value::into_owned),
                    )
                })
                .collect(),
            kind: e.kind,
            event: e.event,
            session: e.session,
            cwd: e.cwd,
            subagent: e.subagent,
            agent_type: e.agent_type,
            permission_mode: e.permission_mode,
            tool_shown: e.tool_shown,
            claude_shaped: e.claude_shaped,
            logs_own_name: e.logs_own_name,
        }
    }

    #[test]
    fn every_event_is_read() {
        let base = r#""session_id":"s","transcript_path":"/t.jsonl","cwd":"/p""#;
        let tool = r#""tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_1""#;
        let cases = [
            (
                format!(r#"{{{base},"hook_event_name":"PreToolUse",{tool}}}"#),
                Kind::Pre,
            ),
            (
                format!(
                    r#"{{{base},"hook_event_name":"PostToolUse",{tool},"tool_response":{{"stdout":"a"}}}}"#
                ),
                Kind::Post,
            ),
            (
                format!(
                    r#"{{{base},"hook_event_name":"PostToolUseFailure",{tool},"error":"Exit code 1","is_interrupt":false}}"#
                ),
                Kind::Post,
            ),
            (
                format!(r#"{{{base},"hook_event_name":"UserPromptSubmit","prompt":"hi"}}"#),
                Kind::Prompt,
            ),
            (
                format!(r#"{{{base},"hook_event_name":"PreCompact","trigger":"auto"}}"#),
                Kind::Ignore,
            ),
            (
                format!(r#"{{{base},"hook_event_name":"SessionStart","source":"compact"}}"#),
                Kind::Compact,
            ),
            (
                format!(r#"{{{base},"hook_event_name":"SessionStart","source":"startup"}}"#),
                Kind::Ignore,
            ),
            (
                format!(r#"{{{base},"hook_event_name":"Stop","stop_hook_active":false}}"#),
                Kind::Ignore,
            ),
        ];
        for (json, kind) in cases {
            let e = read(&json).unwrap();
            assert_eq!(e.kind, kind, "{json}");
            assert_eq!(e.session, "s");
        }
    }

    /// VS Code's agent: camelCase common fields; snake_case wins when both are present; a
    /// missing field is named as Claude Code spells it.
    #[test]
    fn vs_code_payloads_are_read() {
        let post = r#"{"sessionId":"vs-1","hookEventName":"PostToolUse","toolName":"run_in_terminal","toolInput":{"command":"npm test"},"toolUseId":"tool-123","toolResponse":"1 failing"}"#;
        let e = read(post).unwrap();
        assert_eq!(e.session, "vs-1");
        assert_eq!(
            e.tool.as_ref().and_then(|t| t.name.as_str()),
            Some("run_in_terminal")
        );
        assert!(matches!(
            e.outcome,
            Some(CallOutcome::Result(Value::String(_)))
        ));
        let both = r#"{"session_id":"a","sessionId":"b","hook_event_name":"UserPromptSubmit"}"#;
        assert_eq!(read(both).unwrap().session, "a");
        let e = read(r#"{"sessionId":"b","hookEventName":"PreToolUse"}"#).unwrap_err();
        assert_eq!(e.to_string(), "hook payload: field `tool_name` is missing");
    }

    #[test]
    fn errors_name_the_field() {
        let e = read(r#"{"session_id":"s","hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_input":{},"error":5}"#).unwrap_err();
        assert_eq!(e, AgentError::Type("error", "a string"));
        let e = read(r#"{"session_id":"s","hook_event_name":"PostToolBatch","tool_calls":{}}"#)
            .unwrap_err();
        assert_eq!(e.field(), Some("tool_calls"));
        assert!(matches!(read("[1]"), Err(AgentError::NotAnObject)));
        assert!(matches!(read("{"), Err(AgentError::Json(_))));
    }

    #[test]
    fn batches_keep_calls_without_a_response() {
        let e = read(
            r#"{"session_id":"s","permission_mode":"acceptEdits","hook_event_name":"PostToolBatch",
                "tool_calls":[{"tool_name":"Read","tool_input":{"file_path":"/a"},"tool_use_id":"t1","tool_response":"x"},
                              {"tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"t2"}]}"#,
        )
        .unwrap();
        assert_eq!(e.permission_mode.as_deref(), Some("acceptEdits"));
        assert_eq!(e.batch.len(), 2);
        assert!(e.batch[0].1.is_some() && e.batch[1].1.is_none());
    }

    #[test]
    fn shapes_match_the_hook_reference() {
        let parse = |r: Rendered| serde_json::from_str::<Json>(&r.stdout).unwrap();
        let deny = parse(render("PreToolUse", &Answer::deny("why", "note")));
        assert_eq!(
            deny,
            json!({"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"why"},"systemMessage":"note"})
        );
        let warn = parse(render("PreToolUse", &Answer::context("careful")));
        assert_eq!(
            warn,
            json!({"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"careful"}})
        );
        let stop = parse(render("PostToolUse", &Answer::stop("loop")));
        assert_eq!(
            stop,
            json!({"continue":false,"stopReason":"loop","decision":"block","reason":"loop"})
        );
        let pre_stop = Answer {
            deny: Some("loop".into()),
            ..Answer::stop("loop")
        };
        let v = parse(render("PreToolUse", &pre_stop));
        assert_eq!(v["continue"], json!(false));
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], json!("deny"));
        assert!(v.get("decision").is_none());
        assert!(render("Stop", &Answer::default()).stdout.is_empty());
    }
}
