//! No input makes format detection or a reader panic: real transcripts and traces of every
//! format (the fixtures of `tests/fixtures/transcripts/`), mutated the ways damaged files
//! are (bytes flipped, the file cut, a piece duplicated, the whole nested in another
//! document, a multi-byte character put anywhere, byte 4096 among the places), go through
//! detection and then through the detected reader and one other reader chosen at random,
//! as `loopguard replay` and `--format NAME` read them. A bounded number of cases per run.

use std::io::Cursor;
use std::path::PathBuf;

use loopguard_adapters::reader::{Detected, Flow, ReadOptions, Source};
use loopguard_adapters::{Context, Format};
use proptest::prelude::*;

/// One fixture of each format (and the agents' logs, whose readers are newest).
const FILES: &[&str] = &[
    "parity/run_scoping.events.jsonl",
    "transcripts/openclaw/read-loop.jsonl",
    "transcripts/call-stream/healthy.json",
    "transcripts/claude-code/loop.jsonl",
    "transcripts/claude-code/guarded-loop.jsonl",
    "transcripts/codex/rollout-0.171-guarded-loop.jsonl",
    "transcripts/otlp/genai-file-exporter.jsonl",
    "transcripts/otlp/collector-pretty.json",
    "transcripts/otlp/phoenix-named.json",
    "transcripts/langfuse/observations-api.json",
    "transcripts/langfuse/trace-download.json",
    "transcripts/langsmith/runs.jsonl",
    "transcripts/atif/trajectory.json",
    "transcripts/openai-agents/batch.json",
    "transcripts/managed-agents/events.json",
    "transcripts/managed-agents/wrapped.jsonl",
    "transcripts/gemini/guarded-loop.jsonl",
    "transcripts/gemini-json/session-guarded-loop.json",
    "transcripts/qwen/guarded-loop.jsonl",
    "transcripts/copilot/guarded-loop.events.jsonl",
    "transcripts/factory/guarded-loop.jsonl",
    "transcripts/cline/card-architecture-1769064454592.api_conversation_history.json",
    "transcripts/cline/task-with-panel/api_conversation_history.json",
];

/// At most this much of a fixture is mutated (keeps a case fast; a cut is a mutation too).
const KEEP: usize = 48 * 1024;

