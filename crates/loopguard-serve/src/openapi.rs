//! `GET /openapi.json`: the OpenAPI 3.1 description of the HTTP API.
//!
//! Written out as data rather than derived from the handlers: the contract (docs/serve.md,
//! events.md) is fixed and small, and a test checks that every route of the router is in it.

use std::sync::OnceLock;

use loopguard_guard::LogDecision;
use serde_json::{json, Value};

fn error_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } }
    })
}

fn build() -> Value {
    let mut doc = document_without_405();
    crate::loops_api::openapi(&mut doc);
    crate::dashboard::openapi(&mut doc);
    // Every operation answers 405 for another method of its path (with `Allow`).
    let e405 = error_response("Not a method of this path; `Allow` lists the methods");
    if let Some(paths) = doc["paths"].as_object_mut() {
        for ops in paths.values_mut().filter_map(Value::as_object_mut) {
            for op in ops.values_mut() {
                if let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) {
                    responses.insert("405".to_owned(), e405.clone());
                }
            }
        }
    }
    if let Some(paths) = doc["paths"].as_object_mut() {
        for (agent, schema) in agent_hooks() {
            paths.insert(format!("/v1/hooks/{agent}"), agent_hook_path(agent, schema));
        }
    }
    doc["components"]["schemas"]["Detector"] = json!({
        "enum": loopguard_core::Detector::ALL
            .into_iter()
            .chain(loopguard_core::Detector::EXTRA)
            .map(|d| d.as_str())
            .collect::<Vec<_>>(),
        "description": "OpenClaw's detectors, then the strict profile's"
    });
    doc
}

/// The tool events of the payloads shaped like Claude Code's: they need a `tool_name`.
const TOOL_EVENTS: [&str; 3] = ["PreToolUse", "PostToolUse", "PostToolUseFailure"];

/// A hook payload: an object with these string fields required, and a `tool_name` string
/// when `event_field` names a tool event.
fn hook_payload(required: &[&str], event_field: Option<&str>, description: &str) -> Value {
    let mut props = serde_json::Map::new();
    for f in required {
        props.insert((*f).to_owned(), json!({ "type": "string" }));
    }
    let mut schema = json!({
        "type": "object",
        "description": description,
        "required": required,
        "properties": props,
    });
    if let Some(event) = event_field {
        schema["if"] = json!({ "properties": { event: { "enum": TOOL_EVENTS } } });
        schema["then"] = json!({ "required": ["tool_name"], "properties": { "tool_name": { "type": "string" } } });
    }
    schema
}

