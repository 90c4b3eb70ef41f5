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
