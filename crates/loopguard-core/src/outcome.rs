//! Outcome hashes: what a tool call produced, with volatile fields ignored.
//!
//! The no-progress detectors compare outcomes, so a hash must change when the agent learns
//! something new and stay put when only noise changes (a fresh message id, an exec's pid or
//! duration). The rules, in OpenClaw's order (the first that applies wins):
//!
//! 1. an error hashes its formatted message, prefixed `error:`;
//! 2. a result that is not an object hashes as it is;
//! 3. the loop detector's own veto result has **no** hash, so a block stays sticky;
//! 4. `exec` results hash only status, exit code, timeout flag and output;
//! 5. `process` `poll`/`log` results hash their progress fields;
//! 6. message sends hash their details without volatile delivery ids;
//! 7. everything else hashes `{details, text}` (`update_plan`: the plan's shape).

use std::fmt;
use std::sync::Arc;

use crate::canonical::{self, Digest, ObjectWriter, Sink};
use crate::fingerprint::write_plan_shape;
use crate::text::js_whitespace_at;
use crate::value::{JsString, Object, Value};

/// A recorded outcome hash: 64 hex digits, or `error:` and 64 hex digits.
///
/// ```
/// use loopguard_core::{hashing, Hashing, Outcome, Value};
/// let args = Value::parse(br#"{"path":"/a"}"#)?;
/// let out = Value::from("same");
/// let a = hashing::hash_outcome(b"read", &args, Outcome::Result(&out), &Hashing::default());
/// let b = hashing::hash_outcome(b"read", &args, Outcome::Result(&out), &Hashing::default());
/// let hash = a.result_hash.ok_or("no hash")?;
/// assert!(!hash.is_error);
/// assert_eq!(Some(hash), b.result_hash);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ResultHash {
    /// `true` for hashes of thrown errors (`error:` prefix).
    pub is_error: bool,
    /// The SHA-256.
    pub digest: [u8; 32],
}

impl fmt::Display for ResultHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_error {
            f.write_str("error:")?;
        }
        f.write_str(&canonical::hex(&self.digest))
    }
}

impl fmt::Debug for ResultHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// What a tool call produced.
///
/// ```
/// use loopguard_core::{hashing, Hashing, Outcome, Value};
/// let args = Value::parse(br#"{"path":"/a"}"#)?;
/// let thrown = Value::from("ENOENT: no such file");
/// let h = hashing::hash_outcome(b"read", &args, Outcome::Error(&thrown), &Hashing::default());
/// assert!(h.result_hash.ok_or("no hash")?.is_error);
/// let none = hashing::hash_outcome(b"read", &args, Outcome::Undefined, &Hashing::default());
/// assert!(none.result_hash.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub enum Outcome<'v, 'a> {
    /// The tool returned this value.
    Result(&'v Value<'a>),
    /// The tool threw this value. A string is the error's message.
    Error(&'v Value<'a>),
    /// The tool returned `undefined`: nothing is recorded.
    Undefined,
}

/// The hash of an outcome and, for errors, the missing tool it names.
///
/// ```
/// use loopguard_core::{hashing, Hashing, Outcome, Value};
/// let args = Value::parse(br#"{"command":"foo"}"#)?;
/// let thrown = Value::from("Tool Foo not found");
/// let h = hashing::hash_outcome(b"foo", &args, Outcome::Error(&thrown), &Hashing::default());
/// assert_eq!(h.unknown_tool.as_deref(), Some("foo"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutcomeHash {
    /// `None` when OpenClaw records nothing (an `undefined` result or a loop veto).
    pub result_hash: Option<ResultHash>,
    /// The lowercased tool name from "Unknown tool: x" / "Tool x not found" errors.
    pub unknown_tool: Option<String>,
}

