//! The agents, and one hook event as the guard sees it.

use std::fmt;
use std::str::FromStr;

use serde_json::{json, Map, Value};

use crate::agents;
use crate::profile;

/// A coding agent whose hooks loopguard speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Agent {
    /// Anthropic's Claude Code (and VS Code's agent running the hooks of
    /// `.claude/settings.json`): the protocol the others are mapped onto
    /// ([`crate::claude_code`]).
    ClaudeCode,
    /// OpenAI Codex CLI (`@openai/codex`).
    Codex,
    /// Google Gemini CLI (`@google/gemini-cli`).
    Gemini,
    /// Qwen Code (`@qwen-code/qwen-code`).
    Qwen,
    /// GitHub Copilot CLI (`@github/copilot`) and the VS Code agent's `.github/hooks`.
    Copilot,
    /// Cursor's agent.
    Cursor,
    /// Factory's Droid.
    Factory,
    /// Cline.
    Cline,
    /// Windsurf's Cascade.
    Windsurf,
    /// Kiro CLI.
    Kiro,
}

/// Every agent, in the order `loopguard hook --help` lists them.
pub const AGENTS: &[Agent] = &[
    Agent::ClaudeCode,
    Agent::Codex,
    Agent::Gemini,
    Agent::Qwen,
    Agent::Copilot,
    Agent::Cursor,
    Agent::Factory,
    Agent::Cline,
    Agent::Windsurf,
    Agent::Kiro,
];

