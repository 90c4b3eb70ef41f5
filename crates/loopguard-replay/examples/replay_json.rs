//! Replays inputs as `loopguard replay --config CONFIG --json` does and writes the decision
//! lines to stdout: the replay hot path without the command line around it, for profiling
//! (`valgrind --tool=callgrind`, `perf record`).
//!
//! ```text
//! cargo build --release -p loopguard-replay --example gen_events
//! target/release/examples/gen_events 200000 100 > small.jsonl
//! cargo rustc --release -p loopguard-replay --example replay_json -- -C strip=none
//! valgrind --tool=callgrind target/release/examples/replay_json examples/openclaw.json5 small.jsonl > /dev/null
//! ```
//!
//! `PARSE_AHEAD=1` parses on worker threads whatever the input, `PARSE_AHEAD=0` on the
//! engine's thread ([`ReplayOptions::parse_ahead`]); `PARSE_THREADS=N` sets the workers.

use std::io::{self, Write};
use std::path::PathBuf;

use loopguard_core::OpenClawConfig;
use loopguard_replay::summary::{EventMeta, Observed};
use loopguard_replay::{Decision, Observer, Plan, ReplayOptions, Source};

/// The allocator of the `loopguard` binary, so profiles match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Writes every decision as a JSON line.
struct Json<W: Write> {
    out: W,
    buf: Vec<u8>,
}

impl<W: Write> Observer for Json<W> {
    fn decision(
        &mut self,
        _source: &Source,
        d: &Decision<'_>,
        _meta: &EventMeta<'_>,
        _at: Observed,
    ) -> io::Result<()> {
        self.buf.clear();
        d.write_json(&mut self.buf);
        self.out.write_all(&self.buf)
    }

    fn wants_args(&self) -> bool {
        false
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let config = args.next().ok_or("usage: replay_json CONFIG INPUT...")?;
    let text = std::fs::read_to_string(&config)?;
    let config = OpenClawConfig::load_for_run(&text)
        .map_err(|e| format!("{}: {e:?}", PathBuf::from(&config).display()))?
        .config;
    let inputs: Vec<PathBuf> = args.map(PathBuf::from).collect();
    // `PARSE_AHEAD=1` / `PARSE_AHEAD=0`: parse on worker threads or on this one, whatever
    // the input (unset: as `loopguard replay` decides); `PARSE_THREADS=N` workers.
    let mut options = ReplayOptions::new().config(config);
    if let Some(v) = std::env::var_os("PARSE_AHEAD") {
        options = options.parse_ahead(v != "0");
    }
    if let Some(v) = std::env::var_os("PARSE_THREADS") {
        let n = v.to_str().and_then(|v| v.parse().ok());
        options = options.parse_threads(n.ok_or("PARSE_THREADS: not a number")?);
    }
    let plan = Plan::new(&inputs, options)?;
    let mut json = Json {
        out: io::BufWriter::with_capacity(1 << 16, io::stdout().lock()),
        buf: Vec::with_capacity(1024),
    };
    let report = plan.run(&mut json)?;
    json.out.flush()?;
    eprintln!("{} events", report.summary.events);
    Ok(())
}
