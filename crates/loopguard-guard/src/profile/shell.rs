//! Shell results as every coding agent's profile presents them: the lines that change on
//! every run and say nothing about progress, and the exit code read from the text. One
//! definition for the agents' hooks (`loopguard-agents`) and for their traces
//! (`loopguard-adapters`), so a loop found live is found in replay too.
//!
//! ```
//! use loopguard_guard::profile::shell::{clean_shell_text, SHELL};
//! let (text, code) = clean_shell_text("Wall time: 0.2 seconds\nExit code: 2\nno such file");
//! assert_eq!((text.as_str(), code), ("Exit code: 2\nno such file", Some(2)));
//! assert_eq!(SHELL, "Bash");
//! ```

/// Result lines that change on every run and say nothing about progress: dropped before a
/// shell result is hashed (Gemini CLI's process group and background pids, Codex's chunk
/// id, wall time and token count).
pub const VOLATILE_LINES: &[&str] = &[
    "Process Group PGID:",
    "Background PIDs:",
    "Chunk ID:",
    "Wall time:",
    "Original token count:",
    "Process running with session ID",
];

/// The name the Claude Code profile uses for shell tools.
pub const SHELL: &str = "Bash";
/// The name the Claude Code profile uses for polls of a running command.
pub const POLL: &str = "BashOutput";

/// Drops [`VOLATILE_LINES`] and reads an exit code from the text (`Exit Code: N`,
/// `Exit code: N`, `Process exited with code N`, Copilot CLI's `<shellId: N completed
/// with exit code C>`, which is dropped too: its id changes on every call).
///
/// ```
/// use loopguard_guard::profile::shell::clean_shell_text;
/// let (text, code) = clean_shell_text("Chunk ID: 7f3a\nWall time: 0.0123 seconds\nProcess exited with code 1\nOutput:\nFAIL");
/// assert_eq!(code, Some(1));
/// assert_eq!(text, "Process exited with code 1\nOutput:\nFAIL");
/// let copilot = clean_shell_text("FAIL\n<shellId: 22 completed with exit code 1>");
/// assert_eq!(copilot, ("FAIL".to_string(), Some(1)));
/// ```
pub fn clean_shell_text(text: &str) -> (String, Option<i64>) {
    let mut code = None;
    let mut kept = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if VOLATILE_LINES.iter().any(|p| t.starts_with(p)) {
            continue;
        }
        // Copilot CLI ends a shell result with `<shellId: N completed with exit code C>`:
        // the id changes on every call, the exit code is kept.
        if let Some(rest) = t.strip_prefix("<shellId:") {
            if let Some((_, c)) = rest.split_once("exit code") {
                if let Ok(c) = c.trim().trim_end_matches('>').trim().parse::<i64>() {
                    code.get_or_insert(c);
                }
            }
            continue;
        }
        for prefix in [
            "Exit Code:",
            "Exit code:",
            "Process exited with code",
            "exit code",
        ] {
            if let Some(rest) = t.strip_prefix(prefix) {
                if let Ok(c) = rest.trim().trim_end_matches('.').parse::<i64>() {
                    code.get_or_insert(c);
                }
            }
        }
        kept.push(line);
    }
    (kept.join("\n"), code)
}
