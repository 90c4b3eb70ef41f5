//! The escalation ladder (`loopguard.onCritical`) and the budgets (`loopguard.budgets`):
//! what [`SessionEntry::apply`](crate::SessionEntry::apply) does around the engine's decision
//! of a call, once for every front end.
//!
//! Both are guard-level checks, not detectors of the engine, because of where their state
//! lives: a budget counts every call of a run or a session (the engine keeps a bounded
//! window of 30), the tokens and cost of the events' `usage` extension (which the engine
//! never sees), and a sub-agent's calls at its parent's session (another session of the
//! store). The ladder needs to know, per run, whether the user was already asked. That state
//! is kept in the session's entry ([`State`]), saved with it, and only when one of the
//! settings is on: with neither set nothing here runs, the entry is written as before, and
//! the default profile's decisions are OpenClaw's, byte for byte.
//!
//! The ladder, for a call the engine blocks (a critical detection) that does not already end
//! the run:
//!
//! | `onCritical` | first critical of the run | a later critical of the run |
//! |--------------|---------------------------|-----------------------------|
//! | `block` (default) | refused (`block`) | refused (`block`) |
//! | `ask` | `ask`: the user decides, through the host's approval flow | the run is ended (`abort`) |
//! | `end-run` | the run is ended (`abort`) | (no call runs any more) |
//!
//! Once a run is ended every later call of it is refused, ending the run again, with the
//! detector that ended it. A budget reached refuses the call with detector `budget` (not a
//! loop: the ladder does not escalate it); 80% of a cap warns once per cap and run (once per
//! session for `callsPerSession`).

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use loopguard_core::{Budgets, Detector, Level, Name, OnCritical};

/// Runs whose state is kept per session; the oldest is forgotten beyond this (a live
/// session has one run at a time, replay of a long session many).
const MAX_RUNS: usize = 32;

/// A run's state: the ladder's rung and the budget counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunState {
    /// The run (`None`: events without a run).
    run: Option<String>,
    /// The user was asked once in this run.
    asked: bool,
    /// The run was ended by the ladder: the detector that ended it and its count.
    ended: Option<(String, u64)>,
    /// Calls that ran (were not refused).
    calls: u64,
    /// Calls that ran, per tool.
    tools: BTreeMap<String, u64>,
    /// Model tokens reported by the run's events.
    tokens: u64,
    /// Model cost reported by the run's events.
    cost: f64,
    /// The caps already warned about at 80% in this run.
    warned: Vec<String>,
}

/// One session's ladder and budget state, saved with its entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct State {
    runs: VecDeque<RunState>,
    /// Calls that ran in the session, its sub-agents' included.
    session_calls: u64,
    /// `callsPerSession` was warned about at 80%.
    session_warned: bool,
}

/// What the budgets say about a call about to be decided.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct BudgetFinding {
    pub(crate) level: Level,
    pub(crate) count: u64,
    pub(crate) message: Name,
    pub(crate) key: Name,
}

impl State {
    /// `true` when there is nothing to save.
    pub(crate) fn is_empty(&self) -> bool {
        self.runs.is_empty() && self.session_calls == 0 && !self.session_warned
    }

    fn find(&self, run: Option<&str>) -> Option<&RunState> {
        self.runs.iter().find(|r| r.run.as_deref() == run)
    }

    fn get(&mut self, run: Option<&str>) -> &mut RunState {
        let i = match self.runs.iter().position(|r| r.run.as_deref() == run) {
            Some(i) => i,
            None => {
                while self.runs.len() >= MAX_RUNS {
                    self.runs.pop_front();
                }
                self.runs.push_back(RunState {
                    run: run.map(str::to_string),
                    ..RunState::default()
                });
                self.runs.len() - 1
            }
        };
        &mut self.runs[i]
    }

    /// The detector and count that ended `run`, when the ladder ended it.
    pub(crate) fn ended(&self, run: Option<&str>) -> Option<(&str, u64)> {
        self.find(run)
            .and_then(|r| r.ended.as_ref())
            .map(|(d, n)| (d.as_str(), *n))
    }

