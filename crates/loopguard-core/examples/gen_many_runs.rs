//! Writes one session of many short runs as an event stream (events.md) to stdout: the
//! workload that shows whether a session's state grows with the number of runs it has seen.
//!
//! ```text
//! cargo run --release -p loopguard-core --example gen_many_runs -- 200000 > runs.jsonl
//! /usr/bin/time -v target/release/loopguard replay --json runs.jsonl > /dev/null
//! ```
//!
//! Arguments: number of runs (default 200000), calls per run (default 1). Every run calls
//! `read` on its own file and gets a result; every tenth run also compacts its context, so
//! the post-compaction guards of finished runs hold a window, as they would in real use.

use std::io::{self, BufWriter, Write};

fn main() -> io::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut next = |default: u64| -> u64 {
        match args.next() {
            None => default,
            Some(a) => a.parse().unwrap_or_else(|_| {
                eprintln!("usage: gen_many_runs [RUNS] [CALLS_PER_RUN]");
                std::process::exit(2)
            }),
        }
    };
    let runs = next(200_000);
    let calls = next(1);
    let mut out = BufWriter::new(io::stdout().lock());
    let result = write(&mut out, runs, calls).and_then(|()| out.flush());
    match result {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

fn write(out: &mut impl Write, runs: u64, calls: u64) -> io::Result<()> {
    for run in 0..runs {
        if run % 10 == 0 {
            writeln!(
                out,
                r#"{{"type":"compaction","session":"agent:main:main","run":"run-{run}"}}"#
            )?;
        }
        for call in 0..calls {
            let id = format!("call-{run}-{call}");
            writeln!(
                out,
                r#"{{"type":"call","session":"agent:main:main","run":"run-{run}","callId":"{id}","tool":"read","args":{{"path":"/work/file-{run}.txt"}}}}"#
            )?;
            writeln!(
                out,
                r#"{{"type":"outcome","session":"agent:main:main","run":"run-{run}","callId":"{id}","tool":"read","args":{{"path":"/work/file-{run}.txt"}},"result":{{"content":[{{"type":"text","text":"contents of file {run}"}}]}}}}"#
            )?;
        }
    }
    Ok(())
}
