//! The peers' published loop rules, replayed beside loopguard's on the same calls.
//!
//! These are comparison rules for the detection benchmark (`loopguard replay --summary`
//! and `--compare`), not detectors: nothing here decides a live call. Each rule is written
//! from its project's public source (named on each [`PeerRule`] variant and by
//! [`PeerRule::source`]) with its shipped default thresholds, and reads only what a replay
//! has: each call's tool and argument digest, the model response it came from (the
//! decision's `line`: transcripts number calls by their message), and its outcome's hash
//! and error flag.
//!
//! What a replay cannot show is left out, and said so in each rule's notes: Gemini CLI's
//! content-chanting check and its LLM check (they read the model's streamed text), the
//! OpenHands monologue scenario (agent messages are not calls), Cline's mistakes that are
//! not a failed tool call. Argument identity is loopguard's digest, which ignores key order;
//! Gemini CLI and opencode compare `JSON.stringify` output, where key order counts (models
//! do not reorder the keys of a repeated call, so the two agree on real runs).

use std::collections::VecDeque;

use loopguard_core::hashing::{ArgsDigest, ResultHash};

/// One of the peers' rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PeerRule {
    /// Roo Code's `ToolRepetitionDetector` (RooCodeInc/Roo-Code,
    /// `src/core/tools/ToolRepetitionDetector.ts`): the count of identical consecutive calls
    /// (name and sorted parameters) starts at 0 and the call is refused when it reaches the
    /// limit, 3 by default: the 4th identical call in a row. Browser scrolls are exempt (no
    /// such tool in a shell agent's runs).
    RooCode,
    /// Cline (cline/cline): `src/core/task/loop-detection.ts` counts identical consecutive
    /// calls from 1, warns the model at 3 and escalates to the user (the task stops) at 5;
    /// `maxConsecutiveMistakes` (3 by default, `src/core/task/index.ts`) stops the task
    /// before the next request after 3 failed tool uses in a row, a success resetting the
    /// count. Here a mistake is an outcome flagged as an error (a tool that threw, or a
    /// mini-swe-agent format error, Cline's "no tool used"); a shell command that exits
    /// non-zero is a result, not a mistake, in both.
    Cline,
    /// Gemini CLI's `LoopDetectionService` (google-gemini/gemini-cli,
    /// `packages/core/src/services/loopDetectionService.ts`): a SHA-256 of `name:args` per
    /// call, counted from 1 while it repeats; `TOOL_CALL_LOOP_THRESHOLD` 5 stops the turn at
    /// the 5th identical call in a row. The content loop (10 repeats of a 50-character chunk
    /// of streamed text) and the LLM check after 30 turns read the model's text, which a
    /// replay of calls does not have.
    GeminiCli,
    /// OpenHands' `StuckDetector` (All-Hands-AI/OpenHands, `openhands/controller/stuck.py`),
    /// checked before each agent step on the whole history (headless): (1) the last 4
    /// actions and the last 4 observations each identical; (2) the last 3 actions identical
    /// and their 3 observations errors (with at least 4 of each in the history); (4) the
    /// last 6 steps alternating A, B, A, B, A, B in actions and in observations. A stop
    /// refuses the step after the pattern. Observations are compared by their whole result;
    /// OpenHands compares a shell observation by command and exit code only, so on a
    /// command whose output changes this rule stops later here than in OpenHands. Scenario
    /// (3), the agent repeating the same message, has no call to replay.
    OpenHands,
    /// opencode's doom-loop check (sst/opencode, `packages/opencode/src/session/processor.ts`,
    /// `DOOM_LOOP_THRESHOLD` 3): when the last 3 parts of the current assistant message are
    /// calls of the same tool with the same input, it asks the user (`doom_loop`
    /// permission). Each model response is a new message, so only identical calls made in
    /// one response count: an agent that makes one call per response never trips it.
    Opencode,
    /// goose's `RepetitionInspector` (block/goose, `crates/goose/src/tool_monitor.rs`):
    /// denies a call when the same name and parameters come more than `max_repetitions`
    /// times in a row. The agent installs it with `None` (`crates/goose/src/agents/agent.rs`),
    /// no limit, unless the user sets `--max-tool-repetitions N`: as shipped it stops
    /// nothing. (With N set, it is Roo Code's rule with limit N.)
    Goose,
}

