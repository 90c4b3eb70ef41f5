//! OpenClaw's canonical serialiser (`stableStringify`) and its SHA-256 digest.
//!
//! The canonical form is JSON with object keys sorted by UTF-16 code units, no whitespace,
//! numbers written by JavaScript's `Number.prototype.toString`, non-finite numbers written
//! as the strings `"NaN"`, `"Infinity"`, `"-Infinity"`, lone surrogates dropped from strings
//! and keys, and the bare token `undefined` where a value is missing. Hashes are the SHA-256
//! of those bytes, so the bytes must match OpenClaw's exactly.
//!
//! Values are never materialised as text: the serialiser streams into a [`Sink`], and
//! [`Digest`] is a sink that feeds SHA-256 through a small buffer. Objects built only for
//! hashing (exec outcomes, plan shapes) are written field by field with [`ObjectWriter`].

use crate::value::{JsString, Object, Value};

/// Where canonical bytes go.
///
/// ```
/// use loopguard_core::{json, JsString};
/// let mut out: Vec<u8> = Vec::new();
/// json::write_json_string(&mut out, &JsString::from("tab\there"));
/// assert_eq!(out, br#""tab\there""#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Sink {
    /// Appends bytes.
    fn write(&mut self, bytes: &[u8]);
}

impl Sink for Vec<u8> {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// A [`Sink`] that hashes what it is given with SHA-256.
///
/// Canonical forms arrive in many small writes (punctuation, keys, numbers), so this keeps
/// its own 64-byte block and feeds whole blocks to the `sha2` crate's compression function,
/// which uses the CPU's SHA instructions; only the standard padding is done here. Long
/// strings are compressed straight from their bytes.
pub struct Digest {
    state: [u32; 8],
    block: [u8; 64],
    len: usize,
    total: u64,
}

/// SHA-256's initial hash value.
const H0: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

impl Default for Digest {
    fn default() -> Self {
        Digest {
            state: H0,
            block: [0; 64],
            len: 0,
            total: 0,
        }
    }
}

impl Digest {
    /// Finishes the hash (SHA-256 padding: `0x80`, zeros, the bit length big-endian).
    pub fn finish(mut self) -> [u8; 32] {
        let bits = self.total.wrapping_mul(8);
        self.block[self.len] = 0x80;
        self.block[self.len + 1..].fill(0);
        if self.len >= 56 {
            compress256(&mut self.state, std::slice::from_ref(&self.block));
            self.block = [0; 64];
        }
        self.block[56..].copy_from_slice(&bits.to_be_bytes());
        compress256(&mut self.state, std::slice::from_ref(&self.block));
        let mut out = [0u8; 32];
        for (chunk, word) in out.chunks_exact_mut(4).zip(self.state) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        out
    }

