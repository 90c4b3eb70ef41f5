//! The one agent protocol: what every agent's hook event means to the guard
//! ([`AgentEvent`]), what the guard answers ([`Answer`]), and the [`Protocol`] each agent
//! implements to read its payloads and write its answers.
//!
//! Payloads are read once, with loopguard's own JSON parser: tool arguments and results
//! are hashed, and their hashes must be OpenClaw's, which needs `JSON.parse` semantics
//! (every number an `f64`, lone surrogates such as `"\ud800"` kept, a repeated key keeping
//! its last value). The parser never panics and limits nesting; errors name the field.

use loopguard_core::{json::ParseError, JsString, Object, Value};

/// What an event means to the guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Before a tool call: checked, maybe denied.
    Pre,
    /// After a tool call returned or failed: its outcome is recorded.
    Post,
    /// After a batch of parallel calls resolved (Claude Code's `PostToolBatch`): the
    /// outcome of each call no single outcome event recorded.
    Batch,
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
    /// Nothing for loopguard (the store is not touched).
    Ignore,
}

impl Kind {
    /// The event's name in the session log: Claude Code's hook vocabulary, which the log
    /// has always used for every agent.
    pub fn log_name(self) -> &'static str {
        match self {
            Kind::Pre => "PreToolUse",
            Kind::Post => "PostToolUse",
            Kind::Batch => "PostToolBatch",
            Kind::Prompt => "UserPromptSubmit",
            Kind::Compact => "PostCompact",
            Kind::End => "SessionEnd",
            Kind::Continuation | Kind::Ignore => "Notification",
        }
    }
}

/// One tool call.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolUse<'a> {
    /// The tool's name as the guard sees it: the agent's own, until the run path maps it
    /// with the agent's row of the tool table (`Bash` for shell tools, …).
    pub name: JsString<'a>,
    /// The arguments.
    pub input: Value<'a>,
    /// The call id, when the agent gives one.
    pub id: Option<JsString<'a>>,
}

/// What a finished call gave.
#[derive(Clone, Debug, PartialEq)]
pub enum CallOutcome<'a> {
    /// It returned this.
    Result(Value<'a>),
    /// It failed with this text; `interrupt` when the user interrupted it.
    Error {
        /// The error text.
        text: JsString<'a>,
        /// The user interrupted the call.
        interrupt: bool,
    },
}

/// One hook event of any agent, read.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentEvent<'a> {
    /// What it means.
    pub kind: Kind,
    /// The agent's own event name (answers name it).
    pub event: String,
    /// The agent's session (conversation, task, trajectory) id; the run path prefixes
    /// it with the agent's name for every agent but Claude Code.
    pub session: String,
    /// The working directory, when given (finds the project's config).
    pub cwd: Option<String>,
    /// The subagent whose call this is (its calls are a run of their own).
    pub subagent: Option<String>,
    /// The `agents.list[]` id whose settings apply (Claude Code's `agent_type`).
    pub agent_type: Option<String>,
    /// The permission mode the event carried (shown by `loopguard status`).
    pub permission_mode: Option<String>,
    /// The tool call of a tool event.
    pub tool: Option<ToolUse<'a>>,
    /// The agent's own name of the tool (messages name it), when the tool table renamed it.
    pub tool_shown: Option<String>,
    /// The outcome of a [`Kind::Post`] event.
    pub outcome: Option<CallOutcome<'a>>,
    /// The calls of a [`Kind::Batch`], each with the result the model saw, if any.
    pub batch: Vec<(ToolUse<'a>, Option<Value<'a>>)>,
    /// `true` when the payload used Claude Code's spellings where the agent has two
    /// (Copilot's "VS Code compatible" PascalCase events): the answer uses them too.
    pub claude_shaped: bool,
    /// `true` when the session log names the event as the agent did (Claude Code), not
    /// by [`Kind::log_name`].
    pub logs_own_name: bool,
}

impl<'a> AgentEvent<'a> {
    /// An event of `kind` with nothing else read yet.
    pub fn new(kind: Kind, event: &str, session: &str) -> AgentEvent<'a> {
        AgentEvent {
            kind,
            event: event.to_string(),
            session: session.to_string(),
            cwd: None,
            subagent: None,
            agent_type: None,
            permission_mode: None,
            tool: None,
            tool_shown: None,
            outcome: None,
            batch: Vec::new(),
            claude_shaped: false,
            logs_own_name: false,
        }
    }

    /// `text` naming the agent's own tool where it names the one the tool table mapped it to
    /// (`Called run_shell_command …`, not `Called Bash …`); `None` when the tool kept its name.
    pub fn in_agents_words(&self, text: &str) -> Option<String> {
        let (Some(shown), Some(t)) = (&self.tool_shown, &self.tool) else {
            return None;
        };
        let mapped = t.name.to_string_lossy();
        Some(
            text.replace(&format!(" {mapped} "), &format!(" {shown} "))
                .replace(&format!(" {mapped}:"), &format!(" {shown}:")),
        )
    }

    /// An event with nothing for loopguard.
    pub fn ignore(event: &str, session: &str) -> AgentEvent<'a> {
        AgentEvent::new(Kind::Ignore, event, session)
    }

    /// The event's name in the session log.
    pub fn log_name(&self) -> &str {
        if self.logs_own_name {
            &self.event
        } else {
            self.kind.log_name()
        }
    }
}

