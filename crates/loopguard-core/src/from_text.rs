//! Digests taken straight from JSON text, without building [`Value`](crate::Value)s.
//!
//! A front end that holds a call's arguments or a tool's result as JSON text (the npm
//! package writes them with `JSON.stringify`) needs only their digests on the usual path:
//! the engine keeps digests, not values. Parsing the text into values, then writing the values
//! in canonical form to hash them, allocates every object and array and copies every key
//! and string twice; here the text is read once and its canonical form written as it is read
//! (the two events of a guarded call in Node spent about a third of the addon's time building
//! values they then threw away: docs/typescript.md, "Performance"). The canonical text is
//! written into a buffer the caller passes and reuses from call to call: the core keeps no
//! state of its own.
//!
//! The reader takes the text `JSON.stringify` writes, and declines (`None`) everything else
//! rather than decide it differently: a key with an escape, a string escape `JSON.stringify`
//! would not write (`\/`, `\u00e9`, a surrogate), a repeated key in an object whose canonical
//! form it writes (a result's own members and its `content` items may repeat one: the last
//! counts, as with `JSON.parse`), more than [`MAX_KEYS`] keys in one object, nesting deeper
//! than [`MAX_NEST`], and any text that is not JSON. A caller then parses the text as usual,
//! which gives the same digest or reports the error. Within what it takes, the digest is the
//! one the value path gives, which the property tests check for arbitrary values
//! (`crates/loopguard-core/tests/properties.rs`).

use crate::canonical::{self, Digest, Sink};
use crate::fingerprint::ArgsDigest;
use crate::outcome::{OutcomeHash, ResultHash, CHANNEL_TOOLS};
use crate::parse::{canonical_end, read_number, validate_utf8};
use crate::text::{scan_string, trim_source};
use crate::value::utf16_cmp;
use std::cmp::Ordering;

/// The most keys an object may have for the reader to take it (a larger one is left to
/// the value path).
const MAX_KEYS: usize = 32;

/// The deepest nesting of arrays and objects the reader takes.
const MAX_NEST: usize = 32;

/// The digest [`args_digest_wtf8`](crate::hashing::args_digest_wtf8) gives for `tool` and the
/// arguments the JSON text `json` holds, computed from the text without building values.
///
/// `None` for `update_plan` (whose digest is of the arguments' shape) and for text the reader
/// does not take: anything but JSON as `JSON.stringify` writes it (whitespace aside), i.e. a
/// key written with an escape, a string escape `JSON.stringify` would not write (`\/`,
/// `\u00e9`, a surrogate), a repeated key, an object of more than 32 keys, nesting deeper
/// than 32 levels, and text that is not JSON. The caller then parses the text, which gives
/// the same digest or the error.
///
/// `scratch` receives the canonical text (it is cleared first): pass the same buffer from
/// call to call, so that hashing on every event does not allocate.
///
/// ```
/// use loopguard_core::{hashing, Value};
/// let mut scratch = Vec::new();
/// let json = br#"{"path":"/src/a.ts","offset":0,"limit":200}"#;
/// let fast = hashing::args_digest_from_json(b"read", json, &mut scratch).ok_or("declined")?;
/// assert_eq!(fast, hashing::args_digest_wtf8(b"read", &Value::parse(json)?));
/// // A key written with an escape is left to the value path.
/// assert_eq!(hashing::args_digest_from_json(b"read", br#"{"p\u0061th":1}"#, &mut scratch), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn args_digest_from_json(
    tool: &[u8],
    json: &[u8],
    scratch: &mut Vec<u8>,
) -> Option<ArgsDigest> {
    if tool == b"update_plan" {
        return None;
    }
    scratch.clear();
    whole(json, scratch)?;
    let mut d = Digest::default();
    d.write(scratch);
    Some(ArgsDigest(d.finish()))
}

