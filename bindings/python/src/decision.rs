//! Decisions as Python objects.

use loopguard_core::Mode;
use loopguard_events::Effect;
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
    /// [`loopguard_events::Effect`]'s name: what the integrations act on.
    effect: &'static str,
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
            let hex = loopguard_core::hashing::hex(&h.digest);
            if h.is_error {
                format!("error:{hex}")
            } else {
                hex
            }
        });
        let f = d.finding.as_ref();
        OwnedDecision {
            action: d.action.as_str(),
            // The Python guard enforces (backend.rs).
            effect: Effect::of(&d, Mode::Enforce).as_str(),
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
fn py_str<'py>(py: Python<'py>, b: &[u8]) -> Bound<'py, PyAny> {
    match std::str::from_utf8(b) {
        Ok(s) => PyString::new(py, s).into_any(),
        Err(_) => PyBytes::new(py, b)
            .call_method1("decode", ("utf-8", "surrogatepass"))
            .unwrap_or_else(|_| PyString::new(py, &String::from_utf8_lossy(b)).into_any()),
    }
}

fn opt_str<'py>(py: Python<'py>, b: &Option<Vec<u8>>) -> Option<Bound<'py, PyAny>> {
    b.as_deref().map(|b| py_str(py, b))
}

fn static_str<'py>(py: Python<'py>, s: Option<&'static str>) -> Option<Bound<'py, PyAny>> {
    s.map(|s| PyString::intern(py, s).into_any())
}

/// Declares a decision class: a frozen wrapper of [`OwnedDecision`] with the getters every
/// decision has (`decision`, `detector`, `level`, `count`, `session`), a getter for each
/// optional text field named in `text [...]`, the class's own getters (`{ ... }`), and a
/// `__repr__` showing `decision`, the `repr [...]` attributes that are set, and `count`.
/// Attributes are made into Python objects when read.
macro_rules! decision_class {
    (
        $(#[$doc:meta])*
        $name:ident, text [$($text:ident),*], repr [$($shown:ident),*] { $($extra:tt)* }
    ) => {
        $(#[$doc])*
        #[pyclass(frozen, module = "loopguard")]
        pub(crate) struct $name(OwnedDecision);

        impl $name {
            pub(crate) fn new(d: OwnedDecision) -> Self {
                $name(d)
            }
        }

        #[pymethods]
        impl $name {
            #[getter]
            fn decision<'py>(&self, py: Python<'py>) -> Bound<'py, PyString> {
                PyString::intern(py, self.0.action)
            }
            /// What to do: "proceed", "notice" (run the call and show the model `message`),
            /// "refuse" (do not run the call; give the model `message`) or "end_run" (the run is
            /// over: refuse the call, or stop after this outcome). Computed by the engine.
            #[getter]
            fn effect<'py>(&self, py: Python<'py>) -> Bound<'py, PyString> {
                PyString::intern(py, self.0.effect)
            }
            #[getter]
            fn detector<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
                static_str(py, self.0.detector)
            }
            #[getter]
            fn level<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
                static_str(py, self.0.level)
            }
            #[getter]
            fn count(&self) -> Option<u64> {
                self.0.count
            }
            #[getter]
            fn session<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
                py_str(py, &self.0.session)
            }
            $(
                #[getter]
                fn $text<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
                    opt_str(py, &self.0.$text)
                }
            )*

            $($extra)*

            fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
                repr(
                    stringify!($name),
                    &[
                        ("decision", Some(self.decision(py).into_any())),
                        ("effect", Some(self.effect(py).into_any())),
                        $((stringify!($shown), self.$shown(py)),)*
                    ],
                    self.0.count,
                )
            }
        }
    };
}

decision_class! {
    /// The decision before a tool call.
    ///
    /// `decision` is "allow", "warn" or "block"; a warning or block carries `detector`, `level`,
    /// `count`, `message`, `warning_key` and `emitted` (whether the model should be told: warnings
    /// are shown once per bucket of ten; always true for a block). Attributes are made into
    /// Python objects when read.
    CallDecision,
    text [message, args_hash, run, call_id, tool, warning_key, paired_tool],
    repr [detector, level, message] {
        /// True when the tool must not run (effect "refuse", "ask" or "end_run"): "block",
        /// "ask" (`loopguard.onCritical: "ask"`, refused where nobody can be asked), and
        /// "abort" (a block that also ends the run, as decision records word it).
        #[getter]
        fn blocked(&self) -> bool {
            matches!(self.0.effect, "refuse" | "ask" | "end_run")
        }
        #[getter]
        fn emitted(&self) -> Option<bool> {
            self.0.emitted
        }
    }
}

