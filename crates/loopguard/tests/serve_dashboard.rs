//! `loopguard serve`'s dashboard (`GET /`), rendered by a real headless Chromium against a
//! running server: a looping session appears with its block, its session page draws a lane
//! per loop, the page fits a phone's width, and with `--tokens` it asks for a token and shows
//! a tenant only its own sessions.
//!
//! Chromium is found by `browser/mod.rs` (`LOOPGUARD_CHROMIUM` or `PATH`);
//! `LOOPGUARD_REQUIRE_CHROMIUM=1` (set by `.ci/run`) turns a missing browser into a failure.

mod browser;
mod serve_support;

use browser::{chromium, count_color, headless, no_browser};
use serve_support::*;
use std::path::{Path, PathBuf};

/// Headless Chromium at `size`, given time for the page's fetches (virtual time).
fn browse(profile: &Path, size: &str, extra: &str, url: &str) -> std::process::Output {
    let out = headless(&chromium().unwrap(), profile)
        .arg("--virtual-time-budget=4000")
        .arg(format!("--window-size={size}"))
        .arg(extra)
        .arg(url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn dom(dir: &Path, name: &str, size: &str, url: &str) -> String {
    String::from_utf8_lossy(&browse(&dir.join(name), size, "--dump-dom", url).stdout).into_owned()
}

fn screenshot(dir: &Path, name: &str, size: &str, url: &str) -> PathBuf {
    let shot = dir.join(format!("{name}.png"));
    browse(
        &dir.join(name),
        size,
        &format!("--screenshot={}", shot.display()),
        url,
    );
    shot
}

/// `data-NAME="…"` of the body.
fn body_attr(dom: &str, name: &str) -> Option<u64> {
    let at = dom.find(&format!("data-{name}=\""))? + name.len() + 7;
    dom[at..].split('"').next()?.parse().ok()
}

fn loop_until_blocked(agent: &ureq::Agent, server: &Serve, session: &str, auth: Option<&str>) {
    let mut headers = vec![("content-type", "application/json")];
    if let Some(a) = auth {
        headers.push(("authorization", a));
    }
    for _ in 0..40 {
        let call = format!(
            r#"{{"type":"call","session":"{session}","agent":"bot-a","tool":"read","args":{{"p":1}}}}"#
        );
        let a = request(
            agent,
            "POST",
            &server.url("/v1/events"),
            &headers,
            Some(call.as_bytes()),
        )
        .unwrap();
        if a.json()["decision"] == "block" {
            return;
        }
        let outcome = format!(
            r#"{{"type":"outcome","session":"{session}","agent":"bot-a","tool":"read","args":{{"p":1}},"result":"x"}}"#
        );
        request(
            agent,
            "POST",
            &server.url("/v1/events"),
            &headers,
            Some(outcome.as_bytes()),
        )
        .unwrap();
    }
    panic!("never blocked");
}

#[test]
fn a_looping_session_shows_with_its_block_on_desktop_and_phone() {
    if no_browser("the dashboard") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let keep = std::env::var_os("LOOPGUARD_KEEP_SHOTS").map(PathBuf::from);
    let server = Serve::start(&[]);
    let agent = agent();
    loop_until_blocked(&agent, &server, "sess-loop", None);
    for i in 0..3 {
        let call = format!(r#"{{"type":"call","session":"calm-{i}","tool":"ls"}}"#);
        post_json(&agent, &server.url("/v1/events"), call.as_bytes());
    }
    let page = get(&agent, &server.url("/"));
    assert!(
        page.content_type.starts_with("text/html"),
        "{}",
        page.content_type
    );
    assert!(
        !page.body.contains("http://") && !page.body.contains("https://"),
        "nothing is loaded from elsewhere"
    );

    let desktop = dom(dir.path(), "desk", "1280,900", &server.url("/"));
    assert_eq!(body_attr(&desktop, "ready"), Some(1), "{desktop}");
    assert!(desktop.contains(">sess-loop</a>"), "{desktop}");
    assert!(desktop.contains(r#"data-end="blocked""#), "{desktop}");
    assert!(desktop.contains(r#"<b id="live">4</b>"#), "{desktop}");
    assert!(
        desktop.contains(r#"<b id="blocked-hour">1</b>"#),
        "{desktop}"
    );
    assert!(desktop.contains("<td>bot-a</td>"), "{desktop}");

    let phone = dom(dir.path(), "phone", "390,844", &server.url("/"));
    assert!(phone.contains(">sess-loop</a>"), "{phone}");
    let (scroll, client) = (
        body_attr(&phone, "scroll-width").unwrap(),
        body_attr(&phone, "client-width").unwrap(),
    );
    assert!(
        scroll <= client,
        "the page overflows a phone's width: {scroll} > {client}"
    );

    let session = server.url("/#session=sess-loop");
    let sdom = dom(dir.path(), "sess", "1280,900", &session);
    assert!(
        sdom.contains(r#"class="lane" data-end="blocked""#),
        "{sdom}"
    );
    assert!(sdom.contains(r#"class="block""#), "{sdom}");
    assert!(sdom.contains("Session sess-loop"), "{sdom}");
    let sphone = dom(dir.path(), "sess-phone", "390,844", &session);
    let (scroll, client) = (
        body_attr(&sphone, "scroll-width").unwrap(),
        body_attr(&sphone, "client-width").unwrap(),
    );
    assert!(
        scroll <= client,
        "the session page overflows a phone's width: {scroll} > {client}"
    );

    // Screenshots: drawn, not blank (the header's colour, the red of a block).
    for (name, size, url) in [
        ("desk", "1280,900", server.url("/")),
        ("phone", "390,844", server.url("/")),
        ("sess-phone", "390,844", session.clone()),
    ] {
        let shot = screenshot(dir.path(), &format!("shot-{name}"), size, &url);
        if let Some(k) = &keep {
            std::fs::copy(&shot, k.join(format!("dashboard-{name}.png"))).unwrap();
        }
        let (header, total) = count_color(&shot, [0x1d, 0x23, 0x30]);
        assert!(
            header > 1000 && header < total / 2,
            "{name}: {header} of {total} pixels are the header's"
        );
        let (red, _) = count_color(&shot, [0xc6, 0x28, 0x28]);
        assert!(
            red > 20,
            "{name}: the block is not drawn ({red} red pixels)"
        );
    }
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
}
