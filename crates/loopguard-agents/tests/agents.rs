//! Every agent's hook, driven with payloads in the agent's own shapes (each shape's source
//! is cited in the agent's module: Codex's generated JSON schemas, Gemini CLI's hooks
//! reference and `hookEventHandler.ts`, Qwen Code's `hookEventHandler.ts`, the Copilot CLI
//! hooks reference, Cursor's, Factory's, Cline's, Windsurf's and Kiro's hook docs).
//!
//! For each agent: 25 identical failing shell calls (with the argument the model rewords
//! on every call, where the agent has one) get a warning the model sees with call 11
//! (where the agent can show one; Windsurf and Kiro only show the user, on stderr), and a
//! deny in the agent's format from call 21 on, so the command runs 20 times; a loop after
//! a compaction stops the agent; garbage and unknown events get the agent's "go on" answer.

use loopguard_agents::{answer, Agent, AgentReply};
use loopguard_guard::{Guard, ToolProfile};
use serde_json::{json, Value};

/// One agent's hook over a guard as every front end builds it (the Claude Code profile,
/// the built-in config unless a test gives one); the CLI hook adds a SQLite store around
/// the same protocol.
struct Harness {
    guard: Guard,
    agent: Agent,
    n: u64,
}

impl Harness {
    fn new(agent: Agent) -> Harness {
        Harness::with_config(agent, loopguard_guard::enabled_config())
    }

    fn with_config(agent: Agent, config: loopguard_core::OpenClawConfig) -> Harness {
        let guard = Guard::builder()
            .config(config)
            .profile(ToolProfile::ClaudeCode)
            .log_size(64)
            .build();
        Harness { guard, agent, n: 0 }
    }

    fn answer(&mut self, bytes: &[u8]) -> Result<AgentReply, loopguard_agents::RunError> {
        self.n += 1;
        answer(
            self.agent,
            &self.guard,
            None,
            bytes,
            "built-in",
            1_000_000 + self.n,
            &mut Vec::new(),
        )
    }

    fn send(&mut self, payload: &Value) -> AgentReply {
        let r = self.answer(payload.to_string().as_bytes());
        let r = match r {
            Ok(r) => r,
            Err(e) => panic!("{:?}: {e}", self.agent),
        };
        assert!(r.exit_code == 0 || r.exit_code == 2);
        if !r.stdout.is_empty() {
            let _: Value = serde_json::from_str(&r.stdout).expect("the answer is JSON");
        }
        r
    }
}

fn out(r: &AgentReply) -> Value {
    if r.stdout.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&r.stdout).unwrap()
    }
}

