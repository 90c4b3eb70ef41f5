//! One line of the event stream (events.md, format v1).

use loopguard_core::{json::parse_object_fields, json::ParseError, json::ParseErrorKind};
use loopguard_core::{JsString, Value};

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// Before a tool call.
    Call,
    /// After a tool call.
    Outcome,
    /// A compaction finished.
    Compaction,
}

impl EventKind {
    /// The `type` string.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Call => "call",
            EventKind::Outcome => "outcome",
            EventKind::Compaction => "compaction",
        }
    }
}

/// An outcome's payload.
#[derive(Clone, Debug, PartialEq)]
pub enum Payload<'a> {
    /// `result`
    Result(Value<'a>),
    /// `error`
    Error(Value<'a>),
}

/// The model usage an event reports (`usage`, an optional extension): what the model turn
/// that made a call used. Budgets (`loopguard.budgets.tokensPerRun`, `costPerRun`) add it
/// up per run; it never changes a detector's decision.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    /// Tokens: `tokens`, else `inputTokens + outputTokens`.
    pub tokens: u64,
    /// `cost`, in the producer's unit (0 when not given).
    pub cost: f64,
}

/// A parsed event, borrowing from its line.
#[derive(Clone, Debug, PartialEq)]
pub struct Event<'a> {
    /// `type`
    pub kind: EventKind,
    /// `session`, when given.
    pub session: Option<JsString<'a>>,
    /// `parentSession` (an optional extension): the session of the agent that launched
    /// this one (a sub-agent, a hand-off). The event is still decided in its own session;
    /// the parent's counts its calls for the budgets and forgets it with itself.
    pub parent_session: Option<JsString<'a>>,
    /// `run` as given (not trimmed).
    pub run: Option<JsString<'a>>,
    /// `agent`
    pub agent: Option<JsString<'a>>,
    /// `callId`
    pub call_id: Option<JsString<'a>>,
    /// `tool` (always set for calls and outcomes).
    pub tool: Option<JsString<'a>>,
    /// `args`, `{}` when absent.
    pub args: Value<'a>,
    /// `result` or `error` of an outcome.
    pub payload: Option<Payload<'a>>,
    /// `ts`: milliseconds since the epoch when the producer recorded them (an optional
    /// extension used by transcript adapters; it never changes a decision), else 0.
    pub timestamp_ms: u64,
    /// `usage`: the model usage the event reports, when the producer knows it.
    pub usage: Option<Usage>,
}