    /// The ladder's answer to a critical detection of `detector` (count `count`) in `run`:
    /// `Rung::Ask` or `Rung::EndRun` (the state updated), or `Rung::Block` as the engine
    /// decided.
    pub(crate) fn escalate(
        &mut self,
        on_critical: OnCritical,
        run: Option<&str>,
        detector: Detector,
        count: u64,
    ) -> Rung {
        let rung = match on_critical {
            OnCritical::Block => return Rung::Block,
            OnCritical::EndRun => Rung::EndRun,
            OnCritical::Ask if self.find(run).is_some_and(|r| r.asked) => Rung::EndRun,
            OnCritical::Ask => Rung::Ask,
        };
        let state = self.get(run);
        match rung {
            Rung::Ask => state.asked = true,
            _ => state.ended = Some((detector.as_str().to_string(), count)),
        }
        rung
    }

    /// Calls that ran in the session, its sub-agents' included.
    pub(crate) fn session_calls(&self) -> u64 {
        self.session_calls
    }

    /// A sub-agent's session starts from its parent's count, so that `callsPerSession`
    /// covers the parent and all its sub-agents.
    pub(crate) fn inherit_session_calls(&mut self, parent: u64) {
        self.session_calls = self.session_calls.max(parent);
    }

    /// Adds a model usage report to `run`.
    pub(crate) fn add_usage(&mut self, run: Option<&str>, tokens: u64, cost: f64) {
        let state = self.get(run);
        state.tokens = state.tokens.saturating_add(tokens);
        if cost.is_finite() && cost > 0.0 {
            state.cost += cost;
        }
    }

    /// Counts a call of `tool` that runs in `run` (`session_only`: a sub-agent's call,
    /// counted at its parent for `callsPerSession` alone).
    pub(crate) fn count_call(&mut self, run: Option<&str>, tool: &str, session_only: bool) {
        self.session_calls = self.session_calls.saturating_add(1);
        if session_only {
            return;
        }
        let state = self.get(run);
        state.calls = state.calls.saturating_add(1);
        let n = state.tools.entry(tool.to_string()).or_default();
        *n = n.saturating_add(1);
    }

