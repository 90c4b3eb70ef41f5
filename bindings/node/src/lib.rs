//! The native half of the `loopguard` npm package (napi-rs).
//!
//! The JavaScript half (`bindings/node/lib/`) turns JavaScript values into events.md lines the
//! way OpenClaw's own serialiser sees them and hands each line to [`NativeGuard::apply`], which
//! applies it with the same [`loopguard_guard::Guard`] as `loopguard replay`, `loopguard serve`
//! and the Python package, and returns the decision record as JSON text (what
//! `loopguard replay --json` writes, without `line`). Everything crossing the boundary is text,
//! so identical events get identical decisions in every front end.
//!
//! `beforeCall` and `afterCall` take a shorter road, measured by `scripts/bench-node.sh`: the
//! JavaScript half writes the engine's number from [`NativeGuard::engine`] and the line into
//! this thread's inbox, a buffer it gave [`set_inbox`], and calls [`decide_inbox`], a function
//! of no arguments (a class method pays for unwrapping and borrow tracking on every call, a
//! string argument for a length pass and a copy; a line too long for the inbox goes to
//! [`decide`] as a string). The two decisions nearly every event gets come back as a tag
//! letter and the digests' hex (see `compact`), which JavaScript builds into the object with
//! the strings it already holds, instead of a record to `JSON.parse`. The engine keeps digests,
//! not values: a line in the layout the JavaScript half writes is read into its envelope and
//! the digests of its arguments and result, taken straight from the JSON text
//! (`digested::digest_line`, `decide_fast`), and any other line is parsed whole.
//!
//! Errors are JavaScript `Error`s whose `code` says what failed: `LOOPGUARD_EVENT:<field>` (a
//! malformed event, naming the field), `LOOPGUARD_CONFIG` (a config OpenClaw would reject),
//! `LOOPGUARD_STORE` (the store cannot be reached), `LOOPGUARD_ARG` (a bad option); the
//! JavaScript half turns them into its error classes.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use loopguard_core::hashing::{hex_bytes, ArgsDigest};
use loopguard_core::{Mode, OpenClawConfig};
use loopguard_events::{parse_event, Action, Decision, Effect, EventKind};
use loopguard_guard::{
    open_store, session_key, AbortedRun, Guard, GuardError, Input, SessionInfo, ToolProfile,
};
use napi::bindgen_prelude::{Buffer, Either, Error, Latin1String, Result};
use napi_derive::napi;

mod digested;
use digested::digest_line;

fn fail(code: impl Into<String>, message: impl Into<String>) -> Error<String> {
    Error::new(code.into(), message.into())
}

fn guard_error(e: GuardError) -> Error<String> {
    match e {
        GuardError::Event(e) => fail(
            format!("LOOPGUARD_EVENT:{}", e.field.unwrap_or("")),
            e.message,
        ),
        other => fail("LOOPGUARD_STORE", other.to_string()),
    }
}

/// The engine state shared by every `NativeGuard` attached to it (one per JavaScript thread).
struct Backend {
    guard: Guard,
    diagnostics: Vec<String>,
    /// The guard decides events from their digests alone (the plain tool profile, no extra
    /// detectors in the global policy): `beforeCall` and `afterCall` lines are read by
    /// [`digest_line`]. The guard's hashing settings are the default ones, which
    /// [`digest_line`] assumes: this addon never sets others.
    fast: bool,
}

/// Guards shared with worker threads, by handle. Weak: a guard lives while some thread holds it.
fn shared() -> &'static Mutex<HashMap<u32, Weak<Backend>>> {
    static SHARED: OnceLock<Mutex<HashMap<u32, Weak<Backend>>>> = OnceLock::new();
    SHARED.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The guard as the JavaScript `Guard` class uses it: events in, decision records out.
#[napi]
pub struct NativeGuard {
    /// `None` once [`NativeGuard::close`] let go of it.
    backend: Option<Arc<Backend>>,
}

