//! Drives [`Session`]s from events, as OpenClaw's wrapper would have.

use rustc_hash::FxHashMap;

use loopguard_core::config::{normalize_agent_id, OpenClawConfig, Policy};
use loopguard_core::fingerprint::{args_digest_wtf8, ArgsDigest};
use loopguard_core::history::{normalize_run, Name};
use loopguard_core::outcome::{Hashing, Outcome};
use loopguard_core::{Call, JsString, Mode, Session, Verdict};

use loopguard_events::{Action, Decision, Finding};
use loopguard_events::{Event, EventKind, Payload};

/// What an outcome without a call id is matched on: run, tool and arguments.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct BlockKey {
    run: Option<Box<[u8]>>,
    tool: Box<[u8]>,
    args: ArgsDigest,
}

/// A blocked call whose (ignored) outcome has not arrived yet.
#[derive(Debug)]
struct PendingBlock {
    call_id: Option<Box<[u8]>>,
    key: BlockKey,
}

/// The blocked calls of one session waiting for their outcome events, indexed both ways an
/// outcome can name them, so matching costs the same however many calls are never
/// answered. Nothing is forgotten: an outcome that arrives late is still recognised.
#[derive(Debug, Default)]
struct PendingBlocks {
    next: u64,
    entries: FxHashMap<u64, PendingBlock>,
    // Sequence numbers in arrival order; the newest is last.
    by_id: FxHashMap<Box<[u8]>, Vec<u64>>,
    by_key: FxHashMap<BlockKey, Vec<u64>>,
}

impl PendingBlocks {
    fn push(&mut self, call_id: Option<Box<[u8]>>, key: BlockKey) {
        let seq = self.next;
        self.next += 1;
        if let Some(id) = &call_id {
            self.by_id.entry(id.clone()).or_default().push(seq);
        }
        self.by_key.entry(key.clone()).or_default().push(seq);
        self.entries.insert(seq, PendingBlock { call_id, key });
    }

    /// Finds and removes the blocked call an outcome belongs to (events.md conventions):
    /// with a call id, the newest blocked call with that id; without one, the newest blocked
    /// call of the same run, tool and arguments.
    fn absorb(&mut self, call: &Call<'_>, args: ArgsDigest) -> bool {
        if self.entries.is_empty() {
            return false;
        }
        let seq = match call.call_id.as_ref().filter(|c| !c.is_empty()) {
            Some(id) => match self.by_id.get(id.as_wtf8()).and_then(|v| v.last()) {
                Some(&seq) => seq,
                None => return false,
            },
            None => {
                let key = BlockKey {
                    run: run_key(call),
                    tool: call.tool.as_wtf8().into(),
                    args,
                };
                match self.by_key.get(&key).and_then(|v| v.last()) {
                    Some(&seq) => seq,
                    None => return false,
                }
            }
        };
        let Some(block) = self.entries.remove(&seq) else {
            return false;
        };
        if let Some(id) = &block.call_id {
            remove_seq(&mut self.by_id, id, seq);
        }
        remove_seq(&mut self.by_key, &block.key, seq);
        true
    }
}

fn remove_seq<K, Q>(map: &mut FxHashMap<K, Vec<u64>>, key: &Q, seq: u64)
where
    K: std::hash::Hash + Eq + std::borrow::Borrow<Q>,
    Q: std::hash::Hash + Eq + ?Sized,
{
    if let Some(list) = map.get_mut(key) {
        if let Some(i) = list.iter().rposition(|s| *s == seq) {
            list.remove(i);
        }
        if list.is_empty() {
            map.remove(key);
        }
    }
}

#[derive(Debug)]
struct SessionState {
    session: Session,
    pending_blocks: PendingBlocks,
}

/// Replays events through per-session engines.
///
/// ```
/// use loopguard_replay::{parse_event, Replayer};
/// use loopguard_core::{config::OpenClawConfig, Mode};
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
    mode: Mode,
    hashing: Hashing,
    default_policy: Policy,
    // Keys come from the replayed file; a fast hash matters more here than flooding
    // resistance.
    policies: FxHashMap<Box<[u8]>, Policy>,
    sessions: FxHashMap<Box<[u8]>, SessionState>,
}