/// The [`hash_outcome`](crate::hashing::hash_outcome) of a tool's result given as the JSON
/// text `json`, with the default [`Hashing`](crate::Hashing), computed from the text.
///
/// `None` where the reader does not take the text (as for [`args_digest_from_json`]), and
/// where the hash depends on more than the tool's name and its result: the tools OpenClaw hashes in a
/// way of their own (`exec`, `process`, `update_plan`, `sessions_send`, `message` and the
/// channel tools, [`CHANNEL_TOOLS`], whose hash may depend on the arguments), and a result
/// whose `details` mention `tool-loop` (the loop's own veto is not an outcome). Thrown errors
/// are not taken either. `scratch` is a buffer for the canonical text, as there.
///
/// ```
/// use loopguard_core::{hashing, Hashing, Outcome, Value};
/// let json = br#"{"content":[{"type":"text","text":"line 1\nline 2\n"}],"details":{"ok":true}}"#;
/// let fast = hashing::outcome_hash_from_json(b"read", json, &mut Vec::new()).ok_or("declined")?;
/// let result = Value::parse(json)?;
/// let slow = hashing::hash_outcome(b"read", &Value::Null, Outcome::Result(&result), &Hashing::default());
/// assert_eq!(fast, slow);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn outcome_hash_from_json(
    tool: &[u8],
    json: &[u8],
    scratch: &mut Vec<u8>,
) -> Option<OutcomeHash> {
    if matches!(
        tool,
        b"exec" | b"process" | b"update_plan" | b"sessions_send" | b"message"
    ) || CHANNEL_TOOLS.iter().any(|t| t.as_bytes() == tool)
    {
        return None;
    }
    scratch.clear();
    let mut r = Reader { s: json, i: 0 };
    r.ws();
    if r.peek() != Some(b'{') {
        // Not an object: the digest of the value's canonical form.
        whole(json, scratch)?;
    } else {
        result_object(&mut r, scratch)?;
        r.ws();
        if r.i != json.len() {
            return None;
        }
    }
    let mut d = Digest::default();
    d.write(scratch);
    let digest = d.finish();
    Some(OutcomeHash {
        result_hash: Some(ResultHash {
            is_error: false,
            digest,
        }),
        unknown_tool: None,
    })
}

/// Writes the canonical form of the one JSON value `json` holds (whitespace around it
/// allowed) to `out`.
fn whole(json: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let mut r = Reader { s: json, i: 0 };
    r.ws();
    r.value(out, 0)?;
    r.ws();
    (r.i == json.len()).then_some(())
}

/// `{"details":…,"text":…}` of an object result, as `hash_outcome` writes it for a tool
/// without rules of its own: `details` when it is an object (else `{}`), and the text of
/// the `content` items that have a string `type` and a string `text`, joined by newlines and
/// trimmed. Every member is read (and so checked), the last of a repeated key counts.
fn result_object(r: &mut Reader<'_>, out: &mut Vec<u8>) -> Option<()> {
    // The canonical details, and the text's parts as their escaped sources.
    let mut details: Option<(usize, usize)> = None;
    let mut parts: Vec<(usize, usize)> = Vec::new();
    r.members(|r, key| match key {
        b"details" => {
            let start = out.len();
            let object = r.peek() == Some(b'{');
            r.value(out, 1)?;
            // The value stays in `out` (ahead of the object written below) only while it
            // is the last `details` and an object.
            details = object.then_some((start, out.len()));
            Some(())
        }
        b"content" => {
            parts.clear();
            if r.peek() == Some(b'[') {
                content(r, &mut parts, out)
            } else {
                r.check(out, 1)
            }
        }
        _ => r.check(out, 1),
    })?;
    // The details' canonical bytes were written to `out` as they were read; the object is
    // assembled after them and then moved to the front.
    let body = out.len();
    out.extend_from_slice(b"{\"details\":");
    match details {
        Some((a, b)) => {
            if memchr::memmem::find(&out[a..b], b"tool-loop").is_some() {
                return None;
            }
            out.extend_from_within(a..b);
        }
        None => out.extend_from_slice(b"{}"),
    }
    out.extend_from_slice(b",\"text\":\"");
    match parts.as_slice() {
        [] => {}
        [(a, b)] => out.extend_from_slice(trim_source(&r.s[*a..*b])),
        _ => {
            let mut joined = Vec::new();
            for (n, (a, b)) in parts.iter().enumerate() {
                if n > 0 {
                    // The newline that joins the parts, in its escaped form.
                    joined.extend_from_slice(b"\\n");
                }
                joined.extend_from_slice(&r.s[*a..*b]);
            }
            out.extend_from_slice(trim_source(&joined));
        }
    }
    out.extend_from_slice(b"\"}");
    out.drain(..body);
    Some(())
}

/// Reads a `content` array: the sources of the string `text` of each object item whose
/// `type` is a string (the last of repeated keys counting), every value checked.
fn content(r: &mut Reader<'_>, parts: &mut Vec<(usize, usize)>, out: &mut Vec<u8>) -> Option<()> {
    r.i += 1;
    r.ws();
    if r.peek() == Some(b']') {
        r.i += 1;
        return Some(());
    }
    loop {
        r.ws();
        if r.peek() == Some(b'{') {
            let mut has_type = false;
            let mut text = None;
            r.members(|r, key| {
                let is_string = r.peek() == Some(b'"');
                let start = r.i + 1;
                r.check(out, 3)?;
                match key {
                    b"type" => has_type = is_string,
                    b"text" => text = is_string.then_some((start, r.i - 1)),
                    _ => {}
                }
                Some(())
            })?;
            if let (true, Some(t)) = (has_type, text) {
                parts.push(t);
            }
        } else {
            r.check(out, 2)?;
        }
        r.ws();
        match r.next()? {
            b',' => {}
            b']' => return Some(()),
            _ => return None,
        }
    }
}

