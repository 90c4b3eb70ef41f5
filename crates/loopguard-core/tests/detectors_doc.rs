//! The detector table of `docs/detectors.md` is the one table of the rules: this test holds it
//! to the code, so the two cannot drift. Its rows must name every [`Detector`] (the
//! post-compaction guard aside, which the page describes under the table), in the order the
//! code consults them: the order of the `MODULE::check(` calls in `detect` and `detect_extra`
//! (`src/detectors/mod.rs`), each module mapped to the one `Detector` its source names, then
//! `second_critical_abort`, which the session applies to every critical. The strict profile's
//! thresholds written in that table and in the table of `docs/strict-profile.md` must be
//! `ExtraPolicy::strict()`'s.

use loopguard_core::{Detector, ExtraDetector, ExtraPolicy};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn every_detector() -> Vec<Detector> {
    Detector::ALL.into_iter().chain(Detector::EXTRA).collect()
}

/// The cells of the first Markdown table whose header row starts with `header`.
fn table(text: &str, header: &str) -> Vec<Vec<String>> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with(header));
    assert!(lines.next().is_some(), "no table starting {header:?}");
    let separator = lines.next().unwrap_or("");
    assert!(separator.starts_with("|--") || separator.starts_with("|---"));
    lines
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let inner = l.trim().trim_start_matches('|').trim_end_matches('|');
            inner.split('|').map(|c| c.trim().to_string()).collect()
        })
        .collect()
}

