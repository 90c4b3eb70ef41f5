//! A JSON document seen as byte spans, for editing a file in place.
//!
//! `settings.json` belongs to the user: loopguard changes the few bytes it must and keeps
//! the rest (key order, indentation, line endings, spacing) exactly as it was. A
//! [`Doc`] records where every value, member and element starts and ends; an edit
//! replaces one span, and the document is parsed again before the next one. New values
//! are written in the document's own style: its indentation unit, its line ending, its
//! spacing after colons, and compactly when the surrounding container is on one line.
//!
//! Removing an element is the exact inverse of appending one: [`Doc::append`] inserts
//! `,` + the separator that precedes the last element + the new element after the last
//! element, and [`Doc::remove`] deletes from the end of the previous element to the end
//! of the removed one. That is what lets install → uninstall give back the original bytes.
//!
//! The text must already be valid JSON (the caller checks with `serde_json`, which gives
//! the user a good message with line and column); this parser still never panics, it
//! returns an error on anything unexpected.

use serde_json::Value;

/// Deepest nesting accepted (serde_json refuses deeper documents anyway).
const MAX_DEPTH: usize = 256;

/// A value's span and, for containers, its children.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    /// First byte of the value.
    pub start: usize,
    /// One past its last byte.
    pub end: usize,
    /// What it is.
    pub kind: Kind,
}

/// The shape of a value.
#[derive(Clone, Debug)]
pub(crate) enum Kind {
    /// An object with its members in file order.
    Object(Vec<Member>),
    /// An array with its elements.
    Array(Vec<Node>),
    /// A string, number, boolean or null.
    Scalar,
}

/// One `"key": value` member of an object.
#[derive(Clone, Debug)]
pub(crate) struct Member {
    /// The decoded key.
    pub key: String,
    /// Where the key's opening quote is (the member's start).
    pub start: usize,
    /// One past the key's closing quote.
    pub key_end: usize,
    /// The value (its end is the member's end).
    pub value: Node,
}

impl Node {
    /// The members of an object.
    pub fn members(&self) -> Option<&[Member]> {
        match &self.kind {
            Kind::Object(m) => Some(m),
            _ => None,
        }
    }

    /// The elements of an array.
    pub fn items(&self) -> Option<&[Node]> {
        match &self.kind {
            Kind::Array(i) => Some(i),
            _ => None,
        }
    }

    /// The member called `key` and its index.
    pub fn member(&self, key: &str) -> Option<(usize, &Member)> {
        self.members()?
            .iter()
            .enumerate()
            .find(|(_, m)| m.key == key)
    }

    /// The children's spans, members or elements alike.
    fn child_spans(&self) -> Vec<(usize, usize)> {
        match &self.kind {
            Kind::Object(m) => m.iter().map(|m| (m.start, m.value.end)).collect(),
            Kind::Array(i) => i.iter().map(|n| (n.start, n.end)).collect(),
            Kind::Scalar => Vec::new(),
        }
    }
}

/// A parsed document and the style new values are written in.
#[derive(Debug)]
pub(crate) struct Doc {
    /// The text.
    pub text: String,
    /// The top-level value.
    pub root: Node,
    nl: &'static str,
    unit: String,
    colon: String,
}

/// One replacement: the bytes `start..end` become `with`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Edit {
    pub start: usize,
    pub end: usize,
    pub with: String,
}

impl Doc {
    /// Parses `text` (valid JSON).
    pub fn parse(text: String) -> Result<Doc, String> {
        // A byte order mark (some Windows editors write one) is kept as it is.
        let bom = if text.starts_with('\u{feff}') { 3 } else { 0 };
        let mut p = Parser {
            b: text.as_bytes(),
            i: bom,
        };
        p.ws();
        let root = p.value(0)?;
        p.ws();
        if p.i != p.b.len() {
            return Err(format!("unexpected text at byte {}", p.i));
        }
        let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
        let unit = detect_unit(&text);
        let colon = detect_colon(&text, &root);
        Ok(Doc {
            text,
            root,
            nl,
            unit,
            colon,
        })
    }

    /// The value of a node, decoded.
    pub fn value(&self, node: &Node) -> Option<Value> {
        serde_json::from_str(&self.text[node.start..node.end]).ok()
    }

    /// Applies an edit and parses the result.
    pub fn apply(self, edit: &Edit) -> Result<Doc, String> {
        let mut text = self.text;
        text.replace_range(edit.start..edit.end, &edit.with);
        Doc::parse(text)
    }

    /// The edit that removes child `index` of `container` (an object or an array).
    pub fn remove(&self, container: &Node, index: usize) -> Option<Edit> {
        let spans = container.child_spans();
        let (start, end) = *spans.get(index)?;
        let edit = if spans.len() == 1 {
            // The only child: the container becomes empty (`{}` / `[]`).
            Edit {
                start: container.start + 1,
                end: container.end - 1,
                with: String::new(),
            }
        } else if index > 0 {
            // From the end of the previous child: its comma and the separator go too.
            Edit {
                start: spans[index - 1].1,
                end,
                with: String::new(),
            }
        } else {
            // The first of several: up to where the next one starts.
            Edit {
                start,
                end: spans[1].0,
                with: String::new(),
            }
        };
        Some(edit)
    }

