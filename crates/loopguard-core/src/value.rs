//! A JSON value with JavaScript's semantics.
//!
//! OpenClaw hashes what `JSON.parse` produced, so loopguard needs a value type that can hold
//! everything `JSON.parse` can: numbers as `f64` (so `9007199254740993` is `9007199254740992`
//! and `1e400` is `Infinity`), object keys deduplicated with the last value winning, and
//! strings that are **not** valid Unicode (lone UTF-16 surrogates such as `"\ud800"`).
//!
//! Strings are stored as [WTF-8](https://simonsapin.github.io/wtf-8/): UTF-8, extended so that
//! a lone surrogate is encoded as its own 3-byte sequence. For every valid string this is plain
//! UTF-8, so the common case costs nothing; the canonical serialiser drops the lone
//! surrogates when it writes (decisions.md item 2), and everything before that sees the raw
//! string.
//!
//! Object entries are kept sorted by UTF-16 code units (JavaScript's default `sort`), which
//! is the order the canonical serialiser writes them in.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;

use crate::text::{decode_at, needs_json_escape, trim_source, unescape_canonical};

/// A parsed JSON value, borrowing its strings from the input where it can.
///
/// ```
/// use loopguard_core::Value;
/// let v = Value::parse(br#"{"b":1,"a":[true,null,"x"]}"#)?;
/// assert_eq!(v.get("b").and_then(Value::as_f64), Some(1.0));
/// assert_eq!(v.get("a").and_then(Value::as_array).map(|a| a.len()), Some(3));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    /// `null`
    Null,
    /// `true` or `false`
    Bool(bool),
    /// Every JSON number, as JavaScript holds it.
    Number(f64),
    /// A string, possibly holding lone surrogates.
    String(JsString<'a>),
    /// An array.
    Array(Vec<Value<'a>>),
    /// A "plain object" in OpenClaw's terms.
    Object(Object<'a>),
}

impl<'a> Value<'a> {
    /// Looks up `key` when `self` is an object.
    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        match self {
            Value::Object(o) => o.get(key),
            _ => None,
        }
    }

    /// The object, if this is one.
    pub fn as_object(&self) -> Option<&Object<'a>> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The array, if this is one.
    pub fn as_array(&self) -> Option<&[Value<'a>]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_js_str(&self) -> Option<&JsString<'a>> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The string as `&str`, if this is a string holding valid Unicode.
    pub fn as_str(&self) -> Option<&str> {
        self.as_js_str().and_then(JsString::as_str)
    }

    /// The number, if this is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => Some(*n),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// `true` for `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// Copies every borrowed string so the value no longer borrows its input.
    pub fn into_owned(self) -> Value<'static> {
        match self {
            Value::Null => Value::Null,
            Value::Bool(b) => Value::Bool(b),
            Value::Number(n) => Value::Number(n),
            Value::String(s) => Value::String(s.into_owned()),
            Value::Array(a) => Value::Array(a.into_iter().map(Value::into_owned).collect()),
            Value::Object(o) => Value::Object(Object {
                entries: o
                    .entries
                    .into_iter()
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect(),
            }),
        }
    }

    /// An empty object, the default `args` of an event.
    pub fn empty_object() -> Value<'static> {
        Value::Object(Object::default())
    }
}

impl From<bool> for Value<'_> {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<f64> for Value<'_> {
    fn from(n: f64) -> Self {
        Value::Number(n)
    }
}

impl From<i64> for Value<'_> {
    fn from(n: i64) -> Self {
        Value::Number(n as f64)
    }
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(s: &'a str) -> Self {
        Value::String(JsString::from(s))
    }
}

impl From<String> for Value<'static> {
    fn from(s: String) -> Self {
        Value::String(JsString::from(s))
    }
}

/// Objects with at most this many entries are sorted by insertion in
/// [`Object::from_entries`].
const SMALL_OBJECT: usize = 8;

