//! Claude Code's hook protocol (`loopguard_agents::claude_code`), driven through
//! [`loopguard_agents::answer`] with [`Agent::ClaudeCode`] over an in-memory guard: the
//! payloads are in the shapes of Claude Code's hooks reference (code.claude.com/docs/en/hooks).
//! The CLI shell around it (SQLite store, config discovery, fail-open and the log) is tested
//! in `loopguard-hook`.

use loopguard_agents::{answer, Agent, AgentReply};
use loopguard_core::Mode;
use loopguard_guard::{Guard, LogRow, ToolProfile};
use serde_json::Value as Json;

mod claude_code_hook {
    use super::*;

    pub(crate) struct Harness {
        guard: Guard,
        config: Option<String>,
        n: u64,
    }

    impl Harness {
        pub(crate) fn new(config: Option<&str>) -> Harness {
            Harness {
                guard: guard(config, Mode::Enforce),
                config: config.map(str::to_string),
                n: 0,
            }
        }

        /// Observe mode: a fresh guard (the test sets it before sending anything).
        fn set_mode(&mut self, mode: Mode) {
            self.guard = guard(self.config.as_deref(), mode);
        }

        /// The decisions logged for session `s`.
        fn logged(&self) -> Vec<LogRow> {
            self.guard
                .update(None, "s", |e| e.recent.iter().cloned().collect())
                .unwrap()
        }

        /// The answer to any bytes (an error answers nothing: the hook fails open).
        pub(crate) fn answer(&mut self, bytes: &[u8]) -> String {
            self.n += 1;
            answer(
                Agent::ClaudeCode,
                &self.guard,
                None,
                bytes,
                "test",
                1_000_000 + self.n,
                &mut Vec::new(),
            )
            .map(|r| r.stdout)
            .unwrap_or_default()
        }

        fn send(&mut self, json: &str) -> AgentReply {
            self.n += 1;
            let r = answer(
                Agent::ClaudeCode,
                &self.guard,
                None,
                json.as_bytes(),
                "test",
                1_000_000 + self.n,
                &mut Vec::new(),
            );
            r.unwrap()
        }

        fn pre(&mut self, tool: &str, input: &str, id: &str) -> Option<Json> {
            let r = self.send(&format!(
                r#"{{"session_id":"s","cwd":"/nonexistent","hook_event_name":"PreToolUse","tool_name":"{tool}","tool_input":{input},"tool_use_id":"{id}"}}"#
            ));
            (!r.stdout.is_empty()).then(|| serde_json::from_str(&r.stdout).unwrap())
        }

        fn post(&mut self, tool: &str, input: &str, id: &str, response: &str) -> Option<Json> {
            let r = self.send(&format!(
                r#"{{"session_id":"s","cwd":"/nonexistent","hook_event_name":"PostToolUse","tool_name":"{tool}","tool_input":{input},"tool_use_id":"{id}","tool_response":{response}}}"#
            ));
            (!r.stdout.is_empty()).then(|| serde_json::from_str(&r.stdout).unwrap())
        }

        fn event(&mut self, name: &str, extra: &str) {
            let r = self.send(&format!(
                r#"{{"session_id":"s","cwd":"/nonexistent","hook_event_name":"{name}"{extra}}}"#
            ));
            assert_eq!(r.stdout, "");
        }
    }

    fn guard(config: Option<&str>, mode: Mode) -> Guard {
        let config = match config {
            Some(c) => {
                loopguard_core::OpenClawConfig::from_json5(c)
                    .unwrap()
                    .config
            }
            None => loopguard_guard::enabled_config(),
        };
        Guard::builder()
            .config(config)
            .profile(ToolProfile::ClaudeCode)
            .mode(mode)
            .log_size(64)
            .build()
    }

    const SMALL: &str = "{ tools: { loopDetection: { enabled: true, warningThreshold: 3, criticalThreshold: 5 } } }";

    #[test]
    fn a_bash_loop_is_warned_then_denied() {
        // Warnings reach the model once per bucket of ten (at 10, 20, …), as in OpenClaw.
        let mut h = Harness::new(Some(
            "{ tools: { loopDetection: { enabled: true, warningThreshold: 10, criticalThreshold: 12 } } }",
        ));
        let input = r#"{"command":"cargo test","description":"Run tests"}"#;
        let resp =
            r#"{"stdout":"test result: FAILED","stderr":"","interrupted":false,"isImage":false}"#;
        let mut warned = None;
        let mut denied = None;
        for i in 1..=20 {
            let id = format!("t{i}");
            if let Some(out) = h.pre("Bash", input, &id) {
                let spec = &out["hookSpecificOutput"];
                if spec["permissionDecision"] == "deny" {
                    denied = Some((
                        i,
                        spec["permissionDecisionReason"]
                            .as_str()
                            .unwrap()
                            .to_string(),
                    ));
                    break;
                }
                if warned.is_none() {
                    warned = Some((i, spec["additionalContext"].as_str().unwrap().to_string()));
                }
            }
            assert!(h.post("Bash", input, &id, resp).is_none());
        }
        let (wi, wmsg) = warned.unwrap();
        assert_eq!(wi, 11); // ten earlier identical calls
        assert!(wmsg.contains("called Bash 10 times"), "{wmsg}");
        let (di, dmsg) = denied.unwrap();
        assert_eq!(di, 13);
        assert!(
            dmsg.contains("Called Bash with identical arguments and identical outcomes 12 times"),
            "{dmsg}"
        );
    }

