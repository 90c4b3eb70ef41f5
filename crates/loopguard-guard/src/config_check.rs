//! The report of `loopguard config check`: a config's diagnostics, the advice notes of
//! every policy it gives ([`crate::advice`]), and the effective settings of each agent with
//! where each value came from. A pure function of the config text; the binary prints it.
//!
//! ```
//! use loopguard_guard::config_check::check_config;
//! let text = "{ tools: { loopDetection: { enabled: true, warningThreshold: 8, criticalThreshold: 16 } } }";
//! let report = check_config("openclaw.json5", text, None, false);
//! assert!(report.settings.starts_with("global (tools.loopDetection; agents without an entry)\n"));
//! assert!(report.settings.contains("  warningThreshold: 8  (global)\n"));
//! // A warning threshold below 10: warnings the model never sees.
//! assert_eq!((report.errors, report.warnings), (0, 1));
//! assert!(report.notes[0].starts_with("openclaw.json5: warning: global"), "{}", report.notes[0]);
//! assert_eq!(report.verdict.as_deref(), Some("openclaw.json5: ok, 1 warning(s)"));
//! // With `strict`, warnings are errors.
//! assert!(check_config("openclaw.json5", text, None, true).failed());
//! ```

use std::fmt::Write as _;

use loopguard_core::{
    as_positive_int, LoopDetectionConfig, OpenClawConfig, Policy, RunConfigError, Severity,
    DEFAULT_CRITICAL_THRESHOLD, DEFAULT_GLOBAL_CIRCUIT_BREAKER_THRESHOLD, DEFAULT_HISTORY_SIZE,
    DEFAULT_UNKNOWN_TOOL_THRESHOLD, DEFAULT_WARNING_THRESHOLD,
};

/// What [`check_config`] found: lines for stderr, the settings for stdout, and the verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigCheck {
    /// Lines for stderr, in order: the loader's diagnostics
    /// (`NAME:LINE:COL: SEVERITY: PATH: MESSAGE`), then where a policy protects less than it
    /// looks (`NAME: warning: TITLE: NOTE`); a config that cannot be read gives one line,
    /// `NAME: error: WHY`.
    pub notes: Vec<String>,
    /// The effective settings of the global block and each agent (or of the one agent asked
    /// for), newline-terminated lines for stdout; empty when the config cannot be read.
    pub settings: String,
    /// The last line, for stderr after the settings: `NAME: ok, W warning(s)` or
    /// `NAME: E error(s), W warning(s)`. `None` when the config cannot be read.
    pub verdict: Option<String>,
    /// Errors counted (warnings among them with `strict`).
    pub errors: usize,
    /// Warnings counted.
    pub warnings: usize,
}

impl ConfigCheck {
    /// `true` when the config has errors (or cannot be read): `config check` fails.
    pub fn failed(&self) -> bool {
        self.errors > 0
    }
}

/// A config read for running (`--config` of `replay`, `mcp` and `serve`) with the engine's
/// run-time loader ([`OpenClawConfig::load_for_run`]): what to say about it, and the config
/// or why it is refused.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RunConfig {
    /// Lines for stderr, each `NAME: DIAGNOSTIC`: the values that fell back to their
    /// defaults and the thresholds raised (a config that runs), or every problem OpenClaw
    /// refuses to start with (a config that is refused).
    pub notes: Vec<String>,
    /// The config, or why it is refused (printed after the notes).
    pub result: Result<OpenClawConfig, ConfigRefused>,
}

/// Why a config cannot be run: one line naming the file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigRefused(String);