impl Agent {
    /// The agent's name as `loopguard hook AGENT` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Qwen => "qwen",
            Agent::Copilot => "copilot",
            Agent::Cursor => "cursor",
            Agent::Factory => "factory",
            Agent::Cline => "cline",
            Agent::Windsurf => "windsurf",
            Agent::Kiro => "kiro",
        }
    }

    /// Reads one hook payload of this agent. `Ok` with [`Kind::Ignore`] for events
    /// loopguard has nothing to do with; `Err` for input that is not a payload of this
    /// agent at all.
    ///
    /// ```
    /// use loopguard_agents::{Agent, Kind};
    /// let n = Agent::Codex.normalize(br#"{"session_id":"s","turn_id":"t","hook_event_name":"PreToolUse",
    ///     "tool_name":"Bash","tool_input":{"command":"make"},"tool_use_id":"call_1","cwd":"/p",
    ///     "model":"m","permission_mode":"default","transcript_path":null}"#).unwrap();
    /// assert_eq!(n.kind, Kind::Pre);
    /// assert_eq!(n.session, "codex:s");
    /// assert!(Agent::Codex.normalize(b"[1]").is_err());
    /// ```
    pub fn normalize(self, input: &[u8]) -> Result<Normalized, AgentError> {
        let v: Value =
            serde_json::from_slice(input).map_err(|e| AgentError::Json(e.to_string()))?;
        if !v.is_object() {
            return Err(AgentError::NotAnObject);
        }
        let mut n = match self {
            Agent::ClaudeCode => agents::claude_like(&v, &["PostCompact"]),
            Agent::Codex => agents::codex::normalize(&v),
            Agent::Gemini => agents::gemini::normalize(&v),
            Agent::Qwen => agents::qwen::normalize(&v),
            Agent::Copilot => agents::copilot::normalize(&v),
            Agent::Cursor => agents::cursor::normalize(&v),
            Agent::Factory => agents::factory::normalize(&v),
            Agent::Cline => agents::cline::normalize(&v),
            Agent::Windsurf => agents::windsurf::normalize(&v),
            Agent::Kiro => agents::kiro::normalize(&v),
        }?;
        if self != Agent::ClaudeCode {
            // Claude Code's sessions keep their own ids (as its hook has always stored
            // them); the others' are `AGENT:ID`.
            n.session = format!("{}:{}", self.as_str(), n.session);
        }
        if let Some(t) = &mut n.tool {
            let (name, input) = profile::map_tool(self, &t.agent_name, &t.input);
            t.cc_name = name;
            t.input = input;
            if let Some(r) = &t.response {
                t.response = Some(profile::map_response(self, &t.cc_name, r));
            }
            if let Some((e, interrupt)) = &t.error {
                if t.cc_name == profile::SHELL {
                    // Qwen Code reports a failed command's whole result as the error: the
                    // volatile lines go, and the exit code leads as Claude Code's does.
                    let (clean, code) = profile::clean_shell_text(e);
                    let e = match code {
                        Some(c) => format!("Exit code {c}\n{clean}"),
                        None => clean,
                    };
                    t.error = Some((e, *interrupt));
                }
            }
        }
        Ok(n)
    }

    /// The answer that lets the call go on and says nothing: what the hook prints when
    /// there is nothing to say and whenever it fails open. Empty with exit status 0,
    /// except for Cline, which treats anything but a JSON answer as a failure and cancels
    /// the call (`{"cancel":false}`).
    pub fn allow(self) -> (String, i32) {
        match self {
            Agent::Cline => ("{\"cancel\":false}\n".to_string(), 0),
            _ => (String::new(), 0),
        }
    }

    /// `true` when the agent cannot show the model a message before a call, so a warning
    /// decided before the call is kept and given with that call's result (Gemini CLI's
    /// `AfterTool` `additionalContext`, Qwen Code's `PostToolUse`/`PostToolUseFailure`
    /// `additionalContext` (Qwen Code 0.24 reads `PreToolUse`'s but never shows it),
    /// Droid's `PostToolUse` `additionalContext` (Droid 0.225 does not show `PreToolUse`'s),
    /// Cursor's `postToolUse` `additional_context`).
    pub fn defers_warnings(self) -> bool {
        matches!(
            self,
            Agent::Gemini | Agent::Qwen | Agent::Cursor | Agent::Factory
        )
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An agent name loopguard does not know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown agent `{0}` (expected one of: claude-code, codex, gemini, qwen, copilot, cursor, factory, cline, windsurf, kiro)")]
pub struct UnknownAgent(pub String);

impl FromStr for Agent {
    type Err = UnknownAgent;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AGENTS
            .iter()
            .copied()
            .find(|a| a.as_str() == s)
            .or(match s {
                "claude" => Some(Agent::ClaudeCode),
                "gemini-cli" => Some(Agent::Gemini),
                "qwen-code" => Some(Agent::Qwen),
                "github-copilot" | "vscode" => Some(Agent::Copilot),
                "droid" | "factory-droid" => Some(Agent::Factory),
                "cascade" => Some(Agent::Windsurf),
                "kiro-cli" => Some(Agent::Kiro),
                _ => None,
            })
            .ok_or_else(|| UnknownAgent(s.to_string()))
    }
}

/// Why a payload could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// Not JSON.
    #[error("hook payload is not valid JSON: {0}")]
    Json(String),
    /// JSON, but not an object.
    #[error("hook payload is not a JSON object")]
    NotAnObject,
    /// A field the event needs is missing or has the wrong type.
    #[error("hook payload: field `{0}` is missing or not {1}")]
    Field(&'static str, &'static str),
}

/// What an event means to the guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Before a tool call: checked, maybe denied.
    Pre,
    /// After a tool call returned: its outcome is recorded.
    Post,
    /// After a tool call failed: its error is recorded.
    Failure,
    /// The user sent a prompt: a new run starts.
    Prompt,
    /// The context was (or is about to be, for agents that only say so before) compacted:
    /// the post-compaction guard is armed.
    Compact,
    /// The session ended: its state is forgotten.
    End,
    /// The agent is about to send tool results back to the model within the same run
    /// (Qwen Code's empty-prompt `UserPromptSubmit`): nothing is recorded, and a run that
    /// loopguard ended is stopped here, before the model is asked again.
    Continuation,
    /// Nothing for loopguard.
    Ignore,
}

