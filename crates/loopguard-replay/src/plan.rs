//! What a replay will do before it reads anything: which inputs, each one's format, and
//! each one's mode and config, decided by its own kind (docs/replay.md: the same file
//! gives the same result whatever else is replayed with it).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use loopguard_adapters::reader::{self, Detected};
use loopguard_adapters::{Format, SourcedEvent};
use loopguard_core::Mode;
use loopguard_core::{DetectorProfile, LoopDetectionConfig, OpenClawConfig};
use loopguard_guard::ToolProfile;

use crate::inputs::{self, Input, InputError, SkipReason, Skipped};

/// How to replay: what the caller chose; everything left unset gets each input's default.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use loopguard_replay::ReplayOptions;
/// use loopguard_core::{OpenClawConfig, Mode};
/// let cfg = OpenClawConfig::from_json5("{tools:{loopDetection:{enabled:true}}}")?.config;
/// let opts = ReplayOptions::new().config(cfg).mode(Mode::Observe).stop_on_bad_line(true);
/// assert_eq!(opts.get_mode(), Some(Mode::Observe));
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, Default)]
pub struct ReplayOptions {
    config: Option<OpenClawConfig>,
    detectors: Option<DetectorProfile>,
    mode: Option<Mode>,
    format: Option<Format>,
    stop_on_bad_line: bool,
    active_branch: bool,
    /// Event streams are read, parsed and hashed on worker threads (`Some(true)`), on the
    /// engine's thread (`Some(false)`), or as suits each input (`None`).
    parse_ahead: Option<bool>,
    /// Parse workers when parsing ahead; 0: one per core beside the engine's, at least 1, at most 4.
    parse_threads: usize,
}

/// Files smaller than this are parsed on the engine's thread unless
/// [`ReplayOptions::parse_ahead`] says otherwise: starting the workers would not pay.
pub const PARSE_AHEAD_MIN_BYTES: u64 = 1 << 20;

/// Nor are files whose first megabyte has lines longer than this on average: with large
/// results hashing, not parsing, is most of the work, and the workers cost more CPU time
/// than they save wall time.
pub const PARSE_AHEAD_MAX_LINE: u64 = 4096;

/// Parse workers chosen by default: one per core beside the engine's thread (at least one),
/// at most this many (the engine's thread, which applies the events in order, is the
/// bottleneck well before).
const AUTO_PARSE_THREADS: usize = 4;

impl ReplayOptions {
    /// Nothing chosen: every input gets its defaults, formats are recognised.
    pub fn new() -> Self {
        Self::default()
    }

