//! Argument hashes: `argsHash = toolName + ":" + sha256(stableStringify(params))`.
//!
//! `update_plan` arguments are reduced to their *shape* first (Era C, PR #113217), so an
//! agent that keeps rewording its plan without changing any step's status is seen repeating
//! itself.

use std::fmt;

use crate::canonical::{self, Digest, ObjectWriter, Sink};
use crate::value::Value;

/// The digest half of an `argsHash`; the tool name is kept beside it.
///
/// Two `argsHash` strings are equal exactly when their tool names and digests are, because
/// the digest has a fixed length.
///
/// ```
/// use loopguard_core::{hashing, Value};
/// let args = Value::parse(br#"{"path":"/a"}"#)?;
/// let digest = hashing::args_digest("read", &args);
/// assert_eq!(hashing::args_hash("read", &args), format!("read:{}", hashing::hex(&digest.0)));
/// assert_eq!(hashing::args_digest_wtf8(b"read", &args), digest);
/// # Ok::<(), loopguard_core::json::ParseError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArgsDigest(pub [u8; 32]);

impl ArgsDigest {
    /// The digest's first eight bytes as a number: the key [`crate::history`] keeps beside
    /// each record, so a walk compares it before reading the record.
    #[inline]
    pub(crate) fn key(&self) -> u64 {
        let [a, b, c, d, e, f, g, h, ..] = self.0;
        u64::from_le_bytes([a, b, c, d, e, f, g, h])
    }

    /// The `argsHash` string of this digest for a tool, `"<tool>:<64 hex>"`, as WTF-8 bytes
    /// (tool names can hold lone surrogates). The one place the string is put together.
    ///
    /// ```
    /// use loopguard_core::hashing::ArgsDigest;
    /// let h = ArgsDigest([0xab; 32]).args_hash(b"read");
    /// assert_eq!(&h[..7], b"read:ab");
    /// assert_eq!(h.len(), 5 + 64);
    /// ```
    pub fn args_hash(&self, tool: &[u8]) -> Vec<u8> {
        let mut v = Vec::with_capacity(tool.len() + 65);
        v.extend_from_slice(tool);
        v.push(b':');
        v.extend_from_slice(&canonical::hex_bytes(&self.0));
        v
    }
}

impl fmt::Debug for ArgsDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&canonical::hex(&self.0))
    }
}

impl fmt::Display for ArgsDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&canonical::hex(&self.0))
    }
}

/// Hashes a tool's parameters as OpenClaw's `hashToolCall` does (without the tool prefix).
///
/// ```
/// use loopguard_core::{hashing::args_digest, Value};
/// let a = Value::parse(br#"{"a":1,"b":2}"#)?;
/// let b = Value::parse(br#"{"b":2,"a":1}"#)?;
/// assert_eq!(args_digest("read", &a), args_digest("read", &b));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn args_digest(tool: &str, params: &Value<'_>) -> ArgsDigest {
    args_digest_wtf8(tool.as_bytes(), params)
}

/// [`args_digest`] for a tool name held as WTF-8.
pub fn args_digest_wtf8(tool: &[u8], params: &Value<'_>) -> ArgsDigest {
    let mut d = Digest::default();
    if tool == b"update_plan" {
        if let Value::Object(_) = params {
            write_plan_shape(&mut d, params);
            return ArgsDigest(d.finish());
        }
    }
    canonical::write_value(&mut d, params);
    ArgsDigest(d.finish())
}

/// The full `argsHash` string, `"<tool>:<64 hex>"`.
///
/// ```
/// use loopguard_core::{hashing::args_hash, Value};
/// let h = args_hash("tool", &Value::Null);
/// assert!(h.starts_with("tool:") && h.len() == 5 + 64);
/// ```
pub fn args_hash(tool: &str, params: &Value<'_>) -> String {
    let bytes = args_digest(tool, params).args_hash(tool.as_bytes());
    // A `&str` tool and hex digits: always UTF-8.
    String::from_utf8(bytes).unwrap_or_default()
}

/// Writes OpenClaw's `planShape(v)` for a plain object `v` (callers handle non-objects).
///
/// `{hasExplanation, planLength, statuses, stepPresence}`: wording is dropped, statuses and
/// the number of steps are kept.
pub(crate) fn write_plan_shape<S: Sink + ?Sized>(out: &mut S, v: &Value<'_>) {
    let plan: &[Value<'_>] = v.get("plan").and_then(Value::as_array).unwrap_or(&[]);
    let non_blank = |x: Option<&Value<'_>>| match x {
        Some(Value::String(s)) => !crate::text::js_trim(s.as_wtf8()).is_empty(),
        _ => false,
    };
    let mut w = ObjectWriter::new(out);
    w.key("hasExplanation")
        .write(if non_blank(v.get("explanation")) {
            b"true"
        } else {
            b"false"
        });
    canonical::write_number(w.key("planLength"), plan.len() as f64);
    let sink = w.key("statuses");
    sink.write(b"[");
    for (i, entry) in plan.iter().enumerate() {
        if i > 0 {
            sink.write(b",");
        }
        match entry.get("status") {
            Some(Value::String(s)) if entry.as_object().is_some() => {
                canonical::write_string(sink, s)
            }
            _ => sink.write(b"null"),
        }
    }
    sink.write(b"]");
    let sink = w.key("stepPresence");
    sink.write(b"[");
    for (i, entry) in plan.iter().enumerate() {
        if i > 0 {
            sink.write(b",");
        }
        sink.write(if non_blank(entry.get("step")) {
            b"true"
        } else {
            b"false"
        });
    }
    sink.write(b"]");
    w.finish();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn h(tool: &str, json: &str) -> String {
        args_hash(tool, &parse(json.as_bytes()).unwrap())
    }

    #[test]
    fn plan_wording_is_ignored_but_status_is_not() {
        let a = h(
            "update_plan",
            r#"{"plan":[{"step":"patch code","status":"pending"}]}"#,
        );
        let b = h(
            "update_plan",
            r#"{"plan":[{"step":"patch code again","status":"pending"}],"explanation":""}"#,
        );
        let c = h(
            "update_plan",
            r#"{"plan":[{"step":"patch code","status":"in_progress"}]}"#,
        );
        let d = h(
            "update_plan",
            r#"{"plan":[{"step":"a","status":"pending"},{"step":"b","status":"pending"}]}"#,
        );
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
        // Other tools hash the raw parameters.
        assert_ne!(
            h(
                "other",
                r#"{"plan":[{"step":"patch code","status":"pending"}]}"#
            )[6..],
            h(
                "other",
                r#"{"plan":[{"step":"patch code again","status":"pending"}]}"#
            )[6..]
        );
    }

    #[test]
    fn plan_shape_bytes() {
        let v = parse(br#"{"plan":[{"step":"  ","status":"done"},7,{"step":"x","status":3}],"explanation":" why "}"#).unwrap();
        let mut out = Vec::new();
        write_plan_shape(&mut out, &v);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"hasExplanation":true,"planLength":3,"statuses":["done",null,null],"stepPresence":[false,false,true]}"#
        );
    }

    #[test]
    fn non_object_plan_args_hash_unchanged() {
        assert_eq!(h("update_plan", "[1]")[12..], h("x", "[1]")[2..]);
    }
}