#[napi]
impl NativeGuard {
    /// A guard for an OpenClaw config text (`null`: loop detection enabled with OpenClaw's
    /// defaults) named `origin` in messages, a store spec (`memory`, `sqlite:PATH`), a profile
    /// name (`none`, `openclaw`, `claude-code`, `mcp`), a mode (`enforce`, `observe`) and the
    /// seconds after which an idle session is forgotten.
    #[napi(constructor)]
    pub fn new(
        config: Option<String>,
        origin: String,
        store: String,
        profile: String,
        mode: String,
        idle_ttl_secs: f64,
    ) -> Result<Self, String> {
        if !(idle_ttl_secs.is_finite() && idle_ttl_secs > 0.0) {
            return Err(fail(
                "LOOPGUARD_ARG",
                format!("idleTtl: expected a positive number of seconds, got {idle_ttl_secs}"),
            ));
        }
        // The error lists the choices itself.
        let profile = ToolProfile::from_str(&profile)
            .map_err(|e| fail("LOOPGUARD_ARG", format!("profile: {e}")))?;
        let mode = match mode.as_str() {
            "enforce" => Mode::Enforce,
            "observe" => Mode::Observe,
            other => {
                return Err(fail(
                    "LOOPGUARD_ARG",
                    format!("mode: expected \"enforce\" or \"observe\", got {other:?}"),
                ))
            }
        };
        let (config, diagnostics) = match config {
            None => (loopguard_guard::enabled_config(), Vec::new()),
            Some(text) => load_config(&text, &origin)?,
        };
        let store_impl = open_store(&store, Duration::from_secs_f64(idle_ttl_secs))
            .map_err(|e| fail("LOOPGUARD_STORE", e.opening(&store)))?;
        let guard = Guard::builder()
            .config(config)
            .profile(profile)
            .mode(mode)
            .store(store_impl)
            .build();
        Ok(NativeGuard {
            backend: Some(Arc::new(Backend {
                fast: guard.applier().profile == ToolProfile::Plain
                    && !guard.policy(None).extra.any(),
                guard,
                diagnostics,
            })),
        })
    }

    /// This thread's hold on the guard, or an error once it was closed.
    fn backend(&self) -> Result<&Arc<Backend>, String> {
        self.backend.as_ref().ok_or_else(closed)
    }

    /// Lets go of this thread's hold on the guard: once no thread holds it (see
    /// [`NativeGuard::share`]), its store is closed (a SQLite file released). Every later
    /// call of this object is an error; closing twice does nothing.
    #[napi]
    pub fn close(&mut self) {
        self.backend = None;
    }

    /// The config's non-fatal diagnostics (out-of-range numbers that fell back, raised
    /// thresholds), each naming the config.
    #[napi]
    pub fn diagnostics(&self) -> Vec<String> {
        self.backend
            .as_ref()
            .map_or_else(Vec::new, |b| b.diagnostics.clone())
    }

    /// Applies one events.md line and returns its decision record as JSON.
    #[napi]
    pub fn apply(&self, line: String) -> Result<String, String> {
        let record = self.record(&line)?;
        Ok(json_text(record))
    }

    /// Applies one events.md line and returns its decision as the JavaScript API shows it, in
    /// the shortest form that says it (see `compact`): the common decisions (a call allowed,
    /// an outcome recorded) as a tag letter and the digests' hex, from which JavaScript builds
    /// the object with the strings it already holds; any other as the record's JSON with
    /// `decision` renamed `action` and moved first.
    #[napi]
    pub fn decide(&self, line: String) -> Result<Answer, String> {
        decide_line(self.backend()?, line.as_bytes())
    }

    /// The engine's handle for [`decide`], which JavaScript calls on every event: a plain
    /// function call with a number reaches the engine without the checks a class method or
    /// an external value goes through (unwrapping, a registry lookup under a lock, borrow
    /// tracking).
    #[napi]
    pub fn engine(&self) -> Result<u32, String> {
        self.register()
    }

    fn record(&self, line: &str) -> Result<Vec<u8>, String> {
        self.backend()?
            .guard
            .apply_line(None, line.as_bytes())
            .map_err(guard_error)
    }

    /// What the guard knows about a session, as JSON in the shape `loopguard serve` answers
    /// `GET /v1/sessions/{id}` (`null` when it has none).
    #[napi]
    pub fn session(&self, id: String) -> Result<Option<String>, String> {
        let info = self
            .backend()?
            .guard
            .session(None, &id)
            .map_err(guard_error)?;
        Ok(info.map(|i| session_json(&i).to_string()))
    }

