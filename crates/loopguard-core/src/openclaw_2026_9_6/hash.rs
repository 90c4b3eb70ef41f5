//! Hashing as `openclaw@2026.9.6` does it (`tool-loop-detection` chunk): the canonical
//! serialiser keeps lone surrogates (written as `\udxxx`), outcome strings have the ids of
//! their `<<<EXTERNAL_UNTRUSTED_CONTENT id="…">>>` envelopes canonicalised before hashing,
//! `update_plan` is hashed in full, and outcomes carry the no-progress facts the release's
//! detectors read (a `write` without change, a terminal `exec` failure's identity).

use std::borrow::Cow;
use std::sync::LazyLock;

use memchr::memmem::Finder;

use crate::canonical::{self, Digest, Sink};
use crate::outcome::{extract_text, extract_unknown_tool, Outcome, ResultHash};
use crate::text::{js_trim, js_whitespace_at};
use crate::value::{utf16_cmp, JsString, Object, Value};

/// The release's canonical form of `v` (`stableStringify`, no string normalisation).
pub(crate) fn write_plain<S: Sink + ?Sized>(out: &mut S, v: &Value<'_>) {
    write(out, v, false);
}

/// The SHA-256 of the arguments' canonical form, as the release takes it (`argsHash` is
/// `tool:` and its hex).
pub fn args_digest(params: &Value<'_>) -> [u8; 32] {
    let mut d = Digest::default();
    write_plain(&mut d, params);
    d.finish()
}

/// The `argsHash` of a call: `tool:` and the hex SHA-256 of the arguments' canonical form.
pub fn args_hash(tool: &[u8], params: &Value<'_>) -> String {
    let mut d = Digest::default();
    write_plain(&mut d, params);
    let mut s = String::from_utf8_lossy(tool).into_owned();
    s.push(':');
    s.push_str(&canonical::hex(&d.finish()));
    s
}

/// Writes `v` canonically; with `normalize`, strings and keys go through the envelope-id
/// canonicalisation first (`digestToolOutcome`).
fn write<S: Sink + ?Sized>(out: &mut S, v: &Value<'_>, normalize: bool) {
    match v {
        Value::Null => out.write(b"null"),
        Value::Bool(true) => out.write(b"true"),
        Value::Bool(false) => out.write(b"false"),
        Value::Number(n) => canonical::write_number(out, *n),
        Value::String(s) => write_str(out, s, normalize),
        Value::Array(items) => {
            out.write(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write(b",");
                }
                write(out, item, normalize);
            }
            out.write(b"]");
        }
        Value::Object(o) => write_object(out, o, normalize),
    }
}

fn write_str<S: Sink + ?Sized>(out: &mut S, s: &JsString<'_>, normalize: bool) {
    if normalize && may_hold_envelope(s) {
        if let Some(bytes) = canonical_envelopes(s.as_wtf8()) {
            let lone = s.has_lone_surrogates();
            canonical::write_json_string(out, &JsString::from_wtf8(Cow::Owned(bytes), lone));
            return;
        }
    }
    canonical::write_json_string(out, s);
}

fn write_object<S: Sink + ?Sized>(out: &mut S, o: &Object<'_>, normalize: bool) {
    out.write(b"{");
    // Keys sort by their normalised form, then by themselves; only a key holding an
    // envelope changes, which leaves the (UTF-16 sorted) order alone otherwise.
    let renamed = normalize
        && o.iter()
            .any(|(k, _)| canonical_envelopes(k.as_wtf8()).is_some());
    if renamed {
        let mut entries: Vec<(Vec<u8>, &JsString<'_>, &Value<'_>)> = o
            .iter()
            .map(|(k, v)| {
                let n = canonical_envelopes(k.as_wtf8()).unwrap_or_else(|| k.as_wtf8().to_vec());
                (n, k, v)
            })
            .collect();
        entries.sort_by(|a, b| {
            utf16_cmp(&a.0, &b.0).then_with(|| utf16_cmp(a.1.as_wtf8(), b.1.as_wtf8()))
        });
        for (i, (n, k, v)) in entries.into_iter().enumerate() {
            if i > 0 {
                out.write(b",");
            }
            let key = JsString::from_wtf8(Cow::Owned(n), k.has_lone_surrogates());
            canonical::write_json_string(out, &key);
            out.write(b":");
            write(out, v, normalize);
        }
    } else {
        for (i, (k, v)) in o.iter().enumerate() {
            if i > 0 {
                out.write(b",");
            }
            write_str(out, k, false);
            out.write(b":");
            write(out, v, normalize);
        }
    }
    out.write(b"}");
}

