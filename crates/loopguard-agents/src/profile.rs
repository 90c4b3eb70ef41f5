//! Each agent's tool profile: which of its tools run shell commands, which poll a running
//! command, and which fields of them change on every call without meaning anything.
//!
//! The engine hashes Claude Code's `Bash` as OpenClaw's `exec` (arguments without the
//! free-text `description`; results as status, exit code and output) and its background
//! polls as OpenClaw's `process` poll (see [`loopguard_guard::profile::claude_code`]). An
//! agent's shell and poll tools are presented to that profile in those shapes, so they get
//! the same hashing; every other tool keeps its name and arguments.
//!
//! | agent | shell tools (command field) | not hashed | polls |
//! |-------|-----------------------------|------------|-------|
//! | Codex | `Bash`, `shell`, `local_shell`, `exec_command` (`command`, `cmd`) | `justification`, `yield_time_ms`, `max_output_tokens` | `write_stdin` with empty `chars` (`session_id`), also from a code-mode `exec` script calling `tools.write_stdin` |
//! | Gemini CLI | `run_shell_command` (`command`) | `description` | — |
//! | Qwen Code | `run_shell_command`, `Bash` (`command`) | `description` | — |
//! | Copilot | `bash`, `powershell` (`command`; results end with a `<shellId: N completed with exit code C>` line, whose id is dropped) | `description`, `initial_wait` | `read_bash`, `read_powershell`, `write_bash`/`write_powershell` with empty `input` (`sessionId`) |
//! | Cursor | `Shell`, `run_terminal_cmd`, `beforeShellExecution` (`command`) | `explanation` | — |
//! | Factory Droid | `Execute`, `Bash` (`command`) | `riskLevel`, `riskLevelReason`, `summary` | — |
//! | Cline | `execute_command` (`command`) | `requires_approval` | — |
//! | Windsurf | `run_command` (`command_line`) | — | — |
//! | Kiro CLI | `execute_bash`, `shell` (`command`) | `summary` | — |
//!
//! Shell results are read from whatever text the agent reports (`llmContent`, `output`,
//! `stdout`, `textResultForLlm`, …); the exit code from a field or from a line such as
//! `Exit Code: 1` or `Process exited with code 1`; and lines that differ on every run
//! ([`VOLATILE_LINES`]) are dropped before hashing.
//!
//! ```
//! use loopguard_agents::{profile, Agent};
//! use serde_json::json;
//! let (name, args) = profile::map_tool(Agent::Gemini, "run_shell_command",
//!     &json!({"command": "npm test", "description": "Run the tests again"}));
//! assert_eq!(name, "Bash");
//! assert_eq!(args, json!({"command": "npm test"}));
//! let a = profile::map_response(Agent::Gemini, "Bash", &json!({"llmContent": "Output: FAIL\nExit Code: 1\nProcess Group PGID: 4242"}));
//! let b = profile::map_response(Agent::Gemini, "Bash", &json!({"llmContent": "Output: FAIL\nExit Code: 1\nProcess Group PGID: 4300"}));
//! assert_eq!(a, b);
//! assert_eq!(a["exitCode"], 1);
//! ```

use serde_json::{json, Map, Value};

use crate::Agent;

pub use loopguard_guard::profile::shell::{clean_shell_text, POLL, SHELL, VOLATILE_LINES};

struct Spec {
    shell: &'static [&'static str],
    ignored: &'static [&'static str],
    /// (tool, id field, field that must be empty for the call to be a poll)
    polls: &'static [(&'static str, &'static str, Option<&'static str>)],
}

fn spec(agent: Agent) -> Spec {
    match agent {
        // The guard's own Claude Code profile reads Claude Code's tools as they are.
        Agent::ClaudeCode => Spec {
            shell: &[],
            ignored: &[],
            polls: &[],
        },
        Agent::Codex => Spec {
            shell: &[
                "Bash",
                "shell",
                "local_shell",
                "exec_command",
                "container.exec",
            ],
            ignored: &["justification", "yield_time_ms", "max_output_tokens"],
            polls: &[("write_stdin", "session_id", Some("chars"))],
        },
        Agent::Gemini => Spec {
            shell: &["run_shell_command"],
            ignored: &["description"],
            polls: &[],
        },
        Agent::Qwen => Spec {
            shell: &["run_shell_command", "Bash"],
            ignored: &["description"],
            polls: &[],
        },
        Agent::Copilot => Spec {
            shell: &["bash", "powershell", "Bash"],
            ignored: &["description", "initial_wait"],
            polls: &[
                ("read_bash", "sessionId", None),
                ("read_powershell", "sessionId", None),
                ("write_bash", "sessionId", Some("input")),
                ("write_powershell", "sessionId", Some("input")),
            ],
        },
        Agent::Cursor => Spec {
            shell: &["Shell", "run_terminal_cmd", "beforeShellExecution"],
            ignored: &["explanation"],
            polls: &[],
        },
        Agent::Factory => Spec {
            shell: &["Execute", "Bash"],
            ignored: &["riskLevel", "riskLevelReason", "description", "summary"],
            polls: &[],
        },
        Agent::Cline => Spec {
            shell: &["execute_command"],
            ignored: &["requires_approval"],
            polls: &[],
        },
        Agent::Windsurf => Spec {
            shell: &["run_command"],
            ignored: &[],
            polls: &[],
        },
        Agent::Kiro => Spec {
            shell: &["execute_bash", "shell", "execute_cmd"],
            ignored: &["summary"],
            polls: &[],
        },
    }
}