/// An object: entries sorted by key in UTF-16 code-unit order, keys unique.
///
/// ```
/// use loopguard_core::Value;
/// let v = Value::parse(br#"{"b":1,"a":2,"b":3}"#)?;
/// let o = v.as_object().ok_or("not an object")?;
/// // `JSON.parse` keeps the last duplicate; keys iterate in UTF-16 order.
/// assert_eq!(o.get("b").and_then(Value::as_f64), Some(3.0));
/// let keys: Vec<_> = o.iter().map(|(k, _)| k.to_string_lossy().into_owned()).collect();
/// assert_eq!(keys, ["a", "b"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Object<'a> {
    entries: Vec<(JsString<'a>, Value<'a>)>,
}

impl<'a> Object<'a> {
    /// Builds an object the way `JSON.parse` does: a repeated key keeps its last value.
    ///
    /// ```
    /// use loopguard_core::{Object, Value};
    /// let o = Object::from_entries(vec![("dup".into(), Value::from(1.0)), ("dup".into(), Value::from(2.0))]);
    /// assert_eq!(o.len(), 1);
    /// assert_eq!(o.get("dup"), Some(&Value::Number(2.0)));
    /// ```
    pub fn from_entries(mut entries: Vec<(JsString<'a>, Value<'a>)>) -> Self {
        // Small objects (most of them) are sorted here by insertion, which also finds out
        // whether a key repeats: already sorted keys cost one comparison each, and the
        // general sort and the dedup pass run only when needed (a hot path of replay).
        let sorted = if entries.len() <= SMALL_OBJECT {
            let mut unique = true;
            for i in 1..entries.len() {
                let mut j = i;
                while j > 0 {
                    match utf16_cmp(entries[j - 1].0.as_wtf8(), entries[j].0.as_wtf8()) {
                        Ordering::Greater => {
                            entries.swap(j - 1, j);
                            j -= 1;
                        }
                        Ordering::Equal => {
                            unique = false;
                            break;
                        }
                        Ordering::Less => break,
                    }
                }
            }
            unique
        } else {
            entries
                .windows(2)
                .all(|w| utf16_cmp(w[0].0.as_wtf8(), w[1].0.as_wtf8()) == Ordering::Less)
        };
        if !sorted {
            // A stable sort keeps duplicates in input order; small objects sort in place.
            entries.sort_by(|a, b| utf16_cmp(a.0.as_wtf8(), b.0.as_wtf8()));
            // Keep one entry per key, holding the value that came last in the input.
            entries.dedup_by(|later, kept| {
                if later.0.as_wtf8() == kept.0.as_wtf8() {
                    std::mem::swap(&mut later.1, &mut kept.1);
                    true
                } else {
                    false
                }
            });
        }
        Object { entries }
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        let key = key.as_bytes();
        if self.entries.len() <= 8 {
            return self
                .entries
                .iter()
                .find(|(k, _)| k.as_wtf8() == key)
                .map(|(_, v)| v);
        }
        self.entries
            .binary_search_by(|(k, _)| utf16_cmp(k.as_wtf8(), key))
            .ok()
            .map(|i| &self.entries[i].1)
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// `true` when the object has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Consumes the object, yielding its entries in canonical order.
    pub fn into_entries(self) -> impl ExactSizeIterator<Item = (JsString<'a>, Value<'a>)> {
        self.entries.into_iter()
    }

    /// Entries in canonical (UTF-16 sorted) order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&JsString<'a>, &Value<'a>)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }
}

/// A JavaScript string held as WTF-8 bytes.
///
/// `simple` records that the bytes are valid UTF-8 and contain nothing `JSON.stringify`
/// escapes, so the canonical form is the bytes between two quotes; the serialiser uses it to
/// skip scanning long strings. `lone` records that the string holds lone surrogates.
///
/// ```
/// use loopguard_core::Value;
/// let v = Value::parse(br#"" \ud800 x ""#)?;
/// let s = v.as_js_str().ok_or("not a string")?;
/// assert!(s.has_lone_surrogates());
/// assert_eq!(s.as_str(), None); // not valid UTF-8: WTF-8 bytes
/// assert_eq!(s.trim().as_wtf8(), b"\xed\xa0\x80 x");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct JsString<'a> {
    bytes: Repr<'a>,
    simple: bool,
    lone: bool,
}

