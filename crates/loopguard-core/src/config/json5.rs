//! A JSON5 reader that remembers where every value and key came from.
//!
//! OpenClaw users write their config in JSON5 (comments, trailing commas, unquoted keys,
//! single quotes). loopguard must point at the exact line of a bad key, and the `json5`
//! crate only exposes positions for syntax errors, not for the values it produced, so this
//! small reader builds a tree of [`Node`]s carrying line and column. Plain JSON is JSON5, so
//! it reads both. The grammar follows <https://spec.json5.org/>.

use std::fmt;

/// A position in the text, 1-based.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pos {
    /// Line, from 1.
    pub line: u32,
    /// Column in characters, from 1.
    pub col: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// A value with the position where it starts.
///
/// ```
/// use loopguard_core::json5::{self, NodeValue};
/// let doc = json5::parse("{ n: 0x10, s: 'single' }")?;
/// let n = doc.get("n").ok_or("no n")?;
/// assert_eq!(n.value.value, NodeValue::Number(16.0));
/// assert_eq!(n.value.value.type_name(), "a number");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The value.
    pub value: NodeValue,
    /// Where it starts.
    pub pos: Pos,
}

/// The kinds of JSON5 values.
#[derive(Clone, Debug, PartialEq)]
pub enum NodeValue {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// Any number, including `Infinity`, `NaN` and hexadecimal.
    Number(f64),
    /// A string (lone surrogates become U+FFFD; configs do not need them).
    String(String),
    /// An array.
    Array(Vec<Node>),
    /// An object's entries in source order (repeated keys included).
    Object(Vec<Entry>),
}

/// One `key: value` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The key.
    pub key: String,
    /// Where the key starts.
    pub key_pos: Pos,
    /// The value.
    pub value: Node,
}

impl NodeValue {
    /// A short name of the value's type for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            NodeValue::Null => "null",
            NodeValue::Bool(_) => "a boolean",
            NodeValue::Number(_) => "a number",
            NodeValue::String(_) => "a string",
            NodeValue::Array(_) => "an array",
            NodeValue::Object(_) => "an object",
        }
    }
}

impl Node {
    /// The last entry named `key` when this is an object (JSON5 keeps the last duplicate).
    pub fn get(&self, key: &str) -> Option<&Entry> {
        match &self.value {
            NodeValue::Object(entries) => entries.iter().rev().find(|e| e.key == key),
            _ => None,
        }
    }
}

/// A JSON5 syntax error.
///
/// ```
/// use loopguard_core::json5;
/// let Err(e) = json5::parse("{ a: }") else {
///     return Err("parsed".into());
/// };
/// assert_eq!((e.pos.line, e.pos.col), (1, 6));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{pos}: {message}")]
pub struct SyntaxError {
    /// Where.
    pub pos: Pos,
    /// What.
    pub message: String,
}

/// Deepest nesting accepted.
const MAX_DEPTH: usize = 256;

/// Parses a JSON5 document.
///
/// ```
/// use loopguard_core::json5::{self, NodeValue};
/// let doc = json5::parse("{\n  // comment\n  tools: { loopDetection: { enabled: true, } },\n}")?;
/// let tools = doc.get("tools").ok_or("no tools")?;
/// assert_eq!(tools.key_pos.line, 3);
/// assert!(matches!(tools.value.value, NodeValue::Object(_)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn parse(text: &str) -> Result<Node, SyntaxError> {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let mut p = Reader {
        chars: text.chars().collect(),
        i: 0,
        line: 1,
        col: 1,
    };
    p.skip()?;
    let v = p.value(0)?;
    p.skip()?;
    if p.i < p.chars.len() {
        return Err(p.error(format!("unexpected {:?} after the value", p.chars[p.i])));
    }
    Ok(v)
}

struct Reader {
    chars: Vec<char>,
    i: usize,
    line: u32,
    col: u32,
}

fn is_json5_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n'
            | '\u{B}'
            | '\u{C}'
            | '\r'
            | ' '
            | '\u{A0}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{FEFF}'
    ) || (c as u32 >= 0x1680 && crate::text::is_js_whitespace(c as u32))
}

fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

