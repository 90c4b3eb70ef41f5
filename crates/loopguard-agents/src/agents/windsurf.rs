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

use loopguard_core::{JsString, Object, Value};

use crate::protocol::{
    AgentError, AgentEvent, Answer, CallOutcome, Fields, Kind, Protocol, Rendered, ToolUse,
};

/// Windsurf's protocol.
pub struct Windsurf;

impl Protocol for Windsurf {
    fn name(&self) -> &'static str {
        "windsurf"
    }

    fn probe(&self, session: &str, cwd: &str) -> serde_json::Value {
        serde_json::json!({
            "trajectory_id": session, "agent_action_name": "pre_run_command",
            "tool_info": {"command_line": "true", "cwd": cwd},
        })
    }

    fn read<'a>(&self, f: &Fields<'_, 'a>) -> Result<AgentEvent<'a>, AgentError> {
        let event = f.required("agent_action_name")?;
        let session = f.required("trajectory_id")?;
        let kind = match event.as_str() {
            "pre_run_command" | "pre_mcp_tool_use" => Kind::Pre,
            "post_run_command" | "post_mcp_tool_use" => Kind::Post,
            "pre_user_prompt" => Kind::Prompt,
            _ => return Ok(AgentEvent::ignore(&event, &session)),
        };
        let mut ev = AgentEvent::new(kind, &event, &session);
        if kind == Kind::Prompt {
            return Ok(ev);
        }
        let info = f.object("tool_info")?;
        ev.cwd = info.str_of(&["cwd"]);
        let (name, input, response) = if event.ends_with("run_command") {
            let command = info
                .str_of(&["command_line"])
                .ok_or(AgentError::Missing("tool_info.command_line"))?;
            (
                "run_command".to_string(),
                Value::Object(Object::from_entries(vec![(
                    JsString::from("command_line"),
                    Value::from(command),
                )])),
                super::or_null(info.get("output")),
            )
        } else {
            let server = info.str_of(&["mcp_server_name"]).unwrap_or_default();
            let tool = info
                .str_of(&["mcp_tool_name"])
                .ok_or(AgentError::Missing("tool_info.mcp_tool_name"))?;
            (
                format!("mcp__{server}__{tool}"),
                super::or_null(info.get("mcp_tool_arguments")),
                super::or_null(info.get("mcp_result")),
            )
        };
        ev.tool = Some(ToolUse {
            name: JsString::from(name),
            input,
            id: None,
        });
        if kind == Kind::Post {
            ev.outcome = Some(CallOutcome::Result(response));
        }
        Ok(ev)
    }

    fn render(&self, ev: &AgentEvent<'_>, a: &Answer) -> Rendered {
        super::exit_status_answer(ev, a)
    }

    fn answers_in_json(&self) -> bool {
        false
    }
}
