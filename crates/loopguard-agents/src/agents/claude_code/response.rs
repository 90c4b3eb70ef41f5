//! The JSON a hook writes to standard output for Claude Code.
//!
//! Claude Code reads the hook's stdout as JSON when the hook exits with status 0:
//!
//! * `PreToolUse`: `hookSpecificOutput.permissionDecision: "deny"` with
//!   `permissionDecisionReason` stops the call, and the reason is shown to the model as
//!   the call's result; `hookSpecificOutput.additionalContext` adds text to the model's
//!   context before the tool runs (a warning).
//! * Any event: `continue: false` stops the agent, with `stopReason` shown to the user;
//!   `systemMessage` is a notice shown to the user.
//! * `PostToolUse`: `decision: "block"` with `reason` tells the model why.
//!
//! When there is nothing to say the hook prints nothing, which lets the call proceed
//! through Claude Code's normal permission flow (the hook never answers `allow`, which
//! would skip the user's permission prompts).
//!
//! ```
//! use loopguard_agents::claude_code::Reply;
//! let r = Reply::deny("PreToolUse", "CRITICAL: Called Bash with identical arguments …", "loopguard blocked Bash");
//! let json: serde_json::Value = serde_json::from_str(&r.render()).unwrap();
//! assert_eq!(json["hookSpecificOutput"]["permissionDecision"], "deny");
//! assert_eq!(Reply::none("PreToolUse").render(), "");
//! ```

use serde_json::{json, Map, Value};

/// What the hook tells Claude Code.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reply {
    /// `hookEventName` of the event answered.
    pub event: String,
    /// Deny the tool call with this reason (`PreToolUse`).
    pub deny: Option<String>,
    /// Add this to the model's context.
    pub context: Option<String>,
    /// Stop the agent with this reason (`continue: false`).
    pub stop: Option<String>,
    /// A notice for the user (`systemMessage`).
    pub notice: Option<String>,
    /// What the event was logged as (a `PostToolBatch` logs a row per call it fills in):
    /// for a server's decision metrics. Not part of the JSON Claude Code reads.
    pub logged: Vec<loopguard_guard::LogRow>,
}

impl Reply {
    /// Nothing to say.
    pub fn none(event: &str) -> Reply {
        Reply {
            event: event.to_string(),
            ..Reply::default()
        }
    }

    /// Deny a tool call.
    pub fn deny(event: &str, reason: &str, notice: &str) -> Reply {
        Reply {
            event: event.to_string(),
            deny: Some(reason.to_string()),
            notice: Some(notice.to_string()),
            ..Reply::default()
        }
    }

    /// Add context for the model.
    pub fn context(event: &str, text: &str) -> Reply {
        Reply {
            event: event.to_string(),
            context: Some(text.to_string()),
            ..Reply::default()
        }
    }

    /// Stop the agent.
    pub fn stop(event: &str, reason: &str) -> Reply {
        Reply {
            event: event.to_string(),
            stop: Some(reason.to_string()),
            ..Reply::default()
        }
    }

    /// `true` when nothing is printed.
    pub fn is_empty(&self) -> bool {
        self.deny.is_none()
            && self.context.is_none()
            && self.stop.is_none()
            && self.notice.is_none()
    }

    /// The JSON object, or `None` when there is nothing to say.
    pub fn to_json(&self) -> Option<Value> {
        if self.is_empty() {
            return None;
        }
        let mut out = Map::new();
        if let Some(stop) = &self.stop {
            out.insert("continue".into(), json!(false));
            out.insert("stopReason".into(), json!(stop));
            if self.event == "PostToolUse" || self.event == "PostToolUseFailure" {
                out.insert("decision".into(), json!("block"));
                out.insert("reason".into(), json!(stop));
            }
        }
        let mut specific = Map::new();
        if let Some(reason) = &self.deny {
            specific.insert("permissionDecision".into(), json!("deny"));
            specific.insert("permissionDecisionReason".into(), json!(reason));
        }
        if let Some(ctx) = &self.context {
            specific.insert("additionalContext".into(), json!(ctx));
        }
        if !specific.is_empty() {
            specific.insert("hookEventName".into(), json!(self.event));
            // hookEventName first, as in Claude Code's documentation.
            let mut ordered = Map::new();
            ordered.insert("hookEventName".into(), json!(self.event));
            for (k, v) in specific {
                if k != "hookEventName" {
                    ordered.insert(k, v);
                }
            }
            out.insert("hookSpecificOutput".into(), Value::Object(ordered));
        }
        if let Some(n) = &self.notice {
            out.insert("systemMessage".into(), json!(n));
        }
        Some(Value::Object(out))
    }

    /// What the hook prints: one line of JSON, or nothing.
    pub fn render(&self) -> String {
        match self.to_json() {
            Some(v) => format!("{v}\n"),
            None => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_match_the_hook_reference() {
        let deny: Value =
            serde_json::from_str(&Reply::deny("PreToolUse", "why", "note").render()).unwrap();
        assert_eq!(
            deny,
            json!({"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"why"},"systemMessage":"note"})
        );
        let warn: Value =
            serde_json::from_str(&Reply::context("PreToolUse", "careful").render()).unwrap();
        assert_eq!(
            warn,
            json!({"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"careful"}})
        );
        let stop: Value =
            serde_json::from_str(&Reply::stop("PostToolUse", "loop").render()).unwrap();
        assert_eq!(
            stop,
            json!({"continue":false,"stopReason":"loop","decision":"block","reason":"loop"})
        );
        let pre_stop = Reply {
            deny: Some("loop".into()),
            ..Reply::stop("PreToolUse", "loop")
        };
        let v = pre_stop.to_json().unwrap();
        assert_eq!(v["continue"], json!(false));
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], json!("deny"));
        assert!(v.get("decision").is_none());
        assert!(Reply::none("Stop").render().is_empty());
    }
}
