//! The post-compaction guard (`compaction_loop_persisted`).
//!
//! A compaction is supposed to break a loop. After one, the guard watches the next
//! `windowSize` outcomes; if all of them are the same `(tool, argsHash, resultHash)` triple,
//! the loop survived the compaction and the run is aborted. It is on unless `enabled` is
//! explicitly `false`, because it exists to protect users who never configured anything.
//!
//! OpenClaw keeps the window's outcomes and counts the ones equal to the newest. The
//! window holds at most `windowSize` outcomes, so that count reaches `windowSize` exactly
//! when every outcome of the window is the same triple: the guard keeps only the first
//! triple, whether all later ones equalled it, and how many it has seen, in constant
//! memory whatever the window size.

use crate::config::GuardSettings;
use crate::fingerprint::ArgsDigest;
use crate::history::Name;
use crate::messages;
use crate::outcome::ResultHash;

/// The guard of one (session, run).
///
/// ```
/// use loopguard_core::CompactionGuard;
/// use loopguard_core::GuardSettings;
/// use loopguard_core::hashing::ArgsDigest;
/// use loopguard_core::hashing::ResultHash;
/// let mut g = CompactionGuard::new(GuardSettings { enabled: true, window_size: 3 });
/// g.arm();
/// let r = ResultHash { is_error: false, digest: [1; 32] };
/// assert!(g.observe(b"gateway", ArgsDigest([2; 32]), r).abort.is_none());
/// assert!(g.observe(b"gateway", ArgsDigest([2; 32]), r).abort.is_none());
/// let third = g.observe(b"gateway", ArgsDigest([2; 32]), r);
/// assert_eq!(third.abort.ok_or("no abort")?.count, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct CompactionGuard {
    settings: GuardSettings,
    remaining: u32,
    window: WindowState,
}

/// What the guard remembers of the outcomes seen since it was armed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct WindowState {
    /// The first outcome of the window.
    pub(crate) first: Option<(Name, ArgsDigest, ResultHash)>,
    /// Outcomes seen.
    pub(crate) observed: u32,
    /// Whether every outcome seen equals the first.
    pub(crate) all_equal: bool,
}

/// What the guard says after an observation.
#[derive(Clone, Debug, PartialEq)]
pub struct GuardVerdict {
    /// Still watching after this observation.
    pub armed: bool,
    /// Observations left in the window.
    pub remaining_attempts: u32,
    /// Set when the run must abort.
    pub abort: Option<GuardAbort>,
}

/// The abort verdict (OpenClaw's `PostCompactionLoopPersistedError`).
///
/// ```
/// use loopguard_core::{Call, Outcome, Policy, Session, Value};
/// let policy = Policy::enabled();
/// let mut session = Session::new("s");
/// let args = Value::parse(br#"{"path":"/a"}"#)?;
/// let same = Value::from("same");
/// let _ = session.on_compaction(&policy, None);
/// let mut abort = None;
/// for _ in 0..3 {
///     let call = Call::new("read", &args);
///     let _ = session.before_call(&policy, &call);
///     abort = abort.or(session.after_call(&policy, &call, Outcome::Result(&same)).abort);
/// }
/// let abort = abort.ok_or("no abort")?;
/// assert_eq!((abort.count, abort.tool.to_string()), (3, "read".to_string()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct GuardAbort {
    /// Identical triples seen since the compaction, this one included.
    pub count: u64,
    /// The tool that kept repeating.
    pub tool: Name,
    /// The message naming the tool and the count.
    pub message: Name,
}

impl CompactionGuard {
    /// A dormant guard.
    pub fn new(settings: GuardSettings) -> Self {
        CompactionGuard {
            settings,
            remaining: 0,
            window: WindowState::default(),
        }
    }

    /// The settings the guard was created with.
    pub fn settings(&self) -> GuardSettings {
        self.settings
    }

    /// `true` while observations remain in the window.
    pub fn is_armed(&self) -> bool {
        self.settings.enabled && self.remaining > 0
    }

    /// Observations left in the window.
    pub fn remaining_attempts(&self) -> u32 {
        self.remaining
    }

    /// Arms (or re-arms) the guard after a compaction. A disabled guard is armed too, but
    /// never observes.
    pub fn arm(&mut self) {
        self.remaining = self.settings.window_size;
        self.window = WindowState::default();
        if self.settings.enabled {
            tracing::info!(
                target: "loopguard::compaction_guard",
                "post-compaction guard armed for {} attempts",
                self.settings.window_size
            );
        }
    }

    /// What the guard remembers of the current window (for [`crate::state`]).
    pub(crate) fn window(&self) -> &WindowState {
        &self.window
    }

    /// A guard in the given state (for [`crate::state`]).
    pub(crate) fn restore(settings: GuardSettings, remaining: u32, window: WindowState) -> Self {
        CompactionGuard {
            settings,
            remaining,
            window,
        }
    }