/// Decides whether a tool call is a channel send whose result carries volatile ids.
///
/// OpenClaw asks its channel plugins (`isMessagingToolSendAction`); loopguard's default,
/// [`DefaultSendClassifier`], follows decisions.md item 6. An embedding runtime that knows
/// its own channels can supply another.
///
/// ```
/// use loopguard_core::{Object, SendClassifier};
/// /// Every tool whose name starts with `notify_` is a channel send.
/// struct Notify;
/// impl SendClassifier for Notify {
///     fn is_channel_send(&self, tool: &[u8], _args: &Object<'_>) -> bool {
///         tool.starts_with(b"notify_")
///     }
/// }
/// assert!(Notify.is_channel_send(b"notify_team", &Object::default()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait SendClassifier: Send + Sync {
    /// `true` when `tool` called with `args` delivers a message.
    fn is_channel_send(&self, tool: &[u8], args: &Object<'_>) -> bool;
}

/// The channel tools loopguard knows without plugins (decisions.md item 6).
pub const CHANNEL_TOOLS: &[&str] = &[
    "telegram",
    "discord",
    "slack",
    "whatsapp",
    "signal",
    "imessage",
    "msteams",
    "googlechat",
    "matrix",
    "mattermost",
    "feishu",
    "line",
];

/// A send is one of [`CHANNEL_TOOLS`] with a non-empty string `to` argument.
///
/// ```
/// use loopguard_core::{DefaultSendClassifier, SendClassifier};
/// use loopguard_core::Value;
/// let args = Value::parse(br#"{"to":"telegram:123","text":"hi"}"#)?;
/// assert!(DefaultSendClassifier.is_channel_send(b"telegram", args.as_object().ok_or("not an object")?));
/// assert!(!DefaultSendClassifier.is_channel_send(b"Telegram", args.as_object().ok_or("not an object")?));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultSendClassifier;

impl SendClassifier for DefaultSendClassifier {
    fn is_channel_send(&self, tool: &[u8], args: &Object<'_>) -> bool {
        CHANNEL_TOOLS.iter().any(|t| t.as_bytes() == tool)
            && matches!(args.get("to"), Some(Value::String(s)) if !s.is_empty())
    }
}

/// Settings of outcome hashing that an embedding runtime may change.
///
/// ```
/// use std::sync::Arc;
/// use loopguard_core::{DefaultSendClassifier, Hashing, Session};
/// let hashing = Hashing { sends: Arc::new(DefaultSendClassifier) };
/// let session = Session::new("s").with_hashing(hashing);
/// assert_eq!(session.id(), "s");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Hashing {
    /// Decides which non-`message` tools are channel sends.
    pub sends: Arc<dyn SendClassifier>,
}

impl Default for Hashing {
    fn default() -> Self {
        Hashing {
            sends: Arc::new(DefaultSendClassifier),
        }
    }
}

impl fmt::Debug for Hashing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hashing").finish_non_exhaustive()
    }
}

/// `message` actions whose results carry per-send ids (OpenClaw's SEND_LIKE set).
const SEND_LIKE_MESSAGE_ACTIONS: &[&str] = &[
    "send",
    "broadcast",
    "reply",
    "thread-reply",
    "sendWithEffect",
    "sendAttachment",
    "upload-file",
    "sticker",
    "poll",
];

/// Keys removed from send results at any depth.
const VOLATILE_SEND_KEYS: &[&str] = &[
    "messageId",
    "message_id",
    "messageIds",
    "platformMessageId",
    "platformMessageIds",
    "fileId",
    "file_id",
    "fileKey",
    "pollId",
    "poll_id",
    "receipt",
    "runId",
    "idempotencyKey",
    "ts",
    "timestamp",
    "sentAt",
    "deliveredAt",
    "createdAt",
];

