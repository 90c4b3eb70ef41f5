//! Drives [`Session`]s from events, as OpenClaw's wrapper would have.

use rustc_hash::FxHashMap;

use loopguard_core::config::{normalize_agent_id, OpenClawConfig, Policy};
use loopguard_core::fingerprint::{args_digest_wtf8, ArgsDigest};
use loopguard_core::history::{normalize_run, Name};
use loopguard_core::outcome::{Hashing, Outcome};
use loopguard_core::{Call, JsString, Mode, Session, Verdict};

use crate::decision::{Action, Decision, Finding};
use crate::event::{Event, EventKind, Payload};

/// Blocked calls remembered per session while they wait for their outcome event. Older ones
/// are forgotten first, so memory stays bounded however many calls are never answered.
const MAX_PENDING_BLOCKS: usize = 1024;

/// A blocked call whose (ignored) outcome has not arrived yet.
#[derive(Debug)]
struct PendingBlock {
    call_id: Option<Name>,
    run: Option<Box<[u8]>>,
    tool: Name,
    args: ArgsDigest,
}

#[derive(Debug)]
struct SessionState {
    session: Session,
    pending_blocks: Vec<PendingBlock>,
}

/// Replays events through per-session engines.
///
/// ```
/// use loopguard_replay::{event::parse_event, Replayer};
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
                        pending_blocks: Vec::new(),
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
                            if state.pending_blocks.len() >= MAX_PENDING_BLOCKS {
                                state.pending_blocks.remove(0);
                            }
                            state.pending_blocks.push(PendingBlock {
                                call_id: call.call_id.clone().map(JsString::into_owned),
                                run: run_key(&call),
                                tool: tool.clone().into_owned(),
                                args: d.args,
                            });
                        }
                    }
                }
            }
            EventKind::Outcome => {
                if self.mode == Mode::Enforce {
                    if let Some(args) = absorb_blocked(&mut state.pending_blocks, &call) {
                        decision.args = Some(args);
                        decision.action = Action::Ignored;
                        return decision;
                    }
                }
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

/// Finds and removes the blocked call this outcome belongs to (events.md conventions):
/// with a call id, the newest blocked call with that id; without one, the newest blocked
/// call of the same run, tool and arguments.
fn absorb_blocked(pending: &mut Vec<PendingBlock>, call: &Call<'_>) -> Option<ArgsDigest> {
    if pending.is_empty() {
        return None;
    }
    let args = args_digest_wtf8(call.tool.as_wtf8(), call.args);
    let index = match call.call_id.as_ref().filter(|c| !c.is_empty()) {
        Some(id) => pending
            .iter()
            .rposition(|p| p.call_id.as_ref().map(JsString::as_wtf8) == Some(id.as_wtf8())),
        None => {
            let run = run_key(call);
            pending.iter().rposition(|p| {
                p.run == run && p.tool.as_wtf8() == call.tool.as_wtf8() && p.args == args
            })
        }
    }?;
    pending.remove(index);
    Some(args)
}