/// What [`JsString::shape`] found about a string's bytes: whether `JSON.stringify` writes
/// them unchanged, and whether they hold lone surrogates. Only a string has one to give.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    simple: bool,
    lone: bool,
}

/// Where a string's bytes live. `Shared` lets the history keep one allocation for a tool
/// name or run id that thousands of records repeat. `Escaped` is a long parsed string
/// whose source form is exactly what `JSON.stringify` writes: it is kept as that source and
/// decoded only if its bytes are asked for, so hashing and output copy the source instead of
/// decoding and escaping again (a 100 KB result is read fewer times).
#[derive(Clone)]
enum Repr<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
    Shared(std::sync::Arc<[u8]>),
    Escaped(std::sync::Arc<Escaped<'a>>),
}

/// An escaped source (between the quotes, validated by the parser, every escape the one
/// `JSON.stringify` writes) and its decoded bytes once asked for.
#[derive(Clone)]
pub(crate) struct Escaped<'a> {
    decoded: std::sync::OnceLock<Vec<u8>>,
    source: &'a [u8],
}

impl<'a> Escaped<'a> {
    fn new(source: &'a [u8]) -> std::sync::Arc<Escaped<'a>> {
        std::sync::Arc::new(Escaped {
            decoded: std::sync::OnceLock::new(),
            source,
        })
    }

    fn bytes(&self) -> &[u8] {
        self.decoded.get_or_init(|| unescape_canonical(self.source))
    }
}

impl std::ops::Deref for Repr<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            Repr::Borrowed(b) => b,
            Repr::Owned(v) => v,
            Repr::Shared(a) => a,
            Repr::Escaped(e) => e.bytes(),
        }
    }
}

impl<'a> From<Cow<'a, [u8]>> for Repr<'a> {
    fn from(c: Cow<'a, [u8]>) -> Self {
        match c {
            Cow::Borrowed(b) => Repr::Borrowed(b),
            Cow::Owned(v) => Repr::Owned(v),
        }
    }
}

impl JsString<'static> {
    /// The empty string, a constant (the parser's placeholder for a string being read).
    pub(crate) const EMPTY: JsString<'static> = JsString {
        bytes: Repr::Borrowed(&[]),
        simple: true,
        lone: false,
    };
}

impl<'a> JsString<'a> {
    /// Wraps WTF-8 bytes. `lone` must be true when the bytes hold a surrogate sequence.
    pub(crate) fn from_wtf8(bytes: Cow<'a, [u8]>, lone: bool) -> Self {
        let simple = !lone && !bytes.iter().any(|&b| needs_json_escape(b));
        JsString {
            bytes: bytes.into(),
            simple,
            lone,
        }
    }

    /// What the string's bytes were found to be, to rebuild it from a copy of them with
    /// [`JsString::from_wtf8_shaped`] without looking at them again.
    pub fn shape(&self) -> Shape {
        Shape {
            simple: self.simple,
            lone: self.lone,
        }
    }