impl<'a> Event<'a> {
    /// A copy that owns all its data.
    pub fn into_owned(self) -> Event<'static> {
        Event {
            kind: self.kind,
            session: self.session.map(JsString::into_owned),
            parent_session: self.parent_session.map(JsString::into_owned),
            run: self.run.map(JsString::into_owned),
            agent: self.agent.map(JsString::into_owned),
            call_id: self.call_id.map(JsString::into_owned),
            tool: self.tool.map(JsString::into_owned),
            args: self.args.into_owned(),
            payload: self.payload.map(|p| match p {
                Payload::Result(v) => Payload::Result(v.into_owned()),
                Payload::Error(v) => Payload::Error(v.into_owned()),
            }),
            timestamp_ms: self.timestamp_ms,
            usage: self.usage,
        }
    }

    /// The parent session this event links its session to: `parentSession`, unless it is
    /// empty or names the event's own session (`"default"` when it has none), which link
    /// nothing.
    ///
    /// ```
    /// use loopguard_events::parse_event;
    /// let e = parse_event(br#"{"type":"call","session":"s/a1","parentSession":"s","tool":"t"}"#, 1).unwrap();
    /// assert_eq!(e.linked_parent().and_then(|p| p.as_str()), Some("s"));
    /// let e = parse_event(br#"{"type":"call","parentSession":"default","tool":"t"}"#, 1).unwrap();
    /// assert!(e.linked_parent().is_none());
    /// ```
    pub fn linked_parent(&self) -> Option<&JsString<'a>> {
        let parent = self.parent_session.as_ref()?;
        let own = self
            .session
            .as_ref()
            .map_or(&b"default"[..], JsString::as_wtf8);
        (!parent.as_wtf8().is_empty() && parent.as_wtf8() != own).then_some(parent)
    }

    /// Appends the event as one line of the events.md format (with the newline); reading
    /// it back with [`parse_event`] gives the same event.
    ///
    /// ```
    /// use loopguard_events::parse_event;
    /// let line = br#"{"type":"outcome","session":"s","run":"r","callId":"c","tool":"read","args":{"p":1},"error":"boom","ts":5}"#;
    /// let e = parse_event(line, 1).unwrap();
    /// let mut out = Vec::new();
    /// e.write_json(&mut out);
    /// assert_eq!(parse_event(out.trim_ascii_end(), 1).unwrap(), e);
    /// ```
    pub fn write_json(&self, out: &mut Vec<u8>) {
        use loopguard_core::{json::write_json_string, json::write_json_value};
        out.extend_from_slice(b"{\"type\":\"");
        out.extend_from_slice(self.kind.as_str().as_bytes());
        out.push(b'"');
        let fields = [
            ("session", &self.session),
            ("parentSession", &self.parent_session),
            ("run", &self.run),
            ("agent", &self.agent),
            ("callId", &self.call_id),
            ("tool", &self.tool),
        ];
        for (name, value) in fields {
            if let Some(v) = value {
                out.extend_from_slice(b",\"");
                out.extend_from_slice(name.as_bytes());
                out.extend_from_slice(b"\":");
                write_json_string(out, v);
            }
        }
        if self.kind != EventKind::Compaction {
            out.extend_from_slice(b",\"args\":");
            write_json_value(out, &self.args);
        }
        match &self.payload {
            Some(Payload::Result(v)) => {
                out.extend_from_slice(b",\"result\":");
                write_json_value(out, v);
            }
            Some(Payload::Error(v)) => {
                out.extend_from_slice(b",\"error\":");
                write_json_value(out, v);
            }
            None => {}
        }
        if self.timestamp_ms > 0 {
            out.extend_from_slice(format!(",\"ts\":{}", self.timestamp_ms).as_bytes());
        }
        if let Some(u) = &self.usage {
            out.extend_from_slice(format!(",\"usage\":{{\"tokens\":{}", u.tokens).as_bytes());
            if u.cost > 0.0 {
                out.extend_from_slice(b",\"cost\":");
                loopguard_core::json::write_json_value(out, &Value::Number(u.cost));
            }
            out.push(b'}');
        }
        out.extend_from_slice(b"}\n");
    }
}

/// Why a line is not a valid event.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct EventError {
    /// 1-based line number.
    pub line: u64,
    /// The field at fault, if one is.
    pub field: Option<&'static str>,
    /// What is wrong.
    pub message: String,
}

fn err(line: u64, field: Option<&'static str>, message: impl Into<String>) -> EventError {
    EventError {
        line,
        field,
        message: message.into(),
    }
}

fn describe(v: &Value<'_>) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn json_error(line: u64, e: &ParseError) -> EventError {
    let what = match e.kind {
        ParseErrorKind::InvalidUtf8 => "the line is not valid UTF-8".to_string(),
        _ => format!("not valid JSON: {}", e.kind),
    };
    err(
        line,
        None,
        format!("{what} (byte {} of the line)", e.offset + 1),
    )
}

