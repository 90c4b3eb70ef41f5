//! The listener on a real loopback socket: a slow client cannot starve `/healthz`, idle
//! request heads are timed out, and the errors hyper answers by itself (a request it cannot
//! parse) are JSON like every other error. Raw TCP, so the bytes are exactly what a client
//! sends.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use loopguard_serve::Server;
use support::{read_answer, Running};

fn healthz(server: &Running) -> (u16, String) {
    let (status, _, body) =
        server.raw(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    (status, body)
}

/// The slow-client attack: more connections than the cap, each sending the start of a
/// request head and then nothing. `/healthz` still answers (the idle heads are closed after
/// the header timeout, freeing the cap), and each idle connection is closed by the server.
#[test]
fn idle_request_heads_are_timed_out_and_cannot_starve_healthz() {
    let server = Running::start(
        Server::builder()
            .header_timeout(Duration::from_secs(1))
            .max_connections(8),
    );
    let mut idle: Vec<TcpStream> = (0..24)
        .map(|_| {
            let mut s = server.connect();
            s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
                .expect("a partial head");
            s
        })
        .collect();
    let (status, body) = healthz(&server);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, r#"{"status":"ok"}"#);
    // Each idle connection is closed by the server (EOF, or a reset), well before the
    // client's own 30 s read timeout.
    for (i, s) in idle.iter_mut().enumerate() {
        let mut rest = Vec::new();
        match s.read_to_end(&mut rest) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(e) => panic!("idle connection {i} was not closed by the server: {e}"),
        }
    }
    // The cap was reached, and the metrics say so.
    let (status, _, metrics) =
        server.raw(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(status, 200);
    let reached = metrics
        .lines()
        .find_map(|l| l.strip_prefix("loopguard_http_connection_cap_reached_total "))
        .expect("the cap counter is exported");
    assert_ne!(reached.trim(), "0", "{metrics}");
}

/// A kept-alive connection that goes quiet after an answer is closed too.
#[test]
fn kept_alive_connection_idle_after_an_answer_is_closed() {
    let server = Running::start(Server::builder().header_timeout(Duration::from_secs(1)));
    let mut s = server.connect();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("a request");
    let (status, _, _) = read_answer(&mut s);
    assert_eq!(status, 200);
    let mut rest = Vec::new();
    match s.read_to_end(&mut rest) {
        Ok(_) => assert!(rest.is_empty(), "{rest:?}"),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("the idle kept-alive connection was not closed: {e}"),
    }
}

/// Requests hyper rejects before the router sees them are answered with the `Error` JSON
/// body, with their status.
#[test]
fn protocol_errors_are_json() {
    let server = Running::start(Server::builder());
    let huge_path = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(1 << 20));
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("a 1 MiB path", huge_path.into_bytes(), 431),
        (
            "a duplicate Content-Length",
            b"POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}".to_vec(),
            400,
        ),
        ("a garbage request line", b"HELLO\x01 THERE\r\n\r\n".to_vec(), 400),
        (
            "a header without a colon",
            b"GET /healthz HTTP/1.1\r\nHost x\r\n\r\n".to_vec(),
            400,
        ),
    ];
    for (what, bytes, want) in cases {
        let (status, head, body) = server.raw(&bytes);
        assert_eq!(status, want, "{what}: {head}");
        assert!(
            head.to_ascii_lowercase()
                .contains("\r\ncontent-type: application/json"),
            "{what}: {head}"
        );
        let v: serde_json::Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {body:?}"));
        assert!(
            v["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{what}: {body}"
        );
        assert!(v.get("field").is_some(), "{what}: {body}");
    }
    // The server still answers afterwards.
    assert_eq!(healthz(&server).0, 200);
}
