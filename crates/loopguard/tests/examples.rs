//! The examples of `examples/` run, and print what they teach: the 11th identical call
//! warned, the 21st refused. The shell scripts run with the binary cargo built for these
//! tests (passed as `LOOPGUARD`); the OpenTelemetry example in `target/otel-venv`
//! (`scripts/setup-otel.sh`). The Rust example is tested in its own crate
//! (`examples/rust-embedding/tests`), the Python one by `scripts/test-python.sh`
//! (`bindings/python/tests/test_examples.py`), the TypeScript one by `scripts/test-node.sh`
//! (`bindings/node/test/examples.test.mjs`). `examples/README.md` lists every example.

mod common;

use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn examples() -> PathBuf {
    common::root().join("examples")
}

/// Runs `program args` in the repository root with the binary under test as `LOOPGUARD`,
/// in a process group of its own that is killed after two minutes at the most; asserts it
/// succeeded and returns its standard output.
fn run(program: &str, args: &[&str]) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let (out_path, err_path) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = Command::new(program)
        .args(args)
        .current_dir(common::root())
        .env("LOOPGUARD", common::bin())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"))
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if start.elapsed() > Duration::from_secs(120) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |p: &PathBuf| std::fs::read_to_string(p).unwrap_or_default();
    let (stdout, stderr) = (read(&out_path), read(&err_path));
    let Some(status) = status else {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", child.id())])
            .status();
        let _ = child.wait();
        panic!("{program} {args:?} ran over two minutes:\n{stdout}{stderr}");
    };
    assert!(
        status.success(),
        "{program} {args:?}: {status}\n{stdout}{stderr}"
    );
    stdout
}

/// The server an example started (the `listening on http://ADDR` line it printed) is gone.
fn assert_stopped(stdout: &str) {
    let addr = stdout
        .split("listening on http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no listening address in:\n{stdout}"));
    assert!(
        TcpStream::connect(addr).is_err(),
        "the server at {addr} still answers after the example ended"
    );
}

#[test]
fn serve_curl_warns_at_11_and_blocks_at_21() {
    let script = examples().join("serve-curl/session.sh");
    let stdout = run("bash", &[script.to_str().unwrap()]);
    let calls: Vec<&str> = stdout.lines().filter(|l| l.starts_with("call ")).collect();
    assert_eq!(calls.len(), 21, "{stdout}");
    for (i, line) in calls.iter().enumerate() {
        let n = i + 1;
        match n {
            1..=10 => assert_eq!(*line, format!("call {n}: allow")),
            11 => {
                assert!(line.starts_with("call 11: {\"type\":\"call\""), "{line}");
                for part in [
                    r#""callId":"call-11""#,
                    r#""decision":"warn","detector":"generic_repeat","level":"warning","count":10"#,
                    r#""message":"WARNING: You have called read 10 times with identical arguments."#,
                    r#""emitted":true"#,
                ] {
                    assert!(line.contains(part), "{part} not in {line}");
                }
            }
            12..=20 => assert_eq!(*line, format!("call {n}: warn")),
            _ => {
                for part in [
                    r#""callId":"call-21""#,
                    r#""decision":"block","detector":"generic_repeat","level":"critical","count":20"#,
                    r#""message":"CRITICAL: Called read with identical arguments and identical outcomes 20 times. Session execution blocked to prevent runaway loops.""#,
                ] {
                    assert!(line.contains(part), "{part} not in {line}");
                }
            }
        }
    }
    assert!(
        stdout.contains(
            r#"{"session":"demo","calls":21,"outcomes":20,"warnings":10,"blocks":1,"aborts":0,"#
        ),
        "{stdout}"
    );
    assert_stopped(&stdout);
}

