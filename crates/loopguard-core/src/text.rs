//! JavaScript's notion of whitespace, which `str::trim` does not share.
//!
//! ECMAScript whitespace is TAB, VT, FF, SP, NBSP, ZWNBSP (U+FEFF), every `Zs` character,
//! and the line terminators LF, CR, U+2028, U+2029. Rust's `char::is_whitespace` also
//! accepts U+0085 and rejects U+FEFF; OpenClaw trims result text, so the difference
//! changes hashes.

use crate::value::decode_at;

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
/// use loopguard_core::js_trim;
/// assert_eq!(js_trim("\u{FEFF} a \u{85}".as_bytes()), "a \u{85}".as_bytes());
/// ```
pub fn js_trim(s: &[u8]) -> &[u8] {
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

#[cfg(test)]
mod tests {
    use super::*;

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