/// Every peer rule, in the benchmark's order.
pub const PEER_RULES: [PeerRule; 6] = [
    PeerRule::RooCode,
    PeerRule::Cline,
    PeerRule::GeminiCli,
    PeerRule::OpenHands,
    PeerRule::Opencode,
    PeerRule::Goose,
];

/// Roo Code's default limit (the count of repeats after the first).
const ROO_LIMIT: u64 = 3;
/// Cline's soft and hard thresholds of identical calls in a row.
const CLINE_SOFT: u64 = 3;
const CLINE_HARD: u64 = 5;
/// Cline's default `maxConsecutiveMistakes`.
const CLINE_MISTAKES: u64 = 3;
/// Gemini CLI's `TOOL_CALL_LOOP_THRESHOLD`.
const GEMINI_THRESHOLD: u64 = 5;
/// opencode's `DOOM_LOOP_THRESHOLD`.
const OPENCODE_THRESHOLD: u64 = 3;
/// The longest history OpenHands' scenarios read (the alternating pattern's six steps).
const OPENHANDS_WINDOW: usize = 6;

impl PeerRule {
    /// The project's name.
    pub fn name(self) -> &'static str {
        match self {
            PeerRule::RooCode => "Roo Code",
            PeerRule::Cline => "Cline",
            PeerRule::GeminiCli => "Gemini CLI",
            PeerRule::OpenHands => "OpenHands",
            PeerRule::Opencode => "opencode",
            PeerRule::Goose => "goose",
        }
    }

    /// The rule in a few words, with its default thresholds.
    pub fn rule(self) -> &'static str {
        match self {
            PeerRule::RooCode => "4th identical call in a row",
            PeerRule::Cline => "5th identical call in a row, or 3 failed calls in a row",
            PeerRule::GeminiCli => "5th identical call in a row",
            PeerRule::OpenHands => {
                "4 identical call+result pairs, 3 identical calls failing, or A/B/A/B/A/B"
            }
            PeerRule::Opencode => "3 identical calls in one model response",
            PeerRule::Goose => "no limit unless --max-tool-repetitions",
        }
    }

    /// Where the rule lives: repository and file.
    pub fn source(self) -> &'static str {
        match self {
            PeerRule::RooCode => "RooCodeInc/Roo-Code `src/core/tools/ToolRepetitionDetector.ts`",
            PeerRule::Cline => {
                "cline/cline `src/core/task/loop-detection.ts`, `src/core/task/index.ts`"
            }
            PeerRule::GeminiCli => {
                "google-gemini/gemini-cli `packages/core/src/services/loopDetectionService.ts`"
            }
            PeerRule::OpenHands => "All-Hands-AI/OpenHands `openhands/controller/stuck.py`",
            PeerRule::Opencode => "sst/opencode `packages/opencode/src/session/processor.ts`",
            PeerRule::Goose => "block/goose `crates/goose/src/tool_monitor.rs`",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A call's identity: tool and argument digest.
type Key = (String, ArgsDigest);

/// One call and, once it came, its outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Step {
    key: Option<Key>,
    result: Option<ResultHash>,
    answered: bool,
}

/// The peers' rules' state over one input, and where each warned and stopped first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeerRuns {
    /// Each rule's first stop (call number), by [`PEER_RULES`] order.
    pub stop: [Option<u64>; 6],
    /// Each rule's first warning to the model (only Cline warns before it stops).
    pub warn: [Option<u64>; 6],
    run: Option<String>,
    last: Option<Key>,
    /// Identical calls in a row, counted from 1 (Cline, Gemini CLI, goose).
    same: u64,
    /// Roo Code's count: from 0, and reset to 0 after a refusal.
    roo: u64,
    roo_prev: Option<Key>,
    /// Cline's consecutive mistakes.
    mistakes: u64,
    /// The model response (decision line) of the last call and the identical calls in a
    /// row within it (opencode).
    response: Option<u64>,
    in_response: u64,
    steps: VecDeque<Step>,
}

