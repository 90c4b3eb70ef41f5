//! The one call/result pairing every adapter uses (docs/transcripts.md §5, "Pairing").
//!
//! A transcript writes a tool call and, somewhere else, its result. [`Tracker`] pairs them
//! and emits each call immediately followed by its outcome, as the agent ran them:
//!
//! * **By id, in any order.** A result pairs with the oldest waiting call with its id. A
//!   result whose call has not been read yet (Claude Code sometimes writes the
//!   `tool_result` line of a parallel call before its `tool_use` line) is held, and the
//!   pair is emitted when the call is read.
//! * **By position** when ids are missing: a result without an id takes the oldest waiting
//!   call. Ids that repeat (Kimi through llama.cpp numbers calls `functions.read:3` afresh
//!   each run) pair oldest first.
//! * **A call is a call.** A call that never gets a result (a session exported mid-turn, an
//!   interrupted call) is still replayed, on its own, when its turn ends (the adapter says
//!   when: a new prompt, a later assistant turn) or the input ends; it is reported as
//!   [`DiagnosticKind::Unanswered`]. When the transcript holds its result in another form
//!   (Codex's `exec_command_end` event) that form is its outcome ([`Tracker::fallback`]).
//! * A result that never finds its call is an [`DiagnosticKind::Orphan`], not replayed.
//!
//! Memory stays bounded: at most [`PENDING_LIMIT`] waiting calls, held results and
//! fallbacks; the oldest beyond that are settled early (replayed alone, reported orphan,
//! forgotten).

use std::collections::VecDeque;

use loopguard_core::Value;
use loopguard_events::Payload;

use crate::common::{content_text, id_field, str_field, text_result, Builder, Pending};
use crate::{Adapted, Context, Diagnostic, DiagnosticKind, SourcedEvent};

/// Calls (and results, and fallbacks) that may wait at once.
pub(crate) const PENDING_LIMIT: usize = 4096;

/// A call seen in a transcript, waiting for its result.
#[derive(Clone, Debug)]
pub(crate) struct PendingCall {
    /// Line (or record) of the call.
    pub(crate) line: u64,
    /// Run id.
    pub(crate) run: Option<String>,
    /// The run was named by the transcript, not inferred (OpenClaw's `__openclaw.runId`).
    pub(crate) explicit_run: bool,
    /// The call id written on the events.
    pub(crate) call_id: Option<String>,
    /// Tool name, as given.
    pub(crate) tool: String,
    /// Arguments.
    pub(crate) args: Value<'static>,
    /// Timestamp of the call, 0 when unknown.
    pub(crate) ts: u64,
    /// Tokens of the message that made the call, split between its calls.
    pub(crate) tokens: Option<u64>,
    /// The model message the call belongs to (Claude Code's `message.id`).
    pub(crate) group: Option<String>,
}

impl PendingCall {
    /// A call with no timestamp, tokens or group.
    pub(crate) fn new(
        line: u64,
        run: &str,
        call_id: Option<String>,
        tool: &str,
        args: Value<'static>,
    ) -> Self {
        PendingCall {
            line,
            run: Some(run.to_string()),
            explicit_run: false,
            call_id,
            tool: tool.to_string(),
            args,
            ts: 0,
            tokens: None,
            group: None,
        }
    }
}

/// A result read before its call, or another form of a call's result.
#[derive(Clone, Debug)]
pub(crate) struct HeldResult {
    /// Line (or record) of the result.
    pub(crate) line: u64,
    /// The call id it answers.
    key: String,
    /// The outcome.
    pub(crate) payload: Payload<'static>,
    /// Its timestamp, 0 when unknown.
    pub(crate) ts: u64,
}

/// Pairs results with calls and collects the diagnostics of pairing (see the module
/// documentation).
#[derive(Debug)]
pub(crate) struct Tracker {
    builder: Builder,
    pending: Pending<PendingCall>,
    held: VecDeque<HeldResult>,
    fallbacks: VecDeque<HeldResult>,
    diagnostics: Vec<Diagnostic>,
}

impl Tracker {
    pub(crate) fn new(ctx: &Context) -> Self {
        Tracker {
            builder: Builder::new(ctx),
            pending: Pending::new(PENDING_LIMIT),
            held: VecDeque::new(),
            fallbacks: VecDeque::new(),
            diagnostics: Vec::new(),
        }
    }

