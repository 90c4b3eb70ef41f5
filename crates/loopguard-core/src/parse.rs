//! JSON text to [`Value`], with `JSON.parse` semantics.
//!
//! Why not `serde_json`: OpenClaw hashes what JavaScript's `JSON.parse` produced, and three of
//! its behaviours are not available there: lone surrogate escapes (`"\ud800"`) are kept, every
//! number becomes an `f64` however many digits or however large its exponent (`1e400` is
//! `Infinity`), and a repeated key keeps its last value. The parser is also the hot path of
//! `loopguard replay`, so strings without escapes are borrowed from the input untouched.
//!
//! Nesting is limited to [`MAX_DEPTH`] levels so that no input can exhaust the stack.

use std::borrow::Cow;
use std::fmt;

use crate::text::{push_wtf8, scan_string};
use crate::value::{JsString, Object, Value};

/// The deepest nesting of arrays and objects the parser accepts.
///
/// Node.js parses and hashes values nested a few thousand levels deep before its stack runs
/// out; loopguard accepts as deep as is safe on an 8 MiB stack (the `loopguard` binary
/// runs replays on a thread with a larger one).
pub const MAX_DEPTH: usize = 2048;

/// Why a JSON text was rejected, and where.
///
/// ```
/// use loopguard_core::json::{self, ParseErrorKind};
/// let Err(e) = json::parse(br#"{"a":}"#) else {
///     return Err("parsed".into());
/// };
/// assert_eq!((e.kind, e.offset), (ParseErrorKind::UnexpectedChar('}'), 5));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at byte {offset}")]
pub struct ParseError {
    /// What went wrong.
    pub kind: ParseErrorKind,
    /// Byte offset into the input.
    pub offset: usize,
}

/// The kinds of [`ParseError`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The input is not UTF-8.
    InvalidUtf8,
    /// The input ended inside a value.
    UnexpectedEnd,
    /// A byte that cannot start or continue a value here.
    UnexpectedChar(char),
    /// A raw control character inside a string.
    ControlCharInString,
    /// A backslash escape that JSON does not define.
    InvalidEscape,
    /// A malformed number.
    InvalidNumber,
    /// Non-whitespace after the value.
    TrailingCharacters,
    /// Nesting deeper than 2048 arrays and objects.
    TooDeep,
    /// [`parse_object_entries`] was given a value that is not an object.
    ExpectedObject,
}

impl fmt::Display for ParseErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseErrorKind::InvalidUtf8 => f.write_str("invalid UTF-8"),
            ParseErrorKind::UnexpectedEnd => f.write_str("unexpected end of JSON input"),
            ParseErrorKind::UnexpectedChar(c) => write!(f, "unexpected character {c:?}"),
            ParseErrorKind::ControlCharInString => f.write_str("control character in string"),
            ParseErrorKind::InvalidEscape => f.write_str("invalid escape in string"),
            ParseErrorKind::InvalidNumber => f.write_str("invalid number"),
            ParseErrorKind::TrailingCharacters => f.write_str("unexpected data after the value"),
            ParseErrorKind::TooDeep => write!(f, "nesting deeper than {MAX_DEPTH} levels"),
            ParseErrorKind::ExpectedObject => f.write_str("expected a JSON object"),
        }
    }
}

impl<'a> Value<'a> {
    /// Parses one JSON text with `JSON.parse` semantics. See [`parse()`].
    pub fn parse(input: &'a [u8]) -> Result<Value<'a>, ParseError> {
        parse(input)
    }
}

/// Parses exactly one JSON value surrounded by optional whitespace.
///
/// ```
/// use loopguard_core::{json::parse, Value};
/// assert_eq!(parse(b" 9007199254740993 ")?, Value::Number(9007199254740992.0));
/// assert_eq!(parse(b"1e400")?, Value::Number(f64::INFINITY));
/// let lone = parse(br#""\ud800""#)?;
/// assert!(lone.as_js_str().ok_or("not a string")?.has_lone_surrogates());
/// assert!(parse(b"[1,]").is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn parse(input: &[u8]) -> Result<Value<'_>, ParseError> {
    let mut p = Parser::new(input);
    p.skip_ws();
    let v = p.value(0)?;
    p.skip_ws();
    if p.i != input.len() {
        return Err(p.err(ParseErrorKind::TrailingCharacters));
    }
    Ok(v)
}