    /// One config for every input, used as it is.
    pub fn config(mut self, config: OpenClawConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// The detector profile for every input (`openclaw`, or `strict` with loopguard's
    /// extra detectors), over the config's `loopguard.profile`.
    pub fn detectors(mut self, profile: DetectorProfile) -> Self {
        self.detectors = Some(profile);
        self
    }

    /// One mode for every input.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Read every input as `format` instead of recognising it.
    pub fn format(mut self, format: Format) -> Self {
        self.format = Some(format);
        self
    }

    /// Stop at the first malformed line of a transcript instead of skipping it.
    pub fn stop_on_bad_line(mut self, stop: bool) -> Self {
        self.stop_on_bad_line = stop;
        self
    }

    /// OpenClaw transcripts: replay only the session tree's active branch.
    pub fn active_branch(mut self, active_branch: bool) -> Self {
        self.active_branch = active_branch;
        self
    }

    /// Event streams: read, parse and hash the lines on worker threads, ahead of the
    /// engine, which then only applies the hashes to its sessions (`true`); or read, parse
    /// and apply each line in turn on the caller's thread (`false`). The decisions are the
    /// same either way (the engine applies the events in input order). Unset, each event
    /// stream decides: worker threads when there are at least two cores, the input is a
    /// file of at least [`PARSE_AHEAD_MIN_BYTES`] whose first megabyte holds lines of at
    /// most [`PARSE_AHEAD_MAX_LINE`] bytes on average, and the replay needs neither every
    /// event's values on the engine's thread (an observer that wants every event's
    /// arguments, the strict profile) nor each decision as soon as its line arrives
    /// (standard input and pipes stay on one thread). See docs/replay.md and
    /// bench/history/replay-and-serve-redis.md.
    ///
    /// ```
    /// use loopguard_replay::ReplayOptions;
    /// assert_eq!(ReplayOptions::new().get_parse_ahead(), None);
    /// let opts = ReplayOptions::new().parse_ahead(true).parse_threads(3);
    /// assert_eq!((opts.get_parse_ahead(), opts.parse_workers()), (Some(true), 3));
    /// ```
    pub fn parse_ahead(mut self, ahead: bool) -> Self {
        self.parse_ahead = Some(ahead);
        self
    }

    /// How many worker threads parse ahead when event streams are parsed ahead (at most 8
    /// are started); `0`, the default, is one per core beside the engine's (at least 1, at most 4:
    /// on two cores one worker, which measured 1.12x faster than two that share the cores
    /// with the engine, bench/history/replay-and-serve-redis.md, "Sixth pass").
    pub fn parse_threads(mut self, threads: usize) -> Self {
        self.parse_threads = threads;
        self
    }

    /// Whether event streams are parsed on worker threads: `None` when each input decides
    /// ([`ReplayOptions::parse_ahead`]).
    pub fn get_parse_ahead(&self) -> Option<bool> {
        self.parse_ahead
    }

    /// The parse workers a stream parsed ahead gets: [`ReplayOptions::parse_threads`], or
    /// one per core beside the engine's (at least 1, at most 4) when that is 0.
    pub fn parse_workers(&self) -> usize {
        match self.parse_threads {
            0 => cores().saturating_sub(1).clamp(1, AUTO_PARSE_THREADS),
            n => n,
        }
    }

    /// The config given, if any.
    pub fn get_config(&self) -> Option<&OpenClawConfig> {
        self.config.as_ref()
    }

    /// The mode given, if any.
    pub fn get_mode(&self) -> Option<Mode> {
        self.mode
    }

    /// The format given, if any.
    pub fn get_format(&self) -> Option<Format> {
        self.format
    }

    /// Whether malformed transcript lines stop the replay.
    pub fn stops_on_bad_line(&self) -> bool {
        self.stop_on_bad_line
    }

    /// Whether OpenClaw transcripts replay their active branch only.
    pub fn is_active_branch(&self) -> bool {
        self.active_branch
    }

    /// The mode for an input of `kind`: the one given, else the kind's default.
    pub fn mode_for(&self, kind: InputKind) -> Mode {
        self.mode.unwrap_or(kind.default_mode())
    }

    /// The config for an input of `kind`: the one given, else the kind's default.
    pub fn config_for(&self, kind: InputKind) -> OpenClawConfig {
        let mut config = match &self.config {
            Some(c) => c.clone(),
            None => kind.default_config(),
        };
        if let Some(p) = self.detectors {
            config.set_profile(p);
        }
        config
    }

    /// Whether an input of `format` replays with the profile of the OpenClaw release it
    /// records: an OpenClaw session, with no profile named by `--profile` or the config.
    fn era_applies(&self, format: Format) -> bool {
        let named = |l: &Option<loopguard_core::LoopguardConfig>| {
            l.as_ref().is_some_and(|l| l.profile.is_some())
        };
        matches!(format, Format::OpenClaw | Format::OpenClawSqlite)
            && self.detectors.is_none()
            && !self.config.as_ref().is_some_and(|c| {
                named(&c.loopguard) || c.agents.iter().any(|a| named(&a.loopguard))
            })
    }

    pub(crate) fn read_options(&self) -> reader::ReadOptions {
        reader::ReadOptions {
            active_branch: self.active_branch,
        }
    }
}

/// The two kinds of input, which differ in their defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InputKind {
    /// loopguard's own event stream: a contract (events.md) that fixes its defaults.
    EventStream,
    /// An agent's transcript: a record of what happened.
    Transcript,
}

impl InputKind {
    /// The kind of a format.
    ///
    /// ```
    /// use loopguard_replay::InputKind;
    /// use loopguard_adapters::Format;
    /// assert_eq!(InputKind::of(Format::Events), InputKind::EventStream);
    /// assert_eq!(InputKind::of(Format::ClaudeCode), InputKind::Transcript);
    /// ```
    pub fn of(format: Format) -> Self {
        if format == Format::Events {
            InputKind::EventStream
        } else {
            InputKind::Transcript
        }
    }

    /// Event streams enforce (the contract's default); transcripts observe, since nothing
    /// was actually blocked when they were recorded.
    ///
    /// ```
    /// use loopguard_replay::InputKind;
    /// use loopguard_core::Mode;
    /// assert_eq!(InputKind::EventStream.default_mode(), Mode::Enforce);
    /// assert_eq!(InputKind::Transcript.default_mode(), Mode::Observe);
    /// ```
    pub fn default_mode(self) -> Mode {
        match self {
            InputKind::EventStream => Mode::Enforce,
            InputKind::Transcript => Mode::Observe,
        }
    }