/// Hashes an outcome as OpenClaw's `hashToolOutcome` does.
///
/// ```
/// use loopguard_core::{hashing::hash_outcome, Hashing, Outcome};
/// use loopguard_core::Value;
/// let args = Value::parse(br#"{"command":"make"}"#)?;
/// let a = Value::parse(br#"{"details":{"status":"completed","exitCode":0,"aggregated":"ok","durationMs":12,"pid":1}}"#)?;
/// let b = Value::parse(br#"{"details":{"status":"completed","exitCode":0,"aggregated":"ok","durationMs":99,"pid":2}}"#)?;
/// let h = |r| hash_outcome(b"exec", &args, Outcome::Result(r), &Hashing::default()).result_hash;
/// assert_eq!(h(&a), h(&b));
///
/// let err = Value::from("Unknown tool: Foo.Bar");
/// let o = hash_outcome(b"exec", &args, Outcome::Error(&err), &Hashing::default());
/// assert_eq!(o.unknown_tool.as_deref(), Some("foo.bar"));
/// assert!(o.result_hash.ok_or("no hash")?.is_error);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn hash_outcome(
    tool: &[u8],
    params: &Value<'_>,
    outcome: Outcome<'_, '_>,
    hashing: &Hashing,
) -> OutcomeHash {
    let result = match outcome {
        Outcome::Undefined => {
            return OutcomeHash {
                result_hash: None,
                unknown_tool: None,
            }
        }
        Outcome::Error(error) => {
            let formatted = format_error(error);
            let mut d = Digest::default();
            canonical::write_string(&mut d, &formatted);
            return OutcomeHash {
                result_hash: Some(ResultHash {
                    is_error: true,
                    digest: d.finish(),
                }),
                unknown_tool: extract_unknown_tool(formatted.as_wtf8()),
            };
        }
        Outcome::Result(r) => r,
    };
    let ok = |digest| OutcomeHash {
        result_hash: Some(ResultHash {
            is_error: false,
            digest,
        }),
        unknown_tool: None,
    };
    let Value::Object(_) = result else {
        return ok(canonical::digest_value(result));
    };
    let empty = Value::empty_object();
    let details = match result.get("details") {
        Some(d @ Value::Object(_)) => d,
        _ => &empty,
    };
    let field = |k: &str| details.get(k);

    // 3. The loop's own veto is not an outcome (Era C): the block stays sticky.
    if str_eq(field("status"), "blocked") && str_eq(field("deniedReason"), "tool-loop") {
        return OutcomeHash {
            result_hash: None,
            unknown_tool: None,
        };
    }
    let text = extract_text(result);
    let mut d = Digest::default();

    // 4. exec: only what the command did, not when or where.
    if tool == b"exec" {
        if let Some(Value::String(status)) = field("status") {
            if write_exec_outcome(&mut d, status, details, &text) {
                return ok(d.finish());
            }
            d = Digest::default();
        }
    }

    // 5. process poll/log.
    if tool == b"process" {
        if let Value::Object(p) = params {
            let action = p.get("action");
            let is_poll = str_eq(action, "poll");
            if is_poll || str_eq(action, "log") {
                let or_null = |k: &str| match field(k) {
                    None | Some(Value::Null) => &Value::Null,
                    Some(v) => v,
                };
                let mut w = ObjectWriter::new(&mut d);
                canonical::write_optional(w.key("action"), action);
                if is_poll {
                    canonical::write_value(w.key("aggregated"), or_null("aggregated"));
                    canonical::write_value(w.key("exitCode"), or_null("exitCode"));
                    canonical::write_value(w.key("exitSignal"), or_null("exitSignal"));
                    canonical::write_optional(w.key("status"), field("status"));
                    canonical::write_string(w.key("text"), &text);
                } else {
                    canonical::write_value(w.key("exitCode"), or_null("exitCode"));
                    canonical::write_value(w.key("exitSignal"), or_null("exitSignal"));
                    canonical::write_optional(w.key("status"), field("status"));
                    canonical::write_string(w.key("text"), &text);
                    canonical::write_value(w.key("totalChars"), or_null("totalChars"));
                    canonical::write_value(w.key("totalLines"), or_null("totalLines"));
                    canonical::write_value(w.key("truncated"), or_null("truncated"));
                }
                w.finish();
                return ok(d.finish());
            }
        }
    }

    // 6. Sends: the delivery facts without per-send ids; the text is ignored.
    if is_send_like(tool, params, hashing) {
        write_stripped(&mut d, details);
        return ok(d.finish());
    }

    // 7. Default.
    let mut w = ObjectWriter::new(&mut d);
    if tool == b"update_plan" {
        write_plan_shape(w.key("details"), details);
        w.key("text").write(b"\"\"");
    } else {
        canonical::write_value(w.key("details"), details);
        canonical::write_string(w.key("text"), &text);
    }
    w.finish();
    ok(d.finish())
}

fn str_eq(v: Option<&Value<'_>>, want: &str) -> bool {
    matches!(v, Some(Value::String(s)) if s.as_wtf8() == want.as_bytes())
}

