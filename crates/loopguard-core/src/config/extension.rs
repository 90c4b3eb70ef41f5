//! loopguard's own block: the `strict` profile and the extra detectors.
//!
//! OpenClaw's `tools.loopDetection` is a strict schema (decisions.md item 4), so nothing
//! loopguard adds goes inside it. The extension lives in a top-level `loopguard` key of the
//! same file (or of a `.loopguard.json5`), with per-agent overrides in
//! `agents.list[].loopguard`, merged field by field like the OpenClaw block:
//!
//! ```json5
//! {
//!   tools: { loopDetection: { enabled: true } },      // unchanged OpenClaw config
//!   loopguard: {
//!     profile: "strict",                               // "openclaw" (default) | "strict"
//!     detectors: {
//!       identicalFailureStreak: { warnAt: 3, blockAt: 6 },
//!       argumentChurn: false,                          // a boolean switches a detector
//!     },
//!   },
//!   agents: { list: [ { id: "ops", loopguard: { profile: "openclaw" } } ] },
//! }
//! ```
//!
//! With profile `openclaw` (the default, and what an unmodified OpenClaw config gets) every
//! extra detector is off unless its block says `enabled: true`; with `strict` every extra
//! detector is on unless it says `enabled: false`. The extra detectors are rolling-history
//! detectors, so like OpenClaw's they run only when `tools.loopDetection.enabled` is `true`
//! (decisions.md item 1: Era D-like features are opt-in, never silently on).
//!
//! Thresholds are counts: `warnAt: 3` warns on the call that follows three identical
//! failures. The strict defaults come from the evaluation over real transcripts in the
//! README ("The strict profile").

use super::as_positive_int;

/// Which set of detectors runs.
///
/// ```
/// use loopguard_core::{DetectorProfile, OpenClawConfig};
/// let loaded = OpenClawConfig::load_for_run(
///     r#"{ tools: { loopDetection: { enabled: true } }, loopguard: { profile: "strict" } }"#,
/// )?;
/// let policy = loaded.config.policy_for(None);
/// assert_eq!(policy.extra.profile, DetectorProfile::Strict);
/// assert_eq!(DetectorProfile::Strict.as_str(), "strict");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DetectorProfile {
    /// OpenClaw's detectors only, byte for byte (the default).
    #[default]
    OpenClaw,
    /// OpenClaw's detectors plus every extra detector, with the strict defaults.
    Strict,
    /// The detector and tool wrapper of the `openclaw` npm release 2026.9.6, byte for byte
    /// (docs/decisions.md, "Two eras of OpenClaw"): only `enabled` is read, and every extra
    /// detector is off.
    OpenClaw2026_9_6,
}

impl DetectorProfile {
    /// `"openclaw"`, `"strict"` or `"openclaw-2026.9.6"`.
    pub fn as_str(self) -> &'static str {
        match self {
            DetectorProfile::OpenClaw => "openclaw",
            DetectorProfile::Strict => "strict",
            DetectorProfile::OpenClaw2026_9_6 => "openclaw-2026.9.6",
        }
    }

    /// The profile of the OpenClaw release `version` (OpenClaw's calendar versions:
    /// `2026.9.6`, `2026.10.1-beta.2`): [`DetectorProfile::OpenClaw2026_9_6`] for 2026.9.6
    /// and every later release (no later era is known), [`DetectorProfile::OpenClaw`] (the
    /// documented behaviour) for older ones; `None` when `version` is not one.
    ///
    /// ```
    /// use loopguard_core::DetectorProfile;
    /// assert_eq!(DetectorProfile::for_openclaw_release("2026.9.6"), Some(DetectorProfile::OpenClaw2026_9_6));
    /// assert_eq!(DetectorProfile::for_openclaw_release("2026.10.1-beta.2"), Some(DetectorProfile::OpenClaw2026_9_6));
    /// assert_eq!(DetectorProfile::for_openclaw_release("2026.9.5"), Some(DetectorProfile::OpenClaw));
    /// assert_eq!(DetectorProfile::for_openclaw_release("dev"), None);
    /// ```
    pub fn for_openclaw_release(version: &str) -> Option<DetectorProfile> {
        let v = version.trim();
        let v = v.strip_prefix('v').unwrap_or(v);
        let mut parts = [0u64; 3];
        let mut rest = v;
        for (i, part) in parts.iter_mut().enumerate() {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            *part = rest.get(..digits)?.parse().ok()?;
            rest = &rest[digits..];
            if i < 2 {
                rest = rest.strip_prefix('.')?;
            }
        }
        Some(if parts >= [2026, 9, 6] {
            DetectorProfile::OpenClaw2026_9_6
        } else {
            DetectorProfile::OpenClaw
        })
    }

    /// Parses `"openclaw"` / `"strict"` / `"openclaw-2026.9.6"`.
    ///
    /// ```
    /// use loopguard_core::DetectorProfile;
    /// assert_eq!(DetectorProfile::parse("strict"), Some(DetectorProfile::Strict));
    /// assert_eq!(DetectorProfile::parse("lenient"), None);
    /// ```
    pub fn parse(s: &str) -> Option<DetectorProfile> {
        match s {
            "openclaw" => Some(DetectorProfile::OpenClaw),
            "strict" => Some(DetectorProfile::Strict),
            "openclaw-2026.9.6" => Some(DetectorProfile::OpenClaw2026_9_6),
            _ => None,
        }
    }
}

