//! Running a [`Plan`]: every input through its own [`Replayer`], every decision into one
//! [`Summary`] and to the caller's [`Observer`] (which prints, writes JSON, draws).

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader};

use crate::ahead::{Item as Ahead, Stopped};

use loopguard_adapters::reader::{self, Flow, Item, ReadError};
use loopguard_adapters::{Context, Diagnostic, DiagnosticKind, Format};
use loopguard_core::{Mode, Value};
use loopguard_events::{parse_event, Decision, EventError, EventKind};

use crate::inputs::{Input, Skipped};
use crate::plan::{read_error_reason, Chosen, InputKind, Plan, Source};
use crate::summary::{EventMeta, Observed, Summary};
use crate::Replayer;

/// What the caller does with a replay as it runs. Every method has a default that does
/// nothing.
pub trait Observer {
    /// One decision, with what the transcript recorded about its event and where the
    /// summary put it (its session and loop), after the summary has counted it. An error
    /// stops the replay ([`RunError::Output`]).
    fn decision(
        &mut self,
        source: &Source,
        decision: &Decision<'_>,
        meta: &EventMeta<'_>,
        at: Observed,
    ) -> io::Result<()> {
        let _ = (source, decision, meta, at);
        Ok(())
    }

    /// Something to tell the user, as it happens.
    fn notice(&mut self, notice: Notice<'_>) {
        let _ = notice;
    }

    /// `false` when [`Observer::decision`] does not look at [`EventMeta::args`]: then an
    /// event stream parsed and hashed ahead on a second thread
    /// ([`ReplayOptions::parse_ahead`](crate::ReplayOptions::parse_ahead)) gives it none,
    /// and the events' arguments are not rebuilt on the engine's thread. The default,
    /// `true`, gives the arguments of every event, on every path.
    fn wants_args(&self) -> bool {
        true
    }
}

/// An [`Observer`] that does nothing: for callers that only want the [`RunReport`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Quiet;

impl Observer for Quiet {}

/// What happens during a replay, in order.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Notice<'a> {
    /// An input is about to be read.
    Start(&'a Source),
    /// A line (or record) of it was skipped.
    LineSkipped(&'a Source, &'a Diagnostic),
    /// Something about it that is not a loss (a line that held several JSON values, each
    /// read; a recognised transcript that made no tool call).
    Note(&'a Source, &'a Diagnostic),
    /// It has been read (or could not be: [`FileReport::failure`]).
    Finished(&'a Source, &'a FileReport),
}

/// Why an input's events are missing from the report although it was chosen for replay.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// It could not be read (an I/O error, a document that is not JSON, an unreadable
    /// SQLite store).
    Unreadable(String),
    /// Read as its format, it gave no tool call although it has lines that format does
    /// not understand: probably another format (docs/transcripts.md §5).
    NoCalls {
        /// Lines (or records) not understood.
        skipped_lines: u64,
    },
}

/// What became of one input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileReport {
    /// Its name in messages.
    pub display: String,
    /// The format it was read as.
    pub format: Format,
    /// How that format was chosen.
    pub chosen: Chosen,
    /// The mode it replayed in.
    pub mode: Mode,
    /// Events replayed.
    pub events: u64,
    /// `call` events among them.
    pub calls: u64,
    /// Malformed lines skipped.
    pub skipped_lines: u64,
    /// Calls that never got a result.
    pub unanswered: u64,
    /// Results whose call was not found.
    pub orphans: u64,
    /// Why it did not replay, when it did not.
    pub failure: Option<Failure>,
}