/// Reads the OpenClaw config `text`, named `name`, for running (not checking): unknown keys
/// and text that is not JSON5 refuse it; a numeric value that is not a positive integer
/// falls back to its default and, like an auto-raised threshold, is noted.
///
/// ```
/// use loopguard_guard::config_check::config_for_run;
/// let run = config_for_run("c.json5", "{ tools: { loopDetection: { enabled: true } } }");
/// assert!(run.notes.is_empty() && run.result.is_ok());
/// let run = config_for_run("c.json5", "{ tools: { loopDetection: { enabeld: true } } }");
/// assert_eq!(
///     run.result.unwrap_err().to_string(),
///     "c.json5: OpenClaw would reject this config; run `loopguard config check c.json5` for details"
/// );
/// assert!(run.notes[0].starts_with("c.json5: "), "{:?}", run.notes);
/// ```
pub fn config_for_run(name: &str, text: &str) -> RunConfig {
    match OpenClawConfig::load_for_run(text) {
        Ok(loaded) => RunConfig {
            notes: loaded
                .diagnostics
                .iter()
                .map(|d| format!("{name}: {d}"))
                .collect(),
            result: Ok(loaded.config),
        },
        Err(RunConfigError::Rejected(fatal)) => RunConfig {
            notes: fatal.iter().map(|d| format!("{name}: {d}")).collect(),
            result: Err(ConfigRefused(format!(
                "{name}: OpenClaw would reject this config; run `loopguard config check {name}` for details"
            ))),
        },
        Err(e) => RunConfig {
            notes: Vec::new(),
            result: Err(ConfigRefused(format!("{name}: {e}"))),
        },
    }
}

/// Checks the OpenClaw config `text`, named `name` in every line: its diagnostics, and the
/// effective settings of `agent` (`None`: the global block and every `agents.list` entry).
/// With `strict`, warnings (auto-raised thresholds, fallbacks, ignored entries, weak
/// protection) count as errors.
pub fn check_config(name: &str, text: &str, agent: Option<&str>, strict: bool) -> ConfigCheck {
    let loaded = match OpenClawConfig::from_json5(text) {
        Ok(l) => l,
        Err(e) => {
            return ConfigCheck {
                notes: vec![format!("{name}: error: {e}")],
                settings: String::new(),
                verdict: None,
                errors: 1,
                warnings: 0,
            }
        }
    };
    let mut errors = 0;
    let mut warnings = 0;
    let mut notes = Vec::new();
    for d in &loaded.diagnostics {
        let severity = if strict { Severity::Error } else { d.severity };
        match severity {
            Severity::Error => errors += 1,
            Severity::Warning => warnings += 1,
        }
        let tag = if strict && d.severity == Severity::Warning {
            "error (strict)".to_string()
        } else {
            d.severity.to_string()
        };
        notes.push(format!(
            "{name}:{}:{}: {tag}: {}: {}",
            d.pos.line, d.pos.col, d.path, d.message
        ));
    }

    let cfg = &loaded.config;
    let mut out = String::new();
    // Where protection is weaker than it looks (detectors off, warnings the model never
    // sees): warnings, so `strict` makes them errors.
    let mut weak = |title: &str, agent: Option<&str>| {
        for note in crate::advice::policy_notes(&cfg.policy_for(agent)) {
            if strict {
                errors += 1;
                notes.push(format!("{name}: error (strict): {title}: {note}"));
            } else {
                warnings += 1;
                notes.push(format!("{name}: warning: {title}: {note}"));
            }
        }
        for (severity, note) in shipped_ignored(cfg, agent) {
            match severity {
                Severity::Error => {
                    errors += 1;
                    notes.push(format!("{name}: error: {title}: {note}"));
                }
                Severity::Warning if strict => {
                    errors += 1;
                    notes.push(format!("{name}: error (strict): {title}: {note}"));
                }
                Severity::Warning => {
                    warnings += 1;
                    notes.push(format!("{name}: warning: {title}: {note}"));
                }
            }
        }
    };
    match agent {
        Some(id) => {
            let entry = cfg.agents.iter().position(|a| {
                loopguard_core::normalize_agent_id(&a.id) == loopguard_core::normalize_agent_id(id)
            });
            let title = match entry {
                Some(i) => format!("agent {:?} (agents.list[{i}])", cfg.agents[i].id),
                None => format!("agent {id:?} (no agents.list entry: the global block applies)"),
            };
            describe(&mut out, &title, cfg, Some(id));
            weak(&title, Some(id));
        }
        None => {
            let title = "global (tools.loopDetection; agents without an entry)";
            describe(&mut out, title, cfg, None);
            weak(title, None);
            for (i, a) in cfg.agents.iter().enumerate() {
                let _ = writeln!(out);
                let title = format!("agent {:?} (agents.list[{i}])", a.id);
                describe(&mut out, &title, cfg, Some(&a.id));
                weak(&title, Some(&a.id));
            }
        }
    }
    let verdict = if errors > 0 {
        format!("{name}: {errors} error(s), {warnings} warning(s)")
    } else {
        format!("{name}: ok, {warnings} warning(s)")
    };
    ConfigCheck {
        notes,
        settings: out,
        verdict: Some(verdict),
        errors,
        warnings,
    }
}

