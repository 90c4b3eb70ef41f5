//! Wall time of one `loopguard hook claude-code` invocation, as Claude Code pays it: a
//! process start, the payload on stdin, the answer on stdout.
//!
//! Measures, in the same run:
//!
//! * `true`: spawning a process that does nothing (the floor of any hook);
//! * `loopguard --version`: the binary's own start-up;
//! * **cold**: a `PreToolUse` against a database that does not exist yet (it is created);
//! * **warm**: `PreToolUse` and `PostToolUse` against an existing database whose session
//!   already holds a full 30-call history.
//!
//! `scripts/bench-hook.sh` builds the release binary and runs this;
//! by hand: `cargo run --release -p loopguard-hook --example hook_latency -- --bin target/release/loopguard [--runs 400]`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Stats {
    p50: Duration,
    p99: Duration,
    mean: Duration,
}

fn stats(mut v: Vec<Duration>) -> Stats {
    v.sort();
    let at = |q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize];
    let mean = v.iter().sum::<Duration>() / v.len() as u32;
    Stats {
        p50: at(0.50),
        p99: at(0.99),
        mean,
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// One invocation: spawn, write stdin, wait; the wall time of all of it.
fn time_one(cmd: &mut Command, stdin: &[u8]) -> Duration {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    if let Some(mut s) = child.stdin.take() {
        let _ = s.write_all(stdin);
    }
    let out = child.wait_with_output().expect("wait");
    let t = start.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    t
}

fn hook_cmd(bin: &Path, state: &Path, sandbox: &Path) -> Command {
    let mut c = Command::new(bin);
    c.args(["hook", "claude-code", "--state"])
        .arg(state)
        .env("HOME", sandbox.join("home"))
        .env("XDG_STATE_HOME", sandbox.join("state"))
        .env("XDG_CONFIG_HOME", sandbox.join("config"))
        .env("CLAUDE_PROJECT_DIR", sandbox.join("project"));
    c
}

fn pre(session: &str, i: usize) -> String {
    format!(
        r#"{{"session_id":"{session}","transcript_path":"/home/u/.claude/projects/p/{session}.jsonl","cwd":"/work/app","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{{"file_path":"/work/app/src/module_{m}.rs"}},"tool_use_id":"toolu_{i:08}"}}"#,
        m = i % 40
    )
}

fn post(session: &str, i: usize) -> String {
    format!(
        r#"{{"session_id":"{session}","transcript_path":"/home/u/.claude/projects/p/{session}.jsonl","cwd":"/work/app","permission_mode":"default","hook_event_name":"PostToolUse","tool_name":"Read","tool_input":{{"file_path":"/work/app/src/module_{m}.rs"}},"tool_use_id":"toolu_{i:08}","tool_response":{{"type":"text","file":{{"filePath":"/work/app/src/module_{m}.rs","content":"{body}","numLines":40,"startLine":1,"totalLines":40}}}}}}"#,
        m = i % 40,
        body = "fn f() {}\\n".repeat(40)
    )
}

fn main() {
    let mut bin: Option<PathBuf> = None;
    let mut runs = 300usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--bin" => bin = args.next().map(PathBuf::from),
            "--runs" => runs = args.next().and_then(|r| r.parse().ok()).unwrap_or(runs),
            _ => {}
        }
    }
    let bin = bin.unwrap_or_else(|| PathBuf::from("target/release/loopguard"));
    assert!(
        bin.is_file(),
        "no loopguard binary at {} (build with cargo build --release -p loopguard)",
        bin.display()
    );
    let sandbox = tempfile::tempdir().unwrap();
    for d in ["home", "state", "config", "project"] {
        std::fs::create_dir_all(sandbox.path().join(d)).unwrap();
    }
    let warmup = 20;

    // Baselines.
    let t = |cmd: &mut dyn FnMut() -> Command, stdin: &[u8]| -> Stats {
        for _ in 0..warmup {
            time_one(&mut cmd(), stdin);
        }
        stats((0..runs).map(|_| time_one(&mut cmd(), stdin)).collect())
    };
    let truth = t(&mut || Command::new("true"), b"");
    let version = t(
        &mut || {
            let mut c = Command::new(&bin);
            c.arg("--version");
            c
        },
        b"",
    );

    // Cold: a new database every time.
    let mut n = 0usize;
    let cold_payload = pre("cold-session", 0);
    let cold = t(
        &mut || {
            n += 1;
            let db = sandbox.path().join(format!("cold/{n}/db.sqlite3"));
            hook_cmd(&bin, &db, sandbox.path())
        },
        cold_payload.as_bytes(),
    );

    // Warm: one database, a session with a full history.
    let db = sandbox.path().join("warm/db.sqlite3");
    let session = "7c0a5f2e-warm-session";
    for i in 0..40 {
        time_one(
            &mut hook_cmd(&bin, &db, sandbox.path()),
            pre(session, i).as_bytes(),
        );
        time_one(
            &mut hook_cmd(&bin, &db, sandbox.path()),
            post(session, i).as_bytes(),
        );
    }
    let mut pre_times = Vec::new();
    let mut post_times = Vec::new();
    for i in 40..40 + runs {
        pre_times.push(time_one(
            &mut hook_cmd(&bin, &db, sandbox.path()),
            pre(session, i).as_bytes(),
        ));
        post_times.push(time_one(
            &mut hook_cmd(&bin, &db, sandbox.path()),
            post(session, i).as_bytes(),
        ));
    }
    let mut all = pre_times.clone();
    all.extend(post_times.iter().copied());
    let warm = stats(all);
    let warm_pre = stats(pre_times);
    let warm_post = stats(post_times);

    println!("loopguard hook latency: {runs} runs each (after {warmup} warm-up runs), wall time per process");
    println!(
        "{:<44} {:>10} {:>10} {:>10} {:>14}",
        "what", "p50", "p99", "mean", "p50 / `true`"
    );
    let row = |name: &str, s: &Stats| {
        println!(
            "{:<44} {:>10} {:>10} {:>10} {:>13.1}x",
            name,
            ms(s.p50),
            ms(s.p99),
            ms(s.mean),
            s.p50.as_secs_f64() / truth.p50.as_secs_f64()
        );
    };
    row("baseline: spawn `true`", &truth);
    row("baseline: `loopguard --version`", &version);
    row("hook, cold (creates the database)", &cold);
    row("hook, warm (PreToolUse + PostToolUse)", &warm);
    row("hook, warm PreToolUse", &warm_pre);
    row("hook, warm PostToolUse (~500-byte result)", &warm_post);
    println!(
        "hook cost above `loopguard --version` (warm p50): {}",
        ms(warm.p50.saturating_sub(version.p50))
    );
}