/// Writes the exec outcome object; `false` when the status is not one exec hashing knows.
fn write_exec_outcome<S: Sink + ?Sized>(
    out: &mut S,
    status: &JsString<'_>,
    details: &Value<'_>,
    text: &JsString<'_>,
) -> bool {
    let string_or = |k: &str| match details.get(k) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    };
    let empty = JsString::from("");
    match status.as_wtf8() {
        b"running" => {
            let mut w = ObjectWriter::new(out);
            canonical::write_string(w.key("status"), status);
            canonical::write_string(w.key("tail"), string_or("tail").unwrap_or(&empty));
            w.finish();
        }
        b"completed" | b"failed" => {
            let mut w = ObjectWriter::new(out);
            match details.get("exitCode") {
                Some(Value::Number(n)) => canonical::write_number(w.key("exitCode"), *n),
                _ => w.key("exitCode").write(b"null"),
            }
            let aggregated = string_or("aggregated").map(JsString::trim);
            match aggregated {
                Some(a) if !a.is_empty() => canonical::write_string(w.key("output"), &a),
                _ => canonical::write_string(w.key("output"), text),
            }
            canonical::write_string(w.key("status"), status);
            let timed_out = matches!(details.get("timedOut"), Some(Value::Bool(true)));
            w.key("timedOut")
                .write(if timed_out { b"true" } else { b"false" });
            w.finish();
        }
        b"approval-pending" | b"approval-unavailable" => {
            let mut w = ObjectWriter::new(out);
            canonical::write_string(w.key("command"), string_or("command").unwrap_or(&empty));
            match string_or("host") {
                Some(s) => canonical::write_string(w.key("host"), s),
                None => w.key("host").write(b"null"),
            }
            match string_or("reason") {
                Some(s) => canonical::write_string(w.key("reason"), s),
                None => w.key("reason").write(b"null"),
            }
            canonical::write_string(w.key("status"), status);
            canonical::write_string(
                w.key("warningText"),
                string_or("warningText").unwrap_or(&empty),
            );
            w.finish();
        }
        _ => return false,
    }
    true
}

fn is_send_like(tool: &[u8], params: &Value<'_>, hashing: &Hashing) -> bool {
    if tool == b"sessions_send" {
        return true;
    }
    let empty = crate::value::Object::default();
    let args = params.as_object().unwrap_or(&empty);
    if tool == b"message" {
        return match args.get("action") {
            Some(Value::String(a)) => SEND_LIKE_MESSAGE_ACTIONS
                .iter()
                .any(|s| s.as_bytes() == a.as_wtf8()),
            _ => false,
        };
    }
    hashing.sends.is_channel_send(tool, args)
}

/// Writes `stripVolatileSendIds(v)` canonically without building the copy.
///
/// Keys are dropped by name at any depth (the denylist), `id` only on message delivery
/// objects, and `__proto__` always (see the loop body).
fn write_stripped<S: Sink + ?Sized>(out: &mut S, v: &Value<'_>) {
    match v {
        Value::Array(items) => {
            out.write(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write(b",");
                }
                write_stripped(out, item);
            }
            out.write(b"]");
        }
        Value::Object(o) => {
            let drop_id = is_delivery_object(o);
            out.write(b"{");
            let mut first = true;
            for (k, nested) in o.iter() {
                let key = k.as_wtf8();
                // OpenClaw copies with `stripped[key] = …`, which for `__proto__` calls the
                // prototype setter instead of adding a key, so that key never survives.
                if VOLATILE_SEND_KEYS.iter().any(|d| d.as_bytes() == key)
                    || (drop_id && key == b"id")
                    || key == b"__proto__"
                {
                    continue;
                }
                if !first {
                    out.write(b",");
                }
                first = false;
                canonical::write_string(out, k);
                out.write(b":");
                write_stripped(out, nested);
            }
            out.write(b"}");
        }
        other => canonical::write_value(out, other),
    }
}

/// A message object whose own `id` is a per-send id (route and conversation ids are kept).
fn is_delivery_object(o: &Object<'_>) -> bool {
    let is_str = |k: &str| matches!(o.get(k), Some(Value::String(_)));
    is_str("id")
        && is_str("text")
        && (is_str("direction")
            || is_str("senderId")
            || is_str("accountId")
            || matches!(o.get("conversation"), Some(Value::Object(_))))
}

