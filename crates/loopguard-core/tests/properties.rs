//! Property tests: invariants of hashing and detection, and parsers that never panic.

use loopguard_core::hashing::args_hash;
use loopguard_core::Outcome;
use loopguard_core::{json::parse, Call, Session, Value, Verdict};
use loopguard_core::{LoopDetectionConfig, OpenClawConfig, Policy};
use proptest::prelude::*;

/// A JSON tree that can be written with any key order.
#[derive(Clone, Debug)]
enum Tree {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Tree>),
    Obj(Vec<(String, Tree)>),
}

fn tree() -> impl Strategy<Value = Tree> {
    let leaf = prop_oneof![
        Just(Tree::Null),
        any::<bool>().prop_map(Tree::Bool),
        prop_oneof![
            any::<i32>().prop_map(f64::from),
            (-1e30f64..1e30f64),
            Just(-0.0),
            Just(1e21),
            Just(9007199254740993.0),
        ]
        .prop_map(Tree::Num),
        "[a-z😀\u{e000}é \\\\\"\\n\u{2028}]{0,8}".prop_map(Tree::Str),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Tree::Arr),
            prop::collection::btree_map("[a-zA-Z0-9_😀\u{e000}\u{ffff}é]{0,6}", inner, 0..6)
                .prop_map(|m| Tree::Obj(m.into_iter().collect())),
        ]
    })
}

/// Writes the tree, rotating each object's keys by `shift` and choosing number spellings.
fn write(t: &Tree, shift: usize, out: &mut String) {
    match t {
        Tree::Null => out.push_str("null"),
        Tree::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Tree::Num(n) => {
            if shift.is_multiple_of(2) {
                out.push_str(&format!("{n}"));
            } else {
                out.push_str(&format!("{n:e}"));
            }
        }
        Tree::Str(s) => out.push_str(&serde_json::to_string(s).unwrap()),
        Tree::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, shift, out);
            }
            out.push(']');
        }
        Tree::Obj(entries) => {
            out.push('{');
            let n = entries.len();
            for i in 0..n {
                let (k, v) = &entries[(i + shift) % n];
                if i > 0 {
                    out.push_str(" , ");
                }
                out.push_str(&serde_json::to_string(k).unwrap());
                out.push(':');
                write(v, shift, out);
            }
            out.push('}');
        }
    }
}

fn text(t: &Tree, shift: usize) -> String {
    let mut s = String::new();
    write(t, shift, &mut s);
    s
}

