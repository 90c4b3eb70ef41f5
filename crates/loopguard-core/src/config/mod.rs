//! `tools.loopDetection`: the configuration block, its defaults, resolution and merging.
//!
//! There are three layers:
//!
//! * [`LoopDetectionConfig`]: what a user wrote, every field optional (OpenClaw's
//!   `ToolLoopDetectionConfig`). Numbers are kept as written (`f64`) because resolution
//!   must see `0`, `-1` or `2.5` to fall back to the default the way OpenClaw does.
//! * [`LoopDetectionConfig::merge`]: a per-agent block over the global one, field by field,
//!   including the nested `detectors` and `postCompactionGuard` objects.
//! * [`ResolvedConfig`] / [`Policy`]: the numbers the detectors use, after the
//!   positive-integer fallback and the auto-raise of `criticalThreshold` and
//!   `globalCircuitBreakerThreshold`.
//!
//! [`OpenClawConfig`] reads a whole OpenClaw config file (JSON5 or JSON) and reports every
//! problem as a [`Diagnostic`] with its line and key path: [`OpenClawConfig::from_json5`]
//! is the checker's view (everything wrong is an error), [`OpenClawConfig::load_for_run`]
//! the run-time view (what OpenClaw tolerates falls back, with a warning).

mod escalation;
mod extension;
pub mod json5;
mod load;

pub use escalation::{Budgets, Escalation, OnCritical, BUDGET_KEYS};
pub use extension::{AlertConfig, ALERT_EVENTS, ALERT_FORMATS};
pub use extension::{
    DetectorProfile, ExtraDetector, ExtraDetectorConfig, ExtraPolicy, LoopguardConfig,
    DEFAULT_ARGUMENT_CHURN, DEFAULT_ARGUMENT_CHURN_BLOCK, DEFAULT_CHANGING_ERROR,
    DEFAULT_COMPACTIONS, DEFAULT_CYCLE, DEFAULT_ERROR_CHANGING_ARGS, DEFAULT_FAILURE_STREAK,
    DEFAULT_NEAR_REPEAT, DEFAULT_NEAR_REPEAT_SIMILARITY, DEFAULT_OUTCOME_STREAK,
    EXTRA_DETECTOR_KEYS,
};
pub use load::{Diagnostic, DiagnosticKind, LoadError, Loaded, RunConfigError, Severity};

/// Default `historySize`.
pub const DEFAULT_HISTORY_SIZE: usize = 30;
/// Default `warningThreshold`.
pub const DEFAULT_WARNING_THRESHOLD: f64 = 10.0;
/// Default `criticalThreshold`.
pub const DEFAULT_CRITICAL_THRESHOLD: f64 = 20.0;
/// Default `unknownToolThreshold`.
pub const DEFAULT_UNKNOWN_TOOL_THRESHOLD: f64 = 10.0;
/// Default `globalCircuitBreakerThreshold`.
pub const DEFAULT_GLOBAL_CIRCUIT_BREAKER_THRESHOLD: f64 = 30.0;
/// Default `postCompactionGuard.windowSize`.
pub const DEFAULT_WINDOW_SIZE: u32 = 3;

/// The `tools.loopDetection` block as written; `None` means "not set".
///
/// ```
/// use loopguard_core::LoopDetectionConfig;
/// let cfg = LoopDetectionConfig { enabled: Some(true), warning_threshold: Some(25.0), ..Default::default() };
/// let r = cfg.resolve();
/// assert_eq!((r.warning_threshold, r.critical_threshold, r.global_circuit_breaker_threshold), (25.0, 26.0, 30.0));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoopDetectionConfig {
    /// Master switch of the rolling-history detectors (default off).
    pub enabled: Option<bool>,
    /// How many calls the session history keeps.
    pub history_size: Option<f64>,
    /// Count at which warnings start.
    pub warning_threshold: Option<f64>,
    /// Consecutive unknown-tool failures that block.
    pub unknown_tool_threshold: Option<f64>,
    /// Count at which identical outcomes block.
    pub critical_threshold: Option<f64>,
    /// Identical no-progress outcomes that block whatever the detector switches say.
    pub global_circuit_breaker_threshold: Option<f64>,
    /// Per-detector switches.
    pub detectors: Option<DetectorSwitches>,
    /// The post-compaction guard's settings.
    pub post_compaction_guard: Option<PostCompactionGuardConfig>,
}

