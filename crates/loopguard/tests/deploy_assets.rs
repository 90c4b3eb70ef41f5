//! The ops assets in `deploy/` work with the real tools and the real server: the alert rules
//! pass `promtool check rules` and their unit tests, a real Prometheus (Debian's package,
//! installed by `scripts/setup-prometheus.sh`) scrapes a running `loopguard serve` with the
//! metrics token and fires the loop alert for a real loop, the Grafana dashboard and the
//! rules name only metrics the server exports, the systemd unit passes `systemd-analyze
//! verify`, and the Dockerfile and the unit pass only flags `loopguard serve` has.

mod serve_support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serve_support::*;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

fn deploy(path: &str) -> PathBuf {
    root().join("deploy").join(path)
}

/// A tool of `scripts/setup-prometheus.sh`, or a failure naming it.
fn tool(name: &str) -> &str {
    let ok = Command::new(name)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "{name} is not installed: run scripts/setup-prometheus.sh"
    );
    name
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}

#[test]
fn promtool_checks_the_rules_and_runs_their_unit_tests() {
    let out = run(Command::new(tool("promtool"))
        .args(["check", "rules"])
        .arg(deploy("prometheus/loopguard-rules.yml")));
    assert!(out.contains("SUCCESS"), "{out}");
    let out = run(Command::new(tool("promtool"))
        .args(["test", "rules"])
        .arg(deploy("prometheus/loopguard-rules.test.yml")));
    assert!(out.contains("SUCCESS"), "{out}");
}

/// The metric names a scrape of the server exports, as Prometheus stores them: each
/// family's samples (a counter's `_total`, a histogram's `_bucket`, `_sum`, `_count`).
fn exported_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let mut w = rest.split(' ');
        let (name, kind) = (w.next().unwrap_or(""), w.next().unwrap_or(""));
        match kind {
            "histogram" => {
                for s in ["_bucket", "_sum", "_count"] {
                    names.insert(format!("{name}{s}"));
                }
            }
            _ => {
                names.insert(name.to_string());
            }
        }
    }
    names
}

/// Every `loopguard_…` name in a text.
fn referenced_names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("loopguard_") {
        let start = i + at;
        let mut end = start;
        while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
            end += 1;
        }
        // Not part of a longer identifier (a path, a file name).
        let before = start.checked_sub(1).map(|b| bytes[b]);
        if !before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'/' || b == b'-')
        {
            out.insert(text[start..end].to_string());
        }
        i = end;
    }
    out
}