    /// The budgets' verdict on a call of `tool` in `run` before it runs: a refusal when a
    /// cap is reached, a warning (once per cap) when the call reaches 80% of one, else
    /// `None`. A warning is noted as given only when `note_warning` (the call's engine
    /// verdict leaves room for it).
    pub(crate) fn check(
        &mut self,
        budgets: &Budgets,
        run: Option<&str>,
        tool: &str,
    ) -> Option<BudgetFinding> {
        if budgets.is_empty() {
            return None;
        }
        let empty = RunState::default();
        let state = self.find(run).unwrap_or(&empty);
        let tool_cap = budgets.tools.get(tool).map(|cap| (*cap, tool));
        // Each cap: its setting, what the call makes of it, and the cap.
        let mut caps: Vec<(String, f64, f64, Unit<'_>)> = Vec::new();
        if let Some(cap) = budgets.calls_per_run {
            caps.push((
                "callsPerRun".into(),
                (state.calls + 1) as f64,
                cap as f64,
                Unit::RunCalls,
            ));
        }
        if let Some((cap, t)) = tool_cap {
            caps.push((
                format!("tools.{t}"),
                (state.tools.get(t).copied().unwrap_or(0) + 1) as f64,
                cap as f64,
                Unit::ToolCalls(t),
            ));
        }
        if let Some(cap) = budgets.calls_per_session {
            caps.push((
                "callsPerSession".into(),
                (self.session_calls + 1) as f64,
                cap as f64,
                Unit::SessionCalls,
            ));
        }
        // Spend is known after the model turn, before its calls: a call is refused once
        // the spend has reached the cap.
        if let Some(cap) = budgets.tokens_per_run {
            caps.push((
                "tokensPerRun".into(),
                state.tokens as f64,
                cap as f64,
                Unit::Tokens,
            ));
        }
        if let Some(cap) = budgets.cost_per_run {
            caps.push(("costPerRun".into(), state.cost, cap, Unit::Cost));
        }
        // A refusal first: the call would go past a cap (or spend has reached one).
        for (setting, used, cap, unit) in &caps {
            let over = match unit {
                Unit::Tokens | Unit::Cost => *used >= *cap,
                _ => *used > *cap,
            };
            if over {
                return Some(BudgetFinding {
                    level: Level::Critical,
                    count: *used as u64,
                    message: Name::from(unit.critical(setting, *cap)),
                    key: Name::from(format!("budget:{setting}")),
                });
            }
        }
        for (setting, used, cap, unit) in caps {
            if used < cap * 0.8 {
                continue;
            }
            let warned = match unit {
                Unit::SessionCalls => self.session_warned,
                _ => state.warned.contains(&setting),
            };
            if warned {
                continue;
            }
            return Some(BudgetFinding {
                level: Level::Warning,
                count: used as u64,
                message: Name::from(unit.warning(&setting, used, cap)),
                key: Name::from(format!("budget:{setting}")),
            });
        }
        None
    }

    /// Notes the warning `key` (`budget:SETTING`) as given in `run`.
    pub(crate) fn note_warning(&mut self, run: Option<&str>, key: &str) {
        let setting = key.strip_prefix("budget:").unwrap_or(key).to_string();
        if setting == "callsPerSession" {
            self.session_warned = true;
        } else {
            let state = self.get(run);
            if !state.warned.contains(&setting) {
                state.warned.push(setting);
            }
        }
    }
}

/// What a cap counts, for its messages.
#[derive(Clone, Copy, Debug)]
enum Unit<'t> {
    RunCalls,
    ToolCalls(&'t str),
    SessionCalls,
    Tokens,
    Cost,
}

impl Unit<'_> {
    fn warning(self, setting: &str, used: f64, cap: f64) -> String {
        let what = match self {
            Unit::RunCalls => format!("This run has made {used} of its {cap} allowed tool calls"),
            Unit::ToolCalls(t) => {
                format!("This run has made {used} of its {cap} allowed {t} calls")
            }
            Unit::SessionCalls => {
                format!("This session has made {used} of its {cap} allowed tool calls")
            }
            Unit::Tokens => format!("This run has used {used} of its {cap} model tokens"),
            Unit::Cost => format!("This run has spent {used} of its cost budget of {cap}"),
        };
        format!(
            "WARNING: {what} (loopguard.budgets.{setting}). Finish the task soon or report it as failed; calls past the budget are refused."
        )
    }

    fn critical(self, setting: &str, cap: f64) -> String {
        let what = match self {
            Unit::RunCalls => format!("This run has used its budget of {cap} tool calls"),
            Unit::ToolCalls(t) => format!("This run has used its budget of {cap} {t} calls"),
            Unit::SessionCalls => format!("This session has used its budget of {cap} tool calls"),
            Unit::Tokens => format!("This run has used its budget of {cap} model tokens"),
            Unit::Cost => format!("This run has used its cost budget of {cap}"),
        };
        format!(
            "CRITICAL: {what} (loopguard.budgets.{setting}); the call was not run. Stop calling tools and report the task as failed or ask the user for a larger budget."
        )
    }
}

/// The ladder's rung for a critical detection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rung {
    /// Refuse the call, as the engine decided.
    Block,
    /// Ask the user.
    Ask,
    /// End the run.
    EndRun,
}

