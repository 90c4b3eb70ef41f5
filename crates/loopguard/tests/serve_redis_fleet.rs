//! `loopguard serve` on the fleet set-ups docs/serve.md's "Running a fleet" describes: a real
//! three-node Redis Cluster, and Redis over TLS with a private certificate authority. Both
//! start their own `redis-server` processes on free loopback ports (scripts/setup-redis.sh
//! installs them); without them these tests fail, they never skip.

mod serve_support;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serve_support::*;

/// Three primaries, no replicas, every slot covered.
struct Cluster {
    nodes: Vec<Redis>,
}

impl Cluster {
    fn start() -> Cluster {
        let nodes: Vec<Redis> = (0..3)
            .map(|_| {
                Redis::start_with(
                    &[
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        "nodes.conf",
                        "--cluster-node-timeout",
                        "5000",
                    ],
                    false,
                )
            })
            .collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli --cluster create");
        assert!(
            out.status.success(),
            "redis-cli --cluster create: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        while !nodes
            .iter()
            .all(|n| redis_cli(n.port, &["cluster", "info"]).contains("cluster_state:ok"))
        {
            assert!(Instant::now() < deadline, "the cluster did not become ok");
            std::thread::sleep(Duration::from_millis(100));
        }
        Cluster { nodes }
    }

    /// Two of the three nodes: the client finds the third itself.
    fn url(&self) -> String {
        format!(
            "redis-cluster://127.0.0.1:{},127.0.0.1:{}",
            self.nodes[0].port, self.nodes[1].port
        )
    }

    fn flush(&self) {
        for n in &self.nodes {
            redis_cli(n.port, &["flushall"]);
        }
    }

    fn keys_per_node(&self) -> Vec<u64> {
        self.nodes
            .iter()
            .map(|n| {
                redis_cli(n.port, &["dbsize"])
                    .trim()
                    .parse()
                    .expect("dbsize")
            })
            .collect()
    }
}

fn metric(server: &Serve, name: &str) -> u64 {
    get(&agent(), &server.url("/metrics"))
        .body
        .lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok()))
        .unwrap_or_else(|| panic!("no {name} in /metrics"))
}

