//! The guard's decision in each agent's answer.

use crate::claude_code::Reply;
use serde_json::{json, Map, Value};

use crate::{Agent, Kind, Normalized};

/// What the hook prints and how it exits.
pub(crate) struct Rendered {
    pub stdout: String,
    pub exit_code: i32,
    pub stderr: Vec<String>,
}

/// The decision's texts name the agent's tool, not the name the guard's profile used
/// (`Called run_shell_command with identical arguments`, not `Called Bash …`).
fn rename(text: &str, n: &Normalized) -> String {
    match &n.tool {
        Some(t) if t.cc_name != t.agent_name => text
            .replace(&format!(" {} ", t.cc_name), &format!(" {} ", t.agent_name))
            .replace(&format!(" {}:", t.cc_name), &format!(" {}:", t.agent_name)),
        _ => text.to_string(),
    }
}

fn line(v: Value) -> String {
    format!("{v}\n")
}

/// Renders `reply` (the Claude Code hook's decision for the event) for `agent`. `context`
/// is the warning to give now (a deferred one for agents that can only add context after
/// the call).
pub(crate) fn render(
    agent: Agent,
    n: &Normalized,
    reply: &Reply,
    context: Option<String>,
) -> Rendered {
    let deny = reply.deny.as_deref().map(|s| rename(s, n));
    let stop = reply.stop.as_deref().map(|s| rename(s, n));
    let notice = reply.notice.as_deref().map(|s| rename(s, n));
    let context = context.map(|s| rename(&s, n));
    let mut out = Rendered {
        stdout: String::new(),
        exit_code: 0,
        stderr: Vec::new(),
    };
    let claude = |event: &str| {
        let r = Reply {
            event: event.to_string(),
            deny: deny.clone(),
            context: context.clone(),
            stop: stop.clone(),
            notice: notice.clone(),
            logged: Vec::new(),
        };
        r.render()
    };
    match agent {
        Agent::Codex if n.kind == Kind::Pre => {
            // Codex rejects a PreToolUse answer holding `continue: false` or `stopReason`
            // as invalid and then runs the call (codex-rs/hooks/src/engine/output_parser.rs,
            // `unsupported_pre_tool_use_universal`): a denied call of a stopped run is only
            // denied.
            let r = Reply {
                event: n.event.clone(),
                deny: deny.clone(),
                context: context.clone(),
                notice: notice.clone(),
                ..Reply::default()
            };
            out.stdout = r.render();
        }
        Agent::Codex if stop.is_some() => {
            // `continue: false` ends Codex's turn; a `decision: "block"` beside it would
            // only replace the tool's output.
            let mut o = Map::new();
            o.insert("continue".into(), json!(false));
            o.insert("stopReason".into(), json!(stop));
            if let Some(m) = &notice {
                o.insert("systemMessage".into(), json!(m));
            }
            out.stdout = line(Value::Object(o));
        }
        Agent::ClaudeCode | Agent::Codex | Agent::Qwen | Agent::Factory => {
            out.stdout = claude(&n.event)
        }
        Agent::Copilot if n.claude_shaped => out.stdout = claude(&n.event),
        Agent::Copilot => {
            let mut o = Map::new();
            if let Some(reason) = deny.as_ref().or(stop.as_ref()) {
                if n.kind == Kind::Pre {
                    o.insert("permissionDecision".into(), json!("deny"));
                    o.insert("permissionDecisionReason".into(), json!(reason));
                }
            }
            if let Some(c) = &context {
                o.insert("additionalContext".into(), json!(c));
            }
            if !o.is_empty() {
                out.stdout = line(Value::Object(o));
            }
            if let Some(s) = &stop {
                out.stderr.push(s.clone());
            }
        }
        Agent::Gemini => {
            let mut o = Map::new();
            if let Some(reason) = &deny {
                o.insert("decision".into(), json!("deny"));
                o.insert("reason".into(), json!(reason));
            }
            if let Some(s) = &stop {
                o.insert("continue".into(), json!(false));
                o.insert("stopReason".into(), json!(s));
            }
            if let Some(c) = &context {
                o.insert(
                    "hookSpecificOutput".into(),
                    json!({"hookEventName": n.event, "additionalContext": c}),
                );
            }
            if let Some(m) = &notice {
                o.insert("systemMessage".into(), json!(m));
            }
            if !o.is_empty() {
                out.stdout = line(Value::Object(o));
            }
        }
        Agent::Cursor => {
            let mut o = Map::new();
            if let Some(reason) = deny.as_ref().or(stop.as_ref()) {
                if n.kind == Kind::Pre {
                    o.insert("permission".into(), json!("deny"));
                    o.insert(
                        "user_message".into(),
                        json!(notice.clone().unwrap_or_else(|| reason.clone())),
                    );
                    o.insert("agent_message".into(), json!(reason));
                }
            }
            if let Some(c) = &context {
                o.insert("additional_context".into(), json!(c));
            }
            if !o.is_empty() {
                out.stdout = line(Value::Object(o));
            }
        }
        Agent::Cline => {
            let mut o = Map::new();
            let cancel = deny.as_ref().or(stop.as_ref());
            o.insert("cancel".into(), json!(cancel.is_some()));
            if let Some(c) = &context {
                o.insert("contextModification".into(), json!(c));
            }
            if let Some(reason) = cancel {
                o.insert("errorMessage".into(), json!(reason));
            }
            out.stdout = line(Value::Object(o));
        }
        Agent::Windsurf | Agent::Kiro => {
            if let Some(reason) = deny.as_ref().or(stop.as_ref()) {
                if n.kind == Kind::Pre {
                    out.exit_code = 2;
                    out.stderr.push(reason.clone());
                } else {
                    out.stderr.push(reason.clone());
                }
            } else if let Some(c) = &context {
                out.stderr.push(c.clone());
            }
        }
    }
    out
}
