//! The one tool-profile table of the coding agents: for each agent (its hooks and its
//! telemetry alike), which tools run shell commands, which fields of them change on every
//! call without meaning anything, which tools poll a running command, and how a shell
//! result's text and exit code are read.
//!
//! The engine hashes Claude Code's `Bash` as OpenClaw's `exec` (arguments without the
//! free-text `description`; results as status, exit code and output) and its background
//! polls as OpenClaw's `process` poll ([`super::claude_code`]). An agent's shell and poll
//! tools are presented to that profile in those shapes ([`SHELL`], [`POLL`]), so every
//! agent gets the same hashing; every other tool keeps its name and arguments. The hooks
//! (`loopguard-agents`) and the trace adapters (`loopguard-adapters`) both read this
//! table, so a call seen live and the same call read from the agent's telemetry get the
//! same digests.
//!
//! | agent | shell tools (command field) | not hashed | polls |
//! |-------|-----------------------------|------------|-------|
//! | Claude Code | `Bash` (mapped by the `claude-code` profile itself) | `description` | `BashOutput`, `TaskOutput`, `AgentOutputTool` |
//! | Codex | `Bash`, `shell`, `local_shell`, `exec_command`, `container.exec` (`command`, `cmd`) | `justification`, `yield_time_ms`, `max_output_tokens` | `write_stdin` with empty `chars` (`session_id`), also from a code-mode `exec` script calling `tools.write_stdin` |
//! | Gemini CLI | `run_shell_command` (`command`) | `description` | — |
//! | Qwen Code | `run_shell_command`, `Bash` (`command`); `todo_write` is Claude Code's `TodoWrite` | `description` | — |
//! | Copilot | `bash`, `powershell`, `Bash` (`command`; results end with a `<shellId: N completed with exit code C>` line, whose id is dropped) | `description`, `initial_wait` | `read_bash`, `read_powershell`, `write_bash`/`write_powershell` with empty `input` (`sessionId`) |
//! | Cursor | `Shell`, `run_terminal_cmd`, `beforeShellExecution` (`command`) | `explanation` | — |
//! | Factory Droid | `Execute`, `Bash` (`command`) | `riskLevel`, `riskLevelReason`, `description`, `summary` | — |
//! | Cline | `execute_command` (`command`) | `requires_approval` | — |
//! | Windsurf | `run_command` (`command_line`) | — | — |
//! | Kiro CLI | `execute_bash`, `shell`, `execute_cmd` (`command`) | `summary` | — |
//!
//! Shell results are read from whatever text the agent reports (`llmContent`, `output`,
//! `stdout`, `textResultForLlm`, …, else the `error` text); the exit code from a field
//! (`exit_code`, `exitCode`, `returnCode`, `code`, `metadata.exit_code`) or from a line
//! such as `Exit Code: 1` or `Process exited with code 1`; and lines that differ on every
//! run ([`VOLATILE_LINES`]) are dropped before hashing.
//!
//! ```
//! use loopguard_core::Value;
//! use loopguard_guard::profile::agents::tools_of;
//! let gemini = tools_of("gemini");
//! let args = Value::parse(br#"{"command":"npm test","description":"Run the tests again"}"#).unwrap();
//! let (name, mapped) = gemini.map_call("run_shell_command", &args);
//! assert_eq!(name, "Bash");
//! assert!(mapped.get("description").is_none());
//! let a = gemini.map_result("Bash", &Value::parse(br#"{"llmContent":"Output: FAIL\nExit Code: 1\nProcess Group PGID: 4242"}"#).unwrap());
//! let b = gemini.map_result("Bash", &Value::parse(br#"{"llmContent":"Output: FAIL\nExit Code: 1\nProcess Group PGID: 4300"}"#).unwrap());
//! assert_eq!(a, b);
//! assert_eq!(a.get("exitCode").and_then(Value::as_f64), Some(1.0));
//! ```

use loopguard_core::{JsString, Object, Value};

pub use super::shell::{clean_shell_text, POLL, SHELL, VOLATILE_LINES};

/// A tool that polls a running command: (tool, the field naming the command's session,
/// the field that must be empty or absent for the call to be a poll, `None`: always).
pub type Poll = (&'static str, &'static str, Option<&'static str>);

/// One agent's row of the table.
#[derive(Debug)]
pub struct AgentTools {
    /// The agent, as `loopguard hook AGENT` spells it.
    pub agent: &'static str,
    /// Its tools that run a shell command.
    pub shell: &'static [&'static str],
    /// Argument fields of its shell tools that are not hashed.
    pub ignored: &'static [&'static str],
    /// Its tools that poll a running command.
    pub polls: &'static [Poll],
    /// Tools that are another agent's well-known tool under a different name, mapped onto
    /// Claude Code's (Qwen Code's `todo_write` is `TodoWrite`).
    pub renamed: &'static [(&'static str, &'static str)],
    /// `exec` scripts that only poll (Codex's code mode) are polls.
    pub code_mode_polls: bool,
}