const OPEN: &[u8] = b"<<<EXTERNAL_UNTRUSTED_CONTENT id=";

/// `false` when `s` cannot hold an envelope, decided on its JSON source when it still has
/// one (so a long string is not decoded for nothing): without `\u` escapes, decoding
/// produces none of the marker's characters, so the marker is in the source or nowhere.
fn may_hold_envelope(s: &JsString<'_>) -> bool {
    match s.escaped_source() {
        Some(src) => FIND_ESCAPE.find(src).is_some() || FIND_OPEN.find(src).is_some(),
        None => true,
    }
}
const CLOSE: &[u8] = b"<<<END_EXTERNAL_UNTRUSTED_CONTENT id=";

// The searchers, built once: `memmem::find` builds one on every call, which costs more than
// the search itself on the short strings of most outcomes (every outcome string is searched).
static FIND_OPEN: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(OPEN));
static FIND_CLOSE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(CLOSE));
static FIND_ESCAPE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\\u"));
const ZEROS: &[u8] = b"0000000000000000";

/// The release's envelope canonicalisation, or `None` when nothing changes:
///
/// ```text
/// /(<<<EXTERNAL_UNTRUSTED_CONTENT id=(\\*)")([a-f0-9]{16})(\2">>>(?:(?!<<<(?:END_)?EXTERNAL_UNTRUSTED_CONTENT)[\s\S])*<<<END_EXTERNAL_UNTRUSTED_CONTENT id=\2")\3(\2">>>)/g
/// ```
///
/// replaced by the same text with both ids set to 16 zeros, unless the number of backslashes
/// is not 2^k − 1, or a quote inside the envelope is escaped differently.
pub(crate) fn canonical_envelopes(s: &[u8]) -> Option<Vec<u8>> {
    FIND_OPEN.find(s)?;
    let mut out: Vec<u8> = Vec::with_capacity(s.len());
    let mut copied = 0;
    let mut i = 0;
    let mut changed = false;
    while let Some(at) = FIND_OPEN.find(&s[i..]).map(|p| p + i) {
        match match_envelope(s, at) {
            Some(m) => {
                out.extend_from_slice(&s[copied..at]);
                let keep =
                    (m.escapes & (m.escapes + 1)) != 0 || !quotes_agree(m.middle(s), m.escapes);
                if keep {
                    out.extend_from_slice(&s[at..m.end]);
                } else {
                    out.extend_from_slice(&s[at..m.id]);
                    out.extend_from_slice(ZEROS);
                    out.extend_from_slice(&s[m.id + 16..m.close_id]);
                    out.extend_from_slice(ZEROS);
                    out.extend_from_slice(&s[m.close_id + 16..m.end]);
                    changed = true;
                }
                copied = m.end;
                i = m.end;
            }
            None => i = at + 1,
        }
    }
    if !changed {
        return None;
    }
    out.extend_from_slice(&s[copied..]);
    Some(out)
}

struct Envelope {
    escapes: usize,
    /// Where the opening id starts.
    id: usize,
    /// Where the middle (after the opening `">>>`) starts.
    middle_start: usize,
    /// Where the closing marker starts.
    middle_end: usize,
    /// Where the closing id starts.
    close_id: usize,
    end: usize,
}

impl Envelope {
    fn middle<'s>(&self, s: &'s [u8]) -> &'s [u8] {
        &s[self.middle_start..self.middle_end]
    }
}

fn is_id_byte(b: u8) -> bool {
    b.is_ascii_digit() || (b'a'..=b'f').contains(&b)
}

/// `\\{n}">>>` at `i` (n backslashes, a quote, `>>>`), returning the end.
fn escaped_quote_close(s: &[u8], i: usize, n: usize) -> Option<usize> {
    let end = i + n + 4;
    (s.len() >= end && s[i..i + n].iter().all(|&b| b == b'\\') && &s[i + n..end] == b"\">>>")
        .then_some(end)
}