/// The agent's payloads for call `i` of the failing loop: (before, after).
fn shell_call(agent: Agent, i: usize) -> (Value, Value) {
    match agent {
        // Claude Code's hooks reference (code.claude.com/docs/en/hooks): Bash with a
        // `description` reworded on every call, its result an object.
        Agent::ClaudeCode => {
            let base = json!({"session_id":"cc-1","transcript_path":"/t.jsonl","cwd":"/nonexistent",
                "permission_mode":"default","tool_name":"Bash",
                "tool_input":{"command":"npm test","description":format!("Run the tests (attempt {i})")},
                "tool_use_id":format!("toolu_{i}")});
            let mut pre = base.clone();
            pre["hook_event_name"] = json!("PreToolUse");
            let mut post = base;
            post["hook_event_name"] = json!("PostToolUse");
            post["tool_response"] =
                json!({"stdout":"FAIL","stderr":"","interrupted":false,"isImage":false});
            (pre, post)
        }
        // codex-rs/hooks/schema/generated/{pre,post}-tool-use.command.input.schema.json
        Agent::Codex => {
            let base = json!({"session_id":"019a-codex","turn_id":"turn-1","cwd":"/nonexistent",
                "model":"gpt-5","permission_mode":"default","transcript_path":null,
                "tool_name":"Bash","tool_input":{"command":"npm test"},"tool_use_id":format!("call_{i}")});
            let mut pre = base.clone();
            pre["hook_event_name"] = json!("PreToolUse");
            let mut post = base;
            post["hook_event_name"] = json!("PostToolUse");
            // Codex 0.171's PostToolUse for a shell command carries the output as a string
            // (seen from the real CLI in crates/loopguard/tests/agents_e2e.rs).
            post["tool_response"] = json!("FAIL\n");
            (pre, post)
        }
        // Gemini CLI docs/hooks/reference.md (BeforeTool / AfterTool) and tools/shell.ts's
        // llmContent lines.
        Agent::Gemini => {
            let input = json!({"command":"npm test","description":format!("Run the test suite (attempt {i})")});
            let pre = json!({"session_id":"gem-1","transcript_path":"/t.json","cwd":"/nonexistent",
                "hook_event_name":"BeforeTool","timestamp":"2026-12-01T12:00:00Z",
                "tool_name":"run_shell_command","tool_input":input});
            let post = json!({"session_id":"gem-1","transcript_path":"/t.json","cwd":"/nonexistent",
                "hook_event_name":"AfterTool","timestamp":"2026-12-01T12:00:01Z",
                "tool_name":"run_shell_command","tool_input":input,
                "tool_response":{"llmContent":format!("<untrusted_context>\nOutput: FAIL\nExit Code: 1\nProcess Group PGID: {}\n</untrusted_context>", 4000 + i),
                    "returnDisplay":"FAIL"}});
            (pre, post)
        }
        // Qwen Code hookEventHandler.ts (PreToolUse / PostToolUse) and its shell tool's
        // llmContent lines.
        Agent::Qwen => {
            let input = json!({"command":"npm test","description":format!("Run tests, try {i}"),"is_background":false});
            let base = json!({"session_id":"qwen-1","transcript_path":"/t.jsonl","cwd":"/nonexistent",
                "permission_mode":"yolo","tool_name":"run_shell_command","tool_input":input,
                "tool_use_id":format!("call_{i}"),"tool_call_id":format!("call_{i}")});
            let mut pre = base.clone();
            pre["hook_event_name"] = json!("PreToolUse");
            // Qwen Code 0.24.4 reports a failing command as PostToolUseFailure with the
            // whole result text as `error` (seen from the real CLI in
            // crates/loopguard/tests/agents_e2e.rs).
            let mut post = base;
            post["hook_event_name"] = json!("PostToolUseFailure");
            post["error"] = json!(format!(
                "Command: npm test\nDirectory: (root)\nOutput: FAIL\nError: (none)\nExit Code: 1\nSignal: (none)\nProcess Group PGID: {}", 900 + i));
            post["is_interrupt"] = json!(false);
            post["duration_ms"] = json!(80 + i);
            (pre, post)
        }
        // Copilot CLI hooks reference: camelCase, toolArgs as a JSON string.
        Agent::Copilot => {
            let args =
                json!({"command":"npm test","description":format!("Run tests {i}")}).to_string();
            let pre = json!({"timestamp":1764590000000u64 + i as u64,"cwd":"/nonexistent",
                "toolName":"bash","toolArgs":args});
            let post = json!({"timestamp":1764590000500u64 + i as u64,"cwd":"/nonexistent",
                "toolName":"bash","toolArgs":args,
                "toolResult":{"resultType":"success","textResultForLlm":"FAIL\n<exited with exit code 1>"}});
            (pre, post)
        }
        // Cursor hooks docs: preToolUse / postToolUse.
        Agent::Cursor => {
            let base = json!({"conversation_id":"conv-1","generation_id":format!("gen-{i}"),
                "workspace_roots":["/nonexistent"],"tool_name":"Shell",
                "tool_input":{"command":"npm test","explanation":format!("Running the tests ({i})")},
                "tool_use_id":format!("tu_{i}")});
            let mut pre = base.clone();
            pre["hook_event_name"] = json!("preToolUse");
            let mut post = base;
            post["hook_event_name"] = json!("postToolUse");
            post["tool_output"] = json!("{\"exitCode\":1,\"output\":\"FAIL\"}");
            (pre, post)
        }
        // Factory hooks reference (Claude Code's shape, `Execute`).
        Agent::Factory => {
            let base = json!({"session_id":"droid-1","transcript_path":"/t.jsonl","cwd":"/nonexistent",
                "permission_mode":"auto","tool_name":"Execute",
                "tool_input":{"command":"npm test","riskLevel":"low","riskLevelReason":format!("runs tests ({i})")},
                "tool_use_id":format!("toolu_{i}")});
            let mut pre = base.clone();
            pre["hook_event_name"] = json!("PreToolUse");
            let mut post = base;
            post["hook_event_name"] = json!("PostToolUse");
            post["tool_response"] = json!({"stdout":"FAIL","stderr":"","exitCode":1});
            (pre, post)
        }
        // Cline hooks docs: hookName + preToolUse/postToolUse objects.
        Agent::Cline => {
            let params = json!({"command":"npm test","requires_approval":"false"});
            let pre = json!({"clineVersion":"3.40.0","hookName":"PreToolUse","timestamp":"1764590000000",
                "taskId":"task-1","workspaceRoots":["/nonexistent"],"userId":"u1",
                "preToolUse":{"toolName":"execute_command","parameters":params}});
            let post = json!({"clineVersion":"3.40.0","hookName":"PostToolUse","timestamp":"1764590000500",
                "taskId":"task-1","workspaceRoots":["/nonexistent"],"userId":"u1",
                "postToolUse":{"toolName":"execute_command","parameters":params,
                    "result":"Command executed.\nOutput:\nFAIL","success":true,"executionTimeMs":100 + i}});
            (pre, post)
        }
        // Windsurf Cascade hooks docs: agent_action_name + tool_info.
        Agent::Windsurf => {
            let pre = json!({"agent_action_name":"pre_run_command","trajectory_id":"traj-1",
                "execution_id":format!("exec-{i}"),"timestamp":"2026-12-01T12:00:00Z",
                "tool_info":{"command_line":"npm test","cwd":"/nonexistent"}});
            let post = json!({"agent_action_name":"post_run_command","trajectory_id":"traj-1",
                "execution_id":format!("exec-{i}"),"timestamp":"2026-12-01T12:00:01Z",
                "tool_info":{"command_line":"npm test","cwd":"/nonexistent"}});
            (pre, post)
        }
        // Kiro CLI hooks docs: no session id.
        Agent::Kiro => {
            let input = json!({"command":"npm test","summary":format!("run the tests ({i})")});
            let pre = json!({"hook_event_name":"preToolUse","cwd":"/nonexistent",
                "tool_name":"execute_bash","tool_input":input});
            let post = json!({"hook_event_name":"postToolUse","cwd":"/nonexistent",
                "tool_name":"execute_bash","tool_input":input,
                "tool_response":{"success":false,"result":["FAIL"]}});
            (pre, post)
        }
    }
}

/// The deny reason, in the agent's format, if the answer denies the call.
fn denied(agent: Agent, r: &AgentReply, claude_shaped: bool) -> Option<String> {
    let o = out(r);
    let s = |v: &Value| v.as_str().map(str::to_string);
    match agent {
        Agent::ClaudeCode | Agent::Codex | Agent::Qwen | Agent::Factory => {
            (o["hookSpecificOutput"]["permissionDecision"] == "deny")
                .then(|| s(&o["hookSpecificOutput"]["permissionDecisionReason"]))
                .flatten()
        }
        Agent::Copilot if claude_shaped => (o["hookSpecificOutput"]["permissionDecision"]
            == "deny")
            .then(|| s(&o["hookSpecificOutput"]["permissionDecisionReason"]))
            .flatten(),
        Agent::Copilot => (o["permissionDecision"] == "deny")
            .then(|| s(&o["permissionDecisionReason"]))
            .flatten(),
        Agent::Gemini => (o["decision"] == "deny").then(|| s(&o["reason"])).flatten(),
        Agent::Cursor => (o["permission"] == "deny")
            .then(|| s(&o["agent_message"]))
            .flatten(),
        Agent::Cline => (o["cancel"] == true)
            .then(|| s(&o["errorMessage"]))
            .flatten(),
        Agent::Windsurf | Agent::Kiro => (r.exit_code == 2).then(|| r.stderr.join("\n")),
    }
}

