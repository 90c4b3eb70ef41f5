//! Detection quality over a corpus (`loopguard replay --summary [--labels FILE]`).
//!
//! [`Quality`] watches every call decision of a replay and keeps, per input: the number
//! of calls, each detector's first warning and first block (1-based among the input's
//! call decisions), and the tokens of every call when the transcript records them. Beside
//! loopguard's detectors it replays the published loop rules of other agents on the same
//! calls and outcomes ([`PeerRule`]: Roo Code, Cline, Gemini CLI, OpenHands, opencode,
//! goose), each with its shipped defaults.
//!
//! With [`Labels`] (one `file,verdict,loop-start` line per run) it also measures what
//! matters: stuck runs stopped and how many calls after the loop's start (the median and
//! the latest), and healthy or self-recovering runs stopped (false stops); and it splits
//! what the stops cut off ([`StopEffect`]) into the calls and tokens **saved** on stuck
//! runs (from the loop's start on) and those **lost** on runs that were working (healthy
//! or self-recovering runs, and a stuck run stopped before its loop began). Labels that
//! name the run's model family and agent (optional 4th and 5th fields) add the same
//! measures per agent and model family.
//!
//! ```
//! use loopguard_replay::quality::Labels;
//! let labels = Labels::parse("file,verdict,loop-start\nruns/a.json,stuck,12\nruns/b.json,healthy,\n")?;
//! assert_eq!(labels.find("/data/runs/a.json").and_then(|l| l.loop_start), Some(12));
//! assert!(labels.find("c.json").is_none());
//! // Optional 4th and 5th fields name the run's model family and its agent.
//! let labels = Labels::parse("a.json,stuck,3,gpt-5-nano,mini-swe-agent\n")?;
//! assert_eq!(labels.labels()[0].family.as_deref(), Some("gpt-5-nano"));
//! assert_eq!(labels.labels()[0].agent.as_deref(), Some("mini-swe-agent"));
//! assert!(Labels::parse("a.json,stuck,3,gpt-5,agent,extra\n").is_err());
//! # Ok::<(), loopguard_replay::quality::LabelError>(())
//! ```

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use loopguard_core::Detector;
use loopguard_events::{Action, Decision, EventKind};

pub use crate::peers::{PeerRule, PeerRuns, PEER_RULES};
use crate::plan::Source;
use crate::summary::EventMeta;

/// Where a rule stops a run (call number), if it does.
type StopAt = dyn Fn(&RunQuality) -> Option<u64>;

/// A run's verdict in a labels file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No loop.
    Healthy,
    /// A short repeat, then the agent moved on.
    SelfRecovering,
    /// A loop that never recovered.
    Stuck,
}

impl Verdict {
    /// `healthy`, `self-recovering` or `stuck`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Healthy => "healthy",
            Verdict::SelfRecovering => "self-recovering",
            Verdict::Stuck => "stuck",
        }
    }
}

/// One labelled run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    /// The file, as written in the labels file (a path suffix).
    pub file: String,
    /// The verdict.
    pub verdict: Verdict,
    /// For a stuck run, the loop's first call (1-based among call decisions).
    pub loop_start: Option<u64>,
    /// The model family, when the labels name it (an optional 4th field): the labelled
    /// measures are then also given per agent and family.
    pub family: Option<String>,
    /// The agent that made the run (`mini-swe-agent`, `swe-agent`, `openhands`, …), when
    /// the labels name it (an optional 5th field).
    pub agent: Option<String>,
}

impl Label {
    /// Whether this label's file is `display` or a path suffix of it (whole components).
    fn names(&self, display: &str) -> bool {
        let display = display.replace('\\', "/");
        display == self.file
            || display
                .strip_suffix(self.file.as_str())
                .is_some_and(|rest| rest.ends_with('/'))
    }

    /// The group the per-agent table puts this run in: `agent · family`, or whichever of
    /// the two the label names; `None` when it names neither.
    pub fn group(&self) -> Option<String> {
        match (self.agent.as_deref(), self.family.as_deref()) {
            (Some(a), Some(f)) => Some(format!("{a} · {f}")),
            (Some(one), None) | (None, Some(one)) => Some(one.to_string()),
            (None, None) => None,
        }
    }
}

/// A labels file that could not be read: its line and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelError {
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for LabelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for LabelError {}