/// The keys of `loopguard.detectors`, in the order the README lists them.
pub const EXTRA_DETECTOR_KEYS: [&str; 13] = [
    "identicalFailureStreak",
    "identicalOutcomeStreak",
    "errorDespiteChangingArgs",
    "argumentChurn",
    "loopAcrossCompactions",
    "secondCriticalAbort",
    "nearRepeat",
    "noProgressCycle",
    "changingErrorSameCall",
    "emptySearchSweep",
    "unrunnableCommands",
    "errorCascade",
    "changingCountsSameCall",
];

/// One extra detector's block as written: a switch and its numbers (`None` = not set).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExtraDetectorConfig {
    /// `enabled` (or the boolean shorthand `detectors.x: true`).
    pub enabled: Option<bool>,
    /// `warnAt`.
    pub warn_at: Option<f64>,
    /// `blockAt`.
    pub block_at: Option<f64>,
    /// `window` (argument churn: outcomes looked at).
    pub window: Option<f64>,
    /// `maxVariants` (argument churn).
    pub max_variants: Option<f64>,
    /// `similarity` (near repeat: the Jaccard similarity, 0 to 1, at which two calls'
    /// normalised arguments count as the same attempt).
    pub similarity: Option<f64>,
}

impl ExtraDetectorConfig {
    fn merge(g: Option<&Self>, a: Option<&Self>) -> Option<Self> {
        match (g, a) {
            (None, None) => None,
            (Some(x), None) | (None, Some(x)) => Some(x.clone()),
            (Some(g), Some(a)) => Some(ExtraDetectorConfig {
                enabled: a.enabled.or(g.enabled),
                warn_at: a.warn_at.or(g.warn_at),
                block_at: a.block_at.or(g.block_at),
                window: a.window.or(g.window),
                max_variants: a.max_variants.or(g.max_variants),
                similarity: a.similarity.or(g.similarity),
            }),
        }
    }
}