    /// A call waits for its result under `key` (its id; `None` pairs by position). When its
    /// result was read already, the pair is emitted now.
    pub(crate) fn call(
        &mut self,
        key: Option<String>,
        call: PendingCall,
        out: &mut Vec<SourcedEvent>,
    ) {
        if let Some(held) = self.take_held(key.as_deref()) {
            self.emit(call, held.line, held.payload, held.ts, out);
            return;
        }
        if let Some(dropped) = self.pending.push(key, call) {
            self.replay_alone(dropped, out);
        }
    }

    /// The call a result with `key` belongs to.
    pub(crate) fn take(&mut self, key: Option<&str>) -> Option<PendingCall> {
        self.pending.take(key)
    }

    /// The oldest result held for the call id `key`.
    pub(crate) fn take_held(&mut self, key: Option<&str>) -> Option<HeldResult> {
        let key = key.filter(|k| !k.is_empty())?;
        let i = self.held.iter().position(|h| h.key == key)?;
        self.held.remove(i)
    }

    /// Holds a result whose call has not been read yet.
    pub(crate) fn hold(&mut self, line: u64, key: &str, payload: Payload<'static>, ts: u64) {
        if self.held.len() >= PENDING_LIMIT {
            if let Some(old) = self.held.pop_front() {
                self.orphan(old.line, Some(&old.key));
            }
        }
        self.held.push_back(HeldResult {
            line,
            key: key.to_string(),
            payload,
            ts,
        });
    }

    /// Another form of the result of call `key` (Codex's `exec_command_end`): the call's
    /// outcome if its own result never comes.
    pub(crate) fn fallback(&mut self, line: u64, key: &str, payload: Payload<'static>, ts: u64) {
        if self.fallbacks.len() >= PENDING_LIMIT {
            self.fallbacks.pop_front();
        }
        self.fallbacks.push_back(HeldResult {
            line,
            key: key.to_string(),
            payload,
            ts,
        });
    }

    fn take_fallback(&mut self, key: Option<&str>) -> Option<HeldResult> {
        let key = key.filter(|k| !k.is_empty())?;
        let i = self.fallbacks.iter().position(|h| h.key == key)?;
        self.fallbacks.remove(i)
    }

    /// Emits a call immediately followed by its outcome.
    pub(crate) fn emit(
        &mut self,
        call: PendingCall,
        line: u64,
        payload: Payload<'static>,
        ts: u64,
        out: &mut Vec<SourcedEvent>,
    ) {
        // The call's own result came: its other form is not needed.
        if !self.fallbacks.is_empty() {
            self.take_fallback(call.call_id.as_deref());
        }
        let run = call.run.as_deref();
        let id = call.call_id.as_deref();
        out.push(self.builder.call(
            call.line,
            run,
            id,
            &call.tool,
            call.args.clone(),
            call.ts,
            call.tokens,
        ));
        out.push(
            self.builder
                .outcome(line, run, id, &call.tool, call.args, payload, ts),
        );
    }

    /// A call whose result never came: with its result's other form when the transcript
    /// has one, else alone (its outcome is missing), reported as unanswered.
    pub(crate) fn replay_alone(&mut self, call: PendingCall, out: &mut Vec<SourcedEvent>) {
        if let Some(f) = self.take_fallback(call.call_id.as_deref()) {
            self.emit(call, f.line, f.payload, f.ts, out);
            return;
        }
        let id = call
            .call_id
            .as_deref()
            .map(|i| format!(" ({i})"))
            .unwrap_or_default();
        self.diagnostics.push(Diagnostic::new(
            call.line,
            DiagnosticKind::Unanswered,
            format!(
                "call of {}{id} never got a result; replayed without an outcome",
                call.tool
            ),
        ));
        out.push(self.builder.call(
            call.line,
            call.run.as_deref(),
            call.call_id.as_deref(),
            &call.tool,
            call.args,
            call.ts,
            call.tokens,
        ));
    }