/// The labels of a corpus: `file,verdict,loop-start[,family[,agent]]` lines (`#`
/// comments, blank lines and a `file,...` header allowed). `verdict` is `healthy`,
/// `self-recovering` or `stuck`; `loop-start` is required for stuck runs and empty
/// otherwise; `family` (the model family) and `agent` may be empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Labels {
    labels: Vec<Label>,
}

impl Labels {
    /// Parses a labels file's text.
    pub fn parse(text: &str) -> Result<Labels, LabelError> {
        let mut labels = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            let err = |message: String| LabelError {
                line: i + 1,
                message,
            };
            if line.is_empty() || line.starts_with('#') || line.starts_with("file,") {
                continue;
            }
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            if !(3..=5).contains(&fields.len()) {
                return Err(err(format!(
                    "expected 3 to 5 comma-separated fields (file,verdict,loop-start[,family[,agent]]), found {}",
                    fields.len()
                )));
            }
            let verdict = match fields[1] {
                "healthy" => Verdict::Healthy,
                "self-recovering" => Verdict::SelfRecovering,
                "stuck" => Verdict::Stuck,
                other => {
                    return Err(err(format!(
                        "verdict {other:?}: expected healthy, self-recovering or stuck"
                    )))
                }
            };
            let loop_start = match (fields[2], verdict) {
                ("", Verdict::Stuck) => {
                    return Err(err("a stuck run needs its loop-start call".to_string()))
                }
                ("", _) => None,
                (n, _) => match n.parse::<u64>() {
                    Ok(n) if n >= 1 => Some(n),
                    _ => {
                        return Err(err(format!(
                            "loop-start {n:?}: expected a call number from 1"
                        )))
                    }
                },
            };
            if fields[0].is_empty() {
                return Err(err("empty file name".to_string()));
            }
            labels.push(Label {
                file: fields[0].to_string(),
                verdict,
                loop_start,
                family: fields
                    .get(3)
                    .filter(|f| !f.is_empty())
                    .map(|f| f.to_string()),
                agent: fields
                    .get(4)
                    .filter(|a| !a.is_empty())
                    .map(|a| a.to_string()),
            });
        }
        Ok(Labels { labels })
    }

    /// Adds another file's labels after these (several corpora measured in one replay).
    pub fn extend(&mut self, other: Labels) {
        self.labels.extend(other.labels);
    }

    /// The label whose file is a path suffix of `display` (whole path components).
    pub fn find(&self, display: &str) -> Option<&Label> {
        self.labels.iter().find(|l| l.names(display))
    }

    /// Every label.
    pub fn labels(&self) -> &[Label] {
        &self.labels
    }
}

/// What one input did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunQuality {
    /// The input's name.
    pub display: String,
    /// Call decisions.
    pub calls: u64,
    /// Tokens of each call (0 when unknown), in order.
    pub tokens: Vec<u64>,
    /// Each detector's first warning (call number).
    pub first_warn: BTreeMap<Detector, u64>,
    /// Each detector's first block (call number).
    pub first_block: BTreeMap<Detector, u64>,
    /// The first warning of any detector, and which.
    pub warned: Option<(u64, Detector)>,
    /// The first block of any detector, and which.
    pub stopped: Option<(u64, Detector)>,
    /// Where each peer rule ([`PEER_RULES`]) would have warned and stopped the run.
    pub peers: PeerRuns,
}

impl RunQuality {
    /// Calls and tokens a stop at call `at` cuts off: that call and every later one.
    pub fn saved(&self, at: u64) -> (u64, u64) {
        self.between(at, u64::MAX)
    }

    /// Calls and tokens from call `from` up to (not including) call `to`, 1-based.
    fn between(&self, from: u64, to: u64) -> (u64, u64) {
        let to = to.min(self.calls.saturating_add(1));
        if from >= to {
            return (0, 0);
        }
        let skip = usize::try_from(from.saturating_sub(1)).unwrap_or(usize::MAX);
        let take = usize::try_from(to - from.max(1)).unwrap_or(usize::MAX);
        let tokens = self.tokens.iter().skip(skip).take(take).sum();
        (to - from.max(1), tokens)
    }