/// The `loopguard` block as written.
///
/// ```
/// use loopguard_core::{LoopguardConfig, DetectorProfile};
/// let cfg = LoopguardConfig { profile: Some(DetectorProfile::Strict), ..Default::default() };
/// let extra = cfg.resolve();
/// assert!(extra.failure_streak.enabled && extra.second_critical.enabled);
/// assert_eq!((extra.failure_streak.warn_at, extra.failure_streak.block_at), (3, 6));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoopguardConfig {
    /// `profile`.
    pub profile: Option<DetectorProfile>,
    /// `detectors.identicalFailureStreak`.
    pub identical_failure_streak: Option<ExtraDetectorConfig>,
    /// `detectors.identicalOutcomeStreak`.
    pub identical_outcome_streak: Option<ExtraDetectorConfig>,
    /// `detectors.errorDespiteChangingArgs`.
    pub error_despite_changing_args: Option<ExtraDetectorConfig>,
    /// `detectors.argumentChurn`.
    pub argument_churn: Option<ExtraDetectorConfig>,
    /// `detectors.loopAcrossCompactions`.
    pub loop_across_compactions: Option<ExtraDetectorConfig>,
    /// `detectors.secondCriticalAbort`.
    pub second_critical_abort: Option<ExtraDetectorConfig>,
    /// `detectors.nearRepeat`.
    pub near_repeat: Option<ExtraDetectorConfig>,
    /// `detectors.noProgressCycle`.
    pub no_progress_cycle: Option<ExtraDetectorConfig>,
    /// `detectors.changingErrorSameCall`.
    pub changing_error_same_call: Option<ExtraDetectorConfig>,
    /// `detectors.emptySearchSweep`.
    pub empty_search_sweep: Option<ExtraDetectorConfig>,
    /// `detectors.unrunnableCommands`.
    pub unrunnable_commands: Option<ExtraDetectorConfig>,
    /// `detectors.errorCascade`.
    pub error_cascade: Option<ExtraDetectorConfig>,
    /// `detectors.changingCountsSameCall`.
    pub changing_counts_same_call: Option<ExtraDetectorConfig>,
    /// `countVetoes`: whether a blocked call counts toward the streak it was blocked for
    /// (strict: `true`).
    pub count_vetoes: Option<bool>,
    /// `onCritical`: what a critical detection does (see [`super::Escalation`]).
    pub on_critical: Option<super::OnCritical>,
    /// `budgets`.
    pub budgets: Option<super::Budgets>,
    /// `alerts`: where front ends send alerts when they stop a loop (`loopguard serve`
    /// reads the top-level block's; `loopguard-alerts` delivers them).
    pub alerts: Option<Vec<AlertConfig>>,
}

/// One item of `loopguard.alerts`: `{ url, format?, on? }`, checked by the loader (an
/// `http(s)://` URL, a format of [`ALERT_FORMATS`], events of [`ALERT_EVENTS`]), or
/// `{ format: "desktop", on? }`: a desktop notification on this machine, without a URL.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AlertConfig {
    /// `url`: where the alert is posted (empty for `desktop`).
    pub url: String,
    /// `format`: `json` (default), `slack`, `pagerduty` or `desktop`.
    pub format: String,
    /// `on`: the events sent (`block`, `end-run`, `budget`); empty: all of them.
    pub on: Vec<String>,
}

/// The words of `loopguard.alerts[].format`.
pub const ALERT_FORMATS: [&str; 4] = ["json", "slack", "pagerduty", "desktop"];
/// The words of `loopguard.alerts[].on`.
pub const ALERT_EVENTS: [&str; 3] = ["block", "end-run", "budget"];

/// A resolved extra detector: on or off, and its numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtraDetector {
    /// Whether the detector runs.
    pub enabled: bool,
    /// Count at which it warns (0: never).
    pub warn_at: u64,
    /// Count at which it blocks (0: never).
    pub block_at: u64,
    /// Outcomes looked at (argument churn).
    pub window: u64,
    /// Distinct argument variants allowed (argument churn).
    pub max_variants: u64,
    /// Similarity in percent at which two calls are near-identical (near repeat).
    pub similarity_pct: u64,
}

impl ExtraDetector {
    const fn off(warn_at: u64, block_at: u64) -> Self {
        ExtraDetector {
            enabled: false,
            warn_at,
            block_at,
            window: 0,
            max_variants: 0,
            similarity_pct: 0,
        }
    }
}