/// `detectors.*`: each detector on unless set to `false`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DetectorSwitches {
    /// `detectors.genericRepeat`
    pub generic_repeat: Option<bool>,
    /// `detectors.knownPollNoProgress`
    pub known_poll_no_progress: Option<bool>,
    /// `detectors.pingPong`
    pub ping_pong: Option<bool>,
}

/// `postCompactionGuard.*`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PostCompactionGuardConfig {
    /// Attempts watched after a compaction, and identical triples that abort.
    pub window_size: Option<f64>,
}

/// OpenClaw's `asPositiveInt`: the value when it is an integer above zero, else `fallback`.
///
/// ```
/// use loopguard_core::as_positive_int;
/// assert_eq!(as_positive_int(Some(4.0), 10.0), 4.0);
/// for bad in [Some(0.0), Some(-1.0), Some(2.5), Some(f64::NAN), Some(f64::INFINITY), None] {
///     assert_eq!(as_positive_int(bad, 10.0), 10.0);
/// }
/// ```
pub fn as_positive_int(v: Option<f64>, fallback: f64) -> f64 {
    match v {
        Some(n) if n.is_finite() && n.fract() == 0.0 && n > 0.0 => n,
        _ => fallback,
    }
}

/// The resolved numbers and switches the detectors use.
///
/// ```
/// use loopguard_core::OpenClawConfig;
/// let loaded = OpenClawConfig::load_for_run(
///     "{ tools: { loopDetection: { enabled: true, warningThreshold: 5 } } }",
/// )?;
/// let resolved = loaded.config.policy_for(None).resolved;
/// assert_eq!(resolved.warning_threshold, 5.0);
/// assert!(resolved.critical_threshold > resolved.warning_threshold);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedConfig {
    /// `enabled === true`.
    pub enabled: bool,
    /// History length.
    pub history_size: usize,
    /// W.
    pub warning_threshold: f64,
    /// U.
    pub unknown_tool_threshold: f64,
    /// C, above W.
    pub critical_threshold: f64,
    /// G, above C.
    pub global_circuit_breaker_threshold: f64,
    /// `detectors.genericRepeat`
    pub generic_repeat: bool,
    /// `detectors.knownPollNoProgress`
    pub known_poll_no_progress: bool,
    /// `detectors.pingPong`
    pub ping_pong: bool,
}

impl Default for ResolvedConfig {
    fn default() -> Self {
        LoopDetectionConfig::default().resolve()
    }
}

impl LoopDetectionConfig {
    /// Resolves the block as OpenClaw's `resolveLoopDetectionConfig` does (Era B).
    pub fn resolve(&self) -> ResolvedConfig {
        let Thresholds {
            warning: w,
            critical: c,
            global: g,
            ..
        } = self.thresholds();
        let d = self.detectors.clone().unwrap_or_default();
        let history = as_positive_int(self.history_size, DEFAULT_HISTORY_SIZE as f64);
        ResolvedConfig {
            enabled: self.enabled.unwrap_or(false),
            history_size: if history >= usize::MAX as f64 {
                usize::MAX
            } else {
                history as usize
            },
            warning_threshold: w,
            unknown_tool_threshold: as_positive_int(
                self.unknown_tool_threshold,
                DEFAULT_UNKNOWN_TOOL_THRESHOLD,
            ),
            critical_threshold: c,
            global_circuit_breaker_threshold: g,
            generic_repeat: d.generic_repeat.unwrap_or(true),
            known_poll_no_progress: d.known_poll_no_progress.unwrap_or(true),
            ping_pong: d.ping_pong.unwrap_or(true),
        }
    }

    /// The three thresholds after the positive-integer fallback and OpenClaw's auto-raise
    /// (critical above warning, then global above critical; decisions.md item 3), with the
    /// values that were raised. The one place the rule lives: [`LoopDetectionConfig::resolve`]
    /// uses the numbers, the config loader reports the raises.
    pub(crate) fn thresholds(&self) -> Thresholds {
        let warning = as_positive_int(self.warning_threshold, DEFAULT_WARNING_THRESHOLD);
        let c0 = as_positive_int(self.critical_threshold, DEFAULT_CRITICAL_THRESHOLD);
        let g0 = as_positive_int(
            self.global_circuit_breaker_threshold,
            DEFAULT_GLOBAL_CIRCUIT_BREAKER_THRESHOLD,
        );
        let critical = if c0 <= warning { warning + 1.0 } else { c0 };
        let global = if g0 <= critical { critical + 1.0 } else { g0 };
        Thresholds {
            warning,
            critical,
            global,
            critical_raised_from: (critical != c0).then_some(c0),
            global_raised_from: (global != g0).then_some(g0),
        }
    }