    /// What a stop at call `at` does to a labelled run: the calls and tokens it **saves**
    /// (a stuck run's calls from its loop's start on, the stop's call included) and the
    /// calls and tokens it **loses** (all of a healthy or self-recovering run's calls from
    /// the stop on; a stuck run's calls between a stop before its loop and the loop's
    /// start, work it was still doing).
    pub fn stop_effect(&self, at: u64, label: &Label) -> StopEffect {
        if label.verdict != Verdict::Stuck {
            let (lost_calls, lost_tokens) = self.saved(at);
            return StopEffect {
                lost_calls,
                lost_tokens,
                ..StopEffect::default()
            };
        }
        let start = label.loop_start.unwrap_or(1);
        let (saved_calls, saved_tokens) = self.saved(at.max(start));
        let (lost_calls, lost_tokens) = self.between(at, start);
        StopEffect {
            saved_calls,
            saved_tokens,
            lost_calls,
            lost_tokens,
        }
    }
}

/// Calls and tokens a stop saves on stuck runs and loses on runs that were working
/// ([`RunQuality::stop_effect`]); sums over runs with `+`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StopEffect {
    /// Calls of stuck runs' loops that the stop cut off.
    pub saved_calls: u64,
    /// Their tokens.
    pub saved_tokens: u64,
    /// Calls of working runs (or of a stuck run before its loop) that the stop cut off.
    pub lost_calls: u64,
    /// Their tokens.
    pub lost_tokens: u64,
}

impl std::ops::Add for StopEffect {
    type Output = StopEffect;

    fn add(self, o: StopEffect) -> StopEffect {
        StopEffect {
            saved_calls: self.saved_calls + o.saved_calls,
            saved_tokens: self.saved_tokens + o.saved_tokens,
            lost_calls: self.lost_calls + o.lost_calls,
            lost_tokens: self.lost_tokens + o.lost_tokens,
        }
    }
}

/// Collects the decisions of a replay into per-input quality figures.
#[derive(Clone, Debug, Default)]
pub struct Quality {
    runs: Vec<RunQuality>,
}

impl Quality {
    /// Counts one decision: `call` decisions, and `outcome` decisions for the peers' rules
    /// that read results.
    pub fn observe(&mut self, source: &Source, d: &Decision<'_>, meta: &EventMeta<'_>) {
        let key = || d.tool.as_ref().map(|t| t.to_string()).zip(d.args);
        if d.kind == EventKind::Outcome {
            if let Some(r) = self.runs.last_mut().filter(|r| r.display == source.display) {
                r.peers.outcome(key(), d.result);
            }
            return;
        }
        if d.kind != EventKind::Call {
            return;
        }
        if self.runs.last().is_none_or(|r| r.display != source.display) {
            self.runs.push(RunQuality {
                display: source.display.clone(),
                ..Default::default()
            });
        }
        let Some(r) = self.runs.last_mut() else {
            return;
        };
        r.calls += 1;
        let n = r.calls;
        r.tokens.push(meta.tokens.unwrap_or(0));
        let detector = d.finding.as_ref().map(|f| f.detector);
        match (d.action, detector) {
            (Action::Warn, Some(det)) => {
                r.first_warn.entry(det).or_insert(n);
                r.warned.get_or_insert((n, det));
            }
            (Action::Block | Action::Abort, Some(det)) => {
                r.first_block.entry(det).or_insert(n);
                r.stopped.get_or_insert((n, det));
            }
            _ => {}
        }
        r.peers
            .call(n, d.run.as_ref().map(|s| s.to_string()), d.line, key());
    }

    /// Every input seen, in replay order.
    pub fn runs(&self) -> &[RunQuality] {
        &self.runs
    }