/// The message of a call refused because the ladder ended its run.
pub(crate) fn ended_message(detector: &str) -> Name {
    Name::from(format!(
        "CRITICAL: This run was ended after a critical loop ({detector}); no more tool calls run in it. Stop calling tools and report the task as failed."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ask_then_end_run_per_run() {
        let mut s = State::default();
        let d = Detector::GenericRepeat;
        assert_eq!(s.escalate(OnCritical::Ask, Some("r1"), d, 20), Rung::Ask);
        assert_eq!(s.ended(Some("r1")), None);
        assert_eq!(s.escalate(OnCritical::Ask, Some("r1"), d, 21), Rung::EndRun);
        assert_eq!(s.ended(Some("r1")), Some(("generic_repeat", 21)));
        // Another run starts at the bottom of the ladder.
        assert_eq!(s.escalate(OnCritical::Ask, Some("r2"), d, 20), Rung::Ask);
        assert_eq!(
            s.escalate(OnCritical::Block, Some("r3"), d, 20),
            Rung::Block
        );
        assert_eq!(s.ended(Some("r3")), None);
        assert_eq!(s.escalate(OnCritical::EndRun, None, d, 20), Rung::EndRun);
        assert_eq!(s.ended(None), Some(("generic_repeat", 20)));
    }

    #[test]
    fn budgets_warn_at_80_percent_once_and_refuse_past_the_cap() {
        let budgets = Budgets {
            calls_per_run: Some(5),
            ..Budgets::default()
        };
        let mut s = State::default();
        let mut seen = Vec::new();
        for _ in 0..7 {
            let f = s.check(&budgets, Some("r"), "read");
            match &f {
                Some(f) if f.level == Level::Warning => {
                    s.note_warning(Some("r"), &f.key.to_string_lossy());
                    s.count_call(Some("r"), "read", false);
                    seen.push("warn");
                }
                Some(_) => seen.push("refuse"),
                None => {
                    s.count_call(Some("r"), "read", false);
                    seen.push("ok");
                }
            }
        }
        // Call 4 is 80% of 5; call 6 would be past it.
        assert_eq!(seen, ["ok", "ok", "ok", "warn", "ok", "refuse", "refuse"]);
        let f = s.check(&budgets, Some("r"), "read").expect("refused");
        assert_eq!(
            f.message.to_string_lossy(),
            "CRITICAL: This run has used its budget of 5 tool calls (loopguard.budgets.callsPerRun); the call was not run. Stop calling tools and report the task as failed or ask the user for a larger budget."
        );
        // Another run has its own count.
        assert_eq!(s.check(&budgets, Some("r2"), "read"), None);
    }

    #[test]
    fn tool_caps_session_caps_and_spend() {
        let budgets = Budgets {
            calls_per_session: Some(3),
            tokens_per_run: Some(1000),
            tools: [("web_fetch".to_string(), 1)].into_iter().collect(),
            ..Budgets::default()
        };
        let mut s = State::default();
        // A cap of 1: the first call reaches 100% of it, so it is warned about and runs.
        let f = s.check(&budgets, Some("r"), "web_fetch").expect("warned");
        assert_eq!((f.level, f.count), (Level::Warning, 1));
        s.count_call(Some("r"), "web_fetch", false);
        let f = s.check(&budgets, Some("r"), "web_fetch").expect("tool cap");
        assert_eq!(f.level, Level::Critical);
        assert!(f.message.to_string_lossy().contains("tools.web_fetch"));
        // Sub-agent calls count at the session only.
        s.count_call(Some("r/sub"), "read", true);
        let f = s
            .check(&budgets, Some("r"), "read")
            .expect("session at 100%");
        assert_eq!(f.level, Level::Warning, "{f:?}");
        s.count_call(Some("r"), "read", false);
        let f = s.check(&budgets, Some("r"), "read").expect("session cap");
        assert!(f.message.to_string_lossy().contains("callsPerSession"));
        // Tokens: refused once the run's spend reached the cap.
        let mut s = State::default();
        s.add_usage(Some("r"), 999, 0.0);
        assert_eq!(
            s.check(&budgets, Some("r"), "read").map(|f| f.level),
            Some(Level::Warning)
        );
        s.add_usage(Some("r"), 1, 0.0);
        assert_eq!(
            s.check(&budgets, Some("r"), "read").map(|f| f.level),
            Some(Level::Critical)
        );
    }
}