/// Parses a JSON object and hands each entry to `f` in input order, without building the
/// object (repeated keys are all passed; the last one is the one `JSON.parse` keeps).
///
/// For picking out fields without hashing the object; [`parse_object_fields`] reads known
/// fields straight into their slots.
///
/// ```
/// use loopguard_core::json::parse_object_entries;
/// let mut keys = Vec::new();
/// parse_object_entries(br#"{"type":"call","tool":"read"}"#, |k, _| keys.push(k.to_string()))?;
/// assert_eq!(keys, ["type", "tool"]);
/// assert!(parse_object_entries(b"[1]", |_, _| {}).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn parse_object_entries<'a>(
    input: &'a [u8],
    mut f: impl FnMut(JsString<'a>, Value<'a>),
) -> Result<(), ParseError> {
    read_object(input, |p| {
        let mut key = JsString::EMPTY;
        let mut value = PLACEHOLDER;
        p.key_into(&mut key)?;
        p.value_into(1, &mut value)?;
        f(key, value);
        Ok(())
    })
}

/// Parses a JSON object into `slots`: `slot_of` names the slot of each key's value (by its
/// WTF-8 bytes), or `None` for a key whose value is read and dropped. A repeated key keeps
/// its last value, as with `JSON.parse`.
///
/// Each value is read straight into its slot rather than handed over and moved (see
/// `Parser::value_into`). Event envelopes are read this way.
///
/// ```
/// use loopguard_core::{json::parse_object_fields, Value};
/// let mut slots: [Option<Value>; 2] = Default::default();
/// let slot_of = |k: &[u8]| match k {
///     b"type" => Some(0),
///     b"tool" => Some(1),
///     _ => None,
/// };
/// parse_object_fields(br#"{"tool":"read","x":[1],"type":"call"}"#, &mut slots, slot_of)?;
/// assert_eq!(slots[0].as_ref().and_then(Value::as_str), Some("call"));
/// assert_eq!(slots[1].as_ref().and_then(Value::as_str), Some("read"));
/// assert!(parse_object_fields(b"[1]", &mut slots, slot_of).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn parse_object_fields<'a>(
    input: &'a [u8],
    slots: &mut [Option<Value<'a>>],
    mut slot_of: impl FnMut(&[u8]) -> Option<usize>,
) -> Result<(), ParseError> {
    let mut key = JsString::EMPTY;
    let mut dropped = PLACEHOLDER;
    read_object(input, |p| {
        p.key_into(&mut key)?;
        let out = match slot_of(key.as_wtf8()).and_then(|i| slots.get_mut(i)) {
            Some(slot) => slot.insert(PLACEHOLDER),
            None => &mut dropped,
        };
        p.value_into(1, out)
    })
}

/// Reads the JSON object that is the whole of `input`, calling `entry` for each of its
/// entries (which reads the key and the value), with the punctuation and the errors of
/// [`parse`].
#[inline(always)]
fn read_object<'a>(
    input: &'a [u8],
    mut entry: impl FnMut(&mut Parser<'a>) -> Result<(), ParseError>,
) -> Result<(), ParseError> {
    let mut p = Parser::new(input);
    p.skip_ws();
    if p.s.get(p.i) != Some(&b'{') {
        return Err(p.err(ParseErrorKind::ExpectedObject));
    }
    if p.opens(b'}') {
        loop {
            entry(&mut p)?;
            if !p.next_item(b'}')? {
                break;
            }
        }
    }
    p.skip_ws();
    if p.i != input.len() {
        return Err(p.err(ParseErrorKind::TrailingCharacters));
    }
    Ok(())
}