/// Strict default of `identicalFailureStreak`: warn after 3 identical failures in a row,
/// block after 6.
pub const DEFAULT_FAILURE_STREAK: (u64, u64) = (3, 6);
/// Strict default of `identicalOutcomeStreak`: warn after 5 identical outcomes in a row,
/// block after 8.
pub const DEFAULT_OUTCOME_STREAK: (u64, u64) = (5, 8);
/// Strict default of `errorDespiteChangingArgs`: warn at 4 argument variants with the same
/// error, block at 8 (all in a row).
pub const DEFAULT_ERROR_CHANGING_ARGS: (u64, u64) = (4, 8);
/// Strict default of `argumentChurn`: a window of 10 outcomes over at most 3 variants.
pub const DEFAULT_ARGUMENT_CHURN: (u64, u64) = (10, 3);
/// Strict default of `argumentChurn.blockAt`: the churn is blocked once it has gone on
/// for 14 outcomes (the warning's window plus four more calls).
pub const DEFAULT_ARGUMENT_CHURN_BLOCK: u64 = 14;
/// Strict default of `nearRepeat`: warn after 2 no-progress repeats, block after 4 (the
/// self-recovering runs of the calibration set repeat at most 3 times in a row).
pub const DEFAULT_NEAR_REPEAT: (u64, u64) = (2, 4);
/// Strict default of `nearRepeat.similarity`: 0.6 (60 % of the distinct tokens shared).
pub const DEFAULT_NEAR_REPEAT_SIMILARITY: f64 = 0.6;
/// Strict default of `noProgressCycle`: warn when a cycle covers 6 calls (at least two
/// rounds), block at 8 (at least three rounds).
pub const DEFAULT_CYCLE: (u64, u64) = (6, 8);
/// Strict default of `changingErrorSameCall`: warn after 2 failures, block after 3.
pub const DEFAULT_CHANGING_ERROR: (u64, u64) = (2, 3);
/// Strict default of `emptySearchSweep`: warn after 4 searches with one empty answer,
/// block after 7 (the 8th search of a sweep).
pub const DEFAULT_EMPTY_SEARCH_SWEEP: (u64, u64) = (4, 7);
/// Strict default of `unrunnableCommands`: warn after 2 commands the shell refused, block
/// after 4.
pub const DEFAULT_UNRUNNABLE_COMMANDS: (u64, u64) = (2, 4);
/// Strict default of `errorCascade`: warn after 6 failures in a row across tools, block
/// after 10.
pub const DEFAULT_ERROR_CASCADE: (u64, u64) = (6, 10);
/// Strict default of `changingCountsSameCall`: warn after 3 runs of one changing call whose
/// answers differ only in numbers, block after 5 (the 6th run).
pub const DEFAULT_CHANGING_COUNTS: (u64, u64) = (3, 5);
/// Strict default of `loopAcrossCompactions`: block when the loop resumes after its 2nd
/// compaction.
pub const DEFAULT_COMPACTIONS: u64 = 2;

/// The resolved extra detectors; part of [`super::Policy`] (`policy.extra`).
///
/// ```
/// use loopguard_core::{DetectorProfile, ExtraPolicy, Policy};
/// let policy = Policy::enabled().with_extra(ExtraPolicy::strict());
/// assert_eq!(policy.extra.profile, DetectorProfile::Strict);
/// assert!(policy.extra.failure_streak.enabled);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtraPolicy {
    /// The profile that was chosen.
    pub profile: DetectorProfile,
    /// `identical_failure_streak`.
    pub failure_streak: ExtraDetector,
    /// `identical_outcome_streak`.
    pub outcome_streak: ExtraDetector,
    /// `error_despite_changing_args`.
    pub error_changing_args: ExtraDetector,
    /// `argument_churn` (`window`, `max_variants`; warning only).
    pub argument_churn: ExtraDetector,
    /// `loop_across_compactions` (`block_at` = compactions survived).
    pub loop_across_compactions: ExtraDetector,
    /// `second_critical_abort`.
    pub second_critical: ExtraDetector,
    /// `near_repeat_no_progress` (`similarity_pct`).
    pub near_repeat: ExtraDetector,
    /// `no_progress_cycle`.
    pub cycle: ExtraDetector,
    /// `same_call_changing_error`.
    pub changing_error: ExtraDetector,
    /// `empty_search_sweep`.
    pub empty_search_sweep: ExtraDetector,
    /// `unrunnable_commands`.
    pub unrunnable_commands: ExtraDetector,
    /// `error_cascade`.
    pub error_cascade: ExtraDetector,
    /// `same_call_changing_counts`.
    pub changing_counts: ExtraDetector,
    /// A call blocked in enforce mode counts toward the streak it was blocked for, as if
    /// it had run and got the same answer again (OpenClaw's newest behaviour): a model
    /// retrying a blocked call escalates instead of meeting the same block forever.
    /// Strict: `true`; it needs one of the outcome-ledger detectors on.
    pub count_vetoes: bool,
}

