//! `GET /metrics` on a real loopback server: the format follows the scraper's `Accept`,
//! series carry the tenant, tenants see only their own, `--metrics-token` guards the rest,
//! and a trace (observe mode) is counted as `would-block`, never `block`.

mod support;

use std::time::{Duration, Instant};

use loopguard_core::OpenClawConfig;
use loopguard_serve::{Server, Tokens};
use support::{request, Running};

fn enabled() -> OpenClawConfig {
    OpenClawConfig::load_for_run(r#"{"tools":{"loopDetection":{"enabled":true}}}"#)
        .expect("a valid config")
        .config
}

const CALL: &str = r#"{"type":"call","session":"s1","tool":"read","args":{"path":"/a.txt"}}"#;
const OUTCOME: &str =
    r#"{"type":"outcome","session":"s1","tool":"read","args":{"path":"/a.txt"},"result":"same"}"#;

fn post_calls(server: &Running, token: Option<&str>, n: usize) {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(a) = &auth {
        headers.push(("Authorization", a.as_str()));
    }
    // Identical calls with identical results: a warning at the 11th, a block at the 21st.
    for i in 0..n {
        for event in [CALL, OUTCOME] {
            let (status, _, body) =
                request(server, "POST", "/v1/events", &headers, event.as_bytes());
            assert_eq!(status, 200, "call {i}: {body}");
        }
    }
}

fn scrape(server: &Running, headers: &[(&str, &str)]) -> (u16, String, String) {
    request(server, "GET", "/metrics", headers, b"")
}

fn content_type(head: &str) -> String {
    head.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default()
}

#[test]
fn the_format_follows_accept() {
    let server = Running::start(Server::builder().config(enabled()));
    post_calls(&server, None, 21);
    // No Accept, `*/*`, or 0.0.4 asked for: the Prometheus text format 0.0.4.
    for accept in [None, Some("*/*"), Some("text/plain;version=0.0.4")] {
        let headers: Vec<(&str, &str)> = accept.map(|a| ("Accept", a)).into_iter().collect();
        let (status, head, text) = scrape(&server, &headers);
        assert_eq!(status, 200, "{text}");
        assert_eq!(
            content_type(&head),
            "text/plain; version=0.0.4; charset=utf-8",
            "{accept:?}"
        );
        assert!(
            text.contains("# TYPE loopguard_decisions_total counter\n"),
            "{accept:?}: {text}"
        );
        assert!(!text.contains("# EOF"), "{accept:?}: {text}");
        assert!(
            text.contains(r#"loopguard_decisions_total{tenant="",decision="block",detector="generic_repeat",level="critical"} 1"#),
            "{text}"
        );
    }
    // Prometheus's own Accept: OpenMetrics 1.0.
    let (status, head, text) = scrape(
        &server,
        &[("Accept", "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2")],
    );
    assert_eq!(status, 200);
    assert!(content_type(&head).starts_with("application/openmetrics-text; version=1.0.0"));
    assert!(
        text.contains("# TYPE loopguard_decisions counter\n"),
        "{text}"
    );
    assert!(text.ends_with("# EOF\n"), "{text}");
}

#[test]
fn tenants_see_only_their_own_series_and_the_metrics_token_sees_all() {
    let server = Running::start(
        Server::builder()
            .config(enabled())
            .tokens(Tokens::parse("acme tok-acme\nglobex tok-globex\n").expect("tokens"))
            .metrics_token("tok-metrics"),
    );
    post_calls(&server, Some("tok-acme"), 21);
    post_calls(&server, Some("tok-globex"), 11);
    let (status, _, body) = scrape(&server, &[]);
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("\"error\""), "{body}");
    let (status, _, body) = scrape(&server, &[("Authorization", "Bearer nope")]);
    assert_eq!(status, 401, "{body}");

    let (status, _, acme) = scrape(&server, &[("Authorization", "Bearer tok-acme")]);
    assert_eq!(status, 200, "{acme}");
    assert!(
        acme.contains(r#"{tenant="acme",decision="block""#),
        "{acme}"
    );
    assert!(!acme.contains("globex"), "{acme}");
    // Server-wide families are the operator's.
    assert!(!acme.contains("loopguard_http_requests"), "{acme}");

    let (status, _, globex) = scrape(&server, &[("Authorization", "Bearer tok-globex")]);
    assert_eq!(status, 200);
    assert!(
        globex.contains(r#"{tenant="globex",decision="warn""#),
        "{globex}"
    );
    assert!(!globex.contains("acme"), "{globex}");

    let (status, _, all) = scrape(&server, &[("Authorization", "Bearer tok-metrics")]);
    assert_eq!(status, 200);
    for want in [
        r#"tenant="acme""#,
        r#"tenant="globex""#,
        "loopguard_http_requests_total",
    ] {
        assert!(all.contains(want), "{want}: {all}");
    }
}

#[test]
fn metrics_token_alone_guards_metrics() {
    let server = Running::start(Server::builder().metrics_token("tok-metrics"));
    assert_eq!(scrape(&server, &[]).0, 401);
    assert_eq!(
        scrape(&server, &[("Authorization", "Bearer tok-metrics")]).0,
        200
    );
    // The other routes stay open without --tokens.
    assert_eq!(request(&server, "GET", "/healthz", &[], b"").0, 200);
}

/// 25 identical failing tool spans of one trace, applied in observe mode: the calls ran, so
/// the decisions are `would-warn` and `would-block`, as the session's record says.
#[test]
fn a_trace_in_observe_mode_counts_would_block_not_block() {
    let server = Running::start(
        Server::builder()
            .config(enabled())
            .trace_wait(Duration::from_millis(200)),
    );
    let trace = "0af7651916cd43dd8448eb211c80319c";
    let spans: Vec<String> = (0..25u64)
        .map(|i| {
            format!(
                r#"{{"traceId":"{trace}","spanId":"{:016x}","name":"execute_tool bash","startTimeUnixNano":"{}","endTimeUnixNano":"{}","attributes":[{{"key":"gen_ai.operation.name","value":{{"stringValue":"execute_tool"}}}},{{"key":"gen_ai.tool.name","value":{{"stringValue":"bash"}}}},{{"key":"gen_ai.agent.name","value":{{"stringValue":"fixer"}}}},{{"key":"gen_ai.tool.call.arguments","value":{{"stringValue":"{{\"command\":\"make test\"}}"}}}},{{"key":"gen_ai.tool.call.result","value":{{"stringValue":"FAILED"}}}}]}}"#,
                i + 1,
                1_700_000_000_000_000_000u64 + i * 1_000_000_000,
                1_700_000_000_000_000_000u64 + i * 1_000_000_000 + 500,
            )
        })
        .collect();
    let body = format!(
        r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"ci-bot"}}}}]}},"scopeSpans":[{{"spans":[{}]}}]}}]}}"#,
        spans.join(",")
    );
    let (status, _, answer) = request(
        &server,
        "POST",
        "/v1/traces",
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    );
    assert_eq!(status, 200, "{answer}");
    let deadline = Instant::now() + Duration::from_secs(30);
    let text = loop {
        let (_, _, text) = scrape(&server, &[]);
        if text.contains(r#"decision="would-block""#) || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(text.contains(r#"decision="would-block""#), "{text}");
    assert!(text.contains(r#"decision="would-warn""#), "{text}");
    assert!(!text.contains(r#"decision="block""#), "{text}");
    assert!(!text.contains(r#"decision="warn""#), "{text}");
    assert!(
        text.contains(r#"loopguard_trace_loops_total{tenant="",detector="#),
        "{text}"
    );
    // The session says the same.
    let (_, _, session) = request(&server, "GET", &format!("/v1/sessions/{trace}"), &[], b"");
    assert!(session.contains("would-block"), "{session}");
    assert!(!session.contains(r#""block""#), "{session}");
}

/// A turn longer than `--trace-wait`: the tool spans arrive, the trace goes quiet for several
/// waits (a long model call), then the agent's span (which names the agent) ends last. The
/// loop is counted under one agent label, the agent's, not under `""` first.
#[test]
fn a_loop_has_one_agent_label_when_the_agent_span_ends_after_a_long_turn() {
    let server = Running::start(
        Server::builder()
            .config(enabled())
            .trace_wait(Duration::from_millis(200)),
    );
    let trace = "5b8efff798038103d269b633813fc60c";
    let agent_span = "00000000000000aa";
    let t0 = 1_700_000_000_000_000_000u64;
    let tool = |i: u64| {
        format!(
            r#"{{"traceId":"{trace}","spanId":"{:016x}","parentSpanId":"{agent_span}","name":"execute_tool bash","startTimeUnixNano":"{}","endTimeUnixNano":"{}","attributes":[{{"key":"gen_ai.operation.name","value":{{"stringValue":"execute_tool"}}}},{{"key":"gen_ai.tool.name","value":{{"stringValue":"bash"}}}},{{"key":"gen_ai.tool.call.arguments","value":{{"stringValue":"{{\"command\":\"make test\"}}"}}}},{{"key":"gen_ai.tool.call.result","value":{{"stringValue":"FAILED"}}}}]}}"#,
            i + 1,
            t0 + i * 1_000_000_000,
            t0 + i * 1_000_000_000 + 500,
        )
    };
    let post = |spans: Vec<String>| {
        let body = format!(
            r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"ci-bot"}}}}]}},"scopeSpans":[{{"spans":[{}]}}]}}]}}"#,
            spans.join(",")
        );
        let (status, _, answer) = request(
            &server,
            "POST",
            "/v1/traces",
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        );
        assert_eq!(status, 200, "{answer}");
    };
    post((0..15).map(tool).collect());
    // Quiet for five waits: the agent is thinking.
    std::thread::sleep(Duration::from_millis(1000));
    post((15..25).map(tool).collect());
    std::thread::sleep(Duration::from_millis(1000));
    post(vec![format!(
        r#"{{"traceId":"{trace}","spanId":"{agent_span}","name":"invoke_agent fixer","startTimeUnixNano":"{}","endTimeUnixNano":"{}","attributes":[{{"key":"gen_ai.operation.name","value":{{"stringValue":"invoke_agent"}}}},{{"key":"gen_ai.agent.name","value":{{"stringValue":"fixer"}}}}]}}"#,
        t0 - 1,
        t0 + 30 * 1_000_000_000,
    )]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let text = loop {
        let (_, _, text) = scrape(&server, &[]);
        if text.contains(r#"decision="would-block""#) || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let loops: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("loopguard_trace_loops_total{"))
        .collect();
    assert!(!loops.is_empty(), "{text}");
    for l in &loops {
        assert!(l.contains(r#"agent="fixer""#), "{l}\n{text}");
    }
    // All 25 calls were judged, in order: 10 warnings then 5 blocks (observe mode).
    let count = |level: &str| -> u64 {
        loops
            .iter()
            .filter(|l| l.contains(&format!(r#"level="{level}""#)))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    };
    assert_eq!((count("warning"), count("critical")), (10, 5), "{text}");
}