    /// Every session the guard holds, as a JSON array of what [`NativeGuard::session`] gives.
    #[napi]
    pub fn sessions(&self) -> Result<String, String> {
        let all = self.backend()?.guard.sessions().map_err(guard_error)?;
        Ok(serde_json::Value::Array(all.iter().map(session_json).collect()).to_string())
    }

    /// Forgets a session; true when it existed.
    #[napi]
    pub fn forget(&self, id: String) -> Result<bool, String> {
        self.backend()?.guard.forget(None, &id).map_err(guard_error)
    }

    /// Records that `run` of `session` is stopped (an integration saw a decision whose effect
    /// ends the run), with the message to refuse its later calls with. Kept with the session
    /// in the guard's store, as its aborted run ([`AbortedRun`], the Claude Code hook's too),
    /// so a host restarted on a persistent store still knows; one run per session (the
    /// latest stopped).
    #[napi]
    pub fn stop_run(&self, session: String, run: String, message: String) -> Result<(), String> {
        self.backend()?
            .guard
            .update(None, &session, |entry| {
                entry.aborted = Some(AbortedRun {
                    run: run.clone(),
                    message: message.clone(),
                });
            })
            .map_err(guard_error)
    }

    /// The message [`NativeGuard::stop_run`] recorded for `run` of `session`, or `null` when
    /// the run is not stopped.
    #[napi]
    pub fn stopped_run(&self, session: String, run: String) -> Result<Option<String>, String> {
        let entry = self
            .backend()?
            .guard
            .store()
            .load(&session_key(None, &session))
            .map_err(|e| guard_error(e.into()))?;
        Ok(entry
            .and_then(|e| e.aborted)
            .filter(|a| a.run == run)
            .map(|a| a.message))
    }

    /// A handle another thread of this process passes to [`NativeGuard::attach`] to use the
    /// same guard (the same sessions, updated atomically).
    #[napi]
    pub fn share(&self) -> Result<u32, String> {
        self.register()
    }

    /// A new handle of this guard in [`shared`].
    fn register(&self) -> Result<u32, String> {
        let backend = Arc::downgrade(self.backend()?);
        static NEXT: AtomicU32 = AtomicU32::new(1);
        // Below SAME_ARGS, the flag bit of `decide`'s engine number.
        let handle = NEXT.fetch_add(1, Ordering::Relaxed) & !SAME_ARGS;
        let mut map = shared().lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, w| w.strong_count() > 0);
        map.insert(handle, backend);
        Ok(handle)
    }

    /// The guard behind a handle from [`NativeGuard::share`].
    #[napi(factory)]
    pub fn attach(handle: u32) -> Result<Self, String> {
        let map = shared().lock().unwrap_or_else(|p| p.into_inner());
        map.get(&handle)
            .and_then(Weak::upgrade)
            .map(|backend| NativeGuard {
                backend: Some(backend),
            })
            .ok_or_else(|| {
                fail(
                    "LOOPGUARD_ARG",
                    format!(
                        "Guard.attach: no guard with handle {handle} (it was never shared in this process, or it was garbage-collected)"
                    ),
                )
            })
    }
}

/// The error of a call on a closed guard.
fn closed() -> Error<String> {
    fail(
        "LOOPGUARD_CLOSED",
        "the guard is closed (guard.close() was called)",
    )
}

/// The bit of [`decide`]'s engine number that says the outcome's tool and arguments are, as
/// JSON text, those of the `beforeCall` the same guard decided last on this thread (the
/// JavaScript half compares them): its digest, kept in [`LAST_CALL`], is reused. Engine
/// numbers never reach it.
const SAME_ARGS: u32 = 1 << 31;