    /// Merges a per-agent block over the global one (`resolveToolLoopDetectionConfig`).
    ///
    /// With only one of them, that one is returned unchanged. With both, agent fields win,
    /// and `detectors` and `postCompactionGuard` are merged field by field.
    ///
    /// ```
    /// use loopguard_core::{DetectorSwitches, LoopDetectionConfig};
    /// let global = LoopDetectionConfig {
    ///     enabled: Some(true),
    ///     detectors: Some(DetectorSwitches { ping_pong: Some(false), ..Default::default() }),
    ///     ..Default::default()
    /// };
    /// let agent = LoopDetectionConfig {
    ///     detectors: Some(DetectorSwitches { generic_repeat: Some(false), ..Default::default() }),
    ///     ..Default::default()
    /// };
    /// let m = LoopDetectionConfig::merge(Some(&global), Some(&agent)).ok_or("no block")?;
    /// let d = m.detectors.ok_or("no detectors")?;
    /// assert_eq!((d.ping_pong, d.generic_repeat, m.enabled), (Some(false), Some(false), Some(true)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn merge(global: Option<&Self>, agent: Option<&Self>) -> Option<Self> {
        let (g, a) = match (global, agent) {
            (None, None) => return None,
            (Some(g), None) => return Some(g.clone()),
            (None, Some(a)) => return Some(a.clone()),
            (Some(g), Some(a)) => (g, a),
        };
        let gd = g.detectors.clone().unwrap_or_default();
        let ad = a.detectors.clone().unwrap_or_default();
        let gp = g.post_compaction_guard.clone().unwrap_or_default();
        let ap = a.post_compaction_guard.clone().unwrap_or_default();
        Some(LoopDetectionConfig {
            enabled: a.enabled.or(g.enabled),
            history_size: a.history_size.or(g.history_size),
            warning_threshold: a.warning_threshold.or(g.warning_threshold),
            unknown_tool_threshold: a.unknown_tool_threshold.or(g.unknown_tool_threshold),
            critical_threshold: a.critical_threshold.or(g.critical_threshold),
            global_circuit_breaker_threshold: a
                .global_circuit_breaker_threshold
                .or(g.global_circuit_breaker_threshold),
            detectors: Some(DetectorSwitches {
                generic_repeat: ad.generic_repeat.or(gd.generic_repeat),
                known_poll_no_progress: ad.known_poll_no_progress.or(gd.known_poll_no_progress),
                ping_pong: ad.ping_pong.or(gd.ping_pong),
            }),
            post_compaction_guard: Some(PostCompactionGuardConfig {
                window_size: ap.window_size.or(gp.window_size),
            }),
        })
    }
}

/// The thresholds of one block after fallback and auto-raise ([`LoopDetectionConfig::thresholds`]).
pub(crate) struct Thresholds {
    pub(crate) warning: f64,
    pub(crate) critical: f64,
    pub(crate) global: f64,
    /// `criticalThreshold` before it was raised above `warningThreshold`.
    pub(crate) critical_raised_from: Option<f64>,
    /// `globalCircuitBreakerThreshold` before it was raised above `criticalThreshold`.
    pub(crate) global_raised_from: Option<f64>,
}

/// The post-compaction guard's effective settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuardSettings {
    /// On unless `enabled` is explicitly `false`.
    pub enabled: bool,
    /// `postCompactionGuard.windowSize` with the fallback to 3.
    pub window_size: u32,
}

/// Everything the engine needs for one agent: the merged block, resolved.
///
/// ```
/// use loopguard_core::Policy;
/// let p = Policy::from_block(None);
/// assert!(!p.resolved.enabled);        // detectors need `enabled: true`
/// assert!(p.records_calls);            // but calls are recorded unless `enabled: false`
/// assert!(p.guard.enabled);            // and the post-compaction guard runs
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    /// The merged block (`None` when neither a global nor an agent block exists).
    pub block: Option<LoopDetectionConfig>,
    /// The resolved detector settings.
    pub resolved: ResolvedConfig,
    /// `enabled !== false`: the pre-call record is written.
    pub records_calls: bool,
    /// The post-compaction guard's settings.
    pub guard: GuardSettings,
    /// loopguard's extra detectors (the `loopguard` block; all off in the default
    /// `openclaw` profile).
    pub extra: ExtraPolicy,
    /// The channel plugins the config sets up (`channels`), as the `openclaw-2026.9.6`
    /// profile reads them; unused by the other profiles.
    pub shipped_channels: crate::openclaw_2026_9_6::Channels,
    /// The escalation ladder and the budgets (the `loopguard` block's `onCritical` and
    /// `budgets`), applied by the guard layer after the engine's decision.
    pub escalation: Escalation,
}

