//! Reading an OpenClaw config file and reporting what is wrong with it.
//!
//! The `tools.loopDetection` block is validated as OpenClaw's strict schema does (unknown
//! keys and wrong types are errors), with decisions.md's two relaxations: thresholds out of
//! order are auto-raised and reported as warnings (item 3), and everything outside the
//! block and `agents.list[].tools.loopDetection` is ignored (item 4).
//!
//! Two views of the same diagnostics: [`OpenClawConfig::from_json5`] (the checker's, every
//! problem) and [`OpenClawConfig::load_for_run`] (the run-time one: unknown keys and
//! wrong-typed switches stop, a numeric value that is not a positive integer falls back
//! to its default as OpenClaw's resolver does, reported by its `Fallback` warning).

use std::fmt;

use super::extension::{
    detector_number_keys, extra_default, AlertConfig, ALERT_EVENTS, ALERT_FORMATS,
};
use super::json5::{self, Entry, Node, NodeValue, Pos, SyntaxError};
use super::{
    AgentConfig, Budgets, DetectorProfile, DetectorSwitches, ExtraDetectorConfig,
    LoopDetectionConfig, LoopguardConfig, OnCritical, OpenClawConfig, PostCompactionGuardConfig,
    BUDGET_KEYS, DEFAULT_CRITICAL_THRESHOLD, DEFAULT_GLOBAL_CIRCUIT_BREAKER_THRESHOLD,
    DEFAULT_HISTORY_SIZE, DEFAULT_UNKNOWN_TOOL_THRESHOLD, DEFAULT_WARNING_THRESHOLD,
    DEFAULT_WINDOW_SIZE, EXTRA_DETECTOR_KEYS,
};

/// How bad a [`Diagnostic`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// The config is accepted; `config check --strict` rejects it.
    Warning,
    /// `config check` rejects the config.
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// What a [`Diagnostic`] is about.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DiagnosticKind {
    /// A key the strict schema does not know; with the nearest known key, if any.
    UnknownKey {
        /// The closest known key.
        suggestion: Option<String>,
    },
    /// A switch or section of the wrong type.
    WrongType,
    /// A numeric field whose value is not a positive integer, of any type.
    NotPositiveInteger,
    /// A threshold raised to keep warning < critical < global.
    AutoRaised,
    /// A value replaced by its default at run time.
    Fallback,
    /// A key given twice in one object (the last one counts).
    DuplicateKey,
    /// A part of the file outside the block that loopguard cannot use.
    Ignored,
}

/// One problem found in a config file.
///
/// ```
/// use loopguard_core::{OpenClawConfig, Severity};
/// let loaded = OpenClawConfig::load_for_run(
///     "{ tools: { loopDetection: { enabled: true, historySize: 0 } } }",
/// )?;
/// let d = loaded.diagnostics.first().ok_or("no diagnostic")?;
/// assert_eq!(d.severity, Severity::Warning);
/// assert!(d.path.ends_with("historySize"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The kind of problem.
    pub kind: DiagnosticKind,
    /// Key path, e.g. `agents.list[0].tools.loopDetection.warningThreshold`.
    pub path: String,
    /// Where in the file.
    pub pos: Pos,
    /// A sentence for people.
    pub message: String,
}

impl Diagnostic {
    /// `true` for problems OpenClaw would refuse to start with: unknown keys, and wrong
    /// types of switches and sections. A numeric field that is not a positive integer (of
    /// any type) is not fatal: it falls back to its default at run time.
    pub fn is_fatal_at_runtime(&self) -> bool {
        matches!(
            self.kind,
            DiagnosticKind::UnknownKey { .. } | DiagnosticKind::WrongType
        )
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: line {}, column {}: {}: {}",
            self.severity, self.pos.line, self.pos.col, self.path, self.message
        )
    }
}

/// A config that was read, with everything worth telling about it.
///
/// ```
/// use loopguard_core::OpenClawConfig;
/// let loaded = OpenClawConfig::load_for_run("{ tools: { loopDetection: { enabled: true } } }")?;
/// assert!(loaded.diagnostics.is_empty());
/// assert!(loaded.config.policy_for(None).resolved.enabled);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    /// The usable config (invalid values dropped, so they fall back to defaults).
    pub config: OpenClawConfig,
    /// Errors and warnings in file order.
    pub diagnostics: Vec<Diagnostic>,
}

impl Loaded {
    /// `true` when any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }
}

/// A config that could not be read at all.
///
/// ```
/// use loopguard_core::{LoadError, OpenClawConfig, RunConfigError};
/// let Err(e) = OpenClawConfig::load_for_run("[1, 2]") else {
///     return Err("accepted".into());
/// };
/// assert!(matches!(e, RunConfigError::Load(LoadError::NotAnObject { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// Not JSON5.
    #[error("syntax error at line {}, column {}: {}", .0.pos.line, .0.pos.col, .0.message)]
    Syntax(#[from] SyntaxError),
    /// The document is not an object.
    #[error("line {}, column {}: an OpenClaw config must be an object, found {found}", .pos.line, .pos.col)]
    NotAnObject {
        /// Where the value starts.
        pos: Pos,
        /// What was found.
        found: &'static str,
    },
}

/// Why a config cannot run the engine ([`OpenClawConfig::load_for_run`]).
///
/// ```
/// use loopguard_core::{OpenClawConfig, RunConfigError};
/// let Err(e) = OpenClawConfig::load_for_run("{ tools: { loopDetection: { enabeld: true } } }") else {
///     return Err("accepted".into());
/// };
/// assert!(matches!(e, RunConfigError::Rejected(_)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RunConfigError {
    /// The file is not JSON5, or not an object.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// Problems OpenClaw refuses to start with (unknown keys, a non-boolean switch, a
    /// `detectors` that is not an object), in file order; never empty.
    #[error("{}", rejected(.0))]
    Rejected(Vec<Diagnostic>),
}

fn rejected(diagnostics: &[Diagnostic]) -> String {
    let mut out = String::from("OpenClaw would reject this config");
    if let Some(first) = diagnostics.first() {
        out.push_str(&format!(": {first}"));
    }
    if diagnostics.len() > 1 {
        out.push_str(&format!(" (and {} more)", diagnostics.len() - 1));
    }
    out
}

