//! Decisions as Python objects.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

/// A decision as the engine returns it, borrowing from its event.
pub(crate) type Applied<'e> = loopguard_events::Decision<'e>;

/// The decision record (events.md output without `line`), as `loopguard serve` answers.
pub(crate) fn record(d: &Applied<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    d.write_record(&mut out);
    out.truncate(out.trim_ascii_end().len());
    out
}

/// A decision with everything owned, to carry out of a GIL-released section.
pub(crate) struct OwnedDecision {
    action: &'static str,
    session: Vec<u8>,
    run: Option<Vec<u8>>,
    call_id: Option<Vec<u8>>,
    tool: Option<Vec<u8>>,
    args_hash: Option<Vec<u8>>,
    result_hash: Option<String>,
    detector: Option<&'static str>,
    level: Option<&'static str>,
    count: Option<u64>,
    message: Option<Vec<u8>>,
    warning_key: Option<Vec<u8>>,
    paired_tool: Option<Vec<u8>>,
    emitted: Option<bool>,
}

impl From<Applied<'_>> for OwnedDecision {
    fn from(d: Applied<'_>) -> Self {
        let bytes = |s: &loopguard_core::JsString<'_>| s.as_wtf8().to_vec();
        let args_hash = match (&d.tool, &d.args) {
            (Some(tool), Some(args)) => Some(args.args_hash(tool.as_wtf8())),
            _ => None,
        };
        let result_hash = d.result.as_ref().map(|h| {
            let hex = loopguard_core::canonical::hex(&h.digest);
            if h.is_error {
                format!("error:{hex}")
            } else {
                hex
            }
        });
        let f = d.finding.as_ref();
        OwnedDecision {
            action: d.action.as_str(),
            session: bytes(&d.session),
            run: d.run.as_ref().map(bytes),
            call_id: d.call_id.as_ref().map(bytes),
            tool: d.tool.as_ref().map(bytes),
            args_hash,
            result_hash,
            detector: f.map(|f| f.detector.as_str()),
            level: f.map(|f| f.level.as_str()),
            count: f.map(|f| f.count),
            message: f.map(|f| bytes(&f.message)),
            warning_key: f.and_then(|f| f.warning_key.as_ref().map(bytes)),
            paired_tool: f.and_then(|f| f.paired_tool.as_ref().map(bytes)),
            emitted: f.and_then(|f| f.emitted),
        }
    }
}

/// WTF-8 to a Python str (lone surrogates come back as they were).
fn py_str(py: Python<'_>, b: &[u8]) -> Py<PyAny> {
    match std::str::from_utf8(b) {
        Ok(s) => PyString::new(py, s).into_any().unbind(),
        Err(_) => PyBytes::new(py, b)
            .call_method1("decode", ("utf-8", "surrogatepass"))
            .map(Bound::unbind)
            .unwrap_or_else(|_| {
                PyString::new(py, &String::from_utf8_lossy(b))
                    .into_any()
                    .unbind()
            }),
    }
}

fn opt_str(py: Python<'_>, b: &Option<Vec<u8>>) -> Option<Py<PyAny>> {
    b.as_deref().map(|b| py_str(py, b))
}

/// The decision before a tool call.
///
/// `decision` is "allow", "warn" or "block"; a warning or block carries `detector`, `level`,
/// `count`, `message`, `warning_key` and `emitted` (whether the model should be told: warnings
/// are shown once per bucket of ten; always true for a block).
#[pyclass(frozen, get_all, module = "loopguard")]
pub(crate) struct CallDecision {
    decision: Py<PyAny>,
    detector: Option<Py<PyAny>>,
    level: Option<Py<PyAny>>,
    count: Option<u64>,
    message: Option<Py<PyAny>>,
    emitted: Option<bool>,
    args_hash: Option<Py<PyAny>>,
    warning_key: Option<Py<PyAny>>,
    paired_tool: Option<Py<PyAny>>,
    session: Py<PyAny>,
    run: Option<Py<PyAny>>,
    call_id: Option<Py<PyAny>>,
    tool: Option<Py<PyAny>>,
}

impl CallDecision {
    pub(crate) fn new(py: Python<'_>, d: OwnedDecision) -> Self {
        CallDecision {
            decision: PyString::intern(py, d.action).into_any().unbind(),
            detector: d
                .detector
                .map(|s| PyString::intern(py, s).into_any().unbind()),
            level: d.level.map(|s| PyString::intern(py, s).into_any().unbind()),
            count: d.count,
            message: opt_str(py, &d.message),
            emitted: d.emitted,
            args_hash: opt_str(py, &d.args_hash),
            warning_key: opt_str(py, &d.warning_key),
            paired_tool: opt_str(py, &d.paired_tool),
            session: py_str(py, &d.session),
            run: opt_str(py, &d.run),
            call_id: opt_str(py, &d.call_id),
            tool: opt_str(py, &d.tool),
        }
    }
}

