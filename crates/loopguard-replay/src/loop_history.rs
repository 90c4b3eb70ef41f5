//! Loop history exports (`loopguard serve`'s `GET /v1/loops/export`): JSON Lines of
//! [`LoopRecord`]s, one loop a line, each with `"format": "loopguard.loop/1"`.
//! `loopguard replay --summary` reads them beside transcripts: they are loops already found,
//! so they are summed, not replayed.

use std::io::BufRead;
use std::path::Path;

use loopguard_guard::{LoopEnd, LoopRecord, LOOP_FORMAT};

use crate::agent_logs::AgentLoops;

/// Whether the file is a loop history export: its first non-blank line is a JSON object
/// whose `format` is [`LOOP_FORMAT`]. Unreadable files and directories are not.
pub fn is_export(path: &Path) -> bool {
    // Only a regular file is looked at before it is read: opening a FIFO or a pipe here
    // would take the bytes its reader is waiting for (and block on the next open).
    if !path.is_file() {
        return false;
    }
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let reader = std::io::BufReader::new(file);
    for line in reader.lines().take(64) {
        let Ok(line) = line else { return false };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        return serde_json::from_str::<serde_json::Value>(line)
            .ok()
            .and_then(|v| {
                v.get("format")
                    .and_then(|f| f.as_str())
                    .map(|f| f == LOOP_FORMAT)
            })
            .unwrap_or(false);
    }
    false
}

/// Reads an export; an unreadable line is an error naming the file and line (nothing is
/// skipped without a word).
pub fn read(path: &Path) -> Result<Vec<LoopRecord>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record = LoopRecord::from_json(line)
            .map_err(|e| format!("{}: line {}: not a loop record: {e}", path.display(), i + 1))?;
        out.push(record);
    }
    Ok(out)
}

/// The loops of exports as a text report: totals (loops, how they ended, calls and tokens
/// from the first warning on), then the loops by agent, tool and detector, most expensive
/// first (the table `replay --agent` prints).
///
/// ```
/// use loopguard_guard::{LoopAction, LoopRecord, LoopStep};
/// let mut step = LoopStep::new("s", "read", "generic_repeat", "k", LoopAction::Warn, 1);
/// step.agent = Some("bot".into());
/// let mut r = LoopRecord::apply(None, &step).record;
/// step.action = LoopAction::Block;
/// r.fold(&step);
/// let text = loopguard_replay::loop_history::render(&[r]);
/// assert!(text.contains("1 loop from loop history exports: 1 blocked"), "{text}");
/// assert!(text.contains("bot"), "{text}");
/// ```
pub fn render(records: &[LoopRecord]) -> String {
    use std::fmt::Write as _;
    let count = |end: LoopEnd| records.iter().filter(|r| r.end == end).count();
    let calls: u64 = records.iter().map(|r| r.calls).sum();
    let tokens: u64 = records.iter().filter_map(|r| r.tokens).sum();
    let sessions: std::collections::BTreeSet<(&Option<String>, &str)> = records
        .iter()
        .map(|r| (&r.tenant, r.session.as_str()))
        .collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} loop{} from loop history exports: {} blocked, {} would-block, {} aborted, {} warned only; {} session{}",
        records.len(),
        if records.len() == 1 { "" } else { "s" },
        count(LoopEnd::Blocked),
        count(LoopEnd::WouldBlock),
        count(LoopEnd::Aborted),
        count(LoopEnd::Warned),
        sessions.len(),
        if sessions.len() == 1 { "" } else { "s" },
    );
    let _ = writeln!(
        out,
        "calls in loops from their first warning on: {calls}; tokens: {}",
        if records.iter().any(|r| r.tokens.is_some()) {
            tokens.to_string()
        } else {
            "not recorded".to_string()
        }
    );
    let mut rows: Vec<AgentLoops> = Vec::new();
    let mut seen: std::collections::BTreeSet<(usize, &Option<String>, &str)> = Default::default();
    for r in records {
        let agent = r.agent.clone().unwrap_or_else(|| "-".to_string());
        let i = match rows
            .iter()
            .position(|x| x.agent == agent && x.tool == r.tool && x.detector == r.detector)
        {
            Some(i) => i,
            None => {
                rows.push(AgentLoops {
                    agent,
                    tool: r.tool.clone(),
                    detector: r.detector.clone(),
                    loops: 0,
                    sessions: 0,
                    calls: 0,
                    tokens: 0,
                });
                rows.len() - 1
            }
        };
        let row = &mut rows[i];
        row.loops += 1;
        row.calls += r.calls;
        row.tokens += r.tokens.unwrap_or(0);
        if seen.insert((i, &r.tenant, r.session.as_str())) {
            row.sessions += 1;
        }
    }
    rows.sort_by_key(|r| std::cmp::Reverse((r.calls, r.tokens)));
    if !rows.is_empty() {
        out.push('\n');
        out.push_str(&crate::agent_logs::render_by_agent(&rows));
    }
    out
}