fn match_envelope(s: &[u8], at: usize) -> Option<Envelope> {
    let mut i = at + OPEN.len();
    let escapes = s[i..].iter().take_while(|&&b| b == b'\\').count();
    i += escapes;
    if s.get(i) != Some(&b'"') {
        return None;
    }
    let id = i + 1;
    if s.len() < id + 16 || !s[id..id + 16].iter().all(|&b| is_id_byte(b)) {
        return None;
    }
    let middle_start = escaped_quote_close(s, id + 16, escapes)?;
    // The middle runs up to the first opening or closing marker; only a closing one ends
    // the match.
    let rest = &s[middle_start..];
    let next_open = FIND_OPEN.find(rest);
    let next_close = FIND_CLOSE.find(rest);
    let middle_end = match (next_open, next_close) {
        (_, None) => return None,
        (Some(o), Some(c)) if o < c => return None,
        (_, Some(c)) => middle_start + c,
    };
    let mut j = middle_end + CLOSE.len();
    if s.len() < j + escapes + 1
        || !s[j..j + escapes].iter().all(|&b| b == b'\\')
        || s[j + escapes] != b'"'
    {
        return None;
    }
    j += escapes + 1;
    let close_id = j;
    if s.len() < close_id + 16 || s[close_id..close_id + 16] != s[id..id + 16] {
        return None;
    }
    let end = escaped_quote_close(s, close_id + 16, escapes)?;
    Some(Envelope {
        escapes,
        id,
        middle_start,
        middle_end,
        close_id,
        end,
    })
}

/// `[...middle.matchAll(/(?<!\\)\\*"/g)]` all have a length divisible by `escapes + 1`.
fn quotes_agree(middle: &[u8], escapes: usize) -> bool {
    let mut run = 0usize;
    for &b in middle {
        match b {
            b'\\' => run += 1,
            b'"' => {
                if !(run + 1).is_multiple_of(escapes + 1) {
                    return false;
                }
                run = 0;
            }
            _ => run = 0,
        }
    }
    true
}

/// What the release records for an outcome (`hashToolOutcome`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShippedOutcome {
    /// The outcome hash (displayed `error:` and hex for errors), when there is one.
    pub result: Option<ResultHash>,
    /// The kind of outcome.
    pub kind: OutcomeKind,
    /// A terminal exec failure's identity (volatile parts of its output masked).
    pub failure_identity: Option<[u8; 32]>,
    /// The outcome shows no progress by itself (an error, a `write` without change).
    pub no_progress: bool,
    /// The missing tool an error names, lowercased.
    pub unknown_tool: Option<String>,
}

/// The release's `outcomeKind`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutcomeKind {
    /// None set.
    #[default]
    None,
    /// The loop detector's own veto (`tool-loop-veto`).
    Veto,
    /// A terminal exec failure (`terminal-exec-failure`).
    TerminalExecFailure,
}

fn digest_outcome_value(v: &Value<'_>) -> ResultHash {
    let mut d = Digest::default();
    write(&mut d, v, true);
    ResultHash {
        is_error: false,
        digest: d.finish(),
    }
}

/// An object built for hashing, its keys given in sorted order.
enum Field<'v, 'a> {
    Val(&'v Value<'a>),
    Undefined,
    Null,
    Str(JsString<'v>),
    Num(f64),
    Bool(bool),
}

fn digest_fields(fields: &[(&str, Field<'_, '_>)]) -> ResultHash {
    ResultHash {
        is_error: false,
        digest: digest_fields_raw(fields),
    }
}

fn digest_fields_raw(fields: &[(&str, Field<'_, '_>)]) -> [u8; 32] {
    let mut d = Digest::default();
    d.write(b"{");
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            d.write(b",");
        }
        d.write(b"\"");
        d.write(k.as_bytes());
        d.write(b"\":");
        match v {
            Field::Val(v) => write(&mut d, v, true),
            Field::Undefined => d.write(b"undefined"),
            Field::Null => d.write(b"null"),
            Field::Str(s) => write_str(&mut d, s, true),
            Field::Num(n) => canonical::write_number(&mut d, *n),
            Field::Bool(b) => d.write(if *b { b"true" } else { b"false" }),
        }
    }
    d.write(b"}");
    d.finish()
}