/// A position in JSON text.
struct Reader<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.i += 1;
        Some(b)
    }

    fn expect(&mut self, b: u8) -> Option<()> {
        (self.next()? == b).then_some(())
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    /// Reads the object at the position (its `{`), handing each member's key to `each` with
    /// the position at its value, which `each` reads.
    fn members(&mut self, mut each: impl FnMut(&mut Self, &'a [u8]) -> Option<()>) -> Option<()> {
        self.i += 1;
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Some(());
        }
        loop {
            let key = self.key()?;
            self.ws();
            self.expect(b':')?;
            self.ws();
            each(self, key)?;
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }

    /// An object key without escapes: its bytes (checked UTF-8).
    fn key(&mut self) -> Option<&'a [u8]> {
        if self.next()? != b'"' {
            return None;
        }
        let start = self.i;
        let (stop, high) = scan_string(self.s, start);
        if self.s.get(stop) != Some(&b'"') || (high && validate_utf8(self.s, start, stop).is_err())
        {
            return None;
        }
        self.i = stop + 1;
        Some(&self.s[start..stop])
    }

    /// Reads one value at the position, checking it: its canonical form is written at the
    /// end of `out` and dropped (`out` is the buffer in use, which spares another).
    fn check(&mut self, out: &mut Vec<u8>, depth: usize) -> Option<()> {
        let len = out.len();
        let r = self.value(out, depth);
        out.truncate(len);
        r
    }

    /// Reads one value at the position, writing its canonical form to `out`.
    fn value(&mut self, out: &mut Vec<u8>, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(out, depth + 1),
            b'[' => self.array(out, depth + 1),
            b'"' => {
                // Every escape the one `JSON.stringify` writes: the source is its canonical
                // form (lone surrogates, which the canonical form drops, come only escaped,
                // and those escapes are declined).
                let end = canonical_end(self.s, self.i + 1)?;
                out.extend_from_slice(&self.s[self.i..=end]);
                self.i = end + 1;
                Some(())
            }
            b't' => self.literal(out, b"true"),
            b'f' => self.literal(out, b"false"),
            b'n' => self.literal(out, b"null"),
            _ => self.number(out),
        }
    }

    fn literal(&mut self, out: &mut Vec<u8>, word: &[u8]) -> Option<()> {
        if !self.s[self.i..].starts_with(word) {
            return None;
        }
        self.i += word.len();
        out.extend_from_slice(word);
        Some(())
    }

    /// A number as the parser reads it ([`read_number`]), written as JavaScript writes it.
    fn number(&mut self, out: &mut Vec<u8>) -> Option<()> {
        let (n, end) = read_number(self.s, self.i).ok()?;
        self.i = end;
        canonical::write_number(out, n);
        Some(())
    }

    fn array(&mut self, out: &mut Vec<u8>, depth: usize) -> Option<()> {
        if depth > MAX_NEST {
            return None;
        }
        self.i += 1;
        out.push(b'[');
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            out.push(b']');
            return Some(());
        }
        loop {
            self.ws();
            self.value(out, depth)?;
            self.ws();
            match self.next()? {
                b',' => out.push(b','),
                b']' => {
                    out.push(b']');
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// An object: each member's value is written after the end of `out` as it is read, then
    /// the members are written in canonical key order in their place.
    fn object(&mut self, out: &mut Vec<u8>, depth: usize) -> Option<()> {
        if depth > MAX_NEST {
            return None;
        }
        let base = out.len();
        // Each member: its key's bytes, and where its canonical value lies in `out`.
        let mut members: [(&[u8], u32, u32); MAX_KEYS] = [(&[], 0, 0); MAX_KEYS];
        let mut n = 0;
        let mut sorted = true;
        self.members(|r, key| {
            if n == MAX_KEYS {
                return None;
            }
            let start = out.len();
            r.value(out, depth)?;
            if n > 0 {
                match utf16_cmp(members[n - 1].0, key) {
                    Ordering::Less => {}
                    Ordering::Greater => sorted = false,
                    Ordering::Equal => return None,
                }
            }
            members[n] = (
                key,
                u32::try_from(start).ok()?,
                u32::try_from(out.len()).ok()?,
            );
            n += 1;
            Some(())
        })?;
        if n == 0 {
            out.extend_from_slice(b"{}");
            return Some(());
        }
        let members = &mut members[..n];
        if !sorted {
            members.sort_unstable_by(|a, b| utf16_cmp(a.0, b.0));
            if members.windows(2).any(|w| w[0].0 == w[1].0) {
                return None;
            }
        }
        let end = out.len();
        out.push(b'{');
        for (k, (key, a, b)) in members.iter().enumerate() {
            if k > 0 {
                out.push(b',');
            }
            out.push(b'"');
            out.extend_from_slice(key);
            out.extend_from_slice(b"\":");
            out.extend_from_within(*a as usize..*b as usize);
        }
        out.push(b'}');
        // The values read ahead are dropped; the object takes their place.
        out.copy_within(end.., base);
        out.truncate(base + (out.len() - end));
        Some(())
    }
}