/// The warning the model (or for Windsurf and Kiro, the user) is given, from the answers
/// to the call (`pre`) and its result (`post`).
fn warning(agent: Agent, pre: &AgentReply, post: &AgentReply) -> Option<String> {
    let (p, q) = (out(pre), out(post));
    let s = |v: &Value| v.as_str().map(str::to_string);
    match agent {
        Agent::ClaudeCode | Agent::Codex => s(&p["hookSpecificOutput"]["additionalContext"]),
        // Droid 0.225 shows PostToolUse's context to the model, not PreToolUse's (seen
        // from the real CLI in crates/loopguard/tests/agents_e2e.rs).
        Agent::Qwen | Agent::Factory => s(&q["hookSpecificOutput"]["additionalContext"]),
        Agent::Copilot => s(&p["additionalContext"]),
        Agent::Gemini => s(&q["hookSpecificOutput"]["additionalContext"]),
        Agent::Cursor => s(&q["additional_context"]),
        Agent::Cline => s(&p["contextModification"]),
        Agent::Windsurf | Agent::Kiro => pre.stderr.first().cloned(),
    }
}

fn tool_name(agent: Agent) -> &'static str {
    match agent {
        Agent::ClaudeCode | Agent::Codex => "Bash",
        Agent::Gemini | Agent::Qwen => "run_shell_command",
        Agent::Copilot => "bash",
        Agent::Cursor => "Shell",
        Agent::Factory => "Execute",
        Agent::Cline => "execute_command",
        Agent::Windsurf => "run_command",
        Agent::Kiro => "execute_bash",
    }
}

fn failing_loop(agent: Agent) {
    let mut h = Harness::new(agent);
    let mut warnings = Vec::new();
    let mut denies = Vec::new();
    let mut ran = 0;
    for i in 1..=25 {
        let (pre, post) = shell_call(agent, i);
        let a = h.send(&pre);
        if let Some(reason) = denied(agent, &a, false) {
            denies.push((i, reason));
            continue;
        }
        ran += 1;
        let b = h.send(&post);
        if let Some(w) = warning(agent, &a, &b) {
            warnings.push((i, w));
        }
    }
    assert_eq!(
        ran, 20,
        "{agent}: the command runs 20 times; denies {denies:?}"
    );
    assert_eq!(denies.first().map(|d| d.0), Some(21), "{agent}");
    assert_eq!(denies.len(), 5, "{agent}");
    let (first, reason) = &denies[0];
    assert_eq!(*first, 21);
    let tool = tool_name(agent);
    assert!(
        reason.contains(&format!("Called {tool} with identical arguments")),
        "{agent}: {reason}"
    );
    assert_eq!(
        warnings.first().map(|w| w.0),
        Some(11),
        "{agent}: {warnings:?}"
    );
    assert!(warnings[0].1.contains(tool), "{agent}: {}", warnings[0].1);
}

/// The run path hands back each decision of the engine with its effect, in the agent's
/// words (the session as loopguard keys it, the agent's own tool name, the engine's in
/// `engine_tool`), for a server's loop history: the warning of call 11, the refusals from
/// call 21, nothing for the outcomes without a finding, and the session for every event.
fn decided_in_the_agents_words(agent: Agent) {
    use loopguard_events::{Action, Effect};
    let mut h = Harness::new(agent);
    let session = session_of(agent);
    let mut effects = Vec::new();
    for i in 1..=25 {
        let (pre, post) = shell_call(agent, i);
        let a = h.send(&pre);
        assert_eq!(a.session.as_deref(), Some(session.as_str()), "{agent}");
        assert_eq!(a.decided.len(), 1, "{agent} call {i}: {:?}", a.decided);
        let d = &a.decided[0];
        assert_eq!(d.decision.session.to_string_lossy(), session, "{agent}");
        let tool = d.decision.tool.as_ref().map(|t| t.to_string_lossy());
        assert_eq!(tool.as_deref(), Some(tool_name(agent)), "{agent}");
        if let Some(f) = &d.decision.finding {
            assert!(
                f.message
                    .to_string_lossy()
                    .contains(&format!("alled {} ", tool_name(agent))),
                "{agent}: {}",
                f.message.to_string_lossy()
            );
        }
        effects.push((i, d.decision.action, d.effect));
        if d.effect.refuses() {
            continue;
        }
        let b = h.send(&post);
        assert!(
            b.decided.iter().all(|d| d.decision.finding.is_none()),
            "{agent}: {:?}",
            b.decided
        );
    }
    let first = |want: Action| effects.iter().find(|e| e.1 == want).map(|e| e.0);
    assert_eq!(
        (first(Action::Warn), first(Action::Block)),
        (Some(11), Some(21)),
        "{agent}"
    );
    assert_eq!(effects[10].2, Effect::Notice, "{agent}");
    assert!(
        effects[20..].iter().all(|e| e.2 == Effect::Refuse),
        "{agent}: {effects:?}"
    );
}

#[test]
fn claude_code_hands_back_its_decisions() {
    decided_in_the_agents_words(Agent::ClaudeCode);
}

#[test]
fn gemini_hands_back_its_decisions_naming_its_tool() {
    decided_in_the_agents_words(Agent::Gemini);
}

#[test]
fn claude_code_failing_shell_loop() {
    failing_loop(Agent::ClaudeCode);
}

#[test]
fn codex_failing_shell_loop() {
    failing_loop(Agent::Codex);
}
#[test]
fn gemini_failing_shell_loop() {
    failing_loop(Agent::Gemini);
}
#[test]
fn qwen_failing_shell_loop() {
    failing_loop(Agent::Qwen);
}
#[test]
fn copilot_failing_shell_loop() {
    failing_loop(Agent::Copilot);
}
#[test]
fn cursor_failing_shell_loop() {
    failing_loop(Agent::Cursor);
}
#[test]
fn factory_failing_shell_loop() {
    failing_loop(Agent::Factory);
}
#[test]
fn cline_failing_shell_loop() {
    failing_loop(Agent::Cline);
}
#[test]
fn windsurf_failing_shell_loop() {
    failing_loop(Agent::Windsurf);
}
#[test]
fn kiro_failing_shell_loop() {
    failing_loop(Agent::Kiro);
}

