//! `loopguard serve`'s loop history: one record per loop in the store (memory and a real
//! SQLite file), `GET /v1/loops` with its filters and cursor pages, `GET /v1/sessions` paged,
//! tenant isolation, the export as JSON Lines read back by `loopguard replay --summary`,
//! and a history that outlives the server process and the session.

mod serve_support;

use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant};

use serve_support::*;

/// Posts a session that loops (the same read, the same result) until it is blocked, as
/// agent `agent`; returns the numbers of the first call warned and of the call blocked.
fn loop_until_blocked(
    agent: &ureq::Agent,
    server: &Serve,
    session: &str,
    who: &str,
    token: Option<&str>,
) -> (usize, usize) {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("content-type", "application/json")];
    if let Some(a) = &auth {
        headers.push(("authorization", a.as_str()));
    }
    let mut warned = None;
    for i in 1..=60 {
        let call = format!(
            r#"{{"type":"call","session":"{session}","agent":"{who}","tool":"read","args":{{"path":"/etc/hosts"}}}}"#
        );
        let answer = request(
            agent,
            "POST",
            &server.url("/v1/events"),
            &headers,
            Some(call.as_bytes()),
        )
        .unwrap();
        assert_eq!(answer.status, 200, "{}", answer.body);
        if answer.json()["decision"] == "block" {
            return (warned.unwrap_or(i), i);
        }
        if answer.json()["decision"] == "warn" && warned.is_none() {
            warned = Some(i);
        }
        let outcome = format!(
            r#"{{"type":"outcome","session":"{session}","agent":"{who}","tool":"read","args":{{"path":"/etc/hosts"}},"result":"same"}}"#
        );
        let answer = request(
            agent,
            "POST",
            &server.url("/v1/events"),
            &headers,
            Some(outcome.as_bytes()),
        )
        .unwrap();
        assert_eq!(answer.status, 200, "{}", answer.body);
    }
    panic!("session {session} was never blocked");
}

/// Every page of `/v1/loops` with `query`, `limit` at a time, followed by its cursors.
fn all_pages(
    agent: &ureq::Agent,
    server: &Serve,
    query: &str,
    limit: usize,
) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..1000 {
        let mut url = server.url(&format!("/v1/loops?limit={limit}{query}"));
        if let Some(c) = &cursor {
            url.push_str("&cursor=");
            url.push_str(&form_encode(c));
        }
        let page = get(agent, &url);
        assert_eq!(page.status, 200, "{}", page.body);
        let page = page.json();
        let loops = page["loops"].as_array().unwrap();
        assert!(loops.len() <= limit, "{page}");
        out.extend(loops.iter().cloned());
        match page["next"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return out,
        }
    }
    panic!("the cursors never ended");
}