/// On a three-node Redis Cluster, two replicas decide the parity fixtures exactly as the
/// fixtures say, concurrent clients on one session lose no update, the sessions are spread
/// over the nodes, and `/metrics` counts the sessions of every node.
#[test]
fn two_replicas_on_a_redis_cluster() {
    let cluster = Cluster::start();
    let store = cluster.url();
    let agent = agent();
    for (name, config, events, expected) in parity_cases() {
        cluster.flush();
        let replicas = [
            Serve::start(&["--config", config.to_str().unwrap(), "--store", &store]),
            Serve::start(&["--config", config.to_str().unwrap(), "--store", &store]),
        ];
        let events: Vec<_> = events.iter().filter(|l| !l.trim().is_empty()).collect();
        for (i, (event, want)) in events.iter().zip(&expected).enumerate() {
            let a = post_json(&agent, &replicas[i % 2].url("/v1/events"), event.as_bytes());
            assert_eq!(a.status, 200, "{name} event {}: {}", i + 1, a.body);
            assert_eq!(a.body, without_line(want), "{name} event {}", i + 1);
        }
        check_parity_loops(&name, &replicas, &expected);
    }

    cluster.flush();
    let replicas = Arc::new([
        Serve::start(&["--store", &store]),
        Serve::start(&["--store", &store]),
    ]);
    // One hot session from 8 clients, and 60 sessions of their own.
    let ok = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..8)
        .map(|client| {
            let (replicas, ok) = (replicas.clone(), ok.clone());
            std::thread::spawn(move || {
                let agent = serve_support::agent();
                for n in 0..20 {
                    let server = &replicas[(client + n) % 2];
                    let body = format!(
                        r#"{{"type":"call","session":"hot","tool":"exec","args":{{"command":"step {client} {n}"}}}}"#
                    );
                    let a = post_json(&agent, &server.url("/v1/events"), body.as_bytes());
                    assert_eq!(a.status, 200, "{}", a.body);
                    ok.fetch_add(1, Ordering::SeqCst);
                    let own = format!(
                        r#"{{"type":"call","session":"s-{client}-{}","tool":"read"}}"#,
                        n % 8
                    );
                    let a = post_json(&agent, &server.url("/v1/events"), own.as_bytes());
                    assert_eq!(a.status, 200, "{}", a.body);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("client thread");
    }
    let ok = ok.load(Ordering::SeqCst) as u64;
    assert_eq!(ok, 160);
    for server in replicas.iter() {
        let s = get(&agent, &server.url("/v1/sessions/hot")).json();
        assert_eq!(s["calls"], ok, "{s}");
    }
    let per_node = cluster.keys_per_node();
    eprintln!("sessions per cluster node: {per_node:?}");
    assert_eq!(per_node.iter().sum::<u64>(), 65, "{per_node:?}");
    assert!(
        per_node.iter().filter(|n| **n > 0).count() >= 2,
        "every session landed on one node: {per_node:?}"
    );
    assert_eq!(metric(&replicas[0], "loopguard_sessions "), 65);
    // A session deleted through one replica is gone for the other.
    let del = request(
        &agent,
        "DELETE",
        &replicas[0].url("/v1/sessions/hot"),
        &[],
        None,
    )
    .expect("DELETE");
    assert_eq!(del.status, 204, "{}", del.body);
    assert_eq!(
        get(&agent, &replicas[1].url("/v1/sessions/hot")).status,
        404
    );

    // A hook's loop whose calls alternate between the replicas is one record in the
    // cluster, listed alike by both.
    let who = HookAgent::ClaudeCode;
    let seen = hook_loop(&[&replicas[0], &replicas[1]], who, "fleet-hook", None);
    let done = |l: &[serde_json::Value]| l.first().is_some_and(|l| l["calls"] == 15);
    let one = loops_of(&replicas[0], "fleet-hook", None, done);
    check_hook_loop(&one, &seen, who, "fleet-hook");
    assert_eq!(loops_of(&replicas[1], "fleet-hook", None, done), one);
}

/// The loops a parity case's decisions make, from its expected decision lines alone: per
/// session, the calls with a finding (a warning, a block, an abort: each a step of a loop),
/// the blocks among them, and the tools they called.
fn expected_loops(expected: &[String]) -> BTreeMap<String, (u64, u64, BTreeSet<String>)> {
    let mut out: BTreeMap<String, (u64, u64, BTreeSet<String>)> = BTreeMap::new();
    for line in expected {
        let d: serde_json::Value = serde_json::from_str(line).expect("a decision line");
        let word = d["decision"].as_str().unwrap_or("");
        if d.get("detector").is_none() || !["warn", "block", "abort"].contains(&word) {
            continue;
        }
        let e = out
            .entry(d["session"].as_str().expect("a session").to_string())
            .or_default();
        e.0 += 1;
        if word != "warn" {
            e.1 += 1;
        }
        e.2.insert(d["tool"].as_str().unwrap_or("").to_string());
    }
    out
}

/// The loop history both replicas list over the cluster for a parity case agrees with its
/// expected decisions: the same sessions, every step counted once (calls, blocks), the tools
/// called; and both replicas list the same records.
fn check_parity_loops(name: &str, replicas: &[Serve; 2], expected: &[String]) {
    let want = expected_loops(expected);
    let steps: u64 = want.values().map(|w| w.0).sum();
    let list = |server: &Serve| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let page = get(&agent(), &server.url("/v1/loops?limit=1000")).json();
            assert!(page["next"].is_null(), "{name}: one page: {page}");
            let loops = page["loops"].as_array().cloned().unwrap_or_default();
            let calls: u64 = loops.iter().filter_map(|l| l["calls"].as_u64()).sum();
            if calls >= steps || Instant::now() > deadline {
                return loops;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let loops = list(&replicas[0]);
    let mut have: BTreeMap<String, (u64, u64, BTreeSet<String>)> = BTreeMap::new();
    for l in &loops {
        assert_eq!(l["format"], "loopguard.loop/1", "{name}: {l}");
        assert!(l["firstMs"].as_u64().is_some(), "{name}: {l}");
        let e = have
            .entry(l["session"].as_str().expect("a session").to_string())
            .or_default();
        e.0 += l["calls"].as_u64().expect("calls");
        e.1 += l["blocks"].as_u64().expect("blocks");
        e.2.insert(l["tool"].as_str().unwrap_or("").to_string());
        assert_eq!(
            l["blocks"].as_u64() > Some(0),
            l["blockMs"].as_u64().is_some(),
            "{name}: {l}"
        );
    }
    // A loop's tool is the one its steps called (a ping-pong's record names its last).
    for (session, (calls, blocks, tools)) in &have {
        let w = want.get(session).unwrap_or_else(|| {
            panic!("{name}: a loop of {session}, which never looped: {loops:#?}")
        });
        assert_eq!(
            (calls, blocks),
            (&w.0, &w.1),
            "{name}, {session}: {loops:#?}"
        );
        assert!(
            tools.is_subset(&w.2),
            "{name}, {session}: {tools:?} {:?}",
            w.2
        );
    }
    assert_eq!(
        have.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{name}: {loops:#?}"
    );
    assert_eq!(
        list(&replicas[1]),
        loops,
        "{name}: both replicas list the same loops"
    );
}

/// A private certificate authority, and a server certificate for 127.0.0.1 it signed.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Pki {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
        let dir = tempfile::tempdir().expect("temp dir");
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "loopguard test CA");
        let ca_cert = ca_params.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().expect("server key");
        let params = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .expect("server params");
        let cert = params.signed_by(&key, &issuer).expect("server certificate");
        std::fs::write(dir.path().join("ca.pem"), ca_cert.pem()).expect("write");
        std::fs::write(dir.path().join("server.pem"), cert.pem()).expect("write");
        std::fs::write(dir.path().join("server.key"), key.serialize_pem()).expect("write");
        Pki { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_string_lossy().into_owned()
    }
}

/// `rediss://` with `--redis-ca`: events are decided and stored over TLS. Without the CA
/// (the system's roots do not know it), the server says so: `/readyz` and `/v1/events`
/// answer 503 naming the certificate problem, and never decide without the store.
#[test]
fn rediss_with_a_private_ca() {
    let pki = Pki::new();
    let redis = Redis::start_with(
        &[
            "--tls-cert-file",
            &pki.path("server.pem"),
            "--tls-key-file",
            &pki.path("server.key"),
            "--tls-ca-cert-file",
            &pki.path("ca.pem"),
            "--tls-auth-clients",
            "no",
        ],
        true,
    );
    let store = format!("rediss://127.0.0.1:{}/0", redis.port);
    let agent = agent();
    let server = Serve::start(&["--store", &store, "--redis-ca", &pki.path("ca.pem")]);
    assert_eq!(get(&agent, &server.url("/readyz")).status, 200);
    let call = br#"{"type":"call","session":"tls","tool":"read","args":{"path":"/a"}}"#;
    for _ in 0..3 {
        let a = post_json(&agent, &server.url("/v1/events"), call);
        assert_eq!(a.status, 200, "{}", a.body);
    }
    let s = get(&agent, &server.url("/v1/sessions/tls")).json();
    assert_eq!(s["calls"], 3, "{s}");

    let untrusting = Serve::start(&["--store", &store]);
    let r = get(&agent, &untrusting.url("/readyz"));
    assert_eq!(r.status, 503, "{}", r.body);
    let a = post_json(&agent, &untrusting.url("/v1/events"), call);
    assert_eq!(a.status, 503, "{}", a.body);
    eprintln!("without the CA: {}", a.body);
    assert!(
        a.body.to_ascii_lowercase().contains("certificate"),
        "the error should name the certificate problem: {}",
        a.body
    );

    // A CA file with a plain redis:// store is refused at start.
    let plain = Serve::try_start(&[
        "--store",
        "redis://127.0.0.1:1/0",
        "--redis-ca",
        &pki.path("ca.pem"),
    ]);
    let e = plain
        .err()
        .expect("--redis-ca without rediss:// must not start");
    assert!(e.contains("rediss://"), "{e}");
}
