//! Python values to JSON text, the way OpenClaw sees them.
//!
//! Every value the Python API accepts is written as JSON and then read by the same parser as
//! every other front end (`loopguard replay`, `loopguard serve`), so a Python call and the
//! event line with the same JSON get the same hashes and decisions. What JSON cannot hold is
//! mapped the way JavaScript maps it:
//!
//! * `int` beyond 2^53 is written with all its digits and parsed as `JSON.parse` does (the
//!   nearest double); one beyond the double range is `Infinity`;
//! * `float('inf')` is written as `1e999`, which JavaScript parses as `Infinity` (and the
//!   canonical serialiser hashes as `"Infinity"`); `nan` becomes `null`, as `JSON.stringify`
//!   writes it (no JSON text can hold a NaN);
//! * a `str` with lone surrogates (which `json.loads` gives for `"\ud800"`) is written with
//!   `\uXXXX` escapes, so it keeps them and the canonical serialiser drops them
//!   (decisions.md item 2), as for an event line with the same escapes;
//! * anything else (bytes, sets, dates, objects) is a `TypeError` naming where it is
//!   (`args["when"]`); nothing is stringified. Dict keys must be `str`.

use std::fmt::Write as _;

use loopguard_core::json::MAX_DEPTH;
use loopguard_core::JsString;
use loopguard_core::{json::js_number, json::write_json_string};
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// One step of the path to a value, for error messages (a key is only made text when an
/// error is reported).
enum Step<'py> {
    Key(Bound<'py, PyString>),
    Index(usize),
}

/// Writes Python values as JSON, remembering where it is for errors.
pub(crate) struct JsonWriter<'o, 'py> {
    out: &'o mut Vec<u8>,
    root: &'static str,
    path: Vec<Step<'py>>,
}

impl<'o, 'py> JsonWriter<'o, 'py> {
    /// A writer appending to `out`; `root` names the value in errors (`args`, `result`).
    pub(crate) fn new(out: &'o mut Vec<u8>, root: &'static str) -> Self {
        JsonWriter {
            out,
            root,
            path: Vec::new(),
        }
    }

    fn path(&self) -> String {
        let mut p = String::from(self.root);
        for step in &self.path {
            match step {
                Step::Key(k) => {
                    let _ = write!(p, "[{:?}]", k.to_string_lossy());
                }
                Step::Index(i) => {
                    let _ = write!(p, "[{i}]");
                }
            }
        }
        p
    }

    /// Writes `v` as JSON.
    pub(crate) fn value(&mut self, v: &Bound<'py, PyAny>) -> PyResult<()> {
        if v.is_none() {
            self.out.extend_from_slice(b"null");
        } else if let Ok(b) = v.cast::<PyBool>() {
            self.out
                .extend_from_slice(if b.is_true() { b"true" } else { b"false" });
        } else if let Ok(s) = v.cast::<PyString>() {
            write_py_string(self.out, s)?;
        } else if let Ok(i) = v.cast::<PyInt>() {
            self.int(i)?;
        } else if let Ok(f) = v.cast::<PyFloat>() {
            self.number(f.value());
        } else if let Ok(d) = v.cast::<PyDict>() {
            self.dict(d)?;
        } else if let Ok(l) = v.cast::<PyList>() {
            self.array(l.iter())?;
        } else if let Ok(t) = v.cast::<PyTuple>() {
            self.array(t.iter())?;
        } else {
            let type_name = type_name(v);
            let hint = if v.cast::<PyBytes>().is_ok() {
                " (decode it to str first)"
            } else {
                " (convert it to dict, list, str, int, float, bool or None first)"
            };
            return Err(PyTypeError::new_err(format!(
                "{}: {} {type_name} is not a JSON value{hint}",
                self.path(),
                article(&type_name)
            )));
        }
        Ok(())
    }

