//! The texts given to the model, byte for byte as OpenClaw writes them.
//!
//! Users and tests match on these phrases ("identical outcomes", "ping-pong loop",
//! "global circuit breaker", "compaction did not break the loop"), so they are fixed.

use crate::history::Name;

/// Builds a message from literal parts and WTF-8 tool names.
struct Text(Vec<u8>);

impl Text {
    fn new() -> Self {
        Text(Vec::with_capacity(160))
    }
    fn s(mut self, s: &str) -> Self {
        self.0.extend_from_slice(s.as_bytes());
        self
    }
    fn name(mut self, n: &[u8]) -> Self {
        self.0.extend_from_slice(n);
        self
    }
    fn n(mut self, n: u64) -> Self {
        self.0.extend_from_slice(n.to_string().as_bytes());
        self
    }
    fn done(self) -> Name {
        crate::history::name_from_vec(self.0)
    }
}

/// `unknown_tool_repeat` (critical).
pub fn unknown_tool(name: &[u8], count: u64) -> Name {
    Text::new()
        .s("CRITICAL: attempted unavailable tool ")
        .name(name)
        .s(" ")
        .n(count)
        .s(" times. Stop retrying that missing tool and answer without it.")
        .done()
}

/// `global_circuit_breaker` (critical).
pub fn global_breaker(tool: &[u8], count: u64) -> Name {
    Text::new()
        .s("CRITICAL: ")
        .name(tool)
        .s(" has repeated identical no-progress outcomes ")
        .n(count)
        .s(" times. Session execution blocked by global circuit breaker to prevent runaway loops.")
        .done()
}

/// `known_poll_no_progress` (critical).
pub fn poll_critical(tool: &[u8], count: u64) -> Name {
    Text::new()
        .s("CRITICAL: Called ")
        .name(tool)
        .s(" with identical arguments and no progress ")
        .n(count)
        .s(" times. This appears to be a stuck polling loop. Session execution blocked to prevent resource waste.")
        .done()
}

/// `known_poll_no_progress` (warning).
pub fn poll_warning(tool: &[u8], count: u64) -> Name {
    Text::new()
        .s("WARNING: You have called ")
        .name(tool)
        .s(" ")
        .n(count)
        .s(" times with identical arguments and no progress. Stop polling and either (1) increase wait time between checks, or (2) report the task as failed if the process is stuck.")
        .done()
}

/// `ping_pong` (critical).
pub fn ping_pong_critical(count: u64) -> Name {
    Text::new()
        .s("CRITICAL: You are alternating between repeated tool-call patterns (")
        .n(count)
        .s(" consecutive calls) with no progress. This appears to be a stuck ping-pong loop. Session execution blocked to prevent resource waste.")
        .done()
}

/// `ping_pong` (warning).
pub fn ping_pong_warning(count: u64) -> Name {
    Text::new()
        .s("WARNING: You are alternating between repeated tool-call patterns (")
        .n(count)
        .s(" consecutive calls). This looks like a ping-pong loop; stop retrying and report the task as failed.")
        .done()
}

/// `generic_repeat` (critical).
pub fn generic_critical(tool: &[u8], count: u64) -> Name {
    Text::new()
        .s("CRITICAL: Called ")
        .name(tool)
        .s(" with identical arguments and identical outcomes ")
        .n(count)
        .s(" times. Session execution blocked to prevent runaway loops.")
        .done()
}

/// `generic_repeat` (warning).
pub fn generic_warning(tool: &[u8], count: u64) -> Name {
    Text::new()
        .s("WARNING: You have called ")
        .name(tool)
        .s(" ")
        .n(count)
        .s(" times with identical arguments. If this is not making progress, stop retrying and report the task as failed.")
        .done()
}

/// `compaction_loop_persisted` (the post-compaction guard's abort).
pub fn compaction_loop_persisted(tool: &[u8], count: u64, window: u32) -> Name {
    Text::new()
        .s("CRITICAL: tool ")
        .name(tool)
        .s(" repeated ")
        .n(count)
        .s(" times with identical arguments and identical results within ")
        .n(u64::from(window))
        .s(" attempts after auto-compaction. The compaction did not break the loop. Aborting to prevent runaway resource use.")
        .done()
}

/// Joins key parts (`generic:` + tool + `:` + argsHash …) into a warning key.
pub(crate) fn key(parts: &[&[u8]]) -> Name {
    let mut v = Vec::with_capacity(parts.iter().map(|p| p.len()).sum());
    for p in parts {
        v.extend_from_slice(p);
    }
    crate::history::name_from_vec(v)
}