    /// The edit that appends `value` to an array, or the member `key: value` to an object.
    pub fn append(&self, container: &Node, key: Option<&str>, value: &Value) -> Edit {
        let spans = container.child_spans();
        if let Some(&(last_start, last_end)) = spans.last() {
            // Copy the separator that precedes the last child (without its comma).
            let gap_start = match spans.len() {
                1 => container.start + 1,
                n => spans[n - 2].1,
            };
            let gap = &self.text[gap_start..last_start];
            let sep = gap.find(',').map_or(gap, |c| &gap[c + 1..]);
            let indent = sep.rfind('\n').map(|n| &sep[n + 1..]);
            let child = self.render(key, value, indent);
            return Edit {
                start: last_end,
                end: last_end,
                with: format!(",{sep}{child}"),
            };
        }
        // An empty container: on its own lines, one unit deeper, unless the file is
        // written on one line (a bare `{}` is not: it has no style to keep).
        let inner = (container.start + 1, container.end - 1);
        if self.text.contains('\n') || self.root.child_spans().is_empty() {
            let outer = line_indent(&self.text, container.start);
            let indent = format!("{outer}{}", self.unit);
            let child = self.render(key, value, Some(&indent));
            Edit {
                start: inner.0,
                end: inner.1,
                with: format!("{nl}{indent}{child}{nl}{outer}", nl = self.nl),
            }
        } else {
            Edit {
                start: inner.0,
                end: inner.1,
                with: self.render(key, value, None),
            }
        }
    }

    /// A member or element as text; `indent` is the indentation of the line it starts on
    /// (`None`: compact, on one line).
    fn render(&self, key: Option<&str>, value: &Value, indent: Option<&str>) -> String {
        let mut out = String::new();
        if let Some(k) = key {
            out.push_str(&Value::String(k.to_string()).to_string());
            match indent {
                Some(_) => out.push_str(&self.colon),
                None => out.push(':'),
            }
        }
        match indent {
            Some(indent) => self.pretty(value, indent, &mut out),
            None => out.push_str(&value.to_string()),
        }
        out
    }

    fn pretty(&self, value: &Value, indent: &str, out: &mut String) {
        let inner = format!("{indent}{}", self.unit);
        match value {
            Value::Object(m) if !m.is_empty() => {
                out.push('{');
                for (n, (k, v)) in m.iter().enumerate() {
                    out.push_str(if n == 0 { "" } else { "," });
                    out.push_str(self.nl);
                    out.push_str(&inner);
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push_str(&self.colon);
                    self.pretty(v, &inner, out);
                }
                out.push_str(self.nl);
                out.push_str(indent);
                out.push('}');
            }
            Value::Array(a) if !a.is_empty() => {
                out.push('[');
                for (n, v) in a.iter().enumerate() {
                    out.push_str(if n == 0 { "" } else { "," });
                    out.push_str(self.nl);
                    out.push_str(&inner);
                    self.pretty(v, &inner, out);
                }
                out.push_str(self.nl);
                out.push_str(indent);
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
}

/// The leading spaces and tabs of the line `pos` is on.
fn line_indent(text: &str, pos: usize) -> &str {
    let line_start = text[..pos].rfind('\n').map_or(0, |n| n + 1);
    let line = &text[line_start..];
    let len = line.len() - line.trim_start_matches([' ', '\t']).len();
    &line[..len]
}

/// The indentation of the first indented line (one level, in a formatted file); two
/// spaces when no line is indented.
fn detect_unit(text: &str) -> String {
    text.split('\n')
        .skip(1)
        .map(|l| &l[..l.len() - l.trim_start_matches([' ', '\t']).len()])
        .find(|w| !w.is_empty())
        .unwrap_or("  ")
        .to_string()
}

/// What separates the first key in the document from its value (`": "` by default).
fn detect_colon(text: &str, root: &Node) -> String {
    fn first(node: &Node) -> Option<&Member> {
        match &node.kind {
            Kind::Object(m) => m.first(),
            Kind::Array(items) => items.iter().find_map(first),
            Kind::Scalar => None,
        }
    }
    first(root)
        .and_then(|m| {
            let sep = &text[m.key_end..m.value.start];
            (sep.trim() == ":" && !sep.contains('\n')).then(|| sep.to_string())
        })
        .unwrap_or_else(|| ": ".to_string())
}

struct Parser<'b> {
    b: &'b [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self
            .b
            .get(self.i)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.i += 1;
        }
    }

