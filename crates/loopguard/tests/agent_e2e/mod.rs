//! The scripted model server and process helpers of the agent end-to-end tests.
//!
//! The server is a plain HTTP/1.1 server on a free 127.0.0.1 port (std only): each request
//! is recorded and answered by the test's script with a complete body (streaming answers
//! are sent as a whole server-sent-events body), so the agent programs run offline.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// One request the agent sent.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub body: Value,
}

/// What the script answers.
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(v: &Value) -> Response {
        Response {
            status: 200,
            content_type: "application/json",
            body: v.to_string().into_bytes(),
        }
    }

    pub fn sse(events: &[(Option<&str>, Value)]) -> Response {
        let mut body = String::new();
        for (name, data) in events {
            if let Some(n) = name {
                body.push_str(&format!("event: {n}\n"));
            }
            body.push_str(&format!("data: {data}\n\n"));
        }
        Response {
            status: 200,
            content_type: "text/event-stream",
            body: body.into_bytes(),
        }
    }

    pub fn sse_raw(body: String) -> Response {
        Response {
            status: 200,
            content_type: "text/event-stream",
            body: body.into_bytes(),
        }
    }

    pub fn not_found() -> Response {
        Response {
            status: 404,
            content_type: "application/json",
            body: b"{}".to_vec(),
        }
    }
}

type Script = dyn Fn(&Request) -> Response + Send + Sync;

/// The scripted model server.
pub struct ModelServer {
    pub port: u16,
    pub requests: Arc<Mutex<Vec<Request>>>,
}

impl ModelServer {
    pub fn start(script: impl Fn(&Request) -> Response + Send + Sync + 'static) -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<Script> = Arc::new(script);
        let recorded = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let script = script.clone();
                let recorded = recorded.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, &*script, &recorded);
                });
            }
        });
        ModelServer { port, requests }
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

fn serve(
    stream: TcpStream,
    script: &Script,
    recorded: &Mutex<Vec<Request>>,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(120)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut stream = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_string();
        let path = parts.next().unwrap_or_default().to_string();
        let mut length = 0usize;
        let mut chunked = false;
        loop {
            let mut h = String::new();
            reader.read_line(&mut h)?;
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let lower = h.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
            if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
                chunked = true;
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                let mut size = String::new();
                reader.read_line(&mut size)?;
                let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
                let mut chunk = vec![0; n + 2];
                reader.read_exact(&mut chunk)?;
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            }
        } else {
            body.resize(length, 0);
            reader.read_exact(&mut body)?;
        }
        let req = Request {
            method,
            path,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        };
        let resp = script(&req);
        recorded.lock().unwrap().push(req);
        let head = format!(
            "HTTP/1.1 {} X\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: keep-alive\r\n\r\n",
            resp.status,
            resp.content_type,
            resp.body.len()
        );
        stream.write_all(head.as_bytes())?;
        stream.write_all(&resp.body)?;
        stream.flush()?;
    }
}

/// target/agents, where scripts/setup-agents.sh installs the agent CLIs.
pub fn agents_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/agents")
}

/// A file scripts/setup-agents.sh installs under target/agents; fails the test, naming the
/// script, when it is missing.
pub fn agent_file(relative: &str) -> PathBuf {
    let p = agents_dir().join(relative);
    assert!(
        p.exists(),
        "{} is missing: run scripts/setup-agents.sh (scripts/test.sh does) to install the agent CLIs",
        p.display()
    );
    p
}

/// An agent CLI's command (`node_modules/.bin/NAME`).
pub fn agent_bin(name: &str) -> PathBuf {
    agent_file(&format!("node_modules/.bin/{name}"))
}

/// How an agent's process ended.
pub struct Finished {
    /// Its exit status and output.
    pub output: Output,
    /// `true` when it was still running at the time limit and was killed.
    pub killed: bool,
}

/// Runs `cmd` to completion, killing it after `limit`.
pub fn run_with_timeout(mut cmd: Command, limit: Duration) -> Finished {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child: Child = cmd.spawn().expect("start the agent");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let mut killed = false;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            killed = true;
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Finished {
        output: Output {
            status,
            stdout: o.join().unwrap(),
            stderr: e.join().unwrap(),
        },
        killed,
    }
}

/// How many times the looping command ran (it appends a line to `counter` each time).
pub fn runs(counter: &Path) -> usize {
    std::fs::read_to_string(counter)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}
