//! Drives [`Session`]s from events, as OpenClaw's wrapper would have.

use rustc_hash::FxHashMap;

use loopguard_core::Hashing;
use loopguard_core::{normalize_agent_id, OpenClawConfig, Policy};
use loopguard_core::{JsString, Mode};
use loopguard_events::{Decision, Event};
use loopguard_guard::{Applier, Input, Prehashed, SessionEntry, ToolProfile};

/// Blocked calls per session that wait for their outcome events in a replay: recorded
/// streams do send the (ignored) outcomes of blocked calls, sometimes much later.
const REPLAY_PENDING_BLOCKS: usize = 4096;

/// Replays events through per-session engines.
///
/// ```
/// use loopguard_replay::{parse_event, Replayer};
/// use loopguard_core::{OpenClawConfig, Mode};
///
/// let cfg = OpenClawConfig::from_json5("{tools:{loopDetection:{enabled:true}}}").unwrap().config;
/// let mut r = Replayer::new(cfg, Mode::Enforce);
/// let line = br#"{"type":"call","tool":"read","args":{"path":"/a"}}"#;
/// let mut out = Vec::new();
/// for n in 1..=10 {
///     let ev = parse_event(line, n).unwrap();
///     r.process(&ev, n).write_json(&mut out);
/// }
/// let last = String::from_utf8(out).unwrap().lines().last().unwrap().to_string();
/// assert!(last.contains(r#""decision":"allow""#)); // 9 calls before it: no warning yet
/// ```
#[derive(Debug)]
pub struct Replayer {
    config: OpenClawConfig,
    applier: Applier,
    hashing: Hashing,
    default_policy: Policy,
    // Keys come from the replayed file; a fast hash matters more here than flooding
    // resistance.
    policies: FxHashMap<Box<[u8]>, Policy>,
    sessions: FxHashMap<Box<[u8]>, SessionEntry>,
}

impl Replayer {
    /// A replayer with a config and a mode; tools are used as given ([`ToolProfile::Plain`]).
    pub fn new(config: OpenClawConfig, mode: Mode) -> Self {
        let default_policy = config.policy_for(None);
        Replayer {
            config,
            applier: Applier::new(ToolProfile::Plain)
                .mode(mode)
                .log_size(0)
                .pending_blocks(REPLAY_PENDING_BLOCKS),
            hashing: Hashing::default(),
            default_policy,
            policies: FxHashMap::default(),
            sessions: FxHashMap::default(),
        }
    }

    /// Replaces the outcome-hashing settings of sessions created from now on.
    pub fn with_hashing(mut self, hashing: Hashing) -> Self {
        self.hashing = hashing;
        self
    }

    /// Uses the tool profile of the runtime that wrote the stream (a Claude Code
    /// transcript: [`ToolProfile::ClaudeCode`]), so the replay finds exactly what that
    /// runtime's live guard would have.
    pub fn with_profile(mut self, profile: ToolProfile) -> Self {
        self.applier.profile = profile;
        self
    }

    /// Switches the tool profile for the events that follow (each input of a replay keeps
    /// the profile of the runtime that wrote it).
    pub fn set_profile(&mut self, profile: ToolProfile) {
        self.applier.profile = profile;
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.applier.mode
    }

    /// The tool profile.
    pub fn profile(&self) -> ToolProfile {
        self.applier.profile
    }

    /// What [`Replayer::process_prehashed`] needs hashed ahead, for a thread that parses
    /// events before they are applied: the tool profile and the hashing settings.
    pub fn prehasher(&self) -> Prehasher {
        Prehasher {
            profile: self.applier.profile,
            hashing: self.hashing.clone(),
        }
    }

    /// Whether [`Replayer::process_prehashed`] can apply events of agents without a
    /// policy of their own: the tool profile is [`ToolProfile::Plain`] and the default
    /// policy runs no extra detector. When not, hashing ahead only adds work.
    pub fn applies_prehashed(&self) -> bool {
        self.applier.profile == ToolProfile::Plain && !self.default_policy.extra.any()
    }