fn is_ident_start(c: char) -> bool {
    c == '$' || c == '_' || c.is_alphabetic()
}

fn is_ident_part(c: char) -> bool {
    is_ident_start(c) || c.is_alphanumeric() || c == '\u{200C}' || c == '\u{200D}'
}

impl Reader {
    fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            col: self.col,
        }
    }

    fn error(&self, message: String) -> SyntaxError {
        SyntaxError {
            pos: self.pos(),
            message,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.i).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.i += 1;
        if c == '\n'
            || c == '\u{2028}'
            || c == '\u{2029}'
            || (c == '\r' && self.peek() != Some('\n'))
        {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn unexpected(&self, what: &str) -> SyntaxError {
        match self.peek() {
            None => self.error(format!("unexpected end of input, expected {what}")),
            Some(c) => self.error(format!("unexpected {c:?}, expected {what}")),
        }
    }

    /// Skips whitespace and comments.
    fn skip(&mut self) -> Result<(), SyntaxError> {
        loop {
            match self.peek() {
                Some(c) if is_json5_space(c) => {
                    self.bump();
                }
                Some('/') => match self.chars.get(self.i + 1) {
                    Some('/') => {
                        while let Some(c) = self.peek() {
                            if is_line_terminator(c) {
                                break;
                            }
                            self.bump();
                        }
                    }
                    Some('*') => {
                        let start = self.pos();
                        self.bump();
                        self.bump();
                        loop {
                            match self.bump() {
                                None => {
                                    return Err(SyntaxError {
                                        pos: start,
                                        message: "unterminated /* comment".into(),
                                    })
                                }
                                Some('*') if self.peek() == Some('/') => {
                                    self.bump();
                                    break;
                                }
                                Some(_) => {}
                            }
                        }
                    }
                    _ => return Err(self.unexpected("a value")),
                },
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, SyntaxError> {
        if depth > MAX_DEPTH {
            return Err(self.error(format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        let pos = self.pos();
        let value = match self.peek() {
            Some('{') => self.object(depth)?,
            Some('[') => self.array(depth)?,
            Some(q @ ('"' | '\'')) => NodeValue::String(self.string(q)?),
            Some(c) if c.is_ascii_digit() || matches!(c, '-' | '+' | '.') => {
                NodeValue::Number(self.number()?)
            }
            Some(c) if is_ident_start(c) => {
                let word = self.identifier()?;
                match word.as_str() {
                    "true" => NodeValue::Bool(true),
                    "false" => NodeValue::Bool(false),
                    "null" => NodeValue::Null,
                    "Infinity" => NodeValue::Number(f64::INFINITY),
                    "NaN" => NodeValue::Number(f64::NAN),
                    _ => {
                        return Err(SyntaxError {
                            pos,
                            message: format!("unexpected word {word:?}, expected a value"),
                        })
                    }
                }
            }
            _ => return Err(self.unexpected("a value")),
        };
        Ok(Node { value, pos })
    }

    fn object(&mut self, depth: usize) -> Result<NodeValue, SyntaxError> {
        self.bump();
        let mut entries = Vec::new();
        loop {
            self.skip()?;
            if self.peek() == Some('}') {
                self.bump();
                return Ok(NodeValue::Object(entries));
            }
            let key_pos = self.pos();
            let key = match self.peek() {
                Some(q @ ('"' | '\'')) => self.string(q)?,
                Some(c) if is_ident_start(c) || c == '\\' => self.identifier()?,
                _ => return Err(self.unexpected("a key or '}'")),
            };
            self.skip()?;
            if self.peek() != Some(':') {
                return Err(self.unexpected("':'"));
            }
            self.bump();
            self.skip()?;
            let value = self.value(depth + 1)?;
            entries.push(Entry {
                key,
                key_pos,
                value,
            });
            self.skip()?;
            match self.peek() {
                Some(',') => {
                    self.bump();
                }
                Some('}') => {
                    self.bump();
                    return Ok(NodeValue::Object(entries));
                }
                _ => return Err(self.unexpected("',' or '}'")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<NodeValue, SyntaxError> {
        self.bump();
        let mut items = Vec::new();
        loop {
            self.skip()?;
            if self.peek() == Some(']') {
                self.bump();
                return Ok(NodeValue::Array(items));
            }
            items.push(self.value(depth + 1)?);
            self.skip()?;
            match self.peek() {
                Some(',') => {
                    self.bump();
                }
                Some(']') => {
                    self.bump();
                    return Ok(NodeValue::Array(items));
                }
                _ => return Err(self.unexpected("',' or ']'")),
            }
        }
    }

    fn identifier(&mut self) -> Result<String, SyntaxError> {
        let mut out = String::new();
        loop {
            match self.peek() {
                Some('\\') => {
                    self.bump();
                    if self.peek() != Some('u') {
                        return Err(self.unexpected("'u' of a \\u escape"));
                    }
                    self.bump();
                    let c = self.hex(4)?;
                    out.push(char::from_u32(c).unwrap_or('\u{FFFD}'));
                }
                Some(c)
                    if (out.is_empty() && is_ident_start(c))
                        || (!out.is_empty() && is_ident_part(c)) =>
                {
                    self.bump();
                    out.push(c);
                }
                _ => break,
            }
        }
        if out.is_empty() {
            return Err(self.unexpected("an identifier"));
        }
        Ok(out)
    }

    fn hex(&mut self, digits: usize) -> Result<u32, SyntaxError> {
        let mut v = 0u32;
        for _ in 0..digits {
            match self.peek().and_then(|c| c.to_digit(16)) {
                Some(d) => {
                    self.bump();
                    v = v * 16 + d;
                }
                None => return Err(self.unexpected("a hexadecimal digit")),
            }
        }
        Ok(v)
    }

    fn string(&mut self, quote: char) -> Result<String, SyntaxError> {
        let start = self.pos();
        self.bump();
        let mut units: Vec<u16> = Vec::new();
        let push = |units: &mut Vec<u16>, c: char| {
            let mut buf = [0u16; 2];
            units.extend_from_slice(c.encode_utf16(&mut buf));
        };
        loop {
            let Some(c) = self.peek() else {
                return Err(SyntaxError {
                    pos: start,
                    message: "unterminated string".into(),
                });
            };
            if c == quote {
                self.bump();
                return Ok(String::from_utf16_lossy(&units));
            }
            if c == '\n' || c == '\r' {
                return Err(self.error("line break inside a string".into()));
            }
            self.bump();
            if c != '\\' {
                push(&mut units, c);
                continue;
            }
            let Some(e) = self.peek() else { continue };
            if is_line_terminator(e) {
                self.bump();
                if e == '\r' && self.peek() == Some('\n') {
                    self.bump();
                }
                continue;
            }
            match e {
                'u' => {
                    self.bump();
                    units.push(self.hex(4)? as u16);
                }
                'x' => {
                    self.bump();
                    units.push(self.hex(2)? as u16);
                }
                '0' if !self.chars.get(self.i + 1).is_some_and(char::is_ascii_digit) => {
                    self.bump();
                    units.push(0);
                }
                '1'..='9' | '0' => return Err(self.error("octal escapes are not allowed".into())),
                _ => {
                    self.bump();
                    let c = match e {
                        'b' => '\u{8}',
                        'f' => '\u{C}',
                        'n' => '\n',
                        'r' => '\r',
                        't' => '\t',
                        'v' => '\u{B}',
                        other => other,
                    };
                    push(&mut units, c);
                }
            }
        }
    }

    fn number(&mut self) -> Result<f64, SyntaxError> {
        let start = self.pos();
        let mut sign = 1.0;
        if let Some(c @ ('+' | '-')) = self.peek() {
            self.bump();
            if c == '-' {
                sign = -1.0;
            }
        }
        let bad = |msg: &str| SyntaxError {
            pos: start,
            message: msg.into(),
        };
        if let Some(c) = self.peek().filter(|c| is_ident_start(*c)) {
            let word = self.identifier()?;
            return match word.as_str() {
                "Infinity" => Ok(sign * f64::INFINITY),
                "NaN" => Ok(f64::NAN),
                _ => Err(bad(&format!("invalid number starting {c:?}"))),
            };
        }
        if self.peek() == Some('0') && matches!(self.chars.get(self.i + 1), Some('x' | 'X')) {
            self.bump();
            self.bump();
            let mut v = 0f64;
            let mut n = 0;
            while let Some(d) = self.peek().and_then(|c| c.to_digit(16)) {
                self.bump();
                v = v * 16.0 + f64::from(d);
                n += 1;
            }
            if n == 0 {
                return Err(bad("hexadecimal number without digits"));
            }
            return Ok(sign * v);
        }
        let mut digits = String::new();
        let mut int_digits = 0;
        while let Some(c) = self.peek().filter(char::is_ascii_digit) {
            self.bump();
            digits.push(c);
            int_digits += 1;
        }
        if int_digits > 1 && digits.starts_with('0') {
            return Err(bad("leading zeros are not allowed"));
        }
        let mut frac_digits = 0;
        if self.peek() == Some('.') {
            self.bump();
            digits.push('.');
            while let Some(c) = self.peek().filter(char::is_ascii_digit) {
                self.bump();
                digits.push(c);
                frac_digits += 1;
            }
        }
        if int_digits == 0 && frac_digits == 0 {
            return Err(bad("invalid number"));
        }
        if let Some(e @ ('e' | 'E')) = self.peek() {
            self.bump();
            digits.push(e);
            if let Some(s @ ('+' | '-')) = self.peek() {
                self.bump();
                digits.push(s);
            }
            let mut n = 0;
            while let Some(c) = self.peek().filter(char::is_ascii_digit) {
                self.bump();
                digits.push(c);
                n += 1;
            }
            if n == 0 {
                return Err(bad("exponent without digits"));
            }
        }
        let text = if digits.ends_with('.') {
            digits.trim_end_matches('.').to_string()
        } else if digits.starts_with('.') {
            format!("0{digits}")
        } else {
            digits.replace(".e", "e").replace(".E", "E")
        };
        text.parse::<f64>()
            .map(|v| sign * v)
            .map_err(|_| bad("invalid number"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(t: &str) -> f64 {
        match parse(t).unwrap().value {
            NodeValue::Number(n) => n,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn json5_numbers() {
        assert_eq!(num("0x1F"), 31.0);
        assert_eq!(num("-0x10"), -16.0);
        assert_eq!(num(".5"), 0.5);
        assert_eq!(num("5."), 5.0);
        assert_eq!(num("+3"), 3.0);
        assert_eq!(num("5.e2"), 500.0);
        assert_eq!(num("-Infinity"), f64::NEG_INFINITY);
        assert!(num("NaN").is_nan());
        assert_eq!(num("1e3"), 1000.0);
        for bad in ["01", "0x", "1e", ".", "-", "+.e1", "Infinit"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn json5_strings_and_comments() {
        let doc = parse("/* a */ { 'k\\'': \"l\\\nine\\x41\\u0042\\0\", $key_1: [1,2,], } // end")
            .unwrap();
        let k = doc.get("k'").unwrap();
        assert_eq!(k.value.value, NodeValue::String("lineAB\0".into()));
        assert_eq!(k.key_pos, Pos { line: 1, col: 11 });
        assert!(doc.get("$key_1").is_some());
    }

    #[test]
    fn positions_count_lines_and_columns() {
        let doc = parse("{\r\n  a: 1,\n\tb: {c: true}\n}").unwrap();
        assert_eq!(doc.get("a").unwrap().key_pos, Pos { line: 2, col: 3 });
        let b = &doc.get("b").unwrap().value;
        assert_eq!(b.pos, Pos { line: 3, col: 5 });
        assert_eq!(b.get("c").unwrap().key_pos, Pos { line: 3, col: 6 });
    }

    #[test]
    fn syntax_errors_name_the_place() {
        let e = parse("{\n  a: 1\n  b: 2\n}").unwrap_err();
        assert_eq!(e.pos.line, 3);
        assert!(parse("{a:1}}").is_err());
        assert!(parse("[1,,]").is_err());
        assert!(parse("'abc").is_err());
        assert!(parse("/* open").is_err());
        assert!(parse("{a:1} / x").is_err());
        assert!(parse("\"\\1\"").is_err());
        assert!(parse(&"[".repeat(300)).is_err());
    }
}
