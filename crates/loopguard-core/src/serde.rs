//! `serde_json::Value` into the engine's [`Value`] (feature `serde`).
//!
//! A runtime that already holds its tool arguments and results as `serde_json` values
//! hands them to the engine without writing and re-parsing JSON text. The conversion keeps
//! what the engine hashes: strings as they are (borrowed from the `serde_json` value),
//! numbers as JavaScript holds them (`f64`), arrays in order, objects as `JSON.parse`
//! builds them. The hashes are the ones [`Value::parse`] of the same JSON text gives, for
//! every text `serde_json` accepts (the feature turns on `serde_json`'s `float_roundtrip`,
//! so decimals parse to the nearest `f64` as in JavaScript). `serde_json` rejects some
//! texts JavaScript takes (numbers out of range such as `1e400`, lone surrogates such as
//! `"\ud800"`): parse those with [`Value::parse`].
//!
//! ```
//! use loopguard_core::{Call, Policy, Session, Value};
//!
//! let json: serde_json::Value = serde_json::from_str(r#"{"path":"/same.txt","limit":10}"#)?;
//! let args = Value::from(&json);
//! // The same value as parsing the text, so the same hashes and decisions.
//! assert_eq!(args, Value::parse(br#"{"limit":10,"path":"/same.txt"}"#)?);
//!
//! let mut session = Session::new("s");
//! let decision = session.before_call(&Policy::enabled(), &Call::new("read", &args));
//! assert!(!decision.is_block());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::value::{JsString, Object, Value};

impl<'a> From<&'a serde_json::Value> for Value<'a> {
    fn from(v: &'a serde_json::Value) -> Self {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => Value::Number(number(n)),
            serde_json::Value::String(s) => Value::String(JsString::from(s.as_str())),
            serde_json::Value::Array(items) => {
                Value::Array(items.iter().map(Value::from).collect())
            }
            serde_json::Value::Object(map) => Value::Object(Object::from_entries(
                map.iter()
                    .map(|(k, v)| (JsString::from(k.as_str()), Value::from(v)))
                    .collect(),
            )),
        }
    }
}

impl From<serde_json::Value> for Value<'static> {
    fn from(v: serde_json::Value) -> Self {
        Value::from(&v).into_owned()
    }
}

/// The `f64` JavaScript would hold for the number (`as_f64` is `None` only with
/// `serde_json`'s `arbitrary_precision`, whose text Rust parses as JavaScript does).
fn number(n: &serde_json::Number) -> f64 {
    n.as_f64()
        .unwrap_or_else(|| n.to_string().parse().unwrap_or(f64::NAN))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::to_canonical_string;
    use crate::fingerprint::args_hash;
    use crate::outcome::{hash_outcome, Hashing, Outcome};
    use proptest::prelude::*;

    /// The same hashes as parsing the JSON text: arguments, and results with their
    /// per-tool volatile fields.
    fn assert_same(text: &str) {
        let json: serde_json::Value = serde_json::from_str(text).unwrap();
        let converted = Value::from(&json);
        let parsed = Value::parse(text.as_bytes()).unwrap();
        assert_eq!(
            to_canonical_string(&converted),
            to_canonical_string(&parsed),
            "{text}"
        );
        assert_eq!(
            args_hash("read", &converted),
            args_hash("read", &parsed),
            "{text}"
        );
        let params = Value::parse(br#"{"action":"poll","to":"telegram:1"}"#).unwrap();
        for tool in [
            "read",
            "exec",
            "process",
            "message",
            "telegram",
            "update_plan",
        ] {
            let h = |v: &Value<'_>| {
                hash_outcome(
                    tool.as_bytes(),
                    &params,
                    Outcome::Result(v),
                    &Hashing::default(),
                )
                .result_hash
            };
            assert_eq!(h(&converted), h(&parsed), "{tool}: {text}");
        }
        assert_eq!(Value::from(json.clone()), parsed.into_owned());
    }

    #[test]
    fn hashes_match_parsing_the_text() {
        for text in [
            r#"{"path":"/a.txt","n":1}"#,
            r#"{"b":[1,2.5,-0,1e21,1e-7,0.1,9007199254740993,-12345678901234567890],"a":{"z":null,"y":true}}"#,
            r#"{"é":"ü","😀":"\u0000\t\"","aB":1,"Ab":2,"\uffff":3,"\ud83d\ude00":4}"#,
            r#"{"details":{"status":"completed","exitCode":0,"aggregated":"ok","durationMs":12,"pid":7},"content":[{"type":"text","text":"x"}]}"#,
            r#"{"details":{"ok":true,"messageId":"m1"},"content":[]}"#,
            r#"{"plan":[{"step":"a","status":"done"}],"explanation":"x"}"#,
            r#"[]"#,
            r#""just a string""#,
            r#"18446744073709551615"#,
        ] {
            assert_same(text);
        }
    }

    fn json() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::Bool),
            any::<i64>().prop_map(|n| serde_json::json!(n)),
            any::<u64>().prop_map(|n| serde_json::json!(n)),
            (-1e300f64..1e300).prop_map(|n| serde_json::json!(n)),
            "\\PC{0,12}".prop_map(serde_json::Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
                proptest::collection::btree_map("\\PC{0,6}", inner, 0..6)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Any value serde_json holds hashes as its JSON text does.
        #[test]
        fn any_serde_value_hashes_as_its_text(v in json()) {
            assert_same(&serde_json::to_string(&v).unwrap());
        }
    }
}