thread_local! {
    /// The engine [`decide`] used last on this thread: a guard serves many events in a
    /// row, and this spares the lock of [`shared`]. Weak, so it never keeps a guard alive.
    static LAST_ENGINE: RefCell<Option<(u32, Weak<Backend>)>> = const { RefCell::new(None) };
    /// The engine number and the arguments' digest of the last call [`decide`] decided on
    /// this thread.
    static LAST_CALL: Cell<Option<(u32, ArgsDigest)>> = const { Cell::new(None) };
    /// That call's arguments' JSON text when [`digest_line`] read it, else empty: an outcome
    /// that repeats them is read by [`digest_line`] too.
    static LAST_ARGS: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// [`NativeGuard::decide`] on the engine whose number [`NativeGuard::engine`] gave: the same
/// answer, at the cost of a function call. With the top bit (`SAME_ARGS`) set in `engine`, an outcome
/// reuses the arguments' digest of the last call decided on this thread by the same engine
/// ([`Input::WithArgsDigest`]); the JavaScript half sets it only when the outcome's
/// tool and arguments JSON are that call's. The JavaScript half passes a line this way when it
/// is too long for its inbox ([`decide_inbox`]).
#[napi]
pub fn decide(engine: u32, line: String) -> Result<Answer, String> {
    decide_engine(engine, line.as_bytes())
}

/// The first bytes of an inbox (see [`decide_inbox`]): the engine number, the line's length and
/// the write's number, each a `u32` in the machine's byte order; the line's UTF-8 bytes follow.
const INBOX_HEAD: usize = 12;

/// This thread's inbox and the number of the last write [`decide_inbox`] read from it.
struct Inbox {
    buffer: Buffer,
    last_read: Option<u32>,
}

thread_local! {
    /// This thread's inbox, a buffer the JavaScript half writes each event into before it
    /// calls [`decide_inbox`].
    static INBOX: RefCell<Option<Inbox>> = const { RefCell::new(None) };
}

/// Makes `inbox` this thread's inbox for [`decide_inbox`]. The JavaScript half calls it with a
/// buffer of its own that it never hands out: once per thread, and again when
/// [`decide_inbox`] finds that another instance of the module registered its own since.
#[napi]
pub fn set_inbox(inbox: Buffer) -> Result<(), String> {
    if inbox.len() <= INBOX_HEAD {
        return Err(fail(
            "LOOPGUARD_ARG",
            format!("setInbox: an inbox needs more than {INBOX_HEAD} bytes"),
        ));
    }
    INBOX.with(|slot| {
        *slot.borrow_mut() = Some(Inbox {
            buffer: inbox,
            last_read: None,
        })
    });
    Ok(())
}

/// [`decide`] with its engine number and line read from this thread's inbox ([`set_inbox`]).
/// A function of no arguments is the cheapest call napi-rs makes (no argument conversion, no
/// borrow scope, no allocation), and the line is written into the inbox by V8's own UTF-8
/// writer, without the length pass and the copy a string argument costs.
///
/// Two instances of the JavaScript module in one thread (a test runner's fresh module
/// registry, a bundle with its own copy) share this addon, each with its own inbox, and only
/// the last one registered is read here. Each write into an inbox carries a new number, so a
/// number already read means that the caller wrote into another inbox: the answer is then
/// the empty string, on which the caller registers its inbox and calls again.
#[napi]
pub fn decide_inbox() -> Result<Answer, String> {
    INBOX.with(|slot| {
        let mut slot = slot.borrow_mut();
        let inbox = slot.as_mut().ok_or_else(|| {
            fail(
                "LOOPGUARD_ARG",
                "decideInbox: no inbox on this thread (setInbox was not called)",
            )
        })?;
        let bytes: &[u8] = &inbox.buffer;
        let word = |at: usize| {
            bytes
                .get(at..at + 4)
                .and_then(|w| <[u8; 4]>::try_from(w).ok())
                .map_or(0, u32::from_ne_bytes)
        };
        let (engine, len, write) = (word(0), word(4) as usize, word(8));
        if inbox.last_read == Some(write) {
            return Ok(Either::A(Latin1String::from(String::new())));
        }
        inbox.last_read = Some(write);
        let line = bytes
            .get(INBOX_HEAD..INBOX_HEAD.saturating_add(len))
            .ok_or_else(|| {
                fail(
                    "LOOPGUARD_ARG",
                    format!(
                        "decideInbox: a line of {len} bytes in an inbox of {}",
                        bytes.len()
                    ),
                )
            })?;
        decide_engine(engine, line)
    })
}

fn decide_engine(engine: u32, line: &[u8]) -> Result<Answer, String> {
    let same_args = engine & SAME_ARGS != 0;
    let engine = engine & !SAME_ARGS;
    let cached = LAST_ENGINE.with(|last| match &*last.borrow() {
        Some((handle, weak)) if *handle == engine => weak.upgrade(),
        _ => None,
    });
    let backend = match cached {
        Some(backend) => backend,
        None => {
            let found = shared()
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&engine)
                .and_then(Weak::upgrade);
            let backend = found.ok_or_else(|| {
                fail(
                    "LOOPGUARD_ARG",
                    format!("decide: no engine with handle {engine} (its guard was closed or garbage-collected, or the handle is not one NativeGuard.engine gave)"),
                )
            })?;
            LAST_ENGINE.with(|last| *last.borrow_mut() = Some((engine, Arc::downgrade(&backend))));
            backend
        }
    };
    if backend.fast {
        if let Some(answer) = decide_fast(&backend, engine, same_args, line) {
            return answer;
        }
    }
    let event = parse_event(line, 1).map_err(|e| guard_error(e.into()))?;
    let mode = backend.guard.applier().mode;
    let known = match LAST_CALL.get() {
        Some((handle, digest)) if same_args && handle == engine => Some(digest),
        _ => None,
    };
    let input = match known {
        Some(digest) => Input::WithArgsDigest(&event, digest),
        None => Input::Event(&event),
    };
    // The answer is made inside the store's update, from the decision in place.
    let (answer, call) = backend
        .guard
        .apply(None, input, |d| {
            let call = (d.kind == EventKind::Call).then_some(d.args);
            let short = known.and_then(|_| compact_reused(&d)).map(Either::A);
            (short.unwrap_or_else(|| answer(&d, mode)), call)
        })
        .map_err(guard_error)?;
    if let Some(args) = call {
        LAST_CALL.set(args.map(|digest| (engine, digest)));
        LAST_ARGS.with(|a| a.borrow_mut().clear());
    }
    Ok(answer)
}