    /// The table for `profile`: per detector, then (with labels) the labelled measures,
    /// each beside the peers' rules.
    pub fn render(&self, profile: &str, labels: Option<&Labels>) -> String {
        let mut out = String::new();
        let runs = &self.runs;
        let _ = writeln!(
            out,
            "detection quality, profile {profile}: {} runs, {} calls",
            runs.len(),
            runs.iter().map(|r| r.calls).sum::<u64>()
        );
        let _ = writeln!(out);
        // Without labels a stop's reach is all that is known: the calls after it, stuck or
        // not. With labels it splits into what it saves on stuck runs and what it loses on
        // runs that were working (unlabelled runs in neither).
        if labels.is_some() {
            let _ = writeln!(
                out,
                "| rule | runs warned | runs stopped | first stops (call) | calls saved on stuck runs | tokens saved on stuck runs | calls lost on working runs | tokens lost on working runs |"
            );
            let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
        } else {
            let _ = writeln!(
                out,
                "| rule | runs warned | runs stopped | first stops (call) | calls after the stop | tokens after the stop |"
            );
            let _ = writeln!(out, "|---|---|---|---|---|---|");
        }
        let mut detectors: Vec<Detector> = runs
            .iter()
            .flat_map(|r| r.first_warn.keys().chain(r.first_block.keys()).copied())
            .collect();
        detectors.sort();
        detectors.dedup();
        let row = |out: &mut String, name: &str, warn: Vec<u64>, stop: Vec<(usize, u64)>| {
            let reach = match labels {
                Some(labels) => {
                    let e = stop.iter().fold(StopEffect::default(), |sum, (i, at)| {
                        let r = &runs[*i];
                        sum + labels
                            .find(&r.display)
                            .map_or_else(StopEffect::default, |l| r.stop_effect(*at, l))
                    });
                    format!(
                        "{} | {} | {} | {}",
                        e.saved_calls, e.saved_tokens, e.lost_calls, e.lost_tokens
                    )
                }
                None => {
                    let (calls, tokens) = stop.iter().fold((0, 0), |(c, t), (i, at)| {
                        let (dc, dt) = runs[*i].saved(*at);
                        (c + dc, t + dt)
                    });
                    format!("{calls} | {tokens}")
                }
            };
            let mut at: Vec<String> = stop.iter().map(|(_, a)| a.to_string()).collect();
            if at.len() > 12 {
                at.truncate(12);
                at.push("…".to_string());
            }
            let _ = writeln!(
                out,
                "| {name} | {} | {} | {} | {reach} |",
                warn.len(),
                stop.len(),
                if at.is_empty() {
                    "-".to_string()
                } else {
                    at.join(", ")
                }
            );
        };
        for det in &detectors {
            let warn = runs
                .iter()
                .filter_map(|r| r.first_warn.get(det).copied())
                .collect();
            let stop = runs
                .iter()
                .enumerate()
                .filter_map(|(i, r)| r.first_block.get(det).map(|a| (i, *a)))
                .collect();
            row(&mut out, &format!("`{det}`"), warn, stop);
        }
        let warn = runs.iter().filter_map(|r| r.warned.map(|w| w.0)).collect();
        let stop = runs
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.stopped.map(|s| (i, s.0)))
            .collect();
        row(&mut out, &format!("**{profile}** (any rule)"), warn, stop);
        for (k, rule) in PEER_RULES.iter().enumerate() {
            let warn = runs.iter().filter_map(|r| r.peers.warn[k]).collect();
            let stop = runs
                .iter()
                .enumerate()
                .filter_map(|(i, r)| r.peers.stop[k].map(|s| (i, s)))
                .collect();
            row(&mut out, &peer_label(*rule), warn, stop);
        }
        if let Some(labels) = labels {
            out.push('\n');
            out.push_str(&self.render_labelled(profile, labels));
        }
        out
    }

    fn render_labelled(&self, profile: &str, labels: &Labels) -> String {
        let mut out = String::new();
        let labelled: Vec<(&RunQuality, &Label)> = self
            .runs
            .iter()
            .filter_map(|r| labels.find(&r.display).map(|l| (r, l)))
            .collect();
        let unlabelled = self.runs.len() - labelled.len();
        // A label that names no input is a run missing from the corpus (a file not copied, a
        // path mistyped): said, so that a measure over fewer runs than labelled is not
        // mistaken for the whole set.
        let unmatched = labels
            .labels()
            .iter()
            .filter(|l| !self.runs.iter().any(|r| l.names(&r.display)))
            .count();
        let stuck: Vec<_> = labelled
            .iter()
            .filter(|(_, l)| l.verdict == Verdict::Stuck)
            .collect();
        let fine = labelled.len() - stuck.len();
        let _ = writeln!(
            out,
            "labelled: {} runs ({} stuck, {} healthy or self-recovering){}{}",
            labelled.len(),
            stuck.len(),
            fine,
            if unlabelled > 0 {
                format!(", {unlabelled} without a label (left out below)")
            } else {
                String::new()
            },
            if unmatched > 0 {
                let s = if unmatched == 1 { "" } else { "s" };
                format!(", {unmatched} label{s} naming no input")
            } else {
                String::new()
            }
        );
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "| stuck run | calls | loop start | {profile}: first stop | after start | {} |",
            PEER_RULES
                .iter()
                .map(|p| format!("{}: stop", p.name()))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let _ = writeln!(
            out,
            "|---|---|---|---|---|{}",
            "---|".repeat(PEER_RULES.len())
        );
        let cell = |stop: Option<u64>, start: u64| match stop {
            Some(s) => format!("{s} ({:+})", s as i64 - start as i64),
            None => "none".to_string(),
        };
        for (r, l) in &stuck {
            let start = l.loop_start.unwrap_or(1);
            let name = r.display.rsplit(['/', '\\']).next().unwrap_or(&r.display);
            let (first, after) = match r.stopped {
                Some((s, d)) => (
                    format!("{s} (`{d}`)"),
                    format!("{:+}", s as i64 - start as i64),
                ),
                None => ("none".to_string(), "-".to_string()),
            };
            let peers: Vec<String> = (0..PEER_RULES.len())
                .map(|k| cell(r.peers.stop[k], start))
                .collect();
            let _ = writeln!(
                out,
                "| `{name}` | {} | {start} | {first} | {after} | {} |",
                r.calls,
                peers.join(" | ")
            );
        }
        let _ = writeln!(out);
        // A stop before the loop's start stops a run that was still working: it is
        // counted apart, not as a catch.
        let caught = |stop: &dyn Fn(&RunQuality) -> Option<u64>| {
            let (mut n, mut early) = (0, 0);
            let mut after = Vec::new();
            for (r, l) in &stuck {
                if let Some(s) = stop(r) {
                    let start = l.loop_start.unwrap_or(1);
                    if s < start {
                        early += 1;
                    } else {
                        n += 1;
                        after.push(s - start);
                    }
                }
            }
            after.sort_unstable();
            (n, early, after)
        };
        let false_stops = |stop: &dyn Fn(&RunQuality) -> Option<u64>| -> Vec<String> {
            labelled
                .iter()
                .filter(|(r, l)| l.verdict != Verdict::Stuck && stop(r).is_some())
                .map(|(r, _)| {
                    r.display
                        .rsplit(['/', '\\'])
                        .next()
                        .unwrap_or(&r.display)
                        .to_string()
                })
                .collect()
        };
        let _ = writeln!(
            out,
            "| rule | stuck runs stopped in their loop | median stop after loop start | latest stop after loop start | stuck runs stopped before their loop | healthy or self-recovering runs stopped |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|");
        let mut rules: Vec<(String, Box<StopAt>)> = vec![(
            format!("**{profile}**"),
            Box::new(|r: &RunQuality| r.stopped.map(|s| s.0)),
        )];
        for (k, rule) in PEER_RULES.iter().enumerate() {
            rules.push((
                peer_label(*rule),
                Box::new(move |r: &RunQuality| r.peers.stop[k]),
            ));
        }
        for (name, stop) in &rules {
            let (n, early, after) = caught(stop.as_ref());
            let fs = false_stops(stop.as_ref());
            let _ = writeln!(
                out,
                "| {name} | {n} of {} | {} | {} | {early} | {} of {fine}{} |",
                stuck.len(),
                median(&after).map_or("-".to_string(), |m| format!("+{m}")),
                after.last().map_or("-".to_string(), |l| format!("+{l}")),
                fs.len(),
                if fs.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", fs.join(", "))
                }
            );
        }
        // Per agent and model family, when the labels name them: each rule's stuck runs
        // stopped in their loop, the median calls after the loop's start, and healthy or
        // self-recovering runs stopped. Agents differ in what one call is (a bash command,
        // an editor action, a tool call), so a figure pooled over agents can hide one
        // agent's false stops behind another's catches.
        let mut groups: Vec<String> = labelled.iter().filter_map(|(_, l)| l.group()).collect();
        groups.sort_unstable();
        groups.dedup();
        if !groups.is_empty() {
            let _ = writeln!(out);
            let _ = writeln!(
                out,
                "per agent and model family: stuck runs stopped in their loop (median calls after the loop's start) / healthy or self-recovering runs stopped"
            );
            let _ = writeln!(out);
            let in_group = |g: &str| -> Vec<&(&RunQuality, &Label)> {
                labelled
                    .iter()
                    .filter(|(_, l)| l.group().as_deref() == Some(g))
                    .collect()
            };
            let head: Vec<String> = groups
                .iter()
                .map(|g| {
                    let runs = in_group(g);
                    let stuck = runs
                        .iter()
                        .filter(|(_, l)| l.verdict == Verdict::Stuck)
                        .count();
                    let other = runs.len() - stuck;
                    format!("{g} ({stuck} stuck, {other} other)")
                })
                .collect();
            let _ = writeln!(out, "| rule | {} |", head.join(" | "));
            let _ = writeln!(out, "|---|{}", "---|".repeat(groups.len()));
            for (name, stop) in &rules {
                let cells: Vec<String> = groups
                    .iter()
                    .map(|g| {
                        let mut after = Vec::new();
                        let mut false_stops = 0;
                        for (r, l) in in_group(g) {
                            let Some(s) = stop(r) else { continue };
                            let start = l.loop_start.unwrap_or(1);
                            if l.verdict != Verdict::Stuck {
                                false_stops += 1;
                            } else if s >= start {
                                after.push(s - start);
                            }
                        }
                        after.sort_unstable();
                        match median(&after) {
                            Some(m) => format!("{} (+{m}) / {false_stops}", after.len()),
                            None => format!("0 / {false_stops}"),
                        }
                    })
                    .collect();
                let _ = writeln!(out, "| {name} | {} |", cells.join(" | "));
            }
        }
        out
    }
}