#[pymethods]
impl CallDecision {
    /// True for "block": the tool must not run.
    #[getter]
    fn blocked(&self, py: Python<'_>) -> PyResult<bool> {
        self.decision.bind(py).eq("block")
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        repr(
            py,
            "CallDecision",
            &[
                ("decision", Some(&self.decision)),
                ("detector", self.detector.as_ref()),
                ("level", self.level.as_ref()),
                ("message", self.message.as_ref()),
            ],
            self.count,
        )
    }
}

/// The decision after a tool call: "recorded", "ignored" (the outcome of a blocked call) or
/// "abort" (the loop survived a context compaction: stop the run; `detector`, `count` and
/// `message` say why).
#[pyclass(frozen, get_all, module = "loopguard")]
pub(crate) struct OutcomeDecision {
    decision: Py<PyAny>,
    detector: Option<Py<PyAny>>,
    level: Option<Py<PyAny>>,
    count: Option<u64>,
    message: Option<Py<PyAny>>,
    args_hash: Option<Py<PyAny>>,
    result_hash: Option<Py<PyAny>>,
    session: Py<PyAny>,
    run: Option<Py<PyAny>>,
    call_id: Option<Py<PyAny>>,
    tool: Option<Py<PyAny>>,
}

impl OutcomeDecision {
    pub(crate) fn new(py: Python<'_>, d: OwnedDecision) -> Self {
        OutcomeDecision {
            decision: PyString::intern(py, d.action).into_any().unbind(),
            detector: d
                .detector
                .map(|s| PyString::intern(py, s).into_any().unbind()),
            level: d.level.map(|s| PyString::intern(py, s).into_any().unbind()),
            count: d.count,
            message: opt_str(py, &d.message),
            args_hash: opt_str(py, &d.args_hash),
            result_hash: d
                .result_hash
                .as_deref()
                .map(|s| PyString::new(py, s).into_any().unbind()),
            session: py_str(py, &d.session),
            run: opt_str(py, &d.run),
            call_id: opt_str(py, &d.call_id),
            tool: opt_str(py, &d.tool),
        }
    }
}

#[pymethods]
impl OutcomeDecision {
    /// True for "abort": stop the run.
    #[getter]
    fn aborted(&self, py: Python<'_>) -> PyResult<bool> {
        self.decision.bind(py).eq("abort")
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        repr(
            py,
            "OutcomeDecision",
            &[
                ("decision", Some(&self.decision)),
                ("detector", self.detector.as_ref()),
                ("message", self.message.as_ref()),
            ],
            self.count,
        )
    }
}

fn repr(
    py: Python<'_>,
    name: &str,
    fields: &[(&str, Option<&Py<PyAny>>)],
    count: Option<u64>,
) -> PyResult<String> {
    let mut s = format!("{name}(");
    let mut first = true;
    for (k, v) in fields {
        if let Some(v) = v {
            if !first {
                s.push_str(", ");
            }
            first = false;
            s.push_str(&format!("{k}={}", v.bind(py).repr()?));
        }
    }
    if let Some(c) = count {
        s.push_str(&format!(", count={c}"));
    }
    s.push(')');
    Ok(s)
}

/// Builds a `CallDecision` or `OutcomeDecision` from a decision record dict (what
/// `loopguard serve` answers), for the remote client.
#[pyfunction]
pub(crate) fn _decision_from_record<'py>(
    py: Python<'py>,
    record: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyAny>> {
    let get = |k: &str| -> PyResult<Option<Py<PyAny>>> {
        Ok(record
            .get_item(k)?
            .filter(|v| !v.is_none())
            .map(Bound::unbind))
    };
    let need = |k: &str| -> PyResult<Py<PyAny>> {
        get(k)?.ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!("decision record without `{k}`"))
        })
    };
    let count: Option<u64> = match record.get_item("count")? {
        Some(c) if !c.is_none() => Some(c.extract()?),
        _ => None,
    };
    let kind: String = need("type")?.extract(py)?;
    let session =
        get("session")?.unwrap_or_else(|| PyString::new(py, "default").into_any().unbind());
    if kind == "call" {
        let emitted: Option<bool> = match record.get_item("emitted")? {
            Some(e) if !e.is_none() => Some(e.extract()?),
            _ => None,
        };
        Ok(Bound::new(
            py,
            CallDecision {
                decision: need("decision")?,
                detector: get("detector")?,
                level: get("level")?,
                count,
                message: get("message")?,
                emitted,
                args_hash: get("argsHash")?,
                warning_key: get("warningKey")?,
                paired_tool: get("pairedTool")?,
                session,
                run: get("run")?,
                call_id: get("callId")?,
                tool: get("tool")?,
            },
        )?
        .into_any())
    } else {
        Ok(Bound::new(
            py,
            OutcomeDecision {
                decision: need("decision")?,
                detector: get("detector")?,
                level: get("level")?,
                count,
                message: get("message")?,
                args_hash: get("argsHash")?,
                result_hash: get("resultHash")?,
                session,
                run: get("run")?,
                call_id: get("callId")?,
                tool: get("tool")?,
            },
        )?
        .into_any())
    }
}
