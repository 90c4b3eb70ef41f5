//! The JSON object Claude Code writes to a hook's standard input.
//!
//! Every event carries `session_id`, `transcript_path`, `cwd` and `hook_event_name`; the
//! tool events add `tool_name`, `tool_input` and `tool_use_id`, `PostToolUse` adds
//! `tool_response`, `PostToolUseFailure` adds `error` and `is_interrupt`, `SessionStart`
//! adds `source` (`startup`, `resume`, `clear`, `compact`) and `PreCompact` adds `trigger`
//! (`manual`, `auto`), `PostCompact` adds `trigger` and `compact_summary`, `SessionEnd`
//! adds `reason`, and `PostToolBatch` adds `tool_calls` (each with `tool_name`,
//! `tool_input`, `tool_use_id` and `tool_response`, the serialized result the model saw).
//! Most events carry `permission_mode`. Calls made inside a subagent carry `agent_id` and
//! `agent_type`; `SubagentStart` and `SubagentStop` carry them too. The field names follow
//! Claude Code's hooks reference (code.claude.com/docs/en/hooks, as of Claude Code 2.1.240).
//!
//! VS Code's agent runs the hooks of `.claude/settings.json` too, with `sessionId` and
//! `hookEventName` (and an ISO `timestamp`) in place of `session_id` and
//! `hook_event_name` (VS Code's agent hooks reference, "Common input fields",
//! code.visualstudio.com/docs/agent-customization/hooks): every field is read in both
//! spellings, so one install protects Claude Code and VS Code.
//!
//! Unknown fields are ignored, and an event loopguard does not know is read as
//! [`HookEvent::Other`] with its envelope read leniently (a field of an unexpected type
//! is dropped, not an error), so newer Claude Code versions keep working.
//!
//! The payload is read with loopguard's own JSON parser rather than serde: the tool
//! arguments and results are hashed, and their hashes must be OpenClaw's, which needs
//! `JSON.parse` semantics (every number an `f64`, lone surrogates such as `"\ud800"` kept,
//! a repeated key keeping its last value). The parser never panics and limits nesting.
//! Errors name the field.
//!
//! ```
//! use loopguard_agents::claude_code::{HookEvent, HookPayload};
//! let p = HookPayload::parse(br#"{"session_id":"abc","hook_event_name":"PreToolUse",
//!     "tool_name":"Bash","tool_input":{"command":"make"},"tool_use_id":"toolu_1"}"#).unwrap();
//! assert_eq!(p.session_id, "abc");
//! match &p.event {
//!     HookEvent::PreToolUse(t) => assert_eq!(t.name.as_str(), Some("Bash")),
//!     _ => unreachable!(),
//! }
//! let e = HookPayload::parse(br#"{"session_id":"abc","hook_event_name":"PreToolUse"}"#).unwrap_err();
//! assert_eq!(e.to_string(), "hook payload: field `tool_name` is missing");
//! ```

use loopguard_core::{json::ParseError, JsString, Object, Value};

/// Why a payload was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    /// The input is not one JSON value.
    #[error("hook payload is not valid JSON: {0}")]
    Json(#[from] ParseError),
    /// The input is JSON but not an object.
    #[error("hook payload is not a JSON object")]
    NotAnObject,
    /// A required field is absent.
    #[error("hook payload: field `{0}` is missing")]
    Missing(&'static str),
    /// A field has the wrong type.
    #[error("hook payload: field `{field}` must be {expected}")]
    Type {
        /// The field.
        field: &'static str,
        /// What it must be.
        expected: &'static str,
    },
}

/// One tool call as Claude Code describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolUse<'a> {
    /// `tool_name`: `Bash`, `Read`, `mcp__server__tool`, …
    pub name: JsString<'a>,
    /// `tool_input`: the arguments.
    pub input: Value<'a>,
    /// `tool_use_id`: pairs the call with its outcome.
    pub id: Option<JsString<'a>>,
}