impl Default for ExtraPolicy {
    /// The `openclaw` profile: every extra detector off.
    fn default() -> Self {
        LoopguardConfig::default().resolve()
    }
}

impl ExtraPolicy {
    /// The `strict` profile with its defaults.
    ///
    /// ```
    /// use loopguard_core::ExtraPolicy;
    /// assert!(ExtraPolicy::strict().any());
    /// assert!(!ExtraPolicy::default().any());
    /// ```
    pub fn strict() -> Self {
        LoopguardConfig {
            profile: Some(DetectorProfile::Strict),
            ..Default::default()
        }
        .resolve()
    }

    /// `true` when at least one extra detector runs.
    pub fn any(&self) -> bool {
        self.failure_streak.enabled
            || self.outcome_streak.enabled
            || self.error_changing_args.enabled
            || self.argument_churn.enabled
            || self.loop_across_compactions.enabled
            || self.second_critical.enabled
            || self.error_cascade.enabled
            || self.drift()
    }

    /// `true` when a drift detector (near repeat, cycle, changing error, empty search
    /// sweep, unrunnable commands, changing counts) runs: the ledger then keeps normalised
    /// sketches of calls and outcomes.
    pub fn drift(&self) -> bool {
        self.near_repeat.enabled
            || self.cycle.enabled
            || self.changing_error.enabled
            || self.empty_search_sweep.enabled
            || self.unrunnable_commands.enabled
            || self.changing_counts.enabled
    }

    /// The count at which `detector` (one of [`crate::Detector::EXTRA`]) starts warning;
    /// warnings are shown from there, once per ten more (the warning buckets of
    /// decisions.md item 9).
    pub fn warn_at(&self, detector: crate::Detector) -> Option<u64> {
        use crate::Detector as D;
        Some(match detector {
            D::IdenticalFailureStreak => self.failure_streak.warn_at,
            D::IdenticalOutcomeStreak => self.outcome_streak.warn_at,
            D::ErrorDespiteChangingArgs => self.error_changing_args.warn_at,
            D::ArgumentChurn => self.argument_churn.warn_at,
            D::NearRepeat => self.near_repeat.warn_at,
            D::NoProgressCycle => self.cycle.warn_at,
            D::ChangingErrorSameCall => self.changing_error.warn_at,
            D::EmptySearchSweep => self.empty_search_sweep.warn_at,
            D::UnrunnableCommands => self.unrunnable_commands.warn_at,
            D::ErrorCascade => self.error_cascade.warn_at,
            D::ChangingCountsSameCall => self.changing_counts.warn_at,
            _ => return None,
        })
    }

    /// `true` when a detector needs the outcome ledger.
    pub(crate) fn records_outcomes(&self) -> bool {
        self.failure_streak.enabled
            || self.outcome_streak.enabled
            || self.error_changing_args.enabled
            || self.argument_churn.enabled
            || self.loop_across_compactions.enabled
            || self.error_cascade.enabled
            || self.drift()
    }
}

fn count(v: Option<f64>, default: u64) -> u64 {
    let n = as_positive_int(v, default as f64);
    if n >= u64::MAX as f64 {
        u64::MAX
    } else {
        n as u64
    }
}

/// A count that may be `0` ("never"): `blockAt: 0` makes a detector warn-only.
fn count_or_zero(v: Option<f64>, default: u64) -> u64 {
    match v {
        Some(0.0) => 0,
        other => count(other, default),
    }
}

