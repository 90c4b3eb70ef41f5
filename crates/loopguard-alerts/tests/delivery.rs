//! Deliveries to a real HTTP receiver on 127.0.0.1 (axum): up, down (connection refused),
//! slow (past the time limit), answering 500 then 200, and a queue that overflows.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use loopguard_alerts::{Alert, AlertEvent, AlertFormat, AlertOptions, AlertTarget, Alerts};

/// A receiver: records every body, answers the statuses of `script` in turn (then 200),
/// sleeping `delay` before each answer.
#[derive(Clone)]
struct Receiver {
    bodies: Arc<Mutex<Vec<serde_json::Value>>>,
    hits: Arc<AtomicUsize>,
}

async fn receiver(script: Vec<u16>, delay: Duration) -> (String, Receiver) {
    let r = Receiver {
        bodies: Arc::default(),
        hits: Arc::default(),
    };
    let (bodies, hits) = (r.bodies.clone(), r.hits.clone());
    let app = Router::new().route(
        "/hook",
        post(move |body: Bytes| {
            let (bodies, hits, script) = (bodies.clone(), hits.clone(), script.clone());
            async move {
                let n = hits.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(delay).await;
                let status = script.get(n).copied().unwrap_or(200);
                if status == 200 {
                    bodies
                        .lock()
                        .unwrap()
                        .push(serde_json::from_slice(&body).expect("a JSON body"));
                }
                StatusCode::from_u16(status).unwrap()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/hook"), r)
}

fn fast() -> AlertOptions {
    let mut o = AlertOptions::default();
    o.backoff = Duration::from_millis(20);
    o.max_backoff = Duration::from_millis(100);
    o.timeout = Duration::from_secs(2);
    o
}

fn alert(key: &str) -> Alert {
    let mut a = Alert::new(AlertEvent::Block, key, "sess-1");
    a.agent = Some("bot".into());
    a.tool = Some("read".into());
    a.detector = Some("generic_repeat".into());
    a.calls = 11;
    a
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alert_reaches_each_target_once_in_its_shape() {
    let (json_url, json_rx) = receiver(vec![], Duration::ZERO).await;
    let (slack_url, slack_rx) = receiver(vec![], Duration::ZERO).await;
    let (pd_url, pd_rx) = receiver(vec![], Duration::ZERO).await;
    let mut slack = AlertTarget::webhook(slack_url);
    slack.format = AlertFormat::Slack;
    let mut pd = AlertTarget::webhook(format!("{pd_url}?routing_key=R123"));
    pd.format = AlertFormat::PagerDuty;
    let alerts = Alerts::new(vec![AlertTarget::webhook(json_url), slack, pd], fast());
    tokio::spawn(alerts.clone().deliver());
    assert!(alerts.send(alert("-/sess-1#read:abc")));
    // The same loop again: one alert per loop.
    assert!(!alerts.send(alert("-/sess-1#read:abc")));
    until("three deliveries", || alerts.stats().delivered == 3).await;
    let j = json_rx.bodies.lock().unwrap()[0].clone();
    assert_eq!(
        (
            j["event"].as_str(),
            j["key"].as_str(),
            j["agent"].as_str(),
            j["calls"].as_u64()
        ),
        (
            Some("block"),
            Some("-/sess-1#read:abc"),
            Some("bot"),
            Some(11)
        )
    );
    let s = slack_rx.bodies.lock().unwrap()[0].clone();
    assert!(
        s["text"]
            .as_str()
            .unwrap()
            .contains("loopguard blocked a loop: agent bot called read"),
        "{s}"
    );
    assert_eq!(s["blocks"][0]["type"], "section");
    let p = pd_rx.bodies.lock().unwrap()[0].clone();
    assert_eq!(
        (p["routing_key"].as_str(), p["event_action"].as_str()),
        (Some("R123"), Some("trigger"))
    );
    assert_eq!(p["dedup_key"], "loopguard:block:-/sess-1#read:abc");
    assert_eq!(p["payload"]["severity"], "error");
    assert_eq!(alerts.stats().duplicates, 1);
    for r in [&json_rx, &slack_rx, &pd_rx] {
        assert_eq!(r.hits.load(Ordering::SeqCst), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_answers_500_is_tried_again_until_it_takes_the_alert() {
    let (url, rx) = receiver(vec![500, 503], Duration::ZERO).await;
    let alerts = Alerts::new(vec![AlertTarget::webhook(url)], fast());
    tokio::spawn(alerts.clone().deliver());
    assert!(alerts.send(alert("k1")));
    until("the third try", || alerts.stats().delivered == 1).await;
    assert_eq!(rx.hits.load(Ordering::SeqCst), 3);
    assert_eq!(rx.bodies.lock().unwrap().len(), 1);
    let s = alerts.stats();
    assert_eq!((s.retries, s.failed), (2, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_4xx_is_not_tried_again() {
    let (url, rx) = receiver(vec![404, 404], Duration::ZERO).await;
    let alerts = Alerts::new(vec![AlertTarget::webhook(url)], fast());
    tokio::spawn(alerts.clone().deliver());
    alerts.send(alert("k1"));
    until("the failure", || alerts.stats().failed == 1).await;
    assert_eq!(rx.hits.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_is_down_fails_after_its_attempts_and_holds_up_nothing() {
    // A port that refuses: bound, then closed.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let (up_url, up) = receiver(vec![], Duration::ZERO).await;
    let mut opts = fast();
    opts.attempts = 3;
    let down = AlertTarget::webhook(format!("http://{closed}/hook"));
    let alerts = Alerts::new(vec![down, AlertTarget::webhook(up_url)], opts);
    tokio::spawn(alerts.clone().deliver());
    let start = Instant::now();
    for i in 0..5 {
        assert!(alerts.send(alert(&format!("k{i}"))));
    }
    // Sending never waits for a delivery.
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
    until("every delivery settled", || {
        let s = alerts.stats();
        s.delivered == 5 && s.failed == 5
    })
    .await;
    assert_eq!(up.bodies.lock().unwrap().len(), 5);
    assert_eq!(
        alerts.stats().retries,
        10,
        "two retries of each of the 5 alerts to the closed port"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_receiver_times_out_is_retried_and_a_full_queue_drops_and_counts() {
    // Every answer takes longer than the time limit.
    let (url, rx) = receiver(vec![], Duration::from_millis(600)).await;
    let mut opts = fast();
    opts.timeout = Duration::from_millis(300);
    opts.attempts = 2;
    opts.queue = 2;
    opts.in_flight = 1;
    let alerts = Alerts::new(vec![AlertTarget::webhook(url)], opts);
    // Before the delivery task runs, the queue of 2 takes two alerts and drops the rest.
    let queued: Vec<bool> = (0..5)
        .map(|i| alerts.send(alert(&format!("k{i}"))))
        .collect();
    assert_eq!(queued, [true, true, false, false, false]);
    assert_eq!(alerts.stats().dropped, 3);
    tokio::spawn(alerts.clone().deliver());
    until("both settled", || {
        let s = alerts.stats();
        s.delivered + s.failed == 2
    })
    .await;
    let s = alerts.stats();
    // Every try timed out (the receiver always takes 600 ms): retried once, then failed.
    assert_eq!((s.failed, s.retries, s.delivered), (2, 2, 0), "{s:?}");
    assert!(rx.hits.load(Ordering::SeqCst) >= 3);
}