/// What the guard answers to one event, in no agent's words yet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Answer {
    /// Deny the tool call with this reason (before a call).
    pub deny: Option<String>,
    /// Add this to the model's context (an emitted warning).
    pub context: Option<String>,
    /// Ask the user whether the call may run, with this reason (before a call;
    /// `loopguard.onCritical: "ask"`). The run path turns it into a deny (the field `deny`) for an
    /// agent that cannot ask ([`Protocol::asks`]).
    pub ask: Option<String>,
    /// Stop the agent with this reason.
    pub stop: Option<String>,
    /// A notice for the user.
    pub notice: Option<String>,
    /// What the event was logged as (a `PostToolBatch` logs a row per call it fills in):
    /// for a server's decision metrics. Not part of any answer.
    pub logged: Vec<loopguard_guard::LogRow>,
    /// The loop history's steps of the event's decisions with a finding (the alerts'
    /// input: the front end folds them into its store's loop records). Not part of any
    /// answer.
    pub loops: Vec<loopguard_guard::LoopStep>,
}

impl Answer {
    /// `true` when there is nothing to say.
    pub fn is_empty(&self) -> bool {
        self.deny.is_none()
            && self.ask.is_none()
            && self.context.is_none()
            && self.stop.is_none()
            && self.notice.is_none()
    }

    /// Deny a tool call.
    pub(crate) fn deny(reason: &str, notice: &str) -> Answer {
        Answer {
            deny: Some(reason.to_string()),
            notice: Some(notice.to_string()),
            ..Answer::default()
        }
    }

    /// Add context for the model.
    pub(crate) fn context(text: &str) -> Answer {
        Answer {
            context: Some(text.to_string()),
            ..Answer::default()
        }
    }

    /// Stop the agent.
    pub(crate) fn stop(reason: &str) -> Answer {
        Answer {
            stop: Some(reason.to_string()),
            ..Answer::default()
        }
    }
}

/// What a hook prints and how it exits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rendered {
    /// Standard output: the agent's answer (JSON), or empty.
    pub stdout: String,
    /// Lines for standard error (Windsurf and Kiro read a block's reason there).
    pub stderr: Vec<String>,
    /// The exit status: 0, or 2 where the agent blocks that way.
    pub exit_code: i32,
}

impl Rendered {
    /// One JSON value on a line of standard output, exit status 0.
    pub fn json(v: serde_json::Value) -> Rendered {
        Rendered {
            stdout: format!("{v}\n"),
            ..Rendered::default()
        }
    }
}

/// Why a payload could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// Not JSON.
    #[error("hook payload is not valid JSON: {0}")]
    Json(#[from] ParseError),
    /// JSON, but not an object.
    #[error("hook payload is not a JSON object")]
    NotAnObject,
    /// A required field is absent.
    #[error("hook payload: field `{0}` is missing")]
    Missing(&'static str),
    /// A field has the wrong type.
    #[error("hook payload: field `{0}` must be {1}")]
    Type(&'static str, &'static str),
}

impl AgentError {
    /// The field the error names, if any.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            AgentError::Missing(f) | AgentError::Type(f, _) => Some(f),
            _ => None,
        }
    }
}

/// One agent's hook protocol: its payloads read into [`AgentEvent`]s, the guard's
/// [`Answer`] written back the way it reads answers. Everything else (sessions, runs,
/// duplicates, aborts, the post-compaction guard, the tool table, deferred warnings) is
/// the run path's, the same for every agent. Adding an agent is a new module implementing
/// this, and its line in [`crate::Agent`]'s table.
pub trait Protocol: Sync {
    /// The agent's name, as `loopguard hook AGENT` spells it; also its row of the tool
    /// table ([`loopguard_guard::profile::agents`]).
    fn name(&self) -> &'static str;

    /// Reads one payload (a JSON object). `Ok` with [`Kind::Ignore`] for events loopguard
    /// has nothing to do with; `Err` naming the field for input that is not a payload of
    /// this agent.
    fn read<'a>(&self, payload: &Fields<'_, 'a>) -> Result<AgentEvent<'a>, AgentError>;

