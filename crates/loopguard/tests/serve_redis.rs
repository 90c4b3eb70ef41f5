//! `loopguard serve` with Redis: a real `redis-server` on a free loopback port, and real
//! `loopguard serve` replicas sharing it. Without redis-server these tests fail (they never
//! skip): run scripts/setup-redis.sh.

mod serve_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serve_support::*;

/// The parity fixtures, event by event, alternating between two replicas on one Redis:
/// exactly the fixtures' decisions.
#[test]
fn parity_fixtures_through_two_replicas_on_redis() {
    let redis = Redis::start();
    let agent = agent();
    for (db, (name, config, events, expected)) in parity_cases().into_iter().enumerate() {
        // a database per case, so sessions of different cases never meet
        let store = redis.url(db as u32);
        let replicas = [
            Serve::start(&["--config", config.to_str().unwrap(), "--store", &store]),
            Serve::start(&["--config", config.to_str().unwrap(), "--store", &store]),
        ];
        let events: Vec<_> = events.iter().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(events.len(), expected.len(), "{name}");
        for (i, (event, want)) in events.iter().zip(&expected).enumerate() {
            let server = &replicas[i % 2];
            let a = post_json(&agent, &server.url("/v1/events"), event.as_bytes());
            assert_eq!(a.status, 200, "{name} event {}: {}", i + 1, a.body);
            assert_eq!(
                a.body,
                without_line(want),
                "{name} event {} (replica {})",
                i + 1,
                i % 2
            );
        }
    }
}

fn call(session: &str, client: usize, n: usize) -> String {
    format!(
        r#"{{"type":"call","session":"{session}","callId":"c{client}-{n}","tool":"exec","args":{{"command":"step {client} {n}"}}}}"#
    )
}