    fn err<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("{what} at byte {}", self.i))
    }

    fn value(&mut self, depth: usize) -> Result<Node, String> {
        if depth > MAX_DEPTH {
            return self.err("nested too deeply");
        }
        let start = self.i;
        match self.b.get(self.i) {
            Some(b'{') => {
                self.i += 1;
                let mut members = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        let key_start = self.i;
                        self.string()?;
                        let key_end = self.i;
                        let key: String = serde_json::from_slice(&self.b[key_start..self.i])
                            .map_err(|e| format!("bad key at byte {key_start}: {e}"))?;
                        self.ws();
                        if self.b.get(self.i) != Some(&b':') {
                            return self.err("expected `:`");
                        }
                        self.i += 1;
                        self.ws();
                        let value = self.value(depth + 1)?;
                        members.push(Member {
                            key,
                            start: key_start,
                            key_end,
                            value,
                        });
                        self.ws();
                        match self.b.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b'}') => {
                                self.i += 1;
                                break;
                            }
                            _ => return self.err("expected `,` or `}`"),
                        }
                    }
                }
                Ok(Node {
                    start,
                    end: self.i,
                    kind: Kind::Object(members),
                })
            }
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        items.push(self.value(depth + 1)?);
                        self.ws();
                        match self.b.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b']') => {
                                self.i += 1;
                                break;
                            }
                            _ => return self.err("expected `,` or `]`"),
                        }
                    }
                }
                Ok(Node {
                    start,
                    end: self.i,
                    kind: Kind::Array(items),
                })
            }
            Some(b'"') => {
                self.string()?;
                Ok(Node {
                    start,
                    end: self.i,
                    kind: Kind::Scalar,
                })
            }
            Some(c) if c.is_ascii_alphanumeric() || *c == b'-' => {
                while self
                    .b
                    .get(self.i)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'+' | b'.'))
                {
                    self.i += 1;
                }
                Ok(Node {
                    start,
                    end: self.i,
                    kind: Kind::Scalar,
                })
            }
            _ => self.err("expected a value"),
        }
    }

    fn string(&mut self) -> Result<(), String> {
        if self.b.get(self.i) != Some(&b'"') {
            return self.err("expected a string");
        }
        self.i += 1;
        loop {
            match self.b.get(self.i) {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b'\\') => self.i += 2,
                Some(_) => self.i += 1,
                None => return self.err("unterminated string"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(s: &str) -> Doc {
        Doc::parse(s.to_string()).unwrap()
    }

    #[test]
    fn append_then_remove_gives_back_the_bytes() {
        for original in [
            "{\n  \"a\": 1\n}\n",
            "{\r\n\t\"a\": [1, 2]\r\n}",
            "{\"a\":1}",
            "{\n    \"a\" : {\n        \"b\": []\n    }\n}\n",
            "{}",
            "{\n}\n",
            "\u{feff}{\n  \"a\": 1\n}\n",
        ] {
            let d = doc(original);
            let edit = d.append(
                &d.root,
                Some("hooks"),
                &json!({"PreToolUse": [{"matcher": "*"}]}),
            );
            let d = d.apply(&edit).unwrap();
            let added: Value = serde_json::from_str(d.text.trim_start_matches('\u{feff}')).unwrap();
            assert_eq!(
                added["hooks"]["PreToolUse"][0]["matcher"], "*",
                "{}",
                d.text
            );
            let (i, _) = d.root.member("hooks").unwrap();
            let edit = d.remove(&d.root, i).unwrap();
            let d = d.apply(&edit).unwrap();
            if original == "{\n}\n" {
                // An empty container is not restored to its inner whitespace.
                assert_eq!(d.text, "{}\n");
            } else {
                assert_eq!(d.text, original);
            }
        }
    }

    #[test]
    fn new_values_follow_the_file_style() {
        let d = doc("{\r\n\t\"x\": {\r\n\t\t\"a\": 1\r\n\t}\r\n}\r\n");
        let (_, x) = d.root.member("x").unwrap();
        let edit = d.append(&x.value, Some("b"), &json!([{"k": 2}]));
        let d = d.apply(&edit).unwrap();
        assert_eq!(
            d.text,
            "{\r\n\t\"x\": {\r\n\t\t\"a\": 1,\r\n\t\t\"b\": [\r\n\t\t\t{\r\n\t\t\t\t\"k\": 2\r\n\t\t\t}\r\n\t\t]\r\n\t}\r\n}\r\n"
        );
        let d = doc("{\"x\":[1]}");
        let (_, x) = d.root.member("x").unwrap();
        let edit = d.append(&x.value, None, &json!({"a": 1}));
        let d = d.apply(&edit).unwrap();
        assert_eq!(d.text, "{\"x\":[1,{\"a\":1}]}");
    }

    #[test]
    fn removing_the_first_of_several() {
        let d = doc("[1, 2, 3]");
        let edit = d.remove(&d.root, 0).unwrap();
        let d = d.apply(&edit).unwrap();
        assert_eq!(d.text, "[2, 3]");
    }

    #[test]
    fn bad_text_is_an_error_not_a_panic() {
        for bad in ["", "{", "{\"a\" 1}", "[1,", "\"x", "{\"a\":1} x", "{\"\\"] {
            assert!(Doc::parse(bad.to_string()).is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_never_panics(s in r#"[{}\[\]",:a-z0-9 \n\\]{0,80}"#) {
            let _ = Doc::parse(s);
        }
    }
}
