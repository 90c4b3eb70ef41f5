//! One decision per event, and its JSON line (events.md, "Output: decisions").

use loopguard_core::hashing::ArgsDigest;
use loopguard_core::hashing::ResultHash;
use loopguard_core::JsString;
use loopguard_core::Name;
use loopguard_core::{hashing::hex_bytes, json::write_json_string, json::write_json_string_body};
use loopguard_core::{Detector, Level};

use crate::EventKind;

/// What loopguard decided for an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// call: no loop.
    Allow,
    /// call: a loop is forming.
    Warn,
    /// call: a loop; the call does not run (enforce) or would not have (observe). When the
    /// block also ends the run (the strict profile's `second_critical_abort`), the record
    /// says `abort` (see [`Decision::decision_str`]).
    Block,
    /// call: a critical loop under `loopguard.onCritical: "ask"`: the front end asks the
    /// user whether the call may run, through the host's approval flow, and refuses it
    /// where the host cannot ask. The record says `ask`.
    Ask,
    /// outcome: recorded.
    Recorded,
    /// outcome: absorbed by a blocked call, no state changed.
    Ignored,
    /// outcome: the post-compaction guard aborts the run.
    Abort,
    /// compaction: the guard is armed.
    Armed,
    /// compaction: the guard is disabled.
    GuardDisabled,
}

impl Action {
    /// The `decision` string.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Warn => "warn",
            Action::Block => "block",
            Action::Ask => "ask",
            Action::Recorded => "recorded",
            Action::Ignored | Action::GuardDisabled => "ignored",
            Action::Abort => "abort",
            Action::Armed => "armed",
        }
    }
}

/// The detection fields of a warn, block or abort.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// The detector.
    pub detector: Detector,
    /// Warning or critical.
    pub level: Level,
    /// The detector's count.
    pub count: u64,
    /// The message given to the model.
    pub message: Name,
    /// The de-duplication key (warn and block only).
    pub warning_key: Option<Name>,
    /// The other tool of a ping-pong pair.
    pub paired_tool: Option<Name>,
    /// Whether the warning passed the bucket de-duplication (warn and block only).
    pub emitted: Option<bool>,
}

/// A decision, borrowing the echoed strings from its event.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision<'e> {
    /// 1-based input line.
    pub line: u64,
    /// The event's type.
    pub kind: EventKind,
    /// The session (`"default"` when absent).
    pub session: JsString<'e>,
    /// `run` as given.
    pub run: Option<JsString<'e>>,
    /// `callId` as given.
    pub call_id: Option<JsString<'e>>,
    /// `tool` (absent on compactions).
    pub tool: Option<JsString<'e>>,
    /// The engine's name for the tool when a tool profile renamed it (Claude Code's `Bash`
    /// is hashed as `exec`): `argsHash` is built with it, as OpenClaw would. `None`: `tool`.
    pub engine_tool: Option<JsString<'e>>,
    /// The argument digest (calls and outcomes).
    pub args: Option<ArgsDigest>,
    /// The outcome hash (outcomes only; `None` when nothing was recorded).
    pub result: Option<ResultHash>,
    /// The decision.
    pub action: Action,
    /// Detection details for warn, block and abort.
    pub finding: Option<Finding>,
    /// A block that also ends the run, whatever its detector (the `openclaw-2026.9.6`
    /// profile: a run's critical after its first). See [`Decision::ends_run`].
    pub ends_run: bool,
}

