//! Real components for the `loopguard serve` tests: `loopguard serve` processes (the
//! cargo-built binary) and a `redis-server` on a free loopback port, both stopped when
//! dropped; a small HTTP client.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// A free TCP port on 127.0.0.1 (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// A `redis-server` of its own: no persistence, loopback only.
pub struct Redis {
    pub port: u16,
    child: Option<Child>,
    dir: tempfile::TempDir,
    /// More `redis-server` options (cluster mode, TLS).
    extra: Vec<String>,
    /// The port speaks TLS only: readiness is a TCP connect, not a plain PING.
    tls: bool,
}

const NO_REDIS: &str = "redis-server is not installed: run scripts/setup-redis.sh (installs the Debian package redis-server with apt-get); the loopguard serve tests need a real Redis";

impl Redis {
    pub fn start() -> Redis {
        Redis::start_with(&[], false)
    }

    /// With more `redis-server` options; `tls`: the port is a `--tls-port` (the options
    /// name the certificate files).
    pub fn start_with(extra: &[&str], tls: bool) -> Redis {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut r = Redis {
            port: free_port(),
            child: None,
            dir,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            tls,
        };
        r.spawn();
        r
    }

    /// Its working directory (cluster mode keeps `nodes.conf` there).
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    fn spawn(&mut self) {
        let port = self.port.to_string();
        let ports: [&str; 4] = if self.tls {
            ["--port", "0", "--tls-port", &port]
        } else {
            ["--port", &port, "--tls-port", "0"]
        };
        let child = Command::new("redis-server")
            .args(ports)
            .args([
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
            ])
            .arg(self.dir.path())
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{NO_REDIS} ({e})"));
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if self.ping() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "redis-server did not answer PING on port {} within 10 s",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `PING` over a raw connection (a TLS port: the connection is accepted).
    pub fn ping(&self) -> bool {
        use std::io::{Read, Write};
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        if self.tls {
            return true;
        }
        let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
        let mut buf = [0u8; 7];
        s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
    }

    pub fn url(&self, db: u32) -> String {
        format!("redis://127.0.0.1:{}/{db}", self.port)
    }

    /// Stops it (SIGKILL), as an outage.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same port.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A running `loopguard serve`.
pub struct Serve {
    pub addr: SocketAddr,
    child: Option<Child>,
    pub stderr: Arc<Mutex<String>>,
}

impl Serve {
    /// Starts `loopguard serve --listen 127.0.0.1:0 ARGS` and waits for its "listening" line.
    pub fn start(args: &[&str]) -> Serve {
        Self::try_start(args).unwrap_or_else(|e| panic!("loopguard serve did not start: {e}"))
    }

    /// Like `start`, but returns the stderr of a server that exited instead.
    pub fn try_start(args: &[&str]) -> Result<Serve, String> {
        let mut child = Command::new(env!("CARGO_BIN_EXE_loopguard"))
            .arg("serve")
            .args(if args.contains(&"--listen") {
                &[][..]
            } else {
                &["--listen", "127.0.0.1:0"][..]
            })
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn loopguard serve");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        let log = Arc::new(Mutex::new(String::new()));
        let log2 = log.clone();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.split("listening on http://").nth(1) {
                    if let Some(tx) = tx.take() {
                        let addr = rest.split_whitespace().next().unwrap_or("").to_string();
                        let _ = tx.send(addr);
                    }
                }
                let mut l = log2.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(addr) => Ok(Serve {
                addr: addr.parse().expect("listening address"),
                child: Some(child),
                stderr: log,
            }),
            Err(_) => {
                let _ = child.kill();
                let status = child.wait().ok();
                std::thread::sleep(Duration::from_millis(100));
                Err(format!("exit {status:?}; stderr:\n{}", log.lock().unwrap()))
            }
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// `kill -9`.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Still running?
    pub fn alive(&mut self) -> bool {
        match &mut self.child {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: String,
    pub content_type: String,
}

impl Answer {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }
}

pub fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(20))
        .build()
}

fn answer(r: Result<ureq::Response, ureq::Error>) -> Result<Answer, String> {
    let resp = match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => return Err(e.to_string()),
    };
    let status = resp.status();
    let content_type = resp.content_type().to_string();
    let body = resp.into_string().map_err(|e| e.to_string())?;
    Ok(Answer {
        status,
        body,
        content_type,
    })
}

/// A request; `Err` only when no HTTP answer came (connection refused or reset).
pub fn request(
    agent: &ureq::Agent,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Result<Answer, String> {
    let mut req = agent.request(method, url);
    for (k, v) in headers {
        req = req.set(k, v);
    }
    answer(match body {
        Some(b) => req.send_bytes(b),
        None => req.call(),
    })
}

pub fn post_json(agent: &ureq::Agent, url: &str, body: &[u8]) -> Answer {
    request(
        agent,
        "POST",
        url,
        &[("content-type", "application/json")],
        Some(body),
    )
    .unwrap_or_else(|e| panic!("POST {url}: {e}"))
}

pub fn get(agent: &ureq::Agent, url: &str) -> Answer {
    request(agent, "GET", url, &[], None).unwrap_or_else(|e| panic!("GET {url}: {e}"))
}

/// The parity cases: (name, config path, event lines, expected decision lines).
pub fn parity_cases() -> Vec<(String, PathBuf, Vec<String>, Vec<String>)> {
    let dir = fixtures().join("parity");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("parity fixtures")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".events.jsonl").map(str::to_string)
        })
        .collect();
    names.sort();
    assert_eq!(names.len(), 15, "parity fixtures missing");
    names
        .into_iter()
        .map(|n| {
            let lines = |suffix: &str| -> Vec<String> {
                std::fs::read_to_string(dir.join(format!("{n}.{suffix}")))
                    .expect("fixture")
                    .lines()
                    .map(str::to_string)
                    .collect()
            };
            let config = dir.join(format!("{n}.config.json"));
            (
                n.clone(),
                config,
                lines("events.jsonl"),
                lines("expected.jsonl"),
            )
        })
        .collect()
}

