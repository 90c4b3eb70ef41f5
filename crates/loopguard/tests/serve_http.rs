//! `loopguard serve` with the memory store: the real binary on a loopback port.

mod serve_support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serve_support::*;

/// The parity fixtures posted event by event give exactly the fixtures' decisions
/// (without `line`), byte for byte.
#[test]
fn parity_fixtures_event_by_event_memory_store() {
    parity_through(&[]);
}

/// The same through a SQLite file (the store whose calls block, run on the blocking pool),
/// a database per case; the session survives in the file.
#[test]
fn parity_fixtures_event_by_event_sqlite_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("serve.sqlite3");
    let store = format!("sqlite:{}", db.display());
    parity_through(&["--store", &store]);
    let first = dir.path().join("serve.sqlite3.0");
    assert!(first.exists(), "the sessions are in {}", first.display());
}

fn parity_through(store: &[&str]) {
    let agent = agent();
    for (case, (name, config, events, expected)) in parity_cases().into_iter().enumerate() {
        let mut args = vec!["--config", config.to_str().unwrap()];
        let per_case;
        if let [flag, spec] = store {
            // a database per case, so sessions of different cases never meet
            per_case = format!("{spec}.{case}");
            args.extend([*flag, per_case.as_str()]);
        }
        let server = Serve::start(&args);
        let events: Vec<_> = events.iter().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(events.len(), expected.len(), "{name}");
        for (i, (event, want)) in events.iter().zip(&expected).enumerate() {
            let a = post_json(&agent, &server.url("/v1/events"), event.as_bytes());
            assert_eq!(a.status, 200, "{name} event {}: {}", i + 1, a.body);
            assert_eq!(a.content_type, "application/json");
            assert_eq!(a.body, without_line(want), "{name} event {}", i + 1);
        }
    }
}

/// The same stream as one JSON Lines request: the decisions in order.
#[test]
fn ndjson_batch_answers_in_order() {
    let agent = agent();
    let (name, config, events, expected) = parity_cases()
        .into_iter()
        .find(|c| c.0 == "pingpong_critical_stable")
        .expect("case");
    let server = Serve::start(&["--config", config.to_str().unwrap()]);
    let body = events.join("\n");
    let a = request(
        &agent,
        "POST",
        &server.url("/v1/events"),
        &[("content-type", "application/x-ndjson")],
        Some(body.as_bytes()),
    )
    .unwrap();
    assert_eq!(a.status, 200, "{name}: {}", a.body);
    assert_eq!(a.content_type, "application/x-ndjson");
    let want: Vec<String> = expected.iter().map(|l| without_line(l)).collect();
    assert_eq!(a.body.lines().collect::<Vec<_>>(), want);
}