    /// Writes the answer for `event` the way the agent reads it.
    fn render(&self, event: &AgentEvent<'_>, answer: &Answer) -> Rendered;

    /// The answer that lets the call go on and says nothing: what the hook prints when
    /// there is nothing to say and whenever it fails open.
    fn allow(&self) -> Rendered {
        Rendered::default()
    }

    /// A synthetic pre-tool payload of this agent for session `session` in `cwd`, one
    /// read of a file: what `loopguard doctor` sends through an installed hook to see that
    /// it answers. [`Protocol::read`] reads it as a [`Kind::Pre`]. The default is Claude
    /// Code's shape, which Codex, Qwen Code and Factory share.
    fn probe(&self, session: &str, cwd: &str) -> serde_json::Value {
        serde_json::json!({
            "session_id": session,
            "hook_event_name": "PreToolUse",
            "cwd": cwd,
            "tool_name": "Read",
            "tool_input": {"file_path": "loopguard-doctor"},
            "tool_use_id": "loopguard-doctor-1",
        })
    }

    /// `true` when the agent cannot show the model a message before a call, so a warning
    /// decided before the call is kept and given with that call's result.
    fn defers_warnings(&self) -> bool {
        false
    }

    /// `true` when the agent's hook can answer "ask the user" before a call (its own
    /// approval prompt), so [`Answer::ask`] is rendered as such; otherwise an ask is a
    /// refusal (the answer's `deny`).
    fn asks(&self) -> bool {
        false
    }

    /// `true` when the agent's session ids are stored as they are; otherwise they are
    /// `AGENT:ID`. Only Claude Code's are, as its hook has always stored them.
    fn keeps_session_ids(&self) -> bool {
        false
    }

    /// `true` when the agent can take its answer from an HTTP response (`POST
    /// /v1/hooks/{agent}`); `false` for agents that block only through the hook's exit
    /// status.
    fn answers_in_json(&self) -> bool {
        true
    }
}

/// The fields of a payload, looked up by name.
pub struct Fields<'o, 'a>(pub(crate) &'o Object<'a>);

impl<'o, 'a> Fields<'o, 'a> {
    /// Reads `input` as one JSON object.
    pub(crate) fn parse(input: &'a [u8]) -> Result<Value<'a>, AgentError> {
        let v = loopguard_core::json::parse(input)?;
        if !matches!(v, Value::Object(_)) {
            return Err(AgentError::NotAnObject);
        }
        Ok(v)
    }

    /// The field `k`.
    pub fn get(&self, k: &str) -> Option<&'o Value<'a>> {
        self.0.get(k)
    }

    /// The first of `keys` present.
    pub fn first(&self, keys: &[&str]) -> Option<&'o Value<'a>> {
        keys.iter().find_map(|k| self.0.get(k))
    }

    /// The first of `keys` that holds a string.
    pub fn str_of(&self, keys: &[&str]) -> Option<String> {
        keys.iter()
            .find_map(|k| self.0.get(k).and_then(Value::as_js_str))
            .map(|s| s.to_string_lossy().into_owned())
    }

    /// A required field holding a string.
    pub fn required(&self, k: &'static str) -> Result<String, AgentError> {
        match self.0.get(k) {
            None => Err(AgentError::Missing(k)),
            Some(Value::String(s)) => Ok(s.to_string_lossy().into_owned()),
            Some(_) => Err(AgentError::Type(k, "a string")),
        }
    }

    /// An optional field holding a string (`null` is absent).
    pub fn opt_str(&self, k: &'static str) -> Result<Option<String>, AgentError> {
        match self.0.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.to_string_lossy().into_owned())),
            Some(_) => Err(AgentError::Type(k, "a string")),
        }
    }

    /// The object in field `k`.
    pub fn object(&self, k: &'static str) -> Result<Fields<'o, 'a>, AgentError> {
        match self.0.get(k) {
            Some(Value::Object(o)) => Ok(Fields(o)),
            None => Err(AgentError::Missing(k)),
            Some(_) => Err(AgentError::Type(k, "an object")),
        }
    }

    /// A tool call read from the first present of `name_keys` (required), `input_keys`
    /// (`null` when absent; a string holding JSON, as Copilot CLI's `toolArgs`, is read as
    /// that JSON) and `id_keys`.
    pub fn tool(
        &self,
        name_keys: &[&'static str],
        input_keys: &[&str],
        id_keys: &[&str],
    ) -> Result<ToolUse<'a>, AgentError> {
        let name = match self.first(name_keys) {
            Some(Value::String(s)) => s.clone(),
            None => return Err(AgentError::Missing(name_keys[0])),
            Some(_) => return Err(AgentError::Type(name_keys[0], "a string")),
        };
        let input = self.first(input_keys).cloned().unwrap_or(Value::Null);
        let input = match input {
            Value::String(s) => match Value::parse(s.as_wtf8()) {
                Ok(v) => v.into_owned(),
                Err(_) => Value::String(s),
            },
            other => other,
        };
        let id = id_keys
            .iter()
            .find_map(|k| self.0.get(k).and_then(Value::as_js_str))
            .cloned();
        Ok(ToolUse { name, input, id })
    }
}