    /// Borrows a copy of a string's bytes as that string again: `shape` is the
    /// [`JsString::shape`] of a string whose [`JsString::as_wtf8`] are these `bytes`
    /// (`loopguard replay`'s engine thread rebuilds the strings its reader
    /// thread parsed, without looking at their bytes again). A shape taken from other bytes
    /// makes the JSON writer copy characters it should escape; debug builds check it.
    ///
    /// ```
    /// use loopguard_core::{JsString, Value};
    /// let v = Value::parse(br#""tab\there""#)?;
    /// let s = v.as_js_str().ok_or("not a string")?;
    /// let copy = s.as_wtf8().to_vec();
    /// let again = JsString::from_wtf8_shaped(&copy, s.shape());
    /// assert_eq!(again, *s);
    /// let mut out = Vec::new();
    /// loopguard_core::json::write_json_string(&mut out, &again);
    /// assert_eq!(out, br#""tab\there""#);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_wtf8_shaped(bytes: &'a [u8], shape: Shape) -> Self {
        debug_assert!(
            !shape.simple || !(shape.lone || bytes.iter().any(|&b| needs_json_escape(b))),
            "a shape that is not these bytes'"
        );
        JsString {
            bytes: Repr::Borrowed(bytes),
            simple: shape.simple,
            lone: shape.lone,
        }
    }

    /// Owns bytes the caller checked to be ASCII that `JSON.stringify` writes unchanged.
    pub(crate) fn from_parts_simple(bytes: Vec<u8>) -> JsString<'static> {
        JsString {
            bytes: Repr::Owned(bytes),
            simple: true,
            lone: false,
        }
    }

    /// Wraps bytes whose flags the caller already knows (the parser).
    pub(crate) fn from_parts(bytes: Cow<'a, [u8]>, simple: bool, lone: bool) -> Self {
        JsString {
            bytes: bytes.into(),
            simple,
            lone,
        }
    }

    /// A string kept as its escaped `source` (without the quotes), which the parser
    /// validated and found to be the `JSON.stringify` form of its characters (none of them
    /// a lone surrogate, at least one escaped); decoded when its bytes are asked for.
    pub(crate) fn from_escaped(source: &'a [u8]) -> Self {
        JsString {
            bytes: Repr::Escaped(Escaped::new(source)),
            simple: false,
            lone: false,
        }
    }

    /// The `JSON.stringify` form of the string (without its quotes) when it is at hand
    /// without escaping: the parsed source of a long escaped string, or of a trimmed one.
    pub(crate) fn escaped_source(&self) -> Option<&[u8]> {
        match &self.bytes {
            Repr::Escaped(e) => Some(e.source),
            _ => None,
        }
    }

    /// The WTF-8 bytes.
    #[inline]
    pub fn as_wtf8(&self) -> &[u8] {
        &self.bytes
    }

    /// The string as `&str` when it holds no lone surrogates.
    pub fn as_str(&self) -> Option<&str> {
        if self.lone {
            None
        } else {
            std::str::from_utf8(&self.bytes).ok()
        }
    }

    /// The string with every lone surrogate replaced by U+FFFD.
    pub fn to_string_lossy(&self) -> Cow<'_, str> {
        match self.as_str() {
            Some(s) => Cow::Borrowed(s),
            None => Cow::Owned(
                CodePoints::new(&self.bytes)
                    .map(|c| char::from_u32(c).unwrap_or('\u{FFFD}'))
                    .collect(),
            ),
        }
    }

    /// `true` when the bytes hold at least one lone surrogate.
    pub fn has_lone_surrogates(&self) -> bool {
        self.lone
    }

    /// `true` when `JSON.stringify` writes the bytes unchanged between quotes.
    pub(crate) fn is_simple(&self) -> bool {
        self.simple
    }

    /// `true` for `""`.
    pub fn is_empty(&self) -> bool {
        match &self.bytes {
            Repr::Escaped(e) => e.source.is_empty(),
            other => other.is_empty(),
        }
    }

    /// A copy that owns its bytes.
    pub fn into_owned(self) -> JsString<'static> {
        let bytes = match self.bytes {
            Repr::Borrowed(b) => Repr::Owned(b.to_vec()),
            Repr::Owned(v) => Repr::Owned(v),
            Repr::Shared(a) => Repr::Shared(a),
            Repr::Escaped(e) => Repr::Owned(e.bytes().to_vec()),
        };
        JsString {
            bytes,
            simple: self.simple,
            lone: self.lone,
        }
    }

    /// An owned copy whose clones share one allocation (cheap to clone).
    pub fn to_shared(&self) -> JsString<'static> {
        let bytes = match &self.bytes {
            Repr::Shared(a) => Repr::Shared(a.clone()),
            other => Repr::Shared(std::sync::Arc::from(&other[..])),
        };
        JsString {
            bytes,
            simple: self.simple,
            lone: self.lone,
        }
    }

    /// Borrows this string without copying.
    #[inline]
    pub fn reborrow(&self) -> JsString<'_> {
        let bytes = match &self.bytes {
            Repr::Escaped(e) => Repr::Escaped(Escaped::new(e.source)),
            other => Repr::Borrowed(other),
        };
        JsString {
            bytes,
            simple: self.simple,
            lone: self.lone,
        }
    }

    /// JavaScript's `String.prototype.trim`, borrowing from `self` (a string kept as its
    /// escaped source is trimmed there, without decoding it).
    pub fn trim(&self) -> JsString<'_> {
        if let Repr::Escaped(e) = &self.bytes {
            return JsString {
                bytes: Repr::Escaped(Escaped::new(trim_source(e.source))),
                simple: false,
                lone: false,
            };
        }
        let t = crate::text::js_trim(&self.bytes);
        JsString {
            bytes: Repr::Borrowed(t),
            simple: self.simple,
            lone: self.lone && t.len() >= 3,
        }
    }
}

