//! What loopguard does beyond the detectors' own decision: the escalation ladder
//! (`loopguard.onCritical`) and the budgets (`loopguard.budgets`), both in the `loopguard`
//! block and merged per agent like its other settings:
//!
//! ```json5
//! {
//!   loopguard: {
//!     onCritical: "ask",                  // "block" (default) | "ask" | "end-run"
//!     budgets: { callsPerRun: 200, callsPerSession: 1000, tokensPerRun: 2000000,
//!                costPerRun: 5, tools: { web_fetch: 30 } },
//!   },
//! }
//! ```
//!
//! The engine reads neither: they are settings of the guard layer (`loopguard-guard`),
//! which applies them after the engine's decision, so the default profile's decisions stay
//! OpenClaw's byte for byte when they are unset. They live here because the config file
//! is read here, once, with its diagnostics.

use std::collections::BTreeMap;

/// What a critical detection does (`loopguard.onCritical`).
///
/// ```
/// use loopguard_core::OnCritical;
/// assert_eq!(OnCritical::parse("end-run"), Some(OnCritical::EndRun));
/// assert_eq!(OnCritical::Ask.as_str(), "ask");
/// assert_eq!(OnCritical::default(), OnCritical::Block);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OnCritical {
    /// The call is refused (OpenClaw's behaviour; the default).
    #[default]
    Block,
    /// The first critical detection of a run asks the user whether the call may run,
    /// through the host's approval flow (refused where the host cannot ask); a critical
    /// after that ends the run.
    Ask,
    /// The first critical detection ends the run.
    EndRun,
}

impl OnCritical {
    /// Every value, in the order the docs list them.
    pub const ALL: [OnCritical; 3] = [OnCritical::Block, OnCritical::Ask, OnCritical::EndRun];

    /// `"block"`, `"ask"` or `"end-run"`.
    pub fn as_str(self) -> &'static str {
        match self {
            OnCritical::Block => "block",
            OnCritical::Ask => "ask",
            OnCritical::EndRun => "end-run",
        }
    }

    /// Parses `"block"` / `"ask"` / `"end-run"`.
    pub fn parse(s: &str) -> Option<OnCritical> {
        OnCritical::ALL.into_iter().find(|o| o.as_str() == s)
    }
}

/// `loopguard.budgets`: caps on a run's and a session's calls and spend. Unset caps do not
/// apply; with none set nothing is counted against them.
///
/// ```
/// use loopguard_core::Budgets;
/// let b = Budgets { calls_per_run: Some(10), ..Budgets::default() };
/// assert!(!b.is_empty() && Budgets::default().is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Budgets {
    /// `callsPerRun`: tool calls that may run in one run.
    pub calls_per_run: Option<u64>,
    /// `callsPerSession`: tool calls that may run in one session, its sub-agents' included.
    pub calls_per_session: Option<u64>,
    /// `tokensPerRun`: model tokens (input and output, as the events' `usage` reports them)
    /// one run may use.
    pub tokens_per_run: Option<u64>,
    /// `costPerRun`: model cost (the events' `usage.cost`, in the unit the producer uses)
    /// one run may use.
    pub cost_per_run: Option<f64>,
    /// `tools`: calls of one tool (by the runtime's name) that may run in one run.
    pub tools: BTreeMap<String, u64>,
}

/// The keys of `loopguard.budgets`.
pub const BUDGET_KEYS: [&str; 5] = [
    "callsPerRun",
    "callsPerSession",
    "tokensPerRun",
    "costPerRun",
    "tools",
];

impl Budgets {
    /// `true` when no cap is set.
    pub fn is_empty(&self) -> bool {
        self.calls_per_run.is_none()
            && self.calls_per_session.is_none()
            && self.tokens_per_run.is_none()
            && self.cost_per_run.is_none()
            && self.tools.is_empty()
    }

    /// A per-agent block over the global one, cap by cap (a tool's cap by tool name).
    pub(crate) fn merge(g: Option<&Budgets>, a: Option<&Budgets>) -> Option<Budgets> {
        match (g, a) {
            (None, None) => None,
            (Some(x), None) | (None, Some(x)) => Some(x.clone()),
            (Some(g), Some(a)) => {
                let mut tools = g.tools.clone();
                tools.extend(a.tools.iter().map(|(k, v)| (k.clone(), *v)));
                Some(Budgets {
                    calls_per_run: a.calls_per_run.or(g.calls_per_run),
                    calls_per_session: a.calls_per_session.or(g.calls_per_session),
                    tokens_per_run: a.tokens_per_run.or(g.tokens_per_run),
                    cost_per_run: a.cost_per_run.or(g.cost_per_run),
                    tools,
                })
            }
        }
    }
}

/// The resolved ladder and budgets of an agent; part of [`super::Policy`]
/// (`policy.escalation`).
///
/// ```
/// use loopguard_core::{OnCritical, OpenClawConfig};
/// let loaded = OpenClawConfig::load_for_run(
///     r#"{ loopguard: { onCritical: "ask", budgets: { tools: { web_fetch: 30 } } },
///          agents: { list: [ { id: "ci", loopguard: { onCritical: "end-run" } } ] } }"#,
/// )?;
/// let main = loaded.config.policy_for(None).escalation;
/// assert_eq!(main.on_critical, OnCritical::Ask);
/// assert_eq!(main.budgets.tools.get("web_fetch"), Some(&30));
/// let ci = loaded.config.policy_for(Some("ci")).escalation;
/// assert_eq!(ci.on_critical, OnCritical::EndRun);
/// assert_eq!(ci.budgets.tools.get("web_fetch"), Some(&30)); // merged from the global block
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Escalation {
    /// `onCritical`.
    pub on_critical: OnCritical,
    /// `budgets`.
    pub budgets: Budgets,
}

impl Escalation {
    /// `true` when nothing is set: decisions are the detectors' alone.
    pub fn is_default(&self) -> bool {
        self.on_critical == OnCritical::Block && self.budgets.is_empty()
    }
}
