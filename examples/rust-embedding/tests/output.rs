//! Runs the example's binary and checks what it printed: calls 1-10 run, the 11th runs with
//! the warning, calls 12-20 run (the warning is not repeated), 21-25 are refused.

use std::process::Command;

#[test]
fn warns_at_the_11th_call_and_refuses_from_the_21st() {
    let out = Command::new(env!("CARGO_BIN_EXE_example-rust-embedding"))
        .output()
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 25, "{stdout}");
    for (i, line) in lines.iter().enumerate() {
        let n = i + 1;
        let expected = match n {
            1..=10 => format!("call {n}: runs"),
            11 => "call 11: runs, warned: \"WARNING: You have called read 10 times with identical arguments. If this is not making progress, stop retrying and report the task as failed.\"".to_string(),
            12..=20 => format!("call {n}: runs (warned before)"),
            _ => format!("call {n}: refused: \"CRITICAL: Called read with identical arguments and identical outcomes 20 times. Session execution blocked to prevent runaway loops.\""),
        };
        assert_eq!(*line, expected, "line {n} of:\n{stdout}");
    }
}
