//! Replay throughput on a large generated OpenClaw transcript: every line goes through the
//! OpenClaw adapter and every event through the replayer, as `loopguard replay` does.

// `criterion_group!` defines a public function it cannot document.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use loopguard_adapters::openclaw::OpenClawAdapter;
use loopguard_adapters::{Context, LineAdapter};
use loopguard_core::Mode;
use loopguard_core::OpenClawConfig;
use loopguard_replay::Replayer;

fn bench(c: &mut Criterion) {
    let mut transcript = Vec::new();
    loopguard_adapters::synthetic::write_openclaw(&mut transcript, 200_000, 200).unwrap();
    let lines: Vec<&[u8]> = transcript
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let config = OpenClawConfig::from_json5("{ tools: { loopDetection: { enabled: true } } }")
        .unwrap()
        .config;

    let mut group = c.benchmark_group("openclaw_transcript");
    group.sample_size(10);
    group.throughput(Throughput::Elements(lines.len() as u64));
    group.bench_function("200k_lines_adapt_and_replay", |b| {
        b.iter(|| {
            let ctx = Context {
                session: "bench".into(),
                agent: None,
            };
            let mut adapter = OpenClawAdapter::new(ctx);
            let mut replayer = Replayer::new(config.clone(), Mode::Observe);
            let mut out = Vec::new();
            let mut events = 0u64;
            for (i, line) in lines.iter().enumerate() {
                let _ = adapter.line(i as u64 + 1, line, &mut out);
                for e in out.drain(..) {
                    let d = replayer.process(&e.event, e.line);
                    events += u64::from(d.line > 0);
                }
            }
            adapter.finish(&mut out);
            events
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