impl Policy {
    /// Resolves a merged block.
    pub fn from_block(block: Option<LoopDetectionConfig>) -> Self {
        let resolved = block.clone().unwrap_or_default().resolve();
        let explicit_off = block.as_ref().and_then(|b| b.enabled) == Some(false);
        let window = as_positive_int(
            block
                .as_ref()
                .and_then(|b| b.post_compaction_guard.as_ref())
                .and_then(|p| p.window_size),
            f64::from(DEFAULT_WINDOW_SIZE),
        );
        Policy {
            block,
            resolved,
            records_calls: !explicit_off,
            guard: GuardSettings {
                enabled: !explicit_off,
                window_size: if window >= f64::from(u32::MAX) {
                    u32::MAX
                } else {
                    window as u32
                },
            },
            extra: ExtraPolicy::default(),
            shipped_channels: Default::default(),
            escalation: Escalation::default(),
        }
    }

    /// The same policy with loopguard's extra detectors set.
    ///
    /// ```
    /// use loopguard_core::{ExtraPolicy, Policy};
    /// let p = Policy::enabled().with_extra(ExtraPolicy::strict());
    /// assert!(p.extra.failure_streak.enabled);
    /// ```
    pub fn with_extra(mut self, extra: ExtraPolicy) -> Self {
        self.extra = extra;
        self
    }

    /// Caps `historySize` at `max` calls (at least 1), whatever the config says.
    ///
    /// OpenClaw takes any positive integer, so a config can ask a session to keep millions
    /// of calls (up to `usize::MAX`); an embedder that holds many sessions, or persists
    /// each one per call, bounds that here. A `historySize` at or below the cap is
    /// unchanged, so decisions only differ for configs above it.
    ///
    /// ```
    /// use loopguard_core::OpenClawConfig;
    /// let cfg = OpenClawConfig::from_json5("{tools:{loopDetection:{historySize: 1e12}}}")?.config;
    /// assert_eq!(cfg.policy_for(None).resolved.history_size, 1_000_000_000_000);
    /// let capped = cfg.policy_for(None).with_max_history(1_000);
    /// assert_eq!(capped.resolved.history_size, 1_000);
    /// # Ok::<(), loopguard_core::LoadError>(())
    /// ```
    #[must_use]
    pub fn with_max_history(mut self, max: usize) -> Self {
        self.resolved.history_size = self.resolved.history_size.min(max.max(1));
        self
    }

    /// A policy with detection switched on and every default.
    pub fn enabled() -> Self {
        Policy::from_block(Some(LoopDetectionConfig {
            enabled: Some(true),
            ..Default::default()
        }))
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy::from_block(None)
    }
}

/// An `agents.list[]` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentConfig {
    /// `id` as written.
    pub id: String,
    /// `tools.loopDetection` of this agent.
    pub loop_detection: Option<LoopDetectionConfig>,
    /// `loopguard` of this agent (loopguard's extension, outside OpenClaw's block).
    pub loopguard: Option<LoopguardConfig>,
}

/// The parts of an OpenClaw config file loopguard reads.
///
/// ```
/// use loopguard_core::OpenClawConfig;
/// let loaded = OpenClawConfig::from_json5(r#"{
///   tools: { loopDetection: { enabled: true, warningThreshold: 10 } },
///   agents: { list: [ { id: "Safe-Runner", tools: { loopDetection: { warningThreshold: 8 } } } ] },
/// }"#)?;
/// assert!(loaded.diagnostics.is_empty());
/// let cfg = loaded.config;
/// assert_eq!(cfg.policy_for(Some(" safe-runner ")).resolved.warning_threshold, 8.0);
/// assert_eq!(cfg.policy_for(Some("other")).resolved.warning_threshold, 10.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpenClawConfig {
    /// `tools.loopDetection`.
    pub loop_detection: Option<LoopDetectionConfig>,
    /// `agents.list[]`, in file order.
    pub agents: Vec<AgentConfig>,
    /// The top-level `loopguard` block (loopguard's extension; see [`LoopguardConfig`]).
    pub loopguard: Option<LoopguardConfig>,
    /// The whole file as read, for the `openclaw-2026.9.6` profile, which reads it as that
    /// release does (`enabled` per agent from `agents.list` or `agents.entries`, the
    /// channel plugins under `channels`). `None` for a config built in code.
    pub raw: Option<std::sync::Arc<crate::value::Value<'static>>>,
}

