//! The `--html` page, rendered in a real headless Chromium.
//!
//! Chromium is found through `LOOPGUARD_CHROMIUM` or on `PATH` (`chromium`,
//! `chromium-browser`, `google-chrome`). `.ci/run` installs it and sets
//! `LOOPGUARD_REQUIRE_CHROMIUM=1`, which turns a missing browser into a failure.

mod browser;

use std::path::{Path, PathBuf};
use std::process::Command;

use browser::{chromium, count_color, headless, no_browser};

fn dump_dom(browser: &Path, dir: &Path, page: &Path) -> String {
    let dom = headless(browser, &dir.join("profile-dom"))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    String::from_utf8_lossy(&dom.stdout).into_owned()
}

fn screenshot(browser: &Path, dir: &Path, page: &Path, name: &str, size: &str) -> PathBuf {
    let shot = dir.join(name);
    let status = headless(browser, &dir.join(format!("profile-{name}")))
        .arg(format!("--window-size={size}"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    shot
}

/// The HTML report (docs/replay.md): a summary table across sessions (most
/// expensive first), per session an axis, one lane per loop with its cost, a tooltip per
/// mark; readable on a phone-sized window.
#[test]
fn html_report_has_a_table_lanes_per_loop_costs_and_tooltips() {
    if no_browser("the HTML page") {
        return;
    }
    let browser = chromium().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::temp_dir().join(format!("lg-html-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("report.html");
    let out = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .arg("replay")
        .arg("--config")
        .arg(root.join("examples/openclaw.json5"))
        .arg("--html")
        .arg(&page)
        // Listed cheapest first: the page must reorder them by cost.
        .arg(root.join("tests/fixtures/transcripts/openclaw/healthy.jsonl"))
        .arg(root.join("tests/fixtures/transcripts/claude-code/loop.jsonl"))
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

    // Chromium writes the quotes of text as `&quot;`.
    let dom = dump_dom(&browser, &dir, &page).replace("&quot;", "\"");
    // The summary table: sessions by the calls spent in their loops (25, 15, 0).
    let table = &dom[dom.find("<table class=\"summary\"").unwrap()..dom.find("</table>").unwrap()];
    let rows: Vec<&str> = table.split("<tr").skip(2).collect();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| {
            let a = &r[r.find("<a href").unwrap()..];
            &a[a.find('>').unwrap() + 1..a.find("</a>").unwrap()]
        })
        .collect();
    assert_eq!(names, ["agent:main:main", "loop", "healthy"], "{table}");
    assert!(
        rows[1].contains("<td>382,725</td>"),
        "tokens in loops: {}",
        rows[1]
    );
    assert!(
        rows[1].contains("<td>5m 08s</td>"),
        "time in loops: {}",
        rows[1]
    );
    // Sessions in the same order, each with an axis and one lane per loop.
    let sections: Vec<&str> = dom.split("<section class=\"session\"").skip(1).collect();
    assert_eq!(sections.len(), 3);
    assert!(sections[0].contains("data-session=\"agent:main:main\""));
    let lanes = |s: &str| s.matches("class=\"label loop").count();
    assert_eq!(
        sections.iter().map(|s| lanes(s)).collect::<Vec<_>>(),
        [3, 1, 0]
    );
    assert!(sections[2].contains("no loops"));
    // Every warning, block, abort and compaction is a mark: stuck-agent (20 warnings, 5
    // blocks, 1 abort, 1 compaction) and the Claude Code loop (10 warnings, 5 blocks).
    let count = |class: &str| dom.matches(&format!("<rect class=\"{class}\"")).count();
    assert_eq!(count("warn"), 30, "{dom}");
    assert_eq!(count("block"), 10);
    assert_eq!(count("abort"), 1);
    assert_eq!(count("compaction"), 1);
    // A tooltip names line, tool, arguments, decision, detector, count and message.
    assert!(
        dom.contains("<title>line 43\nprocess {\"action\":\"poll\",\"sessionId\":\"sess-7\"}\nblock · known_poll_no_progress · count 20\nCRITICAL: Called process with identical arguments"),
        "{dom}"
    );
    // With the transcript's time.
    assert!(
        dom.contains("<title>line 34 · 2026-09-05 15:30:00Z\nBash {\"command\":\"gh run view"),
        "{dom}"
    );
    // The cost of each loop beside its lane.
    assert!(
        sections[0].contains("<div class=\"cost\">14 calls</div>"),
        "{}",
        sections[0]
    );
    assert!(sections[0].contains("<div class=\"cost\">run aborted at once</div>"));
    assert!(
        sections[1].contains("<div class=\"cost\">15 calls · 5m 08s · 382,725 tokens</div>"),
        "{}",
        sections[1]
    );
    // The axis: call numbers, and times where the input has them.
    assert!(sections[1].contains("15:26:20"), "{}", sections[1]);
    assert!(sections[1].contains(">25<br>"), "{}", sections[1]);

    // What it shows, on a desktop window and on a phone-sized one.
    for (name, size, min_red) in [("desk.png", "1200,1400", 50), ("phone.png", "390,1600", 30)] {
        let shot = screenshot(&browser, &dir, &page, name, size);
        assert!(
            count_color(&shot, [0xd0, 0x02, 0x1b]).0 > min_red,
            "{name}: no red block marks drawn"
        );
        assert!(
            count_color(&shot, [0xf5, 0xa6, 0x23]).0 > min_red,
            "{name}: no amber warning marks drawn"
        );
        assert!(
            count_color(&shot, [0x7b, 0x2c, 0xbf]).0 > 10,
            "{name}: no purple abort mark drawn"
        );
        assert!(
            count_color(&shot, [0x2f, 0x80, 0xed]).0 > 0 || name == "phone.png",
            "{name}: no compaction line drawn"
        );
    }
    if std::env::var_os("LOOPGUARD_KEEP_HTML").is_none() {
        std::fs::remove_dir_all(&dir).unwrap();
    } else {
        eprintln!("kept {}", dir.display());
    }
}

/// A 200,000-event session with 50 loops (one per run): the page stays small (each loop
/// lane an even sample, the 40 most expensive loops drawn), says what it left out, and
/// still draws the loops.
#[test]
fn a_long_session_is_drawn_from_a_bounded_sample() {
    if no_browser("the HTML page") {
        return;
    }
    let browser = chromium().unwrap();
    let dir = std::env::temp_dir().join(format!("lg-html-long-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let events = dir.join("long.jsonl");
    let mut text = String::with_capacity(30 << 20);
    for i in 0..100_000u64 {
        let ts = 1_788_622_000_000 + i * 1000;
        let run = i / 2000;
        text.push_str(&format!(
            "{{\"type\":\"call\",\"run\":\"r{run}\",\"callId\":\"c{i}\",\"tool\":\"read\",\"args\":{{\"path\":\"/same\"}},\"ts\":{ts}}}\n{{\"type\":\"outcome\",\"run\":\"r{run}\",\"callId\":\"c{i}\",\"tool\":\"read\",\"args\":{{\"path\":\"/same\"}},\"result\":\"same\",\"ts\":{ts}}}\n"
        ));
    }
    std::fs::write(&events, text).unwrap();
    let config = dir.join("cfg.json");
    std::fs::write(&config, r#"{"tools":{"loopDetection":{"enabled":true}}}"#).unwrap();
    let page = dir.join("long.html");
    let out = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .args(["replay", "--mode", "observe", "--config"])
        .arg(&config)
        .arg("--html")
        .arg(&page)
        .arg(&events)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let size = std::fs::metadata(&page).unwrap().len();
    assert!(size < 2_500_000, "page of {size} bytes");
    let dom = dump_dom(&browser, &dir, &page);
    assert_eq!(dom.matches("class=\"label loop").count(), 40);
    assert!(
        dom.contains("10 more loops not drawn"),
        "left-out loops not said"
    );
    assert!(
        dom.contains("Drawn from an even sample: loop 1: "),
        "thinning not said"
    );
    // Each of the 40 lanes: an even sample of its ~1,990 marks, at most 128.
    let marks =
        dom.matches("<rect class=\"block\"").count() + dom.matches("<rect class=\"warn\"").count();
    assert!((40 * 64..=40 * 128).contains(&marks), "{marks} marks");
    // The histogram counts every call in at most 256 buckets.
    assert!(dom.matches("<rect class=\"calls\"").count() <= 256);
    assert!(dom.contains(">100,000<br>"), "last axis tick");
    let shot = screenshot(&browser, &dir, &page, "long.png", "1200,900");
    assert!(
        count_color(&shot, [0xd0, 0x02, 0x1b]).0 > 50,
        "no red block marks drawn"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An event stream without `--config` replays with OpenClaw's default `enabled: false`:
/// stderr and the page say detection was off; with the Quick start's config the page shows
/// the config and thresholds used, and finds the example's loops.
#[test]
fn the_page_and_stderr_say_which_config_ran_and_when_detection_was_off() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let example = root.join("examples/stuck-agent.jsonl");
    let dir = tempfile::tempdir().expect("tempdir");
    let page = dir.path().join("r.html");
    let run = |config: Option<&Path>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_loopguard"));
        cmd.args(["replay", "--color", "never", "--html"])
            .arg(&page);
        if let Some(c) = config {
            cmd.arg("--config").arg(c);
        }
        let out = cmd.arg(&example).output().expect("replay");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            String::from_utf8_lossy(&out.stderr).into_owned(),
            std::fs::read_to_string(&page).expect("page"),
        )
    };
    let (stderr, html) = run(None);
    assert!(stderr.contains("loop detection off"), "{stderr}");
    assert!(
        html.contains("no --config: OpenClaw&#39;s defaults (enabled: false) · loop detection OFF")
            || html
                .contains("no --config: OpenClaw's defaults (enabled: false) · loop detection OFF"),
        "the page says detection was off"
    );
    let (stderr, html) = run(Some(&root.join("examples/openclaw.json5")));
    assert!(!stderr.contains("loop detection off"), "{stderr}");
    assert!(
        html.contains("config for event streams:"),
        "the page names the config"
    );
    assert!(
        html.contains("profile openclaw · history 30 · warning at 10 · critical at 20"),
        "the page shows the thresholds"
    );
    assert!(
        html.contains("3 loops found"),
        "the Quick start's three loops"
    );
}