impl LoopguardConfig {
    /// Merges a per-agent block over the global one, field by field (as
    /// [`super::LoopDetectionConfig::merge`] does for OpenClaw's block).
    ///
    /// ```
    /// use loopguard_core::{LoopguardConfig, DetectorProfile};
    /// let g = LoopguardConfig { profile: Some(DetectorProfile::Strict), ..Default::default() };
    /// let a = LoopguardConfig::default();
    /// let m = LoopguardConfig::merge(Some(&g), Some(&a)).unwrap();
    /// assert_eq!(m.profile, Some(DetectorProfile::Strict));
    /// ```
    pub fn merge(global: Option<&Self>, agent: Option<&Self>) -> Option<Self> {
        let (g, a) = match (global, agent) {
            (None, None) => return None,
            (Some(x), None) | (None, Some(x)) => return Some(x.clone()),
            (Some(g), Some(a)) => (g, a),
        };
        let m = |gx: &Option<ExtraDetectorConfig>, ax: &Option<ExtraDetectorConfig>| {
            ExtraDetectorConfig::merge(gx.as_ref(), ax.as_ref())
        };
        Some(LoopguardConfig {
            profile: a.profile.or(g.profile),
            identical_failure_streak: m(&g.identical_failure_streak, &a.identical_failure_streak),
            identical_outcome_streak: m(&g.identical_outcome_streak, &a.identical_outcome_streak),
            error_despite_changing_args: m(
                &g.error_despite_changing_args,
                &a.error_despite_changing_args,
            ),
            argument_churn: m(&g.argument_churn, &a.argument_churn),
            loop_across_compactions: m(&g.loop_across_compactions, &a.loop_across_compactions),
            second_critical_abort: m(&g.second_critical_abort, &a.second_critical_abort),
            near_repeat: m(&g.near_repeat, &a.near_repeat),
            no_progress_cycle: m(&g.no_progress_cycle, &a.no_progress_cycle),
            changing_error_same_call: m(&g.changing_error_same_call, &a.changing_error_same_call),
            empty_search_sweep: m(&g.empty_search_sweep, &a.empty_search_sweep),
            unrunnable_commands: m(&g.unrunnable_commands, &a.unrunnable_commands),
            error_cascade: m(&g.error_cascade, &a.error_cascade),
            changing_counts_same_call: m(
                &g.changing_counts_same_call,
                &a.changing_counts_same_call,
            ),
            count_vetoes: a.count_vetoes.or(g.count_vetoes),
            on_critical: a.on_critical.or(g.on_critical),
            budgets: super::Budgets::merge(g.budgets.as_ref(), a.budgets.as_ref()),
            alerts: a.alerts.clone().or_else(|| g.alerts.clone()),
        })
    }

    /// The resolved ladder and budgets.
    pub fn escalation(&self) -> super::Escalation {
        super::Escalation {
            on_critical: self.on_critical.unwrap_or_default(),
            budgets: self.budgets.clone().unwrap_or_default(),
        }
    }

