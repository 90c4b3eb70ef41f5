//! Text at the byte level, the bottom of the JSON layer (it imports nothing of the crate):
//! WTF-8 code points ([`decode_at`], [`push_wtf8`]), the bytes JSON strings escape
//! ([`needs_json_escape`], [`find_string_special`]), and JavaScript's notion of
//! whitespace, which `str::trim` does not share.
//!
//! ECMAScript whitespace is TAB, VT, FF, SP, NBSP, ZWNBSP (U+FEFF), every `Zs` character,
//! and the line terminators LF, CR, U+2028, U+2029. Rust's `char::is_whitespace` also
//! accepts U+0085 and rejects U+FEFF; OpenClaw trims result text, so the difference
//! changes hashes.

/// `true` for the code points JavaScript's `trim` and `\s` treat as whitespace.
pub fn is_js_whitespace(c: u32) -> bool {
    matches!(
        c,
        0x09..=0x0D
            | 0x20
            | 0xA0
            | 0x1680
            | 0x2000..=0x200A
            | 0x2028
            | 0x2029
            | 0x202F
            | 0x205F
            | 0x3000
            | 0xFEFF
    )
}

/// JavaScript's `String.prototype.trim` on WTF-8 bytes.
///
/// ```
/// use loopguard_core::json::js_trim;
/// assert_eq!(js_trim("\u{FEFF} a \u{85}".as_bytes()), "a \u{85}".as_bytes());
/// ```
pub fn js_trim(s: &[u8]) -> &[u8] {
    // The usual case: printable ASCII at both ends, nothing to take off (run ids
    // are trimmed on every event).
    let plain = |b: &u8| (0x21..0x7F).contains(b);
    if s.first().is_some_and(plain) && s.last().is_some_and(plain) {
        return s;
    }
    let mut start = 0;
    while start < s.len() {
        let (c, n) = decode_at(s, start);
        if !is_js_whitespace(c) {
            break;
        }
        start += n;
    }
    let mut end = s.len();
    while end > start {
        let mut i = end - 1;
        while i > start && (s[i] & 0xC0) == 0x80 && end - i < 4 {
            i -= 1;
        }
        let (c, n) = decode_at(s, i);
        if i + n != end || !is_js_whitespace(c) {
            break;
        }
        end = i;
    }
    &s[start..end]
}

/// The JavaScript whitespace code point starting at `i`, with its length in bytes.
pub(crate) fn js_whitespace_at(s: &[u8], i: usize) -> Option<usize> {
    if i >= s.len() {
        return None;
    }
    let (c, n) = decode_at(s, i);
    is_js_whitespace(c).then_some(n)
}

/// Bytes that `JSON.stringify` never writes as they are.
#[inline]
pub(crate) fn needs_json_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Decodes a source the parser validated as canonical (`Repr::Escaped`): its escapes are
/// the short ones and `\u00xx`.
pub(crate) fn unescape_canonical(source: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(source.len());
    let mut i = 0;
    while let Some(k) = memchr::memchr(b'\\', &source[i..]) {
        out.extend_from_slice(&source[i..i + k]);
        i += k;
        match escape_at(source, i) {
            Some((len, byte)) => {
                out.push(byte);
                i += len;
            }
            None => {
                // Not reached for a validated source; kept as it is rather than lost.
                out.push(b'\\');
                i += 1;
            }
        }
    }
    out.extend_from_slice(&source[i..]);
    out
}

/// JavaScript's `trim` done on a canonical source: the escapes and characters that write
/// whitespace are taken off both ends.
pub(crate) fn trim_source(source: &[u8]) -> &[u8] {
    let ws = |c: u32| crate::text::is_js_whitespace(c);
    let mut start = 0;
    while start < source.len() {
        let n = match source[start] {
            b'\\' => match escape_at(source, start) {
                Some((len, byte)) if ws(u32::from(byte)) => len,
                _ => break,
            },
            _ => {
                let (c, n) = decode_at(source, start);
                if !ws(c) {
                    break;
                }
                n
            }
        };
        start += n;
    }
    let mut end = source.len();
    while end > start {
        let last = source[end - 1];
        let n = if last >= 0x80 {
            let mut i = end - 1;
            while i > start && (source[i] & 0xC0) == 0x80 && end - i < 4 {
                i -= 1;
            }
            let (c, n) = decode_at(source, i);
            if i + n != end || !ws(c) {
                break;
            }
            n
        } else {
            match source_token_before(&source[start..], end - start) {
                Some((len, byte)) if ws(u32::from(byte)) => len,
                _ => break,
            }
        };
        end -= n;
    }
    &source[start..end]
}

