//! What a front end does with a decision: the one reading of a decision record that every
//! front end acts on (events.md, "Output: decisions", its last paragraph; "Enforce and
//! observe").

use loopguard_core::Mode;

use crate::{Action, Decision};

/// What a front end must do with a decision, computed once by [`Effect::of`] so that no front
/// end re-derives it from the decision's words.
///
/// | decision (enforce mode) | effect |
/// |-------------------------|--------|
/// | `allow`, `recorded`, `ignored`, `armed`; a `warn` the de-duplication kept back (`emitted: false`) | [`Effect::Proceed`] |
/// | `warn` with `emitted: true` | [`Effect::Notice`] |
/// | `block` | [`Effect::Refuse`] |
/// | `ask` (`loopguard.onCritical: "ask"`, the first critical of a run) | [`Effect::Ask`] |
/// | `block` by the strict profile's `second_critical_abort` (recorded as `abort`); `abort` of an outcome (the post-compaction guard) | [`Effect::EndRun`] |
///
/// In observe mode (shadow mode) every decision is [`Effect::Proceed`]: decisions are
/// reported, the run's course is not changed, and the model is shown nothing.
///
/// ```
/// use loopguard_core::Mode;
/// use loopguard_events::{Action, Decision, Effect, EventKind};
/// let d = Decision {
///     line: 1, kind: EventKind::Call, session: "s".into(), run: None, call_id: None,
///     tool: Some("t".into()), engine_tool: None, args: None, result: None,
///     action: Action::Allow, finding: None, ends_run: false,
/// };
/// assert_eq!(Effect::of(&d, Mode::Enforce), Effect::Proceed);
/// assert_eq!(Effect::of(&d, Mode::Enforce).as_str(), "proceed");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Effect {
    /// Run the call (or go on after its outcome); tell the model nothing.
    Proceed,
    /// Run the call, and give the model the decision's `message` (an emitted warning).
    Notice,
    /// Do not run the call; give the model the decision's `message` as the tool's result.
    Refuse,
    /// Ask the user whether the call may run, through the host's approval flow, showing the
    /// decision's `message`; where the host cannot ask, do as [`Effect::Refuse`]. If the
    /// user lets it run and the loop goes on, the next critical decision of the run is
    /// [`Effect::EndRun`].
    Ask,
    /// The run is over: do not run the call (on a call), give the model the decision's
    /// `message`, and stop the agent's run. On an outcome (the post-compaction guard) the
    /// call has already run; the run stops after it. Every later call of the run is refused
    /// by the engine as well.
    EndRun,
}

impl Effect {
    /// Every effect, in the order of the table above.
    pub const ALL: [Effect; 5] = [
        Effect::Proceed,
        Effect::Notice,
        Effect::Refuse,
        Effect::Ask,
        Effect::EndRun,
    ];

    /// The effect of `decision` in `mode`: the one place a decision's meaning for a front end
    /// is decided (see the type's table).
    pub fn of(decision: &Decision<'_>, mode: Mode) -> Effect {
        let emitted = decision.finding.as_ref().and_then(|f| f.emitted);
        Effect::of_parts(decision.action, decision.ends_run(), emitted, mode)
    }

    /// [`Effect::of`] from a decision's parts: its action, whether it ends the run
    /// ([`Decision::ends_run`]) and its `emitted` field.
    pub fn of_parts(action: Action, ends_run: bool, emitted: Option<bool>, mode: Mode) -> Effect {
        if mode == Mode::Observe {
            return Effect::Proceed;
        }
        match action {
            Action::Warn if emitted == Some(true) => Effect::Notice,
            Action::Block if ends_run => Effect::EndRun,
            Action::Block => Effect::Refuse,
            Action::Ask => Effect::Ask,
            Action::Abort => Effect::EndRun,
            Action::Allow
            | Action::Warn
            | Action::Recorded
            | Action::Ignored
            | Action::Armed
            | Action::GuardDisabled => Effect::Proceed,
        }
    }

    /// The effect of a decision record's `decision` word and `emitted` field, for a client
    /// that only has the record (a remote guard's answer; a record does not say its mode, so
    /// the server's decision is taken as enforced). `abort` is the word of both run-ending
    /// decisions ([`Decision::decision_str`]). `None` for a word that is not a record's.
    ///
    /// ```
    /// use loopguard_events::Effect;
    /// assert_eq!(Effect::of_record("warn", Some(false)), Some(Effect::Proceed));
    /// assert_eq!(Effect::of_record("abort", None), Some(Effect::EndRun));
    /// assert_eq!(Effect::of_record("would-block", None), None);
    /// ```
    pub fn of_record(decision: &str, emitted: Option<bool>) -> Option<Effect> {
        let action = match decision {
            "allow" => Action::Allow,
            "warn" => Action::Warn,
            "block" => Action::Block,
            "ask" => Action::Ask,
            "recorded" => Action::Recorded,
            "ignored" => Action::Ignored,
            "abort" => Action::Abort,
            "armed" => Action::Armed,
            _ => return None,
        };
        Some(Effect::of_parts(action, false, emitted, Mode::Enforce))
    }