impl FileReport {
    /// Why the input failed, as a sentence naming its format.
    ///
    /// ```
    /// use loopguard_replay::run::{FileReport, Failure};
    /// use loopguard_replay::Chosen;
    /// use loopguard_adapters::Format;
    /// use loopguard_core::Mode;
    /// let f = FileReport {
    ///     display: "x.jsonl".into(), format: Format::OpenClaw, chosen: Chosen::Forced,
    ///     mode: Mode::Observe, events: 0, calls: 0, skipped_lines: 7, unanswered: 0,
    ///     orphans: 0, failure: Some(Failure::NoCalls { skipped_lines: 7 }),
    /// };
    /// assert!(f.failure_message().unwrap().starts_with("x.jsonl: read as openclaw (forced by --format): no tool call found"));
    /// ```
    pub fn failure_message(&self) -> Option<String> {
        let how = match self.chosen {
            Chosen::Forced => "forced by --format",
            Chosen::Detected => "recognised from its content",
            Chosen::Blank | Chosen::StdinDefault => "the default",
        };
        Some(match self.failure.as_ref()? {
            Failure::Unreadable(why) => format!(
                "{}: cannot be read as {} ({how}): {why}",
                self.display,
                self.format.name()
            ),
            Failure::NoCalls { skipped_lines } => format!(
                "{}: read as {} ({how}): no tool call found{}; is it another format? Choose one with --format NAME",
                self.display,
                self.format.name(),
                match skipped_lines {
                    0 => " in its content".to_string(),
                    1 => ", and 1 line was not understood".to_string(),
                    n => format!(", and {n} lines were not understood"),
                }
            ),
        })
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Unreadable(why) => write!(f, "cannot be read: {why}"),
            Failure::NoCalls { skipped_lines } => {
                write!(
                    f,
                    "no tool call found, {skipped_lines} lines not understood"
                )
            }
        }
    }
}

/// What a replay found, and what it could not read.
#[derive(Clone, Debug, Default)]
pub struct RunReport {
    /// Sessions, counts and loops.
    pub summary: Summary,
    /// Each input replayed (or tried), in order.
    pub files: Vec<FileReport>,
    /// Files passed over before reading ([`Plan::skipped`]).
    pub skipped: Vec<Skipped>,
}

impl RunReport {
    /// `true` when some input chosen for replay could not be read, was not recognised or
    /// gave no call from content it did not understand: the exit status must say so.
    pub fn lost_data(&self) -> bool {
        self.files.iter().any(|f| f.failure.is_some())
            || self.skipped.iter().any(|s| s.reason.loses_data())
    }

    /// The inputs that failed.
    pub fn failures(&self) -> impl Iterator<Item = &FileReport> {
        self.files.iter().filter(|f| f.failure.is_some())
    }
}

/// Why a replay stopped before its end.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// A line of an event stream is not a valid event (events.md: every line must be).
    #[error("{input}:{line}: {message}; every line of an event stream must be a valid event")]
    BadEvent {
        /// The input.
        input: String,
        /// The line.
        line: u64,
        /// What is wrong (naming the field).
        message: String,
    },
    /// `stop_on_bad_line` and a malformed transcript line.
    #[error("{input}:{line}: {message}; stopped here because of --stop-on-bad-line")]
    Strict {
        /// The input.
        input: String,
        /// The line.
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// The observer failed (writing the output).
    #[error("writing the output: {0}")]
    Output(io::Error),
}

/// Why one input stopped.
enum Stop {
    Fatal(RunError),
    Failed(Failure),
}

/// Everything shared by the inputs of one run.
struct Runner<'o> {
    observer: &'o mut dyn Observer,
    summary: Summary,
    several: bool,
    stop_on_bad_line: bool,
    /// Event streams share sessions across files (they name their sessions themselves).
    events: Option<Replayer>,
    /// The session whose source was set last.
    named: Vec<u8>,
    /// The adapters' note that the current input gave no call.
    no_calls: Option<Diagnostic>,
}

