//! The decision a session's log row records ([`LogRow::decision`](crate::LogRow)): the
//! engine's decision in the log's words, and the events a front end handles without the
//! engine (the Claude Code hook's new prompts, duplicates, denied calls of an ended run).

use std::borrow::Cow;
use std::fmt;

use loopguard_core::Mode;
use loopguard_events::{Action, Decision};

/// What a log row says was decided. It is stored, and shown by `loopguard status` and
/// `GET /v1/sessions/{id}`, as the word written for it ([`LogDecision::text`]), so entries
/// stored by earlier versions, which kept the word itself, read back unchanged.
///
/// ```
/// use loopguard_guard::LogDecision;
/// let d = LogDecision::parse("batch: 3 recorded, 1 already recorded");
/// assert_eq!(d, LogDecision::Batch { recorded: 3, skipped: 1 });
/// assert_eq!(d.text(), "batch: 3 recorded, 1 already recorded");
/// assert_eq!(LogDecision::parse("would-block"), LogDecision::WouldBlock);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum LogDecision {
    /// `allow`: a call without a loop.
    #[default]
    Allow,
    /// `warn`: a warning shown to the model.
    Warn,
    /// `warn-quiet`: a warning the bucket de-duplication kept back.
    WarnQuiet,
    /// `block`: the call was refused.
    Block,
    /// `ask`: the user was asked whether the call may run (`onCritical: "ask"`).
    Ask,
    /// `recorded`: an outcome recorded.
    Recorded,
    /// `ignored`: an outcome absorbed by a blocked call, or a compaction with the guard off.
    Ignored,
    /// `abort`: the run was ended (the post-compaction guard, or the strict profile's
    /// `second_critical_abort` refusing a call).
    Abort,
    /// `armed`: a compaction armed the post-compaction guard.
    Armed,
    /// `would-warn`: observe mode, a warning (shown or not).
    WouldWarn,
    /// `would-block`: observe mode, a block.
    WouldBlock,
    /// `would-abort`: observe mode, a decision that would have ended the run.
    WouldAbort,
    /// `new-run`: the Claude Code hook started a run (a prompt).
    NewRun,
    /// `duplicate`: the Claude Code hook saw a tool event it had already applied.
    Duplicate,
    /// `deny-aborted`: the Claude Code hook refused a call of a run that was ended.
    DenyAborted,
    /// `already-armed`: the Claude Code hook's second report of one compaction.
    AlreadyArmed,
    /// `batch: N recorded, M already recorded`: the Claude Code hook's `PostToolBatch`.
    Batch {
        /// Outcomes it recorded.
        recorded: u64,
        /// Outcomes already recorded (or without a result).
        skipped: u64,
    },
    /// A word this version does not write (from a later version's stored entry), kept as it
    /// was read.
    Other(String),
}

/// The words of the variants without data, in declaration order.
const WORDS: [(LogDecision, &str); 16] = [
    (LogDecision::Allow, "allow"),
    (LogDecision::Warn, "warn"),
    (LogDecision::WarnQuiet, "warn-quiet"),
    (LogDecision::Block, "block"),
    (LogDecision::Ask, "ask"),
    (LogDecision::Recorded, "recorded"),
    (LogDecision::Ignored, "ignored"),
    (LogDecision::Abort, "abort"),
    (LogDecision::Armed, "armed"),
    (LogDecision::WouldWarn, "would-warn"),
    (LogDecision::WouldBlock, "would-block"),
    (LogDecision::WouldAbort, "would-abort"),
    (LogDecision::NewRun, "new-run"),
    (LogDecision::Duplicate, "duplicate"),
    (LogDecision::DenyAborted, "deny-aborted"),
    (LogDecision::AlreadyArmed, "already-armed"),
];

impl LogDecision {
    /// The words of the engine's decisions as the log writes them in enforce mode (those of
    /// a decision record, `warn-quiet` aside: a record says `warn` with `emitted: false`).
    pub const ENGINE_WORDS: [&'static str; 9] = [
        "allow",
        "warn",
        "warn-quiet",
        "block",
        "ask",
        "recorded",
        "ignored",
        "abort",
        "armed",
    ];

    /// The words of observe mode and of the Claude Code hook's own events (a batch aside).
    pub const OTHER_WORDS: [&'static str; 7] = [
        "would-warn",
        "would-block",
        "would-abort",
        "new-run",
        "duplicate",
        "deny-aborted",
        "already-armed",
    ];