/// Qwen Code sends `UserPromptSubmit` with an empty prompt before each turn that carries
/// tool results (seen from the real CLI): the loop goes on across them; a real prompt
/// starts a new run.
#[test]
fn qwen_continuation_turns_are_not_new_prompts() {
    let mut h = Harness::new(Agent::Qwen);
    let prompt = |p: &str| {
        json!({"session_id":"qwen-1","cwd":"/nonexistent","hook_event_name":"UserPromptSubmit",
        "prompt_id":"qwen-1########0","prompt":p,"permission_mode":"yolo"})
    };
    h.send(&prompt("fix the tests"));
    let mut first_deny = None;
    for i in 1..=21 {
        let (pre, post) = shell_call(Agent::Qwen, i);
        if denied(Agent::Qwen, &h.send(&pre), false).is_some() {
            first_deny = Some(i);
            break;
        }
        h.send(&post);
        h.send(&prompt(""));
    }
    assert_eq!(first_deny, Some(21));
    h.send(&prompt("try something else"));
    let (pre, _) = shell_call(Agent::Qwen, 22);
    assert!(
        denied(Agent::Qwen, &h.send(&pre), false).is_none(),
        "a new prompt is a new run"
    );
}

/// Qwen Code ends a turn only on `UserPromptSubmit`'s `continue: false`: with the strict
/// profile, the call that ends the run (`second_critical_abort`) is denied, and the next
/// empty-prompt `UserPromptSubmit` (Qwen Code sends it before giving the model the results)
/// stops the agent. Before the abort it is answered with nothing; a real prompt starts a
/// new run.
#[test]
fn qwen_is_stopped_before_the_model_is_asked_again_after_an_abort() {
    let strict = loopguard_core::OpenClawConfig::from_json5(
        r#"{ tools: { loopDetection: { enabled: true } }, loopguard: { profile: "strict" } }"#,
    )
    .unwrap()
    .config;
    let mut h = Harness::with_config(Agent::Qwen, strict);
    let prompt = |p: &str| {
        json!({"session_id":"qwen-1","cwd":"/nonexistent","hook_event_name":"UserPromptSubmit",
        "prompt_id":"qwen-1########0","prompt":p,"permission_mode":"yolo"})
    };
    h.send(&prompt("fix the tests"));
    let mut denials = Vec::new();
    for i in 1..=8 {
        let (pre, post) = shell_call(Agent::Qwen, i);
        match denied(Agent::Qwen, &h.send(&pre), false) {
            Some(reason) => denials.push((i, reason)),
            None => {
                h.send(&post);
            }
        }
        let go_on = out(&h.send(&prompt("")));
        if i < 8 {
            assert_eq!(go_on, Value::Null, "call {i}: {go_on}");
        } else {
            assert_eq!(go_on["continue"], false, "{go_on}");
            let reason = go_on["stopReason"].as_str().unwrap_or_default();
            assert!(reason.contains("second_critical_abort"), "{go_on}");
        }
    }
    assert_eq!(
        denials.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
        vec![7, 8]
    );
    h.send(&prompt("try something else"));
    assert_eq!(
        out(&h.send(&prompt(""))),
        Value::Null,
        "a new prompt is a new run"
    );
}

/// Copilot CLI 1.0.102 as the real CLI sends its camelCase payloads (captured from it in
/// crates/loopguard/tests/agents_e2e.rs): no event name, `sessionId`, `toolArgs` as an
/// object, a failing command's result ending with `<shellId: N completed with exit code
/// 1>` (a new id each call). The loop is denied from call 21; a payload with `prompt` is a
/// new prompt (a new run), one with `reason` the session's end.
#[test]
fn copilot_cli_payloads_as_the_real_cli_sends_them() {
    let mut h = Harness::new(Agent::Copilot);
    let base =
        |i: u64| json!({"sessionId":"cp-1","timestamp":1796136577796u64 + i,"cwd":"/nonexistent"});
    let mut prompt = base(0);
    prompt["prompt"] = json!("Make the tests pass.");
    assert_eq!(out(&h.send(&prompt)), Value::Null);
    let call = |i: u64| {
        let mut pre = base(i);
        pre["toolName"] = json!("bash");
        pre["toolArgs"] =
            json!({"command":"npm test","description":format!("Run the test suite (attempt {i})")});
        let mut post = pre.clone();
        post["toolResult"] = json!({"resultType":"success",
            "textResultForLlm":format!("FAIL\n<shellId: {i} completed with exit code 1>")});
        (pre, post)
    };
    let mut first_deny = None;
    for i in 1..=21 {
        let (pre, post) = call(i);
        if denied(Agent::Copilot, &h.send(&pre), false).is_some() {
            first_deny = Some(i);
            break;
        }
        h.send(&post);
    }
    assert_eq!(first_deny, Some(21));
    prompt["prompt"] = json!("try something else");
    h.send(&prompt);
    assert!(
        denied(Agent::Copilot, &h.send(&call(22).0), false).is_none(),
        "a new prompt is a new run"
    );
    let mut end = base(30);
    end["reason"] = json!("complete");
    assert_eq!(out(&h.send(&end)), Value::Null);
}

/// Copilot CLI's `postToolUseFailure` (a tool that failed; `PostToolUseFailureHookInput` in
/// the package's SDK types: `toolName`, `toolArgs`, `error`, no event name) is read as the
/// call's failure, not as a new call: the same failing `view` is denied from call 21.
#[test]
fn copilot_cli_tool_failures_are_outcomes() {
    let mut h = Harness::new(Agent::Copilot);
    let mut first_deny = None;
    for i in 1..=21u64 {
        let pre = json!({"sessionId":"cp-2","timestamp":1796136577796u64 + i,"cwd":"/nonexistent",
            "toolName":"view","toolArgs":{"path":"/nonexistent/src/main.rs"}});
        if denied(Agent::Copilot, &h.send(&pre), false).is_some() {
            first_deny = Some(i);
            break;
        }
        let mut failure = pre.clone();
        failure["error"] = json!("Path does not exist: /nonexistent/src/main.rs");
        assert_eq!(out(&h.send(&failure)), Value::Null, "call {i}");
    }
    assert_eq!(first_deny, Some(21));
}

