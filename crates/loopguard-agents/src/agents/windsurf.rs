//! Windsurf (Cascade).
//!
//! Payloads follow Windsurf's Cascade hooks documentation (docs.windsurf.com, "Cascade
//! Hooks"): `agent_action_name` (`pre_run_command`, `post_run_command`, `pre_mcp_tool_use`,
//! `post_mcp_tool_use`, `pre_user_prompt`, …), `trajectory_id`, `execution_id`,
//! `timestamp`, and `tool_info` (`{command_line, cwd}` for commands; `{mcp_server_name,
//! mcp_tool_name, mcp_tool_arguments, mcp_result}` for MCP tools).
//!
//! Answers: a pre-hook blocks only by exiting with status 2 (its standard error is shown);
//! there is no way to give the model a message, so a warning goes to standard error for
//! the user (shown with `show_output: true`) and the block at the critical threshold is
//! what the model meets. Windsurf does not report command results in `post_run_command`,
//! so outcomes of commands are recorded without output (the no-progress rules see a
//! repeated call with an unknown result; the generic repeat rule still blocks).
//!
//! Session: `trajectory_id`. Runs: `pre_user_prompt`. Compaction: none reported.

use serde_json::{json, Value};

use crate::agent::{required, str_field};
use crate::{AgentError, Kind, Normalized, ToolCall};

pub(crate) fn normalize(v: &Value) -> Result<Normalized, AgentError> {
    let event = required(v, "agent_action_name")?;
    let session = required(v, "trajectory_id")?;
    let kind = match event {
        "pre_run_command" | "pre_mcp_tool_use" => Kind::Pre,
        "post_run_command" | "post_mcp_tool_use" => Kind::Post,
        "pre_user_prompt" => Kind::Prompt,
        _ => return Ok(Normalized::ignore(event, session)),
    };
    let mut n = Normalized::ignore(event, session);
    n.kind = kind;
    if kind == Kind::Prompt {
        return Ok(n);
    }
    let info = v
        .get("tool_info")
        .ok_or(AgentError::Field("tool_info", "an object"))?;
    n.cwd = str_field(info, &["cwd"]).map(str::to_string);
    let (name, input, response) = if event.ends_with("run_command") {
        let command = str_field(info, &["command_line"])
            .ok_or(AgentError::Field("tool_info.command_line", "a string"))?;
        (
            "run_command".to_string(),
            json!({ "command_line": command }),
            info.get("output").cloned().unwrap_or(Value::Null),
        )
    } else {
        let server = str_field(info, &["mcp_server_name"]).unwrap_or_default();
        let tool = str_field(info, &["mcp_tool_name"])
            .ok_or(AgentError::Field("tool_info.mcp_tool_name", "a string"))?;
        (
            format!("mcp__{server}__{tool}"),
            info.get("mcp_tool_arguments")
                .cloned()
                .unwrap_or(Value::Null),
            info.get("mcp_result").cloned().unwrap_or(Value::Null),
        )
    };
    n.tool = Some(ToolCall {
        agent_name: name.clone(),
        cc_name: name,
        input,
        id: None,
        response: (kind == Kind::Post).then_some(response),
        error: None,
    });
    Ok(n)
}
