//! `loopguard._loopguard`: the native half of the `loopguard` Python package.
//!
//! Python calls are turned into events.md event lines (`convert`) and applied by the same
//! engine as `loopguard replay` and `loopguard serve`, so the decisions are the same for the
//! same events. The Python half (`python/loopguard`) adds the remote client and the framework
//! integrations; the public API is typed and documented in `python/loopguard/_loopguard.pyi`.

mod backend;
mod convert;
mod decision;

use std::sync::{Arc, RwLock};
use std::time::Duration;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use backend::{Backend, BackendError, BackendFailure};
use convert::{field_str, type_name, JsonWriter};
use decision::{CallDecision, OutcomeDecision};
use loopguard_guard::SessionInfo;

pyo3::create_exception!(
    _loopguard,
    LoopguardError,
    pyo3::exceptions::PyException,
    "Base class of loopguard's own errors."
);
pyo3::create_exception!(
    _loopguard,
    EventError,
    LoopguardError,
    "An event loopguard cannot apply (the message names the field), like a bad line for `loopguard replay`."
);
pyo3::create_exception!(
    _loopguard,
    ConfigError,
    LoopguardError,
    "An OpenClaw config that OpenClaw would reject (unknown keys, wrong types) or that is not JSON5."
);
pyo3::create_exception!(
    _loopguard,
    StoreError,
    LoopguardError,
    "The guard's session store cannot be reached."
);

/// Events at least this long are applied with the GIL released (hashing dominates).
const DETACH_BYTES: usize = 4096;

/// The guard: sessions, OpenClaw's detectors, and one decision per event.
#[pyclass(frozen, module = "loopguard")]
struct Guard {
    /// `None` once `close()` let go of it (the class is frozen: shared between threads).
    backend: RwLock<Option<Arc<Backend>>>,
}

fn to_py_err(e: BackendError) -> PyErr {
    match e {
        BackendError::Event { field, message } => {
            let err = EventError::new_err(message);
            Python::attach(|py| {
                let _ = err.value(py).setattr("field", field);
            });
            err
        }
        BackendError::Store(message) => StoreError::new_err(message),
    }
}

impl Guard {
    /// The engine, or the error of a closed guard.
    fn backend(&self) -> PyResult<Arc<Backend>> {
        self.backend
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| {
                pyo3::exceptions::PyRuntimeError::new_err(
                    "loopguard: the guard is closed (guard.close() was called)",
                )
            })
    }

    /// Applies one event line, releasing the GIL for large ones.
    fn apply<T: Send>(
        &self,
        py: Python<'_>,
        line: Vec<u8>,
        f: impl FnOnce(decision::Applied<'_>) -> T + Send,
    ) -> PyResult<T> {
        let backend = self.backend()?;
        let result = if line.len() >= DETACH_BYTES {
            py.detach(|| backend.apply_line(&line, f))
        } else {
            backend.apply_line(&line, f)
        };
        result.map_err(to_py_err)
    }
}

/// An event line made for Python: returned as `bytes` (a `Vec<u8>` would be a list of ints).
struct Line(Vec<u8>);

impl<'py> IntoPyObject<'py> for Line {
    type Target = PyBytes;
    type Output = Bound<'py, PyBytes>;
    type Error = std::convert::Infallible;

    fn into_pyobject(self, py: Python<'py>) -> Result<Self::Output, Self::Error> {
        Ok(PyBytes::new(py, &self.0))
    }
}