/// An expected decision line without its `"line":N,` field, as the server answers.
pub fn without_line(expected: &str) -> String {
    let rest = expected
        .strip_prefix("{\"line\":")
        .expect("expected lines start with line");
    let comma = rest.find(',').expect("a field after line");
    format!("{{{}", &rest[comma + 1..])
}

/// A Claude Code hook input for a `Read` of the same file (`extra`: more members, e.g. the
/// `tool_response`).
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn hook_payload(event: &str, id: u32, extra: &str) -> String {
    format!(
        r#"{{"session_id":"cc-1","transcript_path":"/tmp/t.jsonl","cwd":"/tmp","hook_event_name":"{event}","tool_name":"Read","tool_input":{{"file_path":"/repo/README.md"}},"tool_use_id":"toolu_{id:03}"{extra}}}"#
    )
}

/// `redis-cli -h 127.0.0.1 -p PORT ARGS…`, its standard output (it must succeed).
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn redis_cli(port: u16, args: &[&str]) -> String {
    let out = std::process::Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .expect("redis-cli (Debian's redis-tools, installed with redis-server)");
    assert!(
        out.status.success(),
        "redis-cli {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// An HTTP receiver on 127.0.0.1 that answers 200 to every POST and keeps the JSON bodies
/// (a webhook's alerts); its URL and the bodies.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn webhook_receiver() -> (String, Arc<Mutex<Vec<serde_json::Value>>>) {
    use std::io::{Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/alerts", listener.local_addr().unwrap());
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let kept = bodies.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let kept = kept.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                loop {
                    let mut len = 0usize;
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        line.clear();
                        reader.read_line(&mut line).unwrap();
                        let l = line.trim_end();
                        if l.is_empty() {
                            break;
                        }
                        if let Some((k, v)) = l.split_once(':') {
                            if k.eq_ignore_ascii_case("content-length") {
                                len = v.trim().parse().unwrap();
                            }
                        }
                    }
                    let mut body = vec![0; len];
                    reader.read_exact(&mut body).unwrap();
                    kept.lock()
                        .unwrap()
                        .push(serde_json::from_slice(&body).unwrap());
                    stream
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                        .unwrap();
                }
            });
        }
    });
    (url, bodies)
}

/// A coding agent whose hooks post to `POST /v1/hooks/{agent}`, with its own payload shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(dead_code)] // not every test binary that includes this module uses it
pub enum HookAgent {
    ClaudeCode,
    Gemini,
    Codex,
}