/// Agent ids are compared trimmed (JavaScript's `trim`) and case-insensitively
/// (decisions.md item 5).
///
/// ```
/// use loopguard_core::normalize_agent_id;
/// assert_eq!(normalize_agent_id("\u{FEFF} Safe-Runner "), "safe-runner");
/// assert_eq!(normalize_agent_id("\u{85}a"), "\u{85}a"); // not whitespace in JavaScript
/// ```
pub fn normalize_agent_id(id: &str) -> String {
    String::from_utf8_lossy(crate::text::js_trim(id.as_bytes())).to_lowercase()
}

impl OpenClawConfig {
    /// Reads an OpenClaw config text (JSON5 or JSON) for checking: every problem is a
    /// [`Diagnostic`], as `loopguard config check` prints them. To run the engine, use
    /// [`OpenClawConfig::load_for_run`].
    pub fn from_json5(text: &str) -> Result<Loaded, LoadError> {
        load::load(text)
    }

    /// The agent entry for `agent_id`: the first whose trimmed id matches case-insensitively.
    pub fn agent(&self, agent_id: &str) -> Option<&AgentConfig> {
        let want = normalize_agent_id(agent_id);
        self.agents
            .iter()
            .find(|a| normalize_agent_id(&a.id) == want)
    }

    /// The merged block for an agent (or the global block when the agent has no entry).
    pub fn block_for(&self, agent_id: Option<&str>) -> Option<LoopDetectionConfig> {
        let agent = agent_id
            .and_then(|id| self.agent(id))
            .and_then(|a| a.loop_detection.as_ref());
        LoopDetectionConfig::merge(self.loop_detection.as_ref(), agent)
    }

    /// The merged `loopguard` block for an agent.
    pub fn loopguard_for(&self, agent_id: Option<&str>) -> Option<LoopguardConfig> {
        let agent = agent_id
            .and_then(|id| self.agent(id))
            .and_then(|a| a.loopguard.as_ref());
        LoopguardConfig::merge(self.loopguard.as_ref(), agent)
    }

    /// The resolved policy for an agent: OpenClaw's block and loopguard's extension.
    pub fn policy_for(&self, agent_id: Option<&str>) -> Policy {
        let loopguard = self.loopguard_for(agent_id);
        let extra = loopguard.as_ref().map(|l| l.resolve()).unwrap_or_default();
        let mut policy = Policy::from_block(self.block_for(agent_id)).with_extra(extra);
        policy.escalation = loopguard.map(|l| l.escalation()).unwrap_or_default();
        if policy.extra.profile == DetectorProfile::OpenClaw2026_9_6 {
            if let Some(raw) = &self.raw {
                use crate::openclaw_2026_9_6::{channels, loop_detection_enabled, Enabled};
                let enabled = loop_detection_enabled(raw, agent_id);
                policy.resolved.enabled = enabled == Enabled::True;
                policy.records_calls = enabled != Enabled::False;
                policy.guard.enabled = enabled != Enabled::False;
                policy.shipped_channels = channels(raw);
            }
        }
        policy
    }

    /// Selects `profile` for every agent, overriding what the file chose (the file's
    /// per-detector settings still apply). This is `loopguard replay --profile`.
    ///
    /// ```
    /// use loopguard_core::{OpenClawConfig, DetectorProfile};
    /// let mut cfg = OpenClawConfig::from_json5(
    ///     r#"{loopguard:{profile:"openclaw"},agents:{list:[{id:"a",loopguard:{profile:"openclaw"}}]}}"#,
    /// )?.config;
    /// cfg.set_profile(DetectorProfile::Strict);
    /// assert!(cfg.policy_for(Some("a")).extra.failure_streak.enabled);
    /// # Ok::<(), loopguard_core::LoadError>(())
    /// ```
    pub fn set_profile(&mut self, profile: DetectorProfile) {
        self.loopguard.get_or_insert_with(Default::default).profile = Some(profile);
        for a in &mut self.agents {
            if let Some(l) = &mut a.loopguard {
                l.profile = None;
            }
        }
    }
}

