//! A folder holding one file of each supported format, read as `loopguard replay DIR`
//! reads it (format recognised from the content by `reader::Source`): every call that an
//! independent count finds in the file is read (no call lost in any format). The independent
//! counts are written here, separately from the adapters: a grep for the format's call
//! marker, or a count over the file parsed with `serde_json`.
//!
//! Not in the folder: the OpenClaw SQLite store and opencode's database (databases, covered
//! by `tests/openclaw_sqlite.rs` and `tests/agent_logs.rs`).

use std::path::{Path, PathBuf};

use loopguard_adapters::reader::{Detected, Flow, Item, ReadOptions, Source};
use loopguard_adapters::{Context, Format};
use loopguard_events::EventKind;
use serde_json::Value as J;

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(rel)
}

fn grep(text: &str, marker: &str) -> usize {
    text.matches(marker).count()
}

fn json(text: &str) -> J {
    serde_json::from_str(text).expect("fixture is JSON")
}

fn arr(v: &J) -> &Vec<J> {
    v.as_array().expect("an array")
}

/// An independent count of the calls in a file's text.
type Count = fn(&str) -> usize;

/// (format expected, fixture, independent count of its calls).
fn cases() -> Vec<(Format, &'static str, Count)> {
    vec![
        (Format::Events, "parity/run_scoping.events.jsonl", |t| {
            grep(t, r#""type":"call""#)
        }),
        (
            Format::OpenClaw,
            "transcripts/openclaw/read-loop.jsonl",
            |t| grep(t, r#""type":"toolCall""#),
        ),
        (
            Format::OpenClaw,
            "transcripts/openclaw/v1-joined-line.jsonl",
            |t| grep(t, r#""type":"toolCall""#),
        ),
        (
            Format::CallStream,
            "transcripts/call-stream/healthy.json",
            |t| {
                json(t)
                    .as_object()
                    .unwrap()
                    .values()
                    .flat_map(|s| arr(&s["calls"]).iter())
                    .filter(|c| c["kind"] == "call")
                    .count()
            },
        ),
        (
            Format::ClaudeCode,
            "transcripts/claude-code/loop.jsonl",
            |t| {
                // Split lines repeat tool_use blocks: distinct ids.
                let mut ids: Vec<&str> = t
                    .split(r#""type":"tool_use","id":""#)
                    .skip(1)
                    .map(|s| &s[..s.find('"').unwrap()])
                    .collect();
                ids.sort_unstable();
                ids.dedup();
                ids.len()
            },
        ),
        (
            Format::ClaudeCode,
            "transcripts/claude-code/parallel-results-first.jsonl",
            |t| grep(t, r#""type":"tool_use""#),
        ),
        (
            Format::ChatCompletions,
            "transcripts/chat-completions/healthy.json",
            |t| {
                let v = json(t);
                let ms = v
                    .get("messages")
                    .map_or_else(|| arr(&v).clone(), |m| arr(m).clone());
                ms.iter()
                    .filter_map(|m| m["tool_calls"].as_array())
                    .map(Vec::len)
                    .sum::<usize>()
                    + ms.iter()
                        .filter(|m| m.get("function_call").is_some_and(|f| !f.is_null()))
                        .count()
            },
        ),
        (
            Format::Responses,
            "transcripts/responses/healthy.json",
            |t| {
                let v = json(t);
                ["input", "output", "items"]
                    .iter()
                    .filter_map(|k| v.get(*k).and_then(J::as_array))
                    .flatten()
                    // Server-side tools (web search) have no call id: not the agent's calls.
                    .filter(|i| i["type"].as_str().is_some_and(|s| s.ends_with("_call")))
                    .filter(|i| i.get("call_id").is_some() || i["type"] == "mcp_call")
                    .count()
            },
        ),
        (
            Format::CodexRollout,
            "transcripts/codex/rollout-2026-09-05T15-26-13-loop.jsonl",
            |t| {
                grep(
                    t,
                    r#""type":"response_item","payload":{"type":"function_call""#,
                ) + grep(
                    t,
                    r#""type":"response_item","payload":{"type":"custom_tool_call""#,
                )
            },
        ),
        (
            Format::CodexRollout,
            "transcripts/codex/rollout-2026-09-05T17-00-00-mid-turn.jsonl",
            |t| grep(t, r#""type":"function_call""#),
        ),
        (
            Format::SweAgent,
            "transcripts/swe-agent/v1-environment-last.traj",
            |t| arr(&json(t)["trajectory"]).len(),
        ),
        (
            Format::MiniSweAgent,
            "transcripts/mini-swe-agent/format-last.traj.json",
            |t| grep(t, "```bash"),
        ),
        (
            Format::OpenHands,
            "transcripts/openhands/trajectory.json",
            |t| {
                arr(&json(t))
                    .iter()
                    .filter(|e| e.get("action").is_some() && e.get("tool_call_metadata").is_some())
                    .count()
            },
        ),
        (
            Format::OpenHandsEvents,
            "transcripts/openhands/events.jsonl",
            |t| grep(t, r#""kind":"ActionEvent""#),
        ),
        (
            Format::OpenHandsEval,
            "transcripts/openhands/output.jsonl",
            |t| grep(t, r#""action":"run""#),
        ),
        (
            Format::Anthropic,
            "transcripts/anthropic/proxy-log.jsonl",
            |t| {
                let mut ids: Vec<&str> = t
                    .split(r#""type":"tool_use","id":""#)
                    .skip(1)
                    .map(|s| &s[..s.find('"').unwrap()])
                    .collect();
                ids.sort_unstable();
                ids.dedup();
                ids.len()
            },
        ),
        (
            Format::Anthropic,
            "transcripts/anthropic/request.json",
            |t| grep(t, r#""type": "tool_use""#),
        ),
        (
            Format::ChatLog,
            "transcripts/chat-log/tau-bench-results.json",
            |t| grep(t, r#""type": "function""#),
        ),
        (
            Format::Otlp,
            "transcripts/otlp/genai-file-exporter.jsonl",
            |t| grep(t, r#""stringValue":"execute_tool""#),
        ),
        (
            Format::Langfuse,
            "transcripts/langfuse/observations-api.json",
            |t| grep(t, r#""type": "TOOL""#),
        ),
        (Format::LangSmith, "transcripts/langsmith/runs.jsonl", |t| {
            grep(t, r#""run_type": "tool""#)
        }),
        (Format::Atif, "transcripts/atif/trajectory.json", |t| {
            grep(t, r#""function_name""#)
        }),
        (
            Format::OpenAiAgents,
            "transcripts/openai-agents/batch.json",
            |t| grep(t, r#""type": "function""#),
        ),
        (
            Format::ManagedAgents,
            "transcripts/managed-agents/events.json",
            |t| grep(t, r#"tool_use","#),
        ),
        (
            Format::Gemini,
            "transcripts/gemini/guarded-loop.jsonl",
            |t| {
                // Messages are written again as they change: distinct call ids.
                let mut ids: Vec<String> = t
                    .lines()
                    .map(json)
                    .flat_map(|v| v["toolCalls"].as_array().cloned().unwrap_or_default())
                    .map(|c| c["id"].as_str().unwrap().to_string())
                    .collect();
                ids.sort_unstable();
                ids.dedup();
                ids.len()
            },
        ),
        (
            Format::GeminiJson,
            "transcripts/gemini-json/session-guarded-loop.json",
            |t| {
                arr(&json(t)["messages"])
                    .iter()
                    .map(|m| m["toolCalls"].as_array().map_or(0, Vec::len))
                    .sum()
            },
        ),
        (Format::Qwen, "transcripts/qwen/guarded-loop.jsonl", |t| {
            grep(t, r#""functionCall":"#)
        }),
        (
            Format::Copilot,
            "transcripts/copilot/guarded-loop.events.jsonl",
            |t| grep(t, r#""type":"tool.execution_start""#),
        ),
        (
            Format::Factory,
            "transcripts/factory/guarded-loop.jsonl",
            |t| grep(t, r#""type":"tool_use""#),
        ),
        (
            Format::Cline,
            "transcripts/cline/marine-response.api_conversation_history.json",
            |t| grep(t, r#""type":"tool_use""#),
        ),
    ]
}

/// Reads `path` as the replay command does: detect, then read what detection kept.
fn read_calls(path: &Path) -> (Detected, usize) {
    let mut source = Source::open(path).unwrap();
    let detected = source.detect().unwrap();
    let Detected::Format(format) = detected else {
        return (detected, 0);
    };
    let mut calls = 0;
    let ctx = Context {
        session: "s".into(),
        agent: None,
    };
    source
        .read(format, &ctx, &ReadOptions::default(), &mut |i| {
            if let Item::Event(e) = i {
                calls += usize::from(e.event.kind == EventKind::Call);
            }
            Flow::Continue
        })
        .unwrap();
    (detected, calls)
}

#[test]
fn a_folder_of_every_format_reads_every_call() {
    let dir = tempfile::tempdir().unwrap();
    let mut formats = Vec::new();
    for (i, (format, rel, count)) in cases().into_iter().enumerate() {
        let src = fixture(rel);
        let name = src.file_name().unwrap().to_string_lossy().into_owned();
        let dst = dir.path().join(format!("{i:02}-{name}"));
        std::fs::copy(&src, &dst).unwrap();
        let text = std::fs::read_to_string(&dst).unwrap();
        let expected = count(&text);
        assert!(expected > 0, "{rel}: the independent count found no call");
        let (detected, calls) = read_calls(&dst);
        assert_eq!(detected, Detected::Format(format), "{rel}");
        assert_eq!(calls, expected, "{rel}: calls read vs counted");
        formats.push(format);
    }
    // Every format but the databases is in the folder.
    for f in Format::ALL {
        assert!(
            formats.contains(&f)
                // Stores: a database, a folder of JSON files (tests/agent_logs.rs).
                || matches!(
                    f,
                    Format::OpenClawSqlite | Format::Opencode | Format::OpencodeStorage
                ),
            "{f} has no file"
        );
    }
}

#[test]
fn pipes_are_detected_on_a_kept_prefix() {
    // A document larger than any prefix, through a reader that cannot seek.
    for rel in [
        "transcripts/swe-agent/v1-environment-last.traj",
        "transcripts/openclaw/read-loop.jsonl",
    ] {
        let bytes = std::fs::read(fixture(rel)).unwrap();
        let (_, want) = read_calls(&fixture(rel));
        let mut source = Source::from_reader("pipe", std::io::Cursor::new(bytes));
        let Detected::Format(format) = source.detect().unwrap() else {
            panic!("{rel}: not recognised through a pipe");
        };
        let mut calls = 0;
        source
            .read(
                format,
                &Context::default(),
                &ReadOptions::default(),
                &mut |i| {
                    if let Item::Event(e) = i {
                        calls += usize::from(e.event.kind == EventKind::Call);
                    }
                    Flow::Continue
                },
            )
            .unwrap();
        assert_eq!(calls, want, "{rel}");
    }
}