#[test]
fn the_dashboard_and_the_rules_use_only_metrics_the_server_exports() {
    // A family is exported once it has a series: give the loop families some traffic (a
    // loop of events, a looping trace, requests).
    let server = Serve::start(&["--trace-wait", "200ms"]);
    reads(&server, "s1", 0, 21);
    let trace = "0af7651916cd43dd8448eb211c80319c";
    let spans: Vec<String> = (0..21u64)
        .map(|i| {
            format!(
                r#"{{"traceId":"{trace}","spanId":"{:016x}","name":"execute_tool bash","startTimeUnixNano":"{}","endTimeUnixNano":"{}","attributes":[{{"key":"gen_ai.operation.name","value":{{"stringValue":"execute_tool"}}}},{{"key":"gen_ai.tool.name","value":{{"stringValue":"bash"}}}},{{"key":"gen_ai.tool.call.arguments","value":{{"stringValue":"{{\"command\":\"make test\"}}"}}}},{{"key":"gen_ai.tool.call.result","value":{{"stringValue":"FAILED"}}}}]}}"#,
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
    let posted = post_json(&agent(), &server.url("/v1/traces"), body.as_bytes());
    assert_eq!(posted.status, 200, "{}", posted.body);
    let deadline = Instant::now() + Duration::from_secs(30);
    let scrape = loop {
        let a = request(
            &agent(),
            "GET",
            &server.url("/metrics"),
            &[("Accept", "text/plain;version=0.0.4")],
            None,
        )
        .expect("a scrape");
        assert_eq!(a.status, 200, "{}", a.body);
        if a.body.contains("loopguard_trace_loops_total{") || Instant::now() > deadline {
            break a;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let exported = exported_names(&scrape.body);
    for name in [
        "loopguard_decisions_total",
        "loopguard_trace_loops_total",
        "loopguard_http_requests_total",
        "loopguard_http_request_duration_seconds_bucket",
    ] {
        assert!(exported.contains(name), "{name}: {exported:?}");
    }

    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(deploy("grafana/loopguard-dashboard.json"))
            .expect("the dashboard"),
    )
    .expect("the dashboard is JSON");
    let mut exprs = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        let targets = panel["targets"].as_array().expect("each panel has targets");
        assert!(!targets.is_empty(), "{panel}");
        for t in targets {
            exprs.push(t["expr"].as_str().expect("a PromQL expr").to_string());
        }
    }
    for v in dashboard["templating"]["list"]
        .as_array()
        .expect("variables")
    {
        if let Some(q) = v["definition"].as_str() {
            exprs.push(q.to_string());
        }
    }
    let in_dashboard = referenced_names(&exprs.join("\n"));
    let rules = std::fs::read_to_string(deploy("prometheus/loopguard-rules.yml")).expect("rules");
    let in_rules = referenced_names(
        &rules
            .lines()
            .filter(|l| l.trim_start().starts_with("expr:"))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    for (what, names) in [("dashboard", &in_dashboard), ("rules", &in_rules)] {
        assert!(names.len() >= 4, "{what}: {names:?}");
        let unknown: Vec<_> = names.difference(&exported).collect();
        assert!(
            unknown.is_empty(),
            "the {what} names metrics the server does not export: {unknown:?}\nexported: {exported:?}"
        );
    }
    // The loop metrics are on the dashboard.
    for name in ["loopguard_decisions_total", "loopguard_trace_loops_total"] {
        assert!(
            in_dashboard.contains(name),
            "{name} is not on the dashboard"
        );
    }
}

/// A Prometheus on a free loopback port, stopped when dropped.
struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    fn start(target: &str, token_file: &Path) -> Prometheus {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {rules}\nscrape_configs:\n  - job_name: loopguard\n    authorization:\n      credentials_file: {token}\n    static_configs:\n      - targets: ['{target}']\n",
                rules = deploy("prometheus/loopguard-rules.yml").display(),
                token = token_file.display(),
            ),
        )
        .expect("the config");
        let port = free_port();
        let child = Command::new(tool("prometheus"))
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus");
        Prometheus {
            child,
            port,
            _dir: dir,
        }
    }

    /// `None` while Prometheus is not answering yet.
    fn api(&self, path: &str) -> Option<serde_json::Value> {
        let url = format!("http://127.0.0.1:{}{path}", self.port);
        let a = request(&agent(), "GET", &url, &[], None).ok()?;
        (a.status == 200).then(|| a.json())
    }

    /// Waits (up to 60 s) until `check` holds for the answer of `path`.
    fn wait(
        &self,
        path: &str,
        what: &str,
        check: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(v) = self.api(path) {
                if check(&v) {
                    return v;
                }
                if Instant::now() > deadline {
                    panic!("{what}: still {v} after 60 s");
                }
            } else if Instant::now() > deadline {
                panic!("{what}: Prometheus does not answer {path}");
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

/// `n` identical reads with identical results in `session`.
fn reads(server: &Serve, session: &str, from: usize, n: usize) {
    let agent = agent();
    for i in from..from + n {
        for e in [
            format!(
                r#"{{"type":"call","session":"{session}","callId":"c{i}","tool":"read","args":{{"path":"/a"}}}}"#
            ),
            format!(
                r#"{{"type":"outcome","session":"{session}","callId":"c{i}","tool":"read","args":{{"path":"/a"}},"result":"same"}}"#
            ),
        ] {
            let a = post_json(&agent, &server.url("/v1/events"), e.as_bytes());
            assert_eq!(a.status, 200, "{}", a.body);
        }
    }
}

#[test]
fn prometheus_scrapes_serve_with_the_metrics_token_and_fires_the_loop_alert() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let token = dir.path().join("metrics-token");
    std::fs::write(&token, "tok-metrics\n").expect("the token file");
    let server = Serve::start(&["--metrics-token", token.to_str().expect("UTF-8")]);
    // Without the token, /metrics is refused.
    assert_eq!(get(&agent(), &server.url("/metrics")).status, 401);
    let prometheus = Prometheus::start(&server.addr.to_string(), &token);
    prometheus.wait("/api/v1/query?query=up", "the scrape", |v| {
        v["data"]["result"][0]["value"][1] == "1"
    });
    // The first block, scraped, then four more: the block counter rises between scrapes.
    reads(&server, "s1", 0, 21);
    prometheus.wait(
        "/api/v1/query?query=loopguard_decisions_total%7Bdecision%3D%22block%22%7D",
        "the first block scraped",
        |v| v["data"]["result"][0]["value"][1] == "1",
    );
    reads(&server, "s1", 21, 4);
    let alerts = prometheus.wait("/api/v1/alerts", "LoopguardLoopBlocked firing", |v| {
        v["data"]["alerts"].as_array().is_some_and(|a| {
            a.iter().any(|al| {
                al["labels"]["alertname"] == "LoopguardLoopBlocked" && al["state"] == "firing"
            })
        })
    });
    let alert = alerts["data"]["alerts"]
        .as_array()
        .expect("alerts")
        .iter()
        .find(|a| a["labels"]["alertname"] == "LoopguardLoopBlocked")
        .expect("the alert")
        .clone();
    assert_eq!(alert["labels"]["detector"], "generic_repeat", "{alert}");
    // Nothing else fires for a healthy server.
    for a in alerts["data"]["alerts"].as_array().expect("alerts") {
        assert_eq!(a["labels"]["alertname"], "LoopguardLoopBlocked", "{a}");
    }
}

/// The `--flags` of `loopguard serve`, from its help.
fn serve_flags() -> BTreeSet<String> {
    let help = run(Command::new(env!("CARGO_BIN_EXE_loopguard")).args(["serve", "--help"]));
    help.split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == ']')
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| w.split('=').next().unwrap_or(w).to_string())
        .collect()
}

fn flags_in(text: &str) -> BTreeSet<String> {
    text.split(|c: char| c.is_whitespace() || c == '"' || c == ',' || c == '[' || c == ']')
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(str::to_string)
        .collect()
}

#[test]
fn the_systemd_unit_verifies_and_passes_real_flags() {
    let unit = std::fs::read_to_string(deploy("systemd/loopguard.service")).expect("the unit");
    let known = serve_flags();
    let settings: Vec<&str> = unit
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    let used = flags_in(&settings.join("\n"));
    assert!(used.contains("--tokens"), "{used:?}");
    let unknown: Vec<_> = used.difference(&known).collect();
    assert!(
        unknown.is_empty(),
        "the unit passes flags serve does not have: {unknown:?}"
    );
    // `systemd-analyze verify` wants the binary to exist: point it at the one just built.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let copy = dir.path().join("loopguard.service");
    std::fs::write(
        &copy,
        unit.replace("/usr/local/bin/loopguard", env!("CARGO_BIN_EXE_loopguard")),
    )
    .expect("a copy");
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&copy)
        .output()
        .expect("systemd-analyze (the systemd package)");
    let text = String::from_utf8_lossy(&out.stderr).to_string();
    let about_unit: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("loopguard.service"))
        .collect();
    assert!(
        out.status.success() && about_unit.is_empty(),
        "systemd-analyze verify: {:?}\n{text}",
        out.status
    );
}