decision_class! {
    /// The decision after a tool call: "recorded", "ignored" (the outcome of a blocked call) or
    /// "abort" (the loop survived a context compaction: stop the run; `detector`, `count` and
    /// `message` say why).
    OutcomeDecision,
    text [message, args_hash, run, call_id, tool],
    repr [detector, message] {
        /// True for "abort" (effect "end_run"): stop the run.
        #[getter]
        fn aborted(&self) -> bool {
            self.0.effect == "end_run"
        }
        #[getter]
        fn result_hash<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
            self.0
                .result_hash
                .as_deref()
                .map(|s| PyString::new(py, s).into_any())
        }
    }
}

fn repr(
    name: &str,
    fields: &[(&str, Option<Bound<'_, PyAny>>)],
    count: Option<u64>,
) -> PyResult<String> {
    let mut parts = Vec::new();
    for (k, v) in fields {
        if let Some(v) = v {
            parts.push(format!("{k}={}", v.repr()?));
        }
    }
    if let Some(c) = count {
        parts.push(format!("count={c}"));
    }
    Ok(format!("{name}({})", parts.join(", ")))
}

/// A Python str as WTF-8 (lone surrogates kept).
fn wtf8(v: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    let s = v.cast::<PyString>()?;
    match s.to_cow() {
        Ok(text) => Ok(text.as_bytes().to_vec()),
        Err(_) => Ok(s
            .call_method1("encode", ("utf-8", "surrogatepass"))?
            .cast::<PyBytes>()?
            .as_bytes()
            .to_vec()),
    }
}

/// One of the fixed names a record holds (`decision`, `detector`, `level`), as the engine's
/// own static string; an unknown name from a server is an error.
fn known(v: &Bound<'_, PyAny>, names: &[&'static str], field: &str) -> PyResult<&'static str> {
    let text = wtf8(v)?;
    names
        .iter()
        .copied()
        .find(|n| n.as_bytes() == text.as_slice())
        .ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "decision record: unknown {field} {:?}",
                String::from_utf8_lossy(&text)
            ))
        })
}

const ACTIONS: &[&str] = &[
    "allow", "warn", "block", "ask", "recorded", "ignored", "abort", "armed",
];
/// Every detector name (OpenClaw's and the strict profile's), from the engine's own list.
fn detectors() -> &'static [&'static str] {
    static NAMES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        loopguard_core::Detector::ALL
            .into_iter()
            .chain(loopguard_core::Detector::EXTRA)
            .map(|d| d.as_str())
            .collect()
    })
}
const LEVELS: &[&str] = &["warning", "critical"];

/// Builds a `CallDecision` or `OutcomeDecision` from a decision record dict (what
/// `loopguard serve` answers), for the remote client.
#[pyfunction]
pub(crate) fn _decision_from_record<'py>(
    py: Python<'py>,
    record: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyAny>> {
    let get = |k: &str| -> PyResult<Option<Bound<'py, PyAny>>> {
        Ok(record.get_item(k)?.filter(|v| !v.is_none()))
    };
    let text = |k: &str| -> PyResult<Option<Vec<u8>>> { get(k)?.map(|v| wtf8(&v)).transpose() };
    let kind = get("type")?
        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("decision record without `type`"))?;
    let action = get("decision")?.ok_or_else(|| {
        pyo3::exceptions::PyValueError::new_err("decision record without `decision`")
    })?;
    let action = known(&action, ACTIONS, "decision")?;
    let emitted: Option<bool> = get("emitted")?.map(|e| e.extract()).transpose()?;
    let d = OwnedDecision {
        action,
        // A record does not say the server's mode: its decision is taken as enforced.
        effect: Effect::of_record(action, emitted)
            .unwrap_or(Effect::Proceed)
            .as_str(),
        session: text("session")?.unwrap_or_else(|| b"default".to_vec()),
        run: text("run")?,
        call_id: text("callId")?,
        tool: text("tool")?,
        args_hash: text("argsHash")?,
        result_hash: text("resultHash")?.map(|h| String::from_utf8_lossy(&h).into_owned()),
        detector: get("detector")?
            .map(|v| known(&v, detectors(), "detector"))
            .transpose()?,
        level: get("level")?
            .map(|v| known(&v, LEVELS, "level"))
            .transpose()?,
        count: get("count")?.map(|c| c.extract()).transpose()?,
        message: text("message")?,
        warning_key: text("warningKey")?,
        paired_tool: text("pairedTool")?,
        emitted,
    };
    if wtf8(&kind)? == b"call" {
        Ok(Bound::new(py, CallDecision(d))?.into_any())
    } else {
        Ok(Bound::new(py, OutcomeDecision(d))?.into_any())
    }
}