    #[cold]
    #[inline(never)]
    fn write_slow(&mut self, mut bytes: &[u8]) {
        // Complete the pending block.
        let take = 64 - self.len;
        self.block[self.len..].copy_from_slice(&bytes[..take]);
        compress256(&mut self.state, std::slice::from_ref(&self.block));
        bytes = &bytes[take..];
        // Whole blocks straight from the input.
        let mut blocks = bytes.chunks_exact(64);
        for b in &mut blocks {
            let mut one = [0u8; 64];
            one.copy_from_slice(b);
            compress256(&mut self.state, std::slice::from_ref(&one));
        }
        let rest = blocks.remainder();
        self.block[..rest.len()].copy_from_slice(rest);
        self.len = rest.len();
    }
}

use sha2::block_api::compress256;

impl Sink for Digest {
    #[inline(always)]
    fn write(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let end = self.len + bytes.len();
        if end < 64 {
            self.block[self.len..end].copy_from_slice(bytes);
            self.len = end;
        } else {
            self.write_slow(bytes);
        }
    }
}

/// Lowercase hex of a digest.
///
/// ```
/// let d = loopguard_core::hashing::digest_value(&loopguard_core::Value::from("x"));
/// assert_eq!(loopguard_core::hashing::hex(&d).len(), 64);
/// ```
pub fn hex(d: &[u8; 32]) -> String {
    let mut s = String::with_capacity(64);
    push_hex(&mut s, d);
    s
}

/// Appends the lowercase hex of a digest.
pub fn push_hex(out: &mut String, d: &[u8; 32]) {
    let hex = hex_bytes(d);
    // Hex digits are ASCII.
    out.push_str(std::str::from_utf8(&hex).unwrap_or_default());
}

/// The SHA-256 of the canonical form of `v`.
///
/// ```
/// use loopguard_core::{hashing, Value};
/// let a = Value::parse(br#"{"x":1,"y":[true]}"#)?;
/// let b = Value::parse(br#"{ "y": [true], "x": 1.0 }"#)?;
/// assert_eq!(hashing::digest_value(&a), hashing::digest_value(&b));
/// # Ok::<(), loopguard_core::json::ParseError>(())
/// ```
pub fn digest_value(v: &Value<'_>) -> [u8; 32] {
    let mut d = Digest::default();
    write_value(&mut d, v);
    d.finish()
}

/// The canonical bytes of `v` (`stableStringify`), for inspection and tests.
///
/// ```
/// use loopguard_core::{json::to_canonical_string, Value};
/// let v = Value::parse(br#"{"b":{"d":4,"c":3},"a":1,"n":-0,"e":1e21}"#)?;
/// assert_eq!(to_canonical_string(&v), r#"{"a":1,"b":{"c":3,"d":4},"e":1e+21,"n":0}"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn to_canonical_string(v: &Value<'_>) -> String {
    let mut out = Vec::new();
    write_value(&mut out, v);
    // The serialiser drops lone surrogates and escapes nothing else outside ASCII, so the
    // output is always valid UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// Writes `v` canonically.
pub fn write_value<S: Sink + ?Sized>(out: &mut S, v: &Value<'_>) {
    match v {
        Value::Null => out.write(b"null"),
        Value::Bool(true) => out.write(b"true"),
        Value::Bool(false) => out.write(b"false"),
        Value::Number(n) => write_number(out, *n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.write(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write(b",");
                }
                write_value(out, item);
            }
            out.write(b"]");
        }
        Value::Object(o) => write_object(out, o),
    }
}

fn write_object<S: Sink + ?Sized>(out: &mut S, o: &Object<'_>) {
    out.write(b"{");
    for (i, (k, v)) in o.iter().enumerate() {
        if i > 0 {
            out.write(b",");
        }
        write_string(out, k);
        out.write(b":");
        write_value(out, v);
    }
    out.write(b"}");
}

/// Writes `Some(v)` canonically and `None` as the bare token `undefined`.
pub fn write_optional<S: Sink + ?Sized>(out: &mut S, v: Option<&Value<'_>>) {
    match v {
        Some(v) => write_value(out, v),
        None => out.write(b"undefined"),
    }
}

/// Writes a number the way `stableStringify` does.
pub fn write_number<S: Sink + ?Sized>(out: &mut S, n: f64) {
    if n.is_nan() {
        out.write(b"\"NaN\"");
    } else if n.is_infinite() {
        out.write(if n > 0.0 {
            b"\"Infinity\""
        } else {
            b"\"-Infinity\""
        });
    } else if !write_small_integer(out, n) {
        out.write(js_number(n, &mut ryu_js::Buffer::new()).as_bytes());
    }
}

/// JavaScript's `Number.prototype.toString()` for any `f64`, written into `buf` (a
/// `ryu_js::Buffer`).
///
/// ```
/// let mut buf = ryu_js::Buffer::new();
/// assert_eq!(loopguard_core::json::js_number(1e21, &mut buf), "1e+21");
/// assert_eq!(loopguard_core::json::js_number(-0.0, &mut buf), "0");
/// ```
pub fn js_number(n: f64, buf: &mut ryu_js::Buffer) -> &str {
    if n == 0.0 {
        return "0";
    }
    buf.format(n)
}

/// Writes integers below 2^53 directly: JavaScript prints them as plain digits, and this
/// is the common case (counts, ids, exit codes) that the general algorithm handles slowly.
#[inline]
fn write_small_integer<S: Sink + ?Sized>(out: &mut S, n: f64) -> bool {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if n.fract() != 0.0 || n.abs() >= EXACT || n == 0.0 {
        return false;
    }
    let mut v = n.abs() as u64;
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    while v > 0 {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
    }
    if n < 0.0 {
        i -= 1;
        buf[i] = b'-';
    }
    out.write(&buf[i..]);
    true
}