    /// The log's word for the engine's decision `d` in `mode`: the record's word
    /// ([`Decision::decision_str`]), except that a warning kept back is `warn-quiet` and, in
    /// observe mode, a warning, block or abort is `would-warn`, `would-block` or
    /// `would-abort`.
    pub fn of(d: &Decision<'_>, mode: Mode) -> LogDecision {
        let observe = mode == Mode::Observe;
        let quiet = d.finding.as_ref().is_some_and(|f| f.emitted == Some(false));
        match d.action {
            Action::Warn if observe => LogDecision::WouldWarn,
            Action::Warn if quiet => LogDecision::WarnQuiet,
            Action::Warn => LogDecision::Warn,
            Action::Block if observe && d.ends_run() => LogDecision::WouldAbort,
            Action::Block if observe => LogDecision::WouldBlock,
            Action::Block if d.ends_run() => LogDecision::Abort,
            Action::Block => LogDecision::Block,
            Action::Ask if observe => LogDecision::WouldBlock,
            Action::Ask => LogDecision::Ask,
            Action::Abort if observe => LogDecision::WouldAbort,
            Action::Abort => LogDecision::Abort,
            Action::Allow => LogDecision::Allow,
            Action::Recorded => LogDecision::Recorded,
            Action::Ignored | Action::GuardDisabled => LogDecision::Ignored,
            Action::Armed => LogDecision::Armed,
        }
    }

    /// Reads a logged word; a word this version does not write is [`LogDecision::Other`].
    pub fn parse(word: &str) -> LogDecision {
        if let Some((d, _)) = WORDS.iter().find(|(_, w)| *w == word) {
            return d.clone();
        }
        parse_batch(word).unwrap_or_else(|| LogDecision::Other(word.to_string()))
    }

    /// The word written for it (`allow`, `would-block`, `batch: 3 recorded, 0 already
    /// recorded`, …).
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            LogDecision::Batch { recorded, skipped } => Cow::Owned(format!(
                "batch: {recorded} recorded, {skipped} already recorded"
            )),
            LogDecision::Other(w) => Cow::Borrowed(w),
            fixed => Cow::Borrowed(fixed.fixed_word()),
        }
    }

    /// The decision's kind as one fixed word, for metric labels: the word, except `warn`
    /// for `warn-quiet` (a warning, shown or not), `batch` for a batch and `other` for
    /// [`LogDecision::Other`].
    pub fn kind(&self) -> &'static str {
        match self {
            LogDecision::WarnQuiet => "warn",
            LogDecision::Batch { .. } => "batch",
            LogDecision::Other(_) => "other",
            fixed => fixed.fixed_word(),
        }
    }

    /// The word of a variant without data (a match: the log is written on every event).
    fn fixed_word(&self) -> &'static str {
        match self {
            LogDecision::Allow => "allow",
            LogDecision::Warn => "warn",
            LogDecision::WarnQuiet => "warn-quiet",
            LogDecision::Block => "block",
            LogDecision::Ask => "ask",
            LogDecision::Recorded => "recorded",
            LogDecision::Ignored => "ignored",
            LogDecision::Abort => "abort",
            LogDecision::Armed => "armed",
            LogDecision::WouldWarn => "would-warn",
            LogDecision::WouldBlock => "would-block",
            LogDecision::WouldAbort => "would-abort",
            LogDecision::NewRun => "new-run",
            LogDecision::Duplicate => "duplicate",
            LogDecision::DenyAborted => "deny-aborted",
            LogDecision::AlreadyArmed => "already-armed",
            LogDecision::Batch { .. } => "batch",
            LogDecision::Other(_) => "other",
        }
    }

    /// `true` for what observe mode logs instead of a warning, block or abort.
    pub fn is_observed(&self) -> bool {
        matches!(
            self,
            LogDecision::WouldWarn | LogDecision::WouldBlock | LogDecision::WouldAbort
        )
    }

    /// `true` for a critical decision: a block, an abort, a call denied because its run was
    /// ended (and their observe-mode forms).
    pub fn is_critical(&self) -> bool {
        matches!(
            self,
            LogDecision::Block
                | LogDecision::Ask
                | LogDecision::Abort
                | LogDecision::DenyAborted
                | LogDecision::WouldBlock
                | LogDecision::WouldAbort
        )
    }

    /// `true` for a warning, a block or a stop (what `loopguard status` lists of a session
    /// that ended): [`LogDecision::is_critical`] or a warning, shown, kept back or observed.
    pub fn is_notable(&self) -> bool {
        self.is_critical()
            || matches!(
                self,
                LogDecision::Warn | LogDecision::WarnQuiet | LogDecision::WouldWarn
            )
    }
}

