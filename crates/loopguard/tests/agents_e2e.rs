//! End to end with the real agent programs from npm (installed by scripts/setup-agents.sh
//! into target/agents): Codex 0.171.0, Gemini CLI 0.61.0, Qwen Code 0.24.4, GitHub Copilot
//! CLI 1.0.102 and Factory's Droid 0.225.2, each driven by a scripted model server on
//! 127.0.0.1 that keeps asking for the same failing shell command, with loopguard's hook
//! installed by `loopguard hook install AGENT` into the agent's own settings under a
//! temporary HOME. Everything runs offline: the agents talk only to the scripted server
//! (Copilot CLI and Droid through their custom-provider settings, without an account).
//! Cursor's CLI and Kiro CLI cannot: each is installed by its vendor's download script and
//! runs its model on the vendor's service (docs/agents/cursor.md, docs/agents/kiro.md).
//!
//! For each agent, with the default profile: the command runs 20 times; the model is sent
//! loopguard's warning with the result of call 11, and the block (the detection message
//! instead of a result) from call 21 on.
//!
//! With the strict profile (`.loopguard.json5` in the project), the loop is blocked early
//! and the next identical call ends the run (`second_critical_abort`). What that does
//! depends on what the agent lets a hook do:
//! - Gemini CLI stops: `BeforeTool` answered with `continue: false` ends its agent loop;
//!   the model is never asked again and the process exits by itself.
//! - Droid stops the same way, on `PreToolUse`'s `continue: false` beside the deny.
//! - Qwen Code stops: a `PreToolUse` deny wins over `continue: false` in Qwen Code 0.24,
//!   so the call is denied; the empty-prompt `UserPromptSubmit` Qwen Code fires before it
//!   sends the tool results back is answered with `continue: false`, which ends the turn
//!   before the model is asked again.
//! - Codex and Copilot CLI cannot be stopped by a hook in the middle of a turn: Codex 0.171
//!   rejects `continue: false` on `PreToolUse` as invalid (and would then run the call), on
//!   `PostToolUse` it only replaces the tool's output, and no other event fires between
//!   tool calls; Copilot CLI's hook answers have no stop field at all. The best they allow
//!   is what the tests check: every later call of the ended run is denied with the stop
//!   reason, so the command never runs again, and the agent exits when the model gives up.
//!
//! Each agent has a small wire description (`agent_e2e::Cli`, shared with the telemetry tests
//! of otel.rs): where its tool results are in a request, how the scripted model asks for the
//! call, its settings and command line. The conversations ([`run_loop`]) and the checks are
//! shared.

mod agent_e2e;

use std::time::Duration;

use agent_e2e::{
    chat_answer, codex_config, codex_item, codex_sse, run_with_timeout, runs, Cli, Finished,
    ModelServer, Request, Response, Trial, CALLS,
};
use serde_json::json;

/// The bound on one agent run (the machine is loaded; a run takes well under a minute).
const LIMIT: Duration = Duration::from_secs(600);
/// The project config that selects the strict profile.
const STRICT: &str =
    r#"{ tools: { loopDetection: { enabled: true } }, loopguard: { profile: "strict" } }"#;

/// What a conversation with the scripted model did.
struct Conversation {
    /// The tool results of every turn request, in the order the server received them.
    turns: Vec<Vec<String>>,
    /// Each turn request's whole body, with how many results it carried.
    bodies: Vec<(usize, String)>,
    /// How many times the command ran.
    runs: usize,
    /// Requests the server received in the second after the agent's process ended (none
    /// is expected: nothing of the agent is left asking the model).
    late: usize,
    finished: Finished,
    /// The run's HOME, project and state, kept until the checks are done.
    _trial: Trial,
}