/// The table: one row per agent. Claude Code's tools are read by the `claude-code`
/// profile as they are, so its row maps nothing.
pub const AGENT_TOOLS: &[AgentTools] = &[
    AgentTools {
        agent: "claude-code",
        shell: &[],
        ignored: &[],
        polls: &[],
        renamed: &[],
        code_mode_polls: false,
    },
    AgentTools {
        agent: "codex",
        shell: &[
            "Bash",
            "shell",
            "local_shell",
            "exec_command",
            "container.exec",
        ],
        ignored: &["justification", "yield_time_ms", "max_output_tokens"],
        polls: &[("write_stdin", "session_id", Some("chars"))],
        renamed: &[],
        code_mode_polls: true,
    },
    AgentTools {
        agent: "gemini",
        shell: &["run_shell_command"],
        ignored: &["description"],
        polls: &[],
        renamed: &[],
        code_mode_polls: false,
    },
    AgentTools {
        agent: "qwen",
        shell: &["run_shell_command", "Bash"],
        ignored: &["description"],
        polls: &[],
        renamed: &[("todo_write", "TodoWrite")],
        code_mode_polls: false,
    },
    AgentTools {
        agent: "copilot",
        shell: &["bash", "powershell", "Bash"],
        ignored: &["description", "initial_wait"],
        polls: &[
            ("read_bash", "sessionId", None),
            ("read_powershell", "sessionId", None),
            ("write_bash", "sessionId", Some("input")),
            ("write_powershell", "sessionId", Some("input")),
        ],
        renamed: &[],
        code_mode_polls: false,
    },
    AgentTools {
        agent: "cursor",
        shell: &["Shell", "run_terminal_cmd", "beforeShellExecution"],
        ignored: &["explanation"],
        polls: &[],
        renamed: &[],
        code_mode_polls: false,
    },
    AgentTools {
        agent: "factory",
        shell: &["Execute", "Bash"],
        ignored: &["riskLevel", "riskLevelReason", "description", "summary"],
        polls: &[],
        renamed: &[],
        code_mode_polls: false,
    },
    AgentTools {
        agent: "cline",
        shell: &["execute_command"],
        ignored: &["requires_approval"],
        polls: &[],
        renamed: &[],
        code_mode_polls: false,
    },
    AgentTools {
        agent: "windsurf",
        shell: &["run_command"],
        ignored: &[],
        polls: &[],
        renamed: &[],
        code_mode_polls: false,
    },
    AgentTools {
        agent: "kiro",
        shell: &["execute_bash", "shell", "execute_cmd"],
        ignored: &["summary"],
        polls: &[],
        renamed: &[],
        code_mode_polls: false,
    },
];

/// An agent without a row: nothing is mapped.
static NONE: AgentTools = AgentTools {
    agent: "",
    shell: &[],
    ignored: &[],
    polls: &[],
    renamed: &[],
    code_mode_polls: false,
};

/// The row of `agent` (as `loopguard hook AGENT` spells it); an agent without one maps
/// nothing.
pub fn tools_of(agent: &str) -> &'static AgentTools {
    AGENT_TOOLS
        .iter()
        .find(|t| t.agent == agent)
        .unwrap_or(&NONE)
}

fn obj<'a>(entries: Vec<(&str, Value<'a>)>) -> Value<'a> {
    Value::Object(Object::from_entries(
        entries
            .into_iter()
            .map(|(k, v)| (JsString::from(k.to_string()), v))
            .collect(),
    ))
}

impl AgentTools {
    /// `true` when `tool` runs a shell command.
    pub fn is_shell(&self, tool: &str) -> bool {
        self.shell.contains(&tool)
    }

    /// `true` when `tool` runs or polls a shell command (its failures are results with an
    /// exit code, not thrown errors).
    pub fn is_shell_or_poll(&self, tool: &str) -> bool {
        self.is_shell(tool) || self.polls.iter().any(|p| p.0 == tool)
    }

