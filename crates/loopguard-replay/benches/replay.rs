//! Replay throughput on generated streams (see `loopguard_replay::synthetic`).
//!
//! * `replay/1M_events_100B_results`: one million events with ~100-byte results, the shape of
//!   ordinary agent traffic; reported in events per second.
//! * `replay/100KB_results`: 2 000 events with ~100 KB results; reported in bytes per second,
//!   next to `sha256/100KB_results`, SHA-256 over the same bytes measured in the same run (the
//!   floor: every result byte is hashed once).
//!
//! Streams are generated in memory once; decisions are written to a sink.

// `criterion_group!` defines a public function it cannot document.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use loopguard_core::Mode;
use loopguard_core::OpenClawConfig;
use loopguard_replay::synthetic::{write_stream, StreamSpec};
use loopguard_replay::{replay, Output, Replayer};
use sha2::{Digest, Sha256};

fn config() -> OpenClawConfig {
    OpenClawConfig::from_json5("{ tools: { loopDetection: { enabled: true } } }")
        .unwrap()
        .config
}

fn stream(events: u64, result_bytes: usize) -> Vec<u8> {
    let mut out = Vec::new();
    write_stream(
        &mut out,
        StreamSpec {
            events,
            result_bytes,
            ..StreamSpec::default()
        },
    )
    .unwrap();
    out
}

fn bench_replay(c: &mut Criterion) {
    let mut group = c.benchmark_group("replay");
    group.sample_size(10);

    let small = stream(1_000_000, 100);
    group.throughput(Throughput::Elements(1_000_000));
    group.bench_function("1M_events_100B_results", |b| {
        b.iter(|| {
            let mut r = Replayer::new(config(), Mode::Enforce);
            replay(&small[..], std::io::sink(), &mut r, Output::Json).unwrap()
        })
    });
    drop(small);

    let big = stream(2_000, 100_000);
    group.throughput(Throughput::Bytes(big.len() as u64));
    group.bench_function("100KB_results", |b| {
        b.iter(|| {
            let mut r = Replayer::new(config(), Mode::Enforce);
            replay(&big[..], std::io::sink(), &mut r, Output::Json).unwrap()
        })
    });
    group.bench_function("sha256_same_bytes_baseline", |b| {
        b.iter(|| Sha256::digest(&big[..]))
    });
    group.finish();
}

criterion_group!(benches, bench_replay);
criterion_main!(benches);