/// Starts an event line: `{"type":KIND,"session":SESSION`, then `"tool"` when given, the
/// optional `run`, `callId` and `agent` that are not None, and `"args"`. The caller adds what
/// else its kind has and the closing brace.
fn open_line(
    kind: &str,
    session: &Bound<'_, PyAny>,
    call: Option<(&Bound<'_, PyAny>, &Bound<'_, PyAny>)>,
    [run, call_id, agent]: [Option<&Bound<'_, PyAny>>; 3],
) -> PyResult<Vec<u8>> {
    let mut line = Vec::with_capacity(256);
    line.extend_from_slice(b"{\"type\":\"");
    line.extend_from_slice(kind.as_bytes());
    line.push(b'"');
    field_str(&mut line, "session", session)?;
    if let Some((tool, _)) = call {
        field_str(&mut line, "tool", tool)?;
    }
    for (name, v) in [("run", run), ("callId", call_id), ("agent", agent)] {
        if let Some(v) = v.filter(|v| !v.is_none()) {
            field_str(&mut line, name, v)?;
        }
    }
    if let Some((_, args)) = call {
        json_field(&mut line, "args", args)?;
    }
    Ok(line)
}

fn json_field(line: &mut Vec<u8>, name: &'static str, v: &Bound<'_, PyAny>) -> PyResult<()> {
    line.extend_from_slice(b",\"");
    line.extend_from_slice(name.as_bytes());
    line.extend_from_slice(b"\":");
    JsonWriter::new(line, name).value(v)
}

/// `_call_line(...) -> bytes`: the event line `before_call` applies (the remote client posts
/// it).
#[pyfunction]
#[pyo3(signature = (session, tool, args, run = None, call_id = None, agent = None))]
fn _call_line(
    session: &Bound<'_, PyAny>,
    tool: &Bound<'_, PyAny>,
    args: &Bound<'_, PyAny>,
    run: Option<&Bound<'_, PyAny>>,
    call_id: Option<&Bound<'_, PyAny>>,
    agent: Option<&Bound<'_, PyAny>>,
) -> PyResult<Line> {
    let mut line = open_line("call", session, Some((tool, args)), [run, call_id, agent])?;
    line.push(b'}');
    Ok(Line(line))
}

/// `_outcome_line(session, tool, args, run=None, call_id=None, agent=None, *, result=…,
/// error=…) -> bytes`: the event line `after_call` applies: `error` when it is given and not
/// None, else `result` (None included: a tool that returned None). Neither is an error: an
/// outcome must say what the tool did.
#[pyfunction]
#[pyo3(signature = (session, tool, args, run = None, call_id = None, agent = None, **outcome))]
fn _outcome_line(
    session: &Bound<'_, PyAny>,
    tool: &Bound<'_, PyAny>,
    args: &Bound<'_, PyAny>,
    run: Option<&Bound<'_, PyAny>>,
    call_id: Option<&Bound<'_, PyAny>>,
    agent: Option<&Bound<'_, PyAny>>,
    outcome: Option<&Bound<'_, PyDict>>,
) -> PyResult<Line> {
    let (mut result, mut error) = (None, None);
    if let Some(kw) = outcome {
        for (k, v) in kw.iter() {
            match k.extract::<String>().as_deref() {
                Ok("result") => result = Some(v),
                Ok("error") => error = Some(v),
                _ => {
                    return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                        "after_call() got an unexpected keyword argument {}",
                        k.repr()?
                    )))
                }
            }
        }
    }
    let mut line = open_line(
        "outcome",
        session,
        Some((tool, args)),
        [run, call_id, agent],
    )?;
    let error = error.filter(|e| !e.is_none());
    match (result, error) {
        (Some(r), Some(_)) if !r.is_none() => {
            return Err(PyValueError::new_err(
                "after_call: give either result or error, not both",
            ))
        }
        (_, Some(e)) => json_field(&mut line, "error", &e)?,
        (Some(r), None) => json_field(&mut line, "result", &r)?,
        (None, None) => {
            return Err(PyValueError::new_err(
                "after_call: give result= (what the tool returned, None included) or error= (what it raised)",
            ))
        }
    }
    line.push(b'}');
    Ok(Line(line))
}

/// `_compaction_line(...) -> bytes`: the event line `on_compaction` applies.
#[pyfunction]
#[pyo3(signature = (session, run = None, agent = None))]
fn _compaction_line(
    session: &Bound<'_, PyAny>,
    run: Option<&Bound<'_, PyAny>>,
    agent: Option<&Bound<'_, PyAny>>,
) -> PyResult<Line> {
    let mut line = open_line("compaction", session, None, [run, None, agent])?;
    line.push(b'}');
    Ok(Line(line))
}