fn call(session: &str, n: u32) -> String {
    format!(r#"{{"type":"call","session":"{session}","tool":"read","args":{{"path":"/p{n}"}}}}"#)
}

/// GET counts every event ever applied; DELETE forgets.
#[test]
fn session_counters_recent_and_delete() {
    let agent = agent();
    let server = Serve::start(&[]);
    for n in 0..45 {
        // the same call 45 times with the same outcome: warnings, then blocks
        let c = r#"{"type":"call","session":"s/1","tool":"read","args":{"path":"/same"}}"#;
        let o = r#"{"type":"outcome","session":"s/1","tool":"read","args":{"path":"/same"},"result":"x"}"#;
        assert_eq!(
            post_json(&agent, &server.url("/v1/events"), c.as_bytes()).status,
            200,
            "{n}"
        );
        assert_eq!(
            post_json(&agent, &server.url("/v1/events"), o.as_bytes()).status,
            200
        );
    }
    let s = get(&agent, &server.url("/v1/sessions/s%2F1"));
    assert_eq!(s.status, 200, "{}", s.body);
    let s = s.json();
    assert_eq!(s["session"], "s/1");
    assert_eq!(s["calls"], 45);
    assert_eq!(s["outcomes"], 45);
    assert!(s["warnings"].as_u64().unwrap() >= 10, "{s}");
    assert!(s["blocks"].as_u64().unwrap() >= 1, "{s}");
    assert_eq!(s["aborts"], 0);
    assert!(s["lastSeen"].as_u64().unwrap() > 1_700_000_000_000, "{s}");
    let recent = s["recent"].as_array().unwrap();
    assert!(!recent.is_empty());
    assert!(
        recent
            .iter()
            .all(|d| d["decision"].is_string() && d["type"].is_string()),
        "{s}"
    );
    assert_eq!(recent.last().unwrap()["type"], "outcome");
    let d = request(
        &agent,
        "DELETE",
        &server.url("/v1/sessions/s%2F1"),
        &[],
        None,
    )
    .unwrap();
    assert_eq!(d.status, 204);
    assert_eq!(get(&agent, &server.url("/v1/sessions/s%2F1")).status, 404);
    let d = request(
        &agent,
        "DELETE",
        &server.url("/v1/sessions/s%2F1"),
        &[],
        None,
    )
    .unwrap();
    assert_eq!(d.status, 404);
    assert_eq!(d.json()["field"], "session");
}

fn tokens_file(dir: &std::path::Path) -> std::path::PathBuf {
    let p = dir.join("tokens");
    std::fs::write(&p, "# tenant token\nacme tok-acme\nglobex tok-globex\n").unwrap();
    p
}

/// With --tokens, sessions are per tenant: the same id in two tenants is two sessions,
/// and a tenant cannot read or delete another's.
#[test]
fn tenants_are_isolated_and_tokens_required() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = tokens_file(dir.path());
    let server = Serve::start(&["--tokens", tokens.to_str().unwrap()]);
    let agent = agent();
    let url = server.url("/v1/events");
    let post = |token: Option<&str>, body: &str| {
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut h = vec![("content-type", "application/json")];
        if let Some(a) = &auth {
            h.push(("authorization", a.as_str()));
        }
        request(&agent, "POST", &url, &h, Some(body.as_bytes())).unwrap()
    };
    // 401 without a token, with an unknown one, with another scheme
    for t in [None, Some("nope")] {
        let a = post(t, &call("shared", 1));
        assert_eq!(a.status, 401, "{}", a.body);
        assert_eq!(a.json()["field"], "authorization");
    }
    let a = request(
        &agent,
        "GET",
        &server.url("/v1/sessions/shared"),
        &[("authorization", "Basic dG9rLWFjbWU=")],
        None,
    )
    .unwrap();
    assert_eq!(a.status, 401);
    // acme writes 3 calls, globex 1, to the same session id
    for n in 0..3 {
        assert_eq!(post(Some("tok-acme"), &call("shared", n)).status, 200);
    }
    assert_eq!(post(Some("tok-globex"), &call("shared", 9)).status, 200);
    let session = |token: &str| {
        let h = format!("Bearer {token}");
        request(
            &agent,
            "GET",
            &server.url("/v1/sessions/shared"),
            &[("authorization", &h)],
            None,
        )
        .unwrap()
    };
    assert_eq!(session("tok-acme").json()["calls"], 3);
    assert_eq!(session("tok-globex").json()["calls"], 1);
    // globex deletes its own; acme's stays
    let del = request(
        &agent,
        "DELETE",
        &server.url("/v1/sessions/shared"),
        &[("authorization", "Bearer tok-globex")],
        None,
    )
    .unwrap();
    assert_eq!(del.status, 204);
    let del = request(
        &agent,
        "DELETE",
        &server.url("/v1/sessions/shared"),
        &[("authorization", "Bearer tok-globex")],
        None,
    )
    .unwrap();
    assert_eq!(del.status, 404);
    assert_eq!(session("tok-globex").status, 404);
    assert_eq!(session("tok-acme").json()["calls"], 3);
    // an acme-only session is invisible to globex
    assert_eq!(post(Some("tok-acme"), &call("acme-only", 1)).status, 200);
    let h = "Bearer tok-globex";
    let a = request(
        &agent,
        "GET",
        &server.url("/v1/sessions/acme-only"),
        &[("authorization", h)],
        None,
    )
    .unwrap();
    assert_eq!(a.status, 404);
    // health needs no token; metrics need a tenant's, and show that tenant's series
    assert_eq!(get(&agent, &server.url("/healthz")).status, 200);
    assert_eq!(get(&agent, &server.url("/metrics")).status, 401);
    let m = request(
        &agent,
        "GET",
        &server.url("/metrics"),
        &[("authorization", h)],
        None,
    )
    .unwrap();
    assert_eq!(m.status, 200, "{}", m.body);
    assert!(
        m.body.contains("loopguard_decisions_total{tenant=\""),
        "{}",
        m.body
    );
}