impl PartialEq for JsString<'_> {
    fn eq(&self, other: &Self) -> bool {
        *self.bytes == *other.bytes
    }
}

impl Eq for JsString<'_> {}

impl PartialOrd for JsString<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for JsString<'_> {
    /// JavaScript's string comparison: UTF-16 code units.
    fn cmp(&self, other: &Self) -> Ordering {
        utf16_cmp(&self.bytes, &other.bytes)
    }
}

impl std::hash::Hash for JsString<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (*self.bytes).hash(state)
    }
}

impl fmt::Debug for JsString<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string_lossy(), f)
    }
}

impl fmt::Display for JsString<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_string_lossy())
    }
}

impl<'a> From<&'a str> for JsString<'a> {
    fn from(s: &'a str) -> Self {
        JsString::from_wtf8(Cow::Borrowed(s.as_bytes()), false)
    }
}

impl From<String> for JsString<'static> {
    fn from(s: String) -> Self {
        JsString::from_wtf8(Cow::Owned(s.into_bytes()), false)
    }
}

/// Compares two WTF-8 strings by UTF-16 code units, as JavaScript's `<` and `sort` do.
///
/// Byte order equals code-point order, which differs from UTF-16 order only where both
/// differing code points are at or above U+D800; only that case decodes further.
#[inline]
pub fn utf16_cmp(a: &[u8], b: &[u8]) -> Ordering {
    // Keys mostly differ in their first byte, mostly ASCII (see below).
    if let (Some(&x), Some(&y)) = (a.first(), b.first()) {
        if x != y && x.min(y) < 0x80 {
            return x.cmp(&y);
        }
    }
    utf16_cmp_from_prefix(a, b)
}

/// [`utf16_cmp`] past its first test.
fn utf16_cmp_from_prefix(a: &[u8], b: &[u8]) -> Ordering {
    let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (Some(&x), Some(&y)) = (a.get(common), b.get(common)) else {
        return a.len().cmp(&b.len());
    };
    // An ASCII byte is never inside a longer sequence, so where one of the first differing
    // bytes is ASCII both code points start there, and one of them is below U+0080: byte
    // order is UTF-16 order (the usual case for object keys).
    if x.min(y) < 0x80 {
        return x.cmp(&y);
    }
    let mut start = common;
    while start > 0 && (a[start] & 0xC0) == 0x80 {
        start -= 1;
    }
    let (ca, _) = decode_at(a, start);
    let (cb, _) = decode_at(b, start);
    if ca.min(cb) < 0xD800 {
        return ca.cmp(&cb);
    }
    let ua = CodePoints::new(&a[start..]).flat_map(utf16_units);
    let ub = CodePoints::new(&b[start..]).flat_map(utf16_units);
    ua.cmp(ub)
}

fn utf16_units(c: u32) -> impl Iterator<Item = u16> {
    let (first, second) = if c >= 0x10000 {
        let v = c - 0x10000;
        (0xD800 + (v >> 10) as u16, Some(0xDC00 + (v & 0x3FF) as u16))
    } else {
        (c as u16, None)
    };
    std::iter::once(first).chain(second)
}

/// Iterates the code points of WTF-8 bytes.
pub(crate) struct CodePoints<'s> {
    s: &'s [u8],
    i: usize,
}

impl<'s> CodePoints<'s> {
    pub(crate) fn new(s: &'s [u8]) -> Self {
        CodePoints { s, i: 0 }
    }
}