impl OpenClawConfig {
    /// Reads a config to run the engine with, as OpenClaw's resolver does at run time: the
    /// loader every command that runs the engine uses (replay, the hook, the live front
    /// ends), where [`OpenClawConfig::from_json5`] is the checker's view.
    ///
    /// A numeric field whose value is not a positive integer, of any type (`"5"`, `null`,
    /// `0`, `-1`, `2.5`, `true`), falls back to its default; thresholds out of order are
    /// raised (decisions.md item 3). Both come back as warnings naming the field, the value
    /// found and the value used, together with duplicate keys and ignored entries: the
    /// returned [`Loaded::diagnostics`] holds only [`Severity::Warning`]s. `config check`
    /// reports the same values as errors.
    ///
    /// # Errors
    ///
    /// [`RunConfigError::Load`] when the text is not JSON5 or not an object;
    /// [`RunConfigError::Rejected`] with every unknown key (with its suggestion) and
    /// wrong-typed switch or section, each with its line and key path.
    ///
    /// ```
    /// use loopguard_core::{OpenClawConfig, RunConfigError};
    /// let loaded = OpenClawConfig::load_for_run(
    ///     r#"{ tools: { loopDetection: { enabled: true, globalCircuitBreakerThreshold: "5", historySize: 0 } } }"#,
    /// )?;
    /// let policy = loaded.config.policy_for(None);
    /// assert_eq!(policy.resolved.global_circuit_breaker_threshold, 30.0);
    /// assert_eq!(policy.resolved.history_size, 30);
    /// assert_eq!(
    ///     loaded.diagnostics[0].message,
    ///     "\"5\" is not a positive integer, so the default 30 is used at run time"
    /// );
    ///
    /// let typo = OpenClawConfig::load_for_run("{ tools: { loopDetection: { warningThresold: 5 } } }");
    /// assert!(matches!(typo, Err(RunConfigError::Rejected(d)) if d[0].message.contains("warningThreshold")));
    /// # Ok::<(), RunConfigError>(())
    /// ```
    pub fn load_for_run(text: &str) -> Result<Loaded, RunConfigError> {
        let loaded = load(text)?;
        let (fatal, rest): (Vec<_>, Vec<_>) = loaded
            .diagnostics
            .into_iter()
            .partition(Diagnostic::is_fatal_at_runtime);
        if !fatal.is_empty() {
            return Err(RunConfigError::Rejected(fatal));
        }
        // A value that is not a positive integer has an error (for the checker) and a
        // fallback warning (for the run); the warning says what is used.
        let diagnostics = rest
            .into_iter()
            .filter(|d| d.severity == Severity::Warning)
            .collect();
        Ok(Loaded {
            config: loaded.config,
            diagnostics,
        })
    }
}

const BLOCK_KEYS: &[&str] = &[
    "enabled",
    "historySize",
    "warningThreshold",
    "unknownToolThreshold",
    "criticalThreshold",
    "globalCircuitBreakerThreshold",
    "detectors",
    "postCompactionGuard",
];
const DETECTOR_KEYS: &[&str] = &["genericRepeat", "knownPollNoProgress", "pingPong"];
const GUARD_KEYS: &[&str] = &["windowSize"];
const LOOPGUARD_KEYS: &[&str] = &[
    "profile",
    "detectors",
    "countVetoes",
    "onCritical",
    "budgets",
    "alerts",
];

/// Keys people have put in this block that are worth a specific explanation.
fn known_mistake(key: &str) -> Option<&'static str> {
    match key {
        "repeatThreshold" | "detectorCooldownMs" => {
            Some("it appeared in an old docs snippet (OpenClaw #33182) but was never accepted")
        }
        "turnLimit" | "maxConsecutiveErrorBatches" | "maxIdleRepeatCalls" => {
            Some("it belongs to newer OpenClaw run-loop guards, not to tools.loopDetection")
        }
        _ => None,
    }
}

/// A JSON5 node as a [`Value`](crate::value::Value) (the last of repeated keys wins, as in
/// `JSON.parse`).
fn node_value(node: &Node) -> crate::value::Value<'static> {
    use crate::value::{JsString, Object, Value};
    match &node.value {
        NodeValue::Null => Value::Null,
        NodeValue::Bool(b) => Value::Bool(*b),
        NodeValue::Number(n) => Value::Number(*n),
        NodeValue::String(s) => Value::String(JsString::from(s.clone())),
        NodeValue::Array(items) => Value::Array(items.iter().map(node_value).collect()),
        NodeValue::Object(entries) => Value::Object(Object::from_entries(
            entries
                .iter()
                .map(|e| (JsString::from(e.key.clone()), node_value(&e.value)))
                .collect(),
        )),
    }
}

pub(super) fn load(text: &str) -> Result<Loaded, LoadError> {
    let root = json5::parse(text)?;
    let NodeValue::Object(_) = root.value else {
        return Err(LoadError::NotAnObject {
            pos: root.pos,
            found: root.value.type_name(),
        });
    };
    let mut cx = Cx::default();
    let mut config = OpenClawConfig {
        raw: Some(std::sync::Arc::new(node_value(&root))),
        ..Default::default()
    };
    cx.check_duplicates(&root, "");

    let mut global_pos = Positions::default();
    if let Some(tools) = root.get("tools") {
        if let NodeValue::Object(_) = tools.value.value {
            cx.check_duplicates(&tools.value, "tools");
            if let Some(block) = tools.value.get("loopDetection") {
                config.loop_detection =
                    cx.block(&block.value, "tools.loopDetection", &mut global_pos);
            }
        } else {
            cx.ignored(tools, "tools", "is not an object");
        }
    }

    if let Some(block) = root.get("loopguard") {
        config.loopguard = cx.loopguard_block(&block.value, "loopguard", block.key_pos);
    }
    cx.misplaced(&root);

    let mut agent_pos = Vec::new();
    if let Some(agents) = root.get("agents") {
        match &agents.value.value {
            NodeValue::Object(_) => {
                if let Some(list) = agents.value.get("list") {
                    match &list.value.value {
                        NodeValue::Array(items) => {
                            for (i, item) in items.iter().enumerate() {
                                let path = format!("agents.list[{i}]");
                                if let Some((agent, pos)) = cx.agent(item, &path) {
                                    agent_pos.push((i, pos));
                                    config.agents.push(agent);
                                }
                            }
                        }
                        _ => cx.ignored(list, "agents.list", "is not an array"),
                    }
                }
            }
            _ => cx.ignored(agents, "agents", "is not an object"),
        }
    }

    // Threshold order, for the global block and for each agent whose block moves a threshold.
    cx.auto_raises(
        config.loop_detection.as_ref(),
        "tools.loopDetection",
        &global_pos,
        &Positions::default(),
    );
    for (agent, (i, pos)) in config.agents.iter().zip(&agent_pos) {
        let Some(block) = &agent.loop_detection else {
            continue;
        };
        if block.warning_threshold.is_none()
            && block.critical_threshold.is_none()
            && block.global_circuit_breaker_threshold.is_none()
        {
            continue;
        }
        let merged = LoopDetectionConfig::merge(config.loop_detection.as_ref(), Some(block));
        cx.auto_raises(
            merged.as_ref(),
            &format!("agents.list[{i}].tools.loopDetection"),
            pos,
            &global_pos,
        );
    }

    let mut diagnostics = cx.diagnostics;
    diagnostics.sort_by_key(|d| (d.pos.line, d.pos.col));
    Ok(Loaded {
        config,
        diagnostics,
    })
}

/// Where each numeric field of one block was written.
#[derive(Default)]
struct Positions {
    warning: Option<Pos>,
    critical: Option<Pos>,
    global: Option<Pos>,
    block: Option<Pos>,
}

#[derive(Default)]
struct Cx {
    diagnostics: Vec<Diagnostic>,
}