    /// The Claude Code tool name and arguments the guard sees for one of this agent's
    /// calls: [`SHELL`] for shell tools (the command under `command`, the fields that
    /// change on every call dropped), [`POLL`] for polls of a running command, a renamed
    /// tool under Claude Code's name, anything else as given.
    pub fn map_call<'a>(&self, tool: &str, input: &Value<'a>) -> (String, Value<'a>) {
        if self.is_shell(tool) {
            let mut out: Vec<(JsString<'a>, Value<'a>)> = Vec::new();
            match input {
                Value::Object(o) => {
                    for (k, v) in o.iter() {
                        let key = k.to_string_lossy();
                        if self.ignored.contains(&key.as_ref()) {
                            continue;
                        }
                        let key = match key.as_ref() {
                            "cmd" | "command_line" | "commandLine" => JsString::from("command"),
                            _ => k.clone(),
                        };
                        out.push((key, v.clone()));
                    }
                }
                Value::String(c) => out.push((JsString::from("command"), Value::String(c.clone()))),
                _ => {}
            }
            return (SHELL.to_string(), Value::Object(Object::from_entries(out)));
        }
        for (name, id, empty) in self.polls {
            if *name != tool {
                continue;
            }
            let is_poll = match empty {
                None => true,
                Some(f) => match input.get(f) {
                    None | Some(Value::Null) => true,
                    Some(Value::String(s)) => s.is_empty(),
                    _ => false,
                },
            };
            if is_poll {
                let id = input.get(id).cloned().unwrap_or(Value::Null);
                return (POLL.to_string(), obj(vec![("bash_id", id)]));
            }
        }
        if self.code_mode_polls && tool == "exec" {
            if let Some(id) = code_mode_poll(input) {
                return (POLL.to_string(), obj(vec![("bash_id", id)]));
            }
        }
        if let Some((_, cc)) = self.renamed.iter().find(|(t, _)| *t == tool) {
            return (cc.to_string(), input.clone());
        }
        (tool.to_string(), input.clone())
    }

    /// What a tool returned, as the guard's Claude Code profile reads it, given the tool
    /// name [`AgentTools::map_call`] returned: shell results and polls become
    /// `{stdout, stderr, exitCode}` / `{output, exitCode}` from the text the agent
    /// reported, without [`VOLATILE_LINES`]; anything else (and every Claude Code result,
    /// which the `claude-code` profile reads as it is) is used as given.
    pub fn map_result<'a>(&self, mapped_tool: &str, result: &Value<'a>) -> Value<'a> {
        if self.agent == "claude-code" || (mapped_tool != SHELL && mapped_tool != POLL) {
            return result.clone();
        }
        let (text, code) = shell_text(result);
        let (clean, text_code) = clean_shell_text(&text);
        let code = code.or(text_code);
        let mut out: Vec<(&str, Value<'a>)> = Vec::new();
        if mapped_tool == SHELL {
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

    /// The error text of a failed call as the Claude Code profile reads it: a shell
    /// tool's error (Qwen Code reports a failed command's whole result as the error)
    /// without its volatile lines, the exit code leading as Claude Code's does
    /// (`Exit code N`); any other error as given.
    pub fn map_error(&self, mapped_tool: &str, error: &str) -> String {
        if self.agent == "claude-code" || mapped_tool != SHELL {
            return error.to_string();
        }
        let (clean, code) = clean_shell_text(error);
        match code {
            Some(c) => format!("Exit code {c}\n{clean}"),
            None => clean,
        }
    }
}

/// The command session a Codex code-mode `exec` script polls: the script (`code`, `script`,
/// `source` or `input`, or the input itself as a string) calls `write_stdin` with empty
/// `chars` and writes nothing else. `None` when the script does anything else.
///
/// ```
/// use loopguard_core::Value;
/// use loopguard_guard::profile::agents::code_mode_poll;
/// let poll = Value::parse(br#"{"code": "const r = await tools.write_stdin({session_id: 12, chars: \"\"});\ntext(r);"}"#).unwrap();
/// assert_eq!(code_mode_poll(&poll).and_then(|v| v.as_f64()), Some(12.0));
/// let typing = Value::parse(br#"{"code": "await tools.write_stdin({session_id: 12, chars: \"y\\n\"})"}"#).unwrap();
/// assert_eq!(code_mode_poll(&typing), None);
/// ```
pub fn code_mode_poll(input: &Value<'_>) -> Option<Value<'static>> {
    let code = match input {
        Value::String(s) => s.to_string_lossy().into_owned(),
        _ => ["code", "script", "source", "input"]
            .iter()
            .find_map(|k| input.get(k).and_then(Value::as_str))?
            .to_string(),
    };
    let squeezed: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    if squeezed.matches("write_stdin(").count() != 1 {
        return None;
    }
    let empty = ["chars:\"\"", "chars:''", "chars:``", "\"chars\":\"\""]
        .iter()
        .any(|p| squeezed.contains(p));
    // Any other `chars:` value writes to the command: not a poll.
    if !empty || squeezed.matches("chars").count() != 1 {
        return None;
    }
    let at = squeezed
        .find("session_id:")
        .map(|i| i + "session_id:".len())
        .or_else(|| {
            squeezed
                .find("\"session_id\":")
                .map(|i| i + "\"session_id\":".len())
        })?;
    let rest = &squeezed[at..];
    let end = rest.find([',', '}', ')']).unwrap_or(rest.len());
    let raw = rest[..end].trim_matches(|c| c == '"' || c == '\'' || c == '`');
    Some(match raw.parse::<i64>() {
        Ok(n) => Value::from(n),
        Err(_) => Value::from(raw.to_string()),
    })
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
        .filter(|n| n.fract() == 0.0 && n.is_finite() && n.abs() < 9.0e15)
        .map(|n| n as i64)
}

/// The text and exit code a shell result carries, from the first field that has text
/// (else the error's text), the exit code from a field or `metadata.exit_code`.
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
    if text.is_empty() {
        if let Some(e) = result
            .get("error")
            .and_then(|e| text_of(e).or_else(|| e.get("message").and_then(text_of)))
        {
            text = e;
        }
    }
    (text, code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Value<'static> {
        Value::parse(s.as_bytes()).unwrap().into_owned()
    }

    #[test]
    fn every_row_is_found_by_its_name() {
        for row in AGENT_TOOLS {
            assert_eq!(tools_of(row.agent).agent, row.agent);
        }
        assert_eq!(tools_of("nope").agent, "");
    }

    #[test]
    fn shell_keys_other_than_the_known_ones_are_kept() {
        let (tool, args) = tools_of("codex").map_call(
            "exec_command",
            &v(r#"{"cmd":"ls","workdir":"/p","justification":"x"}"#),
        );
        assert_eq!(tool, SHELL);
        assert_eq!(args.get("command").and_then(Value::as_str), Some("ls"));
        assert_eq!(args.get("workdir").and_then(Value::as_str), Some("/p"));
        assert!(args.get("justification").is_none());
    }

    #[test]
    fn polls_need_their_empty_field() {
        let codex = tools_of("codex");
        let (tool, args) = codex.map_call("write_stdin", &v(r#"{"session_id":3,"chars":""}"#));
        assert_eq!(tool, POLL);
        assert_eq!(args.get("bash_id").and_then(Value::as_f64), Some(3.0));
        let (tool, _) = codex.map_call("write_stdin", &v(r#"{"session_id":3,"chars":"y"}"#));
        assert_eq!(tool, "write_stdin");
        let (tool, _) = codex.map_call(
            "exec",
            &v(r#"{"code":"await tools.write_stdin({session_id: 3, chars: \"\"})"}"#),
        );
        assert_eq!(tool, POLL);
    }

    #[test]
    fn exit_codes_come_from_fields_metadata_and_text_and_errors_are_text() {
        let copilot = tools_of("copilot");
        let r = copilot.map_result("Bash", &v(r#"{"metadata":{"exit_code":3},"output":"x"}"#));
        assert_eq!(r.get("exitCode").and_then(Value::as_f64), Some(3.0));
        let r = copilot.map_result("Bash", &v(r#"{"error":{"message":"boom\nExit code: 2"}}"#));
        assert_eq!(
            r.get("stdout").and_then(Value::as_str),
            Some("boom\nExit code: 2")
        );
        assert_eq!(r.get("exitCode").and_then(Value::as_f64), Some(2.0));
        let other = v(r#"{"a":1}"#);
        assert_eq!(copilot.map_result("view", &other), other);
        assert_eq!(tools_of("claude-code").map_result("Bash", &other), other);
    }

    #[test]
    fn shell_errors_lead_with_the_exit_code() {
        let qwen = tools_of("qwen");
        assert_eq!(
            qwen.map_error("Bash", "FAIL\nExit Code: 1\nProcess Group PGID: 9"),
            "Exit code 1\nFAIL\nExit Code: 1"
        );
        assert_eq!(qwen.map_error("read_file", "nope"), "nope");
    }

    #[test]
    fn every_shell_tool_is_a_shell_to_the_strict_detectors() {
        // The strict profile's argument sketch (core's detectors, below this crate) knows
        // shell tools by name to leave their free-text labels out: every agent's shell tool
        // here must be one of them, so the two lists cannot drift apart.
        for row in AGENT_TOOLS {
            for tool in row.shell {
                let keys = loopguard_core::detection::tool_bookkeeping_keys(tool.as_bytes());
                assert!(
                    keys.contains(&"description") && keys.contains(&"justification"),
                    "{}: `{tool}` is not a shell tool to the strict detectors",
                    row.agent
                );
            }
        }
    }
}