/// Copilot's "VS Code compatible" spelling is answered the Claude Code way.
#[test]
fn copilot_vscode_spelling_is_answered_like_claude_code() {
    let mut h = Harness::new(Agent::Copilot);
    let mut first_deny = None;
    for i in 1..=21 {
        let base = json!({"hookEventName":"PreToolUse","sessionId":"vs-1","cwd":"/nonexistent",
            "tool_name":"bash","tool_input":{"command":"make","description":format!("build {i}")},
            "tool_use_id":format!("t{i}")});
        let a = h.send(&base);
        if let Some(r) = denied(Agent::Copilot, &a, true) {
            first_deny.get_or_insert((i, r));
            break;
        }
        let mut post = base.clone();
        post["hookEventName"] = json!("PostToolUse");
        post["tool_result"] = json!({"resultType":"success","textResultForLlm":"error: no rule"});
        h.send(&post);
    }
    assert_eq!(first_deny.map(|d| d.0), Some(21));
}

/// The compaction event of each agent that reports one, before the loop.
fn compaction(agent: Agent) -> Option<Value> {
    Some(match agent {
        Agent::ClaudeCode => {
            json!({"session_id":"cc-1","transcript_path":"/t.jsonl","cwd":"/nonexistent",
            "hook_event_name":"PostCompact","trigger":"auto","compact_summary":"…"})
        }
        Agent::Codex => {
            json!({"session_id":"019a-codex","turn_id":"turn-1","cwd":"/nonexistent","model":"gpt-5",
            "transcript_path":null,"hook_event_name":"PostCompact","trigger":"auto"})
        }
        Agent::Gemini => {
            json!({"session_id":"gem-1","transcript_path":"/t.json","cwd":"/nonexistent",
            "hook_event_name":"PreCompress","timestamp":"2026-12-01T12:00:00Z","trigger":"auto"})
        }
        Agent::Qwen => {
            json!({"session_id":"qwen-1","transcript_path":"/t.jsonl","cwd":"/nonexistent",
            "hook_event_name":"PostCompact","trigger":"auto","compact_summary":"…"})
        }
        Agent::Cursor => {
            json!({"conversation_id":"conv-1","generation_id":"g","workspace_roots":["/nonexistent"],
            "hook_event_name":"preCompact","trigger":"auto"})
        }
        Agent::Factory => {
            json!({"session_id":"droid-1","cwd":"/nonexistent","hook_event_name":"SessionStart","source":"compact"})
        }
        Agent::Cline => {
            json!({"clineVersion":"3.40.0","hookName":"PreCompact","timestamp":"1","taskId":"task-1",
            "workspaceRoots":["/nonexistent"],"userId":"u1","preCompact":{}})
        }
        Agent::Copilot | Agent::Windsurf | Agent::Kiro => return None,
    })
}

fn loop_after_compaction(agent: Agent) {
    let mut h = Harness::new(agent);
    let (pre, post) = shell_call(agent, 1);
    h.send(&pre);
    h.send(&post);
    let r = h.send(&compaction(agent).unwrap());
    assert_eq!(r.stdout, agent.allow().0);
    let mut stopped_at = None;
    for i in 2..=4 {
        let (pre, post) = shell_call(agent, i);
        assert!(
            denied(agent, &h.send(&pre), false).is_none(),
            "{agent}: call {i}"
        );
        let b = h.send(&post);
        let o = out(&b);
        if o["continue"] == false {
            assert!(o["stopReason"]
                .as_str()
                .unwrap()
                .contains("compaction_loop_persisted"));
            stopped_at.get_or_insert(i);
        }
    }
    if matches!(
        agent,
        Agent::Codex | Agent::Gemini | Agent::Qwen | Agent::Factory
    ) {
        // These agents stop on continue:false after the third identical call.
        assert_eq!(stopped_at, Some(4), "{agent}");
    }
    // Whatever the agent does with a stop, the run's next call is denied.
    let (pre, _) = shell_call(agent, 5);
    let reason = denied(agent, &h.send(&pre), false).expect("denied after the abort");
    assert!(
        reason.contains("compaction_loop_persisted"),
        "{agent}: {reason}"
    );
}

#[test]
fn loops_after_compaction_are_stopped() {
    for agent in [
        Agent::ClaudeCode,
        Agent::Codex,
        Agent::Gemini,
        Agent::Qwen,
        Agent::Cursor,
        Agent::Factory,
        Agent::Cline,
    ] {
        loop_after_compaction(agent);
    }
}

#[test]
fn garbage_and_unknown_events_answer_go_on() {
    for &agent in loopguard_agents::AGENTS {
        let mut h = Harness::new(agent);
        for bad in [&b"not json"[..], b"[1,2]", b"", b"{\"hook_event_name\":5}"] {
            // An error: the shell (the CLI hook, a server) fails open with `agent.allow()`
            // (loopguard-hook tests that for every agent).
            assert!(h.answer(bad).is_err(), "{agent}");
        }
        let unknown = json!({"session_id":"s","sessionId":"s","conversation_id":"c","taskId":"t",
            "trajectory_id":"tr","cwd":"/nonexistent","hook_event_name":"SomethingNew",
            "hookName":"SomethingNew","agent_action_name":"something_new"});
        let r = h.send(&unknown);
        assert_eq!((r.stdout, r.exit_code), agent.allow(), "{agent}");
    }
}

/// The agent's row of the guard's tool table, applied to JSON written here.
fn map_tool(agent: Agent, tool: &str, input: &Value) -> (String, Value) {
    let text = input.to_string();
    let args = loopguard_core::Value::parse(text.as_bytes()).unwrap();
    let (name, mapped) =
        loopguard_guard::profile::agents::tools_of(agent.as_str()).map_call(tool, &args);
    let mut out = Vec::new();
    loopguard_core::json::write_json_value(&mut out, &mapped);
    (name, serde_json::from_slice(&out).unwrap())
}

