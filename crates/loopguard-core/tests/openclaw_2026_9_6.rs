//! The `openclaw-2026.9.6` engine against the decisions of the shipped release: every case of
//! `tests/fixtures/openclaw-2026.9.6` (produced by running the `openclaw@2026.9.6` npm
//! package's own detector and wrapper code, see that directory's README) replayed event by
//! event through a `ShippedSession` per session gives exactly the expected records.
//!
//! The outcomes of blocked calls are absorbed here as docs/events.md describes (the guard
//! layer's job in the front ends).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use loopguard_core::openclaw_2026_9_6::{
    channels, loop_detection_enabled, ShippedSession, ShippedVerdict,
};
use loopguard_core::{
    Call, DetectorProfile, Mode, OpenClawConfig, Outcome, Session, Value, Verdict,
};
use serde_json::{json, Map, Value as Json};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/openclaw-2026.9.6")
}

fn cases() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .expect("the fixtures directory")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".events.jsonl").map(str::to_string)
        })
        .collect();
    names.sort();
    assert!(
        names.len() >= 50,
        "openclaw-2026.9.6 fixtures missing: {}",
        names.len()
    );
    names
}

fn opt_str(ev: &Value<'_>, key: &str) -> Option<String> {
    ev.get(key)
        .and_then(Value::as_js_str)
        .map(|s| s.to_string_lossy().into_owned())
}

struct Blocked {
    call_id: Option<String>,
    run: Option<String>,
    tool: Vec<u8>,
    args_hash: String,
}

