//! Coding agents' own telemetry: which agent a span came from and how its tools are judged.
//!
//! Claude Code, GitHub Copilot CLI and Codex export their tool calls as OpenTelemetry. A
//! call read from their telemetry is judged exactly as the agent's live hook judges it
//! (`loopguard hook AGENT`, see `loopguard_agents::profile`): shell tools become Claude
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
//! The same table is in `loopguard_agents::profile` (the hooks); a test of the `loopguard`
//! crate keeps the two equal.

use loopguard_core::{Object, Value};

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
pub use loopguard_guard::profile::shell::VOLATILE_LINES;
use loopguard_guard::profile::shell::{clean_shell_text, POLL, SHELL};

/// (tool, id field, field that must be empty for the call to be a poll)
type Poll = (&'static str, &'static str, Option<&'static str>);

struct Spec {
    shell: &'static [&'static str],
    ignored: &'static [&'static str],
    polls: &'static [Poll],
}

fn spec(agent: TraceAgent) -> Option<Spec> {
    match agent {
        TraceAgent::ClaudeCode => None,
        TraceAgent::Copilot => Some(Spec {
            shell: &["bash", "powershell", "Bash"],
            ignored: &["description", "initial_wait"],
            polls: &[
                ("read_bash", "sessionId", None),
                ("read_powershell", "sessionId", None),
                ("write_bash", "sessionId", Some("input")),
                ("write_powershell", "sessionId", Some("input")),
            ],
        }),
        TraceAgent::Codex => Some(Spec {
            shell: &[
                "Bash",
                "shell",
                "local_shell",
                "exec_command",
                "container.exec",
            ],
            ignored: &["justification", "yield_time_ms", "max_output_tokens"],
            polls: &[("write_stdin", "session_id", Some("chars"))],
        }),
    }
}

/// `true` when `tool` runs or polls a shell command for `agent` (its failures are results
/// with an exit code, not thrown errors).
pub(crate) fn is_shell_or_poll(agent: TraceAgent, tool: &str) -> bool {
    spec(agent).is_some_and(|s| s.shell.contains(&tool) || s.polls.iter().any(|p| p.0 == tool))
}

fn obj(entries: Vec<(&str, Value<'static>)>) -> Value<'static> {
    Value::Object(Object::from_entries(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string().into(), v))
            .collect(),
    ))
}

/// The Claude Code tool and arguments the engine sees for one of `agent`'s calls (see the
/// module documentation); anything else as given.
pub(crate) fn map_call(
    agent: TraceAgent,
    tool: &str,
    args: &Value<'static>,
) -> (String, Value<'static>) {
    let Some(s) = spec(agent) else {
        return (tool.to_string(), args.clone());
    };
    if s.shell.contains(&tool) {
        let mut out: Vec<(loopguard_core::JsString<'static>, Value<'static>)> = Vec::new();
        match args {
            Value::Object(o) => {
                for (k, v) in o.iter() {
                    let key = k.to_string_lossy();
                    if s.ignored.contains(&key.as_ref()) {
                        continue;
                    }
                    let key = match key.as_ref() {
                        "cmd" | "command_line" | "commandLine" => "command".to_string(),
                        other => other.to_string(),
                    };
                    out.push((key.into(), v.clone()));
                }
            }
            Value::String(c) => out.push(("command".to_string().into(), Value::String(c.clone()))),
            _ => {}
        }
        return (SHELL.to_string(), Value::Object(Object::from_entries(out)));
    }
    for (name, id, empty) in s.polls {
        if *name != tool {
            continue;
        }
        let is_poll = match empty {
            None => true,
            Some(f) => match args.get(f) {
                None | Some(Value::Null) => true,
                Some(Value::String(s)) => s.is_empty(),
                _ => false,
            },
        };
        if is_poll {
            let id = args.get(id).cloned().unwrap_or(Value::Null);
            return (POLL.to_string(), obj(vec![("bash_id", id)]));
        }
    }
    if agent == TraceAgent::Codex && tool == "exec" {
        if let Some(poll) = crate::responses::codex_poll(tool, args) {
            let id = poll.get("sessionId").cloned().unwrap_or(Value::Null);
            return (POLL.to_string(), obj(vec![("bash_id", id)]));
        }
    }
    (tool.to_string(), args.clone())
}

/// What a shell tool or poll returned, as the Claude Code profile reads it:
/// `{stdout, stderr, exitCode}` (shell) or `{output, exitCode}` (poll) from the text the
/// agent recorded, without [`VOLATILE_LINES`]; anything else (and every Claude Code
/// result, which the `claude-code` profile reads as recorded) as given.
pub(crate) fn map_result(
    agent: TraceAgent,
    cc_tool: &str,
    result: &Value<'static>,
) -> Value<'static> {
    if spec(agent).is_none() || (cc_tool != SHELL && cc_tool != POLL) {
        return result.clone();
    }
    let (text, code) = shell_text(result);
    let (clean, text_code) = clean_shell_text(&text);
    let code = code.or(text_code);
    let mut out: Vec<(&str, Value<'static>)> = Vec::new();
    if cc_tool == SHELL {
        out.push(("stdout", Value::from(clean)));
        out.push(("stderr", Value::from(String::new())));
    } else {
        out.push(("output", Value::from(clean)));
    }
    if let Some(c) = code {
        out.push(("exitCode", Value::from(c)));
    }
    obj(out)
}

fn text_of(v: &Value<'_>) -> Option<String> {
    match v {
        Value::String(s) => Some(s.to_string_lossy().into_owned()),
        Value::Array(parts) => {
            let texts: Vec<String> = parts.iter().filter_map(text_of).collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        Value::Object(_) => v.get("text").and_then(Value::as_str).map(str::to_string),
        _ => None,
    }
}

fn as_i64(v: &Value<'_>) -> Option<i64> {
    v.as_f64()
        .filter(|n| n.fract() == 0.0 && n.is_finite())
        .map(|n| n as i64)
}

/// The text and exit code a shell result carries, from the first field that has text.
fn shell_text(result: &Value<'_>) -> (String, Option<i64>) {
    let code = ["exit_code", "exitCode", "returnCode", "code"]
        .iter()
        .find_map(|k| result.get(k).and_then(as_i64))
        .or_else(|| {
            result
                .get("metadata")
                .and_then(|m| m.get("exit_code"))
                .and_then(as_i64)
        });
    if let Value::String(s) = result {
        return (s.to_string_lossy().into_owned(), code);
    }
    let mut text = [
        "llmContent",
        "textResultForLlm",
        "aggregated_output",
        "formatted_output",
        "output",
        "stdout",
        "result",
        "content",
    ]
    .iter()
    .find_map(|k| result.get(k).and_then(text_of))
    .unwrap_or_default();
    if let Some(err) = result.get("stderr").and_then(Value::as_str) {
        if !err.is_empty() {
            text = format!("{text}\n{err}");
        }
    }
    (text, code)
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