/// Codex's `write_stdin` with empty `chars` is a poll of a running command; a poll whose
/// answer never changes is a known poll without progress, not a generic repeat.
#[test]
fn codex_empty_write_stdin_is_a_poll() {
    let (name, args) = map_tool(
        Agent::Codex,
        "write_stdin",
        &json!({"session_id": 7, "chars": "", "yield_time_ms": 1000}),
    );
    assert_eq!(name, "BashOutput");
    assert_eq!(args, json!({"bash_id": 7}));
    let (name, _) = map_tool(
        Agent::Codex,
        "write_stdin",
        &json!({"session_id": 7, "chars": "y\n"}),
    );
    assert_eq!(name, "write_stdin");
}

/// Codex code mode: an `exec` script calling `tools.write_stdin` with empty `chars` is the
/// same poll as the plain call; one that types something is not.
#[test]
fn codex_code_mode_write_stdin_is_a_poll() {
    let script = "const out = await tools.write_stdin({ session_id: 7, chars: \"\" });\ntext(out);";
    let (name, args) = map_tool(Agent::Codex, "exec", &json!({ "code": script }));
    assert_eq!(name, "BashOutput");
    assert_eq!(args, json!({"bash_id": 7}));
    let typing = "await tools.write_stdin({ session_id: 7, chars: \"q\" });";
    let (name, _) = map_tool(Agent::Codex, "exec", &json!({ "code": typing }));
    assert_eq!(name, "exec");
}

/// A build polled 25 times from Codex code mode with the same answer is a known poll
/// without progress (OpenClaw's polling messages), never a generic repeat.
#[test]
fn codex_code_mode_polls_without_progress_are_known_polls() {
    let mut h = Harness::new(Agent::Codex);
    let script = "const out = await tools.write_stdin({ session_id: 3, chars: \"\" });\ntext(out);";
    let mut said = String::new();
    for i in 0..25 {
        let base = json!({"session_id":"019a-poll","turn_id":"turn-1","cwd":"/nonexistent",
            "model":"gpt-5","permission_mode":"default","transcript_path":null,
            "tool_name":"exec","tool_input":{"code": script},"tool_use_id":format!("call_{i}")});
        let mut pre = base.clone();
        pre["hook_event_name"] = json!("PreToolUse");
        said.push_str(&h.send(&pre).stdout);
        let mut post = base;
        post["hook_event_name"] = json!("PostToolUse");
        post["tool_response"] = json!("Chunk ID: 1\nWall time: 5.0 seconds\nProcess running with session ID 3\nOutput:\nbuilding...\n");
        said.push_str(&h.send(&post).stdout);
    }
    assert!(said.contains("no progress"), "{said}");
    assert!(said.contains("stuck polling loop"), "{said}");
}

/// The reason of the ask, in the agent's format, if the answer asks the user.
fn asked(agent: Agent, r: &AgentReply) -> Option<String> {
    let o = out(r);
    let s = |v: &Value| v.as_str().map(str::to_string);
    match agent {
        Agent::ClaudeCode => (o["hookSpecificOutput"]["permissionDecision"] == "ask")
            .then(|| s(&o["hookSpecificOutput"]["permissionDecisionReason"]))
            .flatten(),
        Agent::Copilot => (o["permissionDecision"] == "ask")
            .then(|| s(&o["permissionDecisionReason"]))
            .flatten(),
        Agent::Cursor => (o["permission"] == "ask")
            .then(|| s(&o["agent_message"]))
            .flatten(),
        _ => None,
    }
}

fn config(text: &str) -> loopguard_core::OpenClawConfig {
    let loaded = loopguard_core::OpenClawConfig::load_for_run(text).expect("config");
    assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
    loaded.config
}

/// `onCritical: "ask"` for every agent: the first critical (call 21) asks the user where
/// the agent's hook can (Claude Code, Copilot, Cursor) and is refused elsewhere; the user
/// lets the call run, the loop goes on, and call 22 ends the run: refused, and every later
/// call of the run is refused too.
#[test]
fn on_critical_ask_asks_where_the_agent_can_then_ends_the_run() {
    let cfg =
        r#"{ tools: { loopDetection: { enabled: true } }, loopguard: { onCritical: "ask" } }"#;
    for &agent in loopguard_agents::AGENTS {
        let mut h = Harness::with_config(agent, config(cfg));
        let mut rungs = Vec::new();
        for i in 1..=23 {
            let (pre, post) = shell_call(agent, i);
            let a = h.send(&pre);
            if let Some(reason) = asked(agent, &a) {
                assert!(
                    reason.starts_with("CRITICAL: Called ") && reason.contains(tool_name(agent)),
                    "{agent}: {reason}"
                );
                rungs.push((i, "ask"));
                // The user lets it run: its outcome is reported.
                h.send(&post);
            } else if let Some(reason) = denied(agent, &a, false) {
                let ended = rungs.iter().any(|r| r.1 == "ask" || r.1 == "refuse");
                rungs.push((i, if ended { "end" } else { "refuse" }));
                if ended {
                    assert!(reason.contains("CRITICAL"), "{agent} call {i}: {reason}");
                }
            } else {
                h.send(&post);
            }
        }
        let can_ask = matches!(agent, Agent::ClaudeCode | Agent::Copilot | Agent::Cursor);
        let first = if can_ask { "ask" } else { "refuse" };
        assert_eq!(rungs, [(21, first), (22, "end"), (23, "end")], "{agent}");
        // The session's log says what the guard decided: an ask, then the run's end.
        let entry = h
            .guard
            .store()
            .load(&loopguard_guard::session_key(None, &session_of(agent)))
            .expect("store")
            .expect("session");
        let words: Vec<String> = entry
            .recent
            .iter()
            .filter(|r| r.decision.is_critical())
            .map(|r| r.decision.to_string())
            .collect();
        assert_eq!(words, ["ask", "abort", "deny-aborted"], "{agent}");
    }
}