const SHIPPED: &str = "openclaw-2026.9.6";

/// The `tools.loopDetection` settings the `openclaw-2026.9.6` profile does not read (the
/// release reads `enabled` alone), each with its JSON path under the block and what the
/// release does instead.
fn shipped_fixed(c: &LoopDetectionConfig) -> Vec<(&'static str, String)> {
    use loopguard_core::openclaw_2026_9_6 as r;
    let mut out = Vec::new();
    let mut num = |set: Option<f64>, key: &'static str, fixed: String| {
        if set.is_some() {
            out.push((key, format!("it uses {fixed}")));
        }
    };
    num(c.history_size, "historySize", r::HISTORY_SIZE.to_string());
    num(
        c.warning_threshold,
        "warningThreshold",
        r::WARNING_THRESHOLD.to_string(),
    );
    num(
        c.critical_threshold,
        "criticalThreshold",
        r::CRITICAL_THRESHOLD.to_string(),
    );
    num(
        c.global_circuit_breaker_threshold,
        "globalCircuitBreakerThreshold",
        r::GLOBAL_CIRCUIT_BREAKER_THRESHOLD.to_string(),
    );
    num(
        c.unknown_tool_threshold,
        "unknownToolThreshold",
        r::UNKNOWN_TOOL_THRESHOLD.to_string(),
    );
    num(
        c.post_compaction_guard.as_ref().and_then(|p| p.window_size),
        "postCompactionGuard.windowSize",
        r::WINDOW_SIZE.to_string(),
    );
    if let Some(d) = &c.detectors {
        for (set, key) in [
            (d.generic_repeat, "detectors.genericRepeat"),
            (d.known_poll_no_progress, "detectors.knownPollNoProgress"),
            (d.ping_pong, "detectors.pingPong"),
        ] {
            if set.is_some() {
                out.push((key, "it runs every detector".to_string()));
            }
        }
    }
    out
}

/// The entries of `loopguard.detectors` that are set in `l`, by key.
fn extra_detectors_set(l: &loopguard_core::LoopguardConfig) -> Vec<&'static str> {
    let fields = [
        &l.identical_failure_streak,
        &l.identical_outcome_streak,
        &l.error_despite_changing_args,
        &l.argument_churn,
        &l.loop_across_compactions,
        &l.second_critical_abort,
        &l.near_repeat,
        &l.no_progress_cycle,
        &l.changing_error_same_call,
    ];
    loopguard_core::EXTRA_DETECTOR_KEYS
        .iter()
        .zip(fields)
        .filter(|(_, f)| f.is_some())
        .map(|(k, _)| *k)
        .collect()
}

/// What the `openclaw-2026.9.6` profile silently ignores in the config of the global block
/// (`agent` `None`) or of one `agents.list` entry, when that scope runs the profile:
///
/// - `tools.loopDetection` settings other than `enabled` (the release fixes them): warnings,
///   since OpenClaw 2026.9.6 accepts and ignores the same keys, so a config shared with
///   that host may carry them on purpose;
/// - `loopguard.detectors` entries: errors, since they are loopguard's own keys, which only
///   ask for detectors the release does not have, and the profile runs the release byte for
///   byte: the config asks for protection it does not get.
///
/// An agent's scope reports its own entry's keys (the global block's are reported with the
/// global scope, and under another profile they apply to other agents).
fn shipped_ignored(cfg: &OpenClawConfig, agent: Option<&str>) -> Vec<(Severity, String)> {
    if cfg.policy_for(agent).extra.profile != loopguard_core::DetectorProfile::OpenClaw2026_9_6 {
        return Vec::new();
    }
    let (block, extension, prefix) = match agent {
        None => (
            cfg.loop_detection.as_ref(),
            cfg.loopguard.as_ref(),
            String::new(),
        ),
        Some(id) => {
            let Some(i) = cfg.agents.iter().position(|a| {
                loopguard_core::normalize_agent_id(&a.id) == loopguard_core::normalize_agent_id(id)
            }) else {
                return Vec::new();
            };
            let a = &cfg.agents[i];
            (
                a.loop_detection.as_ref(),
                a.loopguard.as_ref(),
                format!("agents.list[{i}]."),
            )
        }
    };
    let mut out = Vec::new();
    for (key, fixed) in block.map(shipped_fixed).unwrap_or_default() {
        out.push((
            Severity::Warning,
            format!("{prefix}tools.loopDetection.{key} is ignored under profile {SHIPPED}: the release reads only enabled ({fixed})"),
        ));
    }
    for key in extension.map(extra_detectors_set).unwrap_or_default() {
        out.push((
            Severity::Error,
            format!("{prefix}loopguard.detectors.{key} is ignored under profile {SHIPPED}: the release has no such detector and the profile runs the release byte for byte; remove it, or choose profile strict or openclaw"),
        ));
    }
    out
}