impl Iterator for CodePoints<'_> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        if self.i >= self.s.len() {
            return None;
        }
        let (c, n) = decode_at(self.s, self.i);
        self.i += n;
        Some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::push_wtf8;

    fn wtf8(units: &[u16]) -> Vec<u8> {
        let mut out = Vec::new();
        for r in char::decode_utf16(units.iter().copied()) {
            match r {
                Ok(c) => push_wtf8(&mut out, c as u32),
                Err(e) => push_wtf8(&mut out, e.unpaired_surrogate() as u32),
            }
        }
        out
    }

    #[test]
    fn utf16_order_puts_astral_before_private_use() {
        // U+1F600 (D83D DE00) sorts before U+E000 in UTF-16, after it in UTF-8.
        assert_eq!(
            utf16_cmp("😀".as_bytes(), "\u{E000}".as_bytes()),
            Ordering::Less
        );
        assert_eq!(utf16_cmp("a".as_bytes(), "b".as_bytes()), Ordering::Less);
        assert_eq!(
            utf16_cmp("ab".as_bytes(), "a".as_bytes()),
            Ordering::Greater
        );
        assert_eq!(
            utf16_cmp("\u{D7FF}".as_bytes(), "😀".as_bytes()),
            Ordering::Less
        );
    }

    #[test]
    fn utf16_order_matches_reference_on_surrogates() {
        let cases: &[&[u16]] = &[
            &[0xD83D],
            &[0xD83D, 0xDE00],
            &[0xD83D, 0x41],
            &[0xDE00],
            &[0xE000],
            &[0xFFFF],
            &[0xD800, 0xDC00],
            &[0x41],
            &[0x41, 0x42],
            &[0x41, 0xE9],
            &[0x41, 0xD83D, 0xDE00],
            &[0x41, 0xE000, 0x41],
            &[0x7F],
            &[0x80],
            &[0x7FF, 0x41],
            &[0x800],
            &[],
        ];
        for a in cases {
            for b in cases {
                assert_eq!(utf16_cmp(&wtf8(a), &wtf8(b)), a.cmp(b), "{a:x?} vs {b:x?}");
            }
        }
    }

    /// Small objects (sorted by insertion) and large ones (sorted by `sort_by`) hold what
    /// `JSON.parse` keeps: one entry per key, its last value, in UTF-16 order.
    #[test]
    fn objects_of_every_size_sort_and_keep_the_last_duplicate() {
        let keys = [
            "b", "a", "\u{E000}", "😀", "ab", "", "b", "a", "é", "ab", "z", "a",
        ];
        for n in 0..=keys.len() {
            for rot in 0..n.max(1) {
                let input: Vec<(usize, &str)> =
                    (0..n).map(|i| (i, keys[(i + rot) % n.max(1)])).collect();
                let o = Object::from_entries(
                    input
                        .iter()
                        .map(|&(i, k)| (JsString::from(k), Value::from(i as f64)))
                        .collect(),
                );
                let mut want: Vec<(Vec<u16>, f64)> = Vec::new();
                for &(i, k) in &input {
                    let units: Vec<u16> = k.encode_utf16().collect();
                    want.retain(|(u, _)| *u != units);
                    want.push((units, i as f64));
                }
                want.sort_by(|a, b| a.0.cmp(&b.0));
                let got: Vec<(Vec<u16>, f64)> = o
                    .iter()
                    .map(|(k, v)| {
                        let units = k.to_string().encode_utf16().collect();
                        (units, v.as_f64().unwrap_or(f64::NAN))
                    })
                    .collect();
                assert_eq!(got, want, "{n} {rot}");
            }
        }
    }

    #[test]
    fn duplicate_keys_keep_last_value() {
        let o = Object::from_entries(vec![
            ("b".into(), Value::from(1.0)),
            ("a".into(), Value::from(2.0)),
            ("b".into(), Value::from(3.0)),
        ]);
        let keys: Vec<_> = o.iter().map(|(k, _)| k.to_string()).collect();
        assert_eq!(keys, ["a", "b"]);
        assert_eq!(o.get("b"), Some(&Value::Number(3.0)));
    }
}