impl Plan {
    /// Replays every input, telling `observer` each decision and notice, and returns the
    /// report. An input that cannot be read is recorded in [`RunReport::files`] and the
    /// others are still replayed; a bad event line, a malformed transcript line under
    /// `stop_on_bad_line`, or an observer error stop the run.
    ///
    /// Each input replays with its own mode and config ([`Source::mode`],
    /// [`Plan::config_for`]): event streams share one replayer (their sessions continue
    /// from file to file); each transcript gets its own.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use loopguard_replay::{Plan, ReplayOptions, run::Quiet};
    /// let file = std::env::temp_dir().join(format!("lg-doc-run-{}.jsonl", std::process::id()));
    /// let call = "{\"type\":\"call\",\"tool\":\"read\",\"args\":{\"path\":\"/a\"},\"ts\":1000}\n";
    /// std::fs::write(&file, call.repeat(3))?;
    /// let report = Plan::new(&[file.clone()], ReplayOptions::new())?.run(&mut Quiet)?;
    /// assert_eq!(report.summary.events, 3);
    /// assert!(!report.lost_data());
    /// # std::fs::remove_file(&file)?;
    /// # Ok(()) }
    /// ```
    pub fn run(&self, observer: &mut dyn Observer) -> Result<RunReport, RunError> {
        let mut runner = Runner {
            observer,
            summary: Summary::default(),
            several: self.sources.len() > 1,
            stop_on_bad_line: self.options.stops_on_bad_line(),
            events: None,
            named: Vec::new(),
            no_calls: None,
        };
        let mut files = Vec::with_capacity(self.sources.len());
        for (index, source) in self.sources.iter().enumerate() {
            runner.observer.notice(Notice::Start(source));
            let mut file = FileReport {
                display: source.display.clone(),
                format: source.format,
                chosen: source.chosen,
                mode: source.mode,
                events: 0,
                calls: 0,
                skipped_lines: 0,
                unanswered: 0,
                orphans: 0,
                failure: None,
            };
            let result = match source.kind() {
                InputKind::EventStream => runner.event_stream(self, index, source, &mut file),
                InputKind::Transcript => runner.transcript(self, index, source, &mut file),
            };
            match result {
                Ok(()) => {}
                Err(Stop::Fatal(e)) => return Err(e),
                Err(Stop::Failed(f)) => file.failure = Some(f),
            }
            // A transcript with content that gave no call (the adapters' `NoCalls` note) was
            // probably read as the wrong format: an error when lines were not understood,
            // the format was forced, or it is the only input (its format guessed, a run that
            // found nothing must not look like a clean one); a note otherwise (among
            // several inputs, a recognised session that made no tool call).
            if let Some(note) = runner.no_calls.take() {
                if file.failure.is_none()
                    && file.calls == 0
                    && (file.skipped_lines > 0
                        || source.chosen == Chosen::Forced
                        || (source.chosen == Chosen::Detected && !runner.several))
                {
                    file.failure = Some(Failure::NoCalls {
                        skipped_lines: file.skipped_lines,
                    });
                } else {
                    runner.observer.notice(Notice::Note(source, &note));
                }
            }
            // A transcript read in full that gave no event is still a session of the report
            // (with 0 calls), so a clean session and an unread one cannot be confused.
            if file.failure.is_none()
                && file.events == 0
                && source.kind() == InputKind::Transcript
                && runner.summary.session(source.session.as_bytes()).is_none()
            {
                runner
                    .summary
                    .set_source(source.session.as_bytes(), &source.display);
            }
            runner.observer.notice(Notice::Finished(source, &file));
            files.push(file);
        }
        Ok(RunReport {
            summary: runner.summary,
            files,
            skipped: self.skipped.clone(),
        })
    }
}