    /// The resolved settings. Numbers that are not positive integers fall back to the
    /// strict defaults (as OpenClaw's own numbers do); `blockAt: 0` means "never block".
    pub fn resolve(&self) -> ExtraPolicy {
        let profile = self.profile.unwrap_or_default();
        let on = |c: &Option<ExtraDetectorConfig>| {
            c.as_ref()
                .and_then(|c| c.enabled)
                .unwrap_or(profile == DetectorProfile::Strict)
        };
        let thresholds = |c: &Option<ExtraDetectorConfig>, (w, b): (u64, u64)| {
            let mut d = ExtraDetector::off(
                count_or_zero(c.as_ref().and_then(|c| c.warn_at), w),
                count_or_zero(c.as_ref().and_then(|c| c.block_at), b),
            );
            d.enabled = on(c);
            d
        };
        let mut churn = ExtraDetector::off(0, 0);
        churn.enabled = on(&self.argument_churn);
        let ac = self.argument_churn.as_ref();
        churn.window = count(ac.and_then(|c| c.window), DEFAULT_ARGUMENT_CHURN.0).max(2);
        churn.max_variants = count(ac.and_then(|c| c.max_variants), DEFAULT_ARGUMENT_CHURN.1);
        churn.warn_at = churn.window;
        churn.block_at = count_or_zero(ac.and_then(|c| c.block_at), DEFAULT_ARGUMENT_CHURN_BLOCK);
        if churn.block_at > 0 {
            churn.block_at = churn.block_at.max(churn.window);
        }
        let mut near_repeat = thresholds(&self.near_repeat, DEFAULT_NEAR_REPEAT);
        let sim = self
            .near_repeat
            .as_ref()
            .and_then(|c| c.similarity)
            .filter(|x| x.is_finite() && *x > 0.0 && *x <= 1.0)
            .unwrap_or(DEFAULT_NEAR_REPEAT_SIMILARITY);
        near_repeat.similarity_pct = (sim * 100.0).round() as u64;
        let mut ledger = ExtraDetector::off(
            0,
            count(
                self.loop_across_compactions
                    .as_ref()
                    .and_then(|c| c.block_at),
                DEFAULT_COMPACTIONS,
            ),
        );
        ledger.enabled = on(&self.loop_across_compactions);
        let mut second = ExtraDetector::off(0, 2);
        second.enabled = on(&self.second_critical_abort);
        ExtraPolicy {
            profile,
            failure_streak: thresholds(&self.identical_failure_streak, DEFAULT_FAILURE_STREAK),
            outcome_streak: thresholds(&self.identical_outcome_streak, DEFAULT_OUTCOME_STREAK),
            error_changing_args: thresholds(
                &self.error_despite_changing_args,
                DEFAULT_ERROR_CHANGING_ARGS,
            ),
            argument_churn: churn,
            loop_across_compactions: ledger,
            second_critical: second,
            near_repeat,
            cycle: thresholds(&self.no_progress_cycle, DEFAULT_CYCLE),
            changing_error: thresholds(&self.changing_error_same_call, DEFAULT_CHANGING_ERROR),
            empty_search_sweep: thresholds(&self.empty_search_sweep, DEFAULT_EMPTY_SEARCH_SWEEP),
            unrunnable_commands: thresholds(&self.unrunnable_commands, DEFAULT_UNRUNNABLE_COMMANDS),
            error_cascade: thresholds(&self.error_cascade, DEFAULT_ERROR_CASCADE),
            changing_counts: thresholds(&self.changing_counts_same_call, DEFAULT_CHANGING_COUNTS),
            count_vetoes: self
                .count_vetoes
                .unwrap_or(profile == DetectorProfile::Strict),
        }
    }

    /// The block of `detectors.<key>` (one of [`EXTRA_DETECTOR_KEYS`]).
    pub fn detector_mut(&mut self, key: &str) -> Option<&mut Option<ExtraDetectorConfig>> {
        Some(match key {
            "identicalFailureStreak" => &mut self.identical_failure_streak,
            "identicalOutcomeStreak" => &mut self.identical_outcome_streak,
            "errorDespiteChangingArgs" => &mut self.error_despite_changing_args,
            "argumentChurn" => &mut self.argument_churn,
            "loopAcrossCompactions" => &mut self.loop_across_compactions,
            "secondCriticalAbort" => &mut self.second_critical_abort,
            "nearRepeat" => &mut self.near_repeat,
            "noProgressCycle" => &mut self.no_progress_cycle,
            "changingErrorSameCall" => &mut self.changing_error_same_call,
            "emptySearchSweep" => &mut self.empty_search_sweep,
            "unrunnableCommands" => &mut self.unrunnable_commands,
            "errorCascade" => &mut self.error_cascade,
            "changingCountsSameCall" => &mut self.changing_counts_same_call,
            _ => return None,
        })
    }
}

/// The numeric keys each extra detector accepts.
pub(crate) fn detector_number_keys(key: &str) -> &'static [&'static str] {
    match key {
        "argumentChurn" => &["window", "maxVariants", "blockAt"],
        "nearRepeat" => &["warnAt", "blockAt", "similarity"],
        "loopAcrossCompactions" => &["blockAt"],
        "secondCriticalAbort" => &[],
        _ => &["warnAt", "blockAt"],
    }
}