/// What a slot holds until its value is read into it: a constant string, whose bytes are all
/// set (a `Value::Null` sets its tag only, and copying it into the slot right after the tag
/// was written stalls the processor's store forwarding).
const PLACEHOLDER: Value<'static> = Value::String(JsString::EMPTY);

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Parser<'a> {
    fn new(s: &'a [u8]) -> Self {
        Parser { s, i: 0 }
    }
}

impl<'a> Parser<'a> {
    fn err(&self, kind: ParseErrorKind) -> ParseError {
        ParseError {
            kind,
            offset: self.i,
        }
    }

    fn unexpected(&self) -> ParseError {
        match self.s.get(self.i) {
            None => self.err(ParseErrorKind::UnexpectedEnd),
            Some(_) => {
                let c = std::str::from_utf8(&self.s[self.i..])
                    .ok()
                    .and_then(|t| t.chars().next())
                    .unwrap_or('\u{FFFD}');
                self.err(ParseErrorKind::UnexpectedChar(c))
            }
        }
    }

    #[inline]
    fn skip_ws(&mut self) {
        while let Some(&b) = self.s.get(self.i) {
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                self.i += 1;
            } else {
                break;
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value<'a>, ParseError> {
        let mut v = Value::Null;
        self.value_into(depth, &mut v)?;
        Ok(v)
    }

    /// Reads a value into `out`. Values are built where they are kept (an object's or an
    /// array's slot), not returned and then moved: a value written field by field and read
    /// back at once as a whole stalls the processor's store forwarding (measured: the two
    /// events of a guarded call parse about 6% faster this way).
    fn value_into(&mut self, depth: usize, out: &mut Value<'a>) -> Result<(), ParseError> {
        match self.s.get(self.i) {
            Some(b'{') => self.object_into(depth + 1, out),
            Some(b'[') => self.array_into(depth + 1, out),
            _ => self.scalar_into(out),
        }
    }

    /// [`Parser::value_into`] of anything but an array or an object. Apart in unoptimised
    /// builds, whose frames would otherwise make each level of the recursion too large for
    /// the deepest accepted value on a 2 MiB stack (`depth_is_limited`).
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline(never))]
    fn scalar_into(&mut self, out: &mut Value<'a>) -> Result<(), ParseError> {
        match self.s.get(self.i) {
            None => return Err(self.err(ParseErrorKind::UnexpectedEnd)),
            Some(b'"') => {
                *out = Value::String(JsString::EMPTY);
                if let Value::String(text) = out {
                    self.string_into(text)?;
                }
            }
            Some(b't') => *out = self.literal(b"true", Value::Bool(true))?,
            Some(b'f') => *out = self.literal(b"false", Value::Bool(false))?,
            Some(b'n') => *out = self.literal(b"null", Value::Null)?,
            Some(b'-' | b'0'..=b'9') => *out = Value::Number(self.number()?),
            Some(_) => return Err(self.unexpected()),
        }
        Ok(())
    }

    fn literal(&mut self, word: &[u8], v: Value<'a>) -> Result<Value<'a>, ParseError> {
        for &w in word {
            if self.s.get(self.i) != Some(&w) {
                return Err(self.unexpected());
            }
            self.i += 1;
        }
        Ok(v)
    }

    fn object_into(&mut self, depth: usize, out: &mut Value<'a>) -> Result<(), ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.err(ParseErrorKind::TooDeep));
        }
        if !self.opens(b'}') {
            *out = Value::Object(Object::from_entries(Vec::new()));
            return Ok(());
        }
        // Room for four entries at once, as the first push would make, without its growth
        // path.
        let mut entries = Vec::with_capacity(4);
        loop {
            // The entry is read into its slot (see value_into).
            entries.push((JsString::EMPTY, PLACEHOLDER));
            if let Some((key, value)) = entries.last_mut() {
                self.key_into(key)?;
                self.value_into(depth, value)?;
            }
            if !self.next_item(b'}')? {
                break;
            }
        }
        *out = Value::Object(Object::from_entries(entries));
        Ok(())
    }

    /// Steps over the opening bracket or brace at `self.i` and the spaces after it: false
    /// when `close` follows at once (also stepped over), true when an item follows.
    #[inline]
    fn opens(&mut self, close: u8) -> bool {
        self.i += 1;
        self.skip_ws();
        if self.s.get(self.i) == Some(&close) {
            self.i += 1;
            return false;
        }
        true
    }

    /// After an item of an array or an object: true on a comma (another item follows, its
    /// leading spaces stepped over), false on `close` (stepped over), else the error.
    #[inline]
    fn next_item(&mut self, close: u8) -> Result<bool, ParseError> {
        self.skip_ws();
        match self.s.get(self.i) {
            Some(b',') => {
                self.i += 1;
                self.skip_ws();
                Ok(true)
            }
            Some(&c) if c == close => {
                self.i += 1;
                Ok(false)
            }
            _ => Err(self.unexpected()),
        }
    }

    /// Reads an object's key and the colon after it (and the spaces around it).
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn key_into(&mut self, out: &mut JsString<'a>) -> Result<(), ParseError> {
        if self.s.get(self.i) != Some(&b'"') {
            return Err(self.unexpected());
        }
        self.string_into(out)?;
        self.skip_ws();
        if self.s.get(self.i) != Some(&b':') {
            return Err(self.unexpected());
        }
        self.i += 1;
        self.skip_ws();
        Ok(())
    }

    fn array_into(&mut self, depth: usize, out: &mut Value<'a>) -> Result<(), ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.err(ParseErrorKind::TooDeep));
        }
        if !self.opens(b']') {
            *out = Value::Array(Vec::new());
            return Ok(());
        }
        let mut items = Vec::with_capacity(4);
        loop {
            // Read into its slot (see value_into).
            items.push(PLACEHOLDER);
            if let Some(slot) = items.last_mut() {
                self.value_into(depth, slot)?;
            }
            if !self.next_item(b']')? {
                break;
            }
        }
        *out = Value::Array(items);
        Ok(())
    }

    fn number(&mut self) -> Result<f64, ParseError> {
        match read_number(self.s, self.i) {
            Ok((n, end)) => {
                self.i = end;
                Ok(n)
            }
            Err(offset) => {
                self.i = offset;
                Err(self.err(ParseErrorKind::InvalidNumber))
            }
        }
    }

    /// Reads a string from its opening quote into `out` (see [`Parser::value_into`]). The
    /// usual string, without escapes, is borrowed here; the rest is read by
    /// [`Parser::escaped_string`], kept out of line so that this part stays small (issue
    /// 23). Each way writes `out` itself: one result for both would be merged through memory.
    /// Inlined in optimised builds only: unoptimised frames are large, and inlining it into
    /// the recursion of [`Parser::value_into`] would make the deepest accepted value overflow
    /// a 2 MiB stack there (`depth_is_limited`).
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    fn string_into(&mut self, out: &mut JsString<'a>) -> Result<(), ParseError> {
        let s = self.s;
        self.i += 1;
        let start = self.i;
        let (stop, high) = scan_string(s, self.i);
        if high {
            validate_utf8(s, start, stop)?;
        }
        self.i = stop;
        match s.get(stop) {
            Some(b'"') => {
                self.i += 1;
                *out = JsString::from_parts(Cow::Borrowed(&s[start..stop]), true, false);
            }
            Some(b'\\') => *out = self.escaped_string(start, stop)?,
            Some(_) => return Err(self.err(ParseErrorKind::ControlCharInString)),
            None => return Err(self.err(ParseErrorKind::UnexpectedEnd)),
        }
        Ok(())
    }

    /// The rest of a string whose body began at `start` and whose first backslash is at
    /// `stop` (= `self.i`).
    #[inline(never)]
    fn escaped_string(&mut self, start: usize, stop: usize) -> Result<JsString<'a>, ParseError> {
        let s = self.s;
        // Size the buffer once: the decoded string is never longer than its escaped form.
        let mut end = stop;
        while end < s.len() {
            match s[end] {
                b'\\' => end += 2,
                b'"' => break,
                _ => {
                    end =
                        memchr::memchr2(b'"', b'\\', &s[end + 1..]).map_or(s.len(), |k| end + 1 + k)
                }
            }
        }
        // A long string written the way `JSON.stringify` writes it is kept as it is
        // (validated, not decoded): hashing copies it, and it is decoded only if asked.
        if end < s.len() && end - start >= KEEP_SOURCE {
            if let Some(quote) = canonical_end(s, stop) {
                self.i = quote + 1;
                return Ok(JsString::from_escaped(&s[start..quote]));
            }
        }
        let mut out = Vec::with_capacity(end.min(s.len()) - start);
        out.extend_from_slice(&s[start..stop]);
        let mut simple = true;
        let mut lone = false;
        loop {
            match s.get(self.i) {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(JsString::from_parts(Cow::Owned(out), simple, lone));
                }
                Some(b'\\') => {
                    let esc = s.get(self.i + 1).copied();
                    self.i += 2;
                    let c = match esc {
                        Some(b'"') => b'"',
                        Some(b'\\') => b'\\',
                        Some(b'/') => b'/',
                        Some(b'b') => 0x08,
                        Some(b'f') => 0x0C,
                        Some(b'n') => b'\n',
                        Some(b'r') => b'\r',
                        Some(b't') => b'\t',
                        Some(b'u') => {
                            let u = self.hex4()?;
                            let cp = if (0xD800..0xDC00).contains(&u)
                                && s.get(self.i) == Some(&b'\\')
                                && s.get(self.i + 1) == Some(&b'u')
                            {
                                let save = self.i;
                                self.i += 2;
                                let lo = self.hex4()?;
                                if (0xDC00..0xE000).contains(&lo) {
                                    0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00)
                                } else {
                                    self.i = save;
                                    u
                                }
                            } else {
                                u
                            };
                            if (0xD800..0xE000).contains(&cp) {
                                lone = true;
                                simple = false;
                            } else if cp < 0x20 || cp == 0x22 || cp == 0x5C {
                                simple = false;
                            }
                            push_wtf8(&mut out, cp);
                            continue;
                        }
                        None => return Err(self.err(ParseErrorKind::UnexpectedEnd)),
                        Some(_) => {
                            self.i -= 1;
                            return Err(self.err(ParseErrorKind::InvalidEscape));
                        }
                    };
                    if crate::text::needs_json_escape(c) {
                        simple = false;
                    }
                    out.push(c);
                }
                Some(_) => {
                    let (stop, high) = scan_string(s, self.i);
                    if stop == self.i {
                        return Err(self.err(ParseErrorKind::ControlCharInString));
                    }
                    if high {
                        validate_utf8(s, self.i, stop)?;
                    }
                    out.extend_from_slice(&s[self.i..stop]);
                    self.i = stop;
                }
                None => return Err(self.err(ParseErrorKind::UnexpectedEnd)),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let mut v = 0u32;
        for _ in 0..4 {
            let d = match self.s.get(self.i) {
                Some(&b @ b'0'..=b'9') => b - b'0',
                Some(&b @ b'a'..=b'f') => b - b'a' + 10,
                Some(&b @ b'A'..=b'F') => b - b'A' + 10,
                None => return Err(self.err(ParseErrorKind::UnexpectedEnd)),
                Some(_) => return Err(self.err(ParseErrorKind::InvalidEscape)),
            };
            v = v * 16 + u32::from(d);
            self.i += 1;
        }
        Ok(v)
    }
}