#[allow(dead_code)] // not every test binary that includes this module uses it
impl HookAgent {
    /// Its name in `/v1/hooks/{agent}` (and in the loop history's `agent`).
    pub fn name(self) -> &'static str {
        match self {
            HookAgent::ClaudeCode => "claude-code",
            HookAgent::Gemini => "gemini",
            HookAgent::Codex => "codex",
        }
    }

    /// The session the loop history names for the agent's session id `id` (loopguard
    /// prefixes the ids of agents other than Claude Code with the agent's name).
    pub fn session(self, id: &str) -> String {
        match self {
            HookAgent::ClaudeCode => id.to_string(),
            other => format!("{}:{id}", other.name()),
        }
    }

    /// The tool as the agent names it (the loop history names it so).
    pub fn tool(self) -> &'static str {
        match self {
            HookAgent::ClaudeCode | HookAgent::Codex => "Bash",
            HookAgent::Gemini => "run_shell_command",
        }
    }

    /// The before and after payloads of call `i` of a failing `npm test`, in the agent's own
    /// shapes (the same as crates/loopguard-agents/tests/agents.rs: Claude Code's hooks
    /// reference, codex-rs's hook schemas, Gemini CLI's BeforeTool / AfterTool).
    pub fn shell_call(self, id: &str, i: usize) -> (String, String) {
        use serde_json::json;
        match self {
            HookAgent::ClaudeCode => {
                let base = json!({"session_id":id,"transcript_path":"/t.jsonl","cwd":"/nonexistent",
                    "permission_mode":"default","tool_name":"Bash",
                    "tool_input":{"command":"npm test","description":format!("Run the tests (attempt {i})")},
                    "tool_use_id":format!("toolu_{i}")});
                let mut pre = base.clone();
                pre["hook_event_name"] = json!("PreToolUse");
                let mut post = base;
                post["hook_event_name"] = json!("PostToolUse");
                post["tool_response"] =
                    json!({"stdout":"FAIL","stderr":"","interrupted":false,"isImage":false});
                (pre.to_string(), post.to_string())
            }
            HookAgent::Codex => {
                let base = json!({"session_id":id,"turn_id":"turn-1","cwd":"/nonexistent",
                    "model":"gpt-5","permission_mode":"default","transcript_path":null,
                    "tool_name":"Bash","tool_input":{"command":"npm test"},"tool_use_id":format!("call_{i}")});
                let mut pre = base.clone();
                pre["hook_event_name"] = json!("PreToolUse");
                let mut post = base;
                post["hook_event_name"] = json!("PostToolUse");
                post["tool_response"] = json!("FAIL\n");
                (pre.to_string(), post.to_string())
            }
            HookAgent::Gemini => {
                let input = json!({"command":"npm test","description":format!("Run the test suite (attempt {i})")});
                let pre = json!({"session_id":id,"transcript_path":"/t.json","cwd":"/nonexistent",
                    "hook_event_name":"BeforeTool","timestamp":"2026-12-01T12:00:00Z",
                    "tool_name":"run_shell_command","tool_input":input});
                let post = json!({"session_id":id,"transcript_path":"/t.json","cwd":"/nonexistent",
                    "hook_event_name":"AfterTool","timestamp":"2026-12-01T12:00:01Z",
                    "tool_name":"run_shell_command","tool_input":input,
                    "tool_response":{"llmContent":format!("<untrusted_context>\nOutput: FAIL\nExit Code: 1\nProcess Group PGID: {}\n</untrusted_context>", 4000 + i),
                        "returnDisplay":"FAIL"}});
                (pre.to_string(), post.to_string())
            }
        }
    }
}

/// Milliseconds since the epoch (the loop history's clock).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_millis() as u64
}

/// What [`hook_loop`] saw: for each call (1-based, index 0 unused) the time window its
/// before-call hook was answered in, and the calls whose before-call answer denied them.
pub struct HookLoop {
    pub windows: Vec<(u64, u64)>,
    pub denied: Vec<usize>,
}