fn run_case(name: &str) -> Vec<Json> {
    let config_text = std::fs::read(dir().join(format!("{name}.config.json"))).expect("config");
    let config = Value::parse(&config_text).expect("config JSON");
    let chans = channels(&config);
    let events = std::fs::read(dir().join(format!("{name}.events.jsonl"))).expect("events");
    let mut sessions: HashMap<String, (ShippedSession, Vec<Blocked>)> = HashMap::new();
    let mut out = Vec::new();
    for (i, line) in events.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let ev = Value::parse(line).unwrap_or_else(|e| panic!("{name}:{}: {e}", i + 1));
        let session = opt_str(&ev, "session").unwrap_or_else(|| "default".into());
        let run_raw = opt_str(&ev, "run");
        let run = run_raw
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(str::to_owned);
        let call_id = opt_str(&ev, "callId").filter(|c| !c.is_empty());
        let agent = opt_str(&ev, "agent");
        let enabled = loop_detection_enabled(&config, agent.as_deref());
        let (s, blocked) = sessions.entry(session.clone()).or_default();
        let mut rec = Map::new();
        rec.insert("line".into(), json!(i + 1));
        let ty = opt_str(&ev, "type").expect("type");
        rec.insert("type".into(), json!(ty));
        rec.insert("session".into(), json!(session));
        rec.insert("run".into(), json!(run_raw));
        rec.insert("callId".into(), json!(opt_str(&ev, "callId")));
        let run_b = run_raw.as_deref().map(str::as_bytes);
        let call_b = call_id.as_deref().map(str::as_bytes);
        if ty == "compaction" {
            let armed = s.on_compaction(enabled, run_b);
            rec.insert(
                "decision".into(),
                json!(if armed { "armed" } else { "ignored" }),
            );
            out.push(Json::Object(rec));
            continue;
        }
        let tool_raw = ev.get("tool").and_then(Value::as_js_str).expect("tool");
        let empty = Value::empty_object();
        let args = ev.get("args").unwrap_or(&empty);
        if ty == "call" {
            let d = s.before_call(enabled, tool_raw.as_wtf8(), args, call_b, run_b);
            let call_args_hash = d.args_hash();
            rec.insert("tool".into(), json!(tool_raw.to_string_lossy()));
            rec.insert("argsHash".into(), json!(call_args_hash));
            match d.verdict {
                ShippedVerdict::Allow => {
                    rec.insert("decision".into(), json!("allow"));
                }
                ShippedVerdict::Warn {
                    detection,
                    key,
                    emitted,
                    note,
                } => {
                    rec.insert("decision".into(), json!("warn"));
                    rec.insert("detector".into(), json!(detection.detector));
                    rec.insert("level".into(), json!("warning"));
                    rec.insert("count".into(), json!(detection.count));
                    rec.insert("message".into(), json!(detection.message));
                    rec.insert("warningKey".into(), json!(key));
                    if let Some(p) = detection.paired_tool {
                        rec.insert("pairedTool".into(), json!(p));
                    }
                    rec.insert("emitted".into(), json!(emitted));
                    if let Some(n) = note {
                        rec.insert("shown".into(), json!(n));
                    }
                }
                ShippedVerdict::Block {
                    detection,
                    key,
                    ends_run,
                    shown,
                } => {
                    rec.insert(
                        "decision".into(),
                        json!(if ends_run { "abort" } else { "block" }),
                    );
                    rec.insert("detector".into(), json!(detection.detector));
                    rec.insert("level".into(), json!("critical"));
                    rec.insert("count".into(), json!(detection.count));
                    rec.insert("message".into(), json!(detection.message));
                    rec.insert("warningKey".into(), json!(key));
                    if let Some(p) = detection.paired_tool {
                        rec.insert("pairedTool".into(), json!(p));
                    }
                    rec.insert("emitted".into(), json!(true));
                    rec.insert("shown".into(), json!(shown));
                    blocked.push(Blocked {
                        call_id: call_id.clone(),
                        run: run.clone(),
                        tool: d.tool.clone(),
                        args_hash: call_args_hash.clone(),
                    });
                }
            }
            out.push(Json::Object(rec));
            continue;
        }
        assert_eq!(ty, "outcome", "{name}:{}", i + 1);
        let tool = loopguard_core::openclaw_2026_9_6::normalize_tool_name(tool_raw.as_wtf8());
        let args_hash = loopguard_core::openclaw_2026_9_6::args_hash(&tool, args);
        rec.insert("tool".into(), json!(tool_raw.to_string_lossy()));
        rec.insert("argsHash".into(), json!(args_hash));
        let at = blocked.iter().rposition(|b| match &call_id {
            Some(c) => b.call_id.as_deref() == Some(c.as_str()),
            None => b.run == run && b.tool == tool && b.args_hash == args_hash,
        });
        if let Some(at) = at {
            blocked.remove(at);
            rec.insert("resultHash".into(), Json::Null);
            rec.insert("decision".into(), json!("ignored"));
            out.push(Json::Object(rec));
            continue;
        }
        let outcome = match (ev.get("error"), ev.get("result")) {
            (Some(e), _) => Outcome::Error(e),
            (None, Some(r)) => Outcome::Result(r),
            (None, None) => Outcome::Undefined,
        };
        let d = s.after_call(
            enabled,
            tool_raw.as_wtf8(),
            args,
            call_b,
            run_b,
            outcome,
            chans,
        );
        rec.insert("resultHash".into(), json!(d.result.map(|r| r.to_string())));
        match d.abort {
            Some(a) => {
                rec.insert("decision".into(), json!("abort"));
                rec.insert("detector".into(), json!("compaction_loop_persisted"));
                rec.insert("level".into(), json!("critical"));
                rec.insert("count".into(), json!(a.count));
                rec.insert("message".into(), json!(a.message));
            }
            None => {
                rec.insert("decision".into(), json!("recorded"));
            }
        }
        out.push(Json::Object(rec));
    }
    out
}