/// The session key each agent's payloads in `shell_call` land in.
fn session_of(agent: Agent) -> String {
    match agent {
        Agent::ClaudeCode => "cc-1".into(),
        Agent::Codex => "codex:019a-codex".into(),
        Agent::Gemini => "gemini:gem-1".into(),
        Agent::Qwen => "qwen:qwen-1".into(),
        Agent::Copilot => "copilot:cwd:/nonexistent".into(),
        Agent::Cursor => "cursor:conv-1".into(),
        Agent::Factory => "factory:droid-1".into(),
        Agent::Cline => "cline:task-1".into(),
        Agent::Windsurf => "windsurf:traj-1".into(),
        Agent::Kiro => "kiro:cwd:/nonexistent".into(),
    }
}

/// `onCritical: "end-run"`: the first critical ends the run (Claude Code: the call is
/// denied and the agent told to stop).
#[test]
fn on_critical_end_run_ends_the_run_at_the_first_critical() {
    let cfg =
        r#"{ tools: { loopDetection: { enabled: true } }, loopguard: { onCritical: "end-run" } }"#;
    let mut h = Harness::with_config(Agent::ClaudeCode, config(cfg));
    for i in 1..=20 {
        let (pre, post) = shell_call(Agent::ClaudeCode, i);
        assert_eq!(
            denied(Agent::ClaudeCode, &h.send(&pre), false),
            None,
            "call {i}"
        );
        h.send(&post);
    }
    let (pre, _) = shell_call(Agent::ClaudeCode, 21);
    let a = out(&h.send(&pre));
    assert_eq!(a["hookSpecificOutput"]["permissionDecision"], "deny");
    assert_eq!(a["continue"], false);
    let stop = a["stopReason"].as_str().unwrap_or_default();
    assert!(
        stop.starts_with("loopguard stopped the agent (generic_repeat): CRITICAL: Called Bash"),
        "{stop}"
    );
}

/// The exact answer of each agent that can ask, for the first critical of a run.
#[test]
fn ask_answer_payloads() {
    let cfg =
        r#"{ tools: { loopDetection: { enabled: true } }, loopguard: { onCritical: "ask" } }"#;
    for agent in [Agent::ClaudeCode, Agent::Copilot, Agent::Cursor] {
        let mut h = Harness::with_config(agent, config(cfg));
        for i in 1..=20 {
            let (pre, post) = shell_call(agent, i);
            h.send(&pre);
            h.send(&post);
        }
        let (pre, _) = shell_call(agent, 21);
        let a = out(&h.send(&pre));
        let message = "CRITICAL: Called TOOL with identical arguments and identical outcomes 20 times. Session execution blocked to prevent runaway loops.";
        let message = message.replace("TOOL", tool_name(agent));
        let notice = format!(
            "loopguard asks before {} runs: generic_repeat (count 20)",
            tool_name(agent)
        );
        let want = match agent {
            Agent::ClaudeCode => json!({"hookSpecificOutput":{"hookEventName":"PreToolUse",
                "permissionDecision":"ask","permissionDecisionReason":message},
                "systemMessage":notice}),
            Agent::Copilot => {
                json!({"permissionDecision":"ask","permissionDecisionReason":message})
            }
            _ => json!({"permission":"ask","user_message":format!("{notice}: {message}"),
                "agent_message":message}),
        };
        assert_eq!(a, want, "{agent}");
    }
}

/// Sub-agents in Claude Code: each launch (`Agent`/`Task`) is a call of the parent's run,
/// the sub-agent's own calls (which carry `agent_id`) a run of their own, so each sub-agent
/// keeps its own loop state while the parent sees the repetition of whole launches: the
/// same sub-agent spawned with the same task and the same failing report, 21 times, is a
/// loop at the parent (the launch's new `agentId`, duration and token counts do not make
/// its outcome new). The session's budget counts the sub-agents' calls.
#[test]
fn claude_code_repeated_subagent_launches_are_a_loop_at_the_parent() {
    let cfg = r#"{ tools: { loopDetection: { enabled: true } },
                   loopguard: { budgets: { callsPerSession: 1000 } } }"#;
    let mut h = Harness::with_config(Agent::ClaudeCode, config(cfg));
    let base = json!({"session_id":"cc-sub","transcript_path":"/t.jsonl","cwd":"/nonexistent",
        "permission_mode":"default"});
    let with = |extra: Value| {
        let mut v = base.clone();
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    h.send(&with(
        json!({"hook_event_name":"UserPromptSubmit","prompt":"fix the tests"}),
    ));
    let launch_input = json!({"description":"Fix tests","prompt":"Make npm test pass","subagent_type":"general-purpose"});
    let mut parent = Vec::new();
    for i in 1..=21 {
        let id = format!("toolu_task_{i}");
        let pre = with(json!({"hook_event_name":"PreToolUse","tool_name":"Agent",
            "tool_input":launch_input,"tool_use_id":id}));
        let a = out(&h.send(&pre));
        let decision = a["hookSpecificOutput"]["permissionDecision"]
            .as_str()
            .unwrap_or("run");
        parent.push(decision.to_string());
        if decision == "deny" {
            continue;
        }
        // The sub-agent's own calls: three failing test runs, in its own run.
        let agent_id = format!("a{i:04}");
        for j in 1..=3 {
            let call = json!({"hook_event_name":"PreToolUse","tool_name":"Bash",
                "tool_input":{"command":"npm test"},"tool_use_id":format!("toolu_{i}_{j}"),
                "agent_id":agent_id,"agent_type":"general-purpose"});
            let sub = out(&h.send(&with(call.clone())));
            assert_eq!(sub, Value::Null, "sub-agent {i} call {j}: {sub}");
            let mut post = with(call);
            post["hook_event_name"] = json!("PostToolUse");
            post["tool_response"] =
                json!({"stdout":"FAIL","stderr":"","interrupted":false,"isImage":false});
            h.send(&post);
        }
        let post = with(json!({"hook_event_name":"PostToolUse","tool_name":"Agent",
            "tool_input":launch_input,"tool_use_id":id,
            "tool_response":{"status":"completed","prompt":"Make npm test pass","agentId":agent_id,
                "content":[{"type":"text","text":"The tests still fail: npm test exits 1."}],
                "totalDurationMs":1000 + i,"totalTokens":5000 + i,"totalToolUseCount":3,
                "usage":{"input_tokens":10 + i,"output_tokens":5}}}));
        h.send(&post);
    }
    assert_eq!(parent[..20], ["run"; 20]);
    assert_eq!(parent[20], "deny");
    let entry = h
        .guard
        .store()
        .load(&loopguard_guard::session_key(None, "cc-sub"))
        .unwrap()
        .unwrap();
    let critical: Vec<(Option<String>, Option<String>)> = entry
        .recent
        .iter()
        .filter(|r| r.decision.is_critical())
        .map(|r| (r.run.clone(), r.detector.clone()))
        .collect();
    assert_eq!(
        critical,
        [(Some("prompt-1".into()), Some("generic_repeat".into()))],
        "only the parent's run saw a loop"
    );
    // The parent's own calls are its 21 launches; the session's budget counted the 20
    // launches that ran and their sub-agents' 60 calls.
    assert_eq!(entry.stats.calls, 21);
    assert_eq!(entry.budgeted_calls(), 80);
    // Each sub-agent kept its own session and loop state.
    let sub = h
        .guard
        .store()
        .load(&loopguard_guard::session_key(None, "cc-sub/a0001"))
        .unwrap()
        .unwrap();
    assert_eq!(sub.stats.calls, 3);
    // The session's end forgets the sub-agents' sessions with it.
    h.send(&with(
        json!({"hook_event_name":"SessionEnd","reason":"other"}),
    ));
    for id in ["cc-sub", "cc-sub/a0001", "cc-sub/a0020"] {
        let key = loopguard_guard::session_key(None, id);
        assert!(h.guard.store().load(&key).unwrap().is_none(), "{id}");
    }
    assert_eq!(
        sub.recent
            .iter()
            .filter_map(|r| r.run.clone())
            .next()
            .as_deref(),
        Some("prompt-1/a0001")
    );
}