/// Where a field's value came from.
fn source(agent: Option<bool>, global: Option<bool>) -> &'static str {
    match (agent, global) {
        (Some(true), _) => "agent",
        (_, Some(true)) => "global",
        _ => "default",
    }
}

fn describe(out: &mut String, title: &str, cfg: &OpenClawConfig, agent: Option<&str>) {
    let policy: Policy = cfg.policy_for(agent);
    let r = &policy.resolved;
    let global = cfg.loop_detection.clone().unwrap_or_default();
    let own = agent
        .and_then(|a| cfg.agent(a))
        .and_then(|a| a.loop_detection.clone())
        .unwrap_or_default();
    let merged = policy.block.clone().unwrap_or_default();
    let _ = writeln!(out, "{title}");
    let num = loopguard_core::json::format_js_number;
    let src_num = |f: fn(&LoopDetectionConfig) -> Option<f64>| {
        source(f(&own).map(|_| true), f(&global).map(|_| true))
    };
    let note = |field: Option<f64>, used: f64, default: f64, src: &'static str| -> String {
        match field {
            Some(v) if as_positive_int(Some(v), default) != v => {
                // Wrong types are kept as NaN so that they still override in a merge.
                let why = if v.is_nan() {
                    "not a number".to_string()
                } else {
                    format!("{} is not a positive integer", num(v))
                };
                if used == default {
                    format!("({src}: {why}; default used)")
                } else {
                    format!(
                        "({src}: {why}; default {} used, raised to {})",
                        num(default),
                        num(used)
                    )
                }
            }
            // Sizes are held in machine integers; a larger setting saturates, which changes
            // nothing in practice.
            Some(v) if v > used && used >= f64::from(u32::MAX) => {
                format!("({src}; beyond anything a session reaches: effectively unlimited)")
            }
            Some(v) if v != used => format!("({src}: {} raised)", num(v)),
            Some(_) => format!("({src})"),
            None if used != default => format!("(raised from default {})", num(default)),
            None => "(default)".to_string(),
        }
    };
    let _ = writeln!(
        out,
        "  enabled: {}  ({}; rolling-history detectors {})",
        r.enabled,
        source(own.enabled.map(|_| true), global.enabled.map(|_| true)),
        if r.enabled { "on" } else { "off" }
    );
    // A saturated size is shown as it was written.
    let size_shown = |field: Option<f64>, used: f64| match field {
        Some(v) if v.is_finite() && v.fract() == 0.0 && v > used => num(v),
        _ => num(used),
    };
    type Field = fn(&LoopDetectionConfig) -> Option<f64>;
    let numeric: [(&str, Field, f64, f64); 5] = [
        (
            "historySize",
            |c| c.history_size,
            r.history_size as f64,
            DEFAULT_HISTORY_SIZE as f64,
        ),
        (
            "warningThreshold",
            |c| c.warning_threshold,
            r.warning_threshold,
            DEFAULT_WARNING_THRESHOLD,
        ),
        (
            "criticalThreshold",
            |c| c.critical_threshold,
            r.critical_threshold,
            DEFAULT_CRITICAL_THRESHOLD,
        ),
        (
            "globalCircuitBreakerThreshold",
            |c| c.global_circuit_breaker_threshold,
            r.global_circuit_breaker_threshold,
            DEFAULT_GLOBAL_CIRCUIT_BREAKER_THRESHOLD,
        ),
        (
            "unknownToolThreshold",
            |c| c.unknown_tool_threshold,
            r.unknown_tool_threshold,
            DEFAULT_UNKNOWN_TOOL_THRESHOLD,
        ),
    ];
    for (name, field, used, default) in numeric {
        let _ = writeln!(
            out,
            "  {name}: {}  {}",
            size_shown(field(&merged), used),
            note(field(&merged), used, default, src_num(field))
        );
    }
    let det = |f: fn(&LoopDetectionConfig) -> Option<bool>| {
        source(f(&own).map(|_| true), f(&global).map(|_| true))
    };
    let _ = writeln!(
        out,
        "  detectors: genericRepeat={} ({}), knownPollNoProgress={} ({}), pingPong={} ({})",
        r.generic_repeat,
        det(|c| c.detectors.as_ref().and_then(|d| d.generic_repeat)),
        r.known_poll_no_progress,
        det(|c| c.detectors.as_ref().and_then(|d| d.known_poll_no_progress)),
        r.ping_pong,
        det(|c| c.detectors.as_ref().and_then(|d| d.ping_pong)),
    );
    let window_field = merged
        .post_compaction_guard
        .as_ref()
        .and_then(|p| p.window_size);
    let window_used = f64::from(policy.guard.window_size);
    let _ = writeln!(
        out,
        "  postCompactionGuard: {}, windowSize={} {}",
        if policy.guard.enabled {
            "on"
        } else {
            "off (enabled: false)"
        },
        size_shown(window_field, window_used),
        note(
            window_field,
            window_used,
            f64::from(loopguard_core::DEFAULT_WINDOW_SIZE),
            src_num(|c| c.post_compaction_guard.as_ref().and_then(|p| p.window_size))
        )
    );
    describe_loopguard(out, cfg, agent, &policy);
}

