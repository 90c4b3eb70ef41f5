//! Tool profiles: how an agent runtime's tools are presented to the engine.
//!
//! loopguard's engine hashes a few OpenClaw tools specially (`exec` results without their
//! pid and duration, `process` polls, `update_plan` by shape, channel sends without their
//! fresh ids), so that noise does not hide a loop and progress is not mistaken for one. A
//! runtime whose tools have other names and shapes gets a **profile** that maps them onto
//! those shapes before the engine sees them. The same profile serves the live front end and
//! the replay of that runtime's transcripts, so both find exactly the same loops.
//!
//! | profile | tool names | arguments | outcomes |
//! |---------|------------|-----------|----------|
//! | [`ToolProfile::Plain`] (`none`) | as given | as given | as given (events.md) |
//! | [`ToolProfile::OpenClaw`] | lower-cased; `bash` → `exec`, `apply-patch` → `apply_patch` (decisions.md item 7) | as given | as given |
//! | [`ToolProfile::ClaudeCode`] | `Bash` → `exec`, `BashOutput`/`TaskOutput`/`AgentOutputTool` → `process` poll, `TodoWrite` → `update_plan` | see [`claude_code`] | `tool_response` mapped, see [`claude_code`] |
//! | [`ToolProfile::Mcp`] | as given | the call's `arguments` | the `CallToolResult`'s `content`, `structuredContent` and `isError` (not `_meta`) |
//!
//! Messages shown to the model name the runtime's tool, not the engine's
//! ([`display_message`]).
//!
//! ```
//! use loopguard_guard::ToolProfile;
//! use loopguard_core::Value;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let args = Value::parse(br#"{"command":"npm test","description":"Run the tests (attempt 2)"}"#)?;
//! let mapped = ToolProfile::ClaudeCode.map_call(&"Bash".into(), &args).ok_or("not mapped")?;
//! assert_eq!(mapped.tool.as_str(), Some("exec"));
//! assert!(mapped.args.get("description").is_none()); // the free-text label does not count
//! assert!(ToolProfile::Plain.map_call(&"Bash".into(), &args).is_none()); // used as given
//! assert_eq!("claude-code".parse::<ToolProfile>()?, ToolProfile::ClaudeCode);
//! # Ok(())
//! # }
//! ```

pub mod agents;
pub mod claude_code;
pub mod shell;

use std::fmt;
use std::str::FromStr;

use loopguard_core::{JsString, Object, Value};

/// A runtime's tool profile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolProfile {
    /// Tools, arguments and outcomes as given: the events.md contract and OpenClaw parity.
    #[default]
    Plain,
    /// OpenClaw's own tool names, normalised as its transcript adapter does.
    OpenClaw,
    /// Claude Code's tools (`Bash`, `BashOutput`, `TodoWrite`, …).
    ClaudeCode,
    /// MCP `tools/call`: results are `CallToolResult`s.
    Mcp,
}

/// Every profile, in the order `--profile` lists them.
pub const TOOL_PROFILES: &[ToolProfile] = &[
    ToolProfile::Plain,
    ToolProfile::OpenClaw,
    ToolProfile::ClaudeCode,
    ToolProfile::Mcp,
];

/// A call as the engine sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct MappedCall<'a> {
    /// The engine's tool name.
    pub tool: JsString<'a>,
    /// The arguments that are hashed.
    pub args: Value<'a>,
}

/// An outcome as the engine sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum MappedOutcome<'a> {
    /// A returned value.
    Result(Value<'a>),
    /// A thrown error.
    Error(Value<'a>),
}

impl ToolProfile {
    /// The profile's name (`none`, `openclaw`, `claude-code`, `mcp`).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolProfile::Plain => "none",
            ToolProfile::OpenClaw => "openclaw",
            ToolProfile::ClaudeCode => "claude-code",
            ToolProfile::Mcp => "mcp",
        }
    }

    /// The call the engine sees for `tool` with `args`, or `None` when the profile uses
    /// them as given (no copy is made then).
    pub fn map_call<'a>(self, tool: &JsString<'a>, args: &Value<'a>) -> Option<MappedCall<'a>> {
        match self {
            ToolProfile::Plain | ToolProfile::Mcp => None,
            ToolProfile::OpenClaw => {
                let name = openclaw_name(tool)?;
                Some(MappedCall {
                    tool: name,
                    args: args.clone(),
                })
            }
            ToolProfile::ClaudeCode => Some(claude_code::map_call(tool, args)),
        }
    }

    /// The outcome the engine hashes for a result of `tool` (the runtime's name), or `None`
    /// when it is used as given.
    pub fn map_result<'a>(self, tool: &JsString<'_>, result: &Value<'a>) -> Option<Value<'a>> {
        // A loop veto (a call loopguard refused, read back from a transcript) stays a
        // veto: it has no outcome hash, whatever the tool (docs/events.md, "Enforce and
        // observe").
        if is_loop_veto(result) {
            return None;
        }
        match self {
            ToolProfile::Plain | ToolProfile::OpenClaw => None,
            ToolProfile::ClaudeCode => Some(claude_code::map_result(tool, result)),
            ToolProfile::Mcp => Some(mcp_result(result)),
        }
    }

    /// The outcome the engine hashes for a thrown error of `tool`, or `None` when it is used
    /// as given. A Claude Code `Bash` failure (`Exit code N …`) is a failed `exec` result.
    pub fn map_error<'a>(
        self,
        tool: &JsString<'_>,
        error: &Value<'a>,
    ) -> Option<MappedOutcome<'a>> {
        match (self, error) {
            (ToolProfile::ClaudeCode, Value::String(e)) => {
                Some(claude_code::map_failure(tool, e, false))
            }
            _ => None,
        }
    }
}

