//! `loopguard serve`'s dashboard (`GET /`), rendered by a real headless Chromium against a
//! running server: a page opened before a looping agent starts shows its warning and its
//! block without a reload, pushed by the live stream (the page's polling is set to an hour);
//! its warnings and blocks per minute add up to the decisions sent; its session page draws
//! the replay report's lanes; the pages fit a phone's width; with `--tokens` the page asks
//! for a token, and a tenant sees only its own sessions, on the stream too; streams are
//! capped and a client that never reads one holds up no decision.
//!
//! Chromium is found by `browser/mod.rs` (`LOOPGUARD_CHROMIUM` or `PATH`);
//! `LOOPGUARD_REQUIRE_CHROMIUM=1` (set by `.ci/run`) turns a missing browser into a failure.

mod browser;
mod serve_support;

use browser::{chromium, count_color, headless, no_browser, Page};
use serve_support::*;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Headless Chromium at `size`, given time for the page's fetches (virtual time); only for
/// pages that open no stream (the login page), which otherwise never finish loading.
fn dom(dir: &Path, name: &str, size: &str, url: &str) -> String {
    let out = headless(&chromium().unwrap(), &dir.join(name))
        .arg("--virtual-time-budget=4000")
        .arg(format!("--window-size={size}"))
        .arg("--dump-dom")
        .arg(url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Decisions of one kind the server answered.
#[derive(Default, Debug)]
struct Sent {
    warnings: u64,
    blocks: u64,
}

fn post_event(
    agent: &ureq::Agent,
    server: &Serve,
    auth: Option<&str>,
    event: &str,
    sent: &mut Sent,
) -> String {
    let mut headers = vec![("content-type", "application/json")];
    if let Some(a) = auth {
        headers.push(("authorization", a));
    }
    let a = request(
        agent,
        "POST",
        &server.url("/v1/events"),
        &headers,
        Some(event.as_bytes()),
    )
    .unwrap();
    assert_eq!(a.status, 200, "{}", a.body);
    let decision = a.json()["decision"].as_str().unwrap().to_string();
    match decision.as_str() {
        "warn" => sent.warnings += 1,
        "block" => sent.blocks += 1,
        _ => {}
    }
    decision
}

/// The same read, called and answered the same, until the decision is `until`.
fn loop_until(
    agent: &ureq::Agent,
    server: &Serve,
    session: &str,
    auth: Option<&str>,
    until: &str,
    sent: &mut Sent,
) {
    for _ in 0..40 {
        let call = format!(
            r#"{{"type":"call","session":"{session}","agent":"bot-a","tool":"read","args":{{"p":1}}}}"#
        );
        if post_event(agent, server, auth, &call, sent) == until {
            return;
        }
        let outcome = format!(
            r#"{{"type":"outcome","session":"{session}","agent":"bot-a","tool":"read","args":{{"p":1}},"result":"x"}}"#
        );
        post_event(agent, server, auth, &outcome, sent);
    }
    panic!("never a {until}");
}

fn loop_until_blocked(agent: &ureq::Agent, server: &Serve, session: &str, auth: Option<&str>) {
    loop_until(agent, server, session, auth, "block", &mut Sent::default());
}

/// The page's warnings and blocks per minute, summed over its bars.
const BAR_SUMS: &str = "[...document.querySelectorAll('#bars div')].reduce((s, d) => [s[0] + +d.dataset.w, s[1] + +d.dataset.b], [0, 0])";

fn fits_the_width(page: &mut Page, what: &str) {
    let (scroll, client) = (
        page.eval("document.documentElement.scrollWidth"),
        page.eval("document.documentElement.clientWidth"),
    );
    assert!(
        scroll.as_u64() <= client.as_u64(),
        "{what} overflows a phone's width: {scroll} > {client}"
    );
}

#[test]
fn a_page_opened_before_the_loop_shows_its_warning_and_block_pushed_by_the_stream() {
    if no_browser("the dashboard") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let keep = std::env::var_os("LOOPGUARD_KEEP_SHOTS").map(PathBuf::from);
    let server = Serve::start(&[]);
    let agent = agent();
    // Polling every hour: whatever changes on the page from now on came by the stream.
    let mut page = Page::open(
        &chromium().unwrap(),
        &dir.path().join("profile"),
        &server.url("/?poll=3600"),
        1280,
        900,
    );
    page.wait_for(
        "document.body.dataset.stream === 'open' && document.body.dataset.ready === '1'",
        "the stream open",
    );
    page.eval("window.openedBefore = 'yes'");
    let polls = page.eval("document.body.dataset.updatesPoll");
    let page_html = get(&agent, &server.url("/"));
    assert!(
        !page_html.body.contains("http://") && !page_html.body.contains("https://"),
        "nothing is loaded from elsewhere"
    );

    let mut sent = Sent::default();
    loop_until(&agent, &server, "sess-loop", None, "warn", &mut sent);
    page.wait_for(
        "document.querySelector('#loops [data-end=\"warned\"]')",
        "the warned loop",
    );
    loop_until(&agent, &server, "sess-loop", None, "block", &mut sent);
    for i in 0..3 {
        let call = format!(r#"{{"type":"call","session":"calm-{i}","tool":"ls"}}"#);
        post_event(&agent, &server, None, &call, &mut sent);
    }
    page.wait_for(
        "document.querySelector('#loops [data-end=\"blocked\"]') && document.getElementById('live').textContent === '4'",
        "the blocked loop and four sessions",
    );
    // Every warn and block decision, in its minute.
    assert!(sent.warnings >= 2 && sent.blocks >= 1, "{sent:?}");
    let want = serde_json::json!([sent.warnings, sent.blocks]);
    page.wait_for(
        &format!("JSON.stringify({BAR_SUMS}) === '{want}'"),
        &format!("{want} warnings and blocks in the bars"),
    );
    let d = get(&agent, &server.url("/v1/dashboard")).json();
    let sum = |k: &str| {
        d["perMinute"][k]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(
        (sum("warnings"), sum("blocks")),
        (sent.warnings, sent.blocks)
    );
    // The same page, updated by the stream only.
    assert_eq!(
        page.eval("window.openedBefore"),
        "yes",
        "the page was reloaded"
    );
    assert_eq!(page.eval("document.body.dataset.updatesPoll"), polls);
    assert_eq!(page.eval("document.body.dataset.updatedBy"), "sse");
    assert!(
        page.eval("+document.body.dataset.updatesSse")
            .as_u64()
            .unwrap()
            >= 3,
        "{}",
        page.eval("document.body.dataset.updatesSse")
    );
    assert_eq!(
        page.eval("document.querySelector('#blocked-hour').textContent"),
        "1"
    );
    assert!(page.eval("document.body.innerText.includes('bot-a')") == true);

    // Screenshots: drawn, not blank (the header's colour, the red of a block).
    let shoot = |page: &mut Page, name: &str, red: [u8; 3]| {
        let shot = dir.path().join(format!("{name}.png"));
        page.screenshot(&shot);
        if let Some(k) = &keep {
            std::fs::copy(&shot, k.join(format!("dashboard-{name}.png"))).unwrap();
        }
        let (header, total) = count_color(&shot, [0x1d, 0x23, 0x30]);
        assert!(
            header > 1000 && header < total / 2,
            "{name}: {header} of {total} pixels are the header's"
        );
        let (reds, _) = count_color(&shot, red);
        assert!(
            reds > 20,
            "{name}: the block is not drawn ({reds} red pixels)"
        );
    };
    shoot(&mut page, "desk", [0xc6, 0x28, 0x28]);
    page.resize(390, 844);
    page.wait_for(
        "document.documentElement.clientWidth === 390",
        "the phone's width",
    );
    fits_the_width(&mut page, "the fleet page");
    shoot(&mut page, "phone", [0xc6, 0x28, 0x28]);

    // The session page: the replay report's lanes, with the report's style.
    page.resize(1280, 900);
    page.eval("location.hash = '#session=sess-loop'");
    page.wait_for(
        "document.querySelector('#timeline .lanes .label.loop[data-end=\"blocked\"]') && document.querySelector('#timeline svg.lane rect.block')",
        "the session's lanes",
    );
    assert_eq!(
        page.eval("getComputedStyle(document.querySelector('#timeline .lanes')).display"),
        "grid"
    );
    assert_eq!(
        page.eval("getComputedStyle(document.querySelector('#timeline rect.block')).fill"),
        "rgb(208, 2, 27)"
    );
    assert!(
        page.eval("document.getElementById('session-title').textContent") == "Session sess-loop"
    );
    assert_eq!(
        page.eval("window.openedBefore"),
        "yes",
        "the page was reloaded"
    );
    let lanes = get(&agent, &server.url("/v1/dashboard/sessions/sess-loop")).json();
    assert!(
        lanes["lanes"]
            .as_str()
            .unwrap()
            .contains("svg class=\"lane\""),
        "{lanes}"
    );
    shoot(&mut page, "sess-desk", [0xd0, 0x02, 0x1b]);
    page.resize(390, 844);
    page.wait_for(
        "document.documentElement.clientWidth === 390",
        "the phone's width",
    );
    fits_the_width(&mut page, "the session page");
    shoot(&mut page, "sess-phone", [0xd0, 0x02, 0x1b]);
}

/// Opens a stream on a raw connection; the head of the answer and the first event, read
/// when `read` (a stuck client reads nothing).
fn open_stream(server: &Serve, query: &str, read: bool) -> (std::net::TcpStream, String) {
    let addr = server.url("").trim_start_matches("http://").to_string();
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET /v1/dashboard/stream{query} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n"
    )
    .unwrap();
    let mut got = String::new();
    let mut buf = [0u8; 65536];
    loop {
        if !read {
            break;
        }
        if let Some((head, body)) = got.split_once("\r\n\r\n") {
            // A 200 is read to its first event's blank line; an error to its JSON's end.
            let done = if head.starts_with("HTTP/1.1 200") {
                body.contains("\n\n")
            } else {
                body.trim_end().ends_with('}')
            };
            if done {
                break;
            }
        }
        let n = s.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        got.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    (s, got)
}

#[test]
fn with_tokens_the_page_asks_for_one_and_a_tenant_sees_only_its_own() {
    if no_browser("the dashboard") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "acme tok-a\nglobex tok-g\n").unwrap();
    let server = Serve::start(&["--tokens", tokens.to_str().unwrap()]);
    let agent = agent();
    loop_until_blocked(&agent, &server, "acme-loop", Some("Bearer tok-a"));
    let page = dom(dir.path(), "login", "1280,900", &server.url("/"));
    assert!(page.contains(r#"id="login" class="on""#), "{page}");
    assert!(!page.contains("acme-loop"), "{page}");
    let as_tenant = |t: &str| {
        let auth = format!("Bearer {t}");
        request(
            &agent,
            "GET",
            &server.url("/v1/dashboard"),
            &[("authorization", &auth)],
            None,
        )
        .unwrap()
        .json()
    };
    let acme = as_tenant("tok-a");
    assert_eq!(
        (
            acme["liveSessions"].as_u64(),
            acme["loopsLastHour"].as_u64()
        ),
        (Some(1), Some(1))
    );
    let globex = as_tenant("tok-g");
    assert_eq!(
        (
            globex["liveSessions"].as_u64(),
            globex["loopsLastHour"].as_u64()
        ),
        (Some(0), Some(0))
    );
    assert_eq!(get(&agent, &server.url("/v1/dashboard")).status, 401);

    // The stream: a ticket for the token's tenant, used once.
    let ticket = |t: &str| {
        let auth = format!("Bearer {t}");
        let a = request(
            &agent,
            "POST",
            &server.url("/v1/dashboard/ticket"),
            &[("authorization", &auth)],
            None,
        )
        .unwrap();
        assert_eq!(a.status, 200, "{}", a.body);
        a.json()["ticket"].as_str().unwrap().to_string()
    };
    let t = ticket("tok-a");
    let (_acme, got) = open_stream(&server, &format!("?ticket={t}"), true);
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    assert!(
        got.contains("event: fleet") && got.contains("acme-loop"),
        "{got}"
    );
    let (_again, got) = open_stream(&server, &format!("?ticket={t}"), true);
    assert!(
        got.starts_with("HTTP/1.1 401"),
        "a ticket is for one stream: {got}"
    );
    let (_none, got) = open_stream(&server, "", true);
    assert!(got.starts_with("HTTP/1.1 401"), "{got}");
    let t = ticket("tok-g");
    let (_globex, got) = open_stream(&server, &format!("?ticket={t}"), true);
    assert!(
        got.contains("event: fleet") && !got.contains("acme-loop"),
        "{got}"
    );
    let t = ticket("tok-g");
    let (_peek, got) = open_stream(&server, &format!("?ticket={t}&session=acme-loop"), true);
    assert!(got.contains("event: session"), "{got}");
    assert!(
        got.contains(r#""session":null"#) && got.contains(r#""loops":[]"#),
        "another tenant's session: {got}"
    );
    assert_eq!(
        request(
            &agent,
            "POST",
            &server.url("/v1/dashboard/ticket"),
            &[],
            None
        )
        .unwrap()
        .status,
        401
    );
}

#[test]
fn streams_are_capped_and_clients_that_never_read_hold_up_no_decision() {
    let server = Serve::start(&["--alert-webhook", "http://127.0.0.1:9/never"]);
    let agent = agent();
    // 64 streams (the cap), each read to its first event and then never again.
    let mut stuck = Vec::new();
    for _ in 0..64 {
        let (s, got) = open_stream(&server, "", true);
        assert!(got.starts_with("HTTP/1.1 200"), "{got}");
        stuck.push(s);
    }
    let (_over, got) = open_stream(&server, "", true);
    assert!(got.starts_with("HTTP/1.1 503"), "the 65th stream: {got}");
    // Decisions go on, every one answered, while no stream reads what it is sent.
    let mut sent = Sent::default();
    for i in 0..20 {
        loop_until(
            &agent,
            &server,
            &format!("loop-{i}"),
            None,
            "block",
            &mut sent,
        );
    }
    assert!(sent.blocks == 20 && sent.warnings >= 20, "{sent:?}");
    let d = get(&agent, &server.url("/v1/dashboard")).json();
    assert_eq!(d["blockedLastHour"], 20);
    // A closed stream frees its place (hyper sees it at its next write: a keep-alive
    // comment at the latest, every 15 s).
    drop(stuck.pop());
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (_s, got) = open_stream(&server, "", true);
        if got.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the place was never freed: {got}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}
