//! Writes a generated OpenClaw session transcript to stdout (for load tests).
//!
//! `cargo run --release -p loopguard-adapters --example gen_openclaw -- 1000000 200 > big.jsonl`
//! Arguments: lines (default 1000000), result text bytes (default 200).

fn main() {
    let mut args = std::env::args().skip(1);
    let mut next = |default: u64| -> u64 {
        args.next().map_or(default, |a| {
            a.parse().unwrap_or_else(|_| {
                eprintln!("usage: gen_openclaw [LINES] [RESULT_BYTES]");
                std::process::exit(2)
            })
        })
    };
    let lines = next(1_000_000);
    let bytes = next(200) as usize;
    if let Err(e) =
        loopguard_adapters::synthetic::write_openclaw(std::io::stdout().lock(), lines, bytes)
    {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
