//! `loopguard config check`: validate a config and show what each agent gets.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use loopguard_core::{
    as_positive_int, LoopDetectionConfig, OpenClawConfig, Policy, Severity,
    DEFAULT_CRITICAL_THRESHOLD, DEFAULT_GLOBAL_CIRCUIT_BREAKER_THRESHOLD, DEFAULT_HISTORY_SIZE,
    DEFAULT_UNKNOWN_TOOL_THRESHOLD, DEFAULT_WARNING_THRESHOLD,
};

#[derive(clap::Args)]
pub struct CheckArgs {
    /// The OpenClaw config file (JSON5 or JSON).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Show only the effective settings of this agent id.
    #[arg(long, value_name = "ID")]
    agent: Option<String>,
    /// Treat warnings (auto-raised thresholds, fallbacks, ignored entries) as errors.
    #[arg(long)]
    strict: bool,
}

pub fn run(args: CheckArgs) -> Result<ExitCode> {
    let name = args.file.display().to_string();
    let text =
        std::fs::read_to_string(&args.file).with_context(|| format!("cannot read {name}"))?;
    let loaded = match OpenClawConfig::from_json5(&text) {
        Ok(l) => l,
        Err(e) => {
            let _ = errln!("{name}: error: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let mut errors = 0;
    let mut warnings = 0;
    // Print errors are kept until the end: a config with errors fails even when nobody
    // reads the output (a closed pipe only ends a run that was going to succeed).
    let mut printed: std::io::Result<()> = Ok(());
    for d in &loaded.diagnostics {
        let severity = if args.strict {
            Severity::Error
        } else {
            d.severity
        };
        match severity {
            Severity::Error => errors += 1,
            Severity::Warning => warnings += 1,
        }
        let tag = if args.strict && d.severity == Severity::Warning {
            "error (strict)".to_string()
        } else {
            d.severity.to_string()
        };
        printed = printed.and_then(|()| {
            errln!(
                "{name}:{}:{}: {tag}: {}: {}",
                d.pos.line,
                d.pos.col,
                d.path,
                d.message
            )
        });
    }

    let cfg = &loaded.config;
    let mut out = String::new();
    // Where protection is weaker than it looks (detectors off, warnings the model never
    // sees): warnings, so --strict makes them errors.
    let mut weak = |title: &str, agent: Option<&str>| {
        for note in loopguard_guard::advice::policy_notes(&cfg.policy_for(agent)) {
            if args.strict {
                errors += 1;
                printed = std::mem::replace(&mut printed, Ok(()))
                    .and_then(|()| errln!("{name}: error (strict): {title}: {note}"));
            } else {
                warnings += 1;
                printed = std::mem::replace(&mut printed, Ok(()))
                    .and_then(|()| errln!("{name}: warning: {title}: {note}"));
            }
        }
    };
    match &args.agent {
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
    printed = printed.and_then(|()| out!("{out}"));
    let verdict = if errors > 0 {
        format!("{name}: {errors} error(s), {warnings} warning(s)")
    } else {
        format!("{name}: ok, {warnings} warning(s)")
    };
    printed = printed.and_then(|()| errln!("{verdict}"));
    if errors > 0 {
        return Ok(ExitCode::FAILURE);
    }
    printed?;
    Ok(ExitCode::SUCCESS)
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
    let _ = writeln!(out, "    countVetoes={}", extra.count_vetoes);
}