/// Parses one non-blank line.
///
/// ```
/// use loopguard_events::{parse_event, EventKind};
/// let e = parse_event(br#"{"type":"call","tool":"read","args":{"path":"/a"}}"#, 1).unwrap();
/// assert_eq!(e.kind, EventKind::Call);
/// let bad = parse_event(br#"{"type":"call"}"#, 7).unwrap_err();
/// assert_eq!(bad.to_string(), "line 7: field `tool`: a call needs a `tool` string");
/// ```
pub fn parse_event(line_bytes: &[u8], line: u64) -> Result<Event<'_>, EventError> {
    // The envelope's fields are read into their slots; a repeated field keeps its last
    // value, as with `JSON.parse`. Type checks come after, so the last value is checked.
    let mut slots: [Option<Value<'_>>; 12] = Default::default();
    let parsed = parse_object_fields(line_bytes, &mut slots, |k| {
        Some(match k {
            b"type" => 0,
            b"session" => 1,
            b"run" => 2,
            b"agent" => 3,
            b"callId" => 4,
            b"tool" => 5,
            b"args" => 6,
            b"result" => 7,
            b"error" => 8,
            b"ts" => 9,
            b"usage" => 10,
            b"parentSession" => 11,
            _ => return None,
        })
    });
    let [kind, session, run, agent, call_id, tool, args, result, error, ts, usage, parent] = slots;
    let ts = match ts {
        Some(Value::Number(n)) if n.is_finite() && n >= 0.0 => n as u64,
        _ => 0,
    };
    if let Err(e) = parsed {
        if e.kind == ParseErrorKind::ExpectedObject {
            return Err(match loopguard_core::json::parse(line_bytes) {
                Ok(value) => err(
                    line,
                    None,
                    format!("an event must be a JSON object, found {}", describe(&value)),
                ),
                Err(e) => json_error(line, &e),
            });
        }
        return Err(json_error(line, &e));
    }
    let usage = usage.map(|v| read_usage(&v, line)).transpose()?.flatten();
    let session = session
        .map(|v| opt_string(v, line, "session"))
        .transpose()?
        .flatten();
    let parent_session = parent
        .map(|v| opt_string(v, line, "parentSession"))
        .transpose()?
        .flatten();
    let run = run
        .map(|v| opt_string(v, line, "run"))
        .transpose()?
        .flatten();
    let agent = agent
        .map(|v| opt_string(v, line, "agent"))
        .transpose()?
        .flatten();
    let call_id = call_id
        .map(|v| opt_string(v, line, "callId"))
        .transpose()?
        .flatten();
    let kind = match kind {
        None => return Err(err(line, Some("type"), "field `type`: missing")),
        Some(Value::String(s)) => match s.as_wtf8() {
            b"call" => EventKind::Call,
            b"outcome" => EventKind::Outcome,
            b"compaction" => EventKind::Compaction,
            _ => {
                return Err(err(
                    line,
                    Some("type"),
                    format!(
                        "field `type`: unknown event type {:?}; expected \"call\", \"outcome\" or \"compaction\"",
                        s.to_string_lossy()
                    ),
                ))
            }
        },
        Some(other) => {
            return Err(err(
                line,
                Some("type"),
                format!("field `type`: expected a string, found {}", describe(&other)),
            ))
        }
    };
    let tool = match (kind, tool) {
        (EventKind::Compaction, _) => None,
        (_, Some(Value::String(s))) => Some(s),
        (_, None) | (_, Some(Value::Null)) => {
            return Err(err(
                line,
                Some("tool"),
                format!("field `tool`: a {} needs a `tool` string", kind.as_str()),
            ))
        }
        (_, Some(other)) => {
            return Err(err(
                line,
                Some("tool"),
                format!(
                    "field `tool`: expected a string, found {}",
                    describe(&other)
                ),
            ))
        }
    };
    let payload = match kind {
        EventKind::Outcome => match (result, error) {
            (Some(_), Some(_)) => {
                return Err(err(
                    line,
                    Some("error"),
                    "fields `result` and `error`: an outcome has one of them, not both",
                ))
            }
            (Some(r), None) => Some(Payload::Result(r)),
            (None, Some(e)) => Some(Payload::Error(e)),
            (None, None) => {
                return Err(err(
                    line,
                    Some("result"),
                    "field `result`: an outcome needs a `result` or an `error`",
                ))
            }
        },
        _ => None,
    };
    Ok(Event {
        kind,
        session,
        parent_session,
        run,
        agent,
        call_id,
        tool,
        args: args.unwrap_or_else(|| Value::Object(Default::default())),
        payload,
        timestamp_ms: ts,
        usage,
    })
}