impl Replayer {
    /// A replayer with a config and a mode.
    pub fn new(config: OpenClawConfig, mode: Mode) -> Self {
        let default_policy = config.policy_for(None);
        Replayer {
            config,
            mode,
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

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Applies one event and returns its decision.
    pub fn process<'e>(&mut self, event: &'e Event<'e>, line: u64) -> Decision<'e> {
        let session_name = event
            .session
            .as_ref()
            .map(JsString::reborrow)
            .unwrap_or_else(|| JsString::from("default"));
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
        let state = match self.sessions.get_mut(session_name.as_wtf8()) {
            Some(s) => s,
            None => {
                let session = Session::new(session_name.to_string_lossy())
                    .with_mode(self.mode)
                    .with_hashing(self.hashing.clone());
                self.sessions
                    .entry(session_name.as_wtf8().into())
                    .or_insert(SessionState {
                        session,
                        pending_blocks: PendingBlocks::default(),
                    })
            }
        };

        let mut decision = Decision {
            line,
            kind: event.kind,
            session: session_name,
            run: event.run.as_ref().map(JsString::reborrow),
            call_id: event.call_id.as_ref().map(JsString::reborrow),
            tool: event.tool.as_ref().map(JsString::reborrow),
            args: None,
            result: None,
            action: Action::Allow,
            finding: None,
        };

        if event.kind == EventKind::Compaction {
            let d = state.session.on_compaction(policy, event.run.as_ref());
            decision.action = if d.armed {
                Action::Armed
            } else {
                Action::GuardDisabled
            };
            return decision;
        }

        let Some(tool) = &event.tool else {
            // `parse_event` guarantees a tool for calls and outcomes.
            return decision;
        };
        let mut call = Call::new(tool.reborrow(), &event.args).at(event.timestamp_ms);
        call.run = event.run.as_ref().map(JsString::reborrow);
        call.call_id = event.call_id.as_ref().map(JsString::reborrow);
        call.agent = event.agent.as_ref().map(JsString::reborrow);

        match event.kind {
            EventKind::Call => {
                let d = state.session.before_call(policy, &call);
                decision.args = Some(d.args);
                match d.verdict {
                    Verdict::Allow => decision.action = Action::Allow,
                    Verdict::Warn {
                        detection,
                        key,
                        emitted,
                    } => {
                        decision.action = Action::Warn;
                        decision.finding = Some(finding(detection, Some(key), Some(emitted)));
                    }
                    Verdict::Block { detection, key } => {
                        decision.action = Action::Block;
                        decision.finding = Some(finding(detection, Some(key), Some(true)));
                        if self.mode == Mode::Enforce {
                            state.pending_blocks.push(
                                call.call_id
                                    .as_ref()
                                    .filter(|c| !c.is_empty())
                                    .map(|c| c.as_wtf8().into()),
                                BlockKey {
                                    run: run_key(&call),
                                    tool: tool.as_wtf8().into(),
                                    args: d.args,
                                },
                            );
                        }
                    }
                }
            }
            EventKind::Outcome => {
                // Hashed once here, reused by the session below.
                let args = args_digest_wtf8(tool.as_wtf8(), &event.args);
                if self.mode == Mode::Enforce && state.pending_blocks.absorb(&call, args) {
                    decision.args = Some(args);
                    decision.action = Action::Ignored;
                    return decision;
                }
                let call = call.with_args_digest(args);
                let outcome = match &event.payload {
                    Some(Payload::Result(r)) => Outcome::Result(r),
                    Some(Payload::Error(e)) => Outcome::Error(e),
                    None => Outcome::Undefined,
                };
                let d = state.session.after_call(policy, &call, outcome);
                decision.args = Some(d.args);
                decision.result = d.result;
                decision.action = Action::Recorded;
                if let Some(abort) = d.abort {
                    decision.action = Action::Abort;
                    decision.finding = Some(Finding {
                        detector: loopguard_core::Detector::CompactionLoopPersisted,
                        level: loopguard_core::Level::Critical,
                        count: abort.count,
                        message: abort.message,
                        warning_key: None,
                        paired_tool: None,
                        emitted: None,
                    });
                }
            }
            EventKind::Compaction => {}
        }
        decision
    }
}

fn finding(d: loopguard_core::Detection, key: Option<Name>, emitted: Option<bool>) -> Finding {
    Finding {
        detector: d.detector,
        level: d.level,
        count: d.count,
        message: d.message,
        warning_key: key,
        paired_tool: d.paired_tool,
        emitted,
    }
}

fn run_key(call: &Call<'_>) -> Option<Box<[u8]>> {
    normalize_run(call.run.as_ref().map(JsString::as_wtf8)).map(Into::into)
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