impl fmt::Display for ToolProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown profile name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown tool profile `{0}` (expected one of: none, openclaw, claude-code, mcp)")]
pub struct UnknownProfile(pub String);

impl FromStr for ToolProfile {
    type Err = UnknownProfile;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TOOL_PROFILES
            .iter()
            .copied()
            .find(|p| p.as_str() == s)
            .or(match s {
                "plain" => Some(ToolProfile::Plain),
                "claude_code" | "claudecode" => Some(ToolProfile::ClaudeCode),
                _ => None,
            })
            .ok_or_else(|| UnknownProfile(s.to_string()))
    }
}

/// OpenClaw's transcript tool-name normalisation (decisions.md item 7), `None` when the
/// name is already normal.
fn openclaw_name<'a>(tool: &JsString<'a>) -> Option<JsString<'a>> {
    let s = tool.as_str()?;
    let lower = s.to_lowercase();
    let name = match lower.as_str() {
        "bash" => "exec".to_string(),
        "apply-patch" => "apply_patch".to_string(),
        _ => lower,
    };
    (name != s).then(|| JsString::from(name))
}

/// The parts of an MCP `CallToolResult` that say what the tool answered.
fn mcp_result<'a>(result: &Value<'a>) -> Value<'a> {
    match result {
        Value::Object(o) => Value::Object(Object::from_entries(
            o.iter()
                .filter(|(k, _)| {
                    matches!(k.as_wtf8(), b"content" | b"structuredContent" | b"isError")
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        )),
        other => other.clone(),
    }
}

/// Rewrites a detection message so it names the runtime's tool instead of the engine's name
/// for it (`Called exec with …` becomes `Called Bash with …`).
///
/// ```
/// use loopguard_guard::profile::display_message;
/// assert_eq!(
///     display_message("CRITICAL: Called exec with identical arguments", "exec", "Bash"),
///     "CRITICAL: Called Bash with identical arguments"
/// );
/// ```
pub fn display_message(message: &str, engine_tool: &str, runtime_tool: &str) -> String {
    if engine_tool == runtime_tool {
        return message.to_string();
    }
    let from = format!(" {engine_tool} ");
    match message.find(&from) {
        Some(i) => format!(
            "{} {runtime_tool} {}",
            &message[..i],
            &message[i + from.len()..]
        ),
        None => message.to_string(),
    }
}

/// `true` for OpenClaw's loop veto result (`details.status: "blocked"`,
/// `details.deniedReason: "tool-loop"`), which no profile maps.
fn is_loop_veto(result: &Value<'_>) -> bool {
    let Some(details) = result.get("details") else {
        return false;
    };
    details.get("status").and_then(Value::as_str) == Some("blocked")
        && details.get("deniedReason").and_then(Value::as_str) == Some("tool-loop")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in TOOL_PROFILES {
            assert_eq!(p.as_str().parse::<ToolProfile>(), Ok(*p));
        }
        assert!("nope".parse::<ToolProfile>().is_err());
    }

    #[test]
    fn openclaw_names_are_normalised_once() {
        let args = Value::Null;
        let m = ToolProfile::OpenClaw
            .map_call(&"Bash".into(), &args)
            .map(|m| m.tool);
        assert_eq!(m, Some(JsString::from("exec")));
        assert!(ToolProfile::OpenClaw
            .map_call(&"exec".into(), &args)
            .is_none());
        let m = ToolProfile::OpenClaw
            .map_call(&"apply-patch".into(), &args)
            .map(|m| m.tool);
        assert_eq!(m, Some(JsString::from("apply_patch")));
    }

    #[test]
    fn mcp_results_drop_meta() {
        let r = Value::parse(
            br#"{"content":[{"type":"text","text":"x"}],"isError":false,"_meta":{"t":1}}"#,
        )
        .unwrap();
        let m = ToolProfile::Mcp.map_result(&"t".into(), &r).unwrap();
        assert!(m.get("_meta").is_none());
        assert!(m.get("isError").is_some());
    }

    #[test]
    fn a_loop_veto_is_never_mapped() {
        let veto = loopguard_core::veto_result(&"CRITICAL: stop".into());
        for tool in ["Bash", "Read", "BashOutput"] {
            assert_eq!(
                ToolProfile::ClaudeCode.map_result(&tool.into(), &veto),
                None,
                "{tool}"
            );
        }
        assert_eq!(ToolProfile::Mcp.map_result(&"t".into(), &veto), None);
    }
}