/// The text of a result: string `text` of `content` entries with a string `type`, joined by
/// newlines and trimmed the JavaScript way.
pub fn extract_text<'v>(result: &'v Value<'_>) -> JsString<'v> {
    let Some(Value::Array(content)) = result.get("content") else {
        return JsString::from("");
    };
    let mut parts = content.iter().filter_map(|e| match e {
        Value::Object(o) => match (o.get("type"), o.get("text")) {
            (Some(Value::String(_)), Some(Value::String(t))) => Some(t),
            _ => None,
        },
        _ => None,
    });
    let Some(first) = parts.next() else {
        return JsString::from("");
    };
    let Some(second) = parts.next() else {
        return first.trim();
    };
    let mut joined = first.as_wtf8().to_vec();
    let mut lone = first.has_lone_surrogates();
    for p in std::iter::once(second).chain(parts) {
        joined.push(b'\n');
        joined.extend_from_slice(p.as_wtf8());
        lone |= p.has_lone_surrogates();
    }
    let trimmed = crate::text::js_trim(&joined).to_vec();
    JsString::from_wtf8(std::borrow::Cow::Owned(trimmed), lone)
}

/// OpenClaw's `formatErrorForHash` for a JSON error value.
///
/// A string is the message itself; numbers and booleans use their JavaScript string form;
/// anything else (objects, arrays, `null`) is its canonical serialisation.
pub fn format_error<'v>(error: &'v Value<'_>) -> JsString<'v> {
    match error {
        Value::String(s) => s.reborrow(),
        Value::Bool(b) => JsString::from(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let mut buf = ryu_js::Buffer::new();
            JsString::from(canonical::js_number(*n, &mut buf).to_owned())
        }
        other => JsString::from(canonical::to_canonical_string(other)),
    }
}

/// Pulls the missing tool's name out of an error message, lowercased.
///
/// Two JavaScript patterns, tried in order, matching anywhere, ASCII case-insensitive:
/// `unknown tool[:\s]+["']?([a-z0-9_.-]+)["']?` and
/// `tool\s+["']?([a-z0-9_.-]+)["']?\s+(?:not found|is not available)`.
pub fn extract_unknown_tool(message: &[u8]) -> Option<String> {
    let raw = crate::text::js_trim(message);
    if raw.is_empty() {
        return None;
    }
    let name = (0..raw.len())
        .find_map(|i| match_unknown_tool_at(raw, i))
        .or_else(|| (0..raw.len()).find_map(|i| match_tool_not_found_at(raw, i)))?;
    Some(String::from_utf8_lossy(name).to_ascii_lowercase())
}

fn starts_with_ci(s: &[u8], i: usize, lit: &[u8]) -> bool {
    s.len() >= i + lit.len() && s[i..i + lit.len()].eq_ignore_ascii_case(lit)
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
}

fn name_run(s: &[u8], i: usize) -> usize {
    s[i.min(s.len())..]
        .iter()
        .take_while(|&&b| is_name_byte(b))
        .count()
}

fn skip_quote(s: &[u8], i: usize) -> usize {
    match s.get(i) {
        Some(b'"' | b'\'') => i + 1,
        _ => i,
    }
}

fn skip_ws(s: &[u8], mut i: usize, also_colon: bool) -> usize {
    loop {
        if also_colon && s.get(i) == Some(&b':') {
            i += 1;
        } else if let Some(n) = js_whitespace_at(s, i) {
            i += n;
        } else {
            return i;
        }
    }
}

/// `unknown tool[:\s]+["']?(NAME)["']?` at `i`. The sets are disjoint, so greedy matching
/// never needs to backtrack.
fn match_unknown_tool_at(s: &[u8], i: usize) -> Option<&[u8]> {
    if !starts_with_ci(s, i, b"unknown tool") {
        return None;
    }
    let j = i + b"unknown tool".len();
    let k = skip_ws(s, j, true);
    if k == j {
        return None;
    }
    let n = skip_quote(s, k);
    let len = name_run(s, n);
    (len > 0).then(|| &s[n..n + len])
}