    /// Writes a list or tuple as a JSON array.
    fn array(&mut self, items: impl Iterator<Item = Bound<'py, PyAny>>) -> PyResult<()> {
        self.enter()?;
        self.out.push(b'[');
        for (i, item) in items.enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            self.path.push(Step::Index(i));
            self.value(&item)?;
            self.path.pop();
        }
        self.out.push(b']');
        Ok(())
    }

    /// Guards the nesting depth, as the parser does (and so cycles end in an error).
    fn enter(&self) -> PyResult<()> {
        if self.path.len() >= MAX_DEPTH {
            return Err(PyValueError::new_err(format!(
                "{}: nesting deeper than {MAX_DEPTH} levels (a value that contains itself?)",
                self.path()
            )));
        }
        Ok(())
    }

    fn dict(&mut self, d: &Bound<'py, PyDict>) -> PyResult<()> {
        self.enter()?;
        self.out.push(b'{');
        for (i, (k, item)) in d.iter().enumerate() {
            let Ok(key) = k.cast::<PyString>() else {
                let type_name = type_name(&k);
                let shown = k
                    .repr()
                    .map(|r| r.to_string())
                    .unwrap_or_else(|_| "?".into());
                return Err(PyTypeError::new_err(format!(
                    "{}: key {shown} is a {type_name}; JSON object keys are str",
                    self.path()
                )));
            };
            if i > 0 {
                self.out.push(b',');
            }
            write_py_string(self.out, key)?;
            self.out.push(b':');
            self.path.push(Step::Key(key.clone()));
            self.value(&item)?;
            self.path.pop();
        }
        self.out.push(b'}');
        Ok(())
    }

    fn int(&mut self, i: &Bound<'_, PyInt>) -> PyResult<()> {
        const SAFE: i64 = 1 << 53;
        if let Ok(n) = i.extract::<i64>() {
            if (-SAFE..=SAFE).contains(&n) {
                self.out.extend_from_slice(n.to_string().as_bytes());
                return Ok(());
            }
        }
        // Python rounds an int to the nearest double (ties to even), as JSON.parse does
        // with its digits; past the double range JavaScript has Infinity.
        match i.as_any().extract::<f64>() {
            Ok(n) => self.number(n),
            Err(e) if e.is_instance_of::<PyOverflowError>(i.py()) => {
                let negative = i.lt(0)?;
                self.number(if negative {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                });
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }

    fn number(&mut self, n: f64) {
        if n.is_nan() {
            self.out.extend_from_slice(b"null");
        } else if n.is_infinite() {
            self.out
                .extend_from_slice(if n > 0.0 { b"1e999" } else { b"-1e999" });
        } else {
            let mut buf = ryu_js::Buffer::new();
            self.out
                .extend_from_slice(js_number(n, &mut buf).as_bytes());
        }
    }
}

/// Writes a Python `str` as a JSON string. Lone surrogates become `\uXXXX` escapes, so the
/// parser sees the same UTF-16 code units JavaScript would (a surrogate pair in a Python
/// string is one character for JavaScript, as it is after this round trip).
pub(crate) fn write_py_string(out: &mut Vec<u8>, s: &Bound<'_, PyString>) -> PyResult<()> {
    // UTF-8 bytes owned by Python: one copy, into `out` (to_cow would make a second one on
    // the stable ABI before 3.10).
    match s.encode_utf8() {
        Ok(bytes) => {
            let bytes = bytes.as_bytes();
            match std::str::from_utf8(bytes) {
                Ok(text) => {
                    out.reserve(bytes.len() + 2);
                    write_json_string(out, &JsString::from(text));
                    Ok(())
                }
                Err(_) => write_surrogates(out, s),
            }
        }
        Err(_) => write_surrogates(out, s),
    }
}

/// Writes a string holding lone surrogates with `\uXXXX` escapes for every code unit
/// outside printable ASCII (the rare case; correctness over speed).
fn write_surrogates(out: &mut Vec<u8>, s: &Bound<'_, PyString>) -> PyResult<()> {
    let units = s.call_method1("encode", ("utf-16-le", "surrogatepass"))?;
    let units = units.cast::<PyBytes>()?.as_bytes();
    out.push(b'"');
    for unit in units.chunks_exact(2) {
        let u = u16::from_le_bytes([unit[0], unit[1]]);
        match u {
            0x20..=0x7e if u != u16::from(b'"') && u != u16::from(b'\\') => out.push(u as u8),
            _ => {
                let _ = write!(ByteWriter(out), "\\u{u:04x}");
            }
        }
    }
    out.push(b'"');
    Ok(())
}

/// `fmt::Write` over a byte vector.
struct ByteWriter<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for ByteWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// Writes `,"name":` followed by the string `s`, requiring a `str`.
pub(crate) fn field_str(
    out: &mut Vec<u8>,
    name: &'static str,
    s: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let Ok(s) = s.cast::<PyString>() else {
        return Err(PyTypeError::new_err(format!(
            "{name}: expected a str, got a {}",
            type_name(s)
        )));
    };
    out.extend_from_slice(b",\"");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
    write_py_string(out, s)
}

/// `"an"` before a type name starting with a vowel (`an object`, `an Opaque`), else `"a"`.
pub(crate) fn article(type_name: &str) -> &'static str {
    match type_name.chars().next().map(|c| c.to_ascii_lowercase()) {
        Some('a' | 'e' | 'i' | 'o' | 'u') => "an",
        _ => "a",
    }
}

/// The name of `v`'s type for an error message (`"object"` when Python cannot say).
pub(crate) fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".into())
}