/// The byte written by the escape at `source[i]` (`\\` followed by one character, or
/// `\\u00xx`), with the escape's length.
fn escape_at(source: &[u8], i: usize) -> Option<(usize, u8)> {
    let byte = match *source.get(i + 1)? {
        b'"' => b'"',
        b'\\' => b'\\',
        b'b' => 0x08,
        b'f' => 0x0C,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'u' => {
            let hex = source.get(i + 2..i + 6)?;
            let text = std::str::from_utf8(hex).ok()?;
            let v = u8::try_from(u32::from_str_radix(text, 16).ok()?).ok()?;
            return (v < 0x20).then_some((6, v));
        }
        _ => return None,
    };
    Some((2, byte))
}

/// The last token of `source[..end]`: an escape, or one byte as it is. A backslash starts
/// an escape when an even number of backslashes come right before it (each pair is an
/// escaped backslash).
fn source_token_before(source: &[u8], end: usize) -> Option<(usize, u8)> {
    let starts_escape = |i: usize| {
        source.get(i) == Some(&b'\\')
            && source[..i]
                .iter()
                .rev()
                .take_while(|&&b| b == b'\\')
                .count()
                % 2
                == 0
    };
    // A two-byte escape ends at `end` when one starts two bytes before it (a `\u` there would
    // be an escape cut in half); a six-byte one when a `\u00xx` starts six bytes before it. A
    // two-byte escape six bytes before `end` ends before the token sought (`\"` then four
    // spaces), which is then the last byte.
    if let Some(i) = end.checked_sub(2) {
        if starts_escape(i) {
            return escape_at(source, i).filter(|(l, _)| *l == 2);
        }
    }
    if let Some(i) = end.checked_sub(6) {
        if starts_escape(i) {
            if let Some((6, b)) = escape_at(source, i) {
                return Some((6, b));
            }
        }
    }
    let b = *source.get(end.checked_sub(1)?)?;
    // A lone backslash at the end would belong to an escape cut in half.
    (b != b'\\').then_some((1, b))
}

/// Decodes the code point starting at `i` (WTF-8 allows surrogate code points).
/// Malformed bytes decode as themselves, one at a time, so this never fails.
pub(crate) fn decode_at(s: &[u8], i: usize) -> (u32, usize) {
    let b0 = s[i] as u32;
    let cont = |k: usize| -> Option<u32> {
        s.get(i + k)
            .filter(|&&b| b & 0xC0 == 0x80)
            .map(|&b| (b & 0x3F) as u32)
    };
    if b0 < 0x80 {
        (b0, 1)
    } else if b0 & 0xE0 == 0xC0 {
        match cont(1) {
            Some(c1) => (((b0 & 0x1F) << 6) | c1, 2),
            None => (b0, 1),
        }
    } else if b0 & 0xF0 == 0xE0 {
        match (cont(1), cont(2)) {
            (Some(c1), Some(c2)) => (((b0 & 0x0F) << 12) | (c1 << 6) | c2, 3),
            _ => (b0, 1),
        }
    } else if b0 & 0xF8 == 0xF0 {
        match (cont(1), cont(2), cont(3)) {
            (Some(c1), Some(c2), Some(c3)) => {
                (((b0 & 0x07) << 18) | (c1 << 12) | (c2 << 6) | c3, 4)
            }
            _ => (b0, 1),
        }
    } else {
        (b0, 1)
    }
}

