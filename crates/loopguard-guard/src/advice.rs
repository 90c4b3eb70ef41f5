//! Where protection is weaker than the config makes it look.
//!
//! `loopguard config check`, `loopguard hook install` and `loopguard status` print these
//! notes: a config that leaves the rolling-history detectors off, and thresholds whose
//! warnings never reach the model. OpenClaw shows a warning once per bucket of ten
//! ([`loopguard_core::BUCKET_SIZE`]: at counts 10, 20, 30, …), so with
//! `warningThreshold` below 10 the warnings at counts below 10 are recorded but never
//! shown, and with `criticalThreshold` at 10 or below a loop with identical outcomes is
//! blocked before the model has seen any warning.
//!
//! ```
//! use loopguard_core::OpenClawConfig;
//! use loopguard_guard::advice::policy_notes;
//! let loaded = OpenClawConfig::from_json5("{ tools: { loopDetection: { enabled: true, warningThreshold: 3, criticalThreshold: 5 } } }")?;
//! let notes = policy_notes(&loaded.config.policy_for(None));
//! assert_eq!(notes.len(), 1);
//! assert!(notes[0].contains("warningThreshold 3"), "{}", notes[0]);
//! assert!(policy_notes(&loopguard_core::Policy::enabled()).is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use loopguard_core::BUCKET_SIZE;
use loopguard_core::{OpenClawConfig, Policy};

/// The notes for a config a guard was given (named `origin`), each naming its setting:
/// what the npm and Python packages report once when a guard is built. A config that is
/// given keeps OpenClaw's meaning (`{}` leaves the rolling-history detectors off), which a
/// user who passed one rarely means, so it is said where they look.
///
/// ```
/// use loopguard_core::OpenClawConfig;
/// let loaded = OpenClawConfig::from_json5("{}")?;
/// let notes = loopguard_guard::advice::config_notes("config", &loaded.config);
/// assert!(notes[0].starts_with("config: tools.loopDetection.enabled is not true"), "{}", notes[0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn config_notes(origin: &str, config: &OpenClawConfig) -> Vec<String> {
    policy_notes(&config.policy_for(None))
        .into_iter()
        .map(|note| format!("{origin}: tools.loopDetection.{note}"))
        .collect()
}

/// The notes for one effective policy (empty when it protects as it looks).
pub fn policy_notes(policy: &Policy) -> Vec<String> {
    let r = &policy.resolved;
    let mut notes = Vec::new();
    if !r.enabled {
        notes.push(
            "enabled is not true: the rolling-history detectors are off and only the post-compaction guard runs (OpenClaw's default; say `enabled: true`)"
                .to_string(),
        );
        return notes;
    }
    let bucket = BUCKET_SIZE as f64;
    let num = loopguard_core::json::format_js_number;
    if r.warning_threshold < bucket {
        let mut note = format!(
            "warningThreshold {}: warnings at counts below {BUCKET_SIZE} are never shown to the model (OpenClaw shows one per bucket of ten: at 10, 20, 30, …)",
            num(r.warning_threshold)
        );
        if policy.extra.any() {
            // The strict profile's own detectors warn from their first count.
            note.push_str(
                "; the strict profile's extra detectors still warn from their first count",
            );
        } else if r.critical_threshold <= bucket {
            note.push_str(&format!(
                "; with criticalThreshold {}, a loop with identical outcomes is blocked before the model has seen any warning",
                num(r.critical_threshold)
            ));
        }
        notes.push(note);
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopguard_core::OpenClawConfig;

    fn notes(block: &str) -> Vec<String> {
        let loaded =
            OpenClawConfig::from_json5(&format!("{{ tools: {{ loopDetection: {block} }} }}"))
                .unwrap();
        policy_notes(&loaded.config.policy_for(None))
    }

    #[test]
    fn thresholds_below_the_bucket_are_named() {
        assert!(notes("{ enabled: true }").is_empty());
        assert!(notes("{ enabled: true, warningThreshold: 10 }").is_empty());
        let n = notes("{ enabled: true, warningThreshold: 8, criticalThreshold: 16 }");
        assert_eq!(n.len(), 1);
        assert!(
            n[0].contains("warningThreshold 8") && !n[0].contains("criticalThreshold"),
            "{n:?}"
        );
        let n = notes("{ enabled: true, warningThreshold: 3, criticalThreshold: 5 }");
        assert!(n[0].contains("criticalThreshold 5"), "{n:?}");
        let n = notes("{ warningThreshold: 3 }");
        assert!(n[0].starts_with("enabled is not true"), "{n:?}");
        let strict = OpenClawConfig::from_json5(
            "{ tools: { loopDetection: { enabled: true, warningThreshold: 3, criticalThreshold: 5 } }, loopguard: { profile: 'strict' } }",
        )
        .unwrap();
        let n = policy_notes(&strict.config.policy_for(None));
        assert!(
            n[0].contains("extra detectors still warn") && !n[0].contains("criticalThreshold 5"),
            "{n:?}"
        );
    }
}