/// The event, with its event-specific fields.
#[derive(Clone, Debug, PartialEq)]
pub enum HookEvent<'a> {
    /// Before a tool runs.
    PreToolUse(ToolUse<'a>),
    /// After a tool returned; `tool_response` is what it returned.
    PostToolUse(ToolUse<'a>, Value<'a>),
    /// After a tool failed: `error` and `is_interrupt`.
    PostToolUseFailure(ToolUse<'a>, JsString<'a>, bool),
    /// The user submitted a prompt: a new run starts.
    UserPromptSubmit,
    /// A compaction is about to run (`trigger`: `manual` or `auto`).
    PreCompact,
    /// A compaction finished.
    PostCompact,
    /// A session started (`source`: `startup`, `resume`, `clear` or `compact`).
    SessionStart(Option<String>),
    /// After a batch of parallel tool calls resolved: each call with the result the model
    /// saw (`None` when the entry had no `tool_response`).
    PostToolBatch(Vec<(ToolUse<'a>, Option<Value<'a>>)>),
    /// The session ended (`reason`: `clear`, `resume`, `logout`, `prompt_input_exit`,
    /// `other`).
    SessionEnd(Option<String>),
    /// A subagent was spawned (its calls carry its `agent_id`).
    SubagentStart,
    /// A subagent finished.
    SubagentStop,
    /// Any other event (`Stop`, `Notification`, …): nothing to do.
    Other(String),
}

impl HookEvent<'_> {
    /// The `hook_event_name`.
    pub fn name(&self) -> &str {
        match self {
            HookEvent::PreToolUse(_) => "PreToolUse",
            HookEvent::PostToolUse(..) => "PostToolUse",
            HookEvent::PostToolUseFailure(..) => "PostToolUseFailure",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::PostCompact => "PostCompact",
            HookEvent::SessionStart(_) => "SessionStart",
            HookEvent::PostToolBatch(_) => "PostToolBatch",
            HookEvent::SessionEnd(_) => "SessionEnd",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::Other(n) => n,
        }
    }

    /// `true` for the events that change a session's state; the others are answered
    /// without touching the store (`PreCompact` arms nothing: another hook may still block
    /// the compaction, and `PostCompact` follows it).
    ///
    /// ```
    /// use loopguard_agents::claude_code::HookEvent;
    /// assert!(HookEvent::UserPromptSubmit.is_stateful());
    /// assert!(!HookEvent::PreCompact.is_stateful());
    /// assert!(HookEvent::SessionStart(Some("compact".into())).is_stateful());
    /// ```
    pub fn is_stateful(&self) -> bool {
        match self {
            HookEvent::SessionStart(source) => source.as_deref() == Some("compact"),
            HookEvent::PreCompact => false,
            HookEvent::SubagentStart | HookEvent::SubagentStop | HookEvent::Other(_) => false,
            _ => true,
        }
    }

    /// The tool call of a tool event.
    pub fn tool(&self) -> Option<&ToolUse<'_>> {
        match self {
            HookEvent::PreToolUse(t)
            | HookEvent::PostToolUse(t, _)
            | HookEvent::PostToolUseFailure(t, ..) => Some(t),
            _ => None,
        }
    }
}

/// A parsed hook payload.
#[derive(Clone, Debug, PartialEq)]
pub struct HookPayload<'a> {
    /// `session_id`.
    pub session_id: String,
    /// `transcript_path`, when given.
    pub transcript_path: Option<String>,
    /// `cwd`, when given.
    pub cwd: Option<String>,
    /// `agent_id`: set for calls made inside a subagent.
    pub agent_id: Option<String>,
    /// `agent_type`: the subagent's type (or the `--agent` of the main thread).
    pub agent_type: Option<String>,
    /// `permission_mode`: `default`, `plan`, `acceptEdits`, `auto`, `dontAsk`,
    /// `bypassPermissions` (kept as given; not every event carries it).
    pub permission_mode: Option<String>,
    /// The event.
    pub event: HookEvent<'a>,
}

