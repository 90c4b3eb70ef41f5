//! The test scenarios of section (g) of `openclaw-behavior.md`, for target R (Era B config
//! surface + Era C hashing and veto rules), written against the public API only.
//!
//! Notation (as in the spec):
//! * `R(tool, params, result, i)`: `record_call` with call id `"{tool}-{i}"`, then
//!   `record_outcome` with the same id and the result;
//! * `F(tool, params, error, i)`: the same with an error;
//! * `P(tool, params, id)`: `record_call` only;
//! * `D(tool, params, cfg, scope?)`: `detect`.
//!
//! Scenarios 80-90 go through the wrapper-level `before_call` / `after_call`, where a blocked
//! call writes no record (decisions.md item 10).
//!
//! Skipped: 35 (Era A only) and 92-95 (Era D only).

use loopguard_core::veto_result;
use loopguard_core::CompactionGuard;
use loopguard_core::{hashing::args_digest, hashing::args_hash};
use loopguard_core::{hashing::digest_value, json::to_canonical_string};
use loopguard_core::{hashing::hash_outcome, hashing::ResultHash, Hashing, Outcome};
use loopguard_core::{
    unknown_tool_guard_threshold, DetectorSwitches, DiagnosticKind, GuardSettings,
    PostCompactionGuardConfig, Severity,
};
use loopguard_core::{
    Call, Detection, Detector, Level, LoopDetectionConfig, OpenClawConfig, Policy, Session, Value,
    Verdict,
};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// Parses JSON into an owned value.
fn json(text: &str) -> Value<'static> {
    Value::parse(text.as_bytes())
        .unwrap_or_else(|e| panic!("bad JSON in test: {e}: {text}"))
        .into_owned()
}

/// Escapes a Rust string for embedding inside a JSON string literal.
fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// `{content:[{type:"text", text}]}`.
fn text_result(text: &str) -> Value<'static> {
    json(&format!(
        r#"{{"content":[{{"type":"text","text":"{}"}}]}}"#,
        esc(text)
    ))
}

/// `{content:[{type:"text", text}], details}` with `details` given as JSON.
fn result_with(text: &str, details_json: &str) -> Value<'static> {
    json(&format!(
        r#"{{"content":[{{"type":"text","text":"{}"}}],"details":{details_json}}}"#,
        esc(text)
    ))
}

/// A send result: the payload as pretty JSON text plus the payload as details.
fn send_result(payload_json: &str) -> Value<'static> {
    let pretty = payload_json.replace(',', ",\n  ");
    result_with(&pretty, payload_json)
}

/// `sendPayload(i)`.
fn send_payload(i: usize) -> String {
    format!(
        r#"{{"ok":true,"channel":"feishu","chatId":"oc_chat","runId":"run_{i}","messageId":"om_{i}","receipt":{{"platformMessageId":"p_{i}"}}}}"#
    )
}

fn enabled_with(cfg: LoopDetectionConfig) -> Policy {
    Policy::from_block(Some(LoopDetectionConfig {
        enabled: Some(true),
        ..cfg
    }))
}

/// R(tool, params, result, i), optionally in a run.
fn r_in(
    s: &mut Session,
    p: &Policy,
    tool: &str,
    params: &Value<'_>,
    result: &Value<'_>,
    i: usize,
    run: Option<&str>,
) {
    let id = format!("{tool}-{i}");
    let mut call = Call::new(tool, params).call_id(id.as_str());
    if let Some(run) = run {
        call = call.run(run);
    }
    s.record_call(p, &call);
    let rec = s.record_outcome(p, &call, Outcome::Result(result));
    assert!(rec.is_some(), "R({tool}, {i}) recorded no outcome");
}

fn r(s: &mut Session, p: &Policy, tool: &str, params: &Value<'_>, result: &Value<'_>, i: usize) {
    r_in(s, p, tool, params, result, i, None);
}

/// F(tool, params, error, i).
fn f(s: &mut Session, p: &Policy, tool: &str, params: &Value<'_>, error: &str, i: usize) {
    let id = format!("{tool}-{i}");
    let call = Call::new(tool, params).call_id(id.as_str());
    s.record_call(p, &call);
    let err = Value::from(error);
    let rec = s.record_outcome(p, &call, Outcome::Error(&err));
    assert!(rec.is_some(), "F({tool}, {i}) recorded no outcome");
}

/// P(tool, params, id), optionally in a run.
fn p_in(s: &mut Session, p: &Policy, tool: &str, params: &Value<'_>, id: &str, run: Option<&str>) {
    let mut call = Call::new(tool, params).call_id(id);
    if let Some(run) = run {
        call = call.run(run);
    }
    s.record_call(p, &call);
}

fn pp(s: &mut Session, p: &Policy, tool: &str, params: &Value<'_>, id: &str) {
    p_in(s, p, tool, params, id, None);
}

/// D(tool, params, cfg, scope?).
fn d_in(
    s: &Session,
    p: &Policy,
    tool: &str,
    params: &Value<'_>,
    run: Option<&str>,
) -> Option<Detection> {
    let mut call = Call::new(tool, params);
    if let Some(run) = run {
        call = call.run(run);
    }
    s.detect(p, &call)
}

fn d(s: &Session, p: &Policy, tool: &str, params: &Value<'_>) -> Option<Detection> {
    d_in(s, p, tool, params, None)
}

// Warning keys (c.4) embed the full argsHash, which itself starts with `{tool}:`, so the
// generic key for `read` is `generic:read:read:<64 hex>`.

/// Unwraps a detection and checks detector, level and count.
#[track_caller]
fn expect(
    got: Option<Detection>,
    detector: Detector,
    level: Level,
    count: u64,
) -> (Detection, String) {
    let det = got.unwrap_or_else(|| panic!("expected {detector} {level} {count}, got not stuck"));
    assert_eq!(
        (det.detector, det.level, det.count),
        (detector, level, count),
        "detection: {det:?}"
    );
    let msg = det.message.to_string();
    (det, msg)
}

#[track_caller]
fn assert_contains(haystack: &str, needle: &str) {
    assert!(
        haystack.contains(needle),
        "expected {needle:?} in {haystack:?}"
    );
}

/// The outcome hash string (`64 hex` or `error:` + 64 hex).
fn result_hash(tool: &str, params: &Value<'_>, result: &Value<'_>) -> String {
    hash_outcome(
        tool.as_bytes(),
        params,
        Outcome::Result(result),
        &Hashing::default(),
    )
    .result_hash
    .expect("result has a hash")
    .to_string()
}

#[track_caller]
fn assert_hex64(s: &str) {
    assert_eq!(s.len(), 64, "{s}");
    assert!(
        s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "not lowercase hex: {s}"
    );
}

/// `^{tool}:[a-f0-9]{64}$`
#[track_caller]
fn assert_args_hash_shape(h: &str, tool: &str) {
    let prefix = format!("{tool}:");
    assert!(h.starts_with(&prefix), "{h}");
    assert_eq!(h.len(), tool.len() + 1 + 64, "{h}");
    assert_hex64(&h[prefix.len()..]);
}

// Fixtures.

const POLL_PARAMS: &str = r#"{"action":"poll","sessionId":"sess-1"}"#;
const POLL_RESULT: &str = r#"{"content":[{"type":"text","text":"(no new output)\n\nProcess still running."}],"details":{"status":"running","aggregated":"steady"}}"#;
const READ_PARAMS: &str = r#"{"path":"/same.txt"}"#;
const READ_RESULT: &str =
    r#"{"content":[{"type":"text","text":"same output"}],"details":{"ok":true}}"#;

fn r_poll_times(s: &mut Session, p: &Policy, n: usize) {
    let params = json(POLL_PARAMS);
    let result = json(POLL_RESULT);
    for i in 0..n {
        r(s, p, "process", &params, &result, i);
    }
}

