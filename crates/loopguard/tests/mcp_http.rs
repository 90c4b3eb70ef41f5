//! `loopguard mcp --listen ADDR -- COMMAND` driven by a raw HTTP/1.1 client on one kept-alive
//! connection (what real MCP clients do), in front of the reference Python SDK's server
//! (`mcp` from PyPI, installed by scripts/setup-mcp.sh into target/mcp-venv). Without that
//! venv these tests fail, naming the script.

mod common;
use common::{free_port, mcp_python as python, root, wait_for_port, Running};

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

fn server_py() -> PathBuf {
    root().join("crates/loopguard-mcp/tests/python/server.py")
}

/// Starts `loopguard mcp --listen 127.0.0.1:PORT EXTRA -- python server.py`; stderr goes to
/// `stderr` when given.
fn listener(extra: &[&str], stderr: Option<&Path>, calls: &Path) -> (Running, u16) {
    let py = python();
    let port = free_port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_loopguard"));
    cmd.args(["mcp", "--listen", &format!("127.0.0.1:{port}")])
        .args(extra)
        .arg("--")
        .arg(&py)
        .arg(server_py())
        .env("LOOPGUARD_TEST_CALLS", calls)
        .stdout(Stdio::null());
    match stderr {
        Some(p) => cmd.stderr(std::fs::File::create(p).expect("stderr file")),
        None => cmd.stderr(Stdio::inherit()),
    };
    let running = Running(cmd.spawn().expect("start the proxy"));
    wait_for_port(port);
    (running, port)
}

/// An HTTP/1.1 client on one kept-alive TCP connection.
struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    session: Option<String>,
}

/// One answer: status, the session id header, and the JSON-RPC messages of the body.
struct Answer {
    status: u16,
    session: Option<String>,
    messages: Vec<Value>,
}

impl Connection {
    fn open(port: u16) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        Connection {
            reader: BufReader::new(stream.try_clone().expect("clone")),
            writer: stream,
            session: None,
        }
    }

    fn post(&mut self, message: &Value) -> Answer {
        let body = message.to_string();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: application/json, text/event-stream\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
            body.len()
        );
        if let Some(s) = &self.session {
            head.push_str(&format!("mcp-session-id: {s}\r\n"));
        }
        head.push_str("\r\n");
        self.writer
            .write_all(format!("{head}{body}").as_bytes())
            .expect("write");
        let answer = self.read_answer();
        if let Some(s) = &answer.session {
            self.session = Some(s.clone());
        }
        answer
    }

    fn read_answer(&mut self) -> Answer {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("status line");
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {line:?}"));
        let (mut chunked, mut length, mut session) = (false, None, None);
        loop {
            line.clear();
            self.reader.read_line(&mut line).expect("header");
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let (name, value) = l.split_once(':').expect("header line");
            match name.to_ascii_lowercase().as_str() {
                "transfer-encoding" => chunked = value.trim().eq_ignore_ascii_case("chunked"),
                "content-length" => length = value.trim().parse::<usize>().ok(),
                "mcp-session-id" => session = Some(value.trim().to_owned()),
                _ => {}
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                self.reader.read_line(&mut line).expect("chunk size");
                let size = usize::from_str_radix(line.trim(), 16).expect("chunk size");
                let mut chunk = vec![0; size + 2];
                self.reader.read_exact(&mut chunk).expect("chunk");
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else if let Some(n) = length {
            body.resize(n, 0);
            self.reader.read_exact(&mut body).expect("body");
        }
        let text = String::from_utf8_lossy(&body);
        let messages = if text.trim_start().starts_with('{') {
            vec![serde_json::from_str(&text).expect("JSON body")]
        } else {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| serde_json::from_str(d.trim()).expect("SSE data is JSON"))
                .collect()
        };
        Answer {
            status,
            session,
            messages,
        }
    }

    fn initialize(&mut self) -> Value {
        let answer = self.post(
            &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},
            "clientInfo":{"name":"raw","version":"1"}}}),
        );
        assert_eq!(answer.status, 200, "initialize");
        assert!(self.session.is_some(), "a session id comes with initialize");
        let initialized = self.post(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        assert_eq!(initialized.status, 202);
        answer
            .messages
            .into_iter()
            .next()
            .expect("initialize result")
    }

    /// A `tools/call` whose answer may be an HTTP error.
    fn call_raw(&mut self, id: u64, tool: &str) -> Answer {
        self.post(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":tool,"arguments":{}}}))
    }

    /// Opens the session's GET stream on a new connection and reads its status; the stream
    /// stays open as long as the returned connection lives.
    fn open_get_stream(&self) -> TcpStream {
        let port = self.writer.peer_addr().expect("peer").port();
        let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        let session = self.session.as_deref().expect("a session");
        s.write_all(
            format!("GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\nmcp-session-id: {session}\r\n\r\n")
                .as_bytes(),
        )
        .expect("write");
        let mut reader = BufReader::new(s.try_clone().expect("clone"));
        let mut line = String::new();
        reader.read_line(&mut line).expect("status line");
        assert!(line.contains(" 200 "), "GET stream: {line}");
        s
    }

    fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        let answer = self.post(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":tool,"arguments":arguments}}));
        assert_eq!(answer.status, 200, "tools/call {id}");
        answer
            .messages
            .into_iter()
            .find(|m| m["id"] == id)
            .expect("the call's answer")
    }
}