    /// Pairs a result with its call and emits both; holds a result with an id whose call
    /// has not been read; reports a result without an id and without a waiting call.
    pub(crate) fn result(
        &mut self,
        line: u64,
        key: Option<&str>,
        payload: Payload<'static>,
        ts: u64,
        out: &mut Vec<SourcedEvent>,
    ) {
        match self.take(key) {
            Some(call) => self.emit(call, line, payload, ts, out),
            None => match key.filter(|k| !k.is_empty()) {
                Some(k) => self.hold(line, k, payload, ts),
                None => self.orphan(line, None),
            },
        }
    }

    /// Entry `i` of an assistant message's `tool_calls` (`{id, function: {name,
    /// arguments}}`, arguments parsed leniently), made on line `no` at `ts` in `run`, waits
    /// for its result. Returns `false`, with a diagnostic, when it has no `function.name`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn tool_call(
        &mut self,
        no: u64,
        i: usize,
        tc: &Value<'_>,
        run: &str,
        ts: u64,
        tokens: Option<u64>,
        out: &mut Vec<SourcedEvent>,
    ) -> bool {
        let function = tc.get("function");
        let Some(name) = function.and_then(|f| str_field(f, "name")) else {
            self.diagnose(
                no,
                DiagnosticKind::BadField,
                format!("tool_calls[{i}]: field `function.name` missing"),
            );
            return false;
        };
        let id = id_field(tc, "id");
        let args = crate::common::arguments(function.and_then(|f| f.get("arguments")));
        let mut call = PendingCall::new(no, run, id.clone(), name, args);
        call.ts = ts;
        call.tokens = tokens;
        self.call(id, call, out);
        true
    }

    /// A `{"role":"tool","tool_call_id","content"}` message on line `no` at `ts`: the
    /// result of the call with that id, as [`text_result`] of the content text.
    pub(crate) fn tool_message(
        &mut self,
        no: u64,
        m: &Value<'_>,
        ts: u64,
        out: &mut Vec<SourcedEvent>,
    ) {
        let key = id_field(m, "tool_call_id");
        let text = content_text(m.get("content").unwrap_or(&Value::Null));
        self.result(
            no,
            key.as_deref(),
            Payload::Result(text_result(&text)),
            ts,
            out,
        );
    }

    /// A compaction event.
    pub(crate) fn compaction(&self, line: u64, run: &str, ts: u64, out: &mut Vec<SourcedEvent>) {
        out.push(self.builder.compaction(line, Some(run), ts));
    }

    /// Reports a result whose call was not found.
    pub(crate) fn orphan(&mut self, line: u64, key: Option<&str>) {
        let message = match key.filter(|k| !k.is_empty() && !k.starts_with('\0')) {
            Some(id) => format!("result for call id {id:?} has no call; not replayed"),
            None => "result without a waiting call; not replayed".to_string(),
        };
        self.diagnostics
            .push(Diagnostic::new(line, DiagnosticKind::Orphan, message));
    }

    /// Records a diagnostic to be returned by [`Tracker::finish`].
    pub(crate) fn diagnose(&mut self, line: u64, kind: DiagnosticKind, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic::new(line, kind, message));
    }

    /// A turn ended: every waiting call is replayed alone (in call order), and results held
    /// for calls never read are orphans.
    pub(crate) fn end_turn(&mut self, out: &mut Vec<SourcedEvent>) {
        self.end_turn_where(out, |_| true, true);
    }

    /// A turn ended for the waiting calls `ends` selects (the others keep waiting: another
    /// run, a subagent); held results expire too when `expire_held`.
    pub(crate) fn end_turn_where(
        &mut self,
        out: &mut Vec<SourcedEvent>,
        ends: impl Fn(&PendingCall) -> bool,
        expire_held: bool,
    ) {
        let waiting: Vec<(Option<String>, PendingCall)> = self.pending.drain_keyed().collect();
        for (key, call) in waiting {
            if ends(&call) {
                self.replay_alone(call, out);
            } else {
                self.pending.push(key, call);
            }
        }
        if expire_held {
            let held: Vec<HeldResult> = self.held.drain(..).collect();
            for h in held {
                self.orphan(h.line, Some(&h.key));
            }
            self.fallbacks.clear();
        }
    }

    /// The input ended: settles every waiting call and held result, and returns every
    /// diagnostic collected, in line order.
    pub(crate) fn finish(&mut self, out: &mut Vec<SourcedEvent>) -> Vec<Diagnostic> {
        self.end_turn(out);
        let mut d = std::mem::take(&mut self.diagnostics);
        d.sort_by_key(|d| d.line);
        d
    }

    /// A whole document was read into `adapted`: settles it like [`Tracker::finish`], adds
    /// those diagnostics to the adapter's own and puts them all in line order.
    pub(crate) fn finish_document(&mut self, mut adapted: Adapted) -> Adapted {
        adapted.diagnostics.extend(self.finish(&mut adapted.events));
        adapted.diagnostics.sort_by_key(|d| d.line);
        adapted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopguard_events::EventKind;

    fn tracker() -> Tracker {
        Tracker::new(&Context {
            session: "s".into(),
            agent: None,
        })
    }

    fn call(line: u64, id: Option<&str>) -> PendingCall {
        PendingCall::new(
            line,
            "run-1",
            id.map(str::to_string),
            "read",
            Value::from("x"),
        )
    }

    fn ok(text: &str) -> Payload<'static> {
        Payload::Result(text_result(text))
    }

    fn shape(out: &[SourcedEvent]) -> Vec<(EventKind, u64)> {
        out.iter().map(|e| (e.event.kind, e.line)).collect()
    }

    #[test]
    fn results_pair_by_id_in_any_order() {
        let mut t = tracker();
        let mut out = Vec::new();
        // A result written before its call (Claude Code's parallel calls).
        t.result(1, Some("b"), ok("B"), 0, &mut out);
        t.call(Some("a".into()), call(2, Some("a")), &mut out);
        t.call(Some("b".into()), call(3, Some("b")), &mut out);
        t.result(4, Some("a"), ok("A"), 0, &mut out);
        assert!(t.finish(&mut out).is_empty());
        assert_eq!(
            shape(&out),
            [
                (EventKind::Call, 3),
                (EventKind::Outcome, 1),
                (EventKind::Call, 2),
                (EventKind::Outcome, 4)
            ]
        );
    }

    #[test]
    fn missing_and_repeated_ids_pair_by_position() {
        let mut t = tracker();
        let mut out = Vec::new();
        t.call(Some("x".into()), call(1, Some("x")), &mut out);
        t.call(Some("x".into()), call(2, Some("x")), &mut out);
        t.call(None, call(3, None), &mut out);
        t.result(4, Some("x"), ok("1"), 0, &mut out);
        t.result(5, Some("x"), ok("2"), 0, &mut out);
        t.result(6, None, ok("3"), 0, &mut out);
        t.result(7, None, ok("4"), 0, &mut out); // nothing waits: an orphan
        let d = t.finish(&mut out);
        let pairs: Vec<(u64, u64)> = out.chunks(2).map(|p| (p[0].line, p[1].line)).collect();
        assert_eq!(pairs, [(1, 4), (2, 5), (3, 6)]);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!((d[0].line, d[0].kind), (7, DiagnosticKind::Orphan));
    }

    #[test]
    fn unanswered_calls_are_replayed_and_fallbacks_used() {
        let mut t = tracker();
        let mut out = Vec::new();
        t.call(Some("a".into()), call(1, Some("a")), &mut out);
        t.call(Some("b".into()), call(2, Some("b")), &mut out);
        t.fallback(3, "b", ok("from exec_command_end"), 0);
        t.result(4, None, ok("?"), 0, &mut out); // takes the oldest: a
        t.end_turn(&mut out);
        t.result(5, Some("zzz"), ok("late"), 0, &mut out);
        let d = t.finish(&mut out);
        assert_eq!(
            shape(&out),
            [
                (EventKind::Call, 1),
                (EventKind::Outcome, 4),
                (EventKind::Call, 2),
                (EventKind::Outcome, 3)
            ]
        );
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].kind, DiagnosticKind::Orphan);
        // Without a fallback, the call is replayed with no outcome.
        let mut t = tracker();
        let mut out = Vec::new();
        t.call(Some("a".into()), call(7, Some("a")), &mut out);
        let d = t.finish(&mut out);
        assert_eq!(shape(&out), [(EventKind::Call, 7)]);
        assert_eq!(d[0].kind, DiagnosticKind::Unanswered);
        assert!(d[0].message.contains("replayed without an outcome"));
    }
}
