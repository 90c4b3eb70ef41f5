//! Where the coding agents keep their own session logs on this machine, for `loopguard
//! replay --agent NAME` (docs/replay.md, "The agents' own logs").
//!
//! | agent | folder | files |
//! |-------|--------|-------|
//! | `claude-code` | `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects` | `*.jsonl` |
//! | `codex` | `$CODEX_HOME/sessions`, else `~/.codex/sessions` | `rollout-*.jsonl` |
//! | `gemini` | `~/.gemini/tmp` | `session-*.jsonl` and `session-*.json` in `chats` folders |
//! | `qwen` | `~/.qwen/projects` | `*.jsonl` in `chats` folders |
//! | `copilot` | `~/.copilot/session-state` | `events.jsonl` |
//! | `factory` | `~/.factory/sessions` | `*.jsonl` |
//! | `opencode` | `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode` | `opencode.db`, and the sessions of the older JSON storage (`storage/session/<project>/*.json`) |
//! | `cline` | VS Code's global storage: `~/.config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks` | `api_conversation_history.json` (its reader reads the `ui_messages.json` beside it) |
//! | `roo-code` | `~/.config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks` | `api_conversation_history.json` |
//!
//! The files are found by walking the folder (symbolic links are not followed); which
//! format each holds is still decided by its content.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The agents whose logs [`find`] knows, as `loopguard hook AGENT` spells them.
pub const AGENTS: &[&str] = &[
    "claude-code",
    "codex",
    "gemini",
    "qwen",
    "copilot",
    "factory",
    "opencode",
    "cline",
    "roo-code",
];

/// Where an agent keeps its logs, and which files in it are session logs.
struct Place {
    /// The folder, from the environment (`home` is HOME).
    dir: PathBuf,
    /// `true` for a session log's file name, given its folder.
    wanted: fn(&str, &Path) -> bool,
}

/// `true` for a folder named `chats` (Gemini CLI's and Qwen Code's sessions).
fn in_chats(dir: &Path) -> bool {
    dir.file_name().is_some_and(|n| n == "chats")
}

fn place(agent: &str, home: &Path, env: &dyn Fn(&str) -> Option<String>) -> Option<Place> {
    let from = |var: &str, default: &str, sub: &str| {
        env(var)
            .filter(|v| !v.is_empty())
            .map(|v| PathBuf::from(v).join(sub))
            .unwrap_or_else(|| home.join(default).join(sub))
    };
    let jsonl = |n: &str, _: &Path| n.ends_with(".jsonl");
    Some(match agent {
        "claude-code" => Place {
            dir: from("CLAUDE_CONFIG_DIR", ".claude", "projects"),
            wanted: jsonl,
        },
        "codex" => Place {
            dir: from("CODEX_HOME", ".codex", "sessions"),
            wanted: |n, _| n.starts_with("rollout-") && n.ends_with(".jsonl"),
        },
        "gemini" => Place {
            dir: home.join(".gemini/tmp"),
            wanted: |n, dir| {
                in_chats(dir)
                    && n.starts_with("session-")
                    && (n.ends_with(".jsonl") || n.ends_with(".json"))
            },
        },
        "qwen" => Place {
            dir: home.join(".qwen/projects"),
            wanted: |n, dir| in_chats(dir) && n.ends_with(".jsonl"),
        },
        "copilot" => Place {
            dir: home.join(".copilot/session-state"),
            wanted: |n, _| n == "events.jsonl",
        },
        "factory" => Place {
            dir: home.join(".factory/sessions"),
            wanted: jsonl,
        },
        "opencode" => Place {
            dir: from("XDG_DATA_HOME", ".local/share", "opencode"),
            // The database, or a session of the JSON storage older versions kept.
            wanted: |n, dir| {
                n == "opencode.db"
                    || (n.ends_with(".json")
                        && dir
                            .parent()
                            .and_then(Path::file_name)
                            .is_some_and(|d| d == "session")
                        && dir
                            .parent()
                            .and_then(Path::parent)
                            .is_some_and(|s| s.file_name().is_some_and(|n| n == "storage")))
            },
        },
        "cline" => Place {
            dir: home.join(".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks"),
            wanted: |n, _| n == "api_conversation_history.json",
        },
        "roo-code" => Place {
            dir: home.join(".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks"),
            wanted: |n, _| n == "api_conversation_history.json",
        },
        _ => return None,
    })
}

/// What [`find`] found for one agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The agent.
    pub agent: &'static str,
    /// The folder searched.
    pub dir: PathBuf,
    /// Its session logs, oldest first (by modification time, then name).
    pub files: Vec<PathBuf>,
}