/// The threshold of OpenClaw's always-on unknown-tool stream guard.
///
/// Unlike [`as_positive_int`], a fractional value is floored: 3.7 gives 3.
///
/// ```
/// use loopguard_core::{unknown_tool_guard_threshold, LoopDetectionConfig};
/// let t = |v| unknown_tool_guard_threshold(Some(&LoopDetectionConfig { unknown_tool_threshold: v, ..Default::default() }));
/// assert_eq!(t(Some(3.7)), 3);
/// assert_eq!(t(Some(0.0)), 10);
/// assert_eq!(t(None), 10);
/// ```
pub fn unknown_tool_guard_threshold(block: Option<&LoopDetectionConfig>) -> u64 {
    match block.and_then(|b| b.unknown_tool_threshold) {
        Some(n) if n.is_finite() && n > 0.0 => n.floor() as u64,
        _ => DEFAULT_UNKNOWN_TOOL_THRESHOLD as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(w: Option<f64>, c: Option<f64>, g: Option<f64>) -> (f64, f64, f64) {
        let r = LoopDetectionConfig {
            warning_threshold: w,
            critical_threshold: c,
            global_circuit_breaker_threshold: g,
            ..Default::default()
        }
        .resolve();
        (
            r.warning_threshold,
            r.critical_threshold,
            r.global_circuit_breaker_threshold,
        )
    }

    #[test]
    fn auto_raise_table() {
        assert_eq!(cfg(Some(25.0), None, None), (25.0, 26.0, 30.0));
        assert_eq!(cfg(Some(30.0), None, None), (30.0, 31.0, 32.0));
        assert_eq!(cfg(None, Some(35.0), None), (10.0, 35.0, 36.0));
        assert_eq!(cfg(Some(5.0), Some(5.0), None), (5.0, 6.0, 30.0));
        assert_eq!(cfg(Some(2.0), Some(4.0), None), (2.0, 4.0, 30.0));
        assert_eq!(cfg(Some(0.0), Some(2.5), None), (10.0, 20.0, 30.0));
    }

    #[test]
    fn history_cap_bounds_only_larger_sizes() {
        let p = |h: f64| {
            Policy::from_block(Some(LoopDetectionConfig {
                history_size: Some(h),
                ..Default::default()
            }))
        };
        assert_eq!(p(1e300).resolved.history_size, usize::MAX);
        assert_eq!(p(1e300).with_max_history(500).resolved.history_size, 500);
        assert_eq!(p(40.0).with_max_history(500).resolved.history_size, 40);
        assert_eq!(p(40.0).with_max_history(0).resolved.history_size, 1);
        // The history kept really is bounded by the cap.
        let policy = Policy::enabled().with_max_history(5);
        let mut s = crate::Session::new("s");
        for i in 0..20 {
            let args = crate::Value::parse(format!(r#"{{"n":{i}}}"#).as_bytes())
                .unwrap()
                .into_owned();
            let _ = s.before_call(&policy, &crate::Call::new("read", &args));
        }
        assert_eq!(s.history().len(), 5);
    }

    #[test]
    fn history_size_falls_back() {
        let r = LoopDetectionConfig {
            history_size: Some(0.0),
            ..Default::default()
        }
        .resolve();
        assert_eq!(r.history_size, 30);
    }

    #[test]
    fn guard_wiring_scenario_79() {
        assert!(Policy::from_block(None).guard.enabled);
        let off = LoopDetectionConfig {
            enabled: Some(false),
            ..Default::default()
        };
        assert!(!Policy::from_block(Some(off.clone())).guard.enabled);
        let on = LoopDetectionConfig {
            enabled: Some(true),
            ..Default::default()
        };
        let m = LoopDetectionConfig::merge(Some(&on), Some(&off));
        assert!(!Policy::from_block(m).guard.enabled);
    }

    #[test]
    fn unknown_tool_guard_threshold_scenario_91() {
        let t = |enabled: Option<bool>, v: Option<f64>| {
            unknown_tool_guard_threshold(Some(&LoopDetectionConfig {
                enabled,
                unknown_tool_threshold: v,
                ..Default::default()
            }))
        };
        assert_eq!(t(Some(false), None), 10);
        assert_eq!(t(Some(false), Some(3.0)), 3);
        assert_eq!(t(None, Some(4.0)), 4);
        assert_eq!(t(None, Some(0.0)), 10);
        assert_eq!(t(None, Some(-5.0)), 10);
        assert_eq!(t(None, Some(f64::NAN)), 10);
        assert_eq!(t(None, Some(3.7)), 3);
    }
}