/// `tool\s+["']?(NAME)["']?\s+(?:not found|is not available)` at `i`.
fn match_tool_not_found_at(s: &[u8], i: usize) -> Option<&[u8]> {
    if !starts_with_ci(s, i, b"tool") {
        return None;
    }
    let j = i + 4;
    let k = skip_ws(s, j, false);
    if k == j {
        return None;
    }
    let n = skip_quote(s, k);
    let len = name_run(s, n);
    if len == 0 {
        return None;
    }
    let after = skip_quote(s, n + len);
    let m = skip_ws(s, after, false);
    if m == after {
        return None;
    }
    (starts_with_ci(s, m, b"not found") || starts_with_ci(s, m, b"is not available"))
        .then(|| &s[n..n + len])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn hash(tool: &str, args: &str, result: &str) -> Option<String> {
        let a = parse(args.as_bytes()).unwrap();
        let r = parse(result.as_bytes()).unwrap();
        hash_outcome(
            tool.as_bytes(),
            &a,
            Outcome::Result(&r),
            &Hashing::default(),
        )
        .result_hash
        .map(|h| h.to_string())
    }

    #[test]
    fn unknown_tool_patterns() {
        let x = |s: &str| extract_unknown_tool(s.as_bytes());
        assert_eq!(x("  Unknown Tool:: \"READ\" "), Some("read".into()));
        assert_eq!(x("unknown tool"), None);
        assert_eq!(x("unknown tool:"), None);
        assert_eq!(x("unknown tool: 'x"), Some("x".into()));
        assert_eq!(x("mytool foo.bar is not available"), Some("foo.bar".into()));
        assert_eq!(x("tool \"a-b\"  NOT FOUND"), Some("a-b".into()));
        assert_eq!(x("tool a-b notfound"), None);
        assert_eq!(x("tool x\u{FEFF}not found"), Some("x".into()));
        assert_eq!(x("tool x\u{85}not found"), None);
        assert_eq!(x("unknown tool\u{3000}ok"), Some("ok".into()));
        // The first pattern wins even when the second matches earlier.
        assert_eq!(x("tool a not found; unknown tool b"), Some("b".into()));
        // Non-ASCII letters are not name characters and do not fold to ASCII.
        assert_eq!(x("unknown tool \u{212A}x"), None);
        assert_eq!(x(""), None);
    }

    #[test]
    fn veto_results_have_no_hash_other_denials_do() {
        let veto = r#"{"content":[{"type":"text","text":"blocked"}],"details":{"status":"blocked","deniedReason":"tool-loop"}}"#;
        assert_eq!(hash("read", "{}", veto), None);
        let plugin = r#"{"content":[{"type":"text","text":"blocked"}],"details":{"status":"blocked","deniedReason":"plugin-before-tool-call"}}"#;
        assert!(hash("read", "{}", plugin).is_some());
    }

    #[test]
    fn poll_status_missing_is_undefined_not_null() {
        let a = hash("process", r#"{"action":"poll"}"#, r#"{"details":{}}"#);
        let b = hash(
            "process",
            r#"{"action":"poll"}"#,
            r#"{"details":{"status":null}}"#,
        );
        assert_ne!(a, b);
        let mut out = Vec::new();
        let mut w = ObjectWriter::new(&mut out);
        canonical::write_optional(w.key("status"), None);
        w.finish();
        assert_eq!(out, br#"{"status":undefined}"#);
    }

    #[test]
    fn send_ids_are_stripped_route_ids_kept() {
        let args = r#"{"action":"send","text":"hi"}"#;
        let a = hash(
            "message",
            args,
            r#"{"details":{"ok":true,"messageId":"1","receipt":{"x":1},"route":{"id":"A"}},"content":[{"type":"text","text":"id 1"}]}"#,
        );
        let b = hash(
            "message",
            args,
            r#"{"details":{"ok":true,"messageId":"2","receipt":{"x":2},"route":{"id":"A"}},"content":[{"type":"text","text":"id 2"}]}"#,
        );
        let c = hash(
            "message",
            args,
            r#"{"details":{"ok":true,"messageId":"2","route":{"id":"B"}}}"#,
        );
        assert_eq!(a, b);
        assert_ne!(a, c);
        // Not a send action: full hashing.
        let r1 = hash(
            "message",
            r#"{"action":"read"}"#,
            r#"{"details":{"messageId":"1"}}"#,
        );
        let r2 = hash(
            "message",
            r#"{"action":"read"}"#,
            r#"{"details":{"messageId":"2"}}"#,
        );
        assert_ne!(r1, r2);
        // " send" is not trimmed.
        let s1 = hash(
            "message",
            r#"{"action":" send"}"#,
            r#"{"details":{"messageId":"1"}}"#,
        );
        let s2 = hash(
            "message",
            r#"{"action":" send"}"#,
            r#"{"details":{"messageId":"2"}}"#,
        );
        assert_ne!(s1, s2);
    }

    #[test]
    fn proto_keys_vanish_from_send_results_as_in_javascript() {
        let send = r#"{"action":"send","text":"hi"}"#;
        assert_eq!(
            hash("message", send, r#"{"details":{"ok":true}}"#),
            hash(
                "message",
                send,
                r#"{"details":{"ok":true,"__proto__":{"x":1}}}"#
            )
        );
        assert_eq!(
            hash("sessions_send", "{}", r#"{"details":{"__proto__":7}}"#),
            hash("sessions_send", "{}", r#"{"details":{}}"#)
        );
        // Outside the send path `__proto__` is an ordinary key.
        assert_ne!(
            hash("read", "{}", r#"{"details":{"ok":true}}"#),
            hash(
                "read",
                "{}",
                r#"{"details":{"ok":true,"__proto__":{"x":1}}}"#
            )
        );
    }

    #[test]
    fn delivery_object_id_is_dropped_only_on_message_objects() {
        let args = r#"{"action":"send"}"#;
        let m = |id: &str, conv: &str| {
            hash(
                "message",
                args,
                &format!(
                    r#"{{"details":{{"message":{{"id":"{id}","text":"hello","direction":"outbound","conversation":{{"id":"{conv}"}}}}}}}}"#
                ),
            )
        };
        assert_eq!(m("qa_1", "room"), m("qa_2", "room"));
        assert_ne!(m("qa_1", "room"), m("qa_1", "room-2"));
    }

    #[test]
    fn text_extraction_filters_joins_and_trims() {
        let r = parse(br#"{"content":[{"type":"text","text":" a"},{"type":"image","data":"x"},{"text":"no type"},{"type":1,"text":"bad"},"s",null,{"type":"text","text":"b "}]}"#).unwrap();
        assert_eq!(extract_text(&r).as_wtf8(), b"a\nb");
        let single = parse(br#"{"content":[{"type":"text","text":"\u00a0x\n"}]}"#).unwrap();
        assert_eq!(extract_text(&single).as_wtf8(), b"x");
        let none = parse(br#"{"content":{"type":"text","text":"x"}}"#).unwrap();
        assert!(extract_text(&none).is_empty());
    }

    #[test]
    fn error_formatting() {
        let f = |j: &str| format_error(&parse(j.as_bytes()).unwrap()).to_string();
        assert_eq!(f(r#""boom""#), "boom");
        assert_eq!(f("1e21"), "1e+21");
        assert_eq!(f("-0"), "0");
        assert_eq!(f("1e400"), "Infinity");
        assert_eq!(f("false"), "false");
        assert_eq!(f("null"), "null");
        assert_eq!(
            f(r#"{"message":"m","code":5}"#),
            r#"{"code":5,"message":"m"}"#
        );
    }
}

/// The examples of items that are internal to the crate.
#[cfg(test)]
mod examples {
    #[test]
    fn extract_unknown_tool() {
        use crate::outcome::extract_unknown_tool;
        assert_eq!(
            extract_unknown_tool(b"Tool exec not found").as_deref(),
            Some("exec")
        );
        assert_eq!(
            extract_unknown_tool(b"Unknown tool: Foo.Bar").as_deref(),
            Some("foo.bar")
        );
        assert_eq!(
            extract_unknown_tool(b"unknown tool 'mcp/x'").as_deref(),
            Some("mcp")
        );
        assert_eq!(extract_unknown_tool(b"tool exec failed"), None);
    }
}