/// Nagle's algorithm on the proxy's streamed answers plus the client's delayed ACK cost every
/// request after the first ~40 ms on a kept-alive connection. The median of 20 calls must be
/// well under that (25 ms, which Nagle could never reach), however loaded the machine.
#[test]
fn requests_on_one_kept_alive_connection_are_not_held_back_by_nagle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_proxy, port) = listener(&[], None, &dir.path().join("calls"));
    let mut c = Connection::open(port);
    c.initialize();
    let mut times = Vec::new();
    for i in 1..=20u64 {
        let start = Instant::now();
        let answer = c.call(i, "counter", json!({}));
        times.push(start.elapsed());
        assert_eq!(answer["result"]["isError"], false, "call {i}: {answer}");
    }
    times.sort();
    let median = times[times.len() / 2];
    assert!(
        median < Duration::from_millis(25),
        "median {median:?} per call on one kept-alive connection (all: {times:?})"
    );
}

/// The processes `pid` started (its threads' children).
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(t.path().join("children")) {
                out.extend(
                    text.split_whitespace()
                        .filter_map(|p| p.parse::<u32>().ok()),
                );
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

fn wait_gone(pid: u32, what: &str) {
    let start = Instant::now();
    while Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{what}: server process {pid} still runs"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The only server process started since `before`.
fn new_child(proxy: u32, before: &[u32]) -> u32 {
    let now: Vec<u32> = children(proxy)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    assert_eq!(now.len(), 1, "one new server process: {now:?}");
    now[0]
}

fn assert_json_error(answer: &Answer, status: u16) -> String {
    assert_eq!(answer.status, status);
    let m = answer.messages.first().expect("a JSON body");
    assert_eq!(m["jsonrpc"], "2.0", "{m}");
    m["error"]["message"]
        .as_str()
        .expect("an error message")
        .to_owned()
}

#[test]
fn an_idle_session_is_ended_with_its_server_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (proxy, port) = listener(&["--idle-ttl", "1s"], None, &dir.path().join("calls"));
    let mut c = Connection::open(port);
    c.initialize();
    let server = new_child(proxy.0.id(), &[]);
    assert_eq!(c.call(1, "counter", json!({}))["result"]["isError"], false);
    // The client never sends DELETE (the TypeScript SDK's close() does not).
    wait_gone(server, "after --idle-ttl 1s");
    let late = c.call_raw(2, "counter");
    let message = assert_json_error(&late, 404);
    assert!(message.contains("Mcp-Session-Id"), "{message}");
}

#[test]
fn at_the_session_cap_the_oldest_idle_session_goes_and_a_busy_proxy_answers_503() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (proxy, port) = listener(
        &["--max-sessions", "1", "--idle-ttl", "1h"],
        None,
        &dir.path().join("calls"),
    );
    let mut a = Connection::open(port);
    a.initialize();
    let server_a = new_child(proxy.0.id(), &[]);
    // A is idle: B's initialize takes its place.
    let mut b = Connection::open(port);
    b.initialize();
    wait_gone(server_a, "the oldest idle session at --max-sessions 1");
    let server_b = new_child(proxy.0.id(), &[server_a]);
    assert_json_error(&a.call_raw(1, "counter"), 404);
    assert_eq!(b.call(1, "counter", json!({}))["result"]["isError"], false);
    // B holds its GET stream open: it is busy, so C is refused with a JSON-RPC error.
    let _stream = b.open_get_stream();
    let mut c = Connection::open(port);
    let refused = c.post(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}));
    let message = assert_json_error(&refused, 503);
    assert!(message.contains("--max-sessions"), "{message}");
    assert!(
        Path::new(&format!("/proc/{server_b}")).exists(),
        "B still runs"
    );
}