    /// [`Replayer::process`] of an event whose values were hashed ahead by
    /// [`Replayer::prehasher`] (its `args` and `payload` are not looked at); `None`, with
    /// nothing changed, when the event's policy or the tool profile needs the values
    /// themselves ([`Input::needs_values`]): then call [`Replayer::process`].
    pub fn process_prehashed<'e>(
        &mut self,
        event: &'e Event<'e>,
        pre: &'e Prehashed,
        line: u64,
    ) -> Option<Decision<'e>> {
        self.with_entry(
            event,
            |policy, entry, applier| {
                let input = Input::Prehashed(event, pre);
                entry.apply_input(policy, applier, input, line, event.timestamp_ms)
            },
            |policy, d| {
                d.as_ref()
                    .is_some_and(|d| SessionEntry::parent_counts(policy, d))
            },
        )
    }

    /// Applies one event and returns its decision.
    pub fn process<'e>(&mut self, event: &'e Event<'e>, line: u64) -> Decision<'e> {
        self.with_entry(
            event,
            |policy, entry, applier| entry.apply(policy, applier, event, line, event.timestamp_ms),
            SessionEntry::parent_counts,
        )
    }

    /// Calls `f` with the policy of the event's agent, the entry of its session (created if
    /// new) and the applier. A sub-agent's event (`parentSession`) is linked to its parent
    /// as the live guard links it (`Guard::link_parent`): its session starts from the
    /// parent's count of calls, and a call that `counts` (given `f`'s result) is counted at
    /// the parent.
    fn with_entry<R>(
        &mut self,
        event: &Event<'_>,
        f: impl FnOnce(&Policy, &mut SessionEntry, &Applier) -> R,
        counts: impl FnOnce(&Policy, &R) -> bool,
    ) -> R {
        let session_name = event
            .session
            .as_ref()
            .map(JsString::as_wtf8)
            .unwrap_or(b"default");
        let policy = match &event.agent {
            None => &self.default_policy,
            Some(agent) => {
                let key = agent.as_wtf8();
                if !self.policies.contains_key(key) {
                    let id = normalize_agent_id(&agent.to_string_lossy());
                    self.policies
                        .insert(key.into(), self.config.policy_for(Some(&id)));
                }
                &self.policies[key]
            }
        };
        let parent = event.linked_parent().map(JsString::as_wtf8);
        let parent_calls =
            parent.map(|p| self.sessions.get(p).map_or(0, SessionEntry::budgeted_calls));
        let entry = match self.sessions.get_mut(session_name) {
            Some(s) => s,
            None => {
                let mut entry =
                    SessionEntry::new(String::from_utf8_lossy(session_name).into_owned());
                entry.session.set_hashing(self.hashing.clone());
                self.sessions.entry(session_name.into()).or_insert(entry)
            }
        };
        if let Some(calls) = parent_calls {
            entry.inherit_parent_calls(calls);
        }
        let out = f(policy, entry, &self.applier);
        if let Some(parent) = parent.filter(|_| counts(policy, &out)) {
            let hashing = &self.hashing;
            self.sessions
                .entry(parent.into())
                .or_insert_with(|| {
                    let mut entry = SessionEntry::new(String::from_utf8_lossy(parent).into_owned());
                    entry.session.set_hashing(hashing.clone());
                    entry
                })
                .attribute_subagent_call();
        }
        out
    }
}

/// Hashes events ahead of [`Replayer::process_prehashed`], on any thread.
#[derive(Clone, Debug)]
pub struct Prehasher {
    profile: ToolProfile,
    hashing: Hashing,
}

impl Prehasher {
    /// The event's values hashed as the replayer would ([`Prehashed::of`]); `None` when
    /// the replayer must see them itself.
    pub fn hash(&self, event: &Event<'_>) -> Option<Prehashed> {
        Prehashed::of(event, self.profile, &self.hashing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopguard_events::parse_event;

    fn replay_line(r: &mut Replayer, line: &str, n: u64) -> String {
        let ev = parse_event(line.as_bytes(), n).unwrap();
        let mut out = Vec::new();
        r.process(&ev, n).write_json(&mut out);
        String::from_utf8(out).unwrap()
    }

    fn enforcing() -> Replayer {
        let cfg = OpenClawConfig::from_json5("{tools:{loopDetection:{enabled:true}}}")
            .unwrap()
            .config;
        Replayer::new(cfg, Mode::Enforce)
    }

    /// Thousands of blocked calls that never get an outcome do not make a late outcome
    /// forgotten, and matching stays exact both by call id and by run, tool and arguments.
    #[test]
    fn late_outcomes_of_blocked_calls_are_absorbed_however_many_are_pending() {
        let mut r = enforcing();
        let mut n = 0;
        let mut next = || {
            n += 1;
            n
        };
        let call = |id: &str| {
            format!(r#"{{"type":"call","callId":"{id}","tool":"read","args":{{"p":1}}}}"#)
        };
        let outcome = |id: Option<&str>, args: &str| {
            let id = id
                .map(|i| format!(r#""callId":"{i}","#))
                .unwrap_or_default();
            format!(r#"{{"type":"outcome",{id}"tool":"read","args":{args},"result":"same"}}"#)
        };
        // Warm up to the block threshold: each call answered with the same result.
        for i in 0..20 {
            let l = next();
            replay_line(&mut r, &call(&format!("w{i}")), l);
            let l = next();
            replay_line(&mut r, &outcome(Some(&format!("w{i}")), r#"{"p":1}"#), l);
        }
        let first = next();
        assert!(replay_line(&mut r, &call("b0"), first).contains(r#""decision":"block""#));
        for i in 1..3000 {
            let l = next();
            let d = replay_line(&mut r, &call(&format!("b{i}")), l);
            assert!(d.contains(r#""decision":"block""#), "{d}");
        }
        // The very first blocked call's outcome, 3000 blocks later.
        let l = next();
        let d = replay_line(&mut r, &outcome(Some("b0"), r#"{"p":1}"#), l);
        assert!(d.contains(r#""decision":"ignored""#), "{d}");
        // Absorbed once only: the same id again is a real outcome.
        let l = next();
        let d = replay_line(&mut r, &outcome(Some("b0"), r#"{"p":1}"#), l);
        assert!(d.contains(r#""decision":"recorded""#), "{d}");
        // Without an id: matched on run, tool and arguments; other arguments do not match.
        let l = next();
        let d = replay_line(&mut r, &outcome(None, r#"{"p":2}"#), l);
        assert!(d.contains(r#""decision":"recorded""#), "{d}");
        let l = next();
        let d = replay_line(&mut r, &outcome(None, r#"{"p":1}"#), l);
        assert!(d.contains(r#""decision":"ignored""#), "{d}");
    }
}