impl<'a> HookPayload<'a> {
    /// Parses a payload. Never panics, whatever the bytes.
    pub fn parse(input: &'a [u8]) -> Result<HookPayload<'a>, PayloadError> {
        let Value::Object(obj) = loopguard_core::json::parse(input)? else {
            return Err(PayloadError::NotAnObject);
        };
        let f = Fields(&obj);
        let session_id = f.string("session_id")?;
        let event_name = f.string("hook_event_name")?;
        let event = match event_name.as_str() {
            "PreToolUse" => HookEvent::PreToolUse(f.tool()?),
            "PostToolUse" => {
                HookEvent::PostToolUse(f.tool()?, f.required("tool_response")?.clone())
            }
            "PostToolUseFailure" => {
                // `error` in Claude Code's hook reference; `error_message` in some
                // descriptions of it, accepted too.
                let error = match f.get("error").or_else(|| f.get("error_message")) {
                    None | Some(Value::Null) => JsString::from(""),
                    Some(Value::String(s)) => s.clone(),
                    Some(_) => {
                        return Err(PayloadError::Type {
                            field: "error",
                            expected: "a string",
                        })
                    }
                };
                let interrupt = match f.get("is_interrupt") {
                    None | Some(Value::Null) => false,
                    Some(Value::Bool(b)) => *b,
                    Some(_) => {
                        return Err(PayloadError::Type {
                            field: "is_interrupt",
                            expected: "a boolean",
                        })
                    }
                };
                HookEvent::PostToolUseFailure(f.tool()?, error, interrupt)
            }
            "UserPromptSubmit" => HookEvent::UserPromptSubmit,
            "PreCompact" => HookEvent::PreCompact,
            "PostCompact" => HookEvent::PostCompact,
            "SessionStart" => HookEvent::SessionStart(f.opt_string("source")?),
            "PostToolBatch" => HookEvent::PostToolBatch(f.batch()?),
            "SessionEnd" => HookEvent::SessionEnd(f.opt_string("reason")?),
            "SubagentStart" => HookEvent::SubagentStart,
            "SubagentStop" => HookEvent::SubagentStop,
            _ => {
                // An event this version does not know: nothing in it may fail.
                let lenient = |k| f.opt_string(k).ok().flatten();
                return Ok(HookPayload {
                    session_id,
                    transcript_path: lenient("transcript_path"),
                    cwd: lenient("cwd"),
                    agent_id: lenient("agent_id"),
                    agent_type: lenient("agent_type"),
                    permission_mode: lenient("permission_mode"),
                    event: HookEvent::Other(event_name),
                });
            }
        };
        Ok(HookPayload {
            session_id,
            transcript_path: f.opt_string("transcript_path")?,
            cwd: f.opt_string("cwd")?,
            agent_id: f.opt_string("agent_id")?,
            agent_type: f.opt_string("agent_type")?,
            permission_mode: f.opt_string("permission_mode")?,
            event,
        })
    }
}

struct Fields<'o, 'a>(&'o Object<'a>);

/// The camelCase spelling of a field, as VS Code's agent writes the common fields of the
/// Claude Code hooks it runs from `.claude/settings.json` (`sessionId`, `hookEventName`,
/// beside snake_case `transcript_path` and `tool_name`, per VS Code's agent hooks
/// reference): every field is looked up in both spellings, snake_case first.
fn camel(k: &str) -> Option<&'static str> {
    Some(match k {
        "session_id" => "sessionId",
        "hook_event_name" => "hookEventName",
        "transcript_path" => "transcriptPath",
        "permission_mode" => "permissionMode",
        "agent_id" => "agentId",
        "agent_type" => "agentType",
        "tool_name" => "toolName",
        "tool_input" => "toolInput",
        "tool_use_id" => "toolUseId",
        "tool_response" => "toolResponse",
        "tool_calls" => "toolCalls",
        "is_interrupt" => "isInterrupt",
        "error_message" => "errorMessage",
        _ => return None,
    })
}

impl<'o, 'a> Fields<'o, 'a> {
    fn get(&self, k: &'static str) -> Option<&'o Value<'a>> {
        self.0
            .get(k)
            .or_else(|| camel(k).and_then(|c| self.0.get(c)))
    }

    fn required(&self, k: &'static str) -> Result<&'o Value<'a>, PayloadError> {
        self.get(k).ok_or(PayloadError::Missing(k))
    }

    fn string(&self, k: &'static str) -> Result<String, PayloadError> {
        match self.required(k)? {
            Value::String(s) => Ok(s.to_string_lossy().into_owned()),
            _ => Err(PayloadError::Type {
                field: k,
                expected: "a string",
            }),
        }
    }

