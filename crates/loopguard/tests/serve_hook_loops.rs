//! Loops caught through the hook routes (`POST /v1/hooks/{agent}`) are loops like those of
//! `POST /v1/events`: `GET /v1/loops` lists them (session, agent, tool, detector, first
//! warning, block, calls spent), a real webhook receiver on 127.0.0.1 gets one alert per
//! loop, the log has one line per loop event (not one per blocked call) and `/metrics`
//! counts their decisions; with the memory store and with a real `redis-server`, and per
//! tenant with `--tokens`.

mod serve_support;

use std::time::{Duration, Instant};

use serve_support::*;

/// The JSON lines of the server's stderr (`--log-format json`) that are loop events of
/// `session`, once `want` of them say `loop blocked` (or after 20 s).
fn loop_lines(server: &Serve, session: &str, want: usize) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let log = server.stderr.lock().expect("the log").clone();
        let lines: Vec<serde_json::Value> = log
            .lines()
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}"))
            })
            .filter(|v: &serde_json::Value| v["session"] == session)
            .collect();
        let blocked = lines
            .iter()
            .filter(|v| v["message"] == "loop blocked")
            .count();
        if blocked >= want || Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The value of the `loopguard_decisions_total` series with these labels.
fn decisions(server: &Serve, decision: &str, detector: &str) -> u64 {
    let text = get(&agent(), &server.url("/metrics")).body;
    text.lines()
        .filter(|l| l.starts_with("loopguard_decisions_total{"))
        .filter(|l| {
            l.contains(&format!("decision=\"{decision}\""))
                && l.contains(&format!("detector=\"{detector}\""))
        })
        .map(|l| {
            l.rsplit(' ')
                .next()
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or_else(|| panic!("a sample: {l}")) as u64
        })
        .sum()
}

/// Every agent's loop of 25 identical calls on one server over `store`: each listed by
/// `GET /v1/loops`, alerted once, logged once when blocked, counted in `/metrics`.
fn hook_loops_are_recorded_logged_and_alerted(store: &str, agents: &[HookAgent]) {
    let (webhook, alerts) = webhook_receiver();
    let server = Serve::start(&[
        "--store",
        store,
        "--alert-webhook",
        &webhook,
        "--log-format",
        "json",
    ]);
    for (n, who) in agents.iter().enumerate() {
        let id = format!("hist-{n}");
        let seen = hook_loop(&[&server], *who, &id, None);
        let session = who.session(&id);
        let loops = loops_of(&server, &session, None, |l| {
            l.first().is_some_and(|l| l["calls"] == 15)
        });
        check_hook_loop(&loops, &seen, *who, &id);

        // One alert for the loop, however many calls were blocked.
        let deadline = Instant::now() + Duration::from_secs(20);
        while alerts.lock().unwrap().len() < n + 1 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        // Give a second alert time to arrive, were one sent.
        std::thread::sleep(Duration::from_millis(500));
        let got = alerts.lock().unwrap().clone();
        assert_eq!(got.len(), n + 1, "one alert per loop: {got:#?}");
        let alert = &got[n];
        assert_eq!(
            (
                alert["event"].as_str(),
                alert["session"].as_str(),
                alert["agent"].as_str(),
            ),
            (Some("block"), Some(session.as_str()), Some(who.name())),
            "{alert}"
        );

        // The log: the loop's first block once (not its five blocked calls), a warning
        // when one was shown, each line naming the agent and the tool.
        let lines = loop_lines(&server, &session, 1);
        let blocked: Vec<_> = lines
            .iter()
            .filter(|v| v["message"] == "loop blocked")
            .collect();
        assert_eq!(blocked.len(), 1, "{who:?}: {lines:#?}");
        assert!(
            lines.iter().any(|v| v["message"] == "loop warning"),
            "{who:?}: {lines:#?}"
        );
        assert!(lines.len() <= 3, "{who:?}: {lines:#?}");
        for v in &lines {
            assert_eq!(
                (v["agent"].as_str(), v["tool"].as_str()),
                (Some(who.name()), Some(who.tool())),
                "{v}"
            );
            assert_eq!(v["detector"], "generic_repeat", "{v}");
        }
        assert_eq!(blocked[0]["decision"], "block", "{}", blocked[0]);
    }
    // The dashboard counts them from the same records: every agent among those that loop.
    let dashboard = get(&agent(), &server.url("/v1/dashboard"));
    assert_eq!(dashboard.status, 200, "{}", dashboard.body);
    for who in agents {
        assert!(
            dashboard.body.contains(&format!("\"{}\"", who.name())),
            "{who:?} on the dashboard: {}",
            dashboard.body
        );
    }
    // The decisions are counted once each: five blocks per loop.
    assert_eq!(
        decisions(&server, "block", "generic_repeat"),
        5 * agents.len() as u64
    );
    assert_eq!(
        decisions(&server, "warn", "generic_repeat"),
        10 * agents.len() as u64
    );
}