/// `formatErrorForHash` for a JSON error value (the release keeps lone surrogates).
fn format_error<'v>(error: &'v Value<'_>) -> JsString<'v> {
    match error {
        Value::String(s) => s.reborrow(),
        Value::Bool(b) => JsString::from(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let mut buf = ryu_js::Buffer::new();
            JsString::from(canonical::js_number(*n, &mut buf).to_owned())
        }
        other => {
            let mut out = Vec::new();
            write_plain(&mut out, other);
            let lone = JsString::from_wtf8(Cow::Borrowed(&out[..]), true).has_lone_surrogates();
            JsString::from_wtf8(Cow::Owned(out), lone)
        }
    }
}

/// Which of the release's bundled channel plugins are set up (their tools' sends are known).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Channels {
    /// `channels.telegram` is set up: a `telegram` call with action `sendMessage` and a
    /// `to` is a send.
    pub telegram: bool,
}

const SEND_LIKE_MESSAGE_ACTIONS: &[&[u8]] = &[
    b"send",
    b"broadcast",
    b"reply",
    b"thread-reply",
    b"sendWithEffect",
    b"sendAttachment",
    b"upload-file",
    b"sticker",
    b"poll",
];

const VOLATILE_SEND_RESULT_KEYS: &[&[u8]] = &[
    b"messageId",
    b"message_id",
    b"messageIds",
    b"platformMessageId",
    b"platformMessageIds",
    b"fileId",
    b"file_id",
    b"fileKey",
    b"pollId",
    b"poll_id",
    b"receipt",
    b"runId",
    b"idempotencyKey",
    b"ts",
    b"timestamp",
    b"sentAt",
    b"deliveredAt",
    b"createdAt",
];

fn str_field<'v>(o: Option<&'v Object<'_>>, key: &str) -> Option<&'v JsString<'v>> {
    match o?.get(key) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

fn is_volatile_send(tool: &[u8], params: &Value<'_>, channels: Channels) -> bool {
    if tool == b"sessions_send" {
        return true;
    }
    let args = params.as_object();
    if tool == b"message" {
        return str_field(args, "action")
            .is_some_and(|a| SEND_LIKE_MESSAGE_ACTIONS.contains(&a.as_wtf8()));
    }
    // isMessagingToolSendAction
    if tool == b"conversations_send" || tool == b"conversations_turn" {
        return true;
    }
    let channel = js_trim(tool).to_ascii_lowercase();
    if channels.telegram && channel == b"telegram" {
        // extractToolSend(args, "sendMessage")
        let action = str_field(args, "action").map(|a| js_trim(a.as_wtf8()));
        let to = str_field(args, "to");
        return action == Some(b"sendMessage") && to.is_some_and(|t| !t.is_empty());
    }
    false
}

fn is_message_delivery_object(o: &Object<'_>) -> bool {
    let is_str = |k: &str| matches!(o.get(k), Some(Value::String(_)));
    is_str("id")
        && is_str("text")
        && (is_str("direction")
            || is_str("senderId")
            || is_str("accountId")
            || matches!(o.get("conversation"), Some(Value::Object(_))))
}

fn strip_volatile_send_ids<'a>(v: &Value<'a>) -> Value<'a> {
    match v {
        Value::Array(items) => Value::Array(items.iter().map(strip_volatile_send_ids).collect()),
        Value::Object(o) => {
            let drop_id = is_message_delivery_object(o);
            let entries = o
                .iter()
                .filter(|(k, _)| {
                    let k = k.as_wtf8();
                    !(VOLATILE_SEND_RESULT_KEYS.contains(&k) || (drop_id && k == b"id"))
                })
                .map(|(k, v)| (k.clone(), strip_volatile_send_ids(v)))
                .collect();
            Value::Object(Object::from_entries(entries))
        }
        other => other.clone(),
    }
}

/// `isKnownPollToolCall`.
pub fn is_known_poll(tool: &[u8], params: &Value<'_>) -> bool {
    if tool == b"command_status" {
        return true;
    }
    tool == b"process"
        && matches!(
            params
                .get("action")
                .and_then(Value::as_js_str)
                .map(JsString::as_wtf8),
            Some(b"poll" | b"log")
        )
}

/// `normalizeNullableString`: the trimmed string, or `None` when not a string or blank.
fn nullable_trimmed<'v>(v: Option<&'v Value<'_>>) -> Option<JsString<'v>> {
    match v {
        Some(Value::String(s)) => {
            let t = s.trim();
            (!t.is_empty()).then_some(t)
        }
        _ => None,
    }
}

