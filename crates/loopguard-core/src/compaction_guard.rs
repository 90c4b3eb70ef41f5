//! The post-compaction guard (`compaction_loop_persisted`).
//!
//! A compaction is supposed to break a loop. After one, the guard watches the next
//! `windowSize` outcomes; if all of them are the same `(tool, argsHash, resultHash)` triple,
//! the loop survived the compaction and the run is aborted. It is on unless `enabled` is
//! explicitly `false`, because it exists to protect users who never configured anything.

use crate::config::GuardSettings;
use crate::fingerprint::ArgsDigest;
use crate::history::Name;
use crate::messages;
use crate::outcome::ResultHash;

/// One observed outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Observation {
    tool: Name,
    args: ArgsDigest,
    result: ResultHash,
}

/// The guard of one (session, run).
///
/// ```
/// use loopguard_core::compaction_guard::CompactionGuard;
/// use loopguard_core::config::GuardSettings;
/// use loopguard_core::fingerprint::ArgsDigest;
/// use loopguard_core::outcome::ResultHash;
/// let mut g = CompactionGuard::new(GuardSettings { enabled: true, window_size: 3 });
/// g.arm();
/// let r = ResultHash { is_error: false, digest: [1; 32] };
/// assert!(g.observe(b"gateway", ArgsDigest([2; 32]), r).abort.is_none());
/// assert!(g.observe(b"gateway", ArgsDigest([2; 32]), r).abort.is_none());
/// let third = g.observe(b"gateway", ArgsDigest([2; 32]), r);
/// assert_eq!(third.abort.unwrap().count, 3);
/// ```
#[derive(Clone, Debug)]
pub struct CompactionGuard {
    settings: GuardSettings,
    remaining: u32,
    observations: Vec<Observation>,
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
            observations: Vec::new(),
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
        self.observations.clear();
        if self.settings.enabled {
            tracing::info!(
                target: "loopguard::compaction_guard",
                "post-compaction guard armed for {} attempts",
                self.settings.window_size
            );
        }
    }

    /// The outcomes observed since the guard was last armed, oldest first (for
    /// [`crate::state`]).
    pub(crate) fn observations(
        &self,
    ) -> impl ExactSizeIterator<Item = (&Name, ArgsDigest, ResultHash)> {
        self.observations
            .iter()
            .map(|o| (&o.tool, o.args, o.result))
    }

    /// A guard in the given state (for [`crate::state`]).
    pub(crate) fn restore(
        settings: GuardSettings,
        remaining: u32,
        observations: impl IntoIterator<Item = (Name, ArgsDigest, ResultHash)>,
    ) -> Self {
        CompactionGuard {
            settings,
            remaining,
            observations: observations
                .into_iter()
                .map(|(tool, args, result)| Observation { tool, args, result })
                .collect(),
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
        let matches = 1 + self
            .observations
            .iter()
            .filter(|o| o.tool.as_wtf8() == tool && o.args == args && o.result == result)
            .count() as u64;
        self.observations.push(Observation {
            tool: crate::history::owned_name(tool),
            args,
            result,
        });
        let armed = self.remaining > 0;
        let abort = (matches >= u64::from(self.settings.window_size)).then(|| {
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
}