#[test]
fn hook_loops_in_memory_are_listed_alerted_and_logged_once() {
    hook_loops_are_recorded_logged_and_alerted(
        "memory",
        &[HookAgent::ClaudeCode, HookAgent::Gemini, HookAgent::Codex],
    );
}

#[test]
fn hook_loops_on_redis_are_listed_alerted_and_logged_once() {
    let redis = Redis::start();
    hook_loops_are_recorded_logged_and_alerted(
        &redis.url(0),
        &[HookAgent::ClaudeCode, HookAgent::Gemini],
    );
}

/// With `--tokens` a hook's loop belongs to the token's tenant: two tenants whose agents use
/// the same session id each see their own loop only, and each loop is alerted.
fn tenants_see_only_their_own_hook_loops(store: &str) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "acme tok-a\nglobex tok-g\n").unwrap();
    let (webhook, alerts) = webhook_receiver();
    let server = Serve::start(&[
        "--store",
        store,
        "--tokens",
        tokens.to_str().unwrap(),
        "--alert-webhook",
        &webhook,
    ]);
    let who = HookAgent::ClaudeCode;
    let seen = hook_loop(&[&server], who, "same-id", Some("tok-a"));
    let acme = loops_of(&server, "same-id", Some("tok-a"), |l| {
        l.first().is_some_and(|l| l["calls"] == 15)
    });
    check_hook_loop(&acme, &seen, who, "same-id");
    assert_eq!(acme[0]["tenant"], "acme", "{}", acme[0]);
    let globex = loops_of(&server, "same-id", Some("tok-g"), |_| true);
    assert!(globex.is_empty(), "globex sees acme's loop: {globex:#?}");

    let seen = hook_loop(&[&server], who, "same-id", Some("tok-g"));
    let globex = loops_of(&server, "same-id", Some("tok-g"), |l| {
        l.first().is_some_and(|l| l["calls"] == 15)
    });
    check_hook_loop(&globex, &seen, who, "same-id");
    assert_eq!(globex[0]["tenant"], "globex", "{}", globex[0]);
    assert_ne!(globex[0]["id"], acme[0]["id"]);
    let acme_again = loops_of(&server, "same-id", Some("tok-a"), |_| true);
    assert_eq!(acme_again, acme, "acme's loops are unchanged");

    let deadline = Instant::now() + Duration::from_secs(20);
    while alerts.lock().unwrap().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let got = alerts.lock().unwrap().clone();
    let mut tenants: Vec<&str> = got.iter().filter_map(|a| a["tenant"].as_str()).collect();
    tenants.sort();
    assert_eq!(
        tenants,
        ["acme", "globex"],
        "one alert per tenant's loop: {got:#?}"
    );
}

#[test]
fn tenants_see_only_their_own_hook_loops_in_memory() {
    tenants_see_only_their_own_hook_loops("memory");
}

#[test]
fn tenants_see_only_their_own_hook_loops_on_redis() {
    let redis = Redis::start();
    tenants_see_only_their_own_hook_loops(&redis.url(0));
}
