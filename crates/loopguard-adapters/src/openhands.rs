//! OpenHands: the V0 event list, the evaluation `output.jsonl`, and the V1 SDK events.
//!
//! Three files, one event model:
//!
//! * **V0 event list** (`trajectory.json`, what `event_to_dict` writes and the GUI exports):
//!   a JSON array of events. An action is `{"id","timestamp","source","action","args",
//!   "tool_call_metadata":{"function_name","tool_call_id","model_response",…}}`; an
//!   observation is `{"id","timestamp","cause","observation","content","extras",…}` whose
//!   `cause` is the id of its action. Read by [`OpenHands`] (also a JSON array of V1 events).
//! * **Evaluation output** (`output.jsonl`, one run per line: `{"instance_id",
//!   "instruction","history":[events],"metrics","test_result",…}`): each line is a session
//!   of its own, named `<file>/<instance_id>`. Read by [`OpenHandsEvalAdapter`]. Old
//!   outputs whose `history` holds `[action, observation]` pairs are read too.
//! * **V1 SDK events** (`software-agent-sdk`, one event per line or a JSON array): every
//!   event has a `kind`: `ActionEvent` (`tool_name`, `tool_call_id`, `tool_call.arguments`,
//!   `action`), `ObservationEvent` (`action_id`, `tool_call_id`, `observation.content`,
//!   `observation.is_error`), `AgentErrorEvent` and `UserRejectObservation` (an error
//!   outcome), `MessageEvent` (a user message is a run boundary), `Condensation` (a
//!   compaction). Read by [`OpenHandsEventsAdapter`] (JSON Lines) and [`OpenHands`].
//!
//! | event | becomes |
//! |-------|---------|
//! | V0 agent action with `tool_call_metadata` | a call of `function_name`, args = the model's own arguments for `tool_call_id` (from `model_response`), else the action's `args` without its bookkeeping (`thought`, `confirmation_state`, `security_risk`, `hidden`, …) |
//! | V0 agent action without metadata (`run`, `run_ipython`, `read`, `write`, `edit`, `browse`, `browse_interactive`, `call_tool_mcp`) | a call of the action name |
//! | V0 observation whose `cause` is a waiting call | its outcome: `error` observations are errors; `run` gives `{"content":[text],"details":{"exitCode":N}}` (pid, host and timing left out); others the text of `content` |
//! | V0 `message` from the user | a run boundary |
//! | V0 `condensation` action | a compaction |
//! | V1 events | as listed above |
//! | anything else (`system`, `recall`, `agent_state_changed`, `null`, `finish` without an observation, …) | ignored |
//!
//! Calls are paired with their outcomes by the pairing all adapters share (V0: keyed by the
//! action's event id, which observations name as `cause`; V1: by `tool_call_id`). `finish` and other actions that never get an observation are
//! replayed without an outcome. Timestamps without a UTC offset (V0 writes local naive
//! times) are read as UTC.

use loopguard_core::{Object, Value};
use loopguard_events::Payload;

use crate::common::{
    arguments, content_text, document_error, each_numbered, id_field, parse_line, parse_rfc3339,
    str_field, text_result, Runs,
};
use crate::pairing::{PendingCall, Tracker};
use crate::{
    Adapted, Context, Diagnostic, DiagnosticKind, DocumentAdapter, LineAdapter, SourcedEvent,
};

/// V0 action names that are tool calls of the agent even without `tool_call_metadata`.
const V0_TOOL_ACTIONS: &[&str] = &[
    "run",
    "run_ipython",
    "read",
    "write",
    "edit",
    "browse",
    "browse_interactive",
    "call_tool_mcp",
];

/// V0 observation names that answer a tool call (an unmatched one is an orphan).
const V0_TOOL_OBSERVATIONS: &[&str] = &[
    "run",
    "run_ipython",
    "read",
    "write",
    "edit",
    "browse",
    "mcp",
    "error",
];