fn form_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `GET /v1/loops` until `want` loops are there (SQLite records them from a queue).
fn wait_for_loops(agent: &ureq::Agent, server: &Serve, want: usize) -> Vec<serde_json::Value> {
    let start = Instant::now();
    loop {
        let loops = all_pages(agent, server, "", 1000);
        if loops.len() >= want || start.elapsed() > Duration::from_secs(20) {
            return loops;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn check_history(store: &str, dir: &std::path::Path) {
    let server = Serve::start(&["--store", store]);
    let agent = agent();
    let a = loop_until_blocked(&agent, &server, "sess-a", "bot-a", None);
    let b = loop_until_blocked(&agent, &server, "sess-b", "bot-b", None);
    assert_eq!(a, b, "the same loop is blocked at the same call");
    // A session that never loops leaves no record.
    for i in 0..5 {
        let call =
            format!(r#"{{"type":"call","session":"calm","tool":"read","args":{{"i":{i}}}}}"#);
        assert_eq!(
            post_json(&agent, &server.url("/v1/events"), call.as_bytes()).status,
            200
        );
    }
    let loops = wait_for_loops(&agent, &server, 2);
    let sessions: BTreeSet<&str> = loops
        .iter()
        .map(|l| l["session"].as_str().unwrap())
        .collect();
    assert_eq!(sessions, BTreeSet::from(["sess-a", "sess-b"]), "{loops:#?}");
    for l in &loops {
        assert_eq!(l["format"], "loopguard.loop/1");
        assert_eq!(l["tool"], "read");
        assert_eq!(l["end"], "blocked", "{l}");
        let (warned, blocked) = (
            l["firstWarningMs"].as_u64().unwrap(),
            l["blockMs"].as_u64().unwrap(),
        );
        assert!(warned <= blocked, "{l}");
        // Every call from the first warning to the block.
        assert_eq!(l["calls"].as_u64().unwrap(), (a.1 - a.0 + 1) as u64, "{l}");
        assert_eq!(l["warnings"].as_u64().unwrap(), (a.1 - a.0) as u64, "{l}");
        assert_eq!(l["blocks"], 1, "{l}");
        assert_eq!(
            l["agent"].as_str().unwrap(),
            if l["session"] == "sess-a" {
                "bot-a"
            } else {
                "bot-b"
            }
        );
    }
    // Filters.
    let only_a = all_pages(&agent, &server, "&agent=bot-a", 10);
    assert!(
        !only_a.is_empty() && only_a.iter().all(|l| l["session"] == "sess-a"),
        "{only_a:#?}"
    );
    let future = get(&agent, &server.url("/v1/loops?since=4102444800000")).json();
    assert_eq!(future["loops"].as_array().unwrap().len(), 0);
    let recent = get(&agent, &server.url("/v1/loops?since=1h")).json();
    assert_eq!(recent["loops"].as_array().unwrap().len(), loops.len());
    let rfc = get(&agent, &server.url("/v1/loops?since=2020-01-01T00:00:00Z")).json();
    assert_eq!(rfc["loops"].as_array().unwrap().len(), loops.len());
    // One at a time: the same loops, each once.
    let paged = all_pages(&agent, &server, "", 1);
    let ids: Vec<&str> = paged.iter().map(|l| l["id"].as_str().unwrap()).collect();
    let unique: BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(
        (ids.len(), unique.len()),
        (loops.len(), loops.len()),
        "{ids:?}"
    );
    // Bad parameters name the field.
    for (query, field) in [
        ("since=yesterday", "since"),
        ("limit=0", "limit"),
        ("limit=x", "limit"),
        ("cursor=nonsense", "cursor"),
    ] {
        let answer = get(&agent, &server.url(&format!("/v1/loops?{query}")));
        assert_eq!(
            (answer.status, answer.json()["field"].as_str()),
            (400, Some(field)),
            "{query}: {}",
            answer.body
        );
    }
    // Forgetting the session keeps its loops.
    let del = request(
        &agent,
        "DELETE",
        &server.url("/v1/sessions/sess-a"),
        &[],
        None,
    )
    .unwrap();
    assert_eq!(del.status, 204);
    assert_eq!(
        all_pages(&agent, &server, "&session=sess-a", 10).len(),
        loops.iter().filter(|l| l["session"] == "sess-a").count()
    );

    // The export, read by `replay --summary`.
    let export = get(&agent, &server.url("/v1/loops/export"));
    assert_eq!(export.status, 200);
    assert!(
        export.content_type.starts_with("application/x-ndjson"),
        "{}",
        export.content_type
    );
    assert_eq!(export.body.lines().count(), loops.len());
    let file = dir.join("loops.jsonl");
    std::fs::write(&file, &export.body).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .args(["replay", "--summary"])
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!(
            "{} loops from loop history exports: {} blocked",
            loops.len(),
            loops.len()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("bot-a") && stdout.contains("bot-b"),
        "{stdout}"
    );
    let calls: u64 = loops.iter().map(|l| l["calls"].as_u64().unwrap()).sum();
    assert!(
        stdout.contains(&format!(
            "calls in loops from their first warning on: {calls};"
        )),
        "{stdout}"
    );
    // A damaged export is an error naming the line, not a silent skip.
    std::fs::write(
        &file,
        format!("{}{{\"format\":\"loopguard.loop/1\"}}\n", export.body),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .args(["replay", "--summary"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("line {}", loops.len() + 1)),
        "{stderr}"
    );
}

#[test]
fn loops_are_recorded_listed_and_exported_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    check_history("memory", dir.path());
}

/// With SQLite the history is written from a queue, and outlives the server process.
#[test]
fn loops_are_recorded_in_sqlite_and_outlive_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.sqlite3");
    let spec = format!("sqlite:{}", db.display());
    check_history(&spec, dir.path());
    let server = Serve::start(&["--store", &spec]);
    let loops = all_pages(&agent(), &server, "", 100);
    assert_eq!(
        loops
            .iter()
            .map(|l| l["session"].as_str().unwrap())
            .collect::<BTreeSet<_>>(),
        BTreeSet::from(["sess-a", "sess-b"])
    );
}

#[test]
fn tenants_see_only_their_own_loops_and_sessions_page() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "acme tok-a\nglobex tok-g\n").unwrap();
    let server = Serve::start(&["--tokens", tokens.to_str().unwrap()]);
    let agent = agent();
    loop_until_blocked(&agent, &server, "shared-name", "bot", Some("tok-a"));
    let as_tenant = |token: &str, path: &str| {
        let auth = format!("Bearer {token}");
        request(
            &agent,
            "GET",
            &server.url(path),
            &[("authorization", &auth)],
            None,
        )
        .unwrap()
    };
    let acme = as_tenant("tok-a", "/v1/loops").json();
    assert!(!acme["loops"].as_array().unwrap().is_empty());
    assert!(acme["loops"]
        .as_array()
        .unwrap()
        .iter()
        .all(|l| l["tenant"] == "acme"));
    assert_eq!(
        as_tenant("tok-g", "/v1/loops").json()["loops"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    assert_eq!(as_tenant("tok-g", "/v1/loops/export").body, "");
    assert_eq!(get(&agent, &server.url("/v1/loops")).status, 401);

    // Sessions, paged: five of acme's, two a page, each once, in id order; globex sees none.
    let auth = "Bearer tok-a".to_string();
    for i in 0..4 {
        let call = format!(r#"{{"type":"call","session":"s{i}","tool":"read"}}"#);
        let answer = request(
            &agent,
            "POST",
            &server.url("/v1/events"),
            &[("authorization", &auth)],
            Some(call.as_bytes()),
        )
        .unwrap();
        assert_eq!(answer.status, 200);
    }
    let mut seen = Vec::new();
    let mut path = "/v1/sessions?limit=2".to_string();
    for _ in 0..10 {
        let page = as_tenant("tok-a", &path).json();
        let list = page["sessions"].as_array().unwrap();
        assert!(list.len() <= 2, "{page}");
        seen.extend(
            list.iter()
                .map(|s| s["session"].as_str().unwrap().to_string()),
        );
        match page["next"].as_str() {
            Some(next) => path = format!("/v1/sessions?limit=2&cursor={}", form_encode(next)),
            None => break,
        }
    }
    assert_eq!(seen, ["s0", "s1", "s2", "s3", "shared-name"]);
    // Without limit or cursor: the whole array, as before.
    assert_eq!(
        as_tenant("tok-a", "/v1/sessions")
            .json()
            .as_array()
            .unwrap()
            .len(),
        5
    );
    let globex = as_tenant("tok-g", "/v1/sessions?limit=10").json();
    assert_eq!(globex["sessions"].as_array().unwrap().len(), 0);
}

/// With Redis the history is shared: two replicas each apply half of one session's calls,
/// and the store keeps one record of its loop, blocked once.
#[test]
fn replicas_on_one_redis_keep_one_record_per_loop() {
    let redis = Redis::start();
    let dir = tempfile::tempdir().unwrap();
    check_history(&redis.url(0), dir.path());
    let one = Serve::start(&["--store", &redis.url(1)]);
    let two = Serve::start(&["--store", &redis.url(1)]);
    let agent = agent();
    let mut blocked = None;
    for i in 1..=60 {
        let server = if i % 2 == 0 { &one } else { &two };
        let call =
            r#"{"type":"call","session":"fleet","agent":"bot","tool":"read","args":{"path":"/x"}}"#;
        let answer = post_json(&agent, &server.url("/v1/events"), call.as_bytes());
        if answer.json()["decision"] == "block" {
            blocked = Some(i);
            break;
        }
        let outcome = r#"{"type":"outcome","session":"fleet","agent":"bot","tool":"read","args":{"path":"/x"},"result":"same"}"#;
        post_json(&agent, &server.url("/v1/events"), outcome.as_bytes());
    }
    assert!(blocked.is_some());
    let loops = wait_for_loops(&agent, &one, 1);
    let start = Instant::now();
    let mut loops = loops;
    while loops.first().is_none_or(|l| l["blocks"] != 1)
        && start.elapsed() < Duration::from_secs(20)
    {
        std::thread::sleep(Duration::from_millis(50));
        loops = all_pages(&agent, &two, "", 10);
    }
    assert_eq!(loops.len(), 1, "{loops:#?}");
    assert_eq!(
        (loops[0]["end"].as_str(), loops[0]["blocks"].as_u64()),
        (Some("blocked"), Some(1))
    );
}