impl PeerRuns {
    /// A call decision: call number `n` of the input, of `run`, from the response at `line`.
    pub(crate) fn call(&mut self, n: u64, run: Option<String>, line: u64, key: Option<Key>) {
        if run != self.run {
            // A new task: every peer starts its counters afresh (Gemini CLI per prompt,
            // the others per task).
            let (stop, warn) = (self.stop, self.warn);
            *self = PeerRuns {
                stop,
                warn,
                run,
                ..Default::default()
            };
        }
        // OpenHands checks before the step, on the history so far.
        if self.openhands_stuck() {
            self.mark_stop(PeerRule::OpenHands, n);
        }
        // Cline checks its mistake count before each request.
        if self.mistakes >= CLINE_MISTAKES {
            self.mark_stop(PeerRule::Cline, n);
        }

        let repeat = key.is_some() && key == self.last;
        self.same = if repeat { self.same + 1 } else { 1 };
        self.in_response = if repeat && self.response == Some(line) {
            self.in_response + 1
        } else {
            1
        };
        self.response = Some(line);
        self.last.clone_from(&key);

        if key.is_some() && key == self.roo_prev {
            self.roo += 1;
        } else {
            self.roo = 0;
            self.roo_prev.clone_from(&key);
        }
        if self.roo >= ROO_LIMIT {
            self.mark_stop(PeerRule::RooCode, n);
            self.roo = 0;
            self.roo_prev = None;
        }
        if key.is_some() {
            if self.same == CLINE_SOFT {
                mark(&mut self.warn, PeerRule::Cline, n);
            }
            if self.same == CLINE_HARD {
                self.mark_stop(PeerRule::Cline, n);
            }
            if self.same >= GEMINI_THRESHOLD {
                self.mark_stop(PeerRule::GeminiCli, n);
            }
            if self.in_response >= OPENCODE_THRESHOLD {
                self.mark_stop(PeerRule::Opencode, n);
            }
        }
        // goose as shipped: `RepetitionInspector::new(None)` allows every call.

        self.steps.push_back(Step {
            key,
            result: None,
            answered: false,
        });
        if self.steps.len() > OPENHANDS_WINDOW {
            self.steps.pop_front();
        }
    }

    /// An outcome decision: the answer to the latest unanswered call with this key.
    pub(crate) fn outcome(&mut self, key: Option<Key>, result: Option<ResultHash>) {
        if let Some(step) = self
            .steps
            .iter_mut()
            .rev()
            .find(|s| !s.answered && s.key == key)
        {
            step.result = result;
            step.answered = true;
        }
        if result.is_some_and(|r| r.is_error) {
            self.mistakes += 1;
        } else {
            self.mistakes = 0;
        }
    }

    fn mark_stop(&mut self, rule: PeerRule, n: u64) {
        mark(&mut self.stop, rule, n);
    }

    /// OpenHands' scenarios 1, 2 and 4 on the last steps (all answered).
    fn openhands_stuck(&self) -> bool {
        let steps: Vec<&Step> = self.steps.iter().rev().collect();
        let same_key = |a: &Step, b: &Step| a.key.is_some() && a.key == b.key;
        let same_result = |a: &Step, b: &Step| a.result.is_some() && a.result == b.result;
        let answered = |k: usize| steps.len() >= k && steps[..k].iter().all(|s| s.answered);
        // (1) the same action and the same observation, four times.
        if answered(4)
            && steps[1..4]
                .iter()
                .all(|s| same_key(steps[0], s) && same_result(steps[0], s))
        {
            return true;
        }
        // (2) the same action, three times, each an error (four steps in the history).
        if answered(4)
            && steps[1..3].iter().all(|s| same_key(steps[0], s))
            && steps[..3]
                .iter()
                .all(|s| s.result.is_some_and(|r| r.is_error))
        {
            return true;
        }
        // (4) A, B, A, B, A, B in actions and in observations over the last six steps.
        answered(6)
            && [(0, 2), (0, 4), (1, 3), (1, 5)]
                .iter()
                .all(|&(a, b)| same_key(steps[a], steps[b]) && same_result(steps[a], steps[b]))
    }
}