/// A peer rule's row name: `peer: Roo Code (4th identical call in a row)`.
fn peer_label(rule: PeerRule) -> String {
    format!("peer: {} ({})", rule.name(), rule.rule())
}

/// The median of sorted values, `.5` when it falls between two.
fn median(sorted: &[u64]) -> Option<String> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let (a, b) = (sorted[(n - 1) / 2], sorted[n / 2]);
    Some(if (a + b) % 2 == 0 {
        ((a + b) / 2).to_string()
    } else {
        format!("{}.5", (a + b) / 2)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(calls: u64) -> RunQuality {
        RunQuality {
            display: "r.json".into(),
            calls,
            // Call k costs 10k tokens: each sum names the calls it holds.
            tokens: (1..=calls).map(|k| 10 * k).collect(),
            ..Default::default()
        }
    }

    fn label(verdict: Verdict, loop_start: Option<u64>) -> Label {
        Label {
            file: "r.json".into(),
            verdict,
            loop_start,
            family: None,
            agent: None,
        }
    }

    #[test]
    fn a_stop_saves_a_stuck_runs_loop_and_loses_a_working_runs_rest() {
        let r = run(10);
        // The stop's call and every later one.
        assert_eq!(r.saved(8), (3, 80 + 90 + 100));
        // Stuck from call 5, stopped at 7: calls 7..=10 saved, nothing lost.
        let stuck = label(Verdict::Stuck, Some(5));
        assert_eq!(
            r.stop_effect(7, &stuck),
            StopEffect {
                saved_calls: 4,
                saved_tokens: 70 + 80 + 90 + 100,
                lost_calls: 0,
                lost_tokens: 0,
            }
        );
        // Stopped at 3, before its loop: calls 3 and 4 were work, lost; the loop saved.
        assert_eq!(
            r.stop_effect(3, &stuck),
            StopEffect {
                saved_calls: 6,
                saved_tokens: 50 + 60 + 70 + 80 + 90 + 100,
                lost_calls: 2,
                lost_tokens: 30 + 40,
            }
        );
        // A healthy or self-recovering run: everything from the stop on is lost.
        for verdict in [Verdict::Healthy, Verdict::SelfRecovering] {
            assert_eq!(
                r.stop_effect(9, &label(verdict, None)),
                StopEffect {
                    lost_calls: 2,
                    lost_tokens: 90 + 100,
                    ..StopEffect::default()
                }
            );
        }
        // A stop past the last call cuts nothing.
        assert_eq!(r.stop_effect(11, &stuck), StopEffect::default());
    }
}
