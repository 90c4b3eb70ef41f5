//! Kiro CLI.
//!
//! Payloads follow Kiro CLI's hooks documentation (kiro.dev/docs/cli/hooks): the hook
//! gets `hook_event_name` (`agentSpawn`, `userPromptSubmit`, `preToolUse`, `postToolUse`,
//! `stop`), `cwd`, and for tool events `tool_name` (`execute_bash`, `fs_read`,
//! `fs_write`, `@server/tool` for MCP, …), `tool_input` and, after the call,
//! `tool_response`. Hooks are configured per agent, in `hooks` of the agent's JSON file
//! (`~/.kiro/agents/NAME.json` or `.kiro/agents/NAME.json`).
//!
//! Answers: a `preToolUse` hook blocks the call by exiting with status 2; its standard
//! error is returned to the model as the reason. Other output of tool hooks is not shown
//! to the model, so a warning goes to standard error only.
//!
//! Session: **Kiro sends no session id.** loopguard keys the session on the working
//! directory (`kiro:cwd:/path`), the closest stable thing the payload has: two Kiro sessions
//! in the same directory at the same time share one loop history. A new prompt
//! (`userPromptSubmit`) starts a new run, so calls of earlier prompts stop counting; `stop`
//! is not an end (the session may go on). Compaction: none reported.

use serde_json::Value;

use crate::agent::{required, str_field, tool};
use crate::{AgentError, Kind, Normalized};

pub(crate) fn normalize(v: &Value) -> Result<Normalized, AgentError> {
    let event = required(v, "hook_event_name")?;
    let cwd = required(v, "cwd")?;
    let session = str_field(v, &["session_id", "sessionId"])
        .map(str::to_string)
        .unwrap_or_else(|| format!("cwd:{cwd}"));
    let kind = match event {
        "preToolUse" => Kind::Pre,
        "postToolUse" => Kind::Post,
        "userPromptSubmit" => Kind::Prompt,
        _ => return Ok(Normalized::ignore(event, &session)),
    };
    let mut n = Normalized::ignore(event, &session);
    n.kind = kind;
    n.cwd = Some(cwd.to_string());
    if matches!(kind, Kind::Pre | Kind::Post) {
        let mut t = tool(v, &["tool_name"], &["tool_input"], &["tool_use_id"])?;
        if kind == Kind::Post {
            t.response = Some(v.get("tool_response").cloned().unwrap_or(Value::Null));
        }
        n.tool = Some(t);
    }
    Ok(n)
}