impl Cx {
    fn push(
        &mut self,
        severity: Severity,
        kind: DiagnosticKind,
        path: &str,
        pos: Pos,
        message: String,
    ) {
        self.diagnostics.push(Diagnostic {
            severity,
            kind,
            path: path.to_string(),
            pos,
            message,
        });
    }

    fn ignored(&mut self, entry: &Entry, path: &str, why: &str) {
        self.push(
            Severity::Warning,
            DiagnosticKind::Ignored,
            path,
            entry.key_pos,
            format!(
                "{why} ({}); loopguard ignores it",
                entry.value.value.type_name()
            ),
        );
    }

    /// The block, or one of its settings, written at the top level of the file, where
    /// neither OpenClaw nor loopguard reads it: detection would be off without a word.
    /// OpenClaw's strict schema rejects unknown top-level keys too, so this is an error.
    fn misplaced(&mut self, root: &Node) {
        let NodeValue::Object(entries) = &root.value else {
            return;
        };
        for e in entries {
            let hint = if e.key == "loopDetection" {
                "the loop-detection block belongs under `tools`: { tools: { loopDetection: { … } } }".to_string()
            } else if BLOCK_KEYS.contains(&e.key.as_str()) {
                format!(
                    "`{}` is a setting of the loop-detection block: {{ tools: {{ loopDetection: {{ {}: … }} }} }}",
                    e.key, e.key
                )
            } else {
                continue;
            };
            self.push(
                Severity::Error,
                DiagnosticKind::UnknownKey {
                    suggestion: Some(format!(
                        "tools.loopDetection{}",
                        if e.key == "loopDetection" {
                            String::new()
                        } else {
                            format!(".{}", e.key)
                        }
                    )),
                },
                &e.key,
                e.key_pos,
                format!("not read at the top level; {hint}"),
            );
        }
    }

    fn check_duplicates(&mut self, node: &Node, path: &str) {
        let NodeValue::Object(entries) = &node.value else {
            return;
        };
        // Every occurrence but the last is overridden; found from the end in one pass.
        let mut later = std::collections::HashSet::with_capacity(entries.len());
        let mut overridden: Vec<bool> = entries
            .iter()
            .rev()
            .map(|e| !later.insert(e.key.as_str()))
            .collect();
        overridden.reverse();
        for (e, _) in entries.iter().zip(overridden).filter(|(_, o)| *o) {
            let p = join(path, &e.key);
            self.push(
                Severity::Warning,
                DiagnosticKind::DuplicateKey,
                &p,
                e.key_pos,
                "is given more than once; the last value is used".into(),
            );
        }
    }

    fn unknown_keys(&mut self, node: &Node, path: &str, known: &[&str]) {
        let NodeValue::Object(entries) = &node.value else {
            return;
        };
        for e in entries {
            if known.contains(&e.key.as_str()) {
                continue;
            }
            let suggestion = suggest(&e.key, known);
            let mut message = "unknown key (the block is strict)".to_string();
            if let Some(s) = &suggestion {
                message.push_str(&format!("; did you mean `{s}`?"));
            } else {
                message.push_str(&format!("; known keys: {}", known.join(", ")));
            }
            if let Some(note) = known_mistake(&e.key) {
                message.push_str(&format!(" ({note})"));
            }
            self.push(
                Severity::Error,
                DiagnosticKind::UnknownKey { suggestion },
                &join(path, &e.key),
                e.key_pos,
                message,
            );
        }
    }