/// JavaScript's `String(n)` as an owned string.
///
/// ```
/// assert_eq!(loopguard_core::json::format_js_number(2.5e-7), "2.5e-7");
/// ```
pub fn format_js_number(n: f64) -> String {
    js_number(n, &mut ryu_js::Buffer::new()).to_string()
}

/// Writes a string as `JSON.stringify` would after dropping lone surrogates.
pub fn write_string<S: Sink + ?Sized>(out: &mut S, s: &JsString<'_>) {
    if s.is_simple() {
        out.write(b"\"");
        out.write(s.as_wtf8());
        out.write(b"\"");
        return;
    }
    if let Some(source) = s.escaped_source() {
        out.write(b"\"");
        out.write(source);
        out.write(b"\"");
        return;
    }
    out.write(b"\"");
    write_escaped_body(
        out,
        s.as_wtf8(),
        s.has_lone_surrogates(),
        EscapeMode::DropSurrogates,
    );
    out.write(b"\"");
}

/// Writes a string as JavaScript's `JSON.stringify` does, quotes included: lone surrogates
/// become `\udxxx` escapes instead of being dropped. For output, not for hashing.
///
/// ```
/// use loopguard_core::{json::write_json_string, json::parse};
/// let v = parse(br#""a\ud800\n""#)?;
/// let mut out = Vec::new();
/// write_json_string(&mut out, v.as_js_str().ok_or("not a string")?);
/// assert_eq!(out, br#""a\ud800\n""#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_json_string<S: Sink + ?Sized>(out: &mut S, s: &JsString<'_>) {
    out.write(b"\"");
    write_json_string_body(out, s);
    out.write(b"\"");
}

/// [`write_json_string`] without the quotes, to build longer strings (`"tool:hex"`).
///
/// ```
/// use loopguard_core::{json, JsString};
/// let mut out = b"\"tool:".to_vec();
/// json::write_json_string_body(&mut out, &JsString::from("say \"hi\""));
/// out.push(b'"');
/// assert_eq!(out, br#""tool:say \"hi\"""#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_json_string_body<S: Sink + ?Sized>(out: &mut S, s: &JsString<'_>) {
    if s.is_simple() {
        out.write(s.as_wtf8());
    } else if let Some(source) = s.escaped_source() {
        out.write(source);
    } else {
        write_escaped_body(
            out,
            s.as_wtf8(),
            s.has_lone_surrogates(),
            EscapeMode::EscapeSurrogates,
        );
    }
}

/// The lowercase hex digits of a digest, without allocating.
///
/// ```
/// use loopguard_core::{hashing, Value};
/// let d = hashing::digest_value(&Value::from("x"));
/// assert_eq!(&hashing::hex_bytes(&d)[..], hashing::hex(&d).as_bytes());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn hex_bytes(d: &[u8; 32]) -> [u8; 64] {
    // Both digits of every byte from one table (a decision line has two digests).
    const PAIRS: [[u8; 2]; 256] = {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut t = [[0u8; 2]; 256];
        let mut i = 0;
        while i < 256 {
            t[i] = [HEX[i >> 4], HEX[i & 15]];
            i += 1;
        }
        t
    };
    let mut out = [0u8; 64];
    for (pair, &b) in out.chunks_exact_mut(2).zip(d) {
        pair.copy_from_slice(&PAIRS[b as usize]);
    }
    out
}

/// Writes `v` as JSON that parses back to the same JavaScript value (for writing event
/// files, not for hashing): keys in canonical order, lone surrogates as `\udxxx` escapes,
/// numbers as JavaScript prints them, and the infinities as `1e999` / `-1e999` (which
/// `JSON.parse` reads back as `Infinity`).
///
/// ```
/// use loopguard_core::{json::write_json_value, json::parse};
/// let v = parse(br#"{"b":"\ud800","a":1e400}"#)?;
/// let mut out = Vec::new();
/// write_json_value(&mut out, &v);
/// assert_eq!(out, br#"{"a":1e999,"b":"\ud800"}"#);
/// assert_eq!(parse(&out)?, v);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_json_value<S: Sink + ?Sized>(out: &mut S, v: &Value<'_>) {
    match v {
        Value::Number(n) if n.is_infinite() => {
            out.write(if *n > 0.0 { b"1e999" } else { b"-1e999" })
        }
        Value::Number(n) if n.is_nan() => out.write(b"null"),
        Value::String(s) => write_json_string(out, s),
        Value::Array(items) => {
            out.write(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write(b",");
                }
                write_json_value(out, item);
            }
            out.write(b"]");
        }
        Value::Object(o) => {
            out.write(b"{");
            for (i, (k, v)) in o.iter().enumerate() {
                if i > 0 {
                    out.write(b",");
                }
                write_json_string(out, k);
                out.write(b":");
                write_json_value(out, v);
            }
            out.write(b"}");
        }
        other => write_value(out, other),
    }
}