    /// Event streams get OpenClaw's defaults (rolling detectors off, post-compaction guard
    /// on), as events.md fixes; transcripts get the defaults with `enabled: true`: someone
    /// replaying a transcript wants to find loops, and OpenClaw's `enabled: false` would
    /// find only post-compaction loops.
    ///
    /// ```
    /// use loopguard_replay::InputKind;
    /// assert!(InputKind::Transcript.default_config().policy_for(None).resolved.enabled);
    /// assert!(!InputKind::EventStream.default_config().policy_for(None).resolved.enabled);
    /// ```
    pub fn default_config(self) -> OpenClawConfig {
        match self {
            InputKind::EventStream => OpenClawConfig::default(),
            InputKind::Transcript => OpenClawConfig {
                loop_detection: Some(LoopDetectionConfig {
                    enabled: Some(true),
                    ..Default::default()
                }),
                ..Default::default()
            },
        }
    }
}

/// The tool profile a transcript replays with: that of the runtime that wrote it, so the
/// replay finds exactly what that runtime's live guard finds (a Claude Code transcript gets
/// the Claude Code hook's profile). Event streams and other formats use tools as given.
///
/// ```
/// use loopguard_replay::plan::profile_for;
/// use loopguard_adapters::Format;
/// use loopguard_guard::ToolProfile;
/// assert_eq!(profile_for(Format::ClaudeCode), ToolProfile::ClaudeCode);
/// assert_eq!(profile_for(Format::Events), ToolProfile::Plain);
/// ```
pub fn profile_for(format: Format) -> ToolProfile {
    match format {
        Format::ClaudeCode => ToolProfile::ClaudeCode,
        _ => ToolProfile::Plain,
    }
}

/// The tool profile one event replays with: the profile its source named
/// ([`SourcedEvent::profile`], set for trace spans from a known agent such as Claude Code),
/// else `format_profile` (see [`profile_for`]).
///
/// ```
/// use loopguard_replay::plan::profile_of;
/// use loopguard_adapters::SourcedEvent;
/// use loopguard_events::parse_event;
/// use loopguard_guard::ToolProfile;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let event = parse_event(br#"{"type":"call","tool":"Bash"}"#, 1)?.into_owned();
/// let mut sourced = SourcedEvent { event, line: 1, tokens: None, profile: None };
/// assert_eq!(profile_of(&sourced, ToolProfile::Plain), ToolProfile::Plain);
/// sourced.profile = Some("claude-code");
/// assert_eq!(profile_of(&sourced, ToolProfile::Plain), ToolProfile::ClaudeCode);
/// # Ok(())
/// # }
/// ```
pub fn profile_of(event: &SourcedEvent, format_profile: ToolProfile) -> ToolProfile {
    event
        .profile
        .and_then(|p| p.parse().ok())
        .unwrap_or(format_profile)
}

/// How an input's format was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chosen {
    /// Given by the caller (`--format`).
    Forced,
    /// Recognised from the content.
    Detected,
    /// The file is empty (or whitespace): an empty event stream.
    Blank,
    /// Standard input without a format: an event stream.
    StdinDefault,
}

/// One input with everything decided about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// The input.
    pub input: Input,
    /// Its name in messages (the path as given, or `stdin`).
    pub display: String,
    /// The session its events belong to when the format does not name sessions itself
    /// (transcripts are named after their files; event streams name their own).
    pub session: String,
    /// The agent, from an OpenClaw path (`…/agents/<id>/sessions/…`).
    pub agent: Option<String>,
    /// Its format.
    pub format: Format,
    /// How the format was chosen.
    pub chosen: Chosen,
    /// Its mode: the one given, else its kind's default.
    pub mode: Mode,
    /// Whether its config is the one given (else its kind's default).
    pub config_given: bool,
    /// For an OpenClaw session whose profile neither `--profile` nor the config names: the
    /// OpenClaw release it records having been written by (`Some(None)`: none recorded), which
    /// picks its profile ([`Plan::config_for`]). `None` for other inputs.
    pub openclaw_release: Option<Option<String>>,
}

impl Source {
    /// Event stream or transcript.
    pub fn kind(&self) -> InputKind {
        InputKind::of(self.format)
    }

    /// The profile of the OpenClaw release this session records, when that picks its
    /// profile ([`Source::openclaw_release`]).
    pub fn openclaw_profile(&self) -> Option<DetectorProfile> {
        DetectorProfile::for_openclaw_release(self.openclaw_release.as_ref()?.as_deref()?)
    }
}