    fn expect_object<'n>(&mut self, node: &'n Node, path: &str, pos: Pos) -> Option<&'n Node> {
        match node.value {
            NodeValue::Object(_) => Some(node),
            _ => {
                self.push(
                    Severity::Error,
                    DiagnosticKind::WrongType,
                    path,
                    pos,
                    format!("expected an object, found {}", node.value.type_name()),
                );
                None
            }
        }
    }

    fn boolean(&mut self, node: &Node, path: &str, key: &str) -> Option<bool> {
        let e = node.get(key)?;
        match e.value.value {
            NodeValue::Bool(b) => Some(b),
            _ => {
                self.push(
                    Severity::Error,
                    DiagnosticKind::WrongType,
                    &join(path, key),
                    e.key_pos,
                    format!("expected a boolean, found {}", e.value.value.type_name()),
                );
                None
            }
        }
    }

    /// A positive integer. Anything else (a number that is not a positive integer, or a
    /// value of another type: `"5"`, `null`, `true`) is an error for `config check` and
    /// falls back to the default at run time, as OpenClaw's resolver does (decisions.md
    /// item 3); the fallback is reported as a warning naming the value found and the value
    /// used.
    fn positive_int(
        &mut self,
        node: &Node,
        path: &str,
        key: &str,
        default: f64,
        pos: &mut Option<Pos>,
    ) -> Option<f64> {
        let e = node.get(key)?;
        *pos = Some(e.key_pos);
        let path = join(path, key);
        let (kept, found) = match e.value.value {
            NodeValue::Number(n) if n.is_finite() && n.fract() == 0.0 && n > 0.0 => return Some(n),
            // Kept, not dropped: it still overrides the global value in a per-agent merge,
            // and resolution then falls back to the default, as in OpenClaw.
            NodeValue::Number(n) => (n, fmt_num(n)),
            // Any non-number overrides in a merge and then falls back to the default too.
            ref other => (f64::NAN, shown(other)),
        };
        let what = match e.value.value {
            NodeValue::Number(_) => found.clone(),
            ref other => format!("{} ({found})", other.type_name()),
        };
        self.push(
            Severity::Error,
            DiagnosticKind::NotPositiveInteger,
            &path,
            e.key_pos,
            format!("must be a positive integer, found {what}"),
        );
        self.push(
            Severity::Warning,
            DiagnosticKind::Fallback,
            &path,
            e.key_pos,
            format!(
                "{found} is not a positive integer, so the default {} is used at run time",
                fmt_num(default)
            ),
        );
        Some(kept)
    }

    fn block(
        &mut self,
        node: &Node,
        path: &str,
        pos: &mut Positions,
    ) -> Option<LoopDetectionConfig> {
        let node = self.expect_object(node, path, node.pos)?;
        pos.block = Some(node.pos);
        self.check_duplicates(node, path);
        self.unknown_keys(node, path, BLOCK_KEYS);
        let mut cfg = LoopDetectionConfig {
            enabled: self.boolean(node, path, "enabled"),
            history_size: self.positive_int(
                node,
                path,
                "historySize",
                DEFAULT_HISTORY_SIZE as f64,
                &mut None,
            ),
            warning_threshold: self.positive_int(
                node,
                path,
                "warningThreshold",
                DEFAULT_WARNING_THRESHOLD,
                &mut pos.warning,
            ),
            unknown_tool_threshold: self.positive_int(
                node,
                path,
                "unknownToolThreshold",
                DEFAULT_UNKNOWN_TOOL_THRESHOLD,
                &mut None,
            ),
            critical_threshold: self.positive_int(
                node,
                path,
                "criticalThreshold",
                DEFAULT_CRITICAL_THRESHOLD,
                &mut pos.critical,
            ),
            global_circuit_breaker_threshold: self.positive_int(
                node,
                path,
                "globalCircuitBreakerThreshold",
                DEFAULT_GLOBAL_CIRCUIT_BREAKER_THRESHOLD,
                &mut pos.global,
            ),
            ..Default::default()
        };
        if let Some(d) = node.get("detectors") {
            let p = format!("{path}.detectors");
            if let Some(dn) = self.expect_object(&d.value, &p, d.key_pos) {
                self.check_duplicates(dn, &p);
                self.unknown_keys(dn, &p, DETECTOR_KEYS);
                cfg.detectors = Some(DetectorSwitches {
                    generic_repeat: self.boolean(dn, &p, "genericRepeat"),
                    known_poll_no_progress: self.boolean(dn, &p, "knownPollNoProgress"),
                    ping_pong: self.boolean(dn, &p, "pingPong"),
                });
            }
        }
        if let Some(g) = node.get("postCompactionGuard") {
            let p = format!("{path}.postCompactionGuard");
            if let Some(gn) = self.expect_object(&g.value, &p, g.key_pos) {
                self.check_duplicates(gn, &p);
                self.unknown_keys(gn, &p, GUARD_KEYS);
                cfg.post_compaction_guard = Some(PostCompactionGuardConfig {
                    window_size: self.positive_int(
                        gn,
                        &p,
                        "windowSize",
                        f64::from(DEFAULT_WINDOW_SIZE),
                        &mut None,
                    ),
                });
            }
        }
        Some(cfg)
    }

    fn agent(&mut self, item: &Node, path: &str) -> Option<(AgentConfig, Positions)> {
        let NodeValue::Object(_) = item.value else {
            self.push(
                Severity::Warning,
                DiagnosticKind::Ignored,
                path,
                item.pos,
                format!(
                    "agent entry is {}, not an object; loopguard ignores it",
                    item.value.type_name()
                ),
            );
            return None;
        };
        let id = match item.get("id").map(|e| &e.value.value) {
            Some(NodeValue::String(s)) => s.clone(),
            other => {
                let found = other.map_or("nothing", NodeValue::type_name);
                self.push(
                    Severity::Warning,
                    DiagnosticKind::Ignored,
                    &format!("{path}.id"),
                    item.pos,
                    format!(
                        "an agent needs a string id, found {found}; loopguard ignores this entry"
                    ),
                );
                return None;
            }
        };
        let mut pos = Positions::default();
        let mut loop_detection = None;
        if let Some(tools) = item.get("tools") {
            match tools.value.value {
                NodeValue::Object(_) => {
                    if let Some(block) = tools.value.get("loopDetection") {
                        loop_detection = self.block(
                            &block.value,
                            &format!("{path}.tools.loopDetection"),
                            &mut pos,
                        );
                    }
                }
                _ => self.ignored(tools, &format!("{path}.tools"), "is not an object"),
            }
        }
        let loopguard = item
            .get("loopguard")
            .and_then(|b| self.loopguard_block(&b.value, &format!("{path}.loopguard"), b.key_pos));
        Some((
            AgentConfig {
                id,
                loop_detection,
                loopguard,
            },
            pos,
        ))
    }

    /// loopguard's own block (`loopguard`, `agents.list[].loopguard`): validated as
    /// strictly as OpenClaw's, so a typo is an error with a suggestion.
    fn loopguard_block(&mut self, node: &Node, path: &str, pos: Pos) -> Option<LoopguardConfig> {
        let node = self.expect_object(node, path, pos)?;
        self.check_duplicates(node, path);
        self.unknown_keys(node, path, LOOPGUARD_KEYS);
        let mut cfg = LoopguardConfig::default();
        if let Some(e) = node.get("profile") {
            let p = join(path, "profile");
            match &e.value.value {
                NodeValue::String(s) => match DetectorProfile::parse(s) {
                    Some(profile) => cfg.profile = Some(profile),
                    None => {
                        let suggestion = suggest(s, &["openclaw", "strict", "openclaw-2026.9.6"]);
                        let mut message = format!(
                            "unknown profile {s:?}; known profiles: \"openclaw\", \"strict\", \"openclaw-2026.9.6\""
                        );
                        if let Some(sg) = &suggestion {
                            message.push_str(&format!("; did you mean {sg:?}?"));
                        }
                        self.push(
                            Severity::Error,
                            DiagnosticKind::UnknownKey { suggestion },
                            &p,
                            e.key_pos,
                            message,
                        );
                    }
                },
                other => self.push(
                    Severity::Error,
                    DiagnosticKind::WrongType,
                    &p,
                    e.key_pos,
                    format!(
                        "expected \"openclaw\" or \"strict\", found {}",
                        other.type_name()
                    ),
                ),
            }
        }
        cfg.count_vetoes = self.boolean(node, path, "countVetoes");
        cfg.on_critical = self.on_critical(node, path);
        cfg.budgets = self.budgets(node, path);
        if let Some(a) = node.get("alerts") {
            cfg.alerts = self.alerts(&a.value, &join(path, "alerts"), a.key_pos);
        }
        if let Some(d) = node.get("detectors") {
            let p = join(path, "detectors");
            if let Some(dn) = self.expect_object(&d.value, &p, d.key_pos) {
                self.check_duplicates(dn, &p);
                self.unknown_keys(dn, &p, &EXTRA_DETECTOR_KEYS);
                for key in EXTRA_DETECTOR_KEYS {
                    let Some(e) = dn.get(key) else { continue };
                    let dp = join(&p, key);
                    let value = match &e.value.value {
                        NodeValue::Bool(b) => Some(ExtraDetectorConfig {
                            enabled: Some(*b),
                            ..Default::default()
                        }),
                        NodeValue::Object(_) => Some(self.extra_detector(&e.value, &dp, key)),
                        other => {
                            self.push(
                                Severity::Error,
                                DiagnosticKind::WrongType,
                                &dp,
                                e.key_pos,
                                format!(
                                    "expected a boolean or an object, found {}",
                                    other.type_name()
                                ),
                            );
                            None
                        }
                    };
                    if let Some(slot) = cfg.detector_mut(key) {
                        *slot = value;
                    }
                }
            }
        }
        Some(cfg)
    }

    /// `onCritical`: one of its three words; anything else is an error naming the field.
    fn on_critical(&mut self, node: &Node, path: &str) -> Option<OnCritical> {
        let e = node.get("onCritical")?;
        let p = join(path, "onCritical");
        let words: Vec<&str> = OnCritical::ALL.iter().map(|o| o.as_str()).collect();
        let known = words
            .iter()
            .map(|w| format!("{w:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        match &e.value.value {
            NodeValue::String(s) => {
                if let Some(o) = OnCritical::parse(s) {
                    return Some(o);
                }
                let suggestion = suggest(s, &words);
                let mut message = format!("unknown value {s:?}; known values: {known}");
                if let Some(sg) = &suggestion {
                    message.push_str(&format!("; did you mean {sg:?}?"));
                }
                self.push(
                    Severity::Error,
                    DiagnosticKind::UnknownKey { suggestion },
                    &p,
                    e.key_pos,
                    message,
                );
            }
            other => self.push(
                Severity::Error,
                DiagnosticKind::WrongType,
                &p,
                e.key_pos,
                format!("expected one of {known}, found {}", other.type_name()),
            ),
        }
        None
    }

    /// `budgets`: positive caps (integers but `costPerRun`), and `tools` mapping tool names
    /// to positive integers. A cap that is not one is an error naming it: there is no
    /// default to fall back to, and a budget silently dropped would let a run go unbounded.
    fn budgets(&mut self, node: &Node, path: &str) -> Option<Budgets> {
        let e = node.get("budgets")?;
        let p = join(path, "budgets");
        let bn = self.expect_object(&e.value, &p, e.key_pos)?;
        self.check_duplicates(bn, &p);
        self.unknown_keys(bn, &p, &BUDGET_KEYS);
        let mut b = Budgets {
            calls_per_run: self.cap(bn, &p, "callsPerRun", true).map(|n| n as u64),
            calls_per_session: self.cap(bn, &p, "callsPerSession", true).map(|n| n as u64),
            tokens_per_run: self.cap(bn, &p, "tokensPerRun", true).map(|n| n as u64),
            cost_per_run: self.cap(bn, &p, "costPerRun", false),
            ..Budgets::default()
        };
        if let Some(t) = bn.get("tools") {
            let tp = join(&p, "tools");
            if let Some(tn) = self.expect_object(&t.value, &tp, t.key_pos) {
                self.check_duplicates(tn, &tp);
                if let NodeValue::Object(entries) = &tn.value {
                    for te in entries {
                        if let Some(n) = self.cap(tn, &tp, &te.key, true) {
                            b.tools.insert(te.key.clone(), n as u64);
                        }
                    }
                }
            }
        }
        Some(b)
    }

    /// One cap of `budgets`: a positive number (an integer when `integer`).
    fn cap(&mut self, node: &Node, path: &str, key: &str, integer: bool) -> Option<f64> {
        let e = node.get(key)?;
        match e.value.value {
            NodeValue::Number(n)
                if n.is_finite() && n > 0.0 && (!integer || (n.fract() == 0.0 && n < 9.0e15)) =>
            {
                return Some(n)
            }
            _ => {}
        }
        let what = if integer {
            "a positive integer"
        } else {
            "a positive number"
        };
        self.push(
            Severity::Error,
            DiagnosticKind::WrongType,
            &join(path, key),
            e.key_pos,
            format!("must be {what}, found {}", shown(&e.value.value)),
        );
        None
    }

    /// `alerts`: an array of `{ url, format?, on? }`; a wrong item is an error naming it.
    fn alerts(&mut self, node: &Node, path: &str, pos: Pos) -> Option<Vec<AlertConfig>> {
        let NodeValue::Array(items) = &node.value else {
            self.push(
                Severity::Error,
                DiagnosticKind::WrongType,
                path,
                pos,
                format!(
                    "expected an array of {{ url, format, on }}, found {}",
                    node.value.type_name()
                ),
            );
            return None;
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let p = format!("{path}[{i}]");
            let Some(item) = self.expect_object(item, &p, item.pos) else {
                continue;
            };
            self.check_duplicates(item, &p);
            self.unknown_keys(item, &p, &["url", "format", "on"]);
            let mut alert = AlertConfig {
                format: "json".to_string(),
                ..AlertConfig::default()
            };
            // A wrong format is said, and the item's url still checked (both named).
            let mut bad_format = false;
            if let Some(e) = item.get("format") {
                match &e.value.value {
                    NodeValue::String(f) if ALERT_FORMATS.contains(&f.as_str()) => {
                        alert.format = f.clone()
                    }
                    other => {
                        self.push(
                            Severity::Error,
                            DiagnosticKind::WrongType,
                            &join(&p, "format"),
                            e.key_pos,
                            format!(
                                "expected one of \"json\", \"slack\", \"pagerduty\", \"desktop\", found {}",
                                shown(other)
                            ),
                        );
                        bad_format = true;
                    }
                }
            }
            // A desktop notification goes to this machine's notifier, not to a URL.
            let desktop = alert.format == "desktop";
            match item.get("url").map(|e| (&e.value.value, e.key_pos)) {
                Some((_, kp)) if desktop => {
                    self.push(
                        Severity::Error,
                        DiagnosticKind::WrongType,
                        &join(&p, "url"),
                        kp,
                        "a desktop notification takes no `url` (it is shown on this machine)"
                            .to_string(),
                    );
                    continue;
                }
                None if desktop => {}
                Some((NodeValue::String(u), _))
                    if u.starts_with("http://") || u.starts_with("https://") =>
                {
                    alert.url = u.clone();
                }
                Some((other, kp)) => {
                    self.push(
                        Severity::Error,
                        DiagnosticKind::WrongType,
                        &join(&p, "url"),
                        kp,
                        format!(
                            "expected an http:// or https:// URL, found {}",
                            shown(other)
                        ),
                    );
                    continue;
                }
                None => {
                    self.push(
                        Severity::Error,
                        DiagnosticKind::WrongType,
                        &join(&p, "url"),
                        item.pos,
                        "missing: every alert but a `format: \"desktop\"` one needs the `url` it is posted to".to_string(),
                    );
                    continue;
                }
            }
            if bad_format {
                continue;
            }
            if let Some(e) = item.get("on") {
                let words = match &e.value.value {
                    NodeValue::Array(ws) => ws
                        .iter()
                        .map(|w| match &w.value {
                            NodeValue::String(s) if ALERT_EVENTS.contains(&s.as_str()) => {
                                Ok(s.clone())
                            }
                            other => Err(shown(other)),
                        })
                        .collect::<Result<Vec<_>, _>>(),
                    other => Err(shown(other)),
                };
                match words {
                    Ok(ws) => alert.on = ws,
                    Err(found) => {
                        self.push(Severity::Error, DiagnosticKind::WrongType, &join(&p, "on"), e.key_pos,
                            format!("expected an array of \"block\", \"end-run\", \"budget\"; found {found}"));
                        continue;
                    }
                }
            }
            out.push(alert);
        }
        Some(out)
    }

    fn extra_detector(&mut self, node: &Node, path: &str, key: &str) -> ExtraDetectorConfig {
        self.check_duplicates(node, path);
        let numbers = detector_number_keys(key);
        let mut known = vec!["enabled"];
        known.extend_from_slice(numbers);
        self.unknown_keys(node, path, &known);
        let mut cfg = ExtraDetectorConfig {
            enabled: self.boolean(node, path, "enabled"),
            ..Default::default()
        };
        for &k in numbers {
            if k == "similarity" {
                if let Some(e) = node.get(k) {
                    match &e.value.value {
                        NodeValue::Number(n) if *n > 0.0 && *n <= 1.0 => cfg.similarity = Some(*n),
                        other => self.push(
                            Severity::Error,
                            DiagnosticKind::WrongType,
                            &join(path, k),
                            e.key_pos,
                            format!(
                                "expected a number above 0 and at most 1, found {}",
                                match other {
                                    NodeValue::Number(n) => n.to_string(),
                                    other => other.type_name().to_string(),
                                }
                            ),
                        ),
                    }
                }
                continue;
            }
            // `blockAt: 0` is allowed: it makes a detector warn-only.
            if k == "blockAt" {
                if let Some(e) = node.get(k) {
                    if matches!(e.value.value, NodeValue::Number(n) if n == 0.0) {
                        cfg.block_at = Some(0.0);
                        continue;
                    }
                }
            }
            let v = self.positive_int(node, path, k, extra_default(key, k), &mut None);
            match k {
                "warnAt" => cfg.warn_at = v,
                "blockAt" => cfg.block_at = v,
                "window" => cfg.window = v,
                _ => cfg.max_variants = v,
            }
        }
        cfg
    }

    /// Reports every raise the resolution of `block` performs.
    fn auto_raises(
        &mut self,
        block: Option<&LoopDetectionConfig>,
        path: &str,
        own: &Positions,
        inherited: &Positions,
    ) {
        let Some(block) = block else { return };
        // The resolver's own arithmetic: the loader only reports the raises it made.
        let t = block.thresholds();
        let at = |p: Option<Pos>, q: Option<Pos>| p.or(q);
        let (w, c) = (t.warning, t.critical);
        if let Some(c0) = t.critical_raised_from {
            let pos = at(own.critical, own.warning)
                .or(at(inherited.critical, inherited.warning))
                .or(own.block)
                .unwrap_or_default();
            self.push(
                Severity::Warning,
                DiagnosticKind::AutoRaised,
                &format!("{path}.criticalThreshold"),
                pos,
                format!(
                    "criticalThreshold {} is not above warningThreshold {}; it is raised to {}",
                    fmt_num(c0),
                    fmt_num(w),
                    fmt_num(c)
                ),
            );
        }
        if let Some(g0) = t.global_raised_from {
            let g = t.global;
            let pos = at(own.global, own.critical)
                .or(own.warning)
                .or(at(inherited.global, inherited.critical))
                .or(own.block)
                .unwrap_or_default();
            self.push(
                Severity::Warning,
                DiagnosticKind::AutoRaised,
                &format!("{path}.globalCircuitBreakerThreshold"),
                pos,
                format!(
                    "globalCircuitBreakerThreshold {} is not above criticalThreshold {}; it is raised to {}",
                    fmt_num(g0),
                    fmt_num(c),
                    fmt_num(g)
                ),
            );
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn fmt_num(n: f64) -> String {
    crate::canonical::format_js_number(n)
}

/// A value as it was written, for messages: JSON for scalars (a long string cut short),
/// the type for arrays and objects.
fn shown(v: &NodeValue) -> String {
    match v {
        NodeValue::Null => "null".into(),
        NodeValue::Bool(b) => b.to_string(),
        NodeValue::Number(n) => fmt_num(*n),
        NodeValue::String(s) => {
            const MAX: usize = 40;
            let cut = match s.char_indices().nth(MAX) {
                Some((i, _)) => &s[..i],
                None => s,
            };
            let mut out = Vec::new();
            crate::canonical::write_json_string(&mut out, &crate::value::JsString::from(cut));
            let mut out = String::from_utf8_lossy(&out).into_owned();
            if cut.len() < s.len() {
                out.insert(out.len() - 1, '…');
            }
            out
        }
        NodeValue::Array(_) | NodeValue::Object(_) => v.type_name().into(),
    }
}

/// The known key closest to `key`, if it is close enough to be a likely typo.
fn suggest(key: &str, known: &[&str]) -> Option<String> {
    let lower = key.to_lowercase();
    known
        .iter()
        .map(|k| (strsim::levenshtein(&lower, &k.to_lowercase()), *k))
        .filter(|(d, k)| *d <= (k.len() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.to_string())
}

#[cfg(test)]
mod tests {
    use super::super::Policy;
    use super::*;

    fn diags(text: &str) -> Vec<(Severity, String, u32, String)> {
        load(text)
            .unwrap()
            .diagnostics
            .into_iter()
            .map(|d| (d.severity, d.path, d.pos.line, d.message))
            .collect()
    }

    /// `loopguard.alerts`: items read with their defaults; each wrong field is an error
    /// naming the item and the field, and the item is left out.
    #[test]
    fn alerts_are_read_and_wrong_items_named() {
        let l = load(r#"{ loopguard: { alerts: [ { url: "https://h/x", format: "slack", on: ["block"] }, { url: "http://h/y" } ] } }"#).unwrap();
        assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
        let alerts = l.config.loopguard.and_then(|g| g.alerts).unwrap();
        assert_eq!(
            alerts,
            [
                AlertConfig {
                    url: "https://h/x".into(),
                    format: "slack".into(),
                    on: vec!["block".into()]
                },
                AlertConfig {
                    url: "http://h/y".into(),
                    format: "json".into(),
                    on: vec![]
                },
            ]
        );
        let d = diags(
            r#"{ loopguard: { alerts: [ { url: "ftp://x" }, { url: "https://h", format: "teams" }, { url: "https://h", on: ["stop"] }, { format: "json" }, { url: "https://h", extra: 1 } ] } }"#,
        );
        let paths: Vec<&str> = d.iter().map(|x| x.1.as_str()).collect();
        assert_eq!(
            paths,
            [
                "loopguard.alerts[0].url",
                "loopguard.alerts[1].format",
                "loopguard.alerts[2].on",
                "loopguard.alerts[3].url",
                "loopguard.alerts[4].extra",
            ],
            "{d:?}"
        );
        assert!(d.iter().all(|x| x.0 == Severity::Error));
        assert!(diags(r#"{ loopguard: { alerts: "https://h" } }"#)[0]
            .3
            .contains("expected an array"));
    }

    /// `format: "desktop"`: a notification on this machine, without a URL (one given is an
    /// error, as a mistake about where the alert goes).
    #[test]
    fn a_desktop_alert_takes_no_url() {
        let l = load(r#"{ loopguard: { alerts: [ { format: "desktop", on: ["end-run"] } ] } }"#)
            .unwrap();
        assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
        assert_eq!(
            l.config.loopguard.and_then(|g| g.alerts).unwrap(),
            [AlertConfig {
                url: String::new(),
                format: "desktop".into(),
                on: vec!["end-run".into()]
            }]
        );
        let d = diags(r#"{ loopguard: { alerts: [ { format: "desktop", url: "https://h" } ] } }"#);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].1, "loopguard.alerts[0].url");
        assert!(d[0].3.contains("takes no `url`"), "{d:?}");
    }

    #[test]
    fn a_block_at_the_top_level_is_an_error_with_a_hint() {
        let d = diags("{ loopDetection: { enabled: true, warningThreshold: 3 } }");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].1, "loopDetection");
        assert!(d[0].3.contains("{ tools: { loopDetection:"), "{d:?}");
        let Err(RunConfigError::Rejected(r)) =
            OpenClawConfig::load_for_run("{ enabled: true, warningThreshold: 3 }")
        else {
            panic!("a top-level setting of the block must be rejected");
        };
        assert_eq!(r.len(), 2, "{r:?}");
        assert!(
            r[1].message.contains("`warningThreshold` is a setting"),
            "{r:?}"
        );
        // The block where it belongs, and other top-level keys, say nothing.
        assert!(diags("{ models: {}, tools: { loopDetection: { enabled: true } } }").is_empty());
    }

    #[test]
    fn defaults_from_an_empty_file() {
        let l = load("{}").unwrap();
        assert!(l.diagnostics.is_empty());
        // The file as read is kept (for the openclaw-2026.9.6 profile); nothing else is set.
        assert_eq!(
            l.config.raw.as_deref(),
            Some(&crate::value::Value::empty_object())
        );
        let config = OpenClawConfig {
            raw: None,
            ..l.config
        };
        assert_eq!(config, OpenClawConfig::default());
    }

    #[test]
    fn unknown_key_with_suggestion_and_line() {
        let d = diags("{\n tools: {\n  loopDetection: {\n   warningThresold: 5,\n   repeatThreshold: 3,\n  },\n },\n}");
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].0, Severity::Error);
        assert_eq!(d[0].1, "tools.loopDetection.warningThresold");
        assert_eq!(d[0].2, 4);
        assert!(
            d[0].3.contains("did you mean `warningThreshold`"),
            "{}",
            d[0].3
        );
        assert!(d[1].3.contains("#33182"), "{}", d[1].3);
    }

    #[test]
    fn wrong_types_and_non_positive_numbers() {
        let d = diags(
            r#"{"tools":{"loopDetection":{"enabled":"yes","historySize":0,"criticalThreshold":2.5,"detectors":{"pingPong":1},"postCompactionGuard":{"windowSize":-1}}}}"#,
        );
        let paths: Vec<_> = d.iter().map(|x| (x.0, x.1.as_str())).collect();
        assert!(paths.contains(&(Severity::Error, "tools.loopDetection.enabled")));
        assert!(paths.contains(&(Severity::Error, "tools.loopDetection.historySize")));
        assert!(paths.contains(&(Severity::Warning, "tools.loopDetection.historySize")));
        assert!(paths.contains(&(Severity::Error, "tools.loopDetection.criticalThreshold")));
        assert!(paths.contains(&(Severity::Error, "tools.loopDetection.detectors.pingPong")));
        assert!(paths.contains(&(
            Severity::Error,
            "tools.loopDetection.postCompactionGuard.windowSize"
        )));
        let l = load(r#"{"tools":{"loopDetection":{"historySize":0}}}"#).unwrap();
        assert_eq!(l.config.policy_for(None).resolved.history_size, 30);
    }

    #[test]
    fn every_overridden_duplicate_is_reported_once() {
        let d = diags("{tools:{loopDetection:{\nenabled: true,\nhistorySize: 40,\nenabled: false,\nenabled: true,\n}}}");
        let dup: Vec<_> = d
            .iter()
            .filter(|x| x.3.contains("more than once"))
            .map(|x| (x.1.as_str(), x.2))
            .collect();
        assert_eq!(
            dup,
            [
                ("tools.loopDetection.enabled", 2),
                ("tools.loopDetection.enabled", 4)
            ]
        );
    }

    #[test]
    fn auto_raise_is_a_warning_naming_the_field_and_value() {
        let d = diags("{tools:{loopDetection:{\nwarningThreshold: 30,\n}}}");
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d.iter().all(|x| x.0 == Severity::Warning));
        assert_eq!(d[0].1, "tools.loopDetection.criticalThreshold");
        assert!(d[0].3.contains("raised to 31"));
        assert_eq!(d[1].1, "tools.loopDetection.globalCircuitBreakerThreshold");
        assert!(d[1].3.contains("raised to 32"));
        assert_eq!(d[0].2, 2);
    }

    #[test]
    fn agent_blocks_are_validated_and_merged() {
        let text = r#"{
          tools: { loopDetection: { enabled: true, detectors: { pingPong: false } } },
          agents: { list: [
            { id: "Alpha", tools: { loopDetection: { warningThreshold: 25, detectors: { genericRepeat: false } } } },
            { id: "beta" },
            { name: "no id" },
          ] },
        }"#;
        let l = load(text).unwrap();
        let d: Vec<_> = l.diagnostics.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(
            d,
            [
                "agents.list[0].tools.loopDetection.criticalThreshold",
                "agents.list[2].id"
            ]
        );
        let p = l.config.policy_for(Some("ALPHA "));
        assert_eq!(p.resolved.critical_threshold, 26.0);
        assert!(!p.resolved.generic_repeat && !p.resolved.ping_pong);
        assert!(l.config.policy_for(Some("beta")).resolved.generic_repeat);
    }

    #[test]
    fn on_critical_and_budgets_are_validated_naming_the_field() {
        let text = r#"{
          loopguard: { onCritical: "ends-run", budgets: { callsPerRun: 0, costPerRun: 2.5,
            tokensPerRun: 1.5, tools: { web_fetch: "30", read: 40 }, perTool: {} } },
          agents: { list: [ { id: "ci", loopguard: { onCritical: true } } ] },
        }"#;
        let d = diags(text);
        let got: Vec<(&str, &str)> = d.iter().map(|d| (d.1.as_str(), d.3.as_str())).collect();
        assert_eq!(
            got,
            [
                (
                    "loopguard.onCritical",
                    "unknown value \"ends-run\"; known values: \"block\", \"ask\", \"end-run\"; did you mean \"end-run\"?"
                ),
                ("loopguard.budgets.callsPerRun", "must be a positive integer, found 0"),
                ("loopguard.budgets.tokensPerRun", "must be a positive integer, found 1.5"),
                ("loopguard.budgets.tools.web_fetch", "must be a positive integer, found \"30\""),
                (
                    "loopguard.budgets.perTool",
                    "unknown key (the block is strict); known keys: callsPerRun, callsPerSession, tokensPerRun, costPerRun, tools"
                ),
                (
                    "agents.list[0].loopguard.onCritical",
                    "expected one of \"block\", \"ask\", \"end-run\", found a boolean"
                ),
            ]
        );
        assert!(d.iter().all(|d| d.0 == Severity::Error));
        let l = load(text).unwrap();
        let e = l.config.policy_for(None).escalation;
        assert_eq!(e.on_critical, OnCritical::Block);
        assert_eq!(e.budgets.cost_per_run, Some(2.5));
        assert_eq!(e.budgets.tools.get("read"), Some(&40));
        assert_eq!(e.budgets.calls_per_run, None);
        assert!(super::super::Policy::from_block(None)
            .escalation
            .is_default());
    }

    #[test]
    fn invalid_agent_numbers_override_then_fall_back_to_defaults() {
        let text = r#"{"tools":{"loopDetection":{"enabled":true,"warningThreshold":2,"unknownToolThreshold":1,"postCompactionGuard":{"windowSize":5}}},
          "agents":{"list":[{"id":"a","tools":{"loopDetection":{"warningThreshold":2.5,"unknownToolThreshold":0,"postCompactionGuard":{"windowSize":0}}}}]}}"#;
        let l = load(text).unwrap();
        let p = l.config.policy_for(Some("a"));
        assert_eq!(p.resolved.warning_threshold, 10.0);
        assert_eq!(p.resolved.unknown_tool_threshold, 10.0);
        assert_eq!(p.guard.window_size, 3);
        let g = l.config.policy_for(None);
        assert_eq!(
            (g.resolved.warning_threshold, g.guard.window_size),
            (2.0, 5)
        );
    }

    /// decisions.md item 3: at run time every numeric field falls back to
    /// its default whatever the wrong value is, with a warning naming the field, the value
    /// found and the value used; the checker's view of the same text is an error.
    #[test]
    fn run_time_fallback_for_every_numeric_field_and_every_wrong_value() {
        type Field = (&'static str, &'static str, fn(&Policy) -> f64);
        let fields: [Field; 6] = [
            ("historySize", "30", |p| p.resolved.history_size as f64),
            ("warningThreshold", "10", |p| p.resolved.warning_threshold),
            ("criticalThreshold", "20", |p| p.resolved.critical_threshold),
            ("unknownToolThreshold", "10", |p| {
                p.resolved.unknown_tool_threshold
            }),
            ("globalCircuitBreakerThreshold", "30", |p| {
                p.resolved.global_circuit_breaker_threshold
            }),
            ("postCompactionGuard.windowSize", "3", |p| {
                f64::from(p.guard.window_size)
            }),
        ];
        let values = [
            (r#""5""#, r#""5""#),
            ("null", "null"),
            ("0", "0"),
            ("-1", "-1"),
            ("2.5", "2.5"),
            ("true", "true"),
            ("[5]", "an array"),
            ("{}", "an object"),
            ("Infinity", "Infinity"),
        ];
        for (field, default, used) in fields {
            for (text, found) in values {
                let body = match field.split_once('.') {
                    Some((outer, inner)) => format!("{outer}: {{ {inner}: {text} }}"),
                    None => format!("{field}: {text}"),
                };
                let file = format!("{{\n tools: {{\n  loopDetection: {{\n   enabled: true,\n   {body},\n  }},\n }},\n}}");
                let path = format!("tools.loopDetection.{field}");
                let run = OpenClawConfig::load_for_run(&file)
                    .unwrap_or_else(|e| panic!("{field} = {text}: {e}"));
                assert_eq!(
                    run.diagnostics.len(),
                    1,
                    "{field} = {text}: {:?}",
                    run.diagnostics
                );
                let d = &run.diagnostics[0];
                assert_eq!(
                    (d.severity, &d.kind, d.path.as_str(), d.pos.line),
                    (
                        Severity::Warning,
                        &DiagnosticKind::Fallback,
                        path.as_str(),
                        5
                    )
                );
                assert_eq!(
                    d.message,
                    format!("{found} is not a positive integer, so the default {default} is used at run time")
                );
                let policy = run.config.policy_for(None);
                assert_eq!(
                    used(&policy),
                    default.parse::<f64>().unwrap(),
                    "{field} = {text}"
                );
                // `config check` sees an error for the same value.
                let checked = load(&file).unwrap();
                assert!(checked.has_errors(), "{field} = {text}");
                assert!(checked
                    .diagnostics
                    .iter()
                    .any(|d| d.severity == Severity::Error
                        && d.kind == DiagnosticKind::NotPositiveInteger
                        && d.path == path));
            }
        }
    }

    /// A per-agent value of the wrong type overrides the global one and falls back to the
    /// default, not to the global value (OpenClaw merges first, then resolves).
    #[test]
    fn run_time_fallback_in_an_agent_block() {
        let run = OpenClawConfig::load_for_run(
            r#"{tools:{loopDetection:{enabled:true,warningThreshold:4}},agents:{list:[{id:"a",tools:{loopDetection:{warningThreshold:"6"}}}]}}"#,
        )
        .unwrap();
        assert_eq!(
            run.config.policy_for(Some("a")).resolved.warning_threshold,
            10.0
        );
        assert_eq!(run.config.policy_for(None).resolved.warning_threshold, 4.0);
        let paths: Vec<_> = run.diagnostics.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(
            paths,
            ["agents.list[0].tools.loopDetection.warningThreshold"]
        );
    }

    /// Thresholds raised at run time are reported with the value the resolver uses.
    #[test]
    fn run_time_raises_are_the_resolvers() {
        let run = OpenClawConfig::load_for_run(
            "{tools:{loopDetection:{warningThreshold: 40, globalCircuitBreakerThreshold: null}}}",
        )
        .unwrap();
        let r = run.config.policy_for(None).resolved;
        let msgs: Vec<_> = run.diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            msgs,
            [
                "criticalThreshold 20 is not above warningThreshold 40; it is raised to 41",
                "null is not a positive integer, so the default 30 is used at run time",
                "globalCircuitBreakerThreshold 30 is not above criticalThreshold 41; it is raised to 42",
            ]
        );
        assert_eq!(
            (r.critical_threshold, r.global_circuit_breaker_threshold),
            (41.0, 42.0)
        );
    }

    /// Unknown keys, wrong-typed switches and files that are not JSON5 stay errors at run
    /// time, with the line, the key path and the suggestion.
    #[test]
    fn run_time_errors_stay_errors() {
        let e = OpenClawConfig::load_for_run(
            "{\n tools: { loopDetection: {\n  warningThresold: 5,\n  enabled: \"yes\",\n  historySize: \"x\",\n } },\n}",
        )
        .unwrap_err();
        let RunConfigError::Rejected(d) = &e else {
            panic!("{e:?}")
        };
        let got: Vec<_> = d.iter().map(|d| (d.path.as_str(), d.pos.line)).collect();
        assert_eq!(
            got,
            [
                ("tools.loopDetection.warningThresold", 3),
                ("tools.loopDetection.enabled", 4)
            ]
        );
        assert!(
            e.to_string().starts_with(
                "OpenClaw would reject this config: error: line 3, column 3: tools.loopDetection.warningThresold:"
            ) && e.to_string().contains("did you mean `warningThreshold`")
                && e.to_string().ends_with("(and 1 more)"),
            "{e}"
        );
        assert!(matches!(
            OpenClawConfig::load_for_run("{ tools: }"),
            Err(RunConfigError::Load(LoadError::Syntax(_)))
        ));
    }

    #[test]
    fn syntax_errors_and_non_objects() {
        assert!(matches!(load("{ tools: }"), Err(LoadError::Syntax(_))));
        assert!(matches!(load("[1]"), Err(LoadError::NotAnObject { .. })));
    }
}