fn mark(at: &mut [Option<u64>; 6], rule: PeerRule, n: u64) {
    at[rule.index()].get_or_insert(n);
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopguard_core::hashing::args_digest;
    use loopguard_core::Value;

    fn key(tool: &str, args: &str) -> Option<Key> {
        let v = Value::parse(args.as_bytes()).expect("args");
        Some((tool.to_string(), args_digest(tool, &v)))
    }

    fn result(byte: u8, is_error: bool) -> Option<ResultHash> {
        Some(ResultHash {
            is_error,
            digest: [byte; 32],
        })
    }

    /// Replays `calls` (tool args, result byte, error), one call per response.
    fn replay(calls: &[(&str, u8, bool)]) -> PeerRuns {
        let mut p = PeerRuns::default();
        for (i, (args, r, e)) in calls.iter().enumerate() {
            let k = key("bash", args);
            p.call(i as u64 + 1, None, i as u64 + 1, k.clone());
            p.outcome(k, result(*r, *e));
        }
        p
    }

    fn stop(p: &PeerRuns, rule: PeerRule) -> Option<u64> {
        p.stop[rule.index()]
    }

    #[test]
    fn identical_calls_stop_each_counter_at_its_threshold() {
        let p = replay(&[(r#"{"c":"ls"}"#, 1, false); 6]);
        assert_eq!(stop(&p, PeerRule::RooCode), Some(4));
        assert_eq!(p.warn[PeerRule::Cline.index()], Some(3));
        assert_eq!(stop(&p, PeerRule::Cline), Some(5));
        assert_eq!(stop(&p, PeerRule::GeminiCli), Some(5));
        // Four identical pairs are in the history before the 5th call.
        assert_eq!(stop(&p, PeerRule::OpenHands), Some(5));
        // One call per response: opencode's per-message window never fills.
        assert_eq!(stop(&p, PeerRule::Opencode), None);
        assert_eq!(stop(&p, PeerRule::Goose), None);
    }

    #[test]
    fn a_different_call_resets_the_counters() {
        let mut calls = vec![(r#"{"c":"ls"}"#, 1, false); 3];
        calls.push((r#"{"c":"pwd"}"#, 2, false));
        calls.extend([(r#"{"c":"ls"}"#, 1, false); 3]);
        let p = replay(&calls);
        assert_eq!(stop(&p, PeerRule::RooCode), None);
        assert_eq!(stop(&p, PeerRule::Cline), None);
        assert_eq!(stop(&p, PeerRule::GeminiCli), None);
        assert_eq!(stop(&p, PeerRule::OpenHands), None);
    }

    #[test]
    fn openhands_stops_identical_calls_that_fail_and_alternations() {
        // Three identical failing calls after a first step: stop at the next step.
        let p = replay(&[
            (r#"{"c":"ls"}"#, 9, false),
            (r#"{"c":"x"}"#, 1, true),
            (r#"{"c":"x"}"#, 1, true),
            (r#"{"c":"x"}"#, 1, true),
            (r#"{"c":"y"}"#, 2, false),
        ]);
        assert_eq!(stop(&p, PeerRule::OpenHands), Some(5));
        // Cline: three mistakes in a row stop the next request too.
        assert_eq!(stop(&p, PeerRule::Cline), Some(5));
        let ab = [(r#"{"c":"a"}"#, 1, false), (r#"{"c":"b"}"#, 2, false)];
        let p = replay(&[ab[0], ab[1], ab[0], ab[1], ab[0], ab[1], ab[0]]);
        assert_eq!(stop(&p, PeerRule::OpenHands), Some(7));
        assert_eq!(stop(&p, PeerRule::RooCode), None);
        // The same calls with changing results are not stuck for OpenHands.
        let p = replay(&[
            (r#"{"c":"a"}"#, 1, false),
            (r#"{"c":"a"}"#, 2, false),
            (r#"{"c":"a"}"#, 3, false),
            (r#"{"c":"a"}"#, 4, false),
            (r#"{"c":"a"}"#, 5, false),
        ]);
        assert_eq!(stop(&p, PeerRule::OpenHands), None);
        assert_eq!(stop(&p, PeerRule::GeminiCli), Some(5));
    }

    #[test]
    fn a_success_resets_clines_mistakes() {
        let p = replay(&[
            (r#"{"c":"x"}"#, 1, true),
            (r#"{"c":"y"}"#, 1, true),
            (r#"{"c":"z"}"#, 2, false),
            (r#"{"c":"w"}"#, 1, true),
            (r#"{"c":"v"}"#, 3, false),
        ]);
        assert_eq!(stop(&p, PeerRule::Cline), None);
    }

    #[test]
    fn opencode_counts_identical_calls_within_one_response() {
        let mut p = PeerRuns::default();
        let k = key("read", r#"{"path":"/a"}"#);
        for n in 1..=3 {
            p.call(n, None, 7, k.clone());
        }
        assert_eq!(stop(&p, PeerRule::Opencode), Some(3));
    }

    #[test]
    fn a_new_run_starts_the_counters_afresh() {
        let mut p = PeerRuns::default();
        let k = key("bash", r#"{"c":"ls"}"#);
        for n in 1..=3 {
            p.call(n, Some("a".into()), n, k.clone());
        }
        for n in 4..=6 {
            p.call(n, Some("b".into()), n, k.clone());
        }
        assert_eq!(stop(&p, PeerRule::RooCode), None);
    }
}