/// 25 identical failing `npm test` calls of `who`'s session `id`, posted to
/// `POST /v1/hooks/{agent}` as the agent's hooks post them (a denied call does not run, so
/// it has no after-call payload). Call `i` goes to `servers[i % servers.len()]`; `token`:
/// the bearer token, with `--tokens`.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn hook_loop(servers: &[&Serve], who: HookAgent, id: &str, token: Option<&str>) -> HookLoop {
    let http = agent();
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("content-type", "application/json")];
    if let Some(a) = &auth {
        headers.push(("authorization", a.as_str()));
    }
    let path = format!("/v1/hooks/{}", who.name());
    let mut windows = vec![(0, 0)];
    let mut denied = Vec::new();
    for i in 1..=25 {
        let server = servers[i % servers.len()];
        let (pre, post) = who.shell_call(id, i);
        let before = now_ms();
        let a = request(
            &http,
            "POST",
            &server.url(&path),
            &headers,
            Some(pre.as_bytes()),
        )
        .unwrap_or_else(|e| panic!("{path}: {e}"));
        windows.push((before, now_ms()));
        assert_eq!(a.status, 200, "{path} call {i}: {}", a.body);
        // Claude Code and Codex: `permissionDecision: "deny"`; Gemini CLI: `decision: "deny"`.
        if a.body.contains(r#""deny""#) {
            denied.push(i);
            continue;
        }
        let b = request(
            &http,
            "POST",
            &server.url(&path),
            &headers,
            Some(post.as_bytes()),
        )
        .unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(b.status, 200, "{path} call {i}, after: {}", b.body);
    }
    HookLoop { windows, denied }
}

/// The loops `GET /v1/loops?session=…` lists (with `token`'s tenant), once `ready` holds for
/// them or after 20 s (SQLite and Redis record the history from a queue).
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn loops_of(
    server: &Serve,
    session: &str,
    token: Option<&str>,
    ready: impl Fn(&[serde_json::Value]) -> bool,
) -> Vec<serde_json::Value> {
    let http = agent();
    let auth = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = auth
        .as_deref()
        .map(|a| vec![("authorization", a)])
        .unwrap_or_default();
    let query: String = session
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    let url = server.url(&format!("/v1/loops?session={query}"));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let a = request(&http, "GET", &url, &headers, None).expect("GET /v1/loops");
        assert_eq!(a.status, 200, "{}", a.body);
        let loops = a.json()["loops"].as_array().cloned().unwrap_or_default();
        if ready(&loops) || Instant::now() > deadline {
            return loops;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Checks the one loop of a [`hook_loop`]: the record `GET /v1/loops` lists for it says its
/// session, agent, tool and detector, warned first at call 11 and blocked at call 21, and
/// the 15 calls spent from the first warning on (10 warned, 5 blocked).
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn check_hook_loop(loops: &[serde_json::Value], seen: &HookLoop, who: HookAgent, id: &str) {
    assert_eq!(seen.denied, (21..=25).collect::<Vec<_>>(), "{who:?}");
    assert_eq!(loops.len(), 1, "one loop for {who:?}'s session: {loops:#?}");
    let l = &loops[0];
    assert_eq!(l["format"], "loopguard.loop/1", "{l}");
    assert_eq!(l["session"], who.session(id).as_str(), "{l}");
    assert_eq!(l["agent"], who.name(), "{l}");
    assert_eq!(l["tool"], who.tool(), "{l}");
    assert_eq!(l["detector"], "generic_repeat", "{l}");
    assert_eq!(l["end"], "blocked", "{l}");
    let ms = |k: &str| l[k].as_u64().unwrap_or_else(|| panic!("{k} missing: {l}"));
    let (w0, w1) = seen.windows[11];
    let (b0, b1) = seen.windows[21];
    assert!(
        (w0..=w1).contains(&ms("firstWarningMs")),
        "first warning at call 11 ({w0}..={w1}): {l}"
    );
    assert!(
        (b0..=b1).contains(&ms("blockMs")),
        "block at call 21 ({b0}..={b1}): {l}"
    );
    assert_eq!(
        (
            l["calls"].as_u64(),
            l["warnings"].as_u64(),
            l["blocks"].as_u64()
        ),
        (Some(15), Some(10), Some(5)),
        "calls 11 to 25: {l}"
    );
    assert!(
        l["message"]
            .as_str()
            .is_some_and(|m| m.contains(&format!("Called {} with identical arguments", who.tool()))),
        "the message the model was shown, naming the agent's tool: {l}"
    );
}