#[pymethods]
impl Guard {
    /// `Guard(config=None)`: `config` is a path to an OpenClaw config file (JSON5 or JSON),
    /// a dict holding one, or None for loop detection enabled with OpenClaw's defaults.
    ///
    /// `store` is where sessions live: `"memory"` (default; bounded, least recently used
    /// forgotten first) or `"sqlite:PATH"` (shared by the processes using the same file, as
    /// the Claude Code hook's state is). Sessions idle for `idle_ttl` seconds are forgotten.
    #[new]
    #[pyo3(signature = (config = None, *, store = "memory", idle_ttl = 86400.0))]
    fn new(
        py: Python<'_>,
        config: Option<&Bound<'_, PyAny>>,
        store: &str,
        idle_ttl: f64,
    ) -> PyResult<Self> {
        if !(idle_ttl.is_finite() && idle_ttl > 0.0) {
            return Err(PyValueError::new_err(format!(
                "idle_ttl: expected a positive number of seconds, got {idle_ttl}"
            )));
        }
        let (text, origin) = match config {
            None => (None, "config".to_string()),
            Some(c) if c.is_none() => (None, "config".to_string()),
            Some(c) if c.cast::<PyDict>().is_ok() => {
                let mut out = Vec::new();
                JsonWriter::new(&mut out, "config").value(c)?;
                (
                    Some(String::from_utf8_lossy(&out).into_owned()),
                    "config".to_string(),
                )
            }
            Some(c) => {
                let os = py.import("os")?;
                let path: String = os
                    .call_method1("fspath", (c,))
                    .and_then(|p| p.extract())
                    .map_err(|_| {
                        pyo3::exceptions::PyTypeError::new_err(
                            "config: expected a path (str or os.PathLike), a dict or None",
                        )
                    })?;
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| PyOSError::new_err(format!("cannot read config {path}: {e}")))?;
                (Some(text), path)
            }
        };
        let (backend, warnings) = Backend::new(
            text.as_deref(),
            &origin,
            store,
            Duration::from_secs_f64(idle_ttl),
        )
        .map_err(|failure| match failure {
            BackendFailure::Config((message, diagnostics)) => {
                let err = ConfigError::new_err(message);
                let _ = err.value(py).setattr("diagnostics", diagnostics);
                err
            }
            BackendFailure::Store(message) => StoreError::new_err(message),
        })?;
        if !warnings.is_empty() {
            let logger = py
                .import("logging")?
                .call_method1("getLogger", ("loopguard",))?;
            for w in warnings {
                logger.call_method1("warning", ("%s", w))?;
            }
        }
        Ok(Guard {
            backend: RwLock::new(Some(Arc::new(backend))),
        })
    }

    /// The before-tool-call check. Returns a `CallDecision`; on "block" do not run the tool.
    #[pyo3(signature = (session, tool, args, *, run = None, call_id = None, agent = None))]
    #[allow(clippy::too_many_arguments)] // the Python signature
    fn before_call(
        &self,
        py: Python<'_>,
        session: &Bound<'_, PyAny>,
        tool: &Bound<'_, PyAny>,
        args: &Bound<'_, PyAny>,
        run: Option<&Bound<'_, PyAny>>,
        call_id: Option<&Bound<'_, PyAny>>,
        agent: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<CallDecision> {
        let Line(line) = _call_line(session, tool, args, run, call_id, agent)?;
        let owned = self.apply(py, line, |d| decision::OwnedDecision::from(d))?;
        Ok(CallDecision::new(owned))
    }

    /// Records what a tool returned (`result`) or raised (`error`). Returns an
    /// `OutcomeDecision`; on "abort" stop the run.
    /// Exactly one of `result=` (None included) and `error=` (not None) is given.
    #[pyo3(signature = (session, tool, args, *, run = None, call_id = None, agent = None, **outcome))]
    #[allow(clippy::too_many_arguments)] // the Python signature
    fn after_call(
        &self,
        py: Python<'_>,
        session: &Bound<'_, PyAny>,
        tool: &Bound<'_, PyAny>,
        args: &Bound<'_, PyAny>,
        run: Option<&Bound<'_, PyAny>>,
        call_id: Option<&Bound<'_, PyAny>>,
        agent: Option<&Bound<'_, PyAny>>,
        outcome: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<OutcomeDecision> {
        let Line(line) = _outcome_line(session, tool, args, run, call_id, agent, outcome)?;
        let owned = self.apply(py, line, |d| decision::OwnedDecision::from(d))?;
        Ok(OutcomeDecision::new(owned))
    }

    /// A context compaction finished: arms the post-compaction guard of the session and run.
    /// Returns "armed" (or "ignored" when the config disables the guard).
    #[pyo3(signature = (session, run = None, *, agent = None))]
    fn on_compaction(
        &self,
        py: Python<'_>,
        session: &Bound<'_, PyAny>,
        run: Option<&Bound<'_, PyAny>>,
        agent: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<&'static str> {
        let Line(line) = _compaction_line(session, run, agent)?;
        self.apply(py, line, |d| d.action.as_str())
    }

    /// Applies one events.md event, given as a dict or as one JSON line (str or bytes), and
    /// returns its decision record as a dict, exactly as `loopguard replay --json` writes it
    /// (without "line").
    fn event<'py>(
        &self,
        py: Python<'py>,
        event: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let line = event_line(event)?;
        let record = self.apply(py, line, |d| decision::record(&d))?;
        let json = py.import("json")?;
        json.call_method1(
            "loads",
            (PyString::new(py, &String::from_utf8_lossy(&record)),),
        )
    }

    /// What the guard knows about a session (counters of every event applied, the last
    /// decisions), as a dict in the shape of `loopguard serve`'s `GET /v1/sessions/{id}`
    /// (what `Guard.remote(...).session(id)` returns); None when it has no such session.
    fn session<'py>(&self, py: Python<'py>, session: &str) -> PyResult<Bound<'py, PyAny>> {
        match self.backend()?.session(session).map_err(to_py_err)? {
            Some(info) => to_python(py, &info.api_json()),
            None => Ok(py.None().into_bound(py)),
        }
    }

    /// Every session the guard holds, as dicts shaped as `session()`'s.
    fn sessions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let all = self.backend()?.sessions().map_err(to_py_err)?;
        to_python(
            py,
            &all.iter().map(SessionInfo::api_json).collect::<Vec<_>>(),
        )
    }

    /// Forgets a session; True when it existed.
    fn forget(&self, session: &str) -> PyResult<bool> {
        self.backend()?.forget(session).map_err(to_py_err)
    }

    /// `Guard.remote(url, token=None)`: the same API, answered by `loopguard serve`.
    #[staticmethod]
    #[pyo3(signature = (url, token = None, *, timeout = 5.0))]
    fn remote<'py>(
        py: Python<'py>,
        url: &Bound<'py, PyAny>,
        token: Option<&Bound<'py, PyAny>>,
        timeout: f64,
    ) -> PyResult<Bound<'py, PyAny>> {
        py.import("loopguard._remote")?
            .getattr("RemoteGuard")?
            .call1((url, token, timeout))
    }

    /// Lets go of the guard's engine and its store (a SQLite file is released). Every later
    /// call is an error; closing twice does nothing. `with Guard(...) as guard:` closes it
    /// at the end of the block.
    fn close(&self) {
        self.backend
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .take();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        match &*self.backend.read().unwrap_or_else(|p| p.into_inner()) {
            Some(b) => format!("<loopguard.Guard {}>", b.describe()),
            None => "<loopguard.Guard closed>".to_string(),
        }
    }
}

