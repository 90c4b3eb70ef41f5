//! A generated OpenClaw session transcript (v3 JSONL), for benchmarks and load tests.
//!
//! It looks like a long real session: user turns, assistant messages with `toolCall`
//! blocks, token usage and `__openclaw.runId`, `toolResult` messages with `details`,
//! occasional compactions, and stretches where the agent loops (re-reading a file,
//! polling a process that never changes).

use std::io::{self, Write};

/// Writes about `entries` transcript lines with results of about `result_bytes` bytes.
///
/// ```
/// let mut out = Vec::new();
/// loopguard_adapters::synthetic::write_openclaw(&mut out, 50, 80).unwrap();
/// let text = String::from_utf8(out).unwrap();
/// assert!(text.lines().count() >= 50);
/// assert!(text.starts_with("{\"type\":\"session\",\"version\":3"));
/// ```
pub fn write_openclaw<W: Write>(out: W, entries: u64, result_bytes: usize) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(1 << 16, out);
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut rnd = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n.max(1)
    };
    let filler = {
        let line = "test result: ok. 42 passed; 0 failed; finished in 0.12s\\n";
        let mut s = String::new();
        while s.len() < result_bytes {
            s.push_str(line);
        }
        s.truncate(result_bytes.max(2));
        while s.ends_with('\\') {
            s.pop();
        }
        s
    };
    let t0: u64 = 1_788_622_000_000;
    writeln!(
        out,
        r#"{{"type":"session","version":3,"id":"0199a4c2-7d3e-7b21-9c4e-3f0a1b2c3d4e","timestamp":"2026-09-05T15:26:13.250Z","cwd":"/home/ana/work/site"}}"#
    )?;
    let mut written = 1u64;
    let mut id = 0u64;
    let mut parent = String::from("null");
    let mut run = 0u64;
    let mut call = 0u64;
    let mut looping = 0u64;
    while written < entries {
        // A user turn starts a run.
        run += 1;
        id += 1;
        let ts = t0 + written * 1500;
        writeln!(
            out,
            r#"{{"type":"message","id":"{id:08x}","parentId":{parent},"timestamp":"2026-09-05T15:30:00.000Z","message":{{"role":"user","content":"step {run}","timestamp":{ts}}}}}"#
        )?;
        parent = format!("\"{id:08x}\"");
        written += 1;
        let turns = 3 + rnd(20);
        for _ in 0..turns {
            if written >= entries {
                break;
            }
            if looping == 0 && rnd(6) == 0 {
                looping = 10 + rnd(25);
            }
            let (tool, args, details) = if looping > 0 {
                looping -= 1;
                if run.is_multiple_of(2) {
                    (
                        "read",
                        r#"{"path":"/home/ana/work/site/ROADMAP.md"}"#.to_string(),
                        "{}".to_string(),
                    )
                } else {
                    (
                        "process",
                        r#"{"action":"poll","sessionId":"sess-7"}"#.to_string(),
                        format!(
                            r#"{{"status":"running","aggregated":"building...","pid":{}}}"#,
                            4000 + rnd(50)
                        ),
                    )
                }
            } else {
                (
                    "exec",
                    format!(
                        r#"{{"command":"grep -rn todo src/module_{}.ts"}}"#,
                        rnd(400)
                    ),
                    format!(
                        r#"{{"status":"completed","exitCode":0,"durationMs":{},"cwd":"/home/ana/work/site","aggregated":"match {}"}}"#,
                        rnd(900),
                        rnd(1_000_000)
                    ),
                )
            };
            call += 1;
            id += 1;
            let ts = t0 + written * 1500;
            writeln!(
                out,
                r#"{{"type":"message","id":"{id:08x}","parentId":{parent},"timestamp":"2026-09-05T15:30:01.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"Checking."}},{{"type":"toolCall","id":"call_{call}","name":"{tool}","arguments":{args}}}],"api":"openai-completions","provider":"deepseek","model":"deepseek-v4-flash","usage":{{"input":812,"output":41,"cacheRead":11904,"cacheWrite":0,"totalTokens":12757}},"stopReason":"toolUse","timestamp":{ts},"__openclaw":{{"runId":"run-{run:06}"}}}}}}"#
            )?;
            parent = format!("\"{id:08x}\"");
            id += 1;
            writeln!(
                out,
                r#"{{"type":"message","id":"{id:08x}","parentId":{parent},"timestamp":"2026-09-05T15:30:02.000Z","message":{{"role":"toolResult","toolCallId":"call_{call}","toolName":"{tool}","content":[{{"type":"text","text":"{filler}"}}],"details":{details},"isError":false,"timestamp":{}}}}}"#,
                ts + 700
            )?;
            parent = format!("\"{id:08x}\"");
            written += 2;
        }
        if rnd(40) == 0 {
            id += 1;
            writeln!(
                out,
                r#"{{"type":"compaction","id":"{id:08x}","parentId":{parent},"timestamp":"2026-09-05T15:33:59.909Z","summary":"Goal: keep going","firstKeptEntryId":"{id:08x}","tokensBefore":12885}}"#
            )?;
            parent = format!("\"{id:08x}\"");
            written += 1;
        }
        id += 1;
        writeln!(
            out,
            r#"{{"type":"message","id":"{id:08x}","parentId":{parent},"timestamp":"2026-09-05T15:30:03.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"Done with step {run}."}}],"usage":{{"input":900,"output":20,"totalTokens":920}},"stopReason":"stop","timestamp":{},"__openclaw":{{"runId":"run-{run:06}"}}}}}}"#,
            t0 + written * 1500
        )?;
        parent = format!("\"{id:08x}\"");
        written += 1;
    }
    out.flush()
}