/// `true` when `tool` runs a shell command for `agent`.
pub fn is_shell(agent: Agent, tool: &str) -> bool {
    spec(agent).shell.contains(&tool)
}

/// The Claude Code tool name and arguments the guard sees for one of `agent`'s calls:
/// `Bash` for shell tools (the command under `command`, the fields that change on every
/// call dropped), `BashOutput` for polls of a running command, anything else as given.
pub fn map_tool(agent: Agent, tool: &str, input: &Value) -> (String, Value) {
    let s = spec(agent);
    if s.shell.contains(&tool) {
        let mut out = Map::new();
        if let Value::Object(o) = input {
            for (k, v) in o {
                if s.ignored.contains(&k.as_str()) {
                    continue;
                }
                let k = match k.as_str() {
                    "cmd" | "command_line" | "commandLine" => "command",
                    other => other,
                };
                out.insert(k.to_string(), v.clone());
            }
        } else if let Value::String(c) = input {
            out.insert("command".into(), Value::String(c.clone()));
        }
        return (SHELL.to_string(), Value::Object(out));
    }
    for (name, id, empty) in s.polls {
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
            return (POLL.to_string(), json!({ "bash_id": id }));
        }
    }
    // Codex code mode: an `exec` script that only calls `tools.write_stdin` with empty
    // `chars` polls the running command, like the plain tool call.
    if agent == Agent::Codex && tool == "exec" {
        if let Some(id) = code_mode_poll(input) {
            return (POLL.to_string(), json!({ "bash_id": id }));
        }
    }
    // Claude Code's plan tool under Qwen Code's name: hashed by the plan's shape.
    if agent == Agent::Qwen && tool == "todo_write" {
        return ("TodoWrite".to_string(), input.clone());
    }
    (tool.to_string(), input.clone())
}

/// The session a Codex code-mode `exec` script polls: the script (`code`, `script` or
/// `source`, or the input itself as a string) calls `write_stdin` with empty `chars` and
/// writes nothing else. `None` when the script does anything else.
///
/// ```
/// use loopguard_agents::profile::code_mode_poll;
/// use serde_json::json;
/// let poll = json!({"code": "const r = await tools.write_stdin({session_id: 12, chars: \"\"});\ntext(r);"});
/// assert_eq!(code_mode_poll(&poll), Some(json!(12)));
/// let typing = json!({"code": "await tools.write_stdin({session_id: 12, chars: \"y\\n\"})"});
/// assert_eq!(code_mode_poll(&typing), None);
/// ```
pub fn code_mode_poll(input: &Value) -> Option<Value> {
    let code = match input {
        Value::String(s) => s.as_str(),
        _ => ["code", "script", "source", "input"]
            .iter()
            .find_map(|k| input.get(k).and_then(Value::as_str))?,
    };
    let squeezed: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    let calls = squeezed.matches("write_stdin(").count();
    if calls != 1 {
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
        Ok(n) => json!(n),
        Err(_) => json!(raw),
    })
}

/// What a tool returned, as the guard's Claude Code profile reads it: shell results and
/// polls become `{stdout, stderr, exitCode}` / `{output, exitCode}` from the text the
/// agent reported, without [`VOLATILE_LINES`]; anything else is used as given.
pub fn map_response(agent: Agent, cc_tool: &str, response: &Value) -> Value {
    let _ = agent;
    match cc_tool {
        SHELL | POLL => {
            let (text, code) = shell_text(response);
            let (clean, text_code) = clean_shell_text(&text);
            let code = code.or(text_code);
            let mut out = Map::new();
            if cc_tool == SHELL {
                out.insert("stdout".into(), Value::String(clean));
                out.insert("stderr".into(), Value::String(String::new()));
            } else {
                out.insert("output".into(), Value::String(clean));
            }
            if let Some(c) = code {
                out.insert("exitCode".into(), json!(c));
            }
            Value::Object(out)
        }
        _ => response.clone(),
    }
}

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<String> = parts.iter().filter_map(text_of).collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        Value::Object(o) => o.get("text").and_then(Value::as_str).map(str::to_string),
        _ => None,
    }
}

/// The text and exit code a shell result carries, from the first field that has text.
fn shell_text(response: &Value) -> (String, Option<i64>) {
    let code = ["exit_code", "exitCode", "returnCode", "code"]
        .iter()
        .find_map(|k| response.get(k).and_then(Value::as_i64));
    if let Value::String(s) = response {
        return (s.clone(), code);
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
    .find_map(|k| response.get(k).and_then(text_of))
    .unwrap_or_default();
    if let Some(err) = response.get("stderr").and_then(Value::as_str) {
        if !err.is_empty() {
            text = format!("{text}\n{err}");
        }
    }
    if text.is_empty() {
        if let Some(e) = response
            .get("error")
            .and_then(|e| text_of(e).or_else(|| e.get("message").and_then(text_of)))
        {
            text = e;
        }
    }
    (text, code)
}
