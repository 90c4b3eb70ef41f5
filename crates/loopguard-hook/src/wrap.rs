//! `loopguard run -- CMD…`: a headless agent run wrapped so that a script can tell from the
//! exit status that a loop stopped it, and read what happened in a JSON verdict.
//!
//! The wrapper and the hooks the agent runs are separate processes, so they meet in a file:
//! the wrapper names a fresh verdict log in the child's environment
//! ([`VERDICT_LOG_ENV`]), every `loopguard hook` the agent starts appends one JSON line per
//! critical decision it made (a refusal, an ask, the run's end, a call of an ended run
//! denied) to it ([`record`]), and when the agent exits the wrapper reads the lines back into
//! a [`Verdict`]. Nothing else changes for the hook: without the variable it writes nothing,
//! and a log it cannot write is a line in its own log, never a failure (fail open).

use std::io::Write;
use std::path::Path;
use std::process::Command;

use serde::{Deserialize, Serialize};

use loopguard_guard::{LogDecision, LogRow};

/// The environment variable naming the verdict log a `loopguard hook` appends to.
pub const VERDICT_LOG_ENV: &str = "LOOPGUARD_VERDICT_LOG";

/// The exit status of `loopguard run` when a loop ended the agent's run.
pub const EXIT_ENDED: u8 = 3;
/// The exit status of `loopguard run` when loopguard refused calls (or asked about one)
/// but did not end the run.
pub const EXIT_BLOCKED: u8 = 2;

/// One critical decision a hook made during the wrapped run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictDecision {
    /// The agent (`claude-code`, `codex`, …).
    pub agent: String,
    /// The session.
    pub session: String,
    /// The run.
    pub run: Option<String>,
    /// The tool.
    pub tool: Option<String>,
    /// `block`, `ask`, `abort` or `deny-aborted`.
    pub decision: String,
    /// The detector.
    pub detector: Option<String>,
    /// Its count.
    pub count: Option<u64>,
    /// The message the model was given.
    pub message: Option<String>,
}

/// What happened to a wrapped run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// `ended` (a loop ended the run), `blocked` (calls were refused or asked about, the run
    /// was not ended) or `clean` (no critical decision).
    pub outcome: String,
    /// The agent's own exit status (`null` when it was killed by a signal).
    #[serde(rename = "agentExitCode")]
    pub agent_exit_code: Option<i32>,
    /// The critical decisions, in order.
    pub decisions: Vec<VerdictDecision>,
    /// Lines of the verdict log that could not be read (each named by its number).
    #[serde(
        rename = "unreadableLines",
        skip_serializing_if = "Vec::is_empty",
        default
    )]
    pub unreadable_lines: Vec<String>,
}

impl Verdict {
    /// The decisions read back from a verdict log's text, with the agent's exit status.
    pub fn from_log(text: &str, agent_exit_code: Option<i32>) -> Verdict {
        let mut decisions = Vec::new();
        let mut unreadable_lines = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<VerdictDecision>(line) {
                Ok(d) => decisions.push(d),
                Err(e) => unreadable_lines.push(format!("line {}: {e}", i + 1)),
            }
        }
        let ended = decisions
            .iter()
            .any(|d| d.decision == "abort" || d.decision == "deny-aborted");
        let outcome = if ended {
            "ended"
        } else if decisions.is_empty() {
            "clean"
        } else {
            "blocked"
        };
        Verdict {
            outcome: outcome.into(),
            agent_exit_code,
            decisions,
            unreadable_lines,
        }
    }

    /// `loopguard run`'s exit status: [`EXIT_ENDED`] when a loop ended the run,
    /// [`EXIT_BLOCKED`] when calls were refused, else the agent's own (1 when it was killed
    /// by a signal).
    pub fn exit_code(&self) -> u8 {
        match self.outcome.as_str() {
            "ended" => EXIT_ENDED,
            "blocked" => EXIT_BLOCKED,
            _ => match self.agent_exit_code {
                Some(c) => u8::try_from(c).unwrap_or(1),
                None => 1,
            },
        }
    }
}