/// The strict default of `detectors.<key>.<field>`, for messages about fallbacks.
pub(crate) fn extra_default(key: &str, field: &str) -> f64 {
    let (w, b) = match key {
        "identicalFailureStreak" => DEFAULT_FAILURE_STREAK,
        "identicalOutcomeStreak" => DEFAULT_OUTCOME_STREAK,
        "errorDespiteChangingArgs" => DEFAULT_ERROR_CHANGING_ARGS,
        "argumentChurn" if field == "blockAt" => return DEFAULT_ARGUMENT_CHURN_BLOCK as f64,
        "argumentChurn" => DEFAULT_ARGUMENT_CHURN,
        "nearRepeat" if field == "similarity" => return DEFAULT_NEAR_REPEAT_SIMILARITY,
        "nearRepeat" => DEFAULT_NEAR_REPEAT,
        "noProgressCycle" => DEFAULT_CYCLE,
        "changingErrorSameCall" => DEFAULT_CHANGING_ERROR,
        "emptySearchSweep" => DEFAULT_EMPTY_SEARCH_SWEEP,
        "unrunnableCommands" => DEFAULT_UNRUNNABLE_COMMANDS,
        "errorCascade" => DEFAULT_ERROR_CASCADE,
        "changingCountsSameCall" => DEFAULT_CHANGING_COUNTS,
        _ => (0, DEFAULT_COMPACTIONS),
    };
    match field {
        "warnAt" | "window" => w as f64,
        _ => b as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openclaw_profile_is_all_off_and_strict_all_on() {
        let off = LoopguardConfig::default().resolve();
        assert!(!off.any());
        let strict = ExtraPolicy::strict();
        assert!(strict.failure_streak.enabled && strict.outcome_streak.enabled);
        assert!(strict.error_changing_args.enabled && strict.argument_churn.enabled);
        assert!(strict.loop_across_compactions.enabled && strict.second_critical.enabled);
        assert!(
            strict.near_repeat.enabled && strict.cycle.enabled && strict.changing_error.enabled
        );
        assert_eq!(strict.near_repeat.similarity_pct, 60);
        assert_eq!(strict.argument_churn.block_at, DEFAULT_ARGUMENT_CHURN_BLOCK);
    }

    #[test]
    fn a_single_detector_can_be_switched_on_or_off() {
        let mut one = LoopguardConfig::default();
        *one.detector_mut("argumentChurn").unwrap() = Some(ExtraDetectorConfig {
            enabled: Some(true),
            ..Default::default()
        });
        let r = one.resolve();
        assert!(r.argument_churn.enabled && !r.failure_streak.enabled);
        let mut strict_but = LoopguardConfig {
            profile: Some(DetectorProfile::Strict),
            ..Default::default()
        };
        *strict_but.detector_mut("secondCriticalAbort").unwrap() = Some(ExtraDetectorConfig {
            enabled: Some(false),
            ..Default::default()
        });
        let r = strict_but.resolve();
        assert!(!r.second_critical.enabled && r.failure_streak.enabled);
    }

    #[test]
    fn numbers_fall_back_and_zero_block_means_never() {
        let cfg = LoopguardConfig {
            profile: Some(DetectorProfile::Strict),
            identical_failure_streak: Some(ExtraDetectorConfig {
                warn_at: Some(2.5),
                block_at: Some(0.0),
                ..Default::default()
            }),
            ..Default::default()
        };
        let r = cfg.resolve();
        assert_eq!(r.failure_streak.warn_at, DEFAULT_FAILURE_STREAK.0);
        assert_eq!(r.failure_streak.block_at, 0);
    }

    #[test]
    fn agent_blocks_merge_field_by_field() {
        let g = LoopguardConfig {
            profile: Some(DetectorProfile::Strict),
            identical_failure_streak: Some(ExtraDetectorConfig {
                warn_at: Some(2.0),
                block_at: Some(9.0),
                ..Default::default()
            }),
            ..Default::default()
        };
        let a = LoopguardConfig {
            identical_failure_streak: Some(ExtraDetectorConfig {
                block_at: Some(4.0),
                ..Default::default()
            }),
            ..Default::default()
        };
        let r = LoopguardConfig::merge(Some(&g), Some(&a))
            .unwrap()
            .resolve();
        assert_eq!(
            (r.failure_streak.warn_at, r.failure_streak.block_at),
            (2, 4)
        );
        assert_eq!(r.profile, DetectorProfile::Strict);
    }
}