/// `hashToolOutcome` of the release.
pub fn hash_outcome(
    tool: &[u8],
    params: &Value<'_>,
    outcome: Outcome<'_, '_>,
    channels: Channels,
) -> ShippedOutcome {
    let result = match outcome {
        Outcome::Undefined => return ShippedOutcome::default(),
        Outcome::Error(error) => {
            let formatted = format_error(error);
            let mut d = Digest::default();
            write_str(&mut d, &formatted, true);
            return ShippedOutcome {
                result: Some(ResultHash {
                    is_error: true,
                    digest: d.finish(),
                }),
                no_progress: true,
                unknown_tool: extract_unknown_tool(formatted.as_wtf8()),
                ..Default::default()
            };
        }
        Outcome::Result(r) => r,
    };
    let Value::Object(_) = result else {
        return ShippedOutcome {
            result: Some(digest_outcome_value(result)),
            ..Default::default()
        };
    };
    let empty = Value::empty_object();
    let details_value = match result.get("details") {
        Some(d @ Value::Object(_)) => d,
        _ => &empty,
    };
    let details = details_value.as_object();
    let text = extract_text(result);
    let status = str_field(details, "status");
    let get = |k: &str| details.and_then(|o| o.get(k));
    if status.map(JsString::as_wtf8) == Some(b"blocked")
        && str_field(details, "deniedReason").map(JsString::as_wtf8) == Some(b"tool-loop")
    {
        return ShippedOutcome {
            kind: OutcomeKind::Veto,
            ..Default::default()
        };
    }
    if tool == b"exec" {
        if let Some(hashed) = hash_exec(details, status, &text) {
            return hashed;
        }
    }
    if tool == b"write" && get("changed") == Some(&Value::Bool(false)) {
        return ShippedOutcome {
            result: Some(digest_fields(&[(
                "status",
                Field::Str(JsString::from("unchanged")),
            )])),
            no_progress: true,
            ..Default::default()
        };
    }
    if tool == b"process" && params.as_object().is_some() && is_known_poll(tool, params) {
        let action = params.get("action").and_then(Value::as_js_str);
        let or_null = |k: &str| match get(k) {
            Some(Value::Null) | None => Field::Null,
            Some(v) => Field::Val(v),
        };
        let status_field = match get("status") {
            Some(v) => Field::Val(v),
            None => Field::Undefined,
        };
        let text_field = Field::Str(text.reborrow());
        match action.map(JsString::as_wtf8) {
            Some(b"poll") => {
                return ShippedOutcome {
                    result: Some(digest_fields(&[
                        ("action", Field::Str(JsString::from("poll"))),
                        ("aggregated", or_null("aggregated")),
                        ("exitCode", or_null("exitCode")),
                        ("exitSignal", or_null("exitSignal")),
                        ("status", status_field),
                        ("text", text_field),
                    ])),
                    ..Default::default()
                }
            }
            Some(b"log") => {
                return ShippedOutcome {
                    result: Some(digest_fields(&[
                        ("action", Field::Str(JsString::from("log"))),
                        ("exitCode", or_null("exitCode")),
                        ("exitSignal", or_null("exitSignal")),
                        ("status", status_field),
                        ("text", text_field),
                        ("totalChars", or_null("totalChars")),
                        ("totalLines", or_null("totalLines")),
                        ("truncated", or_null("truncated")),
                    ])),
                    ..Default::default()
                }
            }
            _ => {}
        }
    }
    if is_volatile_send(tool, params, channels) {
        return ShippedOutcome {
            result: Some(digest_outcome_value(&strip_volatile_send_ids(
                details_value,
            ))),
            ..Default::default()
        };
    }
    ShippedOutcome {
        result: Some(digest_fields(&[
            ("details", Field::Val(details_value)),
            ("text", Field::Str(text.reborrow())),
        ])),
        ..Default::default()
    }
}

