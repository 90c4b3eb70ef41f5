//! End-to-end tests of `loopguard config check` through the real binary.

use std::path::PathBuf;
use std::process::{Command, Output};

struct TempConfig(PathBuf);

impl TempConfig {
    fn new(name: &str, contents: &str) -> Self {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "loopguard-config-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, contents).unwrap();
        TempConfig(path)
    }
    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempConfig {
    fn drop(&mut self) {
        if let Some(d) = self.0.parent() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

fn check(args: &[&str]) -> (Output, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .arg("config")
        .arg("check")
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    let stderr = String::from_utf8(out.stderr.clone()).unwrap();
    (out, stdout, stderr)
}

#[test]
fn shipped_example_is_clean_and_shows_each_agent() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/openclaw.json5");
    let (out, stdout, stderr) = check(&[example]);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("global (tools.loopDetection"), "{stdout}");
    assert!(stdout.contains("agent \"safe-runner\""), "{stdout}");
    assert!(stdout.contains("warningThreshold: 8  (agent)"), "{stdout}");
    // The one warning: safe-runner's warnings at counts 8 and 9 never reach the model.
    assert!(
        stderr.contains("warning: agent \"safe-runner\" (agents.list[0]): warningThreshold 8: warnings at counts below 10 are never shown to the model"),
        "{stderr}"
    );
    assert!(stderr.contains("ok, 1 warning(s)"), "{stderr}");
    let (out, _, stderr) = check(&[example, "--strict"]);
    assert!(!out.status.success(), "{stderr}");
}

#[test]
fn thresholds_that_hide_every_warning_are_reported() {
    let cfg = TempConfig::new(
        "c.json5",
        "{ tools: { loopDetection: { enabled: true, warningThreshold: 3, criticalThreshold: 6 } } }",
    );
    let (out, _, stderr) = check(&[cfg.path()]);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("warningThreshold 3: warnings at counts below 10 are never shown to the model")
            && stderr.contains("with criticalThreshold 6, a loop with identical outcomes is blocked before the model has seen any warning"),
        "{stderr}"
    );
    let off = TempConfig::new(
        "off.json5",
        "{ tools: { loopDetection: { historySize: 40 } } }",
    );
    let (_, _, stderr) = check(&[off.path()]);
    assert!(
        stderr.contains("enabled is not true: the rolling-history detectors are off"),
        "{stderr}"
    );
}

#[test]
fn errors_name_file_line_and_key_path_and_fail() {
    let cfg = TempConfig::new(
        "openclaw.json5",
        "{\n  // my config\n  tools: {\n    loopDetection: {\n      enabled: 'yes',\n      historySize: 0,\n      warningThresold: 5,\n      detectors: { pingPong: false, genericRepeats: true },\n    },\n  },\n}\n",
    );
    let (out, _stdout, stderr) = check(&[cfg.path()]);
    assert!(!out.status.success());
    let p = cfg.path();
    assert!(
        stderr.contains(&format!(
            "{p}:5:7: error: tools.loopDetection.enabled: expected a boolean"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "{p}:6:7: error: tools.loopDetection.historySize: must be a positive integer, found 0"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "{p}:6:7: warning: tools.loopDetection.historySize"
        )) && stderr.contains("default 30 is used"),
        "{stderr}"
    );
    assert!(
        stderr.contains("tools.loopDetection.warningThresold: unknown key")
            && stderr.contains("did you mean `warningThreshold`"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "{p}:8:37: error: tools.loopDetection.detectors.genericRepeats"
        )),
        "{stderr}"
    );
}

#[test]
fn auto_raise_is_a_warning_unless_strict() {
    let cfg = TempConfig::new(
        "c.json",
        r#"{"tools":{"loopDetection":{"enabled":true,"warningThreshold":25}},
            "agents":{"list":[{"id":"Alpha","tools":{"loopDetection":{"criticalThreshold":35}}}]}}"#,
    );
    let (out, stdout, stderr) = check(&[cfg.path()]);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: tools.loopDetection.criticalThreshold"),
        "{stderr}"
    );
    assert!(stderr.contains("raised to 26"), "{stderr}");
    assert!(
        stdout.contains("criticalThreshold: 26  (raised from default 20)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("globalCircuitBreakerThreshold: 36"),
        "{stdout}"
    );

    let (strict, _, stderr) = check(&[cfg.path(), "--strict"]);
    assert!(!strict.status.success());
    assert!(stderr.contains("error (strict)"), "{stderr}");
}

#[test]
fn agent_filter_matches_trimmed_case_insensitive_ids() {
    let cfg = TempConfig::new(
        "c.json5",
        "{ tools: { loopDetection: { enabled: true } }, agents: { list: [ { id: 'Safe-Runner', tools: { loopDetection: { enabled: false } } } ] } }",
    );
    let (out, stdout, _) = check(&[cfg.path(), "--agent", " safe-runner "]);
    assert!(out.status.success());
    assert!(
        stdout.contains("agent \"Safe-Runner\" (agents.list[0])"),
        "{stdout}"
    );
    assert!(
        stdout.contains("postCompactionGuard: off (enabled: false)"),
        "{stdout}"
    );
    let (_, stdout, _) = check(&[cfg.path(), "--agent", "nobody"]);
    assert!(
        stdout.contains("no agents.list entry: the global block applies"),
        "{stdout}"
    );
}

#[test]
fn syntax_errors_and_missing_files_fail_cleanly() {
    let cfg = TempConfig::new(
        "bad.json5",
        "{\n  tools: {\n    loopDetection: { enabled: true,, }\n  }\n}\n",
    );
    let (out, _, stderr) = check(&[cfg.path()]);
    assert!(!out.status.success());
    assert!(stderr.contains("syntax error at line 3"), "{stderr}");
    let (out, _, stderr) = check(&["/nonexistent/openclaw.json"]);
    assert!(!out.status.success());
    assert!(
        stderr.contains("cannot read /nonexistent/openclaw.json"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"));
}

#[test]
fn the_summary_explains_values_that_fell_back_or_saturate() {
    let cfg = TempConfig::new(
        "odd.json5",
        "{ tools: { loopDetection: { enabled: true, historySize: 1e300,\n warningThreshold: 25, criticalThreshold: 'high', unknownToolThreshold: NaN,\n postCompactionGuard: { windowSize: true } } } }",
    );
    let (out, stdout, stderr) = check(&[cfg.path()]);
    assert!(!out.status.success(), "wrong types are errors: {stderr}");
    // A wrong type is not shown as some number: it is named, with what applies instead.
    assert!(
        stdout.contains(
            "criticalThreshold: 26  (global: not a number; default 20 used, raised to 26)"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("unknownToolThreshold: 10  (global: not a number; default used)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("windowSize=3 (global: not a number; default used)"),
        "{stdout}"
    );
    // A size beyond the machine's integers is shown as written, not as 2^64 - 1.
    assert!(
        stdout.contains("historySize: 1e+300  (global; beyond anything a session reaches"),
        "{stdout}"
    );
    assert!(stderr.contains("odd.json5:2:"), "{stderr}");
}
