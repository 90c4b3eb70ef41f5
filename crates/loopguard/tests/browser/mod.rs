//! Headless Chromium for the tests that render a page (`html_report.rs`, `serve_dashboard.rs`).
//!
//! Chromium is found through `LOOPGUARD_CHROMIUM` or on `PATH` (`chromium`,
//! `chromium-browser`, `google-chrome`). `.ci/run` installs it and sets
//! `LOOPGUARD_REQUIRE_CHROMIUM=1`, which turns a missing browser into a failure.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The browser, if there is one.
pub fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("LOOPGUARD_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

/// True when there is no browser and none is required: the test then says what it did not
/// render (`what`) and returns. Panics when `LOOPGUARD_REQUIRE_CHROMIUM` is set.
pub fn no_browser(what: &str) -> bool {
    if chromium().is_some() {
        return false;
    }
    if std::env::var_os("LOOPGUARD_REQUIRE_CHROMIUM").is_some() {
        panic!("LOOPGUARD_REQUIRE_CHROMIUM is set but no Chromium was found");
    }
    eprintln!("SKIPPED: no Chromium found (set LOOPGUARD_CHROMIUM); {what} was not rendered");
    true
}

/// Headless `browser` with a profile of its own in `profile`, offline except for the page.
pub fn headless(browser: &Path, profile: &Path) -> Command {
    let mut c = Command::new(browser);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// Pixels within 12 of `rgb` in a PNG, and how many pixels it has.
pub fn count_color(png_path: &Path, rgb: [u8; 3]) -> (usize, usize) {
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(png_path).unwrap(),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks(channels).collect();
    let n = pixels
        .iter()
        .filter(|p| p.len() >= 3 && p[..3].iter().zip(rgb).all(|(a, b)| a.abs_diff(b) <= 12))
        .count();
    (n, pixels.len())
}

/// A page in headless Chromium driven over the DevTools protocol, for pages that never
/// finish loading (the dashboard keeps a live stream open, so `--dump-dom` and
/// `--screenshot`, which wait for the network to be idle, would wait forever). The
/// protocol runs over `--remote-debugging-pipe` (messages ending in a NUL byte on file
/// descriptors 3 and 4), which the shell connects to two named pipes.
pub struct Page {
    child: std::process::Child,
    to: std::fs::File,
    from: std::sync::mpsc::Receiver<serde_json::Value>,
    session: String,
    next: u64,
    _dir: tempfile::TempDir,
}

/// How long one protocol call, or a wait for the page, may take.
const PAGE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

impl Page {
    /// Chromium with a profile of its own in `profile`, showing `url` in a viewport of
    /// `width` × `height` (a phone's when narrower than 600).
    pub fn open(browser: &Path, profile: &Path, url: &str, width: u32, height: u32) -> Page {
        use std::io::Read;
        let dir = tempfile::tempdir().unwrap();
        let (to_path, from_path) = (dir.path().join("to"), dir.path().join("from"));
        for p in [&to_path, &from_path] {
            let ok = Command::new("mkfifo").arg(p).status().unwrap();
            assert!(ok.success(), "mkfifo {}", p.display());
        }
        let args = headless(browser, profile);
        let mut line = String::from("exec");
        for a in std::iter::once(args.get_program()).chain(args.get_args()) {
            line.push_str(" '");
            line.push_str(&a.to_string_lossy().replace('\'', r"'\''"));
            line.push('\'');
        }
        line.push_str(" --remote-debugging-pipe about:blank 3<\"$1\" 4>\"$2\"");
        let child = Command::new("sh")
            .args(["-c", &line, "sh"])
            .arg(&to_path)
            .arg(&from_path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // The shell opens `to` for reading, then `from` for writing: open them in that order.
        let to = std::fs::OpenOptions::new()
            .write(true)
            .open(&to_path)
            .unwrap();
        let mut reader = std::fs::File::open(&from_path).unwrap();
        let (tx, from) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 65536];
            loop {
                let n = match reader.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                buf.extend_from_slice(&chunk[..n]);
                while let Some(end) = buf.iter().position(|&b| b == 0) {
                    let msg: Vec<u8> = buf.drain(..=end).collect();
                    if let Ok(v) = serde_json::from_slice(&msg[..msg.len() - 1]) {
                        if tx.send(v).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let mut page = Page {
            child,
            to,
            from,
            session: String::new(),
            next: 0,
            _dir: dir,
        };
        let target = page.call(
            "Target.createTarget",
            serde_json::json!({ "url": "about:blank" }),
        );
        let id = target["targetId"].as_str().unwrap().to_string();
        let attached = page.call(
            "Target.attachToTarget",
            serde_json::json!({ "targetId": id, "flatten": true }),
        );
        page.session = attached["sessionId"].as_str().unwrap().to_string();
        page.resize(width, height);
        page.call("Page.navigate", serde_json::json!({ "url": url }));
        page
    }

    /// Calls a protocol method (on the page once attached) and returns its result.
    pub fn call(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        use std::io::Write;
        self.next += 1;
        let id = self.next;
        let mut msg = serde_json::json!({ "id": id, "method": method, "params": params });
        if !self.session.is_empty() {
            msg["sessionId"] = self.session.clone().into();
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        let deadline = std::time::Instant::now() + PAGE_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let answer = self
                .from
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("Chromium did not answer {method}: {e}"));
            if answer["id"] == id {
                assert!(answer["error"].is_null(), "{method}: {answer}");
                return answer["result"].clone();
            }
        }
    }

    /// The value of a JavaScript expression in the page.
    pub fn eval(&mut self, expr: &str) -> serde_json::Value {
        let r = self.call(
            "Runtime.evaluate",
            serde_json::json!({ "expression": expr, "returnByValue": true }),
        );
        assert!(r["exceptionDetails"].is_null(), "{expr}: {r}");
        r["result"]["value"].clone()
    }

    /// Waits until `expr` is true in the page (checked every 100 ms, for a minute at
    /// most); panics naming `what` with the page's text otherwise.
    pub fn wait_for(&mut self, expr: &str, what: &str) {
        let deadline = std::time::Instant::now() + PAGE_TIMEOUT;
        while std::time::Instant::now() < deadline {
            if self.eval(&format!("!!({expr})")) == serde_json::Value::Bool(true) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let body = self.eval("document.body.outerHTML");
        panic!("{what}: not seen within {PAGE_TIMEOUT:?}\n{body}");
    }

    /// The viewport: `width` × `height`, a phone's when narrower than 600.
    pub fn resize(&mut self, width: u32, height: u32) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            serde_json::json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600 }),
        );
    }

    /// A PNG of the viewport, written to `path`.
    pub fn screenshot(&mut self, path: &Path) {
        use base64::Engine as _;
        let shot = self.call(
            "Page.captureScreenshot",
            serde_json::json!({ "format": "png" }),
        );
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap();
        std::fs::write(path, png).unwrap();
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        use std::io::Write;
        // Closed as a browser closes (its helper processes go with it); killed if it does
        // not within 10 s.
        let _ = self
            .to
            .write_all(b"{\"id\":0,\"method\":\"Browser.close\"}\0");
        for _ in 0..100 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