/// A serialisable value as Python objects (through JSON).
fn to_python<'py, T: serde::Serialize>(py: Python<'py>, v: &T) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(v)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    py.import("json")?.call_method1("loads", (text,))
}

/// The JSON line for an event: a dict is converted (the remote client sends the same bytes);
/// a str or bytes is taken as one events.md line as it is.
fn event_line(event: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = event.cast::<pyo3::types::PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(s) = event.cast::<PyString>() {
        // The line's own bytes: its escapes (lone surrogates too) are the parser's to read.
        return Ok(s.to_cow()?.as_bytes().to_vec());
    }
    if event.cast::<PyDict>().is_err() {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "event: expected a dict (one events.md event) or one JSON line (str or bytes), got a {}",
            type_name(event)
        )));
    }
    let mut line = Vec::with_capacity(256);
    JsonWriter::new(&mut line, "event").value(event)?;
    Ok(line)
}

/// `_event_json(event) -> bytes`: the event dict as the JSON `Guard.event` applies.
#[pyfunction]
fn _event_json(event: &Bound<'_, PyAny>) -> PyResult<Line> {
    event_line(event).map(Line)
}

#[pymodule]
fn _loopguard(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Guard>()?;
    m.add_class::<CallDecision>()?;
    m.add_class::<OutcomeDecision>()?;
    m.add("LoopguardError", py.get_type::<LoopguardError>())?;
    m.add("EventError", py.get_type::<EventError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("StoreError", py.get_type::<StoreError>())?;
    // Every detector name a decision can carry (OpenClaw's, then the strict profile's): the
    // one list `loopguard._detectors.Detector` is checked against (tests/test_api.py).
    let names: Vec<&str> = loopguard_core::Detector::ALL
        .into_iter()
        .chain(loopguard_core::Detector::EXTRA)
        .map(|d| d.as_str())
        .collect();
    m.add("DETECTORS", pyo3::types::PyTuple::new(py, names)?)?;
    m.add_function(wrap_pyfunction!(_event_json, m)?)?;
    m.add_function(wrap_pyfunction!(_call_line, m)?)?;
    m.add_function(wrap_pyfunction!(_outcome_line, m)?)?;
    m.add_function(wrap_pyfunction!(_compaction_line, m)?)?;
    m.add_function(wrap_pyfunction!(decision::_decision_from_record, m)?)?;
    Ok(())
}