impl Conversation {
    /// The most tool results a turn carried (the last turn the model was asked for).
    fn last(&self) -> &[String] {
        self.turns
            .iter()
            .max_by_key(|t| t.len())
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The number of results of the first turn request containing `needle`.
    fn first_turn_with(&self, needle: &str) -> Option<usize> {
        self.bodies
            .iter()
            .find(|(_, b)| b.contains(needle))
            .map(|(k, _)| *k)
    }

    /// The end of the agent's output, for failure messages.
    fn tail(&self) -> String {
        let tail = |b: &[u8]| {
            let s = String::from_utf8_lossy(b);
            let mut from = s.len().saturating_sub(2500);
            while !s.is_char_boundary(from) {
                from += 1;
            }
            s[from..].to_string()
        };
        format!(
            "exit {:?} (killed: {}), {} turns\nstdout: {}\nstderr: {}",
            self.finished.output.status.code(),
            self.finished.killed,
            self.turns.len(),
            tail(&self.finished.output.stdout),
            tail(&self.finished.output.stderr)
        )
    }
}

/// Runs `cli` against the looping model with loopguard installed into `settings` (a file
/// of the agent's settings directory) and, when given, `config` as the project's
/// `.loopguard.json5`.
fn run_loop(cli: Cli, settings: &str, config: Option<&str>) -> Conversation {
    let trial = Trial::new();
    let command = cli.command(&trial.counter);
    let server = ModelServer::start(move |req: &Request| cli.answer(req, &command));
    cli.configure(&trial.home, server.port);
    if let Some(c) = config {
        std::fs::write(trial.work.join(".loopguard.json5"), c).unwrap();
    }
    trial.install(cli, settings);
    let finished = run_with_timeout(cli.cmd(&trial, server.port), LIMIT);
    let at_exit = server.requests().len();
    std::thread::sleep(Duration::from_secs(1));
    let late = server.requests().len() - at_exit;
    let requests: Vec<Request> = server
        .requests()
        .into_iter()
        .filter(|r| cli.is_turn(r))
        .collect();
    Conversation {
        turns: requests.iter().map(|r| cli.results(&r.body)).collect(),
        bodies: requests
            .iter()
            .map(|r| (cli.results(&r.body).len(), r.body.to_string()))
            .collect(),
        runs: runs(&trial.counter),
        late,
        finished,
        _trial: trial,
    }
}

/// The default profile: the command runs 20 times, the warning reaches the model with
/// the result of call 11, every call from 21 on is blocked.
fn assert_warned_then_blocked(cli: Cli, c: &Conversation) {
    assert!(
        c.turns.iter().any(|t| t.len() == CALLS),
        "{cli:?} did not finish the scripted conversation: {}",
        c.tail()
    );
    assert!(!c.finished.killed, "{}", c.tail());
    assert_eq!(c.late, 0, "requests after the agent exited: {}", c.tail());
    assert_eq!(c.runs, 20, "{}", c.tail());
    assert_eq!(c.first_turn_with("loopguard: WARNING"), Some(11));
    let last = c.last();
    for (i, o) in last.iter().enumerate() {
        let blocked = o.contains(cli.blocked());
        assert_eq!(blocked, i + 1 > 20, "call {}: {o}", i + 1);
    }
    if matches!(cli, Cli::Gemini | Cli::Qwen) {
        // Gemini CLI and Qwen Code show hook context only after a call, in its result: the
        // warning came with the result of call 11 (AfterTool / PostToolUseFailure), not
        // before it. (Droid, which also shows it only after the call, adds it as a message
        // of its own beside the result.)
        assert!(last[10].contains("loopguard: WARNING"), "{}", last[10]);
    }
}

#[test]
fn codex_loop_is_warned_then_blocked() {
    assert_warned_then_blocked(Cli::Codex, &run_loop(Cli::Codex, "hooks.json", None));
}

/// The same, with the hooks installed as `[[hooks.EVENT]]` tables of Codex's config.toml.
#[test]
fn codex_loop_is_warned_then_blocked_with_config_toml_hooks() {
    assert_warned_then_blocked(Cli::Codex, &run_loop(Cli::Codex, "config.toml", None));
}

#[test]
fn gemini_loop_is_warned_then_blocked() {
    assert_warned_then_blocked(Cli::Gemini, &run_loop(Cli::Gemini, "settings.json", None));
}

#[test]
fn qwen_loop_is_warned_then_blocked() {
    assert_warned_then_blocked(Cli::Qwen, &run_loop(Cli::Qwen, "settings.json", None));
}

#[test]
fn copilot_loop_is_warned_then_blocked() {
    assert_warned_then_blocked(
        Cli::Copilot,
        &run_loop(Cli::Copilot, "hooks/loopguard.json", None),
    );
}

#[test]
fn factory_loop_is_warned_then_blocked() {
    assert_warned_then_blocked(Cli::Factory, &run_loop(Cli::Factory, "settings.json", None));
}

/// Copilot CLI reports a tool that failed (here `view` of a missing file) only through
/// `postToolUseFailure` (its `postToolUse` follows successes): with that event installed,
/// the failures are outcomes, and the same failing call is denied from call 21.
#[test]
fn copilot_failing_tool_loop_is_blocked() {
    let trial = Trial::new();
    let path = trial.work.join("missing.rs").display().to_string();
    let server = ModelServer::start(move |req: &Request| {
        let k = Cli::Copilot.results(&req.body).len();
        let call =
            (Cli::Copilot.is_turn(req) && k < CALLS).then(|| (k, "view", json!({"path": path})));
        chat_answer(req, call)
    });
    trial.install(Cli::Copilot, "hooks/loopguard.json");
    let finished = run_with_timeout(Cli::Copilot.cmd(&trial, server.port), LIMIT);
    assert!(!finished.killed, "{:?}", finished.output);
    let last = server
        .requests()
        .iter()
        .filter(|r| Cli::Copilot.is_turn(r))
        .map(|r| Cli::Copilot.results(&r.body))
        .max_by_key(Vec::len)
        .unwrap_or_default();
    assert_eq!(last.len(), CALLS, "{last:?}");
    for (i, o) in last.iter().enumerate() {
        let blocked = o.contains("Called view with identical arguments");
        assert_eq!(blocked, i + 1 > 20, "call {}: {o}", i + 1);
    }
}

/// The strict profile: the loop is blocked (the first critical), and the next identical
/// call ends the run (`second_critical_abort`); the command ran once for each call before
/// the block, `blocked_at - 1` times. Returns the last turn's results.
fn assert_strict_run(cli: Cli, c: &Conversation, blocked_at: usize) -> &[String] {
    assert!(!c.finished.killed, "{cli:?} was killed: {}", c.tail());
    assert_eq!(c.late, 0, "requests after the agent exited: {}", c.tail());
    let last = c.last();
    let first_block = last.iter().position(|o| o.contains("CRITICAL"));
    assert_eq!(first_block, Some(blocked_at - 1), "{last:?}\n{}", c.tail());
    assert_eq!(c.runs, blocked_at - 1, "{}", c.tail());
    last
}

/// Gemini CLI ends its agent loop on `BeforeTool`'s `continue: false`. Gemini reports a
/// failing command as a failure: six identical failures run (`identical_failure_streak`),
/// call 7 is blocked, call 8 ends the run and stops Gemini before it runs; the turn that
/// asked for it was the last request: the model is never asked again, and the process
/// exits by itself.
#[test]
fn gemini_is_stopped_when_the_strict_profile_ends_the_run() {
    let c = run_loop(Cli::Gemini, "settings.json", Some(STRICT));
    let last = assert_strict_run(Cli::Gemini, &c, 7);
    assert_eq!(last.len(), 7, "{}", c.tail());
    assert_eq!(c.turns.len(), 8, "{}", c.tail());
}

/// Qwen Code: the same loop (six failures, call 7 blocked); call 8 ends the run and is
/// denied, and the empty-prompt `UserPromptSubmit` Qwen Code fires before sending the
/// results back is answered with `continue: false`: the model is never asked again, and
/// the process exits by itself.
#[test]
fn qwen_is_stopped_when_the_strict_profile_ends_the_run() {
    let c = run_loop(Cli::Qwen, "settings.json", Some(STRICT));
    let last = assert_strict_run(Cli::Qwen, &c, 7);
    assert_eq!(last.len(), 7, "{}", c.tail());
    assert_eq!(c.turns.len(), 8, "{}", c.tail());
}

/// Codex cannot be stopped by a hook in the middle of a turn (see the top of this file).
/// Its `PostToolUse` gives the output of a failing command without the exit status, so
/// the loop is four identical calls with identical results (`near_repeat_no_progress`):
/// call 5 is blocked, call 6 ends the run, and every call after it is denied with the
/// stop reason; the command never runs again, and Codex exits when the model gives up.
#[test]
fn codex_denies_every_later_call_when_the_strict_profile_ends_the_run() {
    let c = run_loop(Cli::Codex, "hooks.json", Some(STRICT));
    let last = assert_strict_run(Cli::Codex, &c, 5);
    assert_eq!(last.len(), CALLS, "{}", c.tail());
    assert!(
        last[5].contains("A second critical loop in this run"),
        "call 6: {}",
        last[5]
    );
    for (i, o) in last.iter().enumerate().skip(6) {
        assert!(
            o.contains("loopguard stopped the agent (second_critical_abort)"),
            "call {}: {o}",
            i + 1
        );
    }
}

/// Copilot CLI's hook answers cannot end a turn either (see
/// crates/loopguard-agents/src/agents/copilot.rs): with the strict profile, every call
/// after the one that ended the run is denied with the stop reason, the command never
/// runs again, and Copilot exits when the model gives up.
#[test]
fn copilot_denies_every_later_call_when_the_strict_profile_ends_the_run() {
    let c = run_loop(Cli::Copilot, "hooks/loopguard.json", Some(STRICT));
    let last = assert_strict_run(Cli::Copilot, &c, 7);
    assert_eq!(last.len(), CALLS, "{}", c.tail());
    assert!(
        last[7].contains("A second critical loop in this run"),
        "call 8: {}",
        last[7]
    );
    for (i, o) in last.iter().enumerate().skip(8) {
        assert!(
            o.contains("loopguard stopped the agent (second_critical_abort)"),
            "call {}: {o}",
            i + 1
        );
    }
}

/// Droid stops on `continue: false` with a `PreToolUse` deny: its loop (identical
/// successful calls with identical output, see [`Cli::command`]) is four near-identical
/// calls (`near_repeat_no_progress`), call 5 is blocked, call 6 ends the run and stops
/// Droid before it runs: the model is never asked again, and the process exits by itself.
#[test]
fn factory_is_stopped_when_the_strict_profile_ends_the_run() {
    let c = run_loop(Cli::Factory, "settings.json", Some(STRICT));
    let last = assert_strict_run(Cli::Factory, &c, 5);
    assert_eq!(last.len(), 5, "{}", c.tail());
    assert_eq!(c.turns.len(), 6, "{}", c.tail());
}

/// A loop that survives a compaction ends the run in Codex (which, as with the strict
/// profile's abort, cannot be stopped mid-turn): three calls, an automatic
/// compaction (the scripted model reports a context over `model_auto_compact_token_limit`),
/// and the same failing call three more times: the post-compaction guard answers the third
/// with `continue: false`. Codex 0.171 does not end its turn on a PostToolUse
/// `continue: false`, so every later call of the run is denied with the stop reason: the
/// command runs six times, whatever the model asks.
#[test]
fn codex_denies_every_later_call_when_a_loop_survives_a_compaction() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let trial = Trial::new();
    let command = Cli::Codex.command(&trial.counter);
    let issued = Arc::new(AtomicUsize::new(0));
    let compactions = Arc::new(AtomicUsize::new(0));
    let (issued2, compactions2) = (issued.clone(), compactions.clone());
    let server = ModelServer::start(move |req: &Request| {
        if !req.path.ends_with("/responses") {
            return Response::not_found();
        }
        let compaction = req
            .body
            .get("tools")
            .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty));
        if compaction {
            compactions2.fetch_add(1, Ordering::SeqCst);
            let summary = json!({"type":"message","id":"msg_s","role":"assistant",
                "content":[{"type":"output_text","text":"Summary: the tests fail; keep running them."}]});
            return codex_sse(&summary, 10);
        }
        let k = issued2.fetch_add(1, Ordering::SeqCst) + 1;
        let item = codex_item((k <= 12).then_some(k), &command);
        // The answer with the third call reports a context over the compaction limit.
        codex_sse(&item, if k == 3 { 900_000 } else { 10 })
    });
    std::fs::create_dir_all(trial.home.join(".codex")).unwrap();
    std::fs::write(
        trial.home.join(".codex/config.toml"),
        codex_config(
            server.port,
            "model_auto_compact_token_limit = 5000\nmodel_context_window = 1000000\n",
        ),
    )
    .unwrap();
    trial.install(Cli::Codex, "hooks.json");
    let finished = run_with_timeout(Cli::Codex.cmd(&trial, server.port), LIMIT);
    let stdout = String::from_utf8_lossy(&finished.output.stdout);
    assert_eq!(
        compactions.load(Ordering::SeqCst),
        1,
        "one automatic compaction: {stdout}"
    );
    // Three runs before the compaction, three after it; the third after it stops Codex.
    let status = trial.status();
    assert_eq!(runs(&trial.counter), 6, "{status}");
    // Twelve calls asked for, then the final answer: Codex went on asking the model.
    assert_eq!(issued.load(Ordering::SeqCst), 13);
    let last = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/responses"))
        .map(|r| Cli::Codex.results(&r.body))
        .max_by_key(Vec::len)
        .unwrap();
    // After the compaction: three runs, then six calls denied with the stop reason.
    assert!(last.len() >= 9, "{last:?}");
    for o in &last[last.len() - 6..] {
        assert!(o.contains("compaction_loop_persisted"), "{o}");
    }
}