    /// The effect's name, as the Python and Node packages expose it: `proceed`, `notice`,
    /// `refuse`, `ask` or `end_run`.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Proceed => "proceed",
            Effect::Notice => "notice",
            Effect::Refuse => "refuse",
            Effect::Ask => "ask",
            Effect::EndRun => "end_run",
        }
    }

    /// `true` when the call must not run ([`Effect::Refuse`], [`Effect::EndRun`]), or may
    /// run only if the user allows it ([`Effect::Ask`]): what a front end that cannot ask
    /// does.
    pub fn refuses(self) -> bool {
        matches!(self, Effect::Refuse | Effect::Ask | Effect::EndRun)
    }

    /// `true` when the agent's run must stop ([`Effect::EndRun`]).
    pub fn ends_run(self) -> bool {
        self == Effect::EndRun
    }
}

impl std::fmt::Display for Effect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use loopguard_core::{Detector, Level, Name};

    use super::*;
    use crate::{EventKind, Finding};

    fn decision(
        kind: EventKind,
        action: Action,
        detector: Option<Detector>,
        emitted: Option<bool>,
    ) -> Decision<'static> {
        Decision {
            line: 1,
            kind,
            session: "s".into(),
            run: None,
            call_id: None,
            tool: Some("t".into()),
            engine_tool: None,
            args: None,
            result: None,
            action,
            finding: detector.map(|detector| Finding {
                detector,
                level: Level::Critical,
                count: 20,
                message: Name::from("CRITICAL: stop"),
                warning_key: None,
                paired_tool: None,
                emitted,
            }),
            ends_run: false,
        }
    }

    /// Every action, with and without the findings it can carry, in both modes.
    #[test]
    fn every_action_and_mode() {
        use Action::*;
        use Effect::*;
        let loop_ = Some(Detector::GenericRepeat);
        let ends = Some(Detector::SecondCriticalAbort);
        let compaction = Some(Detector::CompactionLoopPersisted);
        let cases = [
            (EventKind::Call, Allow, None, None, Proceed),
            (EventKind::Call, Warn, loop_, Some(true), Notice),
            (EventKind::Call, Warn, loop_, Some(false), Proceed),
            (EventKind::Call, Warn, loop_, None, Proceed),
            (EventKind::Call, Block, loop_, Some(true), Refuse),
            (EventKind::Call, Block, None, None, Refuse),
            (EventKind::Call, Block, ends, Some(true), EndRun),
            (EventKind::Call, Action::Ask, loop_, Some(true), Effect::Ask),
            (EventKind::Outcome, Recorded, None, None, Proceed),
            (EventKind::Outcome, Ignored, None, None, Proceed),
            (EventKind::Outcome, Abort, compaction, None, EndRun),
            (EventKind::Compaction, Armed, None, None, Proceed),
            (EventKind::Compaction, GuardDisabled, None, None, Proceed),
        ];
        for (kind, action, detector, emitted, enforced) in cases {
            let d = decision(kind, action, detector, emitted);
            assert_eq!(
                Effect::of(&d, Mode::Enforce),
                enforced,
                "{action:?} {detector:?} {emitted:?}"
            );
            assert_eq!(
                Effect::of(&d, Mode::Observe),
                Proceed,
                "observe: {action:?} {detector:?}"
            );
            // A record says what the decision says: its word gives the same enforced effect.
            assert_eq!(
                Effect::of_record(d.decision_str(), emitted),
                Some(enforced),
                "{action:?}"
            );
        }
    }

    #[test]
    fn names_and_predicates() {
        let names: Vec<_> = Effect::ALL.iter().map(|e| e.as_str()).collect();
        assert_eq!(names, ["proceed", "notice", "refuse", "ask", "end_run"]);
        let refused: Vec<_> = Effect::ALL.iter().map(|e| e.refuses()).collect();
        assert_eq!(refused, [false, false, true, true, true]);
        let ended: Vec<_> = Effect::ALL.iter().map(|e| e.ends_run()).collect();
        assert_eq!(ended, [false, false, false, false, true]);
        assert_eq!(format!("{:<8}|", Effect::Notice), "notice  |");
    }

    #[test]
    fn a_word_that_is_not_a_records_has_no_effect() {
        for word in [
            "",
            "would-block",
            "warn-quiet",
            "ABORT",
            "deny-aborted",
            "guard-disabled",
        ] {
            assert_eq!(Effect::of_record(word, None), None, "{word}");
        }
    }
}
