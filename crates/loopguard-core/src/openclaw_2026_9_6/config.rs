//! What the release reads of a config: `tools.loopDetection.enabled`, per agent
//! (`resolveToolLoopDetectionConfig`), and which bundled channel plugins are set up.

use crate::value::Value;

use super::hash::Channels;

/// The resolved `enabled`: detection runs only for `true`; the post-compaction guard is off
/// only for `false`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Enabled {
    /// `enabled: true`.
    True,
    /// `enabled: false`.
    False,
    /// Unset, or any other value.
    #[default]
    Unset,
}

fn truthy(v: Option<&Value<'_>>) -> bool {
    match v {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::Number(n)) => *n != 0.0 && !n.is_nan(),
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

/// `normalizeAgentId`: trimmed and lowercased; an id that is not `[a-z0-9][a-z0-9_-]{0,63}`
/// has its other characters turned into dashes (at most 64 characters kept); an empty
/// result is `main`.
///
/// ```
/// use loopguard_core::openclaw_2026_9_6::normalize_agent_id;
/// assert_eq!(normalize_agent_id(" Safe-Runner "), "safe-runner");
/// assert_eq!(normalize_agent_id("My Agent!"), "my-agent");
/// assert_eq!(normalize_agent_id(""), "main");
/// ```
pub fn normalize_agent_id(id: &str) -> String {
    let trimmed = String::from_utf8_lossy(crate::text::js_trim(id.as_bytes())).into_owned();
    let lower = trimmed.to_lowercase();
    let valid = {
        let b = trimmed.as_bytes();
        !b.is_empty()
            && b.len() <= 64
            && b[0].is_ascii_alphanumeric()
            && b[1..]
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-')
    };
    if valid {
        return lower;
    }
    let mut out = String::new();
    let mut in_run = false;
    for c in lower.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-' {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('-');
            in_run = true;
        }
    }
    let out: String = out.trim_matches('-').chars().take(64).collect();
    if out.is_empty() {
        "main".to_owned()
    } else {
        out
    }
}

fn id_of(v: Option<&Value<'_>>) -> String {
    match v {
        Some(Value::String(s)) => normalize_agent_id(&s.to_string_lossy()),
        _ => "main".to_owned(),
    }
}

/// The agent's `tools.loopDetection`, as `resolveAgentConfig` finds the agent (in
/// `agents.entries`, keyed by id, or in `agents.list`).
fn agent_loop_detection<'v>(config: &'v Value<'_>, agent: &str) -> Option<&'v Value<'v>> {
    let id = normalize_agent_id(agent);
    let agents = config.get("agents")?.as_object()?;
    let entry = match (agents.get("entries"), agents.get("list")) {
        (Some(Value::Object(entries)), _) => entries
            .iter()
            .find(|(k, v)| {
                matches!(v, Value::Object(_)) && normalize_agent_id(&k.to_string_lossy()) == id
            })
            .map(|(_, v)| v),
        (Some(_), _) => None,
        (None, Some(Value::Array(list))) => list
            .iter()
            .find(|e| matches!(e, Value::Object(_)) && id_of(e.get("id")) == id),
        _ => None,
    }?;
    entry.get("tools")?.get("loopDetection")
}

/// The `enabled` the release resolves for `agent` (`resolveToolLoopDetectionConfig`): the
/// agent's `tools.loopDetection.enabled` if the agent has that block, falling back to the
/// global one; no other key is read.
///
/// ```
/// use loopguard_core::openclaw_2026_9_6::{loop_detection_enabled, Enabled};
/// use loopguard_core::Value;
/// let cfg = Value::parse(br#"{"tools":{"loopDetection":{"enabled":true}},
///   "agents":{"list":[{"id":"Quiet","tools":{"loopDetection":{"enabled":false}}}]}}"#)?;
/// assert_eq!(loop_detection_enabled(&cfg, None), Enabled::True);
/// assert_eq!(loop_detection_enabled(&cfg, Some("quiet")), Enabled::False);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn loop_detection_enabled(config: &Value<'_>, agent: Option<&str>) -> Enabled {
    let global = config.get("tools").and_then(|t| t.get("loopDetection"));
    let agent = agent
        .filter(|a| !a.is_empty())
        .and_then(|a| agent_loop_detection(config, a));
    let enabled = match (truthy(agent), truthy(global)) {
        (false, _) => global.and_then(|g| g.get("enabled")),
        (true, false) => agent.and_then(|a| a.get("enabled")),
        (true, true) => match agent.and_then(|a| a.get("enabled")) {
            None | Some(Value::Null) => global.and_then(|g| g.get("enabled")),
            some => some,
        },
    };
    match enabled {
        Some(Value::Bool(true)) => Enabled::True,
        Some(Value::Bool(false)) => Enabled::False,
        _ => Enabled::Unset,
    }
}

/// The release's bundled channel plugins that `config` sets up (`channels.<id>`, an object
/// without `enabled: false`), so that their tools' sends are recognised.
pub fn channels(config: &Value<'_>) -> Channels {
    let set_up = |id: &str| match config.get("channels").and_then(|c| c.get(id)) {
        Some(v @ Value::Object(_)) => v.get("enabled") != Some(&Value::Bool(false)),
        _ => false,
    };
    Channels {
        telegram: set_up("telegram"),
    }
}