/// Escaped strings at least this long (in source bytes) are kept as their source when it
/// is the canonical one (`Repr::Escaped` in `value.rs`); shorter ones are decoded at once.
const KEEP_SOURCE: usize = 256;

/// Reads the JSON number at `s[start..]`: its value as JavaScript reads it and where it ends,
/// or the offset of the byte that breaks the grammar. Shared by the parser and the digests
/// taken from text (`from_text`), which must read every number alike.
#[inline]
pub(crate) fn read_number(s: &[u8], start: usize) -> Result<(f64, usize), usize> {
    let mut i = start;
    if s.get(i) == Some(&b'-') {
        i += 1;
    }
    let int_start = i;
    match s.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            while matches!(s.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
        }
        _ => return Err(i),
    }
    let int_end = i;
    let mut simple = true;
    if s.get(i) == Some(&b'.') {
        simple = false;
        i += 1;
        let d = i;
        while matches!(s.get(i), Some(b'0'..=b'9')) {
            i += 1;
        }
        if i == d {
            return Err(i);
        }
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        simple = false;
        i += 1;
        if matches!(s.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let d = i;
        while matches!(s.get(i), Some(b'0'..=b'9')) {
            i += 1;
        }
        if i == d {
            return Err(i);
        }
    }
    // Integers of up to 15 digits are exact in f64; skip the general parser for them.
    if simple && int_end - int_start <= 15 {
        let mut n: u64 = 0;
        for &d in &s[int_start..int_end] {
            n = n * 10 + u64::from(d - b'0');
        }
        let f = n as f64;
        return Ok((if int_start > start { -f } else { f }, i));
    }
    // The grammar above is a subset of what `f64::from_str` accepts, and that parser
    // rounds correctly, overflows to infinity and underflows to zero as JavaScript does.
    let text = std::str::from_utf8(&s[start..i]).map_err(|_| start)?;
    text.parse::<f64>().map(|n| (n, i)).map_err(|_| start)
}