fn hash_of(json: &str) -> String {
    args_hash("tool", &parse(json.as_bytes()).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Key order and number spelling never change an argsHash.
    #[test]
    fn key_order_never_changes_a_hash(t in tree(), shift in 1usize..7) {
        prop_assert_eq!(hash_of(&text(&t, 0)), hash_of(&text(&t, shift)));
    }

    /// Swapping two different array elements always changes the hash.
    #[test]
    fn array_order_always_changes_a_hash(items in prop::collection::vec(tree(), 2..6), i in 0usize..6, j in 0usize..6) {
        let (i, j) = (i % items.len(), j % items.len());
        let canon = |t: &Tree| loopguard_core::json::to_canonical_string(&parse(text(t, 0).as_bytes()).unwrap());
        prop_assume!(canon(&items[i]) != canon(&items[j]));
        let mut swapped = items.clone();
        swapped.swap(i, j);
        prop_assert_ne!(hash_of(&text(&Tree::Arr(items), 0)), hash_of(&text(&Tree::Arr(swapped), 0)));
    }

    /// An object's fields read into slots (`parse_object_fields`) or handed over one by one
    /// (`parse_object_entries`) are the values `parse` gives, a repeated key's last one
    /// included, and every other key's value is read and dropped.
    #[test]
    fn fields_and_entries_read_what_parse_reads(
        entries in prop::collection::vec(("[a-c]{1,2}", tree()), 0..8),
        shift in 0usize..7,
    ) {
        let object = Tree::Obj(entries.clone());
        let json = text(&object, shift);
        let whole = parse(json.as_bytes()).unwrap();
        let whole = whole.as_object().unwrap();
        // Keys "a" and "b" have slots; "c", "aa", ... are dropped.
        let mut slots: [Option<Value>; 2] = Default::default();
        loopguard_core::json::parse_object_fields(json.as_bytes(), &mut slots, |k| match k {
            b"a" => Some(0),
            b"b" => Some(1),
            _ => None,
        }).unwrap();
        prop_assert_eq!(slots[0].as_ref(), whole.get("a"));
        prop_assert_eq!(slots[1].as_ref(), whole.get("b"));
        let mut seen = Vec::new();
        loopguard_core::json::parse_object_entries(json.as_bytes(), |k, v| seen.push((k.to_string_lossy().into_owned(), v))).unwrap();
        prop_assert_eq!(seen.len(), entries.len());
        for (k, v) in whole.iter() {
            let last = seen.iter().rev().find(|(key, _)| key.as_str() == k.to_string_lossy());
            prop_assert_eq!(last.map(|(_, v)| v), Some(v));
        }
    }

    /// Canonical output is a fixed point: parsing it again gives the same bytes.
    #[test]
    fn canonical_form_is_stable(t in tree()) {
        let once = loopguard_core::json::to_canonical_string(&parse(text(&t, 0).as_bytes()).unwrap());
        let twice = loopguard_core::json::to_canonical_string(&parse(once.as_bytes()).unwrap());
        prop_assert_eq!(once, twice);
    }

    /// A single call never triggers, whatever the thresholds.
    #[test]
    fn a_single_call_never_triggers(
        t in tree(),
        tool in "[a-z_]{1,12}",
        w in 1.0f64..5.0, c in 1.0f64..5.0, g in 1.0f64..5.0, u in 1.0f64..5.0,
    ) {
        let policy = Policy::from_block(Some(LoopDetectionConfig {
            enabled: Some(true),
            warning_threshold: Some(w.floor()),
            critical_threshold: Some(c.floor()),
            global_circuit_breaker_threshold: Some(g.floor()),
            unknown_tool_threshold: Some(u.floor()),
            ..Default::default()
        }));
        let args_text = text(&t, 0);
        let args = parse(args_text.as_bytes()).unwrap();
        let mut s = Session::new("p");
        let d = s.before_call(&policy, &Call::new(tool.as_str(), &args));
        prop_assert_eq!(d.verdict, Verdict::Allow);
    }

    /// Outcomes that keep changing never lead to a block, however often the call repeats.
    #[test]
    fn changing_results_never_block(
        t in tree(),
        tool in prop_oneof![Just("read"), Just("process"), Just("exec"), Just("message"), Just("command_status")],
        n in 1usize..80,
        alternate in any::<bool>(),
    ) {
        let policy = Policy::enabled();
        let args_text = text(&t, 0);
        let args = parse(args_text.as_bytes()).unwrap();
        let other = parse(br#"{"other":true}"#).unwrap();
        let mut s = Session::new("p");
        for i in 0..n {
            let a = if alternate && i % 2 == 1 { &other } else { &args };
            let call = Call::new(tool, a);
            let d = s.before_call(&policy, &call);
            prop_assert!(!d.is_block(), "blocked at call {}: {:?}", i + 1, d.verdict);
            let result_text = format!(
                r#"{{"content":[{{"type":"text","text":"step {i}"}}],"details":{{"status":"completed","exitCode":0,"aggregated":"out {i}","tail":"t{i}","ok":{i}}}}}"#
            );
            let result = parse(result_text.as_bytes()).unwrap();
            let _ = s.after_call(&policy, &call, Outcome::Result(&result));
        }
    }

    /// The JSON parser returns Ok or Err on any bytes; it never panics, and it accepts
    /// only valid UTF-8 (it validates string contents only, so this checks the shortcut).
    #[test]
    fn json_parser_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        if parse(&bytes).is_ok() {
            prop_assert!(std::str::from_utf8(&bytes).is_ok());
        }
    }

    /// Strings with arbitrary bytes inside: accepted exactly when they are valid UTF-8.
    #[test]
    fn string_contents_are_validated(body in prop::collection::vec(prop_oneof![Just(b'a'), 0x80u8..=0xFF, Just(0xE2), Just(0x82), Just(0xAC)], 0..24)) {
        let mut text = vec![b'"'];
        text.extend_from_slice(&body);
        text.push(b'"');
        prop_assert_eq!(parse(&text).is_ok(), std::str::from_utf8(&body).is_ok());
    }

    /// JSON-looking noise: the parser never panics and accepted values re-serialise.
    #[test]
    fn json_parser_never_panics_on_json_like_text(s in r#"[\[\]{}",:0-9eE+\-.a-z\\u ]{0,80}"#) {
        if let Ok(v) = parse(s.as_bytes()) {
            let _ = loopguard_core::json::to_canonical_string(&v);
        }
    }

    /// The config loader never panics on any text.
    #[test]
    fn config_loader_never_panics(s in r#"[\[\]{}"',:0-9a-zA-Z_ ./*\n\\-]{0,120}"#) {
        let _ = OpenClawConfig::from_json5(&s);
    }

    /// The config loader never panics on structurally valid configs with wrong values.
    #[test]
    fn config_loader_handles_any_values(t in tree(), key in prop_oneof![
        Just("enabled"), Just("historySize"), Just("warningThreshold"), Just("criticalThreshold"),
        Just("globalCircuitBreakerThreshold"), Just("unknownToolThreshold"), Just("detectors"),
        Just("postCompactionGuard"), Just("bogus"),
    ]) {
        let text = format!(r#"{{"tools":{{"loopDetection":{{"{key}":{}}}}},"agents":{{"list":[{{"id":"a","tools":{{"loopDetection":{{"{key}":{}}}}}}}]}}}}"#, text(&t, 0), text(&t, 1));
        let loaded = OpenClawConfig::from_json5(&text).unwrap();
        let _ = loaded.config.policy_for(Some("a"));
    }
}

/// A tool result: an object with `content` items (text parts with spaces and newlines at
/// their ends, other items), `details` (an object or not) and other keys, any of them
/// repeated, in any order.
fn result_tree() -> impl Strategy<Value = Tree> {
    // JavaScript's whitespace (trimmed) among other characters, some written with escapes.
    let text =
        "[ \n\t\r\u{b}\u{c}\u{a0}\u{1680}\u{200a}\u{2028}\u{3000}\u{feff}\u{1}xé😀\"\\\\]{0,6}"
            .prop_map(Tree::Str);
    let item = prop_oneof![
        (
            text.clone(),
            prop_oneof![
                Just(Tree::Str("text".into())),
                Just(Tree::Str("image".into())),
                tree()
            ]
        )
            .prop_map(|(t, ty)| Tree::Obj(vec![("type".into(), ty), ("text".into(), t)])),
        text.clone()
            .prop_map(|t| Tree::Obj(vec![("text".into(), t)])),
        (text.clone(), text.clone()).prop_map(|(a, b)| Tree::Obj(vec![
            ("text".into(), a),
            ("type".into(), Tree::Str("text".into())),
            ("text".into(), b),
        ])),
        tree(),
    ];
    let member = prop_oneof![
        prop::collection::vec(item, 0..4)
            .prop_map(|items| ("content".to_string(), Tree::Arr(items))),
        tree().prop_map(|t| ("content".to_string(), t)),
        tree().prop_map(|t| ("details".to_string(), t)),
        prop::collection::btree_map("[a-z]{1,3}", tree(), 0..4)
            .prop_map(|m| ("details".to_string(), Tree::Obj(m.into_iter().collect()))),
        (tree(), "[a-z]{1,7}").prop_map(|(t, k)| (k, t)),
    ];
    prop::collection::vec(member, 0..5).prop_map(Tree::Obj)
}

/// Arguments of a call (a poll, a send) for the tools whose outcome hash reads them.
fn args_of(i: u8) -> Value<'static> {
    parse(format!(r#"{{"action":"poll","to":"x","n":{i}}}"#).as_bytes())
        .unwrap()
        .into_owned()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// The arguments' digest read straight from JSON text is the one the parsed value gives,
    /// and the reader takes every value written as JSON.stringify writes it (whitespace
    /// between members aside), whatever the key order and number spelling.
    #[test]
    fn args_digest_from_json_is_the_values(t in tree(), shift in 0usize..7, tool in "[a-z_]{1,8}") {
        let json = text(&t, shift);
        let slow = loopguard_core::hashing::args_digest_wtf8(tool.as_bytes(), &parse(json.as_bytes()).unwrap());
        let fast = loopguard_core::hashing::args_digest_from_json(tool.as_bytes(), json.as_bytes(), &mut br#"{"left":"over"}"#.to_vec());
        if tool == "update_plan" {
            prop_assert_eq!(fast, None);
        } else {
            prop_assert_eq!(fast, Some(slow), "{}", json);
        }
    }

    /// A tool result's hash read straight from JSON text is `hash_outcome`'s, whatever the
    /// call's arguments, for every result the reader takes; it takes every result here of a
    /// tool without rules of its own.
    #[test]
    fn outcome_hash_from_json_is_hash_outcome(
        t in prop_oneof![3 => result_tree(), 1 => tree()],
        shift in 0usize..7,
        tool in prop_oneof![Just("read"), Just("web_fetch"), Just("exec"), Just("process"), Just("message"), Just("telegram"), Just("update_plan"), Just("sessions_send")],
        args in 0u8..3,
    ) {
        let json = text(&t, shift);
        let result = parse(json.as_bytes()).unwrap();
        let slow = loopguard_core::hashing::hash_outcome(
            tool.as_bytes(), &args_of(args), Outcome::Result(&result), &loopguard_core::Hashing::default());
        let fast = loopguard_core::hashing::outcome_hash_from_json(tool.as_bytes(), json.as_bytes(), &mut Vec::new());
        if matches!(tool, "read" | "web_fetch") {
            prop_assert_eq!(fast, Some(slow), "{}", json);
        } else {
            prop_assert_eq!(fast, None);
        }
    }

    /// Text that is not JSON is never taken (the caller's parse reports it), and JSON the
    /// reader takes gives the value's digests, however the text is cut or a byte changed.
    #[test]
    fn from_json_takes_no_text_parse_rejects(
        t in prop_oneof![result_tree(), tree()],
        shift in 0usize..7,
        at in any::<prop::sample::Index>(),
        byte in prop_oneof![Just(b'"'), Just(b'\\'), Just(b','), Just(b':'), Just(b'}'), Just(b']'), Just(b'{'), Just(b'['), Just(b'-'), Just(b'0'), Just(b'e'), Just(b' '), Just(0x01u8), Just(0xC3u8), Just(0xFFu8), Just(b'u')],
        cut in any::<bool>(),
    ) {
        let mut bytes = text(&t, shift).into_bytes();
        prop_assume!(!bytes.is_empty());
        let i = at.index(bytes.len());
        if cut { bytes.truncate(i); } else { bytes[i] = byte; }
        let parsed = parse(&bytes);
        let fast_args = loopguard_core::hashing::args_digest_from_json(b"read", &bytes, &mut Vec::new());
        let fast_outcome = loopguard_core::hashing::outcome_hash_from_json(b"read", &bytes, &mut Vec::new());
        match parsed {
            Err(_) => {
                prop_assert_eq!(fast_args, None);
                prop_assert_eq!(fast_outcome, None);
            }
            Ok(v) => {
                if let Some(d) = fast_args {
                    prop_assert_eq!(d, loopguard_core::hashing::args_digest_wtf8(b"read", &v));
                }
                if let Some(h) = fast_outcome {
                    prop_assert_eq!(h, loopguard_core::hashing::hash_outcome(
                        b"read", &Value::Null, Outcome::Result(&v), &loopguard_core::Hashing::default()));
                }
            }
        }
    }
}

#[test]
fn lone_surrogates_survive_parsing_and_vanish_when_hashed() {
    let lone = parse(br#"{"k":"left\ud83dright"}"#).unwrap();
    let clean = parse(br#"{"k":"leftright"}"#).unwrap();
    assert_ne!(lone, clean);
    assert_eq!(args_hash("t", &lone), args_hash("t", &clean));
    let v: &Value = lone.get("k").unwrap();
    assert!(v.as_js_str().unwrap().has_lone_surrogates());
}