    fn opt_string(&self, k: &'static str) -> Result<Option<String>, PayloadError> {
        match self.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.to_string_lossy().into_owned())),
            Some(_) => Err(PayloadError::Type {
                field: k,
                expected: "a string",
            }),
        }
    }

    /// `tool_calls` of a `PostToolBatch`.
    fn batch(&self) -> Result<Vec<(ToolUse<'a>, Option<Value<'a>>)>, PayloadError> {
        let Value::Array(calls) = self.required("tool_calls")? else {
            return Err(PayloadError::Type {
                field: "tool_calls",
                expected: "an array",
            });
        };
        calls
            .iter()
            .map(|c| match c {
                Value::Object(o) => {
                    let f = Fields(o);
                    Ok((f.tool()?, f.get("tool_response").cloned()))
                }
                _ => Err(PayloadError::Type {
                    field: "tool_calls",
                    expected: "an array of objects",
                }),
            })
            .collect()
    }

    fn tool(&self) -> Result<ToolUse<'a>, PayloadError> {
        let name = match self.required("tool_name")? {
            Value::String(s) => s.clone(),
            _ => {
                return Err(PayloadError::Type {
                    field: "tool_name",
                    expected: "a string",
                })
            }
        };
        let input = self.required("tool_input")?.clone();
        let id = match self.get("tool_use_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                return Err(PayloadError::Type {
                    field: "tool_use_id",
                    expected: "a string",
                })
            }
        };
        Ok(ToolUse { name, input, id })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_parses() {
        let base = r#""session_id":"s","transcript_path":"/t.jsonl","cwd":"/p""#;
        let tool = r#""tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_1""#;
        let cases = [
            (
                format!(r#"{{{base},"hook_event_name":"PreToolUse",{tool}}}"#),
                "PreToolUse",
            ),
            (
                format!(
                    r#"{{{base},"hook_event_name":"PostToolUse",{tool},"tool_response":{{"stdout":"a"}}}}"#
                ),
                "PostToolUse",
            ),
            (
                format!(
                    r#"{{{base},"hook_event_name":"PostToolUseFailure",{tool},"error":"Exit code 1","is_interrupt":false}}"#
                ),
                "PostToolUseFailure",
            ),
            (
                format!(r#"{{{base},"hook_event_name":"UserPromptSubmit","prompt":"hi"}}"#),
                "UserPromptSubmit",
            ),
            (
                format!(
                    r#"{{{base},"hook_event_name":"PreCompact","trigger":"auto","custom_instructions":""}}"#
                ),
                "PreCompact",
            ),
            (
                format!(r#"{{{base},"hook_event_name":"SessionStart","source":"compact"}}"#),
                "SessionStart",
            ),
            (
                format!(r#"{{{base},"hook_event_name":"Stop","stop_hook_active":false}}"#),
                "Stop",
            ),
        ];
        for (json, name) in cases {
            let p = HookPayload::parse(json.as_bytes()).unwrap();
            assert_eq!(p.event.name(), name);
            assert_eq!(p.cwd.as_deref(), Some("/p"));
        }
        let p = HookPayload::parse(
            br#"{"session_id":"s","hook_event_name":"SessionStart","source":"compact"}"#,
        )
        .unwrap();
        assert_eq!(p.event, HookEvent::SessionStart(Some("compact".into())));
    }

    /// VS Code's agent, running the hooks of `.claude/settings.json`: camelCase common
    /// fields and an ISO timestamp (VS Code's agent hooks reference, "Common input
    /// fields" and "PreToolUse input"), and the all-camelCase variant.
    #[test]
    fn vs_code_payloads_parse() {
        let pre = br#"{"timestamp":"2026-02-09T10:30:00.000Z","cwd":"/w","sessionId":"vs-1","hookEventName":"PreToolUse","transcript_path":"/t.json","tool_name":"run_in_terminal","tool_input":{"command":"npm test"},"tool_use_id":"tool-123"}"#;
        let p = HookPayload::parse(pre).unwrap();
        assert_eq!(p.session_id, "vs-1");
        assert_eq!(p.transcript_path.as_deref(), Some("/t.json"));
        match &p.event {
            HookEvent::PreToolUse(t) => {
                assert_eq!(t.name.as_str(), Some("run_in_terminal"));
                assert_eq!(t.id.as_ref().and_then(|i| i.as_str()), Some("tool-123"));
            }
            e => panic!("{e:?}"),
        }
        let post = br#"{"sessionId":"vs-1","hookEventName":"PostToolUse","toolName":"run_in_terminal","toolInput":{"command":"npm test"},"toolUseId":"tool-123","toolResponse":"1 failing"}"#;
        let p = HookPayload::parse(post).unwrap();
        assert!(matches!(
            p.event,
            HookEvent::PostToolUse(_, Value::String(_))
        ));
        // snake_case wins when both are present; a missing field is named as Claude Code spells it.
        let both = br#"{"session_id":"a","sessionId":"b","hook_event_name":"Stop"}"#;
        assert_eq!(HookPayload::parse(both).unwrap().session_id, "a");
        let e =
            HookPayload::parse(br#"{"sessionId":"b","hookEventName":"PreToolUse"}"#).unwrap_err();
        assert_eq!(e.to_string(), "hook payload: field `tool_name` is missing");
    }

    #[test]
    fn the_newest_events_parse() {
        let p = HookPayload::parse(
            br#"{"session_id":"s","cwd":"/p","permission_mode":"acceptEdits","hook_event_name":"PostToolBatch",
                "tool_calls":[{"tool_name":"Read","tool_input":{"file_path":"/a"},"tool_use_id":"t1","tool_response":"     1\tx"},
                              {"tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"t2"}]}"#,
        )
        .unwrap();
        assert_eq!(p.permission_mode.as_deref(), Some("acceptEdits"));
        let HookEvent::PostToolBatch(calls) = &p.event else {
            panic!("{:?}", p.event)
        };
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].0.name.as_str(), Some("Read"));
        assert!(calls[0].1.is_some() && calls[1].1.is_none());
        let p = HookPayload::parse(
            br#"{"session_id":"s","hook_event_name":"SessionEnd","reason":"prompt_input_exit"}"#,
        )
        .unwrap();
        assert_eq!(
            p.event,
            HookEvent::SessionEnd(Some("prompt_input_exit".into()))
        );
        let p = HookPayload::parse(
            br#"{"session_id":"s","hook_event_name":"PostCompact","trigger":"auto","compact_summary":"x"}"#,
        )
        .unwrap();
        assert_eq!(p.event, HookEvent::PostCompact);
        for name in ["SubagentStart", "SubagentStop"] {
            let json = format!(
                r#"{{"session_id":"s","hook_event_name":"{name}","agent_id":"a1","agent_type":"Explore"}}"#
            );
            let p = HookPayload::parse(json.as_bytes()).unwrap();
            assert_eq!(p.event.name(), name);
            assert_eq!(p.agent_id.as_deref(), Some("a1"));
        }
        let e = HookPayload::parse(
            br#"{"session_id":"s","hook_event_name":"PostToolBatch","tool_calls":{}}"#,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "hook payload: field `tool_calls` must be an array"
        );
    }

    #[test]
    fn unknown_events_and_fields_never_fail() {
        let p = HookPayload::parse(
            br#"{"session_id":"s","hook_event_name":"SomethingNew2027","cwd":7,"permission_mode":["x"],"extra":{"a":1}}"#,
        )
        .unwrap();
        assert_eq!(p.event, HookEvent::Other("SomethingNew2027".into()));
        assert_eq!((p.cwd, p.permission_mode), (None, None));
        let p = HookPayload::parse(
            br#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{},"effort":{"level":"high"},"prompt_id":"u","future":[1]}"#,
        )
        .unwrap();
        assert_eq!(p.event.name(), "PreToolUse");
    }

    #[test]
    fn errors_name_the_field() {
        let e = |s: &str| HookPayload::parse(s.as_bytes()).unwrap_err().to_string();
        assert_eq!(e("[]"), "hook payload is not a JSON object");
        assert!(e("{").starts_with("hook payload is not valid JSON"));
        assert!(e("").starts_with("hook payload is not valid JSON"));
        assert_eq!(
            e(r#"{"hook_event_name":"Stop"}"#),
            "hook payload: field `session_id` is missing"
        );
        assert_eq!(
            e(r#"{"session_id":1,"hook_event_name":"Stop"}"#),
            "hook payload: field `session_id` must be a string"
        );
        assert_eq!(
            e(
                r#"{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Read","tool_input":{}}"#
            ),
            "hook payload: field `tool_response` is missing"
        );
        assert_eq!(
            e(
                r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{},"tool_use_id":7}"#
            ),
            "hook payload: field `tool_use_id` must be a string"
        );
    }

    #[test]
    fn lone_surrogates_and_big_numbers_are_kept_as_javascript_has_them() {
        let p = HookPayload::parse(
            br#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"t","tool_input":{"x":"\ud800","n":9007199254740993}}"#,
        )
        .unwrap();
        let t = p.event.tool().unwrap();
        assert!(t
            .input
            .get("x")
            .unwrap()
            .as_js_str()
            .unwrap()
            .has_lone_surrogates());
        assert_eq!(t.input.get("n").unwrap().as_f64(), Some(9007199254740992.0));
    }

    proptest::proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            let _ = HookPayload::parse(&bytes);
        }

        #[test]
        fn random_json_like_text_never_panics(s in r#"[{}\[\]",:a-z0-9_ \\]{0,200}"#) {
            let _ = HookPayload::parse(s.as_bytes());
            let wrapped = format!(r#"{{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{s},"tool_response":{s}}}"#);
            let _ = HookPayload::parse(wrapped.as_bytes());
        }
    }
}
