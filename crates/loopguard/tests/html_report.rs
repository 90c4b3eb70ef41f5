//! The `--html` page, rendered in a real headless Chromium.
//!
//! Chromium is found through `LOOPGUARD_CHROMIUM` or on `PATH` (`chromium`,
//! `chromium-browser`, `google-chrome`). `.ci/run` installs it and sets
//! `LOOPGUARD_REQUIRE_CHROMIUM=1`, which turns a missing browser into a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

fn chromium() -> Option<PathBuf> {
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

fn headless(browser: &Path, profile: &Path) -> Command {
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

/// Counts pixels close to an RGB colour.
fn count_color(png_path: &Path, rgb: [u8; 3]) -> usize {
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(png_path).unwrap(),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    buf[..info.buffer_size()]
        .chunks(channels)
        .filter(|p| p.len() >= 3 && p[..3].iter().zip(rgb).all(|(a, b)| a.abs_diff(b) <= 12))
        .count()
}

#[test]
fn html_timeline_renders_warnings_blocks_and_compactions() {
    let Some(browser) = chromium() else {
        if std::env::var_os("LOOPGUARD_REQUIRE_CHROMIUM").is_some() {
            panic!("LOOPGUARD_REQUIRE_CHROMIUM is set but no Chromium was found");
        }
        eprintln!(
            "SKIPPED: no Chromium found (set LOOPGUARD_CHROMIUM); the HTML page was not rendered"
        );
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::temp_dir().join(format!("lg-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("report.html");
    let out = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .arg("replay")
        .arg("--config")
        .arg(root.join("examples/openclaw.json5"))
        .arg("--html")
        .arg(&page)
        .arg(root.join("examples/stuck-agent.jsonl"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains("<script"));

    // What the browser's DOM holds after loading the page.
    let dom = headless(&browser, &dir.join("profile-dom"))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let dom = String::from_utf8_lossy(&dom.stdout);
    let count = |class: &str| dom.matches(&format!("<rect class=\"{class}\"")).count();
    // examples/stuck-agent.jsonl replayed in enforce mode: 20 warnings, 5 blocks, 1 abort,
    // 1 compaction, and 53 calls in all.
    assert_eq!(count("warn"), 20, "{dom}");
    assert_eq!(count("block"), 5);
    assert_eq!(count("abort"), 1);
    assert_eq!(count("compaction"), 1);
    assert_eq!(count("call") + count("warn") + count("block"), 53);
    assert!(dom.contains("agent:main:main"));
    assert!(dom.contains("compaction_loop_persisted"));
    assert!(dom.contains("line 43: process: blocked, known_poll_no_progress (count 20)"));

    // What it shows: the coloured marks are drawn.
    let shot = dir.join("shot.png");
    let status = headless(&browser, &dir.join("profile-shot"))
        .arg("--window-size=1100,900")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    assert!(
        count_color(&shot, [0xd0, 0x02, 0x1b]) > 50,
        "no red block marks drawn"
    );
    assert!(
        count_color(&shot, [0xf5, 0xa6, 0x23]) > 50,
        "no amber warning marks drawn"
    );
    assert!(
        count_color(&shot, [0x7b, 0x2c, 0xbf]) > 20,
        "no purple abort mark drawn"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