/// `usage`: `null`, or an object of non-negative numbers `tokens`, `inputTokens`,
/// `outputTokens`, `cost` (each optional; `tokens`, when given, is the total).
fn read_usage(v: &Value<'_>, line: u64) -> Result<Option<Usage>, EventError> {
    let o = match v {
        Value::Null => return Ok(None),
        Value::Object(o) => o,
        other => {
            return Err(err(
                line,
                Some("usage"),
                format!(
                    "field `usage`: expected an object, found {}",
                    describe(other)
                ),
            ))
        }
    };
    let number = |k: &str| -> Result<Option<f64>, EventError> {
        match o.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) if n.is_finite() && *n >= 0.0 => Ok(Some(*n)),
            Some(other) => Err(err(
                line,
                Some("usage"),
                format!(
                    "field `usage.{k}`: expected a non-negative number, found {}",
                    describe(other)
                ),
            )),
        }
    };
    let (total, input, output, cost) = (
        number("tokens")?,
        number("inputTokens")?,
        number("outputTokens")?,
        number("cost")?,
    );
    let tokens = total.unwrap_or(input.unwrap_or(0.0) + output.unwrap_or(0.0));
    Ok(Some(Usage {
        tokens: tokens as u64,
        cost: cost.unwrap_or(0.0),
    }))
}