fn hash_exec(
    details: Option<&Object<'_>>,
    status: Option<&JsString<'_>>,
    text: &JsString<'_>,
) -> Option<ShippedOutcome> {
    let status = status?;
    let get = |k: &str| details.and_then(|o| o.get(k));
    let s = status.as_wtf8();
    let str_or = |k: &str, empty: bool| match get(k) {
        Some(Value::String(v)) => Field::Str(v.reborrow()),
        _ if empty => Field::Str(JsString::from("")),
        _ => Field::Null,
    };
    let hashed = |hash: ResultHash| ShippedOutcome {
        result: Some(hash),
        ..Default::default()
    };
    match s {
        b"running" => Some(hashed(digest_fields(&[
            ("status", Field::Str(status.reborrow())),
            ("tail", str_or("tail", true)),
        ]))),
        b"completed" | b"failed" => {
            let exit_code = match get("exitCode") {
                Some(Value::Number(n)) => Some(*n),
                _ => None,
            };
            let timed_out = get("timedOut") == Some(&Value::Bool(true));
            let output = nullable_trimmed(get("aggregated")).unwrap_or_else(|| text.reborrow());
            let exit_field = || exit_code.map_or(Field::Null, Field::Num);
            let hash = digest_fields(&[
                ("exitCode", exit_field()),
                ("output", Field::Str(output.reborrow())),
                ("status", Field::Str(status.reborrow())),
                ("timedOut", Field::Bool(timed_out)),
            ]);
            let terminal = match exit_code {
                Some(code) if code.is_finite() && code != 0.0 && !timed_out => {
                    let mut buf = ryu_js::Buffer::new();
                    let bare = format!(
                        "(Command exited with code {})",
                        canonical::js_number(code, &mut buf)
                    );
                    !output.is_empty() && output.as_wtf8() != bare.as_bytes()
                }
                _ => false,
            };
            if !terminal {
                return Some(hashed(hash));
            }
            let masked = mask_volatile(output.as_wtf8());
            let masked = JsString::from_wtf8(Cow::Owned(masked), output.has_lone_surrogates());
            let identity = digest_fields_raw(&[
                ("exitCode", exit_field()),
                ("output", Field::Str(masked)),
                ("status", Field::Str(status.reborrow())),
                ("timedOut", Field::Bool(timed_out)),
            ]);
            Some(ShippedOutcome {
                result: Some(hash),
                kind: OutcomeKind::TerminalExecFailure,
                failure_identity: Some(identity),
                ..Default::default()
            })
        }
        b"approval-pending" | b"approval-unavailable" => Some(hashed(digest_fields(&[
            ("command", str_or("command", true)),
            ("host", str_or("host", false)),
            ("reason", str_or("reason", false)),
            ("status", Field::Str(status.reborrow())),
            ("warningText", str_or("warningText", true)),
        ]))),
        _ => None,
    }
}

/// The release's `VOLATILE_EXEC_FAILURE_PATTERNS`, applied in order, each match replaced by
/// `#`:
///
/// ```text
/// /\d{4}-\d{2}-\d{2}[t ]\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:z|[+-]\d{2}:\d{2})?/giu
/// /\d{1,2}:\d{2}:\d{2}(?:\.\d{1,6})?/gu
/// /\b(?:attempt|retry)\b[\s#:=]*\d+/giu
/// /\b\d+(?:\.\d+)?\s?(?:ns|us|ms|seconds?|minutes?|hours?|s)\b/giu
/// /\b(?:pid|ppid)\b[\s#:=]*\d+/giu
/// ```
///
/// (Word characters are ASCII letters, digits and `_`: the case-folding extras of the `iu`
/// flags, U+017F and U+212A, are not treated specially.)
pub(crate) fn mask_volatile(s: &[u8]) -> Vec<u8> {
    let mut out = replace_all(s, match_timestamp);
    out = replace_all(&out, match_clock);
    out = replace_all(&out, |s, i| {
        match_word_number(s, i, &[b"attempt", b"retry"])
    });
    out = replace_all(&out, match_duration);
    replace_all(&out, |s, i| match_word_number(s, i, &[b"pid", b"ppid"]))
}

fn replace_all(s: &[u8], matcher: impl Fn(&[u8], usize) -> Option<usize>) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        match matcher(s, i) {
            Some(end) if end > i => {
                out.push(b'#');
                i = end;
            }
            _ => {
                out.push(s[i]);
                i += 1;
            }
        }
    }
    out
}

fn digits(s: &[u8], i: usize, n: usize) -> bool {
    s.len() >= i + n && s[i..i + n].iter().all(u8::is_ascii_digit)
}