    /// Feeds one recorded outcome to the guard.
    pub fn observe(&mut self, tool: &[u8], args: ArgsDigest, result: ResultHash) -> GuardVerdict {
        if !self.settings.enabled || self.remaining == 0 {
            return GuardVerdict {
                armed: false,
                remaining_attempts: 0,
                abort: None,
            };
        }
        self.remaining -= 1;
        let w = &mut self.window;
        w.observed += 1;
        match &w.first {
            None => {
                w.first = Some((crate::history::owned_name(tool), args, result));
                w.all_equal = true;
            }
            Some((t, a, r)) => {
                w.all_equal &= t.as_wtf8() == tool && *a == args && *r == result;
            }
        }
        let persisted = w.all_equal && w.observed >= self.settings.window_size;
        let matches = u64::from(w.observed);
        let armed = self.remaining > 0;
        let abort = persisted.then(|| {
            tracing::error!(
                target: "loopguard::compaction_guard",
                "post-compaction loop persisted: tool={} repeated {} times with identical args+result post-compaction",
                String::from_utf8_lossy(tool),
                matches
            );
            GuardAbort {
                count: matches,
                tool: crate::history::owned_name(tool),
                message: messages::compaction_loop_persisted(
                    tool,
                    matches,
                    self.settings.window_size,
                ),
            }
        });
        GuardVerdict {
            armed,
            remaining_attempts: self.remaining,
            abort,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(window: u32, enabled: bool) -> CompactionGuard {
        CompactionGuard::new(GuardSettings {
            enabled,
            window_size: window,
        })
    }

    fn r(n: u8) -> ResultHash {
        ResultHash {
            is_error: false,
            digest: [n; 32],
        }
    }

    #[test]
    fn never_armed_never_aborts() {
        let mut g = guard(3, true);
        let v = g.observe(b"t", ArgsDigest([0; 32]), r(1));
        assert!(!v.armed && v.abort.is_none());
    }

    #[test]
    fn window_counts_down_and_disarms() {
        let mut g = guard(3, true);
        g.arm();
        assert!(g.is_armed());
        assert_eq!(g.remaining_attempts(), 3);
        let rem: Vec<_> = (0..3)
            .map(|i| {
                let v = g.observe(b"t", ArgsDigest([i; 32]), r(1));
                assert!(v.abort.is_none());
                (v.remaining_attempts, v.armed)
            })
            .collect();
        assert_eq!(rem, [(2, true), (1, true), (0, false)]);
    }

    #[test]
    fn changing_results_or_args_never_abort() {
        let mut g = guard(3, true);
        g.arm();
        for i in 0..3 {
            assert!(g.observe(b"t", ArgsDigest([1; 32]), r(i)).abort.is_none());
        }
        g.arm();
        for i in 0..3 {
            assert!(g.observe(b"t", ArgsDigest([i; 32]), r(1)).abort.is_none());
        }
        g.arm();
        for t in [&b"a"[..], b"b", b"c"] {
            assert!(g.observe(t, ArgsDigest([1; 32]), r(1)).abort.is_none());
        }
        assert!(!g.is_armed());
    }

    #[test]
    fn window_two_aborts_on_second_then_disarms() {
        let mut g = guard(2, true);
        g.arm();
        assert!(g.observe(b"t", ArgsDigest([1; 32]), r(1)).abort.is_none());
        let v = g.observe(b"t", ArgsDigest([1; 32]), r(1));
        assert_eq!(v.abort.as_ref().map(|a| a.count), Some(2));
        assert!(!v.armed);
        let after = g.observe(b"t", ArgsDigest([1; 32]), r(1));
        assert!(after.abort.is_none() && !after.armed);
        g.arm();
        assert!(g.is_armed());
        assert_eq!(g.remaining_attempts(), 2);
    }

    #[test]
    fn disabled_guard_never_aborts() {
        let mut g = guard(3, false);
        g.arm();
        for _ in 0..5 {
            assert!(g.observe(b"t", ArgsDigest([1; 32]), r(1)).abort.is_none());
        }
    }

    /// The constant-memory window agrees with OpenClaw's way of keeping every outcome and
    /// counting the ones equal to the newest, for any window size and sequence.
    #[test]
    fn agrees_with_counting_every_observation() {
        use proptest::prelude::*;
        let triple = (0u8..3, 0u8..2, 0u8..2);
        proptest!(|(window in 1u32..7, seq in proptest::collection::vec(triple, 0..12))| {
            let mut g = guard(window, true);
            g.arm();
            let mut seen: Vec<(u8, u8, u8)> = Vec::new();
            let mut remaining = window;
            for (t, a, res) in seq {
                let tool = [b'a' + t];
                let v = g.observe(&tool, ArgsDigest([a; 32]), r(res));
                let expected = if remaining == 0 {
                    None
                } else {
                    remaining -= 1;
                    let matches = 1 + seen.iter().filter(|o| **o == (t, a, res)).count() as u64;
                    seen.push((t, a, res));
                    (matches >= u64::from(window)).then_some(matches)
                };
                prop_assert_eq!(v.abort.map(|x| x.count), expected);
                prop_assert_eq!(v.remaining_attempts, remaining);
            }
        });
    }
}
