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
