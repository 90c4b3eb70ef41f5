//! The routes of `loopguard serve`, called in process through the axum `Router` (no socket,
//! no binary): what every front end relies on, tested where the code lives. The binary's
//! end-to-end tests (`crates/loopguard/tests/serve_*.rs`) cover the listener, Redis and the
//! process around it.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use loopguard_core::OpenClawConfig;
use loopguard_serve::{Server, Tokens};
use serde_json::Value;
use tower::ServiceExt;

fn enabled() -> OpenClawConfig {
    OpenClawConfig::load_for_run(r#"{"tools":{"loopDetection":{"enabled":true}}}"#)
        .expect("a valid config")
        .config
}

fn server(tokens: Option<&str>) -> Server {
    let mut builder = Server::builder()
        .listen("127.0.0.1:0".parse().expect("an address"))
        .store("memory")
        .config(enabled());
    if let Some(text) = tokens {
        builder = builder.tokens(Tokens::parse(text).expect("a tokens file"));
    }
    builder.build().expect("the server builds")
}

/// Sends one request and returns its status and body text.
async fn send(router: &axum::Router, req: Request<Body>) -> (StatusCode, String) {
    let response = router
        .clone()
        .oneshot(req)
        .await
        .expect("the router answers");
    let status = response.status();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    (status, String::from_utf8(bytes.to_vec()).expect("UTF-8"))
}

fn post_event(event: &str, token: Option<&str>) -> Request<Body> {
    let mut req = Request::post("/v1/events").header(header::CONTENT_TYPE, "application/json");
    if let Some(t) = token {
        req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
    }
    req.body(Body::from(event.to_string())).expect("a request")
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

const CALL: &str = r#"{"type":"call","session":"s1","tool":"read","args":{"path":"/a.txt"}}"#;
const OUTCOME: &str = r#"{"type":"outcome","session":"s1","tool":"read","args":{"path":"/a.txt"},"result":{"content":[{"type":"text","text":"same"}]}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identical_calls_warn_at_11_and_block_at_21() {
    let router = server(None).router();
    let mut first_warn = None;
    let mut first_block = None;
    for i in 1..=21 {
        let (status, body) = send(&router, post_event(CALL, None)).await;
        assert_eq!(status, StatusCode::OK, "call {i}: {body}");
        let decision = json(&body);
        match decision["decision"].as_str() {
            Some("warn") if first_warn.is_none() => first_warn = Some(i),
            Some("block") if first_block.is_none() => first_block = Some(i),
            _ => {}
        }
        if decision["decision"] == "block" {
            assert_eq!(decision["detector"], "generic_repeat", "{body}");
            assert_eq!(decision["emitted"], true, "{body}");
            break;
        }
        let (status, body) = send(&router, post_event(OUTCOME, None)).await;
        assert_eq!(status, StatusCode::OK, "outcome {i}: {body}");
        assert_eq!(json(&body)["decision"], "recorded", "{body}");
    }
    assert_eq!(first_warn, Some(11));
    assert_eq!(first_block, Some(21));

    let get = Request::get("/v1/sessions/s1")
        .body(Body::empty())
        .expect("a request");
    let (status, body) = send(&router, get).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let session = json(&body);
    assert_eq!(session["calls"], 21, "{body}");
    assert_eq!(session["outcomes"], 20, "{body}");
    assert_eq!(session["blocks"], 1, "{body}");

    let (status, metrics) = send(
        &router,
        Request::get("/metrics").body(Body::empty()).expect("req"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        metrics.contains("loopguard_decisions_total{")
            && metrics.contains("decision=\"block\"")
            && metrics.contains("detector=\"generic_repeat\""),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_line_is_a_400_naming_the_line_and_field_and_applies_nothing() {
    let router = server(None).router();
    let body = format!("{CALL}\n{{\"type\":\"call\",\"session\":\"s1\"}}\n");
    let req = Request::post("/v1/events")
        .header(header::CONTENT_TYPE, "application/x-ndjson")
        .body(Body::from(body))
        .expect("a request");
    let (status, text) = send(&router, req).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
    let error = json(&text);
    let message = error["error"].as_str().unwrap_or_default();
    assert!(
        message.contains("line 2") || message.contains('2'),
        "{text}"
    );
    assert!(text.contains("tool"), "the missing field is named: {text}");
    // Nothing of the request was applied: the session does not exist.
    let get = Request::get("/v1/sessions/s1")
        .body(Body::empty())
        .expect("a request");
    let (status, text) = send(&router, get).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_required_and_tenants_do_not_share_sessions() {
    let router = server(Some("acme tok-a\nglobex tok-g\n")).router();
    let (status, text) = send(&router, post_event(CALL, None)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{text}");
    assert!(json(&text)["error"].is_string(), "{text}");
    let (status, text) = send(&router, post_event(CALL, Some("wrong"))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{text}");

    for _ in 0..3 {
        let (status, text) = send(&router, post_event(CALL, Some("tok-a"))).await;
        assert_eq!(status, StatusCode::OK, "{text}");
    }
    let get = |token: &str| {
        Request::get("/v1/sessions/s1")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .body(Body::empty())
            .expect("a request")
    };
    let (status, text) = send(&router, get("tok-a")).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(json(&text)["calls"], 3, "{text}");
    let (status, text) = send(&router, get("tok-g")).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "another tenant's session is not visible: {text}"
    );

    // GET /v1/sessions lists the caller's sessions only.
    let other = CALL.replace("\"s1\"", "\"s2\"");
    let (status, text) = send(&router, post_event(&other, Some("tok-g"))).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let list = |token: &str| {
        Request::get("/v1/sessions")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .body(Body::empty())
            .expect("a request")
    };
    for (token, session, calls) in [("tok-a", "s1", 3), ("tok-g", "s2", 1)] {
        let (status, text) = send(&router, list(token)).await;
        assert_eq!(status, StatusCode::OK, "{text}");
        let all = json(&text);
        let all = all.as_array().expect("an array");
        assert_eq!(all.len(), 1, "{token}: {text}");
        assert_eq!(
            (all[0]["session"].as_str(), all[0]["calls"].as_u64()),
            (Some(session), Some(calls)),
            "{text}"
        );
    }
    let (status, _) = send(
        &router,
        Request::get("/v1/sessions")
            .body(Body::empty())
            .expect("req"),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_readiness_and_the_openapi_document() {
    let router = server(None).router();
    for path in ["/healthz", "/readyz"] {
        let (status, text) = send(
            &router,
            Request::get(path).body(Body::empty()).expect("req"),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{path}: {text}");
    }
    let (status, text) = send(
        &router,
        Request::get("/openapi.json")
            .body(Body::empty())
            .expect("req"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let doc = json(&text);
    assert!(
        doc["openapi"]
            .as_str()
            .unwrap_or_default()
            .starts_with("3."),
        "{text}"
    );
    for route in [
        "/v1/events",
        "/v1/sessions",
        "/v1/sessions/{session}",
        "/healthz",
        "/readyz",
        "/metrics",
    ] {
        assert!(doc["paths"].get(route).is_some(), "{route} is documented");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_limit_is_refused_with_json() {
    let router = Server::builder()
        .listen("127.0.0.1:0".parse().expect("an address"))
        .store("memory")
        .max_body(256)
        .build()
        .expect("the server builds")
        .router();
    let big = format!(
        r#"{{"type":"call","session":"s1","tool":"read","args":{{"pad":"{}"}}}}"#,
        "x".repeat(1024)
    );
    let (status, text) = send(&router, post_event(&big, None)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{text}");
    assert!(json(&text)["error"].is_string(), "{text}");
}

/// `POST /v1/events` with `parentSession`: the sub-agent's loop is decided in its own
/// session (blocked at its 21st identical call), the parent's session keeps its own state,
/// the parent's `callsPerSession` budget counts the sub-agent's calls that ran, and
/// `DELETE` of the parent forgets the sub-agent's session with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagents_events_are_linked_to_the_parent_session() {
    let config = OpenClawConfig::load_for_run(
        r#"{"tools":{"loopDetection":{"enabled":true}},"loopguard":{"budgets":{"callsPerSession":22}}}"#,
    )
    .expect("a valid config")
    .config;
    let router = Server::builder()
        .listen("127.0.0.1:0".parse().expect("an address"))
        .store("memory")
        .config(config)
        .build()
        .expect("the server builds")
        .router();
    let sub_call = r#"{"type":"call","session":"task-a1","parentSession":"task","tool":"exec","args":{"command":"npm test"}}"#;
    let sub_outcome = r#"{"type":"outcome","session":"task-a1","parentSession":"task","tool":"exec","args":{"command":"npm test"},"result":"1 failing"}"#;
    let mut decisions = Vec::new();
    for _ in 1..=21 {
        let (status, body) = send(&router, post_event(sub_call, None)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let d = json(&body);
        assert_eq!(d["session"], "task-a1", "{body}");
        decisions.push(d["decision"].as_str().unwrap_or_default().to_string());
        if d["decision"] != "block" {
            send(&router, post_event(sub_outcome, None)).await;
        }
    }
    assert_eq!(decisions[20], "block");
    assert!(
        decisions[..20].iter().all(|d| d != "block"),
        "{decisions:?}"
    );
    // The parent runs the same command: not the sub-agent's loop, but its session's budget
    // counted the sub-agent's 20 calls (21 of 22: past 80%), and the next is past the cap.
    let parent_call =
        r#"{"type":"call","session":"task","tool":"exec","args":{"command":"npm test"}}"#;
    let parent_outcome = r#"{"type":"outcome","session":"task","tool":"exec","args":{"command":"npm test"},"result":"1 failing"}"#;
    let mut parent = Vec::new();
    for _ in 0..3 {
        let (_, body) = send(&router, post_event(parent_call, None)).await;
        let d = json(&body);
        parent.push(format!(
            "{} {}",
            d["decision"].as_str().unwrap_or_default(),
            d["detector"].as_str().unwrap_or("-")
        ));
        send(&router, post_event(parent_outcome, None)).await;
    }
    assert_eq!(parent, ["warn budget", "allow -", "block budget"]);
    let get = |s: &str| {
        Request::get(format!("/v1/sessions/{s}"))
            .body(Body::empty())
            .expect("a request")
    };
    let (status, body) = send(&router, get("task")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(json(&body)["calls"], 3, "{body}");
    let delete = Request::delete("/v1/sessions/task")
        .body(Body::empty())
        .expect("a request");
    let (status, body) = send(&router, delete).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (status, body) = send(&router, get("task-a1")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
}
