//! Synthetic event streams for benchmarks and load tests.
//!
//! The streams look like real agent traffic: several sessions interleaved, each alternating
//! between healthy work (reading different files, running commands) and stretches of
//! looping (polling a process that never changes, re-reading the same file), so the
//! detectors see warnings and blocks as well as plain calls. Every call is followed by its
//! outcome. Result texts are multi-line, so they carry JSON escapes as real ones do.

use std::io::{self, Write};

/// The shape of a generated stream.
#[derive(Clone, Copy, Debug)]
pub struct StreamSpec {
    /// Number of events (calls and outcomes together).
    pub events: u64,
    /// Approximate size of each result's text, in bytes.
    pub result_bytes: usize,
    /// Number of interleaved sessions.
    pub sessions: u32,
    /// Seed of the deterministic pseudo-random choices.
    pub seed: u64,
}

impl Default for StreamSpec {
    fn default() -> Self {
        StreamSpec {
            events: 1_000_000,
            result_bytes: 100,
            sessions: 8,
            seed: 42,
        }
    }
}

/// A small xorshift generator: deterministic streams without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Writes a stream of `spec.events` events as JSON Lines.
///
/// ```
/// use loopguard_replay::synthetic::{write_stream, StreamSpec};
/// let mut out = Vec::new();
/// write_stream(&mut out, StreamSpec { events: 10, result_bytes: 50, sessions: 2, seed: 1 }).unwrap();
/// assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 10);
/// ```
pub fn write_stream<W: Write>(out: W, spec: StreamSpec) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(1 << 16, out);
    let mut rng = Rng(spec.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let filler = text_block(spec.result_bytes);
    let sessions = spec.sessions.max(1) as u64;
    // Per session: remaining calls of the current "phase" and which phase.
    let mut phase = vec![(0u64, 0u64); sessions as usize];
    let mut call_no = vec![0u64; sessions as usize];
    let mut written = 0;
    while written < spec.events {
        let s = rng.below(sessions) as usize;
        if phase[s].0 == 0 {
            phase[s] = (5 + rng.below(40), rng.below(4));
        }
        phase[s].0 -= 1;
        let n = call_no[s];
        call_no[s] += 1;
        let run = n / 400;
        let (tool, args, result) = match phase[s].1 {
            // Healthy: different files.
            0 => (
                "read",
                format!(r#"{{"path":"/repo/src/module_{}.rs"}}"#, rng.below(5000)),
                format!(
                    r#"{{"content":[{{"type":"text","text":"{filler} #{}"}}],"details":{{"bytes":{}}}}}"#,
                    rng.next(),
                    spec.result_bytes
                ),
            ),
            // Polling a process that never changes.
            1 => (
                "process",
                format!(r#"{{"action":"poll","sessionId":"sess-{s}"}}"#),
                format!(
                    r#"{{"content":[{{"type":"text","text":"{filler}"}}],"details":{{"status":"running","aggregated":"building...","pid":{}}}}}"#,
                    1000 + rng.below(100)
                ),
            ),
            // Re-reading the same file with the same answer.
            2 => (
                "read",
                r#"{"path":"/repo/README.md"}"#.to_string(),
                format!(r#"{{"content":[{{"type":"text","text":"{filler}"}}]}}"#),
            ),
            // Commands with volatile metadata.
            _ => (
                "exec",
                format!(r#"{{"command":"cargo test -p crate_{}"}}"#, rng.below(20)),
                format!(
                    r#"{{"content":[{{"type":"text","text":"{filler}"}}],"details":{{"status":"completed","exitCode":0,"durationMs":{},"cwd":"/repo","aggregated":"ok {}"}}}}"#,
                    rng.below(90_000),
                    rng.below(3)
                ),
            ),
        };
        writeln!(
            out,
            r#"{{"type":"call","session":"agent:main:s{s}","run":"run-{run}","callId":"c{n}","tool":"{tool}","args":{args}}}"#
        )?;
        written += 1;
        if written < spec.events {
            writeln!(
                out,
                r#"{{"type":"outcome","session":"agent:main:s{s}","run":"run-{run}","callId":"c{n}","tool":"{tool}","args":{args},"result":{result}}}"#
            )?;
            written += 1;
        }
    }
    out.flush()
}

/// A JSON-escaped, multi-line text body of about `bytes` bytes.
fn text_block(bytes: usize) -> String {
    const LINE: &str = "test result: ok. 42 passed; 0 failed; finished in 0.12s\\n";
    let mut s = String::with_capacity(bytes + LINE.len());
    while s.len() < bytes {
        s.push_str(LINE);
    }
    s.truncate(bytes.max(2));
    while s.ends_with('\\') {
        s.pop();
    }
    s
}