#[test]
fn hook_install_denies_the_21st_identical_call() {
    let script = examples().join("hook-install/install.sh");
    let stdout = run("bash", &[script.to_str().unwrap()]);
    let lines: Vec<&str> = stdout.lines().collect();
    // Installed into the script's throwaway home, never the user's.
    let installed = lines[0]
        .strip_prefix("loopguard's Claude Code hooks installed in ")
        .and_then(|rest| rest.strip_suffix("/.claude/settings.json (new file)"))
        .unwrap_or_else(|| panic!("{stdout}"));
    let home = std::env::var("HOME").unwrap_or_default();
    assert!(installed != home && !home.is_empty(), "{stdout}");
    // The command registered is the binary that installed it.
    let exe = std::fs::canonicalize(common::bin()).expect("the binary");
    assert!(
        stdout.contains(&format!(
            "settings.json runs: {} hook claude-code\n",
            exe.display()
        )),
        "{stdout}"
    );
    let calls: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("call "))
        .collect();
    assert_eq!(calls.len(), 21, "{stdout}");
    for (i, line) in calls.iter().enumerate() {
        let n = i + 1;
        let expected = match n {
            11 => r#"call 11: {"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"loopguard: WARNING: You have called Bash 10 times with identical arguments. If this is not making progress, stop retrying and report the task as failed."}}"#.to_string(),
            21 => r#"call 21: {"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"CRITICAL: Called Bash with identical arguments and identical outcomes 20 times. Session execution blocked to prevent runaway loops."},"systemMessage":"loopguard blocked Bash: generic_repeat (count 20)"}"#.to_string(),
            _ => format!("call {n}: (no answer: the call runs)"),
        };
        assert_eq!(*line, expected, "{stdout}");
    }
    assert!(
        lines.last().is_some_and(|l| l.starts_with(&format!(
            "loopguard's Claude Code hooks removed: loopguard had created {installed}/.claude/settings.json"
        ))),
        "{stdout}"
    );
    assert!(
        !std::path::Path::new(installed).exists(),
        "{installed} left behind"
    );
}

/// The Python of `scripts/setup-otel.sh`'s venv (or `$LOOPGUARD_OTEL_VENV`), as `otel.rs`
/// finds it; fails the test, naming the script, when the SDK is not there.
fn otel_python() -> PathBuf {
    let venv = std::env::var_os("LOOPGUARD_OTEL_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::root().join("target/otel-venv"));
    let py = venv.join("bin/python");
    let ok = Command::new(&py)
        .args([
            "-c",
            "import opentelemetry.sdk.trace, opentelemetry.exporter.otlp.proto.http.trace_exporter",
        ])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "the OpenTelemetry SDK is not installed at {}: run scripts/setup-otel.sh first",
        venv.display()
    );
    py
}

#[test]
fn otel_agent_is_judged_by_serve() {
    let py = otel_python();
    let script = examples().join("otel-agent/agent.py");
    let stdout = run(py.to_str().unwrap(), &[script.to_str().unwrap()]);
    let session = stdout
        .lines()
        .find(|l| l.starts_with("session "))
        .unwrap_or_else(|| panic!("{stdout}"));
    // Observe mode: all 25 calls ran; calls 11-20 warned, 21-25 would be blocked.
    assert!(
        session.ends_with(": 25 calls, 25 outcomes, 10 warnings, 5 blocks"),
        "{stdout}"
    );
    let calls: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("  call-"))
        .collect();
    let expected: Vec<String> = (16..=25)
        .map(|n| {
            let word = if n <= 20 { "would-warn" } else { "would-block" };
            format!("  call-{n}: {word} (generic_repeat, count {})", n - 1)
        })
        .collect();
    assert_eq!(calls, expected, "{stdout}");
    assert!(
        stdout.contains("  the last message: CRITICAL: Called read_file with identical arguments and identical outcomes 24 times. Session execution blocked to prevent runaway loops.\n"),
        "{stdout}"
    );
    assert_stopped(&stdout);
}

/// `examples/README.md` links every entry of the folder and nothing else, and each example's
/// "run it" command is the one its header comment gives.
#[test]
fn the_readme_lists_every_example_and_nothing_else() {
    let dir = examples();
    let readme = std::fs::read_to_string(dir.join("README.md")).expect("examples/README.md");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .expect("examples/")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name != "README.md")
        .collect();
    on_disk.sort();
    let mut listed = Vec::new();
    for row in readme.lines().filter(|l| l.starts_with("| [`")) {
        let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
        let target = cells[0]
            .split("](")
            .nth(1)
            .and_then(|rest| rest.strip_suffix(')'))
            .unwrap_or_else(|| panic!("no link in the first cell of: {row}"));
        let path = dir.join(target);
        assert!(path.is_file(), "{row}: {} does not exist", path.display());
        let entry = target.split('/').next().unwrap_or(target);
        assert!(
            cells[0].starts_with(&format!("[`{entry}`]")),
            "{row}: the link text is not the entry's name"
        );
        listed.push(entry.to_string());
        if dir.join(entry).is_dir() {
            // An example: its command, verbatim in the header of the file it links.
            let command = cells
                .last()
                .and_then(|c| c.trim().strip_prefix('`'))
                .and_then(|c| c.strip_suffix('`'))
                .unwrap_or_else(|| panic!("{row}: no command in the last cell"));
            let text = std::fs::read_to_string(&path).expect("the example");
            assert!(
                text.contains(&format!("{command}`")) || text.contains(&format!("{command}\n")),
                "{row}: `{command}` is not in {}",
                path.display()
            );
        }
    }
    listed.sort();
    assert_eq!(listed, on_disk, "examples/README.md against the folder");
}