#[test]
fn every_case_matches_the_shipped_release() {
    let mut failures = Vec::new();
    let names = cases();
    for name in &names {
        let expected = std::fs::read_to_string(dir().join(format!("{name}.expected.jsonl")))
            .expect("expected decisions");
        let want: Vec<Json> = expected
            .lines()
            .map(|l| serde_json::from_str(l).expect("expected JSON"))
            .collect();
        let got = run_case(name);
        if got.len() != want.len() {
            failures.push(format!(
                "{name}: {} records, expected {}",
                got.len(),
                want.len()
            ));
            continue;
        }
        if let Some((g, w)) = got.iter().zip(&want).find(|(g, w)| g != w) {
            failures.push(format!("{name}:\n  got      {g}\n  expected {w}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        names.len(),
        failures.join("\n")
    );
}

/// The same cases through `Session` with the profile selected in the config
/// (`loopguard.profile`), exporting and importing the session's state (JSON and binary in
/// turn) between every two events, as the stores and the hooks do.
fn run_case_through_session(name: &str) -> Vec<Json> {
    let text = std::fs::read_to_string(dir().join(format!("{name}.config.json"))).expect("config");
    let mut config = OpenClawConfig::from_json5(&text)
        .expect("config loads")
        .config;
    config.set_profile(DetectorProfile::OpenClaw2026_9_6);
    let events = std::fs::read(dir().join(format!("{name}.events.jsonl"))).expect("events");
    let mut sessions: HashMap<String, (Vec<u8>, Vec<Blocked>)> = HashMap::new();
    let mut out = Vec::new();
    for (i, line) in events.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let ev = Value::parse(line).unwrap_or_else(|e| panic!("{name}:{}: {e}", i + 1));
        let key = opt_str(&ev, "session").unwrap_or_else(|| "default".into());
        let run_raw = opt_str(&ev, "run");
        let run = run_raw
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(str::to_owned);
        let call_id = opt_str(&ev, "callId").filter(|c| !c.is_empty());
        let agent = opt_str(&ev, "agent");
        let policy = config.policy_for(agent.as_deref());
        let (saved, blocked) = sessions
            .entry(key.clone())
            .or_insert_with(|| (Session::new(key.clone()).export_state(), Vec::new()));
        let mut session = Session::import_state(saved, key.clone()).expect("state imports");
        assert_eq!(session.mode(), Mode::Enforce);
        let mut rec = Map::new();
        rec.insert("line".into(), json!(i + 1));
        let ty = opt_str(&ev, "type").expect("type");
        rec.insert("type".into(), json!(ty));
        rec.insert("session".into(), json!(key));
        rec.insert("run".into(), json!(run_raw));
        rec.insert("callId".into(), json!(opt_str(&ev, "callId")));
        if ty == "compaction" {
            let run_js = ev.get("run").and_then(Value::as_js_str);
            let d = session.on_compaction(&policy, run_js);
            rec.insert(
                "decision".into(),
                json!(if d.armed { "armed" } else { "ignored" }),
            );
        } else {
            let tool_raw = ev
                .get("tool")
                .and_then(Value::as_js_str)
                .expect("tool")
                .clone();
            let empty = Value::empty_object();
            let args = ev.get("args").unwrap_or(&empty);
            let mut call = Call::new(tool_raw.clone(), args);
            if let Some(r) = ev.get("run").and_then(Value::as_js_str) {
                call = call.run(r.clone());
            }
            if let Some(c) = ev.get("callId").and_then(Value::as_js_str) {
                call = call.call_id(c.clone());
            }
            let tool = loopguard_core::openclaw_2026_9_6::normalize_tool_name(tool_raw.as_wtf8());
            let args_hash = loopguard_core::openclaw_2026_9_6::args_hash(&tool, args);
            rec.insert("tool".into(), json!(tool_raw.to_string_lossy()));
            rec.insert("argsHash".into(), json!(args_hash));
            if ty == "call" {
                let d = session.before_call(&policy, &call);
                let hex = loopguard_core::hashing::hex(&d.args.0);
                assert!(args_hash.ends_with(&hex), "{name}:{}: the digest", i + 1);
                let detection_fields =
                    |rec: &mut Map<String, Json>, d: &loopguard_core::Detection, key: &str| {
                        rec.insert("detector".into(), json!(d.detector.as_str()));
                        rec.insert("level".into(), json!(d.level.as_str()));
                        rec.insert("count".into(), json!(d.count));
                        rec.insert("message".into(), json!(d.message.to_string()));
                        rec.insert("warningKey".into(), json!(key));
                        if let Some(p) = &d.paired_tool {
                            rec.insert("pairedTool".into(), json!(p.to_string()));
                        }
                    };
                match &d.verdict {
                    Verdict::Allow => {
                        rec.insert("decision".into(), json!("allow"));
                    }
                    Verdict::Warn {
                        detection,
                        key,
                        emitted,
                    } => {
                        rec.insert("decision".into(), json!("warn"));
                        detection_fields(&mut rec, detection, &key.to_string());
                        rec.insert("emitted".into(), json!(emitted));
                    }
                    Verdict::Block { detection, key } => {
                        rec.insert(
                            "decision".into(),
                            json!(if d.ends_run { "abort" } else { "block" }),
                        );
                        detection_fields(&mut rec, detection, &key.to_string());
                        rec.insert("emitted".into(), json!(true));
                        blocked.push(Blocked {
                            call_id: call_id.clone(),
                            run: run.clone(),
                            tool: tool.clone(),
                            args_hash: args_hash.clone(),
                        });
                    }
                }
            } else {
                let at = blocked.iter().rposition(|b| match &call_id {
                    Some(c) => b.call_id.as_deref() == Some(c.as_str()),
                    None => b.run == run && b.tool == tool && b.args_hash == args_hash,
                });
                if let Some(at) = at {
                    blocked.remove(at);
                    rec.insert("resultHash".into(), Json::Null);
                    rec.insert("decision".into(), json!("ignored"));
                } else {
                    let outcome = match (ev.get("error"), ev.get("result")) {
                        (Some(e), _) => Outcome::Error(e),
                        (None, Some(r)) => Outcome::Result(r),
                        (None, None) => Outcome::Undefined,
                    };
                    let d = session.after_call(&policy, &call, outcome);
                    rec.insert("resultHash".into(), json!(d.result.map(|r| r.to_string())));
                    match d.abort {
                        Some(a) => {
                            rec.insert("decision".into(), json!("abort"));
                            rec.insert("detector".into(), json!("compaction_loop_persisted"));
                            rec.insert("level".into(), json!("critical"));
                            rec.insert("count".into(), json!(a.count));
                            rec.insert("message".into(), json!(a.message.to_string()));
                        }
                        None => {
                            rec.insert("decision".into(), json!("recorded"));
                        }
                    }
                }
            }
        }
        *saved = if i % 2 == 0 {
            session.export_state()
        } else {
            session.export_state_binary()
        };
        out.push(Json::Object(rec));
    }
    out
}

/// The records without what only the wrapper shows the model (`shown`), which `Session`
/// leaves to the front ends.
fn without_shown(records: &[Json]) -> Vec<Json> {
    records
        .iter()
        .map(|r| {
            let mut r = r.clone();
            if let Some(o) = r.as_object_mut() {
                o.remove("shown");
            }
            r
        })
        .collect()
}

#[test]
fn every_case_matches_through_a_session_with_the_profile_and_state_round_trips() {
    let mut failures = Vec::new();
    let names = cases();
    for name in &names {
        let expected = std::fs::read_to_string(dir().join(format!("{name}.expected.jsonl")))
            .expect("expected decisions");
        let want: Vec<Json> = expected
            .lines()
            .map(|l| serde_json::from_str(l).expect("expected JSON"))
            .collect();
        let want = without_shown(&want);
        let got = run_case_through_session(name);
        if got.len() != want.len() {
            failures.push(format!(
                "{name}: {} records, expected {}",
                got.len(),
                want.len()
            ));
            continue;
        }
        if let Some((g, w)) = got.iter().zip(&want).find(|(g, w)| g != w) {
            failures.push(format!("{name}:\n  got      {g}\n  expected {w}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        names.len(),
        failures.join("\n")
    );
}

#[test]
fn the_profile_is_named_in_the_config() {
    let loaded = OpenClawConfig::from_json5(
        r#"{ tools: { loopDetection: { enabled: true } }, loopguard: { profile: "openclaw-2026.9.6" } }"#,
    )
    .expect("loads");
    assert!(!loaded.has_errors());
    let policy = loaded.config.policy_for(None);
    assert_eq!(policy.extra.profile, DetectorProfile::OpenClaw2026_9_6);
    assert_eq!(policy.extra.profile.as_str(), "openclaw-2026.9.6");
    let typo = OpenClawConfig::from_json5(r#"{ loopguard: { profile: "openclaw-2026.9" } }"#)
        .expect("loads with a diagnostic");
    assert!(typo.has_errors());
    assert!(typo
        .diagnostics
        .iter()
        .any(|d| d.message.contains("openclaw-2026.9.6")));
}