/// Where the string whose body continues at `i` ends (its closing quote), when it is valid
/// and every escape in it is the one `JSON.stringify` writes: `\"`, `\\`, `\b`, `\f`,
/// `\n`, `\r`, `\t`, or `\u00xx` (lower case) for another control character. `None` for
/// anything else, which the decoding path then reads (and reports, if it is an error).
pub(crate) fn canonical_end(s: &[u8], mut i: usize) -> Option<usize> {
    loop {
        match *s.get(i)? {
            b'"' => return Some(i),
            b'\\' => match *s.get(i + 1)? {
                b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                b'u' => {
                    let hex = s.get(i + 2..i + 6)?;
                    let v = u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
                    let short = matches!(v, 0x08 | 0x09 | 0x0A | 0x0C | 0x0D);
                    if v >= 0x20 || short || hex != crate::canonical::u_escape_hex(v) {
                        return None;
                    }
                    i += 6;
                }
                _ => return None,
            },
            _ => {
                let (stop, high) = scan_string(s, i);
                if stop == i || (high && validate_utf8(s, i, stop).is_err()) {
                    return None;
                }
                i = stop;
            }
        }
    }
}

/// Input is UTF-8 by contract; only string contents can hold non-ASCII bytes (anywhere else
/// they are a syntax error), so only strings that contain such bytes are validated.
pub(crate) fn validate_utf8(s: &[u8], start: usize, stop: usize) -> Result<(), ParseError> {
    std::str::from_utf8(&s[start..stop])
        .map(|_| ())
        .map_err(|e| ParseError {
            kind: ParseErrorKind::InvalidUtf8,
            offset: start + e.valid_up_to(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numbers_like_javascript() {
        for (t, want) in [
            ("-0", -0.0),
            ("0.1e1", 1.0),
            ("123456789012345678901234567890", 1.2345678901234568e29),
            ("1e-400", 0.0),
            ("-1e400", f64::NEG_INFINITY),
            ("18014398509481985", 18014398509481984.0),
        ] {
            let v = parse(t.as_bytes()).unwrap().as_f64().unwrap();
            assert_eq!(v.to_bits(), want.to_bits(), "{t}");
        }
        for bad in ["01", "1.", ".5", "+1", "1e", "-", "0x10", "NaN", "Infinity"] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn strings_keep_lone_surrogates_and_pair_real_ones() {
        let v = parse(br#""\ud83d\ude48 \ud800x \udc00 \u00e9\n""#).unwrap();
        let s = v.as_js_str().unwrap();
        assert!(s.has_lone_surrogates());
        let mut want = "🙈 ".as_bytes().to_vec();
        want.extend_from_slice(&[0xED, 0xA0, 0x80]);
        want.extend_from_slice(b"x ");
        want.extend_from_slice(&[0xED, 0xB0, 0x80]);
        want.extend_from_slice(" é\n".as_bytes());
        assert_eq!(s.as_wtf8(), &want[..]);
    }

    /// Long escaped strings (kept as their source when canonical) are rejected exactly
    /// where short ones are, with the same kind and offset, and decode to the same bytes.
    #[test]
    fn long_strings_are_read_like_short_ones() {
        let long = "y".repeat(KEEP_SOURCE);
        let bodies = [
            "a\\nb",
            "\\t\\u0001",
            "\\/",
            "\\u0041",
            "\\u001F",
            "\\x",
            "\\u12",
            "\u{1}",
            "\\ud800",
            "\\\"",
            "é\\n",
            "",
        ];
        for body in bodies {
            for text in [
                format!("\"{body}{long}\\n\""),
                format!("\"\\n{long}{body}\""),
            ] {
                let short = text.replace(&long, "y");
                let (a, b) = (parse(text.as_bytes()), parse(short.as_bytes()));
                match (a, b) {
                    (Ok(Value::String(a)), Ok(Value::String(b))) => {
                        let b = b.as_wtf8();
                        let y = b.iter().position(|&c| c == b'y').unwrap();
                        let want = [&b[..y], long.as_bytes(), &b[y + 1..]].concat();
                        assert_eq!(a.as_wtf8(), &want[..], "{text}");
                    }
                    (Err(a), Err(b)) => {
                        assert_eq!(a.kind, b.kind, "{text}");
                        let shift = if a.offset > KEEP_SOURCE {
                            KEEP_SOURCE - 1
                        } else {
                            0
                        };
                        assert_eq!(a.offset - shift, b.offset, "{text}");
                    }
                    (a, b) => panic!("{text}: {a:?} vs {b:?}"),
                }
            }
        }
        let mut bad = format!("\"{long}\\n").into_bytes();
        bad.extend_from_slice(&[0xFF, b'"']);
        assert_eq!(parse(&bad).unwrap_err().kind, ParseErrorKind::InvalidUtf8);
        assert!(parse(format!("\"{long}\\n").as_bytes()).is_err());
    }

    #[test]
    fn rejects_what_json_parse_rejects() {
        for bad in [
            "",
            "{",
            "[1,]",
            "{\"a\":1,}",
            "\"\t\"",
            "'x'",
            "{a:1}",
            "tru",
            "nul",
            "[1 2]",
            "\"\\x\"",
            "\"\\u12\"",
            "1 2",
            "\"abc",
        ] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad:?}");
        }
        assert_eq!(
            parse(&[b'"', 0xFF, b'"']).unwrap_err().kind,
            ParseErrorKind::InvalidUtf8
        );
    }

    #[test]
    fn depth_is_limited() {
        // A 2 MiB stack, as tokio worker threads and test threads have: the deepest value
        // accepted must parse, hash and drop without exhausting it.
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                let ok = "[{\"a\":".repeat(MAX_DEPTH / 2) + "0" + &"}]".repeat(MAX_DEPTH / 2);
                let v = parse(ok.as_bytes()).unwrap();
                let _ = crate::canonical::digest_value(&v);
                drop(v);
                let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
                assert_eq!(
                    parse(deep.as_bytes()).unwrap_err().kind,
                    ParseErrorKind::TooDeep
                );
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