impl Decision<'_> {
    /// `true` for a call refused because its run is ended: the strict profile's
    /// `second_critical_abort` (the second critical loop of a run, and every call of the run
    /// after it), or a critical after the run's first under the `openclaw-2026.9.6` profile
    /// ([`Decision::ends_run`](field@Decision::ends_run)). The call is blocked
    /// ([`Action::Block`]) and the agent should stop: its [`Effect`](crate::Effect) is
    /// [`EndRun`](crate::Effect::EndRun), which front ends act on.
    pub fn ends_run(&self) -> bool {
        self.action == Action::Block
            && (self.ends_run
                || self
                    .finding
                    .as_ref()
                    .is_some_and(|f| f.detector == Detector::SecondCriticalAbort))
    }

    /// The record's `decision` word: [`Action::as_str`], except that a block that ends the
    /// run says `abort` in every front end (replay, `serve`, `mcp`, the hook's log), as the
    /// post-compaction abort does (decisions.md: one vocabulary for "the run is over").
    ///
    /// ```
    /// use loopguard_events::{Action, Decision, EventKind};
    /// let d = Decision {
    ///     line: 1, kind: EventKind::Call, session: "s".into(), run: None, call_id: None,
    ///     tool: Some("t".into()), engine_tool: None, args: None, result: None,
    ///     action: Action::Block, finding: None, ends_run: false,
    /// };
    /// assert_eq!(d.decision_str(), "block");
    /// ```
    pub fn decision_str(&self) -> &'static str {
        if self.ends_run() {
            Action::Abort.as_str()
        } else {
            self.action.as_str()
        }
    }

    /// Appends the decision as one JSON line (with the trailing newline).
    ///
    /// Field order follows events.md; strings are escaped as `JSON.stringify` does.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"line\":");
        push_u64(out, self.line);
        out.push(b',');
        self.write_fields(out);
    }

    /// Appends the decision record without its `line` field (with the trailing newline):
    /// what the live front ends (`loopguard serve`, the Python package) answer for one event.
    ///
    /// ```
    /// use loopguard_events::{Action, Decision, EventKind};
    /// let d = Decision {
    ///     line: 3, kind: EventKind::Compaction, session: "s".into(), run: None, call_id: None,
    ///     tool: None, engine_tool: None, args: None, result: None, action: Action::Armed, finding: None, ends_run: false,
    /// };
    /// let mut out = Vec::new();
    /// d.write_record(&mut out);
    /// assert_eq!(out, b"{\"type\":\"compaction\",\"session\":\"s\",\"run\":null,\"callId\":null,\"decision\":\"armed\"}\n");
    /// ```
    pub fn write_record(&self, out: &mut Vec<u8>) {
        out.push(b'{');
        self.write_fields(out);
    }

    fn write_fields(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"\"type\":\"");
        out.extend_from_slice(self.kind.as_str().as_bytes());
        out.extend_from_slice(b"\",\"session\":");
        write_json_string(out, &self.session);
        out.extend_from_slice(b",\"run\":");
        opt_string(out, self.run.as_ref());
        out.extend_from_slice(b",\"callId\":");
        opt_string(out, self.call_id.as_ref());
        if let Some(tool) = &self.tool {
            out.extend_from_slice(b",\"tool\":");
            write_json_string(out, tool);
            if let Some(args) = &self.args {
                out.extend_from_slice(b",\"argsHash\":");
                write_args_hash(out, self.engine_tool.as_ref().unwrap_or(tool), args);
            }
        }
        if self.kind == EventKind::Outcome {
            out.extend_from_slice(b",\"resultHash\":");
            match &self.result {
                Some(h) => {
                    out.push(b'"');
                    if h.is_error {
                        out.extend_from_slice(b"error:");
                    }
                    push_hex_bytes(out, &h.digest);
                    out.push(b'"');
                }
                None => out.extend_from_slice(b"null"),
            }
        }
        out.extend_from_slice(b",\"decision\":\"");
        out.extend_from_slice(self.decision_str().as_bytes());
        out.push(b'"');
        if let Some(f) = &self.finding {
            out.extend_from_slice(b",\"detector\":\"");
            out.extend_from_slice(f.detector.as_str().as_bytes());
            out.extend_from_slice(b"\",\"level\":\"");
            out.extend_from_slice(f.level.as_str().as_bytes());
            out.extend_from_slice(b"\",\"count\":");
            push_u64(out, f.count);
            out.extend_from_slice(b",\"message\":");
            write_json_string(out, &f.message);
            if let Some(k) = &f.warning_key {
                out.extend_from_slice(b",\"warningKey\":");
                write_json_string(out, k);
            }
            if let Some(p) = &f.paired_tool {
                out.extend_from_slice(b",\"pairedTool\":");
                write_json_string(out, p);
            }
            if let Some(e) = f.emitted {
                out.extend_from_slice(if e {
                    b",\"emitted\":true"
                } else {
                    b",\"emitted\":false"
                });
            }
        }
        out.extend_from_slice(b"}\n");
    }

    /// The `argsHash` string, when the decision has one.
    pub fn args_hash(&self) -> Option<String> {
        let tool = self.engine_tool.as_ref().or(self.tool.as_ref())?;
        let args = self.args.as_ref()?;
        Some(String::from_utf8_lossy(&args.args_hash(tool.as_wtf8())).into_owned())
    }

    /// A copy that owns its strings, to keep past the event it was decided for (the agents'
    /// run path hands a hook's decisions back to its front end this way).
    ///
    /// ```
    /// use loopguard_events::{Action, Decision, EventKind};
    /// let session = String::from("s");
    /// let d = Decision {
    ///     line: 1, kind: EventKind::Call, session: session.as_str().into(), run: None, call_id: None,
    ///     tool: Some("t".into()), engine_tool: None, args: None, result: None,
    ///     action: Action::Allow, finding: None, ends_run: false,
    /// };
    /// let owned: Decision<'static> = d.into_owned();
    /// drop(session);
    /// assert_eq!(owned.session.to_string_lossy(), "s");
    /// ```
    pub fn into_owned(self) -> Decision<'static> {
        Decision {
            line: self.line,
            kind: self.kind,
            session: self.session.into_owned(),
            run: self.run.map(JsString::into_owned),
            call_id: self.call_id.map(JsString::into_owned),
            tool: self.tool.map(JsString::into_owned),
            engine_tool: self.engine_tool.map(JsString::into_owned),
            args: self.args,
            result: self.result,
            action: self.action,
            finding: self.finding,
            ends_run: self.ends_run,
        }
    }
}

fn opt_string(out: &mut Vec<u8>, s: Option<&JsString<'_>>) {
    match s {
        Some(s) => write_json_string(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

/// `"tool:hex"` as a JSON string.
fn write_args_hash(out: &mut Vec<u8>, tool: &JsString<'_>, args: &ArgsDigest) {
    out.push(b'"');
    write_json_string_body(out, tool);
    out.push(b':');
    push_hex_bytes(out, &args.0);
    out.push(b'"');
}

fn push_hex_bytes(out: &mut Vec<u8>, d: &[u8; 32]) {
    out.extend_from_slice(&hex_bytes(d));
}

fn push_u64(out: &mut Vec<u8>, n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}
