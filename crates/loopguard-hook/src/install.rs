//! `loopguard hook install AGENT` and `loopguard hook uninstall AGENT`: loopguard's hook in
//! an agent's settings, and what the command says about it.
//!
//! The edit itself is [`loopguard_agents::install`]'s (one installer for every agent's
//! settings file). This module is the command around it: which file (`--settings`,
//! `--project`, the user's), the hook command written into it (the executable, the
//! options passed on, a Claude Code project's paths as `"${CLAUDE_PROJECT_DIR}"/…`), a
//! `--config` the hook could not load refused before anything is written, and what the hook
//! will run with: the config it will load ([`crate::config`]) and where that is weaker than
//! it looks ([`loopguard_guard::advice`]). That last part is the hook's knowledge, which
//! `loopguard-agents` does not have (it sits below this crate), so the report is built here.
//!
//! Both return a [`Report`]: the lines to print, in order, each for standard output or
//! standard error, and whether the command failed.
//!
//! ```
//! use loopguard_agents::Agent;
//! use loopguard_hook::install::{install, uninstall, Install, Line, Target};
//! use loopguard_hook::paths::Env;
//! let dir = tempfile::tempdir()?;
//! let settings = dir.path().join("hooks.json");
//! let target = Target { settings: Some(settings.clone()), ..Target::default() };
//! let req = Install { target: target.clone(), exe: Some("loopguard".into()), ..Install::default() };
//! let report = install(Agent::Cursor, &req, &Env::default());
//! assert!(report.result.is_ok());
//! assert_eq!(report.lines[1], Line::Out("hook command: loopguard hook cursor".into()));
//! let report = uninstall(Agent::Cursor, &target, &Env::default());
//! assert!(!settings.exists()); // loopguard had created it
//! # Ok::<(), std::io::Error>(())
//! ```

use std::path::{Path, PathBuf};

use loopguard_agents::install::{self as agent_install, shell_quote, Change, InstallError};
use loopguard_agents::Agent;
use loopguard_guard::advice::policy_notes;

use crate::config::{ConfigError, ConfigSource, HookConfig};
use crate::paths::Env;

/// One line the command prints (without its newline).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    /// For standard output: what was done.
    Out(String),
    /// For standard error: a warning.
    Err(String),
}

/// What `install` / `uninstall` print, in order, and whether they failed (the error comes
/// after the lines: a warning about the command being built is printed even when the edit
/// then fails).
#[derive(Debug)]
pub struct Report {
    /// The lines, in order.
    pub lines: Vec<Line>,
    /// `Err` when nothing was installed or removed.
    pub result: Result<(), SetupError>,
}

impl Report {
    fn failed(lines: Vec<Line>, error: SetupError) -> Report {
        Report {
            lines,
            result: Err(error),
        }
    }
}

/// Which settings file `install` / `uninstall` edit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Target {
    /// The project's settings (`--project`), shared with everyone who clones it.
    pub project: bool,
    /// The project directory (`--project-dir`; default: the current directory).
    pub project_dir: Option<PathBuf>,
    /// This file instead (`--settings`; for Cline, the hooks directory).
    pub settings: Option<PathBuf>,
}

/// What `loopguard hook install` is asked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Install {
    /// Where to write.
    pub target: Target,
    /// The executable the hook runs (`--exe`); default: this process's executable for the
    /// user's settings, `loopguard` through `PATH` for a project's.
    pub exe: Option<PathBuf>,
    /// Passed on to the hook: `--state`.
    pub state: Option<PathBuf>,
    /// Passed on to the hook: `--config` (refused here when the hook could not load it).
    pub config: Option<PathBuf>,
    /// Passed on to the hook: `--agent`.
    pub agent: Option<String>,
    /// Passed on to the hook: `--mode observe`.
    pub observe: bool,
}