    #[test]
    fn a_new_prompt_starts_a_new_run() {
        let mut h = Harness::new(Some(SMALL));
        let input = r#"{"file_path":"/a"}"#;
        for i in 0..5 {
            h.pre("Read", input, &format!("a{i}"));
            h.post(
                "Read",
                input,
                &format!("a{i}"),
                r#"{"type":"text","file":{"content":"x"}}"#,
            );
        }
        assert!(h.pre("Read", input, "a5").is_some());
        h.event("UserPromptSubmit", r#","prompt":"try again""#);
        assert!(
            h.pre("Read", input, "b0").is_none(),
            "earlier prompts do not count"
        );
    }

    #[test]
    fn compaction_then_three_identical_calls_stops_the_agent() {
        let mut h = Harness::new(None);
        let input = r#"{"command":"curl localhost:8080/health"}"#;
        let resp = r#"{"stdout":"503","stderr":"","interrupted":false}"#;
        h.event("UserPromptSubmit", r#","prompt":"deploy""#);
        h.pre("Bash", input, "x0");
        h.post("Bash", input, "x0", resp);
        h.event(
            "PreCompact",
            r#","trigger":"auto","custom_instructions":"""#,
        );
        h.event("SessionStart", r#","source":"compact""#);
        let mut stopped = None;
        for i in 1..=3 {
            let id = format!("y{i}");
            assert!(h.pre("Bash", input, &id).is_none());
            if let Some(out) = h.post("Bash", input, &id, resp) {
                stopped = Some((i, out));
            }
        }
        let (i, out) = stopped.unwrap();
        assert_eq!(i, 3);
        assert_eq!(out["continue"], false);
        let reason = out["stopReason"].as_str().unwrap();
        assert!(
            reason.contains("compaction_loop_persisted")
                && reason.contains("Bash")
                && reason.contains("3 times"),
            "{reason}"
        );
        // The run is over: the next call is denied until a new prompt.
        let out = h.pre("Bash", input, "y4").unwrap();
        assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
        h.event("UserPromptSubmit", r#","prompt":"ok, stop""#);
        assert!(h.pre("Bash", input, "z1").is_none());
    }

    #[test]
    fn post_compact_and_session_start_arm_once() {
        let mut h = Harness::new(None);
        let input = r#"{"command":"curl localhost:8080/health"}"#;
        let resp = r#"{"stdout":"503","stderr":"","interrupted":false}"#;
        h.event("UserPromptSubmit", r#","prompt":"deploy""#);
        // PreCompact arms nothing: another hook may still block the compaction.
        h.event(
            "PreCompact",
            r#","trigger":"auto","custom_instructions":"""#,
        );
        for i in 1..=3 {
            h.pre("Bash", input, &format!("a{i}"));
            assert!(h.post("Bash", input, &format!("a{i}"), resp).is_none());
        }
        h.event("PostCompact", r#","trigger":"auto","compact_summary":"s""#);
        h.event("SessionStart", r#","source":"compact""#);
        let decisions: Vec<_> = h
            .logged()
            .into_iter()
            .filter(|e| e.event.contains("Compact") || e.event == "SessionStart")
            .map(|e| e.decision)
            .collect();
        assert_eq!(decisions, ["armed", "already-armed"]);
        let mut stopped = None;
        for i in 1..=3 {
            let id = format!("b{i}");
            h.pre("Bash", input, &id);
            stopped = stopped.or(h.post("Bash", input, &id, resp).map(|o| (i, o)));
        }
        assert_eq!(stopped.unwrap().0, 3);
    }

    #[test]
    fn post_tool_batch_records_only_what_post_tool_use_missed() {
        let mut h = Harness::new(Some(SMALL));
        let input = r#"{"file_path":"/a"}"#;
        // t1 gets its PostToolUse; t2's PostToolUse hook never ran (timed out, say).
        h.pre("Read", input, "t1");
        h.post(
            "Read",
            input,
            "t1",
            r#"{"type":"text","file":{"content":"x"}}"#,
        );
        h.pre("Read", input, "t2");
        let r = h.send(
            r#"{"session_id":"s","hook_event_name":"PostToolBatch","permission_mode":"plan","tool_calls":[
                {"tool_name":"Read","tool_input":{"file_path":"/a"},"tool_use_id":"t1","tool_response":"     1\tx"},
                {"tool_name":"Read","tool_input":{"file_path":"/a"},"tool_use_id":"t2","tool_response":"     1\tx"}]}"#,
        );
        assert_eq!(r.stdout, "");
        let logged = h.logged();
        let n = logged.len();
        assert_eq!(
            (
                logged[n - 2].event.as_str(),
                logged[n - 2].call_id.as_deref(),
                &*logged[n - 2].decision.text()
            ),
            ("PostToolBatch", Some("t2"), "recorded")
        );
        assert_eq!(
            logged[n - 1].decision,
            "batch: 1 recorded, 1 already recorded"
        );
        // A late PostToolUse for t2 is now a duplicate: the call counts once.
        h.post(
            "Read",
            input,
            "t2",
            r#"{"type":"text","file":{"content":"x"}}"#,
        );
        assert_eq!(h.logged().last().unwrap().decision, "duplicate");
    }

    #[test]
    fn a_subagent_is_its_own_run() {
        let mut h = Harness::new(Some(SMALL));
        let input = r#"{"pattern":"TODO"}"#;
        let resp = r#"{"numFiles":0,"filenames":[]}"#;
        let sub = |h: &mut Harness, ev: &str, id: &str| {
            h.send(&format!(
                r#"{{"session_id":"s","hook_event_name":"{ev}","agent_id":"agent-1","agent_type":"Explore","tool_name":"Grep","tool_input":{input},"tool_use_id":"{id}","tool_response":{resp}}}"#
            ))
        };
        h.event("UserPromptSubmit", r#","prompt":"find TODOs""#);
        for i in 0..4 {
            h.pre("Grep", input, &format!("m{i}"));
            h.post("Grep", input, &format!("m{i}"), resp);
        }
        // The subagent's identical calls do not add to the main thread's four.
        for i in 0..4 {
            assert_eq!(sub(&mut h, "PreToolUse", &format!("s{i}")).stdout, "");
            sub(&mut h, "PostToolUse", &format!("s{i}"));
        }
        h.event(
            "SubagentStop",
            r#","agent_id":"agent-1","agent_type":"Explore""#,
        );
        let runs: std::collections::BTreeSet<_> =
            h.logged().into_iter().filter_map(|e| e.run).collect();
        assert_eq!(runs.into_iter().collect::<Vec<_>>(), ["prompt-1"]);
        // The subagent's calls are in a session of their own, in the same prompt.
        let sub_runs: std::collections::BTreeSet<_> = h
            .guard
            .update(None, "s/agent-1", |e| {
                e.recent.iter().cloned().collect::<Vec<_>>()
            })
            .unwrap()
            .into_iter()
            .filter_map(|e| e.run)
            .collect();
        assert_eq!(
            sub_runs.into_iter().collect::<Vec<_>>(),
            ["prompt-1/agent-1"]
        );
        // Back in the main thread: the fifth call completes the streak, the sixth is
        // blocked (five identical outcomes), as if the subagent had not run.
        assert!(h.pre("Grep", input, "m4").is_none());
        h.post("Grep", input, "m4", resp);
        let out = h.pre("Grep", input, "m5").unwrap();
        assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
    }

    #[test]
    fn the_same_event_twice_counts_once() {
        let mut h = Harness::new(Some(SMALL));
        for i in 0..5 {
            let id = format!("d{i}");
            // As if the hook were registered in both the user and the project settings.
            for _ in 0..2 {
                assert!(h.pre("Read", "{}", &id).is_none());
            }
            for _ in 0..2 {
                assert!(h.post("Read", "{}", &id, r#""same""#).is_none());
            }
        }
        // Five calls, not ten: the sixth is the first to be blocked (five identical outcomes).
        assert!(h.pre("Read", "{}", "d5").is_some());
        let dups = h
            .logged()
            .iter()
            .filter(|e| e.decision == "duplicate")
            .count();
        assert_eq!(dups, 10);
    }

    #[test]
    fn observe_mode_never_interferes() {
        let mut h = Harness::new(Some(SMALL));
        h.set_mode(Mode::Observe);
        for i in 0..10 {
            let id = format!("o{i}");
            assert!(h.pre("Read", "{}", &id).is_none());
            assert!(h.post("Read", "{}", &id, r#""same""#).is_none());
        }
        let events = h.logged();
        assert!(events.iter().any(|e| e.decision == "would-block"));
    }

    #[test]
    fn polling_a_background_shell_is_a_known_poll() {
        let mut h = Harness::new(Some(SMALL));
        let input = r#"{"bash_id":"bash_1"}"#;
        let resp = r#"{"shellId":"bash_1","command":"npm run build","status":"running","exitCode":null,"stdout":"","stderr":"","stdoutLines":0,"stderrLines":0,"timestamp":"T"}"#;
        let mut denied = None;
        for i in 1..=8 {
            let id = format!("p{i}");
            if let Some(out) = h.pre("BashOutput", input, &id) {
                if out["hookSpecificOutput"]["permissionDecision"] == "deny" {
                    denied = Some(
                        out["hookSpecificOutput"]["permissionDecisionReason"]
                            .as_str()
                            .unwrap()
                            .to_string(),
                    );
                    break;
                }
            }
            h.post("BashOutput", input, &id, &resp.replace('T', &i.to_string()));
        }
        let msg = denied.unwrap();
        assert!(
            msg.contains("BashOutput") && msg.contains("stuck polling loop"),
            "{msg}"
        );
    }

    #[test]
    fn permission_mode_is_recorded() {
        let mut h = Harness::new(None);
        h.send(r#"{"session_id":"s","hook_event_name":"UserPromptSubmit","permission_mode":"acceptEdits","prompt":"go"}"#);
        // An event without the field keeps the last one.
        h.pre("Read", "{}", "a");
        let mode = h
            .guard
            .update(None, "s", |e| {
                e.meta.get(loopguard_agents::PERMISSION_MODE).cloned()
            })
            .unwrap();
        assert_eq!(mode.as_deref(), Some("acceptEdits"));
    }

    #[test]
    fn session_end_forgets_the_session() {
        let mut h = Harness::new(None);
        h.pre("Read", "{}", "a");
        assert_eq!(h.guard.sessions().unwrap().len(), 1);
        h.event("SessionEnd", r#","reason":"other""#);
        assert!(h.guard.sessions().unwrap().is_empty());
    }

    /// VS Code's agent runs the hooks of `.claude/settings.json` with camelCase
    /// `sessionId`/`hookEventName` (VS Code's agent hooks reference, "Common input
    /// fields"): the same loop is warned and denied as in Claude Code.
    #[test]
    fn the_vs_code_camel_case_variant_is_guarded_the_same() {
        let mut h = Harness::new(None);
        let mut said = Vec::new();
        for i in 0..21 {
            let r = h.send(&format!(
                r#"{{"sessionId":"s","hookEventName":"PreToolUse","timestamp":"2026-01-01T00:00:00Z","tool_name":"Read","tool_input":{{"file_path":"/a"}},"tool_use_id":"v{i}"}}"#
            ));
            said.push(r.stdout);
            h.send(&format!(
                r#"{{"sessionId":"s","hookEventName":"PostToolUse","tool_name":"Read","tool_input":{{"file_path":"/a"}},"tool_use_id":"v{i}","tool_response":"same"}}"#
            ));
        }
        assert!(said[..10].iter().all(String::is_empty), "{said:?}");
        assert!(said[10].contains("additionalContext"), "{said:?}");
        assert!(
            said[20].contains("\"permissionDecision\":\"deny\""),
            "{said:?}"
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Whatever arrives, the hook answers (empty or JSON) and never panics.
        #[test]
        fn any_bytes_are_answered(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let r = Harness::new(None).answer(&bytes);
            proptest::prop_assert!(r.is_empty() || serde_json::from_str::<Json>(&r).is_ok());
        }

        /// Well-formed envelopes with arbitrary tool inputs and responses never panic.
        #[test]
        fn any_tool_values_are_answered(
            event in proptest::sample::select(vec!["PreToolUse", "PostToolUse", "PostToolUseFailure"]),
            tool in proptest::sample::select(vec!["Bash", "BashOutput", "TaskOutput", "TodoWrite", "Read", "mcp__a__b"]),
            input in r#"(\{\}|\[\]|null|1|"x"|\{"todos":[^{}]{0,5}\}|\{"command":1\}|\{"bash_id":\[\]\})"#,
            response in r#"(\{\}|\[\]|null|"\\ud800"|\{"stdout":1,"stderr":\[\],"interrupted":"y"\}|\{"task":1\}|\{"newTodos":\{\}\})"#,
        ) {
            let json = format!(
                r#"{{"session_id":"s","hook_event_name":"{event}","tool_name":"{tool}","tool_input":{input},"tool_response":{response},"error":"Exit code x"}}"#
            );
            let r = Harness::new(None).answer(json.as_bytes());
            proptest::prop_assert!(r.is_empty() || serde_json::from_str::<Json>(&r).is_ok());
        }
    }
}