/// The longest arguments' JSON text kept in [`LAST_ARGS`].
const LAST_ARGS_MAX: usize = 16 * 1024;

/// [`decide_engine`] of a line [`digest_line`] reads: the event decided from the digests it
/// takes from the JSON text. `None`, with nothing applied, for any other line.
fn decide_fast(
    backend: &Backend,
    engine: u32,
    same_args: bool,
    line: &[u8],
) -> Option<Result<Answer, String>> {
    LAST_ARGS.with(|last_args| {
        let mut last_args = last_args.borrow_mut();
        let last_call = match LAST_CALL.get() {
            Some((handle, digest)) if same_args && handle == engine && !last_args.is_empty() => {
                Some((digest, &last_args[..]))
            }
            _ => None,
        };
        let fast = digest_line(line, last_call)?;
        let is_call = fast.event.kind == EventKind::Call;
        let mode = backend.guard.applier().mode;
        let applied = backend
            .guard
            .apply(None, Input::Prehashed(&fast.event, &fast.pre), |d| {
                // An outcome read here repeats the call's arguments: their digest is reused.
                let short = (!is_call).then(|| compact_reused(&d)).flatten();
                (
                    short.map(Either::A).unwrap_or_else(|| answer(&d, mode)),
                    d.args,
                )
            });
        match applied {
            // The event's policy reads the values: the caller applies the whole line.
            Err(GuardError::NeedsValues) => None,
            Err(e) => Some(Err(guard_error(e))),
            Ok((answer, args)) => {
                if is_call {
                    LAST_CALL.set(args.map(|digest| (engine, digest)));
                    last_args.clear();
                    // Large arguments are not copied: their outcome takes the whole path.
                    if args.is_some() && fast.args.len() <= LAST_ARGS_MAX {
                        last_args.extend_from_slice(fast.args);
                    }
                    if last_args.capacity() > 2 * LAST_ARGS_MAX {
                        last_args.shrink_to(LAST_ARGS_MAX);
                    }
                }
                Some(Ok(answer))
            }
        }
    })
}

/// What [`decide`] answers: a short answer (ASCII, created as a Latin-1 string, which V8
/// copies without decoding UTF-8) or a record's JSON.
pub type Answer = Either<Latin1String, String>;

fn decide_line(backend: &Backend, line: &[u8]) -> Result<Answer, String> {
    let event = parse_event(line, 1).map_err(|e| guard_error(e.into()))?;
    let mode = backend.guard.applier().mode;
    backend
        .guard
        .apply(None, &event, |d| answer(&d, mode))
        .map_err(guard_error)
}

