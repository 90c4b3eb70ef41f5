//! `GET /openapi.json` describes the real answers: every route's answers, in both profiles
//! (`openclaw` and `strict`) and for every error status the test can provoke, are validated
//! against the document with a JSON Schema validator (the `jsonschema` crate, draft 2020-12,
//! OpenAPI 3.1's dialect). Every error is JSON, including 405 and unknown routes' 404.

mod serve_support;

use serde_json::{json, Value};
use serve_support::*;

/// The document, and a validator for the schema at `pointer` inside it (refs resolve
/// against the whole document).
struct Doc(Value);

impl Doc {
    fn validate(&self, pointer: &str, instance: &Value, what: &str) {
        assert!(
            self.0.pointer(pointer.trim_start_matches('#')).is_some(),
            "{what}: /openapi.json has nothing at {pointer}"
        );
        let mut schema = self.0.clone();
        // A URI fragment: the path template's braces are percent-encoded.
        schema["$ref"] = Value::String(pointer.replace('{', "%7B").replace('}', "%7D"));
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&schema)
            .unwrap_or_else(|e| panic!("{what}: the schema at {pointer} does not compile: {e}"));
        let errors: Vec<String> = validator
            .iter_errors(instance)
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect();
        assert!(
            errors.is_empty(),
            "{what}: the answer violates {pointer}:\n{}\nanswer: {instance}",
            errors.join("\n")
        );
    }

    /// Checks an answer of `method path` against the operation's response for its status.
    fn check(&self, template: &str, method: &str, answer: &Answer, what: &str) {
        let esc = template.replace('~', "~0").replace('/', "~1");
        let mut op = format!("#/paths/{esc}/{}", method.to_ascii_lowercase());
        if answer.status == 405 {
            // Another method of the path: each of its operations documents the 405.
            let ops = self.0["paths"][template]
                .as_object()
                .unwrap_or_else(|| panic!("{what}: {template} is not in /openapi.json"));
            let documented = ops
                .keys()
                .find(|m| m.as_str() != "parameters")
                .expect("an operation");
            op = format!("#/paths/{esc}/{documented}");
            assert!(
                !ops.contains_key(&method.to_ascii_lowercase()),
                "{what}: 405 for a documented method"
            );
        }
        let response = format!("{op}/responses/{}", answer.status);
        assert!(
            self.0.pointer(response.trim_start_matches('#')).is_some(),
            "{what}: status {} of {method} {template} is not in /openapi.json ({})",
            answer.status,
            answer.body
        );
        if answer.status == 204 {
            assert!(answer.body.is_empty(), "{what}: 204 with a body");
            return;
        }
        let ct = answer
            .content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_owned();
        let schema = format!("{response}/content/{}/schema", ct.replace('/', "~1"));
        if ct == "application/x-ndjson" {
            // One JSON document a line, each the operation's JSON schema.
            let line_schema = format!("{response}/content/application~1json/schema");
            for line in answer.body.lines() {
                let v: Value = serde_json::from_str(line).expect("a JSON line");
                self.validate(&line_schema, &v, what);
            }
            self.validate(&schema, &Value::String(answer.body.clone()), what);
        } else if ct == "application/json" {
            self.validate(&schema, &answer.json(), what);
        } else {
            self.validate(&schema, &Value::String(answer.body.clone()), what);
        }
    }
}

fn events(session: &str, strict: bool) -> Vec<String> {
    let mut out = Vec::new();
    if strict {
        // Identical failures: the strict profile warns, blocks, then ends the run.
        for i in 0..9 {
            out.push(json!({"type":"call","session":session,"run":"r","callId":format!("c{i}"),"tool":"read","args":{"path":"/missing"}}).to_string());
            out.push(json!({"type":"outcome","session":session,"run":"r","callId":format!("c{i}"),"tool":"read","args":{"path":"/missing"},"error":"ENOENT: no such file or directory"}).to_string());
        }
    } else {
        for i in 0..23 {
            out.push(json!({"type":"call","session":session,"run":"r","callId":format!("c{i}"),"tool":"read","args":{"path":"/a"}}).to_string());
            out.push(json!({"type":"outcome","session":session,"run":"r","callId":format!("c{i}"),"tool":"read","args":{"path":"/a"},"result":"same"}).to_string());
        }
        out.push(json!({"type":"compaction","session":session,"run":"r"}).to_string());
    }
    out
}

