//! What the binary's integration tests share: where the repository is, the binary cargo built
//! for them, the MCP Python SDK some of them drive, and the child-process and port helpers of
//! the MCP proxy tests. Each test file includes it with
//! `mod common;` and uses the part it needs.
#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// The repository's `tests/fixtures`.
pub fn fixtures() -> PathBuf {
    root().join("tests/fixtures")
}

/// The `loopguard` binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_loopguard")
}

/// The Python of the MCP SDK's venv (`scripts/setup-mcp.sh`, or `LOOPGUARD_MCP_VENV`); fails
/// the test, naming the set-up script, when the SDK is not there.
pub fn mcp_python() -> PathBuf {
    let venv = std::env::var_os("LOOPGUARD_MCP_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/mcp-venv"));
    let py = venv.join("bin/python");
    let ok = Command::new(&py)
        .args(["-c", "import mcp.server.mcpserver, mcp.client.session"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        ok,
        "the MCP Python SDK is not installed at {}: run scripts/setup-mcp.sh first",
        venv.display()
    );
    py
}

/// A child process killed when the test ends, however it ends.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A free port on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// Waits (20 s at the most) until something listens on 127.0.0.1:`port`.
pub fn wait_for_port(port: u16) {
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "nothing listens on 127.0.0.1:{port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
