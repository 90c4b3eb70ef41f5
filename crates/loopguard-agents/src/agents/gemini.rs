//! Gemini CLI (`@google/gemini-cli`).
//!
//! Payloads follow Gemini CLI's hooks reference (`docs/hooks/reference.md` and
//! `packages/core/src/hooks/hookEventHandler.ts` in github.com/google-gemini/gemini-cli):
//! every event carries `session_id`, `transcript_path`, `cwd`, `hook_event_name`,
//! `timestamp`; `BeforeTool` adds `tool_name` (`run_shell_command`, `read_file`,
//! `replace`, `mcp_<server>_<tool>`, …) and `tool_input`; `AfterTool` adds
//! `tool_response` (`{llmContent, returnDisplay, error?}`); `PreCompress` adds `trigger`;
//! `BeforeAgent` adds `prompt`. There is no call id.
//!
//! Answers: `BeforeTool` is denied by a top-level `{"decision":"deny","reason":…}` (the
//! reason reaches the model as the tool's error; Claude Code's `hookSpecificOutput` deny
//! is ignored by Gemini CLI and the command would run). `BeforeTool` cannot add context,
//! so a warning is kept and given with the call's result through `AfterTool`'s
//! `hookSpecificOutput.additionalContext`. `continue: false` with `stopReason` stops the
//! agent.
//!
//! Session: `session_id`. Runs: `BeforeAgent` (one per prompt). Compaction: Gemini CLI
//! only reports `PreCompress` (advisory, it cannot be blocked), so that arms the
//! post-compaction guard for the calls after it. Shell results carry a `Process Group
//! PGID: N` line that changes on every call (dropped), and the model rewords the
//! `description` argument on every call (not hashed).

use serde_json::Value;

use crate::agent::{required, str_field, tool};
use crate::{AgentError, Kind, Normalized};

pub(crate) fn normalize(v: &Value) -> Result<Normalized, AgentError> {
    let event = required(v, "hook_event_name")?;
    let session = required(v, "session_id")?;
    let kind = match event {
        "BeforeTool" => Kind::Pre,
        "AfterTool" => Kind::Post,
        "BeforeAgent" => Kind::Prompt,
        "PreCompress" => Kind::Compact,
        "SessionEnd" => Kind::End,
        _ => return Ok(Normalized::ignore(event, session)),
    };
    let mut n = Normalized::ignore(event, session);
    n.kind = kind;
    n.cwd = str_field(v, &["cwd"]).map(str::to_string);
    if matches!(kind, Kind::Pre | Kind::Post) {
        let mut t = tool(v, &["tool_name"], &["tool_input"], &[])?;
        if kind == Kind::Post {
            t.response = Some(v.get("tool_response").cloned().unwrap_or(Value::Null));
        }
        n.tool = Some(t);
    }
    Ok(n)
}