/// [`NativeGuard::decide`]'s answer for a decision: its short form, or its record with the
/// decision's [`Effect`] in the guard's `mode` (the short forms are all `proceed`).
fn answer(d: &Decision<'_>, mode: Mode) -> Answer {
    if let Some(short) = compact(d) {
        return Either::A(short);
    }
    let mut record = Vec::with_capacity(256);
    d.write_record(&mut record);
    Either::B(json_text(action_first(record, Effect::of(d, mode))))
}

/// The effect of a decision record's `decision` and `emitted` ([`Effect::of_record`]), for the
/// remote guard, whose answers are `loopguard serve`'s records: `proceed`, `notice`, `refuse`
/// or `end_run`; `null` for a word that is not a record's.
#[napi]
pub fn effect_of_record(decision: String, emitted: Option<bool>) -> Option<&'static str> {
    Effect::of_record(&decision, emitted).map(Effect::as_str)
}

/// The profile of the OpenClaw release `version` ([`DetectorProfile::for_openclaw_release`]):
/// `openclaw-2026.9.6` for 2026.9.6 and later, `openclaw` for older releases, `null` when
/// `version` is not a release version.
///
/// [`DetectorProfile::for_openclaw_release`]: loopguard_core::DetectorProfile::for_openclaw_release
#[napi(js_name = "openclawProfileForRelease")]
pub fn openclaw_profile_for_release(version: String) -> Option<&'static str> {
    loopguard_core::DetectorProfile::for_openclaw_release(&version).map(|p| p.as_str())
}

/// What the `openclaw` release 2026.9.6 shows the model for a call's decision record
/// (`type`, `decision`, `message`, `count`, `emitted`) under the `openclaw-2026.9.6` profile:
/// the tool result given instead of a call a critical vetoed (`block`, or `abort` when it
/// ends the run), or the note appended to the tool result after an emitted warning; `null`
/// for anything else (an outcome's decisions, a warning in a bucket already shown).
#[napi(js_name = "openclaw20260906Shown")]
pub fn openclaw_2026_9_6_shown(
    kind: String,
    decision: String,
    message: String,
    count: f64,
    emitted: bool,
) -> Option<String> {
    use loopguard_core::openclaw_2026_9_6::{critical_result, warning_note};
    if kind != "call" {
        return None;
    }
    match decision.as_str() {
        "block" => Some(critical_result(&message, false)),
        "abort" => Some(critical_result(&message, true)),
        "warn" if emitted && count.is_finite() && count >= 0.0 => Some(warning_note(count as u64)),
        _ => None,
    }
}

/// The short answer of [`NativeGuard::decide`] for the two decisions nearly every event gets,
/// when the record holds nothing JavaScript does not already know but the digests (no tool
/// renamed by a profile, no finding):
///
/// - `a` + the arguments' hex: a call allowed (`argsHash` is `tool:hex`);
/// - `r` + the arguments' hex + the result's hex: an outcome recorded;
/// - `e` + the same: an outcome recorded with an error's hash (`error:hex`);
/// - `n` + the arguments' hex: an outcome recorded with no result hash.
///
/// Anything else (`None`) is answered with the record's JSON, which starts with `{`.
fn compact(d: &Decision<'_>) -> Option<Latin1String> {
    if d.engine_tool.is_some() || d.finding.is_some() {
        return None;
    }
    let args = d.args.as_ref()?;
    let mut out = Vec::with_capacity(129);
    let mut push = |tag: u8, digests: &[&[u8; 32]]| {
        out.push(tag);
        for digest in digests {
            out.extend_from_slice(&hex_bytes(digest));
        }
    };
    match (d.kind, d.action, &d.result) {
        (EventKind::Call, Action::Allow, _) => push(b'a', &[&args.0]),
        (EventKind::Outcome, Action::Recorded, Some(h)) => {
            push(if h.is_error { b'e' } else { b'r' }, &[&args.0, &h.digest]);
        }
        (EventKind::Outcome, Action::Recorded, None) => push(b'n', &[&args.0]),
        _ => return None,
    }
    // A tag letter and hex digits: ASCII.
    String::from_utf8(out).ok().map(Latin1String::from)
}