/// The session logs of `agent` (one of [`AGENTS`], or `all`) under `home`, with the
/// agents' own variables read through `env` (`CODEX_HOME`, `CLAUDE_CONFIG_DIR`), keeping
/// files modified at or after `since` when it is given. `None` for an unknown agent.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use loopguard_replay::agent_logs::find;
/// let home = std::env::temp_dir().join(format!("lg-doc-agents-{}", std::process::id()));
/// let dir = home.join(".copilot/session-state/s1");
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join("events.jsonl"), "{}\n")?;
/// let found = find("copilot", &home, &|_| None, None).expect("a known agent");
/// assert_eq!(found[0].files, vec![dir.join("events.jsonl")]);
/// assert!(find("nope", &home, &|_| None, None).is_none());
/// # std::fs::remove_dir_all(&home)?;
/// # Ok(()) }
/// ```
pub fn find(
    agent: &str,
    home: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    since: Option<SystemTime>,
) -> Option<Vec<Found>> {
    let agents: Vec<&'static str> = match agent {
        "all" => AGENTS.to_vec(),
        a => vec![*AGENTS.iter().find(|k| **k == a)?],
    };
    Some(
        agents
            .into_iter()
            .filter_map(|a| {
                let place = place(a, home, env)?;
                let mut files = Vec::new();
                walk(&place.dir, place.wanted, since, &mut files);
                files.sort();
                files.sort_by_key(|(_, t)| *t);
                Some(Found {
                    agent: a,
                    dir: place.dir,
                    files: files.into_iter().map(|(p, _)| p).collect(),
                })
            })
            .collect(),
    )
}

fn walk(
    dir: &Path,
    wanted: fn(&str, &Path) -> bool,
    since: Option<SystemTime>,
    out: &mut Vec<(PathBuf, SystemTime)>,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let Ok(kind) = e.file_type() else {
            continue;
        };
        let path = e.path();
        if kind.is_dir() {
            walk(&path, wanted, since, out);
        } else if kind.is_file() {
            let name = e.file_name();
            if !wanted(&name.to_string_lossy(), dir) {
                continue;
            }
            let modified = e
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            if since.is_none_or(|s| modified >= s) {
                out.push((path, modified));
            }
        }
    }
}

/// The loops of one agent, tool and detector, across the sessions replayed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentLoops {
    /// The agent whose logs they are.
    pub agent: String,
    /// The tool that looped (as the engine names it: shell tools are `Bash`).
    pub tool: String,
    /// The detector that found them first.
    pub detector: String,
    /// How many loops.
    pub loops: u64,
    /// Sessions they were in.
    pub sessions: u64,
    /// Calls made inside them after their first warning.
    pub calls: u64,
    /// Tokens spent on those calls, where the logs record them.
    pub tokens: u64,
}

/// The loops of `summary` grouped by agent (`agent_of` a session's source, `None` for
/// sessions of no agent's folder), tool and first detector, most expensive first (calls
/// after the first warning, then tokens).
///
/// ```
/// use loopguard_replay::agent_logs::by_agent;
/// use loopguard_replay::Summary;
/// assert!(by_agent(&Summary::default(), |_| Some("codex")).is_empty());
/// ```
pub fn by_agent<'s>(
    summary: &'s crate::Summary,
    agent_of: impl Fn(&str) -> Option<&'s str>,
) -> Vec<AgentLoops> {
    let mut rows: Vec<AgentLoops> = Vec::new();
    let mut seen: Vec<(usize, String)> = Vec::new();
    for (session, l) in summary.loops() {
        let Some(agent) = session.source.as_deref().and_then(&agent_of) else {
            continue;
        };
        let detector = l.detectors.first().map_or("-", |d| d.as_str());
        let i = match rows
            .iter()
            .position(|r| r.agent == agent && r.tool == l.tool && r.detector == detector)
        {
            Some(i) => i,
            None => {
                rows.push(AgentLoops {
                    agent: agent.to_string(),
                    tool: l.tool.clone(),
                    detector: detector.to_string(),
                    loops: 0,
                    sessions: 0,
                    calls: 0,
                    tokens: 0,
                });
                rows.len() - 1
            }
        };
        let r = &mut rows[i];
        r.loops += 1;
        r.calls += l.calls_after_warning;
        r.tokens += l.tokens_after_warning.unwrap_or(0);
        if !seen.iter().any(|(j, s)| *j == i && *s == session.name) {
            seen.push((i, session.name.clone()));
            r.sessions += 1;
        }
    }
    rows.sort_by_key(|r| std::cmp::Reverse((r.calls, r.tokens)));
    rows
}

/// [`by_agent`]'s rows as a text table (empty when there are none).
pub fn render_by_agent(rows: &[AgentLoops]) -> String {
    use std::fmt::Write as _;
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from("loops by agent, tool and detector, most expensive first:\n");
    let _ = writeln!(
        out,
        "{:<12} {:<24} {:<26} {:>5} {:>8} {:>14} {:>10}",
        "agent", "tool", "detector", "loops", "sessions", "calls in loops", "tokens"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:<12} {:<24} {:<26} {:>5} {:>8} {:>14} {:>10}",
            r.agent,
            r.tool,
            r.detector,
            r.loops,
            r.sessions,
            r.calls,
            if r.tokens > 0 {
                r.tokens.to_string()
            } else {
                "-".to_string()
            }
        );
    }
    out
}