/// Claude Code's hook input, as `loopguard_agents`' Claude Code protocol reads it: the
/// events it acts on check their fields' types; any other event is answered `{}` unread.
fn claude_code_hook() -> Value {
    let opt = json!({ "type": ["string", "null"] });
    let context = json!({ "properties": {
        "cwd": opt, "agent_id": opt, "agent_type": opt, "permission_mode": opt, "transcript_path": opt
    } });
    let tool = json!({
        "required": ["tool_name", "tool_input"],
        "properties": { "tool_name": { "type": "string" }, "tool_input": {}, "tool_use_id": opt }
    });
    let when = |events: &[&str], then: Value| json!({ "if": { "properties": { "hook_event_name": { "enum": events } } }, "then": then });
    json!({
        "type": "object",
        "description": "The hook input Claude Code sends (session_id, hook_event_name, tool_name, tool_input, tool_use_id, tool_response, ...). Events other than those below are answered {} without reading further.",
        "required": ["session_id", "hook_event_name"],
        "properties": { "session_id": { "type": "string" }, "hook_event_name": { "type": "string" } },
        "allOf": [
            when(&["PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "UserPromptSubmit", "PostCompact", "SessionEnd"], context.clone()),
            when(&["SessionStart"], json!({
                "properties": { "source": opt },
                "if": { "required": ["source"], "properties": { "source": { "const": "compact" } } },
                "then": context
            })),
            when(&["PreToolUse", "PostToolUse", "PostToolUseFailure"], tool.clone()),
            when(&["PostToolUse"], json!({ "required": ["tool_response"] })),
            when(&["PostToolUseFailure"], json!({
                "properties": { "error": opt, "is_interrupt": { "type": ["boolean", "null"] } },
                "if": { "required": ["error"] },
                "else": { "properties": { "error_message": opt } }
            })),
            when(&["PostToolBatch"], json!({
                "required": ["tool_calls"],
                "properties": { "tool_calls": { "type": "array", "items": { "type": "object", "allOf": [tool] } } }
            })),
            when(&["SessionEnd"], json!({ "properties": { "reason": opt } }))
        ]
    })
}

/// The other agents whose hooks answer in JSON, and what their payloads must hold (each
/// agent's protocol in `loopguard_agents`).
fn agent_hooks() -> Vec<(&'static str, Value)> {
    let claude_like = |agent: &str| {
        hook_payload(
            &["session_id", "hook_event_name"],
            Some("hook_event_name"),
            &format!("The hook input {agent} sends, shaped like Claude Code's (session_id, hook_event_name, tool_name, tool_input, ...)"),
        )
    };
    vec![
        ("codex", claude_like("Codex")),
        ("gemini", {
            let mut s = hook_payload(&["session_id", "hook_event_name"], None, "The hook input Gemini CLI sends (session_id, hook_event_name, tool_name, tool_input, ...)");
            s["if"] = json!({ "properties": { "hook_event_name": { "enum": ["BeforeTool", "AfterTool"] } } });
            s["then"] = json!({ "required": ["tool_name"], "properties": { "tool_name": { "type": "string" } } });
            s
        }),
        ("qwen", claude_like("Qwen Code")),
        ("factory", claude_like("Factory Droid")),
        (
            "copilot",
            json!({
                "type": "object",
                "description": "The hook input GitHub Copilot sends (sessionId, toolName, toolArgs, toolResult, ...; the event from hook_event_name or the fields present). The session is sessionId, else session_id, else the cwd.",
                "anyOf": [
                    { "required": ["sessionId"], "properties": { "sessionId": { "type": "string" } } },
                    { "required": ["session_id"], "properties": { "session_id": { "type": "string" } } },
                    { "required": ["cwd"], "properties": { "cwd": { "type": "string" } } }
                ]
            }),
        ),
        ("cursor", {
            let mut s = hook_payload(&["conversation_id", "hook_event_name"], None, "The hook input Cursor sends (conversation_id, hook_event_name, tool_name, command, ...)");
            s["allOf"] = json!([
                { "if": { "properties": { "hook_event_name": { "enum": ["preToolUse", "postToolUse", "postToolUseFailure", "beforeMCPExecution", "afterMCPExecution"] } } },
                  "then": { "required": ["tool_name"], "properties": { "tool_name": { "type": "string" } } } },
                { "if": { "properties": { "hook_event_name": { "enum": ["beforeShellExecution", "afterShellExecution"] } } },
                  "then": { "required": ["command"], "properties": { "command": { "type": "string" } } } }
            ]);
            s
        }),
        ("cline", {
            let mut s = hook_payload(
                &["taskId", "hookName"],
                None,
                "The hook input Cline sends (taskId, hookName, preToolUse / postToolUse, ...)",
            );
            let body = |key: &str| json!({ "required": [key], "properties": { key: { "type": "object", "required": ["toolName"], "properties": { "toolName": { "type": "string" } } } } });
            s["allOf"] = json!([
                { "if": { "properties": { "hookName": { "const": "PreToolUse" } } }, "then": body("preToolUse") },
                { "if": { "properties": { "hookName": { "const": "PostToolUse" } } }, "then": body("postToolUse") }
            ]);
            s
        }),
    ]
}

/// `POST /v1/hooks/{agent}` for one agent.
fn agent_hook_path(agent: &str, schema: Value) -> Value {
    let e = error_response;
    json!({ "post": {
        "operationId": format!("{agent}Hook"),
        "summary": format!("{agent}'s hooks: the answer is what `loopguard hook {agent}` prints for the same input"),
        "requestBody": { "required": true, "content": { "application/json": { "schema": schema } } },
        "responses": {
            "200": { "description": "The hook output in the agent's format (`{}` when there is nothing to say)", "content": { "application/json": { "schema": { "type": "object" } } } },
            "400": e("Malformed request: `error` says what is wrong, `field` names the field"),
            "401": e("Missing or unknown bearer token (only when the server runs with --tokens)"),
            "405": e("Not a method of this path; `Allow` lists the methods"),
            "413": e("The body is over --max-body"),
            "408": e("The body did not arrive in time"),
            "503": e("The session store cannot be reached; callers should fail open (let the call run)")
        }
    } })
}

fn document_without_405() -> Value {
    let e400 = error_response("Malformed request: `error` says what is wrong, `field` names the field (as `loopguard replay` does)");
    let e401 =
        error_response("Missing or unknown bearer token (only when the server runs with --tokens)");
    let e413 = error_response("The body is over --max-body");
    let e503 = error_response(
        "The session store cannot be reached; callers should fail open (let the call run)",
    );
    let e404 = error_response("No such session for this tenant");
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "loopguard serve",
            "version": env!("CARGO_PKG_VERSION"),
            "summary": "OpenClaw's tool-call loop detection as a service",
            "description": "Report each tool call before it runs and its outcome after; the answer says whether to run it (allow, warn) or not (block), exactly as `loopguard replay --json` decides for the same stream (enforce mode). Sessions are namespaced by tenant when the server has --tokens.",
            "license": { "name": "MIT OR Apache-2.0", "identifier": "MIT OR Apache-2.0" }
        },
        "servers": [ { "url": "http://127.0.0.1:7878" } ],
        "security": [ { "bearer": [] }, {} ],
        "paths": {
            "/v1/events": { "post": {
                "operationId": "postEvents",
                "summary": "Apply events; answer one decision record per event, in order",
                "requestBody": { "required": true, "content": {
                    "application/json": { "schema": { "$ref": "#/components/schemas/Event" } },
                    "application/x-ndjson": { "schema": { "type": "string", "description": "JSON Lines: one Event a line; blank lines are skipped but counted in line numbers" } }
                } },
                "responses": {
                    "200": { "description": "The decision records", "content": {
                        "application/json": { "schema": { "$ref": "#/components/schemas/Decision" } },
                        "application/x-ndjson": { "schema": { "type": "string", "description": "One Decision a line, in request order" } }
                    } },
                    "400": e400, "401": e401, "413": e413,
                    "408": error_response("The body did not arrive in time"),
                    "415": error_response("Neither application/json nor application/x-ndjson"),
                    "503": e503
                }
            } },
            "/v1/sessions": { "get": {
                "operationId": "listSessions",
                "summary": "Every session of the caller (its tenant's, with tokens), most recently used first where the store knows; a key scan with Redis",
                "responses": {
                    "200": { "description": "The sessions", "content": { "application/json": { "schema": { "type": "array", "items": { "$ref": "#/components/schemas/Session" } } } } },
                    "401": e401,
                    "500": error_response("A session's stored entry cannot be read (damaged, or written by a newer loopguard); DELETE it to start over"),
                    "503": e503
                }
            } },
            "/v1/sessions/{session}": {
                "parameters": [ { "name": "session", "in": "path", "required": true, "schema": { "type": "string" }, "description": "The session id (percent-encode `/`)" } ],
                "get": {
                    "operationId": "getSession",
                    "summary": "A session's counters (every event ever applied) and recent decisions",
                    "responses": {
                        "200": { "description": "The session", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Session" } } } },
                        "401": e401, "404": e404,
                        "500": error_response("The session's stored entry cannot be read (damaged, or written by a newer loopguard); DELETE it to start over"),
                        "503": e503
                    }
                },
                "delete": {
                    "operationId": "deleteSession",
                    "summary": "Forget a session",
                    "responses": { "204": { "description": "Forgotten" }, "401": e401, "404": e404, "503": e503 }
                }
            },
            "/v1/hooks/claude-code": { "post": {
                "operationId": "claudeCodeHook",
                "summary": "Claude Code's `type: \"http\"` hook: the answer is what `loopguard hook claude-code` prints for the same input",
                "requestBody": { "required": true, "content": { "application/json": { "schema": claude_code_hook() } } },
                "responses": {
                    "200": { "description": "The hook output (`{}` when there is nothing to say)", "content": { "application/json": { "schema": { "type": "object" } } } },
                    "400": e400, "401": e401, "413": e413, "503": e503
                }
            } },
            "/v1/traces": { "post": {
                "operationId": "postTraces",
                "summary": "OTLP/HTTP trace receiver: tool spans become events, applied in observe mode once their trace is quiet",
                "description": "An OpenTelemetry Collector's otlphttp exporter or an SDK's OTLP/HTTP exporter posts ExportTraceServiceRequest bodies here. Tool spans (GenAI execute_tool, Pydantic AI, OpenInference TOOL, Traceloop tool) are buffered per trace and applied --trace-wait after the trace's last span once the parents its spans name have arrived (at the latest 12 waits after its first); late spans are applied after the spans already applied. Loops show in /metrics (loopguard_trace_loops_total by tenant, detector, level, service, agent) and in GET /v1/sessions/{session} (the session is the gen_ai.conversation.id, else the trace id). See docs/traces/live.md.",
                "requestBody": { "required": true, "content": {
                    "application/x-protobuf": { "schema": { "type": "string", "format": "binary", "description": "opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest; Content-Encoding: gzip accepted" } },
                    "application/json": { "schema": { "type": "object", "description": "The OTLP/JSON encoding of ExportTraceServiceRequest (resourceSpans); Content-Encoding: gzip accepted" } }
                } },
                "responses": {
                    "200": { "description": "Accepted: an ExportTraceServiceResponse, in the request's encoding; partialSuccess.errorMessage lists what could not be read (JSON only)", "content": {
                        "application/x-protobuf": { "schema": { "type": "string", "format": "binary" } },
                        "application/json": { "schema": { "type": "object", "properties": { "partialSuccess": { "type": "object", "properties": { "rejectedSpans": { "type": "string" }, "errorMessage": { "type": "string" } } } } } }
                    } },
                    "400": e400, "401": e401, "413": e413,
                    "408": error_response("The body did not arrive in time"),
                    "415": error_response("Neither application/x-protobuf nor application/json, or a Content-Encoding other than gzip")
                }
            } },
            "/v1/logs": { "post": {
                "operationId": "postLogs",
                "summary": "OTLP/HTTP log receiver, for agents that record tool calls as log events (Codex's codex.tool_result): each record is read as a span and judged like /v1/traces",
                "description": "Codex's [otel] exporter (otlp-http, protocol json or binary) posts ExportLogsServiceRequest bodies here. A codex.tool_result record (tool_name, call_id, arguments, output, success, conversation.id) is a tool call judged with Codex's tool profile; other records are ignored. Records outside a trace are buffered per conversation.id. See docs/traces/codex.md.",
                "requestBody": { "required": true, "content": {
                    "application/x-protobuf": { "schema": { "type": "string", "format": "binary", "description": "opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest; Content-Encoding: gzip accepted" } },
                    "application/json": { "schema": { "type": "object", "description": "The OTLP/JSON encoding of ExportLogsServiceRequest (resourceLogs); Content-Encoding: gzip accepted" } }
                } },
                "responses": {
                    "200": { "description": "Accepted: an ExportLogsServiceResponse, in the request's encoding; partialSuccess.errorMessage lists what could not be read (JSON only)", "content": {
                        "application/x-protobuf": { "schema": { "type": "string", "format": "binary" } },
                        "application/json": { "schema": { "type": "object", "properties": { "partialSuccess": { "type": "object", "properties": { "rejectedLogRecords": { "type": "string" }, "errorMessage": { "type": "string" } } } } } }
                    } },
                    "400": e400, "401": e401, "413": e413,
                    "408": error_response("The body did not arrive in time"),
                    "415": error_response("Neither application/x-protobuf nor application/json, or a Content-Encoding other than gzip")
                }
            } },
            "/healthz": { "get": { "operationId": "healthz", "summary": "The process is up", "security": [],
                "responses": { "200": { "description": "Up", "content": { "application/json": { "schema": { "type": "object", "properties": { "status": { "const": "ok" } } } } } } } } },
            "/readyz": { "get": { "operationId": "readyz", "summary": "The session store answers", "security": [],
                "responses": { "200": { "description": "Ready", "content": { "application/json": { "schema": { "type": "object", "properties": { "status": { "const": "ready" } } } } } }, "503": e503 } } },
            "/metrics": { "get": { "operationId": "metrics", "summary": "Prometheus text 0.0.4, or OpenMetrics 1.0 when the Accept header prefers application/openmetrics-text", "security": [ { "bearer": [] }, {} ],
                "description": "Open without --tokens and --metrics-token. With --metrics-token, that bearer token reads every series; with --tokens, a tenant's token reads only its own tenant's series (loopguard_decisions_total and loopguard_trace_loops_total with its tenant label).",
                "responses": {
                    "200": { "description": "Decisions by tenant, detector and level, trace loops, request latency histogram, store errors and retries, sessions", "content": {
                        "text/plain": { "schema": { "type": "string" } },
                        "application/openmetrics-text": { "schema": { "type": "string" } }
                    } },
                    "401": error_response("With --metrics-token or --tokens: a missing or unknown bearer token")
                } } },
            "/openapi.json": { "get": { "operationId": "openapi", "summary": "This document", "security": [],
                "responses": { "200": { "description": "OpenAPI 3.1", "content": { "application/json": { "schema": { "type": "object" } } } } } } }
        },
        "components": {
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer", "description": "A token of the --tokens file; it selects the tenant" } },
            "schemas": {
                "Event": {
                    "type": "object", "description": "One events.md event. Fields not listed are ignored; on a compaction, tool, args, result and error are ignored.",
                    "required": ["type"],
                    "properties": {
                        "type": { "enum": ["call", "outcome", "compaction"] },
                        "session": { "type": ["string", "null"], "default": "default", "description": "null is absent" },
                        "run": { "type": ["string", "null"] },
                        "agent": { "type": ["string", "null"], "description": "selects the config's agents.list[] entry" },
                        "callId": { "type": ["string", "null"] },
                        "tool": { "description": "calls and outcomes: the tool name, a string (required)" },
                        "args": { "default": {}, "description": "the tool's parameters: any JSON (null is kept as null; only a missing args is {})" },
                        "result": { "description": "outcome: the tool's result (any JSON; exactly one of result and error)" },
                        "error": { "description": "outcome: what the tool threw (any JSON, a string is the message; exactly one of result and error)" },
                        "ts": { "description": "milliseconds since 1970 (UTC): a finite non-negative number is used, any other value is ignored (treated as absent)" }
                    },
                    "allOf": [
                        { "if": { "properties": { "type": { "const": "call" } } },
                          "then": { "required": ["tool"], "properties": { "tool": { "type": "string" } } } },
                        { "if": { "properties": { "type": { "const": "outcome" } } },
                          "then": { "required": ["tool"], "properties": { "tool": { "type": "string" } },
                                    "oneOf": [ { "required": ["result"] }, { "required": ["error"] } ] } }
                    ]
                },
                "Decision": {
                    "type": "object", "description": "The decision record, as `loopguard replay --json` writes it without `line`",
                    "required": ["type", "session", "run", "callId", "decision"],
                    "properties": {
                        "type": { "enum": ["call", "outcome", "compaction"] },
                        "session": { "type": "string" },
                        "run": { "type": ["string", "null"] },
                        "callId": { "type": ["string", "null"] },
                        "tool": { "type": "string" },
                        "argsHash": { "type": "string" },
                        "resultHash": { "type": ["string", "null"] },
                        "decision": { "enum": ["allow", "warn", "block", "recorded", "ignored", "abort", "armed"], "description": "`abort`: the call is refused and the run is over (the strict profile's second_critical_abort), or the post-compaction guard ended the run (outcome)" },
                        "detector": { "$ref": "#/components/schemas/Detector" },
                        "level": { "enum": ["warning", "critical"] },
                        "count": { "type": "integer" },
                        "message": { "type": "string", "description": "what to tell the model" },
                        "warningKey": { "type": "string" },
                        "pairedTool": { "type": "string" },
                        "emitted": { "type": "boolean", "description": "whether the warning should be shown to the model (once per bucket of ten)" }
                    }
                },
                "Session": {
                    "type": "object",
                    "required": ["session", "calls", "outcomes", "warnings", "blocks", "aborts", "lastSeen", "recent"],
                    "properties": {
                        "session": { "type": "string" },
                        "calls": { "type": "integer", "description": "call events ever applied" },
                        "outcomes": { "type": "integer", "description": "outcome events ever applied" },
                        "warnings": { "type": "integer" },
                        "blocks": { "type": "integer" },
                        "aborts": { "type": "integer" },
                        "lastSeen": { "type": "integer", "description": "milliseconds since 1970 (UTC) of the last event" },
                        "recent": { "type": "array", "items": { "$ref": "#/components/schemas/RecentDecision" } }
                    }
                },
                "RecentDecision": {
                    "type": "object", "additionalProperties": false,
                    "description": "One of a session's last decisions, oldest first. The words are those of /v1/events (a warning the de-duplication kept back is `warn` with `emitted: false`); sessions fed by the Claude Code endpoint also log the hook's own words. Fields without a value are left out, except `run` and `callId`.",
                    "required": ["seq", "ts", "type", "run", "callId", "decision"],
                    "properties": {
                        "seq": { "type": "integer", "minimum": 1, "description": "the session's event number" },
                        "ts": { "type": "integer", "description": "milliseconds since 1970 (UTC)" },
                        "type": { "type": "string", "description": "call, outcome, compaction, or the hook event (PreToolUse, PostToolUse, ...)" },
                        "run": { "type": ["string", "null"] },
                        "callId": { "type": ["string", "null"] },
                        "tool": { "type": "string" },
                        "decision": { "anyOf": [
                            { "enum": recent_engine_words() },
                            { "enum": LogDecision::OTHER_WORDS, "description": "the Claude Code endpoint's words" },
                            { "type": "string", "pattern": "^batch: ", "description": "a PostToolBatch: how many outcomes it recorded" }
                        ] },
                        "detector": { "$ref": "#/components/schemas/Detector" },
                        "count": { "type": "integer" },
                        "message": { "type": "string" },
                        "emitted": { "type": "boolean", "description": "warn only: whether the warning was shown to the model" }
                    }
                },
                "Error": {
                    "type": "object", "required": ["error", "field"],
                    "properties": { "error": { "type": "string" }, "field": { "type": ["string", "null"] } }
                }
            }
        }
    })
}

/// The words `recent[]` shows for the engine's decisions: the log's
/// ([`LogDecision::ENGINE_WORDS`]), a warning kept back being `warn` with `emitted: false`.
fn recent_engine_words() -> Vec<&'static str> {
    LogDecision::ENGINE_WORDS
        .into_iter()
        .filter(|w| *w != "warn-quiet")
        .collect()
}

/// The document, serialised once.
pub(crate) fn document() -> &'static str {
    static DOC: OnceLock<String> = OnceLock::new();
    DOC.get_or_init(|| build().to_string())
}