/// Why nothing was installed or removed.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// `--project` without `--project-dir`, and no current directory.
    #[error("cannot determine the current directory")]
    CurrentDir(#[source] std::io::Error),
    /// The agent has no default settings file here.
    #[error("use --settings FILE")]
    NoSettings(#[source] InstallError),
    /// `--config` names a file the hook could not load.
    #[error("--config: {0}; nothing was installed")]
    Config(ConfigError),
    /// No `--exe`, and this process's executable is unknown.
    #[error("cannot find the loopguard executable; use --exe PATH")]
    Exe(#[source] std::io::Error),
    /// The settings file could not be edited.
    #[error(transparent)]
    Edit(#[from] InstallError),
}

/// How `install` / `uninstall` name the agent.
fn display_name(agent: Agent) -> &'static str {
    match agent {
        Agent::ClaudeCode => "Claude Code",
        other => other.as_str(),
    }
}

/// The settings file for `agent`, and the project directory with `--project`.
fn settings_path(
    agent: Agent,
    target: &Target,
    env: &Env,
) -> Result<(PathBuf, Option<PathBuf>), SetupError> {
    let project = match (target.project, &target.project_dir) {
        (false, _) => None,
        (true, Some(d)) => Some(d.clone()),
        (true, None) => Some(std::env::current_dir().map_err(SetupError::CurrentDir)?),
    };
    if let Some(p) = &target.settings {
        return Ok((p.clone(), project));
    }
    let path = agent_install::settings_path(agent, env.home.as_deref(), project.as_deref())
        .map_err(SetupError::NoSettings)?;
    Ok((path, project))
}

/// A path given to `install`, as the hook command names it. For Claude Code's project
/// settings a path inside the project becomes `"${CLAUDE_PROJECT_DIR}"/…`, so the command
/// works wherever the project is cloned; a path outside it is named as it is, with a
/// warning in `lines`.
fn path_word(p: &Path, project: Option<&Path>, flag: &str, lines: &mut Vec<Line>) -> String {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let Some(project) = project else {
        return shell_quote(&abs.to_string_lossy());
    };
    let root = std::path::absolute(project).unwrap_or_else(|_| project.to_path_buf());
    match abs.strip_prefix(&root) {
        Ok(rel) if !rel.as_os_str().is_empty() => {
            format!(
                "\"${{CLAUDE_PROJECT_DIR}}\"/{}",
                shell_quote(&rel.to_string_lossy())
            )
        }
        _ => {
            lines.push(Line::Err(format!(
                "warning: {flag} {} is outside the project: the shared .claude/settings.json will name a path of this machine",
                abs.display()
            )));
            shell_quote(&abs.to_string_lossy())
        }
    }
}

/// Whether a shell would find the command `name` through `env.path` (an executable file
/// of that name in one of its directories); `true` when `env.path` is not known.
fn on_path(name: &str, env: &Env) -> bool {
    let Some(path) = &env.path else {
        return true;
    };
    std::env::split_paths(path).any(|dir| {
        let file = dir.join(name);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(&file)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        }
        #[cfg(not(unix))]
        {
            file.is_file() || file.with_extension("exe").is_file()
        }
    })
}

/// `loopguard hook install AGENT`: writes loopguard's hook into `agent`'s settings and says
/// what was done, the hook command, and the config the hook will load (with a warning for
/// each place it is weaker than it looks, or, when it cannot be loaded, that every hook call
/// will fail open). Paths are resolved from `env` (the user's settings under its home, the
/// user config).
pub fn install(agent: Agent, req: &Install, env: &Env) -> Report {
    let (path, project) = match settings_path(agent, &req.target, env) {
        Ok(p) => p,
        Err(e) => return Report::failed(Vec::new(), e),
    };
    // A config the hook could not load would make every call fail open: refuse it now.
    let config = match &req.config {
        Some(c) => match HookConfig::load(c, ConfigSource::Flag(c.clone())) {
            Ok(c) => Some(c),
            Err(e) => return Report::failed(Vec::new(), SetupError::Config(e)),
        },
        None => None,
    };
    let mut lines = Vec::new();
    let exe = match (&req.exe, &project) {
        (Some(e), _) => shell_quote(&e.to_string_lossy()),
        // A project's settings are shared: `loopguard` through PATH works everywhere, when it
        // is there; else the hook names this executable, so that it runs at least here.
        (None, Some(_)) if on_path("loopguard", env) => "loopguard".to_string(),
        (None, _) => match std::env::current_exe() {
            Ok(e) => {
                if project.is_some() {
                    lines.push(Line::Err(format!(
                        "warning: `loopguard` is not on PATH: the hook command names this executable ({}), a path of this machine; put loopguard on PATH (or pass --exe) for a command that runs in every clone",
                        e.display()
                    )));
                }
                shell_quote(&e.to_string_lossy())
            }
            Err(e) => return Report::failed(lines, SetupError::Exe(e)),
        },
    };
    // Only Claude Code sets `CLAUDE_PROJECT_DIR` for its hook commands.
    let in_project = project.as_deref().filter(|_| agent == Agent::ClaudeCode);
    let mut words = vec![exe, "hook".to_string(), agent.as_str().to_string()];
    for (flag, p) in [("--state", &req.state), ("--config", &req.config)] {
        if let Some(p) = p {
            words.push(flag.into());
            words.push(path_word(p, in_project, flag, &mut lines));
        }
    }
    if let Some(a) = &req.agent {
        words.push("--agent".into());
        words.push(shell_quote(a));
    }
    if req.observe {
        words.push("--mode".into());
        words.push("observe".into());
    }
    let command = words.join(" ");
    let change = match agent_install::install(agent, &path, &command) {
        Ok(c) => c,
        Err(e) => return Report::failed(lines, e.into()),
    };
    let what = format!("loopguard's {} hooks installed", display_name(agent));
    lines.push(Line::Out(change.describe(&path, &what)));
    lines.push(Line::Out(format!("hook command: {command}")));
    if agent == Agent::Codex {
        lines.push(Line::Out("note: Codex runs a new hook only once you trust it: start `codex` and review it in /hooks. `codex exec` skips untrusted hooks without a word (`--dangerously-bypass-hook-trust` runs them for one invocation).".into()));
    }
    // Say where protection is weaker than it looks: the config the hook will load.
    let config = match config {
        Some(c) => Ok(c),
        None => HookConfig::discover(None, project.as_deref(), env),
    };
    match config {
        Ok(c) => {
            lines.push(Line::Out(format!("config: {}", c.source)));
            for note in policy_notes(&c.policy_for(req.agent.as_deref())) {
                lines.push(Line::Err(format!("warning: {note}")));
            }
        }
        Err(e) => lines.push(Line::Err(format!(
            "warning: {e}: until it is fixed, every hook call fails open (nothing is checked)"
        ))),
    }
    Report {
        lines,
        result: Ok(()),
    }
}

/// `loopguard hook uninstall AGENT`: takes loopguard's hook out of `agent`'s settings and
/// says what was done.
pub fn uninstall(agent: Agent, target: &Target, env: &Env) -> Report {
    let result = settings_path(agent, target, env).and_then(|(path, _)| {
        let change = agent_install::uninstall(agent, &path)?;
        let what = match change {
            Change::Unchanged => "has no loopguard hooks".to_string(),
            _ => format!("loopguard's {} hooks removed", display_name(agent)),
        };
        Ok(change.describe(&path, &what))
    });
    match result {
        Ok(line) => Report {
            lines: vec![Line::Out(line)],
            result: Ok(()),
        },
        Err(e) => Report::failed(Vec::new(), e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(report: &Report) -> Vec<&str> {
        report
            .lines
            .iter()
            .filter_map(|l| match l {
                Line::Out(s) => Some(s.as_str()),
                Line::Err(_) => None,
            })
            .collect()
    }

    fn err(report: &Report) -> Vec<&str> {
        report
            .lines
            .iter()
            .filter_map(|l| match l {
                Line::Err(s) => Some(s.as_str()),
                Line::Out(_) => None,
            })
            .collect()
    }

    #[test]
    fn install_twice_then_uninstall_twice() {
        let dir = tempfile::tempdir().unwrap();
        let settings = dir.path().join("hooks.json");
        let target = Target {
            settings: Some(settings.clone()),
            ..Target::default()
        };
        let env = Env::default();
        let req = Install {
            target: target.clone(),
            // Entries are recognised by the executable's name, `loopguard`.
            exe: Some("/opt/my dir/loopguard".into()),
            state: Some(dir.path().join("s.db")),
            agent: Some("main".into()),
            observe: true,
            ..Install::default()
        };
        let first = install(Agent::Codex, &req, &env);
        assert!(first.result.is_ok());
        let s = settings.display();
        assert_eq!(
            out(&first),
            [
                format!("loopguard's codex hooks installed in {s} (new file)"),
                format!(
                    "hook command: '/opt/my dir/loopguard' hook codex --state {} --agent main --mode observe",
                    shell_quote(&dir.path().join("s.db").to_string_lossy())
                ),
                "note: Codex runs a new hook only once you trust it: start `codex` and review it in /hooks. `codex exec` skips untrusted hooks without a word (`--dangerously-bypass-hook-trust` runs them for one invocation).".into(),
                "config: built-in (no config file: enabled with defaults)".into(),
            ]
        );
        assert!(err(&first).is_empty());
        let again = install(Agent::Codex, &req, &env);
        assert_eq!(
            out(&again)[0],
            format!("{s} already loopguard's codex hooks installed; nothing changed")
        );
        let removed = uninstall(Agent::Codex, &target, &env);
        assert_eq!(
            out(&removed),
            [format!(
                "loopguard's codex hooks removed: loopguard had created {s}, so it was deleted"
            )]
        );
        let nothing = uninstall(Agent::Codex, &target, &env);
        assert_eq!(
            out(&nothing),
            [format!(
                "{s} already has no loopguard hooks; nothing changed"
            )]
        );
    }

    #[test]
    fn a_config_is_refused_or_warned_about() {
        let dir = tempfile::tempdir().unwrap();
        let settings = dir.path().join("settings.json");
        let target = Target {
            settings: Some(settings.clone()),
            ..Target::default()
        };
        let bad = dir.path().join("bad.json5");
        std::fs::write(&bad, "{ tools: { loopDetection: { enabeld: true } } }").unwrap();
        let req = Install {
            target: target.clone(),
            exe: Some("lg".into()),
            config: Some(bad.clone()),
            ..Install::default()
        };
        let refused = install(Agent::Gemini, &req, &Env::default());
        let e = refused.result.unwrap_err();
        assert!(matches!(e, SetupError::Config(_)));
        let e = e.to_string();
        assert!(
            e.starts_with(&format!("--config: bad config {}", bad.display()))
                && e.ends_with("; nothing was installed"),
            "{e}"
        );
        assert!(!settings.exists());
        // A config that turns detection off is installed, with a warning.
        let weak = dir.path().join("weak.json5");
        std::fs::write(&weak, "{ tools: { loopDetection: { enabled: false } } }").unwrap();
        let req = Install {
            config: Some(weak.clone()),
            ..req
        };
        let report = install(Agent::Gemini, &req, &Env::default());
        assert!(report.result.is_ok());
        assert_eq!(
            out(&report)[2],
            format!("config: {} (--config)", weak.display())
        );
        assert_eq!(err(&report).len(), 1);
        assert!(err(&report)[0].starts_with("warning: enabled is not true"));
        // A broken user config is named, and installing goes on.
        let env = Env {
            config_home: Some(dir.path().join("config")),
            ..Env::default()
        };
        let user = env.user_config().unwrap();
        std::fs::create_dir_all(user.parent().unwrap()).unwrap();
        std::fs::write(&user, "{ nope").unwrap();
        let req = Install {
            config: None,
            ..req
        };
        let report = install(Agent::Gemini, &req, &env);
        assert!(report.result.is_ok());
        let warning = err(&report)[0];
        assert!(
            warning.starts_with(&format!("warning: bad config {}", user.display()))
                && warning.ends_with(
                    ": until it is fixed, every hook call fails open (nothing is checked)"
                ),
            "{warning}"
        );
    }

    #[test]
    fn claude_code_project_paths_follow_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("proj");
        std::fs::create_dir_all(&project).unwrap();
        let target = Target {
            project: true,
            project_dir: Some(project.clone()),
            settings: None,
        };
        let outside = dir.path().join("elsewhere.db");
        let req = Install {
            target: target.clone(),
            state: Some(outside.clone()),
            config: None,
            ..Install::default()
        };
        let report = install(Agent::ClaudeCode, &req, &Env::default());
        assert!(report.result.is_ok());
        // The warning about the command comes first, then what was done.
        assert_eq!(
            report.lines[0],
            Line::Err(format!(
                "warning: --state {} is outside the project: the shared .claude/settings.json will name a path of this machine",
                outside.display()
            ))
        );
        assert_eq!(
            out(&report)[1],
            format!(
                "hook command: loopguard hook claude-code --state {}",
                shell_quote(&outside.to_string_lossy())
            )
        );
        let inside = Install {
            state: Some(project.join("state db")),
            ..req
        };
        let report = install(Agent::ClaudeCode, &inside, &Env::default());
        assert_eq!(
            out(&report)[1],
            "hook command: loopguard hook claude-code --state \"${CLAUDE_PROJECT_DIR}\"/'state db'"
        );
        assert!(err(&report).is_empty());
        assert!(project.join(".claude/settings.json").is_file());
        // A settings file the installer cannot read: the command's warning, then the error.
        std::fs::write(project.join(".claude/settings.json"), "{ [").unwrap();
        let outside_again = Install {
            state: Some(outside),
            ..inside
        };
        let report = install(Agent::ClaudeCode, &outside_again, &Env::default());
        assert_eq!(report.lines.len(), 1);
        assert!(matches!(report.result, Err(SetupError::Edit(_))));
    }

    #[test]
    fn an_agent_without_a_default_file_needs_settings() {
        let report = uninstall(
            Agent::Kiro,
            &Target::default(),
            &Env {
                home: Some("/home/u".into()),
                ..Env::default()
            },
        );
        let e = report.result.unwrap_err();
        assert_eq!(e.to_string(), "use --settings FILE");
        let source = std::error::Error::source(&e).unwrap().to_string();
        assert!(source.starts_with("Kiro CLI keeps hooks"), "{source}");
        assert!(report.lines.is_empty());
    }
}
