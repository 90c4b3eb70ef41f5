//! Coding agents' own telemetry: which agent a span came from and how its tools are judged.
//!
//! Claude Code, GitHub Copilot CLI and Codex export their tool calls as OpenTelemetry. A
//! call read from their telemetry is judged exactly as the agent's live hook judges it
//! (`loopguard hook AGENT`, see `loopguard_guard::profile::agents`): shell tools become Claude
//! Code's `Bash` (the command; the fields that change on every call without meaning
//! anything dropped), polls of a running command become `BashOutput` (the shell session
//! only), and the calls carry the `claude-code` tool profile, which hashes `Bash` as
//! OpenClaw's `exec` and `BashOutput` as its known `process` poll. Shell results are read
//! from the text the agent recorded, without the lines that differ on every run
//! ([`VOLATILE_LINES`], and Copilot's `<shellId: N completed with exit code C>`, whose
//! exit code is kept).
//!
//! | agent | recognised by | shell tools (command field) | not hashed | polls |
//! |-------|---------------|-----------------------------|------------|-------|
//! | Claude Code | `service.name` `claude-code` | `Bash` (mapped by the `claude-code` profile itself) | `description` | `BashOutput`, `TaskOutput` |
//! | Copilot CLI | `service.name` `github-copilot` (also `copilot-cli`, `copilot`) | `bash`, `powershell` (`command`) | `description`, `initial_wait` | `read_bash`, `read_powershell`, `write_bash`/`write_powershell` with empty `input` (`sessionId`) |
//! | Codex | `service.name` `codex_cli_rs`, `codex_exec`, `codex-cli`, any `codex_…`/`codex-…`; every `codex.tool_result` record | `exec_command`, `shell`, `local_shell`, `container.exec`, `Bash` (`cmd`, `command`) | `justification`, `yield_time_ms`, `max_output_tokens` | `write_stdin` with empty `chars` (`session_id`); a code-mode `exec` script that only polls |
//!
//! The table itself is the guard's ([`loopguard_guard::profile::agents`]), which the hooks
//! read too, so a call read from an agent's telemetry and the same call seen by its hook get
//! the same digests.

use loopguard_core::Value;

/// A coding agent whose telemetry loopguard reads with its tool profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TraceAgent {
    /// Anthropic's Claude Code (`service.name = claude-code`).
    ClaudeCode,
    /// GitHub Copilot CLI (`service.name = github-copilot`).
    Copilot,
    /// OpenAI's Codex CLI (`service.name = codex_cli_rs` / `codex_exec`).
    Codex,
}

impl TraceAgent {
    /// The agent's name, as `loopguard hook` spells it (`claude-code`, `copilot`, `codex`).
    pub fn name(self) -> &'static str {
        match self {
            TraceAgent::ClaudeCode => "claude-code",
            TraceAgent::Copilot => "copilot",
            TraceAgent::Codex => "codex",
        }
    }

    /// The agent a telemetry name (`service.name`, `gen_ai.agent.name`, `gen_ai.system`)
    /// stands for, compared case-insensitively.
    ///
    /// ```
    /// use loopguard_adapters::spans::TraceAgent;
    /// assert_eq!(TraceAgent::from_service("github-copilot"), Some(TraceAgent::Copilot));
    /// assert_eq!(TraceAgent::from_service("codex_exec"), Some(TraceAgent::Codex));
    /// assert_eq!(TraceAgent::from_service("Claude Code"), Some(TraceAgent::ClaudeCode));
    /// assert_eq!(TraceAgent::from_service("codexa"), None);
    /// ```
    pub fn from_service(name: &str) -> Option<TraceAgent> {
        let n = name.trim().to_ascii_lowercase();
        match n.as_str() {
            "claude-code" | "claude_code" | "claude code" => Some(TraceAgent::ClaudeCode),
            "github-copilot" | "github_copilot" | "copilot-cli" | "copilot_cli" | "copilot"
            | "github copilot" => Some(TraceAgent::Copilot),
            "codex" => Some(TraceAgent::Codex),
            _ if n.starts_with("codex_") || n.starts_with("codex-") => Some(TraceAgent::Codex),
            _ => None,
        }
    }

    /// The tool and arguments the engine sees for one of this agent's calls, under the
    /// `claude-code` profile: shell tools as `Bash`, polls as `BashOutput`, anything else
    /// as given (see the module documentation).
    ///
    /// ```
    /// use loopguard_adapters::spans::TraceAgent;
    /// use loopguard_core::Value;
    /// let args = Value::parse(br#"{"sessionId":"7","delay":10}"#)?.into_owned();
    /// let (tool, mapped) = TraceAgent::Copilot.map_call("read_bash", &args);
    /// assert_eq!(tool, "BashOutput");
    /// assert_eq!(mapped.get("bash_id").and_then(Value::as_str), Some("7"));
    /// # Ok::<(), loopguard_core::json::ParseError>(())
    /// ```
    pub fn map_call(self, tool: &str, args: &Value<'static>) -> (String, Value<'static>) {
        map_call(self, tool, args)
    }

    /// What one of this agent's results becomes for the `claude-code` profile, given the
    /// tool name [`TraceAgent::map_call`] returned: shell results and polls as
    /// `{stdout, stderr, exitCode}` / `{output, exitCode}` without [`VOLATILE_LINES`],
    /// anything else as given.
    pub fn map_result(self, mapped_tool: &str, result: &Value<'static>) -> Value<'static> {
        map_result(self, mapped_tool, result)
    }
}

/// The lines dropped from a shell result: the agents' hooks and their traces share one list.
pub use loopguard_guard::profile::agents::VOLATILE_LINES;
use loopguard_guard::profile::agents::{tools_of, AgentTools};

fn tools(agent: TraceAgent) -> &'static AgentTools {
    tools_of(agent.name())
}

/// `true` when `tool` runs or polls a shell command for `agent` (its failures are results
/// with an exit code, not thrown errors).
pub(crate) fn is_shell_or_poll(agent: TraceAgent, tool: &str) -> bool {
    tools(agent).is_shell_or_poll(tool)
}

/// The Claude Code tool and arguments the engine sees for one of `agent`'s calls: the
/// guard's one table of the agents' tools ([`loopguard_guard::profile::agents`]), which the
/// agents' hooks read too.
pub(crate) fn map_call(
    agent: TraceAgent,
    tool: &str,
    args: &Value<'static>,
) -> (String, Value<'static>) {
    tools(agent).map_call(tool, args)
}

/// What a shell tool or poll returned, as the Claude Code profile reads it (the guard's
/// table, as for [`map_call`]); anything else, and every Claude Code result, as given.
pub(crate) fn map_result(
    agent: TraceAgent,
    cc_tool: &str,
    result: &Value<'static>,
) -> Value<'static> {
    tools(agent).map_result(cc_tool, result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Value<'static> {
        Value::parse(s.as_bytes()).expect("json").into_owned()
    }

    #[test]
    fn shell_keys_other_than_the_known_ones_are_kept() {
        let (tool, args) = map_call(
            TraceAgent::Codex,
            "exec_command",
            &parse(r#"{"cmd":"ls","yield_time_ms":1000,"workdir":"/w","novel":1}"#),
        );
        assert_eq!(tool, "Bash");
        assert_eq!(args.get("command").and_then(Value::as_str), Some("ls"));
        assert!(args.get("yield_time_ms").is_none());
        assert_eq!(args.get("workdir").and_then(Value::as_str), Some("/w"));
        assert!(args.get("novel").is_some());
    }
}