/// The decision log (`loopguard status`, the hook's log) names Gemini CLI's shell tool as the
/// model was told it, `run_shell_command`, not the tool table's `Bash`.
#[test]
fn the_log_names_the_agents_own_tool() {
    let mut h = Harness::new(Agent::Gemini);
    for i in 1..=11 {
        let (pre, post) = shell_call(Agent::Gemini, i);
        h.send(&pre);
        h.send(&post);
    }
    let info = h.guard.session(None, "gemini:gem-1").unwrap().unwrap();
    let rows: Vec<_> = info.recent.iter().filter(|r| r.tool.is_some()).collect();
    assert!(!rows.is_empty());
    for r in &rows {
        assert_eq!(r.tool.as_deref(), Some("run_shell_command"), "{r:?}");
    }
    let warned: Vec<_> = info
        .recent
        .iter()
        .filter_map(|r| r.message.as_deref())
        .collect();
    assert!(!warned.is_empty(), "{:?}", info.recent);
    for m in warned {
        assert!(
            m.contains("run_shell_command") && !m.contains(" Bash "),
            "{m}"
        );
    }
}

/// Sub-agents in Codex and Qwen Code: a payload sent from inside a sub-agent carries its
/// `agent_id` (Codex 0.171's input schemas, the sub-agent's thread id; Qwen Code 0.24's
/// `createBaseInput`) beside the session's `session_id`. The sub-agent's loop is its own:
/// its 21st identical failing command is denied, while the parent running the same command
/// afterwards is not part of it; the parent's session counts the sub-agent's calls that ran
/// for its `callsPerSession` budget.
#[test]
fn codex_and_qwen_subagent_loops_are_their_own_and_counted_at_the_parent() {
    let cfg = r#"{ tools: { loopDetection: { enabled: true } },
                   loopguard: { budgets: { callsPerSession: 100 } } }"#;
    for (agent, session, agent_type) in [
        (Agent::Codex, "codex:019a-codex", "worker"),
        (Agent::Qwen, "qwen:qwen-1", "general-purpose"),
    ] {
        let mut h = Harness::with_config(agent, config(cfg));
        let mut denied = Vec::new();
        for i in 1..=22 {
            let (mut pre, mut post) = shell_call(agent, i);
            for p in [&mut pre, &mut post] {
                p["agent_id"] = json!("sub-1");
                p["agent_type"] = json!(agent_type);
                p["tool_use_id"] = json!(format!("sub_{i}"));
                if p.get("tool_call_id").is_some() {
                    p["tool_call_id"] = json!(format!("sub_{i}"));
                }
            }
            let a = out(&h.send(&pre));
            let deny = a["hookSpecificOutput"]["permissionDecision"] == "deny";
            denied.push(deny);
            if !deny {
                h.send(&post);
            }
        }
        let expected: Vec<bool> = (1..=22).map(|i| i > 20).collect();
        assert_eq!(denied, expected, "{agent:?}");
        // The parent runs the same command itself: its own history holds none of the
        // sub-agent's calls.
        let (pre, post) = shell_call(agent, 100);
        assert_eq!(out(&h.send(&pre)), Value::Null, "{agent:?}");
        h.send(&post);
        let load = |id: &str| {
            h.guard
                .store()
                .load(&loopguard_guard::session_key(None, id))
                .unwrap()
                .unwrap_or_else(|| panic!("{agent:?}: no session {id}"))
        };
        let parent = load(session);
        assert_eq!(parent.stats.calls, 1, "{agent:?}");
        assert_eq!(parent.stats.blocks, 0, "{agent:?}");
        // Its budget counted the sub-agent's 20 calls that ran and its own.
        assert_eq!(parent.budgeted_calls(), 21, "{agent:?}");
        assert_eq!(
            parent.subagents().collect::<Vec<_>>(),
            [format!("{session}/sub-1")]
        );
        let sub = load(&format!("{session}/sub-1"));
        assert_eq!(sub.stats.blocks, 2, "{agent:?}");
    }
}