/// Appends the critical decisions of one hook invocation to the verdict log named by
/// [`VERDICT_LOG_ENV`], when it is set. Errors are returned for the caller to log; the
/// hook's answer is not affected.
pub fn record(agent: &str, session: &str, rows: &[LogRow]) -> std::io::Result<()> {
    let Some(path) = std::env::var_os(VERDICT_LOG_ENV) else {
        return Ok(());
    };
    let mut text = String::new();
    for row in rows.iter().filter(|r| r.decision.is_critical()) {
        let d = VerdictDecision {
            agent: agent.to_string(),
            session: session.to_string(),
            run: row.run.clone(),
            tool: row.tool.clone(),
            decision: row.decision.to_string(),
            detector: row.detector.clone(),
            count: row.count,
            message: row.message.clone(),
        };
        text.push_str(&serde_json::to_string(&d).map_err(std::io::Error::other)?);
        text.push('\n');
    }
    if text.is_empty() {
        return Ok(());
    }
    // One write of whole lines in append mode: hooks of parallel calls do not interleave.
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(text.as_bytes())
}

/// Why a wrapped run could not be started or read.
#[derive(Debug, thiserror::Error)]
pub enum WrapError {
    /// No command was given.
    #[error("no command to run (usage: loopguard run -- CMD [ARGS…])")]
    NoCommand,
    /// The command could not be started.
    #[error("could not start {0:?}: {1}")]
    Spawn(String, std::io::Error),
    /// The verdict log could not be created or read.
    #[error("verdict log {0}: {1}")]
    Log(String, std::io::Error),
}

/// Runs `command` with its arguments and a fresh verdict log (in the system's temporary
/// directory, removed afterwards) named in its environment, waits for it, and returns the
/// verdict. The command inherits standard input, output and error.
pub fn run_wrapped(command: &[String]) -> Result<Verdict, WrapError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let log = std::env::temp_dir().join(format!(
        "loopguard-run-{}-{nanos}.jsonl",
        std::process::id()
    ));
    let verdict = run_with_log(command, &log);
    let _ = std::fs::remove_file(&log);
    verdict
}

/// [`run_wrapped`] with the verdict log at `log` (created empty, left in place).
pub fn run_with_log(command: &[String], log: &Path) -> Result<Verdict, WrapError> {
    let (program, args) = command.split_first().ok_or(WrapError::NoCommand)?;
    let named = |e| WrapError::Log(log.display().to_string(), e);
    std::fs::write(log, b"").map_err(named)?;
    let status = Command::new(program)
        .args(args)
        .env(VERDICT_LOG_ENV, log)
        .status()
        .map_err(|e| WrapError::Spawn(program.clone(), e))?;
    let text = std::fs::read_to_string(log).map_err(named)?;
    Ok(Verdict::from_log(&text, status.code()))
}

/// `true` for the decision words a verdict lists (those of [`LogDecision::is_critical`]).
pub fn is_verdict_word(word: &str) -> bool {
    LogDecision::parse(word).is_critical()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_and_exit_codes() {
        let block = r#"{"agent":"claude-code","session":"s","run":"prompt-1","tool":"Bash","decision":"block","detector":"generic_repeat","count":20,"message":"CRITICAL: …"}"#;
        let abort = block.replace("\"block\"", "\"abort\"");
        let v = Verdict::from_log("", Some(0));
        assert_eq!((v.outcome.as_str(), v.exit_code()), ("clean", 0));
        let v = Verdict::from_log("", Some(7));
        assert_eq!(v.exit_code(), 7);
        let v = Verdict::from_log(&format!("{block}\n"), Some(0));
        assert_eq!((v.outcome.as_str(), v.exit_code()), ("blocked", 2));
        let v = Verdict::from_log(&format!("{block}\n{abort}\nnot json\n"), Some(0));
        assert_eq!((v.outcome.as_str(), v.exit_code()), ("ended", 3));
        assert_eq!(v.decisions.len(), 2);
        assert_eq!(v.unreadable_lines.len(), 1);
        assert!(v.unreadable_lines[0].starts_with("line 3: "));
        assert!(is_verdict_word("deny-aborted") && !is_verdict_word("warn"));
    }
}