/// What to do with a lone surrogate when escaping.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum EscapeMode {
    /// The canonical serialiser (OpenClaw Era C) drops them.
    DropSurrogates,
    /// `JSON.stringify` writes them as `\udxxx`.
    EscapeSurrogates,
}

/// Writes the body of a JSON string (no quotes) for WTF-8 `bytes`.
pub(crate) fn write_escaped_body<S: Sink + ?Sized>(
    out: &mut S,
    bytes: &[u8],
    lone: bool,
    mode: EscapeMode,
) {
    let mut run = 0;
    let mut i = 0;
    while i < bytes.len() {
        let stop = crate::text::find_string_special(bytes, i);
        let stop = if lone {
            match bytes[i..stop].iter().position(|&b| b == 0xED) {
                Some(p) => i + p,
                None => stop,
            }
        } else {
            stop
        };
        if stop >= bytes.len() {
            break;
        }
        let b = bytes[stop];
        if b == 0xED {
            // ED A0..BF xx is a surrogate code point; ED 80..9F xx is ordinary Hangul.
            match bytes.get(stop + 1) {
                Some(&b1) if b1 >= 0xA0 && stop + 2 < bytes.len() => {
                    out.write(&bytes[run..stop]);
                    if mode == EscapeMode::EscapeSurrogates {
                        let c = 0xD000
                            | (u32::from(b1 & 0x3F) << 6)
                            | u32::from(bytes[stop + 2] & 0x3F);
                        write_u_escape(out, c);
                    }
                    i = stop + 3;
                    run = i;
                }
                _ => i = stop + 1,
            }
            continue;
        }
        out.write(&bytes[run..stop]);
        match b {
            b'"' => out.write(b"\\\""),
            b'\\' => out.write(b"\\\\"),
            b'\n' => out.write(b"\\n"),
            b'\r' => out.write(b"\\r"),
            b'\t' => out.write(b"\\t"),
            0x08 => out.write(b"\\b"),
            0x0C => out.write(b"\\f"),
            c => write_u_escape(out, u32::from(c)),
        }
        i = stop + 1;
        run = i;
    }
    out.write(&bytes[run..]);
}

fn write_u_escape<S: Sink + ?Sized>(out: &mut S, c: u32) {
    let [a, b, c, d] = u_escape_hex(c);
    out.write(&[b'\\', b'u', a, b, c, d]);
}

/// The four hex digits of a `\uXXXX` escape, lower case, as `JSON.stringify` writes them.
pub(crate) fn u_escape_hex(c: u32) -> [u8; 4] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    [
        HEX[((c >> 12) & 15) as usize],
        HEX[((c >> 8) & 15) as usize],
        HEX[((c >> 4) & 15) as usize],
        HEX[(c & 15) as usize],
    ]
}

/// Writes an object whose keys the caller gives in canonical order.
///
/// Used for the small objects OpenClaw builds only to hash them, so they never exist as
/// values. Keys must be ASCII and passed in sorted order; debug builds check the order.
pub struct ObjectWriter<'o, S: Sink + ?Sized> {
    out: &'o mut S,
    first: bool,
    #[cfg(debug_assertions)]
    last: &'static str,
}

impl<'o, S: Sink + ?Sized> ObjectWriter<'o, S> {
    /// Starts an object.
    pub fn new(out: &'o mut S) -> Self {
        out.write(b"{");
        ObjectWriter {
            out,
            first: true,
            #[cfg(debug_assertions)]
            last: "",
        }
    }