/// The short answer of an outcome recorded with the arguments' digest of the call before it
/// (`decide` with `SAME_ARGS`, the digest found in [`LAST_CALL`]): the same as [`compact`]'s
/// without the arguments' hex, which JavaScript already holds in that call's `argsHash` (the
/// same tool, the same digest):
///
/// - `R` + the result's hex: an outcome recorded;
/// - `Rerror:` + the error's hex: an outcome recorded with an error's hash;
/// - `N`: an outcome recorded with no result hash.
///
/// JavaScript takes `resultHash` as the answer less its first letter. `None` for anything
/// [`compact`] would not shorten.
fn compact_reused(d: &Decision<'_>) -> Option<Latin1String> {
    if d.engine_tool.is_some() || d.finding.is_some() || d.args.is_none() {
        return None;
    }
    if (d.kind, d.action) != (EventKind::Outcome, Action::Recorded) {
        return None;
    }
    let Some(h) = &d.result else {
        return Some(Latin1String::from("N".to_owned()));
    };
    let mut out = Vec::with_capacity(71);
    out.extend_from_slice(if h.is_error { b"Rerror:" } else { b"R" });
    out.extend_from_slice(&hex_bytes(&h.digest));
    // A tag letter, a known prefix and hex digits: ASCII.
    String::from_utf8(out).ok().map(Latin1String::from)
}

/// The record's bytes as text, without the trailing newline (the engine writes UTF-8).
fn json_text(mut record: Vec<u8>) -> String {
    while record.last() == Some(&b'\n') {
        record.pop();
    }
    String::from_utf8(record).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `{"type":…,"decision":"X",…}` → `{"action":"X","effect":"E","type":…,…}`. A decision record
/// is flat and its `"decision":"` key occurs once (a quote inside a JSON string is escaped, so
/// the key's bytes cannot occur inside a value); a record without it is returned unchanged.
fn action_first(record: Vec<u8>, effect: Effect) -> Vec<u8> {
    const KEY: &[u8] = b",\"decision\":\"";
    let Some(at) = record.windows(KEY.len()).position(|w| w == KEY) else {
        return record;
    };
    let value_start = at + KEY.len();
    let Some(len) = record[value_start..].iter().position(|&b| b == b'"') else {
        return record;
    };
    let value_end = value_start + len + 1; // past the closing quote
    let mut out = Vec::with_capacity(record.len() + 24);
    out.extend_from_slice(b"{\"action\":\"");
    out.extend_from_slice(&record[value_start..value_end]);
    out.extend_from_slice(b",\"effect\":\"");
    out.extend_from_slice(effect.as_str().as_bytes());
    out.extend_from_slice(b"\",");
    out.extend_from_slice(&record[1..at]);
    out.extend_from_slice(&record[value_end..]);
    out
}

/// A session as `loopguard serve` shows it (`GET /v1/sessions/{id}`), so a local and a
/// remote guard answer `session()` alike: the guard's one description
/// ([`SessionInfo::api_json`], which the Python package returns too).
fn session_json(info: &SessionInfo) -> serde_json::Value {
    info.api_json()
}

/// Reads a config as `loopguard replay --config` does: what OpenClaw would reject (unknown
/// keys, wrong types) is an error; out-of-range numbers fall back with a diagnostic.
fn load_config(text: &str, origin: &str) -> Result<(OpenClawConfig, Vec<String>), String> {
    let loaded = OpenClawConfig::from_json5(text)
        .map_err(|e| fail("LOOPGUARD_CONFIG", format!("{origin}: {e}")))?;
    let all: Vec<String> = loaded
        .diagnostics
        .iter()
        .map(|d| format!("{origin}: {d}"))
        .collect();
    let fatal: Vec<String> = loaded
        .diagnostics
        .iter()
        .filter(|d| d.is_fatal_at_runtime())
        .map(|d| format!("{origin}: {d}"))
        .collect();
    if !fatal.is_empty() {
        return Err(fail(
            "LOOPGUARD_CONFIG",
            format!(
                "{}\n{origin}: OpenClaw would reject this config; run `loopguard config check` for details",
                fatal.join("\n")
            ),
        ));
    }
    let mut all = all;
    // Detection a given config leaves off, or warnings it hides, said once where the user looks.
    all.extend(loopguard_guard::advice::config_notes(
        origin,
        &loaded.config,
    ));
    Ok((loaded.config, all))
}