/// 16 clients post to one session through two replicas at once: no update is lost (the
/// session's call counter equals the number of 200 answers).
#[test]
fn concurrent_clients_on_two_replicas_lose_no_update() {
    let redis = Redis::start();
    let store = redis.url(0);
    let replicas = Arc::new([
        Serve::start(&["--store", &store]),
        Serve::start(&["--store", &store]),
    ]);
    let ok = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..16)
        .map(|client| {
            let (replicas, ok) = (replicas.clone(), ok.clone());
            std::thread::spawn(move || {
                let agent = agent();
                for n in 0..25 {
                    let server = &replicas[(client + n) % 2];
                    let a = post_json(
                        &agent,
                        &server.url("/v1/events"),
                        call("hot", client, n).as_bytes(),
                    );
                    assert_eq!(a.status, 200, "{}", a.body);
                    ok.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("client thread");
    }
    let ok = ok.load(Ordering::SeqCst);
    assert_eq!(ok, 16 * 25);
    for server in replicas.iter() {
        let s = get(&agent(), &server.url("/v1/sessions/hot")).json();
        assert_eq!(s["calls"], ok as u64, "{s}");
    }
    // the replicas did contend: the store retried
    let metrics: String = replicas
        .iter()
        .map(|s| get(&agent(), &s.url("/metrics")).body)
        .collect();
    let retries: u64 = metrics
        .lines()
        .filter_map(|l| l.strip_prefix("loopguard_store_retries_total "))
        .map(|v| v.trim().parse::<u64>().unwrap())
        .sum();
    eprintln!("optimistic-concurrency retries: {retries}");
    assert!(
        retries > 0,
        "16 clients on one session through two replicas never contended"
    );
}

/// A replica killed with kill -9 in the middle: everything it acknowledged is in the
/// session (the counter is at least the number of 200 answers, and at most the number of
/// requests sent).
#[test]
fn killed_replica_loses_nothing_it_acknowledged() {
    let redis = Redis::start();
    let store = redis.url(0);
    let survivor = Arc::new(Serve::start(&["--store", &store]));
    let victim = Arc::new(Mutex::new(Serve::start(&["--store", &store])));
    let victim_url = victim.lock().unwrap().url("/v1/events");
    let (acked, sent) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let threads: Vec<_> = (0..16)
        .map(|client| {
            let (survivor, victim_url) = (survivor.clone(), victim_url.clone());
            let (acked, sent) = (acked.clone(), sent.clone());
            std::thread::spawn(move || {
                let agent = serve_support::agent();
                for n in 0..30 {
                    let url = if (client + n) % 2 == 0 {
                        survivor.url("/v1/events")
                    } else {
                        victim_url.clone()
                    };
                    sent.fetch_add(1, Ordering::SeqCst);
                    let body = call("k9", client, n);
                    match request(
                        &agent,
                        "POST",
                        &url,
                        &[("content-type", "application/json")],
                        Some(body.as_bytes()),
                    ) {
                        Ok(a) if a.status == 200 => {
                            acked.fetch_add(1, Ordering::SeqCst);
                        }
                        Ok(a) => panic!("{}: {}", a.status, a.body),
                        // the killed replica: refused or reset, not acknowledged
                        Err(_) => {}
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while acked.load(Ordering::SeqCst) < 120 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    victim.lock().unwrap().kill9();
    let at_kill = acked.load(Ordering::SeqCst);
    for t in threads {
        t.join().expect("client thread");
    }
    let (acked, sent) = (acked.load(Ordering::SeqCst), sent.load(Ordering::SeqCst));
    assert!(
        at_kill >= 120 && acked < sent,
        "the kill came mid-way: {at_kill} acked at the kill, {acked}/{sent} in the end"
    );
    let s = get(&agent(), &survivor.url("/v1/sessions/k9")).json();
    let calls = s["calls"].as_u64().unwrap() as usize;
    assert!(
        calls >= acked && calls <= sent,
        "calls {calls}, acknowledged {acked}, sent {sent}"
    );
}

/// Redis stopped: /readyz and /v1/events answer 503 (JSON error), the process stays up;
/// once Redis is back, service resumes.
#[test]
fn redis_outage_gives_503_and_service_resumes() {
    let mut redis = Redis::start();
    let mut server = Serve::start(&["--store", &redis.url(0)]);
    let agent = agent();
    let event = call("outage", 0, 0);
    assert_eq!(
        post_json(&agent, &server.url("/v1/events"), event.as_bytes()).status,
        200
    );
    assert_eq!(get(&agent, &server.url("/readyz")).status, 200);
    redis.stop();
    let r = get(&agent, &server.url("/readyz"));
    assert_eq!(r.status, 503, "{}", r.body);
    assert!(
        r.json()["error"].as_str().unwrap().contains("store"),
        "{}",
        r.body
    );
    let start = Instant::now();
    let a = post_json(&agent, &server.url("/v1/events"), event.as_bytes());
    assert_eq!(a.status, 503, "{}", a.body);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "503 took {:?}",
        start.elapsed()
    );
    assert_eq!(get(&agent, &server.url("/v1/sessions/outage")).status, 503);
    assert_eq!(get(&agent, &server.url("/healthz")).status, 200);
    assert!(get(&agent, &server.url("/metrics"))
        .body
        .contains("loopguard_store_errors_total 3"));
    redis.restart();
    let deadline = Instant::now() + Duration::from_secs(15);
    while get(&agent, &server.url("/readyz")).status != 200 {
        assert!(
            Instant::now() < deadline,
            "not ready 15 s after Redis came back"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let a = post_json(&agent, &server.url("/v1/events"), event.as_bytes());
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(server.alive());
}

/// Tenants on Redis: the same session id in two tenants is two keys.
#[test]
fn tenants_isolated_on_redis() {
    let redis = Redis::start();
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "acme a-token\nglobex g-token\n").unwrap();
    let server = Serve::start(&[
        "--store",
        &redis.url(0),
        "--tokens",
        tokens.to_str().unwrap(),
    ]);
    let agent = agent();
    let post = |token: &str, n: usize| {
        let auth = format!("Bearer {token}");
        request(
            &agent,
            "POST",
            &server.url("/v1/events"),
            &[
                ("content-type", "application/json"),
                ("authorization", &auth),
            ],
            Some(call("same", 0, n).as_bytes()),
        )
        .unwrap()
    };
    for n in 0..4 {
        assert_eq!(post("a-token", n).status, 200);
    }
    assert_eq!(post("g-token", 0).status, 200);
    let calls = |token: &str| {
        let auth = format!("Bearer {token}");
        request(
            &agent,
            "GET",
            &server.url("/v1/sessions/same"),
            &[("authorization", &auth)],
            None,
        )
        .unwrap()
        .json()["calls"]
            .clone()
    };
    assert_eq!(calls("a-token"), 4);
    assert_eq!(calls("g-token"), 1);
    let auth = "Bearer g-token";
    assert_eq!(
        request(
            &agent,
            "DELETE",
            &server.url("/v1/sessions/same"),
            &[("authorization", auth)],
            None
        )
        .unwrap()
        .status,
        204
    );
    assert_eq!(calls("a-token"), 4);
}

/// The Claude Code endpoint on Redis (the hook's blocking code, on the store's blocking
/// side) through two replicas in turn: 25 identical Reads are denied from the 21st on,
/// whichever replica answers.
#[test]
fn claude_code_endpoint_on_two_replicas() {
    let redis = Redis::start();
    let store = redis.url(0);
    let replicas = [
        Serve::start(&["--store", &store]),
        Serve::start(&["--store", &store]),
    ];
    let agent = agent();
    let mut denied = Vec::new();
    for id in 1..=25u32 {
        let server = &replicas[id as usize % 2];
        let url = server.url("/v1/hooks/claude-code");
        let a = post_json(&agent, &url, hook_payload("PreToolUse", id, "").as_bytes());
        assert_eq!(a.status, 200, "{}", a.body);
        if a.body.contains(r#""permissionDecision":"deny""#) {
            denied.push(id);
        }
        let post = hook_payload(
            "PostToolUse",
            id,
            r#","tool_response":{"type":"text","file":{"filePath":"/repo/README.md","content":"same"}}"#,
        );
        let other = &replicas[(id as usize + 1) % 2];
        let a = post_json(&agent, &other.url("/v1/hooks/claude-code"), post.as_bytes());
        assert_eq!(a.status, 200, "{}", a.body);
    }
    assert_eq!(denied, (21..=25).collect::<Vec<_>>());
    let s = get(&agent, &replicas[0].url("/v1/sessions/cc-1")).json();
    assert_eq!(s["calls"], 25, "{s}");
    assert_eq!(s["blocks"], 5, "{s}");
}

/// A session whose stored entry cannot be read: `GET` answers 500 naming it (not a 503
/// "cannot be reached"), and the next event starts the session afresh instead of failing
/// every call.
#[test]
fn an_unreadable_entry_is_named_and_started_afresh() {
    let redis = Redis::start();
    let server = Serve::start(&["--store", &redis.url(0)]);
    // Format 2: a 16-byte version token, then the entry (here not one).
    redis_cli(
        redis.port,
        &["SET", "loopguard:2:{-/bad}", "0123456789abcdefgarbage"],
    );
    let agent = agent();
    let a = get(&agent, &server.url("/v1/sessions/bad"));
    assert_eq!(a.status, 500, "{}", a.body);
    assert!(a.body.contains("unreadable"), "{}", a.body);
    let call = br#"{"type":"call","session":"bad","tool":"read"}"#;
    let a = post_json(&agent, &server.url("/v1/events"), call);
    assert_eq!(a.status, 200, "{}", a.body);
    let s = get(&agent, &server.url("/v1/sessions/bad")).json();
    assert_eq!(s["calls"], 1, "{s}");
    // The server's stderr is read by a thread: give it a moment.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !server.stderr.lock().unwrap().contains("starting it afresh") {
        assert!(
            Instant::now() < deadline,
            "the restart is logged: {}",
            server.stderr.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends `args` to Redis with `value` as one more, last argument, byte for byte
/// (`redis-cli -x` reads it from stdin).
fn redis_cli_with_value(port: u16, args: &[&str], value: &[u8]) -> String {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-x"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("redis-cli (Debian's redis-tools, installed with redis-server)");
    child.stdin.take().unwrap().write_all(value).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "redis-cli {args:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A session left by a replica of the previous key layout (format 1: a hash
/// `loopguard:{…}` with `v` and `e`, here holding a readable entry of 5 calls) is neither
/// read nor written by this version, as docs/serve.md ("Upgrading") says: the session
/// starts afresh under the format-2 key, the old key stays as it was (until its TTL), and
/// only format-2 sessions are listed and counted.
#[test]
fn an_old_layout_session_is_left_alone_and_counted_afresh() {
    use loopguard_guard::{Applier, SessionEntry, ToolProfile};
    let redis = Redis::start();
    let mut old = SessionEntry::default();
    let policy = loopguard_core::Policy::enabled();
    for n in 0..5 {
        let line = call("old", 0, n);
        let e = loopguard_events::parse_event(line.as_bytes(), n as u64 + 1).unwrap();
        let _ = old.apply(
            &policy,
            &Applier::new(ToolProfile::Plain),
            &e,
            n as u64 + 1,
            1,
        );
    }
    assert_eq!(old.stats.calls, 5);
    redis_cli(redis.port, &["HSET", "loopguard:{-/old}", "v", "t-old"]);
    redis_cli_with_value(
        redis.port,
        &["HSET", "loopguard:{-/old}", "e"],
        &old.encode(),
    );
    let server = Serve::start(&["--store", &redis.url(0)]);
    let agent = agent();
    let a = get(&agent, &server.url("/v1/sessions/old"));
    assert_eq!(
        a.status, 404,
        "the format-1 session is not read: {}",
        a.body
    );
    let a = post_json(
        &agent,
        &server.url("/v1/events"),
        call("old", 0, 9).as_bytes(),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    let s = get(&agent, &server.url("/v1/sessions/old")).json();
    assert_eq!(s["calls"], 1, "counted afresh: {s}");
    assert_eq!(
        redis_cli(redis.port, &["TYPE", "loopguard:{-/old}"]).trim(),
        "hash"
    );
    assert_eq!(
        redis_cli(redis.port, &["HGET", "loopguard:{-/old}", "v"]).trim(),
        "t-old",
        "the format-1 key is not written"
    );
    assert_eq!(
        redis_cli(redis.port, &["TYPE", "loopguard:2:{-/old}"]).trim(),
        "string"
    );
    let sessions = get(&agent, &server.url("/v1/sessions")).json();
    let list = sessions.as_array().expect("an array");
    assert_eq!(list.len(), 1, "{sessions}");
    assert_eq!(list[0]["session"], "old", "{sessions}");
}

/// Two replicas (two stores, each with its own cache of the entry it wrote last) update
/// one session from two threads at once: every update is applied exactly once, on top of
/// all the earlier ones, so the log each update extends is one unbroken chain: a stale
/// cached entry written over the other replica's write would drop links.
#[test]
fn two_replicas_racing_on_one_session_never_write_a_stale_entry() {
    use loopguard_guard::{RedisOptions, RedisStore, Store};
    const EACH: usize = 150;
    let redis = Redis::start();
    let stores: Vec<Arc<RedisStore>> = (0..2)
        .map(|_| Arc::new(RedisStore::open(&redis.url(0), RedisOptions::default()).unwrap()))
        .collect();
    // A race needs the two to overlap: a round (a session of its own) where the scheduler
    // ran them one after the other proves nothing, so up to five rounds until one raced.
    for round in 0..5 {
        let key = format!("-/race-{round}");
        let start = Arc::new(std::sync::Barrier::new(2));
        let threads: Vec<_> = stores
            .iter()
            .enumerate()
            .map(|(id, store)| {
                let (store, start, key) = (store.clone(), start.clone(), key.clone());
                std::thread::spawn(move || {
                    start.wait();
                    for n in 0..EACH {
                        Store::update(&*store, &key, &mut |e| {
                            e.stats.calls += 1;
                            let log = e.meta.entry("log".into()).or_default();
                            log.push_str(&format!("{id}.{n} "));
                        })
                        .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let entry = Store::load(&*stores[0], &key)
            .unwrap()
            .expect("the session");
        assert_eq!(entry.stats.calls, (2 * EACH) as u64, "{key}");
        let log: Vec<&str> = entry.meta["log"].split_whitespace().collect();
        for id in 0..2 {
            let mine: Vec<String> = log
                .iter()
                .filter(|w| w.starts_with(&format!("{id}.")))
                .map(|w| w.to_string())
                .collect();
            let want: Vec<String> = (0..EACH).map(|n| format!("{id}.{n}")).collect();
            assert_eq!(
                mine, want,
                "{key}: replica {id}'s updates, each once and in order"
            );
        }
        let retries: u64 = stores.iter().map(|s| s.retries()).sum();
        if retries > 0 {
            eprintln!("round {round}: {retries} stale attempts refused and retried");
            return;
        }
    }
    panic!("the two replicas never raced in five rounds: nothing was tested");
}

/// Two replicas (two stores on one Redis, each keeping the entry it wrote last and its
/// version token) take turns on one session, in an order that leaves each one's cached
/// entry stale most of the time: every event is applied once, on top of every earlier one
/// (the stale compare-and-set is refused and retried from the stored entry, never
/// written). A session deleted by one replica is not brought back by the other's cached
/// entry: it starts afresh.
#[test]
fn a_cached_entry_is_never_written_over_another_replicas_write() {
    use loopguard_guard::{Guard, RedisOptions, RedisStore};
    let redis = Redis::start();
    let store = |_| Arc::new(RedisStore::open(&redis.url(0), RedisOptions::default()).unwrap());
    let stores: Vec<Arc<RedisStore>> = (0..2).map(store).collect();
    let guards: Vec<Guard> = stores
        .iter()
        .map(|s| Guard::builder().store(s.clone()).build())
        .collect();
    // Replica 0 twice, replica 1 once: both hold a stale entry every few events.
    let order = |n: usize| usize::from(n % 3 == 2);
    for n in 0..30 {
        guards[order(n)]
            .apply_line(None, call("turns", 0, n).as_bytes())
            .unwrap();
        for g in &guards {
            let info = g.session(None, "turns").unwrap().expect("the session");
            assert_eq!(info.stats.calls, n as u64 + 1, "after event {n}");
        }
    }
    let retries: u64 = stores.iter().map(|s| s.retries()).sum();
    assert!(
        retries >= 10,
        "stale cached entries were not refused: {retries} retries"
    );
    // Replica 1 deletes the session; replica 0 still caches the entry it wrote last.
    assert!(guards[1].forget(None, "turns").unwrap());
    guards[0]
        .apply_line(None, call("turns", 0, 99).as_bytes())
        .unwrap();
    let info = guards[1]
        .session(None, "turns")
        .unwrap()
        .expect("the session");
    assert_eq!(
        info.stats.calls, 1,
        "the deleted session came back from a cache"
    );
}

/// Sends one inline command to Redis on `port` and returns its first answer line.
fn redis_command(port: u16, command: &str) -> String {
    use std::io::{BufRead, BufReader, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to redis");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(format!("{command}\r\n").as_bytes()).unwrap();
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).unwrap();
    line.trim_end().to_string()
}

/// Concurrent events of many sessions through one replica travel to Redis in shared
/// batches of compare-and-sets: each is applied to its own session exactly once, also when
/// Redis forgets the script in the middle (`SCRIPT FLUSH`, as a restarted Redis does): the
/// batch loads it again and sends again what was refused.
#[test]
fn concurrent_sessions_share_batches_and_survive_a_script_flush() {
    let redis = Redis::start();
    let server = Arc::new(Serve::start(&["--store", &redis.url(0)]));
    const CLIENTS: usize = 12;
    const EVENTS: usize = 30;
    let sent = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let (server, sent) = (server.clone(), sent.clone());
            std::thread::spawn(move || {
                let agent = agent();
                for n in 0..EVENTS {
                    // three sessions per client, so batches mix sessions and clients
                    let session = format!("s{client}-{}", n % 3);
                    let a = post_json(
                        &agent,
                        &server.url("/v1/events"),
                        call(&session, client, n).as_bytes(),
                    );
                    assert_eq!(a.status, 200, "{session} event {n}: {}", a.body);
                    sent.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    // Once some events went through, Redis forgets its scripts.
    // A client that failed early ends its thread: its own message is the failure, not a
    // minute's wait for progress.
    let join = |t: std::thread::JoinHandle<()>| {
        if let Err(e) = t.join() {
            std::panic::resume_unwind(e);
        }
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut threads = threads;
    while sent.load(Ordering::SeqCst) < CLIENTS * EVENTS / 3 {
        if let Some(i) = threads.iter().position(|t| t.is_finished()) {
            join(threads.swap_remove(i));
            continue;
        }
        assert!(Instant::now() < deadline, "the clients made no progress");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(redis_command(redis.port, "SCRIPT FLUSH"), "+OK");
    for t in threads {
        join(t);
    }
    for client in 0..CLIENTS {
        for k in 0..3 {
            let s = get(
                &agent(),
                &server.url(&format!("/v1/sessions/s{client}-{k}")),
            )
            .json();
            assert_eq!(s["calls"], (EVENTS / 3) as u64, "s{client}-{k}: {s}");
        }
    }
    // Whatever the timing above, an update after a flush needs the script loaded again.
    assert_eq!(redis_command(redis.port, "SCRIPT FLUSH"), "+OK");
    let a = post_json(
        &agent(),
        &server.url("/v1/events"),
        call("s0-0", 0, 99).as_bytes(),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    let s = get(&agent(), &server.url("/v1/sessions/s0-0")).json();
    assert_eq!(s["calls"], (EVENTS / 3 + 1) as u64, "{s}");
}

/// One replica's updates of many sessions share batches of compare-and-sets while a second
/// replica writes some of the same sessions: a compare-and-set that loses inside a batch is
/// retried on its own, and the batch's other updates stand. Every session's call counter
/// equals the number of its events acknowledged, read through either replica.
#[test]
fn a_lost_compare_and_set_inside_a_batch_is_retried_and_the_others_stand() {
    let redis = Redis::start();
    let store = redis.url(0);
    let replicas = Arc::new([
        Serve::start(&["--store", &store]),
        Serve::start(&["--store", &store]),
    ]);
    const SESSIONS: usize = 16;
    const HOT: usize = 4;
    const EVENTS: usize = 40;
    let acked: Arc<Vec<AtomicUsize>> =
        Arc::new((0..SESSIONS).map(|_| AtomicUsize::new(0)).collect());
    // Replica 0: 8 clients over all 16 sessions (its batches mix sessions); replica 1: 4
    // clients on the first 4 sessions only, so those are written by both at once.
    let plan = (0..8).map(|c| (0, c)).chain((0..4).map(|c| (1, c)));
    let threads: Vec<_> = plan
        .map(|(replica, client)| {
            let (replicas, acked) = (replicas.clone(), acked.clone());
            std::thread::spawn(move || {
                let agent = agent();
                for n in 0..EVENTS {
                    let k = if replica == 0 {
                        (client * 3 + n) % SESSIONS
                    } else {
                        (client + n) % HOT
                    };
                    let session = format!("b{k}");
                    let a = post_json(
                        &agent,
                        &replicas[replica].url("/v1/events"),
                        call(&session, 100 * replica + client, n).as_bytes(),
                    );
                    assert_eq!(a.status, 200, "{session} event {n}: {}", a.body);
                    acked[k].fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for t in threads {
        if let Err(e) = t.join() {
            std::panic::resume_unwind(e);
        }
    }
    let total: usize = acked.iter().map(|a| a.load(Ordering::SeqCst)).sum();
    assert_eq!(total, 12 * EVENTS);
    for (k, n) in acked.iter().enumerate() {
        let n = n.load(Ordering::SeqCst) as u64;
        for server in replicas.iter() {
            let s = get(&agent(), &server.url(&format!("/v1/sessions/b{k}"))).json();
            assert_eq!(s["calls"], n, "b{k}: {s}");
        }
    }
    let retries: u64 = replicas
        .iter()
        .map(|s| get(&agent(), &s.url("/metrics")).body)
        .flat_map(|m| {
            m.lines()
                .filter_map(|l| l.strip_prefix("loopguard_store_retries_total "))
                .map(|v| v.trim().parse::<u64>().unwrap_or(0))
                .collect::<Vec<_>>()
        })
        .sum();
    eprintln!("optimistic-concurrency retries: {retries}");
    assert!(
        retries > 0,
        "two replicas writing the same 4 sessions never contended"
    );
}

/// SCAN commands Redis has answered so far (`INFO commandstats`).
fn scans(port: u16) -> u64 {
    let info = redis_cli(port, &["INFO", "commandstats"]);
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_scan:calls="))
        .map(|rest| rest.split(',').next().unwrap().parse().unwrap())
        .unwrap_or(0)
}

/// The dashboard reads Redis's session keys from a listing made at most every 5 s, shared
/// by every request (a poll does not SCAN the keyspace), and still sees new sessions.
#[test]
fn dashboard_requests_share_one_listing_of_the_redis_keys() {
    let redis = Redis::start();
    let server = Serve::start(&["--store", &redis.url(0)]);
    let agent = agent();
    let post_calls = |range: std::ops::Range<u32>| {
        for i in range {
            let call = format!(r#"{{"type":"call","session":"s-{i}","tool":"ls"}}"#);
            assert_eq!(
                post_json(&agent, &server.url("/v1/events"), call.as_bytes()).status,
                200
            );
        }
    };
    let live = || get(&agent, &server.url("/v1/dashboard")).json()["liveSessions"].as_u64();
    post_calls(0..5);
    assert_eq!(live(), Some(5));
    let before = scans(redis.port);
    let start = Instant::now();
    for _ in 0..30 {
        assert_eq!(live(), Some(5));
    }
    let elapsed = start.elapsed();
    let listings = scans(redis.port) - before;
    // One listing per 5 s at most (and a listing of 5 keys is one SCAN call).
    let allowed = 1 + elapsed.as_secs() / 5;
    assert!(
        listings <= allowed,
        "{listings} SCAN calls for 30 dashboard requests in {elapsed:?} (at most {allowed})"
    );
    // New sessions show once the listing is renewed.
    post_calls(5..8);
    let deadline = Instant::now() + Duration::from_secs(60);
    while live() != Some(8) {
        assert!(Instant::now() < deadline, "the 3 new sessions never showed");
        std::thread::sleep(Duration::from_millis(250));
    }
}