/// Something about the whole replay the caller should tell its user once.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlanNote {
    /// No config was given, so transcripts replay with the detectors enabled and
    /// OpenClaw's default thresholds.
    DetectorsEnabledForTranscripts,
    /// The config given leaves the rolling detectors off, so transcripts get only the
    /// post-compaction guard (as in OpenClaw).
    ConfigLeavesDetectorsOff,
    /// Event streams replay with the rolling detectors off: without `--config` they get
    /// OpenClaw's defaults (`enabled: false`), or the config given leaves them off. Only
    /// the post-compaction guard runs.
    DetectorsOffForEventStreams,
}

/// Why a replay cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The paths cannot be resolved.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The only input is in no format loopguard knows.
    #[error("{path}: cannot tell which format this is. Choose one with --format NAME:\n{list}", list = format_list())]
    Unrecognised {
        /// The file.
        path: String,
    },
    /// The only input cannot be read.
    #[error("cannot read {path}: {message}")]
    Unreadable {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// Standard input with a document format.
    #[error("standard input can carry a line-based format, not {}", .0.describe())]
    StdinDocument(Format),
}

/// The inputs of a replay, each with its format, mode and session name.
#[derive(Debug)]
pub struct Plan {
    /// What will be replayed, in order.
    pub sources: Vec<Source>,
    /// What will not be, and why (directory entries passed over, unrecognised and
    /// unreadable files when several inputs are replayed).
    pub skipped: Vec<Skipped>,
    /// Things to tell the user once.
    pub notes: Vec<PlanNote>,
    pub(crate) options: ReplayOptions,
    /// Per source: an input that cannot be opened twice (a pipe, a FIFO, `/dev/fd/N`), as
    /// detection left it (it holds what detection read).
    kept: Vec<Mutex<Option<reader::Source>>>,
}

impl Plan {
    /// Resolves `paths` ([`inputs::resolve`]) and decides each input's format, mode and
    /// session name. With one input, an unrecognised or unreadable file is an error; with
    /// several, it is listed in [`Plan::skipped`] and the others are replayed.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use loopguard_replay::{Plan, ReplayOptions, Chosen};
    /// use loopguard_core::Mode;
    /// let file = std::env::temp_dir().join(format!("lg-doc-plan-{}.jsonl", std::process::id()));
    /// std::fs::write(&file, "{\"type\":\"call\",\"tool\":\"read\"}\n")?;
    /// let plan = Plan::new(&[file.clone()], ReplayOptions::new())?;
    /// assert_eq!(plan.sources[0].format.name(), "events");
    /// assert_eq!(plan.sources[0].chosen, Chosen::Detected);
    /// assert_eq!(plan.sources[0].mode, Mode::Enforce);
    /// # std::fs::remove_file(&file)?;
    /// # Ok(()) }
    /// ```
    pub fn new(paths: &[PathBuf], options: ReplayOptions) -> Result<Plan, PlanError> {
        let resolved = inputs::resolve(paths)?;
        let several = resolved.inputs.len() > 1;
        let mut skipped = resolved.skipped;
        let mut found = Vec::with_capacity(resolved.inputs.len());
        let mut kept = Vec::with_capacity(resolved.inputs.len());
        for input in resolved.inputs {
            let mut pipe = None;
            let decided = match (&input, options.format) {
                (_, Some(f)) => Ok((f, Chosen::Forced)),
                (Input::Stdin, None) => Ok((Format::Events, Chosen::StdinDefault)),
                (Input::File(p), None) => match sniff(p) {
                    Ok((found, source)) => {
                        pipe = source;
                        match found {
                            Sniffed::Format(f) => Ok((f, Chosen::Detected)),
                            Sniffed::Blank => Ok((Format::Events, Chosen::Blank)),
                            Sniffed::Unknown => Err(SkipReason::Unrecognised),
                        }
                    }
                    Err(e) => Err(SkipReason::Unreadable(read_error_reason(&e))),
                },
            };
            match decided {
                Ok((format, chosen)) => {
                    if input == Input::Stdin && !format.is_line_based() {
                        return Err(PlanError::StdinDocument(format));
                    }
                    found.push((input, format, chosen));
                    kept.push(Mutex::new(pipe));
                }
                Err(reason) if several => skipped.push(Skipped {
                    path: input.path().to_path_buf(),
                    reason,
                }),
                Err(SkipReason::Unreadable(message)) => {
                    return Err(PlanError::Unreadable {
                        path: input.display(),
                        message,
                    })
                }
                Err(_) => {
                    return Err(PlanError::Unrecognised {
                        path: input.display(),
                    })
                }
            }
        }
        let paths: Vec<&Path> = found.iter().map(|(i, _, _)| i.path()).collect();
        let names = inputs::session_names(&paths);
        let sources: Vec<Source> = found
            .iter()
            .zip(names)
            .map(|((input, format, chosen), session)| Source {
                display: input.display(),
                agent: reader::agent_from_path(input.path()),
                input: input.clone(),
                session,
                format: *format,
                chosen: *chosen,
                mode: options.mode_for(InputKind::of(*format)),
                config_given: options.config.is_some(),
                openclaw_release: options.era_applies(*format).then(|| match format {
                    Format::OpenClawSqlite => {
                        loopguard_adapters::openclaw_sqlite::recorded_release(input.path())
                    }
                    _ => None,
                }),
            })
            .collect();
        let mut notes = Vec::new();
        if sources.iter().any(|s| s.kind() == InputKind::Transcript) {
            match &options.config {
                None => notes.push(PlanNote::DetectorsEnabledForTranscripts),
                Some(c) if !c.policy_for(None).resolved.enabled => {
                    notes.push(PlanNote::ConfigLeavesDetectorsOff)
                }
                Some(_) => {}
            }
        }
        if sources.iter().any(|s| s.kind() == InputKind::EventStream)
            && !options
                .config_for(InputKind::EventStream)
                .policy_for(None)
                .resolved
                .enabled
        {
            notes.push(PlanNote::DetectorsOffForEventStreams);
        }
        Ok(Plan {
            sources,
            skipped,
            notes,
            options,
            kept,
        })
    }

