//! Writes a synthetic event stream to stdout, for benchmarks and load tests.
//!
//! ```text
//! cargo run --release -p loopguard-replay --example gen_events -- 1000000 100 > events.jsonl
//! ```
//! Arguments: number of events (default 1000000), result text bytes (default 100),
//! sessions (default 8), seed (default 42).

use loopguard_replay::synthetic::{write_stream, StreamSpec};

fn main() {
    let mut args = std::env::args().skip(1);
    let mut next = |default: u64| -> u64 {
        match args.next() {
            None => default,
            Some(a) => a.parse().unwrap_or_else(|_| {
                eprintln!("usage: gen_events [EVENTS] [RESULT_BYTES] [SESSIONS] [SEED]");
                std::process::exit(2)
            }),
        }
    };
    let spec = StreamSpec {
        events: next(1_000_000),
        result_bytes: next(100) as usize,
        sessions: next(8) as u32,
        seed: next(42),
    };
    if let Err(e) = write_stream(std::io::stdout().lock(), spec) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