fn r_read_times(s: &mut Session, p: &Policy, n: usize) {
    let params = json(READ_PARAMS);
    let result = json(READ_RESULT);
    for i in 0..n {
        r(s, p, "read", &params, &result, i);
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

// ---------------------------------------------------------------------------------------
// Hashing (1-9)
// ---------------------------------------------------------------------------------------

#[test]
fn s01_args_hash_is_stable_across_calls() {
    let v = json(r#"{"path":"/file.txt"}"#);
    let a = args_hash("read", &v);
    let b = args_hash("read", &json(r#"{"path":"/file.txt"}"#));
    assert_eq!(a, b);
    assert_args_hash_shape(&a, "read");
}

#[test]
fn s02_different_params_give_different_hashes() {
    assert_ne!(
        args_hash("read", &json(r#"{"path":"/file1.txt"}"#)),
        args_hash("read", &json(r#"{"path":"/file2.txt"}"#))
    );
}

#[test]
fn s03_different_tools_with_same_params_give_different_hashes() {
    let v = json(r#"{"path":"/file.txt"}"#);
    let read = args_hash("read", &v);
    let write = args_hash("write", &v);
    assert_ne!(read, write);
    // The digest half is the same (same params, no tool-specific normalisation); the
    // tool-name prefix is what differs.
    assert_eq!(read["read:".len()..], write["write:".len()..]);
}

#[test]
fn s04_non_object_params_hash_to_tool_prefix_and_64_hex() {
    for v in [
        Value::from("string-param"),
        Value::from(123i64),
        Value::Null,
    ] {
        assert_args_hash_shape(&args_hash("tool", &v), "tool");
    }
    // They are all different from each other.
    let a = args_hash("tool", &Value::from("string-param"));
    let b = args_hash("tool", &Value::from(123i64));
    let c = args_hash("tool", &Value::Null);
    assert!(a != b && b != c && a != c);
}

#[test]
fn s05_key_order_does_not_change_the_hash() {
    assert_eq!(
        args_hash("tool", &json(r#"{"a":1,"b":2}"#)),
        args_hash("tool", &json(r#"{"b":2,"a":1}"#))
    );
}

#[test]
fn s06_large_string_param_hash_has_fixed_length() {
    let big = "x".repeat(20_000);
    let v = json(&format!(r#"{{"data":"{big}"}}"#));
    let h = args_hash("read", &v);
    assert!(h.starts_with("read:"));
    assert_eq!(h.len(), 5 + 64);
    assert_args_hash_shape(&h, "read");
}

/// Scenario 7 uses genuinely circular JavaScript objects, which JSON values cannot express.
/// What can be pinned is the JSON equivalent of what OpenClaw serialises them to: the shared
/// `S` written out in full at both places (not collapsed), the back-reference as the string
/// `"[Circular]"`, and the key order irrelevant.
#[test]
fn s07_circular_params_not_expressible_equivalent_objects_hash_the_same() {
    let a = json(r#"{"first":{"value":1},"second":{"value":1},"self":"[Circular]"}"#);
    let b = json(r#"{"self":"[Circular]","second":{"value":1},"first":{"value":1}}"#);
    let ha = args_hash("tool", &a);
    let hb = args_hash("tool", &b);
    assert_eq!(ha, hb);
    assert_args_hash_shape(&ha, "tool");
    assert_args_hash_shape(&hb, "tool");
    // The shared S is not collapsed: both occurrences are written in full.
    assert_eq!(
        to_canonical_string(&b),
        r#"{"first":{"value":1},"second":{"value":1},"self":"[Circular]"}"#
    );
}

#[test]
fn s08_stable_stringify_golden_outputs() {
    // b.1 reference output 1: nested objects, sorted keys.
    assert_eq!(
        to_canonical_string(&json(r#"{"b":{"d":4,"c":3},"a":1}"#)),
        r#"{"a":1,"b":{"c":3,"d":4}}"#
    );
    // b.1 reference output 2 (shared reference + cycle), as its JSON equivalent.
    assert_eq!(
        to_canonical_string(&json(
            r#"{"self":"[Circular]","first":{"value":1},"second":{"value":1}}"#
        )),
        r#"{"first":{"value":1},"second":{"value":1},"self":"[Circular]"}"#
    );
    // b.1 reference output 3 ([shared, shared, itself]), as its JSON equivalent.
    assert_eq!(
        to_canonical_string(&json(r#"[{"value":"same"},{"value":"same"},"[Circular]"]"#)),
        r#"[{"value":"same"},{"value":"same"},"[Circular]"]"#
    );
    // b.1 reference output 4: Uint8Array, Error, NaN, bigint and undefined do not exist in
    // JSON; the JSON-expressible parts are pinned: the Uint8Array/Error shapes sort like any
    // object, Infinity (1e400 parses to Infinity, decisions.md item 2) is the string
    // "Infinity", and null stays null.
    assert_eq!(
        to_canonical_string(&json(
            r#"{"nil":null,"infinity":1e400,"finite":1,"error":{"stack":"Error: boom","name":"Error","message":"boom"},"bytes":{"type":"Uint8Array","data":"AQID"},"token":"123"}"#
        )),
        r#"{"bytes":{"data":"AQID","type":"Uint8Array"},"error":{"message":"boom","name":"Error","stack":"Error: boom"},"finite":1,"infinity":"Infinity","nil":null,"token":"123"}"#
    );
    assert_eq!(to_canonical_string(&json("-1e400")), r#""-Infinity""#);
    // Surrogates [C]: HIGH = \ud83d, LOW = \ude48 (the halves of 🙈), unpaired ones dropped,
    // the valid pair kept.
    let v = json(
        r#"{"key\ud83d":"name","high":"left\ud83dright","low":"left\ude48right","valid":"emoji \ud83d\ude48 ok"}"#,
    );
    assert_eq!(
        to_canonical_string(&v),
        r#"{"high":"leftright","key":"name","low":"leftright","valid":"emoji 🙈 ok"}"#
    );
}

#[test]
fn s09_process_log_result_with_large_text_records_64_char_hash() {
    let params = json(r#"{"action":"log","sessionId":"sess-1"}"#);
    let result = result_with(
        &"y".repeat(40_000),
        r#"{"status":"running","totalLines":1,"totalChars":40000}"#,
    );
    let h = result_hash("process", &params, &result);
    assert_hex64(&h);

    let p = Policy::enabled();
    let mut s = Session::new("s09");
    let call = Call::new("process", &params).call_id("process-0");
    s.record_call(&p, &call);
    let rec = s
        .record_outcome(&p, &call, Outcome::Result(&result))
        .expect("recorded");
    let rh = rec.result.expect("resultHash set");
    assert!(!rh.is_error);
    assert_eq!(rh.to_string().len(), 64);
    assert_eq!(rh.to_string(), h);
}

// ---------------------------------------------------------------------------------------
// History bookkeeping (10-17)
// ---------------------------------------------------------------------------------------

#[test]
fn s10_record_call_appends_one_record_with_tool_and_id() {
    let p = Policy::enabled();
    let mut s = Session::new("s10");
    let params = json(r#"{"path":"/file.txt"}"#);
    pp(&mut s, &p, "read", &params, "call-1");
    let recs = s.history().records();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].tool.as_str(), Some("read"));
    assert_eq!(
        recs[0].call_id.as_ref().and_then(|c| c.as_str()),
        Some("call-1")
    );
    assert_eq!(recs[0].args, args_digest("read", &params));
    assert!(recs[0].result.is_none());
    assert!(recs[0].run.is_none());
}

#[test]
fn s11_history_is_trimmed_to_30_oldest_first() {
    let p = Policy::enabled();
    let mut s = Session::new("s11");
    for i in 0..40 {
        let v = json(&format!(r#"{{"iteration":{i}}}"#));
        pp(&mut s, &p, "tool", &v, &format!("call-{i}"));
    }
    let recs = s.history().records();
    assert_eq!(recs.len(), 30);
    assert_eq!(
        format!("{}:{}", recs[0].tool, recs[0].args),
        args_hash("tool", &json(r#"{"iteration":10}"#))
    );
}

#[test]
fn s12_custom_history_size_trims_to_4() {
    let p = enabled_with(LoopDetectionConfig {
        history_size: Some(4.0),
        ..Default::default()
    });
    let mut s = Session::new("s12");
    for i in 0..10 {
        let v = json(&format!(r#"{{"iteration":{i}}}"#));
        pp(&mut s, &p, "tool", &v, &format!("call-{i}"));
    }
    let recs = s.history().records();
    assert_eq!(recs.len(), 4);
    assert_eq!(
        recs[0].args,
        args_digest("tool", &json(r#"{"iteration":6}"#))
    );
}

#[test]
fn s13_timestamp_lies_between_before_and_after_and_is_never_updated() {
    let p = Policy::enabled();
    let mut s = Session::new("s13");
    let params = json(r#"{"path":"/file.txt"}"#);
    let before = now_ms();
    let call = Call::new("read", &params).call_id("call-1").at(now_ms());
    s.record_call(&p, &call);
    let after = now_ms();
    let ts = s.history().records()[0].timestamp_ms;
    assert!(before <= ts && ts <= after, "{before} <= {ts} <= {after}");
    // The outcome arrives later; the record's timestamp stays.
    let later = Call::new("read", &params)
        .call_id("call-1")
        .at(after + 60_000);
    s.record_outcome(&p, &later, Outcome::Result(&text_result("ok")))
        .expect("recorded");
    assert_eq!(s.history().records().len(), 1);
    assert_eq!(s.history().records()[0].timestamp_ms, ts);
}

#[test]
fn s14_record_call_in_a_run_stores_the_run_id() {
    let p = Policy::enabled();
    let mut s = Session::new("s14");
    let params = json(r#"{"path":"/file.txt"}"#);
    p_in(&mut s, &p, "read", &params, "call-1", Some("run-1"));
    let rec = &s.history().records()[0];
    assert_eq!(rec.run.as_ref().and_then(|r| r.as_str()), Some("run-1"));
}

#[test]
fn s15_outcome_is_attached_to_the_pending_record() {
    let p = Policy::enabled();
    let mut s = Session::new("s15");
    let params = json(r#"{"action":"lookup","path":"cron.enabled"}"#);
    pp(&mut s, &p, "gateway", &params, "call-1");
    let call = Call::new("gateway", &params).call_id("call-1");
    let rec = s
        .record_outcome(&p, &call, Outcome::Result(&text_result("same schema")))
        .expect("recorded")
        .clone();
    assert_eq!(
        rec.call_id.as_ref().and_then(|c| c.as_str()),
        Some("call-1")
    );
    assert_hex64(&rec.result.expect("resultHash").to_string());
    assert_eq!(s.history().records().len(), 1);
    assert_eq!(s.history().records()[0], rec);
}

#[test]
fn s16_outcome_recording_trims_history_and_returns_the_record() {
    let p = Policy::enabled();
    let mut s = Session::new("s16");
    let mut last_id = String::new();
    for i in 0..33 {
        let params = json(&format!(r#"{{"action":"lookup","path":"config.{i}"}}"#));
        let id = format!("call-{i}");
        pp(&mut s, &p, "gateway", &params, &id);
        let call = Call::new("gateway", &params).call_id(id.as_str());
        let rec = s
            .record_outcome(
                &p,
                &call,
                Outcome::Result(&text_result(&format!("schema-{i}"))),
            )
            .expect("recorded");
        assert!(rec.result.is_some());
        last_id = rec.call_id.as_ref().unwrap().to_string();
    }
    assert_eq!(last_id, "call-32");
    let recs = s.history().records();
    assert_eq!(recs.len(), 30);
    assert_eq!(
        recs[0].call_id.as_ref().and_then(|c| c.as_str()),
        Some("call-3")
    );
}

#[test]
fn s17_outcome_in_another_run_is_appended_not_attached() {
    let p = Policy::enabled();
    let mut s = Session::new("s17");
    let params = json(READ_PARAMS);
    p_in(&mut s, &p, "read", &params, "call-1", Some("run-1"));
    let call = Call::new("read", &params).call_id("call-1").run("run-2");
    s.record_outcome(&p, &call, Outcome::Result(&json(READ_RESULT)))
        .expect("recorded");
    let recs = s.history().records();
    assert_eq!(recs.len(), 2);
    assert!(recs[0].result.is_none());
    assert_eq!(recs[0].run.as_ref().and_then(|r| r.as_str()), Some("run-1"));
    assert_eq!(recs[1].run.as_ref().and_then(|r| r.as_str()), Some("run-2"));
    assert_hex64(&recs[1].result.expect("resultHash").to_string());
}

// ---------------------------------------------------------------------------------------
// Detection: generic, poll, global (18-34)
// ---------------------------------------------------------------------------------------

#[test]
fn s18_detection_is_disabled_by_default() {
    let none = Policy::default();
    let mut s = Session::new("s18");
    let params = json(READ_PARAMS);
    for i in 0..20 {
        pp(&mut s, &none, "read", &params, &format!("read-{i}"));
    }
    assert_eq!(s.history().records().len(), 20);
    assert!(d(&s, &none, "read", &params).is_none());
    // The same history with detection switched on is stuck, so it is the switch.
    assert!(d(&s, &Policy::enabled(), "read", &params).is_some());
}

#[test]
fn s19_distinct_paths_are_not_stuck() {
    let p = Policy::enabled();
    let mut s = Session::new("s19");
    for i in 0..15 {
        let v = json(&format!(r#"{{"path":"/file-{i}.txt"}}"#));
        pp(&mut s, &p, "read", &v, &format!("read-{i}"));
    }
    assert!(d(&s, &p, "read", &json(r#"{"path":"/new.txt"}"#)).is_none());
}

#[test]
fn s20_other_run_history_is_not_seen() {
    let p = Policy::enabled();
    let mut s = Session::new("s20");
    let params = json(READ_PARAMS);
    for i in 0..10 {
        p_in(
            &mut s,
            &p,
            "read",
            &params,
            &format!("read-{i}"),
            Some("heartbeat-1"),
        );
    }
    assert!(d_in(&s, &p, "read", &params, Some("heartbeat-2")).is_none());
}

#[test]
fn s21_same_run_history_warns_generic_repeat() {
    let p = Policy::enabled();
    let mut s = Session::new("s21");
    let params = json(READ_PARAMS);
    for i in 0..10 {
        p_in(
            &mut s,
            &p,
            "read",
            &params,
            &format!("read-{i}"),
            Some("run-1"),
        );
    }
    let (det, msg) = expect(
        d_in(&s, &p, "read", &params, Some("run-1")),
        Detector::GenericRepeat,
        Level::Warning,
        10,
    );
    assert_contains(&msg, "10 times");
    // The detector's key has no run prefix (the wrapper adds it).
    assert_eq!(
        det.warning_key.to_string(),
        format!("generic:read:{}", args_hash("read", &params))
    );
}

#[test]
fn s22_scoped_history_is_not_seen_unscoped() {
    let p = Policy::enabled();
    let mut s = Session::new("s22");
    let params = json(READ_PARAMS);
    for i in 0..10 {
        p_in(
            &mut s,
            &p,
            "read",
            &params,
            &format!("read-{i}"),
            Some("run-1"),
        );
    }
    assert!(d(&s, &p, "read", &params).is_none());
}

#[test]
fn s23_ten_identical_calls_warn_generic_repeat() {
    let p = Policy::enabled();
    let mut s = Session::new("s23");
    let params = json(READ_PARAMS);
    for i in 0..9 {
        pp(&mut s, &p, "read", &params, &format!("read-{i}"));
    }
    assert!(d(&s, &p, "read", &params).is_none(), "9 < W");
    pp(&mut s, &p, "read", &params, "read-9");
    let (det, msg) = expect(
        d(&s, &p, "read", &params),
        Detector::GenericRepeat,
        Level::Warning,
        10,
    );
    assert_contains(&msg, "WARNING");
    assert_contains(&msg, "10 times");
    assert!(msg.starts_with("WARNING: You have called read 10 times with identical arguments."));
    assert_eq!(
        det.warning_key.to_string(),
        format!("generic:read:{}", args_hash("read", &params))
    );
    assert!(det.paired_tool.is_none());
}

#[test]
fn s24_twenty_identical_reads_are_generic_critical() {
    let p = Policy::enabled();
    let mut s = Session::new("s24");
    let params = json(READ_PARAMS);
    r_read_times(&mut s, &p, 19);
    expect(
        d(&s, &p, "read", &params),
        Detector::GenericRepeat,
        Level::Warning,
        19,
    );
    r_read_times(&mut s, &p, 1);
    let (det, msg) = expect(
        d(&s, &p, "read", &params),
        Detector::GenericRepeat,
        Level::Critical,
        20,
    );
    assert_contains(&msg, "identical outcomes");
    assert!(msg.starts_with(
        "CRITICAL: Called read with identical arguments and identical outcomes 20 times."
    ));
    let rh = result_hash("read", &params, &json(READ_RESULT));
    assert_eq!(
        det.warning_key.to_string(),
        format!("generic:read:{}:{rh}", args_hash("read", &params))
    );
}

#[test]
fn s25_custom_thresholds_poll_warns_at_2_and_is_critical_at_4() {
    let p = enabled_with(LoopDetectionConfig {
        warning_threshold: Some(2.0),
        critical_threshold: Some(4.0),
        detectors: Some(DetectorSwitches {
            generic_repeat: Some(false),
            known_poll_no_progress: Some(true),
            ping_pong: Some(false),
        }),
        ..Default::default()
    });
    let mut s = Session::new("s25");
    let params = json(POLL_PARAMS);
    r_poll_times(&mut s, &p, 1);
    assert!(d(&s, &p, "process", &params).is_none());
    r_poll_times(&mut s, &p, 1);
    expect(
        d(&s, &p, "process", &params),
        Detector::KnownPollNoProgress,
        Level::Warning,
        2,
    );
    r_poll_times(&mut s, &p, 1);
    expect(
        d(&s, &p, "process", &params),
        Detector::KnownPollNoProgress,
        Level::Warning,
        3,
    );
    r_poll_times(&mut s, &p, 1);
    expect(
        d(&s, &p, "process", &params),
        Detector::KnownPollNoProgress,
        Level::Critical,
        4,
    );
}

#[test]
fn s26_all_detectors_off_twenty_polls_not_stuck() {
    let p = enabled_with(LoopDetectionConfig {
        detectors: Some(DetectorSwitches {
            generic_repeat: Some(false),
            known_poll_no_progress: Some(false),
            ping_pong: Some(false),
        }),
        ..Default::default()
    });
    let mut s = Session::new("s26");
    r_poll_times(&mut s, &p, 20);
    assert!(d(&s, &p, "process", &json(POLL_PARAMS)).is_none());
}

#[test]
fn s27_ten_polls_warn_known_poll_no_progress() {
    let p = Policy::enabled();
    let mut s = Session::new("s27");
    let params = json(POLL_PARAMS);
    r_poll_times(&mut s, &p, 10);
    let (det, msg) = expect(
        d(&s, &p, "process", &params),
        Detector::KnownPollNoProgress,
        Level::Warning,
        10,
    );
    assert_contains(&msg, "no progress");
    assert!(msg.starts_with(
        "WARNING: You have called process 10 times with identical arguments and no progress."
    ));
    let rh = result_hash("process", &params, &json(POLL_RESULT));
    assert_eq!(
        det.warning_key.to_string(),
        format!("poll:process:{}:{rh}", args_hash("process", &params))
    );
}

#[test]
fn s28_twenty_polls_are_known_poll_critical() {
    let p = Policy::enabled();
    let mut s = Session::new("s28");
    let params = json(POLL_PARAMS);
    r_poll_times(&mut s, &p, 20);
    let (_, msg) = expect(
        d(&s, &p, "process", &params),
        Detector::KnownPollNoProgress,
        Level::Critical,
        20,
    );
    assert_contains(&msg, "CRITICAL");
    assert!(msg.starts_with(
        "CRITICAL: Called process with identical arguments and no progress 20 times."
    ));
}

#[test]
fn s29_progressing_poll_outputs_are_not_stuck() {
    let p = Policy::enabled();
    let mut s = Session::new("s29");
    let params = json(POLL_PARAMS);
    for i in 0..25 {
        let res = result_with(
            &format!("line {i}"),
            &format!(r#"{{"status":"running","aggregated":"line {i}"}}"#),
        );
        r(&mut s, &p, "process", &params, &res, i);
    }
    assert!(d(&s, &p, "process", &params).is_none());
}

#[test]
fn s30_thirty_identical_reads_trip_the_global_circuit_breaker() {
    let params = json(READ_PARAMS);
    let rh = result_hash("read", &params, &json(READ_RESULT));
    let off = |g: bool, k: bool, pp: bool| {
        enabled_with(LoopDetectionConfig {
            detectors: Some(DetectorSwitches {
                generic_repeat: Some(g),
                known_poll_no_progress: Some(k),
                ping_pong: Some(pp),
            }),
            ..Default::default()
        })
    };
    for p in [
        Policy::enabled(),
        off(false, true, true),   // [B] genericRepeat: false
        off(false, false, false), // the breaker ignores every detector flag
    ] {
        let mut s = Session::new("s30");
        r_read_times(&mut s, &p, 30);
        let (det, msg) = expect(
            d(&s, &p, "read", &params),
            Detector::GlobalCircuitBreaker,
            Level::Critical,
            30,
        );
        assert_contains(&msg, "global circuit breaker");
        assert!(
            msg.starts_with("CRITICAL: read has repeated identical no-progress outcomes 30 times.")
        );
        assert_eq!(
            det.warning_key.to_string(),
            format!("global:read:{}:{rh}", args_hash("read", &params))
        );
    }
}

#[test]
fn s31_exec_completed_with_volatile_duration_and_cwd_is_generic_critical() {
    let p = Policy::enabled();
    let mut s = Session::new("s31");
    let params = json(r#"{"command":"grafana-api.sh datasources"}"#);
    for i in 0..20 {
        let res = result_with(
            "Loki\nPrometheus",
            &format!(
                r#"{{"status":"completed","exitCode":0,"aggregated":"Loki\nPrometheus","durationMs":{},"cwd":"/tmp/work-{i}"}}"#,
                100 + i * 7
            ),
        );
        r(&mut s, &p, "exec", &params, &res, i);
    }
    let (_, msg) = expect(
        d(&s, &p, "exec", &params),
        Detector::GenericRepeat,
        Level::Critical,
        20,
    );
    assert_contains(&msg, "identical outcomes");
}

#[test]
fn s32_exec_running_with_volatile_session_and_pid_is_generic_critical() {
    let p = Policy::enabled();
    let mut s = Session::new("s32");
    let params = json(r#"{"command":"tail -f /var/log/app.log","yieldMs":1000}"#);
    for i in 0..20 {
        let res = result_with(
            &format!(
                "Command still running (session sess-{i}, pid {}). (no new output)",
                4000 + i
            ),
            &format!(
                r#"{{"status":"running","tail":"(no new output)","sessionId":"sess-{i}","pid":{},"startedAt":{},"cwd":"/srv/{i}"}}"#,
                4000 + i,
                1_760_000_000_000u64 + i as u64
            ),
        );
        r(&mut s, &p, "exec", &params, &res, i);
    }
    let (_, msg) = expect(
        d(&s, &p, "exec", &params),
        Detector::GenericRepeat,
        Level::Critical,
        20,
    );
    assert_contains(&msg, "identical outcomes");
}

#[test]
fn s33_exec_with_changing_output_only_warns() {
    let p = Policy::enabled();
    let mut s = Session::new("s33");
    let params = json(r#"{"command":"date"}"#);
    for i in 0..30 {
        let res = result_with(
            &format!("tick {i}"),
            &format!(r#"{{"status":"completed","exitCode":0,"aggregated":"tick {i}"}}"#),
        );
        r(&mut s, &p, "exec", &params, &res, i);
    }
    let (_, msg) = expect(
        d(&s, &p, "exec", &params),
        Detector::GenericRepeat,
        Level::Warning,
        30,
    );
    assert_contains(&msg, "30 times");
}

#[test]
fn s34_exec_failed_with_empty_aggregated_falls_back_to_changing_text() {
    let p = Policy::enabled();
    let mut s = Session::new("s34");
    let params = json(r#"{"command":"openclaw flaky-helper"}"#);
    for i in 0..30 {
        let res = result_with(
            &format!("Runtime failed before spawn: attempt {i}"),
            r#"{"status":"failed","exitCode":null,"aggregated":""}"#,
        );
        r(&mut s, &p, "exec", &params, &res, i);
    }
    expect(
        d(&s, &p, "exec", &params),
        Detector::GenericRepeat,
        Level::Warning,
        30,
    );
}

// Scenario 35 is Era A only (exec "running" as a known poll tool): not part of R.

// ---------------------------------------------------------------------------------------
// Unknown tool (36-38)
// ---------------------------------------------------------------------------------------

#[test]
fn s36_nine_unknown_tool_failures_are_not_stuck() {
    let p = Policy::enabled();
    let mut s = Session::new("s36");
    for i in 0..9 {
        let params = json(&format!(r#"{{"command":"echo {i}"}}"#));
        f(&mut s, &p, "exec", &params, "Tool exec not found", i);
    }
    assert_eq!(
        s.history().records()[0].unknown_tool.as_deref(),
        Some("exec")
    );
    assert!(d(&s, &p, "exec", &json(r#"{"command":"echo still allowed"}"#)).is_none());
}

#[test]
fn s37_unknown_tool_streak_ignores_changing_params() {
    let p = Policy::enabled();
    let mut s = Session::new("s37");
    for i in 0..20 {
        let params = match i % 4 {
            0 => json(&format!(r#"{{"input":"echo {i}"}}"#)),
            1 => json(&format!(r#"{{"cmd":"echo {i}"}}"#)),
            2 => json(&format!(r#"{{"args":["echo","{i}"]}}"#)),
            _ => json(&format!(r#"{{"text":"echo {i}"}}"#)),
        };
        f(&mut s, &p, "exec", &params, "Tool exec not found", i);
    }
    let (det, msg) = expect(
        d(&s, &p, "exec", &json(r#"{"command":"echo again"}"#)),
        Detector::UnknownToolRepeat,
        Level::Critical,
        20,
    );
    assert_contains(&msg, "attempted unavailable tool exec 20 times");
    assert_eq!(det.warning_key.to_string(), "unknown-tool:exec:exec");
}

#[test]
fn s38_unknown_tool_critical_at_ten_and_reset_by_a_success() {
    let p = Policy::enabled();
    let mut s = Session::new("s38");
    for i in 0..10 {
        let params = json(&format!(r#"{{"command":"echo {i}"}}"#));
        f(&mut s, &p, "exec", &params, "Unknown tool: exec", i);
    }
    let probe = json(r#"{"command":"echo next"}"#);
    let (det, msg) = expect(
        d(&s, &p, "exec", &probe),
        Detector::UnknownToolRepeat,
        Level::Critical,
        10,
    );
    assert_eq!(det.warning_key.to_string(), "unknown-tool:exec:exec");
    assert!(msg.starts_with("CRITICAL: attempted unavailable tool exec 10 times."));

    // One successful exec last: its record has no unknownToolName, so the streak is 0.
    r(
        &mut s,
        &p,
        "exec",
        &json(r#"{"command":"true"}"#),
        &result_with(
            "",
            r#"{"status":"completed","exitCode":0,"aggregated":"ok"}"#,
        ),
        10,
    );
    assert!(s.history().records().back().unwrap().unknown_tool.is_none());
    assert!(d(&s, &p, "exec", &probe).is_none());
}

// ---------------------------------------------------------------------------------------
// Ping-pong (39-44)
// ---------------------------------------------------------------------------------------

fn read_a() -> Value<'static> {
    json(r#"{"path":"/a.txt"}"#)
}

fn list_ws() -> Value<'static> {
    json(r#"{"dir":"/workspace"}"#)
}

/// `pingpong:{sortedA}|{sortedB}` for read /a.txt and list /workspace.
fn read_list_pair_key() -> String {
    let mut pair = [args_hash("read", &read_a()), args_hash("list", &list_ws())];
    pair.sort();
    format!("pingpong:{}|{}", pair[0], pair[1])
}

/// 9 pending calls alternating read, list, …, read.
fn nine_alternating_pending(s: &mut Session, p: &Policy) {
    let (read, list) = (read_a(), list_ws());
    for i in 0..9 {
        if i % 2 == 0 {
            pp(s, p, "read", &read, &format!("read-{i}"));
        } else {
            pp(s, p, "list", &list, &format!("list-{i}"));
        }
    }
}

#[test]
fn s39_nine_alternations_then_list_warn_ping_pong() {
    let p = Policy::enabled();
    let mut s = Session::new("s39");
    nine_alternating_pending(&mut s, &p);
    let (det, msg) = expect(
        d(&s, &p, "list", &list_ws()),
        Detector::PingPong,
        Level::Warning,
        10,
    );
    assert_contains(&msg, "ping-pong loop");
    assert!(msg.starts_with(
        "WARNING: You are alternating between repeated tool-call patterns (10 consecutive calls)."
    ));
    assert_eq!(
        det.paired_tool.as_ref().and_then(|t| t.as_str()),
        Some("read")
    );
    assert_eq!(det.warning_key.to_string(), read_list_pair_key());
}

fn alternate_with_results(s: &mut Session, p: &Policy, n: usize, stable: bool) {
    let (read, list) = (read_a(), list_ws());
    for i in 0..n {
        let (tool, params) = if i % 2 == 0 {
            ("read", &read)
        } else {
            ("list", &list)
        };
        let text = if stable {
            format!("{tool} stable")
        } else {
            format!("{tool} {i}")
        };
        r(s, p, tool, params, &text_result(&text), i);
    }
}

#[test]
fn s40_stable_alternation_is_ping_pong_critical() {
    let p = Policy::enabled();
    let mut s = Session::new("s40");
    alternate_with_results(&mut s, &p, 19, true);
    let (det, msg) = expect(
        d(&s, &p, "list", &list_ws()),
        Detector::PingPong,
        Level::Critical,
        20,
    );
    assert_contains(&msg, "CRITICAL");
    assert_contains(&msg, "ping-pong loop");
    assert!(msg.starts_with(
        "CRITICAL: You are alternating between repeated tool-call patterns (20 consecutive calls) with no progress."
    ));
    assert_eq!(
        det.paired_tool.as_ref().and_then(|t| t.as_str()),
        Some("read")
    );
    assert_eq!(det.warning_key.to_string(), read_list_pair_key());
}

#[test]
fn s41_progressing_alternation_only_warns() {
    let p = Policy::enabled();
    let mut s = Session::new("s41");
    alternate_with_results(&mut s, &p, 19, false);
    let (_, msg) = expect(
        d(&s, &p, "list", &list_ws()),
        Detector::PingPong,
        Level::Warning,
        20,
    );
    assert_contains(&msg, "ping-pong loop");
}

#[test]
fn s42_broken_alternation_is_not_stuck() {
    let p = Policy::enabled();
    let mut s = Session::new("s42");
    let b = json(r#"{"dir":"/b"}"#);
    pp(&mut s, &p, "read", &read_a(), "1");
    pp(&mut s, &p, "list", &b, "2");
    pp(&mut s, &p, "read", &read_a(), "3");
    pp(&mut s, &p, "write", &json(r#"{"path":"/out"}"#), "4");
    assert!(d(&s, &p, "list", &b).is_none());
}

#[test]
fn s43_empty_history_is_not_stuck() {
    let s = Session::new("s43");
    assert!(d(&s, &Policy::enabled(), "read", &read_a()).is_none());
}

#[test]
fn s44_proposing_the_last_side_again_is_not_ping_pong() {
    let p = Policy::enabled();
    let mut s = Session::new("s44");
    nine_alternating_pending(&mut s, &p);
    assert!(d(&s, &p, "read", &read_a()).is_none());
}

// ---------------------------------------------------------------------------------------
// Message sends and vetoes (45-60) [C]
// ---------------------------------------------------------------------------------------

fn msg_send_params() -> Value<'static> {
    json(r#"{"action":"send","target":"feishu:oc_chat","text":"ping"}"#)
}

#[test]
fn s45_send_results_with_fresh_ids_hash_equal() {
    let params = msg_send_params();
    let a = result_hash("message", &params, &send_result(&send_payload(0)));
    let b = result_hash("message", &params, &send_result(&send_payload(1)));
    assert_eq!(a, b);
    // Without the send rule (another action) the same results differ.
    let read = json(r#"{"action":"read","target":"feishu:oc_chat"}"#);
    assert_ne!(
        result_hash("message", &read, &send_result(&send_payload(0))),
        result_hash("message", &read, &send_result(&send_payload(1)))
    );
}

#[test]
fn s46_broadcast_results_with_nested_ids_hash_equal() {
    let params = json(r#"{"action":"broadcast","targets":["feishu:a","feishu:b"],"text":"ping"}"#);
    let res = |i: usize| {
        send_result(&format!(
            r#"{{"results":[{{"channel":"feishu","ok":true,"result":{{"messageId":"om_{i}","receipt":{i}}}}}]}}"#
        ))
    };
    assert_eq!(
        result_hash("message", &params, &res(0)),
        result_hash("message", &params, &res(1))
    );
}

fn twenty_sends(s: &mut Session, p: &Policy, tool: &str, params: &Value<'_>) {
    for i in 0..20 {
        r(s, p, tool, params, &send_result(&send_payload(i)), i);
    }
}

#[test]
fn s47_twenty_identical_sends_are_critical() {
    let p = Policy::enabled();
    let mut s = Session::new("s47");
    let params = msg_send_params();
    twenty_sends(&mut s, &p, "message", &params);
    let (_, msg) = expect(
        d(&s, &p, "message", &params),
        Detector::GenericRepeat,
        Level::Critical,
        20,
    );
    assert_contains(&msg, "identical outcomes");
}

#[test]
fn s48_twenty_sessions_send_with_fresh_run_ids_are_critical() {
    let p = Policy::enabled();
    let mut s = Session::new("s48");
    let params = json(r#"{"sessionKey":"agent:main:peer","text":"ping"}"#);
    for i in 0..20 {
        let res = send_result(&format!(r#"{{"ok":true,"runId":"run_{i}"}}"#));
        r(&mut s, &p, "sessions_send", &params, &res, i);
    }
    expect(
        d(&s, &p, "sessions_send", &params),
        Detector::GenericRepeat,
        Level::Critical,
        20,
    );
}

#[test]
fn s49_twenty_telegram_sends_are_critical() {
    let p = Policy::enabled();
    let mut s = Session::new("s49");
    let params = json(r#"{"to":"telegram:123","text":"ping"}"#);
    twenty_sends(&mut s, &p, "telegram", &params);
    expect(
        d(&s, &p, "telegram", &params),
        Detector::GenericRepeat,
        Level::Critical,
        20,
    );
}

#[test]
fn s50_twenty_replies_are_critical() {
    let p = Policy::enabled();
    let mut s = Session::new("s50");
    let params =
        json(r#"{"action":"reply","target":"feishu:oc_chat","replyTo":"om_root","text":"ping"}"#);
    twenty_sends(&mut s, &p, "message", &params);
    expect(
        d(&s, &p, "message", &params),
        Detector::GenericRepeat,
        Level::Critical,
        20,
    );
}

#[test]
fn s51_twenty_uploads_with_fresh_file_ids_are_critical() {
    let p = Policy::enabled();
    let mut s = Session::new("s51");
    let params = json(r#"{"action":"upload-file","target":"feishu:oc_chat","media":"img.png"}"#);
    for i in 0..20 {
        let res = send_result(&format!(
            r#"{{"ok":true,"channel":"feishu","fileId":"f_{i}","messageId":"om_{i}"}}"#
        ));
        r(&mut s, &p, "message", &params, &res, i);
    }
    expect(
        d(&s, &p, "message", &params),
        Detector::GenericRepeat,
        Level::Critical,
        20,
    );
}

#[test]
fn s52_twenty_polls_with_fresh_poll_ids_are_critical() {
    let p = Policy::enabled();
    let mut s = Session::new("s52");
    let params = json(r#"{"action":"poll","target":"feishu:oc_chat","question":"?"}"#);
    for i in 0..20 {
        let res = send_result(&format!(
            r#"{{"ok":true,"channel":"feishu","messageId":"om_{i}","pollId":"pl_{i}"}}"#
        ));
        r(&mut s, &p, "message", &params, &res, i);
    }
    expect(
        d(&s, &p, "message", &params),
        Detector::GenericRepeat,
        Level::Critical,
        20,
    );
}

#[test]
fn s53_sends_with_different_text_are_not_stuck() {
    let p = Policy::enabled();
    let mut s = Session::new("s53");
    for i in 0..20 {
        let params = json(&format!(
            r#"{{"action":"send","target":"feishu:oc_chat","text":"line {i}"}}"#
        ));
        r(
            &mut s,
            &p,
            "message",
            &params,
            &send_result(&send_payload(i)),
            i,
        );
    }
    let last = json(r#"{"action":"send","target":"feishu:oc_chat","text":"line final"}"#);
    assert!(d(&s, &p, "message", &last).is_none());
}

#[test]
fn s54_message_read_keeps_ids_and_timestamps() {
    let params = json(r#"{"action":"read","target":"feishu:oc_chat"}"#);
    let a = result_with("read", r#"{"ok":true,"messageId":"m_0","ts":1000}"#);
    let b = result_with("read", r#"{"ok":true,"messageId":"m_1","ts":2000}"#);
    assert_ne!(
        result_hash("message", &params, &a),
        result_hash("message", &params, &b)
    );
}

#[test]
fn s55_message_channel_create_keeps_ids_and_timestamps() {
    let params = json(r#"{"action":"channel-create","name":"support"}"#);
    let a = result_with(
        "created",
        r#"{"ok":true,"messageId":"m_0","timestamp":1000}"#,
    );
    let b = result_with(
        "created",
        r#"{"ok":true,"messageId":"m_1","timestamp":2000}"#,
    );
    assert_ne!(
        result_hash("message", &params, &a),
        result_hash("message", &params, &b)
    );
}

#[test]
fn s56_send_route_ids_are_kept() {
    let params = msg_send_params();
    let a = send_result(r#"{"ok":true,"messageId":"om_0","route":{"id":"conv-A"}}"#);
    let b = send_result(r#"{"ok":true,"messageId":"om_1","route":{"id":"conv-B"}}"#);
    assert_ne!(
        result_hash("message", &params, &a),
        result_hash("message", &params, &b)
    );
    // The per-send messageId alone does not make a difference.
    let c = send_result(r#"{"ok":true,"messageId":"om_2","route":{"id":"conv-A"}}"#);
    assert_eq!(
        result_hash("message", &params, &a),
        result_hash("message", &params, &c)
    );
}

#[test]
fn s57_loop_veto_result_is_not_an_outcome_block_stays_sticky() {
    let p = Policy::enabled();
    let mut s = Session::new("s57");
    let params = msg_send_params();
    twenty_sends(&mut s, &p, "message", &params);
    expect(
        d(&s, &p, "message", &params),
        Detector::GenericRepeat,
        Level::Critical,
        20,
    );
    pp(&mut s, &p, "message", &params, "message-veto");
    let veto = result_with(
        "blocked",
        r#"{"status":"blocked","deniedReason":"tool-loop"}"#,
    );
    let call = Call::new("message", &params).call_id("message-veto");
    assert!(
        s.record_outcome(&p, &call, Outcome::Result(&veto))
            .is_none(),
        "the veto result must record nothing"
    );
    assert!(s.history().records().back().unwrap().result.is_none());
    let (_, msg) = expect(
        d(&s, &p, "message", &params),
        Detector::GenericRepeat,
        Level::Critical,
        20,
    );
    assert_contains(&msg, "identical outcomes");
}

#[test]
fn s58_repeated_plugin_denials_still_escalate() {
    let p = Policy::enabled();
    let mut s = Session::new("s58");
    let params = json(r#"{"action":"read","target":"feishu:oc_chat"}"#);
    let denied = result_with(
        "blocked",
        r#"{"status":"blocked","deniedReason":"plugin-before-tool-call"}"#,
    );
    for i in 0..20 {
        r(&mut s, &p, "message", &params, &denied, i);
    }
    expect(
        d(&s, &p, "message", &params),
        Detector::GenericRepeat,
        Level::Critical,
        20,
    );
}

fn delivery_result(i: usize, conversation_id: &str, with_ids: bool) -> Value<'static> {
    let extra = if with_ids {
        r#""accountId":"default","senderId":"openclaw","#
    } else {
        ""
    };
    send_result(&format!(
        r#"{{"ok":true,"message":{{"id":"qa_{i}",{extra}"direction":"outbound","conversation":{{"id":"{conversation_id}","chatType":"channel"}},"text":"hello","timestamp":{}}}}}"#,
        1_760_000_000_000u64 + i as u64
    ))
}

#[test]
fn s59_delivery_object_id_and_timestamp_are_stripped() {
    let p = Policy::enabled();
    let mut s = Session::new("s59");
    let params = msg_send_params();
    for i in 0..20 {
        r(
            &mut s,
            &p,
            "message",
            &params,
            &delivery_result(i, "loop-room", true),
            i,
        );
    }
    expect(
        d(&s, &p, "message", &params),
        Detector::GenericRepeat,
        Level::Critical,
        20,
    );
}

#[test]
fn s60_changing_conversation_id_is_progress() {
    let p = Policy::enabled();
    let mut s = Session::new("s60");
    let params = msg_send_params();
    for i in 0..20 {
        let res = delivery_result(i, &format!("loop-room-{i}"), false);
        r(&mut s, &p, "message", &params, &res, i);
    }
    expect(
        d(&s, &p, "message", &params),
        Detector::GenericRepeat,
        Level::Warning,
        20,
    );
}

// ---------------------------------------------------------------------------------------
// update_plan (61-63) [C]
// ---------------------------------------------------------------------------------------

#[test]
fn s61_update_plan_rewording_gives_the_same_args_hash() {
    let a = args_hash(
        "update_plan",
        &json(r#"{"plan":[{"step":"patch code","status":"pending"}]}"#),
    );
    let b = args_hash(
        "update_plan",
        &json(r#"{"plan":[{"step":"patch code again","status":"pending"}]}"#),
    );
    assert_eq!(a, b);
    assert_args_hash_shape(&a, "update_plan");
}

#[test]
fn s62_update_plan_status_or_length_change_gives_a_different_args_hash() {
    let base = args_hash(
        "update_plan",
        &json(r#"{"plan":[{"step":"patch code","status":"pending"}]}"#),
    );
    let status = args_hash(
        "update_plan",
        &json(r#"{"plan":[{"step":"patch code","status":"in_progress"}]}"#),
    );
    let added = args_hash(
        "update_plan",
        &json(
            r#"{"plan":[{"step":"patch code","status":"pending"},{"step":"run tests","status":"pending"}]}"#,
        ),
    );
    assert_ne!(base, status);
    assert_ne!(base, added);
    assert_ne!(status, added);
}

#[test]
fn s63_twenty_wording_only_plan_updates_are_generic_critical() {
    let p = Policy::enabled();
    let plan = |i: usize| {
        json(&format!(
            r#"{{"plan":[{{"step":"patch code, attempt {i}","status":"pending"}}],"explanation":"retry {i}"}}"#
        ))
    };
    let ack = |i: usize| {
        if i.is_multiple_of(2) {
            text_result("Plan updated (1 steps)")
        } else {
            text_result("")
        }
    };
    // Without outcomes, only the warning tier (repetition of arguments).
    let mut pending = Session::new("s63-pending");
    for i in 0..20 {
        pp(
            &mut pending,
            &p,
            "update_plan",
            &plan(i),
            &format!("update_plan-{i}"),
        );
    }
    expect(
        d(&pending, &p, "update_plan", &plan(99)),
        Detector::GenericRepeat,
        Level::Warning,
        20,
    );
    // With outcomes recorded, critical.
    let mut s = Session::new("s63");
    for i in 0..20 {
        r(&mut s, &p, "update_plan", &plan(i), &ack(i), i);
    }
    let (_, msg) = expect(
        d(&s, &p, "update_plan", &plan(99)),
        Detector::GenericRepeat,
        Level::Critical,
        20,
    );
    assert_contains(&msg, "identical outcomes");
}

// ---------------------------------------------------------------------------------------
// Config resolution (64-67) [B]
// ---------------------------------------------------------------------------------------

#[test]
fn s64_auto_raise_warning_25_gives_26_and_30() {
    let p = enabled_with(LoopDetectionConfig {
        warning_threshold: Some(25.0),
        ..Default::default()
    });
    let r_ = &p.resolved;
    assert_eq!(
        (
            r_.warning_threshold,
            r_.critical_threshold,
            r_.global_circuit_breaker_threshold
        ),
        (25.0, 26.0, 30.0)
    );
    // The rest of the d.2 table.
    let res = |w: Option<f64>, c: Option<f64>| {
        let r = LoopDetectionConfig {
            warning_threshold: w,
            critical_threshold: c,
            ..Default::default()
        }
        .resolve();
        (
            r.warning_threshold,
            r.critical_threshold,
            r.global_circuit_breaker_threshold,
        )
    };
    assert_eq!(res(Some(30.0), None), (30.0, 31.0, 32.0));
    assert_eq!(res(None, Some(35.0)), (10.0, 35.0, 36.0));
    assert_eq!(res(Some(5.0), Some(5.0)), (5.0, 6.0, 30.0));
    assert_eq!(res(Some(2.0), Some(4.0)), (2.0, 4.0, 30.0));

    // Checked with identical R(READ): nothing at 24, warning at 25, critical at 26.
    let params = json(READ_PARAMS);
    let mut s = Session::new("s64");
    r_read_times(&mut s, &p, 24);
    assert!(d(&s, &p, "read", &params).is_none());
    r_read_times(&mut s, &p, 1);
    expect(
        d(&s, &p, "read", &params),
        Detector::GenericRepeat,
        Level::Warning,
        25,
    );
    r_read_times(&mut s, &p, 1);
    expect(
        d(&s, &p, "read", &params),
        Detector::GenericRepeat,
        Level::Critical,
        26,
    );
}

#[test]
fn s65_invalid_numbers_fall_back_at_runtime_and_are_rejected_by_the_check() {
    let p = enabled_with(LoopDetectionConfig {
        history_size: Some(0.0),
        critical_threshold: Some(2.5),
        ..Default::default()
    });
    assert_eq!(p.resolved.history_size, 30);
    assert_eq!(p.resolved.critical_threshold, 20.0);
    // historySize 0 really behaves as 30.
    let mut s = Session::new("s65");
    for i in 0..40 {
        let v = json(&format!(r#"{{"iteration":{i}}}"#));
        pp(&mut s, &p, "tool", &v, &format!("call-{i}"));
    }
    assert_eq!(s.history().records().len(), 30);

    for (text, path) in [
        (
            r#"{"tools":{"loopDetection":{"historySize":0}}}"#,
            "tools.loopDetection.historySize",
        ),
        (
            r#"{"tools":{"loopDetection":{"criticalThreshold":2.5}}}"#,
            "tools.loopDetection.criticalThreshold",
        ),
    ] {
        let loaded = OpenClawConfig::from_json5(text).unwrap();
        assert!(loaded.has_errors(), "{text}");
        assert!(
            loaded
                .diagnostics
                .iter()
                .any(|d| d.severity == Severity::Error
                    && d.kind == DiagnosticKind::NotPositiveInteger
                    && d.path == path),
            "{:?}",
            loaded.diagnostics
        );
        let resolved = loaded.config.policy_for(None).resolved;
        assert_eq!(resolved.history_size, 30);
        assert_eq!(resolved.critical_threshold, 20.0);
    }
}

#[test]
fn s66_agent_block_is_merged_field_by_field() {
    let global = LoopDetectionConfig {
        enabled: Some(true),
        warning_threshold: Some(10.0),
        detectors: Some(DetectorSwitches {
            ping_pong: Some(false),
            ..Default::default()
        }),
        post_compaction_guard: Some(PostCompactionGuardConfig {
            window_size: Some(5.0),
        }),
        ..Default::default()
    };
    let agent = LoopDetectionConfig {
        warning_threshold: Some(8.0),
        detectors: Some(DetectorSwitches {
            generic_repeat: Some(false),
            ..Default::default()
        }),
        ..Default::default()
    };
    let merged = LoopDetectionConfig::merge(Some(&global), Some(&agent)).unwrap();
    assert_eq!(
        merged,
        LoopDetectionConfig {
            enabled: Some(true),
            warning_threshold: Some(8.0),
            detectors: Some(DetectorSwitches {
                ping_pong: Some(false),
                generic_repeat: Some(false),
                known_poll_no_progress: None,
            }),
            post_compaction_guard: Some(PostCompactionGuardConfig {
                window_size: Some(5.0),
            }),
            ..Default::default()
        }
    );
    // No agent block: the global block as it is.
    assert_eq!(
        LoopDetectionConfig::merge(Some(&global), None),
        Some(global.clone())
    );

    // The same through a config file: another agent id gets the global block unchanged.
    let loaded = OpenClawConfig::from_json5(
        r#"{
          tools: { loopDetection: { enabled: true, warningThreshold: 10,
                                    detectors: { pingPong: false },
                                    postCompactionGuard: { windowSize: 5 } } },
          agents: { list: [ { id: "worker", tools: { loopDetection: {
                                    warningThreshold: 8, detectors: { genericRepeat: false } } } } ] },
        }"#,
    )
    .unwrap();
    assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
    assert_eq!(loaded.config.block_for(Some("worker")), Some(merged));
    assert_eq!(loaded.config.block_for(Some("other")), Some(global.clone()));
    assert_eq!(loaded.config.block_for(None), Some(global));
    let worker = loaded.config.policy_for(Some("worker"));
    assert_eq!(worker.resolved.warning_threshold, 8.0);
    assert!(!worker.resolved.generic_repeat && !worker.resolved.ping_pong);
    assert!(worker.resolved.known_poll_no_progress);
    assert_eq!(worker.guard.window_size, 5);
}

/// In R the cross-field checks do not reject the config: decisions.md item 3 makes them
/// auto-raise warnings naming the field (errors only in strict check mode). Unknown keys are
/// errors (decisions.md item 4).
#[test]
fn s67_schema_cross_field_checks_and_unknown_keys() {
    let check = |text: &str| OpenClawConfig::from_json5(text).unwrap().diagnostics;

    let d1 = check(r#"{"tools":{"loopDetection":{"warningThreshold":20,"criticalThreshold":20}}}"#);
    assert_eq!(d1.len(), 1, "{d1:?}");
    assert_eq!(d1[0].path, "tools.loopDetection.criticalThreshold");
    assert_eq!(d1[0].kind, DiagnosticKind::AutoRaised);
    assert_eq!(d1[0].severity, Severity::Warning);
    assert_contains(&d1[0].message, "21");

    let d2 = check(
        r#"{"tools":{"loopDetection":{"criticalThreshold":30,"globalCircuitBreakerThreshold":30}}}"#,
    );
    assert_eq!(d2.len(), 1, "{d2:?}");
    assert_eq!(
        d2[0].path,
        "tools.loopDetection.globalCircuitBreakerThreshold"
    );
    assert_eq!(d2[0].kind, DiagnosticKind::AutoRaised);
    assert_eq!(d2[0].severity, Severity::Warning);
    assert_contains(&d2[0].message, "31");

    let loaded =
        OpenClawConfig::from_json5(r#"{"tools":{"loopDetection":{"repeatThreshold":3}}}"#).unwrap();
    assert!(loaded.has_errors());
    let unknown = &loaded.diagnostics[0];
    assert_eq!(unknown.severity, Severity::Error);
    assert!(matches!(unknown.kind, DiagnosticKind::UnknownKey { .. }));
    assert_eq!(unknown.path, "tools.loopDetection.repeatThreshold");
    assert!(unknown.is_fatal_at_runtime());
}

// ---------------------------------------------------------------------------------------
// Post-compaction guard (68-79)
// ---------------------------------------------------------------------------------------

fn guard(window_size: u32, enabled: bool) -> CompactionGuard {
    CompactionGuard::new(GuardSettings {
        enabled,
        window_size,
    })
}

fn rh(label: &str) -> ResultHash {
    ResultHash {
        is_error: false,
        digest: digest_value(&Value::from(label)),
    }
}

/// `obs(tool, args, r)`.
fn obs(g: &mut CompactionGuard, tool: &str, args: &str, r: &str) -> loopguard_core::GuardVerdict {
    g.observe(tool.as_bytes(), args_digest(tool, &json(args)), rh(r))
}

const LOOKUP_X: &str = r#"{"action":"lookup","path":"x"}"#;

#[test]
fn s68_never_armed_guard_does_not_abort() {
    let mut g = guard(3, true);
    assert!(!g.is_armed());
    let v = obs(&mut g, "gateway", LOOKUP_X, "r1");
    assert!(v.abort.is_none());
    assert!(!v.armed);
    assert_eq!(v.remaining_attempts, 0);
}

#[test]
fn s69_armed_guard_snapshot() {
    let mut g = guard(3, true);
    g.arm();
    assert!(g.is_armed());
    assert_eq!(g.remaining_attempts(), 3);
}

#[test]
fn s70_window_counts_down_and_disarms() {
    let mut g = guard(3, true);
    g.arm();
    let got: Vec<_> = ["/a", "/b", "/c"]
        .iter()
        .map(|p| {
            let v = obs(&mut g, "read", &format!(r#"{{"path":"{p}"}}"#), "r1");
            assert!(v.abort.is_none());
            v.remaining_attempts
        })
        .collect();
    assert_eq!(got, [2, 1, 0]);
    assert!(!g.is_armed());
}

#[test]
fn s71_three_identical_triples_abort_compaction_loop_persisted() {
    let mut g = guard(3, true);
    g.arm();
    assert!(obs(&mut g, "gateway", LOOKUP_X, "r1").abort.is_none());
    assert!(obs(&mut g, "gateway", LOOKUP_X, "r1").abort.is_none());
    let v = obs(&mut g, "gateway", LOOKUP_X, "r1");
    let abort = v.abort.expect("third identical observation aborts");
    assert_eq!(abort.count, 3);
    assert_eq!(abort.tool.as_str(), Some("gateway"));
    let msg = abort.message.to_string();
    assert!(msg.starts_with(
        "CRITICAL: tool gateway repeated 3 times with identical arguments and identical results within 3 attempts after auto-compaction."
    ));
    assert_contains(&msg, "compaction did not break the loop");
    // The detector name of this verdict.
    assert_eq!(
        Detector::CompactionLoopPersisted.as_str(),
        "compaction_loop_persisted"
    );
}

#[test]
fn s72_changing_results_do_not_abort() {
    let mut g = guard(3, true);
    g.arm();
    for r_ in ["r1", "r2", "r3"] {
        assert!(obs(&mut g, "gateway", LOOKUP_X, r_).abort.is_none());
    }
}

#[test]
fn s73_changing_args_do_not_abort() {
    let mut g = guard(3, true);
    g.arm();
    for p in ["/a", "/b", "/c"] {
        let args = format!(r#"{{"action":"lookup","path":"{p}"}}"#);
        assert!(obs(&mut g, "gateway", &args, "r1").abort.is_none());
    }
}

#[test]
fn s74_window_two_aborts_on_second_then_stays_disarmed() {
    let mut g = guard(2, true);
    g.arm();
    assert!(obs(&mut g, "gateway", LOOKUP_X, "r1").abort.is_none());
    let second = obs(&mut g, "gateway", LOOKUP_X, "r1");
    assert_eq!(second.abort.as_ref().map(|a| a.count), Some(2));
    let third = obs(&mut g, "gateway", LOOKUP_X, "r1");
    assert!(third.abort.is_none());
    assert!(!third.armed);
    assert!(!g.is_armed());
}

#[test]
fn s75_rearm_after_use() {
    let mut g = guard(2, true);
    g.arm();
    obs(&mut g, "gateway", LOOKUP_X, "r1");
    obs(&mut g, "gateway", LOOKUP_X, "r1");
    assert!(!g.is_armed());
    g.arm();
    assert!(g.is_armed());
    assert_eq!(g.remaining_attempts(), 2);
    // The observations were cleared: one more identical triple does not abort.
    assert!(obs(&mut g, "gateway", LOOKUP_X, "r1").abort.is_none());
}

#[test]
fn s76_disabled_guard_never_aborts() {
    let mut g = guard(3, false);
    g.arm();
    for _ in 0..6 {
        let v = obs(&mut g, "gateway", LOOKUP_X, "r1");
        assert!(v.abort.is_none());
        assert!(!v.armed);
    }
    // The same settings come out of a block with `enabled: false` and windowSize 3.
    let p = Policy::from_block(Some(LoopDetectionConfig {
        enabled: Some(false),
        post_compaction_guard: Some(PostCompactionGuardConfig {
            window_size: Some(3.0),
        }),
        ..Default::default()
    }));
    assert_eq!(
        p.guard,
        GuardSettings {
            enabled: false,
            window_size: 3
        }
    );
}

#[test]
fn s77_three_different_tools_disarm_without_abort() {
    let mut g = guard(3, true);
    g.arm();
    for tool in ["read", "write", "gateway"] {
        assert!(obs(&mut g, tool, LOOKUP_X, "r1").abort.is_none());
    }
    assert!(!g.is_armed());
    assert_eq!(g.remaining_attempts(), 0);
}

/// OpenClaw's `PostCompactionLoopPersistedError` is, in loopguard, the `GuardAbort` carried by
/// the guard verdict and by `Session::after_call` (detector `compaction_loop_persisted`,
/// count, tool and the verdict's message).
#[test]
fn s78_abort_carries_detector_count_tool_and_message() {
    let mut g = guard(4, true);
    g.arm();
    let mut last = None;
    for _ in 0..4 {
        last = Some(obs(&mut g, "gateway", LOOKUP_X, "r1"));
    }
    let abort = last.unwrap().abort.expect("aborts on the 4th");
    assert_eq!(abort.count, 4);
    assert_eq!(abort.tool.as_str(), Some("gateway"));
    assert_contains(&abort.message.to_string(), "repeated 4 times");

    // Through the session: after a compaction, the 3rd identical outcome aborts the run.
    let p = Policy::default();
    let mut s = Session::new("s78");
    let params = json(LOOKUP_X);
    let res = text_result("same schema");
    assert!(s.on_compaction(&p, None).armed);
    let mut aborts = Vec::new();
    for i in 0..3 {
        let id = format!("gateway-{i}");
        let call = Call::new("gateway", &params).call_id(id.as_str());
        assert!(matches!(s.before_call(&p, &call).verdict, Verdict::Allow));
        aborts.push(s.after_call(&p, &call, Outcome::Result(&res)).abort);
    }
    assert!(aborts[0].is_none() && aborts[1].is_none());
    let abort = aborts[2].clone().expect("third aborts");
    assert_eq!(abort.count, 3);
    assert_eq!(abort.tool.as_str(), Some("gateway"));
    assert!(abort
        .message
        .to_string()
        .starts_with("CRITICAL: tool gateway repeated 3 times"));
}

#[test]
fn s79_guard_wiring_follows_enabled() {
    let policy = |text: &str, agent: Option<&str>| {
        let loaded = OpenClawConfig::from_json5(text).unwrap();
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        loaded.config.policy_for(agent)
    };
    // No block at all: on.
    assert!(policy("{}", None).guard.enabled);
    assert!(Policy::default().guard.enabled);
    // `enabled: true`, or unset in a block: on.
    assert!(
        policy(r#"{tools:{loopDetection:{enabled:true}}}"#, None)
            .guard
            .enabled
    );
    assert!(
        policy(r#"{tools:{loopDetection:{warningThreshold:12}}}"#, None)
            .guard
            .enabled
    );
    // Explicit `enabled: false`: off.
    assert!(
        !policy(r#"{tools:{loopDetection:{enabled:false}}}"#, None)
            .guard
            .enabled
    );
    // Agent-level false overrides a global true.
    let text = r#"{tools:{loopDetection:{enabled:true}},
                   agents:{list:[{id:"quiet",tools:{loopDetection:{enabled:false}}}]}}"#;
    assert!(!policy(text, Some("quiet")).guard.enabled);
    assert!(policy(text, Some("other")).guard.enabled);

    // A disabled guard reports itself unarmed on compaction.
    let off = policy(r#"{tools:{loopDetection:{enabled:false}}}"#, None);
    let mut s = Session::new("s79");
    assert!(!s.on_compaction(&off, None).armed);
}

// ---------------------------------------------------------------------------------------
// Wrapper / end-to-end (80-90)
// ---------------------------------------------------------------------------------------

/// One wrapped execution: before_call, then (unless blocked) the tool "runs" and its result
/// goes to after_call. A blocked call gets the veto result inside `before_call`.
fn execute(
    s: &mut Session,
    p: &Policy,
    tool: &str,
    params: &Value<'_>,
    result: &Value<'_>,
    i: usize,
    run: Option<&str>,
) -> Verdict {
    let id = format!("{tool}-{i}");
    let mut call = Call::new(tool, params).call_id(id.as_str());
    if let Some(run) = run {
        call = call.run(run);
    }
    let decision = s.before_call(p, &call);
    if !decision.is_block() {
        let _ = s.after_call(p, &call, Outcome::Result(result));
    }
    decision.verdict
}

/// A `tool.loop` diagnostic event: an emitted warning or a block.
#[derive(Debug, PartialEq)]
struct LoopEvent {
    level: &'static str,
    action: &'static str,
    detector: &'static str,
    count: u64,
    tool: String,
    paired_tool: Option<String>,
}

fn loop_event(tool: &str, v: &Verdict) -> Option<LoopEvent> {
    let (det, action) = match v {
        Verdict::Warn {
            detection,
            emitted: true,
            ..
        } => (detection, "warn"),
        Verdict::Block { detection, .. } => (detection, "block"),
        _ => return None,
    };
    Some(LoopEvent {
        level: det.level.as_str(),
        action,
        detector: det.detector.as_str(),
        count: det.count,
        tool: tool.to_string(),
        paired_tool: det.paired_tool.as_ref().map(|t| t.to_string()),
    })
}

#[track_caller]
fn assert_veto_result(det: &Detection) {
    let veto = veto_result(&det.message);
    let text = veto
        .get("content")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .and_then(|t| t.get("text"))
        .and_then(Value::as_str)
        .expect("content[0].text");
    assert_contains(text, "CRITICAL");
    let details = veto.get("details").expect("details");
    assert_eq!(
        details.get("status").and_then(Value::as_str),
        Some("blocked")
    );
    assert_eq!(
        details.get("deniedReason").and_then(Value::as_str),
        Some("tool-loop")
    );
    let reason = details
        .get("reason")
        .and_then(Value::as_str)
        .expect("reason");
    assert_contains(reason, "CRITICAL");
}

#[test]
fn s80_poll_is_blocked_on_the_21st_execution() {
    let p = Policy::enabled();
    let mut s = Session::new("s80");
    let (params, result) = (json(POLL_PARAMS), json(POLL_RESULT));
    for i in 0..20 {
        let v = execute(&mut s, &p, "process", &params, &result, i, None);
        assert!(
            !matches!(v, Verdict::Block { .. }),
            "execution {} blocked",
            i + 1
        );
    }
    let v = execute(&mut s, &p, "process", &params, &result, 20, None);
    let Verdict::Block { detection, .. } = &v else {
        panic!("21st execution not blocked: {v:?}");
    };
    assert_eq!(detection.detector, Detector::KnownPollNoProgress);
    assert_eq!(detection.count, 20);
    assert_veto_result(detection);
    // A blocked call writes no record (decisions.md item 10) and the veto records no
    // outcome, so the block is sticky.
    assert_eq!(s.history().records().len(), 20);
    let again = execute(&mut s, &p, "process", &params, &result, 21, None);
    assert!(matches!(again, Verdict::Block { .. }));
    assert_eq!(s.history().records().len(), 20);
}

#[test]
fn s81_disabled_context_never_blocks() {
    let p = Policy::from_block(Some(LoopDetectionConfig {
        enabled: Some(false),
        ..Default::default()
    }));
    let mut s = Session::new("s81");
    let (params, result) = (json(POLL_PARAMS), json(POLL_RESULT));
    for i in 0..25 {
        let v = execute(&mut s, &p, "process", &params, &result, i, None);
        assert_eq!(v, Verdict::Allow, "execution {}", i + 1);
    }
}

#[test]
fn s82_progressing_poll_outputs_never_block() {
    let p = Policy::enabled();
    let mut s = Session::new("s82");
    let params = json(POLL_PARAMS);
    for i in 0..25 {
        let res = result_with(
            &format!("line {i}"),
            &format!(r#"{{"status":"running","aggregated":"line {i}"}}"#),
        );
        let v = execute(&mut s, &p, "process", &params, &res, i, None);
        assert!(!matches!(v, Verdict::Block { .. }), "execution {}", i + 1);
    }
}

#[test]
fn s83_identical_reads_are_blocked_on_the_21st_execution() {
    let p = Policy::enabled();
    let mut s = Session::new("s83");
    let (params, result) = (json(READ_PARAMS), json(READ_RESULT));
    for i in 0..20 {
        let v = execute(&mut s, &p, "read", &params, &result, i, None);
        assert!(!matches!(v, Verdict::Block { .. }), "execution {}", i + 1);
    }
    let v = execute(&mut s, &p, "read", &params, &result, 20, None);
    let Verdict::Block { detection, .. } = &v else {
        panic!("21st execution not blocked: {v:?}");
    };
    assert_eq!(detection.detector, Detector::GenericRepeat);
    assert_contains(&detection.message.to_string(), "identical outcomes");
    assert_veto_result(detection);
    let reason = veto_result(&detection.message);
    assert_contains(
        reason
            .get("details")
            .and_then(|d| d.get("reason"))
            .and_then(Value::as_str)
            .unwrap(),
        "identical outcomes",
    );
}

#[test]
fn s84_new_run_is_not_blocked_by_old_run_history() {
    let p = Policy::enabled();
    let mut s = Session::new("s84");
    let (params, result) = (json(READ_PARAMS), json(READ_RESULT));
    let mut emitted_keys = Vec::new();
    for i in 0..20 {
        let v = execute(&mut s, &p, "read", &params, &result, i, Some("heartbeat-1"));
        assert!(!matches!(v, Verdict::Block { .. }));
        if let Verdict::Warn {
            key, emitted: true, ..
        } = &v
        {
            emitted_keys.push(key.to_string());
        }
    }
    // The wrapper prefixes the detector's key with the run id (f.1.d).
    assert_eq!(
        emitted_keys,
        [format!(
            "heartbeat-1:generic:read:{}",
            args_hash("read", &params)
        )]
    );
    let v = execute(
        &mut s,
        &p,
        "read",
        &params,
        &result,
        20,
        Some("heartbeat-2"),
    );
    assert_eq!(v, Verdict::Allow);
}

#[test]
fn s85_generic_repeat_events_are_warning_10_then_critical_20() {
    let p = Policy::enabled();
    let mut s = Session::new("s85");
    let (params, result) = (json(READ_PARAMS), json(READ_RESULT));
    let mut events = Vec::new();
    for i in 0..21 {
        let v = execute(&mut s, &p, "read", &params, &result, i, None);
        events.extend(loop_event("read", &v));
    }
    let generic: Vec<_> = events
        .iter()
        .filter(|e| e.detector == "generic_repeat")
        .map(|e| (e.level, e.count))
        .collect();
    assert_eq!(generic, [("warning", 10), ("critical", 20)]);
    assert_eq!(events.len(), 2, "{events:?}");
}

#[test]
fn s86_ping_pong_warning_is_emitted_once_for_the_pair() {
    let p = Policy::enabled();
    let mut s = Session::new("s86");
    let (read, list) = (read_a(), list_ws());
    let (read_out, list_out) = (text_result("read stable"), text_result("list stable"));
    let mut events = Vec::new();
    let mut warn_keys = Vec::new();
    for i in 0..12 {
        let (tool, params, out) = if i % 2 == 0 {
            ("read", &read, &read_out)
        } else {
            ("list", &list, &list_out)
        };
        let v = execute(&mut s, &p, tool, params, out, i, None);
        if let Verdict::Warn { key, .. } = &v {
            warn_keys.push(key.to_string());
        }
        events.extend(loop_event(tool, &v));
    }
    assert_eq!(
        events,
        [LoopEvent {
            level: "warning",
            action: "warn",
            detector: "ping_pong",
            count: 10,
            tool: "list".into(),
            paired_tool: Some("read".into()),
        }]
    );
    // list(9), read(10), list(11) all warned under the same canonical pair key.
    assert_eq!(warn_keys, vec![read_list_pair_key(); 3]);
}

#[test]
fn s87_stable_ping_pong_is_blocked_at_20() {
    let p = Policy::enabled();
    let mut s = Session::new("s87");
    let (read, list) = (read_a(), list_ws());
    let (read_out, list_out) = (text_result("read stable"), text_result("list stable"));
    let mut events = Vec::new();
    let mut last = Verdict::Allow;
    for i in 0..20 {
        let (tool, params, out) = if i % 2 == 0 {
            ("read", &read, &read_out)
        } else {
            ("list", &list, &list_out)
        };
        last = execute(&mut s, &p, tool, params, out, i, None);
        if i < 19 {
            assert!(!matches!(last, Verdict::Block { .. }), "call {i} blocked");
        }
        events.extend(loop_event(tool, &last));
    }
    let Verdict::Block { detection, .. } = &last else {
        panic!("20th call not blocked: {last:?}");
    };
    assert_contains(&detection.message.to_string(), "CRITICAL");
    assert_veto_result(detection);
    assert_eq!(
        events.last(),
        Some(&LoopEvent {
            level: "critical",
            action: "block",
            detector: "ping_pong",
            count: 20,
            tool: "list".into(),
            paired_tool: Some("read".into()),
        })
    );
}

#[test]
fn s88_progressing_ping_pong_is_never_blocked() {
    let p = Policy::enabled();
    let mut s = Session::new("s88");
    let (read, list) = (read_a(), list_ws());
    let mut events = Vec::new();
    for i in 0..30 {
        let (tool, params) = if i % 2 == 0 {
            ("read", &read)
        } else {
            ("list", &list)
        };
        let out = text_result(&format!("{tool} {i}"));
        let v = execute(&mut s, &p, tool, params, &out, i, None);
        assert!(!matches!(v, Verdict::Block { .. }), "call {i} blocked");
        events.extend(loop_event(tool, &v));
    }
    assert!(!events
        .iter()
        .any(|e| e.detector == "ping_pong" && e.level == "critical"));
    assert!(events
        .iter()
        .any(|e| e.detector == "ping_pong" && e.level == "warning"));
}

#[test]
fn s89_poll_critical_emits_a_block_event() {
    let p = Policy::enabled();
    let mut s = Session::new("s89");
    let (params, result) = (json(POLL_PARAMS), json(POLL_RESULT));
    let mut events = Vec::new();
    for i in 0..21 {
        let v = execute(&mut s, &p, "process", &params, &result, i, None);
        events.extend(loop_event("process", &v));
    }
    assert_eq!(
        events.last(),
        Some(&LoopEvent {
            level: "critical",
            action: "block",
            detector: "known_poll_no_progress",
            count: 20,
            tool: "process".into(),
            paired_tool: None,
        })
    );
    // The warning at 10 was emitted once before it.
    assert_eq!(
        events
            .iter()
            .map(|e| (e.level, e.count))
            .collect::<Vec<_>>(),
        [("warning", 10), ("critical", 20)]
    );
}

/// Plugin hooks belong to the embedding runtime, not to loopguard; what the library sees of
/// a plugin veto is its result. Pinned here: the loop detector itself does not block the
/// call, and the plugin's veto result (same shape as the loop's veto, but
/// `deniedReason: "plugin-before-tool-call"`) is an ordinary outcome with a hash, while the
/// loop's own veto records nothing.
#[test]
fn s90_plugin_veto_result_is_an_ordinary_outcome_not_a_loop_veto() {
    let p = Policy::enabled();
    let mut s = Session::new("s90");
    let params = json(r#"{"path":"/etc/shadow"}"#);
    let call = Call::new("read", &params).call_id("read-0");
    assert_eq!(s.before_call(&p, &call).verdict, Verdict::Allow);
    let plugin_veto = result_with(
        "blocked by policy",
        r#"{"status":"blocked","deniedReason":"plugin-before-tool-call","reason":"blocked by policy"}"#,
    );
    let out = s.after_call(&p, &call, Outcome::Result(&plugin_veto));
    assert!(out.result.is_some(), "a plugin veto is hashed");
    assert!(s.history().records()[0].result.is_some());

    let loop_veto = veto_result(&"CRITICAL: stop".into());
    let h = hash_outcome(
        b"read",
        &params,
        Outcome::Result(&loop_veto),
        &Hashing::default(),
    );
    assert!(h.result_hash.is_none(), "the loop's own veto is not hashed");
}

// ---------------------------------------------------------------------------------------
// Unknown-tool stream guard threshold (91)
// ---------------------------------------------------------------------------------------

#[test]
fn s91_unknown_tool_stream_guard_threshold() {
    let t = |enabled: Option<bool>, v: Option<f64>| {
        unknown_tool_guard_threshold(Some(&LoopDetectionConfig {
            enabled,
            unknown_tool_threshold: v,
            ..Default::default()
        }))
    };
    assert_eq!(t(Some(false), None), 10);
    assert_eq!(t(Some(false), Some(3.0)), 3);
    assert_eq!(t(None, Some(4.0)), 4);
    assert_eq!(t(None, Some(0.0)), 10);
    assert_eq!(t(None, Some(-5.0)), 10);
    assert_eq!(t(None, Some(f64::NAN)), 10);
    assert_eq!(t(None, Some(3.7)), 3);
    assert_eq!(unknown_tool_guard_threshold(None), 10);
}

// Scenarios 92-95 are Era D only (argument churn): not part of R.