/// loopguard's own block: the profile and each extra detector, with where it came from.
fn describe_loopguard(
    out: &mut String,
    cfg: &OpenClawConfig,
    agent: Option<&str>,
    policy: &Policy,
) {
    let extra = &policy.extra;
    let own = agent
        .and_then(|a| cfg.agent(a))
        .and_then(|a| a.loopguard.clone())
        .unwrap_or_default();
    let global = cfg.loopguard.clone().unwrap_or_default();
    let profile_src = source(own.profile.map(|_| true), global.profile.map(|_| true));
    let _ = writeln!(
        out,
        "  loopguard profile: {}  ({profile_src}){}",
        extra.profile.as_str(),
        if !extra.any() {
            "; no extra detectors"
        } else if !policy.resolved.enabled {
            "; extra detectors need enabled: true"
        } else {
            ""
        }
    );
    let escalation = &policy.escalation;
    if !escalation.is_default() {
        // Said only when set, so the report of every other config is as it was.
        let b = &escalation.budgets;
        let mut caps: Vec<String> = [
            ("callsPerRun", b.calls_per_run.map(|n| n.to_string())),
            (
                "callsPerSession",
                b.calls_per_session.map(|n| n.to_string()),
            ),
            ("tokensPerRun", b.tokens_per_run.map(|n| n.to_string())),
            ("costPerRun", b.cost_per_run.map(|n| n.to_string())),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}={v}")))
        .collect();
        caps.extend(b.tools.iter().map(|(t, n)| format!("tools.{t}={n}")));
        let caps = if caps.is_empty() {
            "none".to_string()
        } else {
            caps.join(", ")
        };
        let _ = writeln!(
            out,
            "  onCritical: {}; budgets: {caps}",
            escalation.on_critical.as_str()
        );
    }
    if !extra.any() {
        return;
    }
    let show = |d: &loopguard_core::ExtraDetector, numbers: &str| {
        if d.enabled {
            format!("on{numbers}")
        } else {
            "off".to_string()
        }
    };
    let at = |d: &loopguard_core::ExtraDetector| {
        let block = if d.block_at == 0 {
            "never".to_string()
        } else {
            d.block_at.to_string()
        };
        format!(" (warnAt={}, blockAt={block})", d.warn_at)
    };
    let _ = writeln!(
        out,
        "  extra detectors: identicalFailureStreak={}, identicalOutcomeStreak={}, errorDespiteChangingArgs={}",
        show(&extra.failure_streak, &at(&extra.failure_streak)),
        show(&extra.outcome_streak, &at(&extra.outcome_streak)),
        show(&extra.error_changing_args, &at(&extra.error_changing_args)),
    );
    let _ = writeln!(
        out,
        "    argumentChurn={}, loopAcrossCompactions={}, secondCriticalAbort={}",
        show(
            &extra.argument_churn,
            &format!(
                " (window={}, maxVariants={}, blockAt={})",
                extra.argument_churn.window,
                extra.argument_churn.max_variants,
                extra.argument_churn.block_at
            )
        ),
        show(
            &extra.loop_across_compactions,
            &format!(
                " (blockAt={} compactions)",
                extra.loop_across_compactions.block_at
            )
        ),
        show(&extra.second_critical, ""),
    );
    let _ = writeln!(
        out,
        "    nearRepeat={}, noProgressCycle={}, changingErrorSameCall={}",
        show(
            &extra.near_repeat,
            &format!(
                " (warnAt={}, blockAt={}, similarity={})",
                extra.near_repeat.warn_at,
                extra.near_repeat.block_at,
                extra.near_repeat.similarity_pct as f64 / 100.0
            )
        ),
        show(&extra.cycle, &at(&extra.cycle)),
        show(&extra.changing_error, &at(&extra.changing_error)),
    );
    let _ = writeln!(
        out,
        "    emptySearchSweep={}, unrunnableCommands={}, errorCascade={}",
        show(&extra.empty_search_sweep, &at(&extra.empty_search_sweep)),
        show(&extra.unrunnable_commands, &at(&extra.unrunnable_commands)),
        show(&extra.error_cascade, &at(&extra.error_cascade)),
    );
    let _ = writeln!(
        out,
        "    changingCountsSameCall={}",
        show(&extra.changing_counts, &at(&extra.changing_counts)),
    );
    let _ = writeln!(out, "    countVetoes={}", extra.count_vetoes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_critical_and_budgets_are_reported_when_set() {
        let text = r#"{ loopguard: { onCritical: "end-run", budgets: { callsPerRun: 50, tools: { web_fetch: 30 } } },
                        agents: { list: [ { id: "chat", loopguard: { onCritical: "ask" } } ] } }"#;
        let report = check_config("c.json5", text, None, false);
        assert!(
            report
                .settings
                .contains("  onCritical: end-run; budgets: callsPerRun=50, tools.web_fetch=30\n"),
            "{}",
            report.settings
        );
        let report = check_config("c.json5", text, Some("chat"), false);
        assert!(
            report
                .settings
                .contains("  onCritical: ask; budgets: callsPerRun=50, tools.web_fetch=30\n"),
            "{}",
            report.settings
        );
        let plain = check_config("c.json5", "{}", None, false);
        assert!(!plain.settings.contains("onCritical"), "{}", plain.settings);
    }

    #[test]
    fn a_config_that_runs_notes_its_fallbacks() {
        let run = config_for_run(
            "c.json5",
            "{ tools: { loopDetection: { enabled: true, warningThreshold: -1, criticalThreshold: 5 } } }",
        );
        assert_eq!(run.notes.len(), 2, "{:?}", run.notes);
        assert!(run.notes[0].starts_with("c.json5: warning: line 1, column "));
        assert!(run.notes[0].contains("warningThreshold: -1 is not a positive integer"));
        assert!(
            run.notes[1].contains("it is raised to 11"),
            "{:?}",
            run.notes
        );
        let config = run.result.unwrap();
        assert_eq!(config.policy_for(None).resolved.critical_threshold, 11.0);
    }

    #[test]
    fn a_refused_config_names_every_problem_then_the_file() {
        let run = config_for_run(
            "c.json5",
            "{ tools: { loopDetection: { enabeld: true, nope: 1 } } }",
        );
        assert_eq!(run.notes.len(), 2, "{:?}", run.notes);
        assert!(run.notes.iter().all(|n| n.starts_with("c.json5: ")));
        assert!(run.result.is_err());
        let run = config_for_run("c.json5", "{ nope");
        assert!(run.notes.is_empty());
        let e = run.result.unwrap_err().to_string();
        assert!(e.starts_with("c.json5: "), "{e}");
        assert!(!e.contains("loopguard config check"), "{e}");
    }

    #[test]
    fn the_shipped_profile_reports_the_settings_it_ignores() {
        let text = r#"{
          tools: { loopDetection: { enabled: true, historySize: 50, criticalThreshold: 25,
            detectors: { pingPong: false }, postCompactionGuard: { windowSize: 5 } } },
          loopguard: { profile: "openclaw-2026.9.6", detectors: { nearRepeat: true } },
          agents: { list: [
            { id: "ops", tools: { loopDetection: { enabled: false, warningThreshold: 3 } } },
            { id: "doc", tools: { loopDetection: { enabled: true } } },
          ] },
        }"#;
        let report = check_config("c.json5", text, None, false);
        let shipped: Vec<&String> = report
            .notes
            .iter()
            .filter(|n| n.contains("ignored under profile openclaw-2026.9.6"))
            .collect();
        let want = [
            "c.json5: warning: global (tools.loopDetection; agents without an entry): tools.loopDetection.historySize is ignored under profile openclaw-2026.9.6: the release reads only enabled (it uses 30)",
            "c.json5: warning: global (tools.loopDetection; agents without an entry): tools.loopDetection.criticalThreshold is ignored under profile openclaw-2026.9.6: the release reads only enabled (it uses 20)",
            "c.json5: warning: global (tools.loopDetection; agents without an entry): tools.loopDetection.postCompactionGuard.windowSize is ignored under profile openclaw-2026.9.6: the release reads only enabled (it uses 3)",
            "c.json5: warning: global (tools.loopDetection; agents without an entry): tools.loopDetection.detectors.pingPong is ignored under profile openclaw-2026.9.6: the release reads only enabled (it runs every detector)",
            "c.json5: error: global (tools.loopDetection; agents without an entry): loopguard.detectors.nearRepeat is ignored under profile openclaw-2026.9.6: the release has no such detector and the profile runs the release byte for byte; remove it, or choose profile strict or openclaw",
            "c.json5: warning: agent \"ops\" (agents.list[0]): agents.list[0].tools.loopDetection.warningThreshold is ignored under profile openclaw-2026.9.6: the release reads only enabled (it uses 10)",
        ];
        assert_eq!(
            shipped,
            want.iter().collect::<Vec<_>>(),
            "{:#?}",
            report.notes
        );
        // The extra detector is an error: the check fails; with `strict`, the warnings too.
        assert!(report.failed());
        let strict = check_config("c.json5", text, None, true);
        assert!(strict
            .notes
            .iter()
            .any(|n| n.starts_with("c.json5: error (strict): global")
                && n.contains("historySize is ignored")));

        // The same settings under the documented profile are read: nothing is reported.
        let documented = text.replace(r#"profile: "openclaw-2026.9.6""#, r#"profile: "openclaw""#);
        let report = check_config("c.json5", &documented, None, false);
        assert!(
            !report
                .notes
                .iter()
                .any(|n| n.contains("ignored under profile")),
            "{:#?}",
            report.notes
        );
        // Only `enabled` set: nothing to report.
        let report = check_config(
            "c.json5",
            r#"{ tools: { loopDetection: { enabled: true } }, loopguard: { profile: "openclaw-2026.9.6" } }"#,
            None,
            false,
        );
        assert_eq!(
            (report.errors, report.warnings),
            (0, 0),
            "{:#?}",
            report.notes
        );
    }

    #[test]
    fn an_agent_on_the_shipped_profile_reports_its_own_entry_only() {
        let text = r#"{
          tools: { loopDetection: { enabled: true, criticalThreshold: 25 } },
          agents: { list: [ { id: "ops", tools: { loopDetection: { historySize: 40 } },
            loopguard: { profile: "openclaw-2026.9.6", detectors: { identicalFailureStreak: { warnAt: 2 } } } } ] },
        }"#;
        let report = check_config("c.json5", text, Some("ops"), false);
        let shipped: Vec<&String> = report
            .notes
            .iter()
            .filter(|n| n.contains("ignored under profile"))
            .collect();
        assert_eq!(shipped.len(), 2, "{:#?}", report.notes);
        assert!(shipped[0].contains("warning: agent \"ops\" (agents.list[0]): agents.list[0].tools.loopDetection.historySize is ignored"));
        assert!(shipped[1].contains("error: agent \"ops\" (agents.list[0]): agents.list[0].loopguard.detectors.identicalFailureStreak is ignored"));
        // The global block runs the documented profile: its criticalThreshold is read there.
        let global = check_config("c.json5", text, None, false);
        assert!(!global
            .notes
            .iter()
            .any(|n| n.contains("global") && n.contains("ignored under profile")));
    }
}