/// Action `args` fields that are bookkeeping, not arguments of the call.
const V0_VOLATILE_ARGS: &[&str] = &[
    "thought",
    "confirmation_state",
    "security_risk",
    "hidden",
    "blocking",
    "is_confirmed",
    "image_urls",
    "impl_source",
];

/// A timestamp: RFC 3339, or a naive ISO time read as UTC.
fn ts(v: &Value<'_>) -> u64 {
    let Some(s) = str_field(v, "timestamp") else {
        return 0;
    };
    parse_rfc3339(s)
        .or_else(|| parse_rfc3339(&format!("{s}Z")))
        .unwrap_or(0)
}

/// An event id as a pairing key (`#<id>`), for numbers and strings alike.
fn event_key(v: Option<&Value<'_>>) -> Option<String> {
    match v? {
        Value::Number(n) if n.is_finite() => Some(format!("#{n}")),
        Value::String(s) if !s.is_empty() => Some(format!("#{}", s.to_string_lossy())),
        _ => None,
    }
}

/// An object without the given keys.
fn without(v: &Value<'_>, keys: &[&str]) -> Value<'static> {
    match v {
        Value::Object(o) => Value::Object(Object::from_entries(
            o.iter()
                .filter(|(k, _)| !keys.iter().any(|x| x.as_bytes() == k.as_wtf8()))
                .map(|(k, v)| (k.clone().into_owned(), v.clone().into_owned()))
                .collect(),
        )),
        other => other.clone().into_owned(),
    }
}

/// The model's own arguments for `tool_call_id`, from a V0 `model_response`.
fn model_arguments(meta: &Value<'_>, id: &str) -> Option<Value<'static>> {
    let choices = meta.get("model_response")?.get("choices")?.as_array()?;
    choices.iter().find_map(|c| {
        c.get("message")?
            .get("tool_calls")?
            .as_array()?
            .iter()
            .find(|tc| str_field(tc, "id") == Some(id))
            .map(|tc| arguments(tc.get("function").and_then(|f| f.get("arguments"))))
    })
}

/// The state of one OpenHands session, one event at a time (V0 and V1 alike).
#[derive(Debug)]
struct Session {
    tracker: Tracker,
    runs: Runs,
}

impl Session {
    fn new(ctx: &Context) -> Self {
        Session {
            tracker: Tracker::new(ctx),
            runs: Runs::new("run"),
        }
    }

    /// One event on line `no`; an unusable event returns a diagnostic.
    fn event(
        &mut self,
        no: u64,
        e: &Value<'_>,
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        if e.as_object().is_none() {
            return Err(bad(no, "an OpenHands event must be a JSON object"));
        }
        if let Some(kind) = str_field(e, "kind") {
            self.v1(no, kind, e, out);
            return Ok(());
        }
        let t = ts(e);
        if let Some(action) = str_field(e, "action") {
            self.v0_action(no, action, e, t, out)
        } else if let Some(observation) = str_field(e, "observation") {
            self.v0_observation(no, observation, e, t, out);
            Ok(())
        } else {
            Err(Diagnostic::new(
                no,
                DiagnosticKind::UnknownEntry,
                "an event with neither `action`, `observation` nor `kind`; skipped",
            ))
        }
    }

    fn boundary(&mut self, out: &mut Vec<SourcedEvent>) {
        self.tracker.end_turn(out);
        self.runs.boundary();
    }

    fn v0_action(
        &mut self,
        no: u64,
        action: &str,
        e: &Value<'_>,
        t: u64,
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        let source = str_field(e, "source");
        match action {
            "message" if source == Some("user") => {
                self.boundary(out);
                return Ok(());
            }
            "condensation" => {
                self.tracker.compaction(no, &self.runs.current(), t, out);
                return Ok(());
            }
            _ => {}
        }
        let meta = e.get("tool_call_metadata").filter(|m| !m.is_null());
        let (tool, call_id, args) = match meta {
            Some(m) => {
                let Some(name) = str_field(m, "function_name") else {
                    return Err(bad(no, "`tool_call_metadata` without `function_name`"));
                };
                let id = id_field(m, "tool_call_id");
                let args = id
                    .as_deref()
                    .and_then(|id| model_arguments(m, id))
                    .unwrap_or_else(|| {
                        without(e.get("args").unwrap_or(&Value::Null), V0_VOLATILE_ARGS)
                    });
                (name.to_string(), id, args)
            }
            None if source == Some("agent") && V0_TOOL_ACTIONS.contains(&action) => {
                let args = without(e.get("args").unwrap_or(&Value::Null), V0_VOLATILE_ARGS);
                (action.to_string(), None, args)
            }
            None => return Ok(()),
        };
        let key = event_key(e.get("id"));
        let mut call = PendingCall::new(no, &self.runs.current(), call_id, &tool, args);
        call.ts = t;
        self.tracker.call(key, call, out);
        self.runs.used();
        Ok(())
    }

    fn v0_observation(
        &mut self,
        no: u64,
        observation: &str,
        e: &Value<'_>,
        t: u64,
        out: &mut Vec<SourcedEvent>,
    ) {
        let key = event_key(e.get("cause"));
        let Some(call) = key.as_deref().and_then(|k| self.tracker.take(Some(k))) else {
            if V0_TOOL_OBSERVATIONS.contains(&observation) && key.is_some() {
                self.tracker.orphan(no, None);
            }
            return;
        };
        let text = content_text(e.get("content").unwrap_or(&Value::Null));
        let payload = if observation == "error" {
            Payload::Error(Value::from(text))
        } else if let Some(code) = e
            .get("extras")
            .and_then(|x| x.get("metadata"))
            .and_then(|m| m.get("exit_code"))
            .and_then(Value::as_f64)
            // -1: OpenHands could not read the exit status (no PS1 metadata). Unknown is
            // not a failure: the output alone is the outcome.
            .filter(|code| *code != -1.0)
        {
            exec_payload(&text, code)
        } else {
            Payload::Result(text_result(&text))
        };
        self.tracker.emit(call, no, payload, t, out);
    }

    fn v1(&mut self, no: u64, kind: &str, e: &Value<'_>, out: &mut Vec<SourcedEvent>) {
        let t = ts(e);
        match kind {
            "ActionEvent" => {
                let Some(tool) = str_field(e, "tool_name") else {
                    self.tracker.diagnose(
                        no,
                        DiagnosticKind::BadField,
                        "ActionEvent without `tool_name`",
                    );
                    return;
                };
                let args = match e.get("tool_call").and_then(|c| c.get("arguments")) {
                    Some(a) => arguments(Some(a)),
                    None => without(e.get("action").unwrap_or(&Value::Null), &["kind"]),
                };
                // V1 pairs by the tool call id (an AgentErrorEvent names only that).
                let key = id_field(e, "tool_call_id").or_else(|| event_key(e.get("id")));
                let mut call = PendingCall::new(
                    no,
                    &self.runs.current(),
                    id_field(e, "tool_call_id"),
                    tool,
                    args,
                );
                call.ts = t;
                self.tracker.call(key, call, out);
                self.runs.used();
            }
            "ObservationEvent" | "AgentErrorEvent" | "UserRejectObservation" => {
                let key = id_field(e, "tool_call_id").or_else(|| event_key(e.get("action_id")));
                let Some(call) = key.as_deref().and_then(|k| self.tracker.take(Some(k))) else {
                    self.tracker.orphan(no, key.as_deref());
                    return;
                };
                let payload = match kind {
                    "AgentErrorEvent" => {
                        Payload::Error(Value::from(str_field(e, "error").unwrap_or("").to_string()))
                    }
                    "UserRejectObservation" => Payload::Error(Value::from(format!(
                        "rejected by the user: {}",
                        str_field(e, "rejection_reason").unwrap_or("")
                    ))),
                    _ => {
                        let obs = e.get("observation").unwrap_or(&Value::Null);
                        let text = content_text(obs.get("content").unwrap_or(&Value::Null));
                        if obs.get("is_error").and_then(Value::as_bool) == Some(true) {
                            Payload::Error(Value::from(text))
                        } else if let Some(code) = obs.get("exit_code").and_then(Value::as_f64) {
                            exec_payload(&text, code)
                        } else {
                            Payload::Result(text_result(&text))
                        }
                    }
                };
                self.tracker.emit(call, no, payload, t, out);
            }
            "MessageEvent" => {
                let role = e
                    .get("llm_message")
                    .and_then(|m| str_field(m, "role"))
                    .or_else(|| str_field(e, "source"));
                if role == Some("user") {
                    self.boundary(out);
                }
            }
            "Condensation" | "CondensationSummaryEvent" => {
                self.tracker.compaction(no, &self.runs.current(), t, out);
            }
            _ => {}
        }
    }
}

/// A shell command's outcome: its output and exit code (what changes from run to run,
/// pid, host, timing, is left out).
fn exec_payload(text: &str, code: f64) -> Payload<'static> {
    let block = text_result(text)
        .get("content")
        .cloned()
        .unwrap_or(Value::Null);
    Payload::Result(Value::Object(Object::from_entries(vec![
        ("content".into(), block),
        (
            "details".into(),
            Value::Object(Object::from_entries(vec![(
                "exitCode".into(),
                Value::Number(code),
            )])),
        ),
    ])))
}

fn bad(no: u64, message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(no, DiagnosticKind::BadField, message)
}

/// The events of a history list: events, or `[action, observation]` pairs (old outputs).
fn flatten<'v>(items: &'v [Value<'v>]) -> Vec<&'v Value<'v>> {
    items
        .iter()
        .flat_map(|i| match i {
            Value::Array(pair) => pair.iter().collect::<Vec<_>>(),
            other => vec![other],
        })
        .collect()
}

/// An OpenHands event list as a JSON document: a V0 `trajectory.json` array, a JSON array
/// of V1 events, or one evaluation record (`{"instance_id","history":[…]}`).
///
/// ```
/// use loopguard_adapters::{openhands::OpenHands, Context, DocumentAdapter};
/// let doc = br#"[{"id":1,"source":"user","action":"message","args":{"content":"fix it"}},
///   {"id":2,"source":"agent","action":"run","args":{"command":"ls","thought":"look"},
///    "tool_call_metadata":{"function_name":"execute_bash","tool_call_id":"toolu_1"}},
///   {"id":3,"source":"agent","cause":2,"observation":"run","content":"a.py",
///    "extras":{"command":"ls","metadata":{"exit_code":0,"pid":7}}}]"#;
/// let a = OpenHands.adapt(doc, &Context::default())?;
/// assert_eq!(a.events.len(), 2);
/// assert_eq!(a.events[0].event.tool.as_ref().and_then(|t| t.as_str()), Some("execute_bash"));
/// # Ok::<(), loopguard_adapters::Diagnostic>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenHands;

impl DocumentAdapter for OpenHands {
    fn adapt(&self, doc: &[u8], ctx: &Context) -> Result<Adapted, Diagnostic> {
        let value = loopguard_core::json::parse(doc).map_err(|e| document_error(doc, &e))?;
        let events = match &value {
            Value::Array(items) => items.as_slice(),
            Value::Object(_) => match value.get("history").or_else(|| value.get("events")) {
                Some(Value::Array(items)) => items.as_slice(),
                _ => {
                    return Err(bad(
                        1,
                        "expected an array of events or an object with `history`",
                    ))
                }
            },
            _ => return Err(bad(1, "expected an array of OpenHands events")),
        };
        let mut session = Session::new(ctx);
        let mut adapted = Adapted::default();
        each_numbered(flatten(events), &mut adapted, |no, e, out| {
            session.event(no, e, out)
        });
        Ok(session.tracker.finish_document(adapted))
    }
}

/// OpenHands events as JSON Lines (V1 SDK events, or V0 events), one event per line.
///
/// ```
/// use loopguard_adapters::{openhands::OpenHandsEventsAdapter, Context, LineAdapter};
/// let mut a = OpenHandsEventsAdapter::new(Context::default());
/// let mut out = Vec::new();
/// a.line(1, br#"{"kind":"ActionEvent","id":"e1","source":"agent","tool_name":"execute_bash","tool_call_id":"call_1","tool_call":{"id":"call_1","name":"execute_bash","arguments":"{\"command\":\"ls\"}"},"action":{"kind":"ExecuteBashAction","command":"ls"}}"#, &mut out)?;
/// a.line(2, br#"{"kind":"ObservationEvent","id":"e2","source":"environment","action_id":"e1","tool_name":"execute_bash","tool_call_id":"call_1","observation":{"kind":"ExecuteBashObservation","content":[{"type":"text","text":"a.py"}],"is_error":false}}"#, &mut out)?;
/// assert!(a.finish(&mut out).is_empty());
/// assert_eq!(out.len(), 2);
/// # Ok::<(), loopguard_adapters::Diagnostic>(())
/// ```
#[derive(Debug)]
pub struct OpenHandsEventsAdapter {
    session: Session,
}

crate::common::json_lines_adapter!(OpenHandsEventsAdapter, session: Session, event);

/// OpenHands evaluation output (`output.jsonl`): one run per line, each a session named
/// `<file session>/<instance_id>` (the line number when it has no id). Every event of a
/// run carries the run's line.
///
/// ```
/// use loopguard_adapters::{openhands::OpenHandsEvalAdapter, Context, LineAdapter};
/// let mut a = OpenHandsEvalAdapter::new(Context { session: "output".into(), agent: None });
/// let mut out = Vec::new();
/// a.line(1, br#"{"instance_id":"django-1","history":[{"id":0,"source":"agent","action":"run","args":{"command":"ls"},"tool_call_metadata":{"function_name":"execute_bash","tool_call_id":"t1"}},{"id":1,"cause":0,"observation":"run","content":"x","extras":{"metadata":{"exit_code":0}}}]}"#, &mut out)?;
/// assert!(a.finish(&mut out).is_empty());
/// assert_eq!(out[0].event.session.as_ref().and_then(|s| s.as_str()), Some("output/django-1"));
/// # Ok::<(), loopguard_adapters::Diagnostic>(())
/// ```
#[derive(Debug)]
pub struct OpenHandsEvalAdapter {
    ctx: Context,
    diagnostics: Vec<Diagnostic>,
}

impl OpenHandsEvalAdapter {
    /// An adapter naming its sessions after `ctx.session`.
    pub fn new(ctx: Context) -> Self {
        OpenHandsEvalAdapter {
            ctx,
            diagnostics: Vec::new(),
        }
    }
}

impl LineAdapter for OpenHandsEvalAdapter {
    fn line(
        &mut self,
        no: u64,
        text: &[u8],
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        let v = parse_line(no, text)?;
        let Some(Value::Array(history)) = v.get("history") else {
            return Err(bad(no, "an evaluation record without a `history` array"));
        };
        let id = match v.get("instance_id") {
            Some(Value::String(s)) => s.to_string_lossy().into_owned(),
            Some(Value::Number(n)) => n.to_string(),
            _ => format!("line-{no}"),
        };
        let session = if self.ctx.session.is_empty() {
            id
        } else {
            format!("{}/{id}", self.ctx.session)
        };
        let ctx = Context {
            session,
            agent: self.ctx.agent.clone(),
        };
        let mut state = Session::new(&ctx);
        for e in flatten(history) {
            if let Err(mut d) = state.event(no, e, out) {
                d.message = format!("{}: {}", ctx.session, d.message);
                self.diagnostics.push(d);
            }
        }
        self.diagnostics.extend(state.tracker.finish(out));
        Ok(())
    }

    fn finish(&mut self, _out: &mut Vec<SourcedEvent>) -> Vec<Diagnostic> {
        let mut d = std::mem::take(&mut self.diagnostics);
        d.sort_by_key(|d| d.line);
        d
    }
}