/// A tool call of a hook event, with the guard's (Claude Code profile) name and arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// The agent's tool name (shown in messages).
    pub agent_name: String,
    /// The name the guard's Claude Code profile sees ([`profile::map_tool`]).
    pub cc_name: String,
    /// The arguments the guard hashes.
    pub input: Value,
    /// The agent's call id, when it gives one.
    pub id: Option<String>,
    /// What the tool returned (after a call), mapped by [`profile::map_response`].
    pub response: Option<Value>,
    /// The error of a failed call, and whether the user interrupted it.
    pub error: Option<(String, bool)>,
}

/// One hook event, read.
#[derive(Clone, Debug, PartialEq)]
pub struct Normalized {
    /// What it means.
    pub kind: Kind,
    /// The agent's own event name (answers name it).
    pub event: String,
    /// The session key: `AGENT:` and the agent's session (or conversation, task,
    /// trajectory) id; for Kiro, which gives none, its working directory.
    pub session: String,
    /// The working directory, when given (finds the project's config).
    pub cwd: Option<String>,
    /// The tool call of a tool event.
    pub tool: Option<ToolCall>,
    /// `true` when the payload used Claude Code's spellings where the agent has two
    /// (Copilot's "VS Code compatible" PascalCase events): the answer uses them too.
    pub claude_shaped: bool,
}

impl Normalized {
    /// An event with nothing for loopguard.
    pub(crate) fn ignore(event: &str, session: &str) -> Normalized {
        Normalized {
            kind: Kind::Ignore,
            event: event.to_string(),
            session: session.to_string(),
            cwd: None,
            tool: None,
            claude_shaped: false,
        }
    }

    /// The event as a Claude Code hook payload, for [`crate::claude_code::apply_payload`].
    pub fn to_claude_code(&self) -> Value {
        let name = match self.kind {
            Kind::Pre => "PreToolUse",
            Kind::Post => "PostToolUse",
            Kind::Failure => "PostToolUseFailure",
            Kind::Prompt => "UserPromptSubmit",
            Kind::Compact => "PostCompact",
            Kind::End => "SessionEnd",
            Kind::Ignore | Kind::Continuation => "Notification",
        };
        let mut o = Map::new();
        o.insert("session_id".into(), json!(self.session));
        o.insert("hook_event_name".into(), json!(name));
        if let Some(cwd) = &self.cwd {
            o.insert("cwd".into(), json!(cwd));
        }
        if let Some(t) = &self.tool {
            o.insert("tool_name".into(), json!(t.cc_name));
            o.insert("tool_input".into(), t.input.clone());
            if let Some(id) = &t.id {
                o.insert("tool_use_id".into(), json!(id));
            }
            if self.kind == Kind::Post {
                o.insert(
                    "tool_response".into(),
                    t.response.clone().unwrap_or(Value::Null),
                );
            }
            if let Some((e, interrupt)) = &t.error {
                o.insert("error".into(), json!(e));
                o.insert("is_interrupt".into(), json!(interrupt));
            }
        }
        Value::Object(o)
    }
}

/// Field helpers shared by the agents' modules.
pub(crate) fn str_field<'v>(v: &'v Value, keys: &[&str]) -> Option<&'v str> {
    keys.iter().find_map(|k| v.get(*k).and_then(Value::as_str))
}

pub(crate) fn required<'v>(v: &'v Value, key: &'static str) -> Result<&'v str, AgentError> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or(AgentError::Field(key, "a string"))
}

/// A tool call read from `name`/`input`/`id` fields (`input` may be a JSON string, as in
/// Copilot CLI's `toolArgs`).
pub(crate) fn tool(
    v: &Value,
    name_keys: &[&'static str],
    input_keys: &[&str],
    id_keys: &[&str],
) -> Result<ToolCall, AgentError> {
    let name = str_field(v, name_keys).ok_or(AgentError::Field(name_keys[0], "a string"))?;
    let input = input_keys
        .iter()
        .find_map(|k| v.get(*k))
        .cloned()
        .unwrap_or(Value::Null);
    let input = match input {
        Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
        other => other,
    };
    Ok(ToolCall {
        agent_name: name.to_string(),
        cc_name: name.to_string(),
        input,
        id: str_field(v, id_keys).map(str::to_string),
        response: None,
        error: None,
    })
}