fn digit_run(s: &[u8], i: usize, max: usize) -> usize {
    s[i.min(s.len())..]
        .iter()
        .take(max)
        .take_while(|b| b.is_ascii_digit())
        .count()
}

/// `(?:\.\d{1,6})?` at `i`.
fn fraction(s: &[u8], i: usize) -> usize {
    if s.get(i) == Some(&b'.') {
        let n = digit_run(s, i + 1, 6);
        if n > 0 {
            return i + 1 + n;
        }
    }
    i
}

fn match_timestamp(s: &[u8], i: usize) -> Option<usize> {
    let date = digits(s, i, 4)
        && s.get(i + 4) == Some(&b'-')
        && digits(s, i + 5, 2)
        && s.get(i + 7) == Some(&b'-')
        && digits(s, i + 8, 2)
        && matches!(s.get(i + 10), Some(b't' | b'T' | b' '));
    if !date {
        return None;
    }
    let j = clock_at(s, i + 11, 2)?;
    let j = fraction(s, j);
    match s.get(j) {
        Some(b'z' | b'Z') => Some(j + 1),
        Some(b'+' | b'-')
            if digits(s, j + 1, 2) && s.get(j + 3) == Some(&b':') && digits(s, j + 4, 2) =>
        {
            Some(j + 6)
        }
        _ => Some(j),
    }
}

/// `\d{h}:\d{2}:\d{2}` at `i`, exactly `h` hour digits.
fn clock_at(s: &[u8], i: usize, h: usize) -> Option<usize> {
    (digits(s, i, h)
        && s.get(i + h) == Some(&b':')
        && digits(s, i + h + 1, 2)
        && s.get(i + h + 3) == Some(&b':')
        && digits(s, i + h + 4, 2))
    .then_some(i + h + 6)
}

fn match_clock(s: &[u8], i: usize) -> Option<usize> {
    clock_at(s, i, 2)
        .or_else(|| clock_at(s, i, 1))
        .map(|j| fraction(s, j))
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn boundary_before(s: &[u8], i: usize) -> bool {
    let before = i > 0 && is_word(s[i - 1]);
    let after = s.get(i).is_some_and(|&b| is_word(b));
    before != after
}

fn ci_at(s: &[u8], i: usize, lit: &[u8]) -> bool {
    s.len() >= i + lit.len() && s[i..i + lit.len()].eq_ignore_ascii_case(lit)
}

/// `\b(?:WORDS)\b[\s#:=]*\d+` at `i`, case-insensitive.
fn match_word_number(s: &[u8], i: usize, words: &[&[u8]]) -> Option<usize> {
    if !boundary_before(s, i) {
        return None;
    }
    for w in words {
        if !ci_at(s, i, w) || !boundary_before(s, i + w.len()) {
            continue;
        }
        let mut j = i + w.len();
        loop {
            if matches!(s.get(j), Some(b'#' | b':' | b'=')) {
                j += 1;
            } else if let Some(n) = js_whitespace_at(s, j) {
                j += n;
            } else {
                break;
            }
        }
        let n = digit_run(s, j, usize::MAX);
        if n > 0 {
            return Some(j + n);
        }
    }
    None
}

const UNITS: &[&[u8]] = &[
    b"ns", b"us", b"ms", b"seconds", b"second", b"minutes", b"minute", b"hours", b"hour", b"s",
];

fn match_duration(s: &[u8], i: usize) -> Option<usize> {
    if !s.get(i).is_some_and(u8::is_ascii_digit) || !boundary_before(s, i) {
        return None;
    }
    let int_end = i + digit_run(s, i, usize::MAX);
    let mut number_ends = Vec::with_capacity(2);
    if s.get(int_end) == Some(&b'.') {
        let n = digit_run(s, int_end + 1, usize::MAX);
        if n > 0 {
            number_ends.push(int_end + 1 + n);
        }
    }
    number_ends.push(int_end);
    for end in number_ends {
        let mut starts = Vec::with_capacity(2);
        if let Some(n) = js_whitespace_at(s, end) {
            starts.push(end + n);
        }
        starts.push(end);
        for start in starts {
            for unit in UNITS {
                let stop = start + unit.len();
                if ci_at(s, start, unit) && !s.get(stop).is_some_and(|&b| is_word(b)) {
                    return Some(stop);
                }
            }
        }
    }
    None
}
