//! A server on a real loopback port, and raw HTTP/1.1 over TCP to it.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A server on a free loopback port, served by its own runtime on a thread; stopped (and
/// joined) when dropped.
pub struct Running {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    pub fn start(builder: loopguard_serve::ServerBuilder) -> Running {
        let server = builder
            .listen("127.0.0.1:0".parse().expect("an address"))
            .store("memory")
            .build()
            .expect("the server builds");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                tx.send(listener.local_addr().expect("an address"))
                    .expect("the test waits");
                server
                    .serve(listener, async move {
                        let _ = stopped.await;
                    })
                    .await
                    .expect("serves");
            });
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the server listens");
        Running {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(self.addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("a read timeout");
        s
    }

    /// Sends raw bytes on a new connection and reads the answer until the server closes it
    /// or the answer's Content-Length is read.
    pub fn raw(&self, bytes: &[u8]) -> (u16, String, String) {
        let mut s = self.connect();
        // The server may answer (and close) before all of a huge request is written.
        let _ = s.write_all(bytes);
        read_answer(&mut s)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads one answer: status, head, body (by Content-Length).
pub fn read_answer(s: &mut TcpStream) -> (u16, String, String) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = find(&buf, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let len = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                let body = String::from_utf8_lossy(&buf[end + 4..end + 4 + len]).to_string();
                let status = head
                    .split(' ')
                    .nth(1)
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(0);
                return (status, head, body);
            }
        }
        match s.read(&mut chunk) {
            Ok(0) => panic!(
                "the connection closed before a whole answer: {:?}",
                String::from_utf8_lossy(&buf)
            ),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) => panic!("no answer: {e} (read so far: {buf:?})"),
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A request with a method, path, headers and body, on a new connection (closed after).
pub fn request(
    server: &Running,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, String) {
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    let mut bytes = req.into_bytes();
    bytes.extend_from_slice(body);
    server.raw(&bytes)
}