fn fixture(rel: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A way a file gets damaged; positions are fractions of its length.
#[derive(Clone, Debug)]
enum Mutation {
    Flip(f64, u8),
    Cut(f64),
    Duplicate(f64, f64),
    Nest(u8),
    Char(f64, char),
    CharAt4096(char),
}

fn at(len: usize, f: f64) -> usize {
    ((len as f64) * f) as usize % (len + 1)
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let len = bytes.len();
    match m {
        Mutation::Flip(p, x) if len > 0 => {
            let i = at(len - 1, *p);
            bytes[i] ^= x | 1;
        }
        Mutation::Flip(..) => {}
        Mutation::Cut(p) => bytes.truncate(at(len, *p)),
        Mutation::Duplicate(a, b) => {
            let (a, b) = (at(len, *a), at(len, *b));
            let (a, b) = (a.min(b), a.max(b));
            let piece = bytes[a..b].to_vec();
            bytes.splice(b..b, piece);
        }
        Mutation::Nest(k) => {
            let (open, close): (&[u8], &[u8]) = match k % 4 {
                0 => (b"[", b"]"),
                1 => (b"{\"data\":[", b"]}"),
                2 => (b"{\"raw\":", b",\"kind\":\"x\"}"),
                _ => (b"{\"$set\":{\"messages\":[", b"]}}"),
            };
            bytes.splice(0..0, open.iter().copied());
            bytes.extend_from_slice(close);
        }
        Mutation::Char(p, c) => {
            let mut buf = [0; 4];
            let s = c.encode_utf8(&mut buf);
            let i = at(len, *p);
            bytes.splice(i..i, s.bytes());
        }
        Mutation::CharAt4096(c) => {
            let mut buf = [0; 4];
            let s = c.encode_utf8(&mut buf);
            let i = 4095.min(len);
            bytes.splice(i..i, s.bytes());
        }
    }
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let frac = 0.0..1.0f64;
    let wide = prop_oneof![
        Just('é'),
        Just('€'),
        Just('𝄞'),
        Just('\u{FEFF}'),
        Just('\n')
    ];
    prop_oneof![
        (frac.clone(), any::<u8>()).prop_map(|(p, x)| Mutation::Flip(p, x)),
        frac.clone().prop_map(Mutation::Cut),
        (frac.clone(), frac.clone()).prop_map(|(a, b)| Mutation::Duplicate(a, b)),
        any::<u8>().prop_map(Mutation::Nest),
        (frac, wide.clone()).prop_map(|(p, c)| Mutation::Char(p, c)),
        wide.prop_map(Mutation::CharAt4096),
    ]
}

/// Reads `bytes` as `format` to the end, returning the items read; errors are answers,
/// panics are failures.
fn read_as(bytes: &[u8], format: Format) -> u64 {
    let source = Source::from_reader("fuzz", Cursor::new(bytes.to_vec()));
    let mut items = 0u64;
    let _ = source.read(
        format,
        &Context::default(),
        &ReadOptions::default(),
        &mut |_| {
            items += 1;
            Flow::Continue
        },
    );
    items
}

/// The harness reads: every fixture, unharmed, is recognised and gives events.
#[test]
fn every_fixture_unharmed_is_detected_and_read() {
    for rel in FILES {
        let bytes = fixture(rel);
        let mut source = Source::from_reader("fuzz", Cursor::new(bytes.clone()));
        let Ok(Detected::Format(f)) = source.detect() else {
            panic!("{rel}: not recognised");
        };
        assert!(read_as(&bytes, f) > 0, "{rel}: nothing read as {f}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn no_mutated_file_panics_detection_or_a_reader(
        file in 0..FILES.len(),
        mutations in prop::collection::vec(mutation(), 1..4),
        other in 0..Format::ALL.len(),
    ) {
        let mut bytes = fixture(FILES[file]);
        bytes.truncate(KEEP);
        for m in &mutations {
            apply(&mut bytes, m);
        }
        let _ = loopguard_adapters::detect("fuzz.json", &bytes);
        let mut source = Source::from_reader("fuzz", Cursor::new(bytes.clone()));
        if let Ok(Detected::Format(f)) = source.detect() {
            let _ = read_as(&bytes, f);
        }
        let forced = Format::ALL[other];
        if forced != Format::OpenClawSqlite {
            let _ = read_as(&bytes, forced);
        }
    }

    /// A Cline task's panel log, mutated, read beside its history (and, refused, alone):
    /// no panic.
    #[test]
    fn no_mutated_panel_log_panics_the_cline_reader(
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let history = fixture("transcripts/cline/task-with-panel/api_conversation_history.json");
        let mut panel = fixture("transcripts/cline/task-with-panel/ui_messages.json");
        for m in &mutations {
            apply(&mut panel, m);
        }
        let ctx = Context::default();
        let _ = loopguard_adapters::cline::adapt_task(&history, Some(&panel), &ctx);
        let _ = loopguard_adapters::cline::adapt_task(&panel, None, &ctx);
    }

    /// opencode's parts, as its database reader hands them to the part reader (each part
    /// with its message, one record a line), mutated: no panic.
    #[test]
    fn no_mutated_opencode_part_panics_its_reader(
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let mut bytes = opencode_records();
        for m in &mutations {
            apply(&mut bytes, m);
        }
        let mut adapter = loopguard_adapters::opencode::OpencodeAdapter::new(Context::default());
        let mut out = Vec::new();
        for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
            let _ = loopguard_adapters::LineAdapter::line(&mut adapter, i as u64 + 1, line, &mut out);
        }
        let _ = loopguard_adapters::LineAdapter::finish(&mut adapter, &mut out);
    }
}

/// The parts of the opencode fixture database with their messages, one
/// `{"message": …, "part": …}` record a line, as the database reader builds them.
fn opencode_records() -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/transcripts/opencode/loop-1.18.33.db");
    let conn =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT m.data, p.data FROM part p JOIN message m ON p.message_id = m.id \
             ORDER BY m.time_created, p.id",
        )
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap();
    let mut out = Vec::new();
    for row in rows {
        let (m, p) = row.unwrap();
        out.extend_from_slice(format!(r#"{{"message":{m},"part":{p}}}"#).as_bytes());
        out.push(b'\n');
    }
    out
}
