//! Wall time of one `loopguard hook claude-code` invocation, as Claude Code pays it: a
//! process start, the payload on stdin, the answer on stdout.
//!
//! Measures, in the same run:
//!
//! * `true`: spawning a process that does nothing (the floor of any hook);
//! * `loopguard --version`: the binary's own start-up;
//! * **cold**: a `PreToolUse` against a database that does not exist yet (it is created);
//! * **warm**: `PreToolUse` and `PostToolUse` against an existing database whose session
//!   already holds a full 30-call history;
//! * **alerts**: the same warm calls with a config file, without and with `loopguard.alerts`
//!   (a webhook on a local receiver), alternating call by call; and the invocation that
//!   denies a loop's first blocked call (the one that spools the alert and starts the
//!   detached delivery process), without and with alerts, alternating session by session.
//!
//! `scripts/bench-hook.sh` builds the release binary and runs this;
//! by hand: `cargo run --release -p loopguard-hook --example hook_latency -- --bin target/release/loopguard [--runs 400]`.

use std::io::{BufRead, BufReader, Read, Write};
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

/// A receiver on 127.0.0.1 answering 200 to every POST; counts them.
fn receiver() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/alerts", listener.local_addr().unwrap());
    let count = std::sync::Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let seen = seen.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                let mut len = 0usize;
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                loop {
                    line.clear();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let l = line.trim_end();
                    if l.is_empty() {
                        break;
                    }
                    if let Some((k, v)) = l.split_once(':') {
                        if k.eq_ignore_ascii_case("content-length") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                    }
                }
                let mut body = vec![0; len];
                let _ = reader.read_exact(&mut body);
                seen.fetch_add(1, Ordering::Relaxed);
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                );
            });
        }
    });
    (url, count)
}

/// The alerts rows: warm calls and a loop's first block, without and with
/// `loopguard.alerts`, alternating.
fn alerts_rows(bin: &Path, sandbox: &Path, runs: usize, row: &dyn Fn(&str, &Stats)) {
    let (url, delivered) = receiver();
    let detection = "tools: { loopDetection: { enabled: true, warningThreshold: 3, criticalThreshold: 5, globalCircuitBreakerThreshold: 30 } }";
    let plain = sandbox.join("plain.json5");
    let alerting = sandbox.join("alerts.json5");
    std::fs::write(&plain, format!("{{ {detection} }}")).unwrap();
    std::fs::write(
        &alerting,
        format!(r#"{{ {detection}, loopguard: {{ alerts: [ {{ url: "{url}" }} ] }} }}"#),
    )
    .unwrap();
    let cmd = |db: &Path, config: &Path| {
        let mut c = hook_cmd(bin, db, sandbox);
        c.arg("--config").arg(config);
        c
    };
    let (db_plain, db_alerts) = (
        sandbox.join("a/plain.sqlite3"),
        sandbox.join("a/alerts.sqlite3"),
    );
    // Warm calls that never loop (40 files read in turn), each database with a full history.
    let session = "warm-alerts";
    for i in 0..40 {
        for (db, config) in [(&db_plain, &plain), (&db_alerts, &alerting)] {
            time_one(&mut cmd(db, config), pre(session, i).as_bytes());
            time_one(&mut cmd(db, config), post(session, i).as_bytes());
        }
    }
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for i in 40..40 + runs {
        for (db, config, out) in [
            (&db_plain, &plain, &mut without),
            (&db_alerts, &alerting, &mut with),
        ] {
            out.push(time_one(&mut cmd(db, config), pre(session, i).as_bytes()));
            out.push(time_one(&mut cmd(db, config), post(session, i).as_bytes()));
        }
    }
    let (without, with) = (stats(without), stats(with));
    row("warm, config without alerts", &without);
    row("warm, config with a webhook alert", &with);
    // A loop's first block: the same call and result until denied (the sixth call), in a
    // new session each time; only the denying invocation is timed.
    let loops = (runs / 10).max(10);
    let (mut block_without, mut block_with) = (Vec::new(), Vec::new());
    for n in 0..loops {
        for (db, config, out) in [
            (&db_plain, &plain, &mut block_without),
            (&db_alerts, &alerting, &mut block_with),
        ] {
            let session = format!("loop-{n}");
            for i in 0..5 {
                time_one(&mut cmd(db, config), pre(&session, i * 40).as_bytes());
                time_one(&mut cmd(db, config), post(&session, i * 40).as_bytes());
            }
            out.push(time_one(
                &mut cmd(db, config),
                pre(&session, 200).as_bytes(),
            ));
        }
    }
    let (block_without, block_with) = (stats(block_without), stats(block_with));
    row("a loop's first block, without alerts", &block_without);
    row("a loop's first block, alert handed off", &block_with);
    // The alerts the detached delivery processes posted.
    let start = Instant::now();
    while delivered.load(std::sync::atomic::Ordering::Relaxed) < loops
        && start.elapsed() < Duration::from_secs(30)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    println!(
        "alerts: warm p50 ratio with/without {:.3}, mean ratio {:.3}; first block p50 ratio {:.3}; {} of {loops} alerts delivered",
        with.p50.as_secs_f64() / without.p50.as_secs_f64(),
        with.mean.as_secs_f64() / without.mean.as_secs_f64(),
        block_with.p50.as_secs_f64() / block_without.p50.as_secs_f64(),
        delivered.load(std::sync::atomic::Ordering::Relaxed)
    );
}

fn main() {
    let mut bin: Option<PathBuf> = None;
    let mut runs = 300usize;
    let mut only_alerts = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--bin" => bin = args.next().map(PathBuf::from),
            "--runs" => runs = args.next().and_then(|r| r.parse().ok()).unwrap_or(runs),
            "--alerts" => only_alerts = true,
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
    let print_row = |name: &str, s: &Stats| {
        println!(
            "{:<44} {:>10} {:>10} {:>10}",
            name,
            ms(s.p50),
            ms(s.p99),
            ms(s.mean)
        );
    };
    if only_alerts {
        println!("loopguard hook latency with and without loopguard.alerts: {runs} runs each, alternating");
        println!("{:<44} {:>10} {:>10} {:>10}", "what", "p50", "p99", "mean");
        alerts_rows(&bin, sandbox.path(), runs, &print_row);
        return;
    }

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
    alerts_rows(&bin, sandbox.path(), runs, &print_row);
}