    /// The options the plan was made with.
    pub fn options(&self) -> &ReplayOptions {
        &self.options
    }

    /// The input of source `index` when detection had to keep it (a pipe): it must be the
    /// one read. Taken once.
    pub(crate) fn take_kept(&self, index: usize) -> Option<reader::Source> {
        self.kept
            .get(index)?
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// The config `source` replays with: the one given (else its kind's default), with the
    /// profile `--profile` names, or, for an OpenClaw session that records the release that
    /// wrote it, that release's profile ([`Source::openclaw_release`]).
    pub fn config_for(&self, source: &Source) -> OpenClawConfig {
        let mut config = self.options.config_for(source.kind());
        if let Some(p) = source.openclaw_profile() {
            config.set_profile(p);
        }
        config
    }
}

/// What [`sniff`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sniffed {
    /// A known format.
    Format(Format),
    /// The file is empty or holds only whitespace.
    Blank,
    /// Not a format loopguard knows.
    Unknown,
}

/// Recognises a file's format from its structure (the adapters'
/// [`Source::detect`](reader::Source::detect)). The source is returned when the file cannot
/// be opened twice (a pipe, a FIFO, `/dev/fd/N`): it holds what detection read, and must be
/// the one read afterwards.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use loopguard_replay::plan::{sniff, Sniffed};
/// let file = std::env::temp_dir().join(format!("lg-doc-sniff-{}.jsonl", std::process::id()));
/// std::fs::write(&file, "  \n")?;
/// let (found, pipe) = sniff(&file)?;
/// assert_eq!(found, Sniffed::Blank);
/// assert!(pipe.is_none()); // a regular file is opened again to be read
/// # std::fs::remove_file(&file)?;
/// # Ok(()) }
/// ```
pub fn sniff(path: &Path) -> Result<(Sniffed, Option<reader::Source>), reader::ReadError> {
    let mut source = reader::Source::open(path)?;
    let found = match source.detect()? {
        Detected::Format(f) => Sniffed::Format(f),
        Detected::Blank => Sniffed::Blank,
        _ => Sniffed::Unknown,
    };
    Ok((found, (!source.is_regular_file()).then_some(source)))
}

/// The cores this process may use (1 when that cannot be told).
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// What a read error says, without the file name (the caller names it).
pub(crate) fn read_error_reason(e: &reader::ReadError) -> String {
    match e {
        reader::ReadError::Io { source, .. } => source.to_string(),
        reader::ReadError::Document { diagnostic, .. } => diagnostic.to_string(),
        reader::ReadError::Sqlite { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// The format names with descriptions, one per line, for error messages and help.
///
/// ```
/// assert!(loopguard_replay::plan::format_list().contains("claude-code"));
/// ```
pub fn format_list() -> String {
    Format::ALL
        .iter()
        .map(|f| format!("  {:<18} {}", f.name(), f.describe()))
        .collect::<Vec<_>>()
        .join("\n")
}