fn opt_string<'a>(
    v: Value<'a>,
    line: u64,
    field: &'static str,
) -> Result<Option<JsString<'a>>, EventError> {
    match v {
        Value::String(s) => Ok(Some(s)),
        Value::Null => Ok(None),
        other => Err(err(
            line,
            Some(field),
            format!(
                "field `{field}`: expected a string, found {}",
                describe(&other)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(s: &str) -> Result<Event<'_>, EventError> {
        parse_event(s.as_bytes(), 3)
    }

    #[test]
    fn bad_events_name_line_and_field() {
        let cases = [
            ("[1]", None),
            ("not json", None),
            (r#"{"tool":"x"}"#, Some("type")),
            (r#"{"type":"nope","tool":"x"}"#, Some("type")),
            (r#"{"type":5}"#, Some("type")),
            (r#"{"type":"call","tool":7}"#, Some("tool")),
            (r#"{"type":"outcome","tool":"x"}"#, Some("result")),
            (
                r#"{"type":"outcome","tool":"x","result":1,"error":"e"}"#,
                Some("error"),
            ),
            (r#"{"type":"call","tool":"x","run":1}"#, Some("run")),
            (
                r#"{"type":"call","tool":"x","session":{}}"#,
                Some("session"),
            ),
        ];
        for (text, field) in cases {
            let got = e(text).unwrap_err();
            assert_eq!(got.line, 3, "{text}");
            assert_eq!(got.field, field, "{text}: {got}");
        }
    }

    #[test]
    fn a_repeated_field_keeps_its_last_value_which_is_checked() {
        // As JSON.parse: the last `tool` wins, and it is the one type-checked.
        let ev =
            e(r#"{"type":"call","tool":7,"tool":"read","args":{"a":1},"args":{"b":2}}"#).unwrap();
        assert_eq!(
            ev.tool.map(|t| t.to_string_lossy().into_owned()).as_deref(),
            Some("read")
        );
        assert_eq!(ev.args, Value::parse(br#"{"b":2}"#).unwrap());
        let got = e(r#"{"type":"call","tool":"read","tool":7}"#).unwrap_err();
        assert_eq!(got.field, Some("tool"));
        // An escaped key names the same field; unknown fields, however nested, are skipped.
        let ev = e(r#"{"t\u0079pe":"outcome","tool":"x","extra":{"result":[1,{"a":[]}]},"result":{"ok":true}}"#).unwrap();
        assert_eq!(ev.kind, EventKind::Outcome);
        assert_eq!(
            ev.payload,
            Some(Payload::Result(Value::parse(br#"{"ok":true}"#).unwrap()))
        );
        let ev = e(r#"{"type":"call","tool":"x","ts":5,"ts":-1}"#).unwrap();
        assert_eq!(ev.timestamp_ms, 0);
    }

    #[test]
    fn defaults_and_null_values() {
        let ev = e(r#"{"type":"call","tool":"x","run":null,"extra":[1]}"#).unwrap();
        assert_eq!(ev.args, Value::Object(Default::default()));
        assert!(ev.run.is_none());
        let ev = e(r#"{"type":"outcome","tool":"x","args":null,"error":null}"#).unwrap();
        assert_eq!(ev.args, Value::Null);
        assert_eq!(ev.payload, Some(Payload::Error(Value::Null)));
        let ev = e(r#"{"type":"compaction"}"#).unwrap();
        assert!(ev.tool.is_none());
    }

    #[test]
    fn usage_is_read_checked_and_written_back() {
        let ev = e(r#"{"type":"call","tool":"x","usage":{"inputTokens":100,"outputTokens":20,"cost":0.25}}"#).unwrap();
        assert_eq!(
            ev.usage,
            Some(Usage {
                tokens: 120,
                cost: 0.25
            })
        );
        let mut out = Vec::new();
        ev.write_json(&mut out);
        assert_eq!(
            out,
            b"{\"type\":\"call\",\"tool\":\"x\",\"args\":{},\"usage\":{\"tokens\":120,\"cost\":0.25}}\n"
        );
        assert_eq!(parse_event(out.trim_ascii_end(), 1).unwrap(), ev);
        let ev = e(r#"{"type":"call","tool":"x","usage":{"tokens":7}}"#).unwrap();
        assert_eq!(
            ev.usage,
            Some(Usage {
                tokens: 7,
                cost: 0.0
            })
        );
        assert_eq!(
            e(r#"{"type":"call","tool":"x","usage":null}"#)
                .unwrap()
                .usage,
            None
        );
        for bad in [
            r#"{"type":"call","tool":"x","usage":5}"#,
            r#"{"type":"call","tool":"x","usage":{"cost":"1"}}"#,
            r#"{"type":"call","tool":"x","usage":{"tokens":-1}}"#,
        ] {
            let got = e(bad).unwrap_err();
            assert_eq!(got.field, Some("usage"), "{bad}: {got}");
        }
    }

    #[test]
    fn parent_session_is_read_checked_and_written_back() {
        let ev = e(r#"{"type":"call","session":"s/a1","parentSession":"s","tool":"x"}"#).unwrap();
        assert_eq!(
            ev.parent_session.as_ref().and_then(|p| p.as_str()),
            Some("s")
        );
        let mut out = Vec::new();
        ev.write_json(&mut out);
        assert_eq!(
            out,
            b"{\"type\":\"call\",\"session\":\"s/a1\",\"parentSession\":\"s\",\"tool\":\"x\",\"args\":{}}\n"
        );
        assert_eq!(parse_event(out.trim_ascii_end(), 1).unwrap(), ev);
        // Absent or null: no parent, and the line is written as before.
        for line in [
            r#"{"type":"call","tool":"x"}"#,
            r#"{"type":"call","tool":"x","parentSession":null}"#,
        ] {
            let ev = e(line).unwrap();
            assert!(ev.parent_session.is_none());
            let mut out = Vec::new();
            ev.write_json(&mut out);
            assert_eq!(out, b"{\"type\":\"call\",\"tool\":\"x\",\"args\":{}}\n");
        }
        let got = e(r#"{"type":"call","tool":"x","parentSession":7}"#).unwrap_err();
        assert_eq!(got.field, Some("parentSession"));
        assert_eq!(
            got.to_string(),
            "line 3: field `parentSession`: expected a string, found a number"
        );
    }
}