/// The text between backticks, in order.
fn code_spans(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

/// `` `NAME` (N) `` in a cell: the number written after the backticked setting.
fn setting(cell: &str, name: &str) -> Option<u64> {
    let marker = format!("`{name}` (");
    let at = cell.find(&marker)? + marker.len();
    let digits: String = cell[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some(
        digits
            .parse()
            .unwrap_or_else(|_| panic!("{name} in {cell:?}")),
    )
}

/// The detector a module reports: the one `Detector::Variant` its source names.
fn detector_of_module(module: &str) -> Detector {
    let source = read(&root().join(format!("crates/loopguard-core/src/detectors/{module}.rs")));
    let mut named: Vec<Detector> = every_detector()
        .into_iter()
        .filter(|d| {
            let token = format!("Detector::{d:?}");
            source.match_indices(&token).any(|(i, _)| {
                !source[i + token.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
            })
        })
        .collect();
    named.dedup();
    assert_eq!(named.len(), 1, "{module}.rs names {named:?}");
    named[0]
}

/// The modules whose `check` a function calls, in source order.
fn checks_in(source: &str, from: &str, to: &str) -> Vec<String> {
    let start = source
        .find(from)
        .unwrap_or_else(|| panic!("{from:?} not found"));
    let end = start
        + source[start..]
            .find(to)
            .unwrap_or_else(|| panic!("{to:?} not found"));
    let body = &source[start..end];
    let mut out = Vec::new();
    for (i, _) in body.match_indices("::check(") {
        let ident: String = body[..i]
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        out.push(ident);
    }
    out
}

/// The order the code consults the detectors in.
fn code_order() -> Vec<Detector> {
    let source = read(&root().join("crates/loopguard-core/src/detectors/mod.rs"));
    let mut modules = checks_in(
        &source,
        "pub(crate) fn detect<",
        "pub(crate) struct Proposed",
    );
    modules.extend(checks_in(
        &source,
        "pub(crate) fn detect_extra(",
        "fn report_extra(",
    ));
    let mut order: Vec<Detector> = modules.iter().map(|m| detector_of_module(m)).collect();
    let session = read(&root().join("crates/loopguard-core/src/session.rs"));
    assert!(session.contains("second_critical::detection("));
    order.push(detector_of_module("second_critical"));
    order
}

fn strict_config(policy: &ExtraPolicy, d: Detector) -> &ExtraDetector {
    match d {
        Detector::IdenticalFailureStreak => &policy.failure_streak,
        Detector::IdenticalOutcomeStreak => &policy.outcome_streak,
        Detector::ErrorDespiteChangingArgs => &policy.error_changing_args,
        Detector::ArgumentChurn => &policy.argument_churn,
        Detector::LoopAcrossCompactions => &policy.loop_across_compactions,
        Detector::SecondCriticalAbort => &policy.second_critical,
        Detector::NearRepeat => &policy.near_repeat,
        Detector::NoProgressCycle => &policy.cycle,
        Detector::ChangingErrorSameCall => &policy.changing_error,
        Detector::EmptySearchSweep => &policy.empty_search_sweep,
        Detector::UnrunnableCommands => &policy.unrunnable_commands,
        Detector::ErrorCascade => &policy.error_cascade,
        Detector::ChangingCountsSameCall => &policy.changing_counts,
        other => panic!("{other} is not an extra detector"),
    }
}

struct Row {
    number: String,
    detectors: Vec<Detector>,
    level: String,
    text: String,
}

fn detector_rows() -> Vec<Row> {
    let page = read(&root().join("docs/detectors.md"));
    table(&page, "| # | detector | level | fires when |")
        .into_iter()
        .map(|cells| {
            assert_eq!(cells.len(), 4, "{cells:?}");
            let detectors = code_spans(&cells[1])
                .into_iter()
                .map(|name| {
                    Detector::from_name(name)
                        .unwrap_or_else(|| panic!("docs/detectors.md: no detector {name:?}"))
                })
                .collect::<Vec<_>>();
            assert!(!detectors.is_empty(), "a row without a detector: {cells:?}");
            Row {
                number: cells[0].clone(),
                detectors,
                level: cells[2].clone(),
                text: cells[3].clone(),
            }
        })
        .collect()
}

#[test]
fn the_detector_table_lists_every_detector_in_the_order_the_code_consults_them() {
    let rows = detector_rows();
    let mut documented: Vec<Detector> = rows.iter().flat_map(|r| r.detectors.clone()).collect();
    // A rule with a critical and a warning row (`known_poll_no_progress`, …) counts once.
    documented.dedup();
    let code = code_order();
    assert_eq!(
        documented, code,
        "docs/detectors.md's table against the order of detect and detect_extra"
    );
    // Every detector is there, but the post-compaction guard, which the page names below.
    let mut missing: Vec<Detector> = every_detector()
        .into_iter()
        .filter(|d| !documented.contains(d))
        .collect();
    missing.sort();
    assert_eq!(missing, vec![Detector::CompactionLoopPersisted]);
    let page = read(&root().join("docs/detectors.md"));
    assert!(page.contains("`compaction_loop_persisted`"));
    // OpenClaw's rules first, then the strict profile's, each marked as such.
    for row in &rows {
        let strict = row.text.starts_with("*strict profile*");
        for d in &row.detectors {
            assert_eq!(
                Detector::EXTRA.contains(d),
                strict,
                "row {}: {d} is marked {}",
                row.number,
                if strict { "strict" } else { "OpenClaw's" }
            );
        }
    }
}

#[test]
fn the_detector_table_gives_the_strict_profiles_thresholds() {
    let policy = ExtraPolicy::strict();
    let mut checked = 0;
    for row in detector_rows() {
        let [d] = row.detectors[..] else { continue };
        if !Detector::EXTRA.contains(&d) || d == Detector::SecondCriticalAbort {
            continue;
        }
        let cfg = strict_config(&policy, d);
        assert!(cfg.enabled, "{d} is on in the strict profile");
        assert_eq!(
            setting(&row.text, "blockAt"),
            Some(cfg.block_at),
            "{d}: blockAt"
        );
        let warns = row.level.contains("warning");
        assert_eq!(warns, cfg.warn_at > 0, "{d}: level {:?}", row.level);
        if d == Detector::ArgumentChurn {
            // Its warning comes when the churn fills the window.
            assert_eq!(
                setting(&row.text, "window"),
                Some(cfg.window),
                "{d}: window"
            );
            assert_eq!(cfg.warn_at, cfg.window);
            assert_eq!(
                setting(&row.text, "maxVariants"),
                Some(cfg.max_variants),
                "{d}: maxVariants"
            );
        } else if warns {
            assert_eq!(
                setting(&row.text, "warnAt"),
                Some(cfg.warn_at),
                "{d}: warnAt"
            );
        }
        checked += 1;
    }
    assert_eq!(checked, Detector::EXTRA.len() - 1);
}

#[test]
fn the_strict_profiles_table_gives_its_thresholds() {
    let policy = ExtraPolicy::strict();
    let page = read(&root().join("docs/strict-profile.md"));
    let rows = table(
        &page,
        "| detector (`loopguard.detectors` key) | what it counts | strict warn / block |",
    );
    let mut seen = Vec::new();
    for cells in rows {
        let name = code_spans(&cells[0])[0];
        let d = Detector::from_name(name)
            .unwrap_or_else(|| panic!("docs/strict-profile.md: no detector {name:?}"));
        let cfg = strict_config(&policy, d);
        let (warn, block) = cells[2].split_once('/').expect("warn / block");
        let warn = warn.trim();
        if warn == "-" {
            assert_eq!(cfg.warn_at, 0, "{d}: warns at {}", cfg.warn_at);
        } else {
            assert_eq!(warn.parse::<u64>().ok(), Some(cfg.warn_at), "{d}: warn");
        }
        let block: String = block
            .trim()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if d == Detector::SecondCriticalAbort {
            // "2nd": the second critical of a run.
            assert_eq!(block, "2");
        } else {
            assert_eq!(block.parse::<u64>().ok(), Some(cfg.block_at), "{d}: block");
        }
        seen.push(d);
    }
    seen.sort();
    let mut extra = Detector::EXTRA.to_vec();
    extra.sort();
    assert_eq!(
        seen, extra,
        "docs/strict-profile.md lists every extra detector once"
    );
}