/// Refuses to start: a non-loopback address without --tokens; a config with errors; a bad
/// tokens file.
#[test]
fn refuses_unsafe_or_broken_setups() {
    let err = Serve::try_start(&["--listen", "0.0.0.0:0"])
        .err()
        .expect("must refuse");
    assert!(err.contains("without --tokens"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bad.json5");
    std::fs::write(
        &cfg,
        "{ tools: { loopDetection: { enabled: true, warnThreshold: 3 } } }",
    )
    .unwrap();
    let err = Serve::try_start(&["--config", cfg.to_str().unwrap()])
        .err()
        .expect("must refuse");
    assert!(
        err.contains("warnThreshold") && err.contains("reject"),
        "{err}"
    );
    let tok = dir.path().join("tokens");
    std::fs::write(&tok, "acme\n").unwrap();
    let err = Serve::try_start(&["--tokens", tok.to_str().unwrap()])
        .err()
        .expect("must refuse");
    assert!(err.contains("tokens:1"), "{err}");
    // with tokens, a non-loopback address is allowed
    let good = tokens_file(dir.path());
    let mut s = Serve::start(&["--listen", "0.0.0.0:0", "--tokens", good.to_str().unwrap()]);
    assert!(s.alive());
}

/// Malformed events name the field; wrong types, garbage, huge and slow bodies get clear
/// 4xx answers; the server keeps serving throughout.
#[test]
fn bad_requests_get_clear_4xx_and_never_take_the_server_down() {
    let server = Serve::start(&["--max-body", "64K", "--body-timeout", "1s"]);
    let agent = agent();
    let url = server.url("/v1/events");
    let cases: [(&str, u16, Option<&str>); 8] = [
        (r#"{"type":"call"}"#, 400, Some("tool")),
        (r#"{"type":"call","tool":5}"#, 400, Some("tool")),
        (r#"{"type":"launch","tool":"x"}"#, 400, Some("type")),
        (
            r#"{"type":"call","tool":"read","session":5}"#,
            400,
            Some("session"),
        ),
        (
            r#"{"type":"outcome","tool":"read","result":1,"error":"x"}"#,
            400,
            Some("error"),
        ),
        (r#"{"type":"call","tool":"read""#, 400, None),
        ("[1,2,3]", 400, None),
        ("", 400, None),
    ];
    for (body, status, field) in cases {
        let a = post_json(&agent, &url, body.as_bytes());
        assert_eq!(a.status, status, "{body}: {}", a.body);
        let j = a.json();
        assert!(j["error"].as_str().is_some_and(|e| !e.is_empty()), "{j}");
        assert_eq!(j["field"].as_str(), field, "{body}: {j}");
    }
    // a JSON Lines batch with a bad third line: 400 naming line 3, nothing applied
    let batch = format!(
        "{}\n{}\n{{\"type\":\"call\"}}\n",
        call("batch", 1),
        call("batch", 2)
    );
    let a = request(
        &agent,
        "POST",
        &url,
        &[("content-type", "application/x-ndjson")],
        Some(batch.as_bytes()),
    )
    .unwrap();
    assert_eq!(a.status, 400);
    assert!(
        a.json()["error"].as_str().unwrap().starts_with("line 3:"),
        "{}",
        a.body
    );
    assert_eq!(get(&agent, &server.url("/v1/sessions/batch")).status, 404);
    // wrong content type
    let a = request(
        &agent,
        "POST",
        &url,
        &[("content-type", "text/plain")],
        Some(call("x", 1).as_bytes()),
    )
    .unwrap();
    assert_eq!(a.status, 415);
    // over --max-body: with a Content-Length, and streamed without one
    let huge = format!(
        r#"{{"type":"call","tool":"read","args":{{"p":"{}"}}}}"#,
        "x".repeat(100_000)
    );
    let a = post_json(&agent, &url, huge.as_bytes());
    assert_eq!(a.status, 413, "{}", a.body);
    assert!(a.json()["error"].as_str().unwrap().contains("65536"));
    let a = agent
        .post(&url)
        .set("content-type", "application/json")
        .send(std::io::Cursor::new(huge.clone().into_bytes()));
    let status = match a {
        Ok(r) => r.status(),
        Err(ureq::Error::Status(s, _)) => s,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(status, 413);
    // a slow client: headers, then part of the body, then nothing
    let mut slow = TcpStream::connect(server.addr).unwrap();
    write!(slow, "POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"type\":").unwrap();
    // meanwhile others are served
    let ok = post_json(&agent, &url, call("meanwhile", 1).as_bytes());
    assert_eq!(ok.status, 200);
    let start = Instant::now();
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut answer = String::new();
    let _ = slow.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(start.elapsed() < Duration::from_secs(5));
    // a bounded fuzz loop over the body: mutations of valid events and random bytes
    let seeds = [
        call("fz", 1),
        r#"{"type":"outcome","session":"fz","tool":"exec","args":{"command":"ls"},"result":{"status":"completed","exitCode":0,"aggregated":"a\u00e9"}}"#.to_string(),
        r#"{"type":"compaction","session":"fz","run":"r1"}"#.to_string(),
    ];
    let mut rng = 0x9E37_79B9_7F4A_7C15_u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut counts = [0usize; 6];
    for i in 0..400 {
        let mut body = seeds[i % seeds.len()].clone().into_bytes();
        match next() % 4 {
            0 => {
                for _ in 0..1 + next() % 4 {
                    let at = (next() as usize) % body.len();
                    body[at] = (next() % 256) as u8;
                }
            }
            1 => body.truncate((next() as usize) % body.len()),
            2 => body = (0..next() % 200).map(|_| (next() % 256) as u8).collect(),
            _ => {
                let at = (next() as usize) % body.len();
                let junk: &[u8] = [
                    &b"null"[..],
                    b"{}",
                    b"[",
                    b"\"",
                    b"1e999",
                    b"\\u0000",
                    b"true,",
                ][(next() % 7) as usize];
                body.splice(at..at, junk.iter().copied());
            }
        }
        let ndjson = next() % 3 == 0;
        let ct = if ndjson {
            "application/x-ndjson"
        } else {
            "application/json"
        };
        let a = request(&agent, "POST", &url, &[("content-type", ct)], Some(&body))
            .unwrap_or_else(|e| panic!("no answer to {:?}: {e}", String::from_utf8_lossy(&body)));
        assert!(
            a.status == 200 || a.status == 400,
            "{} for {:?}: {}",
            a.status,
            String::from_utf8_lossy(&body),
            a.body
        );
        let j: serde_json::Value = if ndjson && a.status == 200 {
            serde_json::from_str(a.body.lines().next().unwrap_or("{}")).unwrap()
        } else {
            a.json()
        };
        if a.status == 400 {
            assert!(j["error"].as_str().is_some(), "{j}");
        }
        counts[(a.status / 100) as usize] += 1;
    }
    assert!(counts[4] > 200 && counts[2] > 5, "{counts:?}");
    let mut s = server;
    assert!(s.alive());
    assert_eq!(get(&agent, &s.url("/healthz")).status, 200);
}

/// Prometheus metrics: decisions by detector and level, latency histogram, store counters,
/// sessions; OpenAPI describes every route.
#[test]
fn metrics_and_openapi() {
    let server = Serve::start(&[]);
    let agent = agent();
    for _ in 0..12 {
        post_json(
            &agent,
            &server.url("/v1/events"),
            br#"{"type":"call","session":"m","tool":"read","args":{"path":"/a"}}"#,
        );
    }
    let m = get(&agent, &server.url("/metrics"));
    assert_eq!(m.status, 200);
    // with ten identical calls before it, the 11th warns, and so does the 12th
    assert!(
        m.body.contains(
            r#"loopguard_decisions_total{tenant="",decision="allow",detector="",level=""} 10"#
        ),
        "{}",
        m.body
    );
    assert!(m.body.contains(r#"loopguard_decisions_total{tenant="",decision="warn",detector="generic_repeat",level="warning"} 2"#), "{}", m.body);
    assert!(
        m.body
            .contains(r#"loopguard_http_request_duration_seconds_count{route="/v1/events"} 12"#),
        "{}",
        m.body
    );
    assert!(m.body.contains("loopguard_store_errors_total 0"));
    assert!(m.body.contains("loopguard_store_retries_total 0"));
    assert!(m.body.contains("loopguard_sessions 1"), "{}", m.body);
    let doc = get(&agent, &server.url("/openapi.json")).json();
    assert_eq!(doc["openapi"], "3.1.0");
    for path in [
        "/v1/events",
        "/v1/sessions/{session}",
        "/v1/hooks/claude-code",
        "/healthz",
        "/readyz",
        "/metrics",
        "/openapi.json",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} missing");
    }
    assert_eq!(
        get(&agent, &server.url("/readyz")).json()["status"],
        "ready"
    );
}

/// Claude Code's http hook: 25 identical Read calls with identical results are denied from
/// the 21st on, and each answer is what `loopguard hook claude-code` prints for the same
/// input (checked against the command with its own state database).
#[test]
fn claude_code_http_hook_denies_from_the_21st_identical_read() {
    let server = Serve::start(&[]);
    let agent = agent();
    let url = server.url("/v1/hooks/claude-code");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.sqlite3");
    let cfg = dir.path().join("none.json5");
    std::fs::write(&cfg, "{ tools: { loopDetection: { enabled: true } } }").unwrap();
    let command = |input: &str| -> String {
        use std::process::{Command, Stdio};
        let mut child = Command::new(env!("CARGO_BIN_EXE_loopguard"))
            .args([
                "hook",
                "claude-code",
                "--state",
                db.to_str().unwrap(),
                "--config",
                cfg.to_str().unwrap(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        // The command prints nothing when it has nothing to say; the endpoint answers `{}`.
        let out = String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap();
        if out.trim().is_empty() {
            "{}".to_owned()
        } else {
            out
        }
    };
    let mut denied = Vec::new();
    for id in 1..=25 {
        let pre = hook_payload("PreToolUse", id, "");
        let a = post_json(&agent, &url, pre.as_bytes());
        assert_eq!(a.status, 200, "{}", a.body);
        assert_eq!(
            a.body.trim_end(),
            command(&pre).trim_end(),
            "PreToolUse {id}"
        );
        if a.body.contains(r#""permissionDecision":"deny""#) {
            denied.push(id);
        }
        if id == 11 {
            assert!(a.body.contains("additionalContext"), "{}", a.body);
        }
        let post = hook_payload(
            "PostToolUse",
            id,
            r#","tool_response":{"type":"text","file":{"filePath":"/repo/README.md","content":"same"}}"#,
        );
        let a = post_json(&agent, &url, post.as_bytes());
        assert_eq!(a.status, 200, "{}", a.body);
        assert_eq!(
            a.body.trim_end(),
            command(&post).trim_end(),
            "PostToolUse {id}"
        );
    }
    assert_eq!(denied, (21..=25).collect::<Vec<_>>());
    // The endpoint's decisions are counted like those of /v1/events.
    let metrics = get(&agent, &server.url("/metrics")).body;
    let count = |labels: &str| -> u64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("loopguard_decisions_total{{{labels}}} ")))
            .map_or(0, |v| v.trim().parse().unwrap())
    };
    assert_eq!(
        count(r#"tenant="",decision="block",detector="generic_repeat",level="critical""#),
        5,
        "{metrics}"
    );
    assert_eq!(
        count(r#"tenant="",decision="warn",detector="generic_repeat",level="warning""#),
        10,
        "{metrics}"
    );
    assert_eq!(
        count(r#"tenant="",decision="recorded",detector="",level="""#),
        20,
        "{metrics}"
    );
    // garbage is a 400 naming what is wrong (the caller fails open), not a crash
    let a = post_json(&agent, &url, b"{\"hook_event_name\":5}");
    assert_eq!(a.status, 400, "{}", a.body);
}