/// `batch: N recorded, M already recorded`.
fn parse_batch(word: &str) -> Option<LogDecision> {
    let rest = word.strip_prefix("batch: ")?;
    let (recorded, rest) = rest.split_once(" recorded, ")?;
    let skipped = rest.strip_suffix(" already recorded")?;
    let number = |s: &str| -> Option<u64> {
        // Only the digits the hook writes, so the word reads back as it was.
        (!s.is_empty()
            && s.bytes().all(|b| b.is_ascii_digit())
            && (s == "0" || !s.starts_with('0')))
        .then(|| s.parse().ok())
        .flatten()
    };
    Some(LogDecision::Batch {
        recorded: number(recorded)?,
        skipped: number(skipped)?,
    })
}

impl fmt::Display for LogDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.text())
    }
}

impl PartialEq<str> for LogDecision {
    fn eq(&self, other: &str) -> bool {
        self.text() == other
    }
}

impl PartialEq<&str> for LogDecision {
    fn eq(&self, other: &&str) -> bool {
        self.text() == *other
    }
}

impl serde::Serialize for LogDecision {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text())
    }
}

impl<'de> serde::Deserialize<'de> for LogDecision {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Word;
        impl serde::de::Visitor<'_> for Word {
            type Value = LogDecision;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a logged decision word")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<LogDecision, E> {
                Ok(LogDecision::parse(v))
            }
        }
        d.deserialize_str(Word)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every() -> Vec<LogDecision> {
        let mut all: Vec<_> = WORDS.iter().map(|(d, _)| d.clone()).collect();
        all.push(LogDecision::Batch {
            recorded: 3,
            skipped: 0,
        });
        all.push(LogDecision::Other("someday".into()));
        all
    }

    #[test]
    fn every_word_reads_back_as_itself() {
        for d in every() {
            let text = d.text().into_owned();
            assert_eq!(LogDecision::parse(&text), d, "{text}");
            assert_eq!(d, text.as_str());
            assert_eq!(serde_json::to_string(&d).unwrap(), format!("\"{text}\""));
            assert_eq!(
                serde_json::from_str::<LogDecision>(&format!("\"{text}\"")).unwrap(),
                d
            );
            // postcard writes a string as its length and bytes.
            let mut expected = vec![text.len() as u8];
            expected.extend_from_slice(text.as_bytes());
            assert_eq!(postcard::to_allocvec(&d).unwrap(), expected, "{text}");
            assert_eq!(postcard::from_bytes::<LogDecision>(&expected).unwrap(), d);
        }
        let words: Vec<_> = LogDecision::ENGINE_WORDS
            .iter()
            .chain(&LogDecision::OTHER_WORDS)
            .copied()
            .collect();
        let fixed: Vec<_> = WORDS.iter().map(|(_, w)| *w).collect();
        assert_eq!(words, fixed);
        for (d, w) in &WORDS {
            assert_eq!(d.fixed_word(), *w);
        }
    }

    #[test]
    fn malformed_batches_are_kept_as_other_words() {
        for w in [
            "batch: ",
            "batch: 1 recorded",
            "batch: x recorded, 0 already recorded",
            "batch: 01 recorded, 0 already recorded",
            "batch: 1 recorded, 0 already recorded ",
            "Allow",
        ] {
            assert_eq!(LogDecision::parse(w), LogDecision::Other(w.into()), "{w}");
            assert_eq!(LogDecision::parse(w).text(), w);
        }
    }

    #[test]
    fn kinds_and_classes() {
        let kinds: Vec<_> = every().iter().map(LogDecision::kind).collect();
        assert_eq!(
            kinds,
            [
                "allow",
                "warn",
                "warn",
                "block",
                "ask",
                "recorded",
                "ignored",
                "abort",
                "armed",
                "would-warn",
                "would-block",
                "would-abort",
                "new-run",
                "duplicate",
                "deny-aborted",
                "already-armed",
                "batch",
                "other"
            ]
        );
        let critical: Vec<_> = every()
            .into_iter()
            .filter(LogDecision::is_critical)
            .map(|d| d.text().into_owned())
            .collect();
        assert_eq!(
            critical,
            [
                "block",
                "ask",
                "abort",
                "would-block",
                "would-abort",
                "deny-aborted"
            ]
        );
        let notable: Vec<_> = every()
            .into_iter()
            .filter(LogDecision::is_notable)
            .map(|d| d.text().into_owned())
            .collect();
        assert_eq!(
            notable,
            [
                "warn",
                "warn-quiet",
                "block",
                "ask",
                "abort",
                "would-warn",
                "would-block",
                "would-abort",
                "deny-aborted"
            ]
        );
        let observed: Vec<_> = every()
            .into_iter()
            .filter(LogDecision::is_observed)
            .map(|d| d.text().into_owned())
            .collect();
        assert_eq!(observed, ["would-warn", "would-block", "would-abort"]);
        assert_eq!(format!("{:<12}|", LogDecision::Block), "block       |");
    }
}
