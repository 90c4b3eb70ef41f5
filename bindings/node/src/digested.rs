//! Event lines in the layout the npm package writes, read into their envelope and digests
//! without building values (docs/typescript.md, "Performance").
//!
//! The npm package's JavaScript half (`bindings/node/lib/convert.cjs`) writes a call as
//! `{"type":"call","session":S,"tool":T[,"run":R][,"callId":C][,"agent":A],"args":ARGS}` and
//! an outcome as the same with `,"result":RESULT` or `,"error":ERROR` after the arguments.
//! The engine keeps digests, not values: [`digest_line`] takes the arguments' digest and the
//! result's hash straight from the JSON text (`args_digest_from_json`,
//! `outcome_hash_from_json` in `loopguard_core::hashing`), and the guard is handed the
//! envelope alone ([`Input::Prehashed`](loopguard_guard::Input::Prehashed)).
//!
//! Only what is sure to be decided as the whole line would be is read: ids written without
//! escapes, no `agent` (an agent may have its own policy), a tool without hashing rules of
//! its own, arguments and a result as `JSON.stringify` writes them, and, for an outcome, the
//! arguments of the call just decided, byte for byte, which spares reading them again.
//! Anything else is `None`, and the caller parses and applies the whole line: the same
//! decision, or the error naming the field.
//!
//! The addon cannot be a Rust test binary (its Node-API symbols resolve only inside a running
//! `node`), so this module depends on nothing of the addon: `tests/digested.rs` and the
//! `node_pair` example include it by path.

use loopguard_core::hashing::{args_digest_from_json, outcome_hash_from_json, ArgsDigest};
use loopguard_core::{JsString, Value};
use loopguard_events::{Event, EventKind, Payload};
use loopguard_guard::Prehashed;

/// A line [`digest_line`] read: the envelope as an event, and its values' digests.
#[derive(Debug)]
pub(crate) struct DigestedLine<'a> {
    /// The envelope (`args` empty, an outcome's `payload` null: neither is looked at).
    pub event: Event<'a>,
    /// The arguments' digest and an outcome's hash, for
    /// [`Input::Prehashed`](loopguard_guard::Input::Prehashed).
    pub pre: Prehashed,
    /// A call's arguments' JSON text, which the outcome after it repeats (empty for an
    /// outcome).
    pub args: &'a [u8],
}

/// Reads an event line written in the npm package's layout (module `digested`) into its
/// envelope and its values' digests, for a guard with the plain tool profile and the default
/// hashing settings. `last_call` is the digest and the JSON text of the arguments of the call
/// decided before, for an outcome that repeats them; an outcome is read only then. `None` for
/// any other line, which the caller parses whole.
pub(crate) fn digest_line<'a>(
    line: &'a [u8],
    last_call: Option<(ArgsDigest, &[u8])>,
) -> Option<DigestedLine<'a>> {
    let mut c = Cursor { s: line, i: 0 };
    let kind = if c.eat(b"{\"type\":\"call\",\"session\":") {
        EventKind::Call
    } else if c.eat(b"{\"type\":\"outcome\",\"session\":") {
        EventKind::Outcome
    } else {
        return None;
    };
    let session = c.string()?;
    if !c.eat(b",\"tool\":") {
        return None;
    }
    let tool = c.string()?;
    let run = if c.eat(b",\"run\":") {
        Some(c.string()?)
    } else {
        None
    };
    let call_id = if c.eat(b",\"callId\":") {
        Some(c.string()?)
    } else {
        None
    };
    if !c.eat(b",\"args\":") {
        return None;
    }
    // OpenClaw's known polls: `command_status` always, `process` by its arguments (which
    // are not read here; its outcome hash reads them too).
    let known_poll = match tool.as_bytes() {
        b"process" => return None,
        t => t == b"command_status",
    };
    let rest = &line[c.i..];
    let (args, pre, payload) = match kind {
        EventKind::Call => {
            let args = rest.strip_suffix(b"}")?;
            let digest = with_scratch(|s| args_digest_from_json(tool.as_bytes(), args, s))?;
            let pre = Prehashed {
                args: digest,
                known_poll,
                outcome: None,
            };
            (args, pre, None)
        }
        _ => {
            // The call's arguments, byte for byte (read and checked with that call).
            let (digest, call_args) = last_call?;
            let result = rest
                .strip_prefix(call_args)?
                .strip_prefix(b",\"result\":")?
                .strip_suffix(b"}")?;
            let hash = with_scratch(|s| outcome_hash_from_json(tool.as_bytes(), result, s))?;
            let pre = Prehashed {
                args: digest,
                known_poll,
                outcome: Some(hash),
            };
            // The engine does not look at the payload of a prehashed event; an outcome has
            // one, as `parse_event` guarantees.
            (&line[0..0], pre, Some(Payload::Result(Value::Null)))
        }
    };
    let event = Event {
        kind,
        session: Some(JsString::from(session)),
        // The layout has no `parentSession`: a line with one is parsed whole.
        parent_session: None,
        run: run.map(JsString::from),
        agent: None,
        call_id: call_id.map(JsString::from),
        tool: Some(JsString::from(tool)),
        args: Value::Object(Default::default()),
        payload,
        timestamp_ms: 0,
        // Not read from the text: a policy with spend budgets declines this fast path
        // (`Input::needs_values`), and the whole line is parsed.
        usage: None,
    };
    Some(DigestedLine { event, pre, args })
}

