//! The agents loopguard speaks to, and the table that names each one's [`Protocol`].

use std::fmt;
use std::str::FromStr;

use crate::agents;
use crate::protocol::Protocol;

/// A coding agent whose hooks loopguard speaks: a name for one [`Protocol`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Agent {
    /// Anthropic's Claude Code (and VS Code's agent running the hooks of
    /// `.claude/settings.json`).
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

/// The table: every agent, its protocol, and the other names it answers to, in the order
/// `loopguard hook --help` lists them. Adding an agent is its module in `agents/` and a
/// line here.
const TABLE: &[(Agent, &dyn Protocol, &[&str])] = &[
    (
        Agent::ClaudeCode,
        &agents::claude_code::ClaudeCode,
        &["claude"],
    ),
    (Agent::Codex, &agents::codex::Codex, &[]),
    (Agent::Gemini, &agents::gemini::Gemini, &["gemini-cli"]),
    (Agent::Qwen, &agents::qwen::Qwen, &["qwen-code"]),
    (
        Agent::Copilot,
        &agents::copilot::Copilot,
        &["github-copilot", "vscode"],
    ),
    (Agent::Cursor, &agents::cursor::Cursor, &[]),
    (
        Agent::Factory,
        &agents::factory::Factory,
        &["droid", "factory-droid"],
    ),
    (Agent::Cline, &agents::cline::Cline, &[]),
    (Agent::Windsurf, &agents::windsurf::Windsurf, &["cascade"]),
    (Agent::Kiro, &agents::kiro::Kiro, &["kiro-cli"]),
];

/// Every agent, in the order `loopguard hook --help` lists them (the table's order).
pub const AGENTS: &[Agent] = &{
    let mut all = [Agent::ClaudeCode; TABLE.len()];
    let mut i = 0;
    while i < TABLE.len() {
        all[i] = TABLE[i].0;
        i += 1;
    }
    all
};

impl Agent {
    fn row(self) -> &'static (Agent, &'static dyn Protocol, &'static [&'static str]) {
        TABLE.iter().find(|r| r.0 == self).unwrap_or(&TABLE[0])
    }

    /// The agent's protocol.
    pub fn protocol(self) -> &'static dyn Protocol {
        self.row().1
    }

    /// The agent's name as `loopguard hook AGENT` spells it.
    pub fn as_str(self) -> &'static str {
        self.protocol().name()
    }

    /// The answer that lets the call go on and says nothing (what the hook prints when
    /// there is nothing to say and whenever it fails open): `(stdout, exit status)`.
    /// Empty with exit status 0, except for Cline, which treats anything but a JSON answer
    /// as a failure and cancels the call (`{"cancel":false}`).
    pub fn allow(self) -> (String, i32) {
        let r = self.protocol().allow();
        (r.stdout, r.exit_code)
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An agent name loopguard does not know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown agent `{0}` (expected one of: {list})", list = names())]
pub struct UnknownAgent(pub String);

fn names() -> String {
    AGENTS
        .iter()
        .map(|a| a.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for Agent {
    type Err = UnknownAgent;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TABLE
            .iter()
            .find(|(_, p, aliases)| p.name() == s || aliases.contains(&s))
            .map(|r| r.0)
            .ok_or_else(|| UnknownAgent(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lists_every_agent_once_in_order() {
        assert_eq!(TABLE.len(), AGENTS.len());
        for (row, agent) in TABLE.iter().zip(AGENTS) {
            assert_eq!(row.0, *agent);
            assert_eq!(row.1.name().parse::<Agent>(), Ok(*agent));
            for alias in row.2 {
                assert_eq!(alias.parse::<Agent>(), Ok(*agent));
            }
        }
        assert!("nope".parse::<Agent>().is_err());
    }
}

#[cfg(test)]
mod probe_tests {
    use super::*;
    use crate::protocol::{Fields, Kind};

    /// `loopguard doctor` sends each agent's probe through its hook: it must be a pre-tool
    /// call of that agent in the session asked for, or the doctor would test nothing.
    #[test]
    fn every_probe_reads_as_a_pre_tool_call() {
        for &agent in AGENTS {
            let text = agent.protocol().probe("doctor-1", "/tmp").to_string();
            let v = Fields::parse(text.as_bytes()).unwrap();
            let loopguard_core::Value::Object(o) = &v else {
                panic!("{agent}: not an object")
            };
            let ev = agent
                .protocol()
                .read(&Fields(o))
                .unwrap_or_else(|e| panic!("{agent}: {e}"));
            assert_eq!(ev.kind, Kind::Pre, "{agent}");
            assert!(ev.tool.is_some(), "{agent}");
            assert_eq!(&*ev.session, "doctor-1", "{agent}");
        }
    }
}