/// Appends the WTF-8 encoding of a code point or lone surrogate.
pub(crate) fn push_wtf8(out: &mut Vec<u8>, c: u32) {
    if c < 0x80 {
        out.push(c as u8);
    } else if c < 0x800 {
        out.extend_from_slice(&[0xC0 | (c >> 6) as u8, 0x80 | (c & 0x3F) as u8]);
    } else if c < 0x10000 {
        out.extend_from_slice(&[
            0xE0 | (c >> 12) as u8,
            0x80 | ((c >> 6) & 0x3F) as u8,
            0x80 | (c & 0x3F) as u8,
        ]);
    } else {
        out.extend_from_slice(&[
            0xF0 | (c >> 18) as u8,
            0x80 | ((c >> 12) & 0x3F) as u8,
            0x80 | ((c >> 6) & 0x3F) as u8,
            0x80 | (c & 0x3F) as u8,
        ]);
    }
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

#[inline]
fn has_zero_byte(w: u64) -> u64 {
    w.wrapping_sub(LO) & !w & HI
}

/// Eight bytes as one little-endian word.
#[inline]
fn load_word(chunk: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(chunk);
    u64::from_le_bytes(word)
}

/// Flags (high bit of each byte) the bytes of `w` that are `"`, `\` or control characters;
/// the lowest flagged byte is always a real match.
#[inline]
fn special_bytes(w: u64) -> u64 {
    has_zero_byte(w ^ (LO * u64::from(b'"')))
        | has_zero_byte(w ^ (LO * u64::from(b'\\')))
        | (w.wrapping_sub(LO * 0x20) & !w & HI)
}

/// [`find_string_special`], also telling whether a byte at or above 0x80 was passed.
#[inline]
pub(crate) fn scan_string(s: &[u8], mut i: usize) -> (usize, bool) {
    let mut high = 0u64;
    let mut chunks = s[i.min(s.len())..].chunks_exact(8);
    for chunk in &mut chunks {
        let w = load_word(chunk);
        let t = special_bytes(w);
        if t != 0 {
            let k = t.trailing_zeros() / 8;
            // The high bits of the bytes before the stop (k < 8: the shift stays in range).
            let before = w & HI & ((1u64 << (k * 8)) - 1);
            return (i + k as usize, high != 0 || before != 0);
        }
        high |= w & HI;
        i += 8;
    }
    while i < s.len() {
        let b = s[i];
        if needs_json_escape(b) {
            break;
        }
        high |= u64::from(b & 0x80);
        i += 1;
    }
    (i.min(s.len()), high != 0)
}

/// Index of the first `"`, `\` or control character at or after `i` (or `s.len()`).
///
/// Eight bytes at a time: the lowest flagged byte of each test is always a real match.
#[inline]
pub(crate) fn find_string_special(s: &[u8], mut i: usize) -> usize {
    let mut chunks = s[i.min(s.len())..].chunks_exact(8);
    for chunk in &mut chunks {
        let w = load_word(chunk);
        let t = special_bytes(w);
        if t != 0 {
            return i + (t.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < s.len() {
        if needs_json_escape(s[i]) {
            return i;
        }
        i += 1;
    }
    s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_specials_at_every_position() {
        for len in 0..20 {
            for pos in 0..=len {
                for special in [b'"', b'\\', 0x00, 0x1F] {
                    let mut s = vec![b'a'; len];
                    s.extend_from_slice("é€".as_bytes());
                    if pos < len {
                        s[pos] = special;
                    }
                    let want = if pos < len { pos } else { s.len() };
                    assert_eq!(find_string_special(&s, 0), want);
                }
            }
        }
    }

    /// `scan_string` stops where `find_string_special` does and says whether a byte at or
    /// above 0x80 comes before the stop, wherever the two are.
    #[test]
    fn scan_string_flags_high_bytes_before_the_stop_only() {
        for len in 0..20 {
            for stop in 0..=len {
                for high in 0..=len {
                    let mut s = vec![b'a'; len];
                    if stop < len {
                        s[stop] = b'"';
                    }
                    if high < len && high != stop {
                        s[high] = 0xC3;
                    }
                    let want_stop = find_string_special(&s, 0);
                    let want_high = s[..want_stop].iter().any(|&b| b >= 0x80);
                    assert_eq!(
                        scan_string(&s, 0),
                        (want_stop, want_high),
                        "{len} {stop} {high}"
                    );
                }
            }
        }
    }

    #[test]
    fn trims_like_javascript() {
        let s = "  \u{FEFF} a\nb  \u{3000}  \t\u{B}\u{C}\r\n";
        assert_eq!(js_trim(s.as_bytes()), b"a\nb");
        assert_eq!(js_trim("a\u{180E}".as_bytes()), "a\u{180E}".as_bytes());
        assert_eq!(js_trim("\u{85}a".as_bytes()), "\u{85}a".as_bytes());
        assert_eq!(js_trim(b"   "), b"");
        assert_eq!(js_trim(b""), b"");
        // A lone surrogate (WTF-8 ED A0 80) is not whitespace.
        assert_eq!(
            js_trim(&[0x20, 0xED, 0xA0, 0x80, 0x20]),
            &[0xED, 0xA0, 0x80]
        );
    }

    #[test]
    fn malformed_bytes_are_not_whitespace_and_never_panic() {
        assert_eq!(js_trim(&[0x80, 0x20]), &[0x80]);
        assert_eq!(js_trim(&[0x20, 0xE2, 0x80]), &[0xE2, 0x80]);
    }
}

/// The examples of items that are internal to the crate.
#[cfg(test)]
mod examples {
    #[test]
    fn is_js_whitespace() {
        use crate::text::is_js_whitespace;
        assert!(is_js_whitespace(0xFEFF));
        assert!(!is_js_whitespace(0x85));
        assert!(!is_js_whitespace(0x180E));
    }
}