/// Runs `f` with this thread's buffer for the canonical text the digests are taken of,
/// reused from line to line (the core keeps none), unless `f` leaves it large.
fn with_scratch<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    /// A buffer grown past this by a large value is not kept.
    const KEEP: usize = 64 * 1024;
    thread_local! {
        static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    }
    let mut scratch = SCRATCH.take();
    let r = f(&mut scratch);
    if scratch.capacity() <= KEEP {
        SCRATCH.set(scratch);
    }
    r
}

/// A position in a line.
struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    /// Steps over `token` when the line continues with it.
    fn eat(&mut self, token: &[u8]) -> bool {
        let found = self.s[self.i..].starts_with(token);
        if found {
            self.i += token.len();
        }
        found
    }

    /// A JSON string without escapes (ids the JavaScript half quotes as they are), as text.
    fn string(&mut self) -> Option<&'a str> {
        if !self.eat(b"\"") {
            return None;
        }
        let start = self.i;
        let len = self.s[start..]
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        let end = start + len;
        if self.s[end] != b'"' {
            return None;
        }
        self.i = end + 1;
        std::str::from_utf8(&self.s[start..end]).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopguard_core::Hashing;
    use loopguard_events::parse_event;
    use loopguard_guard::{Guard, Input, ToolProfile};

    /// What the whole line gives: the event's envelope and its digests.
    fn whole(line: &[u8]) -> (Event<'_>, Prehashed) {
        let event = parse_event(line, 1).expect("event");
        let pre = Prehashed::of(&event, ToolProfile::Plain, &Hashing::default()).expect("plain");
        (event, pre)
    }

    fn envelope(e: &Event<'_>) -> (EventKind, Vec<Option<Vec<u8>>>) {
        let f = |s: &Option<JsString<'_>>| s.as_ref().map(|s| s.as_wtf8().to_vec());
        (
            e.kind,
            vec![
                f(&e.session),
                f(&e.run),
                f(&e.agent),
                f(&e.call_id),
                f(&e.tool),
            ],
        )
    }

    /// A call and its outcome read here and applied as [`Input::Prehashed`] get the decisions
    /// their whole lines get.
    #[test]
    fn a_read_pair_is_decided_as_the_whole_lines_are() {
        let (fast, slow) = (Guard::builder().build(), Guard::builder().build());
        let record = |d: loopguard_events::Decision<'_>| {
            let mut out = Vec::new();
            d.write_record(&mut out);
            String::from_utf8(out).expect("UTF-8")
        };
        let mut records = String::new();
        for _ in 0..25 {
            let call = br#"{"type":"call","session":"s","tool":"read","args":{"path":"/a"}}"#;
            let read = digest_line(call, None).expect("read");
            let digest = read.pre.args;
            let a = fast
                .apply(None, Input::Prehashed(&read.event, &read.pre), record)
                .expect("applied");
            let b = slow
                .apply(None, &parse_event(call, 1).expect("event"), record)
                .expect("applied");
            assert_eq!(a, b);
            records.push_str(&a);
            let outcome = br#"{"type":"outcome","session":"s","tool":"read","args":{"path":"/a"},"result":"x"}"#;
            let read = digest_line(outcome, Some((digest, read.args))).expect("read");
            assert!(read.pre.outcome.is_some());
            let a = fast
                .apply(None, Input::Prehashed(&read.event, &read.pre), record)
                .expect("applied");
            let b = slow
                .apply(None, &parse_event(outcome, 2).expect("event"), record)
                .expect("applied");
            assert_eq!(a, b);
            records.push_str(&a);
            // Other arguments than the call's: read whole by the caller.
            assert!(digest_line(outcome, Some((digest, br#"{"path":"/b"}"#))).is_none());
        }
        // Through a whole loop: warnings, then blocks and the ignored outcomes of blocked calls.
        for action in ["warn", "block", "ignored"] {
            let word = format!(r#""decision":"{action}""#);
            assert!(records.contains(&word), "{action}: {records}");
        }
    }

    #[test]
    fn lines_of_the_javascript_half_read_as_the_whole_line_reads_them() {
        let call = br#"{"type":"call","session":"s1","tool":"read","run":"r","callId":"c1","args":{"path":"/a","n":1.50}}"#;
        let fast = digest_line(call, None).expect("read");
        let (event, pre) = whole(call);
        assert_eq!(envelope(&fast.event), envelope(&event));
        assert_eq!(fast.pre, pre);
        assert_eq!(fast.args, br#"{"path":"/a","n":1.50}"#);

        let outcome = br#"{"type":"outcome","session":"s1","tool":"read","run":"r","callId":"c1","args":{"path":"/a","n":1.50},"result":{"content":[{"type":"text","text":"x\n"}],"details":{}}}"#;
        let fast = digest_line(outcome, Some((pre.args, fast.args))).expect("read");
        let (event, pre) = whole(outcome);
        assert_eq!(envelope(&fast.event), envelope(&event));
        assert_eq!(fast.pre, pre);
    }

    #[test]
    fn anything_else_is_left_to_the_whole_line() {
        let args = br#"{"p":1}"#;
        let digest = whole(br#"{"type":"call","tool":"t","args":{"p":1}}"#)
            .1
            .args;
        let last = Some((digest, &args[..]));
        for line in [
            // An escaped id, an agent, a compaction, fields in another order.
            &br#"{"type":"call","session":"s\"1","tool":"t","args":{"p":1}}"#[..],
            br#"{"type":"call","session":"s","tool":"t","agent":"a","args":{"p":1}}"#,
            br#"{"type":"compaction","session":"s"}"#,
            br#"{"type":"call","tool":"t","session":"s","args":{"p":1}}"#,
            // A tool with rules of its own, arguments not read here, not JSON.
            br#"{"type":"call","session":"s","tool":"process","args":{"action":"poll"}}"#,
            br#"{"type":"call","session":"s","tool":"t","args":{"p":1,"p":2}}"#,
            br#"{"type":"call","session":"s","tool":"t","args":{"p":01}}"#,
            br#"{"type":"call","session":"s","tool":"t","args":{"p":1}} "#,
            // An outcome with other arguments than the call's, an error, a tool with rules.
            br#"{"type":"outcome","session":"s","tool":"t","args":{"p":2},"result":1}"#,
            br#"{"type":"outcome","session":"s","tool":"t","args":{"p":1},"error":"x"}"#,
            br#"{"type":"outcome","session":"s","tool":"exec","args":{"p":1},"result":1}"#,
            br#"{"type":"outcome","session":"s","tool":"t","args":{"p":1},"result":{"a":}}"#,
        ] {
            assert!(
                digest_line(line, last).is_none(),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        // The same outcome with the call's arguments is read.
        let ok = br#"{"type":"outcome","session":"s","tool":"t","args":{"p":1},"result":1}"#;
        assert!(digest_line(ok, last).is_some());
        assert!(digest_line(ok, None).is_none());
    }
}