fn exercise(doc: &Doc, server: &Serve, profile: &str) -> Vec<Value> {
    let agent = agent();
    let strict = profile == "strict";
    let what = |s: &str| format!("{profile}: {s}");
    let mut decisions = Vec::new();
    for e in events("s1", strict) {
        let a = post_json(&agent, &server.url("/v1/events"), e.as_bytes());
        assert_eq!(a.status, 200, "{}", a.body);
        doc.check("/v1/events", "POST", &a, &what("POST /v1/events"));
        decisions.push(a.json());
    }
    let batch = events("s2", strict).join("\n");
    let a = request(
        &agent,
        "POST",
        &server.url("/v1/events"),
        &[("content-type", "application/x-ndjson")],
        Some(batch.as_bytes()),
    )
    .expect("ndjson");
    assert_eq!(a.status, 200, "{}", a.body);
    doc.check("/v1/events", "POST", &a, &what("POST /v1/events (ndjson)"));

    let session = get(&agent, &server.url("/v1/sessions/s1"));
    assert_eq!(session.status, 200);
    doc.check(
        "/v1/sessions/{session}",
        "GET",
        &session,
        &what("GET /v1/sessions/s1"),
    );
    let list = get(&agent, &server.url("/v1/sessions"));
    assert_eq!(list.status, 200, "{}", list.body);
    doc.check("/v1/sessions", "GET", &list, &what("GET /v1/sessions"));
    let listed = list.json();
    let listed: Vec<&str> = listed
        .as_array()
        .expect("an array")
        .iter()
        .filter_map(|s| s["session"].as_str())
        .collect();
    assert!(
        listed.contains(&"s1") && listed.contains(&"s2"),
        "{}",
        list.body
    );
    let recent = session.json()["recent"].clone();
    // One vocabulary: a warning kept back is `warn` with `emitted: false`, as in /v1/events.
    assert!(!session.body.contains("warn-quiet"), "{}", session.body);
    if !strict {
        assert!(
            recent
                .as_array()
                .expect("recent")
                .iter()
                .any(|r| r["decision"] == "warn" && r["emitted"] == false),
            "{recent}"
        );
    }

    for (method, path, template, body, ct) in [
        (
            "POST",
            "/v1/hooks/claude-code",
            "/v1/hooks/claude-code",
            Some(hook_payload("PreToolUse", 1, "")),
            "application/json",
        ),
        ("GET", "/healthz", "/healthz", None, ""),
        ("GET", "/readyz", "/readyz", None, ""),
        ("GET", "/metrics", "/metrics", None, ""),
        ("GET", "/openapi.json", "/openapi.json", None, ""),
        // errors
        (
            "POST",
            "/v1/events",
            "/v1/events",
            Some("{not json".to_owned()),
            "application/json",
        ),
        (
            "POST",
            "/v1/events",
            "/v1/events",
            Some(r#"{"type":"call"}"#.to_owned()),
            "application/json",
        ),
        (
            "POST",
            "/v1/events",
            "/v1/events",
            Some("x".to_owned()),
            "text/plain",
        ),
        (
            "POST",
            "/v1/events",
            "/v1/events",
            Some("x".repeat(20_000)),
            "application/json",
        ),
        ("GET", "/v1/events", "/v1/events", None, ""),
        ("PUT", "/v1/sessions/s1", "/v1/sessions/{session}", None, ""),
        (
            "POST",
            "/v1/hooks/claude-code",
            "/v1/hooks/claude-code",
            Some("{}".to_owned()),
            "application/json",
        ),
        (
            "GET",
            "/v1/sessions/nobody",
            "/v1/sessions/{session}",
            None,
            "",
        ),
        (
            "DELETE",
            "/v1/sessions/s2",
            "/v1/sessions/{session}",
            None,
            "",
        ),
        (
            "DELETE",
            "/v1/sessions/s2",
            "/v1/sessions/{session}",
            None,
            "",
        ),
        ("DELETE", "/healthz", "/healthz", None, ""),
    ] {
        let headers: Vec<(&str, &str)> = if ct.is_empty() {
            vec![]
        } else {
            vec![("content-type", ct)]
        };
        let a = request(
            &agent,
            method,
            &server.url(path),
            &headers,
            body.as_deref().map(str::as_bytes),
        )
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        if a.status >= 400 {
            assert!(
                a.content_type.starts_with("application/json"),
                "{profile}: {method} {path} answered {} without JSON: {:?}",
                a.status,
                a.body
            );
        }
        doc.check(
            template,
            method,
            &a,
            &what(&format!("{method} {path} ({})", a.status)),
        );
    }
    // An unknown route: JSON, the Error schema.
    let a = get(&agent, &server.url("/v2/nothing"));
    assert_eq!(a.status, 404);
    doc.validate(
        "#/components/schemas/Error",
        &a.json(),
        &what("GET /v2/nothing"),
    );
    decisions
}

#[test]
fn every_answer_of_both_profiles_matches_the_openapi_document() {
    let dir = tempfile::tempdir().expect("tempdir");
    let strict_config = dir.path().join("strict.json5");
    std::fs::write(
        &strict_config,
        r#"{tools:{loopDetection:{enabled:true}},loopguard:{profile:"strict"}}"#,
    )
    .expect("write");
    for profile in ["openclaw", "strict"] {
        let mut args = vec!["--max-body", "16K"];
        if profile == "strict" {
            args.extend(["--config", strict_config.to_str().expect("utf-8")]);
        }
        let server = Serve::start(&args);
        let doc = Doc(get(&agent(), &server.url("/openapi.json")).json());
        let decisions = exercise(&doc, &server, profile);
        if profile == "strict" {
            // The call that ends the run says `abort`, not `block`.
            let calls: Vec<&Value> = decisions.iter().filter(|d| d["type"] == "call").collect();
            assert_eq!(calls[7]["decision"], "abort", "{}", calls[7]);
            assert_eq!(calls[7]["detector"], "second_critical_abort");
        }
    }
    // 503: a store that cannot be reached (a Redis URL where nothing listens).
    let dead = format!("redis://127.0.0.1:{}/0", free_port());
    let server = Serve::start(&["--store", &dead]);
    let doc = Doc(get(&agent(), &server.url("/openapi.json")).json());
    for (method, path, template, body) in [
        (
            "POST",
            "/v1/events",
            "/v1/events",
            Some(r#"{"type":"call","tool":"read"}"#.to_owned()),
        ),
        ("GET", "/v1/sessions/x", "/v1/sessions/{session}", None),
        ("DELETE", "/v1/sessions/x", "/v1/sessions/{session}", None),
        ("GET", "/v1/sessions", "/v1/sessions", None),
        (
            "POST",
            "/v1/hooks/claude-code",
            "/v1/hooks/claude-code",
            Some(hook_payload("PreToolUse", 1, "")),
        ),
        ("GET", "/readyz", "/readyz", None),
    ] {
        let a = request(
            &agent(),
            method,
            &server.url(path),
            &[("content-type", "application/json")],
            body.as_deref().map(str::as_bytes),
        )
        .expect("answer");
        assert_eq!(a.status, 503, "{method} {path}: {}", a.body);
        doc.check(
            template,
            method,
            &a,
            &format!("{method} {path} with the store down"),
        );
    }
    // 401 with --tokens.
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "acme tok-acme\n").expect("write");
    let server = Serve::start(&["--tokens", tokens.to_str().expect("utf-8")]);
    let doc = Doc(get(&agent(), &server.url("/openapi.json")).json());
    for (method, path, template) in [
        ("POST", "/v1/events", "/v1/events"),
        ("GET", "/v1/sessions/x", "/v1/sessions/{session}"),
        ("DELETE", "/v1/sessions/x", "/v1/sessions/{session}"),
        ("POST", "/v1/hooks/claude-code", "/v1/hooks/claude-code"),
    ] {
        let body = (method == "POST").then_some(&b"{}"[..]);
        let a = request(
            &agent(),
            method,
            &server.url(path),
            &[("content-type", "application/json")],
            body,
        )
        .expect("answer");
        assert_eq!(a.status, 401, "{method} {path}: {}", a.body);
        doc.check(
            template,
            method,
            &a,
            &format!("{method} {path} without a token"),
        );
    }
}

/// The call that ends a run (the strict profile's second critical) says `abort` in
/// `loopguard replay --json` and in `loopguard serve`'s answer, byte for byte the same
/// records.
#[test]
fn an_ended_run_says_abort_in_replay_and_serve_alike() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("strict.json5");
    std::fs::write(
        &config,
        r#"{tools:{loopDetection:{enabled:true}},loopguard:{profile:"strict"}}"#,
    )
    .expect("write");
    let lines = events("s", true);
    let file = dir.path().join("events.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .args(["replay", "--json", "--config"])
        .arg(&config)
        .arg(&file)
        .output()
        .expect("replay");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replayed: Vec<String> = String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(without_line)
        .collect();
    let server = Serve::start(&["--config", config.to_str().expect("utf-8")]);
    let agent = agent();
    let served: Vec<String> = lines
        .iter()
        .map(|e| post_json(&agent, &server.url("/v1/events"), e.as_bytes()).body)
        .collect();
    assert_eq!(replayed, served);
    let aborts = served
        .iter()
        .filter(|d| d.contains(r#""decision":"abort""#))
        .count();
    assert!(aborts >= 1, "{served:#?}");
    assert!(
        served
            .iter()
            .filter(|d| d.contains("second_critical_abort"))
            .all(|d| d.contains(r#""decision":"abort""#)),
        "{served:#?}"
    );
}