#[test]
fn the_dockerfile_is_multi_stage_non_root_and_passes_real_flags() {
    let text = std::fs::read_to_string(deploy("Dockerfile")).expect("the Dockerfile");
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let froms: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("FROM "))
        .collect();
    assert_eq!(froms.len(), 2, "{froms:?}");
    // The builder is the workspace's MSRV, the one the release checks build with.
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    let msrv = manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix("rust-version = "))
        .expect("rust-version")
        .trim_matches('"');
    assert!(
        froms[0].starts_with(&format!("FROM rust:{msrv}")) && froms[0].ends_with(" AS build"),
        "{}",
        froms[0]
    );
    assert!(
        lines.iter().any(|l| l.starts_with("COPY --from=build ")),
        "{text}"
    );
    // The final stage runs as a non-root user.
    let final_stage = &text[text.rfind("\nFROM ").expect("a final stage")..];
    let user = final_stage
        .lines()
        .filter_map(|l| l.trim().strip_prefix("USER "))
        .next_back()
        .expect("the final stage sets USER");
    let uid = user.split(':').next().unwrap_or("");
    assert!(
        uid != "root" && uid != "0" && !uid.is_empty(),
        "USER {user}"
    );
    // ENTRYPOINT and CMD are exec-form JSON arrays of real flags.
    let known = serve_flags();
    for key in ["ENTRYPOINT ", "CMD "] {
        let line = lines
            .iter()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key}"));
        let words: Vec<String> = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{key}is not an exec-form JSON array ({e}): {line}"));
        for w in words.iter().filter(|w| w.starts_with("--")) {
            assert!(
                known.contains(w),
                "{key}passes {w}, which serve does not have"
            );
        }
    }
}