    /// Writes the next key and returns the sink for its value.
    pub fn key(&mut self, key: &'static str) -> &mut S {
        #[cfg(debug_assertions)]
        {
            debug_assert!(self.first || self.last < key, "keys out of order: {key}");
            self.last = key;
        }
        if !self.first {
            self.out.write(b",");
        }
        self.first = false;
        self.out.write(b"\"");
        self.out.write(key.as_bytes());
        self.out.write(b"\":");
        self.out
    }

    /// Closes the object.
    pub fn finish(self) {
        self.out.write(b"}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A long string kept with its source (`Repr::Escaped`) writes exactly what escaping its
    /// decoded bytes writes, whole and trimmed, for every escape `JSON.parse` accepts:
    /// canonical sources are copied, others (`\/`, `\u0041`, upper-case hex, surrogate
    /// pairs, lone surrogates) escaped again.
    #[test]
    fn kept_sources_write_what_escaping_writes() {
        let long = "x".repeat(300);
        let pieces = [
            r#"\n"#,
            r#"\t"#,
            r#"\r"#,
            r#"\b"#,
            r#"\f"#,
            r#"\""#,
            r#"\\"#,
            r#"\\n"#,
            r#"\u0001"#,
            r#"\u001f"#,
            r#"\u001F"#,
            r#"\u000b"#,
            r#"\u000a"#,
            r#"\/"#,
            r#"\u0041"#,
            r#"\ud83d\ude00"#,
            r#"\ud800"#,
            " ",
            "\u{a0}",
            "\u{3000}",
            "é",
            r#"\\\\"#,
            r#"\\\n"#,
        ];
        let mut cases = Vec::new();
        for a in pieces {
            for b in pieces {
                cases.push(format!("{a}{b}{long}{a}{b}"));
                cases.push(format!("{a}{long}\\n{b}"));
                cases.push(format!("{long}{a}"));
                cases.push(format!("{b}{a}{long}"));
            }
            // An escape followed by whitespace of every length up to an escape's (six bytes):
            // the whitespace is trimmed, whatever lies six bytes before the end.
            for ws in [
                " ", "  ", "   ", "    ", "     ", "      ", "\u{a0}  ", r#" \n"#,
            ] {
                cases.push(format!("{long}{a}{ws}"));
                cases.push(format!("{ws}{a}{long}"));
            }
        }
        for text in cases {
            let json = format!("\"{text}\"");
            let v = crate::parse::parse(json.as_bytes()).unwrap();
            let s = v.as_js_str().unwrap();
            // Trimmed in its source, the string is the decoded string trimmed.
            assert_eq!(
                s.trim().into_owned().as_wtf8(),
                crate::text::js_trim(s.as_wtf8()),
                "{json}"
            );
            for (label, parsed) in [("whole", s.reborrow()), ("trimmed", s.trim())] {
                let copy = parsed.clone().into_owned();
                let (mut hashed, mut want) = (Vec::new(), Vec::new());
                write_string(&mut hashed, &parsed);
                write_string(&mut want, &copy);
                assert_eq!(hashed, want, "{label} {json}");
                let (mut shown, mut want) = (Vec::new(), Vec::new());
                write_json_string(&mut shown, &parsed);
                write_json_string(&mut want, &copy);
                assert_eq!(shown, want, "{label} {json}");
            }
        }
        // The source is kept where it is canonical, so the shortcut is taken.
        let text1 = format!("\"{long}\\n \\u0001\"");
        let v = crate::parse::parse(text1.as_bytes()).unwrap();
        let s = v.as_js_str().unwrap();
        assert!(s.escaped_source().is_some());
        assert_eq!(
            s.trim().escaped_source(),
            Some(format!("{long}\\n \\u0001").as_bytes())
        );
        let text2 = format!("\"{long}\\n \\u0001\\t\\n\"");
        let v = crate::parse::parse(text2.as_bytes()).unwrap();
        let s = v.as_js_str().unwrap();
        assert_eq!(
            s.trim().escaped_source(),
            Some(format!("{long}\\n \\u0001").as_bytes())
        );
        let text3 = format!("\"{long}\\/\"");
        let v = crate::parse::parse(text3.as_bytes()).unwrap();
        assert!(v.as_js_str().unwrap().escaped_source().is_none());
    }
    use crate::parse::parse;
    use sha2::{Digest as _, Sha256};

    fn canon(json: &str) -> String {
        to_canonical_string(&parse(json.as_bytes()).unwrap())
    }

    #[test]
    fn reference_outputs() {
        assert_eq!(
            canon(r#"{"b":{"d":4,"c":3},"a":1}"#),
            r#"{"a":1,"b":{"c":3,"d":4}}"#
        );
        assert_eq!(
            canon(r#"[1e21,-0,0.1,1.5e-10,5e-324]"#),
            "[1e+21,0,0.1,1.5e-10,5e-324]"
        );
        assert_eq!(canon("[1e400,-1e400]"), r#"["Infinity","-Infinity"]"#);
        assert_eq!(
            canon(r#""a\"b\\c\n\u0001\u001f\u007f\u2028é""#),
            "\"a\\\"b\\\\c\\n\\u0001\\u001f\u{7f}\u{2028}é\""
        );
    }

    #[test]
    fn surrogates_are_dropped_from_strings_and_keys() {
        // The upstream test: {["key"+HIGH]:"name", high:"left"+HIGH+"right", low:…, valid:…}
        let v = canon(
            r#"{"key\ud83d":"name","high":"left\ud83dright","low":"left\ude48right","valid":"emoji \ud83d\ude48 ok"}"#,
        );
        assert_eq!(
            v,
            r#"{"high":"leftright","key":"name","low":"leftright","valid":"emoji 🙈 ok"}"#
        );
        // Hangul (ED 80..9F) is not a surrogate.
        assert_eq!(canon(r#"["\ud7ff\ud800\uffff"]"#), "[\"\u{d7ff}\u{ffff}\"]");
    }

    #[test]
    fn escaped_mode_writes_lone_surrogates() {
        let v = parse(br#""a\ud800b""#).unwrap();
        let mut out = Vec::new();
        let s = v.as_js_str().unwrap();
        write_escaped_body(&mut out, s.as_wtf8(), true, EscapeMode::EscapeSurrogates);
        assert_eq!(out, b"a\\ud800b");
    }

    #[test]
    fn digest_matches_sha2_for_every_length_and_split() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        for n in 0..data.len() {
            let want: [u8; 32] = Sha256::digest(&data[..n]).into();
            for split in [0, 1, 7, 55, 56, 63, 64, 65, 128] {
                let mut d = Digest::default();
                let k = split.min(n);
                d.write(&data[..k]);
                for b in data[k..n].chunks(13) {
                    d.write(b);
                }
                assert_eq!(d.finish(), want, "n={n} split={split}");
            }
        }
    }

    #[test]
    fn digest_buffering_matches_one_shot() {
        for n in [0, 1, 255, 256, 257, 1000, 5000] {
            let text = "x".repeat(n);
            let v = Value::from(text.as_str());
            let mut one = Sha256::new();
            one.update(format!("\"{text}\""));
            let want: [u8; 32] = one.finalize().into();
            assert_eq!(digest_value(&v), want, "{n}");
        }
    }
}

/// The examples of items that are internal to the crate.
#[cfg(test)]
mod examples {
    #[test]
    fn digest() {
        use crate::canonical::{digest_value, hex};
        use crate::Value;
        use sha2::{Digest as _, Sha256};
        // digest("x") hashes the three bytes `"x"`, quotes included.
        let d = digest_value(&Value::from("x"));
        assert_eq!(d, <[u8; 32]>::from(Sha256::digest(b"\"x\"")));
        assert_eq!(hex(&d).len(), 64);
    }

    #[test]
    fn js_number() {
        use crate::canonical::js_number;
        let mut b = ryu_js::Buffer::new();
        assert_eq!(js_number(1e21, &mut b), "1e+21");
        assert_eq!(js_number(-0.0, &mut b), "0");
        assert_eq!(js_number(f64::INFINITY, &mut b), "Infinity");
    }

    #[test]
    fn object_writer() {
        use crate::canonical::{ObjectWriter, Sink};
        let mut out = Vec::new();
        let mut w = ObjectWriter::new(&mut out);
        w.key("a").write(b"1");
        w.key("b").write(b"undefined");
        w.finish();
        assert_eq!(out, br#"{"a":1,"b":undefined}"#);
    }
}