impl Runner<'_> {
    /// Adds one decision to the summary and hands it to the observer.
    fn decided(
        &mut self,
        source: &Source,
        file: &mut FileReport,
        d: &Decision<'_>,
        args: Option<&Value<'_>>,
        ts_ms: u64,
        tokens: Option<u64>,
    ) -> Result<(), Stop> {
        self.decided_lazy(source, file, d, args, ts_ms, tokens, || {
            args.map(crate::summary::args_preview)
        })
    }

    /// [`Runner::decided`] where the summary's preview of the arguments, needed only when
    /// a decision starts a loop, comes from `preview`.
    #[allow(clippy::too_many_arguments)]
    fn decided_lazy(
        &mut self,
        source: &Source,
        file: &mut FileReport,
        d: &Decision<'_>,
        args: Option<&Value<'_>>,
        ts_ms: u64,
        tokens: Option<u64>,
        preview: impl FnOnce() -> Option<String>,
    ) -> Result<(), Stop> {
        file.events += 1;
        if d.kind == EventKind::Call {
            file.calls += 1;
        }
        let meta = EventMeta {
            ts_ms: Some(ts_ms).filter(|t| *t > 0),
            tokens,
            args,
        };
        let key = d.session.as_wtf8();
        // Transcripts' sessions are named after their files; event streams name their
        // own, and say where they came from when several files are replayed.
        // The last session named costs one comparison per event.
        if (source.kind() == InputKind::Transcript || self.several) && self.named != key {
            if self.summary.session(key).is_none_or(|s| s.source.is_none()) {
                self.summary.set_source(key, &source.display);
            }
            self.named.clear();
            self.named.extend_from_slice(key);
        }
        let at = self.summary.observe_lazy(d, meta, preview);
        self.observer
            .decision(source, d, &meta, at)
            .map_err(|e| Stop::Fatal(RunError::Output(e)))
    }

    fn event_stream(
        &mut self,
        plan: &Plan,
        index: usize,
        source: &Source,
        file: &mut FileReport,
    ) -> Result<(), Stop> {
        let mut replayer = self.events.take().unwrap_or_else(|| {
            Replayer::new(
                plan.options.config_for(InputKind::EventStream),
                plan.options.mode_for(InputKind::EventStream),
            )
        });
        let result = match (&source.input, plan.take_kept(index)) {
            (_, Some(pipe)) => {
                let ahead = self.ahead(plan, &replayer, None);
                self.events_from(pipe.into_reader(), ahead, &mut replayer, source, file)
            }
            (Input::Stdin, None) => {
                let ahead = self.ahead(plan, &replayer, None);
                self.events_from(
                    BufReader::with_capacity(1 << 20, io::stdin()),
                    ahead,
                    &mut replayer,
                    source,
                    file,
                )
            }
            (Input::File(p), None) => match File::open(p) {
                Ok(f) => {
                    let size = f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
                    let mut input = BufReader::with_capacity(1 << 20, f);
                    // Small events only: with large results, hashing dominates and a
                    // worker threads save little wall time for more CPU time.
                    let size = size.filter(|_| {
                        input.fill_buf().is_ok_and(|b| {
                            memchr::memchr_iter(b'\n', b).count() as u64
                                >= b.len() as u64 / crate::plan::PARSE_AHEAD_MAX_LINE
                        })
                    });
                    let ahead = self.ahead(plan, &replayer, size);
                    self.events_from(input, ahead, &mut replayer, source, file)
                }
                Err(e) => Err(Stop::Failed(Failure::Unreadable(e.to_string()))),
            },
        };
        self.events = Some(replayer);
        result
    }

    /// Whether an event stream is parsed ahead, and by how many workers
    /// ([`ReplayOptions::parse_ahead`](crate::ReplayOptions::parse_ahead)): `file_size` is
    /// the size of a regular file, `None` for standard input and pipes.
    fn ahead(
        &self,
        plan: &Plan,
        replayer: &Replayer,
        file_size: Option<u64>,
    ) -> Option<crate::ahead::Ahead> {
        let on = plan.options.get_parse_ahead().unwrap_or_else(|| {
            crate::plan::cores() >= 2
                && file_size.is_some_and(|n| n >= crate::plan::PARSE_AHEAD_MIN_BYTES)
                && replayer.applies_prehashed()
                && !self.observer.wants_args()
        });
        on.then(|| crate::ahead::Ahead {
            prehasher: replayer.prehasher(),
            workers: plan.options.parse_workers(),
        })
    }

    /// The events.md reader: one decision per non-blank line, the lines parsed and hashed
    /// on worker threads when `ahead` says so ([`crate::ahead`]).
    fn events_from(
        &mut self,
        input: impl BufRead + Send,
        ahead: Option<crate::ahead::Ahead>,
        replayer: &mut Replayer,
        source: &Source,
        file: &mut FileReport,
    ) -> Result<(), Stop> {
        let wants_args = self.observer.wants_args();
        let bad = |e: EventError| {
            Stop::Fatal(RunError::BadEvent {
                input: source.display.clone(),
                line: e.line,
                message: e.message,
            })
        };
        let result = crate::ahead::for_each_event(input, ahead, |number, item| match item {
            Ahead::Parsed(event) => {
                let d = replayer.process(event, number);
                self.decided(
                    source,
                    file,
                    &d,
                    Some(&event.args),
                    event.timestamp_ms,
                    None,
                )
            }
            Ahead::Hashed { event, pre, line } => {
                match replayer.process_prehashed(event, pre, number) {
                    Some(d) if !wants_args => {
                        // The summary keeps a preview of the arguments of a loop's first
                        // finding: the line is parsed again for those only.
                        let preview = || {
                            let full = parse_event(line, number).ok()?;
                            Some(crate::summary::args_preview(&full.args))
                        };
                        self.decided_lazy(source, file, &d, None, event.timestamp_ms, None, preview)
                    }
                    hashed => {
                        // The replayer or the observer needs the values: parsed again here.
                        let full = parse_event(line, number).map_err(bad)?;
                        let d = hashed.unwrap_or_else(|| replayer.process(&full, number));
                        self.decided(source, file, &d, Some(&full.args), full.timestamp_ms, None)
                    }
                }
            }
        });
        result.map_err(|stopped| match stopped {
            Stopped::Bad(e) => bad(e),
            Stopped::Io(e) => Stop::Failed(Failure::Unreadable(e.to_string())),
            Stopped::Caller(stop) => stop,
        })
    }

    fn transcript(
        &mut self,
        plan: &Plan,
        index: usize,
        source: &Source,
        file: &mut FileReport,
    ) -> Result<(), Stop> {
        let format_profile = crate::plan::profile_for(source.format);
        let mut replayer =
            Replayer::new(plan.config_for(source), source.mode).with_profile(format_profile);
        let ctx = Context {
            session: source.session.clone(),
            agent: source.agent.clone(),
        };
        let opts = plan.options.read_options();
        let stop_on_bad_line = self.stop_on_bad_line;
        let mut stop: Option<Stop> = None;
        let mut no_calls = None;
        let mut sink = |item: Item| match item {
            Item::Event(mut sourced) => {
                // The transcript's tokens of a call are its `usage` (for spend budgets),
                // unless the event line gave one.
                if sourced.event.usage.is_none() {
                    sourced.event.usage = sourced
                        .tokens
                        .map(|tokens| loopguard_events::Usage { tokens, cost: 0.0 });
                }
                // A call from a known agent's telemetry gets that agent's profile.
                replayer.set_profile(crate::plan::profile_of(&sourced, format_profile));
                let d = replayer.process(&sourced.event, sourced.line);
                match self.decided(
                    source,
                    file,
                    &d,
                    Some(&sourced.event.args),
                    sourced.event.timestamp_ms,
                    sourced.tokens,
                ) {
                    Ok(()) => Flow::Continue,
                    Err(e) => {
                        stop = Some(e);
                        Flow::Stop
                    }
                }
            }
            Item::Diagnostic(diag) => {
                if stop_on_bad_line && diag.kind.is_malformed() {
                    stop = Some(Stop::Fatal(RunError::Strict {
                        input: source.display.clone(),
                        line: diag.line,
                        message: diag.message,
                    }));
                    return Flow::Stop;
                }
                match diag.kind {
                    DiagnosticKind::Unanswered => file.unanswered += 1,
                    DiagnosticKind::Orphan => file.orphans += 1,
                    DiagnosticKind::NoCalls => no_calls = Some(diag),
                    DiagnosticKind::JoinedLine | DiagnosticKind::Partial => {
                        self.observer.notice(Notice::Note(source, &diag));
                    }
                    _ => {
                        file.skipped_lines += 1;
                        self.observer.notice(Notice::LineSkipped(source, &diag));
                    }
                }
                Flow::Continue
            }
        };
        let result = match (&source.input, plan.take_kept(index)) {
            (_, Some(pipe)) => pipe.read(source.format, &ctx, &opts, &mut sink),
            (Input::File(p), None) => reader::read_file(p, source.format, &ctx, &opts, &mut sink),
            (Input::Stdin, None) => {
                reader::read_stream(io::stdin().lock(), source.format, &ctx, &opts, &mut sink)
            }
        };
        self.no_calls = no_calls;
        if let Some(s) = stop {
            return Err(s);
        }
        match result {
            Ok(_) | Err(ReadError::Stopped) => Ok(()),
            Err(e) => Err(Stop::Failed(Failure::Unreadable(read_error_reason(&e)))),
        }
    }
}
